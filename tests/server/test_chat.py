"""Chat in a game: numbered like the game's other events, seen by everyone attached."""

from __future__ import annotations

import pytest

import protocol as p
from clients.connection import ServerError

from .conftest import Live, both_topologies
from .support import Clients, start_game

pytestmark = both_topologies


async def test_chat_reaches_players_and_spectators_in_sequence(clients: Clients) -> None:
    a, b, c = await clients.guest(), await clients.guest(), await clients.guest()
    game = await start_game(a, b, "hadron")
    spectator = await clients.spectator()
    await game.watch(spectator)
    await game.play("c3")

    await a.call(p.Chat, game_id=game.game_id, text="good luck!")
    said = p.ChatMessage(game_id=game.game_id, seq=3, from_=a.name, text="good luck!")
    assert not a.conn.events.empty()  # the sender's own line came before the ok
    await b.call(p.Chat, game_id=game.game_id, text="thanks, ü too ☺")
    answer = p.ChatMessage(game_id=game.game_id, seq=4, from_=b.name, text="thanks, ü too ☺")
    ack = await game.play("b2")
    assert ack.seq == 5  # chat lines take their place in the game's numbering

    for conn in (a.conn, b.conn, spectator):
        events = [await conn.next_event(5) for _ in range(4)]
        assert [type(e) for e in events] == [p.Moved, p.ChatMessage, p.ChatMessage, p.Moved]
        assert events[1:3] == [said, answer]

    error = await c.refused(p.Chat, game_id=game.game_id, text="hi")
    assert (error.code, error.game_id) == ("forbidden", game.game_id)
    with pytest.raises(ServerError) as info:  # spectators need no login, but to chat
        await spectator.call(p.Chat, game_id=game.game_id, text="hi")
    assert info.value.code == "unauthorized"
    assert (await a.refused(p.Chat, game_id="nosuchgame", text="hi")).code == "not_found"
    for who in (a, b):
        assert await who.drain(0.1) == []


async def test_chat_has_its_own_rate_limit(server: Live, clients: Clients) -> None:
    a, b = await clients.guest(), await clients.guest()
    game = await start_game(a, b, "hadron")
    burst = int(server.settings.chat_burst)
    for i in range(burst):
        await a.call(p.Chat, game_id=game.game_id, text=f"line {i}")
    error = await a.refused(p.Chat, game_id=game.game_id, text="one too many")
    assert error.code == "rate_limited"
    assert error.retry_after_ms is not None
    assert 0 < error.retry_after_ms <= 1000 / server.settings.chat_rate + 1

    lines = [e for e in await b.drain(0.2) if isinstance(e, p.ChatMessage)]
    assert [e.text for e in lines] == [f"line {i}" for i in range(burst)]
    assert [e.seq for e in lines] == list(range(2, 2 + burst))
    ack = await game.play("a1")  # moves are not rate limited by chat
    assert ack.seq == 2 + burst
