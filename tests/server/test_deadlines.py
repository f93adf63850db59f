"""The connections' deadlines on one timer wheel (``server.deadlines``): never early, at
most a tick late, cancelled and replaced by key. Times are given, not waited for."""

from __future__ import annotations

from server.deadlines import Wheel


def test_a_deadline_runs_at_the_first_tick_after_it_and_never_early() -> None:
    wheel = Wheel(tick_s=0.1)
    ran: list[str] = []
    wheel.set("a", 1.0, lambda: ran.append("a"), now=10.0)
    wheel.set("b", 1.05, lambda: ran.append("b"), now=10.0)
    assert wheel.run_due(10.99) == 0 and ran == []
    assert wheel.run_due(11.0) == 1 and ran == ["a"]
    assert wheel.run_due(11.09) == 0
    assert wheel.run_due(11.1) == 1 and ran == ["a", "b"]  # 0.05 s late: a tick at most
    assert len(wheel) == 0


def test_cancel_and_replace_by_key() -> None:
    wheel = Wheel(tick_s=0.1)
    ran: list[str] = []
    wheel.set("a", 1.0, lambda: ran.append("hello"), now=0.0)
    wheel.set("a", 3.0, lambda: ran.append("login"), now=0.0)  # replaces it
    wheel.set("b", 1.0, lambda: ran.append("b"), now=0.0)
    wheel.cancel("b")
    wheel.cancel("b")  # twice: nothing
    assert wheel.run_due(2.0) == 0 and len(wheel) == 1
    assert wheel.run_due(5.0) == 1 and ran == ["login"]


def test_what_is_due_runs_earliest_first_and_a_failure_does_not_stop_the_rest() -> None:
    wheel = Wheel(tick_s=0.5)
    ran: list[int] = []

    def fail() -> None:
        raise RuntimeError("boom")

    wheel.set(3, 3.0, lambda: ran.append(3), now=0.0)
    wheel.set(1, 1.0, lambda: ran.append(1), now=0.0)
    wheel.set(0, 1.0, fail, now=0.0)
    wheel.set(2, 2.0, lambda: ran.append(2), now=0.0)
    assert wheel.run_due(10.0) == 4
    assert ran == [1, 2, 3]
