"""``tessera export`` writes a stored match as a record; ``tessera verify`` re-plays records.

    tessera export GAME_ID [--format text|json] [--server URL | --db URL] [-o FILE]
    tessera verify FILE...                      # text or JSON records, or dump output
    tessera verify --all [--db URL | --server URL]   # every stored game
    tessera verify GAME_ID... --server URL

Verification replays the moves through the engine and checks the stored result against
the rules (``clients.records.verify``). Exit status: 0 all good, 1 a mismatch or a record
that could not be read, 2 bad usage or an unreachable source.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from clients.address import SERVER_ENV, add_server_argument, chosen_server
from clients.fetch import FetchError, Source, fetch_record, fetch_records
from clients.records import (
    MatchRecord,
    RecordError,
    format_record,
    from_dict,
    match_record_from_wire,
    parse_record,
    to_json,
    verify,
)

FORMATS = ("text", "json")


def render_record(record: MatchRecord, fmt: str) -> str:
    """The record in ``fmt``: the text form, or indented JSON; both end with a newline."""
    if fmt == "json":
        return to_json(record, indent=2) + "\n"
    return format_record(record)


def _source_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    add_server_argument(group, "read from this server")
    group.add_argument("--db", default=None,
                       help="read this database directly, e.g. sqlite+aiosqlite:///tessera.db")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tessera export",
                                     description="write a stored match as a record")
    parser.add_argument("game_id")
    parser.add_argument("--format", choices=FORMATS, default="text")
    parser.add_argument("-o", "--output", help="write here instead of standard output")
    _source_args(parser)
    args = parser.parse_args(argv)
    source = Source(server=chosen_server(args.server), db=args.db)
    try:
        record = match_record_from_wire(fetch_record(source, args.game_id))
    except (FetchError, RecordError) as exc:
        print(f"tessera export: {exc}", file=sys.stderr)
        return 2
    text = render_record(record, args.format)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


# -- verify ------------------------------------------------------------------------------------
def _record_from_json(data: object) -> MatchRecord:
    """A JSON record: the record format (``format`` key) or a wire record (server dump)."""
    if isinstance(data, dict) and "format" not in data and "moves" in data:
        return match_record_from_wire(data)
    return from_dict(data)


def read_records(path: str) -> Iterator[tuple[str, MatchRecord | RecordError]]:
    """Each record in a file with its label; a bad record gives its RecordError instead.

    A file holds one text record, one JSON record, or JSON lines (``server dump`` output).
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        yield path, RecordError(f"cannot read: {exc}")
        return
    if not text.lstrip().startswith("{"):
        try:
            yield path, parse_record(text)
        except RecordError as exc:
            yield path, exc
        return
    try:
        documents = [(path, json.loads(text))]
    except json.JSONDecodeError:
        documents = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                documents.append((f"{path}:{number}", json.loads(line)))
            except json.JSONDecodeError as exc:
                yield f"{path}:{number}", RecordError(f"not JSON: {exc}")
    for label, data in documents:
        try:
            yield label, _record_from_json(data)
        except RecordError as exc:
            yield label, exc


def _describe(record: MatchRecord, label: str) -> str:
    ident = f" {record.game_id}" if record.game_id and record.game_id != label else ""
    return (f"{record.game}{ident}, {len(record.moves)} plies, "
            f"{record.result} {record.termination}")


def check(label: str, item: MatchRecord | RecordError) -> bool:
    """Print one line about one record; True if it verified."""
    if isinstance(item, RecordError):
        print(f"ERROR     {label}: {item}")
        return False
    report = verify(item)
    if report.ok:
        print(f"OK        {label} ({_describe(item, label)})")
        return True
    print(f"MISMATCH  {label} ({_describe(item, label)}): {'; '.join(report.problems)}")
    return False


def _from_source(source: Source, game_ids: Sequence[str],
                 all_games: bool) -> Iterator[tuple[str, MatchRecord | RecordError]]:
    for wire in fetch_records(source, game_ids, all_games):
        try:
            yield wire.game_id, match_record_from_wire(wire)
        except RecordError as exc:
            yield wire.game_id, exc


def verify_main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="tessera verify",
        description="re-play match records through the engine and check their results")
    parser.add_argument("items", nargs="*", metavar="FILE|GAME_ID",
                        help="record files; game ids with --db or --server")
    parser.add_argument("--all", action="store_true",
                        help=f"every stored game: of --db, or of --server (${SERVER_ENV} by "
                             "default)")
    _source_args(parser)
    args = parser.parse_args(argv)
    remote = args.all or args.db is not None or args.server is not None
    if not args.items and not args.all:
        parser.error("give record files, or game ids or --all with --db or --server")
    try:
        items = (_from_source(Source(server=chosen_server(args.server), db=args.db),
                              args.items, args.all) if remote
                 else (pair for path in args.items for pair in read_records(path)))
        results = [check(label, item) for label, item in items]
    except FetchError as exc:
        print(f"tessera verify: {exc}", file=sys.stderr)
        return 2
    bad = results.count(False)
    print(f"verified {len(results)} record{'s' if len(results) != 1 else ''}: "
          f"{len(results) - bad} ok, {bad} with problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
