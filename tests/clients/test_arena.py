"""``tessera arena``: bots play each other through a real server (the session's one with
bot tokens, and a throwaway local one), colours alternate, the games are stored and listed
by the server, and the table reports win rates, Wilson intervals and Elo differences."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import protocol as p
from clients.arena import (
    Arena,
    ArenaGame,
    account_name,
    parse_entrant,
    parse_tokens,
    table,
    unique_labels,
)
from clients.sdk.runner import GameResult
from clients.sdk.specs import parse_game_spec
from tests.clients.sdk_fixtures import ServerProcess, client

ROOT = Path(__file__).resolve().parents[2]


def arena(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """``tessera arena ARGS`` to its end (the timeout guards against a hang only: several
    test processes share the machine)."""
    return subprocess.run([sys.executable, "-m", "clients.cli", "arena", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


def rows(stdout: str) -> dict[str, list[str]]:
    """Table lines by their first cell (game), split on runs of two spaces or more."""
    out = {}
    for line in stdout.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) >= 10:
            out[cells[0]] = cells
    return out


async def test_arena_on_a_server_plays_alternating_colours_and_the_server_lists_the_games(
        server_proc: ServerProcess) -> None:
    started_ms = time.time() * 1000 - 1000
    done = arena("random", "greedy", "--server", server_proc.url,
                 "--token", f"random={server_proc.tokens['alpha']}",
                 "--token", f"greedy={server_proc.tokens['beta']}",
                 "--game", "hadron", "--game", "xodd size=5", "--games", "2",
                 "--time", "0.05", "--jobs", "2")
    assert done.returncode == 0, done.stderr
    table_rows = rows(done.stdout)
    assert set(table_rows) == {"game", "hadron size=5", "xodd size=5", "all games"}
    for game in ("hadron size=5", "xodd size=5"):
        cells = table_rows[game]
        assert cells[1:4] == ["random", "greedy", "2"]
        assert int(cells[4]) + int(cells[5]) == 2
        assert re.fullmatch(r"\[\d+\.\d%, \d+\.\d%\]", cells[9])
    assert "ended by: normal 4" in done.stdout
    assert done.stderr.count("] hadron size=5: random vs greedy") == 2  # progress lines

    conn = await client(server_proc)
    try:
        listed = await conn.call(p.ListGames, player="alpha", status="over", limit=100)
    finally:
        await conn.close()
    assert isinstance(listed, p.GameList)
    mine = [g for g in listed.games if g.created_ms >= started_ms
            and {u.name for u in g.players} == {"alpha", "beta"}]
    assert len(mine) == 4
    for game in ("hadron", "xodd"):
        seats = sorted([u.name for u in g.players].index("alpha")
                       for g in mine if g.game == game)
        assert seats == [0, 1]  # colours alternate
    assert all(g.result is not None and g.result.winner is not None for g in mine)


def test_arena_with_a_throwaway_local_server_creates_bot_accounts_and_reports() -> None:
    done = arena("random", "random", "--game", "hadron size=3", "--games", "2", "--time",
                 "0.05", "--quiet")
    assert done.returncode == 0, done.stderr
    assert "(local; database sqlite" in done.stdout and "removed at exit" in done.stdout
    cells = rows(done.stdout)["hadron size=3"]
    assert cells[1:4] == ["random", "random#2", "2"]
    assert done.stdout.rstrip().endswith("s") and "2 games in" in done.stdout
    assert not done.stderr.strip(), done.stderr  # --quiet: nothing on stderr


def test_an_engine_with_a_short_think_time_plays() -> None:
    engine_bot = f"engine:{sys.executable} examples/random_engine.py"
    done = arena("random", engine_bot, "--game", "hadron size=3", "--games", "2", "--time",
                 "0.1", "--quiet")
    assert done.returncode == 0, done.stderr
    assert "ended by: normal 2" in done.stdout, done.stdout  # no resignation


def test_arena_refuses_bad_arguments() -> None:
    bads = (["random"], ["random", "nosuchbot"], ["random", "greedy", "--game", "chess"],
            ["random", "greedy", "--token", "random=x"],
            ["random", "greedy", "--server", "ws://x/ws", "--token", "mcts=x"],
            ["random", "greedy", "--clock", "10ms/move"])
    with ThreadPoolExecutor(len(bads)) as pool:  # the processes at once, not in turn
        for bad, done in zip(bads, pool.map(lambda bad: arena(*bad), bads), strict=True):
            assert done.returncode == 2, (bad, done.stderr)


# -- pieces, without a server --------------------------------------------------------------------
def test_entrants_labels_and_account_names() -> None:
    engine_bot = parse_entrant("engine:python3 examples/random_engine.py --seed 3")
    assert engine_bot.label == "engine:random_engine.py"
    named = parse_entrant("fast=engine:./fast --depth 2")
    assert named.label == "fast" and named.spec == "engine:./fast --depth 2"
    assert parse_entrant("mcts").label == "mcts"
    labels = [e.label for e in unique_labels([parse_entrant("mcts"), parse_entrant("mcts"),
                                              parse_entrant("random")])]
    assert labels == ["mcts", "mcts#2", "random"]
    assert account_name(0, "engine:random_engine.py") == "arena1-engine-random"
    assert re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]{1,19}", account_name(11, "mcts#2"))
    assert parse_tokens(["mcts=abc=d"], ["mcts"]) == {"mcts": "abc=d"}
    with pytest.raises(ValueError):
        parse_tokens(["x=1"], ["mcts"])
    with pytest.raises(ValueError):
        parse_entrant("engine:")


def test_the_table_counts_colours_and_gives_wilson_and_elo() -> None:
    hadron = parse_game_spec("hadron")
    entrants = [parse_entrant("mcts"), parse_entrant("random")]
    arena_ = Arena(entrants, [hadron], 10, p.PerMove(per_move_ms=2000), 200)

    def game(k: int, a_wins: bool) -> ArenaGame:
        seat = k % 2
        result = GameResult(game_id=f"g{k}", game="hadron", options=hadron.options,
                            clock=arena_.clock, players=("x", "y"), seat=seat,
                            winner=seat if a_wins else 1 - seat, reason="normal",
                            moves=("a1",) * 12)
        return ArenaGame((0, 1), hadron, seat, result)

    arena_.results = [game(k, k != 3) for k in range(10)]  # A loses once, as second
    text = table(arena_)
    cells = rows(text)["hadron size=5"]
    assert cells[1:8] == ["mcts", "random", "10", "9", "1", "5/5", "4/5"]
    assert cells[8] == "90.0%" and cells[9] == "[59.6%, 98.2%]"
    assert cells[10] == "+382 (+67..+696)"
    assert "ended by: normal 10" in text and "12.0 on average" in text
