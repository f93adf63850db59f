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
    login_lockout_after: int = 5
    login_lockout_base_s: float = 30.0
    server_name: str = "tessera"
    event_log_limit: int = 4096  # events kept in memory per game for resume
    revocation_poll_s: float = 1.0  # connections on a revoked token are closed this soon
    reuse_port: bool = False  # SO_REUSEPORT: several workers listen on one port
    # a rating deviation grows by one Glicko-2 period's worth per this many seconds without
    # rated games (docs/RATINGS.md); `tessera ratings verify` must be given the same
    rating_period_s: float = 86_400.0
    ladder_round_s: float = 10.0  # the bot ladder pairs its idle bots this often
