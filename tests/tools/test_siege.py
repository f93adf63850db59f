"""``tessera siege`` in its short form: every attack, small and for a couple of seconds,
against a real server process (issue 16).

The attacks are run in ``CHUNKS`` runs of ``--attack a,b,...``; each run serves every test
of its attacks, and a chunk's tests are scheduled together (their ids end in ``@siege-N``:
``tests/conftest.py``'s ``group_of``), so the chunks run side by side on the suite's
processes. What is asserted is the output's shape and the targets that are not timings (no
canary disconnect, ``/healthz`` always answered, no acknowledged move lost, memory back
within 25%, the owner gets in at all, what each attack got back). The timed targets (move
p99 <= 100 ms, the owner's login within 1 s) are judged by the tool's exit status and
printed as figures in docs/RELIABILITY.md, not asserted here: this is a busy 2-core machine.

The server's own state is checked too, apart from the tool's verdicts: the run keeps each
attack's server directory (``--workdir``), and the tests read what the server stored
(``python -m server dump``, and its SQLite file's accounts) and logged.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import engine
from clients.localserver import LocalServer
from clients.siege.attacks import ATTACKS, bad_hellos
from clients.siege.raw import ATTACKER, RawSocket
from clients.siege.run import Process
from server.storage import sqlite_url

# fourteen attacks, each with a server, canaries and attacker processes of its own: minutes on
# a busy machine, beyond the suite's per-test bound for a hang (pyproject.toml)
pytestmark = pytest.mark.timeout(900)

SHORT = ["--seconds", "2", "--quiet", "0.5", "--settle", "1",
         "--wrong-passwords", "20", "--login-flooders", "8", "--guest-flooders", "4",
         "--idle", "200", "--fd-connections", "300", "--per-process", "200",
         "--per-address", "20", "--slowloris", "100", "--guests", "40", "--seeks", "5",
         "--challengers", "8", "--window", "16", "--inbox-flooders", "20",
         "--inbox-interval", "0.2", "--bad-hellos", "4",
         "--spam-guests", "20", "--askers", "4", "--pages", "2", "--wave", "300"]
UNTIMED_TARGETS = ("no_canary_disconnect", "healthz", "no_move_lost", "memory")


def siege(*args: str) -> tuple[int, dict[str, Any]]:
    run = subprocess.run([sys.executable, "-m", "clients.siege", "--json", *args],
                         capture_output=True, text=True, timeout=850)
    assert run.stdout.strip(), run.stderr[-3000:]
    return run.returncode, json.loads(run.stdout.strip().splitlines()[-1])


SIEGE_ACCOUNTS = {"owner", "pinger", "white", "black"}  # the siege's own (clients/siege/run.py)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the run keeps each attack's server directory: ``workdir / ATTACK``."""
    return tmp_path_factory.mktemp("siege")


CHUNKS = 3


def chunk_of(attack: str) -> int:
    return list(ATTACKS).index(attack) % CHUNKS


def chunk(index: int) -> list[str]:
    return [attack for attack in ATTACKS if chunk_of(attack) == index]


def of(attack: str, *values: Any) -> Any:
    """A test's parameters reading ``attack``'s run: with its chunk's group in the id."""
    return pytest.param(*(values or (attack,)), id=f"{attack}@siege-{chunk_of(attack)}")


def on(attack: str) -> pytest.MarkDecorator:
    """A test of one attack's run (its ``attack`` argument): in its chunk's group."""
    return pytest.mark.parametrize("attack", [of(attack)])


EVERY_ATTACK = [of(attack) for attack in ATTACKS]
EVERY_CHUNK = [pytest.param(index, id=f"{index}@siege-{index}") for index in range(CHUNKS)]


class ShortRuns:
    """The chunks' runs, each made when one of its attacks is first asked for."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self._runs: dict[int, tuple[int, dict[str, dict[str, Any]]]] = {}

    def __call__(self, attack: str) -> dict[str, Any]:
        return self.chunk(chunk_of(attack))[1][attack]

    def chunk(self, index: int) -> tuple[int, dict[str, dict[str, Any]]]:
        """The exit status and the results by attack of chunk ``index``'s run."""
        if index not in self._runs:
            # a move p99 target no run can meet: every attack misses it, so the run also
            # shows a missed target named and the exit status 1 (no second siege for
            # that); what else is asserted here does not depend on the timed targets
            status, out = siege("--attack", ",".join(chunk(index)), "--move-p99-ms", "0",
                                "--workdir", str(self.workdir), *SHORT)
            self._runs[index] = (status, {r["attack"]: r for r in out["attacks"]})
        return self._runs[index]


@pytest.fixture(scope="module")
def short_run(workdir: Path) -> ShortRuns:
    return ShortRuns(workdir)


def stored_games(db: Path) -> list[dict[str, Any]]:
    """Every game the server stored, as ``python -m server dump --all`` prints it."""
    run = subprocess.run([sys.executable, "-m", "server", "dump", "--all", "--db",
                          sqlite_url(db)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    return [json.loads(line) for line in run.stdout.splitlines() if line.strip()]


def accounts(db: Path) -> dict[str, list[str]]:
    """The server's accounts by kind (its SQLite file, read-only)."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT kind, name FROM users ORDER BY name").fetchall()
    by_kind: dict[str, list[str]] = {}
    for kind, name in rows:
        by_kind.setdefault(kind, []).append(name)
    return by_kind


@pytest.mark.parametrize("attack", EVERY_ATTACK)
def test_what_the_server_stored_is_whole(short_run: ShortRuns, workdir: Path,
                                         attack: str) -> None:
    """Read from the server's store, not from the tool: every game replays move by move
    from ply 0, and it holds at least the moves acknowledged to the move canary (a move
    is acknowledged only once stored; the last of a game may be stored unacknowledged)."""
    run = short_run(attack)
    games = stored_games(workdir / attack / "tessera.db")
    assert games, attack
    for record in games:
        plies = [m["ply"] for m in record["moves"]]
        assert plies == list(range(len(plies))), (attack, record["game_id"])
        assert [m["by"] for m in record["moves"]] == [ply % 2 for ply in plies]
        state = engine.replay(record["game"], record["options"],
                              [m["move"] for m in record["moves"]])
        result = record.get("result") or {}
        if record["status"] == "playing" or result.get("reason") != "normal":
            assert not state.is_over, (attack, record["game_id"])  # no move past the end
        else:  # won on the board: the engine agrees on the end and the winner
            assert state.is_over and state.winner == result["winner"], record["game_id"]
    canary = [g for g in games if [p["name"] for p in g["players"]] == ["white", "black"]]
    stored = sum(len(g["moves"]) for g in canary)
    assert stored >= run["canaries"]["move"]["acknowledged"] > 0


@pytest.mark.parametrize("attack", EVERY_ATTACK)
def test_the_server_logged_no_error(short_run: ShortRuns, workdir: Path,
                                    attack: str) -> None:
    """The server's log (level warning) holds no error and no traceback: every frame of
    every attack was answered or refused as designed, none broke a handler."""
    short_run(attack)
    log = (workdir / attack / "server.log").read_text(errors="replace")
    bad = [line for line in log.splitlines()
           if "Traceback" in line or " ERROR " in line or "CRITICAL" in line]
    assert bad == [], (attack, bad[:20])


@pytest.mark.parametrize("attack", EVERY_ATTACK)
def test_no_attack_made_or_took_an_account(short_run: ShortRuns, workdir: Path,
                                           attack: str) -> None:
    """The server holds the siege's own accounts and guests, nothing the attackers asked
    for: wrong passwords and floods register nobody."""
    short_run(attack)
    held = accounts(workdir / attack / "tessera.db")
    humans = set(held.get("human", []))
    extra = {"challenge-flood": {"botfan"},  # the siege's own players of these two
             "inbox-flood": {"inboxtarget", "inboxfriend"}}.get(attack, set())
    assert humans == SIEGE_ACCOUNTS | extra, (attack, held)
    assert set(held) <= {"human", "guest", "bot"}, held
    assert held.get("bot", []) == (["siegebot"] if attack == "challenge-flood" else [])


@on("guest-flood")
def test_guest_flood_the_server_holds_one_guest_per_yes(short_run: ShortRuns,
                                                        workdir: Path, attack: str) -> None:
    """What the server answered against what it holds: as many guests as it said yes to
    (a rate_limited refusal makes no account), counted by the server, not the attacker."""
    a = short_run(attack)["attacker"]
    guests = accounts(workdir / attack / "tessera.db").get("guest", [])
    assert len(guests) == a["accepted"] > 0


@pytest.mark.parametrize("attack", [of("lockout"), of("login-flood")])
def test_lockout_and_login_flood_let_no_attacker_in(short_run: ShortRuns, workdir: Path,
                                                    attack: str) -> None:
    """Every session the server made in these runs is one of the siege's accounts': the
    attackers' wrong passwords got none (its own tables, not the attacker's tally)."""
    short_run(attack)
    db = workdir / attack / "tessera.db"
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        holders = {name for (name,) in conn.execute(
            "SELECT DISTINCT u.name FROM api_tokens t JOIN users u ON u.id = t.user_id")}
    assert holders <= SIEGE_ACCOUNTS, (attack, holders)


@pytest.mark.parametrize("index", EVERY_CHUNK)
def test_every_attack_ran_with_the_whole_output(short_run: ShortRuns, index: int) -> None:
    status, results = short_run.chunk(index)
    assert list(results) == chunk(index)
    for name, r in results.items():
        for canary in ("ping", "move", "healthz"):
            for phase in ("quiet", "attack", "after"):
                assert {"n", "p50", "p99", "max"} <= set(r["canaries"][canary][phase]), name
        assert r["canaries"]["move"]["attack"]["n"] > 0, name  # the canary moved throughout
        assert r["canaries"]["ping"]["attack"]["n"] > 0, name
        assert {"accepted", "refused", "closed", "failed"} <= set(r["attacker"]), name
        assert set(r["server"]["rss_mb"]) == {"before", "peak", "after"}
        assert r["server"]["rss_mb"]["peak"] >= r["server"]["rss_mb"]["before"] > 0
        assert r["server"]["open_files_peak"] > 0
        assert r["rows_added"]["moves"] > 0  # the move canary's moves are stored
        assert r["canaries"]["move"]["acknowledged"] > 0
        assert "during" in r["owner_login"]
        assert set(r["targets"]) >= {"move_p99", *UNTIMED_TARGETS}, name
        assert r["failed"] == [t for t, v in r["targets"].items() if not v["ok"]]
    any_failed = any(r["failed"] for r in results.values())
    assert status == (1 if any_failed else 0)


@pytest.mark.parametrize("attack", EVERY_ATTACK)
@pytest.mark.parametrize("target", UNTIMED_TARGETS)
def test_untimed_targets_hold(short_run: ShortRuns, attack: str, target: str) -> None:
    result = short_run(attack)
    assert result["targets"][target]["ok"], result["targets"][target]


@on("lockout")
def test_lockout_answers_every_wrong_password(short_run: ShortRuns, attack: str) -> None:
    r = short_run(attack)
    answered = r["attacker"]["accepted"] + sum(r["attacker"]["refused"].values())
    assert answered >= 20
    assert r["attacker"]["accepted"] == 0
    assert "owner_login" in r["targets"]


@on("lockout")
def test_lockout_the_owner_gets_in(short_run: ShortRuns, attack: str) -> None:
    r = short_run(attack)
    assert r["owner_login"]["during"]["ok"], r["owner_login"]
    assert r["owner_login"]["after"]["ok"], r["owner_login"]


@on("login-flood")
def test_login_flood_the_owner_gets_in(short_run: ShortRuns, attack: str) -> None:
    r = short_run(attack)
    assert r["attacker"]["accepted"] == 0
    assert sum(r["attacker"]["refused"].values()) > 0
    assert r["owner_login"]["during"]["ok"], r["owner_login"]
    assert r["owner_login"]["after"]["ok"], r["owner_login"]
    assert "owner_login" in r["targets"]


@pytest.mark.parametrize("attack,size", [
    of("idle-connections", "idle-connections", 200), of("fd-exhaustion", "fd-exhaustion", 300),
    of("slowloris", "slowloris", 100)])
def test_every_connection_attempt_is_accounted_for(short_run: ShortRuns, attack: str,
                                                   size: int) -> None:
    a = short_run(attack)["attacker"]
    assert a["accepted"] + sum(a["refused"].values()) + sum(a["failed"].values()) == size
    if attack == "fd-exhaustion":
        assert a["processes"] == 2  # split over processes, each below its own limit


@on("lobby-poison")
def test_lobby_poison_leaves_the_lobby_readable(short_run: ShortRuns, attack: str) -> None:
    a = short_run(attack)["attacker"]
    assert a["guests"] > 0 and a["seeks_open"] > 0
    assert a["lobby_subscribe"]["ok"], a["lobby_subscribe"]


@on("challenge-flood")
def test_challenge_flood_the_bot_still_plays_and_stops_on_one_sigterm(
        short_run: ShortRuns, attack: str) -> None:
    r = short_run(attack)
    assert r["attacker"]["accepted"] + sum(r["attacker"]["refused"].values()) > 0
    assert sum(r["bot"]["games_with_canary"].values()) >= 1
    assert not r["bot"]["stop"]["killed"], r["bot"]
    assert r["bot"]["stop"]["sigterms"] == 1, r["bot"]


@on("inbox-flood")
def test_inbox_flood_the_friend_reaches_the_flooded_player_every_time(
        short_run: ShortRuns, workdir: Path, attack: str) -> None:
    """Twenty guests flood one player with challenges: the registered friend's challenges
    are each created and received (the server's answers); once the player lets only
    registered players challenge, no guest's is taken (``forbidden``, or ``conflict`` for
    a guest at its own cap, which is looked at first), and the server holds that choice
    with the account (its own table)."""
    r = short_run(attack)
    verdict = r["targets"]["legitimate_challenger"]
    assert verdict["ok"], verdict
    assert verdict["tries_while"]["everyone"] >= 1, verdict  # before the player's choice
    assert verdict["tries_while"]["registered"] >= 1, verdict  # and after it
    a = r["attacker"]
    assert a["guests"] > 0 and a["guests_while"]["everyone"]["accepted"] > 0
    after = a["guests_while"]["registered"]
    assert after["accepted"] == 0, after
    assert set(after["refused"]) <= {"forbidden", "conflict", "rate_limited"}, after
    assert after["refused"].get("forbidden", 0) > 0
    db = workdir / attack / "tessera.db"
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        policy = conn.execute("SELECT challenge_policy FROM users WHERE name = ?",
                              ("inboxtarget",)).fetchone()
    assert policy == ("registered",)


@on("bad-hello")
def test_bad_hellos_are_each_closed_at_once_with_the_documented_code(
        short_run: ShortRuns, attack: str) -> None:
    r = short_run(attack)
    verdict = r["targets"]["bad_hello_closed"]
    assert verdict["ok"], verdict
    a = r["attacker"]
    assert set(a["by_kind"]) == {kind for kind, _, _ in bad_hellos()}  # each one sent
    assert a["accepted"] == 0 and set(a["closed"]) == {"4400", "1008"}
    assert a["refused"]["bad_request"] == a["closed"]["4400"] > 0


@on("request-flood")
def test_request_flood_is_rate_limited(short_run: ShortRuns, attack: str) -> None:
    a = short_run(attack)["attacker"]
    assert a["accepted"] > 0
    assert a["refused"].get("rate_limited", 0) > 0
    assert set(a["refused"]) == {"rate_limited"}


@on("bombs")
def test_bombs_get_only_documented_answers(short_run: ShortRuns, attack: str) -> None:
    a = short_run(attack)["attacker"]
    assert a["frames_sent"] >= 150
    assert a["internal_errors"] == 0
    assert a["accepted"] == 0  # every frame refused or closed: none silent, none obeyed
    assert set(a["refused"]) <= {"bad_request", "too_large", "unauthorized", "not_found"}
    assert set(a["closed"]) <= {"1008", "1009"}
    assert a["closed"].get("1009", 0) >= 3  # 20 KiB, 1 MiB, and a 1 TiB header


@on("lobby-spam")
def test_lobby_spam_gets_pages_or_rate_limited(short_run: ShortRuns, attack: str) -> None:
    """Every lobby request of the spam was answered with a page of the lobby (a page:
    small, however many seeks are open) or a documented rate_limited, over the attack's
    own window, and the verdict says so."""
    r = short_run(attack)
    a = r["attacker"]
    assert a["seeks_open"] > 0 and a["guests"] > 0
    lobby = a["lobby"]
    assert lobby["accepted"] > 0 and set(lobby["refused"]) <= {"rate_limited"}
    assert 0 < lobby["largest"] <= 64 * 1024 and lobby["bytes"] >= lobby["largest"]
    assert not lobby["closed"] and not lobby["failed"]
    assert r["targets"]["lobby_answered"]["ok"], r["targets"]["lobby_answered"]
    assert r["targets"]["lobby_page_small"]["ok"], r["targets"]["lobby_page_small"]
    window = r["targets"]["move_p99_attack_window"]
    assert window["n"] == r["canaries"]["move"]["attack"]["n"] > 0  # the attack's own
    assert "healthz_within_500ms" in r["targets"]


@on("connection-wave")
def test_connection_wave_is_closed_by_the_hello_deadline(short_run: ShortRuns, attack: str) -> None:
    """Every connection of the wave is accounted for, and every one the server admitted
    it closed with 4408 (its hello deadline), none left open."""
    r = short_run(attack)
    a = r["attacker"]
    assert a["accepted"] + sum(a["refused"].values()) + sum(a["failed"].values()) == 300
    assert a["accepted"] > 0 and a["closed"] == {"4408": a["accepted"]}
    assert 10 <= a["closed_after_s"]["min"] <= a["closed_after_s"]["max"] < 15
    assert r["targets"]["wave_closed_4408"]["ok"], r["targets"]["wave_closed_4408"]
    assert r["targets"]["move_p99_attack_window"]["n"] > 0
    assert r["targets"]["healthz_within_500ms"]["n"] > 0


@on("guest-flood")
def test_guest_flood_from_one_and_from_many_addresses(short_run: ShortRuns, attack: str) -> None:
    a = short_run(attack)["attacker"]
    assert a["one_address"]["accepted"] + sum(a["one_address"]["refused"].values()) > 0
    assert a["many_addresses"]["accepted"] + sum(a["many_addresses"]["refused"].values()) > 0


@pytest.mark.parametrize("index", EVERY_CHUNK)
def test_a_missed_target_exits_1_and_is_named(short_run: ShortRuns, index: int) -> None:
    status, results = short_run.chunk(index)
    assert status == 1
    if "bombs" in results:
        assert results["bombs"]["failed"] == ["move_p99"]  # its other targets are untimed
    for r in results.values():
        assert "move_p99" in r["failed"]
        assert r["targets"]["move_p99"]["limit_ms"] == 0


CLUSTER_SHORT = ["--seconds", "2", "--quiet", "0.5", "--settle", "0.5", "--wrong-passwords", "12",
                 "--login-flooders", "4", "--guest-flooders", "4", "--login-burst", "8",
                 "--guest-burst", "5"]
BUDGETED = {"lockout": "lockout_budget", "login-flood": "login_budget",
            "guest-flood": "guest_budget"}


def test_siege_on_three_nodes_holds_each_budget_across_them() -> None:
    """``--nodes 3``: three attacks on budgets, each against a cluster of its own, its
    connections spread over the nodes. From what the servers answered: every node
    answered some of it, each budget was reached and held as one (spread over three nodes
    a per-node budget would let through up to three times as much: 12 wrong passwords
    split 4 a node lock no node at 5, and three login or guest bursts of 8 or 5); nothing
    acknowledged to the move canary, whose players sit on two other nodes, is missing from
    PostgreSQL; every node's ``/healthz`` and both canaries answered throughout; the owner
    got in. Skipped without PostgreSQL and Redis."""
    db_url = os.environ.get("TESSERA_TEST_PG_URL")
    redis_url = os.environ.get("TESSERA_TEST_REDIS_URL")
    if not db_url or not redis_url:
        pytest.skip("siege --nodes skipped: TESSERA_TEST_PG_URL and TESSERA_TEST_REDIS_URL "
                    "are needed")
    private = [] if shutil.which("redis-server") else ["--cluster", redis_url]
    _, out = siege("--attack", ",".join(BUDGETED), "--nodes", "3", "--db", db_url, *private,
                   *CLUSTER_SHORT)
    results = {r["attack"]: r for r in out["attacks"]}
    assert list(results) == list(BUDGETED)
    for name, r in results.items():
        assert r["nodes"] == 3 and len(r["server"]["nodes"]) == 3, name
        verdict = r["targets"][BUDGETED[name]]
        assert verdict["ok"], (name, verdict, r["attacker"])
        assert len(verdict["by_node"]) == 3, verdict
        spread = r["attacker"]["one_address" if name == "guest-flood" else "by_node"]
        by_node = spread["by_node"] if name == "guest-flood" else spread
        assert all(sum(n["refused"].values()) + n["accepted"] > 0 for n in by_node), by_node
        for target in ("no_canary_disconnect", "healthz", "no_move_lost"):
            assert r["targets"][target]["ok"], (name, target, r["targets"][target])
        assert r["canaries"]["move"]["acknowledged"] > 0 and r["rows_added"]["moves"] > 0
        assert r["canaries"]["move"]["attack"]["n"] > 0 and r["canaries"]["ping"]["attack"]["n"] > 0
        assert all(node["answered"] > 0 and node["failures"] == 0
                   for node in r["canaries"]["healthz_by_node"]), r["canaries"]
        assert r["owner_login"]["during"]["ok"], r["owner_login"]
        assert r["server"]["drain_s"] is not None  # every node closed the attack's connections
    lockout = results["lockout"]
    assert lockout["targets"]["lockout_budget"]["counted"] == 5  # the lock, once for all
    assert lockout["attacker"]["refused"].get("locked_out", 0) > 0
    assert lockout["owner_login"]["after"]["ok"], lockout["owner_login"]
    flood = results["login-flood"]
    assert flood["attacker"]["accepted"] == 0
    assert flood["targets"]["login_budget"]["counted"] > 0
    assert flood["attacker"]["refused"].get("rate_limited", 0) > 0  # refused past the budget
    guests = results["guest-flood"]["attacker"]["one_address"]
    assert guests["accepted"] >= 1 and guests["refused"].get("rate_limited", 0) > 0


def test_the_siege_counts_the_clients_connections_a_server_holds(tmp_path: Path) -> None:
    """What the drain waits for: the sockets a real server holds but its own connections
    out, read from /proc by inode (not its open files: its database, a cluster node's
    pooled PostgreSQL and Redis connections), five more while five clients are
    connected, as many as before once they have reset their connections."""
    server = LocalServer(tmp_path)
    server.start()
    try:
        assert server.pid is not None
        proc = Process(server.pid, server.port)
        before = proc.connections()

        async def five() -> int:
            socks = [await RawSocket.connect(server.port, ATTACKER) for _ in range(5)]
            try:
                for sock in socks:
                    assert await sock.handshake(server.port) == 101
                return proc.connections()
            finally:
                for sock in socks:
                    sock.close()

        assert asyncio.run(five()) == before + 5
        deadline = time.monotonic() + 10
        while proc.connections() > before and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.connections() == before
    finally:
        server.stop()
