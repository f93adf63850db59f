"""The crash test in its short form: a real server process SIGKILLed mid-game."""

from __future__ import annotations

import json
import subprocess
import sys


def test_chaos_short_run_loses_nothing() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "clients.chaos", "--games", "4", "--kills", "2", "--json"],
        capture_output=True, text=True, timeout=240)
    assert run.stdout.strip(), run.stderr[-2000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["kills"] == 2
    assert result["finished"] == result["games"] == 4
    assert result["interrupted"] >= 1  # a game was in progress at a kill and resumed
    assert result["acknowledged"] > 0
    assert result["lost"] == 0
    assert result["duplicated"] == 0
    assert result["replay_mismatches"] == 0
    assert result["rated"] == 2  # every other game, each rated once: verified equal
    assert result["rating_differences"] == 0
    assert result["integrity"] == "ok"
    assert run.returncode == 0
