"""Errors raised by the rules engine.

All of them are ``ValueError`` subclasses, so callers that only care about "bad input" can
catch ``ValueError``::

    EngineError (ValueError)
    ├── IllegalMove      a malformed move, or one the rules forbid in this position
    ├── UnknownGame      a game key that is not in the registry
    ├── BadOption        an unknown option name or a value outside its allowed range
    └── BadPosition      position text that cannot be parsed or is inconsistent
"""


class EngineError(ValueError):
    """Root of every error the engine raises."""


class IllegalMove(EngineError):
    """A move that cannot be parsed or is not legal here; the state is left unchanged."""


class UnknownGame(EngineError):
    """A game key that is not registered."""


class BadOption(EngineError):
    """An unknown option, or a value of the wrong type or out of range."""


class BadPosition(EngineError):
    """Position text that does not describe a position of the named game."""
