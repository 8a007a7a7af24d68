"""Verification: select facts, run their checks on targets through one agent each, evaluate.

Public API:  plan_checks() (which fact runs where), Engine(...).run(plan) -> ResultRecords,
render() (table, json, junit, tap, markdown), exit_code().
"""

from ..callable_module import make_callable

make_callable(__name__)  # factbook.verify(kb, targets, ...) is factbook.api.verify
