"""100,000 hostile frames through the server's decoder and session: only documented refusals.

``test_fuzz.py`` explores with hypothesis (a few thousand examples, shrunk on failure);
this pushes a hundred thousand seeded frames from ``mutations`` through the same path a
server connection takes (``ServerSession.receive``, then the refusal's reply), in a few
seconds. A failure names the seed and index that reproduce it. The long run is
``python -m tests.protocol.fuzz_long`` (docs/RELIABILITY.md).
"""

from __future__ import annotations

from tests.protocol.mutations import CODES, run

FRAMES = 100_000
SEED = 20260101


def test_a_hundred_thousand_frames_get_only_documented_refusals() -> None:
    outcomes = run(SEED, FRAMES, server_decoder=False, deep_every=16)
    assert sum(outcomes.values()) == FRAMES
    assert {key.removeprefix("client:") for key in outcomes} <= CODES | {"ok"}
    assert "client:internal_error" not in outcomes
    # the mix reaches past msgpack: some frames are valid requests, most are refused
    assert outcomes["client:ok"] > FRAMES // 1000
    assert outcomes["client:bad_request"] > FRAMES // 2
