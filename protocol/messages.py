"""Every message of protocol version 1, one frozen dataclass each, validated when built.

A message is one msgpack map on the wire: ``"t"`` (its type) first, then its fields in
the order declared here. Field types and bounds are the annotations (see
:mod:`protocol.values`); building a message with a bad value raises
:class:`~protocol.errors.InvalidMessage`. ``from_`` is ``"from"`` on the wire.

Client -> server requests all carry ``id``, echoed by their reply (or by an ``error``).
Server -> client replies carry that ``id``; events carry none, and game events carry
``game_id`` and ``seq``. :data:`ClientMessage` and :data:`ServerMessage` are the unions
the codec decodes to; :data:`Reply`, :data:`Event` and :data:`GameEvent` split the latter.
"""

from __future__ import annotations

import typing
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, ClassVar, Literal

from protocol._schema import Ints, Items, Struct, Text, set_field
from protocol.errors import InvalidMessage
from protocol.games import normalize_options
from protocol.limits import (
    DEFAULT_LIST_LIMIT,
    MAX_CHAT_CHARS,
    MAX_ERROR_MESSAGE_CHARS,
    MAX_INT32,
    MAX_LIST_LIMIT,
    MAX_LISTED_MOVES,
    MAX_NOTE_CHARS,
    MAX_PASSWORD_CHARS,
    MAX_SAFE_INT,
    MAX_SOFTWARE_CHARS,
    MIN_REGISTER_PASSWORD_CHARS,
)
from protocol.phases import AUTHENTICATED, CONNECTED, GREETED, GREETED_OR_LATER, Phase
from protocol.timecontrol import TimeControl
from protocol.values import (
    MAX_LISTED,
    CellName,
    Cells,
    ChallengeEnd,
    ChallengeId,
    ChallengePolicy,
    ClocksMs,
    Color,
    Cursor,
    Ending,
    EndReason,
    Flag,
    GameId,
    GameInfo,
    GameKey,
    Geometry,
    Limits,
    Millis,
    MoveText,
    OpenSeek,
    Options,
    Ply,
    PositionSummary,
    RatingInt,
    RatingPoint,
    RatingUpdates,
    Record,
    RematchEnd,
    RequestId,
    Result,
    ResultFilter,
    Seat,
    SeekId,
    Seq,
    SinceSeq,
    Snapshot,
    Standing,
    StatusFilter,
    Summary,
    Token,
    User,
    Username,
    Version,
    check_ending,
    check_winner,
)

__all__ = [
    "CLIENT_MESSAGES",
    "REPLIES",
    "SERVER_MESSAGES",
    "Abort",
    "AcceptChallenge",
    "AcceptRematch",
    "AcceptSeek",
    "AuthToken",
    "Authed",
    "Board",
    "CancelChallenge",
    "CancelSeek",
    "Challenge",
    "ChallengeCreated",
    "ChallengeEnded",
    "ChallengeReceived",
    "ChangePassword",
    "Chat",
    "ChatMessage",
    "CheckMove",
    "ClaimWin",
    "ClientMessage",
    "DeclineChallenge",
    "DeclineRematch",
    "DeleteAccount",
    "ErrorReply",
    "Event",
    "GameEvent",
    "GameList",
    "GameOver",
    "GameRecord",
    "GameStarted",
    "GameState",
    "GetBoard",
    "GetGame",
    "GetLeaderboard",
    "GetPosition",
    "GetProfile",
    "GetStandings",
    "Guest",
    "Hello",
    "LadderJoin",
    "LadderLeave",
    "LeaderboardPage",
    "ListGames",
    "Lobby",
    "LobbyPage",
    "LobbySubscribe",
    "LobbyUnsubscribe",
    "Login",
    "Logout",
    "Message",
    "Move",
    "MoveAck",
    "MoveCheck",
    "Moved",
    "OfferRematch",
    "Ok",
    "OpponentBack",
    "OpponentLeft",
    "Ping",
    "PlayerOffline",
    "PlayerOnline",
    "Pong",
    "Position",
    "ProfileInfo",
    "Register",
    "RematchEnded",
    "RematchOffered",
    "Reply",
    "Resign",
    "Resume",
    "Seek",
    "SeekAdded",
    "SeekCreated",
    "SeekRemoved",
    "SeekTaken",
    "ServerMessage",
    "SetChallengePolicy",
    "Unwatch",
    "Watch",
    "Welcome",
    "error_reply",
]

Software = Annotated[str, Text(0, MAX_SOFTWARE_CHARS)]
Password = Annotated[str, Text(1, MAX_PASSWORD_CHARS, printable=False)]
NewPassword = Annotated[str, Text(MIN_REGISTER_PASSWORD_CHARS, MAX_PASSWORD_CHARS, printable=False)]
ChatText = Annotated[str, Text(1, MAX_CHAT_CHARS)]
CodeText = Annotated[str, Text(1, 64, pattern=r"[a-z][a-z0-9_]*")]
ErrorText = Annotated[str, Text(0, MAX_ERROR_MESSAGE_CHARS)]
Note = Annotated[str, Text(1, MAX_NOTE_CHARS)]


class Message(Struct):
    """Base of all messages: tagged by ``"t"``.

    A client message declares, beside its fields, the connection phases it is accepted in
    (``PHASES``), the tags of its success replies (``REPLIES``; any request may get
    ``error`` instead), if its success moves the connection to another phase, that
    phase (``MOVES_TO``), and whether its reply lists many things or a whole game
    (``LISTS``: such a request is refused ``rate_limited`` while the connection's or its
    address's egress budget is spent; docs/PROTOCOL.md, "What a request costs"). The
    session's tables and the server's dispatch are derived from these declarations.
    """

    __slots__ = ()
    TAG_KEY: ClassVar[str] = "t"
    PHASES: ClassVar[frozenset[Phase]] = frozenset()
    REPLIES: ClassVar[tuple[str, ...]] = ()
    MOVES_TO: ClassVar[Phase | None] = None
    LISTS: ClassVar[bool] = False


# Client -> server ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Hello(Message):
    """First frame of a connection: the protocol version the client speaks."""

    TAG = "hello"
    PHASES = CONNECTED
    REPLIES = ("welcome",)
    MOVES_TO = Phase.GREETED
    id: RequestId
    version: Version
    client: Software = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Register(Message):
    """Create an account and log in as it."""

    TAG = "register"
    PHASES = GREETED
    REPLIES = ("authed",)
    MOVES_TO = Phase.AUTHENTICATED
    id: RequestId
    username: Username
    password: NewPassword


@dataclass(frozen=True, slots=True, kw_only=True)
class Login(Message):
    """Log in with a username and password."""

    TAG = "login"
    PHASES = GREETED
    REPLIES = ("authed",)
    MOVES_TO = Phase.AUTHENTICATED
    id: RequestId
    username: Username
    password: Password


@dataclass(frozen=True, slots=True, kw_only=True)
class Guest(Message):
    """Log in as a new guest with a generated name."""

    TAG = "guest"
    PHASES = GREETED
    REPLIES = ("authed",)
    MOVES_TO = Phase.AUTHENTICATED
    id: RequestId


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthToken(Message):
    """Log in with a bot API token or a session token from an earlier ``authed``."""

    TAG = "auth_token"
    PHASES = GREETED
    REPLIES = ("authed",)
    MOVES_TO = Phase.AUTHENTICATED
    id: RequestId
    token: Token


@dataclass(frozen=True, slots=True, kw_only=True)
class Logout(Message):
    """End the login (the connection stays open) and revoke its session token."""

    TAG = "logout"
    PHASES = AUTHENTICATED
    REPLIES = ("ok",)
    MOVES_TO = Phase.GREETED
    id: RequestId


@dataclass(frozen=True, slots=True, kw_only=True)
class ChangePassword(Message):
    """Replace your password, giving the one you have (checked as a login checks it):
    every other login of the account ends at once, this connection's stays. Registered
    players only (``forbidden`` for guests and bots)."""

    TAG = "change_password"
    PHASES = AUTHENTICATED
    REPLIES = ("ok",)
    id: RequestId
    old_password: Password
    """Your password now: a wrong one counts toward the lock of your account from your
    address, as a login's does."""
    new_password: NewPassword


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteAccount(Message):
    """Delete your account, giving your password (checked as a login checks it); refused
    while you play a game. Every login of the account ends (this connection goes back to
    greeted); its games stay, under an anonymous name; its name is free again after a
    while. Registered players only (``forbidden`` for guests and bots)."""

    TAG = "delete_account"
    PHASES = AUTHENTICATED
    REPLIES = ("ok",)
    MOVES_TO = Phase.GREETED
    id: RequestId
    password: Password


@dataclass(frozen=True, slots=True, kw_only=True)
class LobbySubscribe(Message):
    """Get the lobby's first page (seeks, players online) and its changes from now on."""

    TAG = "lobby_subscribe"
    PHASES = GREETED_OR_LATER
    REPLIES = ("lobby",)
    LISTS = True
    id: RequestId


@dataclass(frozen=True, slots=True, kw_only=True)
class LobbyPage(Message):
    """The lobby's next page: ``cursor`` is a ``lobby`` reply's ``next_cursor``."""

    TAG = "lobby_page"
    PHASES = GREETED_OR_LATER
    REPLIES = ("lobby",)
    LISTS = True
    id: RequestId
    cursor: Cursor


@dataclass(frozen=True, slots=True, kw_only=True)
class LobbyUnsubscribe(Message):
    """Stop lobby events."""

    TAG = "lobby_unsubscribe"
    PHASES = GREETED_OR_LATER
    REPLIES = ("ok",)
    id: RequestId


@dataclass(frozen=True, slots=True, kw_only=True)
class Seek(Message):
    """Offer a game to anyone; ``options`` are normalised (defaults filled) when built."""

    TAG = "seek"
    PHASES = AUTHENTICATED
    REPLIES = ("seek_created",)
    id: RequestId
    game: GameKey
    options: Options
    clock: TimeControl
    rated: Flag | None = None
    """True for a rated game (absent: casual). Guests and unlimited clocks play casual."""
    rating_min: RatingInt | None = None
    rating_max: RatingInt | None = None
    """Pair only with a player whose rating in the game's pool is within this range."""

    def _check(self) -> None:
        set_field(self, "options", normalize_options("seek", self.game, self.options))


@dataclass(frozen=True, slots=True, kw_only=True)
class CancelSeek(Message):
    """Withdraw one's own open seek."""

    TAG = "cancel_seek"
    PHASES = AUTHENTICATED
    REPLIES = ("ok",)
    id: RequestId
    seek_id: SeekId


@dataclass(frozen=True, slots=True, kw_only=True)
class AcceptSeek(Message):
    """Take another user's open seek: the game starts."""

    TAG = "accept_seek"
    PHASES = AUTHENTICATED
    REPLIES = ("ok",)
    id: RequestId
    seek_id: SeekId


@dataclass(frozen=True, slots=True, kw_only=True)
class Challenge(Message):
    """Offer a game to one online user; ``color`` is the seat the challenger takes."""

    TAG = "challenge"
    PHASES = AUTHENTICATED
    REPLIES = ("challenge_created",)
    id: RequestId
    to: Username
    game: GameKey
    options: Options
    clock: TimeControl
    color: Color = "random"
    rated: Flag | None = None
    """True for a rated game (absent: casual)."""

    def _check(self) -> None:
        set_field(self, "options", normalize_options("challenge", self.game, self.options))


@dataclass(frozen=True, slots=True, kw_only=True)
class AcceptChallenge(Message):
    """Accept a challenge addressed to oneself: the game starts."""

    TAG = "accept_challenge"
    PHASES = AUTHENTICATED
    REPLIES = ("ok",)
    id: RequestId
    challenge_id: ChallengeId


@dataclass(frozen=True, slots=True, kw_only=True)
class DeclineChallenge(Message):
    """Refuse a challenge addressed to oneself."""

    TAG = "decline_challenge"
    PHASES = AUTHENTICATED
    REPLIES = ("ok",)
    id: RequestId
    challenge_id: ChallengeId
    message: Note | None = None
    """Why, for the challenger (e.g. "I play only Hadron"): sent on in ``challenge_ended``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CancelChallenge(Message):
    """Withdraw one's own challenge."""

    TAG = "cancel_challenge"
    PHASES = AUTHENTICATED
    REPLIES = ("ok",)
    id: RequestId
    challenge_id: ChallengeId


@dataclass(frozen=True, slots=True, kw_only=True)
class SetChallengePolicy(Message):
    """Choose who may challenge you from now on: ``everyone`` (the default), registered
    players only (no guests), or ``nobody``. Stored with the account (``authed`` tells
    it); challenges pending already stay."""

    TAG = "set_challenge_policy"
    PHASES = AUTHENTICATED
    REPLIES = ("ok",)
    id: RequestId
    policy: ChallengePolicy


@dataclass(frozen=True, slots=True, kw_only=True)
class Move(Message):
    """Play ``move`` (text notation) as the move at ``ply`` (moves already played)."""

    TAG = "move"
    PHASES = AUTHENTICATED
    REPLIES = ("move_ack",)
    id: RequestId
    game_id: GameId
    ply: Ply
    move: MoveText


@dataclass(frozen=True, slots=True, kw_only=True)
class Resign(Message):
    """Give up a game: the opponent wins."""

    TAG = "resign"
    PHASES = AUTHENTICATED
    REPLIES = ("ok",)
    id: RequestId
    game_id: GameId


@dataclass(frozen=True, slots=True, kw_only=True)
class Abort(Message):
    """End a game that is still ``waiting`` with no winner."""

    TAG = "abort"
    PHASES = AUTHENTICATED
    REPLIES = ("ok",)
    id: RequestId
    game_id: GameId


@dataclass(frozen=True, slots=True, kw_only=True)
class ClaimWin(Message):
    """Win a game whose opponent left and did not come back within ``claim_after_ms``."""

    TAG = "claim_win"
    PHASES = AUTHENTICATED
    REPLIES = ("ok",)
    id: RequestId
    game_id: GameId


@dataclass(frozen=True, slots=True, kw_only=True)
class Chat(Message):
    """Say something in a game one plays."""

    TAG = "chat"
    PHASES = AUTHENTICATED
    REPLIES = ("ok",)
    id: RequestId
    game_id: GameId
    text: ChatText


@dataclass(frozen=True, slots=True, kw_only=True)
class Watch(Message):
    """Spectate a game: its snapshot, then its events."""

    TAG = "watch"
    PHASES = GREETED_OR_LATER
    REPLIES = ("game_state",)
    LISTS = True
    id: RequestId
    game_id: GameId


@dataclass(frozen=True, slots=True, kw_only=True)
class Unwatch(Message):
    """Stop a game's events."""

    TAG = "unwatch"
    PHASES = GREETED_OR_LATER
    REPLIES = ("ok",)
    id: RequestId
    game_id: GameId


@dataclass(frozen=True, slots=True, kw_only=True)
class Resume(Message):
    """(Re)attach to a game after a reconnect: the events after ``since_seq``."""

    TAG = "resume"
    PHASES = GREETED_OR_LATER
    REPLIES = ("ok", "game_state")
    LISTS = True
    id: RequestId
    game_id: GameId
    since_seq: SinceSeq


@dataclass(frozen=True, slots=True, kw_only=True)
class ListGames(Message):
    """A page of games, newest first, filtered; ``cursor`` continues a previous page."""

    TAG = "list_games"
    PHASES = GREETED_OR_LATER
    REPLIES = ("game_list",)
    LISTS = True
    id: RequestId
    player: Username | None = None
    game: GameKey | None = None
    result: ResultFilter | None = None
    status: StatusFilter | None = None
    cursor: Cursor | None = None
    limit: Annotated[int, Ints(1, MAX_LIST_LIMIT)] = DEFAULT_LIST_LIMIT

    def _check(self) -> None:
        if self.result is not None and self.player is None:
            raise InvalidMessage("list_games.result: needs 'player' (won or lost by whom)")


@dataclass(frozen=True, slots=True, kw_only=True)
class GetGame(Message):
    """The full record of one game, finished or not."""

    TAG = "get_game"
    PHASES = GREETED_OR_LATER
    REPLIES = ("game_record",)
    LISTS = True
    id: RequestId
    game_id: GameId


@dataclass(frozen=True, slots=True, kw_only=True)
class GetBoard(Message):
    """A board's geometry for a game and its options: what a client draws it from."""

    TAG = "get_board"
    PHASES = GREETED_OR_LATER
    REPLIES = ("board",)
    LISTS = True
    id: RequestId
    game: GameKey
    options: Options

    def _check(self) -> None:
        set_field(self, "options", normalize_options("get_board", self.game, self.options))


@dataclass(frozen=True, slots=True, kw_only=True)
class GetPosition(Message):
    """A game's position after ``ply`` moves (default: all of them so far)."""

    TAG = "get_position"
    PHASES = GREETED_OR_LATER
    REPLIES = ("position",)
    LISTS = True
    id: RequestId
    game_id: GameId
    ply: Ply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckMove(Message):
    """Would ``move`` be legal after ``ply`` moves of a game? Nothing is played."""

    TAG = "check_move"
    PHASES = GREETED_OR_LATER
    REPLIES = ("move_check",)
    id: RequestId
    game_id: GameId
    ply: Ply
    move: MoveText


@dataclass(frozen=True, slots=True, kw_only=True)
class Ping(Message):
    """Application-level liveness check and round-trip measurement."""

    TAG = "ping"
    PHASES = GREETED_OR_LATER
    REPLIES = ("pong",)
    id: RequestId


@dataclass(frozen=True, slots=True, kw_only=True)
class GetLeaderboard(Message):
    """A game's best established ratings (not provisional), best first, a page at a time;
    ``bots`` false leaves bots out."""

    TAG = "leaderboard"
    PHASES = GREETED_OR_LATER
    REPLIES = ("leaderboard_page",)
    LISTS = True
    id: RequestId
    game: GameKey
    cursor: Cursor | None = None
    bots: Flag | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GetProfile(Message):
    """A user's ratings in every pool, record, recent games and rating history."""

    TAG = "profile"
    PHASES = GREETED_OR_LATER
    REPLIES = ("profile_info",)
    LISTS = True
    id: RequestId
    name: Username


@dataclass(frozen=True, slots=True, kw_only=True)
class OfferRematch(Message):
    """After a game one played is over: offer the other player the same game again, with
    the colours swapped. Offering when they already offered accepts."""

    TAG = "offer_rematch"
    PHASES = AUTHENTICATED
    REPLIES = ("ok",)
    id: RequestId
    game_id: GameId


@dataclass(frozen=True, slots=True, kw_only=True)
class AcceptRematch(Message):
    """Accept the other player's rematch offer: the new game starts (``game_started``)."""

    TAG = "accept_rematch"
    PHASES = AUTHENTICATED
    REPLIES = ("ok",)
    id: RequestId
    game_id: GameId


@dataclass(frozen=True, slots=True, kw_only=True)
class DeclineRematch(Message):
    """Refuse (or withdraw) a rematch offer."""

    TAG = "decline_rematch"
    PHASES = AUTHENTICATED
    REPLIES = ("ok",)
    id: RequestId
    game_id: GameId
    message: Note | None = None
    """Why, for the other player (e.g. "busy: playing 2 of at most 2 games"): sent on in
    ``rematch_ended``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LadderJoin(Message):
    """A bot joins the ladder of these games: while connected and idle it is paired with
    other ladder bots into rated games (docs/RATINGS.md). Replaces its earlier choice."""

    TAG = "ladder_join"
    PHASES = AUTHENTICATED
    REPLIES = ("ok",)
    id: RequestId
    games: Annotated[Sequence[GameKey], Items(1, 64)]


@dataclass(frozen=True, slots=True, kw_only=True)
class LadderLeave(Message):
    """Leave the ladder (a game in progress is played to its end)."""

    TAG = "ladder_leave"
    PHASES = AUTHENTICATED
    REPLIES = ("ok",)
    id: RequestId


@dataclass(frozen=True, slots=True, kw_only=True)
class GetStandings(Message):
    """A game's ladder standings: the bots on its ladder, by rating, provisional included."""

    TAG = "ladder_standings"
    PHASES = GREETED_OR_LATER
    REPLIES = ("leaderboard_page",)
    LISTS = True
    id: RequestId
    game: GameKey


ClientMessage = (
    Hello
    | Register
    | Login
    | Guest
    | AuthToken
    | Logout
    | ChangePassword
    | DeleteAccount
    | LobbySubscribe
    | LobbyPage
    | LobbyUnsubscribe
    | Seek
    | CancelSeek
    | AcceptSeek
    | Challenge
    | AcceptChallenge
    | DeclineChallenge
    | CancelChallenge
    | SetChallengePolicy
    | Move
    | Resign
    | Abort
    | ClaimWin
    | Chat
    | Watch
    | Unwatch
    | Resume
    | ListGames
    | GetGame
    | GetBoard
    | GetPosition
    | CheckMove
    | Ping
    | GetLeaderboard
    | GetProfile
    | OfferRematch
    | AcceptRematch
    | DeclineRematch
    | LadderJoin
    | LadderLeave
    | GetStandings
)


# Server -> client: replies ------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Welcome(Message):
    """Answer to ``hello``: the version spoken, the server's limits and its games."""

    TAG = "welcome"
    id: RequestId
    version: Version
    server: Software
    limits: Limits
    games: Annotated[Sequence[GameInfo], Items(0, 64)]


@dataclass(frozen=True, slots=True, kw_only=True)
class Authed(Message):
    """Answer to a login: who one is, a session token, and the games one is playing."""

    TAG = "authed"
    id: RequestId
    user: User
    session_token: Token
    active_games: Annotated[Sequence[GameId], Items(0, 1000)]
    challenge_policy: ChallengePolicy | None = None
    """Who may challenge you (``set_challenge_policy``); absent: everyone."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Ok(Message):
    """Plain success for requests that return nothing else."""

    TAG = "ok"
    id: RequestId


@dataclass(frozen=True, slots=True, kw_only=True)
class SeekCreated(Message):
    """Answer to ``seek``."""

    TAG = "seek_created"
    id: RequestId
    seek_id: SeekId


@dataclass(frozen=True, slots=True, kw_only=True)
class ChallengeCreated(Message):
    """Answer to ``challenge``."""

    TAG = "challenge_created"
    id: RequestId
    challenge_id: ChallengeId


@dataclass(frozen=True, slots=True, kw_only=True)
class MoveAck(Message):
    """Answer to ``move``: the move is stored; ``seq`` is the ``moved`` event's number."""

    TAG = "move_ack"
    id: RequestId
    game_id: GameId
    ply: Ply
    seq: Seq


@dataclass(frozen=True, slots=True, kw_only=True)
class GameState(Message):
    """A game's full snapshot: answer to ``watch`` or ``resume``; no ``id`` if unasked."""

    TAG = "game_state"
    id: RequestId | None = None
    game: Snapshot


@dataclass(frozen=True, slots=True, kw_only=True)
class Lobby(Message):
    """Answer to ``lobby_subscribe`` and ``lobby_page``: a page of the open seeks and of
    the users online, the oldest first; ``more_seeks`` and ``more_players`` count those
    after this page (absent: none), and ``next_cursor`` asks for the next page
    (``lobby_page``; absent on the last)."""

    TAG = "lobby"
    id: RequestId
    seeks: Annotated[Sequence[OpenSeek], Items(0, MAX_LISTED)]
    players: Annotated[Sequence[User], Items(0, MAX_LISTED)]
    more_seeks: Annotated[int, Ints(1, MAX_INT32)] | None = None
    more_players: Annotated[int, Ints(1, MAX_INT32)] | None = None
    next_cursor: Cursor | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GameList(Message):
    """Answer to ``list_games``; ``next_cursor`` is absent on the last page."""

    TAG = "game_list"
    id: RequestId
    games: Annotated[Sequence[Summary], Items(0, MAX_LIST_LIMIT)]
    next_cursor: Cursor | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GameRecord(Message):
    """Answer to ``get_game``."""

    TAG = "game_record"
    id: RequestId
    record: Record


@dataclass(frozen=True, slots=True, kw_only=True)
class Board(Message):
    """Answer to ``get_board``: the options completed and the board's geometry."""

    TAG = "board"
    id: RequestId
    game: GameKey
    options: Options
    geometry: Geometry


@dataclass(frozen=True, slots=True, kw_only=True)
class Position(Message):
    """Answer to ``get_position``: who is to move, every cell, the cells the last move
    touched, per-game facts, and the legal moves when there are few (absent: too many to
    list; ``check_move`` a candidate instead)."""

    TAG = "position"
    id: RequestId
    game_id: GameId
    ply: Ply
    to_move: Seat
    cells: Cells
    last_move_cells: Annotated[Sequence[CellName], Items(0, 8)]
    summary: PositionSummary
    legal_moves: Annotated[Sequence[MoveText], Items(0, MAX_LISTED_MOVES)] | None = None
    after_pass: Result | None = None
    """Given when the player to move may pass and passing would end the game: the result
    it would have (the engine's, with its ending), for a client to warn before a pass."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MoveCheck(Message):
    """Answer to ``check_move``: ``move`` is canonical if legal, else as sent, and
    ``reason`` (given exactly when it is not legal) says why, in the engine's words."""

    TAG = "move_check"
    id: RequestId
    game_id: GameId
    ply: Ply
    move: MoveText
    legal: Literal[True, False]
    reason: ErrorText | None = None

    def _check(self) -> None:
        if (self.reason is None) != self.legal:
            raise InvalidMessage("move_check.reason: given exactly when the move is not legal")


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderboardPage(Message):
    """Answer to ``leaderboard`` and ``ladder_standings``; ``next_cursor`` is absent on the
    last page."""

    TAG = "leaderboard_page"
    id: RequestId
    game: GameKey
    standings: Annotated[Sequence[Standing], Items(0, MAX_LIST_LIMIT)]
    next_cursor: Cursor | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ProfileInfo(Message):
    """Answer to ``profile``: ``user.ratings`` holds every pool with its record, ``recent``
    their latest games, ``history`` their rating after each of their latest rated games
    (oldest first, every pool)."""

    TAG = "profile_info"
    id: RequestId
    user: User
    recent: Annotated[Sequence[Summary], Items(0, MAX_LIST_LIMIT)]
    history: Annotated[Sequence[RatingPoint], Items(0, 1000)]


@dataclass(frozen=True, slots=True, kw_only=True)
class Pong(Message):
    """Answer to ``ping``."""

    TAG = "pong"
    id: RequestId


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorReply(Message):
    """A request failed (``id`` absent if the frame could not be read); see ErrorCode.

    ``retry_after_ms`` comes with ``rate_limited`` and ``locked_out``; ``game_id`` names
    the game a game request failed for.
    """

    TAG = "error"
    id: RequestId | None = None
    code: CodeText
    message: ErrorText
    retry_after_ms: Millis | None = None
    game_id: GameId | None = None


def error_reply(
    code: str,
    message: str,
    *,
    id: int | None = None,
    game_id: str | None = None,
    retry_after_ms: int | None = None,
) -> ErrorReply:
    """An ``error`` message, its text made printable and cut to the limit."""
    text = "".join(c if c.isprintable() else " " for c in message)
    if len(text) > MAX_ERROR_MESSAGE_CHARS:
        text = text[: MAX_ERROR_MESSAGE_CHARS - 3] + "..."
    if retry_after_ms is not None:
        retry_after_ms = max(0, min(retry_after_ms, MAX_SAFE_INT))
    return ErrorReply(
        id=id, code=code, message=text, retry_after_ms=retry_after_ms, game_id=game_id
    )


# Server -> client: events -------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class GameStarted(Message):
    """A game one plays has begun (also attaches this connection to it)."""

    TAG = "game_started"
    game_id: GameId
    seq: Seq
    snapshot: Snapshot

    def _check(self) -> None:
        if self.snapshot.game_id != self.game_id or self.snapshot.seq != self.seq:
            raise InvalidMessage("game_started.snapshot: game_id and seq must match the event")


@dataclass(frozen=True, slots=True, kw_only=True)
class Moved(Message):
    """A move was played (by anyone, oneself included); clocks are after the move."""

    TAG = "moved"
    game_id: GameId
    seq: Seq
    ply: Ply
    move: MoveText
    by: Seat
    ms_used: Millis
    clocks_ms: ClocksMs | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GameOver(Message):
    """The game ended; ``winner`` is absent exactly when ``reason`` is ``abort``."""

    TAG = "game_over"
    game_id: GameId
    seq: Seq
    winner: Seat | None = None
    reason: EndReason
    rating_changes: RatingUpdates | None = None
    """Both players' rating changes, seat 0 first, for a rated game (not an aborted one)."""
    ending: Ending | None = None
    """How the rules decided it (reason ``normal`` only): the engine's reason and scores."""

    def _check(self) -> None:
        check_winner("game_over", self.winner, self.reason)
        check_ending("game_over", self.reason, self.ending)


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatMessage(Message):
    """A player said something in the game."""

    TAG = "chat_message"
    game_id: GameId
    seq: Seq
    from_: Username
    text: ChatText


@dataclass(frozen=True, slots=True, kw_only=True)
class OpponentLeft(Message):
    """A player lost all connections; the other may ``claim_win`` after ``claim_after_ms``."""

    TAG = "opponent_left"
    game_id: GameId
    seq: Seq
    player: Seat
    claim_after_ms: Millis


@dataclass(frozen=True, slots=True, kw_only=True)
class OpponentBack(Message):
    """A player who left is connected to the game again."""

    TAG = "opponent_back"
    game_id: GameId
    seq: Seq
    player: Seat


@dataclass(frozen=True, slots=True, kw_only=True)
class ChallengeReceived(Message):
    """Someone challenges you; ``color`` is the seat the challenger takes."""

    TAG = "challenge_received"
    challenge_id: ChallengeId
    from_: User
    game: GameKey
    options: Options
    clock: TimeControl
    color: Color
    rated: Flag | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RematchOffered(Message):
    """To both players of a game that is over: ``by`` offers a rematch."""

    TAG = "rematch_offered"
    game_id: GameId
    by: Seat


@dataclass(frozen=True, slots=True, kw_only=True)
class RematchEnded(Message):
    """To both players: the rematch offer of ``game_id`` is gone; if accepted, the new
    game is ``new_game_id`` (its ``game_started`` came first)."""

    TAG = "rematch_ended"
    game_id: GameId
    reason: RematchEnd
    new_game_id: GameId | None = None
    message: Note | None = None
    """Why, in the words of whoever declined (a ``decline_rematch``'s ``message``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ChallengeEnded(Message):
    """A challenge one sent or received is gone (accepted, declined or cancelled)."""

    TAG = "challenge_ended"
    challenge_id: ChallengeId
    reason: ChallengeEnd
    message: Note | None = None
    """Why, in the words of whoever ended it (a decline's ``message``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SeekAdded(Message):
    """Lobby: a seek was opened."""

    TAG = "seek_added"
    seek: OpenSeek


@dataclass(frozen=True, slots=True, kw_only=True)
class SeekRemoved(Message):
    """Lobby: a seek was accepted, cancelled or dropped."""

    TAG = "seek_removed"
    seek_id: SeekId


@dataclass(frozen=True, slots=True, kw_only=True)
class SeekTaken(Message):
    """To a seek's owner: the seek became this game (sent after the game's ``game_started``;
    for a seek paired at once, before the ``seek_created`` reply)."""

    TAG = "seek_taken"
    seek_id: SeekId
    game_id: GameId


@dataclass(frozen=True, slots=True, kw_only=True)
class PlayerOnline(Message):
    """Lobby: a user connected (first connection)."""

    TAG = "player_online"
    user: User


@dataclass(frozen=True, slots=True, kw_only=True)
class PlayerOffline(Message):
    """Lobby: a user disconnected (last connection)."""

    TAG = "player_offline"
    name: Username


Reply = (
    Welcome
    | Authed
    | Ok
    | SeekCreated
    | ChallengeCreated
    | MoveAck
    | GameState
    | Lobby
    | GameList
    | GameRecord
    | Board
    | Position
    | MoveCheck
    | LeaderboardPage
    | ProfileInfo
    | Pong
    | ErrorReply
)
GameEvent = GameStarted | Moved | GameOver | ChatMessage | OpponentLeft | OpponentBack
Event = (
    GameEvent
    | ChallengeReceived
    | ChallengeEnded
    | RematchOffered
    | RematchEnded
    | SeekAdded
    | SeekRemoved
    | SeekTaken
    | PlayerOnline
    | PlayerOffline
)
ServerMessage = Reply | Event


def _by_tag(union: object) -> dict[str, type[Message]]:
    return {cls.TAG: cls for cls in typing.get_args(union)}


CLIENT_MESSAGES: dict[str, type[Message]] = _by_tag(ClientMessage)
"""Client message classes by their ``"t"``."""
SERVER_MESSAGES: dict[str, type[Message]] = _by_tag(ServerMessage)
"""Server message classes by their ``"t"``."""

REPLIES: dict[type[Message], tuple[type[Message], ...]] = {
    cls: tuple(SERVER_MESSAGES[tag] for tag in cls.REPLIES)
    for cls in CLIENT_MESSAGES.values()
}
"""The success reply (or replies) of each request, from its declaration; any request may
get ``error`` instead."""
