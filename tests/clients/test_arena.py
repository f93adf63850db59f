"""``tessera arena``: bots play each other through a real server (the session's one with
bot tokens, and a throwaway local one), colours alternate, the games are stored and listed
by the server, and the table reports win rates, Wilson intervals and Elo differences; with
``--sprt``, pairs of games until the test's verdict."""

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
    SprtRun,
    account_name,
    parse_entrant,
    parse_tokens,
    table,
    unique_labels,
)
from clients.sdk.runner import GameResult
from clients.sdk.specs import parse_game_spec
from clients.sprt import SprtParams
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


def test_sprt_mcts_against_random_accepts_h1_in_a_few_pairs(server_proc: ServerProcess) -> None:
    """mcts sweeps random on a 3x3 Xodd board: each pair of wins adds about 0.6 to the LLR
    for H1 = +400 Elo, so the test ends after 5 pairs, or a few more after a lost game. (On the
    session's server, as guests: no server to start.)"""
    done = arena("mcts", "random", "--server", server_proc.url, "--game", "xodd size=3",
                 "--time", "0.05", "--quiet", "--sprt", "elo0=0,elo1=400", "--games", "30")
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "SPRT elo0=0,elo1=400,alpha=0.05,beta=0.05 in pairs of games, at most 30 games" in out
    pair_lines = re.findall(r"^pair (\d+) \(xodd size=3\): mcts (\d)-(\d) random; "
                            r"ptnml\(0-2\) ([\d, ]+); LLR (-?\d+\.\d\d) \(-2\.94, 2\.94\)$",
                            out, re.M)
    assert 5 <= len(pair_lines) <= 12, out
    assert [int(n) for n, *_ in pair_lines] == list(range(1, len(pair_lines) + 1))
    llrs = [float(line[-1]) for line in pair_lines]
    assert all(-2.94 < x < 2.94 for x in llrs[:-1]) and llrs[-1] >= 2.94
    last_counts = [int(c) for c in pair_lines[-1][3].split(", ")]
    assert sum(last_counts) == len(pair_lines) and last_counts[4] >= 5
    verdict = re.search(r"^SPRT elo0=0,elo1=400,alpha=0.05,beta=0.05: H1 accepted \(LLR "
                        r"(\d+\.\d\d) >= 2\.94\): mcts is more than 0 Elo stronger than random$"
                        r"\n(\d+) games in (\d+) pairs: mcts W/D/L (\d+)/0/(\d+); ptnml\(0-2\) "
                        r"([\d, ]+)\nElo mcts-random: \S+ \(", out, re.M)
    assert verdict, out
    games, pairs, wins, losses = (int(verdict[i]) for i in range(2, 6))
    assert (games, pairs, verdict[6]) == (2 * len(pair_lines), len(pair_lines), pair_lines[-1][3])
    assert wins + losses == games and float(verdict[1]) == llrs[-1]
    cells = rows(out)["xodd size=3"]  # every pair: mcts first once, second once
    assert cells[3] == str(games) and cells[6].endswith(f"/{pairs}") and cells[7].endswith(
        f"/{pairs}")


def test_arena_refuses_bad_arguments() -> None:
    bads = (["random"], ["random", "nosuchbot"], ["random", "greedy", "--game", "chess"],
            ["random", "greedy", "--token", "random=x"],
            ["random", "greedy", "--server", "ws://x/ws", "--token", "mcts=x"],
            ["random", "greedy", "--clock", "10ms/move"],
            ["random", "greedy", "--sprt", "elo0=0"],
            ["random", "greedy", "--sprt", "elo0=0,elo1=20", "--games", "1"],
            ["random", "greedy", "mcts", "--sprt", "elo0=0,elo1=20"])
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


def test_the_sprt_counts_pairs_skips_aborted_ones_and_reports_a_verdict() -> None:
    hadron = parse_game_spec("hadron")
    clock = p.PerMove(per_move_ms=2000)

    def game(k: int, a_wins: bool | None) -> ArenaGame:
        seat = k % 2
        winner = None if a_wins is None else seat if a_wins else 1 - seat
        result = GameResult(game_id=f"g{k}", game="hadron", options=hadron.options,
                            clock=clock, players=("x", "y"), seat=seat, winner=winner,
                            reason="normal" if winner is not None else "aborted", moves=())
        return ArenaGame((0, 1), hadron, seat, result)

    labels = ["mcts", "random"]
    sprt = SprtRun(SprtParams(0, 200, alpha=0.1, beta=0.1))
    outcomes = [(True, True), (True, False), (None, True), (False, False)]
    lines = []
    for number, (first, second) in enumerate(outcomes, 1):
        pair = game(2 * number - 2, first), game(2 * number - 1, second)
        counted = sprt.add_pair(*pair)
        assert counted == (None not in (first, second))
        lines.append(sprt.pair_line(number, hadron, *pair, counted, labels))
    assert lines[0] == ("pair 1 (hadron size=5): mcts 2-0 random; ptnml(0-2) 0, 0, 0, 0, 1; "
                        "LLR 0.42 (-2.20, 2.20)")
    assert lines[1].startswith("pair 2 (hadron size=5): mcts 1-1 random; ptnml(0-2) 0, 0, 1, 0, 1;")
    assert lines[2] == "pair 3 (hadron size=5): a game was aborted, the pair is not counted"
    assert "ptnml(0-2) 1, 0, 1, 0, 1;" in lines[3]
    assert sprt.verdict is None
    report = sprt.report(labels, "the cap of 8 games (--games) reached").splitlines()
    assert report[0].startswith("SPRT elo0=0,elo1=200,alpha=0.1,beta=0.1: inconclusive, the cap "
                                "of 8 games (--games) reached (LLR ")
    assert report[0].endswith(" within (-2.20, 2.20))")
    assert report[1] == "6 games in 3 pairs: mcts W/D/L 3/0/3; ptnml(0-2) 1, 0, 1, 0, 1"
    # pair scores 1, 1/2, 0: the mean 1/2 +- 1.96 sqrt(1/6 / 3) is [0.038, 0.962]
    assert report[2] == "Elo mcts-random: +0 (95% CI -561..+561)"
    for k in range(4):  # losses, pair after pair, until the test gives up on +200
        sprt.add_pair(game(8 + 2 * k, False), game(9 + 2 * k, False))
        if sprt.verdict:
            break
    assert sprt.verdict == "H0"
    assert sprt.report(labels, "").splitlines()[0].startswith(
        "SPRT elo0=0,elo1=200,alpha=0.1,beta=0.1: H0 accepted (LLR -")
    assert "mcts is not 200 Elo stronger than random" in sprt.report(labels, "")
