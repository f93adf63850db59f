"""Structured logs: one JSON object per line on stderr."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from typing import Any

_log = logging.getLogger("server.accept")
_RESERVED = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """Formats a record as JSON with its ``extra=`` fields as top-level keys."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _RESERVED and not key.startswith("_"):
                out[key] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


def setup(level: str = "info") -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("websockets").setLevel(logging.WARNING)


ACCEPT_FAILURE = "socket.accept() out of system resource"
"""asyncio's message when ``accept()`` fails for want of files (EMFILE, ENFILE) or memory."""


class AcceptFailureLog:
    """The event loop's exception handler: accept failures counted and logged once per
    ``interval_s`` with their count, never once per attempt; anything else goes to the
    handler there was before (asyncio's default: a traceback on the ``asyncio`` logger).

    When the process is out of files, asyncio's selector loop reports every failed
    ``accept()`` (up to its backlog per wake-up, each retry scheduling more), which once
    wrote 217,499 tracebacks in 15 s (issue 16). Here the first failure of an interval is
    logged at once and the others are counted into one line at the interval's end.
    """

    def __init__(self, interval_s: float, count: Callable[[], None] | None = None) -> None:
        self.interval_s = interval_s
        self.count = count  # a metric to increment per failure
        self.suppressed = 0
        self.last = float("-inf")
        self.report_due: asyncio.TimerHandle | None = None
        self.previous: Callable[[asyncio.AbstractEventLoop, dict[str, Any]], object] | None = None

    def install(self, loop: asyncio.AbstractEventLoop) -> None:
        self.previous = loop.get_exception_handler()
        loop.set_exception_handler(self)

    def uninstall(self, loop: asyncio.AbstractEventLoop) -> None:
        if self.report_due is not None:
            self.report_due.cancel()
            self.report()
        loop.set_exception_handler(self.previous)

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if context.get("message") != ACCEPT_FAILURE:
            if self.previous is not None:
                self.previous(loop, context)
            else:
                loop.default_exception_handler(context)
            return
        if self.count is not None:
            self.count()
        now = loop.time()
        if now - self.last >= self.interval_s:
            self.last = now
            exc = context.get("exception")
            _log.error("cannot accept connections: %s", exc, extra={"failures": 1})
        else:
            self.suppressed += 1
            if self.report_due is None:
                self.report_due = loop.call_at(self.last + self.interval_s, self.report)

    def report(self) -> None:
        """Log how many failures were not logged one by one since the last line."""
        self.report_due = None
        if self.suppressed:
            _log.error("cannot accept connections: %d more failures in %.0f s",
                       self.suppressed, self.interval_s,
                       extra={"failures": self.suppressed})
            self.suppressed = 0
