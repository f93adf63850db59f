"""Accounts under siege (issue 16, issue 13 item 18): a stranger cannot lock the owner out,
fill the hash queue for long, or make guests without end; guests that never played go.

Clients connect from chosen loopback addresses (127.0.0.0/8: the client socket is bound to
the address), so each test plays a stranger and an owner from different addresses.
"""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import websockets
from sqlalchemy import text
from websockets.asyncio.server import ServerConnection
from websockets.server import ServerProtocol

import protocol as p
from clients.connection import Connection, ServerError
from server import memory
from server.accounts import HashQueueFull, Passwords
from server.guests import sweep_guests
from server.lockout import LOCKOUT_CEILING_S, Lockout
from server.ratelimit import BucketTable, address_key
from server.session import Session

from .conftest import PRODUCTION_HASHING, Live, Serve, both_topologies, one_backend
from .support import TIMEOUT, start_game

PASSWORD = "correct horse battery"


async def connect_from(live: Live, address: str, node: int = 0) -> Connection:
    """A connection from ``address`` (a loopback address), hello said; on a cluster to
    node ``node`` (modulo their number)."""
    ports = [running.port for running in live.nodes] or [live.running.port]
    url = f"ws://127.0.0.1:{ports[node % len(ports)]}/ws"
    ws = await websockets.connect(url, max_size=p.MAX_SERVER_FRAME_BYTES,
                                  compression=None, local_addr=(address, 0))
    conn = Connection(ws)
    live.clients.opened.append(conn)
    welcome = await asyncio.wait_for(conn.call(p.Hello, version=p.PROTOCOL_VERSION,
                                               client="tessera-e2e"), TIMEOUT)
    assert isinstance(welcome, p.Welcome)
    return conn


async def outcome(conn: Connection, kind: type[Any], **fields: Any) -> tuple[str, int | None]:
    """("authed", None), or the error's code and retry_after_ms."""
    try:
        reply = await asyncio.wait_for(conn.call(kind, **fields), TIMEOUT)
    except ServerError as exc:
        return exc.code, exc.retry_after_ms
    assert isinstance(reply, p.Authed), reply
    return "authed", None


# -- lockout -------------------------------------------------------------------------------------
@one_backend
async def test_a_stranger_cannot_lock_the_owner_out(serve: Serve) -> None:
    """30 wrong passwords sent at once from one address: the lock is decided after each
    hash, so only the first ``after`` count and the lock is the first one (not doubled 25
    times); the owner, from another address, logs in at once; the stranger's own address
    stays locked for no longer than that first lock, even sending the right password."""
    base_s = 30.0
    async with serve(login_lockout_after=5, login_lockout_base_s=base_s,
                     hash_queue=0) as live:  # no bound: all 30 are hashed
        owner = await connect_from(live, "127.0.0.1")
        assert (await outcome(owner, p.Register, username="Owner", password=PASSWORD)
                )[0] == "authed"
        await owner.call(p.Logout)
        strangers = [await connect_from(live, "127.0.0.2") for _ in range(30)]
        replies = await asyncio.gather(*(
            outcome(c, p.Login, username="Owner", password=f"guess {i}")
            for i, c in enumerate(strangers)))
        codes = [code for code, _ in replies]
        assert codes.count("invalid_credentials") == 5, codes  # counted: the first five
        assert codes.count("locked_out") == 25, codes  # hashed after the lock: not counted
        assert all(0 < wait <= base_s * 1000 + 1 for code, wait in replies
                   if code == "locked_out"), replies

        assert await outcome(owner, p.Login, username="Owner", password=PASSWORD) == (
            "authed", None)  # from an address that sent no wrong password: at once
        elsewhere = await connect_from(live, "127.0.0.3")
        assert (await outcome(elsewhere, p.Login, username="owner", password=PASSWORD)
                )[0] == "authed"

        # the stranger's address: locked, and attempts during the lock do not extend it
        waits = []
        for password in ("another guess", PASSWORD, "and another"):
            code, wait = await outcome(strangers[0], p.Login, username="Owner",
                                       password=password)
            assert code == "locked_out" and wait is not None
            waits.append(wait)
        assert waits == sorted(waits, reverse=True), waits  # counting down, never extended
        assert waits[0] <= base_s * 1000 + 1


@one_backend
async def test_no_lock_is_longer_than_15_minutes(serve: Serve) -> None:
    async with serve(login_lockout_after=1, login_lockout_base_s=86_400.0,
                     login_lockout_max_s=86_400.0) as live:
        owner = await connect_from(live, "127.0.0.1")
        await owner.call(p.Register, username="Owner", password=PASSWORD)
        stranger = await connect_from(live, "127.0.0.2")
        assert (await outcome(stranger, p.Login, username="Owner", password="guess")
                )[0] == "invalid_credentials"  # the failure that locks
        code, wait = await outcome(stranger, p.Login, username="Owner", password=PASSWORD)
        assert code == "locked_out" and wait is not None
        assert 0.9 * LOCKOUT_CEILING_S * 1000 < wait <= LOCKOUT_CEILING_S * 1000 + 1, wait


@one_backend
async def test_locks_double_up_to_the_longest(serve: Serve) -> None:
    """Each lock after the first is twice as long, up to ``login_lockout_max_s``."""
    base_s, max_s = 0.2, 0.3
    async with serve(login_lockout_after=2, login_lockout_base_s=base_s,
                     login_lockout_max_s=max_s) as live:
        await (await connect_from(live, "127.0.0.1")).call(
            p.Register, username="Owner", password=PASSWORD)
        stranger = await connect_from(live, "127.0.0.2")
        longest = []
        for round_ in range(3):
            for _ in range(2 if round_ == 0 else 1):
                assert (await outcome(stranger, p.Login, username="Owner", password="guess")
                        )[0] == "invalid_credentials"
            code, wait = await outcome(stranger, p.Login, username="Owner", password="x")
            assert code == "locked_out" and wait is not None
            longest.append(wait)
            await asyncio.sleep(wait / 1000 + 0.02)
        assert longest[0] <= base_s * 1000 + 1
        assert all(wait <= max_s * 1000 + 1 for wait in longest), longest
        assert (await outcome(stranger, p.Login, username="Owner", password=PASSWORD)
                )[0] == "authed"


def test_lockout_table_counts_after_the_fact_and_caps_and_forgets() -> None:
    lockout = Lockout(after=2, base_s=60.0, max_s=10_000.0)
    assert lockout.max_s == LOCKOUT_CEILING_S
    key = (1, "127.0.0.2")
    assert lockout.failed(key, now=0.0) == (True, 0.0)
    assert lockout.failed(key, now=1.0) == (True, 60.0)
    assert lockout.failed(key, now=2.0) == (False, 59.0)  # late: neither counted nor longer
    assert lockout.locked_for((1, "127.0.0.3"), now=2.0) == 0.0  # another address: free
    assert lockout.failed(key, now=61.0) == (True, 120.0)
    for moment in (181.0, 422.0, 903.0, 1804.0):
        counted, lock = lockout.failed(key, now=moment)
        assert counted and lock <= LOCKOUT_CEILING_S
    assert lock == LOCKOUT_CEILING_S
    other = (2, "127.0.0.9")
    lockout.failed(other, now=0.0)
    assert lockout.sweep(now=1804.0 + LOCKOUT_CEILING_S + 3600.0) == 2
    assert len(lockout) == 0


# -- the hash queue ------------------------------------------------------------------------------
@one_backend
async def test_a_full_hash_queue_refuses_at_once_and_a_later_login_gets_in(serve: Serve
                                                                           ) -> None:
    """Wrong logins for unknown names from many addresses fill a queue of 2 hashes: the
    rest are refused with rate_limited and a retry time, before the hashes admitted have
    finished; an unknown name still costs a hash (no enumeration by timing); afterwards the
    owner logs in."""
    async with serve(hash_queue=2, **PRODUCTION_HASHING) as live:
        owner = await connect_from(live, "127.0.0.1")
        await owner.call(p.Register, username="Owner", password=PASSWORD)
        await owner.call(p.Logout)
        strangers = [await connect_from(live, f"127.0.1.{i}") for i in range(1, 13)]
        finished: list[str] = []

        async def attempt(i: int, conn: Connection) -> tuple[str, int | None]:
            result = await outcome(conn, p.Login, username=f"nobody{i}", password="guess")
            finished.append(result[0])
            return result

        replies = await asyncio.gather(*(attempt(i, c) for i, c in enumerate(strangers)))
        codes = [code for code, _ in replies]
        assert set(codes) == {"invalid_credentials", "rate_limited"}, codes
        assert 1 <= codes.count("invalid_credentials") <= 4, codes
        assert all(wait is not None and wait > 0 for code, wait in replies
                   if code == "rate_limited")
        # refused at once: every refusal came before the last hash admitted had finished
        last_hashed = max(i for i, code in enumerate(finished) if code != "rate_limited")
        assert "rate_limited" not in finished[last_hashed + 1:], finished
        assert live.running.app.passwords.refused == codes.count("rate_limited")
        assert live.running.app.passwords.queued == 0
        assert await outcome(owner, p.Login, username="Owner", password=PASSWORD) == (
            "authed", None)


# -- per-address limits --------------------------------------------------------------------------
@both_topologies
async def test_guests_per_address_are_limited(serve: Serve) -> None:
    """One budget per address, on every node of a cluster alike."""
    async with serve(address_guests_per_hour=60, address_guest_burst=3) as live:
        crowded = [await connect_from(live, "127.0.2.1", node) for node in range(4)]
        results = [await outcome(c, p.Guest) for c in crowded]
        assert [code for code, _ in results] == ["authed"] * 3 + ["rate_limited"]
        wait = results[-1][1]
        assert wait is not None and 50_000 < wait <= 60_001, wait  # one a minute
        assert (await outcome(await connect_from(live, "127.0.2.2"), p.Guest))[0] == "authed"
        assert await live.running.app.store.count_users("guest") == 4


@both_topologies
async def test_logins_per_address_are_limited(serve: Serve) -> None:
    """One budget per address, on every node of a cluster alike (each attempt from the
    same address goes to the next node)."""
    async with serve(address_logins_per_minute=6, address_login_burst=3) as live:
        homes = [await connect_from(live, "127.0.3.1", node) for node in range(4)]
        assert (await outcome(homes[0], p.Register, username="Owner", password=PASSWORD)
                )[0] == "authed"  # a registration is a hash: it counts
        assert (await outcome(homes[1], p.Login, username="Owner", password="typo")
                )[0] == "invalid_credentials"
        assert (await outcome(homes[2], p.Login, username="Owner", password=PASSWORD)
                )[0] == "authed"
        code, wait = await outcome(homes[3], p.Login, username="Owner", password=PASSWORD)
        assert code == "rate_limited" and wait is not None and 5_000 < wait <= 10_001, wait
        away = await connect_from(live, "127.0.3.2")
        assert (await outcome(away, p.Login, username="Owner", password=PASSWORD)
                )[0] == "authed"


def test_address_keys() -> None:
    assert address_key("203.0.113.7") == "203.0.113.7"
    assert address_key("::ffff:203.0.113.7") == "203.0.113.7"
    assert address_key("2001:db8:1:2:3:4:5:6") == address_key("2001:db8:1:2:ff::1")
    assert address_key("2001:db8:1:2::1") != address_key("2001:db8:1:3::1")
    assert address_key("?") == "?"


def test_buckets_are_evicted_when_idle() -> None:
    """Per-account (and per-address) buckets go once they would be full again anyway:
    when the table grows (amortised), and on the server's periodic sweep."""
    table = BucketTable(rate=40.0, burst=80.0)
    for account in range(BucketTable.MIN_SWEEP):
        table.take(account, now=0.0)
    table.take("late", now=2.0)  # 80 / 40 = 2 s later: every bucket has refilled
    assert len(table) == 1  # the sweep on growth dropped the idle ones
    for account in range(5_000):
        table.take(account, now=10.0)
    assert table.sweep(now=10.01) == 0  # each owes a token for 1/40 s ("late" went)
    assert len(table) == 5_000
    assert table.sweep(now=10.03) == 5_000
    assert len(table) == 0


@one_backend
async def test_the_server_sweeps_idle_buckets(serve: Serve) -> None:
    async with serve(address_guests_per_hour=3600, address_guest_burst=50) as live:
        app = live.running.app
        players = [await live.clients.guest() for _ in range(5)]
        for player in players:
            await player.call(p.Ping)
        assert len(app.account_requests) == 5
        assert len(app.accounts.address_guests or ()) == 1
        later = time.monotonic() + 3600.0
        assert app.sweep_idle(now=later) >= 6
        assert len(app.account_requests) == 0 and len(app.accounts.address_guests or ()) == 0


async def test_a_guest_flood_leaves_nothing_held_once_its_connections_close(
        serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    """Guests from many addresses and refusals from one, every connection closed by its
    client right after its reply: the server holds no session, connection or lobby entry
    for any of them, freed by reference counting alone (the cyclic collector off), at once
    even for a refused one whose connection would stay unread for a minute (a rate-limited
    connection pauses; its pause ends when the client hangs up); the per-address guest
    buckets, one per address, go with the idle sweep (docs/RELIABILITY.md, section 8)."""
    monkeypatch.setattr("server.session.MAX_RATE_PAUSE_S", 60.0)
    async with serve(address_guests_per_hour=60, address_guest_burst=2) as live:
        app = live.running.app
        was_enabled = gc.isenabled()
        gc.collect()
        gc.disable()
        try:
            many = [await connect_from(live, f"127.0.4.{k}") for k in range(1, 21)]
            one = [await connect_from(live, "127.0.5.1") for _ in range(10)]
            got = [(await outcome(c, p.Guest))[0] for c in many + one]
            assert got == ["authed"] * 22 + ["rate_limited"] * 8
            for conn in many + one:
                await conn.close()
            for _ in range(int(TIMEOUT / 0.05)):
                if not app.sessions and not app.admission.held():
                    break
                await asyncio.sleep(0.05)
            assert len(app.sessions) == 0 and app.admission.held() == 0
            assert len(app.members) == 0 and app.topology.seeks.held() == 0 \
                and not app.admission.by_address
            await asyncio.sleep(0.1)  # the handlers' last callbacks
            held = [type(o).__name__ for o in gc.get_objects()  # type(): no weakproxy raises
                    if issubclass(type(o), (Session, ServerConnection, ServerProtocol))]
            assert not held, held
        finally:
            if was_enabled:
                gc.enable()
        assert len(app.accounts.address_guests or ()) == 21  # one bucket per address
        assert app.sweep_idle(now=time.monotonic() + 3600.0) >= 21
        assert len(app.accounts.address_guests or ()) == 0


# -- guests off the move path, and swept ------------------------------------------------------
async def test_guests_are_written_in_batches_outside_the_commit_queue(serve: Serve) -> None:
    async with serve() as live:
        app = live.running.app
        a, b = await live.clients.guest(), await live.clients.guest()
        game = await start_game(a, b, "hadron", {"size": 5})
        commits = app.metrics.commit_batch  # a sample per transaction of the commit queue

        def queue_commits() -> float:
            return sum(m.value for metric in commits.collect() for m in metric.samples
                       if m.name.endswith("_count"))

        before, batches = queue_commits(), app.guests.batches
        conns = [await live.clients.connect() for _ in range(40)]
        replies = await asyncio.gather(*(c.call(p.Guest) for c in conns))
        assert all(isinstance(r, p.Authed) for r in replies)
        assert len({r.user.name for r in replies}) == 40
        assert queue_commits() == before  # not one in the move commit queue
        assert app.guests.batches - batches < 40  # batched
        await game.play()  # moves go on
        for reply in replies[:3]:  # each guest's token works
            again = await live.clients.with_token(reply.session_token)
            assert again.name == reply.user.name


async def test_guests_that_never_played_are_swept(serve: Serve) -> None:
    async with serve(guest_ttl_s=0.3, guest_sweep_interval_s=0.1) as live:
        store = live.running.app.store
        a, b = await live.clients.guest(), await live.clients.guest()
        game = await start_game(a, b, "hadron", {"size": 5})
        await game.mover.call(p.Resign, game_id=game.game_id)
        c, d = await live.clients.guest(), await live.clients.guest()
        idle = await live.clients.connect()
        gone = await idle.call(p.Guest)
        await idle.close()

        async def users() -> set[str]:
            async with store.engine.connect() as conn:
                return {row[0] for row in await conn.execute(text("SELECT name FROM users"))}

        left = await until_gone(users, gone.user.name)
        assert gone.user.name not in left  # never played, not connected: swept
        assert {a.name, b.name, c.name, d.name} <= left  # played, or connected
        async with store.engine.connect() as conn:
            tokens = (await conn.execute(text(
                "SELECT count(*) FROM api_tokens t LEFT JOIN users u ON u.id = t.user_id "
                "WHERE u.id IS NULL"))).scalar_one()
        assert tokens == 0  # the swept guest's token went with it
        with pytest.raises(ServerError) as refused:
            await live.clients.with_token(gone.session_token)
        assert refused.value.code == "invalid_credentials"

        await c.close()  # once gone, c never played: swept as well; the players stay
        left = await until_gone(users, c.name)
        assert c.name not in left and {a.name, b.name, d.name} <= left


async def until_gone(users: Any, name: str) -> set[str]:
    """The user names once ``name`` is no longer among them (or after TIMEOUT)."""
    for _ in range(int(TIMEOUT / 0.05)):
        left: set[str] = await users()
        if name not in left:
            break
        await asyncio.sleep(0.05)
    return left


async def test_sweep_keeps_the_connected_and_deletes_in_chunks(serve: Serve) -> None:
    async with serve() as live:  # the server's own sweep waits a day: this one is ours
        store, app = live.running.app.store, live.running.app
        here = await live.clients.guest()
        conns = [await live.clients.connect() for _ in range(30)]
        await asyncio.gather(*(c.call(p.Guest) for c in conns))
        for conn in conns:
            await conn.close()
        for _ in range(int(TIMEOUT / 0.05)):  # until the server has seen them go
            if len(app.online_user_ids()) == 1:
                break
            await asyncio.sleep(0.05)
        assert await sweep_guests(store, 3600.0, app.online_user_ids()) == 0  # too recent
        assert await sweep_guests(store, 0.0, app.online_user_ids()) == 30
        assert await store.count_users("guest") == 1  # the one connected stays
        assert await store.get_user_by_name(here.name) is not None


# -- the shipped server and the admin command ------------------------------------------------
async def test_serve_flags_set_the_limits_and_admin_sweeps_guests(
        server_process: Any, database: Any, open_clients: Any) -> None:
    proc = server_process("--guests-per-hour", "1", "--guest-burst", "2", "--guest-ttl", "0")
    await proc.start()
    clients = open_clients(proc.url)
    made = [await clients.guest(), await clients.guest()]
    conn = await clients.connect()
    with pytest.raises(ServerError) as refused:
        await asyncio.wait_for(conn.call(p.Guest), TIMEOUT)
    assert refused.value.code == "rate_limited"
    assert refused.value.retry_after_ms is not None and refused.value.retry_after_ms > 60_000
    for player in made:
        await player.close()
    await proc.stopped()
    swept = subprocess.run([sys.executable, "-m", "server", "admin", "sweep-guests",
                            "--older-than", "0", "--db", database.url],
                           capture_output=True, text=True, timeout=60, check=False)
    assert swept.returncode == 0, swept.stderr
    assert swept.stdout.strip() == "deleted 2 of 2 guests"


def test_a_bucket_that_gave_one_token_goes_once_that_token_is_back() -> None:
    """Not after the time to refill a whole burst: an address that made one guest (20 a
    burst, one a minute) is forgotten a minute later, not twenty."""
    table = BucketTable(rate=1 / 60, burst=20)
    for address in range(2_000):
        table.take(address, now=0.0)
    table.take("busy", now=0.0)
    for _ in range(5):
        table.take("busy", now=30.0)
    assert table.sweep(now=59.0) == 0
    assert table.sweep(now=61.0) == 2_000  # "busy" owes 5 tokens: five minutes more
    assert len(table) == 1


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(memory._malloc_trim() is None, reason="glibc's malloc_trim only")
def test_freed_memory_goes_back_to_the_system() -> None:
    """What a flood left, once freed, is handed back: 100 MiB of small blocks freed
    around a few survivors (so malloc cannot shrink its heap by itself)."""
    blocks = [bytes(2000) + i.to_bytes(4, "little") for i in range(50_000)]
    survivors = blocks[::50]
    del blocks
    freed = _rss_mib()
    assert memory.give_back()
    assert _rss_mib() < freed - 50, (freed, _rss_mib())
    assert len(survivors) == 1_000


async def test_a_known_address_may_use_the_reserve_of_a_full_hash_queue() -> None:
    """Strangers fill the queue; a login from an (account, address) pair that logged in
    before still gets a hash, within the reserve; a stranger's is refused at once."""
    passwords = Passwords(threads=1, max_queued=1, reserve=1)
    try:
        stored = await passwords.hash(PASSWORD)
        running = asyncio.ensure_future(passwords.verify(None, "guess"))
        await asyncio.sleep(0)  # it has taken its place: the queue is full
        assert passwords.queued == 1
        with pytest.raises(HashQueueFull) as full:
            await passwords.verify(stored, PASSWORD)
        assert full.value.retry_after_s > 0
        assert await passwords.verify(stored, PASSWORD, priority=True)
        assert not await running
        assert passwords.refused == 1 and passwords.queued == 0
    finally:
        passwords.close()


@one_backend
async def test_the_owner_from_a_known_address_gets_through_a_login_flood(serve: Serve
                                                                         ) -> None:
    """The owner registered from 127.0.0.1; logins for unknown names from 24 addresses
    fill a queue of 2 again and again meanwhile; the owner's logins from 127.0.0.1 are
    hashed (within the reserve), not refused."""
    async with serve(hash_queue=2, **PRODUCTION_HASHING) as live:
        home = await connect_from(live, "127.0.0.1")
        await home.call(p.Register, username="Owner", password=PASSWORD)
        await home.call(p.Logout)
        strangers = [await connect_from(live, f"127.0.4.{i}") for i in range(1, 25)]
        stop = asyncio.Event()
        got: list[str] = []

        async def flood(i: int, conn: Connection) -> None:
            while not stop.is_set():
                got.append((await outcome(conn, p.Login, username=f"nobody{i}",
                                          password="guess"))[0])

        flooding = [asyncio.ensure_future(flood(i, c)) for i, c in enumerate(strangers)]
        try:
            owner = []
            while len(owner) < 3:
                if got.count("rate_limited") > len(owner) * 20:  # the queue is full again
                    owner.append(await outcome(home, p.Login, username="Owner",
                                               password=PASSWORD))
                    if owner[-1][0] == "authed":
                        await home.call(p.Logout)
                await asyncio.sleep(0.01)
        finally:
            stop.set()
            await asyncio.gather(*flooding)
        assert owner == [("authed", None)] * 3, owner
        assert "rate_limited" in got and "invalid_credentials" in got


async def test_a_priority_hash_goes_ahead_of_those_waiting() -> None:
    passwords = Passwords(threads=1)
    finished: list[str] = []
    try:
        stored = await passwords.hash(PASSWORD)

        async def check(label: str, priority: bool = False) -> None:
            await passwords.verify(stored, PASSWORD, priority=priority)
            finished.append(label)

        running = asyncio.ensure_future(check("running"))
        await asyncio.sleep(0)  # in the pool's one thread now
        waiting = [asyncio.ensure_future(check(f"stranger {i}")) for i in range(3)]
        await asyncio.sleep(0)
        assert passwords.running == 1 and passwords.queued == 4  # the strangers wait
        owner = asyncio.ensure_future(check("owner", priority=True))
        await asyncio.sleep(0)
        assert passwords.running == 2  # the owner's hash started at once, in its own lane
        await asyncio.gather(running, owner, *waiting)
        assert sorted(finished) == sorted(["running", "owner", "stranger 0", "stranger 1",
                                           "stranger 2"])
        assert [f for f in finished if f.startswith("stranger")] == [
            "stranger 0", "stranger 1", "stranger 2"]  # the others in their order
    finally:
        passwords.close()


async def test_guests_whose_games_were_all_aborted_are_swept_with_those_games(
        serve: Serve) -> None:
    """An aborted game is not a finished one: guests who only ever aborted are swept, and
    the aborted games (with their move and chat) with them; a guest who finished a game,
    and that game, stay."""
    async with serve() as live:
        app, store = live.running.app, live.running.app.store
        a = await live.clients.guest()
        b = await live.clients.guest()
        c = await live.clients.guest()
        aborted = await start_game(a, b, "hadron", {"size": 5})
        await aborted.play()  # one move, then a line of chat, then abort
        await a.call(p.Chat, game_id=aborted.game_id, text="oops")
        await a.call(p.Abort, game_id=aborted.game_id)
        finished = await start_game(b, c, "hadron", {"size": 5})
        await finished.mover.call(p.Resign, game_id=finished.game_id)
        for player in (a, b, c):
            await player.close()
        for _ in range(int(TIMEOUT / 0.05)):
            if not app.online_user_ids():
                break
            await asyncio.sleep(0.05)
        assert await sweep_guests(store, 0.0, app.online_user_ids()) == 1  # a only
        assert await store.get_user_by_name(a.name) is None
        assert await store.get_user_by_name(b.name) is not None  # b finished a game
        assert await store.get_game(aborted.game_id) is None
        assert await store.get_game(finished.game_id) is not None
        async with store.engine.connect() as conn:
            left = {table: (await conn.execute(text(
                f"SELECT count(*) FROM {table} WHERE game_id = :g"),
                {"g": aborted.game_id})).scalar_one() for table in ("moves", "chat")}
        assert left == {"moves": 0, "chat": 0}
