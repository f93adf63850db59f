"""Commands about who you are: ``guest``, ``login``, ``register``, ``logout``,
``password`` (change it) and ``delete-account``."""

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
    _check_new_password(secret)
    await client.login_with(p.Register, username=args, password=secret)


def _check_new_password(secret: str) -> None:
    if not MIN_REGISTER_PASSWORD_CHARS <= len(secret) <= MAX_PASSWORD_CHARS:
        raise UsageError(f"That one has {len(secret)} characters ({PASSWORD_RULE}); "
                         "nothing done.")


def _check_name(name: str) -> None:
    """Refuse a name no account can have, saying what a name is."""
    try:
        p.Login(id=0, username=name, password="?")
    except p.InvalidMessage:
        raise UsageError(f"No account can be called {name!r}: {NAME_RULE}.") from None


@command("logout", "logout", "log out (games go on; your opponent may claim them)")
async def logout(client: PlayClient, args: str) -> None:
    await client.call(p.Logout)
    _logged_out(client)
    client.say("Logged out.")


@command("password", "password", "change your password (asks for the one you have, then "
         "the new one twice); your other logins end at once")
async def password(client: PlayClient, args: str) -> None:
    _registered(client)
    old = await client.term.read("current password: ", password=True)
    client.say(f"{PASSWORD_RULE.capitalize()}.")
    new = await client.term.read("new password: ", password=True)
    _check_new_password(new)
    if await client.term.read("again: ", password=True) != new:
        raise UsageError("The passwords differ; nothing done.")
    await client.call(p.ChangePassword, old_password=old, new_password=new)
    client.say("Password changed; your other logins have ended.")


@command("delete-account", "delete-account", "delete your account for good (asks first, "
         "then for your password); your games stay, under an anonymous name")
async def delete_account(client: PlayClient, args: str) -> None:
    name = _registered(client)
    client.say(f"Deleting your account cannot be undone: nobody can log in as {name} "
               "again, your games stay under an anonymous name, and after a while "
               "someone else may register the name.")
    if not await client.confirm(f"Delete the account {name}?"):
        client.say("Not deleted.")
        return
    secret = await client.term.read("password: ", password=True)
    await client.call(p.DeleteAccount, password=secret)
    _logged_out(client)
    client.say(f"The account {name} is deleted; you are logged out.")


def _registered(client: PlayClient) -> str:
    """The name logged in as, if it has a password (guests and bots have none)."""
    if client.user is None:
        raise UsageError("Log in first: 'login NAME'.")
    if client.user.kind != "human":
        raise UsageError(f"A {client.user.kind} has no password: only registered players "
                         "have one to change, or an account to delete.")
    return client.user.name


def _logged_out(client: PlayClient) -> None:
    """The server ended the login (and, with it, the lobby's events)."""
    client.user = client.token = None
    client.lobby.subscribed = False
