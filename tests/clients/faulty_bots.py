"""Bots that misbehave on purpose, shared by the match-runner, SDK and botcheck tests.

Run as a program (``python -m tests.clients.faulty_bots URL TOKEN``), it is a bot that
ignores reconnects (:func:`play_until_disconnected`), for ``tessera botcheck --command``.
"""

from __future__ import annotations

import asyncio
import sys

import engine
import protocol as p
from clients.bots import Bot, TimeBudget
from clients.connection import Connection, Disconnected, ServerError


class IllegalBot(Bot):
    """Answers a cell that exists on no board."""

    name = "illegal"

    def choose_move(self, state: engine.State, budget: TimeBudget) -> str:
        return "z99"


class CrashingBot(Bot):
    """Raises from choose_move."""

    name = "crashing"

    def choose_move(self, state: engine.State, budget: TimeBudget) -> str:
        raise RuntimeError("boom")


async def play_until_disconnected(url: str, token: str) -> None:
    """A bot that ignores reconnects: it logs in with its token, accepts every challenge and
    plays the first legal move on its turn; when its connection drops (a server restart),
    it ends, and never comes back."""
    async with await Connection.open(url, client="no-reconnect-bot") as conn:
        authed = await conn.call(p.AuthToken, token=token)
        assert isinstance(authed, p.Authed)
        games: dict[str, tuple[engine.State, int]] = {}
        while True:
            try:
                event = await conn.next_event()
                if isinstance(event, p.ChallengeReceived):
                    await conn.call(p.AcceptChallenge, challenge_id=event.challenge_id)
                elif isinstance(event, p.GameStarted):
                    snap = event.snapshot
                    seat = [u.name for u in snap.players].index(authed.user.name)
                    games[event.game_id] = engine.new_game(snap.game, **snap.options), seat
                elif isinstance(event, p.Moved) and event.game_id in games:
                    state, seat = games[event.game_id]
                    games[event.game_id] = state.play(event.move), seat
                elif isinstance(event, p.GameOver):
                    games.pop(event.game_id, None)
                for game_id, (state, seat) in games.items():
                    if state.to_move == seat and not state.is_over:
                        await _move(conn, game_id, state)
            except ServerError:  # a challenge withdrawn before it was accepted, ...
                continue
            except Disconnected:
                return


async def _move(conn: Connection, game_id: str, state: engine.State) -> None:
    """Play the first legal move, waiting as the server says when it is rate_limited."""
    while True:
        try:
            await conn.call(p.Move, game_id=game_id, ply=state.ply,
                            move=str(state.legal_moves()[0]))
            return
        except ServerError as e:
            if e.retry_after_ms is None:
                return
            await asyncio.sleep(e.retry_after_ms / 1000)


if __name__ == "__main__":  # python -m tests.clients.faulty_bots URL TOKEN
    asyncio.run(play_until_disconnected(sys.argv[1], sys.argv[2]))
