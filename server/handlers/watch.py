"""Watching and resuming games: watch, unwatch, resume.

A game run by another process is followed through this process's relay of it
(``Placement.follow``), which answers the request itself."""

from __future__ import annotations

from typing import TYPE_CHECKING

import protocol as p

if TYPE_CHECKING:
    from ..session import Session


async def on_watch(s: Session, m: p.Watch) -> p.ServerMessage | None:
    room = s.app.games.live(m.game_id)
    if room is None and await s.app.placement.follow(s, m.game_id, m.id, None,
                                                     as_player=False):
        return None
    room = room or s.app.games.live(m.game_id)
    if room is not None:
        async with room.lock:
            s.check_can_watch(room)
            room.subscribe(s)
            s.rooms[room.game_id] = room
            packed, clocks = room.packed_state()  # packed once per event for everyone
            s.send_prepared(packed, m.id, **clocks)
            return None
    return p.GameState(id=m.id, game=await s.app.history.stored_snapshot(m.game_id))


async def on_unwatch(s: Session, m: p.Unwatch) -> p.ServerMessage:
    room = s.rooms.get(m.game_id)
    if room is not None and (s.user is None or room.seat_of(s.user.id) is None):
        room.unsubscribe(s)
        del s.rooms[m.game_id]
    return p.Ok(id=m.id)


async def on_resume(s: Session, m: p.Resume) -> p.ServerMessage | None:
    room = s.app.games.live(m.game_id)
    if room is None and await s.app.placement.follow(s, m.game_id, m.id, m.since_seq,
                                                     as_player=True):
        return None
    room = room or s.app.games.live(m.game_id)
    if room is None:
        # finished (or unknown): the stored record is the whole truth
        return p.GameState(id=m.id, game=await s.app.history.stored_snapshot(m.game_id))
    async with room.lock:
        attach = m.game_id not in s.rooms
        if attach:
            s.check_can_watch(room)
        frames = room.events_since(m.since_seq) if m.since_seq else None
        if frames is None:  # the whole game, opponent_back included
            if attach:
                await s.attach(room, tell_self=False)
            packed, clocks = room.packed_state()
            s.send_prepared(packed, m.id, **clocks)
            return None
        for frame in frames:  # the missed events, then opponent_back, then ok
            s.send_frame(frame)
        if attach:
            await s.attach(room)
        return p.Ok(id=m.id)
