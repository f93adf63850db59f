"""Every example of docs/PROTOCOL.md, by name; golden/<name>.msgpack holds its bytes.

One story runs through them: alice (Black) plays bob (White) at Xodd 9x9, 5 min + 3 s,
game ``k3v9q2x7ma``. Regenerate the golden files and the document's example blocks with
``python -m tests.protocol.make_golden`` after changing anything here, and review the diff.
"""

from __future__ import annotations

import protocol as p

ALICE = p.User(name="alice", kind="human")
BOB = p.User(name="bob", kind="human")
GAME_ID = "k3v9q2x7ma"
BLITZ = p.Fischer(base_ms=300_000, increment_ms=3_000)
XODD_9 = {"size": 9}

# What engine.get_game(key).describe() gives for two games (checked against the engine).
XODD_INFO = {
    "key": "xodd",
    "name": "Xodd",
    "players": ["Black", "White"],
    "rules_version": "1",
    "summary": "Drop one or two stones of either colour; the group count must end odd;"
    " fewer own groups wins.",
    "options": [
        {
            "name": "size",
            "type": "int",
            "default": 9,
            "doc": "side of the square board (9..13 recommended)",
            "min": 2,
            "max": 26,
        }
    ],
}
HEXIFACT_INFO = {
    "key": "hexifact",
    "name": "Hexifact",
    "players": ["Black", "White"],
    "rules_version": "1",
    "summary": "Place next to the opponent or jump over their stones; score the product of"
    " your two largest groups.",
    "options": [
        {
            "name": "board",
            "type": "choice",
            "default": "hex3-4",
            "doc": "board shape",
            "choices": ["hex3-4", "hex4", "hex4-5", "hex5", "hex5-6"],
        },
        {
            "name": "jumps",
            "type": "choice",
            "default": "after-placing",
            "doc": "when a stone may jump",
            "choices": ["after-placing", "once-per-stone"],
        },
    ],
}

MOVES = (
    p.PlayedMove(ply=0, move="Bc3", by=0, ms_used=4_200, clock_ms=298_800),
    p.PlayedMove(ply=1, move="Wd4,Be5", by=1, ms_used=7_000, clock_ms=296_000),
)

SNAPSHOT_START = p.Snapshot(
    game_id=GAME_ID,
    game="xodd",
    options=XODD_9,
    clock=BLITZ,
    players=(ALICE, BOB),
    status="waiting",
    moves=(),
    clocks_ms=(300_000, 300_000),
    to_move=0,
    ply=0,
    seq=1,
)

SNAPSHOT_PLAYING = p.Snapshot(
    game_id=GAME_ID,
    game="xodd",
    options=XODD_9,
    clock=BLITZ,
    players=(ALICE, BOB),
    status="playing",
    moves=MOVES,
    clocks_ms=(298_800, 296_000),
    to_move=0,
    ply=2,
    seq=4,
)

RECORD = p.Record(
    game_id=GAME_ID,
    game="xodd",
    options=XODD_9,
    clock=BLITZ,
    players=(ALICE, BOB),
    status="over",
    moves=MOVES,
    result=p.Result(winner=0, reason="resign"),
    created_ms=1_767_225_600_000,
    ended_ms=1_767_225_640_000,
)

SEEK = p.OpenSeek(seek_id=17, user=ALICE, game="xodd", options=XODD_9, clock=BLITZ)

EXAMPLES: dict[str, p.Message] = {
    # Connection and login
    "hello": p.Hello(id=1, version=1, client="tessera-cli/0.1"),
    "welcome": p.Welcome(
        id=1,
        version=1,
        server="tessera/0.1.0",
        limits=p.Limits(max_frame_bytes=16_384, rate_per_s=20, burst=40, max_open_seeks=3),
        games=(XODD_INFO, HEXIFACT_INFO),
    ),
    "error_unsupported_version": p.ErrorReply(
        id=1,
        code="unsupported_version",
        message="protocol version 2 is not supported; this server speaks version 1",
    ),
    "register": p.Register(id=2, username="alice", password="correct horse"),
    "login": p.Login(id=2, username="alice", password="correct horse"),
    "guest": p.Guest(id=2),
    "auth_token": p.AuthToken(id=2, token="sess_Zm9vYmFyYmF6cXV4"),
    "authed": p.Authed(
        id=2, user=ALICE, session_token="sess_Zm9vYmFyYmF6cXV4", active_games=(GAME_ID,)
    ),
    "error_invalid_credentials": p.ErrorReply(
        id=2, code="invalid_credentials", message="wrong username or password"
    ),
    "error_locked_out": p.ErrorReply(
        id=2,
        code="locked_out",
        message="too many failed logins; try again later",
        retry_after_ms=30_000,
    ),
    "logout": p.Logout(id=40),
    "ok": p.Ok(id=40),
    "ping": p.Ping(id=41),
    "pong": p.Pong(id=41),
    # Lobby
    "lobby_subscribe": p.LobbySubscribe(id=3),
    "lobby": p.Lobby(id=3, seeks=(SEEK,), players=(ALICE, BOB)),
    "lobby_unsubscribe": p.LobbyUnsubscribe(id=39),
    "seek_added": p.SeekAdded(seek=SEEK),
    "seek_removed": p.SeekRemoved(seek_id=17),
    "seek_taken": p.SeekTaken(seek_id=17, game_id=GAME_ID),
    "player_online": p.PlayerOnline(user=BOB),
    "player_offline": p.PlayerOffline(name="bob"),
    # Seeks
    "seek": p.Seek(id=4, game="xodd", options=XODD_9, clock=BLITZ),
    "seek_created": p.SeekCreated(id=4, seek_id=17),
    "seek_per_move": p.Seek(
        id=5, game="hadron", options={"size": 5}, clock=p.PerMove(per_move_ms=30_000)
    ),
    "seek_correspondence": p.Seek(
        id=6,
        game="hexifact",
        options={"board": "hex4", "jumps": "after-placing"},
        clock=p.Correspondence(days_per_move=3),
    ),
    "seek_unlimited": p.Seek(id=7, game="yodd", options={"size": 6}, clock=p.Unlimited()),
    "cancel_seek": p.CancelSeek(id=8, seek_id=17),
    "accept_seek": p.AcceptSeek(id=5, seek_id=17),
    # Challenges
    "challenge": p.Challenge(
        id=9, to="bob", game="xodd", options=XODD_9, clock=BLITZ, color=0
    ),
    "challenge_created": p.ChallengeCreated(id=9, challenge_id=5),
    "challenge_received": p.ChallengeReceived(
        challenge_id=5, from_=ALICE, game="xodd", options=XODD_9, clock=BLITZ, color=0
    ),
    "accept_challenge": p.AcceptChallenge(id=6, challenge_id=5),
    "decline_challenge": p.DeclineChallenge(id=6, challenge_id=5),
    "decline_challenge_why": p.DeclineChallenge(
        id=6, challenge_id=5, message="I play Hadron only"),
    "cancel_challenge": p.CancelChallenge(id=10, challenge_id=5),
    "challenge_ended": p.ChallengeEnded(challenge_id=5, reason="accepted"),
    "challenge_ended_declined": p.ChallengeEnded(
        challenge_id=5, reason="declined", message="I play Hadron only"),
    # Playing
    "game_started": p.GameStarted(game_id=GAME_ID, seq=1, snapshot=SNAPSHOT_START),
    "move": p.Move(id=11, game_id=GAME_ID, ply=0, move="Bc3"),
    "moved": p.Moved(
        game_id=GAME_ID,
        seq=2,
        ply=0,
        move="Bc3",
        by=0,
        ms_used=4_200,
        clocks_ms=(298_800, 300_000),
    ),
    "move_ack": p.MoveAck(id=11, game_id=GAME_ID, ply=0, seq=2),
    "error_illegal_move": p.ErrorReply(
        id=12,
        code="illegal_move",
        message="Wf6: the turn would end with 4 groups, an even number",
        game_id=GAME_ID,
    ),
    "error_stale_ply": p.ErrorReply(
        id=12, code="stale_ply", message="the game is at ply 3, not 2", game_id=GAME_ID
    ),
    "chat": p.Chat(id=13, game_id=GAME_ID, text="good luck!"),
    "chat_message": p.ChatMessage(game_id=GAME_ID, seq=3, from_="alice", text="good luck!"),
    "resign": p.Resign(id=14, game_id=GAME_ID),
    "game_over": p.GameOver(game_id=GAME_ID, seq=5, winner=0, reason="resign"),
    "abort": p.Abort(id=15, game_id=GAME_ID),
    "game_over_abort": p.GameOver(game_id=GAME_ID, seq=2, reason="abort"),
    "opponent_left": p.OpponentLeft(
        game_id=GAME_ID, seq=5, player=1, claim_after_ms=30_000
    ),
    "opponent_back": p.OpponentBack(game_id=GAME_ID, seq=6, player=1),
    "claim_win": p.ClaimWin(id=16, game_id=GAME_ID),
    "error_rate_limited": p.ErrorReply(
        id=17, code="rate_limited", message="too many requests", retry_after_ms=250
    ),
    # Reconnecting and watching
    "resume": p.Resume(id=3, game_id=GAME_ID, since_seq=4),
    "watch": p.Watch(id=20, game_id=GAME_ID),
    "game_state": p.GameState(id=20, game=SNAPSHOT_PLAYING),
    "unwatch": p.Unwatch(id=21, game_id=GAME_ID),
    # History
    "list_games": p.ListGames(id=22, player="alice", status="over", limit=2),
    "game_list": p.GameList(
        id=22,
        games=(
            p.Summary(
                game_id=GAME_ID,
                game="xodd",
                options=XODD_9,
                clock=BLITZ,
                players=(ALICE, BOB),
                status="over",
                ply=2,
                result=p.Result(winner=0, reason="resign"),
                created_ms=1_767_225_600_000,
            ),
        ),
        next_cursor="MjAyNi0wMS0wMVQwMDowMDo0MHxrM3Y5cTJ4N21h",
    ),
    "get_game": p.GetGame(id=23, game_id=GAME_ID),
    "game_record": p.GameRecord(id=23, record=RECORD),
    # Errors without a request
    "error_bad_frame": p.ErrorReply(
        code="bad_request", message="not a msgpack value: truncated"
    ),
}
