"""The engine bridge with real subprocesses: the example engine plays every game, and
misbehaving engines (tests/clients/engines/) are restarted, retried or resigned for."""

from __future__ import annotations

import ast
import copy
import logging
import pickle
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import engine
import protocol as p
from clients.bots.base import Bot, TimeBudget, margin_ms
from clients.bots.match import run_match
from clients.bots.random_bot import RandomBot
from clients.bridge import MARGIN_MS, BridgeResign, EngineBot
from clients.sdk.specs import budget_for

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "random_engine.py"
ENGINES = Path(__file__).resolve().parent / "engines"
UNLIMITED = TimeBudget(remaining_ms=None)
FAST = TimeBudget(remaining_ms=3000)  # think ~74 ms, so a silent engine is killed at ~0.45 s


def script(name: str, *args: str) -> list[str]:
    return [sys.executable, str(ENGINES / name), *args]


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG, logger="clients.bridge")
    return caplog


def messages(caplog: pytest.LogCaptureFixture, level: int = logging.WARNING) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "clients.bridge" and r.levelno >= level]


def play(bot: Bot, game: str, seat: int = 0, budget: TimeBudget = UNLIMITED,
         **options: Any) -> engine.State:
    """A local game of ``bot`` against the random bot, refereed by engine.State."""
    state = engine.new_game(game, **options)
    opponent = RandomBot(seed=1)
    bot.new_game(game, dict(state.options), seat)
    opponent.new_game(game, dict(state.options), 1 - seat)
    while not state.is_over:
        mover = bot if state.to_move == seat else opponent
        move = mover.choose_move(state, budget)
        assert move == str(state.parse_move(move)), "moves come back canonical"
        state = state.play(move)
    bot.game_over(state.winner)
    return state


@pytest.fixture
def bots() -> Iterator[list[EngineBot]]:
    """EngineBots made by a test, closed afterwards whatever happens."""
    made: list[EngineBot] = []
    yield made
    for bot in made:
        bot.close()


def make(bots: list[EngineBot], command: list[str], **kw: Any) -> EngineBot:
    bot = EngineBot(command, grace_s=kw.pop("grace_s", 0.3), quit_timeout_s=0.5, **kw)
    bots.append(bot)
    return bot


# -- the example engine ------------------------------------------------------------------------
GAMES: list[tuple[str, dict[str, Any]]] = [
    ("xodd", {}), ("yodd", {}), ("hadron", {}), ("hexifact", {}),
    ("hexifact", {"board": "hex5", "jumps": "once-per-stone"}), ("xodd", {"size": 5}),
]


def test_example_engine_plays_every_game(bots: list[EngineBot], logs: Any) -> None:
    bot = make(bots, [sys.executable, str(EXAMPLE), "--seed", "3"])
    for i, (game, options) in enumerate(GAMES):
        state = play(bot, game, seat=i % 2, **options)
        assert state.is_over and state.winner in (0, 1)
        assert state.ply == len(state.moves) > 1
    assert bot.engine_id == {"name": "random-engine", "author": "the Tessera examples"}
    assert bot.engine_name == "random-engine"
    assert messages(logs) == []
    started = [m for m in messages(logs, logging.INFO) if m.startswith("started engine")]
    assert len(started) == 1, "one engine process serves every game"


def test_example_engine_uses_only_the_standard_library() -> None:
    tree = ast.parse(EXAMPLE.read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module}
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported


def test_example_engine_by_hand() -> None:
    commands = ("tessera 1\nnewgame hadron size=3 1\nposition hadron:size=3 ply=1 "
                "board=.../.R./...\nmoves b2\ngo think=100 deadline=1000 clock=- inc=0 "
                "permove=-\nlegal a1 c3\nresult 0 resign\nquit\n")
    out = subprocess.run([sys.executable, str(EXAMPLE), "--seed", "1"], input=commands,
                         capture_output=True, text=True, timeout=10, check=True).stdout
    lines = out.splitlines()
    assert lines[:5] == ["id name random-engine", "id author the Tessera examples", "ok", "ok",
                         "legal"]
    assert lines[5] in ("move a1", "move c3") and len(lines) == 6
    bad = subprocess.run([sys.executable, str(EXAMPLE)], input="tessera 2\n", text=True,
                         capture_output=True, timeout=10).stdout
    assert bad.startswith("error version")


def test_the_lines_the_bridge_sends(bots: list[EngineBot], tmp_path: Path) -> None:
    log = tmp_path / "transcript"
    bot = make(bots, script("recorder.py", str(log)))
    state = engine.new_game("hadron", size=3).play("b2")
    bot.new_game("hadron", {"size": 3}, 1)
    budget = TimeBudget(remaining_ms=60000, increment_ms=1000)
    move = bot.choose_move(state, budget)
    bot.game_over(0, "resign")
    bot.close()
    lines = log.read_text().splitlines()
    assert lines[:6] == ["> tessera 1", "< id name recorder", "< ok", "> newgame hadron size=3 1",
                         "< ok", "> position hadron:size=3 ply=1 board=.../.R./..."]
    assert lines[6] == "> moves b2"
    assert re.fullmatch(r"> go think=\d+ deadline=\d+ clock=60000 inc=1000 permove=-", lines[7])
    think, deadline = map(int, re.findall(r"=(\d+)", lines[7])[:2])
    assert think == int(budget.seconds_for_move(1) * 1000) and think < deadline <= 60000
    assert lines[8:] == ["< legal", "> legal a1 c1 a3 c3", f"< move {move}", "> result 0 resign",
                         "> quit"]


def test_the_transcript_in_the_docs_is_a_legal_game() -> None:
    docs = (ROOT / "docs" / "BRIDGE.md").read_text()
    block = re.search(r"## A whole game.*?```text\n(.*?)```", docs, re.S)
    assert block
    lines = block[1].splitlines()
    commands = {"tessera", "newgame", "position", "moves", "go", "legal", "error", "result",
                "quit"}
    assert all(line[:2] in ("> ", "< ") for line in lines)
    assert {line[2:].split()[0] for line in lines if line.startswith(">")} <= commands
    game, options, seat = lines[lines.index("< ok") + 1].split()[2:]
    state = engine.new_game(game, **dict(o.split("=") for o in options.split(",")))
    position = ""
    for line in lines:
        word, *args = line[2:].split()
        if line.startswith("> position"):
            position = line.removeprefix("> position ")
        elif line.startswith("> moves"):
            assert list(state.moves) == args[:state.ply]
            for move in args[state.ply:]:
                state = state.play(move)
            assert state.to_text() == position
        elif line.startswith("> legal"):
            assert args == [str(m) for m in state.legal_moves()]
        elif word == "move":
            state = state.play(args[0])
            assert state.to_move != int(seat) or state.is_over
        elif word == "result":
            assert state.is_over and args[0] == str(state.winner)


# -- crashes -----------------------------------------------------------------------------------
def test_an_engine_that_crashes_once_is_restarted(bots: list[EngineBot], logs: Any,
                                                  tmp_path: Path) -> None:
    bot = make(bots, script("crash.py", "2", str(tmp_path / "crashed")))
    state = play(bot, "hadron", seat=0)
    assert state.is_over
    warnings = messages(logs)
    assert any(re.search(r"engine crasher crashed: exited with code 3 while the bridge waited "
                         r"for its answer to 'go' .*crashing on purpose after 2 moves", m)
               for m in warnings)
    assert any("restarting engine crasher" in m for m in warnings)
    assert not any("resigning" in m for m in warnings)


def test_an_engine_that_crashes_twice_resigns(bots: list[EngineBot], logs: Any) -> None:
    bot = make(bots, script("crash.py", "2"))
    with pytest.raises(BridgeResign, match="failed again after its restart"):
        play(bot, "xodd", seat=1, size=5)
    errors = messages(logs, logging.ERROR)
    assert len(errors) == 1 and "engine crasher: resigning the game" in errors[0]
    assert sum("crashed" in m for m in messages(logs)) == 2


def test_restarts_are_counted_per_game(bots: list[EngineBot], logs: Any) -> None:
    bot = make(bots, script("crash.py", "1"))
    for _ in range(2):  # each game: start, 1 move, crash, restart, 1 move, crash, resign
        with pytest.raises(BridgeResign):
            play(bot, "hadron", seat=0)
    started = [m for m in messages(logs, logging.INFO) if m.startswith("started engine")]
    assert len(started) == 4
    assert len(messages(logs, logging.ERROR)) == 2


@pytest.mark.parametrize("command", [
    [sys.executable, "-c", "import sys; print('oops', file=sys.stderr); sys.exit(5)"],
    ["/nonexistent/engine-program"],
])
def test_an_engine_that_cannot_start_resigns(bots: list[EngineBot], logs: Any,
                                             command: list[str]) -> None:
    bot = make(bots, command)
    with pytest.raises(BridgeResign):
        play(bot, "hexifact")
    warnings = " ".join(messages(logs))
    assert "failed to start the game" in warnings and "will restart it" in warnings
    assert ("exited with code 5" in warnings and "oops" in warnings) or "cannot start" in warnings


# -- hangs -------------------------------------------------------------------------------------
def test_a_hanging_engine_is_killed_restarted_then_resigned_for(bots: list[EngineBot],
                                                                logs: Any) -> None:
    bot = make(bots, script("hang.py", "go"))
    started = time.monotonic()
    with pytest.raises(BridgeResign, match="failed again"):
        play(bot, "hadron", budget=FAST)
    elapsed = time.monotonic() - started
    assert elapsed > 0.9, elapsed  # two attempts of ~0.45 s each, waited out, and a restart
    hung = [m for m in messages(logs) if "hung" in m]
    assert len(hung) == 2
    assert re.search(r"engine hanger hung: still waiting for its answer to 'go' \(allowed \d+ "
                     r"ms\) at the deadline; killing it", hung[0])
    # inside the clock: each attempt was given a window that ends before the clock does
    # (the bridge's own reckoning, which a busy machine does not change; the wall time of
    # the whole is no bound, since killing and starting processes takes what it takes)
    allowed = [int(re.findall(r"allowed (\d+) ms", m)[0]) for m in hung]
    assert all(0 < ms <= 3000 - 300 for ms in allowed) and sum(allowed) < 3000, allowed


def test_a_hanging_engine_never_overruns_the_clock(bots: list[EngineBot], logs: Any) -> None:
    bot = make(bots, script("hang.py", "go"), grace_s=5.0)
    state = engine.new_game("yodd", size=3)
    bot.new_game("yodd", {"size": 3}, 0)
    with pytest.raises(BridgeResign, match="no time left on the clock"):
        bot.choose_move(state, TimeBudget(remaining_ms=None, per_move_ms=400))
    # killed at its deadline, the bridge's margin before the clock ends: the window it was
    # given (the bridge's reckoning; a wall-time bound would measure the machine's load)
    [hung] = [m for m in messages(logs) if "hung" in m]
    [allowed] = [int(ms) for ms in re.findall(r"allowed (\d+) ms", hung)]
    assert 0 < allowed <= 400 - margin_ms(400, MARGIN_MS), hung


def test_a_short_think_time_on_a_longer_clock_plays(bots: list[EngineBot]) -> None:
    """``--move-time 0.1`` caps the think time, not the clock: 0.1 s to think is no reason
    to resign a game whose clock gives 10 s a move."""
    bot = make(bots, [sys.executable, str(EXAMPLE), "--seed", "2"])
    budget = budget_for(p.PerMove(per_move_ms=10_000), None, move_time_ms=100)
    state = play(bot, "hadron", budget=budget, size=5)
    assert state.is_over and state.ply > 2


def test_a_hang_in_the_handshake(bots: list[EngineBot], logs: Any) -> None:
    bot = make(bots, script("hang.py", "handshake"), startup_timeout_s=0.3)
    with pytest.raises(BridgeResign):
        play(bot, "hadron", budget=FAST)
    assert any("failed to start the game: still waiting for its answer to 'tessera 1'" in m
               for m in messages(logs))


def test_close_escalates_to_sigterm_and_sigkill(bots: list[EngineBot], logs: Any) -> None:
    bot = make(bots, script("hang.py", "go", "--stubborn"))
    bot.new_game("hadron", {}, 0)  # the engine ignores quit and SIGTERM
    bot.close()
    warnings = messages(logs)
    assert any("did not quit within 0.5 s; terminating it" in m for m in warnings)
    assert any("ignored SIGTERM for 0.5 s; killing it" in m for m in warnings)
    # close() returned once the engine was gone: killed (SIGKILL), not left running
    assert any(re.search(rf"engine .* stopped \(exit code -{signal.SIGKILL}\)", m)
               for m in messages(logs, logging.INFO)), messages(logs, logging.INFO)
    bot.close()  # twice is fine


# -- illegal and malformed answers -------------------------------------------------------------
def test_one_illegal_answer_is_forgiven(bots: list[EngineBot], logs: Any) -> None:
    bot = make(bots, script("illegal.py", "once"))
    state = play(bot, "xodd", seat=0, size=3)
    assert state.is_over
    bad = [m for m in messages(logs) if "bad answer (illegal" in m]
    assert bad and all("sending 'error illegal' and asking once more" in m for m in bad)


def test_two_illegal_answers_resign(bots: list[EngineBot], logs: Any) -> None:
    bot = make(bots, script("illegal.py", "always"))
    with pytest.raises(BridgeResign, match="a second bad answer in one turn"):
        play(bot, "hexifact", seat=0)
    assert len([m for m in messages(logs) if "asking once more" in m]) == 1


def test_non_canonical_moves_are_canonicalised(bots: list[EngineBot], logs: Any) -> None:
    bot = make(bots, script("illegal.py", "shout"))
    assert play(bot, "xodd", seat=0, size=4).is_over  # play() checks every move's form
    assert messages(logs) == []


def test_garbage_answers_resign(bots: list[EngineBot], logs: Any) -> None:
    bot = make(bots, script("garbage.py", "answer"))
    with pytest.raises(BridgeResign, match="malformed"):
        play(bot, "hadron")
    warnings = messages(logs)
    assert any("ignored a line that is no answer to 'go': '\ufffd\ufffd garbage \\x00\\x01'"
               in m for m in warnings)
    assert any("ignored a line that is no answer to 'go': '<a line longer than 65536 bytes>'"
               in m for m in warnings)
    bad = [m for m in warnings if "asking once more" in m]
    assert len(bad) == 1 and "it answered 'move ?? !!'" in bad[0]


def test_noise_around_good_answers_is_ignored(bots: list[EngineBot], logs: Any) -> None:
    bot = make(bots, script("garbage.py", "noise"))
    assert play(bot, "yodd", seat=1, size=3).is_over
    warnings = messages(logs)
    assert any("'unsolicited chatter'" in m for m in warnings)
    assert any("<a line longer than 65536 bytes>" in m for m in warnings)
    assert not any("bad answer" in m or "resign" in m for m in warnings)


def test_garbage_in_the_handshake_is_ignored(bots: list[EngineBot], logs: Any) -> None:
    bot = make(bots, script("garbage.py", "handshake"))
    assert play(bot, "hadron").is_over
    assert any("ignored a line that is no answer to 'tessera 1': 'hello there'" in m
               for m in messages(logs))


# -- the engine's own decisions ----------------------------------------------------------------
def test_an_engine_may_resign(bots: list[EngineBot], logs: Any) -> None:
    bot = make(bots, script("picky.py", "xodd"))
    with pytest.raises(BridgeResign, match="the engine resigned"):
        play(bot, "hadron")
    assert messages(logs) == []


def test_a_refused_game_resigns_without_restarting(bots: list[EngineBot], logs: Any) -> None:
    bot = make(bots, script("picky.py", "xodd"))
    with pytest.raises(BridgeResign, match=r"picky\.py does not play xodd"):
        play(bot, "xodd")
    assert not any("restarting" in m for m in messages(logs))
    with pytest.raises(BridgeResign, match="the engine resigned"):  # the next game is fine
        play(bot, "hadron")


def test_choose_move_without_new_game(bots: list[EngineBot]) -> None:
    bot = make(bots, [sys.executable, str(EXAMPLE)])
    state = engine.new_game("hexifact", board="hex4")
    assert state.play(bot.choose_move(state, UNLIMITED)).ply == 1


def test_copies_start_their_own_engine(bots: list[EngineBot]) -> None:
    bot = make(bots, [sys.executable, str(EXAMPLE)], startup_timeout_s=7.0)
    play(bot, "hadron")
    twin = copy.deepcopy(bot)
    bots.append(twin)
    assert twin.command == bot.command and twin.startup_timeout_s == 7.0
    assert twin._proc is None and bot._proc is not None
    assert play(twin, "hadron").is_over
    clone = pickle.loads(pickle.dumps(bot))
    bots.append(clone)
    assert clone.grace_s == bot.grace_s and clone._proc is None


def test_the_offline_match_runner_plays_engines(bots: list[EngineBot]) -> None:
    bot = make(bots, [sys.executable, str(EXAMPLE)])
    result = run_match(bot, RandomBot(), "hadron", {"size": 3}, games=4,
                       budget=TimeBudget(remaining_ms=None, per_move_ms=2000))
    assert result.games == 4 and all(r.error is None for r in result.played)
    assert bot._proc is None, "the runner played copies; the bot passed in never started"


def test_command_must_be_a_list() -> None:
    with pytest.raises(ValueError, match="non-empty list"):
        EngineBot("python3 engine.py")
    with pytest.raises(ValueError, match="non-empty list"):
        EngineBot([])
