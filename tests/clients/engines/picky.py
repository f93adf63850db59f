"""Refuses the games named in its arguments (``error``) and resigns every other game."""

import sys

from _loop import Engine


class Picky(Engine):
    def newgame(self, args: str) -> None:
        game = args.split()[0]
        if game in sys.argv[1:]:
            self.send(f"error unsupported picky.py does not play {game}")
        else:
            self.send("ok")

    def on_go(self) -> None:
        self.send("resign")


Picky("picky").run()
