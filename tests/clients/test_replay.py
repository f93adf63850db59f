"""``tessera replay`` driven in a pseudo-terminal: next, previous, first, last, goto, autoplay."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pexpect

import engine
from clients import records
from clients.replay import Replayer
from tests.clients.conftest import LiveServer, spawn_tessera, tessera_command

Games = dict[str, tuple[str, engine.State]]


def spawn(*args: str) -> pexpect.spawn:
    return spawn_tessera("replay", *args, "--no-color")


def test_step_through_a_stored_game(live_server: LiveServer, finished_games: Games) -> None:
    game_id, state = finished_games["hadron"]
    moves, n = state.moves, len(state.moves)
    child = spawn(game_id, "--server", live_server.url)
    child.expect(rf"Replay {game_id} \| Hadron size=3 \| 1m\+1s")
    child.expect(rf"position 0/{n}")
    child.expect(r"3  \. \. \.  3")  # the empty board, coordinates on both sides
    child.sendline("n")
    child.expect(rf"position 1/{n}")
    child.expect(rf"last move: 1\. {moves[0]} \(Red\)")
    child.sendline("n")
    child.expect(rf"last move: 2\. {moves[1]} \(Blue\)")
    child.sendline("p")
    child.expect(rf"position 1/{n}")
    child.sendline("l")
    child.expect(rf"position {n}/{n}")
    child.expect(r"End of the game: (Red|Blue) \(guest-\w+\) wins: (Red|Blue) has no legal "
                 r"placement\.")
    child.sendline("n")
    child.expect("already at the end")
    child.sendline("f")
    child.expect(rf"position 0/{n}")
    child.sendline("g 3")
    child.expect(rf"position 3/{n}")
    child.expect(rf"last move: 3\. {moves[2]}")
    child.sendline("goto 99")  # clamped to the end
    child.expect(rf"position {n}/{n}")
    child.sendline("f")
    child.expect(rf"position 0/{n}")
    child.sendline("a 0.05")  # autoplay to the end
    for ply in range(1, n + 1):
        child.expect(rf"position {ply}/{n}")
    child.expect(rf"autoplay reached the end: position {n}/{n}\)")
    child.expect(rf"replay {n}/{n}>")  # the prompt too shows where autoplay stopped
    child.sendline("zap")
    child.expect("unknown replay command 'zap'")
    child.sendline("q")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_replay_from_the_database_and_a_file(live_server: LiveServer, finished_games: Games,
                                             tmp_path: Path) -> None:
    game_id, state = finished_games["xodd"]
    done = subprocess.run([*tessera_command(), "replay", game_id, "--db", live_server.db_url,
                           "--ply", "2", "--no-color"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert f"Replay {game_id} | Xodd size=4 | unlimited" in done.stdout
    assert "position 2/3" in done.stdout
    after_two = engine.replay("xodd", {"size": 4}, state.moves[:2])
    assert after_two.render(mark=[state.moves[1][1:]]) in done.stdout

    child = spawn(game_id, "--db", live_server.db_url)
    child.expect("position 0/3")
    child.sendline("l")
    child.expect(r"resigned\.")
    child.sendline("q")
    child.expect(pexpect.EOF)

    record_file = tmp_path / "xodd.txt"
    record_file.write_text(records.format_record(records.record_from_state(
        state, players=("ann", "ben"), date="2026-01-01T00:00:00Z")))
    done = subprocess.run([*tessera_command(), "replay", "--file", str(record_file), "--ply",
                           "3", "--no-color"], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert "ann vs ben" in done.stdout and "position 3/3" in done.stdout
    assert "the game was still going on" in done.stdout


def test_replayer_marks_moves_and_stops_at_an_illegal_one() -> None:
    record = records.MatchRecord(game="hadron", options={"size": 3}, players=("a", "b"),
                                 date="2026-01-01T00:00:00Z",
                                 moves=(records.RecordMove(0, "b2"), records.RecordMove(1, "b2")))
    replayer = Replayer(record)
    assert replayer.last == 1 and replayer.problem and "move 2 (b2) is illegal" in replayer.problem
    view = replayer.go(1)
    assert "[R]" in view and "Cannot replay further" in view
    assert replayer.command("p").text.startswith("Replay")
    assert replayer.command("a 0.5").autoplay == 0.5
    assert replayer.command("q").done


def test_replay_panel_colours_when_asked(finished_games: Games) -> None:
    _, state = finished_games["hadron"]
    record = records.record_from_state(state, players=("a", "b"), date="2026-01-01T00:00:00Z")
    plain, coloured = Replayer(record).go(1), Replayer(record, color=True).go(1)
    assert "\x1b[" not in plain and "\x1b[1;31mR" in coloured  # Red's tile in red
