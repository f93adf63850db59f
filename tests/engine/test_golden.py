"""The golden playthroughs in tests/engine/golden/ match what the engine produces today."""

from __future__ import annotations

import difflib

import pytest

from .make_golden import GOLDEN_GAMES, golden_path, transcript

MAX_DIFF_LINES = 60


@pytest.mark.parametrize("key", sorted(GOLDEN_GAMES))
def test_golden_playthrough(key: str) -> None:
    path = golden_path(key)
    assert path.exists(), f"{path} is missing: run `make golden` and commit it"
    expected = path.read_text(encoding="utf-8")
    actual = transcript(key)
    if actual != expected:
        diff = list(
            difflib.unified_diff(
                expected.splitlines(),
                actual.splitlines(),
                fromfile=str(path),
                tofile="engine now",
                lineterm="",
            )
        )
        shown = "\n".join(diff[:MAX_DIFF_LINES])
        more = (
            f"\n... {len(diff) - MAX_DIFF_LINES} more diff lines"
            if len(diff) > MAX_DIFF_LINES
            else ""
        )
        pytest.fail(
            f"{key} playthrough differs from {path}.\n{shown}{more}\n"
            "If the change is intended, run `make golden` and review the diff of the files.",
            pytrace=False,
        )
