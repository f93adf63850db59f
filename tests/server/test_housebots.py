"""House bots: bundled bots the server runs in processes of its own, as bot accounts it
makes, supervised (started again when they die) and stopped with the server."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import time

import pytest

import engine
import protocol as p
from clients.bots.random_bot import RandomBot
from clients.connection import ServerError
from clients.sdk import BotRunner, Policy
from server.housebots import HouseBot, local_url

from .conftest import Live, Serve
from .support import TIMEOUT, Player

READY_S = 60.0  # a bot process starts Python, imports the clients and logs in


async def ready(bot: HouseBot) -> None:
    await asyncio.wait_for(bot.ready.wait(), READY_S)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def play_against(me: Player, bot_name: str) -> p.GameOver:
    """Challenge the bot to a small Hadron game, play random moves, return its end."""
    await me.call(p.Challenge, to=bot_name, game="hadron", options={"size": 3},
                  clock=p.Unlimited(), color=0)
    started = await me.wait_for(p.GameStarted)
    game_id = started.game_id
    assert [u.name for u in started.snapshot.players] == [me.name, bot_name]
    assert started.snapshot.players[1].kind == "bot"
    state = engine.new_game("hadron", size=3)
    rng = random.Random(3)
    await me.call(p.Move, game_id=game_id, ply=0, move=str(state.random_move(rng)))
    while True:
        event = await me.conn.next_event(TIMEOUT)
        if isinstance(event, p.GameOver):
            return event
        if isinstance(event, p.Moved):
            state = state.play(event.move)
            if state.to_move == 0 and not state.is_over:
                await me.call(p.Move, game_id=game_id, ply=state.ply,
                              move=str(state.random_move(rng)))


async def test_a_house_bot_plays_is_restarted_and_stops_with_the_server(serve: Serve) -> None:
    async with serve(house_bots=["random"]) as live:
        [bot] = live.running.house.bots
        assert bot.name == "random-bot"
        await ready(bot)
        me = await live.clients.guest()
        lobby = await me.call(p.LobbySubscribe)
        assert p.User(name="random-bot", kind="bot") in lobby.players
        over = await play_against(me, bot.name)
        assert over.reason == "normal"

        assert bot.proc is not None
        first = bot.proc.pid
        os.kill(first, signal.SIGKILL)
        await me.wait_for(p.PlayerOffline, name=bot.name)
        online = await me.wait_for(p.PlayerOnline)  # started again, logged in again
        assert online.user == p.User(name=bot.name, kind="bot")
        assert bot.starts == 2 and bot.proc.pid != first and not alive(first)
        assert (await play_against(me, bot.name)).reason == "normal"
        second = bot.proc.pid
    assert not alive(second)
    assert bot.proc.returncode is not None


async def test_every_start_makes_a_new_token_and_revokes_the_last(serve: Serve) -> None:
    async with serve(house_bots=["random"]) as live:
        [bot] = live.running.house.bots
        first_token = bot.token
        await ready(bot)
    async with serve(house_bots=["random"]) as live:
        [bot] = live.running.house.bots
        assert bot.token != first_token
        await ready(bot)  # the new token works
        conn = await live.clients.connect()
        with pytest.raises(ServerError) as refused:
            await asyncio.wait_for(conn.call(p.AuthToken, token=first_token), TIMEOUT)
        assert refused.value.code == "invalid_credentials"


async def test_a_person_named_like_a_house_bot_is_left_alone(serve: Serve) -> None:
    async with serve() as live:
        person = await live.clients.register("greedy-bot", "correct horse")
        assert person.kind == "human"
        await person.close()
    async with serve(house_bots=["greedy", "random"]) as live:
        assert [b.name for b in live.running.house.bots] == ["random-bot"]
        login = await live.clients.connect()
        authed = await asyncio.wait_for(
            login.call(p.Login, username="greedy-bot", password="correct horse"), TIMEOUT)
        assert isinstance(authed, p.Authed) and authed.user.kind == "human"


async def test_a_bot_that_refuses_its_options_is_not_restarted(serve: Serve) -> None:
    async with serve(house_bots=["nosuchbot"]) as live:
        [bot] = live.running.house.bots
        deadline = time.monotonic() + READY_S
        while (bot.proc is None or bot.proc.returncode is None) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert bot.proc is not None and bot.proc.returncode == 2
        assert any("nosuchbot" in line for line in bot.last_lines), bot.last_lines
        await asyncio.sleep(1.5)  # longer than the first pause before a restart
        assert bot.starts == 1


def test_bots_reach_the_server_on_this_machine() -> None:
    assert local_url("0.0.0.0", 8765) == "ws://127.0.0.1:8765/ws"
    assert local_url("::", 8765) == "ws://127.0.0.1:8765/ws"
    assert local_url("::1", 9) == "ws://[::1]:9/ws"
    assert local_url("10.1.2.3", 80) == "ws://10.1.2.3:80/ws"


async def test_the_bots_token_is_not_on_its_command_line(serve: Serve) -> None:
    async with serve(house_bots=["random"]) as live:
        [bot] = live.running.house.bots
        await ready(bot)
        assert bot.proc is not None
        with open(f"/proc/{bot.proc.pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
        assert bot.token.encode() not in argv
        assert os.environ.get("TESSERA_BOT_TOKEN") != bot.token  # the server's own is unset


async def test_a_house_bot_accepts_a_rematch(serve: Serve) -> None:
    """As lichess's bots do: the rematch a player offers a house bot starts at once,
    colours swapped."""
    async with serve(house_bots=["random"]) as live:
        [bot] = live.running.house.bots
        await ready(bot)
        me = await live.clients.guest()
        over = await play_against(me, bot.name)
        await me.call(p.OfferRematch, game_id=over.game_id)
        again = await me.wait_for(p.GameStarted)  # game_started, then rematch_ended
        ended = await me.wait_for(p.RematchEnded, game_id=over.game_id)
        assert (ended.reason, ended.new_game_id) == ("accepted", again.game_id)
        assert [u.name for u in again.snapshot.players] == [bot.name, me.name]


async def test_a_bot_that_declines_a_rematch_says_why(server: Live) -> None:
    """An SDK bot run without --rematch declines, and its reason reaches the player."""
    store = server.running.app.store
    user = await store.create_user("no-rematch", "bot")
    token, _ = await store.create_token(user.id, "bot", "test")
    runner = BotRunner(RandomBot(seed=3), url=server.url, token=token, backoff_s=(0.1, 0.5),
                       policy=Policy())
    task = asyncio.create_task(runner.run())
    try:
        await asyncio.wait_for(runner.ready.wait(), 15)
        me = await server.clients.guest()
        await me.call(p.Challenge, to="no-rematch", game="hadron", options={},
                      clock=p.Unlimited(), color=0)
        started = await me.wait_for(p.GameStarted)
        await me.call(p.Resign, game_id=started.game_id)
        await me.wait_for(p.GameOver, game_id=started.game_id)
        await me.call(p.OfferRematch, game_id=started.game_id)
        ended = await me.wait_for(p.RematchEnded, game_id=started.game_id)
        assert ended.reason == "declined"
        assert ended.message == "this bot does not play rematches (it runs without --rematch)"
    finally:
        runner.stop(resign=True)
        await asyncio.wait_for(task, 30)
