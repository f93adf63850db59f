"""Every client message has exactly one handler, found from the message's declaration."""

from __future__ import annotations

import types

import pytest

import protocol as p
from server.handlers import HANDLERS, MODULES, dispatch_table


def test_every_client_message_has_a_handler() -> None:
    assert set(HANDLERS) == set(p.CLIENT_MESSAGES.values())
    for cls, handler in HANDLERS.items():
        assert handler.__name__ == f"on_{cls.TAG}"


def test_a_message_without_a_handler_stops_the_server_from_starting() -> None:
    without_move = tuple(
        types.SimpleNamespace(**{name: value for name, value in vars(module).items()
                                 if name != "on_move"})
        for module in MODULES)
    with pytest.raises(LookupError, match="move: 0 handlers"):
        dispatch_table(without_move)  # type: ignore[arg-type]


def test_two_handlers_for_one_message_are_refused() -> None:
    with pytest.raises(LookupError, match="ping: 2 handlers"):
        dispatch_table((*MODULES, types.SimpleNamespace(on_ping=None)))  # type: ignore[arg-type]
