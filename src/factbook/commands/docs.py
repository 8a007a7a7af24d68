"""`factbook docs`: write the handbook as plain Markdown, without MkDocs.

`mkdocs serve` / `mkdocs build` call the same generator through the hook in mkdocs.yml and need
no prior `factbook docs`. This command is for everything else: another renderer, a diff of
what the handbook says, or MkDocs without hooks (the output folder is a complete docs_dir:
hand-written pages from docs/ plus the generated ones).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from factbook.errors import warn


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "docs",
        help="generate the handbook pages (Markdown) from facts, runbooks and results",
        description="Write the handbook to OUT: generated pages plus a copy of DOCS_DIR. "
        "Only files whose text changed are written. `mkdocs serve` does this itself.",
    )
    p.add_argument("--out", default="build/handbook", help="output folder (default: %(default)s)")
    p.add_argument(
        "--docs-dir",
        default="docs",
        help="hand-written pages to include (relative to --root; default: %(default)s)",
    )
    p.add_argument("--no-copy", action="store_true", help="write only the generated pages")
    p.add_argument("--nav", action="store_true", help="print the navigation as JSON")
    p.add_argument(
        "--edit-url",
        metavar="TEMPLATE",
        help="link each fact to its YAML line: a URL with {path} (relative to --root) and "
        "{line}, e.g. https://github.com/ORG/REPO/blob/main/{path}#L{line} "
        "(default: file:line as text)",
    )
    p.set_defaults(handler=handle_docs)


def handle_docs(args: argparse.Namespace) -> int:
    from factbook.handbook import copy_docs, generate, write_tree
    from factbook.handbook.editlinks import check_template

    root = Path(args.root)
    out = output_folder(root, args.out)
    docs_dir = root / args.docs_dir
    edit = check_template(args.edit_url, name="--edit-url") if args.edit_url else None
    handbook = generate(root, docs_dir=docs_dir if docs_dir.is_dir() else None, edit=edit)
    extra: dict[str, bytes] = {}
    if not args.no_copy and docs_dir.is_dir():
        extra, refused = copy_docs(docs_dir, root)
        for message in refused:
            warn(message)
    written = write_tree(handbook, out, extra=extra)
    for line in [*handbook.lint_problems, *handbook.notes]:
        warn(str(line))
    print(
        f"{len(handbook.pages)} pages generated ({len(handbook.rendered)} rendered) in "
        f"{handbook.seconds['total']:.2f} s; {len(written)} file(s) written to {args.out}"
    )
    if args.nav:
        print(json.dumps(handbook.nav, indent=1))
    return 0


def output_folder(root: Path, named: str) -> Path:
    """The output folder; one named inside the knowledge base (the default, build/handbook)
    is the knowledge base's to plant, so it must also resolve inside it: a link from there to
    elsewhere is refused (one line, exit 2) instead of written through. A folder outside it
    (`--out /srv/site`, `--out ../site`) is the user's choice."""
    from factbook.knowledge.kbfiles import named_inside, require_inside

    out = root / named
    if named_inside(out, root):
        require_inside(out, named, root)
    return out
