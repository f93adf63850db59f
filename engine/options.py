"""Option schemas: each game declares its options once; values are checked against them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import BadOption


@dataclass(frozen=True, slots=True)
class Option:
    """One game option: an integer in [minimum, maximum] or one of ``choices``."""

    name: str
    kind: str  # "int" or "choice"
    default: int | str
    doc: str
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] = ()

    def check(self, value: Any) -> int | str:
        """Return ``value`` if it is allowed, else raise BadOption saying what is."""
        if self.kind == "int":
            if isinstance(value, str) and value.strip().lstrip("-").isdigit():
                value = int(value)
            if not isinstance(value, int) or isinstance(value, bool):
                raise BadOption(f"option {self.name} must be an integer, got {value!r}")
            assert self.minimum is not None and self.maximum is not None
            if not self.minimum <= value <= self.maximum:
                raise BadOption(
                    f"option {self.name}={value} is out of range "
                    f"(allowed {self.minimum}..{self.maximum})"
                )
            return value
        if not isinstance(value, str) or value not in self.choices:
            raise BadOption(
                f"option {self.name}={value!r} is not allowed "
                f"(allowed: {', '.join(self.choices)})"
            )
        return value

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "type": self.kind, "default": self.default,
                               "doc": self.doc}
        if self.kind == "int":
            out["min"] = self.minimum
            out["max"] = self.maximum
        else:
            out["choices"] = list(self.choices)
        return out


def normalize(schema: tuple[Option, ...], values: Mapping[str, Any]) -> dict[str, int | str]:
    """Fill defaults and check every value; unknown names raise BadOption."""
    known = {o.name: o for o in schema}
    unknown = sorted(set(values) - set(known))
    if unknown:
        allowed = ", ".join(known) or "none"
        raise BadOption(f"unknown option {unknown[0]!r} (allowed: {allowed})")
    return {o.name: o.check(values[o.name]) if o.name in values else o.default for o in schema}
