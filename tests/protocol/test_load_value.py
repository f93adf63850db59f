"""``load_value``: protocol values from plain data, checked as the decoder checks frames."""

from __future__ import annotations

import json

import pytest

import protocol as p

RECORD = p.Record(
    game_id="k3v9q2x7ma", game="hadron", options={"size": 3},
    clock=p.Fischer(base_ms=60_000, increment_ms=1_000),
    players=(p.User(name="ann", kind="human"), p.User(name="ben", kind="bot")),
    status="over", created_ms=1_700_000_000_000,
    moves=(p.PlayedMove(ply=0, move="b2", by=0, ms_used=1200, clock_ms=59_800),),
    result=p.Result(winner=0, reason="resign"))


def test_a_value_round_trips_through_json() -> None:
    data = json.loads(json.dumps(RECORD.to_wire()))  # lists, not tuples: as a file gives it
    assert p.load_value(p.Record, data) == RECORD


def test_a_union_loads_by_its_tag() -> None:
    assert p.load_value(p.TimeControl, {"kind": "per_move", "per_move_ms": 5000}) == (  # type: ignore[arg-type]
        p.PerMove(per_move_ms=5000))


@pytest.mark.parametrize(("change", "where"), [
    ({"created_ms": "yesterday"}, "record.created_ms"),
    ({"status": "lost"}, "record.status"),
    ({"moves": [{"ply": 0, "move": "b2", "by": 0, "ms_used": -1}]}, "record.moves[0].ms_used"),
])
def test_bad_data_names_the_field(change: dict[str, object], where: str) -> None:
    data = {**RECORD.to_wire(), **change}
    with pytest.raises(p.InvalidMessage) as caught:
        p.load_value(p.Record, data, "record")
    assert str(caught.value).startswith(where + ":"), caught.value
