"""The batch cost tool runs both write paths on real batches (no timing asserted)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from server.storage import sqlite_url
from tests.tools.batch_cost import measure


def test_batch_cost_writes_every_batch_both_ways(tmp_path: Path) -> None:
    result = measure(sqlite_url(tmp_path / "b.db"), moves=30, games=3, batches=8)
    assert result["core_ms"] > 0 and result["text_ms"] > 0
    with sqlite3.connect(tmp_path / "b.db") as raw:
        assert raw.execute("SELECT count(*) FROM moves").fetchone() == (8 * 30,)
        assert raw.execute("SELECT count(*) FROM games WHERE status = 'over'").fetchone() == (
            8 * 3,)
