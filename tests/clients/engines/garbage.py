"""Prints garbage (unasked lines, an overlong line, invalid UTF-8): ``garbage.py answer``
then a malformed move, ``garbage.py handshake`` before a correct handshake, ``garbage.py
noise`` around correct answers."""

import sys

from _loop import Engine


def junk() -> None:
    sys.stdout.buffer.write(b"\xff\xfe garbage \x00\x01\n")
    sys.stdout.write("x" * 100_000 + "\n")
    sys.stdout.flush()


class Garbage(Engine):
    def handshake(self) -> None:
        if sys.argv[1] == "handshake":
            junk()
            self.send("hello there")
        super().handshake()

    def on_go(self) -> None:
        mode = sys.argv[1]
        if mode == "answer":
            junk()
            self.send("move ?? !!")
        elif mode == "noise":
            self.send("info thinking hard")
            self.send("# a comment")
            self.send("")
            self.play_random()
            junk()
            self.send("unsolicited chatter")
        else:
            self.play_random()


Garbage("garbage").run()
