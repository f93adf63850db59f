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
    serve.add_argument("--rate", type=float, default=20.0,
                       help="requests per second per connection, with bursts of twice that "
                            "(default: %(default)s)")
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
        if args.workers > 1:
            from .cluster.workers import run_workers

            return run_workers(args, args.serve_parser)
        setup_logging(args.log_level)
        settings = Settings(host=args.host, port=args.port, db_url=db_url,
                            sqlite_synchronous=args.sqlite_synchronous,
                            origins=args.origin or None, grace_ms=int(args.grace * 1000),
                            max_frame_bytes=args.max_frame, conn_rate=args.rate,
                            conn_burst=args.rate * 2, reuse_port=args.reuse_port,
                            rating_period_s=args.rating_period,
                            ladder_round_s=args.ladder_round,
                            house_bots=[b for b in args.house_bots.split(",") if b.strip()])
        raise_fd_limit()
        with asyncio.Runner(loop_factory=loop_factory(args.loop)) as runner:
            if args.cluster:
                from .cluster.node import run_node

                runner.run(run_node(settings, cluster_config.ClusterSettings(
                    args.cluster, args.cluster_name, args.node_id or
                    cluster_config.default_node_id()), args.ready_file))
            else:
                runner.run(run_server(settings, args.ready_file))
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
