"""Server settings: defaults, command-line flags and environment variables in one place."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from .storage import default_database_url


def default_db_url() -> str:
    """``$TESSERA_DB``, or ``tessera.db`` in the data directory (``$TESSERA_DATA`` or
    ``./data``, created if missing)."""
    return os.environ.get("TESSERA_DB") or default_database_url()


@dataclass
class Settings:
    """Everything an operator can tune. See ``tessera serve --help``."""

    host: str = "127.0.0.1"
    port: int = 8765
    db_url: str = field(default_factory=default_db_url)
    sqlite_synchronous: str = "FULL"  # FULL: an acknowledged move survives power loss
    max_frame_bytes: int = 16 * 1024
    # requests per second per connection and per account (token buckets)
    conn_rate: float = 20.0
    conn_burst: float = 40.0
    account_rate: float = 40.0
    account_burst: float = 80.0
    chat_rate: float = 1.0
    chat_burst: float = 5.0
    out_buffer_bytes: int = 256 * 1024  # a client that lets more pile up unread is dropped
    ping_interval: float | None = 20.0
    ping_timeout: float | None = 20.0
    # how long a closing connection may take to finish the close handshake before it is cut
    # (a peer that stopped answering pings is dropped after interval + timeout + this)
    close_timeout: float = 10.0
    origins: list[str] | None = None  # browser Origins allowed besides the server's own
    house_bots: list[str] = field(default_factory=list)  # bundled bots the server runs
    grace_ms: int = 30_000  # an absent opponent may be claimed against after this
    # failed logins per (account, address) before a lock; the first lock, doubled by each
    # later one; the longest lock (never above LOCKOUT_CEILING_S, 15 minutes)
    login_lockout_after: int = 5
    login_lockout_base_s: float = 30.0
    server_name: str = "tessera"
    event_log_limit: int = 4096  # events kept in memory per game for resume
    revocation_poll_s: float = 1.0  # connections on a revoked token are closed this soon
    reuse_port: bool = False  # SO_REUSEPORT: several workers listen on one port
    login_lockout_max_s: float = 900.0
    # argon2 hashes running or waiting; beyond it a login/register is refused at once
    # (rate_limited), so an admitted login waits about a second at most; 0: no bound
    hash_queue: int = 8
    # argon2id's cost per hash: passes over the memory, and the memory in KiB (the
    # library's recommended profile, RFC 9106's second choice; 4 lanes). A hash made at
    # one cost verifies at that cost; a login rehashes a password stored at another.
    # The tests lower both (tests/server/conftest.py): a production server keeps these.
    password_hash_time_cost: int = 3
    password_hash_memory_kib: int = 65_536
    # per client address (an IPv6 address counts by its /64); 0 switches a limit off.
    # Logins and registrations (each costs a hash): this many a minute, bursts of
    # address_login_burst. New guest accounts: this many an hour, bursts of
    # address_guest_burst. A family behind one address never meets these.
    address_logins_per_minute: float = 30.0
    address_login_burst: int = 30
    address_guests_per_hour: float = 60.0
    address_guest_burst: int = 20
    # guests that never played are deleted this long after they were last seen (0: never),
    # by a sweep that runs this often
    guest_ttl_s: float = 86_400.0
    guest_sweep_interval_s: float = 600.0
    # -- what a stranger can make the server hold (docs/RELIABILITY.md, "Bounded structures")
    hello_timeout_s: float = 10.0  # a connection that has not said hello by then is closed
    auth_timeout_s: float = 30.0  # ... one not logged in by then (and watching nothing)
    max_connections_per_address: int = 256  # open websockets from one address
    # open websockets in all; None: the open-files limit less ``fd_reserve``
    max_connections: int | None = None
    # files kept for the database, logs, /healthz, /metrics, and bursts of accepts (asyncio
    # accepts up to 100 sockets a loop turn; the cut ones are closed a turn or two later);
    # at most a quarter of a small open-files limit
    fd_reserve: int = 1024
    # connections waiting for their HTTP request: beyond it the oldest is cut once silent
    # for a second, or at once when the files run short (files are kept for this many)
    max_handshakes: int = 256
    accept_error_log_s: float = 10.0  # accept failures (out of files) logged this often
    # connections the kernel queues for accept() (capped by net.core.somaxconn)
    listen_backlog: int = 100
    # connections asyncio accepts in one loop turn, before any can be cut (it must stay well
    # below fd_reserve: 1,024 with a reserve of 500 ran out of files): a flood is taken a
    # few at a time between the open connections' frames (wsio.accept_in_batches)
    accept_batch: int = 16
    max_open_seeks: int = 5  # per account
    max_seeks_per_address: int = 50
    max_seeks: int = 5_000  # open seeks in all
    lobby_seeks_shown: int = 1_000  # in a ``lobby`` reply; ``more_seeks`` counts the rest
    lobby_players_shown: int = 1_000  # the same for players (``more_players``)
    max_challenges_per_target: int = 50  # pending challenges to one user
    max_challenges_per_challenger: int = 10  # pending challenges from one user
    max_games_per_user: int = 100  # games in progress per account
    max_watched_per_connection: int = 100  # games one connection watches (not its own)
    # a rating deviation grows by one Glicko-2 period's worth per this many seconds without
    # rated games (docs/RATINGS.md); `tessera ratings verify` must be given the same
    rating_period_s: float = 86_400.0
    ladder_round_s: float = 10.0  # the bot ladder pairs its idle bots this often

    def __post_init__(self) -> None:
        if self.password_hash_time_cost < 1:
            raise ValueError(f"password_hash_time_cost must be >= 1, not "
                             f"{self.password_hash_time_cost}")
        if self.password_hash_memory_kib < 32:  # argon2: 8 KiB a lane, 4 lanes
            raise ValueError(f"password_hash_memory_kib must be >= 32, not "
                             f"{self.password_hash_memory_kib}")
        # ``welcome`` announces these as whole numbers of at least 1 (protocol Limits): a
        # rate below one a second would make every welcome invalid
        for name in ("conn_rate", "conn_burst"):
            if not 1 <= getattr(self, name) <= 100_000:
                raise ValueError(f"{name} must be from 1 to 100,000, not {getattr(self, name)}")
