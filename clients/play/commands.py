"""The terminal client's command table: each command's words, usage, help and handler.

Commands live in the ``cmd_*`` modules of this package, one per concern (accounts, the
lobby, games, history, the session); each registers its handlers with :func:`command`. To
add a command, write ``async def handler(client, args)`` in the module it belongs to and
decorate it: ``help`` and completion pick it up from here.
"""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clients.play.client import PlayClient

Handler = Callable[["PlayClient", str], Awaitable[None]]
HELP_WIDTH = 100  # the widest help line, whatever the terminal
SECTIONS = ("account", "lobby", "game", "history", "session")
"""The ``cmd_*`` modules in the order ``help`` lists their commands."""
USAGE_WIDTH = 40  # a longer usage is shown as "NAME ..." in the list


@dataclass(frozen=True)
class Command:
    name: str
    usage: str
    help: str
    handler: Handler
    aliases: tuple[str, ...] = ()

    @property
    def section(self) -> int:
        """Where help lists it: its module's place in :data:`SECTIONS`."""
        module = self.handler.__module__.rsplit(".", 1)[-1].removeprefix("cmd_")
        return SECTIONS.index(module) if module in SECTIONS else len(SECTIONS)


COMMANDS: dict[str, Command] = {}
"""Every command by each of its words (name and aliases), lower case."""
ORDER: list[Command] = []
"""The commands in the order they were registered."""


def command(name: str, usage: str, help_text: str, *aliases: str) -> Callable[[Handler], Handler]:
    """Register ``handler`` as the command ``name`` (and ``aliases``)."""
    def register(handler: Handler) -> Handler:
        cmd = Command(name, usage, help_text, handler, aliases)
        ORDER.append(cmd)
        for word in (name, *aliases):
            if word in COMMANDS:
                raise ValueError(f"command word {word!r} is registered twice")
            COMMANDS[word] = cmd
        return handler
    return register


def words() -> list[str]:
    """Every command word, for completion."""
    return sorted(COMMANDS)


class UsageError(ValueError):
    """The user typed a command wrong; the message shows how to type it."""


def number_arg(args: str, usage: str) -> int | None:
    """The number at the end of ``args`` (``#5`` or ``5``), None if ``args`` is empty."""
    if not args:
        return None
    word = args.split()[-1].lstrip("#")
    if not word.isdigit():
        raise UsageError(f"usage: {usage}")
    return int(word)


def width() -> int:
    """How wide help lines may be: the terminal's width, at most :data:`HELP_WIDTH`."""
    return min(HELP_WIDTH, shutil.get_terminal_size((HELP_WIDTH, 24)).columns - 1)


def wrap(text: str, indent: str = "", first: str = "") -> list[str]:
    """``text`` in lines that fit :func:`width`, broken between words only."""
    return textwrap.wrap(text, width(), initial_indent=first, subsequent_indent=indent,
                         break_long_words=False, break_on_hyphens=False) or [first]


def help_lines() -> list[str]:
    """The command list: usage, then help, wrapped between words under its own column."""
    column = max(len(c.usage) for c in ORDER if len(c.usage) <= USAGE_WIDTH)
    lines: list[str] = []
    for c in sorted(ORDER, key=lambda c: c.section):
        usage = c.usage if len(c.usage) <= column else c.name + " ..."
        lines += wrap(c.help, indent=" " * (column + 4), first=f"  {usage:<{column}}  ")
    return lines


def command_help(word: str) -> list[str]:
    """One command's usage and help."""
    cmd = COMMANDS.get(word.lower())
    if cmd is None:
        raise UsageError(f"No command {word!r}; 'help' lists them.")
    return [cmd.usage, *wrap(cmd.help, indent="  ", first="  ")]
