"""The bot interface: what every bot, bundled or user-written, implements.

A bot is an object with a ``choose_move`` method. Whoever runs it (the offline match runner
in :mod:`clients.bots.match`, or the bot SDK that connects bots to a server) creates one bot
per seat, calls :meth:`Bot.new_game` when a game starts, :meth:`Bot.choose_move` whenever it
is the bot's turn, and :meth:`Bot.game_over` at the end. A minimal bot::

    import engine
    from clients.bots import Bot, TimeBudget, register

    @register
    class FirstMoveBot(Bot):
        name = "first"

        def choose_move(self, state: engine.State, budget: TimeBudget) -> str:
            return str(state.legal_moves()[0])

Rules of the house: ``choose_move`` returns canonical move text that is legal in ``state``
and comes back within the budget; all randomness comes from ``self.rng`` (seeded by the
constructor), never from the global :mod:`random` module, so a seeded bot replays exactly.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import engine

DEFAULT_THINK_S = 1.0  # think time when the clock is unlimited
SAFETY_MS = 25  # kept back from every budget for the runner's own overhead (at most)
MIN_THINK_S = 0.005  # never plan less than this, however short the clock
MARGIN_SHARE = 0.1  # a safety margin is at most this share of the time it is taken from


def margin_ms(available_ms: float, most_ms: float) -> float:
    """A safety margin that scales with the time available: ``most_ms``, but never more than
    a tenth of ``available_ms``, so a short clock still leaves time to move."""
    return min(most_ms, MARGIN_SHARE * max(0.0, available_ms))


@dataclass(frozen=True, slots=True)
class TimeBudget:
    """The time a bot may spend on one move, as the runner's clock sees it.

    ``remaining_ms`` is the bot's own remaining clock (None: no clock), ``increment_ms`` the
    Fischer increment added after each move, ``per_move_ms`` a fixed allowance per move (None:
    none): these are the clock's, hard limits. ``cap_ms`` is a think time per move chosen by
    whoever runs the bot (``--move-time``): a bot plans within it as within a per-move
    allowance, but it is no deadline. All may be given; the strictest one wins.
    """

    remaining_ms: int | None
    increment_ms: int = 0
    per_move_ms: int | None = None
    cap_ms: int | None = None

    def seconds_for_move(self, ply_hint: int = 0) -> float:
        """A sensible think time in seconds for the next move, safety margin included.

        A fixed allowance (or the cap) gives 80% of it: the rest is the safety margin, which
        scales with it. A running clock gives remaining/moves-to-go plus 80% of the increment,
        never more than a quarter of what is left after a margin (:func:`margin_ms`);
        ``ply_hint`` (plies played so far) shortens moves-to-go from 40 early in a game to 20
        later. With none, :data:`DEFAULT_THINK_S`.
        """
        limits: list[float] = [0.8 * allowance for allowance in (self.per_move_ms, self.cap_ms)
                               if allowance is not None]
        if self.remaining_ms is not None:
            left = max(0.0, self.remaining_ms - margin_ms(self.remaining_ms, SAFETY_MS))
            moves_to_go = max(20, 40 - max(0, ply_hint) // 2)
            planned = left / moves_to_go + 0.8 * self.increment_ms
            limits.append(min(planned, left / 4))
        if not limits:
            return DEFAULT_THINK_S
        return max(MIN_THINK_S, min(limits) / 1000)


class Resign(Exception):
    """Raise from :meth:`Bot.choose_move` to resign the game; ``reason`` says why.

    Whoever runs the bot (the SDK, the match runner) resigns on the bot's behalf.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Bot(ABC):
    """Base class of all bots. Subclasses set ``name`` and implement ``choose_move``.

    The constructor takes ``seed`` (None: seeded from the OS) and makes ``self.rng``, the
    only source of randomness a bot may use. Subclasses with options add keyword-only
    constructor arguments and pass ``seed`` on to ``super().__init__``.
    """

    name: ClassVar[str]

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed
        self.rng = random.Random(seed)

    @abstractmethod
    def choose_move(self, state: engine.State, budget: TimeBudget) -> str:
        """Return the canonical text of a legal move for ``state.to_move``.

        ``state`` is an immutable :class:`engine.State` that the bot may explore freely
        (``play`` returns new states). ``budget.seconds_for_move(state.ply)`` says how long
        to think. Never called once the game is over.
        """

    def new_game(  # noqa: B027 (an optional hook: deliberately empty, not abstract)
        self, game_key: str, options: dict[str, Any], seat: int
    ) -> None:
        """A game starts: ``game_key`` (e.g. "hadron"), its full options, our seat (0 or 1).

        The default does nothing; bots that keep per-game memory reset it here.
        """

    def game_over(self, winner: int | None) -> None:  # noqa: B027 (optional hook)
        """The game ended; ``winner`` is 0 or 1 (None if it was aborted). Default: no-op."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} seed={self.seed}>"


BOTS: dict[str, type[Bot]] = {}
"""Every registered bot class by name; the bundled ones register on ``import clients.bots``."""

B = TypeVar("B", bound=type[Bot])


def register(cls: B) -> B:
    """Class decorator: add a bot class to :data:`BOTS` under its ``name``."""
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise TypeError(f"{cls.__name__} needs a class attribute name: str")
    if name in BOTS and BOTS[name] is not cls:
        raise ValueError(f"a bot called {name!r} is already registered ({BOTS[name].__name__})")
    BOTS[name] = cls
    return cls


def make_bot(name: str, seed: int | None = None, **kw: Any) -> Bot:
    """A new bot of the registered kind ``name``; ValueError names the known bots."""
    try:
        cls = BOTS[name]
    except KeyError:
        raise ValueError(f"unknown bot {name!r} (known: {', '.join(sorted(BOTS))})") from None
    return cls(seed=seed, **kw)
