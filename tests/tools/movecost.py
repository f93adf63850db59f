"""Where a move's server time goes: the real server with a CPU clock around each stage.

``tessera bench --breakdown`` starts the server as ``python -m tests.tools.movecost OUT
serve ...`` instead of ``python -m server serve ...``: the same server, with each callable
the server declares in ``server.stages.MOVE_STAGES`` wrapped so that the CPU time spent
inside it is added up per stage (see that module for what each stage covers). SIGUSR1
starts the count (the load generator is connected), SIGUSR2 writes the totals to OUT as
JSON along with the process's CPU time over the same window. The clocks cost about a
microsecond per wrapped call, which the figures include.
"""

from __future__ import annotations

import functools
import importlib
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

from server.stages import MOVE_STAGES

_ns: defaultdict[str, int] = defaultdict(int)
_calls: defaultdict[str, int] = defaultdict(int)
_started = {"cpu_ns": 0, "wall_ns": 0}
_nesting = threading.local()


def resolve(target: str) -> tuple[Any, str]:
    """``"module:Class.method"`` -> (the class, "method"); ``"module:function"`` -> (the
    module, "function"). AttributeError or ImportError if it does not exist."""
    module_name, _, path = target.partition(":")
    owner: Any = importlib.import_module(module_name)
    *parents, name = path.split(".")
    for parent in parents:
        owner = getattr(owner, parent)
    getattr(owner, name)  # it must exist
    return owner, name


def _timed(stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` adding its CPU time (of the calling thread) to ``stage``; calls made inside
    another timed call of the same stage are counted once, by the outer one."""
    clock = time.thread_time_ns

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if getattr(_nesting, stage, False):
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
    """Wrap every declared stage."""
    for stage, targets in MOVE_STAGES.items():
        for target in targets:
            owner, name = resolve(target)
            setattr(owner, name, _timed(stage, getattr(owner, name)))


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
    """``python -m tests.tools.movecost OUT serve [serve options]``."""
    out = Path(argv[0])
    install()
    signal.signal(signal.SIGUSR1, _start)
    signal.signal(signal.SIGUSR2, _writer(out))
    from server.cli import main as cli_main

    return cli_main(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
