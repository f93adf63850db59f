"""Faults and abuse against a running server, each with nothing lost and nobody else harmed.

Every test injects one fault (a SIGTERM mid-play, hostile frames, oversized frames, a flood,
a client that stops reading, a peer that goes silent, a tampered database), checks what the
server did about it, and checks that another game went on unharmed. Figures (latencies,
memory, counts) are printed as ``FIGURES ...`` lines: ``pytest -s`` shows them, and
docs/RELIABILITY.md quotes them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import signal
import socket
import statistics
import struct
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import websockets
from sqlalchemy import text
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

import engine
import protocol as p
from clients.connection import Disconnected
from server.storage import make_engine
from tests.protocol.mutations import CODES, Mutator

from .conftest import Live, Serve, TestDatabase, one_backend
from .support import (
    REPO,
    TIMEOUT,
    Clients,
    Game,
    ServerProcess,
    assert_record_replays,
    pack,
    start_game,
)

UNLIMITED = 100_000.0  # a rate limit no test client reaches (the most welcome can announce)
NO_LIMITS = {"conn_rate": UNLIMITED, "conn_burst": UNLIMITED, "account_rate": UNLIMITED,
             "account_burst": UNLIMITED}


def figures(name: str, **values: object) -> None:
    print(f"FIGURES {name}: " + ", ".join(f"{k}={v}" for k, v in values.items()))


def ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


async def goes_on(game: Game, rng: random.Random) -> float:
    """The game takes one more (quiet) move; how long its ack took, in seconds."""
    started = time.perf_counter()
    await game.play_quiet_move(rng)
    return time.perf_counter() - started


async def until(condition: Callable[[], bool], timeout: float = TIMEOUT) -> None:
    """Wait until ``condition()`` holds (AssertionError after ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        await asyncio.sleep(0.01)


async def raw_connect(url: str, **kwargs: Any) -> ClientConnection:
    return await websockets.connect(url, max_size=p.MAX_SERVER_FRAME_BYTES, compression=None,
                                    **kwargs)


# -- SIGTERM during play ------------------------------------------------------------------------
SIGTERM_GAMES: list[tuple[str, dict[str, Any]]] = [
    ("hadron", {"size": 5}), ("xodd", {"size": 5}), ("hexifact", {})]


async def test_sigterm_during_play_closes_with_1001_loses_nothing_and_every_game_resumes(
        server_process: Callable[..., ServerProcess],
        open_clients: Callable[[str], Clients]) -> None:
    proc = server_process("--grace", "30")
    await proc.start()
    clients = open_clients(proc.url)
    games = [await start_game(await clients.guest(), await clients.guest(), key, options)
             for key, options in SIGTERM_GAMES]
    acked: dict[tuple[str, int], str] = {}  # (game, ply) -> move, as the acks said
    seen: Counter[str] = Counter()  # the highest seq each game's players were told

    async def keep_playing(game: Game) -> None:
        """Moves that do not end the game, as fast as the acks come, until the connection
        goes away (or no such move is left: then it waits for the end)."""
        rng = random.Random(game.game_id)
        with contextlib.suppress(Disconnected):
            while quiet := [m for m in game.state.legal_moves()
                            if not game.state.play(m).is_over]:
                move = str(rng.choice(quiet))
                ack = await game.play(move)
                acked[game.game_id, ack.ply] = move
                seen[game.game_id] = max(seen[game.game_id], ack.seq)
            await game.mover.conn.closed.wait()

    players = [asyncio.create_task(keep_playing(game)) for game in games]
    while len(acked) < 4 * len(games):  # every game under way, moves in flight
        await asyncio.sleep(0.01)
    sent = time.monotonic()
    assert await proc.stopped(signal.SIGTERM) == 0
    stopped_in = time.monotonic() - sent
    await asyncio.wait_for(asyncio.gather(*players), TIMEOUT)
    for game in games:
        for player in game.players:
            await asyncio.wait_for(player.conn.closed.wait(), TIMEOUT)
            assert player.conn.ws.close_code == p.CLOSE_GOING_AWAY, player.conn.ws.close_code
            for event in await player.drain(0):
                if getattr(event, "game_id", None) == game.game_id:
                    seen[game.game_id] = max(seen[game.game_id], event.seq)

    await proc.start()  # the same database
    clients = open_clients(proc.url)
    resumed_acks = 0
    for game in games:
        again = [await clients.with_token(player.token) for player in game.players]
        snapshots = []
        for player in again:
            assert game.game_id in player.authed.active_games
            reply = await player.call(p.Resume, game_id=game.game_id, since_seq=0)
            assert isinstance(reply, p.GameState)
            snapshots.append(reply.game)
        snapshot = snapshots[-1]
        assert snapshot.status in ("waiting", "playing") and snapshot.seq >= seen[game.game_id]
        moves = [m.move for m in snapshot.moves]
        for (game_id, ply), move in acked.items():  # every acknowledged move is there
            if game_id == game.game_id:
                assert moves[ply] == move, (game_id, ply)
        state = engine.replay(game.key, snapshot.options, moves)
        resumed = Game(game.game_id, game.key, game.options, (again[0], again[1]),
                       game.started, state)
        rng = random.Random(7)
        first = await resumed.play(rng=rng)
        assert first.seq > seen[game.game_id]  # no number is used twice
        while not resumed.state.is_over:
            await resumed.play(rng=rng)
            resumed_acks += 1
        record = await resumed.record()
        assert record.status == "over"
        assert_record_replays(record)
        stored = [m.move for m in record.moves]
        assert stored[:len(moves)] == moves
    figures("sigterm", games=len(games), acked_before=len(acked),
            shutdown_s=round(stopped_in, 2), moves_after_restart=resumed_acks + len(games))


# -- hostile frames on a live connection ---------------------------------------------------------
LIVE_FUZZ_FRAMES = 8000
LIVE_FUZZ_SEED = 7
BATCH = 20  # frames sent before waiting for the server to catch up (a ping's pong)
PING_ID = 2**31 - 2  # an id no mutation makes


@one_backend
async def test_fuzzed_frames_on_live_connections_get_only_documented_answers(
        serve: Serve, caplog: pytest.LogCaptureFixture) -> None:
    """Hostile frames from a logged-in connection, in batches, each batch followed by a ping
    (which also keeps the bad-frame count below its limit). A connection the server closes
    is replaced; the frames of the batch in flight when it closed are lost, and counted."""
    caplog.set_level(logging.WARNING)
    async with serve(**NO_LIMITS) as live:
        other = await start_game(await live.clients.guest(), await live.clients.guest(),
                                 "xodd", {"size": 7})
        rng = random.Random(1)
        frames = list(Mutator(LIVE_FUZZ_SEED).frames(LIVE_FUZZ_FRAMES))
        answers: Counter[str] = Counter()
        closes: Counter[int | None] = Counter()
        started = time.perf_counter()
        index = connections = unanswered = 0
        while index < len(frames):
            ws = await raw_connect(live.url)
            connections += 1
            pongs: asyncio.Queue[None] = asyncio.Queue()
            reader = asyncio.create_task(_read_answers(ws, answers, pongs))
            await ws.send(pack({"t": "hello", "id": 1, "version": 1}))
            await ws.send(pack({"t": "guest", "id": 2}))  # so that frames reach every handler
            try:
                while index < len(frames):
                    batch = frames[index:index + BATCH]
                    index += len(batch)
                    for frame in batch:
                        await ws.send(frame)
                    await ws.send(pack({"t": "ping", "id": PING_ID}))
                    if not await _caught_up(pongs, reader):
                        unanswered += len(batch)  # some of them, at most
                        break
                    if index % 1000 == 0:
                        await goes_on(other, rng)
                else:
                    await ws.close()
            except ConnectionClosed:
                unanswered += BATCH
            await asyncio.wait_for(reader, TIMEOUT)
            closes[ws.close_code] += 1
        took = time.perf_counter() - started

        tags = set(p.SERVER_MESSAGES)
        assert all(key in CODES or key in tags for key in answers), answers
        assert "internal_error" not in answers
        assert answers["bad_request"] > LIVE_FUZZ_FRAMES // 2
        # the server closes only as documented: a version it does not speak or too many bad
        # frames (1008), a frame over the size limit (1009); 1000 is our own close
        assert set(closes) <= {p.CLOSE_NORMAL, p.CLOSE_POLICY_VIOLATION, p.CLOSE_TOO_BIG}
        conn = await live.clients.connect()  # the server is up and well
        assert isinstance(await conn.call(p.Ping), p.Pong)
        await goes_on(other, rng)
    failures = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not failures, [r.getMessage() for r in failures]
    figures("live_fuzz", frames=LIVE_FUZZ_FRAMES, seconds=round(took, 2),
            connections=connections, closes=dict(closes), lost_in_closes_at_most=unanswered,
            answers=dict(answers.most_common()))


async def _read_answers(ws: ClientConnection, answers: Counter[str],
                        pongs: asyncio.Queue[None]) -> None:
    """Count what the server sends; every frame must be a valid, documented message."""
    with contextlib.suppress(ConnectionClosed):
        async for frame in ws:
            assert isinstance(frame, bytes), frame
            message = p.decode_server(frame)  # strict: a server frame out of spec fails
            if isinstance(message, p.ErrorReply):
                assert message.code in CODES and message.code != "internal_error", message
                answers[message.code] += 1
            elif isinstance(message, p.Pong) and message.id == PING_ID:
                pongs.put_nowait(None)
            else:
                answers[message.TAG] += 1


async def _caught_up(pongs: asyncio.Queue[None], reader: asyncio.Task[None]) -> bool:
    """True once the batch's ping is answered; False if the connection closed first."""
    pong = asyncio.ensure_future(pongs.get())
    done, _ = await asyncio.wait({pong, reader}, timeout=TIMEOUT,
                                 return_when=asyncio.FIRST_COMPLETED)
    if pong in done:
        return True
    pong.cancel()
    assert reader in done, "the server stopped answering"
    return False


# -- oversized frames ---------------------------------------------------------------------------
def rss_kib(pid: int, field: str = "VmRSS") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for process {pid}")


def reset_peak_rss(pid: int) -> bool:
    """Reset the process's peak RSS (VmHWM) to its current RSS; False if not allowed."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def frame_header(length: int) -> bytes:
    """A masked binary frame's header announcing ``length`` bytes of payload."""
    return b"\x82\xff" + struct.pack("!Q", length) + b"\x00\x00\x00\x00"


async def _send_oversized(url: str, size: int, *, announce_only: bool) -> int | None:
    """Send one frame of ``size`` bytes (or only a header announcing it); the close code."""
    ws = await raw_connect(url)
    with contextlib.suppress(ConnectionClosed, OSError):
        if announce_only:
            ws.transport.write(frame_header(size) + b"\x00" * 1024)
        else:
            await ws.send(b"\x00" * size)
        await asyncio.wait_for(ws.recv(), TIMEOUT)
    await asyncio.wait_for(ws.wait_closed(), TIMEOUT)
    return ws.close_code


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc for memory")
@one_backend
async def test_oversized_frames_are_refused_with_1009_in_bounded_memory(
        server_process: Callable[..., ServerProcess],
        open_clients: Callable[[str], Clients]) -> None:
    proc = server_process()
    await proc.start()
    assert proc.proc is not None
    pid = proc.proc.pid
    clients = open_clients(proc.url)
    other = await start_game(await clients.guest(), await clients.guest(), "xodd", {"size": 7})
    rng = random.Random(2)
    for announce_only in (True, False):  # warm up every code path first
        assert await _send_oversized(proc.url, 64 * 1024, announce_only=announce_only) == \
            p.CLOSE_TOO_BIG
    baseline = rss_kib(pid)
    peak_reset = reset_peak_rss(pid)  # else the peak is startup's (argon2 takes 64 MiB)
    real, announced = 4 * 2**20, 2**40
    sizes = [real] * 4 + [announced] * 4  # 16 MiB sent at once, and 4 TiB announced
    rounds = 4
    codes: Counter[int | None] = Counter()
    samples = []
    for _ in range(rounds):
        got = await asyncio.gather(*(_send_oversized(proc.url, size,
                                                     announce_only=size == announced)
                                     for size in sizes))
        codes.update(got)
        samples.append(rss_kib(pid))
        await goes_on(other, rng)
    # the kernel's high-water mark since the reset: whatever came between the samples
    peak = rss_kib(pid, "VmHWM") if peak_reset else max(samples)
    offered_mib = rounds * sum(size for size in sizes if size == real) // 2**20
    figures("oversized", frames=rounds * len(sizes), offered_mib=offered_mib,
            announced_tib=rounds * 4 * announced // 2**40, close_codes=dict(codes),
            rss_baseline_mib=baseline // 1024,
            rss_last_mib=samples[-1] // 1024, rss_peak_mib=peak // 1024,
            peak_is_kernel_high_water_mark=peak_reset)
    assert codes == {p.CLOSE_TOO_BIG: rounds * len(sizes)}
    assert samples[-1] - baseline < 8 * 1024  # KiB: what was sent is not kept ...
    assert peak - baseline < 8 * 1024  # ... nor ever held: 16 MiB came at once, every round
    assert proc.proc.poll() is None
    assert isinstance(await other.players[0].call(p.Ping), p.Pong)


# -- floods -------------------------------------------------------------------------------------
FLOOD_S = 2.0


@one_backend
async def test_a_flood_at_ten_times_the_rate_is_refused_while_another_game_plays(
        server: Live, clients: Clients) -> None:
    rate, burst = server.settings.conn_rate, server.settings.conn_burst
    other = await start_game(await clients.guest(), await clients.guest(), "xodd", {"size": 7})
    rng = random.Random(3)
    before = [await goes_on(other, rng) for _ in range(6)]  # the game's normal pace

    ws = await raw_connect(server.url)
    replies: dict[int, list[p.ServerMessage]] = {}

    async def read() -> None:
        with contextlib.suppress(ConnectionClosed):
            async for frame in ws:
                assert isinstance(frame, bytes)
                message = p.decode_server(frame)
                reply_id = getattr(message, "id", None)
                assert reply_id is not None, message  # every refusal carries its id
                replies.setdefault(reply_id, []).append(message)

    reader = asyncio.create_task(read())
    await ws.send(pack({"t": "hello", "id": 1, "version": 1}))
    sent = [1]
    flooding = asyncio.Event()
    flooding.set()

    began = time.monotonic()

    async def flood() -> float:
        started = time.monotonic()
        while (elapsed := time.monotonic() - started) < FLOOD_S:
            while len(sent) < 1 + int(elapsed * 10 * rate) + 1:
                request_id = 1000 + len(sent)
                await ws.send(pack({"t": "ping", "id": request_id}))
                sent.append(request_id)
            await asyncio.sleep(0.005)
        flooding.clear()
        return time.monotonic() - started

    async def play() -> list[float]:
        latencies = []
        while flooding.is_set():
            latencies.append(await goes_on(other, rng))
            await asyncio.sleep(0.1)  # a person's pace: ten moves a second between the two
        return latencies

    flood_s, during = await asyncio.gather(flood(), play())
    await until(lambda: len(replies) == len(sent))
    budget = burst + rate * (time.monotonic() - began) + 1  # tokens while it was answering
    assert all(len(answers) == 1 for answers in replies.values())  # exactly one reply each
    pongs = [r for [r] in replies.values() if isinstance(r, p.Pong)]
    limited = [r for [r] in replies.values() if isinstance(r, p.ErrorReply)]
    assert len(pongs) + len(limited) + 1 == len(sent)  # the hello's welcome
    assert all(r.code == "rate_limited" and r.retry_after_ms is not None
               and 0 < r.retry_after_ms <= 1000 / rate + 1 for r in limited)
    assert len(pongs) <= budget  # no more than the budget: the rest was refused
    await asyncio.sleep(max(r.retry_after_ms or 0 for r in limited) / 1000)
    await ws.send(pack({"t": "ping", "id": 99}))  # after waiting, the flooder is served again
    await until(lambda: 99 in replies)
    assert isinstance(replies[99][0], p.Pong)
    await ws.close()
    await reader

    p50 = statistics.median(during)
    figures("flood", rate_per_s=rate, sent=len(sent) - 1, sent_per_s=round(
        (len(sent) - 1) / flood_s), served=len(pongs), rate_limited=len(limited),
        other_moves=len(during), other_ack_p50_ms_before=ms(statistics.median(before)),
        other_ack_p50_ms=ms(p50), other_ack_max_ms=ms(max(during)))
    assert len(during) >= 5
    assert max(during) < 2.0  # generous: the other game was not held up


async def test_one_account_on_many_connections_shares_one_budget(
        server: Live, clients: Clients) -> None:
    first = await clients.guest()
    conns = [first.conn] + [(await clients.with_token(first.token)).conn for _ in range(3)]
    per_conn = int(server.settings.conn_burst) - 5  # each connection within its own burst
    started = time.monotonic()
    futures = [await conn.send(p.Ping(id=conn.pending.next_id()))
               for conn in conns for _ in range(per_conn)]
    replies = await asyncio.wait_for(asyncio.gather(*futures), TIMEOUT)
    elapsed = time.monotonic() - started
    limited = [r for r in replies if isinstance(r, p.ErrorReply)]
    assert all(r.code == "rate_limited" and r.retry_after_ms for r in limited)
    # served: the account's burst and what refilled while the pings went (half a second's
    # worth at least; more on a busy machine), not a burst per connection
    refilled = server.settings.account_rate * max(elapsed, 0.5)
    assert len(limited) >= len(replies) - server.settings.account_burst - refilled, elapsed
    bystander = await clients.guest()  # another account is not affected
    assert isinstance(await bystander.call(p.Ping), p.Pong)
    figures("account_budget", connections=len(conns), sent=len(replies),
            rate_limited=len(limited), account_burst=server.settings.account_burst)


# -- slow readers and silent peers --------------------------------------------------------------
@one_backend
async def test_a_client_that_stops_reading_is_cut_off_and_memory_stays_bounded(
        serve: Serve) -> None:
    """A lobby subscriber stops reading while the lobby is busy. Both ends' socket buffers
    are made small, as on a slow link, so that thousands of events fill them rather than
    tens of thousands; what is tested is the server's own bound: at most
    ``out_buffer_bytes`` (and a frame) waiting unread in its memory, then a close with 1008,
    while a subscriber that reads gets every event and another game goes on."""
    async with serve(**NO_LIMITS) as live:
        gs = live.running.app
        limit = live.settings.out_buffer_bytes
        before = set(gs.sessions)
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", live.running.port))
        sock.setblocking(False)
        slow = await raw_connect(live.url, sock=sock, max_queue=4)
        await slow.send(pack({"t": "hello", "id": 1, "version": 1}))
        await slow.recv()
        await slow.send(pack({"t": "lobby_subscribe", "id": 2}))
        await slow.recv()
        [session] = set(gs.sessions) - before
        session.ws.transport.get_extra_info("socket").setsockopt(
            socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)

        watcher = await live.clients.connect()  # a subscriber that reads: it keeps up
        await watcher.call(p.LobbySubscribe)
        seeker = await live.clients.guest()
        other = await start_game(await live.clients.guest(), await live.clients.guest(),
                                 "xodd", {"size": 7})
        rng = random.Random(4)

        async def churn() -> None:
            created = await seeker.call(p.Seek, game="hexifact",
                                        options={"board": "hex5-6"}, clock=p.Unlimited())
            await seeker.call(p.CancelSeek, seek_id=created.seek_id)

        events = most_buffered = 0
        while not session.closing:
            await churn()
            events += 2
            most_buffered = max(most_buffered, session.ws.transport.get_write_buffer_size())
            if events % 1000 == 0:
                await goes_on(other, rng)
            assert events < 50_000, "never cut off"
        for _ in range(50):  # once cut off, nothing more piles up for it
            await churn()
            most_buffered = max(most_buffered, session.ws.transport.get_write_buffer_size())
        assert most_buffered <= limit + 1024  # the limit, and one (small) frame

        # the slow client reads at last: what was sent before the cut, then the close
        received = 0
        with contextlib.suppress(ConnectionClosed):
            while True:
                await asyncio.wait_for(slow.recv(), TIMEOUT)
                received += 1
        assert slow.close_code == p.CLOSE_POLICY_VIOLATION
        assert slow.close_reason.startswith("too slow"), slow.close_reason
        await until(lambda: session not in gs.sessions)
        assert session not in gs.members.subscribers

        seen = [e for e in await _events(watcher) if isinstance(e, p.SeekAdded | p.SeekRemoved)]
        assert len(seen) == events + 100  # the reading subscriber missed nothing
        await goes_on(other, rng)
    figures("slow_reader", events_until_cut=events, out_buffer_kib=limit // 1024,
            most_buffered_kib=round(most_buffered / 1024, 1), frames_read_after=received)


async def _events(conn: Any) -> list[Any]:
    out = []
    with contextlib.suppress(TimeoutError):
        while True:
            out.append(await conn.next_event(0.2))
    return out


@one_backend
async def test_a_silent_peer_is_dropped_by_keepalive(serve: Serve) -> None:
    interval, timeout, close_timeout = 0.3, 0.3, 0.5
    async with serve(ping_interval=interval, ping_timeout=timeout,
                     close_timeout=close_timeout) as live:
        clients = live.clients
        a, b = await clients.guest(), await clients.guest()
        game = await start_game(a, b, "hadron")
        await game.play("a1")
        await game.play("e5")
        other = await start_game(await clients.guest(), await clients.guest(), "hadron")
        await a.drain(0.05)

        silenced = time.monotonic()
        b.conn.ws.transport.pause_reading()  # b's side goes quiet; the TCP connection stays
        left = await a.wait_for(p.OpponentLeft, game_id=game.game_id)
        detected = time.monotonic() - silenced
        assert left.player == 1
        assert detected < interval + timeout + close_timeout + 3  # generous

        await asyncio.sleep(3 * interval)  # peers that answer pings are kept
        for player in (a, *other.players):
            assert isinstance(await player.call(p.Ping), p.Pong)
        await game.play("c3")  # a plays on while b is away ...
        await other.play("b2")  # ... and nobody else noticed
        b.conn.ws.transport.resume_reading()
        await asyncio.wait_for(b.conn.closed.wait(), TIMEOUT)
    figures("silent_peer", ping_interval_s=interval, ping_timeout_s=timeout,
            close_timeout_s=close_timeout,
            detected_after_s=round(detected, 2), b_close_code=b.conn.ws.close_code)


# -- tessera verify --all -----------------------------------------------------------------------
def tessera(*args: str) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).parent / "tessera"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "clients.cli"]
    return subprocess.run([*command, *args], cwd=REPO, capture_output=True, text=True,
                          timeout=120, check=False)


async def test_verify_all_replays_every_stored_game_and_reports_tampering(
        database: TestDatabase, serve: Serve) -> None:
    async with serve() as live:
        a, b = await live.clients.guest(), await live.clients.guest()
        finished = await start_game(a, b, "yodd", {"size": 3})
        rng = random.Random(5)
        while not finished.state.is_over:
            await finished.play(rng=rng)
        resigned = await start_game(a, b, "hadron")
        await resigned.play("a1")
        await resigned.play("e5")
        await a.call(p.Resign, game_id=resigned.game_id)
        playing = await start_game(a, b, "xodd", {"size": 5})
        await playing.play_quiet_move(rng)
    ids = [finished.game_id, resigned.game_id, playing.game_id]

    good = await asyncio.to_thread(tessera, "verify", "--all", "--db", database.url)
    assert good.returncode == 0, good.stdout + good.stderr
    for game_id in ids:
        assert f"OK        {game_id} (" in good.stdout
    assert "verified 3 records: 3 ok, 0 with problems" in good.stdout

    db = make_engine(database.url)
    try:
        async with db.begin() as conn:  # the loser is made the winner; a move made illegal
            await conn.execute(text("UPDATE games SET winner = 1 - winner WHERE id = :id"),
                               {"id": finished.game_id})
            await conn.execute(text("UPDATE moves SET move = 'a1' WHERE game_id = :id "
                                    "AND ply = 1"), {"id": resigned.game_id})
    finally:
        await db.dispose()
    bad = await asyncio.to_thread(tessera, "verify", "--all", "--db", database.url)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert f"MISMATCH  {finished.game_id} (" in bad.stdout
    assert "the rules give the win to" in bad.stdout
    assert f"MISMATCH  {resigned.game_id} (" in bad.stdout and "is illegal" in bad.stdout
    assert f"OK        {playing.game_id} (" in bad.stdout
    assert "verified 3 records: 1 ok, 2 with problems" in bad.stdout
