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
    "piece": "stone",
    "moves": [
        {"kind": "drop", "pieces": ["B", "W"], "max": 2, "join": ",", "example": "Bc3,Wd4"},
        {"kind": "pass", "text": "pass"},
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
    "piece": "stone",
    "moves": [
        {"kind": "place", "example": "c3"},
        {"kind": "jump", "join": "-", "example": "c3-c6"},
        {"kind": "pass", "text": "pass"},
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

# What engine.get_game("yodd").board({"size": 2}).describe() gives (checked against the
# engine): the smallest hex board, seven cells.
THIRD = 1 / 3
YODD_2_GEOMETRY = {
    "kind": "hex",
    "label": "hexhex 2",
    "cells": [
        {"name": "a1", "col": 0, "row": 0, "x": 0.0, "y": 0.0},
        {"name": "b1", "col": 1, "row": 0, "x": 1.0, "y": 0.0},
        {"name": "a2", "col": 0, "row": 1, "x": -0.5, "y": 1.0},
        {"name": "b2", "col": 1, "row": 1, "x": 0.5, "y": 1.0},
        {"name": "c2", "col": 2, "row": 1, "x": 1.5, "y": 1.0},
        {"name": "b3", "col": 1, "row": 2, "x": 0.0, "y": 2.0},
        {"name": "c3", "col": 2, "row": 2, "x": 1.0, "y": 2.0},
    ],
    "neighbours": [[1, 2, 3], [0, 3, 4], [3, 5, 0], [2, 4, 5, 6, 0, 1], [3, 6, 1], [6, 2, 3],
                   [5, 3, 4]],
    "outline": [[0.0, 2 * THIRD], [0.5, THIRD], [0.5, -THIRD], [0.0, -2 * THIRD],
                [-0.5, -THIRD], [-0.5, THIRD]],
    "y_scale": 0.8660254037844386,
}
# The position of the story's game after its two moves (Bc3, then Wd4,Be5): too many
# legal moves to list. And a Hadron 5x5 game after c3 and a1, whose moves are listed.
XODD_CELLS_AFTER_2 = "." * 20 + "0" + "." * 9 + "1" + "." * 9 + "0" + "." * 40
HADRON_GAME_ID = "h4d7r0n5x2"
HEXIFACT_GAME_ID = "x6f9t3c1qa"
# Hexifact after c3 d3 e3 pass (checked against the engine in test_endings.py): Black's
# only legal move is to pass, and that ends the game.
HEXIFACT_CELLS_AFTER_4 = "." * 11 + "010" + "." * 13
HEXIFACT_PASS_ENDS = p.Result(winner=0, reason="normal", ending=p.Ending(
    how="passes", scores=(1, 0),
    text="both passed: Black 1 x 1 = 1, White 0 (one group); the higher score wins"))
HADRON_LEGAL = ("c1", "d1", "e1", "b2", "d2", "e2", "a3", "e3", "a4", "b4", "d4", "e4", "a5",
                "b5", "c5", "d5", "e5")

SEEK = p.OpenSeek(seek_id=17, user=ALICE, game="xodd", options=XODD_9, clock=BLITZ)

# Ratings: alice is established in Xodd and provisional in Hadron; bob is new to Xodd.
ALICE_XODD = p.PoolRating(game="xodd", rating=1612, deviation=74, provisional=False)
ALICE_HADRON = p.PoolRating(game="hadron", rating=1431, deviation=187, provisional=True)
ALICE_RATED = p.User(name="alice", kind="human", ratings=(ALICE_XODD, ALICE_HADRON))
RATED_SEEK = p.OpenSeek(seek_id=18, user=p.User(name="alice", kind="human", rating=ALICE_XODD),
                        game="xodd", options=XODD_9, clock=BLITZ, rated=True,
                        rating_min=1400, rating_max=1800)
RATING_CHANGES = (
    p.RatingUpdate(rating_before=1611.87, deviation_before=74.1, volatility_before=0.05999712,
                   rating_after=1619.05, deviation_after=72.62,
                   volatility_after=0.05999584),
    p.RatingUpdate(rating_before=1500.0, deviation_before=350.0, volatility_before=0.06,
                   rating_after=1412.83, deviation_after=282.35, volatility_after=0.05999929),
)

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
    "lobby_capped": p.Lobby(id=3, seeks=(SEEK,), players=(ALICE, BOB), more_seeks=9_499,
                            more_players=2_098, next_cursor="17:1767225600000:bob"),
    "lobby_page": p.LobbyPage(id=42, cursor="17:1767225600000:bob"),
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
    "game_over_normal": p.GameOver(
        game_id=GAME_ID, seq=310, winner=1, reason="normal",
        ending=p.Ending(how="passes", scores=(14, 11),
                        text="both passed: Black 14 groups, White 11; fewer groups wins"),
    ),
    "opponent_left": p.OpponentLeft(
        game_id=GAME_ID, seq=5, player=1, claim_after_ms=30_000
    ),
    "opponent_back": p.OpponentBack(game_id=GAME_ID, seq=6, player=1),
    "claim_win": p.ClaimWin(id=16, game_id=GAME_ID),
    "error_rate_limited": p.ErrorReply(
        id=17, code="rate_limited", message="too many requests", retry_after_ms=250
    ),
    "error_not_stored": p.ErrorReply(
        id=11, code="not_stored",
        message="the move was not stored (the database is busy); send it again",
        retry_after_ms=1000, game_id=GAME_ID,
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
    # Boards, positions and move checks, for clients that know no rules
    "get_board": p.GetBoard(id=24, game="yodd", options={"size": 2}),
    "board": p.Board(id=24, game="yodd", options={"size": 2}, geometry=YODD_2_GEOMETRY),
    "get_position": p.GetPosition(id=25, game_id=GAME_ID, ply=2),
    "position": p.Position(
        id=25, game_id=GAME_ID, ply=2, to_move=0, cells=XODD_CELLS_AFTER_2,
        last_move_cells=("d4", "e5"),
        summary={"groups": [2, 1], "stones": [2, 1], "total_groups": 3, "parity": "odd",
                 "empty_cells": 78},
    ),
    "position_listed": p.Position(
        id=26, game_id=HADRON_GAME_ID, ply=2, to_move=0, cells="1" + "." * 11 + "0" + "." * 12,
        last_move_cells=("a1",), summary={"legal_squares": list(HADRON_LEGAL), "tiles": [1, 1]},
        legal_moves=HADRON_LEGAL,
    ),
    "position_pass_ends": p.Position(
        id=29, game_id=HEXIFACT_GAME_ID, ply=4, to_move=0, cells=HEXIFACT_CELLS_AFTER_4,
        last_move_cells=(), summary={"scores": [1, 0], "groups": [[1, 1], [1]], "jumps": []},
        legal_moves=("pass",), after_pass=HEXIFACT_PASS_ENDS,
    ),
    "check_move": p.CheckMove(id=27, game_id=GAME_ID, ply=2, move="Wg7,Bf6"),
    "move_check": p.MoveCheck(id=27, game_id=GAME_ID, ply=2, move="Bf6,Wg7", legal=True),
    "move_check_illegal": p.MoveCheck(
        id=28, game_id=GAME_ID, ply=2, move="Wf6", legal=False,
        reason="Wf6: the turn would end with 4 groups, an even number",
    ),
    # Ratings (docs/RATINGS.md)
    "authed_ratings": p.Authed(
        id=2, user=ALICE_RATED, session_token="sess_Zm9vYmFyYmF6cXV4", active_games=()
    ),
    "player_online_ratings": p.PlayerOnline(user=ALICE_RATED),
    "seek_rated": p.Seek(id=30, game="xodd", options=XODD_9, clock=BLITZ, rated=True,
                         rating_min=1400, rating_max=1800),
    "seek_added_rated": p.SeekAdded(seek=RATED_SEEK),
    "challenge_rated": p.Challenge(
        id=31, to="bob", game="xodd", options=XODD_9, clock=BLITZ, color=0, rated=True
    ),
    "challenge_received_rated": p.ChallengeReceived(
        challenge_id=6, from_=p.User(name="alice", kind="human", rating=ALICE_XODD),
        game="xodd", options=XODD_9, clock=BLITZ, color=0, rated=True
    ),
    "game_over_rated": p.GameOver(game_id=GAME_ID, seq=5, winner=0, reason="resign",
                                  rating_changes=RATING_CHANGES),
    "leaderboard": p.GetLeaderboard(id=32, game="xodd", bots=False),
    "leaderboard_page": p.LeaderboardPage(
        id=32, game="xodd",
        standings=(
            p.Standing(rank=1, user=p.User(name="alice", kind="human", rating=p.PoolRating(
                game="xodd", rating=1612, deviation=74, provisional=False, games=41,
                wins=25, losses=14, draws=2))),
            p.Standing(rank=2, user=p.User(name="carol", kind="human", rating=p.PoolRating(
                game="xodd", rating=1580, deviation=98, provisional=False, games=17,
                wins=9, losses=8, draws=0))),
        ),
        next_cursor="2:1580.21:7",
    ),
    "profile": p.GetProfile(id=33, name="alice"),
    "profile_info": p.ProfileInfo(
        id=33,
        user=p.User(name="alice", kind="human", ratings=(p.PoolRating(
            game="xodd", rating=1612, deviation=74, provisional=False, games=41, wins=25,
            losses=14, draws=2),)),
        recent=(p.Summary(game_id=GAME_ID, game="xodd", options=XODD_9, clock=BLITZ,
                          players=(ALICE, BOB), status="over", ply=2,
                          result=p.Result(winner=0, reason="resign"),
                          created_ms=1_767_225_600_000, rated=True),),
        history=(
            p.RatingPoint(game="xodd", game_id="a8m2k4q9zt", at_ms=1_767_139_200_000,
                          rating=1604, deviation=76),
            p.RatingPoint(game="xodd", game_id=GAME_ID, at_ms=1_767_225_640_000,
                          rating=1612, deviation=74),
        ),
    ),
    "offer_rematch": p.OfferRematch(id=34, game_id=GAME_ID),
    "rematch_offered": p.RematchOffered(game_id=GAME_ID, by=1),
    "accept_rematch": p.AcceptRematch(id=35, game_id=GAME_ID),
    "decline_rematch": p.DeclineRematch(id=35, game_id=GAME_ID),
    "rematch_ended": p.RematchEnded(game_id=GAME_ID, reason="accepted",
                                    new_game_id="q7w3e9r2ty"),
    "rematch_ended_lapsed": p.RematchEnded(game_id=GAME_ID, reason="lapsed"),
    "decline_rematch_why": p.DeclineRematch(id=39, game_id=GAME_ID,
                                            message="busy: playing 2 of at most 2 games"),
    "rematch_ended_declined": p.RematchEnded(game_id=GAME_ID, reason="declined",
                                             message="busy: playing 2 of at most 2 games"),
    "ladder_join": p.LadderJoin(id=36, games=("hadron", "xodd")),
    "ladder_leave": p.LadderLeave(id=37),
    "ladder_standings": p.GetStandings(id=38, game="hadron"),
    # Who may challenge a player (issue 24)
    "set_challenge_policy": p.SetChallengePolicy(id=40, policy="registered"),
    "authed_challenge_policy": p.Authed(
        id=2, user=BOB, session_token="sess_Ym9iYm9ic2Vzc2lvbg", active_games=(),
        challenge_policy="registered"
    ),
    "error_challenge_forbidden": p.ErrorReply(
        id=41, code="forbidden",
        message="bob takes challenges from registered players only: log in to challenge them"
    ),
    "error_bad_hello": p.ErrorReply(
        id=1, code="bad_request", message="hello.version: expected int 0..65535, got float 1.0"
    ),
    "challenge_ended_expired": p.ChallengeEnded(
        challenge_id=7, reason="cancelled",
        message="expired: a challenge from a player with no game with bob waits 120 s for "
                "an answer"
    ),
    # Changing one's password, deleting one's account (issue 25)
    "change_password": p.ChangePassword(id=42, old_password="correct horse",
                                        new_password="battery staple"),
    "delete_account": p.DeleteAccount(id=43, password="battery staple"),
    "error_delete_account_playing": p.ErrorReply(
        id=43, code="conflict", game_id=GAME_ID,
        message=f"you are playing game {GAME_ID}: finish it (or resign) before deleting "
                "your account"
    ),
    # Errors without a request
    "error_bad_frame": p.ErrorReply(
        code="bad_request", message="not a msgpack value: truncated"
    ),
}
