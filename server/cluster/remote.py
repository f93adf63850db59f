"""A game owned by another node, as this node's connections follow it.

The owner publishes every event of a game on the game's channel (``game:{g}``) as
``[seq, kind, frame]``: ``kind`` is ``"e"`` for an event (the protocol frame every
connection gets), ``"m"`` for an event the game's last one follows at once (the ``moved``
of a move that ends the game), ``"x"`` for the game's last event (its ``game_over``: the
relay stops there) or ``"s"`` for an unasked ``game_state`` (a new owner took the game
over: the clocks restarted). A node with connections following a game it does not own keeps one
:class:`RemoteGame` for it, subscribed to the channel, and relays the frames to them:

- in seq order, each once: a repeat is dropped; an event ahead of the next expected one
  waits, and if the missing ones do not come within ``GAP_WAIT_S`` (Redis pub/sub is at
  most once) they are fetched from the owner (``catch_up``: the owner's event log, or a
  snapshot);
- to each connection only the events after the point it was brought up to (the seq of
  the snapshot or of the last missed event it was sent when it attached), so a reply that
  overtook the channel's events is not followed by a repeat.

A player's move sent to the owner from this node is acknowledged from here
(``expect_move``): when the game's ``moved`` event of that ply and move is relayed, the
``move_ack`` is sent right after it, in the same call (after the ``game_over`` if the move
ended the game), so the client sees them in the order of one server.

It stands in for the room on this node (``server.rooms.Watched``): a session follows it as
it follows a local room, and a player's connections going and coming are told to the
owner (the first of a seat here: ``joined``; the last: ``left``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol

import msgpack

from server.rooms import Listener

log = logging.getLogger(__name__)

EVENT = "e"
ENDING = "m"
FINAL = "x"
SNAPSHOT = "s"
GAP_WAIT_S = 0.3  # an event missing this long is fetched from the owner
KEPT = 256  # events kept to bring a connection attached late up to date


def same_move(text: str) -> str:
    """A move's text as the rules read it, to compare a sent move with the owner's
    canonical one: case, spaces and the order of a two-stone placement do not matter
    (``Wf7, ba1`` is ``Ba1,Wf7``)."""
    return ",".join(sorted("".join(part.split()).lower() for part in text.split(",")))


class Links(Protocol):
    """What a remote game asks of its node."""

    def catch_up(self, remote: RemoteGame) -> None:
        """Fetch the events after ``remote.last`` from the owner (in a task)."""

    def seat_changed(self, remote: RemoteGame, seat: int, present: bool) -> None:
        """The first (present) or last (not) connection of a seat on this node."""

    def idle(self, remote: RemoteGame) -> None:
        """Nobody here follows the game any more."""

    def game_over(self, remote: RemoteGame) -> None:
        """The game is over: nothing more will be published."""


class RemoteGame:
    """One game owned elsewhere and the connections of this node that follow it."""

    def __init__(self, game_id: str, links: Links) -> None:
        self.game_id = game_id
        self.player_ids: tuple[int, int] | None = None
        self.owner: str | None = None  # the owner node last heard of (a hint)
        self.last: int | None = None  # the seq of the last event relayed
        self.listeners: dict[Listener, int] = {}  # -> the seq it is up to
        self.seats: dict[Listener, int] = {}
        self.holds = 0  # attachments under way (the game is not idle meanwhile)
        self.over = False  # its last event was relayed
        self._links = links
        self._pending: dict[int, tuple[str, bytes]] = {}
        self._kept: deque[tuple[int, bytes]] = deque(maxlen=KEPT)
        self._gap_timer: asyncio.TimerHandle | None = None
        # moves sent to the owner from here: ply -> [(move text, called with its seq)]
        self._expected: dict[int, list[tuple[str, Callable[[int], None]]]] = {}
        self._acking: list[tuple[Callable[[int], None], int]] = []  # until game_over
        self.stats_relayed = 0
        self.stats_fetched = 0

    # -- as a room (server.rooms.Watched) ------------------------------------------------
    def seat_of(self, user_id: int) -> int | None:
        if self.player_ids is None:
            return None
        for seat, player in enumerate(self.player_ids):
            if player == user_id:
                return seat
        return None

    def subscribe(self, listener: Listener) -> None:
        self.listeners.setdefault(listener, self.last or 0)

    def unsubscribe(self, listener: Listener) -> None:
        self.listeners.pop(listener, None)
        seat = self.seats.pop(listener, None)
        if seat is not None and not self.over and seat not in self.seats.values():
            self._links.seat_changed(self, seat, False)
        if not self.listeners and not self.holds:
            self._links.idle(self)

    async def player_connected(self, seat: int, listener: Listener, *,
                               tell_self: bool = True) -> None:
        self.attach(listener, self.last or 0, seat)

    async def player_disconnected(self, seat: int, listener: Listener) -> None:
        self.unsubscribe(listener)

    # -- connections ---------------------------------------------------------------------
    def attach(self, listener: Listener, seq: int, seat: int | None, *,
               told: bool = False) -> None:
        """Follow the game from event ``seq`` on (the listener was sent everything up to
        it); the events already relayed after it are sent at once. A player's seat is
        told to the owner if it is the first here (unless ``told``: the owner knows)."""
        if self.last is None:  # the first: what came before it waited for it
            self.last = self.listeners[listener] = seq
            self._drain()
        else:
            if seq < self.last:
                for kept_seq, frame in self._kept:
                    if kept_seq > seq:
                        listener.send_frame(frame)
                seq = self.last
            self.listeners[listener] = seq
        if seat is not None:
            was_here = seat in self.seats.values()
            self.seats[listener] = seat
            if not was_here and not told and not self.over:
                self._links.seat_changed(self, seat, True)

    def local_seats(self) -> set[int]:
        return set(self.seats.values())

    @contextlib.contextmanager
    def expect_move(self, ply: int, move: str, on_moved: Callable[[int], None]
                    ) -> Iterator[None]:
        """While inside: when the ``moved`` of ``move`` at ``ply`` is relayed,
        ``on_moved(seq)`` is called right after it (after the ``game_over`` if the move
        ended the game). A ``moved`` of another move at that ply calls nothing."""
        entry = (same_move(move), on_moved)
        self._expected.setdefault(ply, []).append(entry)
        try:
            yield
        finally:
            waiting = self._expected.get(ply, [])
            if entry in waiting:
                waiting.remove(entry)
            if not waiting:
                self._expected.pop(ply, None)

    # -- events --------------------------------------------------------------------------
    def deliver(self, seq: int, kind: str, frame: bytes) -> None:
        """An event (or a new owner's snapshot) from the channel or from a reply."""
        if self.last is None:  # not attached yet: the first attachment says where we are
            self._pending[seq] = (kind, frame)
            return
        if kind == SNAPSHOT:  # a new owner: it is told who is here
            if seq < self.last:
                return
            self._relay(seq, frame, SNAPSHOT)
            self._drain()
            for seat in self.local_seats():
                self._links.seat_changed(self, seat, True)
            return
        if seq <= self.last:
            return
        if seq > self.last + 1:
            self._pending[seq] = (kind, frame)
            self._arm_gap_timer()
            return
        self._relay(seq, frame, kind)
        self._drain()

    def deliver_all(self, events: Iterable[tuple[int, bytes]], *, over: bool = False) -> None:
        """Events from a reply (``over``: the last of them ends the game)."""
        listed = list(events)
        last = len(listed) - 1
        for index, (seq, frame) in enumerate(listed):
            kind = EVENT
            if over and index >= last - 1:
                kind = FINAL if index == last else ENDING
            self.deliver(seq, kind, frame)

    def _relay(self, seq: int, frame: bytes, kind: str) -> None:
        self.last = seq
        snapshot = kind == SNAPSHOT
        if not snapshot:
            self._kept.append((seq, frame))
        self.stats_relayed += 1
        for listener, seen in list(self.listeners.items()):
            if seq > seen or (snapshot and seq >= seen):
                listener.send_frame(frame)
                self.listeners[listener] = seq
        if self._expected and not snapshot:
            self._acknowledge(seq, kind, frame)
        elif self._acking:  # the game_over after a move that ended the game
            acking, self._acking = self._acking, []
            for on_moved, moved_seq in acking:
                on_moved(moved_seq)
        if kind == FINAL and not self.over:
            self.over = True
            self._links.game_over(self)

    def _acknowledge(self, seq: int, kind: str, frame: bytes) -> None:
        """A move expected here is relayed: its ack now, or after the game_over."""
        if self._acking:
            acking, self._acking = self._acking, []
            for on_moved, moved_seq in acking:
                on_moved(moved_seq)
        event = msgpack.unpackb(frame, raw=False)
        if not isinstance(event, dict) or event.get("t") != "moved":
            return
        waiting = self._expected.get(event.get("ply", -1))
        if not waiting:
            return
        played = same_move(str(event.get("move", "")))
        for _text, on_moved in [entry for entry in waiting if entry[0] == played]:
            if kind == ENDING:
                self._acking.append((on_moved, seq))
            else:
                on_moved(seq)

    def _drain(self) -> None:
        """Relay what waited for the events before it; fetch what is still missing."""
        assert self.last is not None
        while self._pending:
            for seq in [seq for seq in self._pending if seq <= self.last]:
                kind, frame = self._pending.pop(seq)
                if kind == SNAPSHOT and seq == self.last:
                    self._relay(seq, frame, kind)
            following = self._pending.pop(self.last + 1, None)
            if following is None:
                break
            kind, frame = following
            self._relay(self.last + 1, frame, kind)
        if self._pending:
            self._arm_gap_timer()
        elif self._gap_timer is not None:
            self._gap_timer.cancel()
            self._gap_timer = None

    def _arm_gap_timer(self) -> None:
        if self._gap_timer is None:
            self._gap_timer = asyncio.get_running_loop().call_later(GAP_WAIT_S, self._gap)

    def _gap(self) -> None:
        self._gap_timer = None
        if self._pending:
            self.stats_fetched += 1
            self._links.catch_up(self)

    def catch_up_failed(self) -> None:
        """The owner could not be asked: try again later."""
        if self._pending:
            self._arm_gap_timer()

    def close(self) -> None:
        if self._gap_timer is not None:
            self._gap_timer.cancel()
            self._gap_timer = None
