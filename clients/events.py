"""What the server sends unasked, dispatched by type from one table.

The terminal client and the bot SDK both read a connection's events (``Connection.next_event``:
every protocol event, a ``game_state`` nobody asked for, an ``error`` answering no known
request) and hand each to a handler chosen here, by the event's type alone::

    events.dispatch(event, games, lobby)     # games.on_moved(event) for a Moved, ...

Each type maps to the method ``on_<tag>`` (``moved`` -> ``on_moved``); :data:`HANDLERS` is
derived from the protocol's ``Event`` union, so a new event type gets an entry at once, and
:func:`missing_handlers` lets a test check that a sink answers every one of them. A type
with no entry (one the protocol does not declare), or a sink without the method, is an
error (:class:`UnhandledEvent`), never silently taken for something else. A sink that does
not care about an event says so with a method that does nothing (:func:`ignore`).
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any, cast

import protocol as p

EVENT_TYPES: tuple[type[p.ServerMessage], ...] = (
    *typing.get_args(p.Event), p.GameState, p.ErrorReply)
"""Every message a connection can deliver as an event: the protocol's events, a snapshot
(``game_state``) the server sends on its own, an ``error`` that answers no request."""

GAME_EVENT_TYPES: tuple[type[p.GameEvent], ...] = typing.get_args(p.GameEvent)
"""Events of one game, numbered by its ``seq``."""

HANDLERS: dict[type[p.ServerMessage], str] = {cls: f"on_{cls.TAG}" for cls in EVENT_TYPES}
"""The handler method's name for each event type."""


class UnhandledEvent(Exception):
    """An event of a type the table does not know, or that the sink has no handler for."""


def handler(event: p.ServerMessage, *sinks: object) -> Callable[[Any], Any]:
    """The method that handles ``event``: the first of ``sinks`` that has it;
    UnhandledEvent if the type is not in the table or no sink has the method."""
    name = HANDLERS.get(type(event))
    if name is None:
        raise UnhandledEvent(f"unexpected message {event.TAG!r} from the server: no client "
                             "handles it")
    for sink in sinks:
        method = getattr(sink, name, None)
        if callable(method):
            return cast(Callable[[Any], Any], method)
    names = ", ".join(type(s).__name__ for s in sinks)
    raise UnhandledEvent(f"no {name} for {event.TAG!r} in {names}")


def dispatch(event: p.ServerMessage, *sinks: object) -> Any:
    """Call the handler of ``event`` (see :func:`handler`) and return what it returns."""
    return handler(event, *sinks)(event)


def missing_handlers(sink_types: tuple[type, ...],
                     types: tuple[type, ...] = EVENT_TYPES) -> list[str]:
    """The handler names that none of ``sink_types`` has for ``types``: a test asserts that
    this is empty for every client of the table."""
    return [HANDLERS[cls] for cls in types
            if not any(callable(getattr(t, HANDLERS[cls], None)) for t in sink_types)]


def ignore(self: object, event: p.ServerMessage) -> None:
    """A handler for events a sink does not need (assign it: ``on_seek_added = ignore``)."""
