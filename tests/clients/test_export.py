"""``tessera export`` and ``tessera verify`` against a real server and its database file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import engine
import protocol as p
from clients import records
from clients.connection import DEFAULT_URL
from tests.clients.conftest import LiveServer, tessera_command

Games = dict[str, tuple[str, engine.State]]


def tessera(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*tessera_command(), *args], capture_output=True, text=True,
                          timeout=60, check=False)


def test_export_text_and_json_round_trip(live_server: LiveServer, finished_games: Games,
                                         tmp_path: Path) -> None:
    game_id, state = finished_games["hadron"]
    text = tessera("export", game_id, "--server", live_server.url)
    assert text.returncode == 0, text.stderr
    record = records.parse_record(text.stdout)
    assert record.game_id == game_id and record.game == "hadron"
    assert [m.move for m in record.moves] == list(state.moves)
    assert (record.winner, record.termination) == (state.winner, "normal")
    assert record.time_control == p.Fischer(base_ms=60_000, increment_ms=1_000)
    assert all(m.clock_ms is not None and m.ms_used is not None for m in record.moves)
    assert records.format_record(record) == text.stdout
    ending = state.ending  # why and by how much, in the engine's words
    assert ending is not None and record.ending == ending.text
    assert f'[Ending "{ending.text}"]' in text.stdout

    out = tmp_path / "game.json"
    done = tessera("export", game_id, "--format", "json", "--db", live_server.db_url,
                   "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert records.from_json(out.read_text()) == record  # the database says the same


def test_export_unknown_game_fails_clearly(live_server: LiveServer) -> None:
    done = tessera("export", "nosuchgame", "--server", live_server.url)
    assert done.returncode == 2
    assert "nosuchgame" in done.stderr


def test_verify_files_ok_and_a_tampered_result(live_server: LiveServer, finished_games: Games,
                                               tmp_path: Path) -> None:
    game_id, _ = finished_games["hadron"]
    text_file, json_file = tmp_path / "good.txt", tmp_path / "good.json"
    assert tessera("export", game_id, "--server", live_server.url, "-o",
                   str(text_file)).returncode == 0
    assert tessera("export", game_id, "--format", "json", "--server", live_server.url, "-o",
                   str(json_file)).returncode == 0
    data: dict[str, Any] = json.loads(json_file.read_text())
    data["winner"] = 1 - data["winner"]  # the loser claims the win
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(data))

    good = tessera("verify", str(text_file), str(json_file))
    assert good.returncode == 0, good.stdout
    assert good.stdout.count("OK ") == 2

    bad = tessera("verify", str(text_file), str(tampered))
    assert bad.returncode == 1
    assert f"MISMATCH  {tampered}" in bad.stdout
    assert "the rules give the win to" in bad.stdout
    assert "1 ok, 1 with problems" in bad.stdout


def test_verify_names_moves_as_the_file_numbers_them(tmp_path: Path) -> None:
    record = records.MatchRecord(game="hadron", options={"size": 3}, players=("a", "b"),
                                 date="2026-01-01T00:00:00Z",
                                 moves=["b2", "a1", "c3", "a3", "b2"])  # type: ignore[arg-type]
    text_file = tmp_path / "bad.txt"
    text_file.write_text(records.format_record(record))
    assert "\n5. b2" in text_file.read_text()
    done = tessera("verify", str(text_file))
    assert done.returncode == 1
    assert "move 5 (ply 4): b2 is illegal" in done.stdout, done.stdout


def test_verify_all_uses_the_default_server() -> None:
    done = tessera("verify", "--all")
    assert "needs" not in done.stderr and "usage" not in done.stderr, done.stderr
    # whether a server listens on the default address or not, verify went there
    assert DEFAULT_URL in done.stderr or "verified" in done.stdout, (done.stdout, done.stderr)


def closed_pipe_run(*args: str) -> subprocess.CompletedProcess[bytes]:
    """Run ``tessera ARGS`` with its standard output a pipe nobody reads any more: as
    ``tessera ARGS | head -1`` once head has its line and exits."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run([*tessera_command(), *args], stdout=write_end,
                              stderr=subprocess.PIPE, timeout=60, check=False)
    finally:
        os.close(write_end)


def test_printing_commands_stop_quietly_in_a_closed_pipe(live_server: LiveServer,
                                                          finished_games: Games) -> None:
    for args in (["verify", "--all", "--db", live_server.db_url],
                 ["dump", "--all", "--db", live_server.db_url],
                 ["export", finished_games["hadron"][0], "--server", live_server.url],
                 ["--help"], ["--version"]):
        done = closed_pipe_run(*args)
        assert b"Traceback" not in done.stderr and b"BrokenPipe" not in done.stderr, (
            args, done.stderr.decode())
        assert done.returncode != 0, args  # cut short, as a program ended by SIGPIPE


def test_verify_all_stored_games(live_server: LiveServer, finished_games: Games) -> None:
    ids = {game_id for game_id, _ in finished_games.values()}
    for source in (["--db", live_server.db_url], ["--server", live_server.url]):
        done = tessera("verify", "--all", *source)
        assert done.returncode == 0, done.stdout + done.stderr
        for game_id in ids:
            assert f"OK        {game_id} (" in done.stdout
        assert "0 with problems" in done.stdout


def test_verify_reads_dump_output(live_server: LiveServer, finished_games: Games,
                                  tmp_path: Path) -> None:
    """JSON lines of wire records (what ``python -m server dump`` prints) verify too."""
    game_id, _ = finished_games["xodd"]
    dump = subprocess.run([sys.executable, "-m", "server", "dump", game_id, "--db",
                           live_server.db_url], capture_output=True, text=True, check=True,
                          timeout=60)
    lines = tmp_path / "dump.jsonl"
    lines.write_text(dump.stdout)
    done = tessera("verify", str(lines))
    assert done.returncode == 0, done.stdout
    assert "1-0 resign" in done.stdout or "0-1 resign" in done.stdout


def test_wire_record_converts_to_a_match_record() -> None:
    wire = {"game_id": "g1", "game": "hadron", "options": {"size": 3},
            "clock": {"kind": "per_move", "per_move_ms": 30000},
            "players": [{"name": "alice", "kind": "human"}, {"name": "bot1", "kind": "bot"}],
            "status": "over",
            "moves": [{"ply": 0, "move": "b2", "by": 0, "ms_used": 1200, "clock_ms": 30000}],
            "result": {"winner": 0, "reason": "timeout"}, "created_ms": 1767225600000,
            "ended_ms": 1767225640000}
    record = records.match_record_from_wire(p.load_value(p.Record, wire))
    assert record.players == ("alice", "bot1") and record.player_kinds == ("human", "bot")
    assert record.date == "2026-01-01T00:00:00Z"
    assert record.time_control == p.PerMove(per_move_ms=30000)
    assert (record.winner, record.termination) == (0, "timeout")
    assert record.moves == (records.RecordMove(0, "b2", 1200, 30000),)
    assert records.verify(record).ok

    live = dict(wire, status="playing")
    del live["result"], live["ended_ms"]
    assert records.match_record_from_wire(live).termination == "unterminated"
    assert records.match_record_from_wire(wire) == record


def test_verify_reports_an_unusable_source(tmp_path: Path) -> None:
    done = tessera("verify", "--all", "--db", f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}")
    assert done.returncode == 2
    assert "no such table" in done.stderr
    done = tessera("verify", str(tmp_path / "missing.txt"))
    assert done.returncode == 1 and "ERROR" in done.stdout and "cannot read" in done.stdout


def test_verify_all_counts_an_aborted_game_with_no_moves_as_ok(
        live_server_factory: Any, scripted_player: Any) -> None:
    """An aborted game has no winner and maybe no moves: a healthy record, not an error
    (issue 16: "malformed wire record: KeyError 'winner'", exit 1 on a healthy database)."""
    server = live_server_factory()
    a, b = scripted_player(server.url), scripted_player(server.url)
    a.guest()
    b.guest()
    seek = a.call(p.Seek, game="hadron", options={"size": 3}, clock=p.Unlimited())
    assert isinstance(seek, p.SeekCreated)
    b.call(p.AcceptSeek, seek_id=seek.seek_id)
    started = a.wait_for(p.GameStarted)
    a.call(p.Abort, game_id=started.game_id)
    over = a.wait_for(p.GameOver, game_id=started.game_id)
    assert over.reason == "abort" and over.winner is None
    for source in (["--db", server.db_url], ["--server", server.url]):
        done = tessera("verify", "--all", *source)
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"OK        {started.game_id} (" in done.stdout, done.stdout
        assert "1 ok, 0 with problems" in done.stdout, done.stdout
    dumped = subprocess.run([sys.executable, "-m", "server", "dump", "--all", "--db",
                             server.db_url], capture_output=True, text=True, timeout=60,
                            check=True)
    lines = json.loads(dumped.stdout.splitlines()[0])
    assert records.match_record_from_wire(lines).termination == "abort"


def test_dump_says_how_the_rules_ended_a_game(live_server: LiveServer,
                                              finished_games: Games) -> None:
    game_id, state = finished_games["hadron"]
    dump = subprocess.run([sys.executable, "-m", "server", "dump", game_id, "--db",
                           live_server.db_url], capture_output=True, text=True, check=True,
                          timeout=60)
    result = json.loads(dump.stdout)["result"]
    assert state.ending is not None
    assert result == {"winner": state.winner, "reason": "normal", "ending": {
        "how": "no_move", "text": state.ending.text}}
    resigned, _ = finished_games["xodd"]  # a resignation has no ending: its reason says it
    dump = subprocess.run([sys.executable, "-m", "server", "dump", resigned, "--db",
                           live_server.db_url], capture_output=True, text=True, check=True,
                          timeout=60)
    assert "ending" not in json.loads(dump.stdout)["result"]
