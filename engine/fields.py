"""Helpers for reading the key=value fields of position text."""

from __future__ import annotations

from .errors import BadPosition


def int_field(fields: dict[str, str], name: str, lo: int, hi: int) -> int:
    """Remove ``name`` from ``fields`` and return it as an int in [lo, hi]."""
    try:
        value = int(fields.pop(name))
    except (KeyError, ValueError):
        raise BadPosition(f"missing or malformed field {name}=") from None
    if not lo <= value <= hi:
        raise BadPosition(f"field {name}={value} is out of range {lo}..{hi}")
    return value
