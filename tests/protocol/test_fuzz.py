"""Whatever bytes arrive, decoding raises nothing but ProtocolError, whose reply is sendable.

Derandomized, so a failure reproduces on every run; a few thousand examples in all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgpack
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import protocol as p
from tests.protocol.examples import EXAMPLES
from tests.protocol.strategies import PLAIN

FUZZ = settings(
    derandomize=True,
    max_examples=1000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

Decoder = Callable[[bytes], p.Message]
DECODERS: list[Decoder] = [p.decode_client, p.decode_server]
FRAMES = [p.encode(message) for message in EXAMPLES.values()]
WIRE = [message.to_wire() for message in EXAMPLES.values()]
CODES = {code.value for code in p.ErrorCode}


def decode_safely(decode: Decoder, data: bytes) -> p.Message | None:
    """The message, or None after checking the refusal is a ProtocolError we can send."""
    try:
        message = decode(data)
    except p.ProtocolError as exc:
        assert exc.code in CODES
        reply = exc.to_reply()
        assert p.decode_server(p.encode(reply)) == reply
        return None
    # Whatever decodes is a valid message that encodes and decodes to itself (compared as
    # bytes: free-form game metadata may hold a NaN, which equals nothing, itself included).
    frame = p.encode(message)
    assert p.encode(decode(frame)) == frame
    return message


def session_safely(data: bytes) -> None:
    session = p.ServerSession()
    try:
        session.receive(data)
    except p.ProtocolError as exc:
        assert exc.code in CODES


@FUZZ
@given(st.binary(max_size=600))
def test_random_bytes(data: bytes) -> None:
    for decode in DECODERS:
        decode_safely(decode, data)
    session_safely(data)


@st.composite
def mutated_frames(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(FRAMES)))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "set", "insert", "delete", "truncate", "splice"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "flip" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "set" and data:
            data[at] = draw(st.sampled_from([0x00, 0x7F, 0x80, 0xC0, 0xC1, 0xC4, 0xD4, 0xD6,
                                             0xDC, 0xDE, 0xDF, 0xFF, 0xA0, 0x90]))
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 8))]
        elif kind == "truncate":
            del data[at:]
        else:
            data[at:] = draw(st.sampled_from(FRAMES))
    return bytes(data)


@FUZZ
@given(mutated_frames())
def test_mutated_golden_frames(data: bytes) -> None:
    for decode in DECODERS:
        decode_safely(decode, data)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*path, index))
    return found


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replace(value[head], rest, new)}
    copy = list(value)
    copy[head] = _replace(copy[head], rest, new)
    return copy


ODD_VALUES = (
    PLAIN
    | st.sampled_from([0, -1, 1, 2**31 - 1, 2**31, 2**53, 2**64 - 1, -(2**63), "", " ",
                       "\x00", "a" * 600, "pass", "abort", True, False, 1.5, float("nan"),
                       b"bytes", [], {}, msgpack.ExtType(1, b"")])
    | st.sampled_from(sorted({*p.CLIENT_MESSAGES, *p.SERVER_MESSAGES}))
)


@st.composite
def mutated_maps(draw: st.DrawFn) -> bytes:
    wire = draw(st.sampled_from(WIRE))
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(wire)[1:]  # not the root: test_random_bytes covers that
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        action = draw(st.sampled_from(["replace", "drop", "add"]))
        if action == "replace":
            wire = _replace(wire, path, draw(ODD_VALUES))
        elif action == "drop":
            parent = _replace(wire, (), wire)
            for key in path[:-1]:
                parent = parent[key]
            if isinstance(parent, dict):
                wire = _replace(wire, path[:-1], {k: v for k, v in parent.items()
                                                  if k != path[-1]})
        else:
            key = draw(st.text(max_size=6) | st.sampled_from(["id", "t", "seq", "kind"]))
            target = wire
            for step in path:
                target = target[step]
            if isinstance(target, dict):
                wire = _replace(wire, path, {**target, key: draw(ODD_VALUES)})
    data: bytes = msgpack.packb(wire, use_bin_type=True)
    return data


@FUZZ
@given(mutated_maps())
def test_mutated_messages(data: bytes) -> None:
    for decode in DECODERS:
        decode_safely(decode, data)
