"""Changing one's password and deleting one's account, end to end on real servers: on one
process and on a cluster (the account's connections spread over its nodes).

The servers here poll for revoked tokens only every ten minutes (``SLOW_POLL``): a
connection that closes within the test's timeouts was closed by the revocation the request
announced, on whichever node it was, not by the poll that backs it up.
"""

from __future__ import annotations

import asyncio
import random
import re
from datetime import UTC, datetime

import pytest
from sqlalchemy import insert

import protocol as p
from clients.connection import Connection, ServerError
from server.storage.models import RatingRow

from .conftest import Serve, both_topologies
from .test_ratings import play_out, rated_game, run_verify
from .test_security import closed_with

PASSWORD = "correct horse battery"
NEW_PASSWORD = "battery staple horse"
SLOW_POLL = 600.0
REVOKED = (p.CLOSE_POLICY_VIOLATION, "token revoked")
ANONYMOUS = re.compile(r"deleted-[0-9a-f]{8}")


async def refused(conn: Connection, kind: type, **fields: object) -> ServerError:
    with pytest.raises(ServerError) as info:
        await conn.call(kind, **fields)
    return info.value


@both_topologies
async def test_a_new_password_ends_every_other_login_at_once(serve: Serve) -> None:
    async with serve(revocation_poll_s=SLOW_POLL) as live:
        clients = live.clients
        alice = await clients.register("alice", PASSWORD)
        elsewhere = [await clients.login("alice", PASSWORD) for _ in range(2)]
        same_token = await clients.with_token(alice.token)  # another tab of one browser
        bob = await clients.register("bob", PASSWORD)

        assert isinstance(await alice.call(p.ChangePassword, old_password=PASSWORD,
                                           new_password=NEW_PASSWORD), p.Ok)
        for player in elsewhere:
            assert await closed_with(player.conn) == REVOKED
        # this connection, and those on its token, stay logged in; other accounts too
        for player in (alice, same_token, bob):
            assert isinstance(await player.call(p.SetChallengePolicy, policy="everyone"), p.Ok)
        assert (await refused(await clients.connect(), p.Login, username="alice",
                              password=PASSWORD)).code == "invalid_credentials"
        await clients.login("alice", NEW_PASSWORD)
        for player in elsewhere:  # their tokens are revoked, not just their connections
            error = await refused(await clients.connect(), p.AuthToken, token=player.token)
            assert error.code == "invalid_credentials"


@both_topologies
async def test_the_old_password_is_checked_as_a_login_checks_it(serve: Serve) -> None:
    """A wrong old password counts toward the lock of the account from the address, as a
    wrong login does: neither request is a way around the other's lock."""
    async with serve() as live:
        clients = live.clients
        carol = await clients.register("carol", PASSWORD)
        for _ in range(live.settings.login_lockout_after):
            error = await carol.refused(p.ChangePassword, old_password="not my password",
                                        new_password=NEW_PASSWORD)
            assert (error.code, error.message) == ("invalid_credentials", "wrong password")
        for request, fields in ((p.ChangePassword, {"old_password": PASSWORD,
                                                    "new_password": NEW_PASSWORD}),
                                (p.DeleteAccount, {"password": PASSWORD})):
            error = await carol.refused(request, **fields)  # locked: even the right one
            assert error.code == "locked_out" and error.retry_after_ms
        error = await refused(await clients.connect(), p.Login, username="carol",
                              password=PASSWORD)
        assert error.code == "locked_out"  # the login shares the lock

        guest = await clients.guest()
        for request, fields in ((p.ChangePassword, {"old_password": "whatever",
                                                    "new_password": NEW_PASSWORD}),
                                (p.DeleteAccount, {"password": "whatever"})):
            error = await guest.refused(request, **fields)
            assert error.code == "forbidden" and "guest has no password" in error.message
        bot = await live.running.app.store.create_user("robo", "bot")
        token, _ = await live.running.app.store.create_token(bot.id, "bot")
        robo = await clients.with_token(token)
        assert (await robo.refused(p.DeleteAccount, password="whatever")).code == "forbidden"


@both_topologies
async def test_a_deleted_account_is_gone_and_its_games_stay_anonymous(serve: Serve) -> None:
    async with serve(revocation_poll_s=SLOW_POLL) as live:
        clients, store = live.clients, live.running.app.store
        dora = await clients.register("Dora", PASSWORD)
        eli = await clients.register("eli", PASSWORD)
        other = await clients.login("dora", PASSWORD)
        game = await rated_game(dora, eli)
        await dora.call(p.Chat, game_id=game.game_id, text="good luck")

        error = await dora.refused(p.DeleteAccount, password=PASSWORD)
        assert (error.code, error.game_id) == ("conflict", game.game_id)
        assert error.message.startswith(f"you are playing game {game.game_id}")
        await play_out(game, random.Random(3))
        error = await dora.refused(p.DeleteAccount, password="not my password")
        assert error.code == "invalid_credentials"
        assert not other.conn.closed.is_set()  # nothing happened

        assert isinstance(await dora.call(p.DeleteAccount, password=PASSWORD), p.Ok)
        assert await closed_with(other.conn) == REVOKED
        # this connection is greeted again: no login, but it may log in or watch
        assert (await dora.refused(p.Seek, game="hadron", options={},
                                   clock=p.Unlimited())).code == "unauthorized"
        for token in (dora.token, other.token):
            error = await refused(await clients.connect(), p.AuthToken, token=token)
            assert error.code == "invalid_credentials"
        error = await refused(await clients.connect(), p.Login, username="Dora",
                              password=PASSWORD)
        assert (error.code, error.message) == ("invalid_credentials",
                                               "wrong username or password")

        record = await game.record(eli)
        anonymous = record.players[0].name
        assert ANONYMOUS.fullmatch(anonymous) and record.players[1].name == "eli"
        assert record.rating_changes is not None  # the record is whole
        stored = await store.get_game(game.game_id)
        assert stored is not None and [line.user_name for line in stored.chat] == [anonymous]
        listed = await eli.call(p.ListGames, player=anonymous)
        assert [summary.game_id for summary in listed.games] == [game.game_id]
        assert (await eli.call(p.ListGames, player="Dora")).games == ()
        for name in ("Dora", anonymous):
            assert (await eli.refused(p.GetProfile, name=name)).code == "not_found"
        eli_profile = await eli.call(p.GetProfile, name="eli")
        assert [s.players[0].name for s in eli_profile.recent] == [anonymous]
        for name in ("dora", anonymous):  # held, and kept for deleted accounts
            error = await refused(await clients.connect(), p.Register, username=name,
                                  password=PASSWORD)
            assert error.code == "name_taken"
        # the deleted player's rating stays, so the record adds up
        run = await asyncio.to_thread(run_verify, live.settings.db_url)
        assert run.returncode == 0, run.stdout + run.stderr
        assert "1 rated games, 0 differences" in run.stdout

        frank = await dora.conn.call(p.Register, username="frank", password=PASSWORD)
        assert isinstance(frank, p.Authed)  # the connection lives on, as another player


async def test_out_of_the_leaderboard_and_the_name_free_when_the_hold_is_over(
        serve: Serve) -> None:
    """With no hold (``--deleted-name-hold-days 0``) the name is free at once; its new
    owner starts with nothing of the old one's."""
    async with serve(deleted_name_hold_days=0) as live:
        clients, store = live.clients, live.running.app.store
        players = {name: await clients.register(name, PASSWORD) for name in ("gil", "hal")}
        now = datetime.now(UTC)
        async with store.engine.begin() as conn:  # established ratings, as in test_ratings
            await conn.execute(insert(RatingRow), [
                {"user_id": (await store.get_user_by_name(name)).id,  # type: ignore[union-attr]
                 "pool": "xodd", "rating": rating, "deviation": 60.0, "volatility": 0.06,
                 "rated_at": now, "games": 30, "wins": 15, "losses": 15, "draws": 0}
                for name, rating in (("gil", 1900.0), ("hal", 1700.0))])

        async def board() -> list[str]:
            page = await players["hal"].call(p.GetLeaderboard, game="xodd")
            return [standing.user.name for standing in page.standings]

        assert await board() == ["gil", "hal"]
        await players["gil"].call(p.DeleteAccount, password=PASSWORD)
        assert await board() == ["hal"]
        again = await clients.register("Gil", NEW_PASSWORD)
        profile = await players["hal"].call(p.GetProfile, name="gil")
        assert profile.user == p.User(name="Gil", kind="human", ratings=())
        assert await board() == ["hal"]
        assert again.authed.user.name == "Gil"

