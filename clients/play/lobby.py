"""The lobby as the client sees it: open seeks, who is online, challenges both ways.

:class:`Lobby` keeps what the last ``lobby`` snapshot and the events since said, and is the
event sink (``clients.events``) for ``seek_added``, ``seek_removed``, ``seek_taken``,
``player_online``, ``player_offline``, ``challenge_received`` and ``challenge_ended``.
"""

from __future__ import annotations

from collections.abc import Callable

import engine
import protocol as p
from clients import render
from clients.play.link import ServerLink
from clients.play.local_bots import LocalBots

Say = Callable[[str], None]


class Lobby:
    """Seeks, players online, and the challenges this client sent and received."""

    def __init__(self, link: ServerLink, bots: LocalBots, say: Say,
                 my_name: Callable[[], str | None], busy: Callable[[], bool]) -> None:
        self.link = link
        self.bots = bots
        self.say = say
        self.my_name = my_name
        self.busy = busy
        self.subscribed = False
        self.seeks: dict[int, p.OpenSeek] = {}
        self.online: dict[str, p.User] = {}
        self.my_seeks: set[int] = set()
        self.challenges_in: dict[int, p.ChallengeReceived] = {}
        self.challenges_out: dict[int, str] = {}  # challenge id -> whom
        self.next_page: str | None = None  # the cursor of the lobby's next page

    async def subscribe(self, *, quiet: bool = False) -> p.Lobby:
        """Subscribe to the lobby (again): its first page replaces what we knew."""
        reply = await self.link.call(p.LobbySubscribe)
        assert isinstance(reply, p.Lobby)
        self.subscribed = True
        self.seeks = {s.seek_id: s for s in reply.seeks}
        self.online = {u.name.lower(): u for u in reply.players}
        self.next_page = reply.next_cursor
        if not quiet:
            seeks = len(self.seeks) + (reply.more_seeks or 0)
            players = len(self.online) + (reply.more_players or 0)
            paged = " (listed a page at a time: 'more')" if reply.next_cursor else ""
            self.say(f"Lobby: {seeks} open seek(s), {players} player(s) online{paged} "
                     "('seeks', 'who').")
        return reply

    async def more(self) -> p.Lobby | None:
        """The lobby's next page (None: there is none), added to what we know."""
        if self.next_page is None:
            return None
        reply = await self.link.call(p.LobbyPage, cursor=self.next_page)
        assert isinstance(reply, p.Lobby)
        self.seeks.update((s.seek_id, s) for s in reply.seeks)
        self.online.update((u.name.lower(), u) for u in reply.players)
        self.next_page = reply.next_cursor
        return reply

    def is_me(self, user: p.User) -> bool:
        me = self.my_name()
        return me is not None and user.name.lower() == me.lower()

    # -- events (clients.events) --------------------------------------------------------------
    async def on_seek_added(self, ev: p.SeekAdded) -> None:
        self.seeks[ev.seek.seek_id] = ev.seek
        if not self.busy() and not self.is_me(ev.seek.user):
            self.say(f"New seek #{ev.seek.seek_id} by "
                     f"{render.user_label(ev.seek.user, ev.seek.game)}: "
                     f"{render.describe_offer(ev.seek.game, ev.seek.options, ev.seek.clock)}"
                     f"{render.seek_terms(ev.seek)} (accept {ev.seek.seek_id})")

    async def on_seek_removed(self, ev: p.SeekRemoved) -> None:
        self.seeks.pop(ev.seek_id, None)
        self.my_seeks.discard(ev.seek_id)

    async def on_seek_taken(self, ev: p.SeekTaken) -> None:
        self.my_seeks.discard(ev.seek_id)
        self.seeks.pop(ev.seek_id, None)

    async def on_player_online(self, ev: p.PlayerOnline) -> None:
        self.online[ev.user.name.lower()] = ev.user

    async def on_player_offline(self, ev: p.PlayerOffline) -> None:
        self.online.pop(ev.name.lower(), None)

    async def on_challenge_received(self, ev: p.ChallengeReceived) -> None:
        self.challenges_in[ev.challenge_id] = ev
        colour = ("a random colour" if ev.color == "random"
                  else engine.get_game(ev.game).players[1 - int(ev.color)])
        self.say(f"{render.user_label(ev.from_, ev.game)} challenges you to "
                 f"{render.describe_offer(ev.game, ev.options, ev.clock)}"
                 f"{' rated' if ev.rated else ''}; you would play "
                 f"{colour}. Type 'accept {ev.challenge_id}' or 'decline {ev.challenge_id}'.")

    async def on_challenge_ended(self, ev: p.ChallengeEnded) -> None:
        self.challenges_in.pop(ev.challenge_id, None)
        target = self.challenges_out.pop(ev.challenge_id, None)
        if ev.reason != "accepted" or target is None:
            why = f": {ev.message.rstrip('.')}" if ev.message else ""
            self.say(f"Challenge #{ev.challenge_id} {ev.reason}{why}.")
        if ev.reason != "accepted" and target is not None:
            self.bots.challenge_gone(target)
