"""One node's link to Redis: publish, subscribe, and requests between nodes.

A ``Bus`` holds two clients of redis-py's asyncio API on one URL: a connection pool for
commands (publish, leases, the lobby's scripts: ``bus.redis``), and one connection of its
own for pub/sub, read by one task.

**The reader survives Redis going away.** Redis pub/sub delivers at most once: what is
published while a subscriber is disconnected is lost, and redis-py's own reconnect would
resubscribe without saying so. So the reader's connection has no retries of its own; when
it breaks (an error, or no answer to a PING within ``3 * ping_s``, which catches a link that
died silently), the reader reconnects with exponential backoff, subscribes to every channel
again, and only then calls ``on_gap()``: "messages may have been missed". The caller
catches up from PostgreSQL, where the truth is (games' events are numbered by seq, so a
subscriber brought up to date by the store and then fed live events misses nothing).

**Subscribing returns once Redis has confirmed it**, so a caller that subscribes and then
reads the store sees every later event either in the store or on the channel.

**Requests.** ``await bus.request(node, op, body)`` publishes a request on the target
node's channel; that node runs the handler registered for ``op`` (``bus.serve(op, fn)``) in
a task of its own and publishes the reply on the asker's node channel, matched by request
id. No reply within the timeout raises ``RequestTimeout`` (the request may or may not have
been served: requests must be safe to repeat, as resent moves are); nobody listening on
the target's channel raises ``NodeUnreachable`` at once. A request unanswered for
``probe_s`` has its target's channel checked (``PUBSUB NUMSUB``, one call for every such
request, every ``probe_s``): if nobody listens there any more (the node died after it
was sent), it fails with ``RequestTimeout`` then, not at the end of its timeout. A
handler's failure comes back as ``RemoteError`` with its code (a ``ProtocolError``'s wire
code, so a forwarded client request is answered as if it had been served locally).

**Requests answered otherwise.** A handler may return ``NO_REPLY``: nothing is published
back (its success reaches the asker some other way, e.g. as an event on a channel the
asker follows). The asker then passes ``settled``, a future it completes itself when it
learns of that success: ``request`` returns the reply's body or ``settled``'s result,
whichever comes first, with the same timeout, probing and ``NodeUnreachable`` as any
request. A failure is still replied.

**Wire form.** Requests and replies are a small msgpack envelope (``Envelope``); a client
request forwarded unchanged travels as its protocol frame's bytes inside it (no re-encoding).
Anything else on a channel (game and lobby events) is the payload the publisher chose,
handed to the channel's handler as bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import msgpack
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff, NoBackoff
from redis.exceptions import RedisError

from protocol import ProtocolError
from server.tasks import checkpoint, stop

from .errors import BusUnavailable, NodeUnreachable, RemoteError, RequestTimeout
from .keys import Keys, as_str, check_name

log = logging.getLogger(__name__)

Handler = Callable[[str, bytes], None]
"""Called in the reader task with (channel, payload) for each message on a channel."""
RequestHandler = Callable[[Any, str], Awaitable[Any]]
"""Serves one request: (body, asking node id) -> the reply's body (any msgpack value)."""

UNKNOWN_OP = "unknown_op"
INTERNAL_ERROR = "internal_error"


class _NoReply:
    """What a handler returns to send no reply (module docstring)."""


NO_REPLY: Any = _NoReply()


@dataclass(frozen=True, slots=True)
class Envelope:
    """A request (``kind`` "q": ``op``, ``body``) or a reply (``kind`` "r": ``body`` on
    success, ``error`` = (code, message) on failure) between two nodes."""

    kind: str
    request_id: int
    sender: str
    op: str = ""
    body: Any = None
    error: tuple[str, str] | None = None

    def pack(self) -> bytes:
        wire: dict[str, Any] = {"k": self.kind, "id": self.request_id, "from": self.sender}
        if self.kind == "q":
            wire["op"] = self.op
        if self.error is None:
            wire["body"] = self.body
        else:
            wire["err"] = list(self.error)
        return msgpack.packb(wire, use_bin_type=True)

    @classmethod
    def unpack(cls, data: bytes) -> Envelope:
        """The envelope in ``data``; ValueError if it is not one."""
        try:
            wire = msgpack.unpackb(data, raw=False, strict_map_key=True)
        except Exception as exc:
            raise ValueError(f"not msgpack: {exc}") from exc
        if not isinstance(wire, dict):
            raise ValueError("an envelope is a map")
        kind, request_id, sender = wire.get("k"), wire.get("id"), wire.get("from")
        if kind not in ("q", "r") or not isinstance(request_id, int) or not isinstance(
                sender, str):
            raise ValueError(f"not an envelope: {sorted(wire)}")
        op = wire.get("op", "")
        if kind == "q" and not (isinstance(op, str) and op):
            raise ValueError("a request names its op")
        error = wire.get("err")
        if error is not None:
            if not (isinstance(error, list) and len(error) == 2
                    and all(isinstance(part, str) for part in error)):
                raise ValueError("err is [code, message]")
            error = (error[0], error[1])
        return cls(kind, request_id, sender, op, wire.get("body"), error)


@dataclass(slots=True)
class BusStats:
    """Counters for metrics and tests."""

    published: int = 0
    received: int = 0  # messages handed to channel handlers or matched to requests
    dropped: int = 0  # messages on our channels that could not be handled
    requests_sent: int = 0
    requests_served: int = 0
    replies: int = 0  # replies received that answered a request still waiting
    unreplied: int = 0  # requests served with NO_REPLY
    timeouts: int = 0
    connects: int = 0  # successful (re)subscriptions of the reader
    gaps: int = 0  # reconnects after which on_gap was called


class Bus:
    """A node's publish/subscribe and request/reply link to Redis; see the module docstring.

    ::

        bus = Bus("redis://127.0.0.1:6379/0", Keys("prod"), "node-a", on_gap=catch_up)
        await bus.start()                 # returns at once; the reader connects by itself
        await bus.wait_connected(5)       # optional: BusUnavailable if it cannot
        await bus.subscribe(keys.game_channel(gid), on_event)
        bus.serve("move", handle_move)    # requests other nodes send us
        reply = await bus.request("node-b", "move", frame)
        await bus.close()
    """

    def __init__(
        self,
        url: str,
        keys: Keys,
        node_id: str,
        *,
        on_gap: Callable[[], object] | None = None,
        request_timeout_s: float = 5.0,
        ping_s: float = 1.0,
        backoff_s: tuple[float, float] = (0.05, 2.0),
        max_connections: int = 64,
        command_timeout_s: float = 5.0,
        probe_s: float = 0.25,
    ) -> None:
        """``on_gap`` is called (in the reader task; a coroutine function is run as a task)
        after the reader subscribed again following a lost connection. ``ping_s``: how
        often an idle reader checks its connection (dead after three silent periods);
        ``backoff_s``: the first and the longest wait between reconnection attempts."""
        self.keys = keys
        self.node_id = check_name("a node id", node_id)
        self.channel = keys.node_channel(node_id)
        self._on_gap = on_gap
        self.request_timeout_s = request_timeout_s
        self.probe_s = probe_s
        self._ping_s = ping_s
        self._backoff_s = backoff_s
        common: dict[str, Any] = {"socket_connect_timeout": command_timeout_s,
                                  "socket_keepalive": True}
        # a blocking pool: a burst of commands waits for a connection rather than failing
        self.redis: aioredis.Redis = aioredis.Redis(
            connection_pool=aioredis.BlockingConnectionPool.from_url(
                url, max_connections=max_connections, timeout=command_timeout_s,
                socket_timeout=command_timeout_s,
                retry=Retry(ExponentialBackoff(cap=0.5, base=0.05), 2), **common))
        # the reader's connection: no retries, so that every break reaches _read_forever
        self._sub_client: aioredis.Redis = aioredis.Redis.from_url(
            url, max_connections=2, retry=Retry(NoBackoff(), 0), **common)
        self._handlers: dict[str, Handler] = {}
        self._confirmations: dict[str, list[asyncio.Future[None]]] = {}
        self._ops: dict[str, RequestHandler] = {}
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._asked: dict[int, tuple[str, float]] = {}  # request id -> (channel, sent at)
        self._prober: asyncio.Task[None] | None = None
        self._ids = itertools.count(1)
        self._pubsub: Any = None  # the live PubSub while connected
        self._connected = asyncio.Event()
        self._reader: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False
        # publishes of this event-loop turn, sent together in one pipeline, in order
        self._outbox: list[tuple[str, bytes, asyncio.Future[int] | None]] = []
        self._flushing = False
        self.stats = BusStats()
        self.last_error: str | None = None

    # -- lifecycle -----------------------------------------------------------------------
    async def start(self) -> None:
        """Subscribe to this node's channel and start the reader (it connects by itself)."""
        if self._reader is not None:
            raise RuntimeError("the bus is started already")
        self._handlers[self.channel] = self._on_node_message
        self._reader = asyncio.get_running_loop().create_task(
            self._read_forever(), name=f"tessera-bus-{self.node_id}")

    @property
    def connected(self) -> bool:
        """Whether the reader is subscribed to every channel right now."""
        return self._connected.is_set()

    async def wait_connected(self, timeout_s: float) -> None:
        """Return once the reader is subscribed; BusUnavailable after ``timeout_s``."""
        try:
            async with asyncio.timeout(timeout_s):
                await self._connected.wait()
        except TimeoutError:
            raise BusUnavailable(
                f"no connection to Redis within {timeout_s:g} s: {self.last_error}") from None

    async def close(self) -> None:
        """Stop the reader, fail pending requests (BusUnavailable), close the clients."""
        if self._closed:
            return
        self._closed = True
        self._connected.clear()
        await stop([task for task in (self._reader, self._prober, *self._tasks)
                    if task is not None])
        for future in [*self._pending.values(),
                       *itertools.chain.from_iterable(self._confirmations.values())]:
            if not future.done():
                future.set_exception(BusUnavailable("the bus is closed"))
        await self._sub_client.aclose()
        await self.redis.aclose(close_connection_pool=True)

    async def __aenter__(self) -> Bus:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- publish / subscribe -------------------------------------------------------------
    async def publish(self, channel: str, payload: bytes) -> int:
        """Publish; the number of subscribers it reached. BusUnavailable if Redis is down."""
        try:
            receivers = await self.redis.publish(channel, payload)
        except RedisError as exc:
            raise BusUnavailable(f"cannot publish on {channel}: {exc}") from exc
        self.stats.published += 1
        return int(receivers)

    def publish_soon(self, channel: str, payload: bytes) -> None:
        """Publish with the other publishes of this event-loop turn, in one pipeline, in
        the order they were made (requests and replies go the same way); a failure is
        logged (Redis pub/sub is at most once anyway: receivers detect gaps)."""
        self._queue(channel, payload, None)

    def _queue(self, channel: str, payload: bytes, done: asyncio.Future[int] | None) -> None:
        self._outbox.append((channel, payload, done))
        if not self._flushing:
            self._flushing = True
            self._spawn(self._flush())

    async def _publish_batched(self, channel: str, payload: bytes) -> int:
        """``publish``, sent with the other publishes of this event-loop turn."""
        done: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._queue(channel, payload, done)
        return await done

    async def _flush(self) -> None:
        try:
            while self._outbox:
                checkpoint()
                batch, self._outbox = self._outbox, []
                pipe = self.redis.pipeline(transaction=False)
                for channel, payload, _ in batch:
                    pipe.publish(channel, payload)
                try:
                    receivers = await pipe.execute()
                except RedisError as exc:
                    failure = BusUnavailable(f"cannot publish: {exc}")
                    log.warning("bus: %d messages not published: %s", len(batch), exc)
                    for _, _, done in batch:
                        if done is not None and not done.done():
                            done.set_exception(failure)
                    continue
                self.stats.published += len(batch)
                for (_, _, done), count in zip(batch, receivers, strict=True):
                    if done is not None and not done.done():
                        done.set_result(int(count))
        finally:
            self._flushing = False

    async def subscribe(self, channel: str, handler: Handler, *, timeout_s: float = 5.0
                        ) -> None:
        """Deliver ``channel``'s messages to ``handler``; returns once Redis confirmed the
        subscription (BusUnavailable if that takes longer than ``timeout_s``; the
        subscription stays and is made when the reader reconnects)."""
        if self._closed:
            raise BusUnavailable("the bus is closed")
        if channel in self._handlers:
            raise ValueError(f"{channel} has a handler already")
        self._handlers[channel] = handler
        confirmed = asyncio.get_running_loop().create_future()
        self._confirmations.setdefault(channel, []).append(confirmed)
        pubsub = self._pubsub
        if pubsub is not None:
            with contextlib.suppress(RedisError, OSError):  # the reader sees it and retries
                await pubsub.subscribe(channel)
        try:
            async with asyncio.timeout(timeout_s):
                await asyncio.shield(confirmed)
        except TimeoutError:
            raise BusUnavailable(f"subscribing to {channel} not confirmed within "
                                 f"{timeout_s:g} s: {self.last_error}") from None
        finally:
            waiting = self._confirmations.get(channel, [])
            if confirmed in waiting:
                waiting.remove(confirmed)

    async def unsubscribe(self, channel: str) -> None:
        """Stop delivering ``channel``'s messages (at once; Redis is told when it can be)."""
        if channel == self.channel or self._handlers.pop(channel, None) is None:
            return
        pubsub = self._pubsub
        if pubsub is not None:
            with contextlib.suppress(RedisError, OSError):
                await pubsub.unsubscribe(channel)

    @property
    def channels(self) -> frozenset[str]:
        """The channels with a handler (this node's own channel included)."""
        return frozenset(self._handlers)

    # -- requests ------------------------------------------------------------------------
    def serve(self, op: str, handler: RequestHandler) -> None:
        """Answer requests for ``op`` with ``handler`` (one per op; it may return
        ``NO_REPLY``: module docstring)."""
        if op in self._ops:
            raise ValueError(f"op {op!r} has a handler already")
        self._ops[op] = handler

    async def request(self, node_id: str, op: str, body: Any = None, *,
                      timeout_s: float | None = None,
                      settled: asyncio.Future[Any] | None = None) -> Any:
        """Ask ``node_id`` to serve ``op``; the reply's body, or ``settled``'s result if
        the caller completes it first (nothing is sent if it is done already). See the
        module docstring."""
        if settled is not None and settled.done():
            return settled.result()
        if not self.connected:
            raise BusUnavailable(f"not connected to Redis: {self.last_error}")
        timeout = self.request_timeout_s if timeout_s is None else timeout_s
        request_id = next(self._ids)
        reply: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = reply
        self.stats.requests_sent += 1
        channel = self.keys.node_channel(node_id)
        try:
            async with asyncio.timeout(timeout):
                envelope = Envelope("q", request_id, self.node_id, op, body)
                if await self._publish_batched(channel, envelope.pack()) == 0:
                    raise NodeUnreachable(f"node {node_id!r} is not listening")
                self._asked[request_id] = (channel, time.monotonic())
                if self._prober is None:
                    self._prober = asyncio.get_running_loop().create_task(self._probe())
                if settled is None:
                    return await reply
                await asyncio.wait((reply, settled), return_when=asyncio.FIRST_COMPLETED)
                if settled.done():
                    if reply.done():
                        reply.exception()  # retrieved: settled answers
                    return settled.result()
                return reply.result()
        except RequestTimeout:
            raise  # the target stopped listening (``_probe``)
        except TimeoutError:
            self.stats.timeouts += 1
            raise RequestTimeout(f"no reply from node {node_id!r} to {op!r} within "
                                 f"{timeout:g} s") from None
        finally:
            self._pending.pop(request_id, None)
            self._asked.pop(request_id, None)

    async def _probe(self) -> None:
        """While requests are unanswered: every ``probe_s``, fail those sent ``probe_s``
        ago or more to a channel nobody listens on any more (``RequestTimeout``)."""
        try:
            while self._asked:
                checkpoint()
                await asyncio.sleep(self.probe_s)
                since = time.monotonic() - self.probe_s
                late = {rid: channel for rid, (channel, sent) in self._asked.items()
                        if sent <= since}
                if not late:
                    continue
                try:
                    counts = {as_str(channel): int(count) for channel, count in
                              await self.redis.pubsub_numsub(
                                  *set(late.values()))}
                except RedisError:
                    continue  # the request's own timeout stands
                for rid, channel in late.items():
                    waiting = self._pending.get(rid)
                    if counts.get(channel, 1) == 0 and waiting is not None \
                            and not waiting.done():
                        self.stats.timeouts += 1
                        waiting.set_exception(RequestTimeout(
                            f"{channel}: nobody listens any more, and no reply came"))
        finally:
            self._prober = None

    def _on_node_message(self, _channel: str, data: bytes) -> None:
        try:
            envelope = Envelope.unpack(data)
        except ValueError as exc:
            self.stats.dropped += 1
            log.warning("bus: dropped a malformed message on %s: %s", self.channel, exc)
            return
        if envelope.kind == "r":
            waiting = self._pending.get(envelope.request_id)
            if waiting is None or waiting.done():
                self.stats.dropped += 1  # its asker gave up (timed out) already
                return
            self.stats.replies += 1
            if envelope.error is None:
                waiting.set_result(envelope.body)
            else:
                waiting.set_exception(RemoteError(*envelope.error))
            return
        self._spawn(self._serve_request(envelope))

    async def _serve_request(self, request: Envelope) -> None:
        handler = self._ops.get(request.op)
        body: Any = None
        error: tuple[str, str] | None = None
        if handler is None:
            error = (UNKNOWN_OP, f"node {self.node_id!r} serves no op {request.op!r}")
        else:
            try:
                body = await handler(request.body, request.sender)
            except RemoteError as exc:
                error = (exc.code, exc.message)
            except ProtocolError as exc:
                error = (str(exc.code), str(exc))
            except Exception as exc:
                log.exception("bus: serving %s from %s failed", request.op, request.sender)
                error = (INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")
        self.stats.requests_served += 1
        if error is None and body is NO_REPLY:
            self.stats.unreplied += 1
            return
        reply = Envelope("r", request.request_id, self.node_id, body=body, error=error)
        self.publish_soon(self.keys.node_channel(request.sender), reply.pack())  # lost: the
        # asker times out

    def _spawn(self, coroutine: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- the reader ----------------------------------------------------------------------
    async def _read_forever(self) -> None:
        failures = 0
        ever_connected = False
        while not self._closed:
            checkpoint()
            pubsub: Any = self._sub_client.pubsub()  # redis-py leaves PubSub untyped
            try:
                await pubsub.subscribe(*self._handlers)
                failures = 0
                await self._read(pubsub, gap=ever_connected)
            except asyncio.CancelledError:
                raise
            except (RedisError, OSError, ConnectionError) as exc:
                self.last_error = f"{type(exc).__name__}: {exc}"
                if self._connected.is_set():
                    log.warning("bus: lost Redis: %s", self.last_error)
            finally:
                self._connected.clear()
                self._pubsub = None
                await pubsub.aclose()
            ever_connected = ever_connected or self.stats.connects > 0
            failures += 1
            first, longest = self._backoff_s
            await asyncio.sleep(min(longest, first * 2 ** (failures - 1)))

    async def _read(self, pubsub: Any, *, gap: bool) -> None:
        """Read until the connection breaks. Every channel's subscription is confirmed
        before the bus counts as connected (and before ``on_gap``)."""
        unconfirmed = set(self._handlers)
        last_heard = time.monotonic()
        pinged = False
        while True:
            checkpoint()
            message = await pubsub.get_message(timeout=self._ping_s)
            now = time.monotonic()
            if message is None:
                silent = now - last_heard
                if silent > 3 * self._ping_s:
                    raise ConnectionError(f"Redis silent for {silent:.1f} s")
                if silent >= self._ping_s and not pinged:
                    await pubsub.ping()
                    pinged = True
                continue
            last_heard, pinged = now, False
            kind = message["type"]
            channel = as_str(message["channel"]) if message["channel"] is not None else ""
            if kind == "subscribe":
                unconfirmed.discard(channel)
                self._confirm(channel)
                if not unconfirmed and not self._connected.is_set():
                    self._pubsub = pubsub
                    for late in set(self._handlers) - {as_str(name) for name in pubsub.channels}:
                        await pubsub.subscribe(late)  # added while we were subscribing
                        unconfirmed.add(late)
                    if unconfirmed:
                        continue
                    self._connected.set()
                    self.stats.connects += 1
                    if gap:
                        self._report_gap()
            elif kind == "message":
                handler = self._handlers.get(channel)
                if handler is None:
                    continue  # unsubscribed a moment ago
                self.stats.received += 1
                try:
                    handler(channel, message["data"])
                except Exception:
                    self.stats.dropped += 1
                    log.exception("bus: the handler of %s failed", channel)

    def _confirm(self, channel: str) -> None:
        for waiting in self._confirmations.pop(channel, []):
            if not waiting.done():
                waiting.set_result(None)

    def _report_gap(self) -> None:
        self.stats.gaps += 1
        log.info("bus: subscribed again to %d channels; messages may have been missed",
                 len(self._handlers))
        if self._on_gap is None:
            return
        try:
            outcome = self._on_gap()
            if inspect.isawaitable(outcome):
                self._spawn(outcome)
        except Exception:
            log.exception("bus: on_gap failed")
