"""Regenerate the protocol golden files and the example blocks of docs/PROTOCOL.md.

    python -m tests.protocol.make_golden

Writes ``tests/protocol/golden/<name>.msgpack`` for every example in
:mod:`tests.protocol.examples` (removing files of examples that no longer exist) and
rewrites each ``<!-- example: name -->`` ... ``<!-- /example -->`` block of the document
with the example's JSON view and hex bytes. Review the diff before committing: a changed
byte is a protocol change.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from protocol import Message, encode
from tests.protocol.examples import EXAMPLES

ROOT = Path(__file__).resolve().parents[2]
GOLDEN_DIR = Path(__file__).resolve().parent / "golden"
DOCUMENT = ROOT / "docs" / "PROTOCOL.md"
BLOCK = re.compile(r"<!-- example: ([a-z0-9_]+) -->\n.*?<!-- /example -->", re.DOTALL)


def golden_path(name: str) -> Path:
    return GOLDEN_DIR / f"{name}.msgpack"


def json_view(message: Message) -> str:
    """The message as JSON, keys in wire order; what fits in a line stays on one line."""
    return _pretty(message.to_wire(), 0)


def _pretty(value: object, indent: int, column: int = 0, width: int = 100) -> str:
    """JSON for ``value`` starting at ``column``; nested lines are indented by ``indent``."""
    line = json.dumps(value, ensure_ascii=False)
    if column + len(line) <= width or not isinstance(value, dict | list) or not value:
        return line
    pad = " " * (indent + 2)
    if isinstance(value, dict):
        items = []
        for k, v in value.items():
            key = f"{pad}{json.dumps(k)}: "
            items.append(key + _pretty(v, indent + 2, len(key), width))
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [pad + _pretty(v, indent + 2, len(pad), width) for v in value]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


def hex_view(data: bytes) -> str:
    return "\n".join(data[i : i + 16].hex(" ") for i in range(0, len(data), 16))


def example_block(name: str) -> str:
    """The generated document block for one example (markers included)."""
    data = encode(EXAMPLES[name])
    return (
        f"<!-- example: {name} -->\n"
        f"```json\n{json_view(EXAMPLES[name])}\n```\n"
        f"`golden/{name}.msgpack`, {len(data)} bytes:\n"
        f"```text\n{hex_view(data)}\n```\n"
        "<!-- /example -->"
    )


def documented_examples(text: str) -> list[str]:
    return BLOCK.findall(text)


def update_document(text: str) -> str:
    """``text`` with every example block regenerated; KeyError for an unknown name."""
    return BLOCK.sub(lambda match: example_block(match.group(1)), text)


def main() -> int:
    GOLDEN_DIR.mkdir(exist_ok=True)
    for stale in GOLDEN_DIR.glob("*.msgpack"):
        if stale.stem not in EXAMPLES:
            stale.unlink()
            print(f"removed {stale.name}")
    for name, message in EXAMPLES.items():
        path = golden_path(name)
        data = encode(message)
        if not path.exists() or path.read_bytes() != data:
            path.write_bytes(data)
            print(f"wrote {path.name} ({len(data)} bytes)")
    text = DOCUMENT.read_text(encoding="utf-8")
    updated = update_document(text)
    if updated != text:
        DOCUMENT.write_text(updated, encoding="utf-8")
        print(f"updated the example blocks of {DOCUMENT.relative_to(ROOT)}")
    missing = sorted(set(EXAMPLES) - set(documented_examples(updated)))
    if missing:
        print(f"examples not shown in the document: {', '.join(missing)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
