"""The phases of a connection, which every client message names as those it is accepted in.

    connected --hello ok--> greeted --register|login|guest|auth_token ok--> authenticated
                               ^                                                |
                               +------------------- logout ok ------------------+

The transitions themselves are declared on the messages that cause them
(``Message.MOVES_TO``); :mod:`protocol.session` derives its tables from those declarations.
"""

from __future__ import annotations

import enum

__all__ = ["Phase"]


class Phase(enum.StrEnum):
    CONNECTED = "connected"
    """Before a successful ``hello``."""
    GREETED = "greeted"
    """Versions agreed, nobody logged in: logins, ping, lobby, watching and history."""
    AUTHENTICATED = "authenticated"
    """Logged in as a user, guest or bot: everything but ``hello`` and logins."""


CONNECTED = frozenset({Phase.CONNECTED})
GREETED = frozenset({Phase.GREETED})
AUTHENTICATED = frozenset({Phase.AUTHENTICATED})
GREETED_OR_LATER = frozenset({Phase.GREETED, Phase.AUTHENTICATED})
