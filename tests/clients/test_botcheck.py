"""``tessera botcheck``: the bundled random bot and the bridge with the example engine pass
every scenario, on botcheck's own server, for real; a bot that ignores reconnects fails the
restart, saying why; bad options are refused with status 2. One run per bot: about 20 s
for every scenario, 8 s for the restart alone, on a busy two-core machine."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import engine
from clients import events
from clients.botcheck.cli import Verdict, small_game, table
from clients.botcheck.scenarios import NAMES
from clients.botcheck.sides import Side
from clients.botcheck.subject import command_subject, sdk_subject

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_ENGINE = f"engine:{sys.executable} examples/random_engine.py"
NO_RECONNECT = f"{sys.executable} -m tests.clients.faulty_bots {{url}} {{token}}"


class Line(NamedTuple):
    result: str
    reason: str


def botcheck(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """``tessera botcheck ARGS`` to its end (the timeout guards against a hang only)."""
    return subprocess.run([sys.executable, "-m", "clients.cli", "botcheck", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


def lines(stdout: str) -> dict[str, Line]:
    """The table's rows by scenario: its cells are separated by two spaces or more."""
    out = {}
    for text in stdout.splitlines():
        cells = re.split(r"\s{2,}", text.strip(), maxsplit=3)
        if len(cells) == 4 and cells[1] in ("pass", "FAIL"):
            out[cells[0]] = Line(cells[1], cells[3])
    return out


def every_row() -> set[str]:
    return {f"game {small_game(g)}" for g in engine.GAMES.values()} | set(NAMES[1:])


def test_the_random_bot_passes_every_scenario() -> None:
    done = botcheck("random")
    assert done.returncode == 0, done.stdout + done.stderr
    table_rows = lines(done.stdout)
    assert set(table_rows) == every_row()
    assert {row.result for row in table_rows.values()} == {"pass"}
    assert "30d/move declined" in table_rows["decline"].reason
    assert "not played" in table_rows["decline"].reason  # the bot's own words
    assert table_rows["rematch"].reason.startswith("accepted")
    assert "unread when the server was killed" in table_rows["cut"].reason
    assert re.search(r"waited 2 s in the stalled server's socket and was answered \d+\.\d s late",
                     table_rows["slow"].reason)
    assert re.search(r"\d+ ms left at the least", table_rows["pressure"].reason)
    assert f"{len(table_rows)} scenarios: {len(table_rows)} passed, 0 failed" in done.stdout


def test_the_bridge_with_the_example_engine_passes_every_scenario_playing_its_seek() -> None:
    """The games the bot claims are those it seeks, as the lobby shows them: botcheck takes
    the seek; the other scenarios play its game on botcheck's clock."""
    done = botcheck(EXAMPLE_ENGINE, "--bot-args", "--seek 'hadron size=5 3s/move'")
    assert done.returncode == 0, done.stdout + done.stderr
    table_rows = lines(done.stdout)
    assert set(table_rows) == {"game hadron size=5 (its seek, 3s/move)", *NAMES[1:]}
    assert {row.result for row in table_rows.values()} == {"pass"}, done.stdout
    assert "hadron size=5 30d/move declined" in table_rows["decline"].reason


def test_a_bot_that_ignores_reconnects_fails_the_restart_saying_why() -> None:
    done = botcheck("--command", NO_RECONNECT, "--only", "restart", "--game", "xodd size=4")
    assert done.returncode == 1, done.stdout + done.stderr
    assert set(lines(done.stdout)) == {"restart"}
    row = lines(done.stdout)["restart"]
    assert row.result == "FAIL"
    assert row.reason == ("the bot's process exited with status 0 while botcheck waited for "
                          "the bot to come back after the server restarted (SIGTERM, then "
                          "started again)")
    assert "1 scenarios: 0 passed, 1 failed" in done.stdout


def test_bad_options_are_refused_with_status_2() -> None:
    for args in ([], ["random", "--command", "prog {url}"], ["random", "--only", "nap"],
                 ["nosuchbot"], ["random", "--clock", "fast"]):
        done = botcheck(*args, timeout=60)
        assert done.returncode == 2, (args, done.stderr)
        assert "tessera botcheck: error:" in done.stderr


def test_how_each_kind_of_bot_is_run() -> None:
    sdk = sdk_subject("random", ["--move-time", "0.1"]).command("ws://h:1/ws", "T")
    assert sdk[1:] == ["-m", "clients.cli", "bot", "--bot", "random", "--server", "ws://h:1/ws",
                       "--accept-from", "any", "--rematch", "--move-time", "0.1"]
    bridge = sdk_subject("engine:./eng --depth 2").command("ws://h:1/ws", "T")
    assert bridge[3:] == ["bridge", "--server", "ws://h:1/ws", "--accept-from", "any",
                          "--rematch", "--", "./eng", "--depth", "2"]
    program = command_subject("./mybot --url {url} --token={token}")
    assert program.command("ws://h:1/ws", "T") == ["./mybot", "--url", "ws://h:1/ws",
                                                   "--token=T"]
    assert (program.account(), sdk_subject("engine:./eng").account()) == ("bot-mybot",
                                                                         "bot-engine-eng")


def test_the_table_and_the_sides_event_handlers() -> None:
    shown = table([Verdict("game hadron size=5", True, 1.25, "won"),
                   Verdict("cut", False, 30.0, "the bot never came back")])
    assert shown.splitlines() == [
        "scenario            result  seconds  reason",
        "game hadron size=5  pass    1.2      won",
        "cut                 FAIL    30.0     the bot never came back"]
    assert events.missing_handlers((Side,)) == []
