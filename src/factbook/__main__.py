"""`python -m factbook ...` is the `factbook` command."""

from factbook.commands.cli import main

if __name__ == "__main__":
    main()
