"""The runner's seeks: kept open in the lobby while it has free game slots.

With fewer free slots than seeks, the seeks take turns, one game at a time. The open seeks
are checked against the lobby after every game and every :data:`SEEK_REFRESH_S`. When the
runner stops, its seeks are withdrawn; it is done with them only once the server has let
go of every one: a seek taken just before is a game on its way (the server announces a game
once its first commit is done), which the runner waits for and plays.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

import protocol as p
from clients.connection import Disconnected, ServerError

from .policy import Policy
from .requests import Requests
from .specs import SeekSpec

log = logging.getLogger("clients.sdk")

SEEK_REFRESH_S = 30.0  # seeks are checked against the lobby at least this often
GAME_DUE_WAIT_S = 30.0  # how long to wait, stopping, for the game of a seek taken


async def wait_event(event: asyncio.Event, timeout: float) -> None:
    """Wait until ``event`` is set or ``timeout`` seconds pass.

    Unlike ``asyncio.wait_for`` on Python 3.11, a cancellation arriving just as the event
    is set is never swallowed.
    """
    waiter = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait({waiter}, timeout=timeout)
    finally:
        waiter.cancel()


class SeekKeeper:
    """The seeks of the runner's policy, and their state on the current connection."""

    def __init__(self, requests: Requests, *, policy: Callable[[], Policy],
                 my_name: Callable[[], str], slots_used: Callable[[], int],
                 stopping: Callable[[], bool], events_pending: Callable[[], bool],
                 settled: Callable[[], None]) -> None:
        self.requests = requests
        self.policy = policy
        self.my_name = my_name
        self.slots_used = slots_used
        self.stopping = stopping
        self.events_pending = events_pending  # events read but not dispatched yet?
        self.settled = settled  # called once the seeks are withdrawn while stopping
        self.wakeup = asyncio.Event()
        self.cursor = 0
        self.max_open = 5
        # Stopping, the runner is done only once the server has let go of its seeks: a seek
        # taken meanwhile starts a game (announced before the cancel's reply), played too.
        self.withdrawn = not policy().seeks
        # This connection's seeks, counted: made, withdrawn, and turned into games. A seek
        # neither withdrawn nor a game yet when stopping was taken: its game is on its way.
        self.made = self.cancelled = self.games = 0
        self.games_due_since: float | None = None

    def connected(self, limits: p.Limits | None) -> None:
        """A new connection: it has no seeks yet."""
        if limits is not None:
            self.max_open = limits.max_open_seeks
        self.made = self.cancelled = self.games = 0
        self.wakeup.set()

    def disconnected_for_good(self) -> None:
        """No connection while stopping: a connection's seeks go with it."""
        self.withdrawn = True

    def game_from_seek(self) -> None:
        """A game started that no challenge explains: one of our seeks became it."""
        self.games += 1
        if self.stopping() and not self.withdrawn:
            self.wakeup.set()  # perhaps the game it was waiting for

    async def run(self, done: asyncio.Event) -> None:
        """Keep the seeks in line with the free slots until ``done``."""
        while not done.is_set():
            await wait_event(self.wakeup, SEEK_REFRESH_S
                             if self.games_due_since is None else 1.0)
            self.wakeup.clear()
            if self.requests.conn is None or not self.policy().seeks:
                continue
            try:
                await self.reconcile()
            except (ServerError, Disconnected) as e:
                log.info("could not update seeks: %s", e)

    async def reconcile(self) -> None:
        """Make the open seeks on the server match what the free game slots call for."""
        policy = self.policy()
        specs = policy.seeks
        free = policy.max_games - self.slots_used()
        stopping = self.stopping()  # as of the listing below
        want = 0 if stopping else max(0, min(len(specs), free, self.max_open))
        lobby = await self.requests.request(p.LobbySubscribe)
        with contextlib.suppress(ServerError):
            await self.requests.request(p.LobbyUnsubscribe)
        assert isinstance(lobby, p.Lobby)
        me = self.my_name().lower()
        keep: list[SeekSpec] = []
        for seek in [s for s in lobby.seeks if s.user.name.lower() == me]:
            spec = next((s for s in specs if s.matches(seek.game, seek.options, seek.clock)
                         and all(s is not k for k in keep)), None)
            if spec is not None and len(keep) < want:
                keep.append(spec)
                continue
            log.info("withdrawing seek %d (%s)", seek.seek_id, seek.game)
            with contextlib.suppress(ServerError):  # not_found: taken meanwhile
                await self.requests.request(p.CancelSeek, seek_id=seek.seek_id)
                self.cancelled += 1
        if stopping:
            self._settle_stopping()
            return
        await self._open(specs, keep, want)

    def _settle_stopping(self) -> None:
        # Every seek of ours is gone from the lobby. One taken before the listing may not be
        # a game yet (the server announces it once the game's first commit is done): wait
        # for that many games, a while at most.
        due = self.made - self.cancelled - self.games
        now = time.monotonic()
        if due > 0 and self.games_due_since is None:
            self.games_due_since = now
        if due > 0 and now - (self.games_due_since or now) < GAME_DUE_WAIT_S:
            log.info("stopping: %d game(s) from taken seeks still to start", due)
            return
        self.games_due_since = None
        self.withdrawn = True
        # A game started before the replies is in the events not yet dispatched, or already
        # a game.
        if not self.events_pending():
            self.settled()

    async def _open(self, specs: tuple[SeekSpec, ...], keep: list[SeekSpec], want: int) -> None:
        for _ in range(len(specs)):
            if len(keep) >= want:
                break
            spec = specs[self.cursor % len(specs)]
            self.cursor += 1
            if any(k is spec for k in keep):
                continue
            if self.stopping() or self.policy().max_games - self.slots_used() <= len(keep):
                break  # things changed while we were asking
            reply = await self.requests.request(p.Seek, game=spec.game, options=spec.options,
                                                clock=spec.clock)
            assert isinstance(reply, p.SeekCreated)
            self.made += 1
            log.info("seeking %s (seek %d)", spec, reply.seek_id)
            keep.append(spec)
