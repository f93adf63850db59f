"""The relay ceiling plays the bench's games to their ends (no timing asserted)."""

from __future__ import annotations

import json
import subprocess
import sys


def test_relay_plays_the_bench_games_one_after_another() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "tests.tools.relay_ceiling", "--games", "4", "--seconds", "2"],
        capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["errors"] == 0
    assert result["games"] > 4  # a pair challenges again after each game_over
    assert result["moves"] > result["games"]
    assert result["relay_moves_per_s"] > 0 and result["echo_roundtrips_per_s"] > 0
