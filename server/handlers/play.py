"""Playing: move, resign, abort, claim_win and chat, for the players of a game.

A game not run by this process is played where it runs (``Placement.forward``: the
answer of the process that runs it, and the events it caused, as if served here)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import protocol as p

from ..rooms import GameRoom, Player, refuse

if TYPE_CHECKING:
    from ..session import Session


async def on_move(s: Session, m: p.Move) -> None:
    room = s.app.games.live(m.game_id)
    if room is None:
        reply = await s.app.placement.forward(s, m.game_id, "move", ply=m.ply, move=m.move)
        if reply is not None:
            s.send_trusted(p.MoveAck, id=m.id, game_id=m.game_id, ply=m.ply, seq=reply["seq"])
            return
    seq = await (room or await _game(s, m.game_id)).play(s.uid(), m)
    # the reply to every move: framed by the protocol session straight from its fields
    s.send_trusted(p.MoveAck, id=m.id, game_id=m.game_id, ply=m.ply, seq=seq)


async def on_resign(s: Session, m: p.Resign) -> p.ServerMessage:
    if not await _remotely(s, m.game_id, "resign"):
        await (await _game(s, m.game_id)).resign(s.uid())
    return p.Ok(id=m.id)


async def on_abort(s: Session, m: p.Abort) -> p.ServerMessage:
    if not await _remotely(s, m.game_id, "abort"):
        await (await _game(s, m.game_id)).abort(s.uid())
    return p.Ok(id=m.id)


async def on_claim_win(s: Session, m: p.ClaimWin) -> p.ServerMessage:
    if not await _remotely(s, m.game_id, "claim_win"):
        await (await _game(s, m.game_id)).claim_win(s.uid())
    return p.Ok(id=m.id)


async def on_chat(s: Session, m: p.Chat) -> p.ServerMessage:
    wait = await s.app.account_chat.take(s.uid())
    if wait:
        raise p.ProtocolError("chat: slow down", code=p.ErrorCode.RATE_LIMITED,
                              retry_after_ms=int(wait * 1000) + 1, game_id=m.game_id)
    if await _remotely(s, m.game_id, "chat", text=m.text):
        return p.Ok(id=m.id)
    room = s.app.games.live(m.game_id)
    if room is None:
        raise refuse(p.ErrorCode.NOT_FOUND, f"no game {m.game_id} in progress", m.game_id)
    user = s.user
    assert user is not None
    await room.chat(Player(user.id, user.name, user.kind), m.text)
    return p.Ok(id=m.id)


async def _remotely(s: Session, game_id: str, op: str, **fields: object) -> bool:
    """Play ``op`` where the game runs if not here; False if it is to be played (or
    answered, being over) here."""
    if s.app.games.live(game_id) is not None:
        return False
    return await s.app.placement.forward(s, game_id, op, **fields) is not None


async def _game(s: Session, game_id: str) -> GameRoom:
    """A game in progress or finished: a late request about a finished game gets its
    ``game_over`` answer (or a resent move its ack) rather than ``not_found``."""
    games = s.app.games
    room = games.live(game_id) or await games.any(game_id)
    if room is None:
        raise refuse(p.ErrorCode.NOT_FOUND, f"no game {game_id}", game_id)
    return room
