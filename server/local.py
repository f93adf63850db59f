"""A lone server's side of the seam (:mod:`server.seam`): everything in this process.

Every game runs here, every user is connected here, and the lobby's state, the ladder's
roster and the budgets are in memory. The same handlers, lobby and games run on a node of
a cluster with ``server.cluster``'s implementations instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from .lockout import MemoryLockout
from .offers import (
    LOCAL_NODE,
    MemoryChallenges,
    MemoryPresence,
    MemoryRematches,
    MemoryRoster,
    MemorySeeks,
)
from .ratelimit import MemoryTokenBuckets, address_budgets
from .revocation import close_revoked
from .rooms import GameRoom

if TYPE_CHECKING:
    from .config import Settings
    from .host import Host
    from .seam import Asker, GameRequest, Seated


class LocalPlacement:
    """Every game runs in this process."""

    def __init__(self) -> None:
        self._host: Host | None = None

    @property
    def host(self) -> Host:
        assert self._host is not None, "not bound to a server yet"
        return self._host

    def room_class(self) -> Callable[..., GameRoom]:
        return GameRoom

    async def claim_new(self, game_id: str) -> int | None:
        return None  # nobody else may run it: written unfenced

    def finished(self, room: GameRoom) -> None:
        """Nothing to let go of."""

    async def forward(self, s: Asker, message: GameRequest) -> bool:
        return False  # a game not running here is over, or unknown: answered here

    async def follow(self, s: Asker, game_id: str, request_id: int,
                     since_seq: int | None, *, as_player: bool) -> bool:
        return False

    async def active_games(self, user_id: int) -> list[str]:
        return [room.game_id for room in self.host.games.active_of(user_id)]

    async def playing_counts(self, user_ids: list[int]) -> dict[int, int]:
        return {user_id: self.host.games.playing(user_id) for user_id in user_ids}


class LocalReach:
    """Every user and lobby subscriber is connected here: there is no other node."""

    def __init__(self, placement: LocalPlacement) -> None:
        self._placement = placement

    async def announce(self, frame: bytes) -> None:
        self._placement.host.lobby.heard(frame)

    async def relist(self) -> None:
        self._placement.host.lobby.may_have_missed()

    async def send_elsewhere(self, user_id: int, nodes: Iterable[str],
                             frames: list[bytes]) -> None:
        assert not list(nodes), "a lone server has no other node"

    def seats_elsewhere(self, user_id: int, nodes: Iterable[str]) -> list[Seated]:
        assert not list(nodes), "a lone server has no other node"
        return []

    async def seat_elsewhere(self, room: GameRoom, user_id: int, nodes: Iterable[str],
                             started: bytes, after: list[bytes]) -> None:
        assert not list(nodes), "a lone server has no other node"

    async def look_again(self) -> None:
        """Nothing: no node can have started elsewhere."""


class LocalRevocations:
    """A logout closes the token's other connections here at once."""

    def __init__(self, placement: LocalPlacement) -> None:
        self._placement = placement

    async def announce(self, digests: list[str]) -> None:
        close_revoked(self._placement.host.sessions, set(digests))


class LocalTopology:
    """A lone server (see the module docstring)."""

    node_id = LOCAL_NODE
    description = ""
    shares_database = False

    def __init__(self, settings: Settings) -> None:
        self.placement = LocalPlacement()
        self.reach = LocalReach(self.placement)
        self.presence = MemoryPresence(LOCAL_NODE)
        self.seeks = MemorySeeks()
        self.challenges = MemoryChallenges()
        self.rematches = MemoryRematches()
        self.account_requests = MemoryTokenBuckets(settings.account_rate,
                                                   settings.account_burst)
        self.account_chat = MemoryTokenBuckets(settings.chat_rate, settings.chat_burst)
        self.address_logins, self.address_guests = address_budgets(
            settings, lambda _scope, rate, burst: MemoryTokenBuckets(rate, burst))
        self.revocations = LocalRevocations(self.placement)
        self.lockout = MemoryLockout(settings.login_lockout_after,
                                     settings.login_lockout_base_s,
                                     settings.login_lockout_max_s)
        self.roster = MemoryRoster()

    def bind(self, host: Host) -> None:
        self.placement._host = host

    async def prepare(self) -> None:
        await self.placement.host.games.restore()

    async def start(self, address: str) -> None:
        """Nothing more to start."""

    async def quiesce(self) -> None:
        """Nothing runs beside the app."""

    async def close(self) -> None:
        """Nothing to close."""

    def compact(self) -> None:
        """Rebuild the in-memory tables at their present size after a flood."""
        self.presence.compact()
        self.seeks.compact()
        self.challenges.compact()


__all__ = ["LocalPlacement", "LocalReach", "LocalRevocations", "LocalTopology"]
