"""The lifecycle of one connection, as tables: what each phase accepts, how phases change.

The phases are in :mod:`protocol.phases`; each client message declares the phases it is
accepted in and the phase its success moves to, and the tables here are derived from them.

A request in the wrong phase is refused with the code that says why: ``bad_request``
before ``hello`` (or a second ``hello``), ``unauthorized`` for an action that needs a
login, ``conflict`` for a login while logged in. A phase changes when a request that
moves it *succeeds*, i.e. when its success reply is sent.

:class:`ServerSession` applies these tables around the codec, so a server's connection
handler only feeds it frames and replies: every frame a server sends is made here
(``send``, ``send_trusted``, ``send_prepared``, ``event_frame``,
``trusted_event_frame``). It does no I/O.
"""

from __future__ import annotations

from typing import Any

from protocol.codec import Prepared, decode_client, encode, encode_trusted, peek_type
from protocol.errors import BadHello, BadRequest, ErrorCode, ProtocolError
from protocol.limits import MAX_CLIENT_FRAME_BYTES
from protocol.messages import (
    CLIENT_MESSAGES,
    ClientMessage,
    ErrorReply,
    Event,
    Hello,
    Message,
    ServerMessage,
)
from protocol.phases import Phase

__all__ = [
    "ACCEPTED_IN",
    "TRANSITIONS",
    "ServerSession",
    "check_phase",
    "event_frame",
    "trusted_event_frame",
]

ACCEPTED_IN: dict[type[Message], frozenset[Phase]] = {
    cls: cls.PHASES for cls in CLIENT_MESSAGES.values()}
"""The phases in which each request is accepted (its ``PHASES``)."""

TRANSITIONS: dict[tuple[Phase, type[Message]], Phase] = {
    (phase, cls): cls.MOVES_TO
    for cls in CLIENT_MESSAGES.values() if cls.MOVES_TO is not None
    for phase in cls.PHASES
}
"""The phase a connection enters when a request succeeds in a given phase (``MOVES_TO``)."""


def check_phase(phase: Phase, request: ClientMessage) -> None:
    """Raise the ProtocolError refusing ``request`` in ``phase``, if it is refused."""
    accepted = ACCEPTED_IN[type(request)]
    if phase in accepted:
        return
    name = type(request).TAG
    if phase is Phase.CONNECTED:
        raise BadRequest(f"{name}: send hello first", request_id=request.id)
    if isinstance(request, Hello):
        raise BadRequest("hello: already greeted", request_id=request.id)
    if phase is Phase.AUTHENTICATED:
        raise ProtocolError(
            f"{name}: already logged in; log out first",
            code=ErrorCode.CONFLICT,
            request_id=request.id,
        )
    raise ProtocolError(
        f"{name}: log in first", code=ErrorCode.UNAUTHORIZED, request_id=request.id
    )


class ServerSession:
    """One server connection's protocol state: frames in, messages out, phase kept.

    ``receive(frame)`` returns the request to act on or raises ProtocolError (answer it
    with ``exc.to_reply()``; close if ``exc.close_code``: a ``hello`` that is not valid,
    before the connection is greeted, is :class:`BadHello`). ``send(message)`` returns the
    frame to write and moves the phase when it is the success reply of a login, hello or
    logout.
    """

    def __init__(self, *, max_frame_bytes: int = MAX_CLIENT_FRAME_BYTES) -> None:
        self.phase = Phase.CONNECTED
        self.max_frame_bytes = max_frame_bytes
        self._moving: dict[int, type[Message]] = {}

    def receive(self, data: bytes | bytearray | memoryview) -> ClientMessage:
        try:
            request = decode_client(data, max_bytes=self.max_frame_bytes)
        except BadRequest as exc:
            if self.phase is Phase.CONNECTED and peek_type(data) == Hello.TAG:
                raise BadHello(exc.message, request_id=exc.request_id) from exc
            raise
        check_phase(self.phase, request)
        if (self.phase, type(request)) in TRANSITIONS:
            self._moving[request.id] = type(request)
        return request

    def send(self, message: ServerMessage) -> bytes:
        request_id = getattr(message, "id", None)
        if request_id is not None and request_id in self._moving:
            request_type = self._moving.pop(request_id)
            if not isinstance(message, ErrorReply):
                self.phase = TRANSITIONS.get((self.phase, request_type), self.phase)
        return encode(message)

    def send_trusted(self, cls: type[Message], **fields: Any) -> bytes:
        """The frame of a reply the server vouches for, made straight from its fields
        (``protocol.encode_trusted``: the server's own per-move replies, ``move_ack``).
        Only for replies that move no phase: those go through :meth:`send`."""
        if fields.get("id") in self._moving:
            raise TypeError(f"{cls.TAG} answers a request that moves the phase: use send()")
        return encode_trusted(cls, **fields)

    def send_prepared(self, prepared: Prepared, request_id: int, **values: Any) -> bytes:
        """The frame of a reply packed once for many requests (``protocol.prepare``: the
        lobby's first page, a game's state), with this request's id. Only for replies
        that move no phase."""
        if request_id in self._moving:
            raise TypeError("a prepared reply answers a request that moves the phase: "
                            "use send()")
        return prepared.frame(id=request_id, **values)


def event_frame(event: Event) -> bytes:
    """The frame of an event, made once for every connection it goes to (events move no
    connection's phase)."""
    return encode(event)


def trusted_event_frame(cls: type[Message], **fields: Any) -> bytes:
    """The frame of an event the server vouches for, made straight from its fields
    (``moved``, on the path of every move; see ``Struct.trusted``)."""
    return encode_trusted(cls, **fields)
