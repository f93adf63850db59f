"""The protocol's view of the engine registry: which games exist and their options.

The engine is imported when first needed, so decoding frames that name no game never
loads it. What the engine reports as ``ValueError`` becomes ``bad_request``; anything else
it raises is a bug, reported as ``internal_error`` (with the cause chained) so that even
then the codec raises nothing but ProtocolError.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from protocol.errors import ErrorCode, InvalidMessage, ProtocolError

__all__ = ["describe_games"]


def describe_games() -> list[dict[str, Any]]:
    """``describe()`` of every game in the engine registry, for ``welcome.games``."""
    import engine

    return [game.describe() for game in engine.GAMES.values()]


def normalize_options(path: str, game: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` with defaults filled in; InvalidMessage for an unknown game or bad option.

    ``path`` names the message for the error text (``"seek"``).
    """
    try:
        import engine

        try:
            spec = engine.get_game(game)
        except ValueError as exc:
            raise InvalidMessage(f"{path}.game: {exc}") from exc
        try:
            return dict(spec.normalize_options(options))
        except ValueError as exc:
            raise InvalidMessage(f"{path}.options: {exc}") from exc
    except ProtocolError:
        raise
    except Exception as exc:
        raise ProtocolError(
            f"{path}: the game registry failed", code=ErrorCode.INTERNAL_ERROR
        ) from exc
