"""Memory handed back once a crowd has gone (issue 16): the drop that triggers it, the
tables rebuilt, and a real server doing it after its connections close."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
import websockets

from server import memory
from server.lobby import Members
from server.memory import DropWatch
from server.offers import MemoryPresence

from .conftest import Serve
from .support import ServerProcess


async def test_a_hand_back_comes_once_the_crowd_has_halved_by_enough() -> None:
    loads = iter([0, 300, 1000, 600, 500, 480, 20, 20, 150, 10])
    now = 0
    calls: list[int] = []

    def load() -> int:
        return now

    async def hand_back() -> None:
        calls.append(now)

    watch = DropWatch(load, hand_back, min_drop=200)
    seen = []
    for now in loads:  # noqa: B007 (load() reads it)
        seen.append(await watch.check())
    # 1000 is the peak; 600 is not half of it, 500 is; then from 500 to 20 again; 150 -> 10
    # is a drop of 140 only
    assert seen == [False, False, False, False, True, False, True, False, False, False]
    assert calls == [500, 20]


async def test_a_flood_of_short_connections_hands_back_once_it_has_passed() -> None:
    """The churn (connections closed a second) rises and falls: one hand-back, when it has
    fallen; a steady rate does not trigger one."""
    closed = 0
    calls: list[int] = []
    churn = memory.Churn(lambda: closed)

    async def hand_back() -> None:
        calls.append(closed)

    watch = DropWatch(churn.last, hand_back, min_drop=200, peak=churn.take)
    seen = []
    for per_second in (0, 300, 450, 420, 400, 100, 0, 0, 250, 250, 250):
        closed += per_second
        seen.append(await watch.check())
    assert seen == [False] * 5 + [True] + [False] * 5
    assert calls == [1670]  # at 100 a second, from a peak of 450
    assert churn.last() == 250


async def test_compacted_lobby_tables_keep_every_member_and_index() -> None:
    members, presence = Members(), MemoryPresence()
    sessions = [object() for _ in range(500)]
    joined = [members.join(k, f"Player{k}", "human", sessions[k]) for k in range(500)]
    for member in joined:
        await presence.join(member.online())
    for member, session in zip(joined[2:], sessions[2:], strict=True):
        assert members.leave(member, session)
        assert await presence.leave(member.online())
    members.compact()
    presence.compact()
    assert len(members) == 2 and set(members.by_id) == {0, 1}
    assert members.get(1) is joined[1]
    found = await presence.find("player1")
    assert found is not None and found.user_id == 1
    assert members.leave(joined[0], sessions[0]) and await presence.leave(joined[0].online())
    assert await presence.find("player0") is None and len(members) == 1


async def test_the_server_hands_memory_back_once_its_connections_have_closed(
        serve: Serve) -> None:
    async with serve() as live:
        app = live.running.app
        before = app.metrics.memory_handbacks._value.get()
        crowd = [await websockets.connect(live.url) for _ in range(250)]
        assert app.crowd() >= 250
        await asyncio.gather(*(ws.close() for ws in crowd))
        for _ in range(100):  # the watch looks every second
            if app.metrics.memory_handbacks._value.get() > before:
                break
            await asyncio.sleep(0.1)
        assert app.metrics.memory_handbacks._value.get() == before + 1
        assert app.crowd() == 0


async def test_the_server_hands_memory_back_after_a_flood_of_short_connections(
        serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    """Connections that come and go at once never make a crowd, but the churn watch sees
    them: a hand-back (without a full collection) once they have stopped."""
    monkeypatch.setattr("server.app.CHURN_MIN_DROP", 20)
    async with serve() as live:
        app = live.running.app
        await asyncio.sleep(1.5)  # the watch's first look: nothing closed
        before = app.metrics.memory_handbacks._value.get()

        for _ in range(100):  # one after the other: no crowd
            async with websockets.connect(live.url):
                pass
        assert app.crowd() <= 2 and app.admission.closed() >= 90  # the last may be closing
        for _ in range(100):  # the watch looks every second
            if app.metrics.memory_handbacks._value.get() > before:
                break
            await asyncio.sleep(0.1)
        assert app.metrics.memory_handbacks._value.get() == before + 1


@pytest.mark.skipif(memory._malloc_trim() is None, reason="glibc only")
async def test_serve_runs_on_the_system_allocator(
        server_process: Callable[..., ServerProcess], monkeypatch: pytest.MonkeyPatch) -> None:
    """``python -m server serve`` executes itself again with PYTHONMALLOC=malloc (same
    process id), so that malloc_trim can give back what a flood left."""
    monkeypatch.delenv("PYTHONMALLOC", raising=False)
    proc = server_process()
    await proc.start()
    assert proc.proc is not None
    environ = Path(f"/proc/{proc.proc.pid}/environ").read_bytes().split(b"\0")
    assert b"PYTHONMALLOC=malloc" in environ
