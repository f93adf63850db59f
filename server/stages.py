"""The stages of a move's path through the server, named for timing tools.

``tessera bench --breakdown`` runs the server under ``tests/tools/movecost.py``, which wraps
each callable listed here in a CPU clock and adds its time to its stage. The server only
declares where its stages are; it carries no timing code. Each entry is
``"module:Class.method"``; a method is wrapped on its class, so every caller is timed.
tests/server/test_stages.py checks that every entry still resolves, so a rename here or in
a library fails there rather than silently timing nothing.

    frames in     websockets parsing the frames that arrive
    decode        msgpack, schema and session phase
    validate      the rules (engine.State.play)
    messages      building server messages, with their schema checks
    encode+send   framing replies and events (``moved`` and ``move_ack`` straight from
                  their fields) and handing them to the transport, once per frame for
                  replies, once per event for all its listeners, one write per connection
                  and loop turn
    store         the commit queue's transactions, in their own thread (bulk insert, commit)

What no stage covers is the event loop, the sockets' system calls, tasks and futures, the
room's own logic (locks, clocks, sequence numbers) and the session's dispatch.
"""

from __future__ import annotations

MOVE_STAGES: dict[str, tuple[str, ...]] = {
    "frames in": ("websockets.protocol:Protocol.receive_data",),
    "decode": ("protocol.session:ServerSession.receive",),
    "validate": ("engine:State.play",),
    "messages": ("protocol._schema:Struct.__post_init__",),
    "encode+send": (
        "server.session:Session.send",
        "server.session:Session.send_trusted",
        "server.session:Session.send_frame",
        "server.session:Session.flush",
        "server.rooms:GameRoom.broadcast",
        "server.rooms:GameRoom.broadcast_moved",
    ),
    "store": ("server.storage.statements:SqliteThreadWriter.write_blocking",),
}
