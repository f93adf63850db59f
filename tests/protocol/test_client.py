"""Client helpers: request ids matched to replies, and game events in seq order."""

from __future__ import annotations

import pytest

import protocol as p
from protocol.limits import MAX_INT32

GAME = "k3v9q2x7ma"


def test_request_ids_are_fresh_and_replies_resolve_their_request() -> None:
    pending = p.PendingRequests()
    ping = p.Ping(id=pending.next_id())
    move = p.Move(id=pending.next_id(), game_id=GAME, ply=0, move="c3")
    assert (ping.id, move.id) == (1, 2)
    pending.add(ping)
    pending.add(move)
    assert len(pending) == 2 and 2 in pending
    with pytest.raises(ValueError, match="already pending"):
        pending.add(p.Ping(id=1))
    assert pending.resolve(p.MoveAck(id=2, game_id=GAME, ply=0, seq=2)) == move
    assert pending.resolve(p.MoveAck(id=2, game_id=GAME, ply=0, seq=2)) is None
    assert pending.resolve(p.error_reply("bad_request", "unreadable")) is None
    assert pending.resolve(p.Pong(id=1)) == ping
    assert len(pending) == 0


def test_request_ids_wrap_and_skip_pending_ones() -> None:
    pending = p.PendingRequests(first_id=MAX_INT32)
    pending.add(p.Ping(id=1))
    assert pending.next_id() == MAX_INT32
    assert pending.next_id() == 2


def moved(seq: int) -> p.Moved:
    return p.Moved(game_id=GAME, seq=seq, ply=seq - 2, move="pass", by=0, ms_used=0)


def test_game_seqs_drop_repeats_and_report_gaps() -> None:
    seqs = p.GameSeqs()
    assert seqs.last(GAME) == 0
    assert seqs.observe(moved(2)) == "gap"
    assert seqs.observe(p.OpponentBack(game_id=GAME, seq=1, player=0)) == "new"
    assert seqs.observe(moved(2)) == "new"
    assert seqs.observe(moved(2)) == "old"
    assert seqs.observe(moved(4)) == "gap"
    assert seqs.last(GAME) == 2


def test_snapshots_set_the_seq() -> None:
    from tests.protocol.examples import EXAMPLES

    seqs = p.GameSeqs()
    state = EXAMPLES["game_state"]
    started = EXAMPLES["game_started"]
    assert isinstance(state, p.GameState) and isinstance(started, p.GameStarted)
    assert seqs.observe(started) == "new"
    assert seqs.observe(started) == "old"
    seqs.snapshot(state)
    assert seqs.last(GAME) == state.game.seq
    assert seqs.observe(moved(state.game.seq + 1)) == "new"
    seqs.forget(GAME)
    assert seqs.last(GAME) == 0
