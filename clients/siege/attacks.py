"""The attacks of ``tessera siege``, each run in a process of its own.

``python -m clients.siege.attacks NAME PORTS PARAMS_JSON`` runs attack NAME against the
server on loopback PORTS (one port, or a cluster's nodes' separated by commas: the
attack's connections go to the nodes in turn, :class:`Nodes`) for ``params["seconds"]``
seconds. It prints ``ready`` on a line
once its first wave is in (the burst of wrong passwords sent, the connections opened), so
that the parent can time the owner's login at the worst moment, and then one JSON object
on its last line: the :class:`~clients.siege.raw.Tally` of what it got. Running apart from
the canaries keeps the attacker's own CPU out of the canaries' latencies.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import resource
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import msgpack
from websockets.exceptions import ConnectionClosed, InvalidStatus

import protocol as p

from ..connection import Connection, Disconnected, ServerError
from .raw import ATTACKER, RawSocket, Tally, close_reason, frame, sock_count_limit, spread_address

Ready = Callable[[], None]
CONNECT_CONCURRENCY = 200


class Nodes:
    """The server's ports (one process's, or a cluster's nodes'), taken in turn by an
    attack's connections, and what each node answered (a :class:`Tally` a node, for the
    attacks whose budgets must hold across nodes)."""

    def __init__(self, ports: list[int]) -> None:
        self.ports = ports
        self.tallies = [Tally() for _ in ports]

    def port(self, i: int) -> int:
        """The port the i-th connection goes to."""
        return self.ports[i % len(self.ports)]

    def tally(self, i: int) -> Tally:
        """Where what the i-th connection got is counted: its node's tally."""
        return self.tallies[i % len(self.ports)]

    def into(self, tally: Tally) -> None:
        """Every node's answers counted in ``tally``; on a cluster each node's also apart
        (``by_node``, in the order of the ports)."""
        for sub in self.tallies:
            tally.add(sub)
        if len(self.ports) > 1:
            tally.extra["by_node"] = [sub.as_dict() for sub in self.tallies]


Attack = Callable[[Nodes, dict[str, Any], Tally, Ready], Awaitable[None]]


def url(port: int) -> str:
    return f"ws://127.0.0.1:{port}/ws"


def closed_code(conn: Connection) -> str:
    code = conn.ws.close_code
    return str(code) if code is not None else "eof"


async def open_conn(port: int, source: str, tally: Tally) -> Connection | None:
    """A connection that said hello, or None (the failure counted in ``tally``)."""
    try:
        return await Connection.open(url(port), client="tessera-siege",
                                     local_addr=(source, 0), open_timeout=10)
    except InvalidStatus as exc:
        tally.refused[f"http_{exc.response.status_code}"] += 1
    except ServerError as exc:
        tally.refused[exc.code] += 1
    except (TimeoutError, OSError, Disconnected, ConnectionClosed) as exc:
        tally.failed[close_reason(exc)] += 1
    return None


async def call_counted(conn: Connection, tally: Tally, kind: type[Any], **fields: Any
                       ) -> p.ServerMessage | None:
    """One request; its reply counted as accepted or refused (by code)."""
    try:
        reply = await asyncio.wait_for(conn.call(kind, **fields), 30)
    except ServerError as exc:
        tally.refused[exc.code] += 1
        return None
    tally.accepted += 1
    return reply


async def until(deadline: float) -> None:
    await asyncio.sleep(max(0.0, deadline - time.monotonic()))


async def forever_until(deadline: float, body: Callable[[], Awaitable[None]], tally: Tally,
                        stop: asyncio.Event | None = None) -> None:
    """Run ``body`` again and again until ``deadline`` (or ``stop`` is set, if given); a
    dropped connection is counted."""
    while time.monotonic() < deadline and not (stop is not None and stop.is_set()):
        try:
            await body()
        except (TimeoutError, Disconnected, ConnectionClosed, OSError) as exc:
            tally.failed[close_reason(exc)] += 1
            await asyncio.sleep(0.05)


# -- accounts ---------------------------------------------------------------------------------
async def lockout(nodes: Nodes, params: dict[str, Any], tally: Tally, ready: Ready) -> None:
    """A burst of wrong passwords for the owner's account, all at once from one address,
    then one more every second (enough to keep a lock that every refusal extends); each on
    a connection of its own, to the nodes in turn."""
    deadline = time.monotonic() + params["seconds"]
    owner = params["owner"]

    async def wrong(i: int) -> None:
        sub = nodes.tally(i)
        conn = await open_conn(nodes.port(i), ATTACKER, sub)
        if conn is None:
            return
        async with conn:
            reply = await call_counted(conn, sub, p.Login, username=owner,
                                       password=f"not-the-password-{i}")
            if reply is None and conn.closed.is_set():
                sub.closed[closed_code(conn)] += 1

    await asyncio.gather(*(wrong(i) for i in range(params["attempts"])))
    ready()
    i = params["attempts"]
    while time.monotonic() < deadline:
        await wrong(i)
        i += 1
        await asyncio.sleep(1.0)
    nodes.into(tally)


async def login_flood(nodes: Nodes, params: dict[str, Any], tally: Tally, ready: Ready
                      ) -> None:
    """Wrong logins for names that do not exist, ``in_flight`` at a time on each of many
    connections (each new one to the next node), as fast as the server answers (each one
    costs the server a password hash).
    """
    deadline = time.monotonic() + params["seconds"]
    counter = iter(range(10**9))
    opened = iter(range(10**9))

    async def caller(conn: Connection, sub: Tally) -> None:
        while time.monotonic() < deadline and not conn.closed.is_set():
            try:
                reply = await call_counted(conn, sub, p.Login,
                                           username=f"nobody{next(counter)}",
                                           password="wrong-password")
            except (TimeoutError, Disconnected):
                return
            if reply is not None:  # logged in?! the connection is no use any more
                await conn.close()

    async def flooder() -> None:
        while time.monotonic() < deadline:
            i = next(opened)
            sub = nodes.tally(i)
            conn = await open_conn(nodes.port(i), ATTACKER, sub)
            if conn is None:
                await asyncio.sleep(0.1)
                continue
            await asyncio.gather(*(caller(conn, sub) for _ in range(params["in_flight"])))
            if conn.closed.is_set():
                sub.closed[closed_code(conn)] += 1
            await conn.close()

    flooders = [asyncio.create_task(flooder()) for _ in range(params["clients"])]
    await asyncio.sleep(1.0)
    ready()
    await asyncio.gather(*flooders)
    nodes.into(tally)


async def guest_flood(nodes: Nodes, params: dict[str, Any], tally: Tally, ready: Ready
                      ) -> None:
    """Guest logins as fast as possible, each on a connection of its own to the next node:
    the first half of the time from one address, the second half from a new address each
    time."""
    start = time.monotonic()
    half = start + params["seconds"] / 2
    deadline = start + params["seconds"]
    counter = iter(range(10**9))
    phases = {"one_address": Nodes(nodes.ports), "many_addresses": Nodes(nodes.ports)}

    async def flooder() -> None:
        while time.monotonic() < deadline:
            many = time.monotonic() >= half
            i = next(counter)
            sub = phases["many_addresses" if many else "one_address"].tally(i)
            source = spread_address(i) if many else ATTACKER
            conn = await open_conn(nodes.port(i), source, sub)
            if conn is None:
                await asyncio.sleep(0.05)
                continue
            async with conn:
                with contextlib.suppress(Disconnected, asyncio.TimeoutError):
                    await call_counted(conn, sub, p.Guest)

    flooders = [asyncio.create_task(flooder()) for _ in range(params["clients"])]
    await asyncio.sleep(1.0)
    ready()
    await asyncio.gather(*flooders)
    for name, spread in phases.items():
        sub = Tally()
        spread.into(sub)
        tally.add(sub)
        tally.extra[name] = sub.as_dict()


# -- connections ------------------------------------------------------------------------------
async def hold_connections(nodes: Nodes, count: int, sources: Callable[[int], str],
                           tally: Tally, ready: Ready, seconds: float, *,
                           handshake: bool, open_all: bool = False) -> list[RawSocket]:
    """Open ``count`` connections (websocket handshakes completed or not; the i-th to
    ``nodes.port(i)``) with at most CONNECT_CONCURRENCY in flight, hold them until
    ``seconds`` from the start, and count how each attempt ended. ``open_all``: try every
    one even if that takes longer, then hold them 5 s more."""
    deadline = time.monotonic() + seconds
    limit = asyncio.Semaphore(CONNECT_CONCURRENCY)
    held: list[RawSocket] = []  # every connection made; the accepted ones are counted below
    accepted: list[RawSocket] = []
    watchers: list[asyncio.Task[str]] = []

    async def one(i: int) -> None:
        async with limit:
            if time.monotonic() > deadline and not open_all:
                return
            try:
                sock = await RawSocket.connect(nodes.port(i), sources(i))
            except (TimeoutError, OSError) as exc:
                tally.failed[close_reason(exc)] += 1
                return
            held.append(sock)
            if not handshake:
                sock.writer.write(b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                watchers.append(asyncio.create_task(sock.wait_closed_by_server()))
                tally.accepted += 1
                accepted.append(sock)
                return
            try:
                status = await sock.handshake(nodes.port(i))
            except (TimeoutError, OSError, asyncio.IncompleteReadError,
                    asyncio.LimitOverrunError, ValueError, IndexError) as exc:
                tally.failed[close_reason(exc)] += 1
                sock.end(close_reason(exc))
                return
            if status != 101:
                tally.refused[f"http_{status}"] += 1
                sock.end(f"http_{status}")
                return
            tally.accepted += 1
            accepted.append(sock)
            watchers.append(asyncio.create_task(sock.idle()))

    t0 = time.monotonic()
    await asyncio.gather(*(one(i) for i in range(count)))
    tally.extra["opening_s"] = round(time.monotonic() - t0, 2)
    tally.extra["open_at_ready"] = sum(1 for s in accepted if s.ended is None)
    ready()
    if open_all:
        deadline = max(deadline, time.monotonic() + 5.0)
    if not handshake:  # a slowloris sends one more header byte now and then
        while time.monotonic() < deadline:
            await asyncio.sleep(min(2.0, max(0.0, deadline - time.monotonic())))
            for s in held:
                if s.ended is None:
                    with contextlib.suppress(Exception):
                        s.writer.write(b"X")
    await until(deadline)
    ended = [s for s in accepted if s.ended is not None]
    tally.extra["open_at_end"] = len(accepted) - len(ended)
    for s in ended:
        tally.closed[s.ended or "eof"] += 1
    lifetimes = sorted(s.lifetime for s in ended if s.lifetime is not None)
    if lifetimes:
        tally.extra["closed_after_s"] = {
            "min": round(lifetimes[0], 2), "p50": round(lifetimes[len(lifetimes) // 2], 2),
            "max": round(lifetimes[-1], 2)}
    for w in watchers:
        w.cancel()
    return held


async def idle_connections(nodes: Nodes, params: dict[str, Any], tally: Tally, ready: Ready
                           ) -> None:
    """Thousands of websockets from one address that complete the handshake, answer pings
    and never send ``hello``."""
    tally.extra["own_open_files_limit"] = sock_count_limit()
    held = await hold_connections(nodes, params["connections"], lambda i: ATTACKER, tally,
                                  ready, params["seconds"], handshake=True)
    for s in held:
        s.close()


async def fd_exhaustion(nodes: Nodes, params: dict[str, Any], tally: Tally, ready: Ready
                        ) -> None:
    """As many idle websockets as this process can open (its open-files limit raised to
    the hard limit), spread over many loopback addresses so that a per-address cap does
    not stop them first."""
    own = sock_count_limit()
    count = min(params["connections"], own - 100)
    per = max(1, params["per_address"])
    offset = params.get("offset", 0)
    tally.extra["own_open_files_limit"] = own
    held = await hold_connections(nodes, count, lambda i: spread_address(offset + i // per),
                                  tally, ready, params["seconds"], handshake=True,
                                  open_all=True)
    for s in held:
        s.close()


async def slowloris(nodes: Nodes, params: dict[str, Any], tally: Tally, ready: Ready) -> None:
    """Connections that send half an HTTP handshake and a byte now and then, never the
    end of the headers."""
    tally.extra["own_open_files_limit"] = sock_count_limit()
    held = await hold_connections(nodes, params["connections"], lambda i: ATTACKER, tally,
                                  ready, params["seconds"], handshake=False)
    for s in held:
        s.close()


# -- lobby and challenges ---------------------------------------------------------------------
async def guests(nodes: Nodes, count: int, tally: Tally, deadline: float,
                 then: Callable[[int, Connection], Awaitable[None]] | None = None
                 ) -> list[Connection]:
    """Up to ``count`` connections logged in as guests, from many addresses, to the nodes
    in turn, until ``deadline``; each one then does ``then`` (its number, its connection)."""
    limit = asyncio.Semaphore(32)
    out: list[Connection] = []

    async def one(i: int) -> None:
        async with limit:
            if time.monotonic() > deadline:
                return
            conn = await open_conn(nodes.port(i), spread_address(i), tally)
            if conn is None:
                return
            try:
                await conn.call(p.Guest)
            except ServerError as exc:
                tally.refused[f"guest:{exc.code}"] += 1
                await conn.close()
                return
            except (Disconnected, ConnectionClosed):
                tally.closed[closed_code(conn)] += 1
                return
            tally.extra["guests"] = tally.extra.get("guests", 0) + 1
            out.append(conn)
        if then is not None:
            await then(i, conn)

    await asyncio.gather(*(one(i) for i in range(count)))
    return out


async def unpairable_seeks(conn: Connection, k: int, count: int, deadline: float,
                           tally: Tally) -> None:
    """Guest ``k`` opens ``count`` seeks nobody can pair with (each its own clock)."""
    for j in range(count):
        if time.monotonic() > deadline:
            return
        base_ms = 60_000 + (k * count + j) * 1000
        with contextlib.suppress(Disconnected, asyncio.TimeoutError):
            await call_counted(conn, tally, p.Seek, game="hadron", options={"size": 5},
                               clock=p.Fischer(base_ms=base_ms, increment_ms=0))


async def lobby_poison(nodes: Nodes, params: dict[str, Any], tally: Tally, ready: Ready) -> None:
    """Many guests each opening several seeks that nobody can pair with (every one with a
    different clock), then a newcomer asks for the lobby."""
    deadline = time.monotonic() + params["seconds"]

    async def seeks(k: int, conn: Connection) -> None:
        await unpairable_seeks(conn, k, params["seeks"], deadline, tally)

    conns = await guests(nodes, params["clients"], tally, deadline, then=seeks)
    tally.extra["seeks_open"] = tally.accepted
    ready()
    newcomer = await open_conn(nodes.port(-1), spread_address(60_000), Tally())
    if newcomer is not None:
        async with newcomer:
            try:
                await newcomer.call(p.Guest)
                lobby = await newcomer.call(p.LobbySubscribe)
                assert isinstance(lobby, p.Lobby)
                tally.extra["lobby_subscribe"] = {"ok": True, "seeks_listed": len(lobby.seeks),
                                                  "players_listed": len(lobby.players)}
            except ServerError as exc:
                tally.extra["lobby_subscribe"] = {"ok": False, "code": exc.code,
                                                  "message": exc.message[:200]}
            except (Disconnected, ConnectionClosed) as exc:
                tally.extra["lobby_subscribe"] = {"ok": False, "code": close_reason(exc)}
    await until(deadline)
    for conn in conns:
        if conn.closed.is_set():
            tally.closed[closed_code(conn)] += 1
        await conn.close()


async def challenge_flood(nodes: Nodes, params: dict[str, Any], tally: Tally, ready: Ready
                          ) -> None:
    """Many guests challenging the bot as fast as they can, with a clock the bot does not
    accept (so each challenge costs it a decline)."""
    deadline = time.monotonic() + params["seconds"]
    conns = await guests(nodes, params["clients"], tally, deadline)
    ended: dict[str, int] = {}

    async def challenger(conn: Connection) -> None:
        async def body() -> None:
            await call_counted(conn, tally, p.Challenge, to=params["bot"], game="hadron",
                               options={"size": 5}, clock=p.Correspondence(days_per_move=3))
            while not conn.events.empty():
                event = conn.events.get_nowait()
                if isinstance(event, p.ChallengeEnded):
                    ended[event.reason] = ended.get(event.reason, 0) + 1
                elif event is None:
                    raise Disconnected("closed")

        await forever_until(deadline, body, tally)

    ready()
    await asyncio.gather(*(challenger(c) for c in conns))
    tally.extra["challenges_ended"] = ended
    for conn in conns:
        if conn.closed.is_set():
            tally.closed[closed_code(conn)] += 1
        await conn.close()


async def lobby_spam(nodes: Nodes, params: dict[str, Any], tally: Tally, ready: Ready) -> None:
    """Issue 24's lobby attack: ``guests`` guests open ``seeks`` seeks each that nobody
    can pair with (up to the server's caps), while ``askers`` clients, each from an
    address of its own, ask for the lobby over and over (``lobby_subscribe``, then up to
    ``pages`` more pages with ``lobby_page``) without waiting when refused. Every lobby
    request's answer is counted (``lobby``: replies by kind and their bytes; refusals by
    code), apart from the seeks'."""
    deadline = time.monotonic() + params["seconds"]
    lobby = Tally()
    sizes: list[int] = []

    async def seeks(k: int, conn: Connection) -> None:
        await unpairable_seeks(conn, k, params["seeks"], deadline, tally)

    async def ask(conn: Connection, kind: type[Any], **fields: Any) -> p.Lobby | None:
        reply = await call_counted(conn, lobby, kind, **fields)
        if isinstance(reply, p.Lobby):
            sizes.append(len(p.encode(reply)))
            return reply
        return None

    async def asker(k: int) -> None:
        conn = await open_conn(nodes.port(k), spread_address(50_000 + k), lobby)
        if conn is None:
            return
        async with conn:
            async def body() -> None:
                page = await ask(conn, p.LobbySubscribe)
                for _ in range(params["pages"]):
                    if page is None or page.next_cursor is None:
                        break
                    page = await ask(conn, p.LobbyPage, cursor=page.next_cursor)
                while not conn.events.empty():  # the lobby's events: not needed, not kept
                    if conn.events.get_nowait() is None:
                        raise Disconnected("closed")

            await forever_until(deadline, body, lobby)
            if conn.closed.is_set():
                lobby.closed[closed_code(conn)] += 1

    askers = [asyncio.create_task(asker(k)) for k in range(params["askers"])]
    ready()
    conns = await guests(nodes, params["guests"], tally, deadline, then=seeks)
    tally.extra["seeks_open"] = tally.accepted
    await asyncio.gather(*askers)
    for conn in conns:
        if conn.closed.is_set():
            tally.closed[closed_code(conn)] += 1
        await conn.close()
    tally.extra["lobby"] = {**lobby.as_dict(), "bytes": sum(sizes),
                            "largest": max(sizes, default=0)}


async def connection_wave(nodes: Nodes, params: dict[str, Any], tally: Tally, ready: Ready
                          ) -> None:
    """Issue 24's wave: ``connections`` websockets opened at an even pace over
    ``seconds``, ``per_address`` from each of many loopback addresses (below the
    per-address cap), each completing its handshake and then saying nothing, never
    ``hello``; the attack lasts until the server has closed every one it admitted (its
    hello deadline: 4408) or ``close_within_s`` after the wave. How each attempt was
    answered and how each admitted connection was closed are counted."""
    tally.extra["own_open_files_limit"] = own = sock_count_limit()
    count = min(params["connections"], own - 100)
    per = max(1, params["per_address"])
    pace = params["seconds"] / max(1, count)
    t0 = time.monotonic()
    admitted: list[RawSocket] = []
    watchers: list[asyncio.Task[str]] = []

    async def one(i: int) -> None:
        await asyncio.sleep(max(0.0, t0 + i * pace - time.monotonic()))
        try:
            sock = await RawSocket.connect(nodes.port(i), spread_address(i // per))
        except (TimeoutError, OSError) as exc:
            tally.failed[close_reason(exc)] += 1
            return
        try:
            status = await sock.handshake(nodes.port(i))
        except (TimeoutError, OSError, asyncio.IncompleteReadError,
                asyncio.LimitOverrunError, ValueError, IndexError) as exc:
            tally.failed[close_reason(exc)] += 1
            sock.close()
            return
        if status != 101:
            tally.refused[f"http_{status}"] += 1
            sock.close()
            return
        tally.accepted += 1
        admitted.append(sock)
        watchers.append(asyncio.create_task(sock.idle()))

    wave = asyncio.gather(*(one(i) for i in range(count)))
    await asyncio.sleep(min(1.0, params["seconds"]))
    ready()  # the owner logs in while the wave comes in
    await wave
    tally.extra["opening_s"] = round(time.monotonic() - t0, 2)
    tally.extra["open_at_end_of_wave"] = sum(1 for s in admitted if s.ended is None)
    if watchers:
        await asyncio.wait(watchers, timeout=params["close_within_s"])
    for s in admitted:
        tally.closed[s.ended or "still_open"] += 1
        s.close()
    lifetimes = sorted(s.lifetime for s in admitted if s.lifetime is not None)
    if lifetimes:
        tally.extra["closed_after_s"] = {
            "min": round(lifetimes[0], 2), "p50": round(lifetimes[len(lifetimes) // 2], 2),
            "max": round(lifetimes[-1], 2)}
    for w in watchers:
        w.cancel()


# -- requests and frames ----------------------------------------------------------------------
async def request_flood(nodes: Nodes, params: dict[str, Any], tally: Tally, ready: Ready
                        ) -> None:
    """One guest sending requests (ping, list_games, get_board) as fast as it can, on a
    connection to each node (one budget per account over them all): on each, an opening
    volley of twice the burst its welcome announced, all in flight at once (so the budget
    is overrun however slow the round trip), then ``window`` in flight."""
    deadline = time.monotonic() + params["seconds"]
    conns: list[Connection] = []
    token: str | None = None
    for port in nodes.ports:
        conn = await open_conn(port, ATTACKER, tally)
        if conn is None:
            continue
        authed = await (conn.call(p.AuthToken, token=token) if token else conn.call(p.Guest))
        assert isinstance(authed, p.Authed)
        token = authed.session_token
        conns.append(conn)
    kinds: list[tuple[type[Any], dict[str, Any]]] = [
        (p.Ping, {}), (p.ListGames, {"limit": 50}),
        (p.GetBoard, {"game": "xodd", "options": {"size": 13}})]
    ready()

    async def flood(conn: Connection) -> int:
        """Requests on one connection until the deadline; how many were sent."""
        limits = conn.welcome.limits if conn.welcome else None
        volley = 2 * limits.burst if limits else params["window"]
        window = asyncio.Semaphore(params["window"] + volley)
        n = 0

        async def one(kind: type[Any], fields: dict[str, Any]) -> None:
            try:
                await call_counted(conn, tally, kind, **fields)
            except (TimeoutError, Disconnected) as exc:
                tally.failed[close_reason(exc)] += 1
            finally:
                window.release()

        pending: set[asyncio.Task[None]] = set()
        while time.monotonic() < deadline and not conn.closed.is_set():
            await window.acquire()
            kind, fields = kinds[n % len(kinds)]
            n += 1
            task = asyncio.create_task(one(kind, fields))
            pending.add(task)
            task.add_done_callback(pending.discard)
            if n == volley:  # the volley is out: from now on ``window`` in flight
                for _ in range(volley):
                    await window.acquire()
        await asyncio.gather(*pending, return_exceptions=True)
        if conn.closed.is_set():
            tally.closed[closed_code(conn)] += 1
        await conn.close()
        return n

    tally.extra["sent"] = sum(await asyncio.gather(*(flood(conn) for conn in conns)))


BAD_NUMBERS: list[Any] = [math.nan, math.inf, -math.inf, 1e308, 2**64 - 1, -(2**63), -1,
                          2**31]


def mutated(message: p.ClientMessage) -> list[bytes]:
    """``message`` with each numeric field replaced by each hostile number, and each
    string field by invalid UTF-8."""
    base = msgpack.unpackb(p.encode(message))
    out: list[bytes] = []

    def walk(node: Any, path: tuple[Any, ...]) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, (*path, k))
        elif isinstance(node, int | float) and not isinstance(node, bool):
            for bad in BAD_NUMBERS:
                out.append(msgpack.packb(replaced(base, path, bad)))
        elif isinstance(node, str) and path != ("t",):
            marker = "\x00" * max(2, len(node))
            packed = msgpack.packb(replaced(base, path, marker))
            out.append(packed.replace(marker.encode(), b"\xff\xfe" * (len(marker) // 2)
                                      + b"\xc3" * (len(marker) % 2), 1))

    walk(base, ())
    return out


def replaced(tree: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    copy: dict[str, Any] = json.loads(json.dumps(tree))
    node = copy
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return copy


def bombs_list() -> list[tuple[str, bytes]]:
    """(kind, payload) of every hostile frame payload sent after logging in."""
    out: list[tuple[str, bytes]] = [
        ("deep_array", b"\x91" * 16_383 + b"\xc0"),
        ("deep_map", b"\x81\xa1a" * 5_000 + b"\xc0"),
        ("str32_4GiB", b"\x82\xa1t\xa4ping\xa2id\xdb\xff\xff\xff\xff" + b"x" * 16),
        ("bin32_4GiB", b"\x82\xa1t\xa4ping\xa2id\xc6\xff\xff\xff\xff" + b"x" * 16),
        ("array32_4G", b"\xdd\xff\xff\xff\xff\xc0"),
        ("map32_4G", b"\xdf\xff\xff\xff\xff\xa1t\xc0"),
        ("ext_type", b"\x82\xa1t\xa4ping\xa2id\xd4\x01\x00"),
        ("int_keys", b"\x82\x01\xa4ping\x02\x01"),
        ("truncated", p.encode(p.Ping(id=9))[:-1]),
        ("trailing", p.encode(p.Ping(id=9)) + b"\xc0"),
        ("empty", b""),
        ("float_id", msgpack.packb({"t": "ping", "id": 1.5})),
        ("bool_id", msgpack.packb({"t": "ping", "id": True})),
        ("unknown_tag", msgpack.packb({"t": "pong", "id": 1})),
    ]
    messages: list[p.ClientMessage] = [
        p.Ping(id=7),
        p.Move(id=7, game_id="k3v9q2x7ma", ply=3, move="a1"),
        p.ListGames(id=7, limit=10),
        p.Resume(id=7, game_id="k3v9q2x7ma", since_seq=5),
        p.Seek(id=7, game="hadron", options={"size": 5},
               clock=p.Fischer(base_ms=60_000, increment_ms=1_000)),
        p.Challenge(id=7, to="nobody", game="xodd", options={"size": 9},
                    clock=p.PerMove(per_move_ms=30_000)),
        p.GetPosition(id=7, game_id="k3v9q2x7ma", ply=2),
    ]
    for message in messages:
        out.extend((f"mutated_{message.TAG}", b) for b in mutated(message))
    return out


async def bombs(nodes: Nodes, params: dict[str, Any], tally: Tally, ready: Ready) -> None:
    """Malformed frames on logged-in connections: every reply and close counted; a
    connection the server closes is replaced (by one to the next node). Then oversized
    frames and a frame header that announces a terabyte."""
    by_kind: dict[str, dict[str, int]] = {}
    conn: Connection | None = None
    token: str | None = None
    opened = iter(range(10**9))

    async def fresh() -> Connection | None:
        nonlocal token
        c = await open_conn(nodes.port(next(opened)), ATTACKER, tally)
        if c is None:
            return None
        try:
            authed = await (c.call(p.AuthToken, token=token) if token else c.call(p.Guest))
        except (ServerError, Disconnected):
            await c.close()
            return None
        assert isinstance(authed, p.Authed)
        token = authed.session_token
        return c

    deadline = time.monotonic() + params["seconds"]
    ready()
    sent = rounds = 0
    while rounds == 0 or time.monotonic() < deadline:
        rounds += 1
        for kind, payload in bombs_list():
            if conn is None or conn.closed.is_set():
                conn = await fresh()
                if conn is None:
                    continue
            record(tally, by_kind, kind, await send_bomb(conn, payload))
            sent += 1
        for kind, size in (("frame_20KiB", 20 * 1024), ("frame_1MiB", 1 << 20)):
            if (big := await fresh()) is not None:
                record(tally, by_kind, kind, await send_bomb(big, b"\x00" * size))
                sent += 1
                await big.close()
        if conn is not None and not conn.closed.is_set():
            record(tally, by_kind, "text_frame",
                   await send_bomb(conn, p.encode(p.Ping(id=3)), opcode_text=True))
            sent += 1
        record(tally, by_kind, "header_1TiB", await raw_bomb(nodes.port(rounds), 1 << 40))
        sent += 1
    if conn is not None:
        await conn.close()
    tally.extra["frames_sent"] = sent
    tally.extra["rounds"] = rounds
    tally.extra["by_kind"] = by_kind
    tally.extra["internal_errors"] = tally.refused.get(p.ErrorCode.INTERNAL_ERROR, 0)


async def send_bomb(conn: Connection, payload: bytes, opcode_text: bool = False) -> str:
    """Send one raw payload; the outcome: ``error:<code>``, ``close:<code>``, ``reply``."""
    before = conn.events.qsize()
    try:
        if opcode_text:
            await conn.ws.send(payload.decode("latin-1"))
        else:
            await conn.ws.send(payload)
    except ConnectionClosed:
        return f"close:{closed_code(conn)}"
    end = time.monotonic() + 3.0
    while time.monotonic() < end:
        if conn.events.qsize() > before:
            event = conn.events.get_nowait()
            if event is None:
                break
            if isinstance(event, p.ErrorReply):
                return f"error:{event.code}"
            return f"reply:{event.TAG}"
        if conn.closed.is_set():
            break
        await asyncio.sleep(0.01)
    if conn.closed.is_set():
        await conn.close()
        return f"close:{closed_code(conn)}"
    return "silence"


async def raw_bomb(port: int, announce: int) -> str:
    """A frame header announcing ``announce`` bytes, and only a few of them."""
    try:
        sock = await RawSocket.connect(port, ATTACKER)
        if await sock.handshake(port) != 101:
            return "refused"
        sock.writer.write(frame(b"\x00" * 16, announce=announce))
        how = await asyncio.wait_for(sock.idle(), 10)
        sock.close()
        return f"close:{how}"
    except (TimeoutError, OSError, asyncio.IncompleteReadError) as exc:
        return f"close:{close_reason(exc)}"


def record(tally: Tally, by_kind: dict[str, dict[str, int]], kind: str, outcome: str) -> None:
    what, _, code = outcome.partition(":")
    if what == "error":
        tally.refused[code] += 1
    elif what == "close":
        tally.closed[code] += 1
    else:
        tally.accepted += 1
    group = by_kind.setdefault(kind.split("_")[0] if kind.startswith("mutated") else kind, {})
    group[outcome] = group.get(outcome, 0) + 1


# -- a flooded inbox ---------------------------------------------------------------------------
INBOX_TARGET = ("inboxtarget", "inboxtarget-password-1", "127.0.0.20")  # name, password, from
INBOX_FRIEND = ("inboxfriend", "inboxfriend-password-1", "127.0.0.21")
REACH_TIMEOUT_S = 5.0  # a created challenge's challenge_received must reach its target by then
FRIEND_LATE_S = 30.0  # inbox-flood runs on at most this long for the friend's try under each choice


async def registered(port: int, account: tuple[str, str, str]) -> Connection:
    """A connection logged in as ``account`` (registered on first use), from its address."""
    name, password, source = account
    conn = await Connection.open(url(port), client="tessera-siege",
                                 local_addr=(source, 0), open_timeout=10)
    try:
        await conn.call(p.Register, username=name, password=password)
    except ServerError as exc:
        if exc.code != p.ErrorCode.NAME_TAKEN:
            raise
        await conn.call(p.Login, username=name, password=password)
    return conn


async def inbox_flood(nodes: Nodes, params: dict[str, Any], tally: Tally, ready: Ready
                      ) -> None:
    """Many guests, each from an address of its own, challenge one registered player as
    fast as the server lets them (the player declines them as they come), while a
    registered friend challenges the same player again and again (each challenge withdrawn
    once it has arrived). Halfway through (once the friend's first try is over), the player
    lets only registered players challenge them; the flood goes on until the friend has
    tried under that choice too (on a slow machine a try can outlast the attack's
    seconds). The friend's figures are what the server answered: each challenge created
    (``challenge_created``) and received by the player (``challenge_received`` with its
    id), or refused (by code), and the tries under each choice. On a cluster the player is
    on the first node and the friend on the second (each challenge crosses nodes), the
    guests on every node in turn."""
    start = time.monotonic()
    deadline = start + params["seconds"]
    target = await registered(nodes.port(0), INBOX_TARGET)
    friend = await registered(nodes.port(1), INBOX_FRIEND)
    arrived: dict[int, float] = {}  # challenge id -> when the player got it
    guest_sent = {"everyone": Tally(), "registered": Tally()}  # by the player's choice
    choice = {"now": "everyone"}

    async def inbox() -> None:
        """The player notes each challenge as it comes and declines the guests' (a decline
        is free), without waiting for the replies."""
        with contextlib.suppress(Disconnected, ConnectionClosed):
            while True:
                event = await target.next_event()
                if isinstance(event, p.ChallengeReceived):
                    arrived[event.challenge_id] = time.monotonic()
                    if event.from_.kind == "guest":
                        await target.send(p.DeclineChallenge(
                            id=target.pending.next_id(), challenge_id=event.challenge_id))

    reader = asyncio.create_task(inbox())
    # the flood's time starts once its guests are in (on a busy machine logging them in
    # can take the attack's whole time)
    conns = await guests(nodes, params["clients"], tally, deadline + FRIEND_LATE_S)
    start = time.monotonic()
    deadline = start + params["seconds"]

    async def flooder(conn: Connection) -> None:
        async def body() -> None:
            sub = guest_sent[choice["now"]]
            await call_counted(conn, sub, p.Challenge, to=INBOX_TARGET[0], game="hadron",
                               options={"size": 5}, clock=p.Fischer(base_ms=60_000,
                                                                    increment_ms=0))
            while not conn.events.empty():
                if conn.events.get_nowait() is None:
                    raise Disconnected("closed")

        await forever_until(deadline + FRIEND_LATE_S, body, tally, stop=friend_done)

    legit: dict[str, Any] = {"tries": 0, "created": 0, "reached": 0, "refused": {},
                             "reach_ms": [], "tries_while": {"everyone": 0, "registered": 0}}
    friend_done, first_try = asyncio.Event(), asyncio.Event()

    def friend_goes_on() -> bool:
        now = time.monotonic()
        tried_after: int = legit["tries_while"]["registered"]
        return now < deadline or (tried_after == 0 and now < deadline + FRIEND_LATE_S)

    async def befriend() -> None:
        try:
            while friend_goes_on():
                await befriend_once()
                first_try.set()
        finally:
            first_try.set()
            friend_done.set()

    async def befriend_once() -> None:
        legit["tries"] += 1
        legit["tries_while"][choice["now"]] += 1
        t0 = time.monotonic()
        try:
            created = await asyncio.wait_for(friend.call(
                p.Challenge, to=INBOX_TARGET[0], game="hadron", options={"size": 5},
                clock=p.Fischer(base_ms=300_000, increment_ms=3_000)), 30)
        except ServerError as exc:
            legit["refused"][exc.code] = legit["refused"].get(exc.code, 0) + 1
            await asyncio.sleep(params["interval"])
            return
        assert isinstance(created, p.ChallengeCreated)
        legit["created"] += 1
        cid = created.challenge_id
        while cid not in arrived and time.monotonic() - t0 < REACH_TIMEOUT_S:
            await asyncio.sleep(0.01)
        if cid in arrived:
            legit["reached"] += 1
            legit["reach_ms"].append(round((arrived[cid] - t0) * 1000, 1))
        with contextlib.suppress(ServerError):
            await asyncio.wait_for(friend.call(p.CancelChallenge, challenge_id=cid), 30)
        await asyncio.sleep(params["interval"])

    async def choose_later() -> None:
        await until(start + params["seconds"] / 2)
        await first_try.wait()
        await target.call(p.SetChallengePolicy, policy="registered")
        choice["now"] = "registered"

    ready()
    try:
        await asyncio.gather(befriend(), choose_later(), *(flooder(c) for c in conns))
    except (Disconnected, ConnectionClosed, TimeoutError) as exc:
        tally.failed[close_reason(exc)] += 1
    times = sorted(legit.pop("reach_ms"))
    legit["reach_ms_max"] = times[-1] if times else None
    tally.extra["legitimate"] = legit
    tally.extra["guests_while"] = {k: v.as_dict() for k, v in guest_sent.items()}
    for sub in guest_sent.values():
        tally.accepted += sub.accepted
        tally.refused.update(sub.refused)
    tally.extra["received_by_target"] = len(arrived)
    reader.cancel()
    for conn in [*conns, friend, target]:
        if conn.closed.is_set():
            tally.closed[closed_code(conn)] += 1
        await conn.close()


# -- hostile hellos ----------------------------------------------------------------------------
BAD_HELLO = ("error:bad_request", "4400")  # docs/PROTOCOL.md, section 1 and ``hello``
UNSUPPORTED = ("error:unsupported_version", "1008")


def bad_hellos() -> list[tuple[str, bytes, tuple[str, str]]]:
    """(kind, frame payload, the documented answer and close code) of ``hello``s no server
    may accept: not valid (``bad_request``, then 4400), or an int version it does not speak
    (``unsupported_version``, then 1008)."""
    def hello(**fields: Any) -> bytes:
        packed: bytes = msgpack.packb({"t": "hello", "id": 1, **fields})
        return packed

    return [
        ("version_nan", hello(version=math.nan), BAD_HELLO),
        ("version_inf", hello(version=math.inf), BAD_HELLO),
        ("version_-inf", hello(version=-math.inf), BAD_HELLO),
        ("version_1.0", hello(version=1.0), BAD_HELLO),
        ("version_str", hello(version="1"), BAD_HELLO),
        ("version_bool", hello(version=True), BAD_HELLO),
        ("version_nil", hello(version=None), BAD_HELLO),
        ("version_missing", hello(), BAD_HELLO),
        ("version_-1", hello(version=-1), UNSUPPORTED),
        ("version_2^64-1", hello(version=2**64 - 1), UNSUPPORTED),
        ("client_rlo", hello(version=1, client="siege\u202egnp.exe"), BAD_HELLO),
        ("client_rli", hello(version=1, client="\u2067siege\u2069"), BAD_HELLO),
        ("client_nul", hello(version=1, client="siege\x00"), BAD_HELLO),
        ("client_newline", hello(version=1, client="siege\n1.0"), BAD_HELLO),
        ("client_101_chars", hello(version=1, client="x" * 101), BAD_HELLO),
        ("client_int", hello(version=1, client=7), BAD_HELLO),
        ("id_nan", msgpack.packb({"t": "hello", "id": math.nan, "version": 1}), BAD_HELLO),
        ("extra_key", hello(version=1, admin=True), BAD_HELLO),
    ]


async def one_bad_hello(port: int, payload: bytes) -> tuple[str, str, float | None]:
    """Send one bad hello as a connection's first frame: the answer (``error:<code>`` or
    ``reply:<tag>``), how the connection ended (close code, ``eof``, or ``open`` if still
    open after 5 s) and the milliseconds from the hello to the close."""
    sock = await RawSocket.connect(port, ATTACKER)
    try:
        if await sock.handshake(port) != 101:
            return "refused", "http", None
        t0 = time.monotonic()
        sock.writer.write(frame(payload))
        answer = "none"
        try:
            async with asyncio.timeout(5.0):
                while True:
                    opcode, data = await sock.next_frame()
                    if opcode == 2 and answer == "none":
                        try:
                            message = p.decode_server(data)
                        except p.ProtocolError:
                            answer = "garbled"
                            continue
                        answer = (f"error:{message.code}" if isinstance(message, p.ErrorReply)
                                  else f"reply:{message.TAG}")
                    elif opcode == 8:
                        code = int.from_bytes(data[:2], "big") if len(data) >= 2 else 1005
                        return answer, str(code), round((time.monotonic() - t0) * 1000, 1)
        except TimeoutError:
            return answer, "open", None
        except (OSError, asyncio.IncompleteReadError) as exc:
            return answer, close_reason(exc), round((time.monotonic() - t0) * 1000, 1)
    finally:
        sock.close()


async def bad_hello(nodes: Nodes, params: dict[str, Any], tally: Tally, ready: Ready) -> None:
    """Connections whose first frame is a ``hello`` no server may accept (a version NaN,
    infinite, a float, a string; a client name with right-to-left controls, ...; each
    round of them to the next node), ``concurrency`` at a time, while a probe connection
    pings the server (the last node): each bad hello's
    answer, close code and time to the close, against what docs/PROTOCOL.md says it gets
    (``as_documented`` or ``otherwise``), and every probe's pong."""
    deadline = time.monotonic() + params["seconds"]
    hellos = bad_hellos()
    by_kind: dict[str, dict[str, int]] = {}
    close_ms: list[float] = []
    probe = {"pings": 0, "pongs": 0, "worst_ms": 0.0}
    verdicts: dict[str, Any] = {"as_documented": 0, "otherwise": 0}
    counter = iter(range(10**9))
    ready()

    async def sender() -> None:
        while time.monotonic() < deadline:
            i = next(counter)
            kind, payload, documented = hellos[i % len(hellos)]
            try:
                answer, closed, ms = await one_bad_hello(nodes.port(i // len(hellos)),
                                                         payload)
            except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError) as exc:
                tally.failed[close_reason(exc)] += 1
                continue
            if (answer, closed) == documented:
                verdicts["as_documented"] += 1
            else:
                verdicts["otherwise"] += 1
                verdicts.setdefault("examples", {})[kind] = f"{answer} close:{closed}"
            outcome = f"{answer} close:{closed}"
            group = by_kind.setdefault(kind, {})
            group[outcome] = group.get(outcome, 0) + 1
            what, _, code = answer.partition(":")
            if what == "error":
                tally.refused[code] += 1
            elif what == "reply":
                tally.accepted += 1  # a bad hello welcomed: the verdict fails
            tally.closed[closed] += 1
            if ms is not None:
                close_ms.append(ms)

    async def prober() -> None:
        conn = await open_conn(nodes.port(-1), spread_address(61_000), tally)
        if conn is None:
            return
        async with conn:
            while time.monotonic() < deadline:
                probe["pings"] += 1
                t0 = time.monotonic()
                with contextlib.suppress(ServerError, Disconnected, TimeoutError):
                    await asyncio.wait_for(conn.call(p.Ping), 5)
                    probe["pongs"] += 1
                    probe["worst_ms"] = max(probe["worst_ms"],
                                            round((time.monotonic() - t0) * 1000, 1))
                await asyncio.sleep(0.05)

    await asyncio.gather(prober(), *(sender() for _ in range(params["concurrency"])))
    close_ms.sort()
    tally.extra["sent"] = sum(sum(g.values()) for g in by_kind.values())
    tally.extra["by_kind"] = by_kind
    tally.extra["close_ms"] = {"n": len(close_ms),
                               "p99": close_ms[min(len(close_ms) - 1,
                                                   int(len(close_ms) * 0.99))]
                               if close_ms else None,
                               "max": close_ms[-1] if close_ms else None}
    tally.extra["probe"] = probe
    tally.extra["answers"] = verdicts


ATTACKS: dict[str, Attack] = {
    "lockout": lockout,
    "login-flood": login_flood,
    "idle-connections": idle_connections,
    "fd-exhaustion": fd_exhaustion,
    "slowloris": slowloris,
    "lobby-poison": lobby_poison,
    "challenge-flood": challenge_flood,
    "guest-flood": guest_flood,
    "request-flood": request_flood,
    "bombs": bombs,
    "lobby-spam": lobby_spam,
    "connection-wave": connection_wave,
    "inbox-flood": inbox_flood,
    "bad-hello": bad_hello,
}


async def run(name: str, ports: list[int], params: dict[str, Any]) -> dict[str, Any]:
    tally = Tally()
    started = time.monotonic()

    def ready() -> None:
        print("ready", flush=True)

    await ATTACKS[name](Nodes(ports), params, tally, ready)
    tally.extra["attack_s"] = round(time.monotonic() - started, 2)
    used = resource.getrusage(resource.RUSAGE_SELF)
    tally.extra["cpu_s"] = round(used.ru_utime + used.ru_stime, 2)  # the attacker's own
    return tally.as_dict()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    name, params = args[0], json.loads(args[2])
    ports = [int(port) for port in args[1].split(",")]
    result = asyncio.run(run(name, ports, params))
    print(json.dumps(result), flush=True)
    return 0



if __name__ == "__main__":
    sys.exit(main())
