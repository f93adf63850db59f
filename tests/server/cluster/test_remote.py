"""A RemoteGame relaying events and acknowledging a move sent from its node (no network:
the relay itself)."""

from __future__ import annotations

import protocol as p
from server.cluster.remote import ENDING, EVENT, FINAL, RemoteGame


class Links:
    def catch_up(self, remote: RemoteGame) -> None: ...
    def seat_changed(self, remote: RemoteGame, seat: int, present: bool) -> None: ...
    def idle(self, remote: RemoteGame) -> None: ...
    def game_over(self, remote: RemoteGame) -> None: ...


class Log:
    """A listener and an ack callback writing to one list, in the order they were called."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def send_frame(self, frame: bytes) -> None:
        self.seen.append(p.decode_server(frame).TAG)

    def acked(self, seq: int) -> None:
        self.seen.append(f"ack {seq}")


def moved(seq: int, ply: int, move: str) -> bytes:
    return p.encode(p.Moved(game_id="g1", seq=seq, ply=ply, move=move, by=ply % 2,
                            ms_used=5))


async def test_the_ack_follows_its_moved_and_the_game_over_of_a_last_move() -> None:
    remote, log = RemoteGame("g1", Links()), Log()
    remote.attach(log, 3, 0, told=True)
    with remote.expect_move(0, "A1", log.acked), remote.expect_move(1, "b2", log.acked):
        remote.deliver(4, EVENT, moved(4, 0, "a1"))
        remote.deliver(5, ENDING, moved(5, 1, "b2"))  # ends the game: game_over follows
        assert log.seen == ["moved", "ack 4", "moved"]
        over = p.encode(p.GameOver(game_id="g1", seq=6, winner=1, reason="normal"))
        remote.deliver(6, FINAL, over)
    assert log.seen == ["moved", "ack 4", "moved", "game_over", "ack 5"]


async def test_a_caught_up_last_move_is_acknowledged_after_the_game_over() -> None:
    remote, log = RemoteGame("g1", Links()), Log()
    remote.attach(log, 3, 0, told=True)
    over = p.encode(p.GameOver(game_id="g1", seq=6, winner=1, reason="normal"))
    with remote.expect_move(1, "b2", log.acked):
        remote.deliver_all([(4, moved(4, 0, "a1")), (5, moved(5, 1, "b2")), (6, over)],
                           over=True)
    assert log.seen == ["moved", "moved", "game_over", "ack 5"]


async def test_another_move_at_that_ply_is_not_acknowledged() -> None:
    remote, log = RemoteGame("g1", Links()), Log()
    remote.attach(log, 3, 0, told=True)
    with remote.expect_move(0, "a2", log.acked):
        remote.deliver_all([(4, moved(4, 0, "a1"))])
    assert log.seen == ["moved"]


async def test_a_move_sent_in_other_words_is_recognised_as_the_owners() -> None:
    """The owner's text is canonical; the rules read the sent one the same way whatever
    its case, spaces and the order of its two stones (engine: ``Wf7 , ba1`` is
    ``Ba1,Wf7``), so its ack does not wait for a timeout."""
    remote, log = RemoteGame("g1", Links()), Log()
    remote.attach(log, 3, 0, told=True)
    with remote.expect_move(0, " Wf7 , ba1", log.acked):
        remote.deliver_all([(4, moved(4, 0, "Ba1,Wf7"))])
    assert log.seen == ["moved", "ack 4"]


async def test_events_that_came_before_the_first_attachment_reach_it() -> None:
    """A node that lost a game subscribes, then reads the store and attaches its players at
    the stored seq: the events published meanwhile (a move forwarded in that window) wait,
    and reach the players as they attach (they once went to nobody: a player missed a
    move after Redis restarted and another node took the game over)."""
    remote, log = RemoteGame("g1", Links()), Log()
    remote.deliver(4, EVENT, moved(4, 0, "a1"))
    remote.deliver(5, EVENT, moved(5, 1, "b2"))
    remote.deliver(3, EVENT, moved(3, 1, "c3"))  # the stored snapshot has it already
    remote.attach(log, 3, 0, told=True)
    assert log.seen == ["moved", "moved"]
    assert remote.last == 5 and remote.listeners[log] == 5
    late = Log()  # a second player attached from the same snapshot gets them as well
    remote.attach(late, 3, 1, told=True)
    assert late.seen == ["moved", "moved"]
