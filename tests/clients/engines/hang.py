"""Hangs: ``hang.py go`` sleeps forever when asked for a move, ``hang.py handshake`` before
the handshake. ``--stubborn`` makes it ignore SIGTERM, and sleep forever on ``quit``."""

import signal
import sys
import time

from _loop import Engine

if "--stubborn" in sys.argv:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def hang() -> None:
    while True:
        time.sleep(60)


class Hanger(Engine):
    def handshake(self) -> None:
        if sys.argv[1] == "handshake":
            hang()
        super().handshake()

    def run(self) -> None:
        super().run()  # returns on quit
        if "--stubborn" in sys.argv:
            hang()

    def on_go(self) -> None:
        if sys.argv[1] == "go":
            hang()
        self.play_random()


Hanger("hanger").run()
