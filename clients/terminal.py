"""Line input and output for the interactive commands (``play``, ``replay``).

In a terminal, input is a prompt_toolkit prompt (history, completion, a bottom toolbar that
refreshes twice a second for running clocks) and output printed while the prompt waits
appears above it (``patch_stdout``). When standard input or output is not a terminal (a
pipe, a script), lines are read and printed plainly, so the same commands can be scripted.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import Completer
from prompt_toolkit.patch_stdout import patch_stdout

Toolbar = Callable[[], str]
Prompt = str | Callable[[], str]


def is_interactive() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


def wants_color(no_color: bool = False) -> bool:
    """Colour unless told not to (``--no-color``, ``$NO_COLOR``) or not on a terminal."""
    return (not no_color and "NO_COLOR" not in os.environ and sys.stdout.isatty()
            and os.environ.get("TERM", "") != "dumb")


class Terminal:
    """Reads command lines and prints text without breaking the line being typed."""

    def __init__(self, *, toolbar: Toolbar | None = None, completer: Completer | None = None,
                 interactive: bool | None = None) -> None:
        self.interactive = is_interactive() if interactive is None else interactive
        self.toolbar = toolbar
        self._session: PromptSession[str] | None = None
        self._lines: asyncio.Queue[str | None] | None = None
        if self.interactive:
            self._session = PromptSession(completer=completer, complete_while_typing=False,
                                          refresh_interval=0.5)

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """While active, printing from any task keeps the prompt intact."""
        if not self.interactive:
            yield
            return
        with patch_stdout(raw=True):
            yield

    def print(self, text: str = "") -> None:
        print(text, flush=True)

    async def read(self, prompt: Prompt, *, password: bool = False) -> str:
        """The next line; EOFError at the end of input (Ctrl-D). Ctrl-C gives ``""``."""
        if self._session is not None:
            try:
                if password:
                    secret: PromptSession[str] = PromptSession()
                    return await secret.prompt_async(prompt, is_password=True)
                return await self._session.prompt_async(prompt, bottom_toolbar=self.toolbar)
            except KeyboardInterrupt:
                return ""
        return await self._read_plain(prompt if isinstance(prompt, str) else prompt())

    async def _read_plain(self, prompt: str) -> str:
        if self._lines is None:
            self._lines = asyncio.Queue()
            loop = asyncio.get_running_loop()
            threading.Thread(target=_feed_lines, args=(loop, self._lines), daemon=True).start()
        sys.stdout.write(prompt)
        sys.stdout.flush()
        line = await self._lines.get()
        if line is None:
            self._lines.put_nowait(None)
            raise EOFError
        return line


def _feed_lines(loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[Any]) -> None:
    """Read standard input in a daemon thread (it may block forever) into ``queue``."""
    for line in sys.stdin:
        loop.call_soon_threadsafe(queue.put_nowait, line.rstrip("\r\n"))
    loop.call_soon_threadsafe(queue.put_nowait, None)
