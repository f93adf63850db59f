"""``tessera botcheck``: the command, its options, the run and the table.

    tessera botcheck random
    tessera botcheck 'engine:python3 examples/random_engine.py' --game 'hadron size=5'
    tessera botcheck --command './mybot --server {url} --token {token}' --only games,restart

It starts a private server (``python -m server serve`` on a free loopback port, SQLite in a
temporary directory), creates the bot's account and token (``python -m server admin
create-bot``) and two of its own, starts the bot, waits for it to log in, and runs the
scenarios (:mod:`clients.botcheck.scenarios`) one after the other; a table gives each
one's verdict, seconds and reason. Exit status 0 when every scenario passed, 1 when one
failed, 2 for bad options.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shlex
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import engine
import protocol as p
from clients.connection import Disconnected, ServerError
from clients.localserver import LocalServer
from clients.sdk.specs import GameSpec, SeekSpec, parse_game_spec, parse_seek

from .scenarios import (
    NAMES,
    ONE_ROW,
    ONLINE_S,
    PRESSURE_CLOCK,
    Check,
    Claim,
    Scenario,
    rows,
)
from .sides import Failed, Hub, Side
from .subject import BotProcess, Subject, command_subject, sdk_subject

SEEKS_SETTLE_S = 1.0  # after the bot logs in, for its seeks to open
DEFAULT_CLOCK = "2s/move"
# botcheck's server serves the bot and botcheck alone, from this machine: the bot's
# reconnects and botcheck's own logins are not rationed per address
OWN_SERVER_ARGS = ("--logins-per-minute", "0")
OWN_SIDES = ("checker", "bystander")


@dataclass(frozen=True, slots=True)
class Verdict:
    """A row of the table."""

    name: str
    passed: bool
    seconds: float
    reason: str


def small_game(game: engine.Game) -> GameSpec:
    """``game`` on a small board: each whole-number option two above its least (never
    above its default), the other options as they default."""
    options = {o.name: min(o.default, o.minimum + 2)
               if isinstance(o.default, int) and o.minimum is not None else o.default
               for o in game.options}
    return GameSpec(game.key, dict(game.normalize_options(options)))


def only_names(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in NAMES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown scenario {', '.join(unknown) or '(none)'}; "
                         f"choose from {', '.join(NAMES)}")
    return names


def build_parser() -> argparse.ArgumentParser:
    scenarios = "; ".join([f"{n}: {ONE_ROW[n][1]}" for n in ONE_ROW])
    pressure = p.format_time_control(PRESSURE_CLOCK)
    parser = argparse.ArgumentParser(
        prog="tessera botcheck",
        description="Run a bot against a private server through scripted scenarios and "
                    "print a pass/fail table with the reason for each. Exit status: 0 when "
                    "every scenario passed, 1 when one failed, 2 for bad options.",
        epilog=f"Scenarios: games: a whole game of each game the bot claims; {scenarios}. "
               "See docs/BOTS.md.")
    parser.add_argument("bot", nargs="?", metavar="BOT",
                        help="a bundled bot (random, greedy, mcts), FILE.py:CLASS or "
                             "module:CLASS, run by 'tessera bot'; or 'engine:PROGRAM ARGS', "
                             "run by 'tessera bridge'")
    parser.add_argument("--command", metavar="'PROGRAM ARGS'",
                        help="instead of BOT: any program that plays on a server; {url} and "
                             "{token} in it are replaced by the server's URL and the bot's "
                             "token (also in $TESSERA_SERVER and $TESSERA_BOT_TOKEN)")
    parser.add_argument("--bot-args", default="", metavar="'OPTIONS'",
                        help="more options for 'tessera bot' or 'tessera bridge', e.g. "
                             "'--move-time 0.1 --games hadron'")
    parser.add_argument("--game", action="append", default=[], metavar="SPEC",
                        help="a game the bot plays, e.g. 'hadron size=5' (repeatable; default: "
                             "the games of the bot's open seeks, else every game on a small "
                             "board); the other scenarios play the first")
    parser.add_argument("--clock", default=DEFAULT_CLOCK,
                        help="the clock of the games, e.g. 5s/move or 1m+1s (default: "
                             f"%(default)s; 'pressure' plays {pressure}, 'slow' unlimited)")
    parser.add_argument("--decline", metavar="'GAME [OPTION=VALUE] CLOCK'",
                        help="the challenge the bot should decline (default: the first game "
                             "with a 30d/move clock)")
    parser.add_argument("--only", type=only_names, metavar="NAMES",
                        help=f"run these scenarios only, e.g. games,restart ({', '.join(NAMES)})")
    parser.add_argument("--workdir", type=Path, metavar="DIR",
                        help="keep the server's database and log and the bot's log here "
                             "(default: a temporary directory, removed at exit)")
    parser.add_argument("--quiet", action="store_true", help="no line per finished scenario")
    return parser


def subject_from(args: argparse.Namespace) -> Subject:
    if (args.bot is None) == (args.command is None):
        raise ValueError("name a bot (BOT) or a program (--command), one of them")
    if args.command is not None:
        if args.bot_args:
            raise ValueError("--bot-args is for BOT; put a program's options in --command")
        return command_subject(args.command)
    return sdk_subject(args.bot, shlex.split(args.bot_args))


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        subject = subject_from(args)
        specs = [parse_game_spec(s) for s in args.game]
        clock = p.parse_time_control(args.clock)
        decline = parse_seek(args.decline) if args.decline else None
    except (ValueError, OSError, ImportError) as e:
        parser.error(str(e))
    progress = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    plan = Plan(specs, clock, decline, args.only or list(NAMES))
    with contextlib.ExitStack() as stack:
        workdir = args.workdir or Path(stack.enter_context(
            tempfile.TemporaryDirectory(prefix="tessera-botcheck-")))
        server = LocalServer(workdir, extra_args=OWN_SERVER_ARGS)
        stack.callback(server.stop)
        name = subject.account()
        try:
            server.start()
            with ThreadPoolExecutor(3) as pool:
                tokens = list(pool.map(server.create_bot, [name, *OWN_SIDES]))
        except RuntimeError as e:  # the server did not start, or made no account
            print(f"botcheck: {e}", file=sys.stderr)
            return 1
        bot = BotProcess(subject, server.url, tokens[0], workdir / "bot.log")
        stack.callback(bot.stop)
        kept = "kept" if args.workdir else "removed at exit"
        print(f"botcheck: {subject.label} as {name} on {server.url} (a private server; its "
              f"files and the bot's log in {workdir}, {kept})", flush=True)
        try:
            verdicts, notes = asyncio.run(run(server, bot, name, tokens[1:], plan, progress))
        except KeyboardInterrupt:
            print("botcheck: interrupted", file=sys.stderr)
            return 130
        bot.stop()  # its log is whole: it is read before the directory goes
        return report(verdicts, notes, bot)


def report(verdicts: list[Verdict], notes: list[str], bot: BotProcess) -> int:
    """Print the table, the count and the notes (and, if something failed, the end of the
    bot's log); the exit status."""
    print(table(verdicts))
    failed = [v for v in verdicts if not v.passed]
    print(f"{len(verdicts)} scenarios: {len(verdicts) - len(failed)} passed, {len(failed)} "
          f"failed")
    for note in notes:
        print(f"note: {note}")
    if failed:
        print(f"the end of the bot's log ({bot.log}):\n{bot.log_tail()}", file=sys.stderr)
    return 1 if failed else 0


@dataclass(frozen=True, slots=True)
class Plan:
    """What the options ask for: games, the clock, the challenge to decline, scenarios."""

    specs: list[GameSpec]
    clock: p.TimeControl
    decline: SeekSpec | None
    names: list[str]


async def run(server: LocalServer, bot: BotProcess, name: str, tokens: Sequence[str],
              plan: Plan, progress: Callable[[str], None] | None
              ) -> tuple[list[Verdict], list[str]]:
    """Connect botcheck's sides, start the bot and run the scenarios; the verdicts (one,
    ``log in``, failed, if the bot does not log in) and the notes."""
    hub = Hub(bot.ended)
    checker, bystander = (Side(hub, server.url, side, token, seed=i, lobby=side == "checker")
                          for i, (side, token) in enumerate(zip(OWN_SIDES, tokens, strict=True)))
    check = Check(server, bot, hub, checker, bystander, name, plan.clock,
                  decline=plan.decline)
    try:
        for side in check.sides:
            await side.connect()
        bot.start()
        started = time.monotonic()
        try:
            await hub.until(check.online, ONLINE_S, "the bot to log in")
        except Failed as e:
            return [Verdict("log in", False, time.monotonic() - started, str(e))], check.notes
        check.claims = await claims(check, plan.specs)
        verdicts = []
        for row, scenario in rows(plan.names, check.claims):
            verdict = await play(check, row, scenario)
            verdicts.append(verdict)
            if progress is not None:
                progress(f"{'pass' if verdict.passed else 'FAIL'}  {row} "
                         f"({verdict.seconds:.1f} s)")
        return verdicts, check.notes
    finally:
        server.thaw()
        for side in check.sides:
            await side.close()


async def claims(check: Check, specs: list[GameSpec]) -> list[Claim]:
    """The games the bot plays: ``--game``; else those of its open seeks (it has a moment
    to open them); else every game of the registry on a small board."""
    if specs:
        return [Claim(spec) for spec in specs]
    await asyncio.sleep(SEEKS_SETTLE_S)
    seeks: dict[str, Claim] = {}
    for seek in check.checker.seeks.values():
        if seek.user.name.lower() == check.name.lower():
            spec = SeekSpec(seek.game, dict(seek.options), seek.clock)
            seeks.setdefault(str(spec), Claim(GameSpec(spec.game, spec.options), spec))
    return list(seeks.values()) or [Claim(small_game(g)) for g in engine.GAMES.values()]


async def play(check: Check, name: str, scenario: Scenario) -> Verdict:
    started = time.monotonic()
    try:
        await check.ready(name)
        reason = await scenario(check)
        passed = True
    except Failed as e:
        reason, passed = str(e), False
    except (ServerError, Disconnected, OSError, TimeoutError) as e:  # botcheck's own request
        reason, passed = f"botcheck could not go on: {type(e).__name__}: {e}", False
    ended = check.bot.ended()
    if not passed and ended is not None and "the bot's process" not in reason:
        reason += f" (the bot's process {ended})"
    return Verdict(name, passed, time.monotonic() - started, reason)


def table(verdicts: list[Verdict]) -> str:
    """The verdicts in aligned columns; the reason, last, is not padded."""
    head = ("scenario", "result", "seconds", "reason")
    cells = [head, *((v.name, "pass" if v.passed else "FAIL", f"{v.seconds:.1f}", v.reason)
                     for v in verdicts)]
    widths = [max(len(row[i]) for row in cells) for i in range(3)]
    return "\n".join("  ".join([*(row[i].ljust(widths[i]) for i in range(3)), row[3]])
                     for row in cells)


if __name__ == "__main__":
    sys.exit(main())
