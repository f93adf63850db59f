"""Commands about a game: ``pass``, ``resign``, ``abort``, ``claim``, ``say``, ``board``,
``clock``, ``moves``, ``rules``, ``switch``, ``watch``, ``unwatch``. (A move is typed as
itself: ``PlayClient.move``.)"""

from __future__ import annotations

import math
import shutil
from typing import TYPE_CHECKING

import engine
import protocol as p
from clients import notation, render
from clients.connection import ServerError
from clients.offers import OfferError, find_game
from clients.play.commands import UsageError, command, wrap

if TYPE_CHECKING:
    from clients.play.client import PlayClient

MAX_SHOWN_MOVES = 120  # of each group of moves (one-cell, two-cell, ...)


@command("pass", "pass", "pass your turn (where the rules allow it)")
async def pass_(client: PlayClient, args: str) -> None:
    await client.move(notation.PASS)


@command("resign", "resign [GAME]", "resign the current game (asks first)")
async def resign(client: PlayClient, args: str) -> None:
    view = client.games.arg(args)
    opponent = view.players[1 - (view.me or 0)].name
    if not await client.confirm(f"Resign game {view.game_id} against {opponent}?"):
        client.say("Not resigned.")
        return
    await client.call(p.Resign, game_id=view.game_id)


@command("abort", "abort [GAME]", "cancel a game before both players have moved")
async def abort(client: PlayClient, args: str) -> None:
    await client.call(p.Abort, game_id=client.games.arg(args).game_id)


@command("claim", "claim [GAME]", "claim the win when your opponent has left")
async def claim(client: PlayClient, args: str) -> None:
    view = client.games.arg(args)
    try:
        await client.call(p.ClaimWin, game_id=view.game_id)
    except ServerError as exc:
        if exc.retry_after_ms is None:
            raise
        seconds = math.ceil(exc.retry_after_ms / 1000)
        client.say(f"Your opponent may still come back: you can claim game {view.game_id} "
                   f"in {seconds} s.")


@command("say", "say TEXT", "chat in the current game (its players)", "chat")
async def say(client: PlayClient, args: str) -> None:
    if not args:
        raise UsageError("usage: say TEXT")
    view = client.games.arg("", mine=False)
    if view.me is None:
        raise UsageError(f"Only the players of game {view.game_id} can chat in it; as a "
                         "spectator you read along.")
    await client.call(p.Chat, game_id=view.game_id, text=args)


@command("board", "board [GAME]", "show the board again", "show")
async def board(client: PlayClient, args: str) -> None:
    client.games.select(client.games.arg(args, mine=False))


@command("clock", "clock [GAME]", "both clocks now (also in the bottom toolbar)", "clocks")
async def clock(client: PlayClient, args: str) -> None:
    client.say(client.games.arg(args, mine=False).status_line())


@command("moves", "moves", "list the legal moves (from the engine)", "legal", "hint")
async def moves(client: PlayClient, args: str) -> None:
    view = client.games.arg(args, mine=False)
    width = min(shutil.get_terminal_size().columns, 100) - 1
    for line in render.moves_lines(view.state, width=width, per_group=MAX_SHOWN_MOVES):
        client.say(line)


@command("rules", "rules [GAME]", "the rules of a game in short (the current one's by default)")
async def rules(client: PlayClient, args: str) -> None:
    if args:
        try:
            key = find_game(args.split()[0])
        except OfferError as exc:
            raise UsageError(str(exc)) from None
    else:
        view = client.games.view()
        if view is None:
            raise UsageError(f"rules GAME: one of {', '.join(engine.GAMES)}")
        key = view.game
    for line in rules_lines(key):
        client.say(line)


def rules_lines(key: str) -> list[str]:
    """A game's rules in short, from the registry: summary, colours, options, move forms."""
    game = engine.get_game(key)
    lines = [f"{game.name} ({game.key}, rules version {game.rules_version})"]
    lines += wrap(game.summary_text, indent="  ", first="  ")
    lines.append(f"  {game.players[0]} moves first, {game.players[1]} second.")
    for o in game.options:
        allowed = (f"{o.minimum}..{o.maximum}" if o.kind == "int" else ", ".join(o.choices))
        lines += wrap(f"{o.name}={o.default} (default; {allowed}): {o.doc}", indent="    ",
                      first="  option ")
    forms = " or ".join(notation.examples(key))
    no_pass = "" if notation.has_pass(key) else f"; {game.name} has no pass"
    lines.append(f"  Moves look like {forms}{no_pass}. The full rules: docs/RULES.md.")
    return lines


@command("switch", "switch GAME", "make another open game the current one", "game")
async def switch(client: PlayClient, args: str) -> None:
    games = client.games
    if not args:
        for gid, v in games.views.items():
            mark = "*" if gid == games.current else " "
            turn = "your move" if v.my_turn else ("over" if v.over else "")
            client.say(f" {mark} {gid}  {v.title()}  {turn}".rstrip())
        return
    games.select(games.arg(args, mine=False))


@command("watch", "watch GAME", "watch a live game (with its chat so far)")
async def watch(client: PlayClient, args: str) -> None:
    if len(args.split()) != 1:
        raise UsageError("usage: watch GAME (find one with 'games')")
    games = client.games
    game_id = games.game_id(args.split()[0])
    reply = await client.call(p.Watch, game_id=game_id)
    assert isinstance(reply, p.GameState)
    games.current = game_id
    games.views.pop(game_id, None)
    games.take_snapshot(reply)
    if reply.game.seq > 1:  # the game's events so far, for the chat before we came
        await games.resume(game_id, 1)


@command("unwatch", "unwatch [GAME]", "stop watching a game")
async def unwatch(client: PlayClient, args: str) -> None:
    games = client.games
    view = games.arg(args, mine=False)
    await client.call(p.Unwatch, game_id=view.game_id)
    if view.me is None:
        games.views.pop(view.game_id, None)
        games.seqs.forget(view.game_id)
        if games.current == view.game_id:
            games.current = None
    client.say(f"Stopped watching {view.game_id}.")


@command("rematch", "rematch [decline] [GAME]",
         "offer (or accept) a rematch of your last finished game, colours swapped; "
         "'rematch decline' refuses or withdraws the offer")
async def rematch(client: PlayClient, args: str) -> None:
    words = args.split()
    decline = bool(words) and words[0].lower() in ("decline", "no")
    if decline:
        words = words[1:]
    game_id = client.games.game_id(words[0]) if words else client.games.last_over
    if game_id is None:
        raise UsageError("rematch which game? none of yours has ended here yet")
    if decline:
        await client.call(p.DeclineRematch, game_id=game_id)
        return
    await client.call(p.OfferRematch, game_id=game_id)  # accepts one already offered
