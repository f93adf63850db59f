"""The terminal client's parts without a server: its view of a game (clocks, board, hints,
endings), the move forms it learns from the engine, its help, and the event table that it
shares with the bot SDK."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

import engine
import protocol as p
from clients import events, notation, render
from clients.live import GameView
from clients.play.client import PlayClient
from clients.play.cmd_game import rules_lines
from clients.play.commands import help_lines
from clients.play.games import Games
from clients.play.lobby import Lobby
from clients.sdk.challenges import ChallengeDesk
from clients.sdk.game import GameSession
from clients.sdk.runner import EventRouter
from clients.sdk.seeks import SeekKeeper

ANN, BEN = p.User(name="ann", kind="human"), p.User(name="ben", kind="bot")


def view_at(now: list[float], moves: tuple[str, ...] = ()) -> GameView:
    played = tuple(p.PlayedMove(ply=i, move=m, by=i % 2, ms_used=1000, clock_ms=60_000)
                   for i, m in enumerate(moves))
    snap = p.Snapshot(game_id="g", game="hadron", options={"size": 3},
                      clock=p.Fischer(base_ms=60_000, increment_ms=0), players=(ANN, BEN),
                      status="playing", moves=played, clocks_ms=(60_000, 60_000),
                      to_move=len(moves) % 2, ply=len(moves), seq=1 + len(moves))  # type: ignore[arg-type]
    return GameView.from_snapshot(snap, "ben", now=lambda: now[0])


# -- clocks ------------------------------------------------------------------------------------
def test_the_end_of_a_game_keeps_the_clocks_as_they_stood() -> None:
    now = [100.0]
    view = view_at(now, ("b2", "a1"))
    now[0] += 58.0  # Red (to move) thinks; then the game ends (a claim, a resignation)
    assert view.clocks_now() == (2_000, 60_000)
    view.apply_over(p.GameOver(game_id="g", seq=4, winner=1, reason="abandon"))
    now[0] += 10.0
    assert view.clocks_now() == (2_000, 60_000)  # not set back to 60 s, not running on
    assert "Red ann 2.0" in view.status_line()


def test_clocks_stop_while_the_connection_is_down() -> None:
    now = [100.0]
    view = view_at(now, ("b2", "a1"))
    now[0] += 5.0
    view.freeze()  # the connection dropped
    now[0] += 30.0  # however long the outage, nothing counts until the server says
    assert view.clocks_now() == (55_000, 60_000)


# -- the board ---------------------------------------------------------------------------------
def test_hex_rows_name_their_first_and_last_cell() -> None:
    state = engine.new_game("yodd", size=3)
    lines = render.board_text(state).splitlines()
    rows = [line.split() for line in lines[1:-1]]
    assert [(r[0], r[-1]) for r in rows] == [("c5", "e5"), ("b4", "e4"), ("a3", "e3"),
                                             ("a2", "d2"), ("a1", "c1")]
    square = render.board_text(engine.new_game("hadron", size=3)).splitlines()
    assert square[1] == "3  . . .  3" and square[0] == square[-1] == "   a b c"


def test_adjacent_marks_share_their_brackets() -> None:
    state = engine.new_game("xodd", size=5).play("Bc3").play("Bd3,Be3")
    row = next(line for line in render.board_text(state, mark=["d3", "e3"]).splitlines()
               if line.startswith("3"))
    assert row == "3  . . B[B B] 3"
    apart = render.board_text(state, mark=["c3", "e3"]).splitlines()[3]
    assert apart == "3  . .[B]B[B] 3"


# -- hints and endings -------------------------------------------------------------------------
def seeded(game: str, plies: int, **options: Any) -> engine.State:
    rng = random.Random(7)
    state = engine.new_game(game, **options)
    for _ in range(plies):
        state = state.play(state.random_move(rng))
    return state


@pytest.mark.parametrize("game", ["xodd", "yodd", "hexifact"])
def test_legal_placements_are_listed_where_the_summary_has_none(game: str) -> None:
    state = seeded(game, 4)
    (line,) = render.legal_lines(state, state.summary())
    singles = sorted(str(m) for m in state.legal_moves()
                     if len(notation.CELL.findall(str(m).lower())) == 1)
    listed = re.search(r"(\d+) one-cell moves? \(([^)]*)\)", line)
    assert listed is not None, line
    assert int(listed[1]) == len(singles)
    assert listed[2].split()[:40] == [str(m) for m in state.legal_moves()
                                      if str(m) in singles][:40]


def test_no_hint_line_repeats_what_the_summary_lists() -> None:
    state = seeded("hadron", 2)
    assert render.legal_lines(state, state.summary()) == []  # "legal squares" says it all


def test_why_a_game_ended() -> None:
    xodd = engine.replay("xodd", {"size": 2}, ["Ba1", "pass", "pass"])
    assert xodd.is_over
    said = "both passed: Black 1 group, White 0; fewer groups wins"
    assert render.ending_text(xodd) == said  # the engine's words, no rule copied here
    players = [("alice", "human"), ("bob", "human")]
    normal = p.Result(winner=1, reason="normal")
    assert render.result_text("xodd", players, normal, xodd) == f"White (bob) wins: {said}."
    told = p.Result.of(xodd.ending)  # type: ignore[arg-type]  # as the server sends it
    assert render.result_text("xodd", players, told) == f"White (bob) wins: {said}."
    assert render.result_text("xodd", players, p.Result(winner=0, reason="timeout")) == \
        "Black (alice) wins: White ran out of time."
    hadron = seeded("hadron", 0, size=3)
    while not hadron.is_over:
        hadron = hadron.play(hadron.legal_moves()[0])
    colour = hadron.game.players[hadron.to_move]
    assert render.ending_text(hadron) == f"{colour} has no legal placement"


def test_rules_come_from_the_registry() -> None:
    for key, game in engine.GAMES.items():
        text = "\n".join(rules_lines(key))
        assert game.name in text and game.summary_text.split()[0] in text
        assert all(o.name in text for o in game.options)
    assert "Hadron has no pass" in "\n".join(rules_lines("hadron"))


# -- the command language ----------------------------------------------------------------------
def test_move_forms_come_from_the_engine() -> None:
    assert notation.examples("hadron") == ("a1",)
    assert not notation.has_pass("hadron") and notation.has_pass("xodd")
    forms = {notation.form(m) for m in notation.examples("hexifact")}
    assert forms == {"@", "@-@", "pass"}
    assert {notation.form(m) for m in notation.examples("xodd")} == {"@", "@,@", "pass"}
    assert not notation.looks_like_move("hello") and notation.looks_like_move("z9")


def test_help_wraps_between_words() -> None:
    lines = help_lines()
    assert all(len(line) <= 100 for line in lines)
    words = set(" ".join(lines).split())
    assert "unlimited)" in words and "color=black" in words  # not cut in two
    assert lines == [line for line in lines if line.startswith("  ")]


# -- the event table ---------------------------------------------------------------------------
def test_every_event_has_a_handler_in_the_client_and_the_sdk() -> None:
    assert events.missing_handlers((Games, Lobby, PlayClient)) == []
    assert events.missing_handlers((EventRouter, ChallengeDesk, SeekKeeper)) == []
    assert events.missing_handlers((GameSession,),
                                   (*events.GAME_EVENT_TYPES, p.GameState)) == []


def test_an_event_nobody_handles_is_an_error() -> None:
    class Sink:
        def on_moved(self, event: p.Moved) -> str:
            return "moved"

    moved = p.Moved(game_id="g", seq=2, ply=0, move="b2", by=0, ms_used=5)
    assert events.dispatch(moved, Sink()) == "moved"
    with pytest.raises(events.UnhandledEvent, match="no on_opponent_back"):
        events.dispatch(p.OpponentBack(game_id="g", seq=3, player=1), Sink())
    with pytest.raises(events.UnhandledEvent, match="unexpected message 'pong'"):
        events.dispatch(p.Pong(id=1), Sink())



# -- issue 23: moves, the only move, game ids, replay info ------------------------------------
_ONLY_PASS_XODD = ["Bc3", "Bb4,Bd4", "Bd5", "Ba2,Bd3", "Be2,Wc4", "Bd2,Wb5", "Be1,Bc2",
                   "Wd1,Wc5", "Wc1,Be5", "Ba4,Ba5", "Wa1,Bb2", "Bb3,We3", "Ba3,Be4", "pass",
                   "Bb1"]


def test_the_legal_line_says_pass_when_it_is_the_only_move() -> None:
    state = engine.replay("xodd", {"size": 5}, _ONLY_PASS_XODD)
    assert [str(m) for m in state.legal_moves()] == ["pass"]
    assert render.legal_lines(state, state.summary()) == ["legal: pass (the only move)"]
    assert render.moves_lines(state) == ["1 legal move for White:", "  pass (the only move)"]


def test_moves_are_grouped_counted_and_wrapped_between_moves() -> None:
    state = engine.new_game("xodd", size=9).play("Bc3")  # 2-cell moves from here: thousands
    legal = [str(m) for m in state.legal_moves()]
    lines = render.moves_lines(state, width=60, per_group=50)
    assert lines[0] == f"{len(legal):,} legal moves for White:"
    assert "  pass" in lines
    headers = [line for line in lines if line.startswith("  ") and line.endswith(":")]
    assert sum(int(h.split()[0].replace(",", "")) for h in headers) + 1 == len(legal)
    listed = [word for line in lines if line.startswith("    ") and "more" not in line
              for word in line.split()]
    assert set(listed) <= set(legal)  # whole moves: no line breaks inside one
    assert all(len(line) <= 60 for line in lines)
    assert any(line.startswith("    ... and ") and line.endswith(" more") for line in lines)


def test_replay_info_says_rated_or_casual_with_times_at_one_precision() -> None:
    from dataclasses import replace

    from clients.records import RecordMove, record_from_state
    from clients.replay import Replayer

    state = engine.replay("hadron", {"size": 3}, ["a1", "c3"])
    record = record_from_state(state, players=("ann", "bo"), date="2026-12-01T00:00:00Z",
                               time_control={"kind": "fischer", "base_ms": 300000,
                                             "increment_ms": 0})
    record = replace(record, moves=(RecordMove(0, "a1", 1000, 299000),
                                    RecordMove(1, "c3", 1500, 298500)))
    casual = Replayer(record).info().splitlines()
    assert "rated: no (casual)" in casual
    assert casual[-2:] == ["    1. a1 [0:04:59.0]", "    2. c3 [0:04:58.5]"]
    change = p.RatingUpdate(rating_before=1500.0, deviation_before=350.0,
                            volatility_before=0.06, rating_after=1662.21,
                            deviation_after=290.23, volatility_after=0.05999968)
    rated = replace(record, rated=True, termination="resign", winner=0,
                    rating_changes=(change, replace(change, rating_after=1337.79)))
    assert ("rated: yes; Red (ann) 1500? -> 1662? (+162), Blue (bo) 1500? -> 1338? (-162)"
            in Replayer(rated).info().splitlines())
