"""The app's parts, as the code that serves connections sees them.

:class:`Host` is what a session, a request's handler and a topology (``server.seam``)
reach through ``app``: typed against this rather than :class:`server.app.App`, none of
them imports the module that wires them together. :class:`Hosted` is a topology as the
app takes it: it is handed the host once the app is built (``bind``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from .seam import Topology

if TYPE_CHECKING:
    import protocol as p

    from .accounts import Accounts
    from .admission import Admission
    from .config import Settings
    from .deadlines import Wheel
    from .games import Games
    from .history import History
    from .ladder import Ladder
    from .lobby import Lobby, Members
    from .metrics import Metrics
    from .ratelimit import AccountLimits, BucketTable
    from .rematch import Rematches
    from .revocation import Revocable
    from .seam import Caller, GameRequest, Placement, Revocations
    from .storage import Store
    from .tasks import Tasks
    from .wsio import Handling, Outbox

Handler = Callable[[Any, Any], Awaitable["p.ServerMessage | None"]]
"""A request's handler: ``(session, message) -> reply`` (``server.handlers``)."""


class Host(Protocol):
    """The parts of the server (the app) its connections and its topology use."""

    @property
    def settings(self) -> Settings: ...

    @property
    def store(self) -> Store: ...

    @property
    def metrics(self) -> Metrics: ...

    @property
    def tasks(self) -> Tasks: ...

    @property
    def accounts(self) -> Accounts: ...

    @property
    def admission(self) -> Admission: ...

    @property
    def placement(self) -> Placement: ...

    @property
    def members(self) -> Members: ...

    @property
    def games(self) -> Games: ...

    @property
    def lobby(self) -> Lobby: ...

    @property
    def history(self) -> History: ...

    @property
    def rematches(self) -> Rematches: ...

    @property
    def ladder(self) -> Ladder: ...

    @property
    def outbox(self) -> Outbox: ...

    @property
    def handling(self) -> Handling: ...

    @property
    def handlers(self) -> Mapping[type, Handler]:
        """The handler of each request type (``server.handlers.HANDLERS``)."""

    @property
    def deadlines(self) -> Wheel:
        """The connections' hello and login deadlines."""

    @property
    def address_egress(self) -> BucketTable | None:
        """The bytes of replies per client address (None: no limit)."""

    @property
    def account_requests(self) -> AccountLimits: ...

    @property
    def account_chat(self) -> AccountLimits: ...

    @property
    def revocations(self) -> Revocations: ...

    @property
    def sessions(self) -> Collection[Revocable]:
        """The connections open to this process."""

    async def serve_forwarded(self, user: Caller, message: GameRequest) -> list[bytes]:
        """Run a request another process forwarded, by the handler a connection's own
        request gets: the frames it sends back (a refusal raises ``ProtocolError``)."""


class Hosted(Topology, Protocol):
    """A topology as the app takes it."""

    def bind(self, host: Host) -> None:
        """The app is built: the parts this topology serves."""
