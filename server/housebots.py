"""House bots: the bundled bots, run by the server so that a visitor can play the computer.

``tessera serve --house-bots random,greedy,mcts`` makes (once) a bot account per bot,
``random-bot`` and so on, gives it a fresh token at every start (revoking the previous
start's), and runs ``python -m clients.cli bot`` for it in a process of its own: the
server never imports the clients, and a bot that thinks hard uses another core. The bot
accepts anyone's challenge, for any clock. A bot that dies is started again, after a
pause that grows while it keeps dying (a bot that exits with status 2, refused options
such as an unknown bot name, is not); the bots are killed when the server stops: the
games are the server's, and a bot resumes them when it starts again.

Each bot runs ``--supervised``: its standard input is a pipe from the server, so a bot
whose server died (even ``kill -9``) sees the pipe close and quits by itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from .storage import NameTaken, Store
from .tasks import stop

log = logging.getLogger(__name__)

TOKEN_LABEL = "house"
TOKEN_ENV = "TESSERA_BOT_TOKEN"
GAMES_AT_ONCE = 4  # games each house bot plays at the same time
THINK_S = 2.0  # at most per move, whatever the clock allows
ALL_CLOCKS = "fischer,per_move,correspondence,unlimited"
BAD_OPTIONS = 2  # the exit status of `tessera bot` for options it refuses
FIRST_PAUSE_S = 1.0
LONGEST_PAUSE_S = 60.0
STEADY_S = 60.0  # a bot that ran this long before dying is restarted at once
LOG_LINES_KEPT = 20
USERNAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{1,19}")  # the protocol's Username


def account_name(kind: str) -> str:
    """The account a house bot plays as: ``random-bot`` for the bundled ``random``."""
    return f"{kind}-bot"


@dataclass
class HouseBot:
    """One supervised bot: its account, its current process and how often it restarted."""

    kind: str
    name: str
    token: str
    proc: asyncio.subprocess.Process | None = None
    starts: int = 0
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    last_lines: list[str] = field(default_factory=list)


class HouseBots:
    """The server's bots and the task that keeps each running."""

    def __init__(self, bots: list[HouseBot], url: str) -> None:
        self.bots = bots
        self.url = url
        self.stopping = False
        self._tasks = [asyncio.create_task(self._supervise(bot), name=f"house-{bot.name}")
                       for bot in bots]

    def command(self, bot: HouseBot) -> list[str]:
        return [sys.executable, "-m", "clients.cli", "bot", "--bot", bot.kind,
                "--server", self.url, "--accept-from", "any",
                "--max-games", str(GAMES_AT_ONCE), "--time-controls", ALL_CLOCKS, "--rematch",
                "--move-time", f"{THINK_S:g}", "--supervised", "--log-level", "warning"]

    async def _supervise(self, bot: HouseBot) -> None:
        pause = FIRST_PAUSE_S
        while not self.stopping:
            started = time.monotonic()
            try:
                status = await self._run(bot)
            except OSError as exc:
                log.error("cannot start house bot", extra={"bot": bot.name, "why": str(exc)})
                status = None
            if self.stopping:
                return
            why = bot.last_lines[-1] if bot.last_lines else ""
            if status == BAD_OPTIONS:
                log.error("house bot refused its options; not restarted",
                          extra={"bot": bot.name, "why": why})
                return
            if time.monotonic() - started >= STEADY_S:
                pause = FIRST_PAUSE_S
            log.warning("house bot exited; restarting", extra={
                "bot": bot.name, "status": status, "why": why, "after_s": pause})
            await asyncio.sleep(pause)
            pause = min(pause * 2, LONGEST_PAUSE_S)

    async def _run(self, bot: HouseBot) -> int:
        """Run the bot's process until it exits; its exit status."""
        bot.ready.clear()
        bot.last_lines = []
        proc = await asyncio.create_subprocess_exec(
            *self.command(bot), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, start_new_session=True,
            env={**os.environ, TOKEN_ENV: bot.token})
        bot.proc = proc
        bot.starts += 1
        readers = [asyncio.create_task(self._read_stdout(bot, proc)),
                   asyncio.create_task(self._read_stderr(bot, proc))]
        try:
            return await proc.wait()
        finally:
            await asyncio.wait(readers, timeout=2.0)
            for reader in readers:
                reader.cancel()

    async def _read_stdout(self, bot: HouseBot, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout is not None
        async for raw in proc.stdout:
            if raw.decode(errors="replace").startswith("ready as "):
                log.info("house bot ready", extra={"bot": bot.name, "pid": proc.pid})
                bot.ready.set()

    async def _read_stderr(self, bot: HouseBot, proc: asyncio.subprocess.Process) -> None:
        assert proc.stderr is not None
        async for raw in proc.stderr:
            line = raw.decode(errors="replace").rstrip()
            bot.last_lines = [*bot.last_lines[-(LOG_LINES_KEPT - 1):], line]
            log.info("house bot says", extra={"bot": bot.name, "line": line})

    async def stop(self) -> None:
        """Kill every bot and stop supervising (the server is going away)."""
        self.stopping = True
        for bot in self.bots:
            if bot.proc is not None and bot.proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    bot.proc.kill()
        await stop(self._tasks)
        for bot in self.bots:
            if bot.proc is not None:
                await bot.proc.wait()


async def bot_token(store: Store, name: str) -> str | None:
    """A new token for the bot account ``name`` (made if missing), the previous house
    tokens revoked; None if the name belongs to someone who is not a bot."""
    user = await store.get_user_by_name(name)
    if user is None:
        try:
            user = await store.create_user(name, "bot")
        except NameTaken:  # made by another node at the same moment
            user = await store.get_user_by_name(name)
    if user is None or user.kind != "bot":
        return None
    for old in await store.list_tokens(user.id):
        if old.label == TOKEN_LABEL:
            await store.revoke_token(old.id)
    token, _ = await store.create_token(user.id, "bot", TOKEN_LABEL)
    return token


def local_url(host: str, port: int) -> str:
    """The websocket URL by which processes on this machine reach a server on ``host``."""
    if host in ("", "0.0.0.0", "::"):
        host = "127.0.0.1"
    return f"ws://[{host}]:{port}/ws" if ":" in host else f"ws://{host}:{port}/ws"


async def start_house_bots(store: Store, kinds: Sequence[str], host: str, port: int
                           ) -> HouseBots:
    """Start a supervised process for each bundled bot in ``kinds`` (none: nothing runs)."""
    bots = []
    for kind in dict.fromkeys(k.strip() for k in kinds if k.strip()):
        name = account_name(kind)
        if not USERNAME.fullmatch(name):
            log.error("house bot not started: not a bundled bot's name", extra={"bot": kind})
            continue
        token = await bot_token(store, name)
        if token is None:
            log.error("house bot not started: its name belongs to a user who is not a bot",
                      extra={"bot": name})
            continue
        bots.append(HouseBot(kind, name, token))
    return HouseBots(bots, local_url(host, port))
