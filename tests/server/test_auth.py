"""Accounts: passwords, lockout, session and bot tokens, and the Origin check."""

from __future__ import annotations

import re

import pytest
import websockets

import protocol as p
from clients.connection import Connection, ServerError

from .conftest import Live, Serve, TestDatabase, both_topologies
from .support import Clients, RawSocket, run_cli

pytestmark = both_topologies

PASSWORD = "correct horse battery"


async def login_error(clients: Clients, name: str, password: str) -> ServerError:
    conn = await clients.connect()
    with pytest.raises(ServerError) as info:
        await conn.call(p.Login, username=name, password=password)
    await conn.close()
    return info.value


async def test_register_login_and_logout(clients: Clients) -> None:
    alice = await clients.register("Alice", PASSWORD)
    assert alice.authed.user == p.User(name="Alice", kind="human")
    assert alice.authed.active_games == ()
    conn = await clients.connect()
    for name in ("Alice", "ALICE"):
        with pytest.raises(ServerError) as info:
            await conn.call(p.Register, username=name, password="another password")
        assert info.value.code == "name_taken"
    raw = await RawSocket.open(clients.url)
    reply = await raw.request({"t": "register", "id": 2, "username": "Bob", "password": "short"})
    assert isinstance(reply, p.ErrorReply) and reply.code == "bad_request"
    assert "password" in reply.message
    await raw.close()

    again = await conn.call(p.Login, username="alice", password=PASSWORD)  # any case
    assert again.user == p.User(name="Alice", kind="human")
    assert again.session_token != alice.token
    with pytest.raises(ServerError) as info:
        await conn.call(p.Login, username="Alice", password=PASSWORD)
    assert info.value.code == "conflict"  # already logged in

    await conn.call(p.Logout)  # revokes this connection's session token only
    assert isinstance(await conn.call(p.AuthToken, token=alice.token), p.Authed)
    later = await clients.connect()
    with pytest.raises(ServerError) as info:
        await later.call(p.AuthToken, token=again.session_token)
    assert info.value.code == "invalid_credentials"
    with pytest.raises(ServerError) as info:
        await later.call(p.Seek, game="hadron", options={}, clock=p.Unlimited())
    assert info.value.code == "unauthorized"


async def test_wrong_passwords_then_lockout(server: Live, clients: Clients) -> None:
    await clients.register("Carol", PASSWORD)
    limit = server.settings.login_lockout_after
    for _ in range(limit - 1):
        error = await login_error(clients, "Carol", "wrong password")
        assert error.code == "invalid_credentials"
    assert (await login_error(clients, "nobody", "wrong password")).code == \
        "invalid_credentials"  # an unknown name looks the same

    error = await login_error(clients, "Carol", "wrong password")  # the limit-th failure
    assert error.code == "invalid_credentials"
    for password in ("wrong password", PASSWORD):  # locked: even the right one is refused
        error = await login_error(clients, "Carol", password)
        assert error.code == "locked_out"
        assert error.retry_after_ms is not None
        assert 0 < error.retry_after_ms <= server.settings.login_lockout_base_s * 1000 + 1
        # how long, in words (the lock is 30 s; a slow machine may have used a few of them)
        assert re.fullmatch(r"too many failed logins from your address; try again in "
                            r"(30|2\d) s", error.message), error.message
    others = await clients.register("Dave", PASSWORD)  # other accounts are unaffected
    assert others.name == "Dave"


async def test_bot_tokens_from_the_admin_cli(database: TestDatabase, clients: Clients
                                             ) -> None:
    made = await run_cli("admin", "create-bot", "Robo", "--db", database.url)
    assert made.returncode == 0, made.stderr
    token_id, token = re.search(r"token (\d+): (\S+)", made.stdout).groups()  # type: ignore
    bot = await clients.with_token(token)
    assert bot.authed.user == p.User(name="Robo", kind="bot")
    await bot.close()

    revoked = await run_cli("admin", "revoke-token", token_id, "--db", database.url)
    assert revoked.returncode == 0, revoked.stderr
    conn = await clients.connect()
    with pytest.raises(ServerError) as info:
        await conn.call(p.AuthToken, token=token)
    assert info.value.code == "invalid_credentials"
    with pytest.raises(ServerError) as info:
        await conn.call(p.AuthToken, token="not-a-token")
    assert info.value.code == "invalid_credentials"


async def test_browser_origins_are_refused_unless_allowed(serve: Serve) -> None:
    async with serve(origins=["https://tessera.example"]) as live:
        with pytest.raises(websockets.InvalidStatus) as info:
            await Connection.open(live.url, origin="https://evil.example")
        assert info.value.response.status_code == 403
        allowed = await live.clients.connect(origin="https://tessera.example")
        assert isinstance(await allowed.call(p.Ping), p.Pong)
        plain = await live.clients.connect()  # non-browser clients send no Origin
        assert isinstance(await plain.call(p.Ping), p.Pong)
