"""The server wired together: storage, accounts, lobby, games, history and the listener.

:func:`run_server` is what ``tessera serve`` runs; :func:`running_server` is the same
server as an async context manager for tests and tools. The :class:`App` holds the parts
every connection needs and decides nothing itself: games live in :mod:`server.games`,
requests are handled in :mod:`server.handlers`, stored records become protocol messages in
:mod:`server.wire`. Plain HTTP on the same port serves ``/healthz``, ``/metrics``
(:mod:`server.http`) and the browser page (:mod:`server.web`); websocket clients connect to
``/ws`` (or ``/``).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import websockets
from websockets.asyncio.server import Server, ServerConnection

from . import collector, memory, wsio
from .accounts import Accounts, Passwords
from .admission import Admission, describe_caps, open_files_limit
from .config import Settings
from .deadlines import Wheel
from .games import Games
from .guests import GuestMaker, sweep_guests_forever
from .handlers import HANDLERS
from .history import History
from .housebots import HouseBots, start_house_bots
from .http import Routes
from .ladder import Ladder
from .lobby import Lobby, Member, Members, Offer
from .local import LocalTopology
from .logs import AcceptFailureLog
from .metrics import Metrics, measure_loop_lag
from .ratelimit import BucketTable
from .rematch import Rematches
from .revocation import enforce_revocations
from .rooms import GameRoom
from .session import Forwarded, Session
from .storage import GameRatings, Storage, open_storage, redact_url
from .storage.sole import SoleServer, sole_server
from .tasks import Tasks
from .tls import ServerTls, schemes, server_tls
from .wsio import CannotListen, Handling, Outbox, listen_problem

if TYPE_CHECKING:
    from .host import Hosted
    from .seam import Caller, GameRequest

log = logging.getLogger(__name__)

IDLE_SWEEP_S = 60.0  # how often idle rate-limit buckets and lockout entries are dropped
CHURN_MIN_DROP = 200  # connections closed a second: a fall by this much hands memory back


class App:
    """What every connection handler needs, made once per server and closed with it.

    What differs between a lone server and a node of a cluster comes from ``topology``
    (:mod:`server.seam`), taken once here; the app is never rewired after it is built."""

    def __init__(self, settings: Settings, storage: Storage, metrics: Metrics,
                 topology: Hosted) -> None:
        self.settings = settings
        self.store = storage.store
        self.metrics = metrics
        self.topology = topology
        self.tasks = Tasks()
        self.passwords = Passwords(max_queued=settings.hash_queue or None,
                                   time_cost=settings.password_hash_time_cost,
                                   memory_kib=settings.password_hash_memory_kib)
        self.guests = GuestMaker(self.store)
        self.accounts = Accounts(self.store, self.passwords, self.guests, topology.lockout,
                                 topology.address_logins, topology.address_guests,
                                 timedelta(days=settings.deleted_name_hold_days))
        self.placement = topology.placement
        self.members = Members(settings.rating_period_s)
        self.games = Games(settings, self.store, storage.writer, metrics, self.tasks.spawn,
                           self.placement, on_rated=self._rated)
        self.lobby = Lobby(settings, self.members, topology, self.games, self.store,
                           metrics.snapshots_packed.labels(what="lobby").inc,
                           spawn=self.tasks.spawn)
        self.history = History(self.store, settings.rating_period_s)
        self.rematches = Rematches(self.games, self.lobby, topology.rematches)
        self.ladder = Ladder(topology.roster, self._start_ladder_game, self._online_ids,
                             self.store.ratings.of_users, self.placement.playing_counts,
                             period_s=settings.rating_period_s)
        self.lobby.on_offline.append(self.ladder.exit)
        self.files = open_files_limit()
        self.admission = Admission(settings, self.files, metrics.handshakes_cut.inc)
        self.routes = Routes(metrics, settings, self.admission)
        self.sessions: set[Session] = set()
        self.outbox = Outbox()
        self.handling = Handling()  # requests in progress; pings pass the slow ones
        self.handlers = HANDLERS
        self.deadlines = Wheel()  # the connections' hello and login deadlines
        # an account's budgets over all its connections (on a cluster: over every node)
        self.account_requests = topology.account_requests
        # the bytes of replies per client address (this process's own: a node sends what
        # its connections ask it for)
        self.address_egress = (
            BucketTable(settings.address_egress_rate, settings.address_egress_burst)
            if settings.address_egress_rate > 0 and settings.address_egress_burst >= 1
            else None)
        self.account_chat = topology.account_chat
        self.revocations = topology.revocations
        self._handing_back = asyncio.Lock()  # one hand-back at a time
        topology.bind(self)

    async def _start_ladder_game(self, offer: Offer, bots: tuple[Member, Member]
                                 ) -> GameRoom:
        return await self.lobby.start_game(offer, (bots[0].online(), bots[1].online()), {})

    async def _online_ids(self) -> set[int]:
        return {user.user_id for user in await self.topology.presence.everyone()}

    async def serve_forwarded(self, user: Caller, message: GameRequest) -> list[bytes]:
        """A request another process forwarded, run by its handler here (``host.Host``)."""
        return await Forwarded(self, user).run(message)

    def _rated(self, room: GameRoom, changes: GameRatings) -> None:
        """A rated game ended: its players' new ratings, for the lobby and the ladder."""
        assert room.result is not None
        self.lobby.rated_game(room.key, changes, room.result.winner, now=datetime.now(UTC))
        if not self.tasks.closed:
            self.tasks.spawn(self.lobby.relist_everywhere(), name="tessera-relist")

    async def serve_connection(self, ws: ServerConnection) -> None:
        """The websocket handler: one :class:`Session` for the connection's life."""
        session = Session(ws, self)
        self.sessions.add(session)
        self.metrics.connections.inc()
        try:
            await session.run()
        finally:
            self.sessions.discard(session)
            self.metrics.connections.dec()

    def sweep_idle(self, now: float | None = None) -> int:
        """Drop what strangers left in memory and no longer matters: rate-limit buckets
        that have refilled, failed-login pairs long quiet; how many entries went."""
        tables = (self.account_requests, self.account_chat, self.accounts.address_logins,
                  self.accounts.address_guests, self.accounts.lockout, self.address_egress)
        return sum(table.sweep(now) for table in tables if table is not None)

    async def sweep_idle_forever(self, interval_s: float = IDLE_SWEEP_S) -> None:
        """Every ``interval_s``: :meth:`sweep_idle`, then hand the free memory back to the
        system (in a thread: ``memory.give_back``)."""
        while True:
            await asyncio.sleep(interval_s)
            self.sweep_idle()
            await asyncio.to_thread(memory.give_back)

    def crowd(self) -> int:
        """What a flood adds and takes away again: open connections, connections waiting
        for their request, lobby members and open seeks (:class:`memory.DropWatch`)."""
        return self.admission.held() + len(self.members) + self.topology.seeks.held()

    def crowd_peak(self) -> int:
        """The largest :meth:`crowd` since the last call (at most: the parts' peaks)."""
        return self.admission.take_peak() + self.members.take_peak() + self.topology.seeks.held()

    async def hand_back_memory(self, collect: bool = True) -> None:
        """A crowd has gone: sweep, rebuild the tables it grew, collect what cycles it
        left (its connections leave none: :func:`wsio.release`; under
        :func:`collector.pace` only what is not frozen yet is scanned) and give the free
        memory back to the system. Without ``collect`` (a flood of short connections has
        passed, :class:`memory.Churn`) no collection and a single trim. One at a time:
        without ``collect`` it is skipped while another runs; with it, it waits its turn."""
        if not collect and self._handing_back.locked():
            return
        async with self._handing_back:
            t0 = time.perf_counter()
            swept = self.sweep_idle()
            self.members.compact()
            self.topology.compact()
            self.admission.compact()
            self.deadlines.compact()
            self.sessions = set(self.sessions)
            t1 = time.perf_counter()
            collected = gc.collect() if collect else 0
            t2 = time.perf_counter()
            await asyncio.to_thread(memory.give_back)
            self.metrics.memory_handbacks.inc()
            log.info("memory handed back", extra={
                "crowd": self.crowd(), "swept": swept, "collected": collected,
                "compact_ms": round((t1 - t0) * 1000, 1),
                "collect_ms": round((t2 - t1) * 1000, 1)})
            if collect:
                # what the closed connections' last callbacks free after the collection
                await asyncio.sleep(memory.TRIM_AGAIN_S)
                await asyncio.to_thread(memory.give_back)

    async def hand_back_after_churn(self) -> None:
        """Many connections came and went, each soon (:class:`memory.Churn`)."""
        await self.hand_back_memory(collect=False)

    def online_user_ids(self) -> set[int]:
        """The accounts connected to this server now."""
        return {s.user.id for s in self.sessions if s.user is not None}

    async def connected_user_ids(self) -> set[int]:
        """The accounts connected now to this server or to any other of its topology (what
        the guest sweep spares); raises if that cannot be read."""
        here = self.online_user_ids()
        await self.topology.reach.look_again()  # a node that started a moment ago counts
        return here | {user.user_id for user in await self.topology.presence.everyone()}

    async def close(self) -> None:
        """Stop the games' timers and the background work; release the password threads."""
        self.games.close()
        await self.tasks.close()
        await self.guests.close()
        self.passwords.close()


@dataclass
class Running:
    """A started server: its app, the port it listens on, its house bots, its TLS."""

    app: App
    ws_server: Server
    port: int
    house: HouseBots
    tls: ServerTls | None = None


@asynccontextmanager
async def running_server(settings: Settings, topology: Hosted | None = None
                         ) -> AsyncIterator[Running]:
    """Open storage (migrating it), prepare the topology (a lone server, by default,
    restores its games in progress), listen; on exit close with 1001.

    The server holds its database as its topology says (:mod:`server.storage.sole`): a lone
    server alone for its lifetime, so that a second one on the same database raises
    :class:`~server.storage.sole.DatabaseInUse` before it restores anything; a cluster's
    nodes share theirs with each other only. An address it cannot listen on raises
    :class:`CannotListen`; TLS files it cannot serve raise
    :class:`~server.tls.TlsProblem`, before anything is opened."""
    tls = server_tls(settings)
    if topology is None:
        topology = LocalTopology(settings)
    async with sole_server(settings.db_url, node=topology.shares_database) as sole, \
            _running_server(settings, topology, sole, tls) as running:
        yield running


@asynccontextmanager
async def _running_server(settings: Settings, topology: Hosted, sole: SoleServer,
                          tls: ServerTls | None) -> AsyncIterator[Running]:
    metrics = Metrics()
    async with open_storage(settings.db_url,
                            sqlite_synchronous=settings.sqlite_synchronous,  # type: ignore
                            on_commit=metrics.commit_batch.observe) as storage:
        app = App(settings, storage, metrics, topology)
        loop = asyncio.get_running_loop()
        accept_log = AcceptFailureLog(settings.accept_error_log_s, metrics.accept_failures.inc)
        accept_log.install(loop)
        untime_collections = metrics.time_collections()
        try:
            await topology.prepare()
            try:
                serving = await websockets.serve(
                    app.serve_connection, settings.host, settings.port,
                    process_request=app.routes.respond,
                    max_size=settings.max_frame_bytes, compression=None,
                    # pings start once a connection says hello (Session, wsio.keep_alive)
                    ping_interval=None, ping_timeout=None,
                    close_timeout=settings.close_timeout,
                    max_queue=16, server_header=None, reuse_port=settings.reuse_port,
                    backlog=settings.accept_batch,
                    ssl=tls.listening if tls else None,  # its handshake: open_timeout, 10 s
                    create_connection=wsio.reporting_connection(
                        app.admission.accepted, app.admission.lost,
                        app.admission.proxies.trusts if settings.proxy_protocol else None))
            except OSError as exc:
                raise CannotListen(listen_problem(settings.host, settings.port, exc)) from None
            async with serving as ws_server:
                wsio.accept_in_batches(ws_server, settings.listen_backlog)
                port = next(iter(ws_server.sockets)).getsockname()[1]
                sole.listening(f"{schemes(tls)[0]}://{settings.host}:{port}/ws")
                await topology.start(f"{settings.host}:{port}")
                house = await start_house_bots(app.store, settings.house_bots, settings.host,
                                               port)
                log.info("listening", extra={"host": settings.host, "port": port,
                                             "db": redact_url(settings.db_url),
                                             "games_in_progress": len(app.games),
                                             **describe_caps(app.admission, app.files)})
                app.tasks.spawn(enforce_revocations(app.store, lambda: app.sessions,
                                                    settings.revocation_poll_s),
                                name="tessera-revocations")
                app.tasks.spawn(app.ladder.run(settings.ladder_round_s), name="tessera-ladder")
                app.tasks.spawn(app.sweep_idle_forever(), name="tessera-sweep-idle")
                app.tasks.spawn(app.handling.run(), name="tessera-read-on")
                app.tasks.spawn(app.deadlines.run(), name="tessera-deadlines")
                app.tasks.spawn(memory.DropWatch(app.crowd, app.hand_back_memory,
                                                 peak=app.crowd_peak).run(),
                                name="tessera-memory-drop")
                churn = memory.Churn(app.admission.closed)
                app.tasks.spawn(memory.DropWatch(churn.last, app.hand_back_after_churn,
                                                 min_drop=CHURN_MIN_DROP,
                                                 peak=churn.take).run(),
                                name="tessera-memory-churn")
                app.tasks.spawn(measure_loop_lag(metrics), name="tessera-loop-lag")
                if settings.guest_ttl_s > 0:
                    app.tasks.spawn(sweep_guests_forever(
                        app.store, settings.guest_ttl_s, settings.guest_sweep_interval_s,
                        app.connected_user_ids), name="tessera-guest-sweep")
                try:
                    yield Running(app, ws_server, port, house, tls)
                finally:
                    await topology.quiesce()
                    app.games.close()
                    ws_server.close()  # closes every connection with 1001 (going away)
                    await ws_server.wait_closed()
                    await house.stop()
        finally:
            await app.close()
            accept_log.uninstall(loop)
            untime_collections()
    log.info("stopped: everything acknowledged is stored")


async def run_server(settings: Settings, topology: Hosted | None = None,
                     ready_file: str | None = None) -> None:
    """Serve until SIGTERM or SIGINT (as a lone server unless ``topology`` says else); with
    TLS, SIGHUP loads the certificate again for new connections."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with running_server(settings, topology) as running:
        collector.tune_gc()
        running.app.tasks.spawn(collector.pace(), name="tessera-gc-pace")
        if running.tls is not None:
            loop.add_signal_handler(signal.SIGHUP, running.tls.reload)
        if ready_file:
            with open(ready_file, "w") as f:
                f.write(f"{running.port}\n")
        who = running.app.topology.description
        ws, http = schemes(running.tls)
        print(f"tessera: {who + ' ' if who else ''}listening on "
              f"{ws}://{settings.host}:{running.port}/ws; the lobby is at "
              f"{http}://{settings.host}:{running.port}/", flush=True)
        await stop.wait()
        log.info("shutting down")


__all__ = ["App", "CannotListen", "Running", "run_server", "running_server"]
