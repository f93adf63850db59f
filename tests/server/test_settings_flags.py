"""Every server setting is one :class:`Settings` field whose metadata names its ``tessera
serve`` flag and help: the parser, its defaults, ``--help`` and the mapping back to
:class:`Settings` are derived from the fields, so none can drift from them."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

import pytest

from server import config
from server.cli import build_parser
from server.cluster.workers import PER_WORKER, worker_argv
from server.config import Flag, Settings

URL = "sqlite+aiosqlite:///unused.db"


def serve_parser() -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = build_parser().parse_args(["serve"]).serve_parser
    return parser


def other_value(f: dataclasses.Field[Any], flag: Flag) -> Any:
    """A value of the field that is not its default (and that its flag accepts)."""
    default = None if f.default is dataclasses.MISSING else f.default
    if flag.kind == "switch":
        return True
    if f.name == "trusted_proxies":
        return ["127.0.0.1", "10.0.0.0/8"]
    if flag.kind == "repeat":
        return ["https://a.example", "https://b.example"]
    if flag.choices:
        return next(choice for choice in flag.choices if choice != default)
    if f.name == "house_bots":
        return ["random", "greedy"]
    if f.name == "db_url":
        return "sqlite+aiosqlite:///elsewhere.db"
    if isinstance(default, str):
        return "x" + default
    if default is None:  # a number, or text (a file's path) when the flag takes text
        return 1_000 if flag.parse is not None else "elsewhere.pem"
    return default - 1 if default >= 2 else default + 1


def test_every_setting_has_one_flag_of_its_own() -> None:
    names = [flag.name for _, flag in config.flags()]
    assert len(names) == len(dataclasses.fields(Settings)) == len(set(names))
    options = {option for action in serve_parser()._actions for option in action.option_strings}
    assert set(names) <= options


def test_the_parsers_defaults_are_the_fields_defaults() -> None:
    args = serve_parser().parse_args([])
    for f in dataclasses.fields(Settings):
        default = None if f.default is dataclasses.MISSING else f.default
        assert getattr(args, f.name) == default, f.name
    assert config.from_flags(args, db_url=URL) == Settings(db_url=URL)


def test_a_changed_default_shows_in_the_parser_and_its_help(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    fields = Settings.__dataclass_fields__
    monkeypatch.setattr(fields["max_seeks"], "default", 1234)
    monkeypatch.setattr(fields["grace_ms"], "default", 7_500)
    args = serve_parser().parse_args([])
    assert (args.max_seeks, args.grace_ms) == (1234, 7_500)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "open seeks in all (default: 1234)" in out
    assert "absent opponent (default: 7.5)" in out  # --grace shows seconds


def test_help_shows_each_fields_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--help"])
    out = "".join(capsys.readouterr().out.split())  # argparse wraps lines, even at hyphens
    for f, flag in config.flags():
        if flag.hidden:
            assert flag.name not in out
            continue
        default = None if f.default is dataclasses.MISSING else f.default
        text = flag.help
        if "%(default)s" in text:
            text = text.replace("%(default)s", flag.show(default))
        assert "".join(text.split()) in out, flag.name


def test_every_flag_sets_its_field() -> None:
    """Each field given a value other than its default, as its flag's text, reaches
    :class:`Settings`: the one mapping back misses none."""
    wanted = {f.name: other_value(f, flag) for f, flag in config.flags()}
    argv: list[str] = []
    for f, flag in config.flags():
        value = wanted[f.name]
        if flag.kind == "switch":
            argv.append(flag.name)
        elif flag.kind == "repeat":
            for item in value:
                argv += [flag.name, item]
        else:
            argv += [flag.name, flag.show(value)]
    settings = config.from_flags(serve_parser().parse_args(argv))
    for name, value in wanted.items():
        assert getattr(settings, name) == value, name


def test_a_workers_flags_make_the_supervisors_settings() -> None:
    parser = serve_parser()
    args = parser.parse_args(["--grace", "2.5", "--rate", "7", "--ping-interval", "0",
                              "--origin", "https://a.example", "--max-connections", "10",
                              "--lockout-max", "60", "--sqlite-synchronous", "NORMAL"])
    worker = parser.parse_args(worker_argv(args, parser))
    mine, theirs = config.from_flags(args, db_url=URL), config.from_flags(worker, db_url=URL)
    assert mine == theirs
    assert (mine.grace_ms, mine.conn_burst, mine.ping_interval) == (2_500, 14.0, None)
    assert {"port", "house_bots", "reuse_port"} <= PER_WORKER


def test_serve_clamps_the_longest_lock_and_takes_0_for_no_pings() -> None:
    args = serve_parser().parse_args(["--lockout-max", "5000", "--ping-timeout", "0"])
    settings = config.from_flags(args, db_url=URL)
    assert (settings.login_lockout_max_s, settings.ping_timeout) == (900.0, None)


@pytest.mark.parametrize("burst", ["0.5", "-1", "100001", "x"])
def test_serve_refuses_a_burst_the_welcome_cannot_announce(
        burst: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["serve", "--burst", burst])
    assert exc.value.code == 2
    assert "--burst" in capsys.readouterr().err


def test_a_burst_left_out_is_twice_the_rate() -> None:
    assert Settings(db_url=URL).conn_burst == 40.0
    assert Settings(db_url=URL, conn_rate=7).conn_burst == 14.0
    assert Settings(db_url=URL, conn_rate=7, conn_burst=3).conn_burst == 3.0


def test_the_cluster_flags_defaults_are_the_cluster_settings(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from server.cluster.config import ClusterSettings

    fields = ClusterSettings.__dataclass_fields__
    monkeypatch.setattr(fields["lease_ms"], "default", 1234)
    monkeypatch.setattr(fields["name"], "default", "elsewhere")
    args = serve_parser().parse_args([])
    assert (args.lease_ms, args.cluster_name) == (1234, "elsewhere")
