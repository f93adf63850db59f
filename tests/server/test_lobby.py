"""The lobby: who is online, seeks (paired automatically or accepted), and challenges."""

from __future__ import annotations

import asyncio
from typing import Any

import protocol as p

from .conftest import Live, Serve, both_topologies
from .support import FAST_CLOCK, Clients, Player

pytestmark = both_topologies

HADRON = {"size": 5}  # hadron's default options, complete


def queued(player: Player) -> list[Any]:
    """The events this connection has received and not yet read, without waiting."""
    events = []
    while not player.conn.events.empty():
        event = player.conn.events.get_nowait()
        assert event is not None, "connection closed"
        events.append(event)
    return events


async def test_lobby_snapshot_then_its_events(clients: Clients) -> None:
    watcher = await clients.guest()
    lobby = await watcher.call(p.LobbySubscribe)
    assert lobby == p.Lobby(id=lobby.id, seeks=(), players=(p.User(name=watcher.name,
                                                                    kind="guest"),))

    seeker = await clients.guest()
    assert await watcher.conn.next_event(5) == p.PlayerOnline(user=p.User(name=seeker.name,
                                                                           kind="guest"))
    created = await seeker.call(p.Seek, game="hadron", options={}, clock=FAST_CLOCK)
    seek = p.OpenSeek(seek_id=created.seek_id, user=p.User(name=seeker.name, kind="guest"),
                      game="hadron", options=HADRON, clock=FAST_CLOCK)
    assert await watcher.conn.next_event(5) == p.SeekAdded(seek=seek)

    again = await watcher.call(p.LobbySubscribe)  # a fresh snapshot shows the same
    assert again.seeks == (seek,)
    assert {u.name for u in again.players} == {watcher.name, seeker.name}

    await seeker.call(p.CancelSeek, seek_id=seek.seek_id)
    assert await watcher.conn.next_event(5) == p.SeekRemoved(seek_id=seek.seek_id)
    second = await seeker.call(p.Seek, game="hadron", options={}, clock=FAST_CLOCK)
    assert isinstance(await watcher.conn.next_event(5), p.SeekAdded)

    await seeker.close()  # the last connection takes its seeks along
    assert [await watcher.conn.next_event(5) for _ in range(2)] == [
        p.SeekRemoved(seek_id=second.seek_id), p.PlayerOffline(name=seeker.name)]

    await watcher.call(p.LobbyUnsubscribe)
    await clients.guest()
    assert await watcher.drain() == []


async def test_matching_seeks_pair_into_a_game(clients: Clients) -> None:
    watcher = await clients.guest()
    await watcher.call(p.LobbySubscribe)
    a, b = await clients.guest(), await clients.guest()
    await watcher.drain()

    first = await a.call(p.Seek, game="hadron", options={}, clock=FAST_CLOCK)
    other = await b.call(p.Seek, game="hadron", options={"size": 4}, clock=FAST_CLOCK)
    assert [e.seek.seek_id for e in await watcher.drain()] == [first.seek_id, other.seek_id]

    paired = await b.call(p.Seek, game="hadron", options={"size": 5}, clock=FAST_CLOCK)
    [started, taken] = queued(b)  # events before replies: the game had started already
    assert isinstance(started, p.GameStarted)
    assert taken == p.SeekTaken(seek_id=paired.seek_id, game_id=started.game_id)
    assert await a.wait_for(p.GameStarted) == started
    assert await a.wait_for(p.SeekTaken) == p.SeekTaken(seek_id=first.seek_id,
                                                         game_id=started.game_id)
    assert {u.name for u in started.snapshot.players} == {a.name, b.name}
    assert (started.snapshot.game, started.snapshot.options) == ("hadron", HADRON)
    assert await watcher.drain() == [p.SeekRemoved(seek_id=first.seek_id)]

    lobby = await watcher.call(p.LobbySubscribe)  # b's other seek is still open
    assert [s.seek_id for s in lobby.seeks] == [other.seek_id]
    assert queued(a) == []


async def test_accept_seek(clients: Clients) -> None:
    a, b, c = await clients.guest(), await clients.guest(), await clients.guest()
    seek = await a.call(p.Seek, game="xodd", options={"size": 5}, clock=FAST_CLOCK)

    assert (await a.refused(p.AcceptSeek, seek_id=seek.seek_id)).code == "conflict"
    assert (await b.refused(p.CancelSeek, seek_id=seek.seek_id)).code == "forbidden"
    assert (await b.refused(p.AcceptSeek, seek_id=seek.seek_id + 100)).code == "not_found"

    await b.call(p.AcceptSeek, seek_id=seek.seek_id)
    [started] = queued(b)
    assert isinstance(started, p.GameStarted) and started.seq == 1
    assert await a.wait_for(p.GameStarted) == started
    assert await a.wait_for(p.SeekTaken) == p.SeekTaken(seek_id=seek.seek_id,
                                                         game_id=started.game_id)
    assert {u.name for u in started.snapshot.players} == {a.name, b.name}
    assert started.snapshot.status == "waiting"

    assert (await c.refused(p.AcceptSeek, seek_id=seek.seek_id)).code == "not_found"
    assert (await a.refused(p.CancelSeek, seek_id=seek.seek_id)).code == "not_found"
    for player in (a, b, c):
        assert await player.drain(0.1) == []


async def test_open_seeks_are_limited(clients: Clients) -> None:
    a = await clients.guest()
    limit = a.conn.welcome.limits.max_open_seeks
    for size in range(3, 3 + limit):
        await a.call(p.Seek, game="hadron", options={"size": size}, clock=FAST_CLOCK)
    error = await a.refused(p.Seek, game="hadron", options={"size": 20}, clock=FAST_CLOCK)
    assert error.code == "conflict"
    lobby = await a.call(p.LobbySubscribe)
    assert len(lobby.seeks) == limit


async def test_challenge_declined_cancelled_and_accepted(clients: Clients) -> None:
    a, b, c = await clients.guest(), await clients.guest(), await clients.guest()
    offer: dict[str, Any] = {"game": "yodd", "options": {"size": 3}, "clock": FAST_CLOCK}

    first = await a.call(p.Challenge, to=b.name, **offer)
    received = await b.wait_for(p.ChallengeReceived)
    assert received == p.ChallengeReceived(
        challenge_id=first.challenge_id, from_=p.User(name=a.name, kind="guest"),
        game="yodd", options={"size": 3}, clock=FAST_CLOCK, color="random")
    assert (await c.refused(p.AcceptChallenge, challenge_id=first.challenge_id)).code == \
        "not_found"
    assert (await b.refused(p.CancelChallenge, challenge_id=first.challenge_id)).code == \
        "forbidden"
    await b.call(p.DeclineChallenge, challenge_id=first.challenge_id)
    declined = p.ChallengeEnded(challenge_id=first.challenge_id, reason="declined")
    assert queued(b) == [declined]
    assert await a.conn.next_event(5) == declined
    assert (await b.refused(p.AcceptChallenge, challenge_id=first.challenge_id)).code == \
        "not_found"

    second = await a.call(p.Challenge, to=b.name.upper(), **offer)  # names ignore case
    await b.wait_for(p.ChallengeReceived, challenge_id=second.challenge_id)
    await a.call(p.CancelChallenge, challenge_id=second.challenge_id)
    cancelled = p.ChallengeEnded(challenge_id=second.challenge_id, reason="cancelled")
    assert queued(a) == [cancelled]
    assert await b.conn.next_event(5) == cancelled

    third = await a.call(p.Challenge, to=b.name, color=1, **offer)
    await b.wait_for(p.ChallengeReceived, challenge_id=third.challenge_id)
    await b.call(p.AcceptChallenge, challenge_id=third.challenge_id)
    accepted = p.ChallengeEnded(challenge_id=third.challenge_id, reason="accepted")
    started, ended = queued(b)  # game_started, then challenge_ended, then the reply
    assert isinstance(started, p.GameStarted) and ended == accepted
    assert [await a.conn.next_event(5) for _ in range(2)] == [started, accepted]
    assert [u.name for u in started.snapshot.players] == [b.name, a.name]  # a took seat 1
    for player in (a, b, c):
        assert await player.drain(0.1) == []


async def test_challenge_refusals_and_departures(clients: Clients) -> None:
    a, b = await clients.guest(), await clients.guest()
    offer: dict[str, Any] = {"game": "hadron", "options": {}, "clock": FAST_CLOCK}
    assert (await a.refused(p.Challenge, to="nobody-here", **offer)).code == "not_found"
    assert (await a.refused(p.Challenge, to=a.name, **offer)).code == "bad_request"

    challenge = await a.call(p.Challenge, to=b.name, **offer)
    await b.wait_for(p.ChallengeReceived)
    await a.close()  # the challenger's last connection closes: the challenge goes too
    ended = await b.conn.next_event(5)
    assert ended == p.ChallengeEnded(challenge_id=challenge.challenge_id, reason="cancelled")
    assert (await b.refused(p.AcceptChallenge, challenge_id=challenge.challenge_id)).code == \
        "not_found"
    await asyncio.sleep(0)
    assert await b.drain(0.1) == []


# -- pages, packed once per change --------------------------------------------------------------
def packed(live: Live, what: str) -> float:
    """Snapshots of ``what`` packed so far, over every node (/metrics)."""
    return sum(node.app.metrics.registry.get_sample_value(
        "tessera_snapshots_packed_total", {"what": what}) or 0.0 for node in live.nodes)


def clock_of(k: int) -> p.Fischer:
    """A clock of its own: seeks with different ones never pair."""
    return p.Fischer(base_ms=600_000 + 1000 * k, increment_ms=0)


async def test_the_lobby_comes_in_pages(serve: Serve) -> None:
    async with serve(lobby_page=2) as live:
        seekers = [await live.clients.guest() for _ in range(5)]
        created = [await s.call(p.Seek, game="hadron", options={}, clock=clock_of(k))
                   for k, s in enumerate(seekers)]
        looker = await live.clients.guest()
        first = await looker.call(p.LobbySubscribe)
        assert [s.seek_id for s in first.seeks] == [c.seek_id for c in created[:2]]
        assert (len(first.players), first.more_seeks, first.more_players) == (2, 3, 4)
        # pages go on where the last one stopped, whatever opens meanwhile
        late = await seekers[0].call(p.Seek, game="hadron", options={}, clock=clock_of(9))
        seeks, players, cursor, pages = list(first.seeks), list(first.players), \
            first.next_cursor, 1
        while cursor is not None:
            page = await looker.call(p.LobbyPage, cursor=cursor)
            assert isinstance(page, p.Lobby) and len(page.seeks) <= 2 >= len(page.players)
            seeks += page.seeks
            players += page.players
            cursor, pages = page.next_cursor, pages + 1
        assert [s.seek_id for s in seeks] == [c.seek_id for c in (*created, late)]
        names = [u.name for u in players]
        assert sorted(names) == sorted([s.name for s in seekers] + [looker.name])
        assert pages == 3
        refused = await looker.refused(p.LobbyPage, cursor="not-a-cursor")
        assert refused.code == "bad_request" and "cursor" in str(refused)


async def test_a_lobby_page_is_packed_once_per_change(serve: Serve) -> None:
    async with serve() as live:
        watchers = [await live.clients.guest() for _ in range(2 * len(live.nodes))]
        for watcher in watchers:
            await watcher.call(p.LobbySubscribe)
        for watcher in watchers:
            await watcher.drain()  # every player_online heard on every node
        mark = packed(live, "lobby")
        for _ in range(3):  # nothing changed: the same bytes, nothing packed
            for watcher in watchers:
                assert len((await watcher.call(p.LobbySubscribe)).players) == len(watchers)
        assert packed(live, "lobby") == mark
        created = await watchers[0].call(p.Seek, game="hadron", options={}, clock=clock_of(1))
        for watcher in watchers:
            await watcher.wait_for(p.SeekAdded)
        mark = packed(live, "lobby")
        for _ in range(3):
            for watcher in watchers:
                lobby = await watcher.call(p.LobbySubscribe)
                assert [s.seek_id for s in lobby.seeks] == [created.seek_id]
        assert 1 <= packed(live, "lobby") - mark <= len(live.nodes)  # once per node asked
