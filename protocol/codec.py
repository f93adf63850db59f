"""Bytes <-> messages. Encoding is deterministic; decoding is strict and never crashes.

``encode(message)`` gives the exact bytes the golden files hold: one msgpack map, ``"t"``
first, then the fields in declared order, absent (None) fields left out, free-form maps
with sorted keys, str as msgpack str and bytes (never used) as bin.

``decode_client`` / ``decode_server`` accept one frame and return one message, or raise a
:class:`~protocol.errors.ProtocolError` subclass, whatever the input: a frame over the size
limit (``FrameTooLarge``), bytes that are not exactly one msgpack map with string keys and
no extension types (``MalformedFrame``), a map that is not a valid message of that
direction (``InvalidMessage``), or a ``hello`` naming a version this side does not speak
(``UnsupportedVersion``). The error carries the frame's ``id`` (and ``game_id``) when they
could be read, so ``exc.to_reply()`` answers the right request.
"""

from __future__ import annotations

import threading
from typing import Any, TypeVar, cast

import msgpack

from protocol._schema import compile_type, show, struct_converter
from protocol.errors import (
    FrameTooLarge,
    InvalidMessage,
    MalformedFrame,
    ProtocolError,
    UnsupportedVersion,
)
from protocol.limits import (
    MAX_CLIENT_FRAME_BYTES,
    MAX_SERVER_FRAME_BYTES,
    SUPPORTED_VERSIONS,
)
from protocol.messages import (
    CLIENT_MESSAGES,
    SERVER_MESSAGES,
    ClientMessage,
    Hello,
    Message,
    ServerMessage,
)
from protocol.values import GameId, RequestId

__all__ = [
    "Prepared",
    "decode_client",
    "decode_server",
    "encode",
    "encode_trusted",
    "load_value",
    "peek_type",
    "prepare",
]

_REQUEST_ID = compile_type(RequestId)
_GAME_ID = compile_type(GameId)

CLIENT_CONTAINER_ITEMS = 64
"""No client message has an array or map longer than this; longer ones stop unpacking."""


class _Packers(threading.local):
    """One reusable msgpack Packer per thread (a Packer is not thread-safe)."""

    def __init__(self) -> None:
        self.packer = msgpack.Packer(use_bin_type=True)


_PACKERS = _Packers()


def encode(message: Message) -> bytes:
    """The frame for ``message``: deterministic msgpack bytes."""
    return _PACKERS.packer.pack(message.to_wire())


def encode_trusted(cls: type[Message], **fields: Any) -> bytes:
    """The frame of ``cls.trusted(**fields)``, without building the message: for the
    server's own events on the path of every move (see :meth:`Struct.trusted`)."""
    return _PACKERS.packer.pack(struct_converter(cls).trusted_wire(fields))


class Prepared:
    """A message packed once for many frames that differ only in a few fields (its
    ``holes``: a request's ``id``, a snapshot's ``game.clocks_ms``), e.g. the lobby's first
    page or a game's state for each of its spectators. ``frame(**values)`` is the frame
    ``encode`` would give for the message with those fields set to ``values`` (their wire
    form, named by their dotted paths with ``.`` written ``__``), byte for byte, for the
    cost of packing the values alone. The values are not checked: the server vouches for
    them (as for ``encode_trusted``).
    """

    __slots__ = ("holes", "parts", "size")

    def __init__(self, parts: list[bytes | str]) -> None:
        self.parts = tuple(parts)
        self.holes = frozenset(part for part in parts if isinstance(part, str))
        self.size = sum(len(part) for part in parts if isinstance(part, bytes))

    def frame(self, **values: Any) -> bytes:
        if values.keys() != self.holes:
            raise TypeError(f"prepared frame: give exactly {sorted(self.holes)}, "
                            f"not {sorted(values)}")
        pack = _PACKERS.packer.pack
        return b"".join(part if isinstance(part, bytes) else pack(values[part])
                        for part in self.parts)


def prepare(message: Message, holes: tuple[str, ...] = ("id",)) -> Prepared:
    """``message`` packed once, with the fields at ``holes`` (dotted paths, each present
    in ``message``) left to fill in per frame (:class:`Prepared`)."""
    paths = {tuple(hole.split(".")) for hole in holes}
    parts: list[bytes | str] = []
    _pack_parts(message.to_wire(), (), paths, parts)
    merged: list[bytes | str] = []
    for part in parts:  # adjacent bytes joined: a frame is one join of few parts
        if isinstance(part, bytes) and merged and isinstance(merged[-1], bytes):
            merged[-1] += part
        else:
            merged.append(part)
    missing = {"__".join(path) for path in paths} - {p for p in merged if isinstance(p, str)}
    if missing:
        raise ValueError(f"prepare {message.TAG}: no field {sorted(missing)} to leave open")
    return Prepared(merged)


def _pack_parts(node: Any, path: tuple[str, ...], holes: set[tuple[str, ...]],
                out: list[bytes | str]) -> None:
    packer = _PACKERS.packer
    if path in holes:
        out.append("__".join(path))
    elif isinstance(node, dict) and any(hole[:len(path)] == path for hole in holes):
        out.append(packer.pack_map_header(len(node)))
        for key, value in node.items():
            out.append(packer.pack(key))
            _pack_parts(value, (*path, key), holes, out)
    else:
        out.append(packer.pack(node))


T = TypeVar("T")
_VALUE_CONVERTERS: dict[Any, Any] = {}


def load_value(cls: type[T], data: object, path: str = "value") -> T:
    """A protocol value (a value struct such as ``Record``, or a message) from plain data,
    as JSON or msgpack give it, checked as the decoder checks a frame's fields:
    InvalidMessage (a ValueError) naming the bad field (under ``path``) otherwise."""
    converter = _VALUE_CONVERTERS.get(cls)
    if converter is None:
        converter = _VALUE_CONVERTERS[cls] = compile_type(cls)
    return cast(T, converter.load(data, path))


def decode_client(
    data: bytes | bytearray | memoryview, *, max_bytes: int = MAX_CLIENT_FRAME_BYTES
) -> ClientMessage:
    """The client message in one frame (server side); ProtocolError if there is none."""
    raw = _unpack_map(data, max_bytes, CLIENT_CONTAINER_ITEMS)
    return cast(ClientMessage, _load(raw, CLIENT_MESSAGES, check_version=True))


def decode_server(
    data: bytes | bytearray | memoryview, *, max_bytes: int = MAX_SERVER_FRAME_BYTES
) -> ServerMessage:
    """The server message in one frame (client side); ProtocolError if there is none."""
    raw = _unpack_map(data, max_bytes, None)
    return cast(ServerMessage, _load(raw, SERVER_MESSAGES, check_version=False))


def peek_type(data: bytes | bytearray | memoryview) -> str | None:
    """The message type (``t``) a frame claims, without checking the rest; None when it
    has none that can be read. For a server that must tell a ``ping`` from other requests
    before it decodes them in their turn (the full check comes then)."""
    try:
        value = msgpack.unpackb(data, raw=False, strict_map_key=False, ext_hook=_refuse_ext,
                                max_array_len=CLIENT_CONTAINER_ITEMS,
                                max_map_len=CLIENT_CONTAINER_ITEMS)
    except Exception:
        return None
    tag = value.get("t") if isinstance(value, dict) else None
    return tag if isinstance(tag, str) else None


# Unpacking ----------------------------------------------------------------------------------


class _Refused(Exception):
    """Raised inside msgpack hooks; turned into MalformedFrame."""


def _refuse_ext(code: int, data: bytes) -> object:
    raise _Refused(f"extension type {code} is not allowed")


def _check_items(items: list[Any]) -> list[Any]:
    for item in items:
        if isinstance(item, msgpack.Timestamp):
            raise _Refused("extension type -1 (timestamp) is not allowed")
    return items


def _unique_map(pairs: list[tuple[Any, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if not isinstance(key, str):
            raise _Refused(f"map keys must be str, got {show(key)}")
        if key in result:
            raise _Refused(f"duplicate map key {key!r}")
        if isinstance(value, msgpack.Timestamp):
            raise _Refused("extension type -1 (timestamp) is not allowed")
        result[key] = value
    return result


def _unpack_map(data: object, max_bytes: int, max_items: int | None) -> dict[str, Any]:
    if isinstance(data, str):
        raise MalformedFrame("text frames are not accepted: send msgpack in a binary frame")
    if not isinstance(data, bytes | bytearray | memoryview):
        raise MalformedFrame(f"a frame is bytes, got {type(data).__name__}")
    size = data.nbytes if isinstance(data, memoryview) else len(data)
    if size > max_bytes:
        raise FrameTooLarge(f"frame of {size} bytes is over the limit of {max_bytes}")
    max_len = -1 if max_items is None else max_items  # -1: bounded by the frame size
    try:
        value = msgpack.unpackb(
            data,
            raw=False,
            strict_map_key=True,
            ext_hook=_refuse_ext,
            object_pairs_hook=_unique_map,
            list_hook=_check_items,
            max_array_len=max_len,
            max_map_len=max_len,
        )
    except _Refused as exc:
        raise MalformedFrame(str(exc)) from None
    except Exception as exc:  # msgpack's errors vary by cause; all mean "not one value"
        raise MalformedFrame(f"not a msgpack value: {_why(exc)}") from None
    if not isinstance(value, dict):
        raise MalformedFrame(f"a frame is one msgpack map, got {show(value)}")
    return value


def _why(exc: Exception) -> str:
    if isinstance(exc, msgpack.ExtraData):
        return "extra bytes after the first value"
    if isinstance(exc, msgpack.StackError):
        return "nested too deeply"
    if isinstance(exc, msgpack.FormatError):
        return "invalid format byte"
    if isinstance(exc, UnicodeDecodeError):
        return "a string is not valid UTF-8"
    text = str(exc)
    if "incomplete" in text or isinstance(exc, msgpack.OutOfData):
        return "truncated"
    if "exceeds max_" in text:
        return "an array or map is too long"
    if "map key" in text:
        return "map keys must be str"
    return type(exc).__name__


# Loading ------------------------------------------------------------------------------------


def _peek_request_id(raw: dict[str, Any]) -> int | None:
    try:
        return cast(int, _REQUEST_ID.load(raw.get("id"), "id"))
    except InvalidMessage:
        return None


def _peek_game_id(raw: dict[str, Any]) -> str | None:
    try:
        return cast(str, _GAME_ID.load(raw.get("game_id"), "game_id"))
    except InvalidMessage:
        return None


def _load(raw: dict[str, Any], classes: dict[str, type[Message]], check_version: bool) -> Message:
    try:
        tag = raw.get("t")
        if not isinstance(tag, str):
            raise InvalidMessage(f"t: expected the message type as str, got {show(tag)}")
        cls = classes.get(tag)
        if cls is None:
            raise InvalidMessage(f"t: unknown message type {tag[:40]!r}")
        if check_version and cls is Hello:
            _check_version(raw.get("version"))
        message: Message = struct_converter(cls).load(raw, tag)
        return message
    except ProtocolError as exc:
        if exc.request_id is None:
            exc.request_id = _peek_request_id(raw)
        if exc.game_id is None:
            exc.game_id = _peek_game_id(raw)
        raise


def _check_version(version: object) -> None:
    """``hello``'s version is checked before its other fields: those may change with it."""
    is_int = isinstance(version, int) and not isinstance(version, bool)
    if is_int and version not in SUPPORTED_VERSIONS:
        spoken = ", ".join(str(v) for v in SUPPORTED_VERSIONS)
        raise UnsupportedVersion(
            f"protocol version {str(version)[:20]} is not supported;"
            f" this server speaks version {spoken}"
        )
