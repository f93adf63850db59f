"""Operator commands: ``serve``, ``db``, ``dump``, ``admin``, ``ratings`` and ``cluster``
(run as ``tessera ...``)."""

from __future__ import annotations

import argparse
import asyncio
import getpass
import resource
import sys
from collections.abc import Callable, Sequence
from dataclasses import MISSING
from typing import Any

from . import config
from .cluster.config import ClusterSettings
from .config import Settings, default_db_url
from .logs import setup as setup_logging

GROUPS = {
    "connections": ("connections", "Request budgets, buffers and timers of each connection."),
    "accounts": ("accounts under siege", "Per client address (an IPv6 address counts by its "
                 "/64; behind a reverse proxy every client has the proxy's address, so raise "
                 "these there); 0 switches a limit off. Refusals are rate_limited with "
                 "retry_after_ms."),
    "limits": ("limits", "what strangers can make the server hold (docs/RELIABILITY.md); a "
               "refused websocket upgrade gets HTTP 429 (its address is at its cap) or 503 "
               "(the server is), a connection too slow to start is closed with 4408, a seek "
               "or challenge over a cap gets the error 'conflict'"),
}


def add_setting(parser: argparse.ArgumentParser | argparse._ArgumentGroup, name: str,
                help: str | None = None) -> None:
    """The flag of the :class:`Settings` field ``name``, parsed into the field's value
    (``dest`` is the field's name); ``help`` replaces the field's."""
    f = Settings.__dataclass_fields__[name]
    flag = config.flag_of(name)
    default = None if f.default is MISSING else f.default  # a factory runs in Settings
    text = help or flag.help
    if "%(default)s" in text:  # shown as the flag takes it (--grace in seconds)
        text = text.replace("%(default)s", flag.show(default))
    options: dict[str, Any] = {"dest": name, "default": default,
                               "help": argparse.SUPPRESS if flag.hidden else text}
    if flag.kind == "switch":
        options["action"] = "store_true"
    else:
        options["type"] = flag.parse or (str if default is None else type(default))
        options["metavar"] = flag.metavar or (
            None if flag.choices else flag.name.lstrip("-").upper().replace("-", "_"))
        options["choices"] = flag.choices
        if flag.kind == "repeat":
            options["action"] = "append"
    parser.add_argument(flag.name, **options)


def add_settings(serve: argparse.ArgumentParser) -> None:
    """Every :class:`Settings` field's flag, in its group (``GROUPS``)."""
    groups = {key: serve.add_argument_group(title, description)
              for key, (title, description) in GROUPS.items()}
    for f, flag in config.flags():
        add_setting(serve if flag.group == "serve" else groups[flag.group], f.name)


def add_sandbox_commands(sandbox: argparse.ArgumentParser) -> None:
    """``tessera db sandbox create|drop|backends`` (``server/storage/sandbox.py``)."""
    admin = ("the PostgreSQL server, as a user allowed to make roles, e.g. "
             "postgresql+asyncpg://postgres@127.0.0.1/test")
    commands = sandbox.add_subparsers(dest="sandbox_command", required=True)
    create = commands.add_parser("create", help="make a login role and a schema of the same "
                                 "name (the role's search_path); print one JSON line: the "
                                 "role and the URL that logs in as it")
    add_setting(create, "db_url", help=admin)
    drop = commands.add_parser("drop", help="end the role's connections, drop its schema "
                               "with everything in it, and the role")
    backends = commands.add_parser("backends", help="the process ids of the PostgreSQL "
                                   "backends serving the role now, as a JSON list")
    for command in (drop, backends):
        command.add_argument("role")
        add_setting(command, "db_url", help=admin)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tessera", description="Tessera server commands")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser(
        "serve", help="run the game server",
        description="Run the game server: websockets on ws://HOST:PORT/ws, GET /healthz and "
                    "/metrics on the same port, JSON logs on stderr. Migrations are applied "
                    "on start; SIGTERM stops it after everything acknowledged is stored.")
    add_settings(serve)
    serve.add_argument("--ready-file", help="write the listening port to this file once ready "
                       "(for scripts and tests)")
    serve.add_argument("--loop", choices=["auto", "uvloop", "asyncio"], default="auto",
                       help="event loop: auto (default), uvloop if installed (faster), else "
                            "asyncio's own; uvloop or asyncio to choose")
    serve.add_argument("--log-level", default="info",
                       help="debug, info (default), warning or error")
    serve.add_argument("--cluster", metavar="URL", help="run as a node of the cluster on this "
                       "Redis (redis://HOST:PORT/DB), with a PostgreSQL --db")
    cluster_fields = ClusterSettings.__dataclass_fields__  # the cluster's own defaults
    serve.add_argument("--cluster-name", default=cluster_fields["name"].default,
                       help="the cluster's name in Redis (default: %(default)s)")
    serve.add_argument("--node-id", help="this node's name in the cluster (default HOST-PID)")
    serve.add_argument("--lease-ms", type=int, default=cluster_fields["lease_ms"].default,
                       help="how long a node owns its games without confirming it: after a "
                       "node dies its games are taken over within about this (default: "
                       "%(default)s)")
    serve.add_argument("--workers", type=int, default=1, help="node processes sharing the port "
                       "(SO_REUSEPORT), supervised (default: 1); above 1 needs --cluster and "
                       "PostgreSQL")
    serve.set_defaults(serve_parser=serve)

    db = sub.add_parser("db", help="database maintenance")
    db_sub = db.add_subparsers(dest="db_command", required=True)
    up = db_sub.add_parser("upgrade", help="apply migrations up to the newest")
    add_setting(up, "db_url")
    counts = db_sub.add_parser("counts", help="rows per table, as one JSON object")
    add_setting(counts, "db_url")
    check = db_sub.add_parser("check", help="check that the stored data is whole (every "
                              "game's plies and event numbers; on SQLite, the file too): "
                              "exit 0, or 1 with a line per problem")
    add_setting(check, "db_url")
    add_sandbox_commands(db_sub.add_parser(
        "sandbox", help="a PostgreSQL schema and login role of a tool's own (bench, chaos)"))
    backup = db_sub.add_parser(
        "backup", help="copy a live SQLite database to PATH while the server plays on, "
        "and check the copy (docs/OPERATIONS.md)")
    backup.add_argument("path", metavar="PATH", help="the copy to make (a new file)")
    add_setting(backup, "db_url")
    restore = db_sub.add_parser(
        "restore", help="check the copy at PATH and make it the database (no server may "
        "run on it; the one replaced is kept aside)")
    restore.add_argument("path", metavar="PATH", help="a copy made by db backup")
    add_setting(restore, "db_url")

    dump = sub.add_parser("dump", help="print stored match records as JSON lines")
    dump.add_argument("game_ids", nargs="*", help="games to print (default with --all: every one)")
    dump.add_argument("--all", action="store_true", help="every finished and live game")
    add_setting(dump, "db_url")

    admin = sub.add_parser("admin", help="accounts and bot tokens")
    admin_sub = admin.add_subparsers(dest="admin_command", required=True)
    cu = admin_sub.add_parser("create-user", help="create a human account")
    cu.add_argument("name")
    cu.add_argument("--password", help="(default: prompt)")
    add_setting(cu, "db_url")
    cb = admin_sub.add_parser("create-bot", help="create a bot account and print its token")
    cb.add_argument("name")
    add_setting(cb, "db_url")
    tok = admin_sub.add_parser("new-token", help="print a new bot token for an account")
    tok.add_argument("name")
    tok.add_argument("--label", default="")
    add_setting(tok, "db_url")
    lt = admin_sub.add_parser("list-tokens", help="list an account's tokens")
    lt.add_argument("name")
    add_setting(lt, "db_url")
    sg = admin_sub.add_parser(
        "sweep-guests", help="delete guests that never played and were not seen lately",
        description="Delete the guest accounts (with their tokens and the games they "
                    "aborted) that never played (no game in progress or over, no chat line "
                    "in one) and were not seen (made, or a token made or used) "
                    "for --older-than seconds. The server does this itself every "
                    "--guest-sweep-every; from here, a guest connected now but made earlier "
                    "and idle since is deleted too, so keep --older-than above how long "
                    "connections last.")
    sg.add_argument("--older-than", type=float, metavar="S",
                    default=Settings.__dataclass_fields__["guest_ttl_s"].default,
                    help="(default: %(default)s, the server's --guest-ttl)")
    add_setting(sg, "db_url")
    rt = admin_sub.add_parser("revoke-token", help="revoke a token by id")
    rt.add_argument("token_id", type=int)
    add_setting(rt, "db_url")

    ratings = sub.add_parser("ratings", help="check the stored ratings")
    ratings_sub = ratings.add_subparsers(dest="ratings_command", required=True)
    verify = ratings_sub.add_parser(
        "verify", help="recompute every pool from the stored games in order; exit 1 on a "
                       "difference (docs/RATINGS.md)")
    add_setting(verify, "rating_period_s",
                help="the server's --rating-period (default: %(default)s)")
    add_setting(verify, "db_url")

    cluster = sub.add_parser("cluster", help="a cluster of nodes on Redis and PostgreSQL")
    cluster_sub = cluster.add_subparsers(dest="cluster_command", required=True)
    from .cluster import commands

    commands.add_commands(cluster_sub)
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


async def serve_node(settings: Settings, cluster: ClusterSettings,
                     ready_file: str | None) -> None:
    """``serve --cluster``: the server with a cluster node's topology (``server.seam``)."""
    from .app import run_server
    from .cluster.node import cluster_node

    async with cluster_node(settings, cluster) as node:
        await run_server(settings, node, ready_file)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "cluster":
        from .cluster import commands

        return commands.run(args)
    from .storage import normalize_url

    try:  # a bare path means a SQLite file; the async driver is pinned for every URL
        db_url = normalize_url(args.db_url or default_db_url()).render_as_string(
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
        from .storage.sole import DatabaseInUse
        from .tls import TlsProblem
        from .wsio import CannotListen

        if args.workers > 1:
            from .cluster.workers import run_workers

            try:
                return run_workers(args, args.serve_parser)
            except CannotListen as exc:
                print(f"tessera: {exc}", file=sys.stderr)
                return 1
        setup_logging(args.log_level)
        try:
            settings = config.from_flags(args, db_url=db_url)
        except ValueError as exc:  # flags that do not go together: one line, as argparse
            args.serve_parser.error(str(exc))
        raise_fd_limit()
        try:
            with asyncio.Runner(loop_factory=loop_factory(args.loop)) as runner:
                if args.cluster:
                    runner.run(serve_node(settings, cluster_config.ClusterSettings(
                        args.cluster, args.cluster_name, args.node_id or
                        cluster_config.default_node_id(), lease_ms=args.lease_ms),
                        args.ready_file))
                else:
                    runner.run(run_server(settings, ready_file=args.ready_file))
        except (CannotListen, DatabaseInUse, TlsProblem) as exc:  # the operator's: one line
            print(f"tessera: {exc}", file=sys.stderr)
            return 1
        return 0
    if args.command == "db":
        if args.db_command == "sandbox":
            return asyncio.run(_sandbox(args, db_url))
        if args.db_command in ("backup", "restore"):
            from . import backups

            return backups.run(args.db_command, args.path, db_url)
        if args.db_command != "upgrade":
            return asyncio.run(_inspect(args.db_command, db_url))
        from .storage import redact_url, upgrade

        asyncio.run(upgrade(db_url))
        print(f"database at head: {redact_url(db_url)}")
        return 0
    if args.command == "dump":
        return asyncio.run(_dump(args, db_url))
    if args.command == "ratings":
        return asyncio.run(_verify_ratings(args, db_url))
    return asyncio.run(_admin(args, db_url))


async def _inspect(command: str, db_url: str) -> int:
    """``tessera db counts`` (a JSON object) or ``tessera db check`` (0, or 1 and why)."""
    import json

    from .storage import make_engine, redact_url
    from .storage.inventory import problems, row_counts

    engine = make_engine(db_url)
    try:
        if command == "counts":
            print(json.dumps(await row_counts(engine)))
            return 0
        found = await problems(engine)
    finally:
        await engine.dispose()
    for line in found:
        print(line)
    print(f"db check: {len(found)} problems ({redact_url(db_url)})",
          file=sys.stderr if found else sys.stdout)
    return 1 if found else 0


async def _sandbox(args: argparse.Namespace, admin_url: str) -> int:
    """``tessera db sandbox ...``: 2 for a URL or role that cannot be one, 1 if PostgreSQL
    refused or could not be reached."""
    import json

    from sqlalchemy.exc import SQLAlchemyError

    from .storage import redact_url
    from .storage.sandbox import create_sandbox, drop_sandbox, sandbox_backends

    try:
        if args.sandbox_command == "create":
            made = await create_sandbox(admin_url)
            print(json.dumps({"role": made.role, "url": made.url}))
        elif args.sandbox_command == "drop":
            await drop_sandbox(admin_url, args.role)
        else:
            print(json.dumps(await sandbox_backends(admin_url, args.role)))
    except ValueError as exc:
        print(f"tessera: {exc}", file=sys.stderr)
        return 2
    except (SQLAlchemyError, OSError) as exc:
        print(f"tessera: db sandbox {args.sandbox_command} on {redact_url(admin_url)}: "
              f"{type(exc).__name__}: {exc}".splitlines()[0], file=sys.stderr)
        return 1
    return 0


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
        differences = await verify(store, args.rating_period_s)
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
