"""Commands about who you are: ``guest``, ``login``, ``register``, ``logout``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import protocol as p
from clients.play.commands import UsageError, command

if TYPE_CHECKING:
    from clients.play.client import PlayClient


@command("guest", "guest", "play as a guest (the server picks the name)")
async def guest(client: PlayClient, args: str) -> None:
    await client.login_with(p.Guest)


@command("login", "login NAME", "log in (asks for the password)")
async def login(client: PlayClient, args: str) -> None:
    if len(args.split()) != 1:
        raise UsageError("usage: login NAME")
    p.Login(id=0, username=args, password="?")  # a bad name is refused before the password
    await client.login_with(p.Login, username=args, password=await client.password())


@command("register", "register NAME", "create an account and log in")
async def register(client: PlayClient, args: str) -> None:
    if len(args.split()) != 1:
        raise UsageError("usage: register NAME")
    p.Login(id=0, username=args, password="?")
    secret = await client.password(confirm=True)
    await client.login_with(p.Register, username=args, password=secret)


@command("logout", "logout", "log out (games go on; your opponent may claim them)")
async def logout(client: PlayClient, args: str) -> None:
    await client.call(p.Logout)
    client.user = client.token = None
    client.lobby.subscribed = False
    client.say("Logged out.")
