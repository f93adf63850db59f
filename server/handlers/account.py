"""Handshake and accounts: hello, register, login, guest, auth_token, logout, ping, who
may challenge one (set_challenge_policy), change_password and delete_account."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import protocol as p

from ..storage import token_digest

if TYPE_CHECKING:
    from ..session import Session
    from ..storage import User

log = logging.getLogger(__name__)


async def on_hello(s: Session, m: p.Hello) -> p.ServerMessage:
    # the codec has refused a version this server does not speak (unsupported_version)
    settings = s.app.settings
    return p.Welcome(id=m.id, version=p.PROTOCOL_VERSION, server=settings.server_name,
                     limits=p.Limits(max_frame_bytes=settings.max_frame_bytes,
                                     rate_per_s=int(settings.conn_rate),
                                     burst=int(settings.conn_burst),
                                     max_open_seeks=s.app.lobby.max_open_seeks),
                     games=tuple(p.describe_games()))


async def on_register(s: Session, m: p.Register) -> p.ServerMessage:
    user, token = await s.app.accounts.register(m.username, m.password, s.peer)
    return await _authed(s, m.id, user, token)


async def on_login(s: Session, m: p.Login) -> p.ServerMessage:
    user, token = await s.app.accounts.login(m.username, m.password, s.peer)
    return await _authed(s, m.id, user, token)


async def on_guest(s: Session, m: p.Guest) -> p.ServerMessage:
    user, token = await s.app.accounts.guest(s.peer)
    return await _authed(s, m.id, user, token)


async def on_auth_token(s: Session, m: p.AuthToken) -> p.ServerMessage:
    user = await s.app.accounts.by_token(m.token)
    return await _authed(s, m.id, user, m.token)


async def _authed(s: Session, request_id: int, user: User, token: str) -> p.ServerMessage:
    ratings = ([] if user.kind == "guest"
               else (await s.app.store.ratings.of_users([user.id]))[user.id])
    s.login(user, token, ratings)
    if s.member is not None and len(s.member.sessions) == 1:
        await s.app.lobby.joined(s.member)
    # attached by resume, not here (a game may run in another process)
    active = await s.app.placement.active_games(user.id)
    log.info("authenticated", extra={"peer": s.peer, "user": user.name, "kind": user.kind})
    policy = None if user.challenge_policy == "everyone" else user.challenge_policy
    return p.Authed(id=request_id, user=s.me().wire(),
                    session_token=token, active_games=tuple(active), challenge_policy=policy)


async def on_set_challenge_policy(s: Session, m: p.SetChallengePolicy) -> p.ServerMessage:
    # stored, and read by every challenge to this user (on whichever node it is made)
    await s.app.store.set_challenge_policy(s.uid(), m.policy)
    return p.Ok(id=m.id)


async def on_logout(s: Session, m: p.Logout) -> p.ServerMessage:
    s.token_digest = None  # first: the revocation must not close this connection
    revoked = []
    if s.token is not None:
        await s.app.accounts.end_session(s.token)
        revoked.append(token_digest(s.token))
    await _logged_out(s, revoked)
    return p.Ok(id=m.id)


async def on_change_password(s: Session, m: p.ChangePassword) -> p.ServerMessage:
    user = await s.app.accounts.check_password(_registered(s, m).id, m.old_password, s.peer)
    assert s.token is not None
    revoked = await s.app.accounts.change_password(user, m.new_password, keep_token=s.token)
    # the account's other connections close at once, wherever they are; this one stays
    await s.app.revocations.announce(revoked)
    return p.Ok(id=m.id)


async def on_delete_account(s: Session, m: p.DeleteAccount) -> p.ServerMessage:
    user = await s.app.accounts.check_password(_registered(s, m).id, m.password, s.peer)
    digest, s.token_digest = s.token_digest, None  # the revocation must not close this one
    try:
        revoked = await s.app.accounts.delete(user)
    except BaseException:
        s.token_digest = digest  # refused (a game in progress): still logged in
        raise
    log.info("account deleted", extra={"peer": s.peer, "user": user.name})
    await _logged_out(s, revoked)
    return p.Ok(id=m.id)


def _registered(s: Session, m: p.ChangePassword | p.DeleteAccount) -> User:
    """The connection's user, if it has a password: ``forbidden`` for guests and bots."""
    user = s.user
    assert user is not None
    if user.kind != "human":
        raise p.ProtocolError(f"{m.TAG}: a {user.kind} has no password; only registered "
                              "players can do this", code=p.ErrorCode.FORBIDDEN)
    return user


async def _logged_out(s: Session, revoked: list[str]) -> None:
    """The connection's login ends (its ``revoked`` tokens' other connections close at
    once, wherever they are): it leaves the lobby and its games, as if it had closed, and
    is greeted again (it must log in again, or watch)."""
    if revoked:
        await s.app.revocations.announce(revoked)
    await s.detach()
    s.user = s.member = s.token = None
    s.arm_auth_deadline()


async def on_ping(s: Session, m: p.Ping) -> p.ServerMessage:
    return p.Pong(id=m.id)
