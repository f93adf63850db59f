"""A game this node owns: its room publishes its events and writes under its epoch.

:class:`OwnedRoom` is the ordinary :class:`~server.rooms.GameRoom` with two differences,
both outside the room's own code (a lone server's move path is untouched):

- every event it sends its listeners is also published on the game's channel while
  another node may follow the game (``ClusterNode.publish``: a loop turn's events in one
  pipeline, in order), for the nodes whose connections follow it (``remote.RemoteGame``);
- everything it stores goes through a :class:`FencedWriter`: the item carries the room's
  epoch (as every room's items do; a lone server's have none), so the database refuses it
  once another node took the game over (``StaleEpoch``), and nothing is even tried once the
  lease is not held (``Leases.holds``); either way the node is told it lost the game
  (``on_lost``) and the request fails with ``internal_error`` (safe to resend: it then goes
  to the new owner).

A player's connections on other nodes count as present through one :class:`RemoteSeat`
per (node, seat): a listener that receives nothing (their node relays from the channel).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from protocol import ErrorCode, ProtocolError
from protocol import Move as MoveRequest
from server.rooms import GameRoom, Writer
from server.storage import GameRatings, Item, StaleEpoch

from .remote import ENDING, EVENT, FINAL

# refusals a room makes from its own view of the game: wrong if another node moved it on
STATE_REFUSALS = frozenset({ErrorCode.STALE_PLY, ErrorCode.NOT_YOUR_TURN,
                            ErrorCode.ILLEGAL_MOVE})


class Owner(Protocol):
    """What an owned room needs of its node."""

    def holds(self, game_id: str) -> bool: ...

    async def confirm(self, game_id: str) -> bool:
        """Whether the lease is held, once a renewal under way has ended."""

    def publish(self, game_id: str, seq: int, kind: str, frame: bytes) -> None: ...

    def lost(self, game_id: str, why: str) -> None: ...

    async def still_owns(self, game_id: str) -> bool:
        """Whether the game's lease in Redis is still this node's (asked of Redis)."""


class FencedWriter:
    """The commit queue as one owned room writes to it (see the module docstring)."""

    def __init__(self, writer: Writer, room: GameRoom, owner: Owner) -> None:
        self._writer = writer
        self._room = room
        self._owner = owner

    def submit(self, item: Item) -> Awaitable[GameRatings | None]:
        if self._owner.holds(self._room.game_id):
            return self._submit(item)
        return self._submit_unconfirmed(item)

    async def _submit_unconfirmed(self, item: Item) -> GameRatings | None:
        room = self._room
        if not await self._owner.confirm(room.game_id):
            self._owner.lost(room.game_id, "lease not held")
            raise StaleEpoch(f"game {room.game_id!r}: this node's lease is not confirmed; "
                             "not written")
        return await self._submit(item)

    async def _submit(self, item: Item) -> GameRatings | None:
        assert item.epoch == self._room.epoch, "a room's items carry its epoch"
        try:
            return await self._writer.submit(item)
        except StaleEpoch:
            self._owner.lost(self._room.game_id, "stale epoch")
            raise


def owned_room_class(owner: Owner) -> Callable[..., GameRoom]:
    """The room class of a node: rooms that publish and write fenced (module docstring)."""

    class OwnedRoom(GameRoom):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._writer = FencedWriter(self._writer, self, owner)
            self.lost = False

        async def play(self, user_id: int, request: MoveRequest) -> int:
            """A move; a refusal made from this room's state (a ply or a turn it does not
            know of) is checked against the lease first: another node may have taken the
            game and moved on while this one did not know yet (its lease is held locally
            until it is due for renewal). Then the game is lost here and the client told
            to send again (``internal_error``), which reaches the owner."""
            try:
                return await super().play(user_id, request)
            except ProtocolError as exc:
                if exc.code not in STATE_REFUSALS or await owner.still_owns(self.game_id):
                    raise
                owner.lost(self.game_id, "another node owns it")
                raise ProtocolError("this game is now run by another node; send it again",
                                    code=ErrorCode.INTERNAL_ERROR,
                                    game_id=self.game_id) from None

        def _send_all(self, frame: bytes) -> None:
            super()._send_all(frame)
            kind = FINAL if not self.status.live else ENDING if self.state.is_over else EVENT
            owner.publish(self.game_id, self.seq, kind, frame)

        def _set_timer(self, flag: int, delay_s: float) -> None:
            if not self.lost:  # a game lost to another node keeps no timer
                super()._set_timer(flag, delay_s)

    return OwnedRoom


class RemoteSeat:
    """A player's connections on another node, present in a room this node owns."""

    def __init__(self, node: str, game_id: str, seat: int) -> None:
        self.node = node
        self.game_id = game_id
        self.seat = seat

    def send_frame(self, frame: bytes) -> None:
        """Nothing: their node relays the game's channel."""
