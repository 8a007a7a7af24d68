"""Runbooks: jupytext MyST notebooks whose code cells are named, checked, resumable steps.

format    parse runbooks/NAME.md into a Runbook of Steps (metadata validated)
executor  run steps on one persistent kernel (nbclient low-level API), save the run
api       what cells import: fact(), box, server, record()
remote    the stdlib helper that runs commands and servers on a box through a transport
servers   the run's registry of managed background processes and their teardown
record    the run record (record.json) and where runs live on disk
dryrun    print steps with the facts they use resolved, without a kernel
lint      the runbook linter registered into `factbook lint`
"""
