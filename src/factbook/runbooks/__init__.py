"""Runbooks: jupytext MyST notebooks whose code cells are named, checked, resumable steps.

format    parse runbooks/NAME.md into a Runbook of Steps (metadata validated)
executor  decide which steps run and what each outcome means (exit codes, timeouts)
kernel    the run's one ipykernel (nbclient client, Ctrl-C routed to it)
runlog    the run's bookkeeping: record, executed notebook, write-back, server teardown
api       what cells import: fact(), box, server, record()
remote    BoxClient: commands, servers and probes on a box through a transport
servers   the run's registry of managed background processes and their teardown
watchdog  the process that tears a run down when its executor dies without doing so
reclaim   find runs whose executor died and stop what they left running
record    the run record (record.json) and where runs live on disk
dryrun    print steps with the facts they use resolved, without a kernel
lint      the runbook linter registered into `factbook lint`
requires  verify a step's required facts on its target before it runs
box_helper  the stdlib script shipped to the box for every command, server and probe

The benchmark client (factbook.serving.benchclient, shipped to the box by `box.run_python`) and the
SGLang launch linter (factbook.serving.sglang, called by `lint` and `server.start`) live apart.
"""
