"""Seeded, fast frame mutations for fuzzing the decoders, and the check each frame must pass.

Hypothesis (``test_fuzz.py``) shrinks what it finds but costs about a millisecond per
example; this plain generator costs about twenty microseconds, so the suite can push
100,000 frames through the decoders in seconds and ``fuzz_long`` millions. A frame is
reproducible from ``(seed, index)``: ``Mutator(seed).frames(index + 1)`` ends with it.

The frames are of three kinds, mixed:

- random bytes (any length up to 600, sometimes a msgpack map header first);
- the golden example frames with 1 to 4 byte mutations (a flipped bit, an interesting byte,
  bytes inserted, deleted or duplicated, a truncation, another frame spliced in);
- the golden messages mutated as values and packed again (a field replaced by an odd value,
  dropped, added, or the message's ``t`` swapped for another's), which get past msgpack and
  reach the validation of every field.
"""

from __future__ import annotations

import copy
import dataclasses
import random
from collections import Counter
from collections.abc import Iterator
from typing import Any

import msgpack

import protocol as p
from tests.protocol.examples import EXAMPLES

FRAMES: list[bytes] = [p.encode(message) for message in EXAMPLES.values()]
WIRE: list[dict[str, Any]] = [message.to_wire() for message in EXAMPLES.values()]
CODES = frozenset(code.value for code in p.ErrorCode)
TAGS = sorted({*p.CLIENT_MESSAGES, *p.SERVER_MESSAGES})
INTERESTING_BYTES = bytes([
    0x00, 0x01, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xC3, 0xC4, 0xC5,
    0xC6, 0xC7, 0xCA, 0xCB, 0xCC, 0xCD, 0xCE, 0xCF, 0xD0, 0xD3, 0xD4, 0xD8, 0xD9, 0xDA, 0xDB,
    0xDC, 0xDD, 0xDE, 0xDF, 0xE0, 0xFF,
])
ODD_VALUES: list[Any] = [
    None, True, False, 0, -1, 1, 2, 2**31 - 1, 2**31, 2**53, 2**64 - 1, -(2**63), 1.5,
    float("nan"), float("inf"), "", " ", "\x00", "\n", "a" * 600, "é" * 40, "pass", "abort",
    "k3v9q2x7ma", b"bytes", [], [1, 2], {}, {"kind": "unlimited"}, {"": None},
    msgpack.ExtType(1, b""), msgpack.Timestamp(0), *TAGS[:6],
]


class Mutator:
    """An endless, reproducible stream of hostile frames."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def frames(self, count: int) -> Iterator[bytes]:
        for _ in range(count):
            yield self.frame()

    def frame(self) -> bytes:
        roll = self.rng.random()
        if roll < 0.15:
            return self._random_bytes()
        if roll < 0.6:
            return self._mutated_bytes()
        return self._mutated_value()

    def _random_bytes(self) -> bytes:
        rng = self.rng
        data = rng.randbytes(rng.choice((0, 1, 2, 5, 17, 64, 600)))
        if rng.random() < 0.5:  # a map header, so that the unpacker gets further
            data = bytes([0x80 | rng.randrange(16)]) + data
        return data

    def _mutated_bytes(self) -> bytes:
        rng = self.rng
        data = bytearray(rng.choice(FRAMES))
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(data) + 1)
            kind = rng.randrange(7)
            if kind == 0 and at < len(data):
                data[at] ^= 1 << rng.randrange(8)
            elif kind == 1 and at < len(data):
                data[at] = rng.choice(INTERESTING_BYTES)
            elif kind == 2:
                data[at:at] = rng.randbytes(rng.randint(1, 8))
            elif kind == 3:
                del data[at:at + rng.randint(1, 8)]
            elif kind == 4:
                del data[at:]
            elif kind == 5:
                data[at:] = rng.choice(FRAMES)
            else:
                chunk = data[at:at + rng.randint(1, 16)]
                data[at:at] = chunk
        return bytes(data)

    def _mutated_value(self) -> bytes:
        rng = self.rng
        wire: Any = msgpack.unpackb(msgpack.packb(rng.choice(WIRE)))  # a deep copy
        for _ in range(rng.randint(1, 3)):
            containers = list(_containers(wire))
            parent = rng.choice(containers)
            action = rng.randrange(5)
            if isinstance(parent, dict):
                keys = list(parent)
                if action == 0 and keys:
                    parent[rng.choice(keys)] = _odd(rng)
                elif action == 1 and keys:
                    del parent[rng.choice(keys)]
                elif action == 2:
                    key = rng.choice(("id", "t", "seq", "kind", "game_id", "x", "", "é"))
                    parent[key] = _odd(rng)
                elif action == 3 and parent is wire:
                    parent["t"] = rng.choice(TAGS)
                elif keys:
                    key = rng.choice(keys)
                    parent[key] = _nudge(parent[key], rng)
            elif parent:
                index = rng.randrange(len(parent))
                if action == 1:
                    del parent[index]
                elif action == 2:
                    parent.append(_odd(rng))
                else:
                    parent[index] = _odd(rng)
        data: bytes = msgpack.packb(wire, use_bin_type=True)
        return data


def _containers(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from _containers(item)
    elif isinstance(value, list):
        yield value
        for item in value:
            yield from _containers(item)


def _odd(rng: random.Random) -> Any:
    """An odd value; containers are fresh copies, so no mutation can make a cycle."""
    return copy.deepcopy(rng.choice(ODD_VALUES))


def _nudge(value: Any, rng: random.Random) -> Any:
    """A value near a valid one: an int off by one or at a bound, a string a bit longer."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        near = rng.choice((value - 1, value + 1, -value, value * 2**20, 2**31 - 1, 2**31))
        return min(max(near, -(2**63)), 2**64 - 1)  # what msgpack can carry
    if isinstance(value, str):
        return rng.choice((value + "x", value * 40, value.upper(), value[:-1], value + "\t"))
    return _odd(rng)


def check_client_frame(data: bytes, session: p.ServerSession | None = None, *,
                       deep: bool = True) -> str:
    """Decode ``data`` as the server does; the outcome: ``"ok"`` or the error code.

    Anything but a documented ProtocolError whose reply can be built fails (raises);
    ``deep`` also decodes the reply and re-encodes an accepted message (round trips).
    """
    try:
        message = session.receive(data) if session is not None else p.decode_client(data)
    except p.ProtocolError as exc:
        if exc.code not in CODES:
            raise AssertionError(f"undocumented error code {exc.code!r}") from exc
        reply = exc.to_reply()
        if deep and p.decode_server(p.encode(reply)) != reply:
            raise AssertionError(f"the refusal does not round-trip: {reply}") from exc
        return str(exc.code)
    if deep:
        frame = p.encode(message)
        if p.encode(p.decode_client(frame)) != frame:
            raise AssertionError(f"a decoded message does not round-trip: {message}")
    return "ok"


def check_server_frame(data: bytes) -> str:
    """The same for the clients' decoder of server frames."""
    try:
        message = p.decode_server(data)
    except p.ProtocolError as exc:
        if exc.code not in CODES:
            raise AssertionError(f"undocumented error code {exc.code!r}") from exc
        return str(exc.code)
    frame = p.encode(message)  # compared as bytes: metadata may hold a NaN
    if p.encode(p.decode_server(frame)) != frame:
        raise AssertionError(f"a decoded message does not round-trip: {message}")
    return "ok"


def run(seed: int, count: int, *, server_decoder: bool = True, deep_every: int = 1
        ) -> Counter[str]:
    """Push ``count`` frames through a greeted server session (and the clients' decoder of
    server frames); the outcomes counted, ``client:ok``, ``client:<error code>``, ...

    Every ``deep_every``-th frame gets the round-trip checks. Raises AssertionError
    naming the seed, index and bytes of the first frame that fails.
    """
    outcomes: Counter[str] = Counter()
    session = p.ServerSession()
    session.send(_welcome(session))
    for index, data in enumerate(Mutator(seed).frames(count)):
        try:
            deep = index % deep_every == 0
            outcomes["client:" + check_client_frame(data, session, deep=deep)] += 1
            if server_decoder:
                outcomes["server:" + check_server_frame(data)] += 1
        except Exception as exc:
            raise AssertionError(f"seed {seed}, frame {index}: {data.hex()}: "
                                 f"{type(exc).__name__}: {exc}") from exc
    return outcomes


def _welcome(session: p.ServerSession) -> p.ServerMessage:
    """Greet ``session`` (a hello answered), so frames reach the greeted phase's checks."""
    session.receive(p.encode(p.Hello(id=1, version=p.PROTOCOL_VERSION)))
    return dataclasses.replace(EXAMPLES["welcome"], id=1)  # type: ignore[type-var]
