"""The golden files, the examples and docs/PROTOCOL.md agree byte for byte.

If one of these fails after a deliberate change, run ``python -m tests.protocol.make_golden``
and review the diff: a changed byte is a change of the protocol.
"""

from __future__ import annotations

import json
import re

import msgpack
import pytest

import engine
import protocol as p
from protocol._schema import struct_converter
from tests.protocol.examples import (
    EXAMPLES,
    HEXIFACT_INFO,
    MOVES,
    XODD_INFO,
    YODD_2_GEOMETRY,
)
from tests.protocol.make_golden import (
    DOCUMENT,
    GOLDEN_DIR,
    documented_examples,
    golden_path,
    update_document,
)

DOC = DOCUMENT.read_text(encoding="utf-8")
HEX_BLOCK = re.compile(
    r"<!-- example: ([a-z0-9_]+) -->\n```json\n.*?\n```\n.*?```text\n(.*?)\n```", re.DOTALL
)


@pytest.mark.parametrize("name", EXAMPLES)
def test_encoding_gives_the_golden_bytes(name: str) -> None:
    assert p.encode(EXAMPLES[name]) == golden_path(name).read_bytes()


@pytest.mark.parametrize("name", EXAMPLES)
def test_golden_bytes_decode_to_the_example(name: str) -> None:
    data = golden_path(name).read_bytes()
    message = EXAMPLES[name]
    decode = p.decode_client if type(message).TAG in p.CLIENT_MESSAGES else p.decode_server
    assert decode(data) == message


def test_no_stale_golden_files() -> None:
    assert {path.stem for path in GOLDEN_DIR.glob("*.msgpack")} == set(EXAMPLES)


def test_document_hex_matches_the_golden_files() -> None:
    shown = {name: bytes.fromhex(hex_text) for name, hex_text in HEX_BLOCK.findall(DOC)}
    assert set(shown) == set(EXAMPLES)
    for name, data in shown.items():
        assert data == golden_path(name).read_bytes(), name


def test_document_example_blocks_are_current() -> None:
    assert update_document(DOC) == DOC, "run python -m tests.protocol.make_golden"


def test_document_shows_every_example_once() -> None:
    shown = documented_examples(DOC)
    assert sorted(shown) == sorted(EXAMPLES)


def test_every_message_type_has_an_example() -> None:
    tags = {type(message).TAG for message in EXAMPLES.values()}
    assert tags == set(p.CLIENT_MESSAGES) | set(p.SERVER_MESSAGES)


def _section(tag: str) -> str:
    start = DOC.index(f"### `{tag}`\n")
    ends = [DOC.find(mark, start + 1) for mark in ("\n### ", "\n## ")]
    return DOC[start : min(end for end in ends if end != -1)]


@pytest.mark.parametrize("tag", sorted({*p.CLIENT_MESSAGES, *p.SERVER_MESSAGES}))
def test_document_lists_every_field_of_every_message(tag: str) -> None:
    cls = p.CLIENT_MESSAGES.get(tag) or p.SERVER_MESSAGES[tag]
    section = _section(tag)
    table = {row.split("|")[1].strip().strip("`") for row in section.splitlines()
             if row.startswith("| `")}
    assert table == {wire for _, wire, _, _ in struct_converter(cls).fields}


def test_document_lists_every_error_code() -> None:
    section = DOC[DOC.index("## 9. Error codes") : DOC.index("## 10. Flows")]
    listed = re.findall(r"^\| `([a-z_]+)` \|", section, re.MULTILINE)
    assert listed == [code.value for code in p.ErrorCode]


def test_document_lists_the_requests_an_egress_budget_refuses() -> None:
    """Section 4.11's list is the requests declared ``LISTS``."""
    block = re.search(r"<!-- listing-requests -->\n(.*?)\n<!-- /listing-requests -->", DOC,
                      re.DOTALL)
    assert block is not None
    listed = re.findall(r"`([a-z_]+)`", block.group(1))
    assert listed == [tag for tag, cls in p.CLIENT_MESSAGES.items() if cls.LISTS]


def test_document_phase_table_is_the_codes() -> None:
    section = DOC[DOC.index("## 5. Connection phases") : DOC.index("## 6. Client messages")]
    documented: dict[str, frozenset[str]] = {}
    for row in section.splitlines():
        if row.startswith("| `"):
            _, requests, phases, _ = row.split("|")
            accepted = frozenset(re.findall(r"connected|greeted|authenticated", phases))
            for tag in re.findall(r"`([a-z_]+)`", requests):
                documented[tag] = accepted
    assert documented == {cls.TAG: frozenset(phases) for cls, phases in p.ACCEPTED_IN.items()}


FLOW_LINE = re.compile(r"^    (?:\w+ +)?([CS]): (\{.*\})$", re.MULTILINE)


def test_every_complete_frame_in_the_flows_is_valid() -> None:
    """Flow lines without an ellipsis are real messages of their direction."""
    lines = FLOW_LINE.findall(DOC)
    checked = 0
    for direction, text in lines:
        if "…" in text:
            continue
        wire = json.loads(text)
        data = msgpack.packb(wire, use_bin_type=True)
        decode = p.decode_client if direction == "C" else p.decode_server
        version = wire.get("version")
        if wire.get("t") == "hello" and (type(version) is not int
                                         or version != p.PROTOCOL_VERSION):
            # refused, and the connection closed: by 1008, or by 4400 if it is not valid
            with pytest.raises(p.UnsupportedVersion if type(version) is int else p.BadHello):
                p.ServerSession().receive(data)
            continue
        message = decode(data)
        if direction == "S":  # what the server sends is canonical: same bytes as ours
            assert p.encode(message) == data, text
        checked += 1
    assert checked >= 50


def test_example_game_metadata_is_the_engines() -> None:
    assert engine.get_game("xodd").describe() == XODD_INFO
    assert engine.get_game("hexifact").describe() == HEXIFACT_INFO
    assert p.describe_games() == [game.describe() for game in engine.GAMES.values()]
    welcome = p.Welcome(
        id=1, version=1, server="s", games=tuple(p.describe_games()),
        limits=p.Limits(max_frame_bytes=16_384, rate_per_s=20, burst=40, max_open_seeks=3),
    )
    assert p.decode_server(p.encode(welcome)) == welcome


def test_example_moves_are_legal_and_canonical() -> None:
    state = engine.replay("xodd", {"size": 9}, [m.move for m in MOVES])
    assert state.moves == tuple(m.move for m in MOVES)
    state = engine.new_game("xodd", size=9).play("Bc3")
    with pytest.raises(engine.IllegalMove, match="Wf6: the turn would end with 4 groups"):
        state.play("Be5,Wd4").play("Wf6")


def test_example_boards_positions_and_checks_are_the_engines() -> None:
    """The examples of get_board, get_position and check_move are what the engine says."""
    assert engine.get_game("yodd").board({"size": 2}).describe() == YODD_2_GEOMETRY
    cases = {"position": ("xodd", {"size": 9}, [m.move for m in MOVES]),
             "position_listed": ("hadron", {"size": 5}, ["c3", "a1"])}
    for name, (key, options, moves) in cases.items():
        example = EXAMPLES[name]
        assert isinstance(example, p.Position)
        state = engine.replay(key, options, moves)
        assert example.cells == "".join(".01"[v] for v in state.cells)
        assert (example.ply, example.to_move) == (state.ply, state.to_move)
        assert list(example.last_move_cells) == state.cells_of(moves[-1])
        assert example.summary == state.summary()
        listed = state.legal_moves_upto(p.MAX_LISTED_MOVES)
        assert example.legal_moves == (None if listed is None else tuple(map(str, listed)))
    state = engine.replay("xodd", {"size": 9}, [m.move for m in MOVES])
    asked = EXAMPLES["check_move"]
    assert isinstance(asked, p.CheckMove)
    assert EXAMPLES["move_check"] == p.MoveCheck(
        id=asked.id, game_id=asked.game_id, ply=asked.ply,
        move=str(state.parse_move(asked.move)), legal=True)
    illegal = EXAMPLES["move_check_illegal"]
    assert isinstance(illegal, p.MoveCheck)
    with pytest.raises(engine.IllegalMove) as refused:
        state.parse_move(illegal.move)
    assert illegal.reason == str(refused.value)
