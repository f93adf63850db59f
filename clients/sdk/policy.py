"""What a bot agrees to play: the policy its runner applies to challenges and seeks.

    policy = Policy(games=parse_game_rules("hadron:size=5..9,xodd"),
                    time_controls=frozenset({"per_move", "fischer"}), max_games=4,
                    accept_from=None, seeks=(parse_seek("hadron size=5 2s/move"),))

A challenge is accepted when :meth:`Policy.refusal` finds nothing against it and the bot
plays fewer than ``max_games`` games; otherwise it is declined (the challenger sees
``challenge_ended`` with ``declined``). The runner keeps the ``seeks`` open while it has
free game slots. ``rated`` says which challenges it takes by that flag (any, only rated,
only casual); ``rematches`` whether it accepts a rematch an opponent offers (when a slot is
free); ``ladder`` the games whose bot ladder it joins (docs/RATINGS.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import protocol as p

from .specs import GameRules, SeekSpec, budget_for, format_game_rules

RATED_CHOICES = ("any", "rated", "casual")
CHALLENGERS_CHOICES = ("everyone", "registered", "nobody")  # set_challenge_policy's
DEFAULT_TIME_CONTROLS = frozenset({"fischer", "per_move", "unlimited"})
"""Real-time play: correspondence games (days per move) are declined unless allowed."""


def clock_kind(clock: p.TimeControl) -> str:
    return clock.TAG


def names(items: Iterable[str]) -> frozenset[str]:
    """User names compared as the server compares them: case-insensitively."""
    return frozenset(n.strip().lower() for n in items if n.strip())


@dataclass(frozen=True, slots=True)
class Policy:
    """Which challenges a bot accepts, how many games it plays at once, what it seeks.

    ``games``: allowed games with constraints on their options (None: every game, any
    options; see :func:`~clients.sdk.specs.parse_game_rules`). ``time_controls``: allowed
    clock kinds. ``min_think_s``: decline clocks that leave the bot less than this per move
    (as its :class:`~clients.bots.base.TimeBudget` plans the first move). ``max_games``:
    games played at once. ``accept_from``: lower-case names whose challenges are considered
    (None: anyone; empty: nobody). ``seeks``: seeks kept open while a game slot is free.
    ``challengers``: who the server lets challenge the bot at all (``everyone``,
    ``registered``: no guests, ``nobody``; set at each login, kept with the account; None
    leaves the account's choice as it is): a challenge it keeps out is refused by the
    server, and never costs the bot a decline.
    """

    games: GameRules | None = None
    time_controls: frozenset[str] = DEFAULT_TIME_CONTROLS
    min_think_s: float = 0.0
    max_games: int = 1
    accept_from: frozenset[str] | None = None
    seeks: tuple[SeekSpec, ...] = ()
    rated: str = "any"
    rematches: bool = False
    ladder: tuple[str, ...] = ()
    challengers: str | None = None

    def __post_init__(self) -> None:
        if self.max_games < 1:
            raise ValueError("max_games must be at least 1")
        if self.challengers not in (None, *CHALLENGERS_CHOICES):
            raise ValueError(f"challengers must be one of {', '.join(CHALLENGERS_CHOICES)}, "
                             f"not {self.challengers!r}")
        if self.rated not in RATED_CHOICES:
            raise ValueError(f"rated must be one of {', '.join(RATED_CHOICES)}, "
                             f"not {self.rated!r}")
        unknown = set(self.time_controls) - {"fischer", "per_move", "correspondence",
                                              "unlimited"}
        if unknown:
            raise ValueError(f"unknown time control kinds: {', '.join(sorted(unknown))}")

    def refusal(self, sender: str, game: str, options: Mapping[str, Any],
                clock: p.TimeControl, rated: bool = False) -> str | None:
        """Why a challenge from ``sender`` is declined, or None if the policy allows it."""
        if self.accept_from is not None and sender.lower() not in self.accept_from:
            return f"challenges from {sender} are not accepted"
        if self.rated == "rated" and not rated:
            return "only rated games are played"
        if self.rated == "casual" and rated:
            return "only casual games are played"
        if self.games is not None:
            rules = self.games.get(game)
            if rules is None:
                return f"{game} is not played (plays {', '.join(self.games)})"
            for name, allowed in rules.items():
                if options.get(name) not in allowed:
                    return f"{game} {name}={options.get(name)} is not played ({name}: {allowed})"
        kind = clock_kind(clock)
        if kind not in self.time_controls:
            kinds = ", ".join(sorted(self.time_controls))
            return f"{p.format_time_control(clock)} is not played ({kinds})"
        think = budget_for(clock, None).seconds_for_move(0)
        if think < self.min_think_s:
            return (f"{p.format_time_control(clock)} leaves {think:.3f} s per move, less than "
                    f"{self.min_think_s:g} s")
        return None

    def describe(self) -> str:
        """One line for the log: what this policy accepts."""
        who = ("anyone" if self.accept_from is None
               else ", ".join(sorted(self.accept_from)) or "nobody")
        seeks = "; ".join(str(s) for s in self.seeks) or "none"
        return (f"games {format_game_rules(self.games)}; clocks "
                f"{','.join(sorted(self.time_controls))}; at most {self.max_games} at once; "
                f"challenges from {who} ({self.rated}); seeks: {seeks}; rematches "
                f"{'accepted' if self.rematches else 'declined'}; ladder: "
                f"{','.join(self.ladder) or 'no'}; the server lets "
                f"{self.challengers or 'whom the account says'} challenge")
