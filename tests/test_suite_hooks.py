"""The suite's own hooks (tests/conftest.py): the skip line, CI's rule, the scheduling."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

from tests.conftest import group_of, service_of, shared_homes, skip_summary

ROOT = Path(__file__).resolve().parents[1]


def test_skip_reasons_name_their_service() -> None:
    assert service_of("PostgreSQL storage tests skipped: TESSERA_TEST_PG_URL is not set") == (
        "PostgreSQL")
    assert service_of("cluster tests skipped: TESSERA_TEST_PG_URL is not set") == "PostgreSQL"
    assert service_of("cluster tests skipped: TESSERA_TEST_REDIS_URL is not set") == "Redis"
    assert service_of("Redis at redis://x unreachable: ConnectionError") == "Redis"
    assert service_of("browser tests skipped: no Chromium found (apt-get install chromium, "
                      "or set $TESSERA_CHROMIUM)") == "Chromium"
    assert service_of("nginx is not installed (apt-get install nginx): no nginx proxy "
                      "test") == "nginx"
    assert service_of("haproxy is not installed (apt-get install haproxy): no HAProxy "
                      "test") == "HAProxy"
    assert service_of("needs a terminal") is None


def test_the_skip_line_counts_per_service_with_a_reason() -> None:
    assert skip_summary(Counter()) == "skipped: none"
    tally = Counter({("PostgreSQL", "TESSERA_TEST_PG_URL is not set"): 5,
                     ("Redis", "TESSERA_TEST_REDIS_URL is not set"): 2,
                     ("PostgreSQL", "PostgreSQL at x unreachable"): 1,
                     ("other", "needs a terminal"): 1})
    assert skip_summary(tally) == (
        "skipped 9: PostgreSQL 6 (TESSERA_TEST_PG_URL is not set); "
        "Redis 2 (TESSERA_TEST_REDIS_URL is not set); other 1 (needs a terminal)")


def test_tests_sharing_a_wide_fixture_are_scheduled_together() -> None:
    homes = shared_homes(ROOT)
    assert {"tests/server/web", "tests/tools/test_siege.py"} <= set(homes)
    assert group_of("tests/server/web/test_watch.py::test_replay", homes) == "tests/server/web"
    assert group_of("tests/tools/test_siege.py::test_x[bombs]", homes) == (
        "tests/tools/test_siege.py")
    assert group_of("tests/engine/test_rules.py::test_y", homes) == (
        "tests/engine/test_rules.py::test_y")
    # a named group inside a shared home: scheduled apart from the home's other groups
    assert group_of("tests/tools/test_siege.py::test_x[bombs@siege-2]", homes) == (
        "tests/tools/test_siege.py@siege-2")
    assert group_of("tests/tools/test_siege.py::test_y[2@siege-2]", homes) == (
        "tests/tools/test_siege.py@siege-2")


def test_a_bare_run_ends_with_the_skip_line_and_ci_fails_naming_the_service(
        tmp_path: Path) -> None:
    """A PostgreSQL test with no PostgreSQL configured: skipped and counted on the last
    line; with CI=true, failed with the service named."""
    test = "tests/server/storage/test_users.py::test_create_and_find_users_case_insensitively"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test]
    bare = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    lines = bare.stdout.strip().splitlines()
    assert bare.returncode == 0, bare.stdout[-2000:]
    assert lines[-1] == ("skipped 1: PostgreSQL 1 (PostgreSQL storage tests skipped: "
                         "TESSERA_TEST_PG_URL is not set)"), lines[-3:]
    ci = subprocess.run(args, cwd=ROOT, env={**env, "CI": "true"}, capture_output=True,
                        text=True, timeout=300)
    assert ci.returncode == 1, ci.stdout[-2000:]
    assert "this one would be skipped for want of PostgreSQL" in ci.stdout
    assert ci.stdout.strip().splitlines()[-1] == "skipped: none"
