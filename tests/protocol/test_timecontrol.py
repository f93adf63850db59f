"""Time controls: the notation round-trips, old notations say what to write, arithmetic."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import protocol as p
from protocol.limits import MAX_CLOCK_MS, MAX_DAYS_PER_MOVE, MAX_INCREMENT_MS, MIN_CLOCK_MS

time_controls = st.one_of(
    st.builds(p.Fischer, base_ms=st.integers(MIN_CLOCK_MS, MAX_CLOCK_MS),
              increment_ms=st.integers(0, MAX_INCREMENT_MS)),
    st.builds(p.PerMove, per_move_ms=st.integers(MIN_CLOCK_MS, MAX_CLOCK_MS)),
    st.builds(p.Correspondence, days_per_move=st.integers(1, MAX_DAYS_PER_MOVE)),
    st.just(p.Unlimited()),
)


@given(time_controls)
def test_the_notation_round_trips(control: p.TimeControl) -> None:
    text = p.format_time_control(control)
    assert p.parse_time_control(text) == control
    assert p.parse_time_control(text.upper()) == control


@given(st.integers(0, 10**9))
def test_durations_round_trip(ms: int) -> None:
    assert p.parse_duration_ms(p.format_duration_ms(ms)) == ms


@given(time_controls)
def test_the_stored_form_round_trips(control: p.TimeControl) -> None:
    assert p.time_control_from_map(control.to_wire()) == control


@pytest.mark.parametrize(("text", "expected"), [
    ("5m+3s", p.Fischer(base_ms=300_000, increment_ms=3_000)),
    ("1h30m+10s", p.Fischer(base_ms=5_400_000, increment_ms=10_000)),
    ("90s+0s", p.Fischer(base_ms=90_000, increment_ms=0)),
    ("2.5s+250ms", p.Fischer(base_ms=2_500, increment_ms=250)),
    (" 30s/move ", p.PerMove(per_move_ms=30_000)),
    ("3d/move", p.Correspondence(days_per_move=3)),
    ("Unlimited", p.Unlimited()),
])
def test_the_notation_reads(text: str, expected: p.TimeControl) -> None:
    assert p.parse_time_control(text) == expected


@pytest.mark.parametrize(("old", "shown"), [
    ("5+3", "write 5m+3s"),
    ("300+2", "5m+2s (seconds+seconds)"),
    ("fischer 5m+3s", "write 5m+3s"),
    ("fischer 90s 2s", "write 90s+2s"),
    ("per_move 2s", "write 2s/move"),
    ("correspondence 3", "write 3d/move"),
    ("correspondence 3d", "write 3d/move"),
    ("3d", "write 3d/move"),
    ("-", "write unlimited"),
    ("5m", "write 5m+0s (Fischer) or 5m/move"),
])
def test_old_notations_show_the_new_one(old: str, shown: str) -> None:
    with pytest.raises(p.TimeControlSyntaxError, match="written differently now") as info:
        p.parse_time_control(old)
    assert shown in str(info.value)


@pytest.mark.parametrize(("text", "why"), [
    ("0.5s+0s", "out of range"),
    ("30/move", "needs a unit"),
    ("soon", "not a time control"),
    ("5m+", "not a duration"),
])
def test_bad_time_controls_say_why(text: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        p.parse_time_control(text)


def test_each_kind_does_its_own_arithmetic() -> None:
    fischer = p.Fischer(base_ms=60_000, increment_ms=2_000)
    assert fischer.initial_ms() == 60_000
    assert fischer.after_move(50_000, 4_000) == 48_000
    per_move = p.PerMove(per_move_ms=10_000)
    assert per_move.initial_ms() == per_move.after_move(3_000, 7_000) == 10_000
    days = p.Correspondence(days_per_move=2)
    assert days.initial_ms() == days.after_move(1, 1) == 2 * p.timecontrol.DAY_MS
    assert p.Unlimited().initial_ms() is None and p.Unlimited().after_move(0, 5) is None
    assert fischer.CARRIES_OVER and not per_move.CARRIES_OVER


def test_a_bad_stored_form_is_refused_with_its_field() -> None:
    with pytest.raises(p.InvalidMessage, match=r"clock\.base_ms"):
        p.time_control_from_map({"kind": "fischer", "base_ms": 5, "increment_ms": 0})


@pytest.mark.parametrize(("text", "allowed"), [
    ("0s/move", "a move has 1s to 24h (1s/move to 24h/move)"),
    ("31d/move", "a correspondence move has 1d to 30d (1d/move to 30d/move)"),
    ("0.5s+0s", "the base time is 1s to 24h and the increment 0s to 1h (1s+0s to 24h+1h)"),
    ("5m+2h", "the base time is 1s to 24h and the increment 0s to 1h (1s+0s to 24h+1h)"),
])
def test_a_time_control_out_of_range_gives_the_range_in_the_notation(
        text: str, allowed: str) -> None:
    with pytest.raises(p.TimeControlSyntaxError) as info:
        p.parse_time_control(text)
    assert str(info.value) == f"time control {text!r} is out of range: {allowed}"
