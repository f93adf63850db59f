"""Every way a frame can be wrong is refused with the right exception and wire code."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest

import protocol as p
from protocol.errors import CLOSE_POLICY_VIOLATION


def frame(value: Any) -> bytes:
    data: bytes = msgpack.packb(value, use_bin_type=True)
    return data


def refused(data: Any, exc_type: type[p.ProtocolError], *, server: bool = False) -> p.ProtocolError:
    decode = p.decode_server if server else p.decode_client
    with pytest.raises(exc_type) as info:
        decode(data)
    return info.value


MOVE = {"t": "move", "id": 7, "game_id": "g1", "ply": 3, "move": "c3"}


def with_(**changes: Any) -> dict[str, Any]:
    return {**MOVE, **changes}


def test_a_valid_frame_decodes() -> None:
    assert p.decode_client(frame(MOVE)) == p.Move(id=7, game_id="g1", ply=3, move="c3")


# Frames that are not one msgpack map ---------------------------------------------------------


def test_too_large() -> None:
    exc = refused(frame({"t": "chat", "id": 1, "game_id": "g", "text": "x" * 20_000}),
                  p.FrameTooLarge)
    assert exc.code == "too_large"
    assert exc.request_id is None
    assert p.decode_client(frame(MOVE), max_bytes=64)
    with pytest.raises(p.FrameTooLarge):  # checked before unpacking
        p.decode_client(b"\x80" * 65, max_bytes=64)
    with pytest.raises(p.FrameTooLarge):
        p.decode_client(frame(MOVE), max_bytes=10)


def test_server_frames_may_be_larger() -> None:
    big = frame({"t": "pong", "id": 1, "pad": "x" * 20_000})
    exc = refused(big, p.InvalidMessage, server=True)  # read, then refused for "pad"
    assert "unknown field" in str(exc)
    refused(b"\x80" * (p.MAX_SERVER_FRAME_BYTES + 1), p.FrameTooLarge, server=True)


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"", "truncated"),
        (b"\x85\xa1t", "truncated"),
        (b"\xc1", "invalid format byte"),
        (frame(MOVE) + b"\x00", "extra bytes"),
        (b"\x91" * 2000, "nested too deeply"),
        (b"\x81\xa1t\xa2\xff\xfe", "not valid UTF-8"),
        (frame([1, 2]), "one msgpack map, got array"),
        (frame(3), "one msgpack map, got int"),
        (frame(None), "got nil"),
        (frame({1: 2}), "map keys must be str"),
        (frame({b"t": b"move"}), "map keys must be str, got bin"),
        (b"\x82\xa1t\xa4ping\xa1t\xa4ping", "duplicate map key 't'"),
        (frame({"t": "ping", "id": msgpack.ExtType(5, b"x")}), "extension type 5"),
        (frame({"t": "ping", "id": msgpack.Timestamp(1)}), "timestamp"),
        (frame({"t": "x", "a": [msgpack.Timestamp(1)]}), "timestamp"),
        (frame(msgpack.Timestamp(1)), "one msgpack map, got ext"),
        (b"\xdd\xff\xff\xff\xff", "too long"),
    ],
)
def test_malformed_frames(data: bytes, why: str) -> None:
    exc = refused(data, p.MalformedFrame)
    assert exc.code == "bad_request"
    assert why in str(exc)


def test_text_frames_and_non_bytes() -> None:
    assert "binary frame" in str(refused('{"t": "ping"}', p.MalformedFrame))
    refused(None, p.MalformedFrame)
    refused(12, p.MalformedFrame)


def test_bytearray_and_memoryview_are_accepted() -> None:
    data = frame(MOVE)
    assert p.decode_client(bytearray(data)) == p.decode_client(memoryview(data))


def test_long_arrays_and_maps_stop_client_decoding_early() -> None:
    refused(frame({"t": "ping", "id": 1, "x": list(range(65))}), p.MalformedFrame)
    refused(frame({"t": "ping", "id": 1, "x": {str(i): i for i in range(65)}}), p.MalformedFrame)


# Maps that are not messages ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ({"id": 1}, "t: expected the message type as str, got nil"),
        ({"t": 5, "id": 1}, "got int 5"),
        ({"t": "teleport", "id": 1}, "unknown message type 'teleport'"),
        ({"t": "welcome", "id": 1}, "unknown message type 'welcome'"),  # wrong direction
        ({"t": "move", "id": 7, "game_id": "g1", "ply": 3}, "missing field 'move'"),
        (with_(extra=1), "unknown field str 'extra'"),
        (with_(ply="3"), "move.ply: expected int 0..2147483647, got str '3'"),
        (with_(ply=True), "got bool True"),
        (with_(ply=3.0), "got float 3.0"),
        (with_(ply=-1), "got int -1"),
        (with_(ply=2**31), "got int 2147483648"),
        (with_(ply=None), "got nil"),
        (with_(id=2**40), "move.id: expected int 0..2147483647"),
        (with_(game_id=""), "move.game_id: expected str of 1..32 chars"),
        (with_(game_id="a b"), "got str 'a b'"),
        (with_(move="x" * 33), "got 33 chars"),
        (with_(move="c3\n"), "expected printable text"),
        (with_(move=b"c3"), "got bin"),
        (with_(move=["c3"]), "got array"),
        ({"t": "chat", "id": 1, "game_id": "g", "text": ""}, "got 0 chars"),
        ({"t": "chat", "id": 1, "game_id": "g", "text": "x" * 501}, "got 501 chars"),
        ({"t": "chat", "id": 1, "game_id": "g", "text": "\x1b[2J"}, "printable"),
        ({"t": "login", "id": 1, "username": "9lives", "password": "x"}, "login.username"),
        ({"t": "login", "id": 1, "username": "a", "password": "x"}, "login.username"),
        ({"t": "login", "id": 1, "username": "al ice", "password": "x"}, "login.username"),
        ({"t": "login", "id": 1, "username": "alice", "password": ""}, "login.password"),
        ({"t": "register", "id": 1, "username": "alice", "password": "short"}, "8..128"),
        ({"t": "auth_token", "id": 1, "token": "has space"}, "auth_token.token"),
        ({"t": "resume", "id": 1, "game_id": "g", "since_seq": -1}, "since_seq"),
        ({"t": "list_games", "id": 1, "limit": 101}, "list_games.limit: expected int 1..100"),
        ({"t": "list_games", "id": 1, "limit": 0}, "list_games.limit"),
        ({"t": "list_games", "id": 1, "result": "win"}, "needs 'player'"),
        ({"t": "list_games", "id": 1, "status": "waiting"}, "list_games.status"),
        ({"t": "challenge", "id": 1, "to": "bob", "game": "xodd", "options": {},
          "clock": {"kind": "unlimited"}, "color": 2}, "challenge.color"),
        ({"t": "challenge", "id": 1, "to": "bob", "game": "xodd", "options": {},
          "clock": {"kind": "unlimited"}, "color": True}, "challenge.color"),
    ],
)
def test_invalid_messages(value: dict[str, Any], why: str) -> None:
    exc = refused(frame(value), p.InvalidMessage)
    assert exc.code == "bad_request"
    assert why in str(exc)


def seek(**changes: Any) -> dict[str, Any]:
    value = {"t": "seek", "id": 4, "game": "xodd", "options": {},
             "clock": {"kind": "fischer", "base_ms": 60_000, "increment_ms": 0}}
    return {**value, **changes}


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (seek(clock={"kind": "fischer", "base_ms": 500, "increment_ms": 0}),
         "seek.clock.base_ms: expected int 1000..86400000, got int 500"),
        (seek(clock={"kind": "fischer", "base_ms": 60_000}), "missing field 'increment_ms'"),
        (seek(clock={"kind": "per_move", "per_move_ms": 10**9}), "seek.clock.per_move_ms"),
        (seek(clock={"kind": "correspondence", "days_per_move": 31}), "days_per_move"),
        (seek(clock={"kind": "unlimited", "base_ms": 1}), "unknown field"),
        (seek(clock={"kind": "sandglass"}), "seek.clock.kind"),
        (seek(clock={"base_ms": 1}), "seek.clock.kind"),
        (seek(clock="blitz"), "seek.clock: expected map"),
        (seek(game="chess"), "seek.game: unknown game 'chess'"),
        (seek(game="Xodd"), "seek.game"),
        (seek(options={"size": 1}), "seek.options: option size=1 is out of range"),
        (seek(options={"colour": "red"}), "seek.options: unknown option 'colour'"),
        (seek(options={"size": None}), "seek.options.size"),
        (seek(options={"size": 2**40}), "seek.options.size"),
        (seek(options={str(i): 1 for i in range(17)}), "seek.options"),
        (seek(game="hexifact", options={"board": "hex9"}), "board='hex9' is not allowed"),
    ],
)
def test_invalid_games_options_and_clocks(value: dict[str, Any], why: str) -> None:
    exc = refused(frame(value), p.InvalidMessage)
    assert exc.code == "bad_request"
    assert why in str(exc)


def test_errors_carry_the_request_id_and_game_id_when_readable() -> None:
    exc = refused(frame(with_(move=5)), p.InvalidMessage)
    assert (exc.request_id, exc.game_id) == (7, "g1")
    assert exc.to_reply() == p.ErrorReply(
        id=7, code="bad_request", message=str(exc), game_id="g1"
    )
    exc = refused(frame(with_(id=-5, game_id="")), p.InvalidMessage)
    assert (exc.request_id, exc.game_id) == (None, None)
    assert exc.to_reply().id is None


# Versions ------------------------------------------------------------------------------------


def test_unsupported_version_is_checked_before_the_other_fields() -> None:
    hello_v2 = {"t": "hello", "id": 1, "version": 2, "client": "x", "features": ["y"]}
    exc = refused(frame(hello_v2), p.UnsupportedVersion)
    assert exc.code == "unsupported_version"
    assert exc.close_code == CLOSE_POLICY_VIOLATION
    assert exc.request_id == 1
    assert "this server speaks version 1" in str(exc)
    assert exc.to_reply().code == "unsupported_version"


def test_a_hello_without_a_usable_version_is_a_bad_request() -> None:
    refused(frame({"t": "hello", "id": 1, "version": "1"}), p.InvalidMessage)
    refused(frame({"t": "hello", "id": 1}), p.InvalidMessage)
    assert p.decode_client(frame({"t": "hello", "id": 1, "version": 1})) == p.Hello(
        id=1, version=1
    )


def test_clients_do_not_check_versions_of_welcome() -> None:
    welcome = p.decode_server(frame({
        "t": "welcome", "id": 1, "version": 3, "server": "s", "games": [],
        "limits": {"max_frame_bytes": 2048, "rate_per_s": 1, "burst": 1, "max_open_seeks": 0},
    }))
    assert isinstance(welcome, p.Welcome) and welcome.version == 3


# Building messages validates them too ---------------------------------------------------------


def test_building_a_bad_message_raises_invalid_message_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"chat\.text"):
        p.Chat(id=1, game_id="g", text="")
    with pytest.raises(p.InvalidMessage, match=r"move\.ply"):
        p.Move(id=1, game_id="g", ply=-1, move="c3")
    with pytest.raises(p.InvalidMessage, match=r"seek\.clock"):
        p.Seek(id=1, game="xodd", options={}, clock={"kind": "unlimited"})  # type: ignore[arg-type]
    with pytest.raises(p.InvalidMessage, match="lone surrogate"):
        p.Register(id=1, username="ab", password="abcdefgh\ud800")


def test_cross_field_rules() -> None:
    with pytest.raises(p.InvalidMessage, match="winner must be given"):
        p.GameOver(game_id="g", seq=2, reason="resign")
    with pytest.raises(p.InvalidMessage, match="winner must be given"):
        p.Result(winner=0, reason="abort")
    snapshot = p.Snapshot(
        game_id="g", game="hadron", options={"size": 5}, clock=p.Unlimited(),
        players=(p.User(name="ab", kind="bot"), p.User(name="cd", kind="bot")),
        status="waiting", moves=(), to_move=0, ply=0, seq=1,
    )
    with pytest.raises(p.InvalidMessage, match=r"snapshot\.ply"):
        p.Snapshot(**{**snapshot_fields(snapshot), "ply": 1})
    with pytest.raises(p.InvalidMessage, match=r"snapshot\.moves"):
        p.Snapshot(**{**snapshot_fields(snapshot), "ply": 1, "moves": (
            p.PlayedMove(ply=1, move="c3", by=0, ms_used=0),)})
    with pytest.raises(p.InvalidMessage, match=r"snapshot\.result"):
        p.Snapshot(**{**snapshot_fields(snapshot), "status": "over"})
    with pytest.raises(p.InvalidMessage, match=r"game_started\.snapshot"):
        p.GameStarted(game_id="other", seq=1, snapshot=snapshot)


def snapshot_fields(snapshot: p.Snapshot) -> dict[str, Any]:
    return {name: getattr(snapshot, name) for name in p.Snapshot.__dataclass_fields__}


def test_seek_and_challenge_options_are_normalised_by_the_engine() -> None:
    sought = p.Seek(id=1, game="hexifact", options={"board": "hex4"}, clock=p.Unlimited())
    assert sought.options == {"board": "hex4", "jumps": "after-placing"}
    decoded = p.decode_client(frame(seek(options={})))
    assert isinstance(decoded, p.Seek) and decoded.options == {"size": 9}
    challenge = p.Challenge(id=1, to="bob", game="hadron", options={}, clock=p.Unlimited())
    assert challenge.options == {"size": 5} and challenge.color == "random"


def test_error_reply_helper_makes_any_text_sendable() -> None:
    reply = p.error_reply(p.ErrorCode.ILLEGAL_MOVE, "bad\nmove\x00" + "x" * 600, id=3,
                          retry_after_ms=-5)
    assert reply.message.startswith("bad move ")
    assert len(reply.message) == 500 and reply.message.endswith("...")
    assert reply.retry_after_ms == 0
    assert p.decode_server(p.encode(reply)) == reply


def test_protocol_error_defaults_and_codes() -> None:
    exc = p.ProtocolError("no such game", code=p.ErrorCode.NOT_FOUND, game_id="g")
    assert exc.to_reply(request_id=9) == p.ErrorReply(
        id=9, code="not_found", message="no such game", game_id="g"
    )
    assert p.BadRequest("x").code == "bad_request"
    assert p.FrameTooLarge("x").code == "too_large"
    assert p.ProtocolError("x").close_code is None


def test_a_bad_item_is_named_by_its_index() -> None:
    with pytest.raises(p.InvalidMessage, match=r"^moved\.clocks_ms\[1\]: expected int"):
        p.Moved(game_id="g1", seq=2, ply=0, move="c3", by=0, ms_used=0, clocks_ms=(5, -1))
    with pytest.raises(p.InvalidMessage, match=r"^authed\.active_games\[2\]: expected str"):
        p.Authed(id=1, user=p.User(name="al", kind="guest"), session_token="t",
                 active_games=["g1", "g2", ""])
    moved = {"t": "moved", "game_id": "g1", "seq": 2, "ply": 0, "move": "c3", "by": 0,
             "ms_used": 0, "clocks_ms": [5, "x"]}
    exc = refused(frame(moved), p.InvalidMessage, server=True)
    assert str(exc).startswith("moved.clocks_ms[1]: expected int")


def test_a_decoded_message_equals_the_one_built_from_its_values() -> None:
    built = p.ListGames(id=4, player="alice", result="win")
    decoded = p.decode_client(p.encode(built))
    assert decoded == built and decoded.limit == built.limit
    with pytest.raises(p.InvalidMessage, match="needs 'player'"):  # _check runs on decode
        p.decode_client(frame({"t": "list_games", "id": 4, "result": "win"}))


def _fields_of_every_message() -> list[tuple[str, str, bool]]:
    """(example name, wire field, optional) for every field of every message class: the
    examples cover every class (test_golden checks that)."""
    import dataclasses

    from tests.protocol.examples import EXAMPLES

    cases = []
    for name, message in EXAMPLES.items():
        for f in dataclasses.fields(message):  # type: ignore[arg-type]
            optional = (f.default is not dataclasses.MISSING
                        or f.default_factory is not dataclasses.MISSING)
            cases.append((name, f.name.rstrip("_"), optional))
    return cases


@pytest.mark.parametrize(("name", "field", "optional"), _fields_of_every_message())
def test_nil_for_an_optional_field_means_leaving_it_out(name: str, field: str,
                                                        optional: bool) -> None:
    """PROTOCOL.md section 2: an optional field may be nil; a required one may not."""
    from tests.protocol.examples import EXAMPLES

    message = EXAMPLES[name]
    decode = p.decode_client if type(message).TAG in p.CLIENT_MESSAGES else p.decode_server
    wire = message.to_wire()
    with_nil = {**wire, field: None}
    left_out = {key: value for key, value in wire.items() if key != field}
    def outcome(data: dict[str, Any]) -> Any:
        try:
            return decode(frame(data))
        except p.ProtocolError as exc:  # e.g. game_over without a winner needs reason abort
            return type(exc), str(exc)

    if optional:
        assert outcome(with_nil) == outcome(left_out)
    else:
        error = refused(frame(with_nil), p.InvalidMessage, server=decode is p.decode_server)
        assert field in str(error)
