"""``tessera bot``: run a bundled bot, or your own, on a server.

    export TESSERA_BOT_TOKEN=...            # from `tessera admin create-bot NAME`
    tessera bot --server ws://host:8765/ws --bot mcts --max-games 4 \\
        --games hadron,xodd:size=9 --seek 'hadron size=5 2s/move' --accept-from any

``--bot`` takes a bundled bot's name (random, greedy, mcts) or ``FILE.py:CLASS`` /
``module:CLASS`` for your own :class:`~clients.bots.base.Bot` subclass. A bot file can also
run itself with :func:`run_bot`, which takes the same options (all but ``--bot``).

The first SIGINT or SIGTERM stops seeking and accepting and lets the games in progress
finish; a second one resigns them; a third quits at once. Exit status: 0 after a clean
stop, 1 if the server refuses the token, 2 for bad options.

``--supervised`` is for a program that runs the bot as its child (``tessera play``'s ``bot``
command): the bot prints ``ready as NAME`` on stdout once logged in, and stops, resigning
its games in progress, when its standard input closes (the parent closed it, or died); if
that takes more than 10 s (the server is gone) it quits anyway.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import importlib.util
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from clients.address import add_server_argument, chosen_server
from clients.bots import BOTS, Bot, make_bot

from .policy import CHALLENGERS_CHOICES, DEFAULT_TIME_CONTROLS, RATED_CHOICES, Policy, names
from .runner import BotRunner, BotSource, FatalError
from .specs import parse_game_rules, parse_seek

log = logging.getLogger("clients.sdk")

TOKEN_ENV = "TESSERA_BOT_TOKEN"
SUPERVISED_QUIT_S = 10.0  # --supervised: quit this long after stdin closes, games or not


def add_runner_arguments(parser: argparse.ArgumentParser) -> None:
    """The options shared by ``tessera bot``, ``tessera bridge`` and :func:`run_bot`."""
    conn = parser.add_argument_group("server")
    add_server_argument(conn)
    conn.add_argument("--token", help=f"bot token (default ${TOKEN_ENV}; the command line "
                      "is visible to other users of this machine, the environment is not)")
    conn.add_argument("--token-file", type=Path, help="read the bot token from this file")
    conn.add_argument("--guest", action="store_true",
                      help="play as a guest instead (no token; for trying things out)")
    pol = parser.add_argument_group("what to play")
    pol.add_argument("--games", default="all", metavar="RULES",
                     help="games to accept, with option constraints, e.g. "
                          "'hadron:size=5..9,xodd:size=9|13,yodd' (default: all)")
    pol.add_argument("--time-controls", default=",".join(sorted(DEFAULT_TIME_CONTROLS)),
                     metavar="KINDS", help="clock kinds to accept: fischer, per_move, "
                     "correspondence, unlimited (default: %(default)s)")
    pol.add_argument("--min-think", type=float, default=0.0, metavar="S",
                     help="decline clocks that leave less than S seconds per move")
    pol.add_argument("--max-games", type=int, default=1, metavar="N",
                     help="games played at once (default: 1)")
    pol.add_argument("--accept-from", default="any", metavar="WHO",
                     help="whose challenges to accept: any, none, or names "
                          "separated by commas (default: any)")
    pol.add_argument("--challengers", choices=CHALLENGERS_CHOICES, default=None,
                     help="who the server lets challenge the bot at all: everyone, "
                          "registered (no guests) or nobody; kept with the account (default: "
                          "as the account has it, everyone unless changed); a challenge it "
                          "keeps out is refused by the server and costs the bot nothing")
    pol.add_argument("--rated", choices=RATED_CHOICES, default="any",
                     help="challenges to accept by their rated flag: any (default), rated "
                          "only, or casual only")
    pol.add_argument("--rematch", action="store_true",
                     help="accept a rematch an opponent offers (when a game slot is free)")
    pol.add_argument("--ladder", default="", metavar="GAMES",
                     help="join the server's bot ladder of these games, e.g. hadron,xodd: "
                          "rated games against other ladder bots, paired by the server "
                          "(docs/RATINGS.md)")
    pol.add_argument("--seek", action="append", default=[], metavar="SPEC",
                     help="keep a seek open while a game slot is free, e.g. "
                          "'hadron size=5 2s/move' or 'xodd 5m+3s' (repeatable)")
    play = parser.add_argument_group("playing")
    play.add_argument("--move-time", type=float, metavar="S",
                      help="think at most S seconds per move, whatever the clock allows")
    play.add_argument("--stop-after", type=int, metavar="N",
                      help="stop after N finished games")
    play.add_argument("--no-claim", action="store_true",
                      help="do not claim games whose opponent left and stayed away")
    play.add_argument("--log-level", default="info",
                      choices=["debug", "info", "warning", "error"])
    play.add_argument("--supervised", action="store_true",
                      help="for a parent program: print 'ready as NAME' on stdout once logged "
                           "in; stop, resigning, when standard input closes (within 10 s)")


def policy_from_args(args: argparse.Namespace) -> Policy:
    """The :class:`Policy` the options describe (ValueError for bad ones)."""
    who = args.accept_from.strip().lower()
    accept_from = (None if who in ("any", "anyone", "all", "*")
                   else frozenset() if who in ("none", "nobody", "")
                   else names(who.split(",")))
    kinds = frozenset(k.strip().lower().replace("-", "_")
                      for k in args.time_controls.split(",") if k.strip())
    return Policy(games=parse_game_rules(args.games), time_controls=kinds,
                  min_think_s=args.min_think, max_games=args.max_games,
                  accept_from=accept_from, seeks=tuple(parse_seek(s) for s in args.seek),
                  rated=args.rated, rematches=args.rematch, challengers=args.challengers,
                  ladder=tuple(g.strip() for g in args.ladder.split(",") if g.strip()))


def token_from_args(args: argparse.Namespace) -> str | None:
    """The bot token from --token, --token-file or the environment; None with --guest."""
    if args.guest:
        return None
    if args.token:
        return str(args.token)
    if args.token_file:
        return str(args.token_file.read_text()).strip()
    token = os.environ.get(TOKEN_ENV, "").strip()
    if not token:
        raise ValueError(f"a bot token is needed: --token, --token-file or ${TOKEN_ENV} "
                         "(create one with `tessera admin create-bot NAME`), or --guest")
    return token


def runner_from_args(bot: BotSource, args: argparse.Namespace) -> BotRunner:
    move_time = None if args.move_time is None else round(args.move_time * 1000)
    return BotRunner(bot, url=chosen_server(args.server), token=token_from_args(args),
                     policy=policy_from_args(args), move_time_ms=move_time,
                     stop_after=args.stop_after, claim_abandoned=not args.no_claim)


def setup_logging(level: str) -> None:
    logging.basicConfig(level=level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)-7s %(message)s", datefmt="%H:%M:%S")


async def announce_ready(runner: BotRunner) -> None:
    """Print ``ready as NAME`` on stdout once ``runner`` has logged in (``--supervised``)."""
    await runner.ready.wait()
    print(f"ready as {runner.name}", flush=True)


def stop_when_stdin_closes(runner: BotRunner, loop: asyncio.AbstractEventLoop,
                           main: asyncio.Task[Any] | None) -> None:
    """Stop ``runner``, resigning, once standard input ends (``--supervised``); cancel
    ``main`` if that has not ended it within :data:`SUPERVISED_QUIT_S`."""
    def on_eof() -> None:
        log.warning("standard input closed: stopping (resigning the games in progress)")
        runner.stop(resign=True)
        if main is not None:
            loop.call_later(SUPERVISED_QUIT_S, main.cancel)

    def watch() -> None:
        with contextlib.suppress(OSError, ValueError):
            while sys.stdin.buffer.read(4096):
                pass
        with contextlib.suppress(RuntimeError):  # the loop is closed: the bot is done anyway
            loop.call_soon_threadsafe(on_eof)

    threading.Thread(target=watch, name="stdin-watch", daemon=True).start()


async def serve_until_stopped(runner: BotRunner, *, supervised: bool = False) -> int:
    """Run ``runner`` with SIGINT/SIGTERM handling (see the module doc); the exit status.

    ``supervised``: announce the bot's name on stdout and stop when stdin closes.
    """
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    signals = 0

    def on_signal() -> None:
        nonlocal signals
        signals += 1
        if signals == 1:
            log.warning("stopping: finishing the games in progress (signal again to resign)")
            runner.stop()
        elif signals == 2:
            log.warning("stopping: resigning the games in progress (signal again to quit)")
            runner.stop(resign=True)
        elif main is not None:
            main.cancel()

    installed = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, on_signal)
            installed.append(sig)
        except (NotImplementedError, RuntimeError):  # not the main thread, or Windows
            pass
    announcer = asyncio.ensure_future(announce_ready(runner)) if supervised else None
    if supervised:
        stop_when_stdin_closes(runner, loop, main)
    try:
        await runner.run()
    except FatalError as e:
        log.error("%s", e)
        return 1
    except asyncio.CancelledError:
        log.warning("quit with games in progress")
        return 130
    finally:
        if announcer is not None:
            announcer.cancel()
        for sig in installed:
            loop.remove_signal_handler(sig)
    won = sum(1 for r in runner.results if r.won)
    log.info("stopped after %d games (%d won)", len(runner.results), won)
    return 0


def run_cli(make_bot_source: Callable[[argparse.Namespace], BotSource],
            args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Build the bot and the runner from parsed options and run it until stopped."""
    setup_logging(args.log_level)
    try:
        runner = runner_from_args(make_bot_source(args), args)
    except (ValueError, OSError, TypeError) as e:
        parser.error(str(e))
    return asyncio.run(serve_until_stopped(runner, supervised=args.supervised))


def run_bot(bot: BotSource, argv: Sequence[str] | None = None) -> int:
    """Run ``bot`` (or a factory of bots) with the options of ``tessera bot`` from ``argv``
    (default: the command line); return the exit status."""
    parser = argparse.ArgumentParser(description="Run this bot on a Tessera server.")
    add_runner_arguments(parser)
    args = parser.parse_args(argv)
    return run_cli(lambda _: bot, args, parser)


def load_bot_class(spec: str) -> type[Bot]:
    """A bot class from ``NAME`` (bundled), ``FILE.py:CLASS`` or ``module:CLASS``."""
    if spec in BOTS:
        return BOTS[spec]
    where, sep, class_name = spec.rpartition(":")
    if not sep:
        raise ValueError(f"unknown bot {spec!r}: give a bundled bot "
                         f"({', '.join(sorted(BOTS))}), FILE.py:CLASS or module:CLASS")
    if where.endswith(".py"):
        path = Path(where)
        module_spec = importlib.util.spec_from_file_location(path.stem, path)
        if module_spec is None or module_spec.loader is None or not path.exists():
            raise ValueError(f"cannot load {where}")
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    cls = getattr(module, class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, Bot)):
        raise ValueError(f"{class_name} in {where} is not a Bot subclass")
    return cls


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="tessera bot", description="Run a bundled or your own bot on a Tessera server.",
        epilog="Signals: the first SIGINT/SIGTERM finishes the games in progress and stops; "
               "a second resigns them. See docs/BOTS.md.")
    parser.add_argument("--bot", required=True,
                        help=f"a bundled bot ({', '.join(sorted(BOTS))}), FILE.py:CLASS or "
                             "module:CLASS")
    parser.add_argument("--seed", type=int, help="seed of the bot's random choices")
    add_runner_arguments(parser)
    args = parser.parse_args(argv)

    def factory(a: argparse.Namespace) -> Bot:
        if a.bot in BOTS:
            return make_bot(a.bot, seed=a.seed)
        return load_bot_class(a.bot)(seed=a.seed)

    return run_cli(factory, args, parser)


if __name__ == "__main__":
    sys.exit(main())
