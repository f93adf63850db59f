"""The whole suite's hooks: what was skipped, and why, in one line; in CI, no service missing.

Tests that need PostgreSQL (``TESSERA_TEST_PG_URL``), Redis (``TESSERA_TEST_REDIS_URL``),
Chromium, nginx or HAProxy skip themselves with the reason when it is missing, so
``make test`` passes on a bare machine; the run then ends with one line that counts the
skips per service and says why
(``skipped 1150: PostgreSQL 1012 (TESSERA_TEST_PG_URL is not set), ...``), or
``skipped: none``.

In CI (``CI=true`` in the environment, as ``.ci/run`` runs) a test that would be skipped
for want of one of those services fails instead, naming it: CI must run every test.

``make test`` runs the tests on several processes (pytest-xdist, ``--dist loadgroup``).
Every test has its own port (picked by the OS), SQLite file (in ``tmp_path``), PostgreSQL
schema and Redis key prefix, so any two may run at once. A fixture of module, class or
package scope is made once per process that needs it, so the tests that share one are
kept together on one process (``pytest_xdist_make_scheduler``): the browser tests share
one Chromium and one server, the siege and bench tests one run of their tool. Session
fixtures (the client tests' ``live_server``) are made once per process.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

SERVICES = ("PostgreSQL", "Redis", "Chromium", "nginx", "HAProxy")
_TALLY = pytest.StashKey["SkipTally"]()


def service_of(reason: str) -> str | None:
    """The service a skip's reason says is missing, if any."""
    text = reason.lower()
    if "pg_url" in text or "postgresql" in text:
        return "PostgreSQL"
    if "redis" in text:
        return "Redis"
    if "chromium" in text or "playwright" in text or "browser" in text:
        return "Chromium"
    if "nginx" in text:
        return "nginx"
    if "haproxy" in text:
        return "HAProxy"
    return None


def _reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        reason = str(longrepr[2])
    else:
        reason = str(longrepr)
    return reason.removeprefix("Skipped: ")


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.skipped and _in_ci() and not hasattr(report, "wasxfail"):
        reason = _reason(report)
        service = service_of(reason)
        if service is not None:
            report.outcome = "failed"
            report.longrepr = (f"CI runs every test, but this one would be skipped for want "
                               f"of {service}: {reason}")
    return report


# Hypothesis's deadline (200 ms an example) measures the machine's load, not the code:
# several processes share two cores here. The examples' counts are unchanged.
settings.register_profile("tessera", deadline=None)
settings.load_profile("tessera")

# Run first: the groups and tests that take longest (a tool's whole run, browsers, clusters
# of node processes), so that the shorter ones fill the processes' time around them
# instead of one long test starting last.
_FIRST = ("tests/tools/", "tests/server/web/", "tests/server/cluster/")


def _order(item: pytest.Item) -> int:
    path = item.nodeid
    return next((i for i, prefix in enumerate(_FIRST) if path.startswith(prefix)), len(_FIRST))


_SHARED_FIXTURE = re.compile(r'@pytest\.fixture\(\s*scope="(?:class|module|package)"')


def shared_homes(root: Path) -> list[str]:
    """Where fixtures wider than a test (class, module or package scope; not session) are
    defined: a test module (its tests share them), or a conftest (its directory's tests
    do). Read from the files: xdist's controller schedules before any test is collected."""
    homes: list[str] = []
    for path in sorted((root / "tests").rglob("*.py")):
        if not (path.name == "conftest.py" or path.name.startswith("test_")):
            continue
        if _SHARED_FIXTURE.search(path.read_text(encoding="utf-8")):
            home = path.parent if path.name == "conftest.py" else path
            homes.append(home.relative_to(root).as_posix())
    return homes


_GROUP_ID = re.compile(r"@([\w.-]+)\]$")


def group_of(nodeid: str, homes: list[str]) -> str:
    """The unit a test is scheduled in: the home of a shared fixture it is under, else
    itself; a test whose parameters' id ends in ``@NAME`` is in that home's group NAME
    (a module whose shared fixture serves parts that can run apart: the siege's chunks)."""
    path = nodeid.split("::", 1)[0]
    named = _GROUP_ID.search(nodeid)
    for home in homes:
        if path == home or path.startswith(home + "/"):
            return home if named is None else f"{home}@{named.group(1)}"
    return nodeid


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup``: tests one by one, but those sharing a fixture wider than a
    test together (``group_of``). (xdist's own ``xdist_group`` marks cannot be used with
    this pytest: it renames a test's node id to carry the group, which pytest 9 ignores.)"""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    homes = shared_homes(config.rootpath)

    class SharedFixtureScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid, homes)

    return SharedFixtureScheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=_order)  # stable: within a kind, the files' order


class SkipTally:
    """Counts the skips as reports arrive (on xdist's controller, every worker's)."""

    def __init__(self) -> None:
        self.tally: Counter[tuple[str, str]] = Counter()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.skipped and not hasattr(report, "wasxfail"):
            reason = _reason(report)
            self.tally[(service_of(reason) or "other", reason)] += 1


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_TALLY] = tally = SkipTally()
    config.pluginmanager.register(tally, "tessera-skip-tally")


def skip_summary(tally: Counter[tuple[str, str]]) -> str:
    """One line: how many tests were skipped, per service, with the (first) reason."""
    if not tally:
        return "skipped: none"
    per_service: Counter[str] = Counter()
    first_reason: dict[str, str] = {}
    for (service, reason), count in tally.most_common():
        per_service[service] += count
        first_reason.setdefault(service, reason)
    order = [s for s in (*SERVICES, "other") if s in per_service]
    parts = [f"{service} {per_service[service]} ({first_reason[service]})" for service in order]
    return f"skipped {sum(per_service.values())}: " + "; ".join(parts)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """The last line of the run (after pytest's own summary): the skips and why."""
    if hasattr(config, "workerinput") or _TALLY not in config.stash:
        return  # an xdist worker: the controller counts
    reporter: Any = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or config.option.collectonly:
        return
    reporter.write_line(skip_summary(config.stash[_TALLY].tally))
