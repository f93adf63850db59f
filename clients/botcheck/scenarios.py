"""The scenarios: each puts the bot in one situation on the private server, for real, and
says whether it came through (a line for the table) or how it did not (:class:`Failed`).

botcheck plays the other side itself (the ``checker`` account; a ``bystander`` for the game
the bot is not in), so it knows what the bot was sent and when, and sees what the bot did
from the server's events, its ``/metrics`` (the error replies the bot's requests drew) and
the kernel's view of the server's sockets (a move sent to a frozen server, unread):

- ``games``: a whole game of each game the bot claims (one row per game);
- ``decline``: a challenge the bot should decline, with a reason, in time;
- ``rematch``: after a game, a rematch offer answered (and played, if accepted);
- ``illegal``: botcheck's own illegal moves, refused by the server, and the bot's game
  goes on (the protocol tells only the sender of a refused move, so the bot is never told
  of them: this checks that nothing of them reaches its game);
- ``pressure``: a clock of 2 s for the whole game: every move before the flag;
- ``not-in``: a game between two others, opened in the lobby and played beside the bot's
  own, move for move: the bot's game goes on and the server refuses none of its requests;
- ``slow``: the server stalls (SIGSTOP) with the bot's move unread in its socket, for 2 s:
  the move is answered late and the game goes on;
- ``restart``: the server stopped (SIGTERM) and started again mid-game: the bot comes back
  and finishes the game;
- ``cut``: the server killed (SIGKILL) with the bot's move unread in its socket, and
  started again: the move was never played, so the bot must send it again.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sized
from dataclasses import dataclass, field

import protocol as p
from clients.connection import ServerError
from clients.localserver import LocalServer
from clients.sdk.specs import GameSpec, SeekSpec

from .sides import Failed, GameView, Hub, Side
from .subject import BotProcess

ANSWER_S = 10.0  # for the bot to answer a challenge or a rematch offer
ONLINE_S = 30.0  # for the bot to log in (at its start) or to come back (after a restart)
STALL_S = 2.0  # how long the server stalls with the bot's move unread (``slow``)
UNREAD_MOVE_BYTES = 32  # a request this big from the bot is waiting (a ping is smaller)
FREEZE_LOOK_S = 0.5  # a freeze with nothing arriving: thaw to see whether the move got in
FREEZE_TRIES = 10  # bot moves tried before a scenario gives up freezing on one in flight
PRESSURE_CLOCK = p.Fischer(base_ms=2000, increment_ms=0)
DECLINE_CLOCK = p.Correspondence(days_per_move=30)  # the SDK's bots play no days-long games
ASIDE_CLOCK = p.Correspondence(days_per_move=29)  # the bystander's seek, paired with nothing

Scenario = Callable[["Check"], Awaitable[str]]


@dataclass(frozen=True, slots=True)
class Claim:
    """A game the bot plays: from ``--game``, from a seek of its own (``seek``: played by
    taking it), or botcheck's default."""

    spec: GameSpec
    seek: SeekSpec | None = None

    def __str__(self) -> str:
        if self.seek is None:
            return str(self.spec)
        return f"{self.spec} (its seek, {p.format_time_control(self.seek.clock)})"


def move_wait_s(clock: p.TimeControl) -> float:
    """How long botcheck waits for one move of the bot: its clock's most, and 10 s more."""
    if isinstance(clock, p.Fischer):
        return clock.base_ms / 1000 + 10
    if isinstance(clock, p.PerMove):
        return clock.per_move_ms / 1000 + 10
    return 60.0


def count(items: Sized, noun: str) -> str:
    """``1 move``, ``3 moves``."""
    return f"{len(items)} {noun}{'' if len(items) == 1 else 's'}"


def ended(view: GameView) -> str:
    """``at ply 12``, and how the rules ended it."""
    result = view.result
    how = f": {result.ending.text}" if result and result.ending else ""
    return f"at ply {view.state.ply}{how}"


@dataclass
class Check:
    """One run: the private server, the bot under test, botcheck's two sides, the games the
    bot claims and the clock of the scenarios; what every scenario uses."""

    server: LocalServer
    bot: BotProcess
    hub: Hub
    checker: Side  # the bot's opponent; it watches the lobby
    bystander: Side  # the other player of the game the bot is not in
    name: str  # the bot's account
    clock: p.TimeControl
    claims: list[Claim] = field(default_factory=list)
    decline: SeekSpec | None = None
    notes: list[str] = field(default_factory=list)
    up: float = 0.0  # time.monotonic() when the server last started again

    @property
    def sides(self) -> tuple[Side, Side]:
        return self.checker, self.bystander

    def online(self) -> bool:
        return self.name.lower() in self.checker.online

    # -- between scenarios ------------------------------------------------------------------------
    async def ready(self, scenario: str) -> None:
        """The bot running and online, no game of ours left over: a bot that ended, or that
        is not online, is started again (and the notes say so)."""
        self.server.thaw()
        if self.server.proc is None or self.server.proc.poll() is not None:
            await asyncio.to_thread(self.server.start)  # a scenario failed mid-restart
        for side in self.sides:
            if side.conn is None or side.conn.closed.is_set():
                await side.connect()
            await side.resign_unfinished()
        why = self.bot.ended()
        if why is None and not self.online():
            try:
                await self.hub.until(self.online, ONLINE_S, "the bot to be online")
            except Failed:
                why = self.bot.ended() or "was running but not online"
        if why is not None:
            self.notes.append(f"before '{scenario}' the bot {why}: botcheck started it again")
            self.bot.start()
            await self.hub.until(self.online, ONLINE_S, "the bot to log in")

    async def restart(self, *, crash: bool) -> None:
        """Stop the server (SIGTERM; ``crash``: SIGKILL) and start it again on the same port
        and database; botcheck's sides connect again and resume their games."""
        await asyncio.to_thread(self.server.kill if crash else self.server.stop)
        await asyncio.to_thread(self.server.start)
        self.up = time.monotonic()
        for side in self.sides:
            await side.connect()

    async def back(self, after: str) -> float:
        """Wait for the bot to be online again ``after`` a restart; how long after the
        server it was (Failed if not within :data:`ONLINE_S`)."""
        await self.hub.until(self.online, ONLINE_S, f"the bot to come back {after}")
        return max(0.0, time.monotonic() - self.up)

    # -- games ------------------------------------------------------------------------------------
    async def start(self, spec: GameSpec, clock: p.TimeControl, bot_seat: int) -> GameView:
        """Challenge the bot to a game (its seat ``bot_seat``); Failed unless it accepts."""
        answer = await self.checker.challenge(self.name, spec.game, spec.options, clock,
                                              color=1 - bot_seat, timeout=ANSWER_S)
        offer = f"{spec} {p.format_time_control(clock)}"
        if answer.reason == "unanswered":
            raise Failed(f"no answer to a challenge to {offer} within {ANSWER_S:g} s")
        if answer.reason != "accepted" or answer.game_id is None:
            why = f": {answer.message!r}" if answer.message else ""
            raise Failed(f"the bot {answer.reason} a challenge to {offer}{why}")
        return self.checker.view(answer.game_id)

    async def take_seek(self, seek: SeekSpec) -> GameView:
        """Take the bot's open seek ``seek`` (waiting for it to be open)."""
        def open_seek() -> p.OpenSeek | None:
            return next((s for s in self.checker.seeks.values()
                         if s.user.name.lower() == self.name.lower()
                         and seek.matches(s.game, s.options, s.clock)), None)

        await self.hub.until(lambda: open_seek() is not None, ANSWER_S,
                             f"the bot's seek of {seek}")
        found = open_seek()
        assert found is not None
        return await self.checker.accept_seek(found.seek_id)

    def bot_seat(self, view: GameView) -> int:
        return view.seat_of(self.name)

    async def bot_moves(self, view: GameView, until: Callable[[], bool] | None = None) -> None:
        """Play botcheck's moves and wait for the bot's until the game is over, or until
        ``until()`` holds; Failed if the bot leaves a move undone for too long."""
        wait = move_wait_s(view.snapshot.clock)
        while not view.over and not (until is not None and until()):
            if self.checker.my_turn(view):
                await self.checker.move(view)
                continue
            await self.bot_move(view, view.state.ply, wait)

    async def bot_move(self, view: GameView, ply: int, wait: float) -> None:
        """Wait until the game is past ``ply`` (or over)."""
        await self.hub.until(lambda: view.over or view.state.ply > ply, wait,
                             f"the bot's move at ply {ply}")

    def outcome(self, view: GameView) -> str:
        """How the game ended, if the bot came through it (else Failed, saying why)."""
        result = view.result
        assert result is not None
        seat = self.bot_seat(view)
        if result.reason == "normal":
            return f"{'won' if result.winner == seat else 'lost'} {ended(view)}"
        if result.reason == "abort":
            raise Failed(f"the game was aborted at ply {view.state.ply}")
        how = {"resign": "resigned", "timeout": "lost on time",
               "abandon": "left the game and lost it by abandonment"}[result.reason]
        if result.winner == seat:
            raise Failed(f"botcheck's own side {how} at ply {view.state.ply} (a busy machine?): "
                         "the scenario could not be played to its end")
        hint = (" (a bot resigns when its move fails or is illegal: see its log)"
                if result.reason == "resign" else "")
        raise Failed(f"the bot {how} at ply {view.state.ply}{hint}")

    # -- what the server saw ---------------------------------------------------------------------
    def errors(self) -> Counter[str]:
        """Error replies the server has sent since it started, by code, less botcheck's own:
        those the bot's requests drew."""
        sent = Counter({labels.split('"')[1]: int(n) for labels, n in
                        self.server.metric("tessera_errors_total").items() if '"' in labels})
        for side in self.sides:
            sent.subtract(side.refused)
        return +sent

    def refused_since(self, before: Counter[str]) -> None:
        """Failed if the server refused requests of the bot since ``errors()`` was
        ``before``."""
        new = self.errors()
        new.subtract(before)
        new = +new
        if new:
            codes = ", ".join(f"{code} {n}" for code, n in sorted(new.items()))
            raise Failed(f"the server refused {new.total()} of the bot's requests ({codes})")

    async def freeze_on_bot_move(self, clock: p.TimeControl) -> tuple[GameView, int]:
        """A game of the first claimed game (the bot first) in which botcheck's move was
        followed at once by freezing the server, and the bot's answer is now unread in the
        server's socket: the game and the bytes unread. Where the bot's move got in before
        the freeze (a fast bot), the server runs on and this tries again at the bot's next
        turn, in a new game once one ends."""
        view: GameView | None = None
        for _ in range(FREEZE_TRIES):
            if view is None or view.over:
                view = await self.start(self.claims[0].spec, clock, bot_seat=0)
            await self.bot_moves(view, until=functools.partial(self.checker.my_turn, view))
            if view.over:
                continue
            ack = await self.checker.call(p.Move, game_id=view.game_id, ply=view.state.ply,
                                          move=self.checker.choose(view))
            self.server.freeze()
            assert isinstance(ack, p.MoveAck)
            unread = await self._unread_move(view, ack.ply + 1, move_wait_s(clock))
            if unread is not None:
                return view, unread
        raise Failed(f"the bot's move always reached the server before botcheck could freeze "
                     f"it ({FREEZE_TRIES} tries)")

    async def _unread_move(self, view: GameView, ply: int, wait: float) -> int | None:
        """With the server frozen: the bytes of the bot's move at ``ply`` once they wait
        unread in its socket; or None, the server thawed, if the move got in first. Every
        :data:`FREEZE_LOOK_S` with nothing unread, the server runs for a moment: it may have
        read the move just before it stopped."""
        frozen = looked = time.monotonic()
        while True:
            ours = [port for side in self.sides if (port := side.port) is not None]
            unread = self.server.unread_bytes(ours)
            if unread is None:
                self.server.thaw()
                raise Failed("cannot see the server's sockets (no /proc/net/tcp): this "
                             "scenario needs Linux")
            if unread >= UNREAD_MOVE_BYTES:
                return unread
            if view.state.ply > ply or view.over:
                self.server.thaw()
                return None
            if time.monotonic() - frozen > wait:
                self.server.thaw()
                raise Failed(f"the bot sent nothing at ply {ply} within {wait:g} s")
            if time.monotonic() - looked > FREEZE_LOOK_S:
                self.server.thaw()
                await asyncio.sleep(0.05)
                if view.state.ply > ply or view.over:
                    return None
                self.server.freeze()
                looked = time.monotonic()
            await asyncio.sleep(0.005)


# -- the scenarios -------------------------------------------------------------------------------
def full_game(claim: Claim, bot_seat: int) -> Scenario:
    async def run(check: Check) -> str:
        before = check.errors()
        if claim.seek is not None:
            view = await check.take_seek(claim.seek)
        else:
            view = await check.start(claim.spec, check.clock, bot_seat)
        await check.bot_moves(view)
        outcome = check.outcome(view)
        check.refused_since(before)
        mine = view.moves_by(check.bot_seat(view))
        slowest = max((m.ms_used for m in mine), default=0)
        order = "first" if check.bot_seat(view) == 0 else "second"
        return f"{outcome}; the bot moved {order}, {count(mine, 'move')}, the slowest {slowest} ms"
    return run


async def decline(check: Check) -> str:
    spec = check.decline or SeekSpec(check.claims[0].spec.game, check.claims[0].spec.options,
                                     DECLINE_CLOCK)
    before = check.errors()
    answer = await check.checker.challenge(check.name, spec.game, spec.options, spec.clock,
                                           color=0, timeout=ANSWER_S)
    if answer.reason == "unanswered":
        raise Failed(f"no answer to a challenge to {spec} within {ANSWER_S:g} s (botcheck "
                     "withdrew it)")
    if answer.reason == "accepted":
        if answer.game_id is not None:
            await check.checker.call(p.Abort, game_id=answer.game_id)
        raise Failed(f"the bot accepted a challenge to {spec}, which it was expected to "
                     "decline: name one it declines with --decline 'GAME [OPTION=VALUE] CLOCK'")
    if answer.reason != "declined":
        raise Failed(f"the challenge to {spec} was {answer.reason}, not declined")
    check.refused_since(before)
    if not check.online():
        raise Failed("the bot declined, then went offline")
    why = (f": {answer.message!r}" if answer.message
           else ", without a reason (a message tells the challenger why)")
    return f"{spec} declined in {answer.seconds:.2f} s{why}"


async def rematch(check: Check) -> str:
    before = check.errors()
    view = await check.start(check.claims[0].spec, check.clock, bot_seat=0)
    await check.bot_moves(view)
    check.outcome(view)
    answer = await check.checker.offer_rematch(view.game_id, ANSWER_S)
    if answer.reason == "declined":
        check.refused_since(before)
        why = f": {answer.message!r}" if answer.message else " (without a reason)"
        return f"declined in {answer.seconds:.2f} s{why}"
    if answer.reason != "accepted" or answer.game_id is None:
        raise Failed(f"the rematch offer was {answer.reason}" + (
            f" ({ANSWER_S:g} s without an answer)" if answer.reason == "unanswered" else ""))
    again = check.checker.view(answer.game_id)
    if check.bot_seat(again) != 1:
        raise Failed("the rematch did not swap the colours")
    await check.bot_moves(again)
    outcome = check.outcome(again)
    check.refused_since(before)
    return f"accepted in {answer.seconds:.2f} s; the rematch, the bot second: {outcome}"


async def illegal(check: Check) -> str:
    before = check.errors()
    view = await check.start(check.claims[0].spec, check.clock, bot_seat=1)
    await check.bot_moves(view, until=lambda: view.state.ply >= 2 and check.checker.my_turn(view))
    if view.over:
        raise Failed(f"the game ended {ended(view)}, before botcheck's illegal moves")
    legal = {str(move) for move in view.state.legal_moves()}
    occupied = [m.move for m in view.moves if m.move not in legal]  # played: taken now
    tries = [("malformed", "not-a-move"), *(("against the rules", m) for m in occupied[:1])]
    refusals = [await _refused(check.checker, view, what, view.state.ply, move)
                for what, move in tries]
    ack = await check.checker.move(view)
    # the bot's turn (not_your_turn), or past it if the bot was quicker (stale_ply)
    refusals.append(await _refused(check.checker, view, "out of turn", ack.ply + 1, "pass"))
    await check.bot_moves(view)
    outcome = check.outcome(view)
    check.refused_since(before)
    return (f"botcheck's {len(refusals)} illegal moves refused ({', '.join(refusals)}); the bot "
            f"played on and {outcome}")


async def _refused(side: Side, view: GameView, what: str, ply: int, move: str) -> str:
    try:
        await side.call(p.Move, game_id=view.game_id, ply=ply, move=move)
    except ServerError as e:
        return f"{what}: {e.code}"
    raise Failed(f"the server took botcheck's {what} move {move!r} at ply {ply}")


async def pressure(check: Check) -> str:
    before = check.errors()
    view = await check.start(check.claims[0].spec, PRESSURE_CLOCK, bot_seat=0)
    await check.bot_moves(view)
    outcome = check.outcome(view)
    check.refused_since(before)
    mine = view.moves_by(check.bot_seat(view))
    lowest = min((m.clock_ms for m in mine if m.clock_ms is not None), default=None)
    least = f", {lowest} ms left at the least" if lowest is not None else ""
    return (f"{count(mine, 'move')} on a {p.format_time_control(PRESSURE_CLOCK)} clock{least}; "
            f"{outcome}")


async def not_in(check: Check) -> str:
    spec = check.claims[0].spec
    before = check.errors()
    bot_seeks = [s for s in check.checker.seeks.values()
                 if s.user.name.lower() == check.name.lower()]
    if any(s.game == spec.game and s.clock == ASIDE_CLOCK for s in bot_seeks):
        raise Failed(f"the bot seeks {spec} {p.format_time_control(ASIDE_CLOCK)} itself: the "
                     "others' seek would pair with it")
    seek = await check.bystander.call(p.Seek, game=spec.game, options=spec.options,
                                      clock=ASIDE_CLOCK)
    assert isinstance(seek, p.SeekCreated)
    await check.hub.until(lambda: seek.seek_id in check.checker.seeks, ANSWER_S,
                          "the bystander's seek in the lobby")
    aside_id = (await check.checker.accept_seek(seek.seek_id)).game_id
    await check.hub.until(lambda: aside_id in check.bystander.games, ANSWER_S,
                          "the bystander's game to start")
    view = await check.start(spec, check.clock, bot_seat=0)
    aside = [check.checker.view(aside_id), check.bystander.view(aside_id)]
    ours = 0

    async def beside() -> None:
        """One move of the others' game, by whichever of botcheck's sides is to move."""
        nonlocal ours
        for side, seen in zip((check.checker, check.bystander), aside, strict=True):
            if side.my_turn(seen):
                await side.move(seen)
                ours += 1
                return

    while not view.over:
        await beside()
        await check.bot_moves(view, until=lambda: check.checker.my_turn(view))
        if not view.over:
            await check.checker.move(view)
    outcome = check.outcome(view)
    while not aside[0].over:
        await beside()
        await check.hub.until(lambda: aside[0].over or any(
            side.my_turn(seen) for side, seen in zip(check.sides, aside, strict=True)),
            ANSWER_S, "the others' game")
    check.refused_since(before)
    return (f"{outcome}, while checker and bystander played their own {spec} beside it "
            f"({ours} moves, from a seek in the lobby)")


async def slow(check: Check) -> str:
    before = check.errors()
    view, unread = await check.freeze_on_bot_move(p.Unlimited())
    ply = view.state.ply
    await asyncio.sleep(STALL_S)
    check.server.thaw()
    thawed = time.monotonic()
    await check.bot_move(view, ply, ANSWER_S)
    late = time.monotonic() - thawed + STALL_S
    await check.bot_moves(view)
    outcome = check.outcome(view)
    check.refused_since(before)
    kept = ("it reconnected meanwhile" if check.bot_seat(view) in view.left
            else "it kept its connection")
    return (f"its move at ply {ply} ({unread} bytes) waited {STALL_S:g} s in the stalled "
            f"server's socket and was answered {late:.1f} s late ({kept}); {outcome}")


async def restart(check: Check) -> str:
    view = await check.start(check.claims[0].spec, check.clock, bot_seat=0)
    await check.bot_moves(view, until=lambda: view.state.ply >= 2)
    if view.over:
        raise Failed(f"the game ended {ended(view)}, before the restart")
    ply, before = view.state.ply, len(view.moves_by(0))
    await check.restart(crash=False)
    back = await check.back("after the server restarted (SIGTERM, then started again)")
    await check.bot_moves(view)
    outcome = check.outcome(view)
    if len(view.moves_by(0)) == before:
        raise Failed(f"the game ended {ended(view)} without a move of the bot after the "
                     "restart")
    return f"restarted at ply {ply}; the bot was back {back:.1f} s after the server; {outcome}"


async def cut(check: Check) -> str:
    view, unread = await check.freeze_on_bot_move(check.clock)
    ply = view.state.ply
    await check.restart(crash=True)
    back = await check.back("after its connection was cut (the server killed, then started "
                            "again)")
    try:
        await check.bot_move(view, ply, move_wait_s(view.snapshot.clock))
    except Failed as e:
        raise Failed(f"{e}: the move it sent as the connection was cut never reached the "
                     "server, and it did not send it again") from None
    await check.bot_moves(view)
    outcome = check.outcome(view)
    return (f"its move at ply {ply} ({unread} bytes) was unread when the server was killed; "
            f"back {back:.1f} s after the server, it sent a move for ply {ply} again; "
            f"{outcome}")


ONE_ROW: dict[str, tuple[Scenario, str]] = {
    "decline": (decline, "a challenge declined"),
    "rematch": (rematch, "a rematch"),
    "illegal": (illegal, "illegal moves answered by the server"),
    "pressure": (pressure, "time pressure"),
    "not-in": (not_in, "a game it is not in"),
    "slow": (slow, "slow server replies"),
    "restart": (restart, "the server restarted mid-game"),
    "cut": (cut, "the connection cut with a move in flight"),
}
NAMES = ("games", *ONE_ROW)
"""Every scenario, in the order they run (those that restart the server last)."""


def rows(names: list[str], claims: list[Claim]) -> list[tuple[str, Scenario]]:
    """The rows of the table for the scenarios ``names``: one per claimed game for
    ``games``, one for each other."""
    out: list[tuple[str, Scenario]] = []
    for name in NAMES:
        if name not in names:
            continue
        if name == "games":
            out += [(f"game {claim}", full_game(claim, i % 2)) for i, claim in enumerate(claims)]
        else:
            out.append((name, ONE_ROW[name][0]))
    return out
