"""What a guest flood leaves in the server's memory, and where:
``python -m tests.tools.guest_memory [--seconds S] [--flooders N]
[--attack fd-exhaustion --connections N]``.

Runs the server in this process (default settings, a fresh SQLite file, the collector
tuned and paced as ``tessera serve`` does (``server.collector``), and the system
allocator: the tool executes itself again with ``PYTHONMALLOC=malloc`` as ``serve``
does) and floods it with ``tessera siege``'s ``guest-flood`` attacker in a process of
its own (``python -m clients.siege.attacks``: the first half from one address, the
second from a new address each time). It prints, before
the flood, every second during it, 5 s after it, then after a full collection and after a
``malloc_trim``: the RSS, glibc's heap (``mallinfo2``: its size, the bytes in use, the
bytes free in it), the objects the cyclic collector tracks (not frozen; and how many are
frozen), the open sessions and the
server's tables a stranger adds to; and the types whose tracked objects grew, 5 s after
and after the collection. With ``--attack fd-exhaustion`` the attacker is that of
``tessera siege``'s ``fd-exhaustion`` instead (``--connections`` idle websockets, 50 per
address, held until the hello deadline closes them or the attack ends); the open-files
limit of this process is raised to its hard limit first. docs/RELIABILITY.md, section 8,
has what it found.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import gc
import json
import os
import resource
import sys
import tempfile
from collections import Counter
from pathlib import Path

from server import collector, logs, memory
from server.app import App, running_server
from server.config import Settings


class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def heap() -> str:
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = MallInfo2
        info = libc.mallinfo2()
    except (OSError, AttributeError):
        return "heap ? (no glibc mallinfo2)"
    mib = 2 ** 20
    return (f"heap {info.arena / mib:.1f} MiB: in use {info.uordblks / mib:.1f}, "
            f"free {info.fordblks / mib:.1f}")


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def tracked() -> Counter[str]:
    return Counter(type(o).__qualname__ for o in gc.get_objects())  # type(): no proxy raises


def show(label: str, app: App) -> None:
    tables = {"address_guests": len(app.accounts.address_guests or ()),
              "address_logins": len(app.accounts.address_logins or ()),
              "account_requests": len(app.account_requests), "sessions": len(app.sessions),
              "lobby": len(app.members) + app.topology.seeks.held(),
              "admission": app.admission.held(),
              "handbacks": int(app.metrics.memory_handbacks._value.get())}
    print(f"{label:>18}: RSS {rss_mib():6.1f} MiB; {heap()}; tracked {len(gc.get_objects())}"
          f" (frozen {gc.get_freeze_count()}); "
          f"{tables}", flush=True)


async def main(seconds: float, attack: str, params: dict[str, int]) -> None:
    with tempfile.TemporaryDirectory(prefix="tessera-guest-memory-") as scratch:
        settings = Settings(port=0, db_url=f"sqlite+aiosqlite:///{scratch}/tessera.db")
        async with running_server(settings) as running:
            collector.tune_gc()
            running.app.tasks.spawn(collector.pace(), name="tessera-gc-pace")
            app = running.app
            await asyncio.sleep(2.0)
            show("before", app)
            start = tracked()
            attacker = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "clients.siege.attacks", attack, str(running.port),
                json.dumps({"seconds": seconds, "owner": "owner", **params}),
                stdout=asyncio.subprocess.PIPE)

            async def every_second() -> None:
                for k in range(1, 1 << 30):
                    await asyncio.sleep(1.0)
                    show(f"{k} s", app)

            sampler = asyncio.create_task(every_second())
            out, _ = await attacker.communicate()
            sampler.cancel()
            print("attacker:", out.decode().strip().splitlines()[-1], flush=True)
            for k in range(1, 6):
                await asyncio.sleep(1.0)
                show(f"{k} s after", app)
            print("  grown:", (tracked() - start).most_common(12), flush=True)
            collected = collector.collect_everything()
            show(f"collected {collected}", app)
            print("  grown:", (tracked() - start).most_common(12), flush=True)
            memory.give_back()
            show("malloc_trim", app)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m tests.tools.guest_memory",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--flooders", type=int, default=16, help="guest-flood's connections")
    parser.add_argument("--attack", choices=["guest-flood", "fd-exhaustion"],
                        default="guest-flood")
    parser.add_argument("--connections", type=int, default=8000,
                        help="fd-exhaustion's connections")
    args = parser.parse_args()
    if memory._malloc_trim() is not None and memory.ALLOCATOR_ENV not in os.environ:
        os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]],
                  {**os.environ, memory.ALLOCATOR_ENV: "malloc"})
    logs.setup("warning")
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    sizes = ({"clients": args.flooders} if args.attack == "guest-flood" else
             {"connections": args.connections, "per_address": 50,
              "per_process": args.connections})
    asyncio.run(main(args.seconds, args.attack, sizes))
