"""Wire error codes and the exceptions of the protocol package.

Every exception this package raises on bad input is a :class:`ProtocolError`. It carries
the stable wire ``code`` the peer will see, and what is known of the request that caused it
(``request_id``, ``game_id``), so an adapter answers any failure with one line::

    try:
        message = decode_client(frame)
    except ProtocolError as exc:
        send(encode(exc.to_reply()))
        if exc.close_code is not None:
            close(exc.close_code)

Hierarchy::

    ProtocolError                    any code; the server raises it for its own refusals
     ├── BadRequest                  bad_request
     │    ├── MalformedFrame         not one msgpack map: bad bytes, text frame, extension
     │    │                          type, non-string or duplicate key, nesting too deep
     │    ├── InvalidMessage         a map, but not a valid message: unknown "t", missing,
     │    │                          unknown, mistyped or out-of-range field (a ValueError
     │    │                          too: building a message with bad values raises it)
     │    └── BadHello               the first frame claims to be ``hello`` but is not a
     │                               valid one (close the connection at once, 4400)
     ├── FrameTooLarge               too_large
     └── UnsupportedVersion          unsupported_version (close the connection, 1008)
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

__all__ = [
    "CLOSE_BAD_HELLO",
    "CLOSE_GOING_AWAY",
    "CLOSE_INTERNAL_ERROR",
    "CLOSE_NORMAL",
    "CLOSE_POLICY_VIOLATION",
    "CLOSE_TOO_BIG",
    "CLOSE_TOO_SLOW_TO_START",
    "BadHello",
    "BadRequest",
    "ErrorCode",
    "FrameTooLarge",
    "InvalidMessage",
    "MalformedFrame",
    "ProtocolError",
    "UnsupportedVersion",
]

if TYPE_CHECKING:
    from protocol.messages import ErrorReply


class ErrorCode(enum.StrEnum):
    """The stable error codes of ``error`` replies. Never renamed or reused."""

    BAD_REQUEST = "bad_request"
    UNSUPPORTED_VERSION = "unsupported_version"
    TOO_LARGE = "too_large"
    UNAUTHORIZED = "unauthorized"
    FORBIDDEN = "forbidden"
    INVALID_CREDENTIALS = "invalid_credentials"
    LOCKED_OUT = "locked_out"
    NAME_TAKEN = "name_taken"
    NOT_FOUND = "not_found"
    ILLEGAL_MOVE = "illegal_move"
    NOT_YOUR_TURN = "not_your_turn"
    STALE_PLY = "stale_ply"
    GAME_OVER = "game_over"
    RATE_LIMITED = "rate_limited"
    CONFLICT = "conflict"
    NOT_STORED = "not_stored"
    INTERNAL_ERROR = "internal_error"


CLOSE_NORMAL = 1000
"""Normal closure (the client is done)."""
CLOSE_GOING_AWAY = 1001
"""The server is shutting down or restarting: reconnect after a pause and resume."""
CLOSE_POLICY_VIOLATION = 1008
"""Unsupported version, or repeated protocol errors or abuse: do not retry unchanged."""
CLOSE_TOO_BIG = 1009
"""A frame exceeded what the WebSocket layer accepts."""
CLOSE_INTERNAL_ERROR = 1011
"""The server failed; reconnect and resume."""
CLOSE_BAD_HELLO = 4400
"""The connection's ``hello`` was not valid (after the ``bad_request`` saying why): a
connection cannot go on without one, so it is closed at once. Fix the client."""
CLOSE_TOO_SLOW_TO_START = 4408
"""No ``hello`` within the server's hello deadline, or no login within its authentication
deadline (by a connection that watches nothing): connect when you are ready to talk."""


class ProtocolError(Exception):
    """A request or frame the peer got wrong, with the wire code that says how.

    ``code`` defaults to the class's code; the server may raise the root class with any
    :class:`ErrorCode` for its own refusals::

        raise ProtocolError("no such game", code=ErrorCode.NOT_FOUND, game_id="k3v9q2x7ma")

    ``close_code`` is the WebSocket close code to close with after replying, or None to
    keep the connection open.
    """

    code: str = ErrorCode.BAD_REQUEST
    close_code: int | None = None

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        request_id: int | None = None,
        game_id: str | None = None,
        retry_after_ms: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.request_id = request_id
        self.game_id = game_id
        self.retry_after_ms = retry_after_ms

    def to_reply(self, request_id: int | None = None) -> ErrorReply:
        """The ``error`` message answering this failure (``request_id`` overrides)."""
        from protocol.messages import error_reply

        return error_reply(
            self.code,
            self.message,
            id=self.request_id if request_id is None else request_id,
            game_id=self.game_id,
            retry_after_ms=self.retry_after_ms,
        )


class BadRequest(ProtocolError):
    """The frame or request is not acceptable as sent (``bad_request``)."""

    code = ErrorCode.BAD_REQUEST


class BadHello(BadRequest):
    """A connection's first request claims to be ``hello`` and is not a valid one (its
    ``version`` not an int, its ``client`` with control characters, a field missing or
    unknown): ``bad_request``, and the connection is closed with 4400, since nothing can
    follow a hello that failed."""

    close_code = CLOSE_BAD_HELLO


class MalformedFrame(BadRequest):
    """The frame is not exactly one msgpack map with string keys and plain values."""


class InvalidMessage(BadRequest, ValueError):
    """The map is not a valid message; the text names the offending field path."""


class FrameTooLarge(ProtocolError):
    """The frame is longer than the limit (``too_large``); nothing of it was read."""

    code = ErrorCode.TOO_LARGE


class UnsupportedVersion(ProtocolError):
    """``hello`` named a protocol version this side does not speak."""

    code = ErrorCode.UNSUPPORTED_VERSION
    close_code = CLOSE_POLICY_VIOLATION
