"""Operator commands: ``serve``, ``db upgrade``, ``admin`` and ``cluster status`` (run as
``tessera ...``)."""

from __future__ import annotations

import argparse
import asyncio
import getpass
import resource
import sys
from collections.abc import Callable, Sequence

from .config import Settings, default_db_url
from .logs import setup as setup_logging


def _db_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", default=None,
                        help="SQLAlchemy URL (default: $TESSERA_DB or sqlite in ./data)")


MIN_RATE, MAX_RATE = 1.0, 50_000.0  # welcome announces rate and burst (twice it) as ints


def connection_rate(text: str) -> float:
    """``--rate``: a number the welcome can announce (its ``rate_per_s`` and ``burst`` are
    whole numbers from 1 to 100,000, and a rate below one a second would round to 0)."""
    try:
        rate = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not MIN_RATE <= rate <= MAX_RATE:
        raise argparse.ArgumentTypeError(
            f"{text} is outside {MIN_RATE:g} to {MAX_RATE:g} requests a second")
    return rate


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tessera", description="Tessera server commands")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser(
        "serve", help="run the game server",
        description="Run the game server: websockets on ws://HOST:PORT/ws, GET /healthz and "
                    "/metrics on the same port, JSON logs on stderr. Migrations are applied "
                    "on start; SIGTERM stops it after everything acknowledged is stored.")
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to listen on (default: %(default)s; 0.0.0.0: every "
                            "interface)")
    serve.add_argument("--port", type=int, default=8765,
                       help="port to listen on (default: %(default)s; 0 picks a free port)")
    _db_arg(serve)
    serve.add_argument("--sqlite-synchronous", choices=["FULL", "NORMAL"], default="FULL",
                       help="SQLite's synchronous setting: FULL (default), an acknowledged "
                            "move survives a power loss; NORMAL, faster, a power loss may "
                            "lose the last moves (a crash of the process loses nothing)")
    serve.add_argument("--origin", action="append", default=[],
                       help="also allow browser pages from this Origin (repeatable; pages "
                            "the server serves itself need none; clients that send no Origin "
                            "are always allowed)")
    serve.add_argument("--house-bots", default="", metavar="BOTS",
                       help="bundled bots to run as players anyone can challenge, e.g. "
                            "random,greedy,mcts (default: none)")
    serve.add_argument("--grace", type=float, default=30.0,
                       help="seconds before a win can be claimed from an absent opponent "
                            "(default: %(default)s)")
    serve.add_argument("--max-frame", type=int, default=16 * 1024,
                       help="the longest message a client may send, in bytes "
                            "(default: %(default)s)")
    serve.add_argument("--rate", type=connection_rate, default=20.0,
                       help="requests per second per connection, with bursts of twice that, "
                            f"{MIN_RATE:g} to {MAX_RATE:g} (default: %(default)s)")
    limits = serve.add_argument_group(
        "accounts under siege", "Per client address (an IPv6 address counts by its /64; "
        "behind a reverse proxy every client has the proxy's address, so raise these there); "
        "0 switches a limit off. Refusals are rate_limited with retry_after_ms.")
    limits.add_argument("--logins-per-minute", type=float, default=30.0, metavar="N",
                        help="logins and registrations per address a minute, in bursts of "
                             "--login-burst (default: %(default)s)")
    limits.add_argument("--login-burst", type=int, default=30, metavar="N",
                        help="logins one address may make at once (default: %(default)s)")
    limits.add_argument("--guests-per-hour", type=float, default=60.0, metavar="N",
                        help="new guest accounts per address an hour, in bursts of "
                             "--guest-burst (default: %(default)s)")
    limits.add_argument("--guest-burst", type=int, default=20, metavar="N",
                        help="guests one address may make at once (default: %(default)s)")
    limits.add_argument("--hash-queue", type=int, default=8, metavar="N",
                        help="password hashes running or waiting; one more login or "
                             "registration is refused at once; 0: no bound (default: "
                             "%(default)s, about a second of hashing on 2 cores)")
    limits.add_argument("--lockout-after", type=int, default=5, metavar="N",
                        help="wrong passwords from one address before that address is "
                             "locked out of the account (default: %(default)s)")
    limits.add_argument("--lockout", type=float, default=30.0, metavar="S",
                        help="the first lock, in seconds, doubled by each later one "
                             "(default: %(default)s)")
    limits.add_argument("--lockout-max", type=float, default=900.0, metavar="S",
                        help="the longest lock, at most 900 (default: %(default)s)")
    limits.add_argument("--guest-ttl", type=float, default=86_400.0, metavar="S",
                        help="delete guests that never played this many seconds after they "
                             "were last seen; 0: keep them (default: %(default)s, a day)")
    limits.add_argument("--guest-sweep-every", type=float, default=600.0, metavar="S",
                        help="how often guests are swept (default: %(default)s)")
    serve.add_argument("--ready-file", help="write the listening port to this file once ready "
                       "(for scripts and tests)")
    serve.add_argument("--loop", choices=["auto", "uvloop", "asyncio"], default="auto",
                       help="event loop: auto (default), uvloop if installed (faster), else "
                            "asyncio's own; uvloop or asyncio to choose")
    serve.add_argument("--log-level", default="info",
                       help="debug, info (default), warning or error")
    serve.add_argument("--cluster", metavar="URL", help="run as a node of the cluster on this "
                       "Redis (redis://HOST:PORT/DB), with a PostgreSQL --db")
    serve.add_argument("--cluster-name", default="default",
                       help="the cluster's name in Redis (default: %(default)s)")
    serve.add_argument("--node-id", help="this node's name in the cluster (default HOST-PID)")
    serve.add_argument("--lease-ms", type=int, default=5000,
                       help="how long a node owns its games without confirming it: after a "
                       "node dies its games are taken over within about this (default: "
                       "%(default)s)")
    serve.add_argument("--workers", type=int, default=1, help="node processes sharing the port "
                       "(SO_REUSEPORT), supervised (default: 1); above 1 needs --cluster and "
                       "PostgreSQL")
    serve.add_argument("--rating-period", type=float, default=86_400.0, metavar="SECONDS",
                       help="a rating deviation grows by one Glicko-2 period's worth per this "
                            "many seconds without rated games (default: %(default)s, a day; "
                            "give ratings verify the same)")
    serve.add_argument("--ladder-round", type=float, default=10.0, metavar="SECONDS",
                       help="the bot ladder pairs its idle bots this often "
                            "(default: %(default)s)")
    serve.add_argument("--reuse-port", action="store_true", help=argparse.SUPPRESS)
    _limit_args(serve)
    serve.set_defaults(serve_parser=serve)

    db = sub.add_parser("db", help="database maintenance")
    db_sub = db.add_subparsers(dest="db_command", required=True)
    up = db_sub.add_parser("upgrade", help="apply migrations up to the newest")
    _db_arg(up)

    dump = sub.add_parser("dump", help="print stored match records as JSON lines")
    dump.add_argument("game_ids", nargs="*", help="games to print (default with --all: every one)")
    dump.add_argument("--all", action="store_true", help="every finished and live game")
    _db_arg(dump)

    admin = sub.add_parser("admin", help="accounts and bot tokens")
    admin_sub = admin.add_subparsers(dest="admin_command", required=True)
    cu = admin_sub.add_parser("create-user", help="create a human account")
    cu.add_argument("name")
    cu.add_argument("--password", help="(default: prompt)")
    _db_arg(cu)
    cb = admin_sub.add_parser("create-bot", help="create a bot account and print its token")
    cb.add_argument("name")
    _db_arg(cb)
    tok = admin_sub.add_parser("new-token", help="print a new bot token for an account")
    tok.add_argument("name")
    tok.add_argument("--label", default="")
    _db_arg(tok)
    lt = admin_sub.add_parser("list-tokens", help="list an account's tokens")
    lt.add_argument("name")
    _db_arg(lt)
    sg = admin_sub.add_parser(
        "sweep-guests", help="delete guests that never played and were not seen lately",
        description="Delete the guest accounts (with their tokens and the games they "
                    "aborted) that never played (no game in progress or over, no chat line "
                    "in one) and were not seen (made, or a token made or used) "
                    "for --older-than seconds. The server does this itself every "
                    "--guest-sweep-every; from here, a guest connected now but made earlier "
                    "and idle since is deleted too, so keep --older-than above how long "
                    "connections last.")
    sg.add_argument("--older-than", type=float, default=86_400.0, metavar="S",
                    help="(default: %(default)s, a day)")
    _db_arg(sg)
    rt = admin_sub.add_parser("revoke-token", help="revoke a token by id")
    rt.add_argument("token_id", type=int)
    _db_arg(rt)

    ratings = sub.add_parser("ratings", help="check the stored ratings")
    ratings_sub = ratings.add_subparsers(dest="ratings_command", required=True)
    verify = ratings_sub.add_parser(
        "verify", help="recompute every pool from the stored games in order; exit 1 on a "
                       "difference (docs/RATINGS.md)")
    verify.add_argument("--rating-period", type=float, default=86_400.0, metavar="SECONDS",
                        help="the server's --rating-period (default: %(default)s)")
    _db_arg(verify)

    cluster = sub.add_parser("cluster", help="a cluster of nodes on Redis and PostgreSQL")
    cluster_sub = cluster.add_subparsers(dest="cluster_command", required=True)
    from .cluster import status

    status.add_arguments(cluster_sub.add_parser(
        "status", help="list the nodes, their games and their last heartbeat"))
    return parser


def _limit_args(serve: argparse.ArgumentParser) -> None:
    """What strangers can make the server hold (docs/RELIABILITY.md, "Bounded structures")."""
    d = Settings.__dataclass_fields__
    lim = serve.add_argument_group(
        "limits", "what strangers can make the server hold (docs/RELIABILITY.md); a refused "
        "websocket upgrade gets HTTP 429 (its address is at its cap) or 503 (the server is), "
        "a connection too slow to start is closed with 4408, a seek or challenge over a cap "
        "gets the error 'conflict'")
    lim.add_argument("--hello-timeout", type=float, default=d["hello_timeout_s"].default,
                     metavar="S", help="close a connection that has not sent hello within S "
                     "seconds (default: %(default)s)")
    lim.add_argument("--auth-timeout", type=float, default=d["auth_timeout_s"].default,
                     metavar="S", help="close a connection not logged in S seconds after it "
                     "opened, unless it watches a game or the lobby (default: %(default)s)")
    lim.add_argument("--max-connections-per-address", type=int, metavar="N",
                     default=d["max_connections_per_address"].default,
                     help="open websocket connections from one IP address (default: "
                          "%(default)s)")
    lim.add_argument("--max-connections", type=int, metavar="N",
                     help="open websocket connections in all (default and ceiling: the "
                          "open-files limit, raised to its hard limit at start, less "
                          "--fd-reserve and --max-handshakes)")
    lim.add_argument("--fd-reserve", type=int, default=d["fd_reserve"].default, metavar="N",
                     help="files kept free of websockets, for the database, logs, /healthz, "
                          "/metrics and bursts of connections (default: %(default)s; at most "
                          "a quarter of the open-files limit)")
    lim.add_argument("--max-handshakes", type=int, default=d["max_handshakes"].default,
                     metavar="N", help="connections waiting for their HTTP request; "
                     "beyond, the oldest is cut once silent for a second, or at once when "
                     "the files run short (default: %(default)s)")
    lim.add_argument("--accept-log-interval", type=float, metavar="S",
                     default=d["accept_error_log_s"].default,
                     help="log connections that could not be accepted (out of files) at most "
                          "once per S seconds, with their count (default: %(default)s)")
    lim.add_argument("--max-open-seeks", type=int, default=d["max_open_seeks"].default,
                     metavar="N", help="open seeks per account (default: %(default)s)")
    lim.add_argument("--max-seeks-per-address", type=int, metavar="N",
                     default=d["max_seeks_per_address"].default,
                     help="open seeks from one IP address (default: %(default)s)")
    lim.add_argument("--max-seeks", type=int, default=d["max_seeks"].default, metavar="N",
                     help="open seeks in all (default: %(default)s)")
    lim.add_argument("--lobby-seeks-shown", type=int, metavar="N",
                     default=d["lobby_seeks_shown"].default,
                     help="seeks a lobby reply lists, the oldest; it counts the rest "
                          "(default: %(default)s)")
    lim.add_argument("--lobby-players-shown", type=int, metavar="N",
                     default=d["lobby_players_shown"].default,
                     help="players a lobby reply lists; it counts the rest (default: "
                          "%(default)s)")
    lim.add_argument("--max-challenges-per-target", type=int, metavar="N",
                     default=d["max_challenges_per_target"].default,
                     help="pending challenges to one user (default: %(default)s)")
    lim.add_argument("--max-challenges-per-challenger", type=int, metavar="N",
                     default=d["max_challenges_per_challenger"].default,
                     help="pending challenges from one user (default: %(default)s)")
    lim.add_argument("--max-games-per-user", type=int, metavar="N",
                     default=d["max_games_per_user"].default,
                     help="games in progress per account; more are refused (default: "
                          "%(default)s)")
    lim.add_argument("--max-watched", type=int, metavar="N",
                     default=d["max_watched_per_connection"].default,
                     help="games one connection may watch at once (default: %(default)s)")


def limit_settings(args: argparse.Namespace) -> dict[str, object]:
    """The :class:`Settings` fields ``_limit_args`` sets."""
    return {"hello_timeout_s": args.hello_timeout, "auth_timeout_s": args.auth_timeout,
            "max_connections_per_address": args.max_connections_per_address,
            "max_connections": args.max_connections, "fd_reserve": args.fd_reserve,
            "max_handshakes": args.max_handshakes,
            "accept_error_log_s": args.accept_log_interval,
            "max_open_seeks": args.max_open_seeks,
            "max_seeks_per_address": args.max_seeks_per_address,
            "max_seeks": args.max_seeks, "lobby_seeks_shown": args.lobby_seeks_shown,
            "lobby_players_shown": args.lobby_players_shown,
            "max_challenges_per_target": args.max_challenges_per_target,
            "max_challenges_per_challenger": args.max_challenges_per_challenger,
            "max_games_per_user": args.max_games_per_user,
            "max_watched_per_connection": args.max_watched}


def loop_factory(name: str) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The event loop ``--loop`` asks for; None for asyncio's default."""
    if name == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        if name == "uvloop":
            raise SystemExit("tessera: --loop uvloop: uvloop is not installed") from None
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def raise_fd_limit() -> None:
    """Let the server have as many connections open as the system allows this process."""
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft < hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError):  # not allowed here: keep the limit there is
        pass


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "cluster":
        from .cluster import status

        return status.run(args)
    from .storage import normalize_url

    try:  # a bare path means a SQLite file; the async driver is pinned for every URL
        db_url = normalize_url(args.db or default_db_url()).render_as_string(
            hide_password=False)
    except ValueError as exc:
        print(f"tessera: {exc}", file=sys.stderr)
        return 2
    if args.command == "serve":
        from .app import run_server
        from .cluster import config as cluster_config

        problem = cluster_config.serve_flags_problem(args.workers, args.cluster, db_url)
        if problem:
            print(f"tessera: {problem}", file=sys.stderr)
            return 2
        from .app import CannotListen
        from .storage.sole import DatabaseInUse

        if args.workers > 1:
            from .cluster.workers import run_workers

            try:
                return run_workers(args, args.serve_parser)
            except CannotListen as exc:
                print(f"tessera: {exc}", file=sys.stderr)
                return 1
        setup_logging(args.log_level)
        settings = Settings(host=args.host, port=args.port, db_url=db_url,
                            sqlite_synchronous=args.sqlite_synchronous,
                            origins=args.origin or None, grace_ms=int(args.grace * 1000),
                            max_frame_bytes=args.max_frame, conn_rate=args.rate,
                            conn_burst=args.rate * 2, reuse_port=args.reuse_port,
                            rating_period_s=args.rating_period,
                            ladder_round_s=args.ladder_round,
                            address_logins_per_minute=args.logins_per_minute,
                            address_login_burst=args.login_burst,
                            address_guests_per_hour=args.guests_per_hour,
                            address_guest_burst=args.guest_burst, hash_queue=args.hash_queue,
                            login_lockout_after=args.lockout_after,
                            login_lockout_base_s=args.lockout,
                            login_lockout_max_s=min(args.lockout_max, 900.0),
                            guest_ttl_s=args.guest_ttl,
                            guest_sweep_interval_s=args.guest_sweep_every,
                            house_bots=[b for b in args.house_bots.split(",") if b.strip()],
                            **limit_settings(args))  # type: ignore[arg-type]
        raise_fd_limit()
        try:
            with asyncio.Runner(loop_factory=loop_factory(args.loop)) as runner:
                if args.cluster:
                    from .cluster.node import run_node

                    runner.run(run_node(settings, cluster_config.ClusterSettings(
                        args.cluster, args.cluster_name, args.node_id or
                        cluster_config.default_node_id(), lease_ms=args.lease_ms),
                        args.ready_file))
                else:
                    runner.run(run_server(settings, args.ready_file))
        except (CannotListen, DatabaseInUse) as exc:  # the operator's to fix: one line
            print(f"tessera: {exc}", file=sys.stderr)
            return 1
        return 0
    if args.command == "db":
        from .storage import redact_url, upgrade

        asyncio.run(upgrade(db_url))
        print(f"database at head: {redact_url(db_url)}")
        return 0
    if args.command == "dump":
        return asyncio.run(_dump(args, db_url))
    if args.command == "ratings":
        return asyncio.run(_verify_ratings(args, db_url))
    return asyncio.run(_admin(args, db_url))


async def _dump(args: argparse.Namespace, db_url: str) -> int:
    """One JSON object per line: the wire form of each record (see docs/PROTOCOL.md)."""
    import json

    from . import wire
    from .storage import Store, make_engine

    engine = make_engine(db_url)
    missing = 0
    try:
        store = Store(engine)
        ids = list(args.game_ids)
        if args.all:
            ids += await store.list_game_ids()
        for game_id in ids:
            stored = await store.get_game(game_id)
            if stored is None:
                print(f"error: no game {game_id}", file=sys.stderr)
                missing += 1
                continue
            record = wire.record(stored).to_wire()
            print(json.dumps(record, separators=(",", ":")), flush=True)
    finally:
        await engine.dispose()
    return 1 if missing else 0


async def _verify_ratings(args: argparse.Namespace, db_url: str) -> int:
    """``tessera ratings verify``: 0 if every stored rating is its recomputation, else 1."""
    from .ratings.verify import verify
    from .storage import Store, make_engine, redact_url

    engine = make_engine(db_url)
    try:
        store = Store(engine)
        differences = await verify(store, args.rating_period)
        updates = len(await store.ratings.updates())
    finally:
        await engine.dispose()
    for line in differences:
        print(line)
    print(f"ratings verify: {updates // 2} rated games, {len(differences)} differences "
          f"({redact_url(db_url)})", file=sys.stderr if differences else sys.stdout)
    return 1 if differences else 0


async def _admin(args: argparse.Namespace, db_url: str) -> int:
    from .accounts import Passwords
    from .storage import NameTaken, Store, make_engine, upgrade

    await upgrade(db_url)
    engine = make_engine(db_url)
    try:
        store = Store(engine)
        cmd = args.admin_command
        if cmd in ("create-user", "create-bot"):
            password_hash = None
            if cmd == "create-user":
                password = args.password or getpass.getpass(f"password for {args.name}: ")
                passwords = Passwords(threads=1)
                try:
                    password_hash = await passwords.hash(password)
                finally:
                    passwords.close()
            try:
                user = await store.create_user(args.name, "human" if cmd == "create-user"
                                               else "bot", password_hash=password_hash)
            except NameTaken:
                print(f"error: the name {args.name!r} is taken", file=sys.stderr)
                return 1
            print(f"created {user.kind} {user.name} (id {user.id})")
            if cmd == "create-bot":
                token, token_id = await store.create_token(user.id, "bot", "admin")
                print(f"token {token_id}: {token}")
                print("(shown once: store it now)")
            return 0
        if cmd == "sweep-guests":
            from .guests import sweep_guests

            before = await store.count_users("guest")
            deleted = await sweep_guests(store, args.older_than)
            print(f"deleted {deleted} of {before} guests")
            return 0
        if cmd == "revoke-token":
            ok = await store.revoke_token(args.token_id)
            print("revoked" if ok else "no such active token")
            return 0 if ok else 1
        found = await store.get_user_by_name(args.name)
        if found is None:
            print(f"error: no user {args.name!r}", file=sys.stderr)
            return 1
        if cmd == "new-token":
            token, token_id = await store.create_token(found.id, "bot", args.label)
            print(f"token {token_id}: {token}")
            print("(shown once: store it now)")
            return 0
        for t in await store.list_tokens(found.id):
            used = t.last_used_at.isoformat() if t.last_used_at else "never"
            print(f"{t.id}\t{t.kind}\t{t.label or '-'}\tcreated {t.created_at:%Y-%m-%d}"
                  f"\tlast used {used}")
        return 0
    finally:
        await engine.dispose()
