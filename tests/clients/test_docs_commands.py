"""The docs give every command one way, the way it runs as written in the clone after
``make install``: ``.venv/bin/tessera ...`` and ``.venv/bin/python ...`` (issue 23: the docs
mixed ``tessera`` and ``.venv/bin/tessera``, and docs/BOTS.md's ``python examples/my_bot.py``
failed with ModuleNotFoundError)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")),
        *sorted((REPO / "examples").glob("*.py"))]
SUBCOMMANDS = ("serve|play|bot|bridge|admin|db|dump|replay|export|verify|arena|botcheck|bench|"
               "chaos|siege|ladder|ratings|cluster")
BARE_TESSERA = re.compile(rf"(?<![\w./-])tessera\s+(?:{SUBCOMMANDS})(?![\w-])")
BARE_PYTHON = re.compile(r"(?<![\w./-])python3?\s+(?:examples/my_bot\.py|-m (?:tests|engine|"
                         r"clients\.bots)\.)")


def test_every_documented_command_is_written_one_way() -> None:
    found = [f"{path.relative_to(REPO)}:{text[:m.start()].count(chr(10)) + 1}: {m[0]!r}"
             for path in DOCS for text in [path.read_text()]
             for pattern in (BARE_TESSERA, BARE_PYTHON) for m in pattern.finditer(text)]
    assert found == []


def test_the_example_bot_runs_as_documented_from_another_directory(tmp_path: Path) -> None:
    """docs/BOTS.md runs ``.venv/bin/python examples/my_bot.py``: the interpreter of the
    clone's virtualenv (here: this one) finds the packages wherever it is started."""
    command = re.search(r"\.venv/bin/python (examples/my_bot\.py)",
                        (REPO / "docs" / "BOTS.md").read_text())
    assert command is not None
    done = subprocess.run([sys.executable, str(REPO / command[1]), "--help"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "--server ADDRESS" in done.stdout
