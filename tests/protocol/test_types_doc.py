"""docs/PROTOCOL.md section 2 lists every field that is not an int, a str, or an array or
map of them (issue 23.16): the list is checked here against the message declarations, the
free maps' contents against the engine, and the bytes it quotes against the golden files."""

from __future__ import annotations

import collections.abc
import dataclasses
import random
import re
import types
import typing
from typing import Annotated, Any, Literal, Union

import engine
import protocol as p
from protocol._schema import Free, Struct
from tests.protocol.make_golden import DOCUMENT, golden_path

DOC = DOCUMENT.read_text(encoding="utf-8")
TABLE = re.search(r"<!-- typed-fields -->\n(.*?)<!-- /typed-fields -->", DOC, re.DOTALL)
Typed = set[tuple[str, str, str]]  # (message tag or value type, field, kind)


def _kinds(tp: Any, owner: str, field: str, out: Typed, seen: set[type]) -> None:
    origin = typing.get_origin(tp)
    if origin is Annotated:
        base, *meta = typing.get_args(tp)
        if any(isinstance(m, Free) for m in meta):
            out.add((owner, field, "free"))
        else:
            _kinds(base, owner, field, out, seen)
    elif origin in (Union, types.UnionType):
        for arg in typing.get_args(tp):
            _kinds(arg, owner, field, out, seen)
    elif origin is Literal:
        if any(isinstance(arg, bool) for arg in typing.get_args(tp)):
            out.add((owner, field, "bool"))
    elif origin in (tuple, list, dict, collections.abc.Sequence, collections.abc.Mapping):
        for arg in typing.get_args(tp):
            if arg is not Ellipsis:
                _kinds(arg, owner, field, out, seen)
    elif tp is float or tp is bool:
        out.add((owner, field, tp.__name__))
    elif isinstance(tp, type) and issubclass(tp, Struct):
        _walk(tp, out, seen)


def _walk(cls: type, out: Typed, seen: set[type]) -> None:
    if cls in seen:
        return
    seen.add(cls)
    owner = getattr(cls, "TAG", None) or cls.__name__
    hints = typing.get_type_hints(cls, include_extras=True)
    for f in dataclasses.fields(cls):
        _kinds(hints[f.name], owner, f.name.rstrip("_"), out, seen)


def declared() -> Typed:
    """Every bool, float and free-map field of every message and the values inside them."""
    out: Typed = set()
    seen: set[type] = set()
    for cls in [*p.CLIENT_MESSAGES.values(), *p.SERVER_MESSAGES.values()]:
        _walk(cls, out, seen)
    return out


def documented() -> tuple[Typed, dict[str, str]]:
    """The table's rows, one per (owner, field); and what it says each free map holds."""
    assert TABLE is not None, "the typed-fields table is missing"
    rows: Typed = set()
    free: dict[str, str] = {}
    for line in TABLE.group(1).splitlines()[2:]:
        where, fields, kind = (cell.strip() for cell in line.strip("|").split("|"))
        owners = [o.strip().strip("`") for o in where.split(",")]
        names = re.findall(r"`([a-z_]+)`", fields)
        if kind.startswith("free map"):
            kind_of_row, free[f"{owners[0]}.{names[0]}"] = "free", kind
        else:
            kind_of_row = kind
        rows.update((owner, name, kind_of_row) for owner in owners for name in names)
    return rows, free


def test_the_document_lists_exactly_the_declared_bool_float_and_free_fields() -> None:
    assert documented()[0] == declared()


def _scalars(value: Any, path: str, out: dict[str, set[str]]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _scalars(item, key, out)  # a value is named by the nearest key above it
    elif isinstance(value, list | tuple):
        for item in value:
            _scalars(item, path, out)
    else:
        out.setdefault(type(value).__name__, set()).add(path)


def _free_contents() -> dict[str, dict[str, set[str]]]:
    """The scalar types in each free map as the engine fills them: type -> the keys."""
    found: dict[str, dict[str, set[str]]] = {"board.geometry": {}, "welcome.games": {},
                                              "position.summary": {}}
    rng = random.Random(23)
    for key, game in engine.GAMES.items():
        _scalars(game.describe(), "", found["welcome.games"])
        state = engine.new_game(key)
        _scalars(game.board(dict(state.options)).describe(), "", found["board.geometry"])
        while True:
            _scalars(state.summary(), "", found["position.summary"])
            if state.is_over:
                break
            state = state.play(state.random_move(rng))
    return found


def test_the_free_maps_hold_what_the_document_says() -> None:
    free = documented()[1]
    found = _free_contents()
    assert set(free) == set(found)
    for where, kinds in found.items():
        if free[where].endswith("ints and strs only"):
            assert set(kinds) <= {"int", "str"}, (where, kinds)
        else:
            floats = set(re.findall(r"`([a-z_]+)`", free[where]))
            assert set(kinds) <= {"int", "str", "float"} and kinds["float"] == floats, kinds


def test_the_quoted_bytes_are_in_the_golden_examples() -> None:
    """A whole float is float 64 (1500.0 in game_over_rated), a bool is c2/c3."""
    quoted = {
        "game_over_rated": "ad 72 61 74 69 6e 67 5f 62 65 66 6f 72 65 cb 40 97 70 00 00 00 00 00",
        "move_check": "a5 6c 65 67 61 6c c3",
    }
    for name, hex_text in quoted.items():
        assert f"`{hex_text}`" in " ".join(DOC.split()), name
        assert bytes.fromhex(hex_text) in golden_path(name).read_bytes(), name
    assert "`1500.0` is `cb 40 97 70 00 00 00 00 00`" in DOC
