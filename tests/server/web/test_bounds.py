"""The page under the server's bounds (issue 16): a busy lobby counts what it does not list
and lists its next page on "More" (issue 24), and a page the server closes for not logging
in in time waits quietly for its next request.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import protocol as p
from tests.clients.conftest import ScriptedPlayer

from .conftest import Tabs, WebServer, start_web_server, stop_web_server


@pytest.fixture(scope="module")
def bounded_server(chromium: str, tmp_path_factory: pytest.TempPathFactory
                   ) -> Iterator[WebServer]:
    server = start_web_server(tmp_path_factory.mktemp("bounded"), "--lobby-page", "1",
                              "--hello-timeout", "0.5",
                              "--auth-timeout", "1", "--log-level", "info",
                              "--guests-per-hour", "0")
    yield server
    stop_web_server(server)


@pytest.fixture
def bounded_tabs(browser: Any, bounded_server: WebServer) -> Iterator[Tabs]:
    opened = Tabs(browser, bounded_server)
    yield opened
    opened.close()
    assert not opened.errors, opened.errors


def test_a_busy_lobby_says_how_many_seeks_and_players_it_does_not_list(
        bounded_server: WebServer, bounded_tabs: Tabs) -> None:
    seekers = [ScriptedPlayer(bounded_server.ws_url) for _ in range(3)]
    try:
        made = []
        for k, seeker in enumerate(seekers):
            seeker.guest()
            made.append(seeker.call(p.Seek, game="hadron", options={"size": 5},
                                    clock=p.Fischer(base_ms=60_000 + 1000 * k,
                                                    increment_ms=0)))
        page = bounded_tabs.open("/")
        page.wait_for_selector(".lobby table.seeks td:has-text('and 2 more not listed')")
        page.wait_for_selector("ul.players li:has-text('and 2 more online')")
        seekers.pop().close()  # an unlisted seek and player go: the counts follow
        page.wait_for_selector(".lobby table.seeks td:has-text('and 1 more not listed')")
        # "More" lists the next page (lobby_page): the second seek, and nothing left
        page.click(".lobby table.seeks button.more")
        second = made[1]
        assert isinstance(second, p.SeekCreated)
        page.wait_for_selector(f".lobby table.seeks tr[data-seek='{second.seek_id}']")
        page.wait_for_selector(".lobby table.seeks td:has-text('more not listed')",
                               state="detached")
    finally:
        for seeker in seekers:
            seeker.close()


def test_a_page_closed_for_not_logging_in_reconnects_only_when_it_needs_to(
        bounded_server: WebServer, bounded_tabs: Tabs) -> None:
    page = bounded_tabs.open("/game/zzzzzzzzzz")  # no such game: it watches nothing
    page.wait_for_selector("text=No such game")
    page.wait_for_selector("#net[data-state=idle]")  # closed with 4408 after 1 s
    closes = _closes(bounded_server.log)
    time.sleep(1.5)  # a page reconnecting by itself would be closed again meanwhile
    assert page.get_attribute("#net", "data-state") == "idle"
    assert _closes(bounded_server.log) == closes
    page.click("text=Back to the lobby")  # the lobby subscribes: a request, so it connects
    page.wait_for_selector("#net[data-state=open]")
    page.wait_for_selector(".lobby table.seeks")


def _closes(log: Path) -> int:
    return log.read_text().count("not logged in within")
