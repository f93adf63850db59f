"""The terminal client speaks in words people use: the password rule before the password,
ranges in the notation people type, and a scripted session that fails says so in its exit
status (issue 23)."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable

import pexpect
import pytest

import protocol as p
from clients.play.commands import UsageError
from clients.play.games import Games
from tests.clients.conftest import LiveServer, ScriptedPlayer, spawn_tessera, tessera_command


def test_register_gives_the_password_rule_before_asking(live_server: LiveServer) -> None:
    child = spawn_tessera("play", "--server", live_server.url)
    child.expect("Log in with")
    child.sendline("register words_short")
    child.expect(r"A password has 8 to 128 characters\.\r\n.*password:")
    child.sendline("abc")
    child.expect("again:")
    child.sendline("abc")
    child.expect(re.escape("That one has 3 characters (a password has 8 to 128 characters); "
                           "nothing done."))
    child.sendline("seek hadron 0s/move")
    child.expect(re.escape("time control '0s/move' is out of range: a move has 1s to 24h "
                           "(1s/move to 24h/move)"))
    child.sendline("quit")
    child.expect(pexpect.EOF)


def _script(live_server: LiveServer, *args: str, lines: str, password: str | None = None
            ) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TESSERA_PASSWORD"}
    if password is not None:
        env["TESSERA_PASSWORD"] = password
    return subprocess.run([*tessera_command(), "play", "--server", live_server.url, *args],
                          input=lines, capture_output=True, text=True, timeout=60, env=env)


def test_a_script_whose_login_is_refused_stops_and_fails(live_server: LiveServer) -> None:
    refused = _script(live_server, "--login", "words_nobody", password="not the password",
                      lines="seeks\nquit\n")
    assert refused.returncode == 1, refused.stdout
    assert "Refused (invalid_credentials)" in refused.stdout
    assert "Not logged in; stopping." in refused.stdout
    assert "Log in first" not in refused.stdout  # the script's lines were not run
    later = _script(live_server, lines="login words_nobody\nquit\n", password="not it either")
    assert later.returncode == 1, later.stdout  # a login line of the script, refused
    fine = _script(live_server, "--guest", lines="seeks\nquit\n")
    assert fine.returncode == 0, fine.stdout


def test_moves_are_grouped_and_game_ids_take_a_unique_prefix(
        live_server: LiveServer, scripted_player: Callable[[str], ScriptedPlayer]) -> None:
    child = spawn_tessera("play", "--server", live_server.url, "--no-color", "--guest")
    child.expect(r"Logged in as (guest-\w+) \(guest\)")
    opponent = scripted_player(live_server.url)
    opponent.guest()
    child.sendline("seek hadron size=3 5m+3s")
    child.expect(r"Seek #(\d+) is open")
    opponent.call(p.AcceptSeek, seek_id=int(child.match.group(1)))
    started = opponent.wait_for(p.GameStarted)
    game_id = started.game_id
    child.expect(rf"Game {game_id} started")
    child.sendline(f"moves {game_id[:3]}")  # a prefix of the id names the game
    child.expect(r"9 legal moves for (Red|Blue):\r\n  9 one-cell moves:\r\n"
                 r"    a1 b1 c1 a2 b2 c2 a3 b3 c3\r\n")
    child.sendline("quit")
    child.expect(pexpect.EOF)


def test_an_ambiguous_game_id_prefix_is_refused_naming_the_games() -> None:
    games = Games(None, None, print, lambda: None)  # type: ignore[arg-type]
    games.listed.update({"abc123", "abd456", "xyz789"})
    assert games.game_id("x") == "xyz789"
    assert games.game_id("abc") == "abc123"
    assert games.game_id("nope") == "nope"  # the server may know it
    with pytest.raises(UsageError, match=r"'ab' could be 2 games \(abc123 abd456\); type more"):
        games.game_id("ab")
