"""The ``tessera`` command itself: version, usage, and every command's help."""

from __future__ import annotations

import re
import subprocess

import pytest

from clients.cli import CLIENT_COMMANDS, SERVER_COMMANDS
from tests.clients.conftest import tessera_command


def tessera(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*tessera_command(), *args], capture_output=True, text=True,
                          timeout=60, check=False)


def test_version() -> None:
    done = tessera("--version")
    assert done.returncode == 0
    assert re.fullmatch(r"tessera \d+\.\d+\.\d+ \(protocol \d+\)\n", done.stdout), done.stdout


def test_no_command_prints_the_usage_and_fails() -> None:
    done = tessera()
    assert done.returncode == 2
    assert "usage: tessera COMMAND" in done.stderr
    for name in [*CLIENT_COMMANDS, *SERVER_COMMANDS]:
        assert f"  {name}" in done.stderr


@pytest.mark.parametrize("command", sorted(CLIENT_COMMANDS))
def test_every_client_command_has_plain_help(command: str) -> None:
    done = tessera(command, "--help")
    assert done.returncode == 0, done.stderr
    assert f"usage: tessera {command}" in done.stdout
    assert "``" not in done.stdout and ":func:" not in done.stdout  # no raw markup


def test_bridge_help_points_to_the_protocol() -> None:
    assert "docs/BRIDGE.md" in tessera("bridge", "--help").stdout


def test_serve_help_describes_every_option() -> None:
    text = tessera("serve", "--help").stdout
    options = text.split("options:", 1)[1]
    entries = re.split(r"\n  (?=-)", options)[1:]  # one per option, help lines included
    assert len(entries) >= 10
    for entry in entries:
        words = entry.split()
        described = [w for w in words if not w.startswith("-") and not w.isupper()
                     and not w.startswith("{")]
        assert len(described) >= 3, f"no help for {entry.strip()!r}"
    for choices in re.findall(r"\{([^}]*)\}", text):  # every choice is explained
        for choice in choices.split(","):
            assert text.count(choice) >= 3, f"{choice} is not described"
