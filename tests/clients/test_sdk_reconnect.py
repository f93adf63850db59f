"""The SDK bot comes back soon after its server: its reconnect backoff is capped at 2 s
(issue 23: it waited 11.9 s)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from clients.localserver import LocalServer, free_port
from tests.clients.conftest import tessera_command

RETRIES_SEEN = 7  # uncapped, the 7th wait would be 8 to 16 s (0.25 s doubled 6 times)


def test_a_bot_retries_at_most_every_2_s_and_is_back_when_its_server_is(
        tmp_path: Path) -> None:
    port = free_port()
    bot = subprocess.Popen(
        [*tessera_command(), "bot", "--guest", "--bot", "random", "--server",
         f"127.0.0.1:{port}"], stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    server = LocalServer(tmp_path, port=port)
    try:
        assert bot.stderr is not None
        waits: list[float] = []
        while len(waits) < RETRIES_SEEN:  # nothing listens yet: the bot retries
            line = bot.stderr.readline()
            assert line, "the bot stopped"
            if found := re.search(r"retrying in ([\d.]+) s", line):
                waits.append(float(found[1]))
        server.start()
        for line in bot.stderr:  # ... and once the server listens, the bot logs in
            if "logged in" in line:
                break
        else:
            raise AssertionError("the bot never logged in")
    finally:
        bot.terminate()
        bot.wait(10)
        server.stop()
    assert max(waits) <= 2.0, waits
    assert max(waits) >= 1.0, waits  # it does back off
