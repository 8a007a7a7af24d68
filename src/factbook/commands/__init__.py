"""The command line: cli.py parses and dispatches; one module per subcommand, each exposing
`register(subparsers)`; cli_options.py, lint_output.py and extras.py serve them."""
