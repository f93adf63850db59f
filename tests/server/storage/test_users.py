"""Accounts and tokens: names unique in any case, login failure locks, token lifecycle."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from server.storage import Conflict, NameTaken, Store, User, token_digest
from server.storage.repo import new_token

from .conftest import T0, at


async def test_create_and_find_users_case_insensitively(store: Store) -> None:
    alice = await store.create_user("Alice", "human", password_hash="argon2-hash", now=T0)
    assert alice == User(alice.id, "Alice", "human", "argon2-hash", T0, 0, None)
    assert await store.get_user_by_name("aLICE") == alice
    assert await store.get_user_by_name("bob") is None


async def test_names_are_unique_in_any_letter_case(store: Store) -> None:
    await store.create_user("Alice", "human")
    with pytest.raises(NameTaken):
        await store.create_user("ALICE", "guest")
    with pytest.raises(ValueError):
        await store.create_user("   ", "human")
    with pytest.raises(ValueError):
        await store.create_user("Zed", "admin")  # type: ignore[arg-type]


async def test_password_hash_can_be_replaced(store: Store) -> None:
    user = await store.create_user("Carol", "human", password_hash="old")
    await store.set_password_hash(user.id, "new")
    assert (await store.get_user_by_name("Carol")).password_hash == "new"  # type: ignore[union-attr]


async def test_login_failures_lock_the_account_until_reset(store: Store) -> None:
    user = await store.create_user("Dave", "human", now=T0)
    lock = timedelta(minutes=15)
    for attempt in range(1, 3):
        after = await store.record_login_failure(user.id, now=at(attempt), max_failures=3)
        assert after is not None
        assert (after.failed_logins, after.locked_until) == (attempt, None)
        assert not after.is_locked(at(attempt))
    locked = await store.record_login_failure(user.id, now=at(3), max_failures=3, lock_for=lock)
    assert locked is not None
    assert (locked.failed_logins, locked.locked_until) == (3, at(3) + lock)
    assert locked.is_locked(at(4)) and not locked.is_locked(at(3) + lock)
    again = await store.record_login_failure(user.id, now=at(9), max_failures=3, lock_for=lock)
    assert again is not None and again.locked_until == at(9) + lock  # each failure extends it
    await store.reset_failures(user.id)
    reset = await store.get_user_by_name("Dave")
    assert reset is not None and (reset.failed_logins, reset.locked_until) == (0, None)
    assert await store.record_login_failure(user.id + 1000) is None


async def test_the_lock_may_grow_with_the_failures(store: Store) -> None:
    user = await store.create_user("Dora", "human", now=T0)

    def doubling(failures: int) -> timedelta:
        return timedelta(seconds=30 * 2 ** (failures - 2))

    for failures, lock in [(1, None), (2, 30), (3, 60), (4, 120)]:
        after = await store.record_login_failure(
            user.id, now=at(failures), max_failures=2, lock_for=doubling
        )
        assert after is not None and after.failed_logins == failures
        assert after.locked_until == (None if lock is None else at(failures + lock))


async def test_texts_longer_than_their_columns_are_refused_on_every_backend(
    store: Store,
) -> None:
    with pytest.raises(ValueError, match=r"users\.name holds at most 64"):
        await store.create_user("n" * 65, "human")
    user = await store.create_user("n" * 64, "human")
    with pytest.raises(ValueError, match=r"api_tokens\.label"):
        await store.create_token(user.id, "bot", "l" * 65)


async def test_token_is_returned_once_and_stored_only_as_its_digest(
    store: Store, engine: AsyncEngine
) -> None:
    user = await store.create_user("Erin", "bot")
    token, token_id = await store.create_token(user.id, "bot", "arena", now=T0)
    assert len(token) >= 43
    assert token_digest(token) == hashlib.sha256(token.encode()).hexdigest()
    async with engine.connect() as conn:
        rows = (await conn.execute(text("SELECT id, token_hash, label FROM api_tokens"))).all()
    assert [tuple(row) for row in rows] == [(token_id, token_digest(token), "arena")]
    second, _ = await store.create_token(user.id, "session")
    assert second != token


async def test_token_lifecycle(store: Store) -> None:
    user = await store.create_user("Fay", "human")
    token, token_id = await store.create_token(user.id, "session", "laptop", now=T0)
    assert await store.user_for_token(token, now=at(1)) == user
    assert await store.user_for_token(token + "x", now=at(1)) is None
    [info] = await store.list_tokens(user.id)
    assert (info.id, info.kind, info.label, info.created_at) == (token_id, "session", "laptop", T0)
    assert info.last_used_at == at(1)
    await store.user_for_token(token, now=at(60))  # within the touch interval: no write
    assert (await store.list_tokens(user.id))[0].last_used_at == at(1)
    await store.user_for_token(token, now=at(3600))
    assert (await store.list_tokens(user.id))[0].last_used_at == at(3600)

    other = await store.create_user("Gus", "human")
    assert not await store.revoke_token(token_id, user_id=other.id)  # not Gus's token
    assert await store.revoke_token(token_id, user_id=user.id, now=at(4000))
    assert not await store.revoke_token(token_id)  # already revoked
    assert await store.user_for_token(token, now=at(4001)) is None
    assert await store.list_tokens(user.id) == []
    [revoked] = await store.list_tokens(user.id, include_revoked=True)
    assert revoked.revoked_at == at(4000)


async def test_logout_revokes_the_token_presented(store: Store) -> None:
    user = await store.create_user("Hal", "human")
    token, _ = await store.create_token(user.id, "session")
    keep, _ = await store.create_token(user.id, "session")
    assert await store.revoke_token_value(token)
    assert not await store.revoke_token_value(token)
    assert await store.user_for_token(token) is None
    assert await store.user_for_token(keep) == user


async def test_expired_tokens_are_refused(store: Store) -> None:
    user = await store.create_user("Ivy", "human")
    token, _ = await store.create_token(user.id, "session", expires_at=at(100), now=T0)
    assert await store.user_for_token(token, now=at(99)) == user
    assert await store.user_for_token(token, now=at(100)) is None


async def test_tokens_need_a_user_and_a_known_kind(store: Store) -> None:
    with pytest.raises(Conflict):
        await store.create_token(424242, "session")
    user = await store.create_user("Jo", "human")
    with pytest.raises(ValueError):
        await store.create_token(user.id, "admin")  # type: ignore[arg-type]


async def test_revoked_since_lists_digests_of_recent_revocations(store: Store) -> None:
    from datetime import UTC, datetime

    user = await store.create_user("rita", "bot")
    old_token, old_id = await store.create_token(user.id, "bot")
    new_token, new_id = await store.create_token(user.id, "bot")
    live_token, _ = await store.create_token(user.id, "bot")
    t0 = datetime.now(UTC)
    await store.revoke_token(old_id, now=t0 - timedelta(minutes=5))
    await store.revoke_token(new_id, now=t0)
    found = await store.revoked_since(t0 - timedelta(seconds=1))
    assert found == [token_digest(new_token)]
    assert token_digest(old_token) not in found and token_digest(live_token) not in found


def test_no_token_starts_with_a_dash() -> None:
    """A token is given on command lines (``--token T``): one starting with ``-`` reads as
    an option there. One random URL-safe token in 64 does; of 5,000 none may."""
    tokens = [new_token() for _ in range(5000)]
    assert not [token for token in tokens if token.startswith("-")]
    assert len(set(tokens)) == 5000 and {len(token) for token in tokens} == {43}
