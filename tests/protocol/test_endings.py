"""How a game ended, on the wire: the engine's ending carried as ``Ending`` in ``game_over``,
in results, and in a position's ``after_pass`` (the examples are the engine's answers)."""

from __future__ import annotations

import pytest

import engine
import protocol as p
from tests.protocol import examples


def test_the_pass_example_is_what_the_engine_says() -> None:
    state = engine.replay("hexifact", {}, ["c3", "d3", "e3", "pass"])
    example = examples.EXAMPLES["position_pass_ends"]
    assert isinstance(example, p.Position)
    assert example.cells == "".join(".01"[v] for v in state.cells)
    assert example.summary == state.summary()
    assert tuple(str(m) for m in state.legal_moves()) == example.legal_moves
    ending = state.ending_if("pass")
    assert ending is not None
    assert p.Result.of(ending) == example.after_pass


def test_an_ending_round_trips_and_belongs_to_normal_ends_only() -> None:
    ending = engine.replay("hadron", {"size": 3}, ["a1", "b3", "c1"]).ending
    result = p.Result.of(ending)  # type: ignore[arg-type]
    assert result.to_wire() == {"winner": 0, "reason": "normal", "ending": {
        "how": "no_move", "text": "Blue has no legal placement"}}
    assert p.load_value(p.Result, result.to_wire(), "result") == result
    with pytest.raises(p.InvalidMessage, match="ending: given only when the reason is 'normal'"):
        p.Result(winner=0, reason="resign", ending=result.ending)
    with pytest.raises(p.InvalidMessage, match="ending"):
        p.GameOver(game_id="abc", seq=3, winner=0, reason="timeout", ending=result.ending)
    assert p.Ending.of(None) is None
