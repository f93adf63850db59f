"""Hypothesis strategies for every message, derived from the same schema the codec uses.

``messages(cls)`` draws valid instances of a message class: each field's strategy comes
from its compiled converter (bounds, patterns, literals), so a new field is covered
without touching this file. Cross-field rules the annotations cannot express (moves
numbered from 0, result exactly when over, engine-checked options) are met by the few
overrides below.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

import engine
import protocol as p
from protocol import _schema as schema

PRINTABLE = st.characters(codec="utf-8", categories=("L", "M", "N", "P", "S", "Zs"))
PLAIN = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
"""Plain msgpack values (no floats: NaN != NaN would break equality)."""


def from_converter(conv: schema.Converter) -> st.SearchStrategy[Any]:
    """Values a converter accepts, Python side."""
    if isinstance(conv, schema.IntConverter):
        return st.integers(conv.bound.lo, conv.bound.hi)
    if isinstance(conv, schema.FloatConverter):
        return st.floats(conv.lo, conv.hi, allow_nan=False, allow_infinity=False)
    if isinstance(conv, schema.StrConverter):
        bound = conv.bound
        max_len = min(bound.max_len, 40)
        if bound.pattern:
            return st.from_regex(bound.pattern, fullmatch=True).filter(
                lambda s: bound.min_len <= len(s) <= bound.max_len
            )
        if bound.printable:
            return st.text(PRINTABLE, min_size=bound.min_len, max_size=max_len).filter(
                str.isprintable
            )
        return st.text(min_size=bound.min_len, max_size=max_len)
    if isinstance(conv, schema.LiteralConverter):
        return st.sampled_from(conv.values)
    if isinstance(conv, schema.OptionalConverter):
        return st.none() | from_converter(conv.inner)
    if isinstance(conv, schema.ScalarUnionConverter):
        return st.one_of([from_converter(m) for m in conv.members])
    if isinstance(conv, schema.TupleConverter):
        return st.lists(
            from_converter(conv.item),
            min_size=conv.bound.min_len,
            max_size=min(conv.bound.max_len, 3),
        ).map(tuple)
    if isinstance(conv, schema.FixedTupleConverter):
        return st.tuples(*(from_converter(c) for c in conv.items))
    if isinstance(conv, schema.DictConverter):
        return st.dictionaries(
            from_converter(conv.key),
            from_converter(conv.item),
            min_size=conv.bound.min_len,
            max_size=min(conv.bound.max_len, 3),
        )
    if isinstance(conv, schema.FreeConverter):
        return PLAIN
    if isinstance(conv, schema.LazyStructConverter | schema.StructConverter):
        return structs(conv.cls)
    if isinstance(conv, schema.TaggedUnionConverter):
        return st.one_of([structs(cls) for cls in conv.classes])
    raise TypeError(f"no strategy for {conv!r}")


@st.composite
def _game_and_options(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    key = draw(st.sampled_from(sorted(engine.GAMES)))
    options: dict[str, Any] = {}
    for option in engine.get_game(key).options:
        if draw(st.booleans()):
            continue
        if option.kind == "int":
            assert option.minimum is not None and option.maximum is not None
            options[option.name] = draw(st.integers(option.minimum, option.maximum))
        else:
            options[option.name] = draw(st.sampled_from(option.choices))
    return key, options


@st.composite
def _moves(draw: st.DrawFn) -> tuple[p.PlayedMove, ...]:
    count = draw(st.integers(0, 4))
    return tuple(
        draw(structs(p.PlayedMove, ply=st.just(i), by=st.just(i % 2))) for i in range(count)
    )


def structs(
    cls: type[schema.Struct], **overrides: st.SearchStrategy[Any]
) -> st.SearchStrategy[Any]:
    """Valid instances of a message or value class."""
    return _structs(cls, overrides)


@st.composite
def _structs(
    draw: st.DrawFn, cls: type[schema.Struct], overrides: dict[str, st.SearchStrategy[Any]]
) -> Any:
    if cls is p.Result:
        reason = draw(st.sampled_from(["normal", "resign", "timeout", "abandon", "abort"]))
        winner = None if reason == "abort" else draw(st.sampled_from([0, 1]))
        ending = draw(st.none() | structs(p.Ending)) if reason == "normal" else None
        return p.Result(winner=winner, reason=reason, ending=ending)  # type: ignore[arg-type]
    if cls is p.GameStarted:
        snapshot = draw(structs(p.Snapshot))
        return p.GameStarted(game_id=snapshot.game_id, seq=snapshot.seq, snapshot=snapshot)
    kwargs: dict[str, Any] = {}
    if cls in (p.Seek, p.Challenge, p.GetBoard):
        kwargs["game"], kwargs["options"] = draw(_game_and_options())
    if cls is p.MoveCheck:
        kwargs["legal"] = draw(st.booleans())
        reason = from_converter(_field(p.MoveCheck, "reason")).filter(lambda r: r is not None)
        kwargs["reason"] = None if kwargs["legal"] else draw(reason)
    if cls is p.Hello:
        kwargs["version"] = p.PROTOCOL_VERSION  # other versions are refused by design
    if cls is p.GameOver:
        result = draw(structs(p.Result))
        kwargs["winner"], kwargs["reason"] = result.winner, result.reason
        kwargs["ending"] = result.ending
    if cls is p.ListGames:
        kwargs["player"] = draw(st.none() | from_converter(_field(p.ListGames, "player")))
        if kwargs["player"] is None:
            kwargs["result"] = None
    if cls in (p.Snapshot, p.Record):
        kwargs["moves"] = draw(_moves())
    if cls is p.Snapshot:
        kwargs["ply"] = len(kwargs["moves"])
    if cls in (p.Snapshot, p.Summary, p.Record):
        kwargs["result"] = draw(st.none() | structs(p.Result))
        over = kwargs["result"] is not None
        kwargs["status"] = "over" if over else draw(st.sampled_from(["waiting", "playing"]))
    for name, _, field_conv, _ in schema.struct_converter(cls).fields:
        if name not in kwargs:
            strategy = overrides[name] if name in overrides else from_converter(field_conv)
            kwargs[name] = draw(strategy)
    return cls(**kwargs)


def _field(cls: type[schema.Struct], name: str) -> schema.Converter:
    for field_name, _, conv, _ in schema.struct_converter(cls).fields:
        if field_name == name:
            return conv
    raise KeyError(name)


def messages(cls: type[p.Message]) -> st.SearchStrategy[Any]:
    return structs(cls)


ALL_CLASSES = sorted(
    {*p.CLIENT_MESSAGES.values(), *p.SERVER_MESSAGES.values()}, key=lambda c: c.TAG
)
any_message = st.one_of([messages(cls) for cls in ALL_CLASSES])
