"""The guest flood in its short form: the server as shipped, guests from many loopback
addresses and from one, swept after (the measured run is in docs/RELIABILITY.md)."""

from __future__ import annotations

import json
import subprocess
import sys


def test_guest_flood_short_run() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "tests.tools.guest_flood", "--count", "40", "--settle", "0",
         "--json"], capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-2000:]
    many, one = json.loads(run.stdout)
    assert many["case"] == "many" and one["case"] == "one"
    [flooded] = many["rounds"]
    assert flooded["replies"] == {"authed": 40}  # an address each: no limit met
    assert flooded["users"] == {"after_flood": {"guest": 40}, "after_sweep": {}}
    [limited] = one["rounds"]
    assert limited["replies"]["authed"] in (20, 21)  # the burst (and one more a minute)
    assert limited["replies"]["rate_limited"] == 40 - limited["replies"]["authed"]
    assert limited["users"]["after_sweep"] == {}
    for case in (flooded, limited):
        assert case["rss_mib"]["before"] > 0 and case["rss_mib"]["after_flood"] > 0
