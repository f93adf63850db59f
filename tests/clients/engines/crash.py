"""Crashes (exit code 3) when asked for its move after N moves: ``crash.py N [FLAGFILE]``.

With FLAGFILE it crashes only if that file does not exist yet, and creates it: the engine
restarted by the bridge then plays on normally.
"""

import os
import sys

from _loop import Engine


class Crasher(Engine):
    def on_go(self) -> None:
        after = int(sys.argv[1])
        flag = sys.argv[2] if len(sys.argv) > 2 else None
        if self.moves_made >= after and not (flag and os.path.exists(flag)):
            if flag:
                open(flag, "w").close()
            print(f"crash.py: crashing on purpose after {self.moves_made} moves", file=sys.stderr)
            sys.exit(3)
        self.play_random()


Crasher("crasher").run()
