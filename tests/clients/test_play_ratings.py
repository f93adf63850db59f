"""``tessera play`` and ratings, in a pseudo-terminal against a real server: a rated seek,
the rating changes at the end, a rematch, the leaderboard, a profile with its chart."""

from __future__ import annotations

import re
from collections.abc import Callable

import pexpect

import protocol as p
from tests.clients.conftest import LiveServer, ScriptedPlayer, spawn_tessera

Scripted = Callable[[str], ScriptedPlayer]


def test_rated_game_rematch_leaderboard_and_profile(live_server: LiveServer,
                                                    scripted_player: Scripted) -> None:
    child = spawn_tessera("play", "--server", live_server.url, "--no-color",
                          "--register", "rater_tty")
    child.expect("password:")
    child.sendline("correct horse")
    child.expect("again:")
    child.sendline("correct horse")
    child.expect(r"Logged in as rater_tty \(human\)")
    other = scripted_player(live_server.url)
    other.login(other.call(p.Register, username="rater_bob", password="battery staple"))

    child.sendline("seek hadron size=3 5m+3s rated 1200-1800")
    child.expect(r"Seek #(\d+) is open: .* rated\.")
    seek_id = int(child.match.group(1))
    other.call(p.AcceptSeek, seek_id=seek_id)
    started = other.wait_for(p.GameStarted)
    assert started.snapshot.rated is True
    child.expect(rf"Game {started.game_id} started")
    child.sendline("resign")
    child.expect(r"Resign game .*\[y/N\]")
    child.sendline("y")
    child.expect(r"Ratings: (\S+) 1500 -> (\d+) \(([+-]\d+)\), (\S+) 1500 -> (\d+)")
    shown = {child.match.group(1): int(child.match.group(2)),
             child.match.group(4): int(child.match.group(5))}
    assert shown["rater_tty"] < 1500 < shown["rater_bob"]
    # why no leaderboard lists it yet, and for how long
    child.expect(r"Your hadron rating \((\d+)\?\) is provisional until its deviation, (\d+) "
                 r"now, is 110 or less: about (\d+) more rated games against opponents like "
                 r"this one\. The leaderboard lists established ratings only\.")
    assert int(child.match.group(1)) == shown["rater_tty"]
    assert 110 < int(child.match.group(2)) < 350 and int(child.match.group(3)) > 1

    # a rematch: offered here, accepted by the other player, colours swapped
    child.sendline("rematch")
    offered = other.wait_for(p.RematchOffered, game_id=started.game_id)
    other.call(p.AcceptRematch, game_id=offered.game_id)
    again = other.wait_for(p.GameStarted)
    assert [u.name for u in again.snapshot.players] == [
        u.name for u in reversed(started.snapshot.players)]
    child.expect(rf"Game {again.game_id} started")
    # the players carry their ratings, provisional: shown with ?
    child.expect(rf"rater_tty \({shown['rater_tty']}\?\)")

    child.sendline("leaderboard hadron")
    child.expect(r"No established hadron ratings yet\. A rating is provisional \(shown with "
                 r"\?\) until its deviation is 110 or less, after about 10 rated games")
    child.sendline("profile rater_bob")
    child.expect(rf"hadron +{shown['rater_bob']}\? +deviation \d+ +1 games: 1 won, 0 lost")
    child.expect(re.escape(started.game_id) + r" +hadron .* rated")
    child.sendline("quit")
    child.expect(pexpect.EOF)


def test_labels_and_the_rating_chart() -> None:
    from clients import render

    rating = p.PoolRating(game="xodd", rating=1612, deviation=74, provisional=False)
    assert render.user_label(p.User(name="alice", kind="human", rating=rating)) == "alice (1612)"
    provisional = p.PoolRating(game="xodd", rating=1431, deviation=190, provisional=True)
    bot = p.User(name="mcts", kind="bot", ratings=(provisional,))
    assert render.user_label(bot, "xodd") == "mcts [bot] (1431?)"
    assert render.user_label(bot, "hadron") == "mcts [bot]"
    chart = render.rating_chart([1500, 1400, 1600], height=2)
    assert chart[0].endswith(" 1600")
    assert len(chart) == 2 and chart[-1].endswith(" 1400")
    columns = [row[:3] for row in chart]  # the highest point fills both rows
    assert columns[0][2] == columns[1][2] == "\u2588"
    assert columns[0][1] == " " and columns[1][1] == "\u2581"  # the lowest: a sliver
