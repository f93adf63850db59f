"""The bot under test: how to run it, and its process.

A bot is named as ``tessera bot`` and ``tessera arena`` take it (a bundled bot's name,
``FILE.py:CLASS`` or ``module:CLASS``), as an engine for the bridge (``engine:PROGRAM
ARGS``), or as any program given the server's URL and the bot's token (``--command 'prog
{url} {token}'``). Each runs as a process of its own, in a process group of its own, its
output appended to a log file; the token also comes in ``$TESSERA_BOT_TOKEN`` and the URL in
``$TESSERA_SERVER``, so a program may read them there instead.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from clients.arena import parse_entrant
from clients.sdk.cli import TOKEN_ENV

STOP_WAIT_S = 5.0  # for the bot to end after SIGTERM, before SIGKILL
LOG_TAIL_LINES = 15
# An SDK bot or the bridge takes any challenge and accepts rematches: the scenarios decide
# what it is offered. The author's own options (--bot-args) come after, and win.
RUNNER_ARGS = ("--accept-from", "any", "--rematch")


@dataclass(frozen=True, slots=True)
class Subject:
    """How to start the bot under test: ``words`` with ``{url}`` and ``{token}`` to fill."""

    label: str
    words: tuple[str, ...]

    def command(self, url: str, token: str) -> list[str]:
        return [w.replace("{url}", url).replace("{token}", token) for w in self.words]

    def account(self) -> str:
        """The bot's user name on botcheck's server: ``bot-random``."""
        slug = re.sub(r"[^A-Za-z0-9_-]+", "-", self.label).strip("-") or "under-test"
        return f"bot-{slug}"[:20]


def sdk_subject(spec: str, bot_args: Sequence[str] = ()) -> Subject:
    """A bot of the SDK (``random``, ``FILE.py:CLASS``...) or an engine (``engine:PROG``),
    run by ``tessera bot`` or ``tessera bridge``; ValueError if it cannot be loaded."""
    entrant = parse_entrant(spec)  # loads a bot class now: a bad one is a usage error
    tessera = (sys.executable, "-m", "clients.cli")
    if entrant.spec.startswith("engine:"):
        engine = shlex.split(entrant.spec.removeprefix("engine:"))
        return Subject(entrant.label, (*tessera, "bridge", "--server", "{url}", *RUNNER_ARGS,
                                       *bot_args, "--", *engine))
    return Subject(entrant.label, (*tessera, "bot", "--bot", entrant.spec, "--server", "{url}",
                                   *RUNNER_ARGS, *bot_args))


def command_subject(command: str) -> Subject:
    """Any program: ``prog {url} {token}``; ValueError for an empty command."""
    words = tuple(shlex.split(command))
    if not words:
        raise ValueError("--command needs a program, e.g. --command './mybot {url} {token}'")
    return Subject(os.path.basename(words[0]), words)


class BotProcess:
    """The bot under test, running: started, looked at, stopped (its whole process group)."""

    def __init__(self, subject: Subject, url: str, token: str, log: Path) -> None:
        self.subject = subject
        self.url = url
        self.token = token
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        self.stop()
        self.starts += 1
        env = {**os.environ, TOKEN_ENV: self.token, "TESSERA_SERVER": self.url,
               "PYTHONUNBUFFERED": "1"}
        with self.log.open("ab") as out:
            out.write(f"--- botcheck: start {self.starts}: "
                      f"{shlex.join(self.subject.command(self.url, '...'))}\n".encode())
            out.flush()
            self.proc = subprocess.Popen(self.subject.command(self.url, self.token), env=env,
                                         stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)

    def ended(self) -> str | None:
        """None while it runs; else how it ended (``exited with status 1``)."""
        if self.proc is None:
            return "was not started"
        code = self.proc.poll()
        if code is None:
            return None
        if code < 0:
            return f"was killed by {signal.Signals(-code).name}"
        return f"exited with status {code}"

    def stop(self) -> None:
        """SIGTERM to its process group; SIGKILL if it has not ended in :data:`STOP_WAIT_S`."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:  # ended by itself: its group is gone
            return
        os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(STOP_WAIT_S)
        with contextlib.suppress(ProcessLookupError):  # what is left of its group, if any
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        if not self.log.exists():
            return ""
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
