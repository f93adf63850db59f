"""``tessera db backup`` and ``tessera db restore`` on a real SQLite file, with a real server
playing on it and real websocket clients making moves meanwhile."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

import protocol as p
from server.storage import make_engine, sqlite_url
from server.storage.backup import copy_live

from .conftest import PG_URL_ENV, ServeOn, TestDatabase
from .support import (
    REPO,
    TIMEOUT,
    Clients,
    Game,
    Player,
    assert_record_replays,
    run_cli,
    start_game,
)

PACE_S = 0.01  # between one game's moves
UNLIMITED = ("--rate", "1000", "--account-rate", "2000", "--account-burst", "4000")


async def tessera(*args: str) -> subprocess.CompletedProcess[str]:
    """A client command (``tessera verify ...``) run to completion."""
    return await asyncio.to_thread(
        subprocess.run, [sys.executable, "-m", "clients.cli", *args], cwd=REPO,
        capture_output=True, text=True, timeout=120)


class Stream:
    """Pairs of players making moves, about a hundred a second in all, each pair one game
    at a time (resigned and started anew when no move but a winning one is left), every ack
    noted."""

    def __init__(self, pairs: list[tuple[Player, Player]]) -> None:
        self.pairs = pairs
        self.moves: dict[str, list[str]] = {}  # game id -> its moves acknowledged so far
        self.finished: set[str] = set()
        self.stop = asyncio.Event()
        self.tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self.tasks = [asyncio.create_task(self._play(a, b, key, seed))
                      for seed, ((a, b), key) in enumerate(zip(
                          self.pairs, ("xodd", "yodd", "hexifact"), strict=True))]

    async def acked(self, at_least: int) -> None:
        """Wait until ``at_least`` moves have been acknowledged in all."""
        while sum(map(len, self.moves.values())) < at_least:
            assert not any(task.done() for task in self.tasks), [t.exception() for t in
                                                                  self.tasks if t.done()]
            await asyncio.sleep(0.01)

    def count(self) -> dict[str, int]:
        return {game_id: len(moves) for game_id, moves in self.moves.items()}

    async def halt(self) -> None:
        self.stop.set()
        await asyncio.gather(*self.tasks)

    async def _play(self, a: Player, b: Player, key: str, seed: int) -> None:
        rng = random.Random(seed)
        while not self.stop.is_set():
            game = await start_game(a, b, key)
            self.moves[game.game_id] = []
            while not self.stop.is_set():
                move = quiet_move(game, rng)
                if move is None:
                    await game.mover.call(p.Resign, game_id=game.game_id)
                    self.finished.add(game.game_id)
                    break
                await game.play(move)
                self.moves[game.game_id].append(move)
                await asyncio.sleep(PACE_S)


def quiet_move(game: Game, rng: random.Random) -> str | None:
    """A random legal move that does not end the game; None if none turns up."""
    for _ in range(200):
        move = str(game.state.random_move(rng))
        if not game.state.play(move).is_over:
            return move
    return None


def stored_moves(dump: str) -> dict[str, list[str]]:
    """Each game's moves in ``tessera dump --all``'s output."""
    records = [json.loads(line) for line in dump.splitlines()]
    return {r["game_id"]: [m["move"] for m in r["moves"]] for r in records}


async def check_the_copy(copy: Path, stream: Stream, before: dict[str, int]) -> None:
    """The copy replays, is whole, and holds every move acknowledged before ``before``
    was taken: each game's stored moves start with the ones the players saw acked."""
    verified = await tessera("verify", "--all", "--db", sqlite_url(copy))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert ", 0 with problems" in verified.stdout, verified.stdout
    checked = await run_cli("db", "check", "--db", sqlite_url(copy))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    dumped = await run_cli("dump", "--all", "--db", sqlite_url(copy))
    assert dumped.returncode == 0, dumped.stderr
    stored = stored_moves(dumped.stdout)
    for game_id, count in before.items():
        assert game_id in stored, game_id
        assert len(stored[game_id]) >= count, (game_id, len(stored[game_id]), count)
        assert stored[game_id] == stream.moves[game_id][:len(stored[game_id])], game_id


async def test_a_backup_taken_during_play_holds_every_acked_move_and_restores(
        tmp_path: Path, serve_on: ServeOn, open_clients: Callable[[str], Clients]) -> None:
    live_db = tmp_path / "live.db"
    server = serve_on(sqlite_url(live_db), *UNLIMITED)
    await server.start()
    clients = open_clients(server.url)
    pairs = [(await clients.guest(), await clients.guest()) for _ in range(3)]
    # a game over before anything else: played to its end
    played_out = await start_game(*pairs[0], "yodd", {"size": 3})
    await played_out.play_out(random.Random(3))
    stream = Stream(pairs)
    stream.start()
    await stream.acked(30)

    before = stream.count()
    finished_before = set(stream.finished) | {played_out.game_id}
    copy = tmp_path / "backups" / "copy.db"
    copy.parent.mkdir()
    backed_up = await run_cli("db", "backup", str(copy), "--db", sqlite_url(live_db))
    assert backed_up.returncode == 0, backed_up.stderr
    assert f"backed up {live_db} to {copy}: " in backed_up.stdout, backed_up.stdout
    assert "integrity ok, migration revision " in backed_up.stdout
    during = sum(stream.count().values()) - sum(before.values())
    assert during > 0  # the players went on while the copy was made

    # a copy made a page at a time: the held snapshot keeps it from restarting as the
    # server commits between its steps
    before_paged = stream.count()
    paged = tmp_path / "backups" / "paged.db"
    copied = await asyncio.wait_for(asyncio.to_thread(
        copy_live, live_db, paged, pages_per_step=1, pause_s=0.002), 60)
    assert copied.pages > 20 and copied.revision is not None
    assert copied.restarts == 0
    assert sum(stream.count().values()) > sum(before_paged.values())
    await stream.halt()

    await check_the_copy(copy, stream, before)
    await check_the_copy(paged, stream, before_paged)
    assert not list(copy.parent.glob("*.partial*"))

    # restored into a fresh path and served: the games finished before the copy are listed
    # and replay; the games in progress go on from where the copy had them
    restored_db = tmp_path / "restored" / "tessera.db"
    restored = await run_cli("db", "restore", str(copy), "--db", sqlite_url(restored_db))
    assert restored.returncode == 0, restored.stderr
    assert f"restored {copy} into {restored_db} (migration revision " in restored.stdout
    assert "replaced" not in restored.stdout  # nothing was there to keep aside
    again = serve_on(sqlite_url(restored_db))
    await again.start()
    watcher = await open_clients(again.url).spectator()
    listed = await asyncio.wait_for(
        watcher.call(p.ListGames, status="over", limit=100), TIMEOUT)
    assert finished_before <= {summary.game_id for summary in listed.games}
    for game_id in finished_before | set(before):
        reply = await asyncio.wait_for(watcher.call(p.GetGame, game_id=game_id), TIMEOUT)
        record = reply.record
        assert_record_replays(record)
        moves = [m.move for m in record.moves]
        if game_id == played_out.game_id:
            assert moves == [str(m) for m in played_out.state.moves]
            assert record.result is not None and record.result.reason == "normal"
        else:
            assert len(moves) >= before[game_id]
            assert moves == stream.moves[game_id][:len(moves)]
            assert record.status == "playing" or game_id in stream.finished
    assert await again.stopped() == 0
    assert await server.stopped() == 0


def corrupt(path: Path, pages: range) -> None:
    """Overwrite whole pages of a database file with noise."""
    with sqlite3.connect(path) as db:
        size = db.execute("PRAGMA page_size").fetchone()[0]
    noise = random.Random(7)
    with open(path, "r+b") as f:
        for page in pages:
            f.seek((page - 1) * size)
            f.write(bytes(noise.randrange(256) for _ in range(size)))


async def test_restore_refuses_a_bad_copy_and_a_served_database(
        tmp_path: Path, serve_on: ServeOn, open_clients: Callable[[str], Clients]) -> None:
    live_db = tmp_path / "live.db"
    server = serve_on(sqlite_url(live_db))
    await server.start()
    clients = open_clients(server.url)
    game = await start_game(await clients.guest(), await clients.guest(), "hadron")
    await game.play("a1")
    good = tmp_path / "good.db"
    assert (await run_cli("db", "backup", str(good), "--db", sqlite_url(live_db))
            ).returncode == 0

    # the server's own database, while it serves: refused, naming the server
    refused = await run_cli("db", "restore", str(good), "--db", sqlite_url(live_db))
    assert refused.returncode == 1
    assert server.proc is not None
    assert f"already served by process {server.proc.pid}" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
    await game.play("e5")  # it plays on, unharmed

    broken = tmp_path / "broken.db"
    broken.write_bytes(good.read_bytes())
    corrupt(broken, range(2, 6))
    not_sqlite = tmp_path / "notes.txt"
    not_sqlite.write_text("not a database, just some words\n" * 200)
    newer = tmp_path / "newer.db"
    newer.write_bytes(good.read_bytes())
    with contextlib.closing(sqlite3.connect(newer)) as db, db:
        db.execute("UPDATE alembic_version SET version_num = 'f00dfeed9999'")
    foreign = tmp_path / "foreign.db"
    with contextlib.closing(sqlite3.connect(foreign)) as db, db:
        db.execute("CREATE TABLE notes (body TEXT)")
    cases = {broken: "the copy is not whole: ",
             not_sqlite: f"{not_sqlite} is not a SQLite database",
             newer: "migration revision f00dfeed9999, which this version of Tessera does "
                    "not know",
             foreign: f"{foreign} is not a Tessera database: it has no migration revision",
             tmp_path / "missing.db": f"no file at {tmp_path / 'missing.db'}"}
    targets = {copy: tmp_path / f"target-{n}" / "tessera.db" for n, copy in enumerate(cases)}
    refusals = await asyncio.gather(*(run_cli("db", "restore", str(copy), "--db", sqlite_url(
        targets[copy])) for copy in cases))
    for (copy, why), refusal in zip(cases.items(), refusals, strict=True):
        assert refusal.returncode == 1, (copy, refusal.stdout, refusal.stderr)
        assert refusal.stderr.startswith("tessera db restore: "), (copy, refusal.stderr)
        assert why in refusal.stderr and "Traceback" not in refusal.stderr, (copy, refusal.stderr)
        target = targets[copy]
        assert not target.exists()
        assert not list(target.parent.glob("*.restoring*"))  # no scratch file left behind

    # once the server is gone, the good copy goes in; the database it replaced is kept
    assert await server.stopped() == 0
    done = await run_cli("db", "restore", str(good), "--db", sqlite_url(live_db))
    assert done.returncode == 0, done.stderr
    [aside] = tmp_path.glob("live.db.replaced-*")
    assert f"the database it replaced is kept as {aside}" in done.stdout
    again = serve_on(sqlite_url(live_db))
    await again.start()
    watcher = await open_clients(again.url).spectator()
    reply = await asyncio.wait_for(watcher.call(p.GetGame, game_id=game.game_id), TIMEOUT)
    assert [m.move for m in reply.record.moves] == ["a1"]  # as it was when copied
    assert await again.stopped(signal.SIGTERM) == 0
    checked = await run_cli("db", "check", "--db", sqlite_url(aside))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    kept = await run_cli("dump", game.game_id, "--db", sqlite_url(aside))
    assert [m["move"] for m in json.loads(kept.stdout)["moves"]] == ["a1", "e5"]


async def test_backup_refuses_postgresql_an_existing_copy_and_a_missing_database(
        tmp_path: Path) -> None:
    pg = "postgresql+asyncpg://tessera@127.0.0.1:5432/tessera"
    for command in ("backup", "restore"):
        done = await run_cli("db", command, str(tmp_path / "copy.db"), "--db", pg)
        assert done.returncode == 2, done.stderr
        assert "use pg_dump and pg_restore, as docs/OPERATIONS.md shows" in done.stderr
    (tmp_path / "there.db").write_bytes(b"")
    exists = await run_cli("db", "backup", str(tmp_path / "there.db"), "--db",
                           sqlite_url(tmp_path / "live.db"))
    assert exists.returncode == 1
    assert "no database at" in exists.stderr, exists.stderr
    assert not (tmp_path / "live.db").exists()  # looking did not make one
    assert (await run_cli("db", "upgrade", "--db", sqlite_url(tmp_path / "live.db"))
            ).returncode == 0
    exists = await run_cli("db", "backup", str(tmp_path / "there.db"), "--db",
                           sqlite_url(tmp_path / "live.db"))
    assert exists.returncode == 1 and "exists already: give a new path" in exists.stderr


WRITER = """
import os, sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
db.execute("PRAGMA synchronous=FULL")
print("ready", flush=True)
while True:
    started = time.perf_counter()
    db.execute("INSERT INTO rows (body) VALUES (?)", (os.urandom(200),))
    print(f"{time.monotonic():.6f} {time.perf_counter() - started:.6f}", flush=True)
    time.sleep(0.002)
"""


@pytest.mark.slow
async def test_a_100_mb_copy_while_a_writer_commits_every_2_ms(tmp_path: Path) -> None:
    """The figure in docs/OPERATIONS.md: how long a copy of 100 MB takes, and what the
    writer beside it waits meanwhile (run with -s to see it)."""
    source = tmp_path / "big.db"
    with contextlib.closing(sqlite3.connect(source)) as db, db:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, body BLOB)")
        noise = random.Random(1)
        db.executemany("INSERT INTO rows (body) VALUES (?)",
                       ((noise.randbytes(1000),) for _ in range(100_000)))
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(source)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
        await asyncio.sleep(0.5)
        began = time.monotonic()
        copied = await asyncio.to_thread(copy_live, source, tmp_path / "copy.db")
        ended = time.monotonic()
        await asyncio.sleep(0.5)
    finally:
        writer.kill()
    assert writer.stdout is not None
    commits = [tuple(map(float, line.split())) for line in writer.stdout.read().splitlines()]
    during = sorted(took for at, took in commits if began <= at <= ended)
    assert copied.restarts == 0 and copied.bytes > 100e6
    assert len(during) > 10  # the writer went on committing while the copy was made
    with contextlib.closing(sqlite3.connect(tmp_path / "copy.db")) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert db.execute("SELECT count(*) FROM rows").fetchone()[0] >= 100_000
    print(f"FIGURES backup: {copied.bytes / 1e6:.0f} MB in {copied.seconds:.2f} s; "
          f"{len(during)} commits meanwhile, median {statistics.median(during) * 1e3:.1f} ms, "
          f"slowest {during[-1] * 1e3:.0f} ms")


@contextlib.asynccontextmanager
async def pg_databases(count: int) -> AsyncIterator[list[str]]:
    """``count`` new PostgreSQL databases on the test server, as libpq URLs (what pg_dump
    and pg_restore take); dropped at the end."""
    admin = make_url(os.environ[PG_URL_ENV])
    names = [f"tessera_ops_{uuid.uuid4().hex[:12]}" for _ in range(count)]
    engine = make_engine(admin).execution_options(isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as conn:
            for name in names:
                await conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
        yield [admin.set(drivername="postgresql", database=name).render_as_string(
            hide_password=False) for name in names]
    finally:
        async with engine.connect() as conn:
            for name in names:
                await conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await engine.dispose()


async def run(*command: str) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True,
                                   timeout=120)


@pytest.mark.parametrize("database", ["postgresql"], indirect=True)
async def test_the_documented_pg_dump_and_pg_restore_carry_a_served_database(
        database: TestDatabase, tmp_path: Path, serve_on: ServeOn,
        open_clients: Callable[[str], Clients]) -> None:
    """docs/OPERATIONS.md's PostgreSQL way: pg_dump while the server plays, pg_restore into
    a new database, which checks, verifies and serves the games. (``database`` is taken for
    its skip, or failure under CI, without PostgreSQL: the test makes databases of its
    own.)"""
    missing = [tool for tool in ("pg_dump", "pg_restore") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"PostgreSQL backup test skipped: {' and '.join(missing)} not installed")
    async with pg_databases(2) as (live, restored):
        server = serve_on(to_asyncpg(live))
        await server.start()
        clients = open_clients(server.url)
        players = (await clients.guest(), await clients.guest())
        finished = await start_game(*players, "yodd", {"size": 3})
        await finished.play_out(random.Random(4))
        playing = await start_game(*players, "hadron")
        await playing.play("a1")
        dump = tmp_path / "tessera.dump"
        dumped = await run("pg_dump", "--format=custom", f"--file={dump}", live)
        assert dumped.returncode == 0, dumped.stderr
        await playing.play("e5")  # after the dump: not in it
        back = await run("pg_restore", "--no-owner", "--dbname", restored, str(dump))
        assert back.returncode == 0, back.stderr
        checked = await run_cli("db", "check", "--db", to_asyncpg(restored))
        assert checked.returncode == 0, checked.stdout + checked.stderr
        verified = await tessera("verify", "--all", "--db", to_asyncpg(restored))
        assert verified.returncode == 0, verified.stdout + verified.stderr
        assert "verified 2 records: 2 ok, 0 with problems" in verified.stdout
        again = serve_on(to_asyncpg(restored))
        await again.start()
        watcher = await open_clients(again.url).spectator()
        for game, moves in ((finished, [str(m) for m in finished.state.moves]),
                            (playing, ["a1"])):
            reply = await asyncio.wait_for(watcher.call(p.GetGame, game_id=game.game_id),
                                           TIMEOUT)
            assert [m.move for m in reply.record.moves] == moves
            assert_record_replays(reply.record)
        assert await again.stopped() == 0
        assert await server.stopped() == 0


def to_asyncpg(libpq_url: str) -> str:
    return make_url(libpq_url).set(drivername="postgresql+asyncpg").render_as_string(
        hide_password=False)
