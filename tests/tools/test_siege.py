"""``tessera siege`` in its short form: every attack, small and for a couple of seconds,
against a real server process (issue 16).

One run of ``--attack all`` serves every test here. What is asserted is the output's shape
and the targets that are not timings (no canary disconnect, ``/healthz`` always answered,
no acknowledged move lost, memory back within 25%, the owner gets in at all, what each
attack got back). The timed targets (move p99 <= 100 ms, the owner's login within 1 s)
are judged by the tool's exit status and printed as figures in docs/RELIABILITY.md, not
asserted here: this is a busy 2-core machine. The owner's login after a lockout held only
once branch ``harden`` was merged (main locked the owner out for 24 hours).
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from clients.siege.attacks import ATTACKS

SHORT = ["--seconds", "2", "--quiet", "0.5", "--settle", "1",
         "--wrong-passwords", "20", "--login-flooders", "8", "--guest-flooders", "4",
         "--idle", "200", "--fd-connections", "300", "--per-process", "200",
         "--per-address", "20", "--slowloris", "100", "--guests", "40", "--seeks", "5",
         "--challengers", "8", "--window", "16"]
UNTIMED_TARGETS = ("no_canary_disconnect", "healthz", "no_move_lost", "memory")


def siege(*args: str) -> tuple[int, dict[str, Any]]:
    run = subprocess.run([sys.executable, "-m", "clients.siege", "--json", *args],
                         capture_output=True, text=True, timeout=400)
    assert run.stdout.strip(), run.stderr[-3000:]
    return run.returncode, json.loads(run.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def short_run() -> tuple[int, dict[str, dict[str, Any]]]:
    # a move p99 target no run can meet: every attack misses it, so the run also shows a
    # missed target named and the exit status 1 (no second siege for that); what else is
    # asserted here does not depend on the timed targets
    status, out = siege("--attack", "all", "--move-p99-ms", "0", *SHORT)
    return status, {r["attack"]: r for r in out["attacks"]}


def test_every_attack_ran_with_the_whole_output(short_run: tuple[int, Any]) -> None:
    status, results = short_run
    assert list(results) == list(ATTACKS)
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


@pytest.mark.parametrize("attack", list(ATTACKS))
@pytest.mark.parametrize("target", UNTIMED_TARGETS)
def test_untimed_targets_hold(short_run: tuple[int, Any], attack: str, target: str) -> None:
    result = short_run[1][attack]
    assert result["targets"][target]["ok"], result["targets"][target]


def test_lockout_answers_every_wrong_password(short_run: tuple[int, Any]) -> None:
    r = short_run[1]["lockout"]
    answered = r["attacker"]["accepted"] + sum(r["attacker"]["refused"].values())
    assert answered >= 20
    assert r["attacker"]["accepted"] == 0
    assert "owner_login" in r["targets"]


def test_lockout_the_owner_gets_in(short_run: tuple[int, Any]) -> None:
    r = short_run[1]["lockout"]
    assert r["owner_login"]["during"]["ok"], r["owner_login"]
    assert r["owner_login"]["after"]["ok"], r["owner_login"]


def test_login_flood_the_owner_gets_in(short_run: tuple[int, Any]) -> None:
    r = short_run[1]["login-flood"]
    assert r["attacker"]["accepted"] == 0
    assert sum(r["attacker"]["refused"].values()) > 0
    assert r["owner_login"]["during"]["ok"], r["owner_login"]
    assert r["owner_login"]["after"]["ok"], r["owner_login"]
    assert "owner_login" in r["targets"]


@pytest.mark.parametrize("attack,size", [("idle-connections", 200), ("fd-exhaustion", 300),
                                         ("slowloris", 100)])
def test_every_connection_attempt_is_accounted_for(short_run: tuple[int, Any], attack: str,
                                                   size: int) -> None:
    a = short_run[1][attack]["attacker"]
    assert a["accepted"] + sum(a["refused"].values()) + sum(a["failed"].values()) == size
    if attack == "fd-exhaustion":
        assert a["processes"] == 2  # split over processes, each below its own limit


def test_lobby_poison_leaves_the_lobby_readable(short_run: tuple[int, Any]) -> None:
    a = short_run[1]["lobby-poison"]["attacker"]
    assert a["guests"] > 0 and a["seeks_open"] > 0
    assert a["lobby_subscribe"]["ok"], a["lobby_subscribe"]


def test_challenge_flood_the_bot_still_plays_and_stops_on_one_sigterm(
        short_run: tuple[int, Any]) -> None:
    r = short_run[1]["challenge-flood"]
    assert r["attacker"]["accepted"] + sum(r["attacker"]["refused"].values()) > 0
    assert sum(r["bot"]["games_with_canary"].values()) >= 1
    assert not r["bot"]["stop"]["killed"], r["bot"]
    assert r["bot"]["stop"]["sigterms"] == 1, r["bot"]


def test_request_flood_is_rate_limited(short_run: tuple[int, Any]) -> None:
    a = short_run[1]["request-flood"]["attacker"]
    assert a["accepted"] > 0
    assert a["refused"].get("rate_limited", 0) > 0
    assert set(a["refused"]) == {"rate_limited"}


def test_bombs_get_only_documented_answers(short_run: tuple[int, Any]) -> None:
    a = short_run[1]["bombs"]["attacker"]
    assert a["frames_sent"] >= 150
    assert a["internal_errors"] == 0
    assert a["accepted"] == 0  # every frame refused or closed: none silent, none obeyed
    assert set(a["refused"]) <= {"bad_request", "too_large", "unauthorized", "not_found"}
    assert set(a["closed"]) <= {"1008", "1009"}
    assert a["closed"].get("1009", 0) >= 3  # 20 KiB, 1 MiB, and a 1 TiB header


def test_guest_flood_from_one_and_from_many_addresses(short_run: tuple[int, Any]) -> None:
    a = short_run[1]["guest-flood"]["attacker"]
    assert a["one_address"]["accepted"] + sum(a["one_address"]["refused"].values()) > 0
    assert a["many_addresses"]["accepted"] + sum(a["many_addresses"]["refused"].values()) > 0


def test_a_missed_target_exits_1_and_is_named(short_run: tuple[int, Any]) -> None:
    status, results = short_run
    assert status == 1
    assert results["bombs"]["failed"] == ["move_p99"]  # its other targets are untimed
    for r in results.values():
        assert "move_p99" in r["failed"]
        assert r["targets"]["move_p99"]["limit_ms"] == 0
