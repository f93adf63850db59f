"""Playing: move, resign, abort, claim_win and chat, for the players of a game.

A game not run by this process is played where it runs (``Placement.forward``: the
request is sent as it is, handled there by these same handlers, and their frames, the
events first, given to the client as if served here)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import protocol as p

from ..rooms import GameRoom, Player, refuse

if TYPE_CHECKING:
    from ..seam import GameRequest
    from ..session import Session


async def on_move(s: Session, m: p.Move) -> None:
    room = s.app.games.live(m.game_id)
    if room is None and await s.app.placement.forward(s, m):
        return
    seq = await (room or await _game(s, m.game_id)).play(s.uid(), m)
    # the reply to every move: framed by the protocol session straight from its fields
    s.send_trusted(p.MoveAck, id=m.id, game_id=m.game_id, ply=m.ply, seq=seq)


async def on_resign(s: Session, m: p.Resign) -> p.ServerMessage | None:
    if await _elsewhere(s, m):
        return None
    await (await _game(s, m.game_id)).resign(s.uid())
    return p.Ok(id=m.id)


async def on_abort(s: Session, m: p.Abort) -> p.ServerMessage | None:
    if await _elsewhere(s, m):
        return None
    await (await _game(s, m.game_id)).abort(s.uid())
    return p.Ok(id=m.id)


async def on_claim_win(s: Session, m: p.ClaimWin) -> p.ServerMessage | None:
    if await _elsewhere(s, m):
        return None
    await (await _game(s, m.game_id)).claim_win(s.uid())
    return p.Ok(id=m.id)


async def on_chat(s: Session, m: p.Chat) -> p.ServerMessage | None:
    if await _elsewhere(s, m):  # the chat budget is taken where the game runs
        return None
    wait = await s.app.account_chat.take(s.uid())
    if wait:
        raise p.ProtocolError("chat: slow down", code=p.ErrorCode.RATE_LIMITED,
                              retry_after_ms=int(wait * 1000) + 1, game_id=m.game_id)
    room = s.app.games.live(m.game_id)
    if room is None:
        raise refuse(p.ErrorCode.NOT_FOUND, f"no game {m.game_id} in progress", m.game_id)
    user = s.user
    assert user is not None
    await room.chat(Player(user.id, user.name, user.kind), m.text)
    return p.Ok(id=m.id)


async def _elsewhere(s: Session, m: GameRequest) -> bool:
    """Whether the request was sent to the process that runs its game, and answered (not:
    it is to be played, or answered, being over, here)."""
    return s.app.games.live(m.game_id) is None and await s.app.placement.forward(s, m)


async def _game(s: Session, game_id: str) -> GameRoom:
    """A game in progress or finished: a late request about a finished game gets its
    ``game_over`` answer (or a resent move its ack) rather than ``not_found``."""
    games = s.app.games
    room = games.live(game_id) or await games.any(game_id)
    if room is None:
        raise refuse(p.ErrorCode.NOT_FOUND, f"no game {game_id}", game_id)
    return room
