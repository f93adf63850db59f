"""A node's cluster settings, and the checks ``tessera serve`` makes of its cluster flags."""

from __future__ import annotations

import os
import re
import secrets
import socket
from dataclasses import dataclass, field

from sqlalchemy.engine import make_url

from .keys import DEFAULT_CLUSTER_NAME, check_name


def default_node_id() -> str:
    """``HOST-PID``, made of the characters a node id may hold."""
    host = re.sub(r"[^A-Za-z0-9_.-]", "-", socket.gethostname())[:40] or "node"
    return f"{host}-{os.getpid()}"


@dataclass(frozen=True, slots=True)
class ClusterSettings:
    """What a node needs to take part in a cluster (``tessera serve --cluster URL``).

    ``incarnation`` tells this process from an earlier one under the same node id (a
    restarted worker): its leases are not the predecessor's.
    """

    url: str
    name: str = DEFAULT_CLUSTER_NAME
    node_id: str = field(default_factory=default_node_id)
    incarnation: str = field(default_factory=lambda: secrets.token_hex(4))
    lease_ms: int = 5000
    heartbeat_s: float = 0.5  # a killed node is seen dead a beat after its last one
    dead_after_s: float = 5.0
    request_timeout_s: float = 5.0

    def __post_init__(self) -> None:
        check_name("a cluster name", self.name)
        check_name("a node id", self.node_id)
        problem = cluster_url_problem(self.url)
        if problem:
            raise ValueError(problem)


def cluster_url_problem(url: str) -> str | None:
    """Why ``url`` is not a Redis URL (None if it is one)."""
    if not re.match(r"(redis|rediss|unix)://", url):
        return (f"--cluster {url!r} is not a Redis URL: use redis://HOST:PORT/DB "
                "(or rediss:// for TLS)")
    return None


def serve_flags_problem(workers: int, cluster_url: str | None, db_url: str) -> str | None:
    """Why ``tessera serve`` cannot run with these flags (None if it can).

    Several workers are several nodes: they share their games through PostgreSQL and
    coordinate through Redis, so ``--workers`` above 1 needs both; a single process without
    ``--cluster`` is the server it has always been, on SQLite by default.
    """
    if workers < 1:
        return f"--workers must be at least 1, not {workers}"
    postgres = make_url(db_url).get_backend_name() == "postgresql"
    if workers > 1 and (cluster_url is None or not postgres):
        missing = " and ".join(part for part, ok in (
            ("--cluster redis://HOST:PORT/DB", cluster_url is not None),
            ("a PostgreSQL --db (postgresql+asyncpg://USER@HOST/DB)", postgres)) if not ok)
        return (f"--workers {workers} runs {workers} node processes that share their games: "
                f"that needs {missing}. Without them, run one process (no --workers).")
    if cluster_url is not None:
        if not postgres:
            return ("--cluster needs a PostgreSQL --db (postgresql+asyncpg://USER@HOST/DB): "
                    "the nodes of a cluster share their games through it")
        return cluster_url_problem(cluster_url)
    return None
