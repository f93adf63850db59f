"""Commands about the session itself: ``help`` and ``quit``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import engine
from clients import notation
from clients.play.commands import command, command_help, help_lines, wrap

if TYPE_CHECKING:
    from clients.play.client import PlayClient


@command("help", "help [COMMAND]", "this list, or one command's help", "?")
async def help_(client: PlayClient, args: str) -> None:
    lines = command_help(args.split()[0]) if args else [*help_lines(), *move_help()]
    for line in lines:
        client.say(line)


def move_help() -> list[str]:
    """How moves look in each registered game, from the engine (``clients.notation``)."""
    forms = "; ".join(f"{game.name} {' or '.join(notation.examples(key))}"
                      for key, game in engine.GAMES.items())
    return wrap(f"In a game, type a move: {forms}. 'moves' lists the legal ones, 'rules' "
                "explains the game.", indent="  ")


@command("quit", "quit", "leave (your open games go on; those against your local bots "
         "are resigned)", "exit")
async def quit_(client: PlayClient, args: str) -> None:
    client.quitting = True
