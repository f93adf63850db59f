"""The long decoder fuzz run: ``python -m tests.protocol.fuzz_long --frames 1000000``.

Pushes seeded hostile frames (``tests.protocol.mutations``) through the server's session
and the clients' decoder of server frames, with every round-trip check on every frame, and
prints what came out: each outcome counted, frames per second, and the first failure (with
the seed and index that reproduce it). ``--hypothesis N`` also runs N examples of the
hypothesis strategies of ``test_fuzz.py`` (random bytes, mutated golden frames, mutated
messages), not derandomized. Exit status 0 when every frame got a documented outcome.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.protocol import test_fuzz
from tests.protocol.mutations import run

CHUNK = 50_000  # frames per seed


def mutation_run(frames: int, first_seed: int) -> dict[str, Any]:
    outcomes: Counter[str] = Counter()
    started = time.perf_counter()
    done, seed, failure = 0, first_seed, None
    while done < frames:
        count = min(CHUNK, frames - done)
        try:
            outcomes += run(seed, count)
        except AssertionError as exc:
            failure = str(exc)
            break
        done += count
        seed += 1
    seconds = time.perf_counter() - started
    return {"engine": "mutations", "frames": done, "seeds": [first_seed, seed - 1],
            "seconds": round(seconds, 1), "frames_per_s": round(done / seconds),
            "outcomes": dict(sorted(outcomes.items())), "failure": failure}


def hypothesis_run(examples: int) -> dict[str, Any]:
    seen = [0]

    @settings(max_examples=examples, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(st.one_of(st.binary(max_size=600), test_fuzz.mutated_frames(),
                     test_fuzz.mutated_maps()))
    def fuzz(data: bytes) -> None:
        seen[0] += 1
        for decode in test_fuzz.DECODERS:
            test_fuzz.decode_safely(decode, data)
        test_fuzz.session_safely(data)

    started = time.perf_counter()
    failure = None
    try:
        fuzz()
    except Exception as exc:  # hypothesis re-raises the shrunk failure, with it in a note
        notes = " ".join(getattr(exc, "__notes__", []))
        failure = f"{type(exc).__name__}: {exc} {notes}".strip()
    return {"engine": "hypothesis", "examples": seen[0],
            "seconds": round(time.perf_counter() - started, 1), "failure": failure}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.protocol.fuzz_long",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1, help="first seed (one per 50,000)")
    parser.add_argument("--hypothesis", type=int, default=0, metavar="N",
                        help="also run N hypothesis examples")
    parser.add_argument("--json", action="store_true", help="one JSON object per run")
    opts = parser.parse_args(argv)
    results = [mutation_run(opts.frames, opts.seed)]
    if opts.hypothesis:
        results.append(hypothesis_run(opts.hypothesis))
    for result in results:
        if opts.json:
            print(json.dumps(result))
            continue
        for key, value in result.items():
            print(f"{key:>14}: {value}")
        print()
    return 1 if any(r["failure"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
