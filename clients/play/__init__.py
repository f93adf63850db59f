"""``tessera play``: the reference interactive terminal client.

    tessera play [--server ADDRESS] [--guest | --login NAME | --register NAME] [--no-color]
                 [--bot NAME --game GAME [OPTION=VALUE ...] [TIME]]

A line is a command (``help`` lists them) or, in a game, a move in the game's notation
(``c3``, ``Bc3,Wd4``, ``c3-c6``, ``pass``). Moves are checked by the engine before they are
sent, so mistakes are explained at once; the server checks them again. Events (moves, chat,
challenges, new seeks) are printed above the prompt as they arrive, and the bottom toolbar
shows both clocks running.

``bot mcts hadron size=5 5m+3s`` starts a bundled bot as a child process, a guest on the
same server (``clients.local_bot``), and challenges it; the bot stops when its game ends or
the client quits (``--bot``/``--game`` do the same from the command line).

If the connection drops, the client reconnects by itself (backing off up to
``--retry-max`` seconds), logs in again with its session token and takes a fresh snapshot
of every game, so its clocks are the server's; a move sent just before the drop is sent
again. The exit status is 1 when the last login, registration or ``guest`` was refused
(and without a terminal a refused ``--login``, ``--register`` or ``--guest`` stops the
client at once); else 0. See docs/CLIENT.md.

The package: :mod:`~clients.play.client` (``PlayClient``: the parts wired together),
:mod:`~clients.play.link` (the connection), :mod:`~clients.play.games` (games and their
events), :mod:`~clients.play.lobby` (seeks, players, challenges),
:mod:`~clients.play.local_bots` (bots started here), :mod:`~clients.play.commands` (the
command table) and the commands themselves in the ``cmd_*`` modules.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

from prompt_toolkit.completion import WordCompleter

import engine
from clients.address import add_server_argument, chosen_server
from clients.bots import BOTS
from clients.play import cmd_account, cmd_game, cmd_history, cmd_lobby, cmd_session
from clients.play.client import PlayClient
from clients.play.commands import words
from clients.play.link import CONNECT_ERRORS
from clients.terminal import Terminal, wants_color

COMMAND_MODULES = (cmd_account, cmd_lobby, cmd_game, cmd_history, cmd_session)
"""The modules whose commands make the client's language, in the order help lists them."""


async def run(args: argparse.Namespace, term: Terminal) -> int:
    """The session: connect, log in as asked, read lines until ``quit`` or end of input."""
    client = PlayClient(args.server, term, color=wants_color(args.no_color),
                        retry_max=args.retry_max)
    term.toolbar = client.toolbar
    try:
        welcome = await client.link.open()
    except CONNECT_ERRORS as exc:
        print(f"tessera play: cannot connect to {args.server}: {exc}", file=sys.stderr)
        return 1
    term.print(f"Connected to {args.server} ({welcome.server if welcome else '?'}). "
               "Type 'help' for commands.")
    pump = asyncio.create_task(client.pump())
    if args.guest:
        await client.handle_line("guest")
    elif args.login:
        await client.handle_line(f"login {args.login}")
    elif args.register:
        await client.handle_line(f"register {args.register}")
    else:
        term.print("Log in with 'login NAME', 'register NAME', or play as a 'guest'.")
    if client.login_refused and not term.interactive:  # a script must not go on as nobody
        term.print("Not logged in; stopping.")
        client.quitting = True
    try:
        if args.bot and not client.quitting:
            await client.handle_line(" ".join(["bot", args.bot, *args.game]))
        while not client.quitting:
            try:
                line = await term.read(client.prompt)
            except EOFError:
                break
            await client.handle_line(line)
    finally:
        pump.cancel()
        await client.close()
        await asyncio.gather(pump, return_exceptions=True)
    term.print("Bye.")
    return 1 if client.login_refused else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tessera play",
                                     description="play Tessera's games in the terminal")
    add_server_argument(parser)
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.server = chosen_server(args.server)
    if args.game and not args.bot:
        parser.error("--game goes with --bot")
    if args.bot and not args.game:
        parser.error(f"--bot {args.bot} needs --game, e.g. --game hadron size=5 5m+3s")
    if args.bot and not (args.login or args.register):
        args.guest = True
    term = Terminal(completer=WordCompleter(sorted({*words(), *engine.GAMES, *BOTS})))
    with term.active():
        return asyncio.run(run(args, term))


__all__ = ["COMMAND_MODULES", "PlayClient", "main", "run"]
