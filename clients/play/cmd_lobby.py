"""Commands of the lobby: ``seeks``, ``who`` (a page at a time: ``more``), ``seek``,
``challenge``, ``bot`` (a bundled bot started here), ``accept``, ``decline``, ``cancel``,
``challenges`` (who may challenge you)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import engine
import protocol as p
from clients import render
from clients.bots import BOTS
from clients.local_bot import LocalBotError
from clients.offers import OfferError, parse_offer
from clients.play.client import CHALLENGE_POLICIES
from clients.play.commands import COMMANDS, UsageError, command, number_arg

if TYPE_CHECKING:
    from clients.offers import Offer
    from clients.play.client import PlayClient

BOT_THINK_S = 2.0  # a local bot's longest think per move, unless the player says think=S


def offer_of(words: Sequence[str], *, allow_color: bool = False) -> Offer:
    try:
        return parse_offer(words, allow_color=allow_color)
    except OfferError as exc:
        raise UsageError(str(exc)) from None


@command("seeks", "seeks", "list open seeks (the oldest first, a page at a time)")
async def seeks(client: PlayClient, args: str) -> None:
    lobby = await client.lobby.subscribe(quiet=True)
    if not lobby.seeks:
        client.say("No open seeks. Offer one: seek hadron size=5 5m+3s")
        return
    say_seeks(client, lobby.seeks)
    say_more(client, lobby)


@command("who", "who", "list the players and bots online (a page at a time)", "players")
async def who(client: PlayClient, args: str) -> None:
    lobby = await client.lobby.subscribe(quiet=True)
    say_players(client, lobby.players)
    say_more(client, lobby)


async def next_lobby_page(client: PlayClient) -> None:
    """'more' after 'seeks' or 'who': the lobby's next page of seeks and players."""
    page = await client.lobby.more()
    if page is None:
        client.next_page = None
        client.say("Nothing more to list.")
        return
    if page.seeks:
        say_seeks(client, page.seeks)
    if page.players:
        say_players(client, page.players)
    say_more(client, page)


def say_seeks(client: PlayClient, listed: Sequence[p.OpenSeek]) -> None:
    for s in listed:
        mine = " (yours)" if client.lobby.is_me(s.user) else ""
        client.say(f"  #{s.seek_id:<4} {render.user_label(s.user, s.game):<26} "
                   f"{render.describe_offer(s.game, s.options, s.clock)}"
                   f"{render.seek_terms(s)}{mine}")


def say_players(client: PlayClient, listed: Sequence[p.User]) -> None:
    groups: dict[str, list[str]] = {"human": [], "guest": [], "bot": []}
    for u in listed:
        you = " (you)" if client.lobby.is_me(u) else ""
        rated = f" [{render.ratings_text(u.ratings)}]" if u.ratings else ""
        groups.setdefault(u.kind, []).append(u.name + you + rated)
    for kind, label in (("human", "players"), ("guest", "guests"), ("bot", "bots")):
        names = ", ".join(sorted(groups[kind], key=str.lower)) or "none"
        client.say(f"  {label}: {names}")


def say_more(client: PlayClient, page: p.Lobby) -> None:
    """What the lobby holds beyond this page, and how to see it ('more')."""
    left = [f"{n} more {what}" for n, what in ((page.more_seeks, "seek(s)"),
                                               (page.more_players, "player(s)")) if n]
    client.next_page = (lambda: next_lobby_page(client)) if page.next_cursor else None
    if left:
        client.say(f"  ... and {' and '.join(left)}: 'more' lists the next page.")


@command("seek", "seek GAME [OPTION=VALUE ...] [TIME] [rated [LOW-HIGH]]",
         "offer a game to anyone, e.g. seek hadron size=5 5m+3s (TIME: 5m+3s, 30s/move, "
         "3d/move, unlimited) - add 'rated' for a rated game, and a rating range: 1400-1800")
async def seek(client: PlayClient, args: str) -> None:
    offer = offer_of(args.split())
    low, high = offer.rating_range
    reply = await client.call(p.Seek, game=offer.game, options=offer.options,
                              clock=offer.clock, rated=offer.rated or None, rating_min=low,
                              rating_max=high)
    assert isinstance(reply, p.SeekCreated)
    client.lobby.my_seeks.add(reply.seek_id)
    client.say(f"Seek #{reply.seek_id} is open: "
               f"{render.describe_offer(offer.game, offer.options, offer.clock)}"
               f"{' rated' if offer.rated else ''}. "
               "Waiting for an opponent ('cancel' withdraws it).")


@command("challenge", "challenge USER GAME [OPTION=VALUE ...] [TIME] [color=COLOUR] [rated]",
         "offer a game to one player, e.g. challenge bob xodd size=9 10m+5s color=black rated")
async def challenge(client: PlayClient, args: str) -> None:
    words = args.split()
    if len(words) < 2:
        raise UsageError("usage: " + COMMANDS["challenge"].usage)
    offer = offer_of(words[1:], allow_color=True)
    reply = await client.call(p.Challenge, to=words[0], game=offer.game,
                              options=offer.options, clock=offer.clock, color=offer.color,
                              rated=offer.rated or None)
    assert isinstance(reply, p.ChallengeCreated)
    client.lobby.challenges_out[reply.challenge_id] = words[0]
    client.say(f"Challenge #{reply.challenge_id} sent to {words[0]}: "
               f"{render.describe_offer(offer.game, offer.options, offer.clock)}"
               f"{' rated' if offer.rated else ''}.")


@command("bot", "bot NAME GAME [OPTION=VALUE ...] [TIME] [color=COLOUR] [think=S]",
         f"play a bundled bot ({', '.join(BOTS)}) run here: bot mcts hadron size=5 5m+3s "
         f"(think=S: its time a move, {BOT_THINK_S:g} s); 'bot' lists yours")
async def bot(client: PlayClient, args: str) -> None:
    words = args.split()
    if not words:
        for line in client.bots.lines():
            client.say(line)
        return
    kind = words[0].lower()
    if kind not in BOTS:
        raise UsageError(f"No bundled bot {words[0]!r}: one of {', '.join(BOTS)}. Usage: "
                         + COMMANDS["bot"].usage)
    if len(words) < 2:
        raise UsageError(f"Which game? e.g. bot {kind} hadron size=5 5m+3s (games: "
                         f"{', '.join(engine.GAMES)})")
    think, rest = think_arg(words[1:])
    offer = offer_of(rest, allow_color=True)
    if client.user is None:
        raise UsageError("Log in first: 'guest', 'login NAME' or 'register NAME'.")
    client.link.live()
    client.say(f"Starting the {kind} bot ...")
    try:
        started = await client.bots.start(kind, client.url, client.user.name, think)
    except LocalBotError as exc:
        raise UsageError(f"The {kind} bot did not start: {exc}") from None
    described = render.describe_offer(offer.game, offer.options, offer.clock)
    client.say(f"Your {kind} bot is online as {started.name}; challenging it to {described}.")
    try:
        reply = await client.call(p.Challenge, to=started.name, game=offer.game,
                                  options=offer.options, clock=offer.clock, color=offer.color)
    except BaseException:
        await started.stop()
        raise
    assert isinstance(reply, p.ChallengeCreated)
    started.challenge_id = reply.challenge_id
    client.lobby.challenges_out[reply.challenge_id] = started.name


def think_arg(words: Sequence[str]) -> tuple[float, list[str]]:
    """``think=S`` taken out of the ``bot`` command's words (default BOT_THINK_S)."""
    think = BOT_THINK_S
    rest = []
    for word in words:
        name, eq, value = word.partition("=")
        if eq and name.lower() == "think":
            try:
                think = float(value)
            except ValueError:
                think = -1.0
            if not 0 < think <= 3600:
                raise UsageError(f"think={value}: seconds per move, more than 0")
        else:
            rest.append(word)
    return think, rest


@command("accept", "accept [ID]", "accept a challenge, or take an open seek")
async def accept(client: PlayClient, args: str) -> None:
    number = number_arg(args, "accept [challenge|seek] ID")
    kind = args.split()[0].lower() if len(args.split()) > 1 else ""
    incoming = client.lobby.challenges_in
    if number is None:
        if len(incoming) != 1:
            raise UsageError("accept which? give the challenge or seek number")
        number = next(iter(incoming))
    if kind != "seek" and (number in incoming or kind == "challenge"):
        incoming.pop(number, None)
        await client.call(p.AcceptChallenge, challenge_id=number)
    else:
        await client.call(p.AcceptSeek, seek_id=number)


@command("decline", "decline [ID]", "decline a challenge")
async def decline(client: PlayClient, args: str) -> None:
    number = number_arg(args, "decline ID")
    incoming = client.lobby.challenges_in
    if number is None:
        if len(incoming) != 1:
            raise UsageError("decline which? give the challenge number")
        number = next(iter(incoming))
    await client.call(p.DeclineChallenge, challenge_id=number)
    incoming.pop(number, None)


@command("cancel", "cancel [ID]", "withdraw your seek or challenge (all of them without ID)")
async def cancel(client: PlayClient, args: str) -> None:
    number = number_arg(args, "cancel [ID]")
    lobby = client.lobby
    if number is None:
        seek_ids, challenge_ids = sorted(lobby.my_seeks), sorted(lobby.challenges_out)
    elif number in lobby.challenges_out and number not in lobby.my_seeks:
        seek_ids, challenge_ids = [], [number]
    else:
        seek_ids, challenge_ids = [number], []
    for seek_id in seek_ids:
        await client.call(p.CancelSeek, seek_id=seek_id)
        lobby.my_seeks.discard(seek_id)
        client.say(f"Seek #{seek_id} withdrawn.")
    for challenge_id in challenge_ids:
        await client.call(p.CancelChallenge, challenge_id=challenge_id)
    if not seek_ids and not challenge_ids:
        client.say("You have no open seeks or challenges.")


@command("challenges", "challenges [everyone|registered|nobody]",
         "who may challenge you: shown, or chosen (kept with your account; registered: "
         "no guests)")
async def challenges(client: PlayClient, args: str) -> None:
    word = args.strip().lower()
    if not word:
        client.say(f"Challenges: {CHALLENGE_POLICIES[client.challenge_policy]}. Choose with "
                   "'challenges everyone', 'challenges registered' or 'challenges nobody'.")
        return
    if word not in CHALLENGE_POLICIES:
        raise UsageError("usage: " + COMMANDS["challenges"].usage)
    await client.call(p.SetChallengePolicy, policy=word)
    client.challenge_policy = word
    client.say(f"Challenges: {CHALLENGE_POLICIES[word]}.")
