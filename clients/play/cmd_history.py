"""Commands about stored and current games on the server: ``games``, ``history``, ``more``,
``replay``; and ratings: ``leaderboard``, ``profile``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import protocol as p
from clients import render
from clients.fetch import get_record
from clients.offers import OfferError, find_game
from clients.play.commands import UsageError, command
from clients.records import RESULTS, match_record_from_wire, utc_date
from clients.replay import Replayer, run_viewer
from protocol.limits import PROVISIONAL_DEVIATION

if TYPE_CHECKING:
    from clients.play.client import PlayClient

HISTORY_PAGE = 15


@command("games", "games", "list the games being played on the server")
async def games(client: PlayClient, args: str) -> None:
    await list_games(client, p.ListGames(id=0, status="playing", limit=HISTORY_PAGE))


@command("history", "history [PLAYER]", "list finished games (yours by default)")
async def history(client: PlayClient, args: str) -> None:
    player = args.split()[0] if args.split() else client.my_name()
    if player is None:
        raise UsageError("usage: history PLAYER (or log in to see yours)")
    await list_games(client, p.ListGames(id=0, player=player, status="over",
                                         limit=HISTORY_PAGE))


@command("more", "more", "the next page of the last list ('games', 'history', 'seeks', "
         "'who')")
async def more(client: PlayClient, args: str) -> None:
    if client.next_page is None:
        raise UsageError("Nothing more to list.")
    await client.next_page()


async def list_games(client: PlayClient, query: p.ListGames, cursor: str | None = None
                     ) -> None:
    reply = await client.call(p.ListGames, player=query.player, status=query.status,
                              limit=query.limit, cursor=cursor)
    assert isinstance(reply, p.GameList)
    if not reply.games:
        client.say("No games.")
    client.games.listed.update(g.game_id for g in reply.games)
    for g in reply.games:
        result = f"{RESULTS[g.result.winner]} {g.result.reason}" if g.result else "playing"
        client.say(f"  {g.game_id:<12} {utc_date(g.created_ms)[:16].replace('T', ' ')}  "
                   f"{render.describe_offer(g.game, g.options, g.clock):<28} "
                   f"{g.players[0].name} vs {g.players[1].name}  {g.ply} plies  {result}")
    cursor = reply.next_cursor
    client.next_page = None if cursor is None else lambda: list_games(client, query, cursor)
    if cursor:
        client.say("  ... 'more' lists the next page")


@command("replay", "replay GAME", "step through a stored game (n, p, f, l, g N, a, q)")
async def replay(client: PlayClient, args: str) -> None:
    if len(args.split()) != 1:
        raise UsageError("usage: replay GAME (find one with 'history')")
    record = await get_record(client.link.live(), client.games.game_id(args.split()[0]))
    await run_viewer(Replayer(match_record_from_wire(record), color=client.color), client.term)
    client.say("(left the replay)")


@command("leaderboard", "leaderboard GAME [humans]",
         "the best established ratings of a game ('humans': without bots)", "top")
async def leaderboard(client: PlayClient, args: str) -> None:
    words = args.split()
    if not words:
        raise UsageError("usage: leaderboard GAME [humans]")
    try:
        game = find_game(words[0])
    except OfferError as exc:
        raise UsageError(str(exc)) from None
    humans = len(words) > 1 and words[1].lower() in ("humans", "nobots")
    reply = await client.call(p.GetLeaderboard, game=game, bots=False if humans else None)
    assert isinstance(reply, p.LeaderboardPage)
    if not reply.standings:
        client.say(f"No established {game} ratings yet. A rating is provisional (shown "
                   f"with ?) until its deviation is {PROVISIONAL_DEVIATION:g} or less, after "
                   "about 10 rated games against established players (more against new "
                   "ones); only established ratings are listed. 'profile NAME' shows "
                   "anyone's.")
    for line in render.standings_lines(reply.standings):
        client.say(line)


@command("profile", "profile [NAME]", "a player's ratings, record and rating history "
         "(yours by default)")
async def profile(client: PlayClient, args: str) -> None:
    name = args.split()[0] if args.split() else client.my_name()
    if name is None:
        raise UsageError("usage: profile NAME")
    reply = await client.call(p.GetProfile, name=name)
    assert isinstance(reply, p.ProfileInfo)
    for line in render.profile_lines(reply):
        client.say(line)
