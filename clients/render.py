"""Text views of games for the terminal: boards in colour, clocks, the engine's hints.

Everything here is drawn from the engine's metadata and ``State`` methods, never from
knowledge of a particular game: the board layout is ``State.render`` (square and hex boards,
coordinates, last move bracketed), stones are told apart by ``Game.stone_chars``, and hints
are ``State.summary()`` laid out generically. Colours are ANSI escapes, added only when
asked for, so the same text serves terminals, pipes and tests.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import engine
import protocol as p
from clients import notation
from protocol.limits import PROVISIONAL_DEVIATION

RESET = "\x1b[0m"
DIM = "\x1b[2m"
BOLD = "\x1b[1m"
MARK = "\x1b[1;33m"  # the brackets around the last move's cells
# Stone styles by the colour's name (engine metadata); unknown names fall back by seat.
COLOUR_STYLES: dict[str, str] = {
    "red": "\x1b[1;31m",
    "blue": "\x1b[1;34m",
    "black": "\x1b[1;30;47m",
    "white": "\x1b[1;97;100m",
}
SEAT_STYLES = ("\x1b[1;33m", "\x1b[1;36m")
MAX_LISTED_CELLS = 40

Player = tuple[str, str]
"""A seat's occupant for display: (name, kind), kind being human, guest, bot or free text."""

_CELL_RE = re.compile(r"[a-z][0-9]+")


def style_of(colour: str, seat: int) -> str:
    """The ANSI style of a seat's stones, chosen by the colour's name."""
    return COLOUR_STYLES.get(colour.lower(), SEAT_STYLES[seat])


def paint(text: str, style: str, color: bool) -> str:
    return f"{style}{text}{RESET}" if color and style else text


def move_cells(state: engine.State, move: str | None) -> list[str]:
    """The board cells named in a move's text (``Bc3,Wd4`` -> c3, d4; ``c3-c6`` -> both)."""
    if not move:
        return []
    names = state.board.by_name
    return [cell for cell in _CELL_RE.findall(move.lower()) if cell in names]


def board_lines(state: engine.State, mark: Sequence[str] = ()
                ) -> list[list[tuple[str, str]]]:
    """The board as lines of (text, kind) pieces, kind being ``label``, ``cell``, ``stone``,
    ``mark`` or ``space``, drawn from the board's geometry (``engine.boards``).

    Rows run top-down, two characters a cell, hex rows offset by half a cell. A square
    board's rows are labelled with their number and its columns with their letter, top and
    bottom. A hex board's columns slant, so every row also names its first and last cell
    (``a4 . . . . g4``). Marked cells are bracketed; a run of marked cells side by side in a
    row shares one pair of brackets (``[B W]``), so adjacent marks stay readable.
    """
    board = state.board
    chars = state.cell_chars()
    wanted = {m.lower() for m in mark}
    marked = {c.index for c in board.cells if c.name in wanted}
    col = {c.index: int(2 * c.x) for c in board.cells}
    left = min(col.values())
    width = max(col.values()) - left + 3  # a bracket's room on both sides
    rows = board.rows()
    hexed = board.kind == "hex"
    labels: list[tuple[str, str]] = []
    for r, row in enumerate(rows):
        ends = sorted(row, key=col.__getitem__)
        labels.append((board.cells[ends[0]].name, board.cells[ends[-1]].name) if hexed
                      else (str(r + 1), str(r + 1)))
    label_w = max(len(a) for a, _ in labels)

    def letters(row: list[int]) -> list[tuple[str, str]]:
        line = [" "] * width
        for x in row:
            line[col[x] - left + 1] = board.cells[x].name[0]
        return [(" " * (label_w + 1), "space"), ("".join(line).rstrip(), "label")]

    out = [letters(rows[-1] if hexed else rows[0])]
    for r in range(len(rows) - 1, -1, -1):
        pieces: list[tuple[str, str]] = [(" " * width, "space")] * width
        cells = {col[x] - left + 1: x for x in rows[r]}
        for c, x in cells.items():
            ch = chars[x]
            pieces[c] = (ch, "cell" if ch == "." else "stone")
            if x in marked:
                if cells.get(c - 2) not in marked:
                    pieces[c - 1] = ("[", "mark")
                if cells.get(c + 2) not in marked:
                    pieces[c + 1] = ("]", "mark")
        pieces = [(" ", "space") if kind == "space" else (t, kind) for t, kind in pieces]
        first, last = labels[r]
        out.append([(first.rjust(label_w) + " ", "label"), *pieces, (" " + last, "label")])
    out.append(letters(rows[0]))
    return out


def board_text(state: engine.State, *, mark: Sequence[str] = (), color: bool = False) -> str:
    """The board of ``state`` with ``mark`` bracketed (:func:`board_lines`), coloured if
    ``color``: stones by their colour's name, brackets yellow, empty cells and labels dim."""
    styles = {ch: style_of(name, seat) for seat, (ch, name)
              in enumerate(zip(state.game.stone_chars, state.game.players, strict=True))}
    kinds = {"label": DIM, "cell": DIM, "mark": MARK, "space": ""}
    out = []
    for line in board_lines(state, mark):
        text = "".join(paint(t, styles.get(t, "") if kind == "stone" else kinds[kind], color)
                       for t, kind in line)
        out.append(text.rstrip())
    return "\n".join(out)


def short_clock_reading(ms: int) -> str:
    """A clock reading (time left) as the live display shows it: ``1:02:03``, ``4:58``, or
    tenths under a minute (``9.4``). Records keep the exact form
    (``clients.records.format_clock_reading``)."""
    ms = max(ms, 0)
    if ms < 60_000:
        return f"{ms // 1000}.{ms % 1000 // 100}"
    seconds = ms // 1000
    minutes, sec = divmod(seconds, 60)
    hours, minute = divmod(minutes, 60)
    return f"{hours}:{minute:02d}:{sec:02d}" if hours else f"{minute}:{sec:02d}"


def format_options(options: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in options.items())


def describe_offer(game: str, options: Mapping[str, Any], clock: p.TimeControl) -> str:
    """``Hadron size=5 5m+3s``: a seek's or challenge's game, options and clock."""
    name = engine.get_game(game).name if game in engine.GAMES else game
    opts = format_options(options)
    return f"{name}{' ' + opts if opts else ''} {p.format_time_control(clock)}"


def _value_text(value: Any, nested: bool = False) -> str:
    if isinstance(value, list | tuple):
        if not value:
            return "none"
        if nested:
            return "[" + " ".join(_value_text(v) for v in value) + "]"
        items = [_value_text(v, nested=True) for v in value]
        if len(items) > MAX_LISTED_CELLS:
            return " ".join(items[:MAX_LISTED_CELLS]) + f" ... (+{len(items) - MAX_LISTED_CELLS})"
        return " ".join(items)
    return str(value)


def _per_seat(value: Any, colours: Sequence[str]) -> bool:
    """Is a summary value one number (or list of numbers) per seat?"""
    return (isinstance(value, list | tuple) and len(value) == len(colours)
            and all(isinstance(v, int | list | tuple) and not isinstance(v, bool)
                    for v in value))


def summary_lines(summary: Mapping[str, Any], colours: Sequence[str], *,
                  per_seat_only: bool = False) -> list[str]:
    """``State.summary()`` as ``name: value`` lines; pairs of numbers are read per seat.
    ``per_seat_only`` keeps only those (the tally at the end of a game)."""
    lines: list[str] = []
    for key, value in summary.items():
        label = key.replace("_", " ")
        per_seat = _per_seat(value, colours)
        if per_seat_only and not per_seat:
            continue
        if per_seat:
            text = ", ".join(f"{c} {_value_text(v, nested=True)}"
                             for c, v in zip(colours, value, strict=True))
        else:
            text = _value_text(value)
        lines.append(f"{label}: {text}")
    return lines


def player_lines(players: Sequence[Player], colours: Sequence[str], *, to_move: int | None,
                 clocks: Sequence[int] | None, me: int | None, color: bool) -> list[str]:
    """One line per seat: an arrow for the side to move, colour, name, clock."""
    width = max(len(name) for name, _ in players) + len(" (you)")
    lines = []
    for seat, ((user, kind), colour) in enumerate(zip(players, colours, strict=True)):
        arrow = "->" if seat == to_move else "  "
        name = user + (" (you)" if seat == me else "")
        if kind == "bot":
            name += " [bot]"
        clock = f"  {short_clock_reading(clocks[seat]):>8}" if clocks is not None else ""
        badge = paint(colour, style_of(colour, seat), color) + " " * max(0, 6 - len(colour))
        lines.append(f"{arrow} {badge} {name:<{width + 6}}{clock}".rstrip())
    return lines


def move_groups(state: engine.State, summary: Mapping[str, Any] | None = None
                ) -> list[tuple[str, list[str], bool]]:
    """The legal moves by size (one cell, two...), each group with its name (the summary's
    name for a group it lists, such as Hadron's legal squares or Hexifact's jumps) and
    whether the summary lists it already; pass last, alone."""
    moves = [str(m) for m in state.legal_moves()]
    by_size: dict[int, list[str]] = {}
    for move in moves:
        if move != notation.PASS:
            by_size.setdefault(len(notation.CELL.findall(move.lower())), []).append(move)
    listed = {frozenset(v): k.replace("_", " ") for k, v in (summary or {}).items()
              if isinstance(v, list) and v and all(isinstance(x, str) for x in v)}
    groups: list[tuple[str, list[str], bool]] = []
    for size, group in sorted(by_size.items()):
        name = listed.get(frozenset(group))
        if name is not None:
            groups.append((name, group, True))
            continue
        noun = "one-cell move" if size == 1 else f"{size}-cell move"
        groups.append((noun + ("s" if len(group) != 1 else ""), group, False))
    if notation.PASS in moves:
        groups.append(("pass", [notation.PASS], False))
    return groups


def legal_lines(state: engine.State, summary: Mapping[str, Any]) -> list[str]:
    """The legal moves in short, from the engine: how many of each size (one cell, two...),
    the one-cell moves listed (the legal placements), and pass. Groups the summary lists
    already (Hadron's legal squares, Hexifact's jumps) are named by it instead; nothing
    when the summary already lists them all; ``legal: pass (the only move)`` when passing
    is all that is left."""
    groups = move_groups(state, summary)
    if [name for name, _, _ in groups] == ["pass"]:
        return ["legal: pass (the only move)"]
    parts: list[str] = []
    for name, group, is_listed in groups:
        if name == "pass":
            parts.append("pass")
        elif is_listed:
            parts.append(f"{len(group):,} {name}")
        else:
            text = f"{len(group):,} {name}"
            if name.startswith("one-cell") or len(group) <= MAX_LISTED_CELLS:
                text += f" ({_value_text(group)})"
            parts.append(text)
    covered = all(is_listed for name, _, is_listed in groups if name != "pass")
    return [] if covered else [f"legal: {', '.join(parts)}"]


def moves_lines(state: engine.State, width: int = 100, per_group: int = 120) -> list[str]:
    """Every legal move (the ``moves`` command), grouped by size and counted, each group
    wrapped between moves, never inside one; beyond ``per_group`` moves a group says how
    many more there are."""
    groups = move_groups(state)
    total = sum(len(group) for _, group, _ in groups)
    colour = state.game.players[state.to_move]
    lines = [f"{total:,} legal move{'s' if total != 1 else ''} for {colour}:"]
    for name, group, _ in groups:
        if name == "pass":
            lines.append("  pass" + (" (the only move)" if total == 1 else ""))
            continue
        lines.append(f"  {len(group):,} {name}:")
        shown = " ".join(group[:per_group])
        lines += textwrap.wrap(shown, width, initial_indent="    ", subsequent_indent="    ",
                               break_long_words=False, break_on_hyphens=False)
        if len(group) > per_group:
            lines.append(f"    ... and {len(group) - per_group:,} more")
    return lines


def ending_text(state: engine.State) -> str:
    """Why the rules ended a game, in the engine's words (``State.ending``): ``Blue has no
    legal placement``, ``both passed: Black 14 groups, White 11; fewer groups wins``."""
    ending = state.ending
    return ending.text if ending is not None else ""


def pass_consequence(state: engine.State, me: int) -> str | None:
    """What passing now would do for ``me`` if it ends the game (the engine's ending of the
    state after the pass): ``Your opponent passed: passing now ends the game, and you lose
    (both passed: ...).``; None if a pass would not end it (or is not legal)."""
    ending = state.ending_if(notation.PASS)
    if ending is None:
        return None
    lead = "Your opponent passed: passing" if state.last_move == notation.PASS else "Passing"
    outcome = "win" if ending.winner == me else "lose"
    return f"{lead} now ends the game, and you {outcome} ({ending.text})."


def only_pass(state: engine.State) -> bool:
    """Is passing the only legal move here (the engine's list, without listing them all)?"""
    legal = state.legal_moves_upto(1)
    return legal is not None and [str(m) for m in legal] == [notation.PASS]


def result_text(game: str, players: Sequence[Player], result: p.Result | None,
                final: engine.State | None = None) -> str:
    """How the game ended, in words: ``Red (alice) wins: Blue resigned.``; a game the rules
    ended says why and by how much: the result's ``ending`` (the server's), else the
    engine's ending of the ``final`` state."""
    if result is None:
        return "The game is still going on."
    if result.winner is None:
        return "The game was aborted."
    colours = engine.get_game(game).players
    winner, loser = result.winner, 1 - result.winner
    who = f"{colours[winner]} ({players[winner][0]}) wins"
    rules = "by the rules"
    if result.ending is not None:
        rules = result.ending.text
    elif final is not None and final.ending is not None:
        rules = final.ending.text
    why = {
        "normal": rules,
        "resign": f"{colours[loser]} resigned",
        "timeout": f"{colours[loser]} ran out of time",
        "abandon": f"{colours[loser]} left the game",
    }.get(result.reason, result.reason)
    return f"{who}: {why}."


def position_panel(state: engine.State, *, title: str, players: Sequence[Player],
                   clocks: Sequence[int] | None = None, me: int | None = None,
                   last: str | None = None, color: bool = False,
                   hints: bool = True) -> str:
    """Title, board with the last move marked, both players with clocks, and hints."""
    colours = state.game.players
    lines = [paint(title, BOLD, color)]
    lines.append(board_text(state, mark=move_cells(state, state.last_move), color=color))
    to_move = None if state.is_over else state.to_move
    lines += player_lines(players, colours, to_move=to_move, clocks=clocks, me=me, color=color)
    if last:
        lines.append(last)
    if hints and not state.is_over:
        summary = state.summary()
        lines += summary_lines(summary, colours)
        lines += legal_lines(state, summary)
    return "\n".join(lines)


def last_move_text(state: engine.State) -> str | None:
    """``last move: 3. a3 (Blue)`` for the state's last move, numbered from 1."""
    if state.last_move is None or state.ply == 0:
        return None
    colour = state.game.players[(state.ply - 1) % 2]
    return f"last move: {state.ply}. {state.last_move} ({colour})"


# -- ratings -------------------------------------------------------------------------------------
def rating_label(rating: p.PoolRating | None) -> str:
    """A rating as shown beside a name: ``1612``, or ``1431?`` while provisional."""
    if rating is None:
        return ""
    return f"{rating.rating}{'?' if rating.provisional else ''}"


def user_label(user: p.User, game: str | None = None) -> str:
    """A name with what marks it: ``alice (1612)``, ``mcts [bot] (1500?)``. The rating is
    the user's in ``game``'s pool (their ``rating``, else from their ``ratings``)."""
    text = user.name + (" [bot]" if user.kind == "bot" else "")
    rating = user.rating
    if rating is None and game is not None:
        rating = next((r for r in user.ratings or () if r.game == game), None)
    label = rating_label(rating)
    return f"{text} ({label})" if label else text


def ratings_text(ratings: Sequence[p.PoolRating] | None) -> str:
    """Every pool's rating in short: ``hadron 1431?, xodd 1612``."""
    return ", ".join(f"{r.game} {rating_label(r)}" for r in ratings or ()) or "unrated"


def seek_terms(seek: p.OpenSeek) -> str:
    """What a seek adds to its offer: `` rated 1400-1800``, or nothing for a casual one."""
    if not seek.rated:
        return ""
    if seek.rating_min is None and seek.rating_max is None:
        return " rated"
    return f" rated {seek.rating_min or ''}-{seek.rating_max or ''}"


_GLICKO2_SCALE = 173.7178  # 400 / ln(10): a deviation on the Glicko-2 scale


def games_to_establish(deviation: float, opponents_deviation: float) -> int:
    """About how many more rated games bring a provisional ``deviation`` to the established
    bound (:data:`protocol.limits.PROVISIONAL_DEVIATION`), against opponents of about the
    same rating with ``opponents_deviation``: each such game adds g(opponent)^2 / 4 to
    1/phi^2 (Glicko-2's step 3 and 7, docs/RATINGS.md). An estimate: results, rating gaps
    and days without games change it."""
    if deviation <= PROVISIONAL_DEVIATION:
        return 0
    phi, target = deviation / _GLICKO2_SCALE, PROVISIONAL_DEVIATION / _GLICKO2_SCALE
    g = 1 / math.sqrt(1 + 3 * (opponents_deviation / _GLICKO2_SCALE) ** 2 / math.pi ** 2)
    return max(1, math.ceil((1 / target ** 2 - 1 / phi ** 2) / (g * g / 4)))


def provisional_text(game: str, update: p.RatingUpdate, opponents: p.RatingUpdate) -> str:
    """Why a rating is not on the leaderboard yet, after a rated game: ``Your hadron rating
    (1662?) is provisional until its deviation, 290 now, is 110 or less: about 12 more rated
    games against opponents like this one. The leaderboard lists established ratings only.``
    Empty for an established rating."""
    if update.deviation_after <= PROVISIONAL_DEVIATION:
        return ""
    more = games_to_establish(update.deviation_after, opponents.deviation_before)
    return (f"Your {game} rating ({round(update.rating_after)}?) is provisional until its "
            f"deviation, {round(update.deviation_after)} now, is "
            f"{PROVISIONAL_DEVIATION:g} or less: about {more} more rated "
            f"game{'s' if more != 1 else ''} against opponents like this one. The "
            "leaderboard lists established ratings only.")


def change_text(update: p.RatingUpdate) -> str:
    """A rating change: ``1500? -> 1662 (+162)``."""
    before, after = round(update.rating_before), round(update.rating_after)
    sign = "+" if after >= before else ""
    return f"{before} -> {after} ({sign}{after - before})"


CHART_LEVELS = " \u2581\u2582\u2583\u2584\u2585\u2586\u2587\u2588"


def rating_chart(points: Sequence[int], *, height: int = 6, width: int = 60) -> list[str]:
    """A small chart of a rating history, oldest left: ``height`` rows of block characters
    (eighths of a row), the highest and lowest rating written on the right. The last
    ``width`` points are drawn, one column each."""
    points = list(points)[-width:]
    if not points:
        return []
    low, high = min(points), max(points)
    span = max(high - low, 1)
    levels = [round((value - low) / span * (height * 8 - 1)) + 1 for value in points]
    rows = []
    for row in range(height - 1, -1, -1):
        line = ""
        for level in levels:
            filled = level - row * 8
            line += CHART_LEVELS[max(0, min(8, filled))]
        label = f" {high}" if row == height - 1 else f" {low}" if row == 0 else ""
        rows.append(line + label)
    return rows


def standings_lines(standings: Sequence[p.Standing]) -> list[str]:
    """A leaderboard: rank, name (bots marked), rating, games and results."""
    lines = []
    for standing in standings:
        user, rating = standing.user, standing.user.rating
        record = ""
        if rating is not None and rating.games is not None:
            record = (f"  {rating.games} games  +{rating.wins or 0} -{rating.losses or 0}"
                      f" ={rating.draws or 0}")
        name = user.name + (" [bot]" if user.kind == "bot" else "")
        lines.append(f"  {standing.rank:>3}. {name:<26} {rating_label(rating) or '-':>6}"
                     f"{record}")
    return lines


def profile_lines(info: p.ProfileInfo) -> list[str]:
    """A profile: ratings by pool with results, a chart of each pool's history, the latest
    games."""
    user = info.user
    lines = [f"{user.name}{' [bot]' if user.kind == 'bot' else ''}"]
    for rating in user.ratings or ():
        lines.append(f"  {rating.game:<10} {rating_label(rating):>6}  deviation "
                     f"{rating.deviation}  {rating.games or 0} games: {rating.wins or 0} won, "
                     f"{rating.losses or 0} lost, {rating.draws or 0} drawn")
        points = [point.rating for point in info.history if point.game == rating.game]
        if len(points) > 1:
            lines += [f"    {row}" for row in rating_chart(points)]
    if not user.ratings:
        lines.append("  no rated games yet")
    if info.recent:
        lines.append("  latest games:")
        for game in info.recent:
            result = (f"{('1-0', '0-1')[game.result.winner]} {game.result.reason}"
                      if game.result is not None and game.result.winner is not None
                      else "aborted" if game.result is not None else "playing")
            rated = " rated" if game.rated else ""
            lines.append(f"    {game.game_id:<12} {game.game:<9} {game.players[0].name} vs "
                         f"{game.players[1].name}  {result}{rated}")
    return lines
