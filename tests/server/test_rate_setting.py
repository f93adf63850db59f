"""``--rate`` and the connection rate: a value the welcome cannot announce is refused at
start, instead of making every ``welcome`` invalid (a rate of 0.01 rounded to 0)."""

from __future__ import annotations

import pytest

from server.cli import build_parser
from server.config import Settings


@pytest.mark.parametrize("rate", ["0.01", "0", "-1", "50001", "nan"])
def test_serve_refuses_a_rate_the_welcome_cannot_announce(
        rate: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["serve", "--rate", rate])
    assert exc.value.code == 2
    assert "--rate" in capsys.readouterr().err


@pytest.mark.parametrize("rate", ["1", "2.5", "20", "50000"])
def test_serve_takes_a_rate_the_welcome_can_announce(rate: str) -> None:
    assert build_parser().parse_args(["serve", "--rate", rate]).conn_rate == float(rate)


@pytest.mark.parametrize("field", ["conn_rate", "conn_burst"])
def test_settings_refuse_a_connection_rate_below_one(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        Settings(db_url="sqlite+aiosqlite:///unused.db", **{field: 0.01})
