"""The server process dies (SIGKILL) or is stopped (SIGTERM) mid-game, and comes back.

Clients behave as the protocol asks: keep the last seq applied per game, log in again with
the session token, resume every active game, resend a move whose ack never came.
"""

from __future__ import annotations

import asyncio
import random
import signal
from collections.abc import Callable
from typing import Any

import engine
import protocol as p

from .support import TIMEOUT, Clients, Player, ServerProcess, start_game

GRACE = ("--grace", "0.4")


class View:
    """One client's view of a game, built only from what the server sent it."""

    def __init__(self, started: p.GameStarted) -> None:
        self.game_id = started.game_id
        self.seqs = p.GameSeqs()
        self.load(started.snapshot)
        self.seqs.observe(started)

    def load(self, snapshot: p.Snapshot) -> None:
        self.key, self.options = snapshot.game, dict(snapshot.options)
        self.state = engine.replay(snapshot.game, snapshot.options,
                                   [m.move for m in snapshot.moves])
        self.result = snapshot.result

    def take(self, event: Any) -> None:
        if isinstance(event, p.GameState):
            assert event.game.game_id == self.game_id
            self.seqs.snapshot(event)
            self.load(event.game)
            return
        if getattr(event, "game_id", None) != self.game_id:
            return
        verdict = self.seqs.observe(event)
        assert verdict != "gap", (self.seqs.last(self.game_id), event)
        if verdict == "old":
            return
        if isinstance(event, p.Moved):
            assert event.ply == self.state.ply, event
            self.state = self.state.play(event.move)
        elif isinstance(event, p.GameOver):
            self.result = p.Result(winner=event.winner, reason=event.reason,
                                   ending=event.ending)

    async def catch_up(self, player: Player, quiet: float = 0.1) -> None:
        for event in await player.drain(quiet):
            self.take(event)

    async def reach(self, player: Player, ply: int) -> None:
        """Apply events until the game is at ``ply`` or over."""
        while self.state.ply < ply and self.result is None:
            self.take(await player.conn.next_event(TIMEOUT))

    @property
    def last_seq(self) -> int:
        return self.seqs.last(self.game_id)


async def reconnect(clients: Clients, old: Player, view: View) -> Player:
    """Log in again with the session token and resume the game from the last seq seen."""
    player = await clients.with_token(old.token)
    assert player.name == old.name
    assert view.game_id in player.authed.active_games
    reply = await player.call(p.Resume, game_id=view.game_id, since_seq=view.last_seq)
    if isinstance(reply, p.GameState):
        view.take(reply)
    else:
        assert reply == p.Ok(id=reply.id)
    await view.catch_up(player)
    return player


async def play_to_the_end(players: list[Player], views: list[View], rng: random.Random,
                          acked: dict[int, str]) -> None:
    while views[0].result is None:
        state = views[0].state
        mover = state.to_move
        move = str(state.random_move(rng))
        ack = await players[mover].call(p.Move, game_id=views[0].game_id, ply=state.ply,
                                        move=move)
        acked[ack.ply] = move
        for player, view in zip(players, views, strict=True):
            await view.reach(player, ack.ply + 1)
        if views[0].state.is_over:  # game_over follows the last moved
            for player, view in zip(players, views, strict=True):
                view.take(await player.wait_for(p.GameOver, game_id=view.game_id))


async def finish_and_check(players: list[Player], views: list[View],
                           acked: dict[int, str]) -> None:
    await play_to_the_end(players, views, random.Random(9), acked)
    record = (await players[0].call(p.GetGame, game_id=views[0].game_id)).record
    moves = [m.move for m in record.moves]
    assert moves == list(views[0].state.moves) == list(views[1].state.moves)
    assert {ply: moves[ply] for ply in acked} == acked  # every ack kept, once, in place
    final = engine.replay(record.game, record.options, moves)
    assert final.ending is not None and record.result == p.Result.of(final.ending)
    assert views[0].result == views[1].result == record.result


async def start_playing(proc: ServerProcess, open_clients: Callable[[str], Clients]
                        ) -> tuple[list[Player], list[View], dict[int, str]]:
    clients = open_clients(proc.url)
    a, b = await clients.guest(), await clients.guest()
    game = await start_game(a, b, "xodd", {"size": 5})
    views = [View(game.started), View(game.started)]
    acked: dict[int, str] = {}
    rng = random.Random(4)
    for _ in range(4):
        for _ in range(100):
            move = str(game.state.random_move(rng))
            if not game.state.play(move).is_over:
                break
        acked[game.ply] = move
        await game.play(move)
    for player, view in zip(game.players, views, strict=True):
        await view.reach(player, 4)
    assert views[0].state.ply == views[1].state.ply == 4
    return list(game.players), views, acked


async def test_sigkill_mid_game_loses_no_acknowledged_move(
        server_process: Callable[..., ServerProcess],
        open_clients: Callable[[str], Clients]) -> None:
    proc = server_process(*GRACE)
    await proc.start()
    players, views, acked = await start_playing(proc, open_clients)

    # a move in flight when the server dies: stored or not, its ack never comes
    state = views[0].state
    mover = state.to_move
    in_flight = str(next(m for m in state.legal_moves() if not state.play(m).is_over))
    request = p.Move(id=players[mover].conn.pending.next_id(), game_id=views[0].game_id,
                     ply=state.ply, move=in_flight)
    reply = await players[mover].conn.send(request)
    assert await proc.stopped(signal.SIGKILL) == -signal.SIGKILL
    for player in players:
        await asyncio.wait_for(player.conn.closed.wait(), 10)
    await asyncio.gather(reply, return_exceptions=True)

    await proc.start()  # the same database, a new port
    clients = open_clients(proc.url)
    players = [await reconnect(clients, old, view)
               for old, view in zip(players, views, strict=True)]
    again = await players[mover].call(p.Move, game_id=views[0].game_id, ply=request.ply,
                                      move=in_flight)  # resent: played once either way
    assert again.ply == request.ply
    acked[again.ply] = in_flight
    for player, view in zip(players, views, strict=True):
        await view.reach(player, request.ply + 1)
    assert views[0].state.ply == views[1].state.ply == request.ply + 1
    await finish_and_check(players, views, acked)


async def test_sigterm_closes_with_going_away_and_the_game_resumes(
        server_process: Callable[..., ServerProcess],
        open_clients: Callable[[str], Clients]) -> None:
    proc = server_process(*GRACE)
    await proc.start()
    players, views, acked = await start_playing(proc, open_clients)
    assert await proc.stopped(signal.SIGTERM) == 0
    for player, view in zip(players, views, strict=True):
        await asyncio.wait_for(player.conn.closed.wait(), 10)
        assert player.conn.ws.close_code == p.CLOSE_GOING_AWAY
        await view.catch_up(player, 0)  # an opponent_left may have come first

    await proc.start()
    clients = open_clients(proc.url)
    players = [await reconnect(clients, old, view)
               for old, view in zip(players, views, strict=True)]
    assert views[0].state.moves == views[1].state.moves
    assert list(views[0].state.moves) == [acked[ply] for ply in sorted(acked)]
    await finish_and_check(players, views, acked)


async def test_a_resume_after_a_restart_answers_with_the_game_and_the_servers_clocks(
        server_process: Callable[..., ServerProcess],
        open_clients: Callable[[str], Clients]) -> None:
    """Up to date before the crash, a player resumes from the game's last seq: the answer is
    a snapshot (the clocks were restarted when the game was restored), not an empty ok."""
    proc = server_process(*GRACE)
    await proc.start()
    players, views, _ = await start_playing(proc, open_clients)
    assert await proc.stopped(signal.SIGKILL) == -signal.SIGKILL
    await proc.start()
    player = await open_clients(proc.url).with_token(players[0].token)
    reply = await player.call(p.Resume, game_id=views[0].game_id, since_seq=views[0].last_seq)
    assert isinstance(reply, p.GameState), reply
    assert reply.game.seq == views[0].last_seq and reply.game.ply == views[0].state.ply
    assert reply.game.clocks_ms is not None  # the server's figures, for the client to show
    spectator = await open_clients(proc.url).guest()
    watched = await spectator.call(p.Watch, game_id=views[0].game_id)
    assert max(abs(a - b) for a, b in zip(watched.game.clocks_ms, reply.game.clocks_ms,
                                          strict=True)) < 2000
