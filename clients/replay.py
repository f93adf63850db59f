"""``tessera replay``: step through a stored match in the terminal.

    tessera replay GAME_ID [--server URL | --db URL]
    tessera replay --file RECORD          # a text or JSON match record
    tessera replay GAME_ID --ply 12       # print one position and exit

Commands while replaying: ``n``/Enter next, ``p`` previous, ``f`` first, ``l`` last,
``g N`` (or just ``N``) go to the position after N moves, ``a [SECONDS]`` autoplay to the
end (any command stops it), ``i`` the record's header, ``q`` quit. The viewer,
:class:`Replayer`, is shared with ``tessera play`` (its ``replay GAME`` command).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import engine
import protocol as p
from clients import render
from clients.address import add_server_argument, chosen_server
from clients.export import read_records
from clients.fetch import FetchError, Source, fetch_record
from clients.records import (
    MatchRecord,
    RecordError,
    decimals_needed,
    format_clock_reading,
    match_record_from_wire,
    rating_change_text,
)
from clients.terminal import Terminal, wants_color

DEFAULT_DELAY_S = 1.0

REPLAY_HELP = """\
replay commands:
  n, next, Enter   next move          p, prev        previous move
  f, first         the start          l, last        the final position
  g N, goto N, N   after N moves      a [SECONDS]    autoplay (any command stops it)
  i, info          the record         q, quit        leave the replay"""


@dataclass
class Step:
    """What a replay command asks for: text to show, autoplay to start, or leaving."""

    text: str = ""
    autoplay: float | None = None
    done: bool = False


class Replayer:
    """A cursor over a record's positions: 0 is the start, ``last`` is after every move.

    The positions come from the engine replaying the moves; an illegal move ends the
    replay there and is reported in ``problem``.
    """

    def __init__(self, record: MatchRecord, *, color: bool = False) -> None:
        self.record = record
        self.color = color
        self.states = [engine.new_game(record.game, **record.options)]
        self.problem: str | None = None
        for m in record.moves:
            try:
                self.states.append(self.states[-1].play(m.move))
            except engine.IllegalMove as exc:
                self.problem = (f"move {m.ply + 1} ({m.move}) is illegal: {exc}; the replay "
                                "stops there")
                break
        self.index = 0

    @property
    def last(self) -> int:
        return len(self.states) - 1

    @property
    def players(self) -> list[render.Player]:
        kinds = self.record.player_kinds or ("", "")
        return list(zip(self.record.players, kinds, strict=True))

    def go(self, index: int) -> str:
        self.index = max(0, min(index, self.last))
        return self.view()

    def title(self) -> str:
        r = self.record
        name = engine.get_game(r.game).name
        ident = f" {r.game_id}" if r.game_id else ""
        opts = render.format_options(r.options)
        clock = p.format_time_control(r.time_control)
        return (f"Replay{ident} | {name} {opts} | {clock} | "
                f"{r.players[0]} vs {r.players[1]}")

    def clocks_at(self, index: int) -> list[int] | None:
        """Each seat's clock after its latest move up to ``index`` moves, if recorded."""
        start = self.record.time_control.initial_ms()
        if start is None:
            return None
        clocks = [start, start]
        for m in self.record.moves[:index]:
            if m.clock_ms is not None:
                clocks[m.ply % 2] = m.clock_ms
        return clocks

    def view(self) -> str:
        """The position at the cursor, with the move that led to it and the result at the end."""
        state = self.states[self.index]
        last = render.last_move_text(state)
        if last and self.index > 0:
            used = self.record.moves[self.index - 1].ms_used
            if used is not None:
                last += f", {used / 1000:.1f}s"
        title = f"{self.title()}\nposition {self.index}/{len(self.record.moves)}"
        text = render.position_panel(state, title=title, players=self.players,
                                     clocks=self.clocks_at(self.index), last=last,
                                     color=self.color)
        if self.index == self.last:
            text += "\n" + self.outcome()
        return text

    def outcome(self) -> str:
        if self.problem:
            return f"Cannot replay further: {self.problem}"
        r = self.record
        if r.termination == "unterminated":
            return "End of the record: the game was still going on."
        result = p.Result(winner=r.winner, reason=r.termination)  # type: ignore[arg-type]
        final = self.states[-1]
        return f"End of the game: {render.result_text(r.game, self.players, result, final)}"

    def info(self) -> str:
        r = self.record
        lines = [self.title(), f"date: {r.date}", f"rules version: {r.rules_version}",
                 f"result: {r.result} ({r.termination})", self.rated_text(),
                 f"moves: {len(r.moves)}"]
        decimals = decimals_needed(m.clock_ms for m in r.moves)
        for m in r.moves:
            clock = (f" [{format_clock_reading(m.clock_ms, decimals)}]"
                     if m.clock_ms is not None else "")
            lines.append(f"  {m.ply + 1:>3}. {m.move}{clock}")
        return "\n".join(lines)

    def rated_text(self) -> str:
        """``rated: yes; Red (alice) 1500? -> 1662? (+162), ...`` or ``rated: no (casual)``."""
        r = self.record
        if not r.rated:
            return "rated: no (casual)"
        if r.rating_changes is None:
            return "rated: yes"
        colours = r.colours
        return "rated: yes; " + ", ".join(
            f"{colours[seat]} ({r.players[seat]}) {rating_change_text(change)}"
            for seat, change in enumerate(r.rating_changes))

    def command(self, line: str) -> Step:
        """Carry out one replay command."""
        words = line.strip().lower().split()
        verb, args = (words[0], words[1:]) if words else ("n", [])
        if verb.isdigit():
            verb, args = "g", [verb]
        if verb in ("n", "next", "+", "j"):
            return Step(self._step(+1))
        if verb in ("p", "prev", "previous", "back", "-", "k"):
            return Step(self._step(-1))
        if verb in ("f", "first", "start", "0"):
            return Step(self.go(0))
        if verb in ("l", "last", "end"):
            return Step(self.go(self.last))
        if verb in ("g", "go", "goto"):
            if len(args) != 1 or not args[0].lstrip("-").isdigit():
                return Step(f"usage: goto N (0..{self.last})")
            return Step(self.go(int(args[0])))
        if verb in ("a", "auto", "autoplay", "play"):
            try:
                delay = float(args[0]) if args else DEFAULT_DELAY_S
            except ValueError:
                return Step("usage: auto [SECONDS between moves]")
            return Step(autoplay=max(delay, 0.05))
        if verb in ("s", "stop"):
            return Step()
        if verb in ("i", "info"):
            return Step(self.info())
        if verb in ("h", "help", "?"):
            return Step(REPLAY_HELP)
        if verb in ("q", "quit", "exit"):
            return Step(done=True)
        return Step(f"unknown replay command {verb!r}; type h for help")

    def _step(self, delta: int) -> str:
        target = self.index + delta
        if target > self.last:
            return "already at the end (f goes to the start)"
        if target < 0:
            return "already at the start"
        return self.go(target)


async def autoplay(replayer: Replayer, delay: float, show: Callable[[str], None]) -> None:
    """Show the following positions one by one until the end (cancel to stop)."""
    while replayer.index < replayer.last:
        await asyncio.sleep(delay)
        show(replayer.go(replayer.index + 1))
    show(f"(autoplay reached the end: position {replayer.index}/{replayer.last})")


async def run_viewer(replayer: Replayer, term: Terminal) -> None:
    """The replay command loop on ``term``: reads commands until ``q`` or end of input."""
    task: asyncio.Task[None] | None = None
    term.print(replayer.view())
    term.print("(n next, p previous, f first, l last, g N go to, a autoplay, q quit, h help)")
    def prompt() -> str:  # read again whenever the prompt is drawn: autoplay moves on
        return f"replay {replayer.index}/{replayer.last}> "

    try:
        while True:
            try:
                line = await term.read(prompt)
            except EOFError:
                return
            if task is not None:
                task.cancel()
                task = None
                if not line.strip():
                    term.print("(autoplay stopped)")
                    continue
            step = replayer.command(line)
            if step.text:
                term.print(step.text)
            if step.done:
                return
            if step.autoplay is not None:
                task = asyncio.create_task(autoplay(replayer, step.autoplay, term.print))
    finally:
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def load(args: argparse.Namespace) -> MatchRecord:
    if args.file:
        label, item = next(iter(read_records(args.file)))
        if isinstance(item, RecordError):
            raise FetchError(f"{label}: {item}")
        return item
    source = Source(server=chosen_server(args.server), db=args.db)
    return match_record_from_wire(fetch_record(source, args.game_id))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tessera replay",
                                     description="step through a stored match")
    parser.add_argument("game_id", nargs="?")
    where = parser.add_mutually_exclusive_group()
    add_server_argument(where, "fetch from this server")
    where.add_argument("--db", help="read this database, e.g. sqlite+aiosqlite:///tessera.db")
    where.add_argument("--file", help="replay a text or JSON record file")
    parser.add_argument("--ply", type=int, help="print the position after PLY moves and exit")
    parser.add_argument("--no-color", action="store_true", help="no ANSI colours")
    args = parser.parse_args(argv)
    if (args.game_id is None) == (args.file is None):
        parser.error("give a GAME_ID or --file, not both")
    try:
        record = load(args)
    except (FetchError, RecordError) as exc:
        print(f"tessera replay: {exc}", file=sys.stderr)
        return 2
    replayer = Replayer(record, color=wants_color(args.no_color))
    if args.ply is not None:
        print(replayer.go(args.ply))
        return 0
    term = Terminal()
    with term.active():
        asyncio.run(run_viewer(replayer, term))
    return 0


if __name__ == "__main__":
    sys.exit(main())
