"""The account budgets ``tessera siege`` gives every server it starts, and how many
answers each lets through in a given time.

The servers are started with these stated (by default the server's own defaults), so that
the verdicts of ``lockout``, ``login-flood`` and ``guest-flood`` can hold what the servers
answered against them: one budget, however many nodes the attack was spread over.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Budgets:
    """Per (account, address): wrong passwords counted before a lock, the first lock
    (doubled by each later one, up to ``lockout_max_s``); per address: logins (each a
    password hash) and new guests, as token buckets (a burst, then a rate)."""

    lockout_after: int = 5
    lockout_s: float = 30.0
    lockout_max_s: float = 900.0
    login_burst: int = 30
    logins_per_minute: float = 30.0
    guest_burst: int = 20
    guests_per_hour: float = 60.0

    def server_args(self) -> list[str]:
        """The ``tessera serve`` flags that set them."""
        return ["--lockout-after", str(self.lockout_after), "--lockout", str(self.lockout_s),
                "--lockout-max", str(self.lockout_max_s),
                "--login-burst", str(self.login_burst),
                "--logins-per-minute", str(self.logins_per_minute),
                "--guest-burst", str(self.guest_burst),
                "--guests-per-hour", str(self.guests_per_hour)]

    def wrong_passwords(self, seconds: float) -> int:
        """The most wrong passwords from one address for one account the server may
        count (answer ``invalid_credentials``) within ``seconds``: ``lockout_after``, then
        one more each time a lock ends."""
        counted, elapsed, lock = self.lockout_after, 0.0, self.lockout_s
        while elapsed + lock <= seconds:
            elapsed += lock
            counted += 1
            lock = min(2 * lock, self.lockout_max_s)
        return counted

    def logins(self, seconds: float) -> int:
        """The most logins from one address the server may check within ``seconds``."""
        return math.floor(self.login_burst + self.logins_per_minute / 60 * seconds)

    def guests(self, seconds: float) -> int:
        """The most guests one address may be given within ``seconds``."""
        return math.floor(self.guest_burst + self.guests_per_hour / 3600 * seconds)
