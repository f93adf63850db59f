"""The one seam between one process and a cluster.

Everything that differs between a lone server and a node of a cluster sits behind the
:class:`Topology` built in ``main()`` (``server.cli``) and handed to the
:class:`~server.app.App`, which takes its parts from it once, as it is built:

- **where games run** (:class:`Placement`): claiming a new game (its fencing epoch), the
  room class, a request about a game run elsewhere, following one, a user's games and
  how many each user plays, wherever they run;
- **reaching users** (:class:`Reach`): lobby events to every lobby subscriber, events to
  a user's connections on other nodes, seating them in a game that starts here;
- **the lobby's shared state** (``server.offers``): presence, seeks, challenges, rematch
  offers;
- **budgets** per account over every connection and per client address over every login
  (``ratelimit.AccountLimits``), and failed logins with their locks per (account,
  address) (``lockout.LockoutStore``);
- **revocations**: a logout closes the token's connections everywhere;
- **the ladder's roster** and who pairs its rounds.

The handlers, the games, the lobby and the session are written once against these
interfaces; nothing asks which topology it runs in. ``server.local`` is the lone server's
implementation (in memory), ``server.cluster`` the cluster's (Redis and PostgreSQL). The
topology is given the app's parts it serves (``server.host.Host``) when the app is built.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, Union

if TYPE_CHECKING:
    import protocol as p

    from .lockout import LockoutStore
    from .offers import ChallengeStore, LadderRoster, PresenceStore, RematchStore, SeekStore
    from .ratelimit import AccountLimits
    from .rooms import GameRoom, Watched
    from .storage import User


@dataclass(frozen=True, slots=True)
class Caller:
    """Who a request forwarded from another process came from."""

    id: int
    name: str
    kind: str


GameRequest = Union["p.Move", "p.Resign", "p.Abort", "p.ClaimWin", "p.Chat"]
"""A player's request about a game, run where the game runs."""


class Seated(Protocol):
    """A connection of a player who is seated in a game as it starts."""

    async def joined_game(self, room: GameRoom) -> None: ...


class Asker(Protocol):
    """The connection a forwarded request or a follow comes from (a session)."""

    @property
    def user(self) -> User | None: ...

    @property
    def rooms(self) -> dict[str, Watched]: ...

    def send(self, message: p.ServerMessage) -> None: ...

    def send_frame(self, frame: bytes) -> None: ...


class Placement(Protocol):
    """Where games run, and how a request reaches the one that runs it."""

    def room_class(self) -> Callable[..., GameRoom]:
        """The class of the rooms this process runs."""

    async def claim_new(self, game_id: str) -> int | None:
        """Claim a new game before it is stored: the fencing epoch it is written under
        (None: unfenced, nobody else may run it)."""

    def finished(self, room: GameRoom) -> None:
        """A game run here is over."""

    async def forward(self, s: Asker, message: GameRequest) -> bool:
        """A player's request about a game not run here, sent as it is to the process that
        runs it, which handles it as its own and sends back the frames (its events first,
        then its reply) given here to ``s``; False if the game is to be answered here (run
        here now, finished, or unknown). A refusal raises ``ProtocolError``."""

    async def follow(self, s: Asker, game_id: str, request_id: int,
                     since_seq: int | None, *, as_player: bool) -> bool:
        """Watch or resume a game not run here, replying to the client; False if the game
        is to be answered here."""

    async def active_games(self, user_id: int) -> list[str]:
        """A user's games in progress, wherever they run."""

    async def playing_counts(self, user_ids: list[int]) -> dict[int, int]:
        """How many games each user has in progress, wherever they run."""


class Reach(Protocol):
    """Reaching users and lobby subscribers on other nodes (none on a lone server)."""

    async def announce(self, frame: bytes) -> None:
        """A lobby event for the lobby's subscribers on every node (this one included)."""

    async def relist(self) -> None:
        """The lobby's listing changed with no lobby event (a rated game changed its
        players' ratings): every node (this one included) reads it again when asked."""

    async def send_elsewhere(self, user_id: int, nodes: Iterable[str],
                             frames: list[bytes]) -> None:
        """Frames for a user's connections on other nodes."""

    def seats_elsewhere(self, user_id: int, nodes: Iterable[str]) -> list[Seated]:
        """A starting game's player's connections on other nodes, as seated here."""

    async def seat_elsewhere(self, room: GameRoom, user_id: int, nodes: Iterable[str],
                             started: bytes, after: list[bytes]) -> None:
        """Have other nodes relay a game that just started here to the player's
        connections there (``started``, then ``after``)."""

    async def look_again(self) -> None:
        """Learn of nodes that started a moment ago (before saying a user is offline)."""


class Revocations(Protocol):
    async def announce(self, digests: list[str]) -> None:
        """Tokens ended: their connections close, on every node."""


class Topology(Protocol):
    """One process, or one node of a cluster (see the module docstring)."""

    @property
    def node_id(self) -> str: ...

    @property
    def description(self) -> str:
        """"" alone, "node N of cluster C" on a cluster."""

    @property
    def shares_database(self) -> bool:
        """Whether other processes run games on the same database (the nodes of a
        cluster), or this one holds it alone."""

    @property
    def placement(self) -> Placement: ...

    @property
    def reach(self) -> Reach: ...

    @property
    def presence(self) -> PresenceStore: ...

    @property
    def seeks(self) -> SeekStore: ...

    @property
    def challenges(self) -> ChallengeStore: ...

    @property
    def rematches(self) -> RematchStore: ...

    @property
    def account_requests(self) -> AccountLimits: ...

    @property
    def account_chat(self) -> AccountLimits: ...

    @property
    def address_logins(self) -> AccountLimits | None:
        """Logins and registrations per client address (None: unlimited)."""

    @property
    def address_guests(self) -> AccountLimits | None:
        """New guests per client address (None: unlimited)."""

    @property
    def revocations(self) -> Revocations: ...

    @property
    def lockout(self) -> LockoutStore: ...

    @property
    def roster(self) -> LadderRoster: ...


    async def prepare(self) -> None:
        """Before the server listens (a lone server restores its games in progress)."""

    async def start(self, address: str) -> None:
        """Once the server listens on ``address``."""

    async def quiesce(self) -> None:
        """The server is stopping: no new work."""

    async def close(self) -> None:
        """The server has stopped and stored what it held."""

    def compact(self) -> None:
        """Rebuild what this process holds in memory at its present size (after a flood:
        a dict never shrinks)."""


__all__ = ["Asker", "Caller", "GameRequest", "Placement", "Reach", "Revocations", "Seated",
           "Topology"]
