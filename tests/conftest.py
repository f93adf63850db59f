"""The whole suite's hooks: what was skipped, and why, in one line; in CI, no service missing.

Tests that need PostgreSQL (``TESSERA_TEST_PG_URL``), Redis (``TESSERA_TEST_REDIS_URL``) or
Chromium skip themselves with the reason when it is missing, so ``make test`` passes on a
bare machine; the run then ends with one line that counts the skips per service and says
why (``skipped 1150: PostgreSQL 1012 (TESSERA_TEST_PG_URL is not set), ...``), or
``skipped: none``.

In CI (``CI=true`` in the environment, as ``.ci/run`` runs) a test that would be skipped
for want of one of those services fails instead, naming it: CI must run every test.

``make test`` runs the tests on several processes (pytest-xdist, ``--dist loadgroup``).
Every test has its own port (picked by the OS), SQLite file (in ``tmp_path``), PostgreSQL
schema and Redis key prefix, so any two may run at once. A fixture of module, class or
package scope is made once per process that needs it, so the tests that share one are
kept together on one process (an ``xdist_group`` named after the module or package): the
browser tests share one Chromium and one server, the siege and bench tests one run of
their tool. Session fixtures (the client tests' ``live_server``) are made once per process.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Generator
from typing import Any

import pytest
from hypothesis import settings

SERVICES = ("PostgreSQL", "Redis", "Chromium")
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


_SHARED_SCOPES = {"class": 0, "module": 1, "package": 2}


def shared_group(item: pytest.Item) -> str | None:
    """The group of tests that share a fixture of ``item``'s wider than a test (class,
    module or package scope; not session): named after the widest one's home."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    widest = -1
    for name in info.names_closure:
        for fixturedef in info.name2fixturedefs.get(name, ()):
            widest = max(widest, _SHARED_SCOPES.get(fixturedef.scope, -1))
    if widest < 0:
        return None
    path = item.path
    if widest == 2:  # the package: the directory of the conftest that holds it
        return str(path.parent.relative_to(item.config.rootpath))
    return str(path.relative_to(item.config.rootpath))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=_order)  # stable: within a kind, the files' order
    for item in items:
        group = shared_group(item)
        if group is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group))


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
