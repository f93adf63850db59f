"""``protocol.prepare``: a message packed once gives, for any values of its holes, the
very bytes ``encode`` gives for the message with those values."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import protocol as p
from tests.protocol.examples import EXAMPLES
from tests.protocol.strategies import messages

SHARED = (p.Lobby, p.GameState)  # the replies the server packs once for many requests


@pytest.mark.parametrize("cls", SHARED, ids=lambda c: c.__name__)
@settings(max_examples=40, derandomize=True)
@given(data=st.data(), request_id=st.integers(0, 2**31 - 1))
def test_a_prepared_frame_is_the_encoded_message(cls: type[p.Message], data: st.DataObject,
                                                 request_id: int) -> None:
    message = dataclasses.replace(data.draw(messages(cls)), id=0)  # type: ignore[type-var]
    with_id = dataclasses.replace(message, id=request_id)  # type: ignore[type-var]
    assert p.prepare(message).frame(id=request_id) == p.encode(with_id)


def test_a_nested_hole_is_filled_in_place() -> None:
    state = EXAMPLES["game_state"]
    assert isinstance(state, p.GameState) and state.game.clocks_ms is not None
    prepared = p.prepare(state, ("id", "game.clocks_ms"))
    later = dataclasses.replace(state, id=99, game=dataclasses.replace(
        state.game, clocks_ms=(1, 2**40)))
    assert prepared.frame(id=99, game__clocks_ms=[1, 2**40]) == p.encode(later)
    assert prepared.holes == {"id", "game__clocks_ms"}


def test_holes_must_be_there_and_be_given() -> None:
    lobby = p.Lobby(id=1, seeks=(), players=())
    with pytest.raises(ValueError, match="more_seeks"):
        p.prepare(lobby, ("id", "more_seeks"))  # absent: its presence changes the map
    with pytest.raises(TypeError, match="exactly"):
        p.prepare(lobby).frame()
    with pytest.raises(TypeError, match="exactly"):
        p.prepare(lobby).frame(id=1, seq=2)


def test_a_reply_that_moves_the_phase_is_not_prepared() -> None:
    session = p.ServerSession()
    session.receive(p.encode(p.Hello(id=1, version=1)))
    with pytest.raises(TypeError, match="moves the phase"):
        session.send_prepared(p.prepare(p.Lobby(id=0, seeks=(), players=())), 1)
    assert session.phase is p.Phase.CONNECTED
