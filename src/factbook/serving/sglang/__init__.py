"""SGLang: how its launch command lines resolve, and the pitfalls that cost the team days.

flags        read a launch command line as sglang's argparse parser does (abbreviations, `=`,
             repeats, unknown flags), from the option table options-<version>.json
rules        sglang 0.5.23's resolution of the speculative fields, hidden-state capture rule
reference    ask the real sglang (prepare_server_args + resolution) where it imports
launch       check one command line (check_command) and refuse a bad launch (preflight)
runbook_lint find launch command lines in a runbook's cells and lint them (for `factbook lint`)
"""
