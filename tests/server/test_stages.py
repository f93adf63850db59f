"""Every stage the server declares for timing tools still names something that exists."""

from __future__ import annotations

import pytest

from server.stages import MOVE_STAGES
from tests.tools.movecost import resolve

TARGETS = [(stage, target) for stage, targets in MOVE_STAGES.items() for target in targets]


@pytest.mark.parametrize(("stage", "target"), TARGETS)
def test_every_declared_stage_resolves(stage: str, target: str) -> None:
    owner, name = resolve(target)
    assert callable(getattr(owner, name)), f"{stage}: {target}"


def test_a_stage_that_moved_is_reported() -> None:
    with pytest.raises(AttributeError):
        resolve("server.session:Session.no_such_method")
