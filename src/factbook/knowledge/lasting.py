"""What a command made, left for the process's exit to drop.

The command line ends with `os._exit` (cli.leave), which frees nothing. An import's result
and its remembered parses were freed one object at a time as the command returned: 0.15 s
of a 1 MB import (6.6% of its samples), spent on nothing the user sees. Kept here instead,
they go with the process. Only a process that leaves after one command keeps anything
(`cli.main` turns it on, and `serve` and `mcp` turn it off again): a command run in-process
(`cli.run`, the tests) or a server's requests keep nothing, so nothing piles up."""

from __future__ import annotations

_KEPT: list[object] = []
_ON = [False]


def keep_for_exit(*objects: object) -> None:
    """Hold `objects` until the process exits, where it exits without freeing them."""
    if _ON[0]:
        _KEPT.extend(objects)


def turn_on() -> None:
    """This process ends with os._exit: what keep_for_exit is given is kept from now on."""
    _ON[0] = True


def turn_off() -> None:
    """This process serves many requests (`serve`, `mcp`): keep nothing, or it would grow."""
    _ON[0] = False
