"""The handbook: Markdown pages generated from facts and results, rendered by MkDocs-Material.

    generate(root, docs_dir=...) -> Handbook     pages, assets, navigation (in memory)
    write_tree(handbook, out)                    write them, only what changed
    copy_docs(docs_dir, root)                    hand-written pages to copy (inside root)

`plugin.py` (the `factbook` MkDocs plugin) is the only module that imports MkDocs.
"""

from factbook.handbook.generator import Generator, Handbook, copy_docs, generate, write_tree

__all__ = ["Generator", "Handbook", "copy_docs", "generate", "write_tree"]
