"""The runner's seeks: kept open in the lobby while it has free game slots.

With fewer free slots than seeks, the seeks take turns, one game at a time. The keeper knows
its open seeks by id, from the server's own word: ``seek_created`` opens one, its
cancellation's reply closes it, and ``seek_taken`` (sent once the game the seek became has
started; before ``seek_created`` for a seek paired at once) says which game it became. So
nothing is counted or guessed. When the runner stops, the seeks are withdrawn; it is done
with them once none is open and every seek whose cancellation came too late (it was taken)
has had its ``seek_taken``, that is once its game has started, which the runner then plays.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable

import protocol as p
from clients.connection import Disconnected, ServerError

from .policy import Policy
from .requests import Requests
from .specs import SeekSpec

log = logging.getLogger("clients.sdk")

SEEK_REFRESH_S = 30.0  # the seeks are brought in line with the free slots at least this often
GAME_DUE_WAIT_S = 30.0  # how long to wait, stopping, for the seek_taken of a seek taken
TAKEN_KEPT = 100  # seek_taken events for seeks not known (yet) here, kept for a reply due


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
    """The seeks of the runner's policy and their state on the current connection; the event
    sink (``clients.events``) for ``seek_taken``."""

    def __init__(self, requests: Requests, *, policy: Callable[[], Policy],
                 slots_used: Callable[[], int], stopping: Callable[[], bool],
                 settled: Callable[[], None]) -> None:
        self.requests = requests
        self.policy = policy
        self.slots_used = slots_used
        self.stopping = stopping
        self.settled = settled  # called once the seeks are withdrawn while stopping
        self.wakeup = asyncio.Event()
        self.cursor = 0
        self.max_open = 5
        self.open: dict[int, SeekSpec] = {}  # our seeks on the server, by id
        self.leaving: dict[int, float] = {}  # taken as we cancelled them: seek_taken is due
        self.taken_early: OrderedDict[int, str] = OrderedDict()  # seek_taken before its id
        # Stopping, the runner is done only once the server has let go of its seeks.
        self.withdrawn = not policy().seeks

    def connected(self, limits: p.Limits | None) -> None:
        """A new connection: it has no seeks yet (a connection's seeks end with it)."""
        if limits is not None:
            self.max_open = limits.max_open_seeks
        self.open.clear()
        self.leaving.clear()
        self.wakeup.set()

    def disconnected_for_good(self) -> None:
        """No connection while stopping: a connection's seeks go with it."""
        self.withdrawn = True

    # -- events (clients.events) ---------------------------------------------------------------
    def on_seek_taken(self, event: p.SeekTaken) -> None:
        """One of our seeks became a game (whose ``game_started`` came first)."""
        spec = self.open.pop(event.seek_id, None)
        due = self.leaving.pop(event.seek_id, None)
        if spec is None and due is None:  # paired at once: its seek_created is on its way
            self.taken_early[event.seek_id] = event.game_id
            while len(self.taken_early) > TAKEN_KEPT:
                self.taken_early.popitem(last=False)
        log.info("seek %d became game %s", event.seek_id, event.game_id)
        self.wakeup.set()

    # -- keeping them in line ------------------------------------------------------------------
    async def run(self, done: asyncio.Event) -> None:
        """Keep the seeks in line with the free slots until ``done``."""
        while not done.is_set():
            await wait_event(self.wakeup, 1.0 if self.leaving else SEEK_REFRESH_S)
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
        stopping = self.stopping()
        free = policy.max_games - self.slots_used()
        want = 0 if stopping else max(0, min(len(specs), free, self.max_open))
        kept: list[SeekSpec] = []
        for seek_id, spec in list(self.open.items()):
            if len(kept) < want and spec in specs and all(spec is not k for k in kept):
                kept.append(spec)
            else:
                await self._cancel(seek_id)
        if stopping:
            self._settle_stopping()
            return
        await self._open(specs, kept, want)

    async def _cancel(self, seek_id: int) -> None:
        log.info("withdrawing seek %d", seek_id)
        try:
            await self.requests.request(p.CancelSeek, seek_id=seek_id)
        except ServerError as e:
            if e.code != p.ErrorCode.NOT_FOUND:
                raise
            if seek_id in self.open:  # taken: its game is starting, its seek_taken due
                self.leaving[seek_id] = time.monotonic()
        self.open.pop(seek_id, None)

    def _settle_stopping(self) -> None:
        now = time.monotonic()
        for seek_id in [s for s, since in self.leaving.items() if now - since > GAME_DUE_WAIT_S]:
            log.warning("seek %d was taken but no game came of it", seek_id)
            del self.leaving[seek_id]
        if self.leaving:
            log.info("stopping: %d game(s) from taken seeks still to start", len(self.leaving))
            return
        self.withdrawn = True
        self.settled()

    async def _open(self, specs: tuple[SeekSpec, ...], kept: list[SeekSpec], want: int) -> None:
        for _ in range(len(specs)):
            if len(kept) >= want:
                break
            spec = specs[self.cursor % len(specs)]
            self.cursor += 1
            if any(k is spec for k in kept):
                continue
            if self.stopping() or self.policy().max_games - self.slots_used() <= len(kept):
                break  # things changed while we were asking
            reply = await self.requests.request(p.Seek, game=spec.game, options=spec.options,
                                                clock=spec.clock)
            assert isinstance(reply, p.SeekCreated)
            kept.append(spec)
            game_id = self.taken_early.pop(reply.seek_id, None)
            if game_id is not None:
                log.info("seek %d (%s) was paired at once: game %s", reply.seek_id, spec,
                         game_id)
                continue
            self.open[reply.seek_id] = spec
            log.info("seeking %s (seek %d)", spec, reply.seek_id)
