"""``tessera play``: the reference interactive terminal client.

    tessera play [--server URL] [--guest | --login NAME | --register NAME] [--no-color]
                 [--bot NAME --game GAME [OPTION=VALUE ...] [TIME]]

A line is a command (``help`` lists them) or, in a game, a move in the game's notation
(``c3``, ``Bc3,Wd4``, ``c3-c6``, ``pass``). Moves are checked by the engine before they are
sent, so mistakes are explained at once; the server checks them again. Events (moves, chat,
challenges, new seeks) are printed above the prompt as they arrive, and the bottom toolbar
shows both clocks running.

``bot mcts hadron size=5 5m+3s`` starts a bundled bot as a child process, a guest on the same
server (``clients.local_bot``), and challenges it; the bot stops when its game ends or the
client quits (``--bot``/``--game`` do the same from the command line).

If the connection drops, the client reconnects by itself (backing off up to
``--retry-max`` seconds), logs in again with its session token and resumes every game from
the last event it saw (``resume`` with ``since_seq``); a move sent just before the drop is
sent again. See docs/CLIENT.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from prompt_toolkit.completion import WordCompleter
from websockets.exceptions import WebSocketException

import engine
import protocol as p
from clients import render
from clients.bots import BOTS
from clients.connection import DEFAULT_URL, Connection, Disconnected, ServerError
from clients.fetch import get_record
from clients.live import GameView
from clients.local_bot import STOP_GRACE_S, LocalBot, LocalBotError, bot_command
from clients.offers import OfferError, parse_offer
from clients.records import RESULTS, match_record_from_wire, utc_date
from clients.replay import Replayer, run_viewer
from clients.terminal import Terminal, wants_color

CLIENT_NAME = "tessera-play/0.1"
FIRST_RETRY_S = 0.5
# WebSocket close codes after which reconnecting unchanged is pointless (docs/PROTOCOL.md 1).
NO_RECONNECT = {1000: "closed normally", 1008: "policy violation",
                1009: "a message was too big"}
HISTORY_PAGE = 15
MAX_SHOWN_MOVES = 120
BOT_THINK_S = 2.0  # a local bot's longest think per move, unless the player says think=S
RESIGN_TIMEOUT_S = 5.0

Handler = Callable[["PlayClient", str], Awaitable[None]]


@dataclass(frozen=True)
class Command:
    name: str
    usage: str
    help: str
    handler: Handler
    aliases: tuple[str, ...] = ()


COMMANDS: dict[str, Command] = {}
ORDER: list[Command] = []


def command(name: str, usage: str, help_text: str, *aliases: str) -> Callable[[Handler], Handler]:
    """Register a ``PlayClient`` method as the command ``name``."""
    def register(handler: Handler) -> Handler:
        cmd = Command(name, usage, help_text, handler, aliases)
        ORDER.append(cmd)
        for word in (name, *aliases):
            COMMANDS[word] = cmd
        return handler
    return register


class UsageError(ValueError):
    """The user typed a command wrong; the message shows how to type it."""


class PlayClient:
    """The client's state and behaviour; the terminal front end feeds it lines."""

    def __init__(self, url: str, term: Terminal, *, color: bool = False,
                 retry_max: float = 30.0) -> None:
        self.url = url
        self.term = term
        self.color = color
        self.retry_max = retry_max
        self.conn: Connection | None = None
        self.connected = False
        self.user: p.User | None = None
        self.token: str | None = None
        self.games: dict[str, GameView] = {}
        self.current: str | None = None
        self.seqs = p.GameSeqs()
        self.lobby_on = False
        self.seeks: dict[int, p.OpenSeek] = {}
        self.online: dict[str, p.User] = {}
        self.my_seeks: set[int] = set()
        self.challenges_in: dict[int, p.ChallengeReceived] = {}
        self.challenges_out: dict[int, str] = {}
        self.unsent: tuple[str, int, str] | None = None  # a move lost in a dropped connection
        self.history: tuple[p.ListGames, str] | None = None  # the last list, for "more"
        self.bots: dict[str, LocalBot] = {}  # bots started here, by lower-case name
        self.tasks: set[asyncio.Task[None]] = set()
        self.quitting = False

    # -- output -------------------------------------------------------------------------------
    def say(self, text: str) -> None:
        self.term.print(text)

    def prompt(self) -> str:
        name = self.user.name if self.user else "tessera"
        view = self.view()
        if view is not None and view.my_turn:
            return f"{name} ({view.colours[view.me or 0]} to move)> "
        return f"{name}> "

    def toolbar(self) -> str:
        where = "" if self.connected else " | reconnecting ..."
        view = self.view()
        if view is None:
            who = self.user.name if self.user else "not logged in"
            return f" {who} | {self.url}{where} | type help"
        return f" {view.status_line()}{where}"

    def view(self, game_id: str | None = None) -> GameView | None:
        return self.games.get(game_id or self.current or "")

    def show(self, view: GameView) -> None:
        self.say(view.panel(color=self.color))

    # -- connection ---------------------------------------------------------------------------
    async def connect(self) -> None:
        self.conn = await Connection.open(self.url, client=CLIENT_NAME)
        self.connected = True

    def live_conn(self) -> Connection:
        if self.conn is None or not self.connected:
            raise Disconnected("not connected")
        return self.conn

    async def call(self, kind: type, **fields: object) -> p.ServerMessage:
        return await self.live_conn().call(kind, **fields)

    async def pump(self) -> None:
        """Apply events as they come; reconnect when the connection drops."""
        while not self.quitting:
            conn = self.conn
            assert conn is not None
            try:
                event = await conn.next_event()
            except Disconnected:
                self.connected = False
                if self.quitting:
                    return
                code = conn.ws.close_code
                if code in NO_RECONNECT:
                    self.say(f"The server closed the connection ({code}: {NO_RECONNECT[code]}); "
                             "not reconnecting.")
                    return
                await self.reconnect()
                continue
            try:
                await self.on_event(event)
            except Exception as exc:  # one bad event must not stop the client
                self.say(f"(while handling {type(event).__name__}: "
                         f"{type(exc).__name__}: {exc})")

    async def reconnect(self) -> None:
        """Reconnect with backoff, log in with the session token, resume every game."""
        self.say("Connection lost; reconnecting ...")
        delay = FIRST_RETRY_S
        while not self.quitting:
            try:
                await self.connect()
                break
            except (OSError, TimeoutError, Disconnected, WebSocketException, ServerError):
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.retry_max)
        if self.quitting:
            return
        try:
            await self.restore_session()
        except Disconnected:
            self.connected = False  # dropped again: the pump notices and starts over

    async def restore_session(self) -> None:
        resumed: list[str] = []
        if self.token is not None:
            try:
                authed = await self.call(p.AuthToken, token=self.token)
            except ServerError as exc:
                self.say(f"Reconnected, but the session is gone ({exc.message}); log in again.")
                self.user = self.token = None
                authed = None
            if isinstance(authed, p.Authed):
                self.user = authed.user
                ids = {*authed.active_games,
                       *(gid for gid, v in self.games.items() if not v.over)}
                resumed = [gid for gid in sorted(ids) if await self.try_resume(gid)]
        else:
            resumed = [gid for gid, v in list(self.games.items())
                       if not v.over and await self.try_resume(gid)]
        if self.lobby_on:
            await self.subscribe_lobby(quiet=True)
        games = f"; resumed {len(resumed)} game(s): {' '.join(resumed)}" if resumed else ""
        self.say(f"Reconnected to {self.url}{games}.")
        await self.resend_unsent()

    async def resume(self, game_id: str) -> None:
        """Catch up on ``game_id``: missed events follow as events, or a snapshot replies."""
        reply = await self.call(p.Resume, game_id=game_id, since_seq=self.seqs.last(game_id))
        if isinstance(reply, p.GameState):
            self.take_snapshot(reply)

    async def try_resume(self, game_id: str) -> bool:
        try:
            await self.resume(game_id)
        except ServerError as exc:
            self.say(f"Could not resume game {game_id}: {exc.message}")
            return False
        return True

    async def resend_unsent(self) -> None:
        if self.unsent is None:
            return
        game_id, ply, move = self.unsent
        self.unsent = None
        view = self.view(game_id)
        if view is not None and view.state.ply == ply and view.my_turn:
            self.say(f"Sending your move {move} again.")
            await self.send_move(view, move)

    # -- events -------------------------------------------------------------------------------
    def take_snapshot(self, message: p.GameState | p.GameStarted, show: bool = True
                      ) -> GameView:
        snap = message.game if isinstance(message, p.GameState) else message.snapshot
        old = self.games.get(snap.game_id)
        view = GameView.from_snapshot(snap, self.user.name if self.user else None)
        self.games[snap.game_id] = view
        if isinstance(message, p.GameState):
            self.seqs.snapshot(message)
        changed = old is None or old.state.ply != view.state.ply or old.status != view.status
        if changed and (self.current in (None, snap.game_id) or not self._busy()):
            self.current = snap.game_id
            if show:
                self.show(view)
        return view

    def _busy(self) -> bool:
        """Is the current game one we play that is not over?"""
        view = self.view()
        return view is not None and view.me is not None and not view.over

    async def on_event(self, ev: p.ServerMessage) -> None:
        if isinstance(ev, p.GameStarted):
            await self.on_game_started(ev)
        elif isinstance(ev, p.GameState):
            self.take_snapshot(ev)
        elif isinstance(ev, p.Moved | p.GameOver | p.ChatMessage | p.OpponentLeft
                        | p.OpponentBack):
            verdict = self.seqs.observe(ev)
            if verdict == "gap":
                self.say(f"(missed events of game {ev.game_id}; catching up)")
                await self.resume(ev.game_id)
            elif verdict == "new":
                self.on_game_event(ev)
        elif isinstance(ev, p.ChallengeReceived):
            self.challenges_in[ev.challenge_id] = ev
            colour = ("a random colour" if ev.color == "random"
                      else engine.get_game(ev.game).players[1 - int(ev.color)])
            self.say(f"{ev.from_.name} challenges you to "
                     f"{render.describe_offer(ev.game, ev.options, ev.clock)}; you would play "
                     f"{colour}. Type 'accept {ev.challenge_id}' or "
                     f"'decline {ev.challenge_id}'.")
        elif isinstance(ev, p.ChallengeEnded):
            self.challenges_in.pop(ev.challenge_id, None)
            target = self.challenges_out.pop(ev.challenge_id, None)
            if ev.reason != "accepted" or target is None:
                self.say(f"Challenge #{ev.challenge_id} {ev.reason}.")
            bot = self.bots.get((target or "").lower())
            if bot is not None and ev.reason != "accepted" and bot.game_id is None:
                self.say(f"Stopping your local {bot.kind} bot {bot.name}.")
                self.spawn(bot.stop())
        else:
            self.on_lobby_event(ev)

    async def on_game_started(self, ev: p.GameStarted) -> None:
        if self.seqs.observe(ev) == "old":
            return
        self.current = None  # a new game of ours always becomes the current one
        view = self.take_snapshot(ev, show=False)
        if view.me is not None:
            opponent = view.players[1 - view.me].name
            bot = self.bots.get(opponent.lower())
            if bot is not None and bot.game_id is None:
                bot.game_id = ev.game_id
            local = f" (your local {bot.kind} bot)" if bot is not None else ""
            self.say(f"Game {ev.game_id} started: you play {view.colours[view.me]} against "
                     f"{opponent}{local}. Type moves like "
                     f"{self._example(view)}; 'help' lists commands.")
        self.show(view)

    def _example(self, view: GameView) -> str:
        moves = view.state.legal_moves() if view.state.ply < 2 else []
        return str(moves[0]) if moves else "c3"

    def on_game_event(self, ev: p.Moved | p.GameOver | p.ChatMessage | p.OpponentLeft
                      | p.OpponentBack) -> None:
        view = self.games.get(ev.game_id)
        if view is None:
            return
        tag = "" if ev.game_id == self.current else f"[{ev.game_id}] "
        if isinstance(ev, p.Moved):
            try:
                view.apply_moved(ev)
            except engine.IllegalMove as exc:
                self.say(f"{tag}(out of step: {exc}; resynchronising)")
                asyncio.get_running_loop().create_task(self._resync(ev.game_id))
                return
            if ev.game_id == self.current or not self._busy():
                self.current = ev.game_id
                self.show(view)
            else:
                self.say(f"{tag}{view.who(ev.by)} played {ev.move}"
                         f"{' (your move)' if view.my_turn else ''}.")
        elif isinstance(ev, p.GameOver):
            view.apply_over(ev)
            text = render.result_text(view.game, [(u.name, u.kind) for u in view.players],
                                      view.result)
            mine = ""
            if view.me is not None and ev.winner is not None:
                mine = " You won!" if ev.winner == view.me else " You lost."
            self.say(f"{tag}Game over: {text}{mine} (replay {ev.game_id} to see it again)")
            for key, bot in list(self.bots.items()):
                if bot.game_id == ev.game_id:  # it stops by itself after its game; make sure
                    del self.bots[key]
                    self.spawn(bot.stop())
        elif isinstance(ev, p.ChatMessage):
            self.say(f"{tag}<{ev.from_}> {ev.text}")
        elif isinstance(ev, p.OpponentLeft):
            seconds = ev.claim_after_ms / 1000
            claim = (f"; type 'claim' after {seconds:.0f} s to win if they stay away"
                     if view.me is not None else "")
            self.say(f"{tag}{view.who(ev.player)} left the game{claim}.")
        else:
            self.say(f"{tag}{view.who(ev.player)} is back.")

    async def _resync(self, game_id: str) -> None:
        with contextlib.suppress(ServerError, Disconnected):
            reply = await self.call(p.Resume, game_id=game_id, since_seq=0)
            if isinstance(reply, p.GameState):
                self.take_snapshot(reply)

    def on_lobby_event(self, ev: p.ServerMessage) -> None:
        if isinstance(ev, p.SeekAdded):
            self.seeks[ev.seek.seek_id] = ev.seek
            if not self._busy() and (self.user is None or ev.seek.user.name != self.user.name):
                self.say(f"New seek #{ev.seek.seek_id} by {ev.seek.user.name}: "
                         f"{render.describe_offer(ev.seek.game, ev.seek.options, ev.seek.clock)}"
                         f" (accept {ev.seek.seek_id})")
        elif isinstance(ev, p.SeekRemoved):
            self.seeks.pop(ev.seek_id, None)
            self.my_seeks.discard(ev.seek_id)
        elif isinstance(ev, p.PlayerOnline):
            self.online[ev.user.name.lower()] = ev.user
        elif isinstance(ev, p.PlayerOffline):
            self.online.pop(ev.name.lower(), None)
        elif isinstance(ev, p.ErrorReply):
            self.say(f"Server error: {ev.code}: {ev.message}")

    # -- the command loop ---------------------------------------------------------------------
    async def handle_line(self, line: str) -> None:
        line = line.strip()
        if not line:
            return
        word, _, rest = line.partition(" ")
        cmd = COMMANDS.get(word.lower())
        view = self.view()
        try:
            if cmd is not None:
                await cmd.handler(self, rest.strip())
            elif view is not None and view.me is not None and not view.over:
                await self.move(line)
            else:
                self.say(f"Unknown command {word!r}{self._why_no_move(view)}; "
                         "type 'help' for the list.")
        except (UsageError, OfferError) as exc:
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

    @staticmethod
    def _why_no_move(view: GameView | None) -> str:
        if view is None:
            return ""
        if view.over:
            return f" (game {view.game_id} is over)"
        return f" (you are watching game {view.game_id}, not playing it)"

    async def login_with(self, kind: type, **fields: object) -> None:
        reply = await self.call(kind, **fields)
        assert isinstance(reply, p.Authed)
        self.user, self.token = reply.user, reply.session_token
        self.say(f"Logged in as {reply.user.name} ({reply.user.kind}).")
        for game_id in reply.active_games:
            await self.resume(game_id)
        await self.subscribe_lobby()

    async def subscribe_lobby(self, quiet: bool = False) -> p.Lobby:
        reply = await self.call(p.LobbySubscribe)
        assert isinstance(reply, p.Lobby)
        self.lobby_on = True
        self.seeks = {s.seek_id: s for s in reply.seeks}
        self.online = {u.name.lower(): u for u in reply.players}
        if not quiet:
            self.say(f"Lobby: {len(self.seeks)} open seek(s), {len(self.online)} player(s) "
                     "online ('seeks', 'who').")
        return reply

    async def password(self, confirm: bool = False) -> str:
        secret = os.environ.get("TESSERA_PASSWORD")
        if secret:
            return secret
        first = await self.term.read("password: ", password=True)
        if confirm and await self.term.read("again: ", password=True) != first:
            raise UsageError("The passwords differ; nothing done.")
        return first

    # -- account commands ---------------------------------------------------------------------
    @command("guest", "guest", "play as a guest (the server picks a name)")
    async def cmd_guest(self, args: str) -> None:
        await self.login_with(p.Guest)

    @command("login", "login NAME", "log in (asks for the password)")
    async def cmd_login(self, args: str) -> None:
        if len(args.split()) != 1:
            raise UsageError("usage: login NAME")
        p.Login(id=0, username=args, password="?")  # a bad name is refused before the password
        await self.login_with(p.Login, username=args, password=await self.password())

    @command("register", "register NAME", "create an account and log in")
    async def cmd_register(self, args: str) -> None:
        if len(args.split()) != 1:
            raise UsageError("usage: register NAME")
        p.Login(id=0, username=args, password="?")
        secret = await self.password(confirm=True)
        await self.login_with(p.Register, username=args, password=secret)

    @command("logout", "logout", "log out (games go on; your opponent may claim them)")
    async def cmd_logout(self, args: str) -> None:
        await self.call(p.Logout)
        self.user = self.token = None
        self.lobby_on = False
        self.say("Logged out.")

    # -- lobby commands -----------------------------------------------------------------------
    @command("seeks", "seeks", "list open seeks")
    async def cmd_seeks(self, args: str) -> None:
        lobby = await self.subscribe_lobby(quiet=True)
        if not lobby.seeks:
            self.say("No open seeks. Offer one: seek hadron size=5 5m+3s")
            return
        for s in lobby.seeks:
            mine = " (yours)" if self.user and s.user.name == self.user.name else ""
            self.say(f"  #{s.seek_id:<4} {s.user.name:<20} "
                     f"{render.describe_offer(s.game, s.options, s.clock)}{mine}")

    @command("who", "who", "list the players and bots online", "players")
    async def cmd_who(self, args: str) -> None:
        lobby = await self.subscribe_lobby(quiet=True)
        groups: dict[str, list[str]] = {"human": [], "guest": [], "bot": []}
        for u in lobby.players:
            you = " (you)" if self.user and u.name == self.user.name else ""
            groups.setdefault(u.kind, []).append(u.name + you)
        for kind, label in (("human", "players"), ("guest", "guests"), ("bot", "bots")):
            names = ", ".join(sorted(groups[kind], key=str.lower)) or "none"
            self.say(f"  {label}: {names}")

    @command("seek", "seek GAME [OPTION=VALUE ...] [TIME]",
             "offer a game to anyone, e.g. seek hadron size=5 5m+3s (TIME: 5m+3s, 30s/move, "
             "3d/move, unlimited)")
    async def cmd_seek(self, args: str) -> None:
        offer = parse_offer(args.split())
        reply = await self.call(p.Seek, game=offer.game, options=offer.options,
                                clock=offer.clock)
        assert isinstance(reply, p.SeekCreated)
        self.my_seeks.add(reply.seek_id)
        self.say(f"Seek #{reply.seek_id} is open: "
                 f"{render.describe_offer(offer.game, offer.options, offer.clock)}. "
                 "Waiting for an opponent ('cancel' withdraws it).")

    @command("challenge", "challenge USER GAME [OPTION=VALUE ...] [TIME] [color=COLOUR]",
             "offer a game to one player, e.g. challenge bob xodd size=9 10m+5s color=black")
    async def cmd_challenge(self, args: str) -> None:
        words = args.split()
        if len(words) < 2:
            raise UsageError("usage: " + COMMANDS["challenge"].usage)
        offer = parse_offer(words[1:], allow_color=True)
        reply = await self.call(p.Challenge, to=words[0], game=offer.game,
                                options=offer.options, clock=offer.clock, color=offer.color)
        assert isinstance(reply, p.ChallengeCreated)
        self.challenges_out[reply.challenge_id] = words[0]
        self.say(f"Challenge #{reply.challenge_id} sent to {words[0]}: "
                 f"{render.describe_offer(offer.game, offer.options, offer.clock)}.")

    @command("bot", "bot NAME GAME [OPTION=VALUE ...] [TIME] [color=COLOUR] [think=S]",
             f"play a bundled bot ({', '.join(BOTS)}) run here: bot mcts hadron size=5 5m+3s "
             f"(think=S: its time a move, {BOT_THINK_S:g} s); 'bot' lists yours")
    async def cmd_bot(self, args: str) -> None:
        words = args.split()
        if not words:
            self.list_bots()
            return
        kind = words[0].lower()
        if kind not in BOTS:
            raise UsageError(f"No bundled bot {words[0]!r}: one of {', '.join(BOTS)}. Usage: "
                             + COMMANDS["bot"].usage)
        if len(words) < 2:
            raise UsageError(f"Which game? e.g. bot {kind} hadron size=5 5m+3s (games: "
                             f"{', '.join(engine.GAMES)})")
        think, rest = _think(words[1:])
        offer = parse_offer(rest, allow_color=True)
        if self.user is None:
            raise UsageError("Log in first: 'guest', 'login NAME' or 'register NAME'.")
        self.live_conn()
        self.say(f"Starting the {kind} bot ...")
        try:
            bot = await LocalBot.start(kind, bot_command(kind, self.url, self.user.name, think))
        except LocalBotError as exc:
            raise UsageError(f"The {kind} bot did not start: {exc}") from None
        self.bots[bot.name.lower()] = bot
        self.spawn(self._watch_bot(bot))
        described = render.describe_offer(offer.game, offer.options, offer.clock)
        self.say(f"Your {kind} bot is online as {bot.name}; challenging it to {described}.")
        try:
            reply = await self.call(p.Challenge, to=bot.name, game=offer.game,
                                    options=offer.options, clock=offer.clock, color=offer.color)
        except BaseException:
            await bot.stop()
            raise
        assert isinstance(reply, p.ChallengeCreated)
        bot.challenge_id = reply.challenge_id
        self.challenges_out[reply.challenge_id] = bot.name

    def _number(self, args: str, usage: str) -> int | None:
        if not args:
            return None
        word = args.split()[-1].lstrip("#")
        if not word.isdigit():
            raise UsageError(f"usage: {usage}")
        return int(word)

    @command("accept", "accept [ID]", "accept a challenge, or take an open seek")
    async def cmd_accept(self, args: str) -> None:
        number = self._number(args, "accept [challenge|seek] ID")
        kind = args.split()[0].lower() if len(args.split()) > 1 else ""
        if number is None:
            if len(self.challenges_in) != 1:
                raise UsageError("accept which? give the challenge or seek number")
            number = next(iter(self.challenges_in))
        if kind != "seek" and (number in self.challenges_in or kind == "challenge"):
            self.challenges_in.pop(number, None)
            await self.call(p.AcceptChallenge, challenge_id=number)
        else:
            await self.call(p.AcceptSeek, seek_id=number)

    @command("decline", "decline [ID]", "decline a challenge")
    async def cmd_decline(self, args: str) -> None:
        number = self._number(args, "decline ID")
        if number is None:
            if len(self.challenges_in) != 1:
                raise UsageError("decline which? give the challenge number")
            number = next(iter(self.challenges_in))
        await self.call(p.DeclineChallenge, challenge_id=number)
        self.challenges_in.pop(number, None)

    @command("cancel", "cancel [ID]", "withdraw your seek or challenge (all of them without ID)")
    async def cmd_cancel(self, args: str) -> None:
        number = self._number(args, "cancel [ID]")
        if number is None:
            seeks, challenges = sorted(self.my_seeks), sorted(self.challenges_out)
        elif number in self.challenges_out and number not in self.my_seeks:
            seeks, challenges = [], [number]
        else:
            seeks, challenges = [number], []
        for seek_id in seeks:
            await self.call(p.CancelSeek, seek_id=seek_id)
            self.my_seeks.discard(seek_id)
            self.say(f"Seek #{seek_id} withdrawn.")
        for challenge_id in challenges:
            await self.call(p.CancelChallenge, challenge_id=challenge_id)
        if not seeks and not challenges:
            self.say("You have no open seeks or challenges.")

    # -- game commands ------------------------------------------------------------------------
    def game_arg(self, args: str, *, mine: bool = True) -> GameView:
        game_id = args.split()[0] if args.split() else self.current
        view = self.view(game_id)
        if view is None:
            raise UsageError("No game here; seek or challenge to start one, or watch one."
                             if game_id is None else f"No game {game_id} open here.")
        if mine and view.me is None:
            raise UsageError(f"You are watching game {view.game_id}, not playing it.")
        return view

    async def move(self, text: str) -> None:
        view = self.game_arg("")
        if view.over:
            raise UsageError(f"Game {view.game_id} is over.")
        if not view.my_turn:
            raise UsageError(f"It is not your turn: {view.who(view.state.to_move)} to move.")
        try:
            parsed = view.state.parse_move(text)
        except engine.IllegalMove as exc:
            raise UsageError(f"Illegal move {text!r}: {exc}") from None
        await self.send_move(view, parsed.text)

    async def send_move(self, view: GameView, move: str) -> None:
        try:
            await self.call(p.Move, game_id=view.game_id, ply=view.state.ply, move=move)
        except Disconnected:
            self.unsent = (view.game_id, view.state.ply, move)
            self.say(f"The connection dropped; {move} will be sent again once reconnected.")

    @command("pass", "pass", "pass your turn (where the rules allow it)")
    async def cmd_pass(self, args: str) -> None:
        await self.move("pass")

    @command("resign", "resign [GAME]", "resign the current game")
    async def cmd_resign(self, args: str) -> None:
        await self.call(p.Resign, game_id=self.game_arg(args).game_id)

    @command("abort", "abort [GAME]", "cancel a game before both players have moved")
    async def cmd_abort(self, args: str) -> None:
        await self.call(p.Abort, game_id=self.game_arg(args).game_id)

    @command("claim", "claim [GAME]", "claim the win when your opponent has left")
    async def cmd_claim(self, args: str) -> None:
        await self.call(p.ClaimWin, game_id=self.game_arg(args).game_id)

    @command("say", "say TEXT", "chat in the current game", "chat")
    async def cmd_say(self, args: str) -> None:
        if not args:
            raise UsageError("usage: say TEXT")
        await self.call(p.Chat, game_id=self.game_arg("", mine=False).game_id, text=args)

    @command("board", "board [GAME]", "show the board again", "show")
    async def cmd_board(self, args: str) -> None:
        view = self.game_arg(args, mine=False)
        self.current = view.game_id
        self.show(view)

    @command("clock", "clock [GAME]", "both clocks now (also in the bottom toolbar)", "clocks")
    async def cmd_clock(self, args: str) -> None:
        self.say(self.game_arg(args, mine=False).status_line())

    @command("moves", "moves", "list the legal moves (from the engine)", "legal", "hint")
    async def cmd_moves(self, args: str) -> None:
        view = self.game_arg(args, mine=False)
        moves = [str(m) for m in view.state.legal_moves()]
        shown = " ".join(moves[:MAX_SHOWN_MOVES])
        more = f" ... and {len(moves) - MAX_SHOWN_MOVES} more" if len(moves) > MAX_SHOWN_MOVES \
            else ""
        self.say(f"{len(moves)} legal move(s) for {view.colours[view.state.to_move]}: "
                 f"{shown}{more}")

    @command("switch", "switch GAME", "make another open game the current one", "game")
    async def cmd_switch(self, args: str) -> None:
        if not args:
            for gid, v in self.games.items():
                mark = "*" if gid == self.current else " "
                self.say(f" {mark} {gid}  {v.title()}  {'over' if v.over else ''}")
            return
        view = self.game_arg(args, mine=False)
        self.current = view.game_id
        self.show(view)

    @command("games", "games", "list the games being played on the server")
    async def cmd_games(self, args: str) -> None:
        await self.list_games(p.ListGames(id=0, status="playing", limit=HISTORY_PAGE))

    @command("watch", "watch GAME", "watch a live game")
    async def cmd_watch(self, args: str) -> None:
        if len(args.split()) != 1:
            raise UsageError("usage: watch GAME (find one with 'games')")
        reply = await self.call(p.Watch, game_id=args)
        assert isinstance(reply, p.GameState)
        self.current = args
        self.games.pop(args, None)
        self.take_snapshot(reply)

    @command("unwatch", "unwatch [GAME]", "stop watching a game")
    async def cmd_unwatch(self, args: str) -> None:
        view = self.game_arg(args, mine=False)
        await self.call(p.Unwatch, game_id=view.game_id)
        if view.me is None:
            self.games.pop(view.game_id, None)
            self.seqs.forget(view.game_id)
            if self.current == view.game_id:
                self.current = None
        self.say(f"Stopped watching {view.game_id}.")

    # -- history and replay -------------------------------------------------------------------
    @command("history", "history [PLAYER]", "list finished games (yours by default)")
    async def cmd_history(self, args: str) -> None:
        player = args.split()[0] if args.split() else (self.user.name if self.user else None)
        if player is None:
            raise UsageError("usage: history PLAYER (or log in to see yours)")
        await self.list_games(p.ListGames(id=0, player=player, status="over",
                                          limit=HISTORY_PAGE))

    @command("more", "more", "the next page of the last list")
    async def cmd_more(self, args: str) -> None:
        if self.history is None:
            raise UsageError("Nothing more to list.")
        query, cursor = self.history
        await self.list_games(query, cursor)

    async def list_games(self, query: p.ListGames, cursor: str | None = None) -> None:
        reply = await self.call(p.ListGames, player=query.player, status=query.status,
                                limit=query.limit, cursor=cursor)
        assert isinstance(reply, p.GameList)
        if not reply.games:
            self.say("No games.")
        for g in reply.games:
            result = (f"{RESULTS[g.result.winner]} {g.result.reason}"
                      if g.result else "playing")
            self.say(f"  {g.game_id:<12} {utc_date(g.created_ms)[:16].replace('T', ' ')}  "
                     f"{render.describe_offer(g.game, g.options, g.clock):<28} "
                     f"{g.players[0].name} vs {g.players[1].name}  {g.ply} plies  {result}")
        self.history = (query, reply.next_cursor) if reply.next_cursor else None
        if reply.next_cursor:
            self.say("  ... 'more' lists the next page")

    @command("replay", "replay GAME", "step through a stored game (n, p, f, l, g N, a, q)")
    async def cmd_replay(self, args: str) -> None:
        if len(args.split()) != 1:
            raise UsageError("usage: replay GAME (find one with 'history')")
        record = await get_record(self.live_conn(), args)
        await run_viewer(Replayer(match_record_from_wire(record), color=self.color), self.term)
        self.say("(left the replay)")

    # -- help and leaving ---------------------------------------------------------------------
    @command("help", "help [COMMAND]", "this list, or one command's help", "?")
    async def cmd_help(self, args: str) -> None:
        if args:
            cmd = COMMANDS.get(args.split()[0].lower())
            if cmd is None:
                raise UsageError(f"No command {args!r}.")
            self.say(f"{cmd.usage}\n  {cmd.help}")
            return
        width = max(len(c.usage) for c in ORDER if len(c.usage) < 40)
        for c in ORDER:
            usage = c.usage if len(c.usage) <= width else c.name + " ..."
            self.say(f"  {usage:<{width}}  {c.help}")
        self.say("In a game, type a move: c3 (Hadron, Hexifact), Bc3 or Bc3,Wd4 (Xodd, Yodd), "
                 "c3-c6 (a Hexifact jump), pass.")

    @command("quit", "quit", "leave (your open games go on; those against your local bots "
             "are resigned)", "exit")
    async def cmd_quit(self, args: str) -> None:
        self.quitting = True

    # -- local bots ---------------------------------------------------------------------------
    def list_bots(self) -> None:
        if not self.bots:
            self.say("No local bots. Start one: bot mcts hadron size=5 5m+3s "
                     f"(bots: {', '.join(BOTS)}).")
        for bot in self.bots.values():
            where = f"playing game {bot.game_id}" if bot.game_id else "waiting for its game"
            self.say(f"  {bot.name}  {bot.kind}  pid {bot.pid}  {where}")

    async def _watch_bot(self, bot: LocalBot) -> None:
        code = await bot.wait()
        if self.bots.get(bot.name.lower()) is bot:
            del self.bots[bot.name.lower()]
        view = self.view(bot.game_id) if bot.game_id else None
        if not bot.stopping and (code != 0 or (view is not None and not view.over)):
            self.say(f"Your local {bot.kind} bot {bot.name} stopped (exit status {code}): "
                     f"{bot.why()}")

    async def stop_bots(self) -> None:
        """Resign (or abort) the games against local bots, then stop the bots."""
        for bot in list(self.bots.values()):
            view = self.view(bot.game_id) if bot.game_id else None
            if view is not None and view.me is not None and not view.over and self.connected:
                await self._leave_game(view)
            await bot.stop()
        if self.tasks:  # bots stopping after their games, and their watchers
            await asyncio.wait(self.tasks, timeout=STOP_GRACE_S + 2)

    async def _leave_game(self, view: GameView) -> None:
        kinds: list[type] = [p.Abort, p.Resign] if view.state.ply < 2 else [p.Resign]
        for kind in kinds:
            try:
                await asyncio.wait_for(self.call(kind, game_id=view.game_id), RESIGN_TIMEOUT_S)
            except ServerError:
                continue
            except (Disconnected, TimeoutError):
                return
            done = "Aborted" if kind is p.Abort else "Resigned"
            self.say(f"{done} game {view.game_id}: your local bot stops with the client.")
            return

    def spawn(self, coro: Awaitable[None]) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)


def _think(words: Sequence[str]) -> tuple[float, list[str]]:
    """``think=S`` taken out of the ``bot`` command's words (default BOT_THINK_S)."""
    think = BOT_THINK_S
    rest = []
    for word in words:
        name, eq, value = word.partition("=")
        if eq and name.lower() == "think":
            try:
                think = float(value)
            except ValueError:
                think = -1.0
            if not 0 < think <= 3600:
                raise UsageError(f"think={value}: seconds per move, more than 0")
        else:
            rest.append(word)
    return think, rest


async def run(args: argparse.Namespace, term: Terminal) -> int:
    color = wants_color(args.no_color)
    client = PlayClient(args.server, term, color=color, retry_max=args.retry_max)
    term.toolbar = client.toolbar
    try:
        await client.connect()
    except (OSError, TimeoutError, Disconnected, WebSocketException, ServerError) as exc:
        print(f"tessera play: cannot connect to {args.server}: {exc}", file=sys.stderr)
        return 1
    welcome = client.conn.welcome if client.conn else None
    server = welcome.server if welcome else "?"
    term.print(f"Connected to {args.server} ({server}). Type 'help' for commands.")
    pump = asyncio.create_task(client.pump())
    if args.guest:
        await client.handle_line("guest")
    elif args.login:
        await client.handle_line(f"login {args.login}")
    elif args.register:
        await client.handle_line(f"register {args.register}")
    else:
        term.print("Log in with 'login NAME', 'register NAME', or play as a 'guest'.")
    try:
        if args.bot:
            await client.handle_line(" ".join(["bot", args.bot, *args.game]))
        while not client.quitting:
            try:
                line = await term.read(client.prompt)
            except EOFError:
                break
            await client.handle_line(line)
    finally:
        client.quitting = True
        with contextlib.suppress(asyncio.CancelledError):
            await client.stop_bots()
        pump.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await pump
        if client.conn is not None:
            await client.conn.close()
    term.print("Bye.")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tessera play",
                                     description="play Tessera's games in the terminal")
    parser.add_argument("--server", default=DEFAULT_URL, help=f"default {DEFAULT_URL}")
    who = parser.add_mutually_exclusive_group()
    who.add_argument("--guest", action="store_true", help="play as a guest at once (implied "
                     "by --bot without --login or --register)")
    who.add_argument("--login", metavar="NAME", help="log in (password: prompt or "
                     "$TESSERA_PASSWORD)")
    who.add_argument("--register", metavar="NAME", help="create an account and log in")
    parser.add_argument("--no-color", action="store_true", help="no ANSI colours")
    parser.add_argument("--retry-max", type=float, default=30.0, metavar="SECONDS",
                        help="longest pause between reconnection attempts (default 30)")
    parser.add_argument("--bot", metavar="NAME", choices=sorted(BOTS),
                        help="at once, play this bundled bot (started here): "
                             + ", ".join(BOTS))
    parser.add_argument("--game", nargs="+", default=[], metavar="WORD",
                        help="with --bot: GAME [OPTION=VALUE ...] [TIME] [color=C] [think=S], "
                             "as the bot command takes them, e.g. --game hadron size=5 5m+3s")
    args = parser.parse_args(argv)
    if args.game and not args.bot:
        parser.error("--game goes with --bot")
    if args.bot and not args.game:
        parser.error(f"--bot {args.bot} needs --game, e.g. --game hadron size=5 5m+3s")
    if args.bot and not (args.login or args.register):
        args.guest = True
    words = sorted({w for c in ORDER for w in (c.name, *c.aliases)} | set(engine.GAMES)
                   | set(BOTS))
    term = Terminal(completer=WordCompleter(words))
    with term.active():
        return asyncio.run(run(args, term))


if __name__ == "__main__":
    sys.exit(main())
