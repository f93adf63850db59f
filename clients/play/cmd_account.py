"""Commands about who you are: ``guest``, ``login``, ``register``, ``logout``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import protocol as p
from clients.play.commands import UsageError, command
from protocol.limits import MAX_PASSWORD_CHARS, MIN_REGISTER_PASSWORD_CHARS

NAME_RULE = ("a name has 2 to 20 characters: a letter, then letters, digits, '_' or '-'")
PASSWORD_RULE = (f"a password has {MIN_REGISTER_PASSWORD_CHARS} to {MAX_PASSWORD_CHARS} "
                 "characters")

if TYPE_CHECKING:
    from clients.play.client import PlayClient


@command("guest", "guest", "play as a guest (the server picks the name)")
async def guest(client: PlayClient, args: str) -> None:
    client.login_refused = True  # until the server says yes
    await client.login_with(p.Guest)


@command("login", "login NAME", "log in (asks for the password)")
async def login(client: PlayClient, args: str) -> None:
    if len(args.split()) != 1:
        raise UsageError("usage: login NAME")
    client.login_refused = True  # until the server says yes
    _check_name(args)  # a bad name is refused before the password
    await client.login_with(p.Login, username=args, password=await client.password())


@command("register", "register NAME", "create an account and log in")
async def register(client: PlayClient, args: str) -> None:
    if len(args.split()) != 1:
        raise UsageError("usage: register NAME")
    client.login_refused = True  # until the server says yes
    _check_name(args)
    client.say(f"{PASSWORD_RULE.capitalize()}.")
    secret = await client.password(confirm=True)
    if not MIN_REGISTER_PASSWORD_CHARS <= len(secret) <= MAX_PASSWORD_CHARS:
        raise UsageError(f"That one has {len(secret)} characters ({PASSWORD_RULE}); "
                         "nothing done.")
    await client.login_with(p.Register, username=args, password=secret)


def _check_name(name: str) -> None:
    """Refuse a name no account can have, saying what a name is."""
    try:
        p.Login(id=0, username=name, password="?")
    except p.InvalidMessage:
        raise UsageError(f"No account can be called {name!r}: {NAME_RULE}.") from None


@command("logout", "logout", "log out (games go on; your opponent may claim them)")
async def logout(client: PlayClient, args: str) -> None:
    await client.call(p.Logout)
    client.user = client.token = None
    client.lobby.subscribed = False
    client.say("Logged out.")
