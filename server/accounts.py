"""Accounts: registration, password logins with lockout, guests, and bearer tokens.

Passwords are hashed with argon2id (argon2-cffi) on a pool of one thread per CPU, so
hashing never stalls the event loop, behind a bounded queue: a burst of logins waits its
turn up to ``hash_queue`` hashes (about a second), and beyond that a login or registration
is refused at once with ``rate_limited`` and a retry time, so what strangers send cannot
make a real login wait long. Tokens (session tokens handed out at login, bot tokens made by
the admin CLI) are random, shown once, stored as sha256 digests and looked up by digest.

Per client address, logins and registrations (each costs a hash) and new guests are
rationed by token buckets (settings ``address_*``); wrong passwords lock an (account,
address) pair for a while (:mod:`server.lockout`). Guests are written in batches off the
move path and swept when they never played (:mod:`server.guests`).

A password change and an account's deletion check the password as a login does (the same
budget, lock and queue: no side door for guessing) and end the account's other logins:
they return the digests of the tokens revoked, which the caller announces
(``seam.Revocations``) so that their connections close at once, on every node.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import heapq
import itertools
import math
import os
import secrets
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from protocol import ErrorCode, ProtocolError

from .lockout import KnownPairs, LockoutStore
from .ratelimit import AccountLimits, address_key
from .storage import NameTaken, StillPlaying, Store, User, token_digest

if TYPE_CHECKING:
    from .guests import GuestMaker

T = TypeVar("T")


class HashQueueFull(Exception):
    """The hash queue is full: try again in ``retry_after_s``."""

    def __init__(self, retry_after_s: float) -> None:
        super().__init__(f"the password hash queue is full; retry in {retry_after_s:.2f} s")
        self.retry_after_s = retry_after_s


class Passwords:
    """argon2id hashing on a pool of threads of its own, behind a bounded queue.

    Hashes run on at most one thread per CPU: a burst of logins then queues here instead of
    taking every core (and 64 MiB each) from the rest, and the event loop never waits for
    one. With ``max_queued``, at most that many hashes run or wait, and no more than
    ``max_wait_s`` of work by the hashes' measured duration (on a loaded machine a hash
    takes longer, so fewer wait), though always one per thread: one more raises
    :class:`HashQueueFull` at once, with the time the queue needs to drain. A ``priority``
    hash (a login from an address the account logged in from before) may go ``reserve``
    past the bound, goes ahead of the others and may take one thread more than the CPUs
    (a lane of its own), so strangers filling the queue neither keep the owner out nor make
    them wait for the hashes queued or running. ``close()`` stops the pool (the server does,
    on its way out).
    """

    def __init__(self, threads: int | None = None, max_queued: int | None = None,
                 max_wait_s: float = 1.0, reserve: int | None = None, *,
                 time_cost: int | None = None, memory_kib: int | None = None) -> None:
        # argon2id with the library's recommended parameters, unless a cost is given
        recommended = PasswordHasher()
        self._hasher = PasswordHasher(
            time_cost=recommended.time_cost if time_cost is None else time_cost,
            memory_cost=recommended.memory_cost if memory_kib is None else memory_kib)
        self.threads = threads or os.cpu_count() or 1
        if max_queued is not None and max_queued < 1:
            raise ValueError(f"max_queued must be >= 1, not {max_queued}")
        self.max_queued = max_queued
        self.max_wait_s = max_wait_s
        self.reserve = self.threads if reserve is None else reserve
        self.queued = 0  # hashes running or waiting
        self.refused = 0  # hashes refused because the queue was full
        self.hash_s = 0.25  # a hash's duration, measured (a moving average)
        self._pool = ThreadPoolExecutor(max_workers=self.threads + 1,  # + the priority lane
                                        thread_name_prefix="tessera-argon2")
        # waiting hashes, priority first, then in order; at most ``threads`` in the pool
        self._waiting: list[tuple[int, int, Callable[[], Any], asyncio.Future[Any]]] = []
        self._order = itertools.count()
        self._running = 0
        self._dummy: str | None = None

    def retry_after_s(self) -> float:
        """About how long the hashes queued now take to finish."""
        return self.hash_s * max(1, self.queued) / self.threads

    def has_room(self, priority: bool = False) -> bool:
        if self.max_queued is None:
            return True
        extra = self.reserve if priority else 0
        if self.queued >= self.max_queued + extra:
            return False
        waiting_s = (self.queued + 1) * self.hash_s / self.threads
        return self.queued < self.threads + extra or waiting_s <= self.max_wait_s * (
            1 + extra / self.threads)

    async def _run(self, work: Callable[[], T], priority: bool = False) -> T:
        if not self.has_room(priority):  # decided now, before anything is awaited: no race
            self.refused += 1
            raise HashQueueFull(self.retry_after_s())
        self.queued += 1

        def timed() -> T:
            started = time.perf_counter()
            try:
                return work()
            finally:
                self.hash_s += (time.perf_counter() - started - self.hash_s) / 8

        loop = asyncio.get_running_loop()
        result: asyncio.Future[T] = loop.create_future()
        heapq.heappush(self._waiting, (0 if priority else 1, next(self._order), timed, result))
        self._start_next(loop)
        try:
            return await result
        finally:
            self.queued -= 1

    @property
    def running(self) -> int:
        """Hashes in the pool's threads now."""
        return self._running

    def _start_next(self, loop: asyncio.AbstractEventLoop) -> None:
        """Hand waiting hashes to the pool while a thread is free, priority first; a
        priority hash may also take the one thread kept for them."""
        while self._waiting:
            lane = 1 if self._waiting[0][0] == 0 else 0
            if self._running >= self.threads + lane:
                return
            _, _, work, result = heapq.heappop(self._waiting)
            if result.done():  # its caller went away while it waited
                continue
            self._running += 1
            loop.run_in_executor(self._pool, work).add_done_callback(
                functools.partial(self._finished, loop, result))

    def _finished(self, loop: asyncio.AbstractEventLoop, result: asyncio.Future[Any],
                  done: asyncio.Future[Any]) -> None:
        self._running -= 1
        if not result.done():
            if done.cancelled():
                result.cancel()
            elif (error := done.exception()) is not None:
                result.set_exception(error)
            else:
                result.set_result(done.result())
        self._start_next(loop)

    async def hash(self, password: str) -> str:
        return await self._run(lambda: self._hasher.hash(password))

    async def verify(self, password_hash: str | None, password: str, *,
                     priority: bool = False) -> bool:
        """Whether ``password`` matches; with no hash (no such user, or a bot), a dummy
        hash is checked so that both cases take as long (and queue the same way)."""

        def check() -> bool:
            stored = password_hash
            if stored is None:
                if self._dummy is None:
                    self._dummy = self._hasher.hash(secrets.token_hex(16))
                stored = self._dummy
            try:
                return self._hasher.verify(stored, password)
            except (VerificationError, InvalidHashError):
                return False

        return await self._run(check, priority)

    def needs_rehash(self, password_hash: str) -> bool:
        return self._hasher.check_needs_rehash(password_hash)

    def close(self) -> None:
        for _, _, _, result in self._waiting:
            result.cancel()
        self._waiting.clear()
        self._pool.shutdown(wait=False, cancel_futures=True)


def _rate_limited(what: str, wait_s: float) -> ProtocolError:
    return ProtocolError(f"{what}; try again later", code=ErrorCode.RATE_LIMITED,
                         retry_after_ms=int(wait_s * 1000) + 1)


def _locked_out(wait_s: float) -> ProtocolError:
    return ProtocolError(f"too many failed logins from your address; try again in "
                         f"{_how_long(wait_s)}", code=ErrorCode.LOCKED_OUT,
                         retry_after_ms=int(wait_s * 1000) + 1)


def _how_long(wait_s: float) -> str:
    """``30 s``, ``2 min``, ``1 min 30 s``: a wait as a person reads it (rounded up)."""
    minutes, seconds = divmod(max(1, math.ceil(wait_s)), 60)
    if not minutes:
        return f"{seconds} s"
    return f"{minutes} min" + (f" {seconds} s" if seconds else "")


class Accounts:
    """The account operations behind register, login, guest and auth_token.

    ``address`` is the client's address as the connection saw it (``Session.peer``).
    """

    def __init__(self, store: Store, passwords: Passwords, guests: GuestMaker,
                 lockout: LockoutStore, address_logins: AccountLimits | None = None,
                 address_guests: AccountLimits | None = None,
                 name_hold: timedelta = timedelta(days=30)) -> None:
        """``address_logins``, ``address_guests``: the per-address budgets (None: none),
        one process's or a cluster's (``seam.Topology``), as ``lockout`` is;
        ``name_hold``: how long a deleted account's name stays held."""
        self.store = store
        self.passwords = passwords
        self.guests = guests
        self.lockout = lockout
        self.name_hold = name_hold
        self.known = KnownPairs()  # pairs that logged in: first in the hash queue's reserve
        self.address_logins = address_logins
        self.address_guests = address_guests

    async def _take_login(self, address: str) -> None:
        """Spend one of the address's logins (a hash), or refuse with rate_limited."""
        if self.address_logins is not None:
            wait = await self.address_logins.take(address_key(address))
            if wait:
                raise _rate_limited("too many logins from your address", wait)

    async def register(self, name: str, password: str, address: str = "?"
                       ) -> tuple[User, str]:
        await self._take_login(address)
        try:
            password_hash = await self.passwords.hash(password)
        except HashQueueFull as exc:
            raise _rate_limited("the server is busy checking passwords",
                                exc.retry_after_s) from None
        try:
            user = await self.store.create_user(name, "human", password_hash=password_hash)
        except NameTaken as exc:
            raise ProtocolError(str(exc), code=ErrorCode.NAME_TAKEN) from None
        self.known.add((user.id, address_key(address)))
        return user, await self.new_session(user)

    async def login(self, name: str, password: str, address: str = "?") -> tuple[User, str]:
        """Check a password (``_check``) and open a session; a hash made with other
        parameters is made again."""
        await self._take_login(address)
        user = await self.store.get_user_by_name(name)
        await self._check(user, password, address)
        assert user is not None and user.password_hash
        if self.passwords.needs_rehash(user.password_hash) and self.passwords.has_room():
            with contextlib.suppress(HashQueueFull):  # else it waits for the next login
                await self.store.set_password_hash(user.id, await self.passwords.hash(password))
        return user, await self.new_session(user)

    async def _check(self, user: User | None, password: str, address: str,
                     wrong: str = "wrong username or password") -> None:
        """``invalid_credentials`` (saying ``wrong``) unless ``password`` is ``user``'s
        (None: no such account). A lock of this (account, address) pair refuses the
        attempt before any hash, without counting it (``locked_out``); a wrong password
        counts once its hash has said so (``Lockout.failed`` decides, after the fact,
        whether it still counts)."""
        key = (user.id, address_key(address)) if user is not None else None
        if key is not None and (wait := await self.lockout.locked_for(key)):
            raise _locked_out(wait)
        try:
            ok = await self.passwords.verify(
                user.password_hash if user is not None else None, password,
                priority=key is not None and key in self.known)
        except HashQueueFull as exc:
            raise _rate_limited("the server is busy checking passwords",
                                exc.retry_after_s) from None
        if user is None or not user.password_hash or not ok:
            if key is not None:
                counted, wait = await self.lockout.failed(key)
                if not counted:  # another attempt's failure locked the pair meanwhile
                    raise _locked_out(wait)
            raise ProtocolError(wrong, code=ErrorCode.INVALID_CREDENTIALS)
        if key is not None:
            await self.lockout.succeeded(key)
            self.known.add(key)

    async def check_password(self, user_id: int, password: str, address: str = "?") -> User:
        """The account, if ``password`` is its own, checked exactly as a login's: the
        address's budget, the pair's lock (a wrong password counts toward it), the hash
        queue. For the requests that change an account."""
        await self._take_login(address)
        user = await self.store.get_user(user_id)
        await self._check(user, password, address, "wrong password")
        assert user is not None
        return user

    async def change_password(self, user: User, new_password: str, keep_token: str
                              ) -> list[str]:
        """Store a new password (hashed on the pool, ``rate_limited`` when it is full)
        and revoke every token of the account but ``keep_token``: their digests."""
        try:
            password_hash = await self.passwords.hash(new_password)
        except HashQueueFull as exc:
            raise _rate_limited("the server is busy checking passwords",
                                exc.retry_after_s) from None
        return await self.store.replace_password(user.id, password_hash,
                                                 keep=token_digest(keep_token))

    async def delete(self, user: User) -> list[str]:
        """Delete the account (``Store.delete_account``): ``conflict`` while it plays a
        game; the digests of its tokens, all revoked."""
        try:
            _, revoked = await self.store.delete_account(user.id, hold_for=self.name_hold)
        except StillPlaying as exc:
            raise ProtocolError(f"you are playing game {exc.game_id}: finish it (or resign) "
                                "before deleting your account", code=ErrorCode.CONFLICT,
                                game_id=exc.game_id) from None
        return revoked

    async def guest(self, address: str = "?") -> tuple[User, str]:
        """A new guest account and its session token, unless the address made its share."""
        if self.address_guests is not None:
            wait = await self.address_guests.take(address_key(address))
            if wait:
                raise _rate_limited("too many new guests from your address", wait)
        return await self.guests.make()

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
