"""Helpers for the end-to-end tests: players, games, raw frames and server processes.

Everything here talks to a real server through real sockets: ``Player`` wraps the client
adapter (:class:`clients.connection.Connection`), ``RawSocket`` sends bytes the adapter
would refuse to build, and ``ServerProcess`` runs ``python -m server serve`` as a child
process so that tests can kill it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import msgpack
import websockets
from websockets.asyncio.client import ClientConnection

import engine
import protocol as p
from clients.connection import Connection, Disconnected, ServerError

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 10.0  # seconds any single expected event or reply may take
QUIET = 0.2  # seconds of silence that count as "nothing more came"

E = TypeVar("E")

FAST_CLOCK = p.Fischer(base_ms=600_000, increment_ms=0)


@dataclass
class Player:
    """A logged-in client: its connection, who it is, and its session token."""

    conn: Connection
    name: str
    kind: str
    token: str
    url: str
    authed: p.Authed

    async def call(self, kind: type[Any], **fields: Any) -> Any:
        return await asyncio.wait_for(self.conn.call(kind, **fields), TIMEOUT)

    async def refused(self, kind: type[Any], **fields: Any) -> ServerError:
        """Send a request that must fail; return the error."""
        try:
            reply = await self.call(kind, **fields)
        except ServerError as exc:
            return exc
        raise AssertionError(f"{kind.__name__} {fields} was accepted: {reply}")

    async def wait_for(self, kind: type[E], **match: Any) -> E:
        return await self.conn.wait_for(kind, TIMEOUT, **match)

    async def game_events(self, game_id: str, *, until: type = p.GameOver) -> list[Any]:
        """This connection's events of one game, up to and including one of type ``until``."""
        events: list[Any] = []
        while True:
            event = await self.conn.next_event(TIMEOUT)
            if getattr(event, "game_id", None) != game_id and not (
                isinstance(event, p.GameState) and event.game.game_id == game_id
            ):
                continue
            events.append(event)
            if isinstance(event, until):
                return events

    async def drain(self, quiet: float = QUIET) -> list[Any]:
        """Every event already queued or arriving within ``quiet`` seconds."""
        events: list[Any] = []
        while True:
            try:
                if not self.conn.events.empty():
                    events.append(await self.conn.next_event())
                    continue
                if quiet <= 0:
                    return events
                events.append(await self.conn.next_event(quiet))
            except (TimeoutError, Disconnected):
                return events

    async def close(self) -> None:
        await self.conn.close()


@dataclass
class Clients:
    """Opens connections to a server and closes whatever is left open at the end.

    On a cluster (``urls``: every node's), each connection not given a URL goes to the
    next node in turn, so that a test's players and spectators sit on different nodes."""

    url: str
    opened: list[Connection] = field(default_factory=list)
    urls: tuple[str, ...] = ()
    turn: int = 0

    def pick(self, url: str | None = None) -> str:
        if url is not None:
            return url
        if not self.urls:
            return self.url
        self.turn += 1
        return self.urls[(self.turn - 1) % len(self.urls)]

    async def connect(self, url: str | None = None, **kwargs: Any) -> Connection:
        conn = await Connection.open(self.pick(url), client="tessera-e2e", **kwargs)
        self.opened.append(conn)
        return conn

    async def guest(self, url: str | None = None) -> Player:
        return await self.logged_in(url, p.Guest)

    async def register(self, name: str, password: str, url: str | None = None) -> Player:
        return await self.logged_in(url, p.Register, username=name, password=password)

    async def login(self, name: str, password: str, url: str | None = None) -> Player:
        return await self.logged_in(url, p.Login, username=name, password=password)

    async def with_token(self, token: str, url: str | None = None) -> Player:
        return await self.logged_in(url, p.AuthToken, token=token)

    async def logged_in(self, url: str | None, kind: type[p.Message], **fields: Any) -> Player:
        """A new connection (to ``url``, or the next node) logged in by ``kind``."""
        url = self.pick(url)
        conn = await self.connect(url)
        authed = await asyncio.wait_for(conn.call(kind, **fields), TIMEOUT)
        return _player(conn, authed, url)

    async def spectator(self, url: str | None = None) -> Connection:
        """A connection that said hello and nothing more (spectators need no login)."""
        return await self.connect(url)

    async def close_all(self) -> None:
        for conn in self.opened:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.close(), 5)


def _player(conn: Connection, authed: Any, url: str) -> Player:
    assert isinstance(authed, p.Authed), authed
    return Player(conn, authed.user.name, authed.user.kind, authed.session_token, url, authed)


# -- games ---------------------------------------------------------------------------------------
@dataclass
class Game:
    """A game between two players as the test knows it: ``players[seat]``."""

    game_id: str
    key: str
    options: dict[str, Any]
    players: tuple[Player, Player]
    started: p.GameStarted
    state: engine.State

    @property
    def ply(self) -> int:
        return self.state.ply

    @property
    def mover(self) -> Player:
        return self.players[self.state.to_move]

    @property
    def waiter(self) -> Player:
        return self.players[1 - self.state.to_move]

    async def play(self, move: str | None = None, rng: random.Random | None = None
                   ) -> p.MoveAck:
        """The player to move plays ``move`` (or a random legal move); returns the ack."""
        text = move if move is not None else str(self.state.random_move(rng or random.Random(0)))
        ack = await self.mover.call(p.Move, game_id=self.game_id, ply=self.ply, move=text)
        assert isinstance(ack, p.MoveAck), ack
        assert (ack.game_id, ack.ply) == (self.game_id, self.ply)
        self.state = self.state.play(text)
        return ack

    async def play_out(self, rng: random.Random) -> None:
        """Random legal moves until the game is over."""
        while not self.state.is_over:
            await self.play(rng=rng)

    async def play_quiet_move(self, rng: random.Random) -> p.MoveAck:
        """Play a random legal move that does not end the game."""
        for _ in range(200):
            move = str(self.state.random_move(rng))
            if not self.state.play(move).is_over:
                return await self.play(move)
        raise AssertionError(f"no quiet move found at ply {self.ply}")

    async def record(self, via: Player | Connection | None = None) -> p.Record:
        conn = via or self.players[0]
        reply = await asyncio.wait_for(conn.call(p.GetGame, game_id=self.game_id), TIMEOUT)
        assert isinstance(reply, p.GameRecord)
        return reply.record

    async def watch(self, conn: Player | Connection) -> p.Snapshot:
        reply = await asyncio.wait_for(conn.call(p.Watch, game_id=self.game_id), TIMEOUT)
        assert isinstance(reply, p.GameState) and reply.id is not None
        return reply.game


async def start_game(a: Player, b: Player, key: str, options: dict[str, Any] | None = None,
                     clock: p.TimeControl = FAST_CLOCK) -> Game:
    """``a`` challenges ``b`` taking seat 0; ``b`` accepts; both see ``game_started``."""
    created = await a.call(p.Challenge, to=b.name, game=key, options=options or {},
                           clock=clock, color=0)
    received = await b.wait_for(p.ChallengeReceived, challenge_id=created.challenge_id)
    await b.call(p.AcceptChallenge, challenge_id=received.challenge_id)
    ended = p.ChallengeEnded(challenge_id=created.challenge_id, reason="accepted")
    started_a, started_b = [await _started_and_ended(x, ended) for x in (a, b)]
    assert started_a == started_b
    snapshot = started_a.snapshot
    assert [u.name for u in snapshot.players] == [a.name, b.name]
    state = engine.new_game(key, **snapshot.options)
    return Game(snapshot.game_id, key, dict(snapshot.options), (a, b), started_a, state)


async def _started_and_ended(player: Player, ended: p.ChallengeEnded) -> p.GameStarted:
    """The ``game_started`` and ``challenge_ended`` of an accepted challenge (any order)."""
    started = None
    seen_end = False
    while started is None or not seen_end:
        event = await player.conn.next_event(TIMEOUT)
        if isinstance(event, p.GameStarted):
            started = event
        elif event == ended:
            seen_end = True
    return started


def assert_record_replays(record: p.Record) -> engine.State:
    """The record's moves replay in the engine to a state that agrees with its result."""
    state = engine.replay(record.game, record.options, [m.move for m in record.moves])
    assert [m.ply for m in record.moves] == list(range(len(record.moves)))
    assert [m.by for m in record.moves] == [m.ply % 2 for m in record.moves]
    if record.result is not None and record.result.reason == "normal":
        assert state.is_over and state.winner == record.result.winner
    else:
        assert not state.is_over
    return state


# -- raw frames ----------------------------------------------------------------------------------
def pack(obj: Any) -> bytes:
    return msgpack.packb(obj)


class RawSocket:
    """A websocket that sends arbitrary bytes and decodes whatever comes back."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws

    @classmethod
    async def open(cls, url: str, *, hello: bool = True) -> RawSocket:
        ws = await websockets.connect(url, max_size=p.MAX_SERVER_FRAME_BYTES,
                                      compression=None)
        raw = cls(ws)
        if hello:
            reply = await raw.request({"t": "hello", "id": 1, "version": 1})
            assert isinstance(reply, p.Welcome), reply
        return raw

    async def send(self, data: bytes | str) -> None:
        await self.ws.send(data)

    async def receive(self) -> p.ServerMessage:
        frame = await asyncio.wait_for(self.ws.recv(), TIMEOUT)
        assert isinstance(frame, bytes), frame
        return p.decode_server(frame)

    async def request(self, obj: Any) -> p.ServerMessage:
        await self.send(pack(obj))
        return await self.receive()

    async def closed_with(self) -> int | None:
        """Wait for the server to close the connection; its close code."""
        with contextlib.suppress(websockets.ConnectionClosed):
            while True:
                await asyncio.wait_for(self.ws.recv(), TIMEOUT)
        return self.ws.close_code

    async def close(self) -> None:
        await self.ws.close()


# -- the server as a child process ---------------------------------------------------------------
class ServerProcess:
    """``python -m server serve`` on a free port, started and stopped by the test."""

    def __init__(self, db_url: str, workdir: Path, *args: str) -> None:
        self.db_url = db_url
        self.workdir = workdir
        self.args = args
        self.proc: subprocess.Popen[bytes] | None = None
        self.port: int | None = None
        self.starts = 0

    @property
    def url(self) -> str:
        assert self.port is not None, "not started"
        return f"ws://127.0.0.1:{self.port}/ws"

    @property
    def log_path(self) -> Path:
        return self.workdir / f"server-{self.starts}.log"

    async def start(self, timeout: float = 60.0) -> None:
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self.starts += 1
        ready = self.workdir / f"ready-{self.starts}"
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "server", "serve", "--port", "0", "--db", self.db_url,
                 "--ready-file", str(ready), "--log-level", "warning", *self.args],
                cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited with {self.proc.returncode}:\n"
                                     f"{self.log_path.read_text()}")
            text = ready.read_text() if ready.exists() else ""
            if text.endswith("\n"):
                self.port = int(text)
                return
            await asyncio.sleep(0.02)
        self.stop(signal.SIGKILL)
        raise AssertionError(f"server not ready in {timeout} s:\n{self.log_path.read_text()}")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20.0) -> int:
        """Send ``sig`` and wait for the process to end; its exit status."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout)

    async def stopped(self, sig: int = signal.SIGTERM, timeout: float = 20.0) -> int:
        """``stop`` without blocking the event loop (the test's clients keep reading)."""
        return await asyncio.to_thread(self.stop, sig, timeout)

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""


async def run_cli(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """Run ``python -m server ARGS`` to completion (without blocking the event loop)."""
    return await asyncio.to_thread(
        subprocess.run, [sys.executable, "-m", "server", *args], cwd=REPO,
        capture_output=True, text=True, timeout=timeout)
