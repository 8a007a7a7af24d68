"""The titles of the inventory kinds, the sub-headings of "Relevant files" in a status
document: rendered by context.py and read back by import (dumps/capture/build.py), which
imports this module alone rather than the renderer and its Jinja2."""

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
