"""Plays random legal moves and appends every line it reads (``>``) and writes (``<``) to
the file named by its argument: the protocol as the engine sees it."""

import sys

from _loop import Engine

LOG = open(sys.argv[1], "a", encoding="utf-8")  # noqa: SIM115 - open for the whole run


class Recorder(Engine):
    def send(self, line: str) -> None:
        LOG.write(f"< {line}\n")
        LOG.flush()
        super().send(line)

    def read(self) -> str:
        line = sys.stdin.readline()
        if line:
            LOG.write(f"> {line.rstrip()}\n")
            LOG.flush()
        else:
            sys.exit(0)
        return line.strip()


Recorder("recorder").run()
