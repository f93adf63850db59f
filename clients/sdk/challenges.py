"""Challenges, both ways: the runner's answers to the ones it receives, and its own.

A received challenge is accepted when the policy allows it, the runner is not stopping and
a game slot is free; otherwise it is declined, with the reason as the decline's message
(the challenger sees it in ``challenge_ended``). Declines never wait for their reply and
have a budget of their own (:class:`~clients.sdk.requests.Requests`; free at the server):
a challenge that cannot be declined within it right away is deferred, and declined, oldest
first, as the budget allows, unless it ends first. The deferred are few: the server caps
the challenges pending from one challenger and from one address, and a stranger's lapses
unanswered; beyond ``DEFERRED_KEPT`` the oldest are dropped unanswered. Both are counted in
the log once in a while. Nothing deferred outlives the connection or holds up a stop. An
accepted challenge holds its slot until its game starts.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import protocol as p
from clients.connection import Disconnected, ServerError
from protocol.limits import MAX_NOTE_CHARS

from .policy import Policy
from .requests import Requests

log = logging.getLogger("clients.sdk")

ACCEPT_WAIT_S = 30.0  # an accepted challenge holds a game slot until its game starts
DROP_REPORT_S = 10.0  # deferred and dropped challenges are counted in the log this often
DEFERRED_KEPT = 1000  # challenges waiting to be declined; beyond, the oldest are dropped
ENDS_KEPT = 100  # endings of challenges not (yet) known here, kept for a reply still due


class ChallengeDeclined(Exception):
    """A challenge sent with :meth:`BotRunner.challenge` was declined or cancelled."""


@dataclass(frozen=True, slots=True)
class Accepted:
    """A challenge the runner accepted whose ``game_started`` has not come yet."""

    sender: str
    game: str
    options: dict[str, Any]
    clock: p.TimeControl
    since: float


@dataclass(slots=True)
class Outgoing:
    """A challenge the runner sent and whose game it waits for."""

    to: str
    game: str
    options: dict[str, Any]
    clock: p.TimeControl
    color: int | str
    future: asyncio.Future[str] = field(repr=False)


class ChallengeDesk:
    """The runner's challenges; the event sink for ``challenge_received``/``_ended``."""

    def __init__(self, requests: Requests, *, policy: Callable[[], Policy],
                 games_in_progress: Callable[[], int], stopping: Callable[[], bool],
                 changed: Callable[[], None], spawn: Callable[[Any], asyncio.Task[Any]]
                 ) -> None:
        self.requests = requests
        self.policy = policy
        self.games_in_progress = games_in_progress
        self.stopping = stopping
        self.changed = changed  # a slot was taken or freed: seeks may need updating
        self.spawn = spawn
        self.accepted: dict[int, Accepted] = {}
        # Our challenges by id; one whose reply has not come yet has a negative key: its
        # game (or its end) may come before the reply is read.
        self.outgoing: dict[int, Outgoing] = {}
        self.unmatched_ends: OrderedDict[int, p.ChallengeEnded] = OrderedDict()
        self._provisional = 0
        # challenges to decline when the decline budget allows: id -> (event, reason)
        self.deferred: OrderedDict[int, tuple[p.ChallengeReceived, str]] = OrderedDict()
        self._declining: asyncio.Task[None] | None = None
        self.counts = {"deferred": 0, "dropped": 0}  # since the last report in the log
        self.reported = -DROP_REPORT_S  # when that was

    def pending_accepts(self) -> int:
        """Accepted challenges whose game has not started (each holds a game slot)."""
        now = time.monotonic()
        for cid in [c for c, a in self.accepted.items() if now - a.since > ACCEPT_WAIT_S]:
            del self.accepted[cid]  # the game never came: the slot is free again
        return len(self.accepted)

    # -- received ------------------------------------------------------------------------------
    def on_challenge_received(self, ch: p.ChallengeReceived) -> None:
        sender = ch.from_.name
        policy = self.policy()
        reason = policy.refusal(sender, ch.game, ch.options, ch.clock, bool(ch.rated))
        if reason is None and self.stopping():
            reason = "the bot is shutting down"
        busy = self.games_in_progress() + self.pending_accepts()
        if reason is None and busy >= policy.max_games:
            reason = f"busy: playing {busy} of at most {policy.max_games} games"
        if reason is not None:
            self._decline(ch, reason)
            return
        log.info("accepting challenge %d from %s: %s", ch.challenge_id, sender, ch.game)
        # the server may answer before game_started: the slot is taken until it comes
        self.accepted[ch.challenge_id] = Accepted(sender.lower(), ch.game, dict(ch.options),
                                                  ch.clock, time.monotonic())
        self.spawn(self._accept(ch))

    async def _accept(self, ch: p.ChallengeReceived) -> None:
        try:
            await self.requests.request(p.AcceptChallenge, challenge_id=ch.challenge_id)
        except (ServerError, Disconnected) as e:
            self.accepted.pop(ch.challenge_id, None)
            log.info("challenge %d from %s: %s", ch.challenge_id, ch.from_.name, e)
        self.changed()

    def _decline(self, ch: p.ChallengeReceived, reason: str) -> None:
        """Decline with the reason, within the decline budget; defer it otherwise."""
        if not self.deferred and self._send_decline(ch, reason):
            return
        self.deferred[ch.challenge_id] = (ch, reason)
        self._count("deferred")
        while len(self.deferred) > DEFERRED_KEPT:
            self.deferred.popitem(last=False)
            self._count("dropped")
        if self._declining is None or self._declining.done():
            self._declining = self.spawn(self._decline_deferred())

    def _send_decline(self, ch: p.ChallengeReceived, reason: str, *, paid: bool = False
                      ) -> bool:
        if not self.requests.decline(ch.challenge_id, reason[:MAX_NOTE_CHARS], paid=paid):
            return False
        log.info("declining challenge %d from %s (%s): %s", ch.challenge_id, ch.from_.name,
                 ch.game, reason)
        return True

    async def _decline_deferred(self) -> None:
        """Decline the deferred challenges, oldest first, as the budget allows; forget them
        when the connection goes (the server ends a gone user's challenges)."""
        while self.deferred:
            await self.requests.declines.take()
            if self.requests.conn is None:
                self.deferred.clear()
                return
            if not self.deferred:
                return
            _, (ch, reason) = self.deferred.popitem(last=False)
            self._send_decline(ch, reason, paid=True)

    def _count(self, what: str) -> None:
        self.counts[what] += 1
        now = time.monotonic()
        if now - self.reported >= DROP_REPORT_S:  # the first at once, then a count at most
            log.warning("challenges beyond what the bot declines at once: %d deferred, %d "
                        "dropped unanswered (next count in %.0f s)", self.counts["deferred"],
                        self.counts["dropped"], DROP_REPORT_S)
            self.counts = dict.fromkeys(self.counts, 0)
            self.reported = now

    def on_challenge_ended(self, event: p.ChallengeEnded) -> None:
        self.deferred.pop(event.challenge_id, None)
        if event.reason == "accepted":
            return
        outgoing = self.outgoing.pop(event.challenge_id, None)
        if outgoing is None:  # not ours, or ours before its reply was read
            self.unmatched_ends[event.challenge_id] = event
            while len(self.unmatched_ends) > ENDS_KEPT:
                self.unmatched_ends.popitem(last=False)
            return
        _declined(outgoing, event)

    # -- sent ----------------------------------------------------------------------------------
    async def challenge(self, to: str, game: str, options: dict[str, Any] | None,
                        clock: p.TimeControl | None, color: int | str) -> str:
        """Challenge user ``to``; the game id once accepted (see BotRunner.challenge)."""
        clock = clock or p.Unlimited()
        request = p.Challenge(id=0, to=to, game=game, options=dict(options or {}), clock=clock,
                              color=color)  # type: ignore[arg-type]
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        outgoing = Outgoing(to.lower(), game, dict(request.options), clock, color, future)
        self._provisional -= 1
        key = self._provisional
        self.outgoing[key] = outgoing  # before the request: its game may come first
        try:
            reply = await self.requests.request(p.Challenge, to=to, game=game,
                                                options=request.options, clock=clock,
                                                color=color)
        finally:
            self.outgoing.pop(key, None)
        assert isinstance(reply, p.ChallengeCreated)
        ended = self.unmatched_ends.pop(reply.challenge_id, None)
        if ended is not None:
            _declined(outgoing, ended)
        elif not future.done():
            self.outgoing[reply.challenge_id] = outgoing
        return await future

    def settle(self, me: str, snapshot: p.Snapshot) -> bool:
        """A new game may come from a challenge: the oldest one it fits is settled.

        Returns whether it did (if not, the game comes from a seek).
        """
        players = [u.name.lower() for u in snapshot.players]
        if me.lower() not in players:
            return False
        seat = players.index(me.lower())
        offer = (players[1 - seat], snapshot.game, dict(snapshot.options), snapshot.clock)
        for cid, acc in self.accepted.items():
            if (acc.sender, acc.game, acc.options, acc.clock) == offer:
                del self.accepted[cid]
                return True
        for cid, out in self.outgoing.items():
            if (out.to, out.game, out.options, out.clock) == offer and out.color in (
                    "random", seat):
                del self.outgoing[cid]
                if not out.future.done():
                    out.future.set_result(snapshot.game_id)
                return True
        return False


def _declined(outgoing: Outgoing, event: p.ChallengeEnded) -> None:
    why = f": {event.message}" if event.message else ""
    if not outgoing.future.done():
        outgoing.future.set_exception(ChallengeDeclined(
            f"challenge to {outgoing.to} was {event.reason}{why}"))
