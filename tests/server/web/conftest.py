"""Fixtures of the browser tests: one server process and one Chromium shared by them all.

The browser is Debian's Chromium driven by Playwright (no browser can be downloaded here):
``/usr/bin/chromium``, or ``$TESSERA_CHROMIUM``. Without one, every test here is skipped
with that reason (``pytest -rs`` prints it); ``.ci/run`` installs it, so CI runs them.

The server runs as ``python -m server serve`` on a free port with a SQLite file of its own
and the house bot ``random``; tests make their own users, so they share it without
meeting. Playwright's sync API runs its own event loop, so protocol calls a test makes
itself run in a thread of their own (:func:`run`); the browser, server and Playwright live
as long as this package's tests (not the session's: while Playwright runs, no later test
could start an event loop of its own).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

from clients.connection import Connection
from server.storage import sqlite_url

REPO = Path(__file__).resolve().parents[3]
CHROMIUM_ENV = "TESSERA_CHROMIUM"
SCREENSHOTS_ENV = "TESSERA_SCREENSHOTS"  # a directory: the tests' screenshots are copied there
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
DESKTOP = {"width": 1200, "height": 820}
T = TypeVar("T")


def chromium_path() -> str | None:
    for candidate in (os.environ.get(CHROMIUM_ENV), "/usr/bin/chromium",
                      shutil.which("chromium"), shutil.which("chromium-browser")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to its end from a test (in a thread: Playwright owns this one's loop)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def ask(server: WebServer, kind: type[Any], **fields: Any) -> Any:
    """One request to the server from a protocol client of the test's own; its reply."""

    async def call() -> Any:
        conn = await Connection.open(server.ws_url, client="web-test")
        try:
            return await conn.call(kind, **fields)
        finally:
            await conn.close()

    return run(call())


@dataclass
class WebServer:
    """The server the pages talk to."""

    port: int
    db_url: str
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"


@pytest.fixture(scope="package")
def chromium() -> str:
    path = chromium_path()
    if path is None:
        pytest.skip(f"browser tests skipped: no Chromium found (apt-get install chromium, "
                    f"or set ${CHROMIUM_ENV})")
    pytest.importorskip("playwright", reason="browser tests skipped: playwright not installed")
    return path


def start_web_server(workdir: Path, *args: str) -> WebServer:
    """``python -m server serve`` on a fresh SQLite file in ``workdir`` (``args`` added)."""
    ready = workdir / "ready"
    log = workdir / "server.log"
    db_url = sqlite_url(workdir / "tessera.db")
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "server", "serve", "--port", "0", "--db", db_url,
             "--ready-file", str(ready), "--log-level", "warning", *args],
            cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while not (ready.exists() and ready.read_text().endswith("\n")):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"the server did not start:\n{log.read_text()}")
        time.sleep(0.05)
    return WebServer(int(ready.read_text()), db_url, proc, log)


def stop_web_server(server: WebServer) -> None:
    server.proc.send_signal(signal.SIGTERM)
    try:
        server.proc.wait(20)
    except subprocess.TimeoutExpired:
        server.proc.kill()


@pytest.fixture(scope="package")
def web_server(chromium: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebServer]:
    # every page of every test is a guest from 127.0.0.1: lift the per-address guest limit
    server = start_web_server(tmp_path_factory.mktemp("web-server"), "--house-bots", "random",
                              "--grace", "2", "--guests-per-hour", "0")
    yield server
    stop_web_server(server)


@pytest.fixture(scope="package")
def browser(chromium: str) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@dataclass
class Tabs:
    """Opens pages, each in a browser context of its own (its own storage: its own user),
    and fails the test if a page raised an error."""

    browser: Any
    server: WebServer
    contexts: list[Any] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def open(self, path: str = "/", **context_options: Any) -> Any:
        options = {"viewport": DESKTOP, **context_options}
        context = self.browser.new_context(**options)
        context.set_default_timeout(15_000)
        self.contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda exc: self.errors.append(f"{page.url}: {exc}"))
        page.on("dialog", lambda dialog: self.errors.append(f"dialog: {dialog.message}"))
        page.goto(self.server.url + path)
        page.wait_for_selector("#net[data-state=open]")
        return page

    def close(self) -> None:
        for context in self.contexts:
            context.close()


@pytest.fixture
def tabs(browser: Any, web_server: WebServer) -> Iterator[Tabs]:
    opened = Tabs(browser, web_server)
    yield opened
    opened.close()
    assert not opened.errors, opened.errors


@pytest.fixture
def shoot(tmp_path: Path) -> Callable[..., Path]:
    """``shoot(page, "hadron")`` saves a screenshot of the page's main part (``whole=True``:
    of the whole window; ``part``: of the first element that selector matches), and copies
    it to $TESSERA_SCREENSHOTS if that is set."""

    def take(page: Any, name: str, *, whole: bool = False, part: str = "main") -> Path:
        path = tmp_path / f"{name}.png"
        page.evaluate("window.scrollTo(0, 0)")
        if whole:
            page.screenshot(path=str(path))
        else:
            page.locator(part).first.screenshot(path=str(path))
        target = os.environ.get(SCREENSHOTS_ENV)
        if target:
            Path(target).mkdir(parents=True, exist_ok=True)
            shutil.copy(path, Path(target) / path.name)
        return path

    return take
