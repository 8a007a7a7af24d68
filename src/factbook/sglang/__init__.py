"""SGLang: how its launch command lines resolve, and the pitfalls that cost the team days.

flags        parse a launch command line into sglang's fields (as sglang's argparse would)
rules        sglang 0.5.23's resolution of the speculative fields, hidden-state capture rule
launch       check one command line (check_command) and refuse a bad launch (preflight)
runbook_lint find launch command lines in a runbook's cells and lint them (for `factbook lint`)
"""
