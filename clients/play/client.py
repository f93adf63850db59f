"""The terminal client's state and its wiring: who is logged in, the connection, the games,
the lobby, the local bots; lines in, text out.

:class:`PlayClient` owns the parts and connects them; each part does its own work:
:class:`~clients.play.link.ServerLink` (the connection), :class:`~clients.play.games.Games`
(the games and their events), :class:`~clients.play.lobby.Lobby` (seeks, players,
challenges), :class:`~clients.play.local_bots.LocalBots` (bots started here), and the
commands of the ``cmd_*`` modules (:mod:`clients.play.commands`). Events are dispatched by
type (:mod:`clients.events`) to the part that handles them.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable

import protocol as p
from clients import events, notation, render
from clients.connection import Disconnected, ServerError
from clients.live import GameView
from clients.play.commands import COMMANDS, UsageError
from clients.play.games import Games
from clients.play.link import ServerLink
from clients.play.lobby import Lobby
from clients.play.local_bots import LocalBots
from clients.terminal import Terminal

RESIGN_TIMEOUT_S = 5.0
CHALLENGE_POLICIES = {  # set_challenge_policy's choices, as the client says them
    "everyone": "anyone may challenge you",
    "registered": "registered players may challenge you, guests may not",
    "nobody": "nobody may challenge you",
}


class PlayClient:
    """The client's state and behaviour; the terminal front end feeds it lines."""

    def __init__(self, url: str, term: Terminal, *, color: bool = False,
                 retry_max: float = 30.0) -> None:
        self.url = url
        self.term = term
        self.color = color
        self.user: p.User | None = None
        self.token: str | None = None
        self.challenge_policy: str = "everyone"  # who may challenge us, as authed said
        # the next page of the last list ('games', 'history', 'seeks', 'who'), for "more"
        self.next_page: Callable[[], Awaitable[None]] | None = None
        self.quitting = False
        self.login_refused = False  # the last login, registration or guest was refused
        self.link = ServerLink(url, retry_max=retry_max)
        self.bots = LocalBots(self.say, self._game_live)
        self.games = Games(self.link, self.bots, self.say, self.my_name, color)
        self.lobby = Lobby(self.link, self.bots, self.say, self.my_name, self.games.busy)

    # -- output -------------------------------------------------------------------------------
    def say(self, text: str) -> None:
        self.term.print(text)

    def my_name(self) -> str | None:
        return self.user.name if self.user else None

    def prompt(self) -> str:
        name = self.user.name if self.user else "tessera"
        view = self.games.view()
        if view is not None and view.my_turn:
            return f"{name} ({view.colours[view.me or 0]} to move)> "
        return f"{name}> "

    def toolbar(self) -> str:
        where = "" if self.link.connected or self.link.lazy else " | reconnecting ..."
        waiting = len(self.games.waiting_for_me())
        others = f" | your move in {waiting} other game(s)" if waiting else ""
        view = self.games.view()
        if view is None:
            who = self.user.name if self.user else "not logged in"
            return f" {who} | {self.url}{where}{others} | type help"
        return f" {view.status_line()}{where}{others}"

    def _game_live(self, game_id: str) -> bool:
        view = self.games.view(game_id)
        return view is not None and not view.over

    async def call(self, kind: type, **fields: object) -> p.ServerMessage:
        return await self.link.call(kind, **fields)

    # -- events and reconnecting --------------------------------------------------------------
    async def pump(self) -> None:
        """Apply events as they come; reconnect when the connection drops."""
        while not self.quitting:
            event = await self.link.next_event()
            if event is None:
                if self.quitting:
                    return
                self.games.freeze()
                if self.link.closed_for_idling() and self.user is None:
                    # not logged in and watching nothing: the server closes such a
                    # connection after a while; the next command connects again
                    self.link.lazy = True
                    self.link.reopened.clear()
                    await self.link.reopened.wait()
                    continue
                why = self.link.closed_for_good()
                if why is not None:
                    self.say(f"The server closed the connection ({why}); not reconnecting.")
                    return
                self.say("Connection lost; reconnecting ...")
                if await self.link.reopen(lambda: self.quitting):
                    with contextlib.suppress(Disconnected):  # dropped again: start over
                        await self.restore()
                continue
            try:
                await events.dispatch(event, self.games, self.lobby, self)
            except Exception as exc:  # one bad event must not stop the client
                self.say(f"(while handling {event.TAG}: {type(exc).__name__}: {exc})")

    async def on_error(self, ev: p.ErrorReply) -> None:
        self.say(f"Server error: {ev.code}: {ev.message}")

    async def restore(self) -> None:
        """After a reconnect: log in with the session token, take a fresh snapshot of every
        game (so the clocks are the server's, whatever happened while we were away), join the
        lobby again and resend a move lost in the drop."""
        ids = self.games.live_ids()
        if self.token is not None:
            try:
                authed = await self.call(p.AuthToken, token=self.token)
            except ServerError as exc:
                self.say(f"Reconnected, but the session is gone ({exc.message}); log in again.")
                self.user = self.token = None
            else:
                assert isinstance(authed, p.Authed)
                self.user = authed.user
                self.challenge_policy = authed.challenge_policy or "everyone"
                ids = sorted({*authed.active_games, *ids})
        resumed = [gid for gid in ids if await self.games.try_resume(gid, 0)]
        if self.lobby.subscribed:
            await self.lobby.subscribe(quiet=True)
        games = f"; resumed {len(resumed)} game(s): {' '.join(resumed)}" if resumed else ""
        self.say(f"Reconnected to {self.url}{games}.")
        await self.games.resend_unsent()

    # -- lines --------------------------------------------------------------------------------
    async def handle_line(self, line: str) -> None:
        """Carry out one line: a command, or in a game of ours a move."""
        line = line.strip()
        if not line:
            return
        word, _, rest = line.partition(" ")
        cmd = COMMANDS.get(word.lower())
        view = self.games.view()
        try:
            if cmd is not None:
                await cmd.handler(self, rest.strip())
            elif (view is not None and view.me is not None and not view.over
                  and notation.looks_like_move(line)):
                await self.move(line)
            else:
                self.say(f"Unknown command {word!r}{_why_no_move(view)}; "
                         "type 'help' for the list.")
        except UsageError as exc:
            self.say(str(exc))
        except p.ProtocolError as exc:  # the request could not even be built
            self.say(f"Not sent: {exc}")
        except ServerError as exc:
            hint = (" Log in first: 'guest', 'login NAME' or 'register NAME'."
                    if exc.code == p.ErrorCode.UNAUTHORIZED else "")
            self.say(f"Refused ({exc.code}): {exc.message}{hint}")
        except Disconnected:
            self.say("Not connected right now; reconnecting in the background.")
        except Exception as exc:  # keep the session alive; say what went wrong
            self.say(f"Error: {type(exc).__name__}: {exc}")

    async def move(self, text: str) -> None:
        """Check a move with the engine, then send it."""
        view = self.games.arg("")
        if view.over:
            raise UsageError(f"Game {view.game_id} is over.")
        if not view.my_turn:
            raise UsageError(f"It is not your turn: {view.who(view.state.to_move)} to move.")
        if text.strip().lower() == notation.PASS and not notation.has_pass(view.game):
            name = view.state.game.name
            raise UsageError(f"{name} has no pass: every turn is a move ('moves' lists the "
                             f"legal ones, 'rules' explains {name}).")
        try:
            parsed = view.state.parse_move(text)
        except ValueError as exc:
            raise UsageError(f"Illegal move {text!r}: {exc}") from None
        if parsed.text == notation.PASS and view.me is not None:
            consequence = render.pass_consequence(view.state, view.me)
            if consequence is not None:
                self.say(consequence)
                if not await self.confirm("Pass and end the game?"):
                    self.say("Not passed.")
                    return
        await self.games.send_move(view, parsed.text)

    async def confirm(self, question: str) -> bool:
        """Ask a yes/no question; only an answer starting with y says yes."""
        answer = await self.term.read(f"{question} [y/N] ")
        return answer.strip().lower().startswith("y")

    async def password(self, confirm: bool = False) -> str:
        secret = os.environ.get("TESSERA_PASSWORD")
        if secret:
            return secret
        first = await self.term.read("password: ", password=True)
        if confirm and await self.term.read("again: ", password=True) != first:
            raise UsageError("The passwords differ; nothing done.")
        return first

    async def login_with(self, kind: type, **fields: object) -> None:
        reply = await self.call(kind, **fields)
        assert isinstance(reply, p.Authed)
        self.user, self.token = reply.user, reply.session_token
        self.challenge_policy = reply.challenge_policy or "everyone"
        self.login_refused = False
        self.say(f"Logged in as {reply.user.name} ({reply.user.kind}).")
        if self.challenge_policy != "everyone":
            self.say(f"Challenges: {CHALLENGE_POLICIES[self.challenge_policy]} "
                     "('challenges' changes it).")
        for game_id in reply.active_games:
            await self.games.resume(game_id)
        await self.lobby.subscribe()

    # -- leaving ------------------------------------------------------------------------------
    async def leave_game(self, game_id: str) -> None:
        """Abort (before both have moved) or resign one of our games: a local bot's, at quit."""
        view = self.games.view(game_id)
        if view is None or view.me is None or view.over or not self.link.connected:
            return
        kinds: list[type] = [p.Abort, p.Resign] if view.state.ply < 2 else [p.Resign]
        for kind in kinds:
            try:
                await asyncio.wait_for(self.call(kind, game_id=game_id), RESIGN_TIMEOUT_S)
            except ServerError:
                continue
            except (Disconnected, TimeoutError):
                return
            done = "Aborted" if kind is p.Abort else "Resigned"
            self.say(f"{done} game {game_id}: your local bot stops with the client.")
            return

    async def close(self) -> None:
        """Stop the local bots (leaving their games), then the connection."""
        self.quitting = True
        with contextlib.suppress(asyncio.CancelledError):
            await self.bots.stop_all(self.leave_game)
        await self.link.close()


def _why_no_move(view: GameView | None) -> str:
    if view is None:
        return ""
    if view.over:
        return f" (game {view.game_id} is over)"
    if view.me is None:
        return f" (you are watching game {view.game_id}, not playing it)"
    return f" (and not a move in {view.state.game.name}: 'moves' lists them)"
