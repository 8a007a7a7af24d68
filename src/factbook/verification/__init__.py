"""Verification: select facts, run their checks on targets through one agent each, evaluate.

targets.py     selection and plan (plan_checks: which fact runs where)
bundle.py      the one script a target runs: agent.py, the probes it needs, the calls
engine.py      drives the transports, collects ResultRecords; slurmrun.py: one srun step
run.py         run_verify -> VerifyRun; identity.py: is this the box?
report.py      output formats (openmetrics.py for one), exit codes; colour.py: --color
discover.py    a live box -> new or updated facts
transports/    how the agent reaches a box (local, ssh, openssh, exec, slurm)
"""
