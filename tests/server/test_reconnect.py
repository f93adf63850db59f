"""A player drops mid-game, logs in again with the session token and resumes."""

from __future__ import annotations

import random

import protocol as p

from .conftest import GRACE_MS, Serve, both_topologies
from .support import Clients, start_game

pytestmark = both_topologies


async def test_reconnect_and_resume_the_missed_events(clients: Clients) -> None:
    a, b = await clients.guest(), await clients.guest()
    game = await start_game(a, b, "hadron")
    spectator = await clients.spectator()
    await game.watch(spectator)
    await game.play("a1")
    await game.play("e5")
    seen_by_b = await b.drain(0.1)
    last_seq = seen_by_b[-1].seq
    assert last_seq == 3
    await a.drain(0.05)
    await spectator.call(p.Ping)

    await b.close()  # the connection drops
    left = await a.conn.next_event(5)
    assert left == p.OpponentLeft(game_id=game.game_id, seq=4, player=1,
                                  claim_after_ms=GRACE_MS)
    moved = await game.play("c3")  # a plays on while b is away
    assert moved.seq == 5

    conn = await clients.connect()
    authed = await conn.call(p.AuthToken, token=b.token)
    assert authed.user == p.User(name=b.name, kind="guest")
    assert authed.active_games == (game.game_id,)
    reply = await conn.call(p.Resume, game_id=game.game_id, since_seq=last_seq)
    assert reply == p.Ok(id=reply.id)
    missed = [conn.events.get_nowait() for _ in range(conn.events.qsize())]
    assert [type(e) for e in missed] == [p.OpponentLeft, p.Moved, p.OpponentBack]
    assert [e.seq for e in missed] == [4, 5, 6]
    assert missed[0] == left
    assert (missed[1].ply, missed[1].move, missed[1].by) == (2, "c3", 0)
    back = p.OpponentBack(game_id=game.game_id, seq=6, player=1)
    assert missed[2] == back

    a_events = await a.drain(0.1)
    assert [type(e) for e in a_events] == [p.Moved, p.OpponentBack]
    assert a_events[-1] == back
    watched = [await spectator.next_event(5) for _ in range(5)]
    assert [type(e) for e in watched] == [p.Moved, p.Moved, p.OpponentLeft, p.Moved,
                                          p.OpponentBack]

    # b's new connection plays on, and the game finishes
    game.players = (a, b.__class__(conn, b.name, b.kind, b.token, b.url, authed))
    rng = random.Random(5)
    while not game.state.is_over:
        await game.play(rng=rng)
    record = await game.record()
    assert record.status == "over"
    assert [m.move for m in record.moves] == list(game.state.moves)
    assert [m.move for m in record.moves][:3] == ["a1", "e5", "c3"]


async def test_resume_answers_with_a_snapshot_when_it_cannot_replay(serve: Serve) -> None:
    async with serve(event_log_limit=4) as live:
        clients = live.clients
        a, b = await clients.guest(), await clients.guest()
        game = await start_game(a, b, "hadron")
        rng = random.Random(11)
        for _ in range(6):
            await game.play_quiet_move(rng)
        last = game.started.seq + 6

        for since in (0, 1, last + 5):  # nothing kept that far back; zero; the future
            reply = await a.call(p.Resume, game_id=game.game_id, since_seq=since)
            assert isinstance(reply, p.GameState), since
            assert reply.game.seq == last and reply.game.ply == 6
            assert [m.move for m in reply.game.moves] == list(game.state.moves)
        reply = await a.call(p.Resume, game_id=game.game_id, since_seq=last - 2)
        assert reply == p.Ok(id=reply.id)
        await a.drain(0.1)
        reply = await a.call(p.Resume, game_id=game.game_id, since_seq=last)
        assert reply == p.Ok(id=reply.id)
        assert await a.drain(0.1) == []

        error = await a.refused(p.Resume, game_id="nosuchgame", since_seq=0)
        assert error.code == "not_found"


async def test_after_login_nothing_is_attached_until_resume(clients: Clients) -> None:
    a, b = await clients.guest(), await clients.guest()
    game = await start_game(a, b, "hadron")
    await game.play("a1")
    await game.play("e5")
    await b.close()
    await a.wait_for(p.OpponentLeft)

    conn = await clients.connect()
    await conn.call(p.AuthToken, token=b.token)
    await game.play("c3")  # b's new connection is not attached yet: it hears nothing
    await a.drain(0.1)
    assert conn.events.empty()
    await conn.call(p.Resume, game_id=game.game_id, since_seq=3)
    assert [type(e) for e in [conn.events.get_nowait() for _ in range(3)]] == [
        p.OpponentLeft, p.Moved, p.OpponentBack]
    assert conn.events.empty()


async def test_a_player_leaves_with_their_last_connection(clients: Clients) -> None:
    a, b = await clients.guest(), await clients.guest()
    game = await start_game(a, b, "hadron")
    await game.play("a1")
    await game.play("e5")
    await a.drain(0.05)

    second = await clients.with_token(b.token)  # b on two connections
    reply = await second.call(p.Resume, game_id=game.game_id, since_seq=3)
    assert reply == p.Ok(id=reply.id)
    await b.close()
    assert await a.drain(0.2) == []  # b is still there
    await game.play("c3")
    assert [type(e) for e in await second.drain(0.1)] == [p.Moved]
    await a.drain(0.05)

    await second.close()
    left = await a.conn.next_event(5)
    assert left == p.OpponentLeft(game_id=game.game_id, seq=5, player=1,
                                  claim_after_ms=GRACE_MS)

    await a.call(p.Logout)  # a's games go on without a: b hears a left
    third = await clients.with_token(b.token)
    await third.call(p.Resume, game_id=game.game_id, since_seq=4)
    events = await third.drain(0.2)
    assert events == [left,
                      p.OpponentLeft(game_id=game.game_id, seq=6, player=0,
                                     claim_after_ms=GRACE_MS),
                      p.OpponentBack(game_id=game.game_id, seq=7, player=1)]
    error = await third.refused(p.ClaimWin, game_id=game.game_id)
    assert error.code == "conflict"  # a left only now: the grace period runs
    assert a.conn.events.empty()  # a logged out: no longer attached


async def test_seqs_never_repeat_after_a_restart(serve: Serve) -> None:
    """Presence events are not stored as rows, but their numbers are (PROTOCOL.md 12)."""
    async with serve() as live:
        a, b = await live.clients.guest(), await live.clients.guest()
        game = await start_game(a, b, "hadron")
        await game.play("a1")
        await game.play("e5")
        await b.close()
        left = await a.wait_for(p.OpponentLeft)
    async with serve() as live:
        a = await live.clients.with_token(a.token)
        await a.call(p.Resume, game_id=game.game_id, since_seq=left.seq)
        game.players = (a, game.players[1])
        ack = await game.play("c3")
        assert ack.seq > left.seq
