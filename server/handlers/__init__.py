"""The handler of every client message, one module per area, found by the message's tag.

A handler is ``async def on_<tag>(session, message)`` returning the success reply (or None
when it sent its reply itself). The dispatch table is derived from the protocol's list of
client messages: each must have exactly one handler, and the server refuses to start
otherwise (``tests/server/test_dispatch.py`` checks it too).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

import protocol as p

from . import account, archive, lobby, play, positions, ratings, watch

if TYPE_CHECKING:
    from ..session import Session

Handler = Callable[["Session", Any], Awaitable[p.ServerMessage | None]]

MODULES: tuple[ModuleType, ...] = (account, lobby, play, watch, archive, positions, ratings)


def dispatch_table(modules: tuple[ModuleType, ...] = MODULES) -> dict[type, Handler]:
    """``{message class: handler}`` for every client message; LookupError naming the
    messages with no handler (or more than one)."""
    table: dict[type, Handler] = {}
    problems = []
    for cls in p.CLIENT_MESSAGES.values():
        name = f"on_{cls.TAG}"
        found = [getattr(module, name) for module in modules if hasattr(module, name)]
        if len(found) != 1:
            problems.append(f"{cls.TAG}: {len(found)} handlers")
            continue
        table[cls] = found[0]
    if problems:
        raise LookupError("client messages without exactly one handler: "
                          + ", ".join(problems))
    return table


HANDLERS = dispatch_table()
"""The handler of each request type (one table for every connection)."""
