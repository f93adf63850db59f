"""Protocol constants: the version and every numeric bound a frame is checked against.

These are part of the protocol (docs/PROTOCOL.md quotes them), not server settings: a
server may be stricter in policy (rate limits, open seeks), never looser on the wire.
"""

from __future__ import annotations

__all__ = [
    "MAX_CLIENT_FRAME_BYTES",
    "MAX_LISTED_MOVES",
    "MAX_SERVER_FRAME_BYTES",
    "PROTOCOL_VERSION",
    "SUPPORTED_VERSIONS",
]

PROTOCOL_VERSION = 1
"""The version this package speaks; a client names it in ``hello``."""

SUPPORTED_VERSIONS: tuple[int, ...] = (PROTOCOL_VERSION,)
"""Versions a server built on this package accepts in ``hello``."""

MAX_CLIENT_FRAME_BYTES = 16 * 1024
"""Largest frame a client may send (advertised as ``limits.max_frame_bytes``)."""

MAX_SERVER_FRAME_BYTES = 1024 * 1024
"""Largest frame a server sends; clients must accept frames up to this size."""

MAX_DEPTH = 16
"""Deepest nesting of maps and arrays accepted inside a free-form value."""

MAX_INT32 = 2**31 - 1
"""Upper bound of request ids, object ids, ply and seq numbers."""

MAX_SAFE_INT = 2**53 - 1
"""Upper bound of millisecond durations and timestamps (exact in a double)."""

MAX_CELLS = 1024
"""Most cells on a board (the engine's largest, 26 x 26, has 676)."""

MAX_LISTED_MOVES = 1000
"""A position's legal moves are listed (``position.legal_moves``) when at most this many."""

MAX_CHAT_CHARS = 500
MAX_NOTE_CHARS = 200  # a short note: why a challenge was declined
MAX_MOVE_CHARS = 32
MAX_PASSWORD_CHARS = 128
MIN_REGISTER_PASSWORD_CHARS = 8
MAX_TOKEN_CHARS = 512
MAX_CURSOR_CHARS = 256
MAX_SOFTWARE_CHARS = 100
MAX_ERROR_MESSAGE_CHARS = 500
MAX_OPTIONS = 16
MAX_OPTION_STRING_CHARS = 32
MAX_LIST_LIMIT = 100
DEFAULT_LIST_LIMIT = 20

PROVISIONAL_DEVIATION = 110.0
"""A rating whose deviation is above this is ``provisional`` (docs/RATINGS.md)."""

MIN_CLOCK_MS = 1_000
MAX_CLOCK_MS = 24 * 3600 * 1000
MAX_INCREMENT_MS = 3600 * 1000
MAX_DAYS_PER_MOVE = 30
