"""Verification: select facts, run their checks on targets through one agent each, evaluate.

Public API:  plan_checks() (which fact runs where), Engine(...).run(plan) -> ResultRecords,
render() (table, json, junit, tap, markdown), exit_code().
"""
