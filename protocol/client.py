"""Sans-I/O helpers for clients: request ids and replies, and game event order.

A client sends requests with fresh ids and matches replies to them::

    pending = PendingRequests()
    request = Move(id=pending.next_id(), game_id="k3v9q2x7ma", ply=4, move="c3")
    pending.add(request)
    send(encode(request))
    ...
    message = decode_server(frame)
    if isinstance(message, Reply):
        request = pending.resolve(message)     # the Move, or None if not ours
    else:
        verdict = seqs.observe(message)        # "new", "old" (skip) or "gap" (resume)
"""

from __future__ import annotations

from typing import Literal

from protocol.limits import MAX_INT32
from protocol.messages import (
    ClientMessage,
    GameEvent,
    GameStarted,
    GameState,
    Reply,
)

__all__ = ["GameSeqs", "PendingRequests"]


class PendingRequests:
    """Allocates request ids and remembers the requests still waiting for a reply."""

    def __init__(self, first_id: int = 1) -> None:
        self._next = first_id
        self._pending: dict[int, ClientMessage] = {}

    def next_id(self) -> int:
        """A fresh id (1, 2, ...; wraps within 1..2^31-1, skipping ids still pending)."""
        while True:
            request_id = self._next
            self._next = request_id + 1 if request_id < MAX_INT32 else 1
            if request_id not in self._pending:
                return request_id

    def add(self, request: ClientMessage) -> None:
        """Remember ``request`` until its reply; ValueError if its id is already pending."""
        if request.id in self._pending:
            raise ValueError(f"request id {request.id} is already pending")
        self._pending[request.id] = request

    def resolve(self, reply: Reply) -> ClientMessage | None:
        """The request ``reply`` answers, now no longer pending; None if there is none."""
        if reply.id is None:
            return None
        return self._pending.pop(reply.id, None)

    def __len__(self) -> int:
        return len(self._pending)

    def __contains__(self, request_id: object) -> bool:
        return request_id in self._pending


Verdict = Literal["new", "old", "gap"]


class GameSeqs:
    """The last event seq seen per game, to drop repeats and notice gaps.

    ``observe`` an event: "new" (apply it), "old" (seen already: drop it) or "gap" (an
    event was missed: send ``resume`` with ``since_seq=last(game_id)``). A snapshot
    (``game_state``, ``game_started``) sets the game's seq to its own.
    """

    def __init__(self) -> None:
        self._last: dict[str, int] = {}

    def last(self, game_id: str) -> int:
        """The seq of the last event applied for ``game_id`` (0 if none)."""
        return self._last.get(game_id, 0)

    def observe(self, event: GameEvent) -> Verdict:
        last = self.last(event.game_id)
        if isinstance(event, GameStarted):
            if event.seq <= last:
                return "old"
            self._last[event.game_id] = event.seq
            return "new"
        if event.seq <= last:
            return "old"
        if event.seq != last + 1:
            return "gap"
        self._last[event.game_id] = event.seq
        return "new"

    def snapshot(self, state: GameState) -> None:
        """Take the seq of a full snapshot: events up to it are in the snapshot."""
        self._last[state.game.game_id] = state.game.seq

    def forget(self, game_id: str) -> None:
        self._last.pop(game_id, None)
