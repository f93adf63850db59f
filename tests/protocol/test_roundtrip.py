"""Every message survives encode -> decode unchanged, and encoding is deterministic."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import protocol as p
from tests.protocol.examples import EXAMPLES
from tests.protocol.strategies import ALL_CLASSES, messages


def decode(message: p.Message, data: bytes) -> p.Message:
    if type(message).TAG in p.CLIENT_MESSAGES:
        return p.decode_client(data)
    return p.decode_server(data)


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_round_trips(name: str) -> None:
    message = EXAMPLES[name]
    data = p.encode(message)
    assert decode(message, data) == message
    assert p.encode(decode(message, data)) == data


def test_client_and_server_types_are_disjoint() -> None:
    assert not set(p.CLIENT_MESSAGES) & set(p.SERVER_MESSAGES)


def test_every_request_has_a_reply_and_a_phase() -> None:
    assert set(p.REPLIES) == set(p.CLIENT_MESSAGES.values())
    assert set(p.ACCEPTED_IN) == set(p.CLIENT_MESSAGES.values())
    for replies in p.REPLIES.values():
        assert all(cls.TAG in p.SERVER_MESSAGES for cls in replies)


@pytest.mark.parametrize("cls", ALL_CLASSES, ids=lambda cls: cls.TAG)
@settings(max_examples=40, derandomize=True, deadline=None)
@given(data=st.data())
def test_generated_messages_round_trip(cls: type[p.Message], data: st.DataObject) -> None:
    message = data.draw(messages(cls))
    frame = p.encode(message)
    assert decode(message, frame) == message
    assert p.encode(decode(message, frame)) == frame


def test_key_order_is_t_then_id_then_declared_fields() -> None:
    wire = p.Move(id=3, game_id="g1", ply=4, move="c3").to_wire()
    assert list(wire) == ["t", "id", "game_id", "ply", "move"]
    wire = p.Seek(id=1, game="xodd", options={}, clock=p.Unlimited()).to_wire()
    assert list(wire) == ["t", "id", "game", "options", "clock"]
    assert list(p.Fischer(base_ms=1000, increment_ms=0).to_wire()) == [
        "kind",
        "base_ms",
        "increment_ms",
    ]


def test_absent_optional_fields_are_left_out() -> None:
    wire = p.GameOver(game_id="g1", seq=2, reason="abort").to_wire()
    assert "winner" not in wire
    assert p.encode(p.GameState(game=EXAMPLES["game_state"].game)).find(b"\xa2id") == -1  # type: ignore[attr-defined]


def test_nil_for_an_optional_field_means_absent() -> None:
    import msgpack

    frame = msgpack.packb({"t": "list_games", "id": 1, "player": None, "cursor": None})
    assert p.decode_client(frame) == p.ListGames(id=1)


def test_free_maps_are_encoded_with_sorted_keys() -> None:
    a = p.Seek(id=1, game="hexifact", options={"jumps": "once-per-stone", "board": "hex4"},
               clock=p.Unlimited())
    b = p.Seek(id=1, game="hexifact", options={"board": "hex4", "jumps": "once-per-stone"},
               clock=p.Unlimited())
    assert p.encode(a) == p.encode(b)


def test_sequences_are_normalised_to_tuples() -> None:
    authed = p.Authed(
        id=1, user=p.User(name="ab", kind="bot"), session_token="t",
        active_games=["g1", "g2"],
    )
    assert authed.active_games == ("g1", "g2")
    assert p.decode_server(p.encode(authed)) == authed
