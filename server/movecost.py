"""Where a move's server time goes: the real server with a CPU clock around each stage.

``tessera bench --breakdown`` starts the server as ``python -m server.movecost OUT serve
...`` instead of ``python -m server serve ...``: the same server, but a few functions of the
path of a move are wrapped so that the CPU time spent inside them is added up per stage:

    frames in     websockets parsing the frames that arrive (``Protocol.receive_data``)
    decode        msgpack, schema and session phase (``ServerSession.receive``)
    validate      the rules (``engine.State.play``)
    messages      building server messages, with their schema checks (``Struct``)
    encode+send   encoding replies and events (``moved`` and ``move_ack`` straight from
                  their fields) and framing them, once per frame for replies, once per
                  event for all its listeners, and one socket write per connection and
                  loop turn (``Session.send``, ``Session.send_frame``,
                  ``encode_trusted``, ``GameRoom._broadcast``, ``Session.flush``)
    store         the commit queue's transactions, in its own thread (bulk insert, commit)

What no stage covers is the event loop, the sockets' system calls, tasks and futures, the
room's own logic (locks, clocks, sequence numbers) and the session's dispatch. SIGUSR1
starts the count (the load generator is connected), SIGUSR2 writes the totals to OUT as
JSON along with the process's CPU time over the same window. The clocks cost about a
microsecond per wrapped call, which the figures include.
"""

from __future__ import annotations

import functools
import json
import signal
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from websockets.protocol import Protocol

import engine
import protocol
from protocol import _schema
from protocol.session import ServerSession

from . import rooms
from .rooms import GameRoom
from .session import Session
from .storage.statements import SqliteThreadWriter

_ns: defaultdict[str, int] = defaultdict(int)
_calls: defaultdict[str, int] = defaultdict(int)
_started = {"cpu_ns": 0, "wall_ns": 0}
_nesting = threading.local()


def _timed(stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` adding its CPU time (of the calling thread) to ``stage``; calls made inside
    another timed call of the same stage are counted once, by the outer one."""
    clock = time.thread_time_ns

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        inside = getattr(_nesting, stage, False)
        if inside:
            return fn(*args, **kwargs)
        setattr(_nesting, stage, True)
        began = clock()
        try:
            return fn(*args, **kwargs)
        finally:
            _ns[stage] += clock() - began
            _calls[stage] += 1
            setattr(_nesting, stage, False)

    return wrapper


def install() -> None:
    """Wrap the stages (see the module docstring)."""
    Protocol.receive_data = _timed("frames in", Protocol.receive_data)  # type: ignore
    ServerSession.receive = _timed("decode", ServerSession.receive)  # type: ignore
    engine.State.play = _timed("validate", engine.State.play)  # type: ignore
    _schema.Struct.__post_init__ = _timed(  # type: ignore
        "messages", _schema.Struct.__post_init__)
    Session.send = _timed("encode+send", Session.send)  # type: ignore
    Session.flush = _timed("encode+send", Session.flush)  # type: ignore
    GameRoom._broadcast = _timed("encode+send", GameRoom._broadcast)  # type: ignore
    GameRoom._broadcast_frame = _timed(  # type: ignore
        "encode+send", GameRoom._broadcast_frame)
    Session.send_frame = _timed("encode+send", Session.send_frame)  # type: ignore
    # moved and move_ack are framed from their fields, without a message object
    protocol.encode_trusted = _timed("encode+send", protocol.encode_trusted)
    rooms.encode_trusted = _timed("encode+send", rooms.encode_trusted)
    SqliteThreadWriter.write_blocking = _timed(  # type: ignore
        "store", SqliteThreadWriter.write_blocking)


def _start(_signum: int, _frame: FrameType | None) -> None:
    _ns.clear()
    _calls.clear()
    _started.update(cpu_ns=time.process_time_ns(), wall_ns=time.perf_counter_ns())


def _writer(out: Path) -> Callable[[int, FrameType | None], None]:
    def write(_signum: int, _frame: FrameType | None) -> None:
        out.write_text(json.dumps({
            "cpu_ns": time.process_time_ns() - _started["cpu_ns"],
            "wall_ns": time.perf_counter_ns() - _started["wall_ns"],
            "stages_ns": dict(_ns), "calls": dict(_calls)}))
    return write


def main(argv: list[str]) -> int:
    """``python -m server.movecost OUT serve [serve options]``."""
    out = Path(argv[0])
    install()
    signal.signal(signal.SIGUSR1, _start)
    signal.signal(signal.SIGUSR2, _writer(out))
    from .cli import main as cli_main

    return cli_main(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
