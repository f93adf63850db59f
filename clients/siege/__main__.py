"""``python -m clients.siege``: the same as ``tessera siege``."""

import sys

from .cli import main

sys.exit(main())
