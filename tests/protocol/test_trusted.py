"""``Struct.trusted``: the server's unchecked build gives the very value the checked one does."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import protocol as p
from protocol.values import PlayedMove
from tests.protocol.strategies import messages, structs

TRUSTED = (p.Moved, p.MoveAck)  # the classes the server builds unchecked


def _fields(obj: object) -> dict[str, object]:
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}  # type: ignore


@pytest.mark.parametrize("cls", TRUSTED, ids=lambda c: c.__name__)
@settings(max_examples=150, derandomize=True)
@given(data=st.data())
def test_trusted_equals_checked(cls: type[p.Message], data: st.DataObject) -> None:
    checked = data.draw(messages(cls))
    trusted = cls.trusted(**_fields(checked))
    assert trusted == checked
    assert p.encode(trusted) == p.encode(checked)
    assert p.encode_trusted(cls, **_fields(checked)) == p.encode(checked)


@settings(max_examples=150, derandomize=True)
@given(move=structs(PlayedMove))
def test_trusted_played_move(move: PlayedMove) -> None:
    assert PlayedMove.trusted(**_fields(move)) == move


def test_defaults_are_filled() -> None:
    moved = p.Moved.trusted(game_id="abcdefghij", seq=3, ply=1, move="a1", by=1, ms_used=0)
    assert moved.clocks_ms is None
    assert p.decode_server(p.encode(moved)) == moved


def test_encode_trusted_fills_defaults_and_refuses_unknown_or_missing_fields() -> None:
    fields = {"game_id": "abcdefghij", "seq": 3, "ply": 1, "move": "a1", "by": 1, "ms_used": 0}
    assert p.encode_trusted(p.Moved, **fields) == p.encode(p.Moved(**fields))  # type: ignore
    with pytest.raises(TypeError, match="unknown fields"):
        p.encode_trusted(p.Moved, **fields, clock_ms=4)
    del fields["ms_used"]
    with pytest.raises(TypeError, match="missing field 'ms_used'"):
        p.encode_trusted(p.Moved, **fields)


def test_refused_for_classes_with_cross_field_rules() -> None:
    with pytest.raises(TypeError, match="cross-field"):
        p.GameOver.trusted(game_id="abcdefghij", seq=3, winner=None, reason="resign")
    with pytest.raises(TypeError, match="cross-field"):
        p.encode_trusted(p.GameOver, game_id="abcdefghij", seq=3, winner=None,
                         reason="resign")
