"""The lobby: subscribing, seeks (paired automatically or accepted), direct challenges.

The requests are answered by :class:`server.lobby.Lobby`, written once on the seam
(:mod:`server.seam`). Events go before replies: whoever starts a game by a request gets
``game_started`` (and ``seek_taken`` for a seek of theirs) before the request's reply.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import protocol as p

if TYPE_CHECKING:
    from ..session import Session


async def on_lobby_subscribe(s: Session, m: p.LobbySubscribe) -> None:
    s.send_prepared(await s.app.lobby.subscribe(s), m.id)


async def on_lobby_page(s: Session, m: p.LobbyPage) -> None:
    s.send_prepared(await s.app.lobby.page(m.cursor, m.id), m.id)


async def on_lobby_unsubscribe(s: Session, m: p.LobbyUnsubscribe) -> p.ServerMessage:
    s.app.members.subscribers.discard(s)
    return p.Ok(id=m.id)


async def on_seek(s: Session, m: p.Seek) -> p.ServerMessage:
    return await s.app.lobby.seek(s.me(), m, s.peer)


async def on_cancel_seek(s: Session, m: p.CancelSeek) -> p.ServerMessage:
    return await s.app.lobby.cancel_seek(s.me(), m)


async def on_accept_seek(s: Session, m: p.AcceptSeek) -> p.ServerMessage:
    return await s.app.lobby.accept_seek(s.me(), m)


async def on_challenge(s: Session, m: p.Challenge) -> p.ServerMessage:
    return await s.app.lobby.challenge(s.me(), m, s.peer)


async def on_accept_challenge(s: Session, m: p.AcceptChallenge) -> p.ServerMessage:
    return await s.app.lobby.accept_challenge(s.me(), m)


async def on_decline_challenge(s: Session, m: p.DeclineChallenge) -> p.ServerMessage:
    return await s.app.lobby.decline_challenge(s.me(), m)


async def on_cancel_challenge(s: Session, m: p.CancelChallenge) -> p.ServerMessage:
    return await s.app.lobby.cancel_challenge(s.me(), m)
