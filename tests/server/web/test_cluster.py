"""The browser app against a cluster: each page talks to a different node (as behind a load
balancer), and a game seeked on one node, taken on the other and watched from both is
played to its end by clicking, every position checked against the engine.

Needs PostgreSQL (``TESSERA_TEST_PG_URL``) and Redis (``TESSERA_TEST_REDIS_URL``) as well
as Chromium; skipped, saying which is missing, otherwise.
"""

from __future__ import annotations

import asyncio
import os
import random
import threading
import uuid
from collections.abc import Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import pytest
import redis.asyncio as aioredis

import protocol as p
from tests.server.conftest import (
    PG_URL_ENV,
    REDIS_URL_ENV,
    _pg_reason_unavailable,
    _pg_schema,
    redis_reason_unavailable,
)

from .conftest import Tabs, WebServer, ask, run, start_web_server, stop_web_server
from .pages import pick, start_by_seek

T = TypeVar("T")


def _services() -> tuple[str, str]:
    """The PostgreSQL and Redis URLs of the tests, or a skip saying what is missing."""
    pg, redis_url = os.environ.get(PG_URL_ENV), os.environ.get(REDIS_URL_ENV)
    if not pg:
        pytest.skip(f"browser-on-a-cluster test skipped: {PG_URL_ENV} is not set")
    if not redis_url:
        pytest.skip(f"browser-on-a-cluster test skipped: {REDIS_URL_ENV} is not set")
    for reason in (run(_pg_reason_unavailable(pg)), run(redis_reason_unavailable(redis_url))):
        if reason:
            pytest.skip(reason)
    return pg, redis_url


@pytest.fixture
def nodes(chromium: str, tmp_path: Path) -> Iterator[tuple[WebServer, WebServer]]:
    """Two node processes of a cluster of this test's own (a PostgreSQL schema, a cluster
    name on the shared Redis), each serving the web app on its own port."""
    pg, redis_url = _services()
    name = f"test-web-{uuid.uuid4().hex[:12]}"
    # Playwright's loop runs in this thread: the schema's admin engine gets a loop of its
    # own, in a thread of its own, for its whole life
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    def on_loop(coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, loop).result()

    schema = _pg_schema(pg)
    db_url = on_loop(schema.__aenter__())
    started: list[WebServer] = []

    def start(node: str) -> None:
        directory = tmp_path / node
        directory.mkdir()
        started.append(start_web_server(
            directory, "--db", db_url, "--cluster", redis_url, "--cluster-name", name,
            "--node-id", node, "--grace", "2"))

    try:
        with ThreadPoolExecutor(2) as pool:  # both at once: each waits for its own start
            for done in [pool.submit(start, node) for node in ("web-a", "web-b")]:
                done.result()
        started.sort(key=lambda server: server.log.parent.name)  # web-a, web-b
        yield started[0], started[1]
    finally:
        for server in started:
            stop_web_server(server)
        try:
            on_loop(schema.__aexit__(None, None, None))
            on_loop(_forget(redis_url, name))
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()


async def _forget(redis_url: str, name: str) -> None:
    client = aioredis.Redis.from_url(redis_url)
    try:
        keys = [key async for key in client.scan_iter(match=f"*{name}*")]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


def test_a_game_across_two_nodes_by_clicking(browser: Any,
                                             nodes: tuple[WebServer, WebServer]) -> None:
    one, two = nodes
    on_one, on_two = Tabs(browser, one), Tabs(browser, two)
    try:
        owner, taker = on_one.open(), on_two.open()
        # the seek is made on node one and taken from node two
        table = start_by_seek(owner, taker, "hadron", {"size": 5}, "fischer", minutes=5,
                              increment=3)
        # spectators on both nodes: the owner's node and the other
        table.watchers += [on_one.open(f"/game/{table.game_id}"),
                           on_two.open(f"/game/{table.game_id}")]
        table.check()
        rng = random.Random(11)
        table.play_out(pick(["one"]), rng)
        for page in table.pages:
            page.wait_for_selector(".game-page[data-status=over]")
        # stored once, as played, whichever node is asked
        for server in nodes:
            reply = ask(server, p.GetGame, game_id=table.game_id)
            assert isinstance(reply, p.GameRecord)
            assert [m.move for m in reply.record.moves] == list(table.state.moves)
            result = reply.record.result
            assert result is not None
            assert (result.winner, result.reason) == (table.state.winner, "normal")
        for watcher in table.watchers:
            moves = watcher.eval_on_selector_all(".move-list .mv",
                                                 "els => els.map(e => e.textContent)")
            assert moves == list(table.state.moves)
    finally:
        on_one.close()
        on_two.close()
    assert not on_one.errors and not on_two.errors, on_one.errors + on_two.errors
