"""Issue 16, the connections and lobby half: what a stranger can make the server hold is
bounded, and the server says so with documented codes.

Deadlines (close 4408), caps on connections per address (HTTP 429) and in all (503) with
/healthz and /metrics still answering, accept failures logged once per interval (a server
process with a real, lowered open-files limit), seeks capped per account, address and in
all, the lobby reply within the protocol's limits at 10,500 open seeks, and declines that
cost the decliner nothing (pending challenges are capped per challenger and per address:
tests/server/test_inbox.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import resource
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import websockets

import protocol as p
from clients.connection import Connection, ServerError
from server.storage import sqlite_url

from .conftest import Live, Serve, one_backend
from .support import REPO, TIMEOUT, Clients, Player, start_game
from .test_http import http_get, metric

CLOCK = p.Fischer(base_ms=60_000, increment_ms=0)


async def closed_with(ws: Any, timeout: float = TIMEOUT) -> int | None:
    """Wait until the server closes the websocket ``ws``; its close code."""
    await asyncio.wait_for(ws.wait_closed(), timeout)
    return int(ws.close_code) if ws.close_code is not None else None


async def refused_upgrade(url: str) -> websockets.InvalidStatus:
    with pytest.raises(websockets.InvalidStatus) as info:
        ws = await websockets.connect(url, open_timeout=TIMEOUT)
        await ws.close()
    return info.value


# -- deadlines ------------------------------------------------------------------------------------
async def test_a_connection_that_never_says_hello_is_closed_with_4408(serve: Serve) -> None:
    async with serve(hello_timeout_s=0.3, auth_timeout_s=0.6) as live:
        silent = await websockets.connect(live.url)
        assert await closed_with(silent) == p.CLOSE_TOO_SLOW_TO_START
        assert "hello" in (silent.close_reason or "")


@one_backend
async def test_a_connection_that_never_logs_in_is_closed_unless_it_watches(serve: Serve
                                                                           ) -> None:
    async with serve(hello_timeout_s=0.2, auth_timeout_s=0.5) as live:
        # opened in this order, their deadlines pass in this order
        watcher = await live.clients.connect()
        await watcher.call(p.LobbySubscribe)
        player = await live.clients.guest()
        idle = await live.clients.connect()  # said hello, nothing more
        await asyncio.wait_for(idle.closed.wait(), TIMEOUT)
        assert idle.ws.close_code == p.CLOSE_TOO_SLOW_TO_START
        assert "logged in" in (idle.ws.close_reason or "")
        # the deadlines of the two opened before it have passed: both are open
        assert isinstance(await watcher.call(p.Ping), p.Pong)
        assert isinstance(await player.call(p.Ping), p.Pong)
        # logging out starts the deadline again
        await player.call(p.Logout)
        await asyncio.wait_for(player.conn.closed.wait(), TIMEOUT)
        assert player.conn.ws.close_code == p.CLOSE_TOO_SLOW_TO_START


# -- connection caps -----------------------------------------------------------------------------
async def test_connections_over_the_per_address_cap_get_429(serve: Serve) -> None:
    async with serve(max_connections_per_address=3) as live:
        held = [await live.clients.connect() for _ in range(3)]
        refusal = await refused_upgrade(live.url)
        assert refusal.response.status_code == 429
        assert refusal.response.headers["Retry-After"].isdigit()
        assert await http_get(live.http_port, "/healthz") == (200, "ok\n")
        _, body = await http_get(live.http_port, "/metrics")
        assert metric(body, 'tessera_connections_refused_total{why="address"}') == 1
        # another address is not held back by this one's connections
        other = await websockets.connect(live.url, local_addr=("127.0.0.2", 0))
        assert other.remote_address is not None
        await other.close()
        # a connection closed gives its place back (once the server has seen it go)
        await held.pop().close()
        conn = await _connect_when_admitted(live.url)
        assert isinstance(await conn.call(p.Ping), p.Pong)
        await conn.close()


async def test_connections_over_the_total_cap_get_503_and_health_still_answers(
        serve: Serve) -> None:
    async with serve(max_connections=2) as live:
        for _ in range(2):
            await live.clients.connect()
        refusal = await refused_upgrade(live.url)
        assert refusal.response.status_code == 503
        assert int(refusal.response.headers["Retry-After"]) > 0
        assert await http_get(live.http_port, "/healthz") == (200, "ok\n")
        status, body = await http_get(live.http_port, "/metrics")
        assert status == 200
        assert metric(body, "tessera_connections") == 2
        assert metric(body, 'tessera_connections_refused_total{why="total"}') == 1


async def test_a_failed_handshake_gives_its_place_back(serve: Serve) -> None:
    """A request admitted on /ws whose websocket handshake then fails (no upgrade headers)
    is not counted for ever."""
    async with serve(max_connections_per_address=1) as live:
        for _ in range(3):
            status, _ = await http_get(live.http_port, "/ws")
            assert status == 426 or status == 400, status
        conn = await _connect_when_admitted(live.url)
        assert isinstance(await conn.call(p.Ping), p.Pong)
        await conn.close()


async def _connect_when_admitted(url: str) -> Connection:
    """Connect, retrying while refused with 429 or 503 (a place is being given back)."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        try:
            return await Connection.open(url)
        except websockets.InvalidStatus as e:
            if time.monotonic() > deadline or e.response.status_code not in (429, 503):
                raise
            await asyncio.sleep(0.05)


# -- the open-files limit ------------------------------------------------------------------------
def _server(db_url: str, workdir: Path, nofile: tuple[int, int], *args: str
            ) -> tuple[subprocess.Popen[bytes], Path, Path]:
    """``python -m server serve`` with RLIMIT_NOFILE set to ``nofile`` (soft, hard)."""
    ready, log = workdir / "ready", workdir / "server.log"

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, nofile)

    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "server", "serve", "--port", "0", "--db", db_url,
             "--ready-file", str(ready), "--log-level", "info", *args],
            cwd=REPO, stdout=out, stderr=subprocess.STDOUT, preexec_fn=limit)
    return proc, ready, log


async def _port(proc: subprocess.Popen[bytes], ready: Path, log: Path) -> int:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()
        if ready.exists() and ready.read_text().endswith("\n"):
            return int(ready.read_text())
        await asyncio.sleep(0.05)
    raise AssertionError(f"server not ready:\n{log.read_text()}")


def _json_lines(log: Path) -> list[dict[str, Any]]:
    lines = []
    for line in log.read_text().splitlines():
        with contextlib.suppress(ValueError):
            lines.append(json.loads(line))
    return lines


async def test_serve_raises_its_open_files_limit_and_caps_connections_below_it(
        tmp_path: Path) -> None:
    db_url = sqlite_url(tmp_path / "tessera.db")  # the limit is the process's: one backend
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    hard = min(hard, 4096)
    proc, ready, log = _server(db_url, tmp_path, (200, hard), "--fd-reserve", "100",
                               "--max-handshakes", "50")
    try:
        await _port(proc, ready, log)
        limits = Path(f"/proc/{proc.pid}/limits").read_text()
        [line] = [x for x in limits.splitlines() if x.startswith("Max open files")]
        assert line.split()[3:5] == [str(hard), str(hard)], line  # soft raised to hard
        [listening] = [x for x in _json_lines(log) if x.get("msg") == "listening"]
        assert listening["open_files_limit"] == hard
        assert listening["max_connections"] == hard - 100 - 50
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)


async def test_accept_failures_are_logged_once_per_interval_with_a_count(tmp_path: Path) -> None:
    """A server out of files fails to accept: asyncio reports each failed ``accept()``
    (hundreds a second); the server logs the first and then one count per interval."""
    db_url = sqlite_url(tmp_path / "tessera.db")  # the limit is the process's: one backend
    files = 160
    proc, ready, log = _server(db_url, tmp_path, (files, files),
                               "--accept-log-interval", "60", "--fd-reserve", "0",
                               "--max-handshakes", "1000")  # none cut: the files run out
    sockets: list[socket.socket] = []
    try:
        port = await _port(proc, ready, log)
        # raw TCP connections that say nothing hold a file each in the server until its
        # handshake timeout; more than its limit make accept() fail
        for _ in range(files + 40):
            s = socket.create_connection(("127.0.0.1", port))
            sockets.append(s)
        deadline = time.monotonic() + 30
        while "cannot accept connections" not in log.read_text():
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            await asyncio.sleep(0.05)
        await asyncio.sleep(1.5)  # asyncio retries accepting after 1 s: more failures
        for s in sockets:
            s.close()
        sockets.clear()
        deadline = time.monotonic() + 30
        while True:  # the server has files again: /healthz answers
            with contextlib.suppress(OSError, TimeoutError, IndexError, ValueError):
                status, body = await http_get(port, "/metrics")
                if status == 200:
                    break
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            await asyncio.sleep(0.1)
        failures = metric(body, "tessera_accept_failures_total")
        text = log.read_text()
        logged = [x for x in _json_lines(log) if x.get("msg", "").startswith(
            "cannot accept connections")]
        assert failures >= 10, (failures, text[-3000:])
        assert len(logged) == 1, text[-3000:]  # one line in the 60 s interval
        assert "out of system resource" not in text  # asyncio's own line, per failure
        assert "Traceback" not in text
    finally:
        for s in sockets:
            s.close()
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)
    logged = [x for x in _json_lines(log) if x.get("msg", "").startswith(
        "cannot accept connections")]
    assert len(logged) == 2, log.read_text()[-3000:]  # the rest counted on the way out
    assert logged[1]["failures"] == failures - 1


async def test_silent_sockets_beyond_max_handshakes_cut_the_oldest_and_health_answers(
        tmp_path: Path) -> None:
    """Raw TCP connections that never send a request, more than the server has files for:
    the oldest waiting is cut for each one over ``max_handshakes``, so the files never run
    out and /healthz answers while they are all still open on this side."""
    db_url = sqlite_url(tmp_path / "tessera.db")  # the limit is the process's: one backend
    # asyncio accepts up to 100 sockets in one go, and hands them over (where they can be
    # cut) and closes the cut ones a loop turn or two later: the files must hold the
    # server's own, the handshakes and a few such bursts (the reserve is for them)
    files, reserve, handshakes = 2000, 500, 10
    proc, ready, log = _server(db_url, tmp_path, (files, files), "--fd-reserve",
                               str(reserve), "--max-handshakes", str(handshakes))
    sockets: list[socket.socket] = []
    try:
        port = await _port(proc, ready, log)
        for _ in range(files + 40):
            sockets.append(socket.create_connection(("127.0.0.1", port)))
        assert await http_get(port, "/healthz") == (200, "ok\n")
        _, body = await http_get(port, "/metrics")
        # beyond the files left (less the reserve), cut whatever their age
        assert metric(body, "tessera_handshakes_cut_total") >= 40 + reserve - 2
        assert metric(body, "tessera_accept_failures_total") == 0
        conn = await Connection.open(f"ws://127.0.0.1:{port}/ws")  # and a real client too
        assert isinstance(await conn.call(p.Ping), p.Pong)
        await conn.close()
    finally:
        for s in sockets:
            s.close()
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)
    assert "cannot accept" not in log.read_text()


@one_backend
async def test_silent_sockets_over_max_handshakes_are_cut_once_a_second_old(
        serve: Serve) -> None:
    """With files to spare, a burst over ``max_handshakes`` is let be (clients reconnecting
    all at once after a restart); the ones still silent a second later are cut, the oldest
    first, when the next connection comes."""
    async with serve(max_handshakes=5) as live:
        handshakes = live.running.app.admission.handshakes
        sockets = [socket.create_connection(("127.0.0.1", live.http_port)) for _ in range(20)]
        try:
            deadline = time.monotonic() + TIMEOUT
            while len(handshakes) < 20:  # all accepted, none cut: young, files to spare
                assert time.monotonic() < deadline, len(handshakes)
                await asyncio.sleep(0.02)
            await asyncio.sleep(1.1)  # now a second old
            assert await http_get(live.http_port, "/healthz") == (200, "ok\n")
            assert len(handshakes) <= 5
            _, body = await http_get(live.http_port, "/metrics")
            assert metric(body, "tessera_handshakes_cut_total") >= 15
        finally:
            for s in sockets:
                s.close()


# -- seeks -----------------------------------------------------------------------------------------
def seek_fields(k: int) -> dict[str, Any]:
    """A seek nobody else's pairs with (its clock is its own)."""
    return {"game": "hadron", "options": {"size": 5},
            "clock": p.Fischer(base_ms=60_000 + 1000 * k, increment_ms=0)}


async def test_open_seeks_are_capped_per_account_per_address_and_in_all(serve: Serve) -> None:
    async with serve(max_open_seeks=2, max_seeks_per_address=3, max_seeks=100) as live:
        a, b = await live.clients.guest(), await live.clients.guest()
        await a.call(p.Seek, **seek_fields(1))
        await a.call(p.Seek, **seek_fields(2))
        refused = await a.refused(p.Seek, **seek_fields(3))
        assert refused.code == p.ErrorCode.CONFLICT and "2 open seeks" in refused.message
        await b.call(p.Seek, **seek_fields(4))
        refused = await b.refused(p.Seek, **seek_fields(5))  # same address, another account
        assert refused.code == p.ErrorCode.CONFLICT and "address" in refused.message
        # pairing opens no seek: allowed at the cap
        created = await b.call(p.Seek, **seek_fields(1))
        await b.wait_for(p.SeekTaken, seek_id=created.seek_id)
    async with serve(max_seeks=2) as live:
        a, b = await live.clients.guest(), await live.clients.guest()
        await a.call(p.Seek, **seek_fields(1))
        await b.call(p.Seek, **seek_fields(2))
        refused = await b.refused(p.Seek, **seek_fields(3))
        assert refused.code == p.ErrorCode.CONFLICT and "lobby is full" in refused.message


async def _seek_many(player: Player, first: int, count: int) -> None:
    """Open ``count`` seeks at once (pipelined), each with a clock of its own."""
    conn = player.conn
    replies = [await conn.send(p.Seek(id=conn.pending.next_id(), **seek_fields(k)))
               for k in range(first, first + count)]
    for reply in replies:
        assert isinstance(await asyncio.wait_for(reply, TIMEOUT * 6), p.SeekCreated)


@one_backend
async def test_the_lobby_answers_within_the_protocols_limits_with_10500_open_seeks(
        serve: Serve) -> None:
    seeks, guests = 10_500, 14  # at most 1000 seeks each (welcome.limits.max_open_seeks)
    async with serve(max_open_seeks=1000, max_seeks_per_address=seeks,
                     max_seeks=seeks, conn_rate=1e5, conn_burst=1e5, account_rate=1e5,
                     account_burst=1e5) as live:
        players = [await live.clients.guest() for _ in range(guests)]
        share = seeks // guests
        for i, player in enumerate(players):  # in turn: a guest's seeks share one clock set
            await _seek_many(player, i * share, share)
        assert live.running.app.topology.seeks.held() == seeks
        looker = await live.clients.connect()
        lobby = await looker.call(p.LobbySubscribe)
        assert isinstance(lobby, p.Lobby)
        shown = live.settings.lobby_page
        assert (len(lobby.seeks), lobby.more_seeks) == (shown, seeks - shown)
        assert (len(lobby.players), lobby.more_players) == (guests, None)
        assert lobby.next_cursor is not None
        # the oldest first
        assert [s.user.name for s in lobby.seeks] == [players[0].name] * shown
        # the last page, however deep, is within the protocol's limits too
        last = await looker.call(p.LobbyPage, cursor=f"{lobby.seeks[0].seek_id + seeks - 2}:9"
                                                      f"999999999999:")
        assert len(last.seeks) == 1 and last.next_cursor is None
        # a seek that pairs with the newest of them finds it among the 10,500
        newest = seeks - 1
        late = await live.clients.guest()
        created = await late.call(p.Seek, **seek_fields(newest))
        taken = await players[-1].wait_for(p.SeekTaken)
        assert (await late.wait_for(p.SeekTaken, seek_id=created.seek_id)).game_id == \
            taken.game_id
        # a member leaving takes their seeks with them
        await players[0].close()
        deadline = time.monotonic() + TIMEOUT
        while live.running.app.topology.seeks.held() != seeks - 1 - share:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)


async def test_the_lobby_shows_a_page_and_counts_the_rest(serve: Serve) -> None:
    async with serve(lobby_page=2) as live:
        players = [await live.clients.guest() for _ in range(4)]
        await players[0].call(p.Seek, **seek_fields(1))
        await players[1].call(p.Seek, **seek_fields(2))
        await players[1].call(p.Seek, **seek_fields(3))
        lobby = await players[3].call(p.LobbySubscribe)
        assert {u.name for u in lobby.players} <= {player.name for player in players}
        assert len(lobby.players) == 2 and lobby.more_players == 2
        assert len(lobby.seeks) == 2 and lobby.more_seeks == 1


# -- challenges ------------------------------------------------------------------------------------
def challenge_fields(to: str) -> dict[str, Any]:
    return {"to": to, "game": "hadron", "options": {}, "clock": CLOCK}


@one_backend
async def test_declining_challenges_costs_the_decliner_nothing(serve: Serve) -> None:
    """A target declines more challenges than its request budget holds: every decline is
    answered, and its budget is whole for what it does next; a decline of a challenge it
    was not sent is charged like any request."""
    async with serve(conn_rate=1, conn_burst=4, account_rate=1, account_burst=4,
                     max_challenges_per_challenger=3) as live:
        target = await live.clients.guest()
        challengers = [await live.clients.guest() for _ in range(4)]
        ids = []
        for challenger in challengers:
            for _ in range(2):  # each within its own budget (the login took one)
                created = await challenger.call(p.Challenge, **challenge_fields(target.name))
                ids.append(created.challenge_id)
        for challenge_id in ids:  # 8 declines; the target's budget is 3 (the login took 1)
            reply = await target.call(p.DeclineChallenge, challenge_id=challenge_id,
                                      message="busy")
            assert isinstance(reply, p.Ok)
        assert isinstance(await target.call(p.Ping), p.Pong)
        conn = target.conn  # declined already, so not free any more: ten at once
        replies = [await conn.send(p.DeclineChallenge(id=conn.pending.next_id(),
                                                      challenge_id=ids[0]))
                   for _ in range(10)]
        codes = [(await asyncio.wait_for(reply, TIMEOUT)).code for reply in replies]
        assert p.ErrorCode.RATE_LIMITED in codes, codes


async def test_a_seek_flood_from_many_guests_does_not_grow_one_address_without_bound(
        clients: Clients, server: Live) -> None:
    """With the default caps: guests from one address stop getting seeks at the address's
    cap, whatever their number."""
    cap = server.settings.max_seeks_per_address
    per_guest = server.settings.max_open_seeks
    refused = 0
    for g in range(cap // per_guest + 2):
        guest = await clients.guest()
        for k in range(per_guest):
            try:
                await guest.call(p.Seek, **seek_fields(1000 * g + k))
            except ServerError as e:
                assert e.code == p.ErrorCode.CONFLICT, e
                refused += 1
    assert server.running.app.topology.seeks.held() == cap
    assert refused == 2 * per_guest


async def test_games_in_progress_are_capped_per_user(serve: Serve) -> None:
    async with serve(max_games_per_user=2) as live:
        a, b, c = [await live.clients.guest() for _ in range(3)]
        await start_game(a, b, "hadron")
        b_seek = await b.call(p.Seek, **seek_fields(7))  # opened with one game in progress
        await start_game(a, b, "hadron")  # both at the cap now
        refused = await a.refused(p.Challenge, **challenge_fields(c.name))
        assert refused.code == p.ErrorCode.CONFLICT and "games in progress" in refused.message
        refused = await c.refused(p.Challenge, **challenge_fields(b.name))
        assert refused.code == p.ErrorCode.CONFLICT and b.name in refused.message
        assert (await a.refused(p.Seek, **seek_fields(8))).code == p.ErrorCode.CONFLICT
        # b's seek is not paired with, nor accepted, while b is at the cap
        created = await c.call(p.Seek, **seek_fields(7))
        lobby = await c.call(p.LobbySubscribe)
        assert {s.seek_id for s in lobby.seeks} == {b_seek.seek_id, created.seek_id}
        refused = await c.refused(p.AcceptSeek, seek_id=b_seek.seek_id)
        assert refused.code == p.ErrorCode.CONFLICT
        assert len(live.running.app.games) == 2


async def test_games_watched_are_capped_per_connection(serve: Serve) -> None:
    async with serve(max_watched_per_connection=2) as live:
        guests = [await live.clients.guest() for _ in range(6)]
        games = [await start_game(guests[i], guests[i + 1], "hadron") for i in (0, 2, 4)]
        spectator = await live.clients.connect()
        for game in games[:2]:
            await game.watch(spectator)
        refused = None
        try:
            await spectator.call(p.Watch, game_id=games[2].game_id)
        except ServerError as e:
            refused = e
        assert refused is not None and refused.code == p.ErrorCode.CONFLICT
        try:
            await spectator.call(p.Resume, game_id=games[2].game_id, since_seq=0)
            raise AssertionError("resume attached a third game")
        except ServerError as e:
            assert e.code == p.ErrorCode.CONFLICT
        await games[0].watch(spectator)  # again: a fresh snapshot, no new place taken
        await spectator.call(p.Unwatch, game_id=games[0].game_id)
        await games[2].watch(spectator)  # a place again
        # a player's own games do not count against it
        player = guests[0]
        for game in games[1:]:
            await game.watch(player.conn)
        assert isinstance(await player.call(p.Resume, game_id=games[0].game_id,
                                            since_seq=0), p.GameState)


async def test_a_refused_upgrade_does_not_hold_a_file_while_its_client_stays(
        serve: Serve) -> None:
    """A client that never closes after its upgrade is refused (503 here), or after
    /healthz: the server closes the connection once the response is out, instead of holding
    it (and a file) until websockets' handshake timeout of 10 s."""
    async with serve(max_connections=1) as live:
        await live.clients.connect()  # the one websocket allowed
        tasks = live.running.ws_server.handler_tasks  # one per connection being served
        writers = []
        for request in (b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
                        b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                        b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                        b"Sec-WebSocket-Version: 13\r\n\r\n"):
            reader, writer = await asyncio.open_connection("127.0.0.1", live.http_port)
            writers.append(writer)
            writer.write(request)  # and never closes its side
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), TIMEOUT)
            assert head.split(b" ")[1] in (b"200", b"503"), head
        try:
            deadline = time.monotonic() + 5  # well within the handshake timeout (10 s)
            while len(tasks) > 1:  # only the websocket's is left
                assert time.monotonic() < deadline, len(tasks)
                await asyncio.sleep(0.02)
        finally:
            for writer in writers:
                writer.close()


@one_backend
async def test_healthz_is_answered_behind_a_burst_of_connections(serve: Serve) -> None:
    """Connections that arrive while the event loop is busy wait in the kernel's accept
    queue (``--listen-backlog``), not dropped: a ``/healthz`` behind 400 of them is
    answered once the loop is free again, without waiting for its SYN's retry (1 s). With
    a queue of 100 it did (issue 24: a wave of connections, /healthz up to 1,550 ms)."""
    stall_s = 0.3
    async with serve() as live:
        port = live.http_port

        def burst_then_probe() -> tuple[float, bytes]:
            burst = []
            try:
                for _ in range(400):
                    sock = socket.socket()
                    sock.setblocking(False)
                    with contextlib.suppress(BlockingIOError):
                        sock.connect(("127.0.0.1", port))
                    burst.append(sock)
                t0 = time.monotonic()
                with socket.create_connection(("127.0.0.1", port), timeout=10) as probe:
                    # the kernel completes a handshake the accept queue has room for at
                    # once, however busy the server; a dropped SYN is retried after 1 s
                    connected = time.monotonic() - t0
                    probe.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n"
                                  b"Connection: close\r\n\r\n")
                    head = probe.recv(12)
                return connected, head
            finally:
                for sock in burst:
                    sock.close()

        asyncio.get_running_loop().call_soon(time.sleep, stall_s)  # the loop is busy
        connected, head = await asyncio.to_thread(burst_then_probe)
        assert head.startswith(b"HTTP/1.1 200"), head
        assert connected < 0.9, f"connecting took {connected:.2f} s: the SYN was dropped"
