"""``tessera ladder standings GAME [--server URL]``: the bot ladder's standings for a game.

Bots join the ladder with ``tessera bot ... --ladder hadron,xodd`` (or the SDK's
``Policy(ladder=...)``, or ``tessera bridge ... --ladder``); the server pairs them into
rated games in rounds (docs/RATINGS.md). This lists the bots on a game's ladder now, by
rating; a provisional rating is shown with ``?``. Exit status 2 if the server cannot be
reached.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

import protocol as p
from clients import render
from clients.address import add_server_argument, chosen_server
from clients.connection import Connection
from clients.offers import OfferError, find_game


async def standings(url: str, game: str) -> p.LeaderboardPage:
    async with await Connection.open(url, client="tessera-ladder") as conn:
        reply = await conn.call(p.GetStandings, game=game)
    assert isinstance(reply, p.LeaderboardPage)
    return reply


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tessera ladder",
                                     description="the bot ladder (docs/RATINGS.md)")
    sub = parser.add_subparsers(dest="command", required=True)
    show = sub.add_parser("standings", help="the bots on a game's ladder, by rating")
    show.add_argument("game")
    add_server_argument(show)
    args = parser.parse_args(argv)
    args.server = chosen_server(args.server)
    try:
        game = find_game(args.game)
    except OfferError as exc:
        parser.error(str(exc))
    try:
        page = asyncio.run(standings(args.server, game))
    except (OSError, TimeoutError) as exc:
        print(f"tessera ladder: cannot reach {args.server}: {exc}", file=sys.stderr)
        return 2
    print(f"{game} ladder: {len(page.standings)} bot(s)")
    for line in render.standings_lines(page.standings):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
