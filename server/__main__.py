"""``python -m server``: the operator commands (what ``tessera serve|db|admin`` runs)."""

import sys

from .cli import main

sys.exit(main())
