"""A bundled bot run as a child process of the text client (``tessera play``'s ``bot``).

The child is ``tessera bot --guest --bot NAME --supervised ...`` on the client's server: a
guest that accepts challenges only from the player who started it, plays one game and
stops. A separate process keeps a CPU-bound bot (mcts) from freezing the client. With
``--supervised`` the bot prints ``ready as NAME`` on stdout once logged in, and stops,
resigning, when its standard input closes: the client closes it when it is done with the
bot, and the system closes it if the client dies, so no bot outlives its client. The bot
runs in its own session (terminal signals such as Ctrl-C go to the client only); its log
(stderr) is kept, and its last line explains a failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import sys
from collections import deque
from collections.abc import Sequence
from typing import Any

READY_TIMEOUT_S = 20.0  # to start Python, connect and log in
STOP_GRACE_S = 3.0  # after stdin closes, before the bot is killed
LOG_LINES = 30
ALL_CLOCKS = "fischer,per_move,correspondence,unlimited"
_READY = re.compile(r"ready as (\S+)")
_LOG_PREFIX = re.compile(r"^\d\d:\d\d:\d\d \w+ +")


class LocalBotError(Exception):
    """The bot could not be started, or did not log in; the message says why."""


def bot_command(kind: str, server: str, owner: str, think_s: float | None = None
                ) -> list[str]:
    """The command line of a supervised guest bot that plays one game against ``owner``."""
    argv = [sys.executable, "-m", "clients.cli", "bot", "--guest", "--bot", kind,
            "--server", server, "--accept-from", owner, "--max-games", "1",
            "--stop-after", "1", "--time-controls", ALL_CLOCKS, "--supervised"]
    if think_s is not None:
        argv += ["--move-time", f"{think_s:g}"]
    return argv


class LocalBot:
    """One bot process: its name on the server once ready, its log, and how to stop it."""

    def __init__(self, kind: str, proc: asyncio.subprocess.Process) -> None:
        self.kind = kind
        self.proc = proc
        self.name = ""
        self.game_id: str | None = None
        self.challenge_id: int | None = None
        self.stopping = False
        self.log: deque[str] = deque(maxlen=LOG_LINES)
        self._ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._readers = [asyncio.ensure_future(self._read_stdout()),
                         asyncio.ensure_future(self._read_stderr())]

    @classmethod
    async def start(cls, kind: str, command: Sequence[str], *,
                    timeout: float = READY_TIMEOUT_S) -> LocalBot:
        """Run ``command`` (see :func:`bot_command`) and wait until the bot has logged in.

        Raises :class:`LocalBotError` if it cannot be run, exits or is not ready in time.
        """
        try:
            proc = await asyncio.create_subprocess_exec(
                *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            raise LocalBotError(f"cannot run {command[0]}: {exc}") from None
        bot = cls(kind, proc)
        try:
            bot.name = await bot._wait_ready(timeout)
        except BaseException:
            await bot.stop(grace=0)
            raise
        return bot

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def running(self) -> bool:
        return self.proc.returncode is None

    async def _wait_ready(self, timeout: float) -> str:
        exited: asyncio.Future[Any] = asyncio.ensure_future(self.proc.wait())
        waiting: set[asyncio.Future[Any]] = {self._ready, exited}
        try:
            done, _ = await asyncio.wait(waiting, timeout=timeout,
                                         return_when=asyncio.FIRST_COMPLETED)
        finally:
            exited.cancel()
        if self._ready in done:
            return self._ready.result()
        if exited in done:
            await asyncio.wait(self._readers, timeout=2.0)  # the rest of its log
            raise LocalBotError(f"it exited with status {self.proc.returncode}: {self.why()}")
        raise LocalBotError(f"it did not log in within {timeout:g} s: {self.why()}")

    def why(self) -> str:
        """The last line of the bot's log, without its time stamp and level."""
        for line in reversed(self.log):
            if line.strip():
                return _LOG_PREFIX.sub("", line.strip())
        return "it printed nothing"

    async def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        async for raw in self.proc.stdout:
            line = raw.decode(errors="replace").strip()
            match = _READY.fullmatch(line)
            if match and not self._ready.done():
                self._ready.set_result(match[1])

    async def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        async for raw in self.proc.stderr:
            self.log.append(raw.decode(errors="replace").rstrip())

    async def wait(self) -> int:
        """Wait until the process has ended and its output is read; its exit status."""
        code = await self.proc.wait()
        await asyncio.wait(self._readers, timeout=2.0)
        return code

    async def stop(self, grace: float = STOP_GRACE_S) -> None:
        """Close the bot's stdin (it stops, resigning any game); kill it after ``grace``."""
        self.stopping = True
        if self.proc.returncode is None:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            try:
                await asyncio.wait_for(self.proc.wait(), grace)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    self.proc.kill()
                await self.proc.wait()
        elif self.proc.stdin is not None:
            self.proc.stdin.close()
        await asyncio.wait(self._readers, timeout=1.0)
        for reader in self._readers:
            reader.cancel()
