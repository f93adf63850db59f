"""Field schemas: the annotations of a message class are its wire schema.

Every message and value is a frozen dataclass deriving from :class:`Struct`. Its field
annotations say what the field holds, with bounds attached through ``Annotated``::

    RequestId = Annotated[int, Ints(0, MAX_INT32)]
    ChatText = Annotated[str, Text(1, MAX_CHAT_CHARS)]

From them this module compiles, once per class, a converter that

- *checks* a Python value when a message is built (and normalises sequences to tuples),
- *loads* a decoded msgpack value, strictly: exact types, bounds, no unknown keys,
- *dumps* a value to plain msgpack data in a fixed order: the tag key (``"t"`` or
  ``"kind"``) first, then the fields in declared order, None fields left out, free-form
  maps with their keys sorted.

Every failure is an :class:`~protocol.errors.InvalidMessage` naming the field path
(``seek.clock.base_ms: expected int 1000..86400000, got int 5``). A field whose Python name
ends in ``_`` (``from_``) has the wire name without it (``from``).

Speed matters here: every frame a server reads or writes goes through these converters. So
a struct's field paths are formatted once, when its converter is compiled; containers check
their items without formatting a path per item and only redo the work with paths once an
item fails, to say where; a value just loaded from a frame is already checked, so it is
built without being checked again (its ``_check`` rules still run); and fields whose wire
form is the value itself (ints, strings, literals) are dumped without a call.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import math
import re
import types
import typing
from typing import Annotated, Any, ClassVar, Literal, Self, Union, cast

from protocol.errors import InvalidMessage
from protocol.limits import MAX_DEPTH


@dataclasses.dataclass(frozen=True, slots=True)
class Ints:
    """An int bound: ``lo <= value <= hi`` (bools are not ints on the wire)."""

    lo: int
    hi: int


@dataclasses.dataclass(frozen=True, slots=True)
class Floats:
    """A float bound: finite, ``lo <= value <= hi``; an int is taken as a float (msgpack
    writers may shorten 1500.0 to 1500), a bool is not."""

    lo: float
    hi: float


@dataclasses.dataclass(frozen=True, slots=True)
class Text:
    """A str bound: length in characters, optional full-match pattern, printable only."""

    min_len: int
    max_len: int
    pattern: str | None = None
    printable: bool = True


@dataclasses.dataclass(frozen=True, slots=True)
class Items:
    """A bound on the number of items of an array (tuple) or map (dict)."""

    min_len: int
    max_len: int


@dataclasses.dataclass(frozen=True, slots=True)
class Free:
    """Any plain msgpack value (nil, bool, int, float, str, array, map with str keys)."""


class Struct:
    """Base of every message and value class; validates the instance when it is built.

    ``TAG_KEY``/``TAG`` name the discriminating key and its value (``"t"``/``"move"``
    for messages, ``"kind"``/``"fischer"`` for clocks); untagged values leave them empty.
    """

    __slots__ = ()
    TAG_KEY: ClassVar[str] = ""
    TAG: ClassVar[str] = ""

    def __post_init__(self) -> None:
        struct_converter(type(self)).validate(self)
        self._check()

    def _check(self) -> None:
        """Cross-field rules beyond the annotations; may normalise fields."""

    @classmethod
    def trusted(cls, **fields: Any) -> Self:
        """An instance of values its builder made itself and vouches for (the server's own
        events on the path of every move): no check runs, ``_check`` included, so it is
        only for classes without one. Every required field must be given."""
        built: Self = struct_converter(cls).trusted(fields)
        return built

    def to_wire(self) -> dict[str, Any]:
        """This value as plain msgpack data in canonical key order."""
        wire: dict[str, Any] = struct_converter(type(self)).dump(self)
        return wire


def set_field(obj: Struct, name: str, value: object) -> None:
    """Replace a field of a frozen instance while it is being built (normalisation)."""
    object.__setattr__(obj, name, value)


# Converters --------------------------------------------------------------------------------


_WIRE_TYPE_NAMES = {
    type(None): "nil",
    bool: "bool",
    int: "int",
    float: "float",
    str: "str",
    bytes: "bin",
    list: "array",
    tuple: "array",
    dict: "map",
}


def show(value: object) -> str:
    """A short, printable description of a value for an error message."""
    if value is None:
        return "nil"
    name = _WIRE_TYPE_NAMES.get(type(value))
    if name is None:
        name = "bool" if isinstance(value, bool) else type(value).__name__
        if type(value).__module__.startswith("msgpack"):
            name = "ext"
    if isinstance(value, bool | int | float | str):
        text = repr(value)
        if len(text) > 40:
            text = text[:37] + "..."
        return f"{name} {text}"
    return name


def fail(path: str, expected: str, value: object) -> typing.NoReturn:
    raise InvalidMessage(f"{path}: expected {expected}, got {show(value)}")


def check_utf8(value: str, path: str) -> None:
    """Reject lone surrogates: they cannot be encoded (decoded strings never have them)."""
    if value.isascii():
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidMessage(f"{path}: text is not valid Unicode (lone surrogate)") from None


class Converter:
    """Checks, loads and dumps values of one annotated type.

    ``plain`` says that ``dump`` returns its argument unchanged, so callers may skip it.
    """

    expected: str = "value"
    plain: bool = True

    def check(self, value: object, path: str) -> Any:
        """Validate a Python-side value; return it, normalised."""
        return self.load(value, path)

    def load(self, value: object, path: str) -> Any:
        """Validate a decoded msgpack value; return the Python-side value."""
        raise NotImplementedError

    def dump(self, value: Any) -> Any:
        """The plain msgpack data for a valid Python-side value."""
        return value


class IntConverter(Converter):
    def __init__(self, bound: Ints) -> None:
        self.bound = bound
        self.lo, self.hi = bound.lo, bound.hi
        self.expected = f"int {bound.lo}..{bound.hi}"

    def load(self, value: object, path: str) -> int:
        if type(value) is int and self.lo <= value <= self.hi:
            return value
        if isinstance(value, bool) or not isinstance(value, int):
            fail(path, self.expected, value)
        if not self.lo <= value <= self.hi:
            fail(path, self.expected, value)
        return int(value)

    check = load


class FloatConverter(Converter):
    def __init__(self, bound: Floats) -> None:
        self.lo, self.hi = bound.lo, bound.hi
        self.expected = f"float {bound.lo:g}..{bound.hi:g}"

    def load(self, value: object, path: str) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            fail(path, self.expected, value)
        if not (math.isfinite(value) and self.lo <= value <= self.hi):
            fail(path, self.expected, value)
        return float(value)

    check = load


class StrConverter(Converter):
    def __init__(self, bound: Text) -> None:
        self.bound = bound
        self.regex = re.compile(bound.pattern) if bound.pattern else None
        lengths = (
            f"{bound.min_len}..{bound.max_len}"
            if bound.min_len != bound.max_len
            else str(bound.min_len)
        )
        self.expected = f"str of {lengths} chars"
        if bound.pattern:
            self.expected += f" matching {bound.pattern}"
        elif bound.printable:
            self.expected += " (printable)"

    def load(self, value: object, path: str) -> str:
        if not isinstance(value, str):
            fail(path, self.expected, value)
        bound = self.bound
        if not bound.min_len <= len(value) <= bound.max_len:
            raise InvalidMessage(f"{path}: expected {self.expected}, got {len(value)} chars")
        if self.regex is not None and not self.regex.fullmatch(value):
            fail(path, self.expected, value)
        if bound.printable and not value.isprintable():
            raise InvalidMessage(f"{path}: expected printable text, got control characters")
        check_utf8(value, path)
        return value

    check = load


class LiteralConverter(Converter):
    def __init__(self, values: tuple[object, ...]) -> None:
        self.values = values
        self.expected = " or ".join(repr(v) for v in values)

    def load(self, value: object, path: str) -> Any:
        for allowed in self.values:
            same_kind = isinstance(value, type(allowed)) and not (
                isinstance(value, bool) and not isinstance(allowed, bool)
            )
            if same_kind and value == allowed:
                return allowed
        fail(path, self.expected, value)

    check = load


class OptionalConverter(Converter):
    """``X | None``: nil (or an absent key, handled by the struct) means None."""

    def __init__(self, inner: Converter) -> None:
        self.inner = inner
        self.expected = f"{inner.expected} or nil"
        self.plain = inner.plain

    def check(self, value: object, path: str) -> Any:
        return None if value is None else self.inner.check(value, path)

    def load(self, value: object, path: str) -> Any:
        return None if value is None else self.inner.load(value, path)

    def dump(self, value: Any) -> Any:
        return None if value is None else self.inner.dump(value)


class ScalarUnionConverter(Converter):
    """A union of scalar types (``int | str``): the first member that accepts wins."""

    def __init__(self, members: list[Converter]) -> None:
        self.members = members
        self.expected = " or ".join(m.expected for m in members)

    def load(self, value: object, path: str) -> Any:
        for member in self.members:
            try:
                return member.load(value, path)
            except InvalidMessage:
                continue
        fail(path, self.expected, value)


class TupleConverter(Converter):
    """``tuple[X, ...]`` or ``Sequence[X]`` with an :class:`Items` bound: a tuple in
    Python (lists are converted when a message is built), an array on the wire."""

    plain = False

    def __init__(self, item: Converter, bound: Items) -> None:
        self.item = item
        self.bound = bound
        self.expected = f"array of {bound.min_len}..{bound.max_len} items"

    def _items(self, value: object, path: str, kinds: tuple[type, ...]) -> list[object]:
        if not isinstance(value, kinds):
            fail(path, self.expected, value)
        items: list[object] = list(value)  # type: ignore[call-overload]
        if not self.bound.min_len <= len(items) <= self.bound.max_len:
            raise InvalidMessage(f"{path}: expected {self.expected}, got {len(items)} items")
        return items

    def check(self, value: object, path: str) -> tuple[Any, ...]:
        items = self._items(value, path, (list, tuple))
        check = self.item.check
        try:
            return tuple([check(v, path) for v in items])
        except InvalidMessage:  # again, with each item's path, to say which one
            return tuple(check(v, f"{path}[{i}]") for i, v in enumerate(items))

    def load(self, value: object, path: str) -> tuple[Any, ...]:
        items = self._items(value, path, (list,))
        load = self.item.load
        try:
            return tuple([load(v, path) for v in items])
        except InvalidMessage:  # again, with each item's path, to say which one
            return tuple(load(v, f"{path}[{i}]") for i, v in enumerate(items))

    def dump(self, value: Any) -> list[Any]:
        if self.item.plain:
            return list(value)
        return [self.item.dump(v) for v in value]


class FixedTupleConverter(Converter):
    """``tuple[X, Y]``: an array of exactly that many items."""

    plain = False

    def __init__(self, items: list[Converter]) -> None:
        self.items = items
        self.expected = f"array of {len(items)} items"
        self.all_plain = all(conv.plain for conv in items)

    def _convert(self, value: object, path: str, load: bool) -> tuple[Any, ...]:
        kinds: tuple[type, ...] = (list,) if load else (list, tuple)
        if not isinstance(value, kinds):
            fail(path, self.expected, value)
        value = cast(list[object], value)
        if len(value) != len(self.items):
            fail(path, self.expected, value)
        try:
            out = []
            for conv, v in zip(self.items, value, strict=True):
                out.append(conv.load(v, path) if load else conv.check(v, path))
            return tuple(out)
        except InvalidMessage:  # again, with each item's path, to say which one
            return tuple(
                (conv.load if load else conv.check)(v, f"{path}[{i}]")
                for i, (conv, v) in enumerate(zip(self.items, value, strict=True))
            )

    def check(self, value: object, path: str) -> tuple[Any, ...]:
        return self._convert(value, path, load=False)

    def load(self, value: object, path: str) -> tuple[Any, ...]:
        return self._convert(value, path, load=True)

    def dump(self, value: Any) -> list[Any]:
        if self.all_plain:
            return list(value)
        return [conv.dump(v) for conv, v in zip(self.items, value, strict=True)]


class DictConverter(Converter):
    """``dict[str, X]`` or ``Mapping[str, X]`` with an :class:`Items` bound: a dict in
    Python (any mapping is copied into one when a message is built), keys sorted on the
    wire."""

    plain = False

    def __init__(self, key: Converter, item: Converter, bound: Items) -> None:
        self.key = key
        self.item = item
        self.bound = bound
        self.expected = f"map of {bound.min_len}..{bound.max_len} entries"

    def _convert(self, value: object, path: str, load: bool) -> dict[str, Any]:
        if not isinstance(value, dict if load else collections.abc.Mapping):
            fail(path, self.expected, value)
        if not self.bound.min_len <= len(value) <= self.bound.max_len:
            raise InvalidMessage(f"{path}: expected {self.expected}, got {len(value)} entries")
        result: dict[str, Any] = {}
        for k, v in value.items():
            key = self.key.load(k, f"{path} key")
            convert = self.item.load if load else self.item.check
            result[key] = convert(v, f"{path}.{key}")
        return result

    def check(self, value: object, path: str) -> dict[str, Any]:
        return self._convert(value, path, load=False)

    def load(self, value: object, path: str) -> dict[str, Any]:
        return self._convert(value, path, load=True)

    def dump(self, value: Any) -> dict[str, Any]:
        if self.item.plain:
            return {k: value[k] for k in sorted(value)}
        return {k: self.item.dump(value[k]) for k in sorted(value)}


class FreeConverter(Converter):
    """Any plain value, nested at most ``MAX_DEPTH`` deep; tuples become lists."""

    expected = "plain msgpack value"
    plain = False

    def load(self, value: object, path: str, depth: int = 0) -> Any:
        if value is None or isinstance(value, bool | int | float | str):
            if isinstance(value, int) and not -(2**63) <= value < 2**64:
                fail(path, "int in 64 bits", value)
            if isinstance(value, str):
                check_utf8(value, path)
            return value
        if depth >= MAX_DEPTH:
            raise InvalidMessage(f"{path}: nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, list | tuple):
            return [self.load(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value)]
        if isinstance(value, dict):
            result: dict[str, Any] = {}
            for k, v in value.items():
                if not isinstance(k, str):
                    fail(f"{path} key", "str", k)
                check_utf8(k, f"{path} key")
                result[k] = self.load(v, f"{path}.{k}", depth + 1)
            return result
        fail(path, self.expected, value)

    def dump(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: self.dump(value[k]) for k in sorted(value)}
        if isinstance(value, list | tuple):
            return [self.dump(v) for v in value]
        return value


class StructConverter(Converter):
    """A :class:`Struct` class: a msgpack map with exactly the declared keys."""

    plain = False

    def __init__(self, cls: type[Struct]) -> None:
        self.cls = cls
        self.name = cls.TAG or cls.__name__.lower()
        self.expected = "map"
        self.fields: list[tuple[str, str, Converter, bool]] = []
        self.defaults: list[tuple[str, Any, bool]] = []  # (name, default, is a factory)
        hints = typing.get_type_hints(cls, include_extras=True)
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            required = (
                f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            )
            self.fields.append((f.name, f.name.rstrip("_"), compile_type(hints[f.name]), required))
            if f.default is not dataclasses.MISSING:
                self.defaults.append((f.name, f.default, False))
            elif f.default_factory is not dataclasses.MISSING:
                self.defaults.append((f.name, f.default_factory, True))
        self.keys = {wire for _, wire, _, _ in self.fields} | ({cls.TAG_KEY} - {""})
        # The paths of the fields of a top-level value, formatted once.
        self.paths = [f"{self.name}.{wire}" for _, wire, _, _ in self.fields]
        self.checks = [(name, path, conv.check)
                       for (name, _, conv, _), path in zip(self.fields, self.paths, strict=True)]
        self.dumps = [(name, wire, None if conv.plain else conv.dump)
                      for name, wire, conv, _ in self.fields]
        self.default_of = {name: (default, is_factory)
                           for name, default, is_factory in self.defaults}

    def validate(self, obj: Struct) -> None:
        for name, path, check in self.checks:
            value = getattr(obj, name)
            checked = check(value, path)
            if checked is not value:
                set_field(obj, name, checked)

    def check(self, value: object, path: str) -> Any:
        if not isinstance(value, self.cls):
            fail(path, self.cls.__name__, value)
        return value

    def load(self, value: object, path: str) -> Any:
        if not isinstance(value, dict):
            fail(path, self.expected, value)
        cls = self.cls
        if cls.TAG_KEY and value.get(cls.TAG_KEY) != cls.TAG:
            fail(f"{path}.{cls.TAG_KEY}", repr(cls.TAG), value.get(cls.TAG_KEY))
        keys = self.keys
        for key in value:
            if key not in keys:
                raise InvalidMessage(f"{path}: unknown field {show(key)}")
        paths = self.paths if path == self.name else [
            f"{path}.{wire}" for _, wire, _, _ in self.fields]
        loaded: list[tuple[str, Any]] = []
        for (name, wire, conv, required), field_path in zip(self.fields, paths, strict=True):
            if wire in value:
                field_value = value[wire]
                if field_value is not None or required:
                    loaded.append((name, conv.load(field_value, field_path)))
                # nil for an optional field means the same as leaving it out
            elif required:
                raise InvalidMessage(f"{path}: missing field {wire!r}")
        return self._build_loaded(loaded)

    def _build_loaded(self, loaded: list[tuple[str, Any]]) -> Struct:
        """An instance of values that ``load`` has just checked: the annotations' checks
        are not run again (their results would be the same); ``_check`` runs as usual."""
        obj = object.__new__(self.cls)
        for name, default, is_factory in self.defaults:
            object.__setattr__(obj, name, default() if is_factory else default)
        for name, field_value in loaded:
            object.__setattr__(obj, name, field_value)
        obj._check()
        return obj

    def _refuse_untrustable(self) -> None:
        if self.cls._check is not Struct._check:
            raise TypeError(f"{self.cls.__name__} has cross-field rules: build it checked")

    def trusted(self, fields: dict[str, Any]) -> Any:
        """See :meth:`Struct.trusted`."""
        self._refuse_untrustable()
        obj = object.__new__(self.cls)
        for name, default, is_factory in self.defaults:
            object.__setattr__(obj, name, default() if is_factory else default)
        for name, field_value in fields.items():
            object.__setattr__(obj, name, field_value)
        return obj

    def trusted_wire(self, fields: dict[str, Any]) -> dict[str, Any]:
        """What ``self.trusted(fields).to_wire()`` gives, without building the instance."""
        self._refuse_untrustable()
        wire: dict[str, Any] = {}
        if self.cls.TAG_KEY:
            wire[self.cls.TAG_KEY] = self.cls.TAG
        used = 0
        for name, key, dump in self.dumps:
            if name in fields:
                field_value = fields[name]
                used += 1
            else:
                if name not in self.default_of:
                    raise TypeError(f"{self.name}: missing field {name!r}")
                default, is_factory = self.default_of[name]
                field_value = default() if is_factory else default
            if field_value is not None:
                wire[key] = field_value if dump is None else dump(field_value)
        if used != len(fields):
            unknown = sorted(set(fields) - {name for name, _, _ in self.dumps})
            raise TypeError(f"{self.name}: unknown fields {unknown}")
        return wire

    def dump(self, value: Any) -> dict[str, Any]:
        wire: dict[str, Any] = {}
        if self.cls.TAG_KEY:
            wire[self.cls.TAG_KEY] = self.cls.TAG
        for name, key, dump in self.dumps:
            field_value = getattr(value, name)
            if field_value is not None:
                wire[key] = field_value if dump is None else dump(field_value)
        return wire


class TaggedUnionConverter(Converter):
    """A union of tagged :class:`Struct` classes, told apart by their tag key."""

    plain = False

    def __init__(self, classes: tuple[type[Struct], ...]) -> None:
        self.classes = classes
        keys = {cls.TAG_KEY for cls in classes}
        if len(keys) != 1 or "" in keys:
            raise TypeError(f"classes of a union need one common tag key: {classes}")
        self.tag_key = keys.pop()
        self.by_tag = {cls.TAG: cls for cls in classes}
        self.expected = f"map with {self.tag_key!r} one of " + ", ".join(
            repr(t) for t in self.by_tag
        )

    def check(self, value: object, path: str) -> Any:
        if not isinstance(value, self.classes):
            fail(path, " or ".join(cls.__name__ for cls in self.classes), value)
        return value

    def load(self, value: object, path: str) -> Any:
        if not isinstance(value, dict):
            fail(path, "map", value)
        tag = value.get(self.tag_key)
        cls = self.by_tag.get(tag) if isinstance(tag, str) else None
        if cls is None:
            fail(f"{path}.{self.tag_key}", " or ".join(repr(t) for t in self.by_tag), tag)
        return struct_converter(cls).load(value, path)

    def dump(self, value: Any) -> Any:
        return struct_converter(type(value)).dump(value)


class LazyStructConverter(Converter):
    """Defers compiling a nested struct until first use (classes may refer ahead)."""

    plain = False

    def __init__(self, cls: type[Struct]) -> None:
        self.cls = cls
        self.expected = "map"

    def check(self, value: object, path: str) -> Any:
        return struct_converter(self.cls).check(value, path)

    def load(self, value: object, path: str) -> Any:
        return struct_converter(self.cls).load(value, path)

    def dump(self, value: Any) -> Any:
        return struct_converter(self.cls).dump(value)


# Compiling annotations ----------------------------------------------------------------------


_STRUCTS: dict[type, StructConverter] = {}
_UNIONS: dict[tuple[type, ...], TaggedUnionConverter] = {}


def struct_converter(cls: type[Struct]) -> StructConverter:
    conv = _STRUCTS.get(cls)
    if conv is None:
        conv = _STRUCTS[cls] = StructConverter(cls)
    return conv


def union_converter(classes: tuple[type[Struct], ...]) -> TaggedUnionConverter:
    conv = _UNIONS.get(classes)
    if conv is None:
        conv = _UNIONS[classes] = TaggedUnionConverter(classes)
    return conv


def _is_struct(tp: object) -> bool:
    return isinstance(tp, type) and issubclass(tp, Struct)


def compile_type(tp: Any) -> Converter:
    """The converter for one field annotation; TypeError for an unsupported one."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is Annotated:
        return _compile_annotated(args[0], args[1:])
    if origin is Literal:
        return LiteralConverter(args)
    if origin in (Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        if len(members) < len(args):
            rest = members[0] if len(members) == 1 else Union[tuple(members)]  # noqa: UP007
            return OptionalConverter(compile_type(rest))
        if all(_is_struct(m) for m in members):
            return union_converter(tuple(members))
        return ScalarUnionConverter([compile_type(m) for m in members])
    if origin is tuple and args and args[-1] is not Ellipsis:
        return FixedTupleConverter([compile_type(a) for a in args])
    if _is_struct(tp):
        return LazyStructConverter(tp)
    raise TypeError(f"unsupported field annotation (bounds missing?): {tp!r}")


def _compile_annotated(base: Any, metadata: tuple[Any, ...]) -> Converter:
    for meta in metadata:
        if isinstance(meta, Ints) and base is int:
            return IntConverter(meta)
        if isinstance(meta, Floats) and base is float:
            return FloatConverter(meta)
        if isinstance(meta, Text) and base is str:
            return StrConverter(meta)
        if isinstance(meta, Free):
            return FreeConverter()
        if isinstance(meta, Items):
            origin, args = typing.get_origin(base), typing.get_args(base)
            if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
                return TupleConverter(compile_type(args[0]), meta)
            if origin is collections.abc.Sequence:
                return TupleConverter(compile_type(args[0]), meta)
            if origin in (dict, collections.abc.Mapping):
                return DictConverter(compile_type(args[0]), compile_type(args[1]), meta)
    raise TypeError(f"unsupported annotation: {base!r} with {metadata!r}")
