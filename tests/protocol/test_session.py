"""Connection phases: what each phase accepts, and the transitions ServerSession makes."""

from __future__ import annotations

import msgpack
import pytest

import protocol as p
from protocol.session import Phase

GAME = "k3v9q2x7ma"


def session_in(phase: Phase) -> p.ServerSession:
    session = p.ServerSession()
    session.phase = phase
    return session


def test_a_connection_starts_connected_and_only_hello_is_accepted() -> None:
    session = p.ServerSession()
    with pytest.raises(p.BadRequest, match="send hello first") as info:
        session.receive(p.encode(p.Ping(id=4)))
    assert info.value.request_id == 4
    assert session.receive(p.encode(p.Hello(id=1, version=1))) == p.Hello(id=1, version=1)


@pytest.mark.parametrize("hello", [
    {"t": "hello", "id": 1, "version": float("nan")},
    {"t": "hello", "id": 1, "version": 1.0},
    {"t": "hello", "id": 1, "version": 1, "client": "a\u202eb"},
])
def test_a_bad_first_hello_closes_the_connection(hello: dict[str, object]) -> None:
    """Not a valid hello before the connection is greeted: BadHello (bad_request, closed
    with 4400); once greeted, a bad hello is any bad frame (bad_request, not closed)."""
    with pytest.raises(p.BadHello) as info:
        p.ServerSession().receive(msgpack.packb(hello))
    assert (info.value.code, info.value.close_code) == ("bad_request", p.CLOSE_BAD_HELLO)
    assert info.value.request_id in (None, 1)
    with pytest.raises(p.BadRequest) as later:
        session_in(Phase.GREETED).receive(msgpack.packb(hello))
    assert later.value.close_code is None
    with pytest.raises(p.BadRequest) as other:  # not a hello: no close
        p.ServerSession().receive(msgpack.packb({"t": "ping", "id": 1.5}))
    assert other.value.close_code is None


def test_full_lifecycle() -> None:
    session = p.ServerSession()
    session.receive(p.encode(p.Hello(id=1, version=1)))
    assert session.phase is Phase.CONNECTED  # not before the reply is sent
    session.send(p.Welcome(id=1, version=1, server="s", games=(), limits=p.Limits(
        max_frame_bytes=16_384, rate_per_s=20, burst=40, max_open_seeks=3)))
    assert session.phase is Phase.GREETED

    session.receive(p.encode(p.Login(id=2, username="alice", password="pw")))
    session.send(p.error_reply(p.ErrorCode.INVALID_CREDENTIALS, "no", id=2))
    assert session.phase is Phase.GREETED  # a failed login changes nothing

    session.receive(p.encode(p.Guest(id=3)))
    frame = session.send(p.Authed(id=3, user=p.User(name="guest-1", kind="guest"),
                                  session_token="t", active_games=()))
    assert isinstance(p.decode_server(frame), p.Authed)
    assert session.phase is Phase.AUTHENTICATED

    assert session.receive(p.encode(p.Resign(id=4, game_id=GAME))) == p.Resign(
        id=4, game_id=GAME
    )
    session.send(p.Ok(id=4))
    assert session.phase is Phase.AUTHENTICATED

    session.receive(p.encode(p.Logout(id=5)))
    session.send(p.Ok(id=5))
    assert session.phase is Phase.GREETED


@pytest.mark.parametrize(
    ("phase", "message", "code"),
    [
        (Phase.GREETED, p.Hello(id=1, version=1), "bad_request"),
        (Phase.AUTHENTICATED, p.Hello(id=1, version=1), "bad_request"),
        (Phase.GREETED, p.Move(id=1, game_id=GAME, ply=0, move="c3"), "unauthorized"),
        (Phase.GREETED, p.Logout(id=1), "unauthorized"),
        (Phase.AUTHENTICATED, p.Guest(id=1), "conflict"),
        (Phase.AUTHENTICATED, p.Login(id=1, username="ab", password="x"), "conflict"),
        (Phase.CONNECTED, p.Watch(id=1, game_id=GAME), "bad_request"),
    ],
)
def test_requests_in_the_wrong_phase(phase: Phase, message: p.ClientMessage, code: str) -> None:
    with pytest.raises(p.ProtocolError) as info:
        session_in(phase).receive(p.encode(message))
    assert info.value.code == code
    assert info.value.to_reply().id == 1


@pytest.mark.parametrize(
    "message",
    [p.Watch(id=1, game_id=GAME), p.ListGames(id=1), p.GetGame(id=1, game_id=GAME),
     p.Ping(id=1), p.LobbySubscribe(id=1), p.Resume(id=1, game_id=GAME, since_seq=0)],
)
def test_spectating_and_history_need_no_login(message: p.ClientMessage) -> None:
    assert session_in(Phase.GREETED).receive(p.encode(message)) == message


def test_every_request_is_accepted_in_some_phase() -> None:
    for cls, phases in p.ACCEPTED_IN.items():
        assert phases, cls
    for (phase, cls), target in p.TRANSITIONS.items():
        assert phase in p.ACCEPTED_IN[cls] and target is not phase


def test_session_decodes_with_its_frame_limit() -> None:
    session = p.ServerSession(max_frame_bytes=32)
    with pytest.raises(p.FrameTooLarge):
        session.receive(p.encode(p.Hello(id=1, version=1, client="x" * 40)))


@pytest.mark.parametrize("cls", list(p.CLIENT_MESSAGES.values()), ids=lambda c: c.TAG)
def test_every_request_declares_its_phases_and_replies(cls: type[p.Message]) -> None:
    assert cls.PHASES, f"{cls.TAG} declares no phase it is accepted in"
    assert cls.REPLIES and all(tag in p.SERVER_MESSAGES for tag in cls.REPLIES)
    assert p.ACCEPTED_IN[cls] == cls.PHASES
    assert p.REPLIES[cls] == tuple(p.SERVER_MESSAGES[tag] for tag in cls.REPLIES)


def test_the_session_moves_only_on_declared_transitions() -> None:
    assert {
        (Phase.CONNECTED, p.Hello): Phase.GREETED,
        (Phase.GREETED, p.Register): Phase.AUTHENTICATED,
        (Phase.GREETED, p.Login): Phase.AUTHENTICATED,
        (Phase.GREETED, p.Guest): Phase.AUTHENTICATED,
        (Phase.GREETED, p.AuthToken): Phase.AUTHENTICATED,
        (Phase.AUTHENTICATED, p.Logout): Phase.GREETED,
        (Phase.AUTHENTICATED, p.DeleteAccount): Phase.GREETED,
    } == p.TRANSITIONS


def test_a_trusted_reply_cannot_skip_a_phase_change() -> None:
    session = p.ServerSession()
    session.receive(p.encode(p.Hello(id=1, version=1)))
    with pytest.raises(TypeError, match="moves the phase"):
        session.send_trusted(p.Welcome, id=1, version=1, server="x", limits=None, games=())
    ack = session.send_trusted(p.MoveAck, id=9, game_id="g1", ply=0, seq=2)
    assert p.decode_server(ack) == p.MoveAck(id=9, game_id="g1", ply=0, seq=2)
