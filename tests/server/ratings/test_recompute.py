"""Every stored rating, recomputed from ``tessera dump --all`` and docs/RATINGS.md alone
(issue 23.17).

A real server (a subprocess, a SQLite file, a rating period of one second so that the
deviations grow between games) plays rated games of two pools between four bot accounts;
then its dump is replayed by the implementation below, written from the document's
"The computation, exactly" and importing nothing of the server, and every stored value
must come out exactly: each game's before and after for both players, and each player's
rating and record in every pool as the server reports it (``profile``).
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import engine
import protocol as p
from clients.connection import Connection
from clients.localserver import LocalServer

ROOT = Path(__file__).resolve().parents[3]
PERIOD_S = 1.0
NAMES = ("ann", "ben", "cyd", "dot")
POOLS = {"hadron": {"size": 5}, "xodd": {"size": 4}}
GAMES = 14
CLOCK = p.PerMove(per_move_ms=30_000)

# -- docs/RATINGS.md, "The computation, exactly" ------------------------------------------------
S = 173.7178
EPS = 0.000001
TAU = 0.5
NEW = (1500.0, 350.0, 0.06)


def start_of_game(stored: tuple[float, float, float], last_ms: int | None, ended_ms: int
                  ) -> tuple[float, float, float]:
    """Step 1: the rating a game ending at ``ended_ms`` starts from."""
    if last_ms is None:
        return stored
    r, rd, sigma = stored
    t = (ended_ms - last_ms) / 1000
    periods = t / PERIOD_S
    spread = S * sigma
    rd = min(math.sqrt(rd * rd + periods * spread * spread), 350.0)
    return round(r, 2), round(rd, 2), round(sigma, 8)


def after_game(me: tuple[float, float, float], opponent: tuple[float, float, float],
               s: float) -> tuple[float, float, float]:
    """Steps 2 to 5: a player's stored rating after the game."""
    r, rd, sigma = me
    rj, rdj, _ = opponent
    phij = rdj / S
    g = 1 / math.sqrt(1 + 3 * phij * phij / (math.pi * math.pi))
    e = 1 / (1 + math.exp(-g * (r - rj) / S))
    info = g * g * e * (1 - e)
    imp = g * (s - e)
    v = 1 / info
    delta = v * imp
    phi = rd / S
    sigma_new = new_volatility(phi, sigma, v, delta)
    rd_new = rd / math.sqrt(1 + phi * phi * info)
    phi_new = rd_new / S
    r_new = r + S * phi_new * phi_new * imp
    return round(r_new, 2), round(rd_new, 2), round(sigma_new, 8)


def new_volatility(phi: float, sigma: float, v: float, delta: float) -> float:
    """Step 3: the paper's step 5, by the Illinois algorithm."""
    a = math.log(sigma * sigma)
    delta2, phi2, tau2 = delta * delta, phi * phi, TAU * TAU

    def f(x: float) -> float:
        ex = math.exp(x)
        spread = phi2 + v + ex
        return ex * (delta2 - spread) / (2 * spread * spread) - (x - a) / tau2

    big_a = a
    if delta2 > phi2 + v:
        big_b = math.log(delta2 - phi2 - v)
    else:
        k = 1
        while f(a - k * TAU) < 0:
            k += 1
        big_b = a - k * TAU
    f_a, f_b = f(big_a), f(big_b)
    while abs(big_b - big_a) > EPS:
        c = big_a + (big_a - big_b) * f_a / (f_b - f_a)
        f_c = f(c)
        if f_c * f_b <= 0:
            big_a, f_a = big_b, f_b
        else:
            f_a = f_a / 2
        big_b, f_b = c, f_c
    return math.exp(big_a / 2)


@dataclass
class Standing:
    rating: tuple[float, float, float] = NEW
    last_ms: int | None = None
    games: int = 0
    wins: int = 0
    losses: int = 0


def replay(records: list[dict[str, Any]]) -> tuple[dict[tuple[str, str], Standing], int]:
    """Replay the dump's rated games; assert every stored value; the standings at the end
    and how many games were checked."""
    rated = sorted((r for r in records if r.get("rating_changes")), key=lambda r: r["ended_ms"])
    standings: dict[tuple[str, str], Standing] = {}
    for record in rated:
        pool, names = record["game"], [u["name"] for u in record["players"]]
        seats = [standings.setdefault((name, pool), Standing()) for name in names]
        befores = [start_of_game(st.rating, st.last_ms, record["ended_ms"]) for st in seats]
        winner = record["result"]["winner"]
        for seat, change in enumerate(record["rating_changes"]):
            s = 0.5 if winner is None else 1.0 if winner == seat else 0.0
            after = after_game(befores[seat], befores[1 - seat], s)
            stored_before = tuple(change[f"{k}_before"]
                                  for k in ("rating", "deviation", "volatility"))
            stored_after = tuple(change[f"{k}_after"]
                                 for k in ("rating", "deviation", "volatility"))
            assert (stored_before, stored_after) == (befores[seat], after), (
                record["game_id"], seat)
        for seat, st in enumerate(seats):
            s = 0.5 if winner is None else 1.0 if winner == seat else 0.0
            st.rating = after_game(befores[seat], befores[1 - seat], s)
            st.last_ms = record["ended_ms"]
            st.games += 1
            st.wins += s == 1.0
            st.losses += s == 0.0
    return standings, len(rated)


# -- a real server, real rated games ---------------------------------------------------------------
@pytest.fixture
async def players(tmp_path: Path) -> AsyncIterator[tuple[LocalServer, dict[str, Connection]]]:
    server = LocalServer(tmp_path, extra_args=["--rating-period", str(PERIOD_S),
                                               "--guests-per-hour", "0"])
    server.start()
    conns: dict[str, Connection] = {}
    try:
        tokens = {name: server.create_bot(name) for name in NAMES}
        for name, token in tokens.items():
            conns[name] = await Connection.open(server.url, client="recompute-test")
            await conns[name].call(p.AuthToken, token=token)
        yield server, conns
    finally:
        for conn in conns.values():
            await conn.close()
        server.stop()


async def play_rated(a: Connection, b: Connection, b_name: str, game: str,
                     rng: random.Random) -> None:
    """a challenges b to a rated game; random moves until it ends, or a resignation."""
    created = await a.call(p.Challenge, to=b_name, game=game, options=POOLS[game],
                           clock=CLOCK, color=0, rated=True)
    assert isinstance(created, p.ChallengeCreated)
    received = await b.wait_for(p.ChallengeReceived, challenge_id=created.challenge_id)
    await b.call(p.AcceptChallenge, challenge_id=received.challenge_id)
    started = await a.wait_for(p.GameStarted)
    state = engine.new_game(game, **started.snapshot.options)
    seats = (a, b)
    resign_at = rng.choice([None, None, rng.randrange(1, 8)])
    while not state.is_over:
        mover = seats[state.to_move]
        if state.ply == resign_at:
            await mover.call(p.Resign, game_id=started.game_id)
            break
        move = state.random_move(rng).text
        await mover.call(p.Move, game_id=started.game_id, ply=state.ply, move=move)
        state = state.play(move)
    for conn in seats:
        await conn.wait_for(p.GameOver, game_id=started.game_id)


def dump_all(server: LocalServer) -> list[dict[str, Any]]:
    done = subprocess.run([sys.executable, "-m", "server", "dump", "--all", "--db",
                           server.db_url], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=True)
    return [json.loads(line) for line in done.stdout.splitlines()]


async def test_every_stored_rating_is_recomputed_from_the_dump_and_the_document(
        players: tuple[LocalServer, dict[str, Connection]]) -> None:
    server, conns = players
    rng = random.Random(1723)
    for i in range(GAMES):
        a_name, b_name = rng.sample(NAMES, 2)
        game = sorted(POOLS)[i % len(POOLS)]
        await play_rated(conns[a_name], conns[b_name], b_name, game, rng)
        await asyncio.sleep(rng.choice([0.0, 0.3, 1.5]))  # deviations grow meanwhile

    standings, checked = replay(dump_all(server))
    assert checked == GAMES
    assert any(st.last_ms is not None and st.games > 1 for st in standings.values())
    for name in NAMES:
        info = await conns[name].call(p.GetProfile, name=name)
        assert isinstance(info, p.ProfileInfo)
        shown = {pr.game: pr for pr in info.user.ratings or ()}
        mine = {pool: st for (who, pool), st in standings.items() if who == name}
        assert set(shown) == set(mine), name
        for pool, st in mine.items():
            pr = shown[pool]
            assert (pr.rating, pr.games, pr.wins, pr.losses) == (
                round(st.rating[0]), st.games, st.wins, st.losses), (name, pool)
