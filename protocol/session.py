"""The lifecycle of one connection, as tables: what each phase accepts, how phases change.

    connected --hello ok--> greeted --register|login|guest|auth_token ok--> authenticated
                               ^                                                |
                               +------------------- logout ok ------------------+

A request in the wrong phase is refused with the code that says why: ``bad_request``
before ``hello`` (or a second ``hello``), ``unauthorized`` for an action that needs a
login, ``conflict`` for a login while logged in. A phase changes when a request that
moves it *succeeds*, i.e. when its success reply is sent.

:class:`ServerSession` applies these tables around the codec, so a server's connection
handler only feeds it frames and replies. It does no I/O.
"""

from __future__ import annotations

import enum

from protocol.codec import decode_client, encode
from protocol.errors import BadRequest, ErrorCode, ProtocolError
from protocol.limits import MAX_CLIENT_FRAME_BYTES
from protocol.messages import (
    Abort,
    AcceptChallenge,
    AcceptSeek,
    AuthToken,
    CancelChallenge,
    CancelSeek,
    Challenge,
    Chat,
    CheckMove,
    ClaimWin,
    ClientMessage,
    DeclineChallenge,
    ErrorReply,
    GetBoard,
    GetGame,
    GetPosition,
    Guest,
    Hello,
    ListGames,
    LobbySubscribe,
    LobbyUnsubscribe,
    Login,
    Logout,
    Message,
    Move,
    Ping,
    Register,
    Resign,
    Resume,
    Seek,
    ServerMessage,
    Unwatch,
    Watch,
)


class Phase(enum.StrEnum):
    CONNECTED = "connected"
    """Before a successful ``hello``."""
    GREETED = "greeted"
    """Versions agreed, nobody logged in: logins, ping, lobby, watching and history."""
    AUTHENTICATED = "authenticated"
    """Logged in as a user, guest or bot: everything but ``hello`` and logins."""


_GREETED_OR_LATER = frozenset({Phase.GREETED, Phase.AUTHENTICATED})
_GREETED = frozenset({Phase.GREETED})
_AUTHENTICATED = frozenset({Phase.AUTHENTICATED})

ACCEPTED_IN: dict[type[Message], frozenset[Phase]] = {
    Hello: frozenset({Phase.CONNECTED}),
    Register: _GREETED,
    Login: _GREETED,
    Guest: _GREETED,
    AuthToken: _GREETED,
    Logout: _AUTHENTICATED,
    Ping: _GREETED_OR_LATER,
    LobbySubscribe: _GREETED_OR_LATER,
    LobbyUnsubscribe: _GREETED_OR_LATER,
    Watch: _GREETED_OR_LATER,
    Unwatch: _GREETED_OR_LATER,
    ListGames: _GREETED_OR_LATER,
    GetGame: _GREETED_OR_LATER,
    GetBoard: _GREETED_OR_LATER,
    GetPosition: _GREETED_OR_LATER,
    CheckMove: _GREETED_OR_LATER,
    Resume: _GREETED_OR_LATER,
    Seek: _AUTHENTICATED,
    CancelSeek: _AUTHENTICATED,
    AcceptSeek: _AUTHENTICATED,
    Challenge: _AUTHENTICATED,
    AcceptChallenge: _AUTHENTICATED,
    DeclineChallenge: _AUTHENTICATED,
    CancelChallenge: _AUTHENTICATED,
    Move: _AUTHENTICATED,
    Resign: _AUTHENTICATED,
    Abort: _AUTHENTICATED,
    ClaimWin: _AUTHENTICATED,
    Chat: _AUTHENTICATED,
}
"""The phases in which each request is accepted."""

TRANSITIONS: dict[tuple[Phase, type[Message]], Phase] = {
    (Phase.CONNECTED, Hello): Phase.GREETED,
    (Phase.GREETED, Register): Phase.AUTHENTICATED,
    (Phase.GREETED, Login): Phase.AUTHENTICATED,
    (Phase.GREETED, Guest): Phase.AUTHENTICATED,
    (Phase.GREETED, AuthToken): Phase.AUTHENTICATED,
    (Phase.AUTHENTICATED, Logout): Phase.GREETED,
}
"""The phase a connection enters when a request succeeds in a given phase."""


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
    with ``exc.to_reply()``; close if ``exc.close_code``). ``send(message)`` returns the
    frame to write and moves the phase when it is the success reply of a login, hello or
    logout.
    """

    def __init__(self, *, max_frame_bytes: int = MAX_CLIENT_FRAME_BYTES) -> None:
        self.phase = Phase.CONNECTED
        self.max_frame_bytes = max_frame_bytes
        self._moving: dict[int, type[Message]] = {}

    def receive(self, data: bytes | bytearray | memoryview) -> ClientMessage:
        request = decode_client(data, max_bytes=self.max_frame_bytes)
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
