"""The ladder's pairing rule on its own (no server): nearest in rating, never the last
opponent again unless the two are the whole ladder, the first seat to whoever had it less,
and every bot paired when that can be done."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from server.ladder import Ladder
from server.lobby import Member, Offer
from server.offers import MemoryRoster
from server.rooms import GameRoom
from server.storage import PoolRating


@dataclass
class Rig:
    """A ladder of ``n`` connected bots, recording the games it would start."""

    n: int
    roster: MemoryRoster = field(default_factory=MemoryRoster)
    started: list[tuple[Member, Member]] = field(default_factory=list)
    members: list[Member] = field(default_factory=list)

    def __post_init__(self) -> None:
        async def start(offer: Offer, members: tuple[Member, Member]) -> GameRoom:
            self.started.append(members)
            room: Any = None  # the rule is tested, not the game
            return room  # type: ignore[no-any-return]

        async def online() -> set[int]:
            return {member.user_id for member in self.members}

        async def ratings(ids: list[int], game: str) -> dict[int, list[PoolRating]]:
            return {}

        async def playing(ids: list[int]) -> dict[int, int]:
            return {}

        self.ladder = Ladder(self.roster, start, online, ratings, playing)
        for user_id in range(1, self.n + 1):
            member = Member(user_id, f"bot{user_id}", "bot")
            asyncio.run(self.ladder.enter(member, ["hadron"]))
            self.members.append(member)

    def rounds(self, count: int) -> None:
        for _ in range(count):
            asyncio.run(self.ladder.play_round())


def test_rounds_never_repeat_the_last_opponent_and_balance_the_first_seat() -> None:
    rig = Rig(6)
    last: dict[int, int] = {}
    for _ in range(12):
        before = len(rig.started)
        rig.rounds(1)
        for first, second in rig.started[before:]:
            assert last.get(first.user_id) != second.user_id
            last[first.user_id], last[second.user_id] = second.user_id, first.user_id
    firsts = {m.user_id: sum(1 for a, _ in rig.started if a.user_id == m.user_id)
              for m in rig.members}
    seconds = {m.user_id: sum(1 for _, b in rig.started if b.user_id == m.user_id)
               for m in rig.members}
    # balanced: a bot may take seat 0 when both have had it as often, so within two
    assert all(abs(firsts[u] - seconds[u]) <= 2 for u in firsts), (firsts, seconds)
    assert sum(abs(firsts[u] - seconds[u]) for u in firsts) <= 4
    assert len(rig.started) == 36  # every bot plays every round: the search finds the pairs


def test_two_bots_alone_play_again_and_swap_seats() -> None:
    rig = Rig(2)
    rig.rounds(4)
    assert [pair[0].user_id for pair in rig.started] == [1, 2, 1, 2]


def test_a_bot_that_leaves_is_off_the_ladder_and_its_roster() -> None:
    rig = Rig(3)
    asyncio.run(rig.ladder.exit(3))
    assert rig.ladder.members("hadron") == [1, 2]
    assert sorted(asyncio.run(rig.roster.read())) == [1, 2]
    rig.members.pop()
    rig.rounds(1)
    assert {m.user_id for pair in rig.started for m in pair} <= {1, 2}
