"""An account's request budget is one over every node (real node processes): a user with
connections on two nodes gets the budget once, not once a node."""

from __future__ import annotations

import asyncio
import time

import protocol as p
from server.config import Settings
from tests.server.support import Clients

from .conftest import Cluster

PINGS = 40  # a connection's own burst (--rate 20): only the account's budget refuses


async def test_one_request_budget_for_an_account_on_two_nodes(cluster: Cluster) -> None:
    a_node, b_node = await cluster.start_nodes(("a", "b"))
    clients = Clients(a_node.url)
    try:
        first = await clients.guest()
        conns = [first.conn, *[(await clients.with_token(first.token, url)).conn
                               for url in (a_node.url, b_node.url, b_node.url)]]
        started = time.monotonic()
        sent = [await conn.send(p.Ping(id=conn.pending.next_id()))
                for _ in range(PINGS) for conn in conns]
        replies = await asyncio.wait_for(
            asyncio.gather(*sent, return_exceptions=True), 30)
        elapsed = time.monotonic() - started
        answered = sum(isinstance(reply, p.Pong) for reply in replies)
        refused = [reply for reply in replies if not isinstance(reply, p.Pong)]
        # 80 of the 160 sent, plus what refills meanwhile: at 40 a second, for the time the
        # pings took (a second's worth at least; more on a busy machine), not once a node
        burst, rate = Settings().account_burst, Settings().account_rate
        assert burst <= answered < burst + rate * max(elapsed, 1.0), (answered, elapsed)
        assert refused and all(isinstance(error, p.ErrorReply) and error.code == "rate_limited"
                               for error in refused), refused[:3]
    finally:
        await clients.close_all()
