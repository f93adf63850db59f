"""The lobby as its ``lobby`` replies list it: pages of open seeks and of users online,
each packed once per change of the lobby and the same bytes sent to everyone who asks.

A page lists at most ``page_size`` seeks (oldest first, by id) and as many users (in the
order they came: by ``since_ms``, then name), counts those after it and says where the
next page starts (its cursor, :class:`Position`). A page is read from the topology's
stores (``server.offers``) the first time it is asked for after a change, packed
(``protocol.prepare``: every reply to it is those bytes with the request's id put in) and
kept until the next change: :meth:`Listing.changed`, called when this process changes the
seeks (a seek taken for a game is announced only once the game has started), for every
lobby event this process hears (its own and, on a cluster, every other node's:
``Lobby.heard``), when a rated game changes its players' ratings (no lobby event says so:
the node that ran it tells every node, ``Reach.relist``), and when a node may have missed
events (its link to Redis came back).

Requests that ask for a page while it is being read wait for that one read; a change
meanwhile makes later requests read it again.
"""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import protocol as p
from protocol import User

from .ratings.shown import shown
from .storage import name_key

if TYPE_CHECKING:
    from .offers import Online, PresenceStore, SeekStore
    from .storage import PoolRating

PAGES_KEPT = 64  # pages kept per change; more distinct cursors are read, not kept

RatingsOf = Callable[[list[int]], Awaitable[dict[int, list["PoolRating"]]]]
T = TypeVar("T")
PlayerKey = tuple[int, str]  # (since_ms, name key): the order users are listed in


@dataclass(frozen=True, slots=True)
class Position:
    """Where a page starts: after the seek ``seek_id`` and after the user who came at
    ``since_ms`` with the name key ``name`` (the first page: 0, 0, "")."""

    seek_id: int = 0
    since_ms: int = 0
    name: str = ""

    def cursor(self) -> str:
        """As a ``lobby`` reply's ``next_cursor`` gives it: ``SEEK:SINCE:NAME``."""
        return f"{self.seek_id}:{self.since_ms}:{self.name}"

    @classmethod
    def parse(cls, cursor: str, request_id: int | None = None) -> Position:
        """The position a cursor names; ``bad_request`` for text no lobby reply gave."""
        seek_id, _, rest = cursor.partition(":")
        since_ms, colon, name = rest.partition(":")
        if not (colon and seek_id.isdigit() and since_ms.isdigit()
                and (name == "" or name == name_key(name))
                and len(seek_id) <= 19 and len(since_ms) <= 19):
            raise p.BadRequest("lobby_page.cursor: not a cursor of a lobby reply "
                               f"({cursor[:40]!r}); ask lobby_subscribe for the first page",
                               request_id=request_id)
        return cls(int(seek_id), int(since_ms), name)

    @property
    def player(self) -> PlayerKey:
        return (self.since_ms, self.name)


FIRST = Position()


class Listing:
    """The lobby's pages, each packed once per change (see the module docstring)."""

    def __init__(self, seeks: SeekStore, presence: PresenceStore, ratings_of: RatingsOf,
                 *, page_size: int, period_s: float,
                 on_pack: Callable[[], None] | None = None) -> None:
        self.seeks = seeks
        self.presence = presence
        self.ratings_of = ratings_of
        self.page_size = page_size
        self.period_s = period_s
        self.on_pack = on_pack  # told each time a page is packed (a metric)
        self._pages: dict[Position, asyncio.Task[p.Prepared]] = {}
        self._players: asyncio.Task[list[Online]] | None = None

    def changed(self) -> None:
        """The lobby changed: every page is read and packed again when next asked for."""
        self._pages = {}
        self._players = None

    async def page(self, at: Position = FIRST) -> p.Prepared:
        """The page starting at ``at``, packed (fill in the request's ``id``)."""
        pages = self._pages
        held = pages.get(at)
        if held is None:
            if len(pages) >= PAGES_KEPT:
                return await self._read(at)
            held = pages[at] = _shared(self._read(at), lambda task: pages.pop(at, None))
        return await asyncio.shield(held)

    async def _read(self, at: Position) -> p.Prepared:
        size = self.page_size
        seeks, more_seeks = await self.seeks.page(at.seek_id, size)
        everyone = await self._everyone()
        keys = [(user.since_ms, name_key(user.name)) for user in everyone]
        start = bisect.bisect_right(keys, at.player)
        listed = everyone[start:start + size]
        more_players = len(everyone) - start - len(listed)
        registered = [user.user_id for user in listed if user.kind != "guest"]
        stored = await self.ratings_of(registered) if registered else {}
        players = tuple(
            User(name=user.name, kind=user.kind,  # type: ignore[arg-type]
                 ratings=tuple(shown(pool, self.period_s)
                               for pool in stored.get(user.user_id, ())) or None)
            for user in listed)
        after = Position(seeks[-1].seek_id if seeks else at.seek_id,
                         *(keys[start + len(listed) - 1] if listed else at.player))
        message = p.Lobby(id=0, seeks=tuple(seek.open_seek for seek in seeks),
                          players=players, more_seeks=more_seeks or None,
                          more_players=more_players or None,
                          next_cursor=after.cursor() if more_seeks or more_players else None)
        if self.on_pack is not None:
            self.on_pack()
        return p.prepare(message)

    async def _everyone(self) -> list[Online]:
        """Every user online, in the order they are listed: read once per change."""
        if self._players is None:
            self._players = _shared(self._everyone_now(), self._forget_players)
        return await asyncio.shield(self._players)

    async def _everyone_now(self) -> list[Online]:
        online = await self.presence.everyone()
        return sorted(online, key=lambda user: (user.since_ms, name_key(user.name)))

    def _forget_players(self, task: asyncio.Task[list[Online]]) -> None:
        if self._players is task:
            self._players = None


def _shared(read: Coroutine[Any, Any, T], forget: Callable[[asyncio.Task[T]], object]
            ) -> asyncio.Task[T]:
    """``read`` run once for everyone who awaits it (a requester that goes away does not
    stop it for the others); if it fails, ``forget`` drops it so that the next request
    reads again."""
    task = asyncio.get_running_loop().create_task(read)

    def done(task: asyncio.Task[T]) -> None:
        if task.cancelled() or task.exception() is not None:
            forget(task)

    task.add_done_callback(done)
    return task


__all__ = ["FIRST", "Listing", "Position"]
