"""The games the client plays or watches, and their events.

:class:`Games` keeps a :class:`~clients.live.GameView` per game, knows which one is current
(the one the prompt, ``board`` and moves refer to), keeps the event order
(``protocol.GameSeqs``: repeats dropped, gaps repaired with ``resume``) and handles every
game event: it is the event sink for ``game_started``, ``game_state``, ``moved``,
``game_over``, ``chat_message``, ``opponent_left`` and ``opponent_back``
(``clients.events``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import engine
import protocol as p
from clients import render
from clients.connection import Disconnected, ServerError
from clients.live import GameView
from clients.play.commands import UsageError
from clients.play.link import ServerLink
from clients.play.local_bots import LocalBots

Say = Callable[[str], None]


class Games:
    """The open games by id, the current one, and their events."""

    def __init__(self, link: ServerLink, bots: LocalBots, say: Say,
                 my_name: Callable[[], str | None], color: bool = False) -> None:
        self.link = link
        self.bots = bots
        self.say = say
        self.my_name = my_name
        self.color = color
        self.views: dict[str, GameView] = {}
        self.current: str | None = None
        self.seqs = p.GameSeqs()
        self.unsent: tuple[str, int, str] | None = None  # a move lost in a dropped connection
        self.resending: set[asyncio.Task[None]] = set()  # moves the server did not store
        self.last_over: str | None = None  # our last game that ended: 'rematch' is about it
        self.listed: set[str] = set()  # game ids the server listed ('games', 'history')

    # -- questions ----------------------------------------------------------------------------
    def view(self, game_id: str | None = None) -> GameView | None:
        return self.views.get(game_id or self.current or "")

    def busy(self) -> bool:
        """Is the current game one we play that is not over?"""
        view = self.view()
        return view is not None and view.me is not None and not view.over

    def live_ids(self) -> list[str]:
        """The games not over yet, in id order."""
        return sorted(gid for gid, v in self.views.items() if not v.over)

    def waiting_for_me(self) -> list[GameView]:
        """My other games (not the current one) that wait for my move."""
        return [v for gid, v in self.views.items() if gid != self.current and v.my_turn]

    def game_id(self, word: str) -> str:
        """The id a command's word means: an id, or a unique prefix of one known here (a
        game open here, or listed by 'games' or 'history'); UsageError if the prefix is
        ambiguous. A word that fits none is taken as it is (the server may know it)."""
        known = {*self.views, *self.listed, *([self.last_over] if self.last_over else [])}
        if word in known:
            return word
        fits = sorted(gid for gid in known if gid.startswith(word))
        if len(fits) > 1:
            shown = " ".join(fits[:5]) + (" ..." if len(fits) > 5 else "")
            raise UsageError(f"{word!r} could be {len(fits)} games ({shown}); type more of "
                             "its id.")
        return fits[0] if fits else word

    def arg(self, args: str, *, mine: bool = True) -> GameView:
        """The game a command names (its first word: an id or a unique prefix of one),
        else the current one."""
        game_id = self.game_id(args.split()[0]) if args.split() else self.current
        view = self.view(game_id)
        if view is None:
            raise UsageError("No game here; seek or challenge to start one, or watch one."
                             if game_id is None else f"No game {game_id} open here.")
        if mine and view.me is None:
            raise UsageError(f"You are watching game {view.game_id}, not playing it.")
        return view

    def tag(self, game_id: str) -> str:
        """``[gameid] `` before a line about a game that is not the current one."""
        return "" if game_id == self.current else f"[{game_id}] "

    # -- showing ------------------------------------------------------------------------------
    def show(self, view: GameView) -> None:
        self.say(view.panel(color=self.color))

    def select(self, view: GameView) -> None:
        self.current = view.game_id
        self.show(view)

    def tell_waiting(self) -> None:
        """Say which of my other games wait for my move, if any."""
        waiting = self.waiting_for_me()
        if waiting:
            ids = " ".join(v.game_id for v in waiting)
            self.say(f"Your move is awaited in {len(waiting)} other game(s): {ids} "
                     f"('switch {waiting[0].game_id}').")

    def freeze(self) -> None:
        """The connection dropped: stop every clock until the server's readings return."""
        for view in self.views.values():
            view.freeze()

    # -- snapshots and resuming ---------------------------------------------------------------
    def take_snapshot(self, message: p.GameState | p.GameStarted, *, show: bool = True
                      ) -> GameView:
        """A view built from a snapshot replaces the game's old one; shown if it changed."""
        snap = message.game if isinstance(message, p.GameState) else message.snapshot
        old = self.views.get(snap.game_id)
        view = GameView.from_snapshot(snap, self.my_name())
        if old is not None:
            view.chat_seqs = old.chat_seqs
        self.views[snap.game_id] = view
        if isinstance(message, p.GameState):
            self.seqs.snapshot(message)
        changed = old is None or old.state.ply != view.state.ply or old.status != view.status
        if changed and (self.current in (None, snap.game_id) or not self.busy()):
            self.current = snap.game_id
            if show:
                self.show(view)
        return view

    async def resume(self, game_id: str, since_seq: int | None = None) -> None:
        """Catch up on ``game_id`` from ``since_seq`` (default: the last event seen): missed
        events follow as events, or a snapshot replies (``since_seq=0``: always one)."""
        since = self.seqs.last(game_id) if since_seq is None else since_seq
        reply = await self.link.call(p.Resume, game_id=game_id, since_seq=since)
        if isinstance(reply, p.GameState):
            self.take_snapshot(reply)

    async def try_resume(self, game_id: str, since_seq: int | None = None) -> bool:
        try:
            await self.resume(game_id, since_seq)
        except ServerError as exc:
            self.say(f"Could not resume game {game_id}: {exc.message}")
            return False
        return True

    async def _resync(self, game_id: str) -> None:
        with contextlib.suppress(ServerError, Disconnected):
            await self.resume(game_id, 0)

    async def resend_unsent(self) -> None:
        """Send again a move typed as the connection dropped, if its game still waits."""
        if self.unsent is None:
            return
        game_id, ply, move = self.unsent
        self.unsent = None
        view = self.view(game_id)
        if view is not None and view.state.ply == ply and view.my_turn:
            self.say(f"Sending your move {move} again.")
            await self.send_move(view, move)

    async def send_move(self, view: GameView, move: str) -> None:
        ply = view.state.ply
        try:
            await self.link.call(p.Move, game_id=view.game_id, ply=ply, move=move)
        except Disconnected:
            self.unsent = (view.game_id, ply, move)
            self.say(f"The connection dropped; {move} will be sent again once reconnected.")
        except ServerError as exc:
            if exc.code != p.ErrorCode.NOT_STORED:
                raise
            wait_s = (exc.retry_after_ms or 1000) / 1000
            self.say(f"The server could not store your move {move} (its database is busy); "
                     f"sending it again in {wait_s:g} s.")
            task = asyncio.get_running_loop().create_task(
                self._send_again(view.game_id, ply, move, wait_s))
            self.resending.add(task)
            task.add_done_callback(self.resending.discard)

    async def _send_again(self, game_id: str, ply: int, move: str, wait_s: float) -> None:
        """Send a move the server did not store again, if its game still waits for it."""
        await asyncio.sleep(wait_s)
        view = self.view(game_id)
        if view is None or view.over or view.state.ply != ply or not view.my_turn:
            return
        try:
            await self.send_move(view, move)
        except ServerError as exc:
            self.say(f"Your move {move} was refused ({exc.code}): {exc.message}")

    # -- events (clients.events) --------------------------------------------------------------
    async def on_game_state(self, ev: p.GameState) -> None:
        self.take_snapshot(ev)

    async def on_game_started(self, ev: p.GameStarted) -> None:
        if self.seqs.observe(ev) == "old":
            return
        self.current = None  # a new game of ours always becomes the current one
        view = self.take_snapshot(ev, show=False)
        if view.me is not None:
            opponent = view.players[1 - view.me].name
            bot = self.bots.adopt(ev.game_id, opponent)
            local = f" (your local {bot.kind} bot)" if bot is not None else ""
            self.say(f"Game {ev.game_id} started: you play {view.colours[view.me]} against "
                     f"{opponent}{local}. Type moves like {_example(view)}; 'help' lists "
                     "commands.")
        self.show(view)

    async def _fresh(self, ev: p.GameEvent) -> GameView | None:
        """The view of a new event's game; None for a repeat (or a game not open here)."""
        verdict = self.seqs.observe(ev)
        if verdict == "gap":
            self.say(f"(missed events of game {ev.game_id}; catching up)")
            await self.resume(ev.game_id)
            return None
        return self.views.get(ev.game_id) if verdict == "new" else None

    async def on_moved(self, ev: p.Moved) -> None:
        view = await self._fresh(ev)
        if view is None:
            return
        tag = self.tag(ev.game_id)
        try:
            view.apply_moved(ev)
        except engine.IllegalMove as exc:
            self.say(f"{tag}(out of step: {exc}; resynchronising)")
            await self._resync(ev.game_id)
            return
        if ev.game_id == self.current or not self.busy():
            self.select(view)
            if view.me is not None and not view.my_turn:
                self.tell_waiting()
        else:
            self.say(f"{tag}{view.who(ev.by)} played {ev.move}"
                     f"{' (your move)' if view.my_turn else ''}.")

    async def on_game_over(self, ev: p.GameOver) -> None:
        view = await self._fresh(ev)
        if view is None:
            return
        view.apply_over(ev)
        mine = ""
        if view.me is not None and ev.winner is not None:
            mine = " You won!" if ev.winner == view.me else " You lost."
        self.say(f"{self.tag(ev.game_id)}Game over: {view.result_text()}{mine} "
                 f"(replay {ev.game_id} to see it again)")
        if ev.rating_changes is not None:
            self.say("Ratings: " + ", ".join(
                f"{user.name} {render.change_text(change)}"
                for user, change in zip(view.players, ev.rating_changes, strict=True)))
            if view.me is not None and (why := render.provisional_text(
                    view.game, ev.rating_changes[view.me], ev.rating_changes[1 - view.me])):
                self.say(why)
        if view.me is not None:
            self.last_over = ev.game_id
        self.bots.game_over(ev.game_id)
        self.tell_waiting()

    async def on_rematch_offered(self, ev: p.RematchOffered) -> None:
        view = self.views.get(ev.game_id)
        if view is None or view.me is None:
            return
        self.last_over = ev.game_id
        if ev.by == view.me:
            self.say(f"Rematch offered to {view.players[1 - ev.by].name}; waiting.")
        else:
            self.say(f"{view.players[ev.by].name} offers a rematch (colours swapped): "
                     "'rematch' accepts, 'rematch decline' declines.")

    async def on_rematch_ended(self, ev: p.RematchEnded) -> None:
        if ev.reason != "accepted":
            why = f": {ev.message}" if ev.message else ""
            self.say(f"The rematch offer of game {ev.game_id} {ev.reason}{why}.")

    async def on_chat_message(self, ev: p.ChatMessage) -> None:
        view = self.views.get(ev.game_id)
        earlier = (view is not None and ev.seq not in view.chat_seqs
                   and ev.seq <= self.seqs.last(ev.game_id))
        if earlier and view is not None:  # sent again by a resume: said before we came
            view.chat_seqs.add(ev.seq)
            self.say(f"{self.tag(ev.game_id)}(earlier) <{ev.from_}> {ev.text}")
            return
        view = await self._fresh(ev)
        if view is not None:
            view.chat_seqs.add(ev.seq)
            self.say(f"{self.tag(ev.game_id)}<{ev.from_}> {ev.text}")

    async def on_opponent_left(self, ev: p.OpponentLeft) -> None:
        view = await self._fresh(ev)
        if view is None:
            return
        claim = (f"; type 'claim' after {ev.claim_after_ms / 1000:.0f} s to win if they "
                 "stay away" if view.me is not None else "")
        self.say(f"{self.tag(ev.game_id)}{view.who(ev.player)} left the game{claim}.")

    async def on_opponent_back(self, ev: p.OpponentBack) -> None:
        view = await self._fresh(ev)
        if view is not None:
            self.say(f"{self.tag(ev.game_id)}{view.who(ev.player)} is back.")


def _example(view: GameView) -> str:
    moves = view.state.legal_moves() if view.state.ply < 2 else []
    return str(moves[0]) if moves else "c3"
