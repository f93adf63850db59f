"""Tessera's wire protocol, sans I/O: messages, codec, validation, error codes.

Frames are msgpack maps carried in binary WebSocket frames; docs/PROTOCOL.md is the
specification. This package turns bytes into validated message objects and back and knows
nothing of sockets or asyncio: the server and the clients are thin adapters around it.

    from protocol import Move, decode_client, encode

    frame = encode(Move(id=3, game_id="k3v9q2x7ma", ply=4, move="c3"))
    assert decode_client(frame) == Move(id=3, game_id="k3v9q2x7ma", ply=4, move="c3")

Modules: :mod:`~protocol.messages` (every message, the unions), :mod:`~protocol.values`
(snapshots, records, ...), :mod:`~protocol.timecontrol`
(time controls: kinds, arithmetic, notation), :mod:`~protocol.codec` (encode/decode),
:mod:`~protocol.errors` (ErrorCode, ProtocolError and its hierarchy),
:mod:`~protocol.session` (connection phases, ServerSession), :mod:`~protocol.client`
(request ids, event order), :mod:`~protocol.games` (the engine registry on the wire),
:mod:`~protocol.limits` (the version and every bound).
"""

from protocol import (
    client,
    codec,
    errors,
    games,
    limits,
    messages,
    phases,
    session,
    timecontrol,
    values,
)
from protocol.client import *
from protocol.codec import *
from protocol.errors import *
from protocol.games import *
from protocol.limits import *
from protocol.messages import *
from protocol.phases import *
from protocol.session import *
from protocol.timecontrol import *
from protocol.values import *

# each module lists its public names once, in its own __all__ (as asyncio does)
__all__ = [
    *client.__all__,
    *codec.__all__,
    *errors.__all__,
    *games.__all__,
    *limits.__all__,
    *messages.__all__,
    *phases.__all__,
    *session.__all__,
    *timecontrol.__all__,
    *values.__all__,
]
