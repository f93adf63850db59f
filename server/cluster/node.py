"""``tessera serve --cluster URL``: the server as a node of a cluster, and what makes it one.

A :class:`ClusterNode` is a node's side of the seam (``server.seam.Topology``; a lone
server's is ``server.local``): it owns the node's link to Redis (``Bus``), its ``Leases``
and its entry in the ``NodeRegistry``, the lobby's stores in Redis (``lobbystore``,
``presence``), the ladder's roster, the budgets and revocations shared by every node. It
makes the games of the process a cluster's (docs/SCALING.md):

- **Ownership.** A game started here is leased first and created at epoch 0; its room
  (``owned.owned_room_class``) publishes its events on the game's channel while another node
  may follow it (below) and writes fenced. A game is *taken over* (``take_over``: lease,
  ``Store.take_over_game``, the stored moves replayed, clocks started as after a restart, an
  unasked ``game_state`` published) when a periodic sweep finds it playing with no lease
  (its owner stopped, or its lease ran out), or held by a dead process (``dead_owners``: the
  registry declares a node dead as soon as its process is gone, before its leases run out;
  its leases are broken then, which the fencing epoch makes safe), or on demand when a
  request finds no owner, or an owner that is dead. A game is *lost* when its lease is
  (``Leases.on_lost``) or the database refuses a write (``StaleEpoch``): the room stops, and
  its connections here follow the game from the store and the new owner instead.
- **Routing.** A request about a game owned elsewhere (move, resign, abort, claim_win,
  chat; watch and resume) is sent to the owner (``call_owner``: the owner named by the
  lease; retried while a takeover happens) and its answer given to the client as if
  served here. The events a request caused come back with its reply, so a player sees
  ``moved`` before ``move_ack`` as on one server. A move goes one way (op ``move``,
  ``_forward_move``): the asking node follows the game first, the owner replies only to a
  refusal or a resend, and the game's ``moved`` on the channel, relayed here, is followed
  at once by the ``move_ack`` (after the ``game_over`` if the move ended the game).
- **Events.** Connections following a game owned elsewhere are fed by a ``RemoteGame``
  (``remote``), subscribed to the game's channel; a gap is filled from the owner. A node
  follows a game only after it subscribed and then asked its owner something about it
  (``follow``, ``events``, ``seat``, ``game``), or was asked by the owner to seat a player;
  each of these *marks* the game followed at the owner, which publishes its events from
  then on until the game ends there. A game no
  other node follows (both players and every spectator here: most games) costs Redis
  nothing per move.

The ops a node serves to the others (``Bus.serve``): ``game`` (a player's action),
``move`` (a player's move, answered by its event: ``Bus.NO_REPLY``),
``follow`` (watch or resume: the missed events or a snapshot; a player's seat is then
present), ``seat`` (the first or last connection of a seat on the asking node), ``events``
(the events after a seq, or a snapshot). A node that does not own the game answers
``not_owner`` and the asker looks again.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import dataclasses
import itertools
import logging
import random
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any, cast

import msgpack
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from redis.exceptions import RedisError

import protocol as p
from server import wire
from server.config import Settings
from server.ratelimit import address_budgets
from server.revocation import close_revoked
from server.rooms import NOT_STORED_RETRY_MS, GameRoom
from server.seam import Caller
from server.tasks import checkpoint, stop

from .bus import NO_REPLY, UNKNOWN_OP, Bus
from .config import ClusterSettings
from .errors import BusUnavailable, NodeUnreachable, RemoteError, RequestTimeout
from .feeds import Feed, Revocations
from .keys import Keys, as_str
from .ladder import RedisRoster
from .leases import Leases, LostReason, owner_node, owner_value
from .limits import RedisTokenBuckets
from .lobbystore import RedisChallenges, RedisRematches, RedisSeeks
from .lockout import RedisLockout
from .nodes import NodeRegistry
from .owned import RemoteSeat, owned_room_class
from .presence import RedisPresence
from .remote import FINAL, SNAPSHOT, RemoteGame

if TYPE_CHECKING:
    from server.host import Host
    from server.seam import Asker, GameRequest, Seated

log = logging.getLogger(__name__)

NOT_OWNER = "not_owner"
RETRY_S = 0.1  # between looks for a game's owner while it is being taken over
OWNER_HINTS = 50_000  # games whose owner is remembered (then forgotten all at once)
SWEEP_BATCH = 100  # games taken over per sweep at most (the others wait for the next)
TAKEOVERS_AT_ONCE = 8  # a sweep's takeovers in flight together (each waits on PostgreSQL)


class _Local:
    """``call_owner``'s answer when the game is (now) run by this node."""


LOCAL = _Local()


RTT_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5, 1.0, 5.0)


@dataclasses.dataclass(slots=True)
class NodeStats:
    forwarded: int = 0  # requests sent to another node's game
    forwarded_moves: int = 0  # moves played on a game another node owns
    served: int = 0  # requests served for another node
    takeovers: int = 0
    lost: int = 0
    published: int = 0
    unpublished: int = 0  # events of games no other node followed: not sent to Redis
    rtt_s: float = 0.0  # the forwarded requests' round trips, summed
    rtt_counts: list[int] = dataclasses.field(
        default_factory=lambda: [0] * (len(RTT_BUCKETS) + 1))

    def observe_rtt(self, seconds: float) -> None:
        self.rtt_s += seconds
        self.rtt_counts[bisect.bisect_left(RTT_BUCKETS, seconds)] += 1


class NodeMetrics:
    """A node's part of ``/metrics``, read from its counters when scraped."""

    def __init__(self, node: ClusterNode) -> None:
        self.node = node

    def describe(self) -> Iterator[Metric]:
        return self.collect()

    def collect(self) -> Iterator[Metric]:
        node, stats = self.node, self.node.stats
        yield GaugeMetricFamily("tessera_cluster_owned_games",
                                "Live games this node owns (holds the lease of)",
                                value=len(node.leases.held))
        yield GaugeMetricFamily("tessera_cluster_followed_games",
                                "Games owned elsewhere that connections here follow",
                                value=len(node.remote))
        for name, text, value in (
                ("forwarded_requests", "Requests sent to the node owning their game",
                 stats.forwarded),
                ("served_requests", "Requests served for other nodes", stats.served),
                ("replies", "Replies received to this node's requests",
                 node.bus.stats.replies),
                ("forwarded_moves", "Moves played on a game another node owns",
                 stats.forwarded_moves),
                ("takeovers", "Games taken over from another node", stats.takeovers),
                ("games_lost", "Games lost to another node (lease or epoch)", stats.lost),
                ("events_published", "Game events published to other nodes",
                 stats.published),
                ("events_unpublished", "Game events no other node followed (not published)",
                 stats.unpublished),
                ("bus_gaps", "Reconnections to Redis after which events may have been missed",
                 node.bus.stats.gaps)):
            yield CounterMetricFamily(f"tessera_cluster_{name}_total", text, value=value)
        cumulative = list(itertools.accumulate(stats.rtt_counts))
        yield HistogramMetricFamily(
            "tessera_cluster_request_seconds",
            "Round trip of a request forwarded to another node, through Redis",
            buckets=[*((str(b), c) for b, c in zip(RTT_BUCKETS, cumulative, strict=False)),
                     ("+Inf", cumulative[-1])], sum_value=stats.rtt_s)


class ClusterReach:
    """``seam.Reach`` on a node: lobby events through the lobby feed, a user's events
    through the nodes they are connected to."""

    def __init__(self, node: ClusterNode) -> None:
        self.node = node
        self.feed = Feed(node.bus, node.keys.lobby_channel, self._deliver)
        self.relists = Feed(node.bus, node.keys.relist_channel, self._relist)

    def _deliver(self, frame: bytes) -> None:
        self.node.host.lobby.heard(frame)

    def _relist(self, _payload: bytes) -> None:
        self.node.host.lobby.may_have_missed()

    async def announce(self, frame: bytes) -> None:
        await self.feed.announce(frame)

    async def relist(self) -> None:
        await self.relists.announce(b"")

    async def send_elsewhere(self, user_id: int, nodes: Iterable[str],
                             frames: list[bytes]) -> None:
        for node in nodes:
            with contextlib.suppress(Exception):
                await self.node.bus.request(node, "to_user", {"u": user_id, "frames": frames})

    def seats_elsewhere(self, user_id: int, nodes: Iterable[str]) -> list[Seated]:
        return [RemotePlayer(self.node, node, user_id) for node in nodes]

    async def seat_elsewhere(self, room: GameRoom, user_id: int, nodes: Iterable[str],
                             started: bytes, after: list[bytes]) -> None:
        await asyncio.gather(*(self.node.seat_remote(node, room, user_id, started, after)
                               for node in nodes))

    async def look_again(self) -> None:
        with contextlib.suppress(Exception):
            await self.node.refresh_nodes()

    async def serve_to_user(self, body: dict[str, Any], _sender: str) -> None:
        self.node.host.members.send(body["u"], body["frames"])


class RemotePlayer:
    """A player of a starting game who is connected to another node (``Games.start``
    seats them): present in the game through their node."""

    def __init__(self, node: ClusterNode, node_id: str, user_id: int) -> None:
        self.node = node
        self.node_id = node_id
        self.user_id = user_id

    async def joined_game(self, room: GameRoom) -> None:
        seat = room.seat_of(self.user_id)
        if seat is not None:
            await self.node.seat_present(room, self.node_id, seat)


class ClusterRevocations:
    """``seam.Revocations`` on a node: a logout closes the token's connections on every
    node at once (the database poll stays the safety net)."""

    def __init__(self, node: ClusterNode) -> None:
        self.feed = Revocations(node.bus, node.revoked)

    async def announce(self, digests: list[str]) -> None:
        await self.feed.announce(digests)


class ClusterNode:
    """A node's side of the seam (``server.seam.Topology``; see the module docstring)."""

    def __init__(self, settings: Settings, cluster: ClusterSettings, bus: Bus) -> None:
        self.settings = cluster
        self.bus = bus
        self.keys = bus.keys
        self.node_id = cluster.node_id
        self.description = f"node {cluster.node_id} of cluster {cluster.name}"
        self.shares_database = True
        owner = owner_value(cluster.node_id, cluster.incarnation)
        self.leases = Leases(bus.redis, self.keys, owner, ttl_ms=cluster.lease_ms,
                             on_lost=self._lease_lost)
        self.registry: NodeRegistry | None = None
        self.live_nodes: set[str] = {cluster.node_id}
        self.dead_owners: frozenset[str] = frozenset()  # lease values of dead processes
        self._nodes_read = -1.0  # when live_nodes and dead_owners were read (loop time)
        self._swept_for: frozenset[str] = frozenset()  # dead owners _watch_nodes swept for
        # the seam's parts (server.seam.Topology)
        self.placement = self
        self.reach = ClusterReach(self)
        self.presence = RedisPresence(bus.redis, self.keys, cluster.node_id,
                                      lambda: self.live_nodes)
        self.seeks = RedisSeeks(bus.redis, self.keys)
        self.challenges = RedisChallenges(bus.redis, self.keys)
        self.rematches = RedisRematches(bus.redis, self.keys)
        self.account_requests = RedisTokenBuckets(bus.redis, self.keys, "requests",
                                                  settings.account_rate,
                                                  settings.account_burst)
        self.account_chat = RedisTokenBuckets(bus.redis, self.keys, "chat",
                                              settings.chat_rate, settings.chat_burst)
        self.address_logins, self.address_guests = address_budgets(
            settings, partial(RedisTokenBuckets, bus.redis, self.keys))
        self.revocations = ClusterRevocations(self)
        self.lockout = RedisLockout(bus.redis, self.keys, settings.login_lockout_after,
                                    settings.login_lockout_base_s,
                                    settings.login_lockout_max_s)
        self.roster = RedisRoster(bus.redis, self.keys, owner,
                                  int(max(5.0, 3 * settings.ladder_round_s) * 1000))
        self.remote: dict[str, RemoteGame] = {}
        self.stats = NodeStats()
        self._host: Host | None = None
        self._subscribing: dict[str, asyncio.Future[None]] = {}
        self._seats: dict[tuple[str, str, int], RemoteSeat] = {}
        self._taking: dict[str, asyncio.Task[bool]] = {}
        self._owners: dict[str, str] = {}  # a game's owner as last found (a hint)
        # games owned here that another node may follow -> the mark made last (docstring)
        self._followed: set[str] = set()
        self._reclaiming: dict[str, asyncio.Task[None]] = {}
        # games lost whose connections here do not follow them yet: (room, connections)
        self._orphans: dict[str, tuple[GameRoom, list[Any]]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()

    @property
    def host(self) -> Host:
        assert self._host is not None, "the node is not bound to a server"
        return self._host

    # -- lifecycle (server.seam.Topology) ------------------------------------------------
    def bind(self, host: Host) -> None:
        self._host = host
        host.metrics.registry.register(NodeMetrics(self))

    async def prepare(self) -> None:
        """Serve the other nodes; hold leases; look for games nobody owns (before
        listening: a node restores nothing, it takes games over as they need an owner)."""
        for op, handler in (("game", self._serve_game), ("move", self._serve_move),
                            ("follow", self._serve_follow),
                            ("seat", self._serve_seat), ("events", self._serve_events),
                            ("seat_player", self._serve_seat_player),
                            ("to_user", self.reach.serve_to_user)):
            self.bus.serve(op, handler)
        self.leases.start()
        self.spawn(self._sweep_forever())

    async def start(self, address: str) -> None:
        """Join: the registry (heartbeats), the lobby's feeds, the revocations' feed."""
        self.registry = NodeRegistry(
            self.bus.redis, self.keys, self.node_id, self.settings.incarnation, address,
            report=lambda: (self.leases.held, len(self.host.sessions)),
            on_dead=self._node_dead, interval_s=self.settings.heartbeat_s,
            dead_after_s=self.settings.dead_after_s, channel=self.bus.channel)
        with contextlib.suppress(RedisError):
            await self.registry.beat()  # listed at once; else from the first beat that can
        self.registry.start()
        with contextlib.suppress(RedisError):
            await self.refresh_nodes()
        self.spawn(self._watch_nodes())
        self.spawn(self.sweep())  # an earlier process of this node's games, at once
        await self.reach.feed.start()
        await self.reach.relists.start()
        await self.revocations.feed.start()

    def compact(self) -> None:
        """Nothing: the lobby's state is in Redis."""

    # -- placement (server.seam.Placement) -----------------------------------------------
    def room_class(self) -> Callable[..., GameRoom]:
        return owned_room_class(self)

    async def playing_counts(self, user_ids: list[int]) -> dict[int, int]:
        return await self.host.store.playing_counts(user_ids)

    def revoked(self, digests: list[str]) -> None:
        """Tokens revoked on another node (a logout): their connections here close now
        (the database poll, ``revocation.enforce_revocations``, stays the safety net)."""
        if self._host is not None:
            close_revoked(self.host.sessions, set(digests))

    async def refresh_nodes(self, *, within_s: float = 0.0) -> None:
        """Look up the nodes alive now (``live_nodes``: whose presence counts) and the
        lease values of the dead ones (``dead_owners``), unless read ``within_s`` ago."""
        assert self.registry is not None
        loop = asyncio.get_running_loop()
        if within_s and loop.time() - self._nodes_read < within_s:
            return
        self._nodes_read = loop.time()
        nodes = await self.registry.nodes()
        alive = {info.node_id for info in nodes if info.alive}
        alive.add(self.node_id)
        self.dead_owners = frozenset(info.owner for info in nodes
                                     if not info.alive and info.node_id != self.node_id)
        for gone in self.live_nodes - alive:
            self._forget_seats_of(gone)
        self.live_nodes = alive

    def _forget_seats_of(self, node_id: str) -> None:
        """A node died: its players' connections are gone from the games owned here."""
        for key in [key for key in self._seats if key[1] == node_id]:
            seat = self._seats.pop(key)
            room = self.host.games.live(seat.game_id)
            if room is not None:
                self.spawn(room.player_disconnected(seat.seat, seat))

    async def _watch_nodes(self) -> None:
        """Every beat: the nodes alive; when a process died since the last look, its
        games are looked for at once here too (not only by the node that claims the death:
        the survivors share the takeovers, each sweep in its own random order)."""
        while True:
            checkpoint()
            await asyncio.sleep(self.settings.heartbeat_s)
            try:
                await self.refresh_nodes()
                if self.dead_owners - self._swept_for:
                    self.spawn(self.sweep())
                self._swept_for = self.dead_owners
            except RedisError as exc:
                log.debug("cluster: nodes not refreshed: %s", exc)

    async def quiesce(self) -> None:
        """Stop taking games over and publishing (the server is stopping)."""
        await stop(list(self._tasks))

    async def close(self) -> None:
        """Stop; give every lease up, so that others take the games over at once (call it
        once the commit queue has written what it held).

        Within the lease time: past it the leases have run out anyway, so what is not
        done by then (Redis away, say) is left; the registry forgets a node that stopped
        beating, and the process exits."""
        within_s = self.settings.lease_ms / 1000
        try:
            async with asyncio.timeout(within_s):
                await self.quiesce()
                if self.registry is not None:
                    await self.registry.close()
                await self.leases.close(release=True)
        except TimeoutError:
            log.error("cluster: the node's stop took more than %g s: its leases run out "
                      "by themselves", within_s)
        for remote in self.remote.values():
            remote.close()

    def spawn(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("cluster: a task failed: %r", task.exception())

    # -- ownership (server.games.Ownership, owned.Owner) ----------------------------------
    async def claim_new(self, game_id: str) -> int:
        try:
            if await self.leases.acquire(game_id):
                return 0
        except RedisError as exc:
            raise unavailable(None, exc) from exc
        raise p.ProtocolError("a new game's id is leased already; try again",
                              code=p.ErrorCode.INTERNAL_ERROR)

    def finished(self, room: GameRoom) -> None:
        self._drop_seats(room.game_id)
        self._followed.discard(room.game_id)
        self.spawn(self.leases.release(room.game_id))

    def holds(self, game_id: str) -> bool:
        return self.leases.holds(game_id)

    async def still_owns(self, game_id: str) -> bool:
        try:
            return await self.leases.owner_of(game_id) == self.leases.owner
        except RedisError:
            return True  # cannot tell: the refusal stands (the lease's time bounds it)

    def publish(self, game_id: str, seq: int, kind: str, frame: bytes) -> None:
        """Publish a game's event on its channel if another node may follow it, with this
        event-loop turn's other publishes (a failure is logged: the followers' gap
        detection fetches what they missed)."""
        if game_id not in self._followed:
            self.stats.unpublished += 1
            return
        if kind == FINAL:
            self._followed.discard(game_id)
        self.stats.published += 1
        self.bus.publish_soon(self.keys.game_channel(game_id),
                              msgpack.packb([seq, kind, frame], use_bin_type=True))

    def mark_followed(self, game_id: str) -> None:
        """Another node may follow a game owned here (it subscribed to the channel before
        it asked): publish its events from now until the game ends here (a follower that
        lost its subscription a while, or came without asking, as a node that lost the
        game does, still gets them)."""
        self._followed.add(game_id)

    async def confirm(self, game_id: str) -> bool:
        reclaim = self._reclaiming.get(game_id)
        if reclaim is not None:
            await asyncio.shield(reclaim)
        return self.leases.holds(game_id)

    def _lease_lost(self, game_id: str, reason: LostReason) -> None:
        if reason == "expired" and self.host.games.live(game_id) is not None:
            # The key is gone, not taken (Redis restarted and forgot it): take it again.
            # Safe: had another node taken the game meanwhile, it bumped the epoch, and
            # the database refuses our writes.
            task = asyncio.get_running_loop().create_task(self._reclaim(game_id))
            self._reclaiming[game_id] = task
            task.add_done_callback(lambda _: self._reclaiming.pop(game_id, None))
            return
        self.lost(game_id, f"lease {reason}")

    async def _reclaim(self, game_id: str) -> None:
        try:
            again = await self.leases.acquire(game_id)
        except RedisError:
            again = False
        if not again:
            self.lost(game_id, "lease gone, and taken by another node")

    def lost(self, game_id: str, why: str) -> None:
        """Stop running a game another node owns now; its connections here follow it
        from the store and then from the new owner."""
        room = self.host.games.forget(game_id)
        if room is None:
            return
        room.lost = True  # type: ignore[attr-defined]
        self._followed.discard(game_id)
        self.stats.lost += 1
        log.warning("cluster: lost game %s (%s)", game_id, why,
                    extra={"game_id": game_id})
        self._drop_seats(game_id)
        self.spawn(self.leases.release(game_id))
        followers = [listener for listener in room.listeners
                     if not isinstance(listener, RemoteSeat)]
        if followers:
            self._orphans[game_id] = (room, followers)
            self.spawn(self._rehome(game_id))

    async def _rehome(self, game_id: str) -> None:
        """The connections here of a game lost follow it from the store, then from its
        new owner (tried again while Redis or PostgreSQL are away; if the game is taken
        over here meanwhile, they follow its room: ``_take_over``)."""
        delay = RETRY_S
        while game_id in self._orphans:
            try:
                await self._rehome_once(game_id)
                return
            except Exception as exc:
                log.info("cluster: rehoming the followers of %s: %s", game_id, exc)
                await asyncio.sleep(delay)
                delay = min(2.0, delay * 2)

    async def _rehome_once(self, game_id: str) -> None:
        remote = await self._remote_game(game_id)
        try:
            stored = await self.host.store.get_game(game_id)
            found = self._orphans.pop(game_id, None)
            if stored is None or found is None:
                return
            room, followers = found
            snapshot = wire.stored_snapshot(stored)
            frame = p.encode(p.GameState(game=snapshot))
            remote.player_ids = (room.players[0].user_id, room.players[1].user_id)
            for session in followers:
                rooms = getattr(session, "rooms", None)
                if rooms is not None and rooms.get(game_id) is room:
                    rooms[game_id] = remote
                user = getattr(session, "user", None)
                seat = room.seat_of(user.id) if user is not None else None
                session.send_frame(frame)
                remote.attach(session, snapshot.seq, seat)
            self.catch_up(remote)  # what the new owner sent before we subscribed
        finally:
            self._release_hold(remote)

    async def take_over(self, game_id: str) -> bool:
        """Run the game here if nobody owns it (True if it is run here now)."""
        task = self._taking.get(game_id)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._take_over(game_id))
            self._taking[game_id] = task
            task.add_done_callback(lambda _: self._taking.pop(game_id, None))
        return await asyncio.shield(task)

    async def _take_over(self, game_id: str) -> bool:
        games = self.host.games
        if games.live(game_id) is not None:
            return True
        try:
            if not await self.leases.acquire(game_id):
                return False
        except RedisError:
            return False
        try:
            epoch = await self.host.store.take_over_game(game_id)
            stored = None if epoch is None else await self.host.store.get_game(game_id)
            if epoch is None or stored is None or stored.info.status != "playing":
                await self.leases.release(game_id)
                return False
            room = await games.adopt(stored, epoch)
        except Exception:
            log.exception("cluster: taking over %s failed", game_id)
            await self.leases.release(game_id)
            return False
        self.stats.takeovers += 1
        log.info("cluster: took over game %s at epoch %d", game_id, epoch,
                 extra={"game_id": game_id})
        frame = p.encode(p.GameState(game=room.snapshot()))
        if games.live(game_id) is room:
            self.mark_followed(game_id)  # the last owner's followers
            self.publish(game_id, room.seq, SNAPSHOT, frame)
        followers: list[tuple[Any, int | None]] = []
        remote = self.remote.pop(game_id, None)
        if remote is not None:  # its followers here now follow the room itself
            await self.bus.unsubscribe(self.keys.game_channel(game_id))
            remote.close()
            followers += [(listener, remote.seats.get(listener)) for listener in remote.listeners]
        orphaned = self._orphans.pop(game_id, None)
        if orphaned is not None:  # lost here a moment ago, and not yet followed elsewhere
            old, listeners = orphaned
            followers += [(listener, old.seat_of(listener.user.id) if getattr(
                listener, "user", None) is not None else None) for listener in listeners]
        async with room.lock:
            for listener, seat in followers:
                rooms = getattr(listener, "rooms", None)
                if rooms is not None:
                    rooms[game_id] = room
                listener.send_frame(frame)
                if seat is None:
                    room.subscribe(listener)
                else:
                    await room.player_connected(seat, listener, tell_self=False)
        return True

    async def _sweep_forever(self) -> None:
        every = self.settings.lease_ms / 1000 / 3
        while True:
            checkpoint()
            await asyncio.sleep(every * (0.75 + random.random() / 2))
            try:
                await self.sweep()
            except Exception as exc:
                log.warning("cluster: sweep failed: %s", exc)

    async def sweep(self) -> int:
        """Take over the games in progress that nobody owns, or a dead process owns (its
        leases broken first); how many were taken."""
        games = self.host.games
        ids = [g for g in await self.host.store.playing_game_ids() if games.live(g) is None]
        if not ids:
            return 0
        values = await self.bus.redis.mget([self.keys.lease(g) for g in ids])
        if self.registry is not None and any(value is not None for value in values):
            await self.refresh_nodes()
        free = []
        for game_id, value in zip(ids, values, strict=True):
            if value is not None and self._dead_owner(as_str(value)):
                await self.leases.break_lease(game_id, as_str(value))
                value = None
            if value is None:
                free.append(game_id)
        random.shuffle(free)
        room = asyncio.Semaphore(TAKEOVERS_AT_ONCE)

        async def take(game_id: str) -> bool:
            async with room:
                return await self.take_over(game_id)

        return sum(await asyncio.gather(*(take(g) for g in free[:SWEEP_BATCH])))

    def _node_dead(self, node_id: str) -> None:
        """A dead node (claimed by this one): its members go offline, its connections in
        the games owned here are forgotten, and its games are looked for at once (first:
        their players wait)."""
        self.spawn(self.sweep())
        self.spawn(self._reap(node_id))
        self._forget_seats_of(node_id)

    async def _reap(self, node_id: str) -> None:
        """A dead node's members: those now offline everywhere lose their offers."""
        for user in await self.presence.reap(node_id):
            await self.host.lobby.gone(user)

    def _drop_seats(self, game_id: str) -> None:
        for key in [key for key in self._seats if key[0] == game_id]:
            del self._seats[key]

    # -- asking the owner ------------------------------------------------------------------
    async def call_owner(self, game_id: str, op: str, body: dict[str, Any], *,
                         take: bool = True, settled: asyncio.Future[Any] | None = None
                         ) -> Any:
        """Ask the owner of a game to serve ``op``: its reply (or ``settled``'s result,
        ``Bus.request``); ``LOCAL`` if this node runs the game (now: nobody owned it, and
        it was taken over here, unless not ``take``); None if the game is not in progress
        anywhere (finished or unknown: the store answers), or, not ``take``, has no owner
        now."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.lease_ms / 1000 + self.settings.request_timeout_s
        problem: BaseException | None = None
        while True:
            if self.host.games.live(game_id) is not None:
                return LOCAL
            try:
                value = self._owners.pop(game_id, None) or await self.leases.owner_of(game_id)
            except RedisError as exc:  # Redis away a moment (restarted, or this node paused)
                problem = exc
            else:
                if value is not None and self._predecessor(value):
                    await self.leases.break_lease(game_id, value)
                    value = None
                if value is None and not take:
                    return None
                if value is None or value == self.leases.owner:
                    if await self.take_over(game_id):
                        return LOCAL
                    if not await self._playing(game_id):
                        return None
                else:
                    try:
                        reply = await self._ask(owner_node(value), op, body, settled)
                        if len(self._owners) > OWNER_HINTS:
                            self._owners.clear()
                        self._owners[game_id] = value  # asked first next time
                        return reply
                    except RemoteError as exc:
                        if exc.code not in (NOT_OWNER, UNKNOWN_OP):  # (a node starting)
                            raise client_error(exc, game_id) from None
                    except (NodeUnreachable, RequestTimeout):
                        pass
                    except BusUnavailable as exc:
                        problem = exc
                    if await self._owner_dead(value) and await self._break(game_id, value):
                        continue  # broken before it ran out: take the game over now
            if loop.time() > deadline:
                if problem is not None:
                    raise unavailable(game_id, problem)
                raise p.ProtocolError("the game's node does not answer; try again",
                                      code=p.ErrorCode.INTERNAL_ERROR, game_id=game_id)
            await asyncio.sleep(RETRY_S)

    def _predecessor(self, value: str) -> bool:
        """Whether a lease is held by an earlier process under this node's id (dead: a
        node id is one process at a time)."""
        return value != self.leases.owner and owner_node(value) == self.node_id

    def _dead_owner(self, value: str) -> bool:
        """Whether a lease is held by a process known to be dead: an earlier one of this
        node, or one the registry declared dead (as of the last ``refresh_nodes``)."""
        return self._predecessor(value) or value in self.dead_owners

    async def _break(self, game_id: str, value: str) -> bool:
        try:
            return await self.leases.break_lease(game_id, value)
        except RedisError:
            return False

    async def _owner_dead(self, value: str) -> bool:
        """Whether the process holding a lease is dead (``call_owner``, when it did not
        answer; the registry read at most every ``RETRY_S``)."""
        if self.registry is None:
            return False
        try:
            await self.refresh_nodes(within_s=RETRY_S)
        except RedisError:
            return False
        return self._dead_owner(value)

    async def _ask(self, node: str, op: str, body: dict[str, Any],
                   settled: asyncio.Future[Any] | None = None) -> Any:
        started = time.perf_counter()
        self.stats.forwarded += 1
        reply = await self.bus.request(node, op, body, settled=settled)
        self.stats.observe_rtt(time.perf_counter() - started)
        return reply

    async def _playing(self, game_id: str) -> bool:
        stored = await self.host.store.get_game(game_id)
        return stored is not None and stored.info.status == "playing"

    async def forward(self, s: Asker, message: GameRequest) -> bool:
        """A player's request about a game owned elsewhere, sent as it is to the owner:
        the events it caused relayed here, then the owner's frames given to ``s``; False
        if the game is to be found here. A refusal raises, as the owner made it. A move
        goes one way (``_forward_move``)."""
        user = s.user
        assert user is not None
        game_id = message.game_id
        body = {"g": game_id, "m": p.encode(message), "u": user.id, "name": user.name,
                "kind": user.kind}
        if isinstance(message, p.Move):
            return await self._forward_move(s, message, body)
        return self._answered(s, game_id, await self.call_owner(game_id, "game", body))

    async def _forward_move(self, s: Asker, move: p.Move, body: dict[str, Any]) -> bool:
        """A move sent to the owner (op ``move``), acknowledged from the game's channel:
        its ``moved`` relayed here by the game's ``RemoteGame`` (to every follower here,
        ``s`` among them if it follows), then ``move_ack`` to ``s`` at once. Only a refusal,
        or the ack of a resent move (no event), comes back as a reply. No ``moved`` and
        no reply within the request's timeout fails as any request to the owner does
        (``call_owner``: asked again, or taken over); a resend is safe. Over the ordinary
        request (op ``game``) if nothing here relays the game yet."""
        game_id = move.game_id
        remote = await self._remote_game(game_id)  # subscribed before the owner is asked
        try:
            if remote.last is None:  # not followed here yet: nothing would relay moved
                reply = await self.call_owner(game_id, "game", body)
            else:
                acked: asyncio.Future[int] = asyncio.get_running_loop().create_future()

                def on_moved(seq: int) -> None:
                    if not acked.done():
                        s.send(p.MoveAck(id=move.id, game_id=game_id, ply=move.ply, seq=seq))
                        acked.set_result(seq)

                with remote.expect_move(move.ply, move.move, on_moved):
                    try:
                        reply = await self.call_owner(game_id, "move", body, settled=acked)
                    except p.ProtocolError:
                        if not acked.done():
                            raise
                if acked.done():
                    self.stats.forwarded_moves += 1
                    return True
        finally:
            self._release_hold(remote)
        answered = self._answered(s, game_id, reply)
        if answered:
            self.stats.forwarded_moves += 1
        return answered

    def _answered(self, s: Asker, game_id: str, reply: Any) -> bool:
        """The owner's reply to a forwarded request given to ``s`` (``forward``)."""
        if not isinstance(reply, dict):
            return False
        if "refused" in reply:
            code, text, retry = reply["refused"]
            raise p.ProtocolError(text, code=p.ErrorCode(code), game_id=game_id,
                                  retry_after_ms=retry)
        remote = self.remote.get(game_id)
        if remote is not None:
            remote.deliver_all([(seq, frame) for seq, frame in reply["ev"]],
                               over=reply["over"])
        for frame in reply["out"]:
            s.send_frame(frame)
        return True

    async def follow(self, s: Asker, game_id: str, request_id: int,
                     since_seq: int | None, *, as_player: bool) -> bool:
        """Watch or resume a game owned elsewhere, replying to the client; False if the
        game is to be found here (run here now, or over)."""
        remote = await self._remote_game(game_id)
        try:
            user = s.user
            body = {"g": game_id, "since": since_seq,
                    "u": user.id if (user is not None and as_player) else None}
            reply = await self.call_owner(game_id, "follow", body)
            if not isinstance(reply, dict):
                return False
            remote.player_ids = (reply["pids"][0], reply["pids"][1])
            seat = remote.seat_of(user.id) if (user is not None and as_player) else None
            if "snap" in reply:
                state = p.decode_server(reply["snap"])
                assert isinstance(state, p.GameState)
                s.send(p.GameState(id=request_id, game=state.game))
            else:
                for frame in reply["frames"]:
                    s.send_frame(frame)
                s.send(p.Ok(id=request_id))
            s.rooms[game_id] = remote
            remote.attach(s, reply["seq"], seat, told=True)
            return True
        finally:
            self._release_hold(remote)

    async def active_games(self, user_id: int) -> list[str]:
        """A user's games in progress, wherever they are run."""
        return await self.host.store.playing_game_ids(user_id)

    # -- remote games (remote.Links) -----------------------------------------------------
    async def _remote_game(self, game_id: str) -> RemoteGame:
        """This node's relay of a game owned elsewhere, subscribed; held until
        ``_release_hold``."""
        remote = self.remote.get(game_id)
        if remote is None:
            remote = self.remote[game_id] = RemoteGame(game_id, self)
            remote.holds += 1
            confirmed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._subscribing[game_id] = confirmed
            try:
                await self.bus.subscribe(self.keys.game_channel(game_id),
                                         partial(self._on_game_message, remote))
                confirmed.set_result(None)
            except BaseException as exc:
                confirmed.set_exception(unavailable(game_id, exc))
                confirmed.exception()  # retrieved: the waiters get their own
                remote.holds -= 1
                self.remote.pop(game_id, None)
                await self.bus.unsubscribe(self.keys.game_channel(game_id))
                if not isinstance(exc, Exception):
                    raise  # a cancellation (or an exit) goes on as it came
                raise unavailable(game_id, exc) from exc
            finally:
                self._subscribing.pop(game_id, None)
            return remote
        remote.holds += 1
        waiting = self._subscribing.get(game_id)
        if waiting is not None:
            try:
                await asyncio.shield(waiting)
            except BaseException:
                remote.holds -= 1
                raise
        return remote

    def _release_hold(self, remote: RemoteGame) -> None:
        remote.holds -= 1
        if remote.holds == 0 and not remote.listeners:
            self.idle(remote)

    def _on_game_message(self, remote: RemoteGame, _channel: str, data: bytes) -> None:
        seq, kind, frame = msgpack.unpackb(data, raw=False)
        remote.deliver(seq, kind, frame)

    def game_over(self, remote: RemoteGame) -> None:
        """A game followed here is over: stop listening (its followers keep the relay as a
        finished room, as they keep a local one)."""
        if self.remote.get(remote.game_id) is remote:
            del self.remote[remote.game_id]
            self._owners.pop(remote.game_id, None)
            remote.close()
            self.spawn(self.bus.unsubscribe(self.keys.game_channel(remote.game_id)))

    def idle(self, remote: RemoteGame) -> None:
        if remote.holds or remote.listeners or self.remote.get(remote.game_id) is not remote:
            return
        del self.remote[remote.game_id]
        self._owners.pop(remote.game_id, None)
        remote.close()
        self.spawn(self.bus.unsubscribe(self.keys.game_channel(remote.game_id)))

    def catch_up(self, remote: RemoteGame) -> None:
        self.spawn(self._catch_up(remote))

    async def _catch_up(self, remote: RemoteGame) -> None:
        game_id = remote.game_id
        since = remote.last or 0
        try:
            reply = await self.call_owner(game_id, "events", {"g": game_id, "since": since})
        except p.ProtocolError as exc:
            log.warning("cluster: catching up on %s failed: %s", game_id, exc)
            remote.catch_up_failed()
            return
        if isinstance(reply, dict):
            if "snap" in reply:
                remote.deliver(reply["seq"], SNAPSHOT, reply["snap"])
            else:
                remote.deliver_all(((seq, frame) for seq, frame in reply["ev"]),
                                   over=reply.get("over", False))
            return
        stored = await self.host.store.get_game(game_id)  # over (or run here now)
        if stored is not None:
            snapshot = wire.stored_snapshot(stored)
            remote.deliver(snapshot.seq, SNAPSHOT, p.encode(p.GameState(game=snapshot)))

    def seat_changed(self, remote: RemoteGame, seat: int, present: bool) -> None:
        self.spawn(self._tell_seat(remote.game_id, seat, present))

    async def _tell_seat(self, game_id: str, seat: int, present: bool) -> None:
        with contextlib.suppress(p.ProtocolError):
            await self.call_owner(game_id, "seat", {"g": game_id, "seat": seat,
                                                    "present": present}, take=False)

    def on_gap(self) -> None:
        """The bus may have missed messages: every game followed here catches up, and the
        lobby's listing is read again; and Redis may have restarted empty: this node's
        members are online again."""
        for remote in list(self.remote.values()):
            self.catch_up(remote)
        if self._host is not None:
            self.host.lobby.may_have_missed()
            for member in list(self.host.members.by_id.values()):
                self.spawn(self._rejoin(member))

    async def _rejoin(self, member: Any) -> None:
        """Say again that a member is here (Redis may have lost it)."""
        with contextlib.suppress(Exception):
            await self.host.lobby.joined(member)

    # -- serving the other nodes -----------------------------------------------------------
    def _owned(self, game_id: str) -> GameRoom:
        room = None if self._host is None else self.host.games.live(game_id)
        if room is None or not self.leases.holds(game_id):
            raise RemoteError(NOT_OWNER, f"node {self.node_id} does not run {game_id}")
        self.stats.served += 1
        self.mark_followed(game_id)  # the asker subscribed first
        return room

    async def _serve_game(self, body: dict[str, Any], _sender: str) -> dict[str, Any]:
        """A request forwarded by the node its player is connected to: run by the handler
        it would have had here (``Host.serve_forwarded``); its frames, the events it
        caused, or its refusal."""
        return await self._run_forwarded(self._owned(body["g"]), body)

    async def _serve_move(self, body: dict[str, Any], _sender: str) -> Any:
        """A move forwarded one way (``_forward_move``): no reply once it is played (its
        ``moved``, published on the game's channel, which the asker follows, answers it);
        a refusal, or a resend's ack (it caused no event), is replied as for ``game``."""
        room = self._owned(body["g"])
        before = room.seq
        reply = await self._run_forwarded(room, body)
        if reply.get("out"):
            acked = msgpack.unpackb(reply["out"][-1], raw=False)
            if acked.get("t") == "move_ack" and acked.get("seq", 0) > before:
                return NO_REPLY
        return reply

    async def _run_forwarded(self, room: GameRoom, body: dict[str, Any]) -> dict[str, Any]:
        message = p.decode_client(body["m"])
        if getattr(message, "game_id", None) != room.game_id:
            raise RemoteError("bad_request", "a forwarded request is about its game")
        before = room.seq
        try:
            out = await self.host.serve_forwarded(
                Caller(body["u"], body["name"], body["kind"]), cast("GameRequest", message))
        except p.ProtocolError as exc:
            return {"refused": [str(exc.code), str(exc), exc.retry_after_ms]}
        return {"out": out, "ev": events_after(room, before), "over": not room.status.live}

    async def _serve_follow(self, body: dict[str, Any], sender: str) -> dict[str, Any]:
        room = self._owned(body["g"])
        since = body.get("since")
        user_id = body.get("u")
        async with room.lock:
            frames = room.events_since(since) if since else None
            seat = room.seat_of(user_id) if user_id is not None else None
            if seat is not None:
                await self.seat_present(room, sender, seat)
                if since:
                    frames = room.events_since(since)
            reply: dict[str, Any] = {"seq": room.seq,
                                     "pids": [player.user_id for player in room.players]}
            if frames is None:  # the state packed for spectators here (id 0: the asking
                packed, clocks = room.packed_state()  # node answers with its request's)
                reply["snap"] = packed.frame(id=0, **clocks)
            else:
                reply["frames"] = frames
            return reply

    async def seat_present(self, room: GameRoom, node: str, seat: int) -> None:
        """A player's connections on ``node`` count as present in a game owned here."""
        key = (room.game_id, node, seat)
        remote_seat = self._seats.get(key)
        if remote_seat is None:
            remote_seat = self._seats[key] = RemoteSeat(node, room.game_id, seat)
        if remote_seat not in room.present[seat]:
            await room.player_connected(seat, remote_seat, tell_self=False)

    async def _serve_seat(self, body: dict[str, Any], sender: str) -> None:
        room = self._owned(body["g"])
        seat = body["seat"]
        if body["present"]:
            async with room.lock:
                await self.seat_present(room, sender, seat)
            return
        remote_seat = self._seats.pop((room.game_id, sender, seat), None)
        if remote_seat is not None:
            await room.player_disconnected(seat, remote_seat)

    async def seat_remote(self, node: str, room: GameRoom, user_id: int, started: bytes,
                          after: list[bytes]) -> None:
        """Have ``node`` seat its connections of a player in a game that just started here
        (they get ``started``, then ``after``)."""
        body = {"g": room.game_id, "u": user_id,
                "pids": [player.user_id for player in room.players],
                "started": started, "after": after}
        self.mark_followed(room.game_id)
        try:
            await self.bus.request(node, "seat_player", body)
        except Exception as exc:  # they resume, as after any lost connection
            log.warning("cluster: seating user %d on %s: %s", user_id, node, exc)

    async def _serve_seat_player(self, body: dict[str, Any], _sender: str) -> None:
        game_id = body["g"]
        member = self.host.members.get(body["u"])
        if member is None or self.host.games.live(game_id) is not None:
            return
        remote = await self._remote_game(game_id)
        try:
            remote.player_ids = (body["pids"][0], body["pids"][1])
            seat = remote.seat_of(body["u"])
            for session in list(member.sessions):
                session.send_frame(body["started"])
                for frame in body["after"]:
                    session.send_frame(frame)
                session.rooms[game_id] = remote
                remote.attach(session, 1, seat, told=True)  # then what was relayed since
            self.catch_up(remote)  # whatever happened since it started
        finally:
            self._release_hold(remote)

    async def _serve_events(self, body: dict[str, Any], _sender: str) -> dict[str, Any]:
        room = self._owned(body["g"])
        since = body["since"]
        if room.events_since(since) is None:
            return {"seq": room.seq, "snap": p.encode(p.GameState(game=room.snapshot()))}
        return {"seq": room.seq, "ev": events_after(room, since), "over": not room.status.live}


def events_after(room: GameRoom, seq: int) -> list[list[Any]]:
    """``[seq, frame]`` of the room's kept events after ``seq``."""
    found: list[list[Any]] = []
    for event_seq, frame in reversed(room.events):
        if event_seq <= seq:
            break
        found.append([event_seq, frame])
    found.reverse()
    return found


def client_error(exc: RemoteError, game_id: str) -> p.ProtocolError:
    """The owner's refusal, as the client would have had it from the owner itself."""
    try:
        code = p.ErrorCode(exc.code)
    except ValueError:
        code = p.ErrorCode.INTERNAL_ERROR
    retry = NOT_STORED_RETRY_MS if code is p.ErrorCode.NOT_STORED else None
    return p.ProtocolError(exc.message, code=code, game_id=game_id, retry_after_ms=retry)


def unavailable(game_id: str | None, exc: BaseException) -> p.ProtocolError:
    log.warning("cluster: Redis unavailable: %s", exc)
    return p.ProtocolError("the cluster is unavailable for a moment; try again",
                           code=p.ErrorCode.INTERNAL_ERROR, game_id=game_id)


@contextlib.asynccontextmanager
async def cluster_node(settings: Settings, cluster: ClusterSettings
                       ) -> AsyncIterator[ClusterNode]:
    """A node of ``cluster`` (its link to Redis open), to run the server with; closed on
    exit (its leases given up), once the server has stored what it held."""
    keys = Keys(cluster.name)
    node: ClusterNode | None = None

    def on_gap() -> None:
        if node is not None:
            node.on_gap()

    async with Bus(cluster.url, keys, cluster.node_id, on_gap=on_gap,
                   request_timeout_s=cluster.request_timeout_s) as bus:
        node = ClusterNode(settings, cluster, bus)
        try:
            yield node
        finally:
            await node.close()


__all__ = ["LOCAL", "ClusterNode", "cluster_node"]
