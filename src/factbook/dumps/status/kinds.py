"""Forms a status document writes and `factbook import` reads back (dumps/capture/), kept in
one place so both sides agree; import takes this module alone rather than the renderer and
its Jinja2: the titles of the inventory kinds (the sub-headings of "Relevant files"), a count
in a figure's configuration (`3 patches`), and a progress item's state said in its words."""

import re

from factbook.knowledge.limits import WHOLE_NUMBER

KIND_TITLES = {
    "script": "Scripts",
    "file": "Files",
    "dir": "Directories",
    "checkpoint": "Models and checkpoints",
    "data": "Data",
    "log": "Logs",
    "service": "Services",
    "doc": "Docs",
}

# A plural noun (`patches`, `gpus`; not `status`, `bus`): `3 patches` in a configuration is
# `patches: 3`, and a count fact titled `CPU cores` reads `64 cores`.
PLURAL = re.compile(r"[a-z]+[^su]s")
COUNT = re.compile(rf"({WHOLE_NUMBER}) ({PLURAL.pattern})")
# Work that did not get done, said in its own words (`vLLM EAGLE-3 testing (failed, ...)`):
# the line then carries no `(FAILED)` tag, and import reads the state from the words.
SAID_STATE = re.compile(r"\((failed|blocked)\b", re.I)
