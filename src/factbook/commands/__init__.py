"""One module per `factbook` subcommand; each exposes `register(subparsers)`."""
