"""Fixtures for end-to-end client tests: a real server subprocess and scripted players.

``live_server`` (one per test session) and ``live_server_factory`` (a private server that a
test may stop and restart on the same port and database) run ``python -m server serve``
with a temporary SQLite file. ``scripted_player`` connects a :class:`ScriptedPlayer`: a
synchronous wrapper around :class:`clients.connection.Connection`, run on its own event
loop thread, so pexpect-driven tests can play against it step by step.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

import engine
import protocol as p
from clients.connection import Connection
from clients.localserver import LocalServer
from tests.clients.sdk_fixtures import server_proc  # noqa: F401 (the SDK tests' server)

T = TypeVar("T")
CALL_TIMEOUT_S = 15.0


class LiveServer(LocalServer):
    """``python -m server serve`` on a fixed port and a SQLite file; start, stop, restart."""

    def __init__(self, directory: Path, grace_s: float = 30.0, *args: str) -> None:
        # every client test connects from 127.0.0.1: no per-address limits
        super().__init__(directory, extra_args=["--grace", str(grace_s), "--guests-per-hour",
                                                "0", "--logins-per-minute", "0", *args])


@pytest.fixture(scope="session")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """One server for the whole session; tests must not stop it."""
    server = LiveServer(tmp_path_factory.mktemp("live_server"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def live_server_factory(tmp_path: Path) -> Iterator[Callable[..., LiveServer]]:
    """Make private servers (started); each is stopped at the end of the test.

    ``make(grace_s=1.0)``: seconds before a win can be claimed from an absent opponent;
    ``make(30.0, "--lobby-page", "1")``: more flags of ``serve``.
    """
    made: list[LiveServer] = []

    def make(grace_s: float = 30.0, *args: str) -> LiveServer:
        server = LiveServer(tmp_path / f"server{len(made)}", grace_s, *args)
        made.append(server)
        server.start()
        return server

    yield make
    for server in made:
        server.stop()


class ScriptedPlayer:
    """A protocol client driven synchronously from a test (its loop runs in a thread)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.conn: Connection = self.run(Connection.open(url, client="test-scripted"))
        self.name = ""
        self.token = ""

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = CALL_TIMEOUT_S) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call(self, kind: type, **fields: Any) -> p.ServerMessage:
        return self.run(self.conn.call(kind, **fields))

    def wait_for(self, kind: type[T], timeout: float = CALL_TIMEOUT_S, **match: Any) -> T:
        return self.run(self.conn.wait_for(kind, timeout, **match), timeout + 1)

    def login(self, authed: p.ServerMessage) -> p.Authed:
        assert isinstance(authed, p.Authed), authed
        self.name, self.token = authed.user.name, authed.session_token
        return authed

    def guest(self) -> str:
        self.login(self.call(p.Guest))
        return self.name

    def reconnect(self) -> p.Authed:
        """A new connection after the old one dropped, logged in with the session token."""
        self.run(self.conn.close())
        self.conn = self.run(Connection.open(self.url, client="test-scripted"))
        return self.login(self.call(p.AuthToken, token=self.token))

    def move(self, game_id: str, ply: int, move: str) -> p.ServerMessage:
        return self.call(p.Move, game_id=game_id, ply=ply, move=move)

    def close(self) -> None:
        try:
            self.run(self.conn.close(), 5)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(5)


@pytest.fixture
def scripted_player() -> Iterator[Callable[[str], ScriptedPlayer]]:
    """Connect scripted players to a server URL; all are closed at the end of the test."""
    made: list[ScriptedPlayer] = []

    def make(url: str) -> ScriptedPlayer:
        player = ScriptedPlayer(url)
        made.append(player)
        return player

    yield make
    for player in made:
        player.close()


def play_scripted_game(a: ScriptedPlayer, b: ScriptedPlayer, game: str,
                       options: dict[str, Any], *, resign_at: int | None = None,
                       clock: p.TimeControl | None = None) -> tuple[str, engine.State]:
    """Two guests play a whole game (first legal move each turn); returns id and state.

    With ``resign_at``, the player to move at that ply resigns instead.
    """
    seek = a.call(p.Seek, game=game, options=options, clock=clock or p.Unlimited())
    assert isinstance(seek, p.SeekCreated)
    b.call(p.AcceptSeek, seek_id=seek.seek_id)
    started = a.wait_for(p.GameStarted)
    b.wait_for(p.GameStarted, game_id=started.game_id)
    by_name = {a.name: a, b.name: b}
    seats = [by_name[u.name] for u in started.snapshot.players]
    state = engine.new_game(game, **started.snapshot.options)
    while not state.is_over:
        mover = seats[state.to_move]
        if state.ply == resign_at:
            mover.call(p.Resign, game_id=started.game_id)
            break
        move = str(state.legal_moves()[0])
        mover.move(started.game_id, state.ply, move)
        state = state.play(move)
    a.wait_for(p.GameOver, game_id=started.game_id)
    return started.game_id, state


@pytest.fixture(scope="session")
def finished_games(live_server: LiveServer) -> dict[str, tuple[str, engine.State]]:
    """Stored games on ``live_server``: a Hadron 3x3 game played out, and a resigned Xodd."""
    a, b = ScriptedPlayer(live_server.url), ScriptedPlayer(live_server.url)
    try:
        a.guest()
        b.guest()
        games = {
            "hadron": play_scripted_game(a, b, "hadron", {"size": 3},
                                         clock=p.Fischer(base_ms=60_000, increment_ms=1_000)),
            "xodd": play_scripted_game(a, b, "xodd", {"size": 4}, resign_at=3),
        }
    finally:
        a.close()
        b.close()
    return games


def tessera_command() -> list[str]:
    """The installed ``tessera`` entry point next to this Python, or the module."""
    script = Path(sys.executable).parent / "tessera"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "clients.cli"]


def spawn_tessera(*args: str) -> Any:
    """Run ``tessera ARGS`` in a pseudo-terminal (a pexpect child).

    Set $TESSERA_TEST_TRANSCRIPT to a file name to append what the programs print there.
    """
    import pexpect

    command = tessera_command()
    transcript = os.environ.get("TESSERA_TEST_TRANSCRIPT")
    child = pexpect.spawn(command[0], [*command[1:], *args], env=terminal_env(),
                          encoding="utf-8", dimensions=(60, 160), timeout=15)
    if transcript:
        child.logfile_read = open(transcript, "a", encoding="utf-8")  # noqa: SIM115
    return child


def terminal_env() -> dict[str, str]:
    """An environment for programs under pexpect: a colour terminal that answers no CPR."""
    env = dict(os.environ)
    env.update(TERM="xterm-256color", PROMPT_TOOLKIT_NO_CPR="1", PYTHONUNBUFFERED="1")
    env.pop("NO_COLOR", None)
    env.pop("TESSERA_PASSWORD", None)
    return env
