"""``python -m server``: the operator commands (what ``tessera serve|db|admin|dump`` runs)."""

import os
import sys

from . import memory

SIGPIPE_STATUS = 128 + 13  # what a shell reports for a program its reader stopped reading


def run() -> int:
    """Run the command; a reader that goes away (``tessera dump --all | head -1``) ends it
    quietly, as it ends any Unix tool, instead of with a BrokenPipeError traceback."""
    memory.use_system_allocator(sys.argv)  # ``serve`` runs again from here: import after it
    from .cli import main

    try:
        status = main()
        sys.stdout.flush()
    except BrokenPipeError:
        # Python flushes stdout once more on the way out: point it at /dev/null first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return SIGPIPE_STATUS
    return status


sys.exit(run())
