"""Requests for clients that know no rules: a board's geometry, a game's position at any ply
(with its legal moves when they are few), and a check of a candidate move.

Everything here is the engine's answer: the geometry is ``Board.describe()``, a position is
the fold of the stored moves, the legal moves come from ``State.legal_moves_upto`` and a
check is ``State.parse_move``, whose ``IllegalMove`` message is the reason. Nothing is
played or stored. Positions are derived from a game's move list: the live room's, a
finished room's, or else the stored record's (any node can answer for any stored game).
"""

from __future__ import annotations

from collections import OrderedDict
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

import engine
import protocol as p
from protocol.limits import MAX_LISTED_MOVES

from ..rooms import refuse

if TYPE_CHECKING:
    from ..host import Host
    from ..session import Session

RECENT_POSITIONS = 256  # games whose last asked-for position is kept, to step on from it
CELL_CHARS = ".01"  # engine cell value (0 empty, 1 seat 0, 2 seat 1) -> wire character


@lru_cache(maxsize=128)
def _geometry(game: str, options: tuple[tuple[str, int | str], ...]) -> dict[str, Any]:
    return engine.get_game(game).board(dict(options)).describe()


async def on_get_board(s: Session, m: p.GetBoard) -> p.Board:
    options = dict(m.options)  # complete: the message filled in the defaults
    geometry = _geometry(m.game, tuple(sorted(options.items())))
    return p.Board(id=m.id, game=m.game, options=options, geometry=geometry)


async def on_get_position(s: Session, m: p.GetPosition) -> p.Position:
    state = await _state_at(s.app, m.game_id, m.ply)
    last = state.moves[-1] if state.moves else None
    listed = state.legal_moves_upto(MAX_LISTED_MOVES)
    return p.Position(
        id=m.id, game_id=m.game_id, ply=state.ply, to_move=state.to_move,  # type: ignore[arg-type]
        cells="".join(CELL_CHARS[v] for v in state.cells),
        last_move_cells=tuple(state.cells_of(last)) if last is not None else (),
        summary=state.summary(),
        legal_moves=None if listed is None else tuple(str(move) for move in listed),
        after_pass=_after_pass(state))


def _after_pass(state: engine.State) -> p.Result | None:
    """The result a pass would have here if it ends the game (the engine's: the state
    after the pass), for a client to confirm such a pass with its consequence."""
    passes = [form["text"] for form in state.game.move_forms if form["kind"] == "pass"]
    ending = state.ending_if(passes[0]) if passes else None
    return None if ending is None else p.Result.of(ending)


async def on_check_move(s: Session, m: p.CheckMove) -> p.MoveCheck:
    state = await _state_at(s.app, m.game_id, m.ply)
    try:
        move = state.parse_move(m.move)
    except engine.IllegalMove as exc:
        return p.MoveCheck(id=m.id, game_id=m.game_id, ply=m.ply, move=m.move, legal=False,
                           reason=p.error_reply("illegal_move", str(exc)).message)
    return p.MoveCheck(id=m.id, game_id=m.game_id, ply=m.ply, move=str(move), legal=True)


# -- positions from move lists ---------------------------------------------------------------
class _Recent:
    """The last position asked for per game, so that stepping through a game one ply at a
    time plays one move per request instead of replaying from the start."""

    def __init__(self) -> None:
        self.states: OrderedDict[str, engine.State] = OrderedDict()

    def get(self, game_id: str, ply: int) -> engine.State | None:
        state = self.states.get(game_id)
        return state if state is not None and state.ply <= ply else None

    def put(self, game_id: str, state: engine.State) -> None:
        self.states[game_id] = state
        self.states.move_to_end(game_id)
        while len(self.states) > RECENT_POSITIONS:
            self.states.popitem(last=False)


_RECENT: WeakKeyDictionary[Host, _Recent] = WeakKeyDictionary()


async def _state_at(app: Host, game_id: str, ply: int | None) -> engine.State:
    """The state of ``game_id`` after ``ply`` moves (all of them if None); not_found for an
    unknown game or a ply it has not reached."""
    key, options, moves = await _moves_of(app, game_id)
    if ply is None:
        ply = len(moves)
    if ply > len(moves):
        raise refuse(p.ErrorCode.NOT_FOUND, f"game {game_id} has no position at ply {ply}: "
                     f"it has {len(moves)} moves", game_id)
    recent = _RECENT.setdefault(app, _Recent())
    state = recent.get(game_id, ply)
    if state is None or state.moves != moves[:state.ply]:
        state = engine.get_game(key).new(**options)
    for move in moves[state.ply:ply]:
        state = state.play(move)
    recent.put(game_id, state)
    return state


async def _moves_of(app: Host, game_id: str
                    ) -> tuple[str, dict[str, int | str], tuple[str, ...]]:
    """A game's key, options and canonical moves: from its room if this server holds it
    (live, or finished and remembered), else from storage."""
    room = app.games.live(game_id) or await app.games.any(game_id)
    if room is not None:
        return room.key, dict(room.state.options), room.state.moves
    record = await app.history.record(game_id)  # not_found if there is no such game
    return record.game, dict(record.options), tuple(m.move for m in record.moves)
