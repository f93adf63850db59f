"""Server settings: each one a field of :class:`Settings` with its default, its
``tessera serve`` flag and the flag's help, declared once.

``server/cli.py`` derives the serve command's flags, their defaults and their ``--help``
from the fields (:func:`flags`) and builds a :class:`Settings` back from the parsed
arguments (:func:`from_flags`); nothing restates a default.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterator
from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any, Literal, TypeVar

from .lockout import LOCKOUT_CEILING_S
from .proxies import trusted_network
from .storage import default_database_url

T = TypeVar("T")


def default_db_url() -> str:
    """``$TESSERA_DB``, or ``tessera.db`` in the data directory (``$TESSERA_DATA`` or
    ``./data``, created if missing)."""
    return os.environ.get("TESSERA_DB") or default_database_url()


# the welcome announces the connection rate and its burst as whole numbers from 1 to 100,000
MIN_RATE, MAX_RATE = 1.0, 50_000.0  # the burst defaults to twice the rate
MAX_BURST = 100_000.0
MAX_LOBBY_PAGE = 1_000  # a page of the lobby stays far within a frame


def connection_rate(text: str) -> float:
    """``--rate``: a number the welcome can announce (its ``rate_per_s`` and ``burst`` are
    whole numbers from 1 to 100,000, and a rate below one a second would round to 0)."""
    rate = _number(text)
    if not MIN_RATE <= rate <= MAX_RATE:
        raise argparse.ArgumentTypeError(
            f"{text} is outside {MIN_RATE:g} to {MAX_RATE:g} requests a second")
    return rate


def connection_burst(text: str) -> float:
    """``--burst``: 0 (twice the rate), or a burst the welcome can announce."""
    burst = _number(text)
    if burst != 0 and not MIN_RATE <= burst <= MAX_BURST:
        raise argparse.ArgumentTypeError(f"{text} is neither 0 nor from {MIN_RATE:g} to "
                                         f"{MAX_BURST:g} requests")
    return burst


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def _seconds_to_ms(text: str) -> int:
    return round(_number(text) * 1000)


def _ms_to_seconds(ms: int) -> str:
    return str(ms / 1000)


def _lockout_max(text: str) -> float:
    return min(_number(text), LOCKOUT_CEILING_S)  # longer is cut to the ceiling, as before


def _names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def _network(text: str) -> str:
    """``--trusted-proxy``: an address or a network, as given."""
    try:
        trusted_network(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _seconds_or_none(text: str) -> float | None:
    seconds = _number(text)
    return None if seconds == 0 else seconds


def _zero_for_none(value: float | None) -> str:
    return "0" if value is None else str(value)


@dataclass(frozen=True)
class Flag:
    """How ``tessera serve`` sets one :class:`Settings` field.

    ``parse`` turns the flag's text into the field's value (argparse's ``type``; None:
    the default's own type) and ``show`` turns a value back into text, for ``--help``'s
    ``%(default)s`` and for the command line of a worker (``--workers``). ``kind`` is
    ``value``, ``switch`` (no argument: true) or ``repeat`` (given once per item).
    """

    name: str
    help: str
    metavar: str | None = None
    group: Literal["serve", "connections", "accounts", "limits"] = "serve"
    parse: Callable[[str], Any] | None = None
    show: Callable[[Any], str] = str
    choices: tuple[str, ...] | None = None
    kind: Literal["value", "switch", "repeat"] = "value"
    hidden: bool = False  # set by the supervisor for its workers, not by an operator


def setting(default: T, flag: str, help: str, **how: Any) -> T:
    """A :class:`Settings` field with its flag (see :class:`Flag` for ``how``)."""
    return field(default=default, metadata={"flag": Flag(flag, help, **how)})


def setting_from(factory: Callable[[], T], flag: str, help: str, **how: Any) -> T:
    """A field whose default is made anew for each :class:`Settings` (``factory``)."""
    return field(default_factory=factory, metadata={"flag": Flag(flag, help, **how)})


@dataclass
class Settings:
    """Everything an operator can tune, each with its ``tessera serve`` flag."""

    host: str = setting("127.0.0.1", "--host", "address to listen on (default: %(default)s;"
                        " 0.0.0.0: every interface)")
    port: int = setting(8765, "--port", "port to listen on (default: %(default)s; 0 picks a "
                        "free port)")
    tls_cert: str | None = setting(
        None, "--tls-cert", "serve wss:// and https:// with this certificate chain (PEM), "
        "with --tls-key; SIGHUP reads both again for new connections (docs/OPERATIONS.md)",
        metavar="FILE")
    tls_key: str | None = setting(None, "--tls-key", "the private key of --tls-cert (PEM)",
                                  metavar="FILE")
    db_url: str = setting_from(default_db_url, "--db", "SQLAlchemy URL (default: $TESSERA_DB "
                               "or sqlite in ./data)")
    sqlite_synchronous: str = setting(
        "FULL", "--sqlite-synchronous", "SQLite's synchronous setting: FULL (default), an "
        "acknowledged move survives a power loss; NORMAL, faster, a power loss may lose the "
        "last moves (a crash of the process loses nothing)", choices=("FULL", "NORMAL"))
    trusted_proxies: list[str] | None = setting(
        None, "--trusted-proxy", "a reverse proxy's address or network (repeatable): from "
        "it, the client's address is read from Forwarded / X-Forwarded-For, and every "
        "per-address limit counts that (docs/OPERATIONS.md)", metavar="CIDR", kind="repeat",
        parse=_network)
    proxy_protocol: bool = setting(
        False, "--proxy-protocol", "every connection comes from a --trusted-proxy TCP "
        "balancer and begins with a PROXY protocol header (v1 or v2) naming the client "
        "(HAProxy's send-proxy); others are cut", kind="switch")
    origins: list[str] | None = setting(
        None, "--origin", "also allow browser pages from this Origin (repeatable; pages the "
        "server serves itself need none; clients that send no Origin are always allowed)",
        kind="repeat")
    house_bots: list[str] = setting_from(
        list, "--house-bots", "bundled bots to run as players anyone can challenge, e.g. "
        "random,greedy,mcts (default: none)", metavar="BOTS", parse=_names, show=",".join)
    grace_ms: int = setting(30_000, "--grace", "seconds before a win can be claimed from an "
                            "absent opponent (default: %(default)s)",
                            parse=_seconds_to_ms, show=_ms_to_seconds)
    max_frame_bytes: int = setting(16 * 1024, "--max-frame", "the longest message a client "
                                   "may send, in bytes (default: %(default)s)")
    # requests per second per connection and per account (token buckets)
    conn_rate: float = setting(20.0, "--rate", "requests per second per connection, with "
                               "bursts of --burst, " f"{MIN_RATE:g} to {MAX_RATE:g} "
                               "(default: %(default)s)", parse=connection_rate)
    conn_burst: float = setting(0.0, "--burst", "requests one connection may make at once; "
                                "0: twice --rate (default: %(default)s)",
                                metavar="N", group="connections", parse=connection_burst)
    account_rate: float = setting(40.0, "--account-rate", "requests per second per account, "
                                  "over all its connections (default: %(default)s)",
                                  metavar="N", group="connections")
    account_burst: float = setting(80.0, "--account-burst", "requests one account may make "
                                   "at once (default: %(default)s)", metavar="N",
                                   group="connections")
    chat_rate: float = setting(1.0, "--chat-rate", "chat lines per second per account "
                               "(default: %(default)s)", metavar="N", group="connections")
    chat_burst: float = setting(5.0, "--chat-burst", "chat lines one account may send at "
                                "once (default: %(default)s)", metavar="N", group="connections")
    token_bytes: int = setting(4096, "--token-bytes", "a request costs one token of --rate "
                               "and one more per this many bytes of its reply (default: "
                               "%(default)s)", metavar="BYTES", group="connections")
    egress_rate: float = setting(256 * 1024, "--egress-rate", "bytes a second of replies per "
                                 "connection, with bursts of --egress-burst; over it, "
                                 "requests that list are refused rate_limited (default: "
                                 "%(default)s)", metavar="BYTES", group="connections")
    egress_burst: float = setting(1024 * 1024, "--egress-burst", "bytes of replies one "
                                  "connection may have at once (default: %(default)s)",
                                  metavar="BYTES", group="connections")
    address_egress_rate: float = setting(
        1024 * 1024, "--address-egress-rate", "bytes a second of replies per address (an "
        "IPv6 address by its /64), with bursts of --address-egress-burst; 0: no limit "
        "(default: %(default)s)", metavar="BYTES", group="connections")
    address_egress_burst: float = setting(
        4 * 1024 * 1024, "--address-egress-burst", "bytes of replies one address may have at "
        "once (default: %(default)s)", metavar="BYTES", group="connections")
    out_buffer_bytes: int = setting(256 * 1024, "--out-buffer", "bytes that may wait unread "
                                    "for a client; one that lets more pile up is dropped "
                                    "(default: %(default)s)", metavar="BYTES",
                                    group="connections")
    ping_interval: float | None = setting(
        20.0, "--ping-interval", "seconds between pings to each client; 0: no pings "
        "(default: %(default)s)", metavar="S", group="connections", parse=_seconds_or_none,
        show=_zero_for_none)
    ping_timeout: float | None = setting(
        20.0, "--ping-timeout", "seconds a client has to answer a ping before it is dropped; "
        "0: wait forever (default: %(default)s)", metavar="S", group="connections",
        parse=_seconds_or_none, show=_zero_for_none)
    close_timeout: float = setting(
        10.0, "--close-timeout", "seconds a closing connection has to finish the close "
        "handshake before it is cut; a client that stopped answering pings is dropped after "
        "--ping-interval + --ping-timeout + this (default: %(default)s)", metavar="S",
        group="connections")
    server_name: str = setting("tessera", "--server-name", "the name the welcome announces "
                               "(default: %(default)s)", metavar="NAME", group="connections")
    event_log_limit: int = setting(4096, "--event-log-limit", "events kept in memory per "
                                   "game, for clients that resume (default: %(default)s)",
                                   metavar="N", group="connections")
    revocation_poll_s: float = setting(1.0, "--revocation-poll", "connections on a revoked "
                                       "token are closed within S seconds (default: "
                                       "%(default)s)", metavar="S", group="connections")
    reuse_port: bool = setting(False, "--reuse-port", "SO_REUSEPORT: several workers listen "
                               "on one port", kind="switch", hidden=True)
    rating_period_s: float = setting(
        86_400.0, "--rating-period", "a rating deviation grows by one Glicko-2 period's worth "
        "per this many seconds without rated games (default: %(default)s, a day; give "
        "ratings verify the same)", metavar="SECONDS")
    ladder_round_s: float = setting(10.0, "--ladder-round", "the bot ladder pairs its idle "
                                    "bots this often (default: %(default)s)",
                                    metavar="SECONDS")
    # -- accounts: per client address (an IPv6 address counts by its /64); 0: no limit
    address_logins_per_minute: float = setting(
        30.0, "--logins-per-minute", "logins and registrations per address a minute, in "
        "bursts of --login-burst (default: %(default)s)", metavar="N", group="accounts")
    address_login_burst: int = setting(30, "--login-burst", "logins one address may make at "
                                       "once (default: %(default)s)", metavar="N",
                                       group="accounts")
    address_guests_per_hour: float = setting(
        60.0, "--guests-per-hour", "new guest accounts per address an hour, in bursts of "
        "--guest-burst (default: %(default)s)", metavar="N", group="accounts")
    address_guest_burst: int = setting(20, "--guest-burst", "guests one address may make at "
                                       "once (default: %(default)s)", metavar="N",
                                       group="accounts")
    # argon2 hashes running or waiting: an admitted login waits about a second at most
    hash_queue: int = setting(8, "--hash-queue", "password hashes running or waiting; one "
                              "more login or registration is refused at once; 0: no bound "
                              "(default: %(default)s, about a second of hashing on 2 cores)",
                              metavar="N", group="accounts")
    password_hash_time_cost: int = setting(
        3, "--password-hash-time-cost", "argon2id's passes over its memory per password hash "
        "(a hash verifies at the cost it was made at; a login rehashes one stored at another; "
        "default: %(default)s)", metavar="N", group="accounts")
    password_hash_memory_kib: int = setting(
        65_536, "--password-hash-memory-kib", "argon2id's memory per password hash, in KiB "
        "(4 lanes, at least 32; default: %(default)s, RFC 9106's second choice)",
        metavar="KIB", group="accounts")
    login_lockout_after: int = setting(5, "--lockout-after", "wrong passwords from one "
                                       "address before that address is locked out of the "
                                       "account (default: %(default)s)", metavar="N",
                                       group="accounts")
    login_lockout_base_s: float = setting(30.0, "--lockout", "the first lock, in seconds, "
                                          "doubled by each later one (default: %(default)s)",
                                          metavar="S", group="accounts")
    login_lockout_max_s: float = setting(
        LOCKOUT_CEILING_S, "--lockout-max", f"the longest lock, at most {LOCKOUT_CEILING_S:g} "
        "(default: %(default)s)", metavar="S", group="accounts", parse=_lockout_max)
    guest_ttl_s: float = setting(86_400.0, "--guest-ttl", "delete guests that never played "
                                 "this many seconds after they were last seen; 0: keep them "
                                 "(default: %(default)s, a day)", metavar="S",
                                 group="accounts")
    guest_sweep_interval_s: float = setting(600.0, "--guest-sweep-every", "how often guests "
                                            "are swept (default: %(default)s)", metavar="S",
                                            group="accounts")
    deleted_name_hold_days: float = setting(
        30.0, "--deleted-name-hold-days", "days the name of a deleted account stays held: no "
        "one may register it meanwhile; 0: free at once (default: %(default)s)",
        metavar="DAYS", group="accounts")
    # -- limits: what a stranger can make the server hold (docs/RELIABILITY.md)
    hello_timeout_s: float = setting(10.0, "--hello-timeout", "close a connection that has "
                                     "not sent hello within S seconds (default: "
                                     "%(default)s)", metavar="S", group="limits")
    auth_timeout_s: float = setting(30.0, "--auth-timeout", "close a connection not logged "
                                    "in S seconds after it opened, unless it watches a game "
                                    "or the lobby (default: %(default)s)", metavar="S",
                                    group="limits")
    max_connections_per_address: int = setting(
        256, "--max-connections-per-address", "open websocket connections from one IP "
        "address (default: %(default)s)", metavar="N", group="limits")
    max_connections: int | None = setting(
        None, "--max-connections", "open websocket connections in all (default and ceiling: "
        "the open-files limit, raised to its hard limit at start, less --fd-reserve and "
        "--max-handshakes)", metavar="N", group="limits", parse=int)
    # asyncio accepts up to 100 sockets a loop turn and closes the cut ones a turn or two
    # later: the reserve covers such bursts
    fd_reserve: int = setting(1024, "--fd-reserve", "files kept free of websockets, for the "
                              "database, logs, /healthz, /metrics and bursts of connections "
                              "(default: %(default)s; at most a quarter of the open-files "
                              "limit)", metavar="N", group="limits")
    max_handshakes: int = setting(256, "--max-handshakes", "connections waiting for their "
                                  "HTTP request; beyond, the oldest is cut once silent for a "
                                  "second, or at once when the files run short (default: "
                                  "%(default)s)", metavar="N", group="limits")
    accept_error_log_s: float = setting(10.0, "--accept-log-interval", "log connections "
                                        "that could not be accepted (out of files) at most "
                                        "once per S seconds, with their count (default: "
                                        "%(default)s)", metavar="S", group="limits")
    # connections asyncio accepts in one loop turn, before any can be cut; it must stay well
    # below fd_reserve, so a flood is taken a few at a time between the open connections'
    # frames (wsio.accept_in_batches)
    accept_batch: int = setting(16, "--accept-batch", "connections accepted in one turn of "
                                "the event loop, well below --fd-reserve (default: "
                                "%(default)s)", metavar="N", group="limits")
    listen_backlog: int = setting(1024, "--listen-backlog", "connections the kernel queues "
                                  "for accept(), capped by net.core.somaxconn (default: "
                                  "%(default)s)", metavar="N", group="limits")
    max_open_seeks: int = setting(5, "--max-open-seeks", "open seeks per account (default: "
                                  "%(default)s)", metavar="N", group="limits")
    max_seeks_per_address: int = setting(50, "--max-seeks-per-address", "open seeks from "
                                         "one IP address (default: %(default)s)",
                                         metavar="N", group="limits")
    max_seeks: int = setting(5_000, "--max-seeks", "open seeks in all (default: "
                             "%(default)s)", metavar="N", group="limits")
    lobby_page: int = setting(50, "--lobby-page", "seeks and players a lobby reply lists "
                              "at most, the oldest first; lobby_page asks for the next "
                              f"ones, 1 to {MAX_LOBBY_PAGE:,} (default: %(default)s)",
                              metavar="N", group="limits")
    max_challenges_per_challenger: int = setting(
        10, "--max-challenges-per-challenger", "pending challenges from one user (default: "
        "%(default)s)", metavar="N", group="limits")
    max_challenges_per_address: int = setting(
        50, "--max-challenges-per-address", "pending challenges from one IP address "
        "(default: %(default)s); there is no cap per target, which a flood would fill",
        metavar="N", group="limits")
    stranger_challenge_s: float = setting(
        120.0, "--stranger-challenge-lifetime", "seconds a challenge from a stranger (who has "
        "no game with the player) waits for an answer before it lapses (default: "
        "%(default)s)", metavar="S", group="limits")
    max_games_per_user: int = setting(100, "--max-games-per-user", "games in progress per "
                                      "account; more are refused (default: %(default)s)",
                                      metavar="N", group="limits")
    max_watched_per_connection: int = setting(100, "--max-watched", "games one connection "
                                              "may watch at once (default: %(default)s)",
                                              metavar="N", group="limits")

    def __post_init__(self) -> None:
        if self.proxy_protocol and not self.trusted_proxies:
            raise ValueError("--proxy-protocol needs --trusted-proxy: the balancers whose "
                             "headers are believed")
        if self.password_hash_time_cost < 1:
            raise ValueError(f"password_hash_time_cost must be >= 1, not "
                             f"{self.password_hash_time_cost}")
        if self.password_hash_memory_kib < 32:  # argon2: 8 KiB a lane, 4 lanes
            raise ValueError(f"password_hash_memory_kib must be >= 32, not "
                             f"{self.password_hash_memory_kib}")
        if not self.conn_burst:
            self.conn_burst = 2 * self.conn_rate
        if not 1 <= self.lobby_page <= MAX_LOBBY_PAGE:
            raise ValueError(f"lobby_page must be from 1 to {MAX_LOBBY_PAGE:,}, not "
                             f"{self.lobby_page}")
        if self.token_bytes < 1:
            raise ValueError(f"token_bytes must be >= 1, not {self.token_bytes}")
        if self.egress_rate <= 0 or self.egress_burst < 1:
            raise ValueError("egress_rate must be > 0 and egress_burst >= 1, not "
                             f"{self.egress_rate}, {self.egress_burst}")
        # ``welcome`` announces these as whole numbers of at least 1 (protocol Limits): a
        # rate below one a second would make every welcome invalid
        for name in ("conn_rate", "conn_burst"):
            if not 1 <= getattr(self, name) <= 100_000:
                raise ValueError(f"{name} must be from 1 to 100,000, not {getattr(self, name)}")


def flags() -> Iterator[tuple[Field[Any], Flag]]:
    """Every :class:`Settings` field with its flag, in declaration order."""
    for f in fields(Settings):
        yield f, f.metadata["flag"]


def flag_of(name: str) -> Flag:
    """The flag of the :class:`Settings` field ``name``."""
    flag: Flag = Settings.__dataclass_fields__[name].metadata["flag"]
    return flag


def from_flags(args: argparse.Namespace, **given: Any) -> Settings:
    """The :class:`Settings` the parsed serve flags say, with ``given`` fields on top. A
    field made by a factory (``--db``, ``--house-bots``) and not given keeps its default."""
    values = {f.name: getattr(args, f.name) for f, _ in flags() if hasattr(args, f.name)
              and not (getattr(args, f.name) is None and f.default is MISSING)}
    return Settings(**(values | given))
