"""``tessera play`` driven in a pseudo-terminal against a real server.

The human side is the real program under pexpect; the other side is a scripted protocol
client (``ScriptedPlayer``). Moves are chosen with the engine, the program is expected to
show them.
"""

from __future__ import annotations

import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pexpect
import pytest

import engine
import protocol as p
from clients.connection import ServerError
from clients.live import GameView
from clients.local_bot import LocalBot, LocalBotError
from clients.localserver import LocalServer
from clients.offers import OfferError, parse_offer
from tests.clients.conftest import LiveServer, ScriptedPlayer, spawn_tessera, tessera_command

Scripted = Callable[[str], ScriptedPlayer]
Games = dict[str, tuple[str, engine.State]]


def spawn_play(url: str, *args: str) -> pexpect.spawn:
    return spawn_tessera("play", "--server", url, *args)


def log_in_as_guest(child: pexpect.spawn) -> str:
    child.expect(r"Logged in as (guest-\w+) \(guest\)")
    name: str = child.match.group(1)
    return name


def start_game(child: pexpect.spawn, opponent: ScriptedPlayer, me: str,
               offer: str = "hadron size=3 5m+3s") -> tuple[str, int]:
    """The program seeks, ``opponent`` accepts; returns the game id and the program's seat."""
    child.sendline(f"seek {offer}")
    child.expect(r"Seek #(\d+) is open")
    opponent.call(p.AcceptSeek, seek_id=int(child.match.group(1)))
    started = opponent.wait_for(p.GameStarted)
    seat = [u.name for u in started.snapshot.players].index(me)
    child.expect(rf"Game {started.game_id} started: you play (Red|Blue)")
    assert child.match.group(1) == ("Red", "Blue")[seat]
    return started.game_id, seat


def expect_move_shown(child: pexpect.spawn, ply: int, move: str) -> None:
    child.expect(rf"last move: {ply + 1}\. {re.escape(move)} \(\w+\)")


def test_full_hadron_game_with_errors_and_chat(live_server: LiveServer,
                                              scripted_player: Scripted) -> None:
    child = spawn_play(live_server.url, "--guest", "--no-color")
    me = log_in_as_guest(child)
    opponent = scripted_player(live_server.url)
    opponent.guest()

    child.sendline("who")
    child.expect(rf"guests: .*{opponent.name}")
    game_id, seat = start_game(child, opponent, me)
    child.expect(r"   a b c\r\n3  \. \. \.  3\r\n2  \. \. \.  2\r\n1  \. \. \.  1")
    child.expect(r"legal squares: a1 b1 c1 a2 b2 c2 a3 b3 c3")

    child.sendline("say good luck")
    opponent.wait_for(p.ChatMessage, game_id=game_id, text="good luck")
    opponent.call(p.Chat, game_id=game_id, text="you too")
    child.expect(rf"<{opponent.name}> you too")

    state = engine.new_game("hadron", size=3)
    shown_errors = False
    while not state.is_over:
        if state.to_move == seat:
            if state.ply > 0 and not shown_errors:
                child.sendline("z9")
                child.expect(r"Illegal move 'z9': no cell 'z9' on this board")
                taken = next(c.name for c in state.board.cells if _occupied(state, c.name))
                child.sendline(taken)
                child.expect(rf"Illegal move '{taken}': {taken}: the square is occupied")
                child.sendline("hello")  # neither a move nor a command
                child.expect(r"Unknown command 'hello' \(and not a move in Hadron")
                child.sendline("pass")
                child.expect(r"Hadron has no pass: every turn is a move")
                child.sendline("rules")
                child.expect(r"Hadron \(hadron, rules version \d+\)")
                child.expect(r"Moves look like a1; Hadron has no pass\.")
                shown_errors = True
            move = str(state.legal_moves()[0])
            child.sendline(move)
            opponent.wait_for(p.Moved, game_id=game_id, ply=state.ply)
        else:
            move = str(state.legal_moves()[-1])
            opponent.move(game_id, state.ply, move)
        expect_move_shown(child, state.ply, move)
        state = state.play(move)
        if not state.is_over and state.to_move != seat:
            child.sendline("b2")
            child.expect(r"It is not your turn: (Red|Blue) \(guest-\w+\) to move\.")
    assert shown_errors
    outcome = "You won!" if state.winner == seat else "You lost."
    loser = ("Red", "Blue")[state.to_move]  # why the rules ended it, and the tally
    child.expect(rf"Game over: (Red|Blue) \(guest-\w+\) wins: {loser} has no legal "
                 rf"placement\. {outcome}")
    over = opponent.wait_for(p.GameOver, game_id=game_id)
    assert (over.winner, over.reason) == (state.winner, "normal")

    child.sendline("history")
    child.expect(rf"{game_id} .* Hadron size=3 5m\+3s .* {state.ply} plies  (1-0|0-1) normal")
    child.sendline(f"replay {game_id}")
    child.expect(rf"position 0/{state.ply}")
    child.sendline("l")
    child.expect(rf"position {state.ply}/{state.ply}")
    child.sendline("q")
    child.expect("left the replay")
    child.sendline("quit")
    child.expect("Bye.")
    child.expect(pexpect.EOF)


def _occupied(state: engine.State, cell: str) -> bool:
    try:
        state.parse_move(cell)
    except engine.IllegalMove as exc:
        return "occupied" in str(exc)
    return False


def test_resign_abort_challenges_and_watching(live_server: LiveServer,
                                             scripted_player: Scripted) -> None:
    child = spawn_play(live_server.url, "--guest", "--no-color")
    me = log_in_as_guest(child)
    opponent = scripted_player(live_server.url)
    opponent.guest()

    # a challenge declined, then one accepted (the program plays Blue, as asked for)
    sent = opponent.call(p.Challenge, to=me, game="hexifact", options={}, clock=p.Unlimited(),
                         color=0)
    assert isinstance(sent, p.ChallengeCreated)
    child.expect(rf"{opponent.name} challenges you to Hexifact board=hex3-4 "
                 rf"jumps=after-placing unlimited; you would play White\. "
                 rf"Type 'accept {sent.challenge_id}'")
    child.sendline(f"decline {sent.challenge_id}")
    assert opponent.wait_for(p.ChallengeEnded).reason == "declined"
    sent = opponent.call(p.Challenge, to=me, game="xodd", options={"size": 5},
                         clock=p.PerMove(per_move_ms=60_000), color=0)
    assert isinstance(sent, p.ChallengeCreated)
    child.expect("challenges you to Xodd size=5 1m/move")
    child.sendline("accept")
    started = opponent.wait_for(p.GameStarted)
    child.expect(rf"Game {started.game_id} started: you play White")
    opponent.move(started.game_id, 0, "Bc3")
    expect_move_shown(child, 0, "Bc3")
    child.expect(r"groups: Black 1, White 0")  # the engine's help, shown after each move
    child.expect(r"parity: odd")
    child.sendline("Bc3")
    child.expect(r"Illegal move 'Bc3': ")
    child.sendline("pass")
    opponent.wait_for(p.Moved, game_id=started.game_id, ply=1, move="pass")
    expect_move_shown(child, 1, "pass")
    child.sendline("resign")
    child.expect(rf"Resign game {started.game_id} against {opponent.name}\? \[y/N\]")
    child.sendline("y")
    over = opponent.wait_for(p.GameOver, game_id=started.game_id)
    assert (over.winner, over.reason) == (0, "resign")
    child.expect(r"Game over: Black \(guest-\w+\) wins: White resigned\. You lost\.")

    # the program accepts a seek from the lobby, then aborts the game before moving
    seek = opponent.call(p.Seek, game="yodd", options={"size": 3}, clock=p.Unlimited())
    assert isinstance(seek, p.SeekCreated)
    child.expect(rf"New seek #{seek.seek_id} by {opponent.name}: Yodd size=3 unlimited")
    child.sendline("seeks")
    child.expect(rf"#{seek.seek_id}\s+{opponent.name}\s+Yodd size=3 unlimited")
    child.sendline(f"accept {seek.seek_id}")
    started = opponent.wait_for(p.GameStarted)
    child.expect(rf"Game {started.game_id} started")
    # a hex board: rows are offset, and each names its first and last cell
    child.expect(r"\r\nc5    \. \. \.    e5\r\nb4   \. \. \. \.   e4\r\n")
    child.sendline("abort")
    over = opponent.wait_for(p.GameOver, game_id=started.game_id)
    assert over.reason == "abort"
    child.expect("The game was aborted")

    # a spectator (another program, not logged in) watches a live game
    third = scripted_player(live_server.url)
    third.guest()
    seek = opponent.call(p.Seek, game="hadron", options={"size": 3}, clock=p.Unlimited())
    assert isinstance(seek, p.SeekCreated)
    third.call(p.AcceptSeek, seek_id=seek.seek_id)
    started = third.wait_for(p.GameStarted)
    players = {opponent.name: opponent, third.name: third}
    first = players[started.snapshot.players[0].name]
    second = players[started.snapshot.players[1].name]
    first.move(started.game_id, 0, "b2")
    first.call(p.Chat, game_id=started.game_id, text="before anyone watched")
    watcher = spawn_play(live_server.url, "--no-color")
    watcher.expect("Log in with")
    watcher.sendline("seek hadron")
    watcher.expect(r"Refused \(unauthorized\): .* Log in first")
    watcher.sendline("games")
    watcher.expect(rf"{started.game_id} .* Hadron size=3 unlimited")
    watcher.sendline(f"watch {started.game_id}")
    watcher.expect(r"watching")
    watcher.expect(rf"\(earlier\) <{first.name}> before anyone watched")
    watcher.sendline("say hello")
    watcher.expect(rf"Only the players of game {started.game_id} can chat in it")
    second.move(started.game_id, 1, "a1")
    watcher.expect(r"2  \. R \.  2\r\n1 \[B\]\. \.  1")  # the last move is marked
    expect_move_shown(watcher, 1, "a1")
    watcher.sendline("quit")
    watcher.expect(pexpect.EOF)
    child.sendline("quit")
    child.expect(pexpect.EOF)


def test_reconnects_and_resumes_after_a_server_restart(
        live_server_factory: Callable[..., LiveServer], scripted_player: Scripted) -> None:
    server = live_server_factory(grace_s=1.0)
    child = spawn_play(server.url, "--guest", "--no-color", "--retry-max", "0.5")
    me = log_in_as_guest(child)
    opponent = scripted_player(server.url)
    opponent.guest()
    game_id, seat = start_game(child, opponent, me, "hadron size=5 10m+5s")
    state = engine.new_game("hadron", size=5)
    if seat == 1:
        opponent.move(game_id, 0, "a1")
        expect_move_shown(child, 0, "a1")
        state = state.play("a1")
    child.sendline("c3")
    opponent.wait_for(p.Moved, game_id=game_id, ply=state.ply)
    expect_move_shown(child, state.ply, "c3")
    state = state.play("c3")

    server.stop()
    child.expect("Connection lost; reconnecting")
    server.start()
    authed = opponent.reconnect()
    assert authed.active_games == (game_id,)
    opponent.call(p.Resume, game_id=game_id, since_seq=0)
    move = "e5"
    opponent.move(game_id, state.ply, move)  # made while the program may still be away
    # the missed move comes as an event or in a snapshot: before or after the notice
    reconnected = rf"Reconnected to {re.escape(server.url)}; resumed 1 game\(s\): {game_id}"
    shown = rf"last move: {state.ply + 1}\. {move} \(\w+\)"
    seen = {child.expect([reconnected, shown])}
    seen.add(child.expect([reconnected, shown]))
    assert seen == {0, 1}
    state = state.play(move)
    child.sendline("a5")
    opponent.wait_for(p.Moved, game_id=game_id, ply=state.ply, move="a5")
    expect_move_shown(child, state.ply, "a5")
    state = state.play("a5")
    child.sendline("clock")  # both clocks now; the opponent's is running
    readings = [rf"{c} guest-\w+ (10:0\d|9:\d\d)" for c in ("Red", "Blue")]
    readings[1 - seat] = ">" + readings[1 - seat]
    child.expect(rf"{game_id} \| +{readings[0]} \| +{readings[1]} \| ply {state.ply}")

    opponent.run(opponent.conn.close())  # the opponent goes away: claim the game
    mine, theirs = ("Red", "Blue") if seat == 0 else ("Blue", "Red")
    child.expect(rf"{theirs} \(guest-\w+\) left the game; type 'claim' after 1 s")
    child.sendline("claim")  # too early: the refusal says when, in seconds
    child.expect(rf"Your opponent may still come back: you can claim game {game_id} in 1 s\.")
    time.sleep(1.2)
    child.sendline("claim")
    child.expect(rf"Game over: {mine} \(guest-\w+\) wins: {theirs} left the game\. You won!")
    child.sendline("quit")
    child.expect(pexpect.EOF)


def test_a_move_the_server_did_not_store_is_sent_again(
        live_server_factory: Callable[..., LiveServer], scripted_player: Scripted) -> None:
    """SQLite's write lock held by another connection (for real) while the move is sent:
    the server refuses it as not_stored, the program says so and sends it again by itself
    once the wait is over; it is played when the lock is gone (issue 23.19)."""
    server = live_server_factory()
    child = spawn_play(server.url, "--guest", "--no-color")
    me = log_in_as_guest(child)
    opponent = scripted_player(server.url)
    opponent.guest()
    game_id, seat = start_game(child, opponent, me, "hadron size=5 10m+5s")
    ply = 0
    if seat == 1:
        opponent.move(game_id, 0, "a1")
        expect_move_shown(child, 0, "a1")
        ply = 1
    holder = sqlite3.connect(server.directory / "tessera.db", isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        child.sendline("c3")
        child.expect(r"The server could not store your move c3 \(its database is busy\); "
                     r"sending it again in 1 s\.")
        holder.execute("ROLLBACK")
        opponent.wait_for(p.Moved, game_id=game_id, ply=ply, move="c3")
        expect_move_shown(child, ply, "c3")
    finally:
        if holder.in_transaction:
            holder.execute("ROLLBACK")
        holder.close()
    child.sendline("quit")
    child.expect(pexpect.EOF)


def test_clocks_after_a_restart_are_the_servers(
        live_server_factory: Callable[..., LiveServer], scripted_player: Scripted) -> None:
    """The server's clocks do not run while it is down; the client's must not either, and
    after reconnecting it shows the server's readings (not its own count through the
    outage)."""
    server = live_server_factory()
    child = spawn_play(server.url, "--guest", "--no-color", "--retry-max", "0.5")
    me = log_in_as_guest(child)
    opponent = scripted_player(server.url)
    opponent.guest()
    game_id, seat = start_game(child, opponent, me, "hadron size=5 10m+0s")
    moves = ["a1", "e5"]
    for ply, move in enumerate(moves):
        if ply % 2 == seat:
            child.sendline(move)
            opponent.wait_for(p.Moved, game_id=game_id, ply=ply)
        else:
            opponent.move(game_id, ply, move)
        expect_move_shown(child, ply, move)
    server.stop()  # Red's clock stops with the server
    child.expect("Connection lost; reconnecting")
    time.sleep(6)
    server.start()
    child.expect(rf"Reconnected to {re.escape(server.url)}; resumed 1 game\(s\): {game_id}")
    child.sendline("clock")
    child.expect(rf"{game_id} \| >Red guest-\w+ (\d+):(\d\d) \|")
    minutes, seconds = int(child.match.group(1)), int(child.match.group(2))
    assert minutes * 60 + seconds >= 596, (minutes, seconds)  # not 6 s of outage less
    child.sendline("quit")
    child.expect(pexpect.EOF)


def test_a_declined_challenge_says_why(live_server: LiveServer, tmp_path: Path) -> None:
    bot = subprocess.Popen(
        [*tessera_command(), "bot", "--guest", "--bot", "random", "--server", live_server.url,
         "--games", "hadron", "--supervised"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, text=True)
    try:
        assert bot.stdout is not None
        ready = bot.stdout.readline()
        name = re.fullmatch(r"ready as (\S+)\n", ready)
        assert name, ready
        child = spawn_play(live_server.url, "--guest", "--no-color")
        log_in_as_guest(child)
        child.sendline(f"challenge {name[1]} xodd size=5")
        child.expect(r"Challenge #(\d+) sent")
        number = child.match.group(1)
        child.expect(rf"Challenge #{number} declined: xodd is not played \(plays hadron\)\.")
        child.sendline("quit")
        child.expect(pexpect.EOF)
    finally:
        bot.kill()
        bot.wait()


def test_who_may_challenge_you(live_server: LiveServer, scripted_player: Scripted) -> None:
    """``challenges`` shows the choice and makes it; the server then refuses a challenge
    the choice keeps out, and a new login is told it."""
    child = spawn_play(live_server.url, "--guest", "--no-color")
    me = log_in_as_guest(child)
    child.sendline("challenges")
    child.expect("Challenges: anyone may challenge you")
    child.sendline("challenges friends")
    child.expect(r"usage: challenges \[everyone\|registered\|nobody\]")
    child.sendline("challenges nobody")
    child.expect("Challenges: nobody may challenge you.")
    other = scripted_player(live_server.url)
    other.guest()
    with pytest.raises(ServerError, match="takes challenges from nobody"):
        other.call(p.Challenge, to=me, game="hadron", options={}, clock=p.PerMove(
            per_move_ms=30_000))
    child.sendline("challenges everyone")
    child.expect("Challenges: anyone may challenge you.")
    other.call(p.Challenge, to=me, game="hadron", options={}, clock=p.PerMove(
        per_move_ms=30_000))
    child.expect(rf"{other.name} challenges you")
    child.sendline("quit")
    child.expect(pexpect.EOF)


def test_you_are_told_when_another_game_waits_for_your_move(
        live_server: LiveServer, scripted_player: Scripted) -> None:
    child = spawn_play(live_server.url, "--guest", "--no-color")
    me = log_in_as_guest(child)
    opponent = scripted_player(live_server.url)
    opponent.guest()
    first, first_seat = start_game(child, opponent, me, "hadron size=3 unlimited")
    second, second_seat = start_game(child, opponent, me, "hadron size=4 unlimited")
    if second_seat == 1:  # make it the program's turn in the second game
        opponent.move(second, 0, "a1")
        expect_move_shown(child, 0, "a1")
    child.sendline(f"switch {first}")
    child.expect(rf"game {first}")
    if first_seat == 1:
        opponent.move(first, 0, "a1")
        expect_move_shown(child, 0, "a1")
    child.sendline("c3")  # the program's move in the first game ...
    expect_move_shown(child, first_seat, "c3")
    child.expect(rf"Your move is awaited in 1 other game\(s\): {second} "  # ... the other
                 rf"\('switch {second}'\)")
    child.sendline("quit")
    child.expect(pexpect.EOF)


def test_accounts_colours_and_mistakes(live_server: LiveServer, finished_games: Games) -> None:
    child = spawn_play(live_server.url)  # colours on: a colour terminal
    child.expect("Log in with")
    child.sendline("login x")  # refused before sending: the protocol's own validation
    child.expect(r"No account can be called .x.: a name has 2 to 20 characters")
    child.sendline("register alice_e2e")
    child.expect("password:")
    child.sendline("correct horse")
    child.expect("again:")
    child.sendline("correct horse")
    child.expect(r"Logged in as alice_e2e \(human\)")
    child.sendline("logout")
    child.expect("Logged out.")
    child.sendline("login alice_e2e")
    child.expect("password:")
    child.sendline("wrong password")
    child.expect(r"Refused \(invalid_credentials\)")
    child.sendline("login alice_e2e")
    child.expect("password:")
    child.sendline("correct horse")
    child.expect(r"Logged in as alice_e2e \(human\)")
    child.sendline("seek hexifact hex4 jumps=once-per-stone")
    child.expect("not a time control: 'hex4'")
    child.sendline("seek hexifact board=hex9")
    child.expect(r"option board='hex9' is not allowed")
    child.sendline("frobnicate")
    child.expect("Unknown command 'frobnicate'")
    game_id, state = finished_games["hadron"]
    child.sendline(f"replay {game_id}")
    child.expect(rf"position 0/{state.ply}")
    child.sendline("n")
    child.expect("\x1b\\[1;31mR\x1b\\[0m")  # Red's tile, in red
    child.sendline("q")
    child.sendline("quit")
    child.expect(pexpect.EOF)


def test_a_new_password_then_the_account_deleted(live_server: LiveServer,
                                                 scripted_player: Scripted) -> None:
    """``password`` changes it, and the account's other login ends at once;
    ``delete-account`` asks, then deletes it: the name no longer logs in."""
    child = spawn_play(live_server.url, "--no-color")
    child.expect("Log in with")
    child.sendline("register dana_e2e")
    for prompt in ("password:", "again:"):
        child.expect(prompt)
        child.sendline("correct horse")
    child.expect(r"Logged in as dana_e2e \(human\)")
    elsewhere = scripted_player(live_server.url)
    elsewhere.login(elsewhere.call(p.Login, username="dana_e2e", password="correct horse"))

    child.sendline("password")
    child.expect("current password:")
    child.sendline("correct horse")
    child.expect("new password:")
    child.sendline("battery staple")
    child.expect("again:")
    child.sendline("battery staple")
    child.expect("Password changed; your other logins have ended.")
    elsewhere.run(elsewhere.conn.closed.wait())  # closed by the server, at once
    assert elsewhere.conn.ws.close_reason == "token revoked"

    child.sendline("delete-account")
    child.expect(r"Delete the account dana_e2e\? \[y/N\]")
    child.sendline("n")
    child.expect("Not deleted.")
    child.sendline("delete-account")
    child.expect(r"\[y/N\]")
    child.sendline("y")
    child.expect("password:")
    child.sendline("correct horse")  # the old one
    child.expect(r"Refused \(invalid_credentials\): wrong password")
    child.sendline("delete-account")
    child.expect(r"\[y/N\]")
    child.sendline("y")
    child.expect("password:")
    child.sendline("battery staple")
    child.expect("The account dana_e2e is deleted; you are logged out.")
    child.sendline("password")
    child.expect("Log in first")
    other = scripted_player(live_server.url)
    with pytest.raises(ServerError, match="invalid_credentials"):
        other.call(p.Login, username="dana_e2e", password="battery staple")
    child.sendline("quit")
    child.expect(pexpect.EOF)


# -- playing the bundled bots from the client ---------------------------------------------------
def process_gone(pid: int, timeout: float = 10.0) -> bool:
    """Wait until process ``pid`` has ended (a zombie has ended too)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        stat = Path(f"/proc/{pid}/stat")
        try:
            if stat.parent.exists():
                if stat.read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return True
            else:
                os.kill(pid, 0)
        except (FileNotFoundError, ProcessLookupError):
            return True
        time.sleep(0.05)
    return False


def bot_pid(child: pexpect.spawn, bot: str) -> int:
    """The pid of the local bot named ``bot``, from the ``bot`` command's list."""
    child.sendline("bot")
    child.expect(rf"{bot}  random  pid (\d+)  ")
    return int(child.match.group(1))


def expect_bot_game(child: pexpect.spawn, game: str) -> tuple[str, int]:
    """The game against the local bot has started: its id and the program's seat."""
    colours = engine.get_game(game).players
    child.expect(rf"Game (\w+) started: you play ({'|'.join(colours)}) against guest-\w+ "
                 r"\(your local random bot\)")
    return child.match.group(1), colours.index(child.match.group(2))


def play_out(child: pexpect.spawn, game: str, options: dict[str, int | str], seat: int,
             seed: int, bot: str | None = None) -> tuple[engine.State, int | None]:
    """Play the game to its end with random legal moves; the program shows every move.

    The test keeps its own engine state from the moves the program prints (``last move:``)
    and types its moves only when that state says it is its turn. With ``bot``, the bot's
    pid is asked for on the first turn (while the bot waits, so nothing else is printed).
    """
    rng = random.Random(seed)
    state = engine.new_game(game, **options)
    pid = None
    while not state.is_over:
        mine = state.to_move == seat
        if mine and bot is not None and pid is None:
            pid = bot_pid(child, bot)
        if mine:
            move = str(rng.choice(state.legal_moves()))
            child.sendline(move)
            if move == "pass" and state.ending_if("pass") is not None:
                child.expect(r"passing now ends the game, and you (win|lose) \(both passed: "
                             r"[^\n]+\)\.")
                child.expect(r"Pass and end the game\? \[y/N\]")
                child.sendline("y")
        child.expect(rf"last move: {state.ply + 1}\. (\S+) \(\w+\)")
        shown = child.match.group(1)
        assert not mine or shown == move
        state = state.play(shown)
    outcome = "You won!" if state.winner == seat else "You lost."
    child.expect(rf"Game over: \w+ \(guest-\w+\) wins: (both passed: [^\n]+ wins|[^\n]+, "
                 rf"who passed last|\w+ has no legal placement)\. {outcome}")
    return state, pid


@pytest.mark.parametrize(("game", "options", "offer"), [
    ("xodd", {"size": 4}, "xodd size=4 5m+3s"),
    ("yodd", {"size": 3}, "yodd size=3 unlimited"),
    ("hadron", {"size": 3}, "hadron size=3 30s/move"),
    ("hexifact", {"board": "hex3-4", "jumps": "after-placing"}, "hex board=hex3-4 1m+1s"),
])
def test_a_full_game_against_a_bundled_bot(live_server: LiveServer, game: str,
                                          options: dict[str, int | str], offer: str) -> None:
    if game in ("xodd", "hexifact"):  # the one-shot start from the shell
        child = spawn_play(live_server.url, "--no-color", "--bot", "random", "--game",
                           *offer.split())
        log_in_as_guest(child)
    else:  # the bot command in a session
        child = spawn_play(live_server.url, "--guest", "--no-color")
        log_in_as_guest(child)
        child.sendline(f"bot random {offer}")
    child.expect(r"Your random bot is online as (guest-\w+); challenging it to ")
    bot = child.match.group(1)
    game_id, seat = expect_bot_game(child, game)
    state, pid = play_out(child, game, options, seat, seed=len(game),
                          bot=bot if game == "yodd" else None)
    child.sendline("history")
    child.expect(rf"{game_id} .* {state.ply} plies  (1-0|0-1) normal")
    child.sendline("bot")
    child.expect("No local bots")  # it stopped after its game
    if pid is not None:
        assert process_gone(pid)
    child.sendline("quit")
    child.expect("Bye.")
    child.expect(pexpect.EOF)


def test_local_bots_end_with_the_client(live_server: LiveServer) -> None:
    child = spawn_play(live_server.url, "--no-color")
    child.expect("Log in with")
    child.sendline("bot random hadron size=5")
    child.expect(r"Log in first")
    child.sendline("guest")
    log_in_as_guest(child)
    child.sendline("bot robot hadron")
    child.expect(r"No bundled bot 'robot': one of greedy, mcts, random")
    child.sendline("bot random hadron size=99")
    child.expect(r"size=99.* out of range")
    child.sendline("bot random hadron think=0")
    child.expect(r"think=0: seconds per move")

    # quitting in the middle of a game resigns it, and the bot process ends
    child.sendline("bot random hadron size=5 10m+0s color=red")
    child.expect(r"Your random bot is online as (guest-\w+)")
    bot = child.match.group(1)
    child.expect(r"you play Red against")
    pid = bot_pid(child, bot)
    child.sendline("c3")
    child.expect(r"last move: 2\. \w+ \(Blue\)")
    child.sendline("quit")
    child.expect(r"Resigned game \w+: your local bot stops with the client")
    child.expect(pexpect.EOF)
    assert process_gone(pid)

    # a client that is killed outright: the bot sees its standard input close and stops
    child = spawn_play(live_server.url, "--no-color", "--bot", "random", "--game", "yodd",
                       "size=2")
    child.expect(r"Your random bot is online as (guest-\w+)")
    pid = bot_pid(child, child.match.group(1))
    child.kill(signal.SIGKILL)
    child.expect(pexpect.EOF)
    assert process_gone(pid)


async def test_a_bot_that_does_not_start_is_explained() -> None:
    fails = [sys.executable, "-c", "import sys; sys.exit('cannot reach the server')"]
    with pytest.raises(LocalBotError, match="exited with status 1: cannot reach the server"):
        await LocalBot.start("random", fails)
    hangs = [sys.executable, "-c", "import time; print('starting', flush=True); time.sleep(60)"]
    with pytest.raises(LocalBotError, match=r"did not log in within 0\.5 s"):
        await LocalBot.start("random", hangs, timeout=0.5)
    with pytest.raises(LocalBotError, match="cannot run"):
        await LocalBot.start("random", ["/nonexistent/python"])


# -- the command language, without a server ----------------------------------------------------
def test_time_controls() -> None:
    def clock(text: str) -> p.TimeControl:
        return parse_offer(["hadron", text]).clock

    assert clock("5m+3s") == p.Fischer(base_ms=300_000, increment_ms=3_000)
    assert clock("1m30s+2s") == p.Fischer(base_ms=90_000, increment_ms=2_000)
    assert clock("30s/move") == p.PerMove(per_move_ms=30_000)
    assert clock("2m/move") == p.PerMove(per_move_ms=120_000)
    assert clock("3d/move") == p.Correspondence(days_per_move=3)
    assert clock("unlimited") == p.Unlimited()
    with pytest.raises(OfferError, match="out of range"):
        clock("0s+1s")
    with pytest.raises(OfferError, match="not a time control: 'fast'"):
        clock("fast")
    with pytest.raises(OfferError, match=r"write 5m\+3s \(minutes\+seconds\)"):
        clock("5+3")  # the old notation says what to write now


def test_offers() -> None:
    offer = parse_offer(["hex", "board=hex4", "1m+0s"])
    assert (offer.game, offer.options["board"], offer.clock) == (
        "hexifact", "hex4", p.Fischer(base_ms=60_000, increment_ms=0))
    assert parse_offer(["Hadron"]).options == {"size": 5}
    assert parse_offer(["xodd", "color=white"], allow_color=True).color == 1
    with pytest.raises(OfferError, match="could be"):
        parse_offer(["h"])
    with pytest.raises(OfferError, match="out of range"):
        parse_offer(["hadron", "size=99"])


def test_game_view_clocks_run_for_the_mover() -> None:
    now = [100.0]
    snap = p.Snapshot(game_id="g", game="hadron", options={"size": 3},
                      clock=p.Fischer(base_ms=60_000, increment_ms=0),
                      players=(p.User(name="ann", kind="human"), p.User(name="ben", kind="bot")),
                      status="playing", moves=(), clocks_ms=(60_000, 60_000), to_move=0, ply=0,
                      seq=1)
    view = GameView.from_snapshot(snap, "ben", now=lambda: now[0])
    assert view.me == 1 and not view.my_turn
    now[0] += 2.5
    assert view.clocks_now() == (57_500, 60_000)
    view.apply_moved(p.Moved(game_id="g", seq=2, ply=0, move="b2", by=0, ms_used=2500,
                             clocks_ms=(57_500, 60_000)))
    now[0] += 1
    assert view.clocks_now() == (57_500, 59_000) and view.my_turn
    assert "ann" in view.status_line() and "59.0" in view.status_line()
    assert "[R]" in view.panel()


def test_a_client_idle_before_logging_in_connects_again_when_a_command_needs_it(
        tmp_path: Path) -> None:
    """The server closes a connection that has not logged in within its deadline (4408,
    issue 16); the terminal client does not reconnect in a loop meanwhile, and the next
    command connects again."""
    server = LocalServer(tmp_path / "server", log_level="info",
                         extra_args=["--hello-timeout", "0.5", "--auth-timeout", "1"])
    server.start()
    try:
        child = spawn_play(server.url, "--no-color")
        child.expect("Log in with")
        deadline = time.monotonic() + 30
        while "not logged in within" not in server.log.read_text():
            assert time.monotonic() < deadline, server.log_tail()
            time.sleep(0.05)
        time.sleep(1.5)  # a reconnecting client would be closed again meanwhile
        child.sendline("guest")
        log_in_as_guest(child)
        assert "reconnecting" not in (child.before or "")
        assert server.log.read_text().count("not logged in within") == 1
        child.sendline("quit")
        child.expect(pexpect.EOF)
    finally:
        server.stop()


def test_a_pass_that_ends_the_game_is_confirmed_with_its_consequence(
        live_server: LiveServer, scripted_player: Scripted) -> None:
    """Hexifact after c3 d3 e3 pass: Black's only legal move is to pass, and it ends the
    game; the program says both (from the engine) and asks before passing."""
    child = spawn_play(live_server.url, "--guest", "--no-color")
    me = log_in_as_guest(child)
    opponent = scripted_player(live_server.url)
    opponent.guest()
    sent = opponent.call(p.Challenge, to=me, game="hexifact", options={},
                         clock=p.Unlimited(), color=1)
    assert isinstance(sent, p.ChallengeCreated)
    child.expect("challenges you to Hexifact")
    child.sendline("accept")
    started = opponent.wait_for(p.GameStarted)
    child.expect(rf"Game {started.game_id} started: you play Black")
    game_id = started.game_id
    for ply, move in enumerate(["c3", "d3", "e3", "pass"]):
        if ply % 2 == 0:
            child.sendline(move)
            opponent.wait_for(p.Moved, game_id=game_id, ply=ply)
        else:
            opponent.move(game_id, ply, move)
        expect_move_shown(child, ply, move)
    ending = ("both passed: Black 1 x 1 = 1, White 0 (one group); the higher score wins")
    child.expect(r"Your only legal move is to pass: type 'pass'\. Your opponent passed: "
                 rf"passing now ends the game, and you win \({re.escape(ending)}\)\.")
    child.sendline("pass")
    child.expect(rf"passing now ends the game, and you win \({re.escape(ending)}\)\.")
    child.expect(r"Pass and end the game\? \[y/N\]")
    child.sendline("n")
    child.expect("Not passed.")
    child.sendline("pass")
    child.expect(r"Pass and end the game\? \[y/N\]")
    child.sendline("y")
    over = opponent.wait_for(p.GameOver, game_id=game_id)
    assert over.ending == p.Ending(how="passes", scores=(1, 0), text=ending)
    child.expect(rf"Game over: Black \(guest-\w+\) wins: {re.escape(ending)}\. You won!")
    child.sendline("quit")


def test_the_lobby_a_page_at_a_time(live_server_factory: Callable[..., LiveServer],
                                    scripted_player: Scripted) -> None:
    """The server lists one seek and one player a page: 'seeks' shows the first and how
    many more, 'more' the next pages, to the end."""
    server = live_server_factory(30.0, "--lobby-page", "1")
    seekers = [scripted_player(server.url) for _ in range(3)]
    made = []
    for k, seeker in enumerate(seekers):
        seeker.guest()
        created = seeker.call(p.Seek, game="hadron", options={"size": 5},
                              clock=p.Fischer(base_ms=60_000 + 1000 * k, increment_ms=0))
        assert isinstance(created, p.SeekCreated)
        made.append(created.seek_id)
    child = spawn_play(server.url, "--guest", "--no-color")
    log_in_as_guest(child)
    child.sendline("seeks")
    child.expect(rf"#{made[0]}\s+{seekers[0].name}")
    child.expect(r"\.\.\. and 2 more seek\(s\) and 3 more player\(s\): 'more' lists the "
                 r"next page\.")
    for seek_id, seeker in zip(made[1:], seekers[1:], strict=True):
        child.sendline("more")
        child.expect(rf"#{seek_id}\s+{seeker.name}")
    child.sendline("more")
    child.expect(r"guests: guest-\w+\r\n")
    child.sendline("more")
    child.expect("Nothing more to list")
    child.sendline("quit")
    child.expect(pexpect.EOF)
