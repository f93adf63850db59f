"""Match records: text and JSON round-trips, tolerant parsing, clear errors, verification."""

from __future__ import annotations

import contextlib
import json
import random
import re
from dataclasses import replace
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine
import protocol as p
from clients.records import (
    MatchRecord,
    RecordError,
    RecordMove,
    format_clock_reading,
    format_record,
    from_dict,
    from_json,
    match_record_from_wire,
    parse_clock_reading,
    parse_record,
    record_from_state,
    to_dict,
    to_json,
    utc_date,
    verify,
)
from protocol.limits import MAX_CLOCK_MS, MAX_DAYS_PER_MOVE, MAX_INCREMENT_MS, MIN_CLOCK_MS
from tests.engine.helpers import CONFIGS

DOCS = Path(__file__).resolve().parents[2] / "docs" / "RECORDS.md"


TIME_CONTROLS = st.one_of(
    st.just(p.Unlimited()),
    st.builds(p.Fischer, base_ms=st.integers(MIN_CLOCK_MS, MAX_CLOCK_MS),
              increment_ms=st.integers(0, MAX_INCREMENT_MS)),
    st.builds(p.PerMove, per_move_ms=st.integers(MIN_CLOCK_MS, MAX_CLOCK_MS)),
    st.builds(p.Correspondence, days_per_move=st.integers(1, MAX_DAYS_PER_MOVE)),
)
NAMES = st.text(
    st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), min_size=1, max_size=12)
DATES = st.datetimes(timezones=st.just(UTC)).map(
    lambda d: d.isoformat().replace("+00:00", "Z") if d.microsecond % 2 else utc_date(d))
MS = st.none() | st.integers(0, 10**9)


def seeded_game(game: str, options: dict[str, Any], seed: int, max_plies: int) -> engine.State:
    rng = random.Random(seed)
    state = engine.new_game(game, **options)
    while not state.is_over and state.ply < max_plies:
        state = state.play(state.random_move(rng))
    return state


def _floats(lo: float, hi: float) -> st.SearchStrategy[float]:
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False)


RATING_UPDATES = st.builds(
    p.RatingUpdate, rating_before=_floats(-10_000, 10_000), deviation_before=_floats(0, 350),
    volatility_before=_floats(0, 10), rating_after=_floats(-10_000, 10_000),
    deviation_after=_floats(0, 350), volatility_after=_floats(0, 10))


@st.composite
def records(draw: st.DrawFn) -> MatchRecord:
    game, options = draw(st.sampled_from(CONFIGS))
    state = seeded_game(game, options, draw(st.integers(0, 2**32)), draw(st.integers(0, 80)))
    ending = None
    if state.is_over:
        termination, winner = "normal", state.winner
        ending = draw(st.none() | st.just(state.ending.text))  # type: ignore[union-attr]
    else:
        termination = draw(st.sampled_from(["unterminated", "resign", "timeout", "abandon",
                                            "abort"]))
        winner = {"unterminated": None, "abort": None, "timeout": 1 - state.to_move}.get(
            termination, draw(st.sampled_from([0, 1])))
    moves = tuple(RecordMove(i, m, draw(MS), draw(MS)) for i, m in enumerate(state.moves))
    return MatchRecord(
        game=game, options=options, players=(draw(NAMES), draw(NAMES)), date=draw(DATES),
        game_id=draw(st.none() | NAMES), player_kinds=draw(st.none() | st.tuples(NAMES, NAMES)),
        time_control=draw(TIME_CONTROLS), winner=winner, termination=termination, moves=moves,
        ending=ending, rated=(rated := draw(st.booleans())),
        rating_changes=draw(st.none() | st.tuples(RATING_UPDATES, RATING_UPDATES))
        if rated else None,
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records())
def test_round_trips_and_verifies(record: MatchRecord) -> None:
    text = format_record(record)
    assert parse_record(text) == record
    assert from_json(to_json(record)) == record
    assert from_json(to_json(record, indent=2)) == record
    assert from_dict(json.loads(json.dumps(to_dict(record)))) == record
    report = verify(record)
    assert report.ok, report.problems
    assert report.legal_plies == len(record.moves)


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_damaged_records_raise_only_record_error(data: st.DataObject) -> None:
    """Random edits of a valid record either parse or raise RecordError, never anything else."""
    text = format_record(data.draw(records()))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(text)))
        cut = data.draw(st.integers(0, 8))
        text = text[:at] + data.draw(st.text(max_size=6)) + text[at + cut:]
    with contextlib.suppress(RecordError):
        parse_record(text)
    blob = data.draw(st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=5),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                    max_size=4), max_leaves=8))
    key = data.draw(st.sampled_from(list(to_dict(sample()))))
    with contextlib.suppress(RecordError):
        from_dict({**to_dict(sample()), key: blob})


def sample(**changes: Any) -> MatchRecord:
    state = seeded_game("hadron", {}, 7, 4)
    base = record_from_state(state, players=("ann", "bo"), date="2025-03-01T18:04:05Z",
                             time_control={"kind": "fischer", "base_ms": 300000,
                                           "increment_ms": 2000})
    moves = tuple(RecordMove(m.ply, m.move, 1900 + m.ply, 298100 - m.ply)
                  for m in base.moves)
    return replace(base, **{"moves": moves, **changes})


# -- the text form -----------------------------------------------------------------------------
def test_text_form_looks_as_documented() -> None:
    text = format_record(sample())
    head, body = text.split("\n\n")
    assert head.splitlines()[:3] == ['[Game "hadron"]', '[Options "size=5"]',
                                     '[RulesVersion "1"]']
    assert '[Red "ann"]' in head and '[Blue "bo"]' in head
    assert '[TimeControl "5m+2s"]' in head and '[Result "*"]' in head
    assert body.splitlines()[0].startswith("1. ")
    # every time at the one precision the record needs (ms here: 1901 and 298099 later)
    assert body.splitlines()[0].endswith(" {used 1.900} {clk 0:04:58.100}")
    assert body.splitlines()[1].endswith(" {used 1.901} {clk 0:04:58.099}")
    assert body.splitlines()[-1] == "*"


def test_times_are_written_at_one_precision_and_ratings_readably() -> None:
    tenths = format_record(replace(sample(), moves=tuple(
        RecordMove(m.ply, m.move, 7000 if m.ply % 2 else 4200, 298100 - 100 * m.ply)
        for m in sample().moves)))
    moves = tenths.split("\n\n")[1].splitlines()[:-1]
    assert moves[:2] == [f"1. {sample().moves[0].move} {{used 4.2}} {{clk 0:04:58.1}}",
                         f"2. {sample().moves[1].move} {{used 7.0}} {{clk 0:04:58.0}}"]
    change = p.RatingUpdate(rating_before=1500.0, deviation_before=350.0,
                            volatility_before=0.06, rating_after=1662.21,
                            deviation_after=290.23, volatility_after=0.05999968)
    down = replace(change, rating_after=1337.79)
    record = sample(rated=True, rating_changes=(change, down))
    text = format_record(record)
    assert '[RedRating "1500 350 0.06 -> 1662.21 290.23 0.05999968"] ; 1500? -> 1662? (+162)' \
        in text.splitlines()
    assert text.splitlines().count(
        '[BlueRating "1500 350 0.06 -> 1337.79 290.23 0.05999968"] ; 1500? -> 1338? (-162)') == 1
    assert parse_record(text) == record  # the comments change nothing


def test_parser_is_tolerant_of_layout_and_comments() -> None:
    record = sample()
    m = [x.move for x in record.moves]
    text = f"""; a comment before the tags
    [Result   "*"]   ; tags in any order
[Date "2025-03-01T18:04:05Z"]
[Game "hadron"]
[Blue "bo"]
[Red "ann"]
[TimeControl " 5m+2s "]

{{a plain comment}} 1.{m[0]} {{used 1.9 clk 0:04:58.1}}
2.   {m[1]}
{{clk 4:58.099}}  {{used 1.901}} 3. {m[2]} {{used 1.902}} {{clk 298.098}}   4. {m[3]}
{{ used 1.903 }} ; the end
{{clk 0:04:58.097}}\r
"""
    assert parse_record(text.replace("\n", "\r\n")) == record
    assert parse_record(text) == record


def test_termination_and_rules_version_default() -> None:
    record = parse_record('[Game "xodd"]\n[Date "2025-03-01T18:04:05+00:00"]\n'
                          '[Black "a"]\n[White "b"]\n[Result "1-0"]\n\n1. Wc3 2. pass 3. pass')
    assert record.termination == "normal" and record.winner == 0
    assert record.rules_version == engine.get_game("xodd").rules_version
    assert record.options == {"size": 9}
    assert record.time_control == p.Unlimited()
    assert verify(record).ok


@pytest.mark.parametrize(("text", "message"), [
    ('[Date "2025-03-01T18:04:05Z"]\n[Black "a"]\n[White "b"]\n[Result "*"]', "missing tag [Game]"),
    ('[Game "chess"]', "unknown game 'chess'"),
    ('[Game "xodd"]\n[Game "xodd"]', "line 2: tag [Game] given twice"),
    ('[Game "xodd"]\n[Red "a"]', "unknown tag [Red]"),
    ('[Game "xodd"]\n[Black a]', "line 2: malformed tag"),
    ('[Game "xodd"]\n[Black "a"]\n[White "b"]\n[Result "*"]', "missing tag [Date]"),
    ('[Game "xodd"]\n[Date "2025-03-01 18:04:05"]\n[Black "a"]\n[White "b"]\n[Result "*"]',
     "ISO 8601 UTC"),
    ('[Game "xodd"]\n[Date "2025-03-01T18:04:05+01:00"]\n[Black "a"]\n[White "b"]\n'
     '[Result "*"]', "ISO 8601 UTC"),
])
def test_header_errors(text: str, message: str) -> None:
    with pytest.raises(RecordError, match=re.escape(message)):
        parse_record(text)


HEAD = ('[Game "xodd"]\n[Date "2025-03-01T18:04:05Z"]\n[Black "a"]\n[White "b"]\n'
        '[Result "*"]\n\n')


@pytest.mark.parametrize(("body", "message"), [
    ("Bc3", "line 7: move 'Bc3' without its number 1."),
    ("2. Bc3", "line 7: move number 2., expected 1."),
    ("1. Bc3 3. pass", "move number 3., expected 2."),
    ("1. 2. Bc3", "move number 2. where a move was expected"),
    ("{clk 0:01:00} 1. Bc3", "not after a move"),
    ("1. Bc3 {clk 0:01:00} {clk 0:01:00}", "clk given twice"),
    ("1. Bc3 {used 1.2345}", "at most 3 decimals"),
    ("1. Bc3 {clk soon}", "must look like H:MM:SS"),
    ("1. Bc3 {used}", "must be pairs"),
    ("1. Bc3 {used 1 think 2}", "unknown annotation 'think'"),
    ("1. Bc3 {used 1", "unexpected '{used'"),
    ("1. Bc3\n\n[Black \"c\"]", "line 9: unexpected"),
    ("1. Bc3 * 2. pass", "after the result *"),
    ("1. Bc3 1-0", "the moves end with result 1-0 but [Result] is *"),
    ("1. Bc3 2.", "with no move"),
    ("1. Bc3 2. *", "result * where a move was expected"),
])
def test_movetext_errors(body: str, message: str) -> None:
    with pytest.raises(RecordError, match=re.escape(message)):
        parse_record(HEAD + body)


@pytest.mark.parametrize(("tags", "message"), [
    ('[Result "1-0"]\n[Termination "abort"]', "termination 'abort' has no winner"),
    ('[Result "*"]\n[Termination "resign"]', "termination 'resign' needs a winner"),
    ('[Result "1/2"]', "[Result] '1/2' must be 1-0, 0-1 or *"),
    ('[Result "*"]\n[Termination "draw"]', "termination 'draw' is not one of"),
    ('[Result "*"]\n[TimeControl "5 min"]', "[TimeControl] not a time control: '5 min'"),
    ('[Result "*"]\n[TimeControl "300+2"]', "write 300m+2s (minutes+seconds) or 5m+2s"),
    ('[Result "*"]\n[Options "size=99"]', "out of range"),
    ('[Result "*"]\n[Options "colour"]', "must be name=value"),
    ('[Result "*"]\n[BlackKind "bot"]', "give both [BlackKind] and [WhiteKind] or neither"),
    ('[Result "*"]\n[RulesVersion ""]', "rules_version must be a non-empty string"),
])
def test_result_and_value_errors(tags: str, message: str) -> None:
    text = '[Game "xodd"]\n[Date "2025-03-01T18:04:05Z"]\n[Black "a"]\n[White "b"]\n' + tags
    with pytest.raises(RecordError, match=re.escape(message)):
        parse_record(text)


def test_names_with_quotes_backslashes_and_unicode() -> None:
    record = sample(players=('say "hi" \\o/', "Zoë ; [x] {y}"), game_id="g\\1")
    assert '[Red "say \\"hi\\" \\\\o/"]' in format_record(record)
    assert parse_record(format_record(record)) == record


# -- the data and its validation ---------------------------------------------------------------
def test_record_normalises_its_fields() -> None:
    record = MatchRecord(game="hexifact", players=["a", "b"],  # type: ignore[arg-type]
                         date="2025-03-01T18:04:05Z", moves=["d2", "pass"],  # type: ignore[arg-type]
                         time_control={"kind": "fischer", "base_ms": 1000})
    assert record.players == ("a", "b")
    assert record.options == {"board": "hex3-4", "jumps": "after-placing"}
    assert record.moves == (RecordMove(0, "d2"), RecordMove(1, "pass"))
    assert record.time_control == p.Fischer(base_ms=1000, increment_ms=0)
    assert record.result == "*" and record.colours == ("Black", "White")
    assert record.replay().ply == 2
    assert hash(record) == hash(replace(record))


@pytest.mark.parametrize(("changes", "message"), [
    ({"players": ("a",)}, "players must be two strings"),
    ({"players": ("a", "")}, "players must be a non-empty string"),
    ({"players": ("a", "b\nc")}, "control or line-break"),
    ({"moves": (RecordMove(1, "c3"),)}, "move 0 is numbered ply 1"),
    ({"moves": (RecordMove(0, "c 3"),)}, "is not a move token"),
    ({"moves": (RecordMove(0, "c3", -1),)}, "ms_used must be a non-negative integer"),
    ({"moves": (RecordMove(0, "c3", None, 1.5),)},  # type: ignore[arg-type]
     "clock_ms must be a non-negative"),
    ({"winner": True, "termination": "normal"}, "winner must be 0, 1 or None"),
    ({"time_control": {"kind": "per_move", "per_move_ms": 0}},
     "time_control.per_move_ms: expected int 1000.."),
    ({"time_control": {"kind": "unlimited", "base_ms": 1}}, "unknown field str 'base_ms'"),
    ({"time_control": {"kind": "blitz"}}, "time_control.kind: expected 'fischer' or"),
    ({"date": "yesterday"}, "ISO 8601 UTC"),
    ({"date": "2025-02-30T00:00:00Z"}, "not a valid datetime"),
    ({"game_id": ""}, "game_id must be a non-empty string"),
])
def test_record_validation(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(RecordError, match=re.escape(message)):
        sample(**changes)


@pytest.mark.parametrize(("tc", "text"), [
    ({"kind": "fischer", "base_ms": 300000, "increment_ms": 2000}, "5m+2s"),
    ({"kind": "fischer", "base_ms": 90500, "increment_ms": 0}, "1m30.5s+0s"),
    ({"kind": "fischer", "base_ms": 1000, "increment_ms": 250}, "1s+0.25s"),
    ({"kind": "per_move", "per_move_ms": 30000}, "30s/move"),
    ({"kind": "correspondence", "days_per_move": 3}, "3d/move"),
    ({"kind": "unlimited"}, "unlimited"),
])
def test_time_control_tag(tc: dict[str, Any], text: str) -> None:
    record = sample(time_control=tc)
    assert f'[TimeControl "{text}"]' in format_record(record)
    assert parse_record(format_record(record)).time_control == p.time_control_from_map(tc)


@pytest.mark.parametrize(("ms", "text"), [
    (298100, "0:04:58.1"), (0, "0:00:00"), (1, "0:00:00.001"), (259200000, "72:00:00"),
    (3723450, "1:02:03.45"),
])
def test_clock_reading_text(ms: int, text: str) -> None:
    assert format_clock_reading(ms) == text
    assert parse_clock_reading(text) == ms


# -- the JSON form -----------------------------------------------------------------------------
def test_json_keys() -> None:
    data = to_dict(sample())
    assert list(data) == ["format", "game_id", "game", "options", "rules_version", "players",
                          "player_kinds", "date", "time_control", "winner", "termination",
                          "moves"]
    assert data["format"] == "tessera-record/1"
    assert data["moves"][0] == {"ply": 0, "move": data["moves"][0]["move"], "ms_used": 1900,
                                "clock_ms": 298100}


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda d: d.pop("format"), "key 'format' must be 'tessera-record/1'"),
    (lambda d: d.update(colour="red"), "unknown key 'colour'"),
    (lambda d: d.pop("date"), "missing key 'date'"),
    (lambda d: d.update(moves="c3"), "key 'moves' must be a list"),
    (lambda d: d["moves"].append(["c3"]), "must be an object"),
    (lambda d: d["moves"][0].update(think=1), "moves[0] has unknown key 'think'"),
    (lambda d: d["moves"][0].pop("move"), "moves[0] needs keys 'ply' and 'move'"),
    (lambda d: d.update(options=[]), "key 'options' must be an object"),
    (lambda d: d.update(players="ab"), "players must be two strings"),
])
def test_json_errors(mutate: Any, message: str) -> None:
    data = to_dict(sample())
    mutate(data)
    with pytest.raises(RecordError, match=re.escape(message)):
        from_dict(data)


def test_json_optional_keys_and_bad_json() -> None:
    data = to_dict(sample())
    for key in ("game_id", "options", "rules_version", "player_kinds", "time_control"):
        del data[key]
    for move in data["moves"]:
        del move["ms_used"], move["clock_ms"]
    record = from_dict(data)
    assert record.time_control == p.Unlimited() and record.moves[0].clock_ms is None
    with pytest.raises(RecordError, match="not JSON"):
        from_json("{")
    with pytest.raises(RecordError, match="must be a JSON object"):
        from_json("[]")


def test_record_from_the_servers_wire_form() -> None:
    wire = {"game_id": "g1", "game": "hadron", "options": {"size": 5},
            "clock": {"kind": "fischer", "base_ms": 60000, "increment_ms": 1000},
            "players": [{"name": "ann", "kind": "human"}, {"name": "bot1", "kind": "bot"}],
            "status": "over",
            "moves": [{"ply": 0, "move": "c3", "by": 0, "ms_used": 1200, "clock_ms": 59800}],
            "result": {"winner": 1, "reason": "resign"},
            "created_ms": 1740852245123, "ended_ms": 1740852250000}
    record = match_record_from_wire(wire)
    assert record == MatchRecord(
        game="hadron", options={"size": 5}, game_id="g1", players=("ann", "bot1"),
        player_kinds=("human", "bot"), date="2025-03-01T18:04:05.123Z",
        time_control={"kind": "fischer", "base_ms": 60000, "increment_ms": 1000}, winner=1,
        termination="resign", moves=(RecordMove(0, "c3", 1200, 59800),))
    assert verify(record).ok
    playing = match_record_from_wire({**wire, "status": "playing", "result": None}, "1")
    assert playing.termination == "unterminated" and playing.winner is None
    aborted = match_record_from_wire({**wire, "moves": [], "result": {"reason": "abort"}})
    assert (aborted.termination, aborted.winner, aborted.moves) == ("abort", None, ())
    assert verify(aborted).ok
    with pytest.raises(RecordError, match=r"malformed wire record: record\.players"):
        match_record_from_wire({**wire, "players": []})


# -- verification ------------------------------------------------------------------------------
def finished(game: str = "hadron", seed: int = 1, **options: Any) -> engine.State:
    return seeded_game(game, options, seed, 10**6)


def test_verify_accepts_finished_and_unfinished_games() -> None:
    for game in engine.GAMES:
        state = finished(game)
        report = verify(record_from_state(state, players=("a", "b"), date=utc_date()))
        assert report.ok and report.engine_over and report.engine_winner == state.winner
        assert report.position == state.to_text()
    half = seeded_game("xodd", {}, 1, 5)
    record = record_from_state(half, players=("a", "b"), date=utc_date())
    assert record.termination == "unterminated" and verify(record).ok


def test_verify_reports_an_illegal_move() -> None:
    record = sample()
    bad = replace(record, moves=(*record.moves[:2], RecordMove(2, record.moves[1].move)))
    report = verify(bad)
    assert not report.ok and report.illegal_ply == 2 and report.legal_plies == 2
    # the file's numbering: the text form's move 3, the JSON form's ply 2
    assert report.problems[0].startswith(f"move 3 (ply 2): {record.moves[1].move} is illegal")
    assert "occupied" in report.problems[0]


def test_verify_reports_non_canonical_moves() -> None:
    record = MatchRecord(game="xodd", players=("a", "b"), date=utc_date(),
                         moves=["Bc3", "wE5,Ba1"])  # type: ignore[arg-type]
    report = verify(record)
    assert report.problems == (
        "move 2 (ply 1): 'wE5,Ba1' is not canonical (canonical: Ba1,We5)",)


def test_verify_checks_the_result() -> None:
    state = finished("hadron", 3)
    assert state.winner is not None
    loser = 1 - state.winner
    base = record_from_state(state, players=("a", "b"), date=utc_date())
    wrong = replace(base, winner=loser)
    assert "the rules give the win to" in verify(wrong).problems[0]
    resigned = replace(base, termination="resign", ending=None)
    assert "termination should be normal" in verify(resigned).problems[0]
    half = seeded_game("hadron", {}, 3, 4)
    early = record_from_state(half, players=("a", "b"), date=utc_date(), termination="normal",
                              winner=0)
    assert "not over by the rules" in verify(early).problems[0]
    mover = half.to_move
    timeout = replace(early, termination="timeout", winner=mover)
    assert "only their clock ran" in verify(timeout).problems[0]
    assert verify(replace(timeout, winner=1 - mover)).ok
    assert verify(replace(early, termination="abandon", winner=mover)).ok
    assert verify(replace(early, termination="abort", winner=None)).ok
    old = replace(base, rules_version="0")
    assert "rules version 0" in verify(old).problems[0]


# -- the documentation -------------------------------------------------------------------------
def doc_blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", DOCS.read_text(), re.S)


def test_docs_examples_parse_verify_and_are_canonical() -> None:
    texts, jsons = doc_blocks("text"), doc_blocks("json")
    games = {parse_record(t).game for t in texts}
    assert games == set(engine.GAMES)
    for text in texts:
        record = parse_record(text)
        assert verify(record).ok, verify(record).problems
        assert format_record(record) == text
    assert jsons
    for text in jsons:
        record = from_json(text)
        assert verify(record).ok
        assert to_json(record, indent=2) + "\n" == text


def test_a_rated_record_carries_both_rating_changes() -> None:
    changes = (p.RatingUpdate(rating_before=1500, deviation_before=350, volatility_before=0.06,
                              rating_after=1662.21, deviation_after=290.23,
                              volatility_after=0.05999968),
               p.RatingUpdate(rating_before=1500, deviation_before=350, volatility_before=0.06,
                              rating_after=1337.79, deviation_after=290.23,
                              volatility_after=0.05999968))
    record = MatchRecord(game="hadron", players=("alice", "bob"), date="2026-12-01T10:00:00Z",
                         winner=0, termination="resign", rated=True, rating_changes=changes)
    text = format_record(record)
    assert '[Rated "yes"]' in text
    assert '[RedRating "1500 350 0.06 -> 1662.21 290.23 0.05999968"]' in text
    assert parse_record(text) == record
    assert to_dict(record)["rating_changes"][1]["rating_after"] == 1337.79
    assert from_json(to_json(record)) == record
    casual = replace(record, rated=False, rating_changes=None)
    assert "Rated" not in format_record(casual) and "rated" not in to_dict(casual)
    with pytest.raises(RecordError, match="not rated"):
        replace(record, rated=False)


def test_a_record_says_how_the_rules_ended_the_game_and_verify_checks_it() -> None:
    state = engine.replay("xodd", {"size": 3}, ["Bb2", "pass", "pass"])
    record = record_from_state(state, players=("alice", "bob"), date="2026-12-01T10:00:00Z")
    said = "both passed: Black 1 group, White 0; fewer groups wins"
    assert record.ending == said
    text = format_record(record)
    assert f'[Ending "{said}"]' in text
    assert parse_record(text) == record
    assert from_json(to_json(record)) == record and to_dict(record)["ending"] == said
    assert verify(record).ok
    edited = replace(record, ending="both passed: Black 0 groups, White 1; fewer groups wins")
    assert "the rules say 'both passed: Black 1 group" in verify(edited).problems[0]
    with pytest.raises(RecordError, match="an ending is given for a game whose termination"):
        replace(record, termination="resign")
