"""Accounts: registration, password logins with lockout, guests, and bearer tokens.

Passwords are hashed with argon2id (argon2-cffi) on a pool of one thread per CPU, so
hashing never stalls the event loop and a burst of logins waits its turn rather than
crowding out everything else. Tokens (session tokens handed out at login, bot tokens made by the
admin CLI) are random, shown once, stored as sha256 digests and looked up by digest.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from protocol import ErrorCode, ProtocolError

from .storage import NameTaken, Store, User


class Passwords:
    """argon2id hashing on a pool of threads of its own, owned by whoever made it.

    Hashes run on at most one thread per CPU: a burst of logins then queues here instead of
    taking every core (and 64 MiB each) from the rest, and the event loop never waits for
    one. ``close()`` stops the pool (the server does, on its way out).
    """

    def __init__(self, threads: int | None = None) -> None:
        self._hasher = PasswordHasher()  # argon2id with the library's recommended parameters
        self._pool = ThreadPoolExecutor(max_workers=threads or os.cpu_count() or 1,
                                        thread_name_prefix="tessera-argon2")
        self._dummy: str | None = None

    async def hash(self, password: str) -> str:
        return await asyncio.get_running_loop().run_in_executor(
            self._pool, self._hasher.hash, password)

    async def verify(self, password_hash: str | None, password: str) -> bool:
        """Whether ``password`` matches; with no hash (no such user, or a bot), a dummy
        hash is checked so that both cases take as long."""
        if password_hash is None:
            if self._dummy is None:
                self._dummy = await self.hash(secrets.token_hex(16))
            password_hash = self._dummy

        def check() -> bool:
            try:
                return self._hasher.verify(password_hash, password)
            except (VerificationError, InvalidHashError):
                return False

        return await asyncio.get_running_loop().run_in_executor(self._pool, check)

    def needs_rehash(self, password_hash: str) -> bool:
        return self._hasher.check_needs_rehash(password_hash)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class Accounts:
    """The account operations behind register, login, guest and auth_token."""

    def __init__(self, store: Store, passwords: Passwords, *, lockout_after: int = 5,
                 lockout_base_s: float = 30.0) -> None:
        self.store = store
        self.passwords = passwords
        self.lockout_after = lockout_after
        self.lockout_base_s = lockout_base_s

    def _lock_for(self, failures: int) -> timedelta:
        """Lockouts double with each failure past the limit, up to a day."""
        extra = max(0, failures - self.lockout_after)
        return timedelta(seconds=min(86_400.0, self.lockout_base_s * 2**extra))

    async def register(self, name: str, password: str) -> tuple[User, str]:
        password_hash = await self.passwords.hash(password)
        try:
            user = await self.store.create_user(name, "human", password_hash=password_hash)
        except NameTaken:
            raise ProtocolError(f"the name {name!r} is taken", code=ErrorCode.NAME_TAKEN) from None
        return user, await self.new_session(user)

    async def login(self, name: str, password: str) -> tuple[User, str]:
        user = await self.store.get_user_by_name(name)
        now = datetime.now(UTC)
        if user is not None and user.is_locked(now):
            assert user.locked_until is not None
            wait = int((user.locked_until - now).total_seconds() * 1000) + 1
            exc = ProtocolError("too many failed logins; try again later",
                                code=ErrorCode.LOCKED_OUT, retry_after_ms=wait)
            raise exc
        ok = await self.passwords.verify(user.password_hash if user is not None else None,
                                         password)
        if user is None or not user.password_hash or not ok:
            if user is not None:
                await self.store.record_login_failure(
                    user.id, now=now, max_failures=self.lockout_after, lock_for=self._lock_for)
            raise ProtocolError("wrong username or password",
                                code=ErrorCode.INVALID_CREDENTIALS)
        if user.failed_logins:
            await self.store.reset_failures(user.id)
        if self.passwords.needs_rehash(user.password_hash):
            await self.store.set_password_hash(user.id, await self.passwords.hash(password))
        return user, await self.new_session(user)

    async def guest(self) -> tuple[User, str]:
        for _ in range(5):
            name = f"guest-{secrets.token_hex(4)}"
            try:
                user = await self.store.create_user(name, "guest")
            except NameTaken:
                continue
            return user, await self.new_session(user)
        raise ProtocolError("could not make a guest name", code=ErrorCode.INTERNAL_ERROR)

    async def by_token(self, token: str) -> User:
        user = await self.store.user_for_token(token)
        if user is None:
            raise ProtocolError("unknown, expired or revoked token",
                                code=ErrorCode.INVALID_CREDENTIALS)
        return user

    async def new_session(self, user: User) -> str:
        token, _ = await self.store.create_token(user.id, "session", "login")
        return token

    async def end_session(self, token: str) -> None:
        await self.store.revoke_token_value(token)
