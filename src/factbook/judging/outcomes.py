"""The words factbook writes into results and run records, named once.

A check's outcome, a runbook run's status and a step's status are plain strings on disk
(results/latest.json, record.json); these constants are those strings, so files written before
and after stay identical and code compares against a name, not a repeated literal.
"""

from __future__ import annotations

# A check's outcome on one target (ResultRecord.outcome).
PASS = "pass"  # the expectation held
DRIFT = "drift"  # the box disagrees with the fact
ERROR = "error"  # no verdict: unreachable box, probe crashed, timeout
SKIPPED = "skipped"  # not run: module missing on the box, no target
OUTCOMES = (PASS, DRIFT, ERROR, SKIPPED)
NOT_OK = (DRIFT, ERROR)  # outcomes that need a person (and a rerun with --failed)

# A runbook run's and a step's status (runbooks/record.py).
RUNNING = "running"
OK = "ok"
FAILED = "failed"
TIMEOUT = "timeout"
INTERRUPTED = "interrupted"
KERNEL_DIED = "kernel_died"
REFUSED = "refused"
PENDING = "pending"  # a step not reached yet
RUN_STATUSES = (RUNNING, OK, FAILED, INTERRUPTED, KERNEL_DIED, REFUSED, TIMEOUT)
STEP_STATUSES = (OK, FAILED, TIMEOUT, INTERRUPTED, KERNEL_DIED, REFUSED, SKIPPED, PENDING)
