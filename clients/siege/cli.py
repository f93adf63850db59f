"""``tessera siege --attack NAME [--json] [--seconds S] [--nodes N]``: hostile traffic
against a server of its own, and whether the honest users beside it were served (issues 16
and 24).

Each attack gets a fresh server (``python -m server serve`` on a free loopback port, a
SQLite file in a temporary directory, removed after), or with ``--nodes N`` (2 or more) a
fresh cluster of N such nodes on a PostgreSQL schema and a Redis of its own
(:mod:`clients.privatecluster`), the attack's connections spread over the nodes. Beside the
attack run a ping canary, a move canary and a ``/healthz`` probe
(:mod:`clients.siege.canaries`); the attack runs in processes of its own
(:mod:`clients.siege.attacks`). The targets, checked after each attack (exit status 1 if
any is missed, and the output names it):

- ``move_p99``: the move canary's acknowledgement p99 during and after the attack <= 100 ms;
- ``no_canary_disconnect``: neither canary lost its connection;
- ``healthz``: ``/healthz`` answered every poll;
- ``owner_login`` (``lockout``, ``login-flood``): the owner, from an address that sent no
  wrong password, logged in within 1 s, during the attack and after it;
- ``legitimate_challenger`` (``inbox-flood``): every challenge the registered friend sent
  the flooded player was created and reached them (``challenge_created``, then the
  player's ``challenge_received`` of that id within 5 s);
- ``bad_hello_closed`` (``bad-hello``): every bad hello got the answer and close code
  docs/PROTOCOL.md gives (``bad_request`` and 4400; an int version not spoken,
  ``unsupported_version`` and 1008) within ``BAD_HELLO_CLOSE_MS``, and the probe
  connection got a pong for every ping meanwhile;
- ``lockout_budget`` (``lockout``), ``login_budget`` (``login-flood``), ``guest_budget``
  (``guest-flood``, its one-address half): what the servers answered, counted over every
  node, is within what one server's budget allows one address in the attack's time (the
  wrong passwords counted, ``invalid_credentials``; the logins checked; the guests given):
  spread over N nodes, an attack gets no more than against one (:mod:`.budgets`);
- ``no_move_lost``: every move acknowledged to the canary is in the database;
- ``memory``: the server's RSS ``settle`` seconds after the attack's connections are closed
  on the server's side (the connections it holds back near their number before; at most
  60 s) is within 25% of before; on a cluster, on every node.

``lobby-spam`` and ``connection-wave`` (issue 24) are judged over the attack's own window
(while the attacker runs, not diluted by the quiet after it) and on what the server
answered (``ATTACK_TARGETS``): ``move_p99_attack_window``, ``healthz_within_500ms`` (every
poll answered within 500 ms, not only answered); ``lobby_answered`` and ``lobby_page_small``
(every lobby request got a page of at most 64 KiB or ``rate_limited``); ``wave_closed_4408``
(every connection of the wave the server admitted, it closed with 4408).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import protocol as p

from ..privatecluster import DEFAULT_DB
from .attacks import ATTACKS
from .budgets import Budgets

MOVE_P99_MS = 100.0
OWNER_LOGIN_MS = 1000.0
HEALTHZ_MS = 500.0
MEMORY_SLACK = 1.25
OWNER_ATTACKS = ("lockout", "login-flood")
WAVE_CLOSE_WITHIN_S = 40.0  # connection-wave: how long after the wave its closes may take
LOBBY_PAGE_BYTES = 64 * 1024  # lobby-spam: no lobby reply larger (a page, not the lobby)
BAD_HELLO_CLOSE_MS = 1000.0  # a bad hello's connection closed "at once": within this


def params_for(name: str, opts: argparse.Namespace) -> dict[str, Any]:
    """The attack's sizes from the options."""
    common: dict[str, Any] = {"seconds": opts.seconds, "owner": "owner"}
    sizes: dict[str, dict[str, Any]] = {
        "lockout": {"attempts": opts.wrong_passwords},
        "login-flood": {"clients": opts.login_flooders, "in_flight": opts.in_flight},
        "idle-connections": {"connections": opts.idle},
        "fd-exhaustion": {"connections": opts.fd_connections * opts.nodes,
                          "per_address": opts.per_address, "per_process": opts.per_process},
        "slowloris": {"connections": opts.slowloris},
        "lobby-poison": {"clients": opts.guests, "seeks": opts.seeks},
        "challenge-flood": {"clients": opts.challengers, "bot": "siegebot"},
        "guest-flood": {"clients": opts.guest_flooders},
        "request-flood": {"window": opts.window},
        "bombs": {},
        "lobby-spam": {"guests": opts.spam_guests, "seeks": opts.seeks,
                       "askers": opts.askers, "pages": opts.pages},
        "connection-wave": {"connections": opts.wave, "per_address": opts.per_address,
                            "close_within_s": WAVE_CLOSE_WITHIN_S},
        "inbox-flood": {"clients": opts.inbox_flooders, "interval": opts.inbox_interval},
        "bad-hello": {"concurrency": opts.bad_hellos},
    }
    return {**common, **sizes[name]}


def targets(name: str, result: dict[str, Any], move_p99_ms: float = MOVE_P99_MS
            ) -> dict[str, dict[str, Any]]:
    """Each target: held or not, and the figure it was judged on."""
    samples = result["_samples"]
    move = sorted(samples["move"].during())
    p99 = move[min(len(move) - 1, int(len(move) * 0.99))] if move else None
    out: dict[str, dict[str, Any]] = {
        "move_p99": {"ok": p99 is not None and p99 <= move_p99_ms,
                     "value_ms": None if p99 is None else round(p99, 1),
                     "limit_ms": move_p99_ms},
    }
    disconnects = sum(samples[c].count("disconnects", ("attack", "after"))
                      for c in ("move", "ping"))
    out["no_canary_disconnect"] = {"ok": disconnects == 0, "value": disconnects}
    failures = samples["healthz"].count("failures", ("quiet", "attack", "after"))
    out["healthz"] = {"ok": failures == 0, "failures": failures}
    if name in OWNER_ATTACKS:
        logins = [result["owner_login"].get("during", {}), result["owner_login"].get("after", {})]
        worst = max((lg.get("ms", 0.0) for lg in logins), default=0.0)
        ok = all(lg.get("ok") for lg in logins) and worst <= OWNER_LOGIN_MS
        out["owner_login"] = {"ok": ok, "worst_ms": worst, "limit_ms": OWNER_LOGIN_MS}
    if name == "inbox-flood":
        out["legitimate_challenger"] = legitimate_challenger(result["attacker"])
    if name == "bad-hello":
        out["bad_hello_closed"] = bad_hello_closed(result["attacker"])
    if name in BUDGET_TARGETS:
        out.update(BUDGET_TARGETS[name](result["attacker"], Budgets(**result["budgets"])))
    out["no_move_lost"] = {"ok": result["acked_moves_lost"] == 0,
                           "value": result["acked_moves_lost"]}
    if name in ATTACK_TARGETS:
        out.update(ATTACK_TARGETS[name](result, move_p99_ms))
    out["memory"] = memory(result["server"])
    return out


def memory(server: dict[str, Any]) -> dict[str, Any]:
    """RSS after within MEMORY_SLACK of before, on every node (the figures: the node whose
    memory grew most, ``node`` on a cluster)."""
    every = [node["rss_mb"] for node in server.get("nodes", [server])]
    rss = server["rss_mb"]
    return {"ok": all(r["after"] <= r["before"] * MEMORY_SLACK for r in every),
            "before_mb": rss["before"], "after_mb": rss["after"],
            "limit_mb": round(rss["before"] * MEMORY_SLACK, 1),
            **({"node": server["rss_node"]} if "rss_node" in server else {})}


def answered(tally: dict[str, Any], codes: tuple[str, ...], accepted: bool = False
             ) -> tuple[int, list[int] | None]:
    """How many of ``tally``'s requests the servers answered with one of ``codes`` (and,
    ``accepted``, with a yes), over every node, and on each node if it was spread."""
    def count(t: dict[str, Any]) -> int:
        yes: int = t["accepted"] if accepted else 0
        return yes + sum(int(t["refused"].get(c, 0)) for c in codes)

    nodes = tally.get("by_node")
    return count(tally), None if nodes is None else [count(node) for node in nodes]


def budget(name: str, counted: int, allowed: int, nodes: list[int] | None, ok: bool = True
           ) -> dict[str, dict[str, Any]]:
    return {name: {"ok": ok and counted <= allowed, "counted": counted, "allowed": allowed,
                   **({"by_node": nodes} if nodes is not None else {})}}


def lockout_budget(attacker: dict[str, Any], budgets: Budgets) -> dict[str, dict[str, Any]]:
    """The wrong passwords the servers counted (``invalid_credentials``), over every node:
    at most what one server's lockout counts from one address in the attack's time; none
    let in."""
    counted, nodes = answered(attacker, (p.ErrorCode.INVALID_CREDENTIALS,))
    return budget("lockout_budget", counted, budgets.wrong_passwords(attacker["attack_s"]),
                  nodes, ok=attacker["accepted"] == 0)


def login_budget(attacker: dict[str, Any], budgets: Budgets) -> dict[str, dict[str, Any]]:
    """The logins the servers checked (a password hash each: ``invalid_credentials`` or
    a yes), over every node: at most one server's per-address budget in the attack's
    time."""
    counted, nodes = answered(attacker, (p.ErrorCode.INVALID_CREDENTIALS,), accepted=True)
    return budget("login_budget", counted, budgets.logins(attacker["attack_s"]), nodes)


def guest_budget(attacker: dict[str, Any], budgets: Budgets) -> dict[str, dict[str, Any]]:
    """The guests the servers gave the one address of the flood's first half, over every
    node: at most one server's per-address budget in the attack's time."""
    counted, nodes = answered(attacker["one_address"], (), accepted=True)
    return budget("guest_budget", counted, budgets.guests(attacker["attack_s"]), nodes)


BUDGET_TARGETS: dict[str, Callable[[dict[str, Any], Budgets], dict[str, dict[str, Any]]]] = {
    "lockout": lockout_budget,
    "login-flood": login_budget,
    "guest-flood": guest_budget,
}
"""The attacks whose budgets must hold across nodes: one budget, however many nodes."""


def p99(values: list[float]) -> float | None:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else None


def attack_window(result: dict[str, Any], move_p99_ms: float) -> dict[str, dict[str, Any]]:
    """The canaries over the attack's own window (while the attacker ran, not the quiet
    after it): the move canary's acknowledgement p99, and every ``/healthz`` poll answered
    within HEALTHZ_MS (a slow answer misses it, not only a failed one)."""
    samples = result["_samples"]
    move = samples["move"].during(("attack",))
    worst = p99(move)
    health = samples["healthz"].during(("attack",))
    failed = samples["healthz"].count("failures", ("attack",))
    slowest = max(health, default=None)
    return {
        "move_p99_attack_window": {"ok": worst is not None and worst <= move_p99_ms,
                                   "value_ms": None if worst is None else round(worst, 1),
                                   "n": len(move), "limit_ms": move_p99_ms},
        "healthz_within_500ms": {"ok": failed == 0 and slowest is not None
                                 and slowest <= HEALTHZ_MS,
                                 "max_ms": None if slowest is None else round(slowest, 1),
                                 "failures": failed, "n": len(health)},
    }


def lobby_spam_targets(result: dict[str, Any], move_p99_ms: float
                       ) -> dict[str, dict[str, Any]]:
    """Besides the attack window's: every lobby request answered with a page of the lobby
    or a documented ``rate_limited``, none larger than a page, no asker dropped."""
    lobby = result["attacker"].get("lobby", {})
    refused = set(lobby.get("refused", {}))
    return {**attack_window(result, move_p99_ms),
            "lobby_answered": {"ok": lobby.get("accepted", 0) > 0
                               and refused <= {"rate_limited"}
                               and not lobby.get("closed") and not lobby.get("failed"),
                               "pages": lobby.get("accepted", 0),
                               "refused": lobby.get("refused", {}),
                               "closed": lobby.get("closed", {}),
                               "failed": lobby.get("failed", {})},
            "lobby_page_small": {"ok": 0 < lobby.get("largest", 0) <= LOBBY_PAGE_BYTES,
                                 "largest_bytes": lobby.get("largest", 0),
                                 "limit_bytes": LOBBY_PAGE_BYTES}}


def connection_wave_targets(result: dict[str, Any], move_p99_ms: float
                            ) -> dict[str, dict[str, Any]]:
    """Besides the attack window's: every connection of the wave the server admitted was
    closed by it with 4408 (its hello deadline), none left open."""
    attacker = result["attacker"]
    closed = attacker.get("closed", {})
    return {**attack_window(result, move_p99_ms),
            "wave_closed_4408": {"ok": attacker.get("accepted", 0) > 0
                                 and closed == {"4408": attacker["accepted"]},
                                 "admitted": attacker.get("accepted", 0), "closed": closed}}


ATTACK_TARGETS: dict[str, Callable[[dict[str, Any], float], dict[str, dict[str, Any]]]] = {
    "lobby-spam": lobby_spam_targets,
    "connection-wave": connection_wave_targets,
}
"""The targets of an attack besides every attack's, judged on what the server answered."""


def legitimate_challenger(attacker: dict[str, Any]) -> dict[str, Any]:
    """The friend's challenges to the flooded player: each created, each received (and
    how many were sent while the player let everyone, or only registered players, challenge
    them)."""
    legit = attacker.get("legitimate", {})
    tries = legit.get("tries", 0)
    return {"ok": tries > 0 and legit.get("created") == legit.get("reached") == tries,
            "tries": tries, "created": legit.get("created", 0),
            "reached": legit.get("reached", 0), "refused": legit.get("refused", {}),
            "tries_while": legit.get("tries_while", {}),
            "reach_ms_max": legit.get("reach_ms_max")}


def bad_hello_closed(attacker: dict[str, Any]) -> dict[str, Any]:
    """Every bad hello answered and closed as documented, at once; the probe answered."""
    answers = attacker.get("answers", {})
    probe = attacker.get("probe", {})
    close_max = attacker.get("close_ms", {}).get("max")
    ok = (attacker.get("sent", 0) > 0 and answers.get("otherwise", 1) == 0
          and answers.get("as_documented") == attacker.get("sent")
          and close_max is not None and close_max <= BAD_HELLO_CLOSE_MS
          and probe.get("pings", 0) > 0 and probe.get("pongs") == probe.get("pings"))
    return {"ok": ok, "sent": attacker.get("sent", 0),
            "as_documented": answers.get("as_documented", 0),
            "otherwise": answers.get("otherwise", 0), "close_ms_max": close_max,
            "limit_ms": BAD_HELLO_CLOSE_MS,
            "probe_pongs": f"{probe.get('pongs', 0)}/{probe.get('pings', 0)}"}


def human(result: dict[str, Any]) -> str:
    """The figures of one attack as a few aligned lines."""
    on = f"{result['nodes']} nodes, " if result.get("nodes", 1) > 1 else ""
    lines = [f"== {result['attack']} ({on}{result['seconds']} s; "
             f"{'PASS' if not result['failed'] else 'FAIL: ' + ', '.join(result['failed'])})"]
    can = result["canaries"]
    lines.append(f"  {'canary':<8} {'phase':<7} {'n':>5} {'p50 ms':>8} {'p99 ms':>8} "
                 f"{'max ms':>8}  problems")
    for cname in ("ping", "move", "healthz"):
        for ph in ("quiet", "attack", "after"):
            s = can[cname][ph]
            extra = {k: v for k, v in s.items() if k not in ("n", "p50", "p99", "max")}
            lines.append(f"  {cname:<8} {ph:<7} {s['n']:>5} {fmt(s['p50']):>8} "
                         f"{fmt(s['p99']):>8} {fmt(s['max']):>8}  "
                         f"{', '.join(f'{k} {v}' for k, v in extra.items())}")
    lines.append(f"  attacker: {json.dumps(result['attacker'])}")
    if result.get("owner_login"):
        lines.append(f"  owner login: {json.dumps(result['owner_login'])}")
    if result.get("bot"):
        lines.append(f"  bot: {json.dumps(result['bot'])}")
    if can.get("healthz_by_node"):
        lines.append(f"  /healthz by node: {json.dumps(can['healthz_by_node'])}")
    srv = result["server"]
    for index, node in enumerate(srv.get("nodes", [])):
        lines.append(f"  node {index}: RSS MiB before/peak/after {node['rss_mb']['before']} / "
                     f"{node['rss_mb']['peak']} / {node['rss_mb']['after']}; open files "
                     f"before/peak/after {node['open_files_before']} / "
                     f"{node['open_files_peak']} / {node['open_files_after']}; clients' "
                     f"connections before/after {node['connections_before']} / "
                     f"{node['connections_after']}; CPU {node['cpu_s_during_attack']} s")
    worst = " (the worst node's)" if srv.get("nodes") else ""
    lines.append(f"  server RSS MiB{worst} before/peak/after: {srv['rss_mb']['before']} / "
                 f"{srv['rss_mb']['peak']} / {srv['rss_mb']['after']}; open files peak "
                 f"{srv['open_files_peak']} of {result.get('server_open_files_limit')} "
                 f"(before {srv.get('open_files_before')}, after {srv.get('open_files_after')}; "
                 f"clients' connections closed server-side in {srv.get('drain_s')} s); "
                 f"log +{srv['log_bytes_added']} bytes; CPU during the attack "
                 f"{srv['cpu_s_during_attack']} s (attacker {result['attacker'].get('cpu_s')} "
                 f"s); load average {result.get('load_average')}")
    lines.append(f"  server event loop lag during the attack: "
                 f"{json.dumps(result.get('loop_lag_during_attack'))}")
    lines.append(f"  rows added: {json.dumps(result['rows_added'])}; acknowledged moves "
                 f"{can['move']['acknowledged']}, lost {result['acked_moves_lost']}")
    for tname, t in result["targets"].items():
        figures = ", ".join(f"{k} {v}" for k, v in t.items() if k != "ok")
        lines.append(f"  target {tname:<26} {'ok' if t['ok'] else 'MISSED'}  ({figures})")
    return "\n".join(lines)


def fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def run_one(name: str, opts: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    from .run import siege

    t0 = time.monotonic()
    budgets = Budgets(lockout_after=opts.lockout_after, login_burst=opts.login_burst,
                      guest_burst=opts.guest_burst)
    cluster = {"db_url": opts.db or DEFAULT_DB, "redis_url": opts.cluster}
    result = asyncio.run(siege(name, params_for(name, opts), workdir / name,
                               quiet_s=opts.quiet, settle_s=opts.settle, nodes=opts.nodes,
                               budgets=budgets, **cluster))
    result["targets"] = targets(name, result, opts.move_p99_ms)
    result["failed"] = [t for t, v in result["targets"].items() if not v["ok"]]
    result["seconds"] = round(time.monotonic() - t0, 1)
    del result["_samples"]
    return result


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="tessera siege",
        description="Hostile traffic against a server of its own, with a ping canary, a "
                    "move canary and /healthz polled beside it; exit status 1 if a target "
                    "is missed (docs/RELIABILITY.md, 'Targets and figures').")
    ap.add_argument("--attack", required=True, type=attack_names, metavar="ATTACK[,...]",
                    help="the attack, several separated by commas, or all of them, in "
                         f"turn: {', '.join(ATTACKS)}")
    ap.add_argument("--json", action="store_true",
                    help="print one JSON object (with several attacks: {'attacks': [...]})")
    ap.add_argument("--seconds", type=float, default=15.0,
                    help="how long each attack lasts (default: %(default)s)")
    ap.add_argument("--quiet", type=float, default=2.0,
                    help="canaries alone before the attack, seconds (default: %(default)s)")
    ap.add_argument("--settle", type=float, default=5.0,
                    help="seconds after the attack's connections are closed on the "
                         "server's side before memory is read again (default: %(default)s)")
    ap.add_argument("--workdir", type=Path, default=None,
                    help="keep each attack's server directory (its SQLite file and log) in "
                         "DIR/ATTACK, to look at afterwards (default: a temporary directory, "
                         "removed)")
    ap.add_argument("--move-p99-ms", type=float, default=MOVE_P99_MS,
                    help="the move canary's p99 target (default: %(default)s)")
    where = ap.add_argument_group("a cluster")
    where.add_argument(
        "--nodes", type=int, default=1,
        help="run each attack against a fresh cluster of this many nodes on PostgreSQL and "
             "Redis, its connections spread over them and the canaries on different nodes "
             "(default: %(default)s, one process on SQLite)")
    where.add_argument("--db", default=None, metavar="PG_URL",
                       help="with --nodes: the PostgreSQL server (a schema of each attack's "
                            f"own is made and dropped; default: {DEFAULT_DB})")
    where.add_argument("--cluster", default=None, metavar="REDIS_URL",
                       help="with --nodes: the Redis to use (a cluster name of each attack's "
                            "own, deleted after); default: a private redis-server on a free "
                            "port if installed")
    budgets = ap.add_argument_group(
        "the servers' budgets", "given to every server started (the server's defaults "
        "unless set), and held against what the servers answered")
    defaults = Budgets()
    budgets.add_argument("--lockout-after", type=int, default=defaults.lockout_after,
                         help="wrong passwords from one address before it is locked out of "
                              "the account (default: %(default)s)")
    budgets.add_argument("--login-burst", type=int, default=defaults.login_burst,
                         help="logins one address may make at once (default: %(default)s)")
    budgets.add_argument("--guest-burst", type=int, default=defaults.guest_burst,
                         help="guests one address may make at once (default: %(default)s)")
    size = ap.add_argument_group("attack sizes")
    size.add_argument("--wrong-passwords", type=int, default=24,
                      help="lockout: wrong passwords sent at once (default: %(default)s)")
    size.add_argument("--login-flooders", type=int, default=64,
                      help="login-flood: connections sending wrong logins "
                           "(default: %(default)s)")
    size.add_argument("--guest-flooders", type=int, default=16,
                      help="guest-flood: connections asking for guest accounts at once "
                           "(default: %(default)s)")
    size.add_argument("--in-flight", type=int, default=4,
                      help="login-flood: logins in flight on each connection "
                           "(default: %(default)s)")
    size.add_argument("--idle", type=int, default=3000,
                      help="idle-connections: websockets that never say hello "
                           "(default: %(default)s)")
    size.add_argument("--fd-connections", type=int, default=21000,
                      help="fd-exhaustion: connections to try on each node (default: "
                           "%(default)s, above "
                           "a 20,000 open-files limit)")
    size.add_argument("--per-address", type=int, default=50,
                      help="fd-exhaustion, connection-wave: connections per source address "
                           "(default: %(default)s)")
    size.add_argument("--per-process", type=int, default=15000,
                      help="fd-exhaustion: connections per attacker process, below its "
                           "own open-files limit (default: %(default)s)")
    size.add_argument("--slowloris", type=int, default=1000,
                      help="slowloris: half-sent handshakes (default: %(default)s)")
    size.add_argument("--guests", type=int, default=2100,
                      help="lobby-poison: guests, as many as join within --seconds "
                           "(default: %(default)s)")
    size.add_argument("--seeks", type=int, default=5,
                      help="lobby-poison: seeks per guest (default: %(default)s)")
    size.add_argument("--challengers", type=int, default=50,
                      help="challenge-flood: guests challenging the bot "
                           "(default: %(default)s)")
    size.add_argument("--window", type=int, default=64,
                      help="request-flood: requests in flight (default: %(default)s)")
    size.add_argument("--spam-guests", type=int, default=1000,
                      help="lobby-spam: guests opening --seeks seeks each, as many as join "
                           "within --seconds (default: %(default)s)")
    size.add_argument("--askers", type=int, default=20,
                      help="lobby-spam: clients asking for the lobby over and over "
                           "(default: %(default)s)")
    size.add_argument("--pages", type=int, default=2,
                      help="lobby-spam: pages each asker follows after the first "
                           "(default: %(default)s)")
    size.add_argument("--wave", type=int, default=10_000,
                      help="connection-wave: websockets opened over --seconds that never "
                           "say hello, --per-address from each address (default: "
                           "%(default)s)")
    size.add_argument("--inbox-flooders", type=int, default=100,
                      help="inbox-flood: guests challenging one player, each from an "
                           "address of its own (default: %(default)s)")
    size.add_argument("--inbox-interval", type=float, default=0.25,
                      help="inbox-flood: seconds between the friend's challenges "
                           "(default: %(default)s)")
    size.add_argument("--bad-hellos", type=int, default=8,
                      help="bad-hello: connections sending bad hellos at once "
                           "(default: %(default)s)")
    return ap


def attack_names(text: str) -> list[str]:
    """``--attack``'s value: the attacks named (``all``: every one), in the order given."""
    if text == "all":
        return list(ATTACKS)
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in ATTACKS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown attack {', '.join(unknown) or repr(text)}: choose from "
            f"{', '.join(ATTACKS)} or all")
    return list(dict.fromkeys(names))


def main(argv: list[str] | None = None) -> int:
    ap = parser()
    opts = ap.parse_args(argv)
    if opts.nodes < 1:
        ap.error(f"--nodes {opts.nodes}: give 1 (one process) or more")
    if opts.nodes == 1 and (opts.db is not None or opts.cluster is not None):
        ap.error("--db and --cluster are a cluster's: give --nodes N (2 or more) with them "
                 "(one process runs on a fresh SQLite file)")
    if opts.db is not None and opts.db.partition(":")[0].partition("+")[0] != "postgresql":
        ap.error(f"--db {opts.db!r} is not a PostgreSQL URL: use "
                 "postgresql+asyncpg://USER@HOST/DB")
    names = opts.attack
    results = []
    kept = contextlib.nullcontext(str(opts.workdir)) if opts.workdir else None
    with kept or tempfile.TemporaryDirectory(prefix="tessera-siege-") as tmp:
        for name in names:
            result = run_one(name, opts, Path(tmp))
            results.append(result)
            if not opts.json:
                print(human(result), flush=True)
    failed = {r["attack"]: r["failed"] for r in results if r["failed"]}
    if opts.json:
        print(json.dumps(results[0] if len(results) == 1 else
                         {"attacks": results, "failed": failed}))
    elif len(results) > 1:
        print("FAILED: " + "; ".join(f"{a}: {', '.join(f)}" for a, f in failed.items())
              if failed else "every target held")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
