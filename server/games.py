"""The server's games: started, restored after a restart, finished, and found again.

:class:`Games` owns every :class:`~server.rooms.GameRoom` of the process: the live ones (by
id, and by player for ``authed.active_games``) and a bounded cache of finished ones, so a
resent move or a late request about a game that just ended still gets its answer. A game is
created through the commit queue (in the same transaction as other games' moves) under a
fresh random id; a game in progress is restored from its stored moves, as a restart needs.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Coroutine, Iterator
from typing import TYPE_CHECKING, Any

import engine
import protocol as p

from .clock import GameClock
from .lifecycle import GameStatus
from .rooms import GameRoom, Player, RoomContext, ms_to_datetime, now_ms
from .storage import Conflict, GameCreated, GameRatings, StoredGame, new_game_id
from .wire import epoch_ms, played_moves, result

if TYPE_CHECKING:
    from .config import Settings
    from .metrics import Metrics
    from .seam import Placement, Seated
    from .storage import CommitQueue, Store

log = logging.getLogger(__name__)

FINISHED_KEPT = 2000  # finished rooms kept in memory to answer resends and late requests
ID_ATTEMPTS = 3  # a random game id already taken is drawn again, at most this often


class Games:
    """Every game room of this server (see the module docstring)."""

    def __init__(self, settings: Settings, store: Store, writer: CommitQueue,
                 metrics: Metrics, spawn: Callable[[Coroutine[Any, Any, Any]], object],
                 placement: Placement,
                 on_rated: Callable[[GameRoom, GameRatings], None] | None = None) -> None:
        self._store = store
        self._writer = writer
        self._metrics = metrics
        self._context = RoomContext(writer=writer, metrics=metrics,
                                    grace_ms=settings.grace_ms,
                                    event_log_limit=settings.event_log_limit,
                                    on_finished=self._finished, spawn=spawn,
                                    rating_period_s=settings.rating_period_s,
                                    on_rated=on_rated)
        self._live: dict[str, GameRoom] = {}
        self._by_user: dict[int, set[GameRoom]] = {}
        self._done: OrderedDict[str, GameRoom] = OrderedDict()
        self._placement = placement
        self._make_room = placement.room_class()

    # -- finding games ----------------------------------------------------------------------
    def live(self, game_id: str) -> GameRoom | None:
        """The room of a game in progress, if it is one."""
        return self._live.get(game_id)

    def __iter__(self) -> Iterator[GameRoom]:
        """The games in progress."""
        return iter(list(self._live.values()))

    def __len__(self) -> int:
        return len(self._live)

    def playing(self, user_id: int) -> int:
        """How many games a user has in progress."""
        return len(self._by_user.get(user_id, ()))

    def active_of(self, user_id: int) -> list[GameRoom]:
        """A user's games in progress, oldest first."""
        return sorted(self._by_user.get(user_id, ()), key=lambda room: room.created_ms)

    async def any(self, game_id: str) -> GameRoom | None:
        """The room of a game in progress, or of a finished one (kept in memory, or loaded
        from storage after a restart or once forgotten), so that late requests get
        ``game_over`` and resent moves their ack; None if there is no such game."""
        room = self._live.get(game_id) or self._done.get(game_id)
        if room is not None:
            return room
        stored = await self._store.get_game(game_id)
        if stored is None or stored.info.status == "playing":
            return None
        room = self._done.get(game_id)  # loaded by another request meanwhile
        if room is None:
            room = self._room_of(stored, live=False)
            self._keep_finished(room)
        return room

    # -- the life of a game ---------------------------------------------------------------------
    async def start(self, game_key: str, options: dict[str, Any], control: p.TimeControl,
                    players: tuple[Player, Player], seated: list[list[Seated]], *,
                    rated: bool = False) -> GameRoom:
        """Create, store and announce a game; ``seated[i]``: the connections of player i."""
        game = engine.get_game(game_key)
        state = game.new(**options)
        created = now_ms()
        when = ms_to_datetime(created)
        for attempt in range(ID_ATTEMPTS):
            game_id = new_game_id()
            epoch = await self._placement.claim_new(game_id)
            item = GameCreated(game_id, game.key, dict(state.options),
                               control.to_wire(), game.rules_version,
                               (players[0].user_id, players[1].user_id), 1, when, when,
                               epoch, rated=rated)
            try:  # through the commit queue: with other games' moves, in one transaction
                await self._writer.submit(item)
                break
            except Conflict:
                if attempt == ID_ATTEMPTS - 1:
                    raise  # not a taken random id, then
        room = self._make_room(self._context, game_id=item.game_id, state=state,
                              control=control, players=players, played=[], seq=1,
                              clock=GameClock(control), created_ms=created, rated=rated)
        room.epoch = epoch
        self._add(room)
        for connections in seated:
            for connection in connections:
                await connection.joined_game(room)
        room.announce_start()
        log.info("game started", extra={"game_id": room.game_id, "game": game.key,
                                        "players": [player.name for player in players]})
        return room

    async def restore(self) -> int:
        """Load every game in progress from its stored moves (after a restart or crash)."""
        now = now_ms()
        count = 0
        for stored in await self._store.load_active_games():
            try:
                room = self._add(self._room_of(stored, live=True))
            except Exception:
                log.exception("cannot restore game", extra={"game_id": stored.info.id})
                continue
            count += 1
            await room.resume_after_restart(now)
        log.info("restored games in progress", extra={"games": count})
        return count

    async def adopt(self, stored: StoredGame, epoch: int) -> GameRoom:
        """Run a game in progress taken over (at ``epoch``) from another process:
        its room rebuilt from the stored moves and its clock started, as after a restart."""
        room = self._room_of(stored, live=True)
        room.epoch = epoch
        self._add(room)
        await room.resume_after_restart(now_ms())
        return room

    def forget(self, game_id: str) -> GameRoom | None:
        """Stop running a live game another process runs now (its timer stopped; not kept
        as finished: requests about it go to the process that runs it)."""
        room = self._live.pop(game_id, None)
        if room is None:
            return None
        room.close()
        self._drop_players(room)
        self._metrics.games.set(len(self._live))
        return room

    def close(self) -> None:
        """Stop every live game's timer (the server is stopping; the games stay stored)."""
        for room in self._live.values():
            room.close()

    # -- inside ---------------------------------------------------------------------------------
    def _room_of(self, stored: StoredGame, *, live: bool) -> GameRoom:
        """A room rebuilt from a stored game: its moves replayed through the engine, each
        player's clock as their last move left it."""
        info = stored.info
        state = engine.replay(info.game_key, info.options, [m.move for m in stored.moves])
        control = p.time_control_from_map(info.clock)
        initial = control.initial_ms()
        remaining: list[int | None] = []
        for seat in (0, 1):
            left = stored.remaining_ms(seat)
            remaining.append(left if left is not None else initial)
        players = (Player(info.player_ids[0], info.players[0], info.player_kinds[0]),
                   Player(info.player_ids[1], info.players[1], info.player_kinds[1]))
        room = (self._make_room if live else GameRoom)(
            self._context, game_id=info.id, state=state, control=control, players=players,
            played=played_moves(stored.moves), seq=stored.last_seq,
            clock=GameClock(control, remaining), created_ms=epoch_ms(info.created_at),
            status=GameStatus.of(info.status, state.ply),
            result=None if live else result(info.winner, info.reason, state),
            rated=info.rated, rating_changes=stored.ratings)
        room.move_seqs.update((m.ply, m.seq) for m in stored.moves)
        return room

    def _add(self, room: GameRoom) -> GameRoom:
        self._live[room.game_id] = room
        for player in room.players:
            self._by_user.setdefault(player.user_id, set()).add(room)
        self._metrics.games.set(len(self._live))
        return room

    def _finished(self, room: GameRoom) -> None:
        self._live.pop(room.game_id, None)
        self._drop_players(room)
        self._keep_finished(room)
        self._metrics.games.set(len(self._live))
        self._placement.finished(room)

    def _drop_players(self, room: GameRoom) -> None:
        for player in room.players:
            games = self._by_user.get(player.user_id)
            if games is not None:
                games.discard(room)
                if not games:
                    del self._by_user[player.user_id]

    def _keep_finished(self, room: GameRoom) -> None:
        self._done[room.game_id] = room
        while len(self._done) > FINISHED_KEPT:
            self._done.popitem(last=False)

