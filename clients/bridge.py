"""The engine bridge: a bot whose moves come from an external program in any language.

The program (the *engine*) speaks a small line protocol on its stdin/stdout, specified in
``docs/BRIDGE.md``: the bridge sends ``tessera 1``, ``newgame``, ``position``, ``moves``,
``go``, ``error``, ``result`` and ``quit``; the engine answers ``id``/``ok`` lines, asks for
``legal`` moves when it wants them, and answers ``go`` with ``move <text>`` or ``resign``.

:class:`EngineBot` is a :class:`clients.bots.base.Bot`, so it plays wherever a bot plays (the
offline match runner, the bot SDK). It never blocks without a deadline and never lets the
engine take the bridge down: an engine that crashes or hangs is killed and restarted once
per game; one that answers an illegal or malformed move is asked once more. When neither
helps, :meth:`EngineBot.choose_move` raises :class:`BridgeResign`, which whoever runs the
bot turns into a resignation.

Exceptions::

    BridgeResign (Exception)      choose_move's way of resigning; .reason says why
    BridgeError (Exception)       the engine failed (caught inside EngineBot)
    ├── EngineFailure             crashed, hung or broke the protocol: restart it
    │   ├── EngineExited          its output ended (it exited or closed stdout)
    │   └── EngineTimeout         no answer before the deadline
    └── EngineRefused             it answered ``error`` to the handshake or to newgame
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from typing import IO, Any

import engine
from clients.bots.base import Bot, Resign, TimeBudget, margin_ms

log = logging.getLogger(__name__)

PROTOCOL_VERSION = 1
RESTARTS_PER_GAME = 1
MAX_LINE = 65536  # longest line (bytes) accepted from an engine
MAX_QUEUED_LINES = 10000  # unread engine lines kept; later ones are dropped
MARGIN_MS = 50  # kept back from the clock for the bridge's own work (at most: margin_ms)
MIN_ATTEMPT_MS = 50  # an attempt to get a move needs this long (at most: margin_ms)
LOG_CHARS = 120  # engine text quoted in log lines is cut to this length
SIGKILL = getattr(signal, "SIGKILL", signal.SIGTERM)  # Windows has no SIGKILL


class BridgeResign(Resign):
    """Raised by :meth:`EngineBot.choose_move` when the engine resigns or cannot go on."""


class BridgeError(Exception):
    """Root of the errors about the engine process; EngineBot handles all of them."""


class EngineFailure(BridgeError):
    """The engine crashed, hung or broke the protocol; restarting it may help."""


class EngineExited(EngineFailure):
    """The engine's output ended: it exited, crashed or closed its stdout."""


class EngineTimeout(EngineFailure):
    """The engine did not answer before the deadline."""


class EngineRefused(BridgeError):
    """The engine answered ``error`` to the handshake or to ``newgame``; restarting won't help."""


def _cut(text: str) -> str:
    return text if len(text) <= LOG_CHARS else text[:LOG_CHARS] + "..."


def _ignorable(line: str) -> bool:
    """Blank lines, ``info ...`` and ``# ...`` lines may come at any time and mean nothing."""
    return not line.strip() or line.startswith("#") or line.split(None, 1)[0] == "info"


class EngineProcess:
    """One running engine: line I/O with a subprocess that never blocks the caller.

    Three daemon threads do the blocking work: one writes queued lines to the engine's stdin,
    one reads its stdout into a queue, one logs its stderr (keeping the last lines for error
    messages). The engine runs in its own process group so that stopping it also stops any
    children it started.
    """

    def __init__(self, command: Sequence[str], *, label: str = "engine",
                 cwd: str | None = None, env: Mapping[str, str] | None = None) -> None:
        self.label = label
        self.stderr_tail: deque[str] = deque(maxlen=10)
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._outbox: queue.Queue[bytes | None] = queue.Queue()
        self._eof = False
        self._write_failed = False
        self._dropped = 0
        try:
            self._proc = subprocess.Popen(
                list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, cwd=cwd, env=None if env is None else dict(env),
                start_new_session=os.name == "posix",
            )
        except OSError as e:
            raise EngineExited(f"cannot start {' '.join(command)}: {e}") from None
        assert self._proc.stdin and self._proc.stdout and self._proc.stderr
        self._threads = [
            threading.Thread(target=self._write_loop, args=(self._proc.stdin,), daemon=True),
            threading.Thread(target=self._read_loop, args=(self._proc.stdout,), daemon=True),
            threading.Thread(target=self._stderr_loop, args=(self._proc.stderr,), daemon=True),
        ]
        for t in self._threads:
            t.start()

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def returncode(self) -> int | None:
        return self._proc.poll()

    @property
    def alive(self) -> bool:
        return self._proc.poll() is None and not self._eof and not self._write_failed

    # -- the three threads ---------------------------------------------------------------------
    def _write_loop(self, stdin: IO[bytes]) -> None:
        while (data := self._outbox.get()) is not None:
            try:
                stdin.write(data)
                stdin.flush()
            except (OSError, ValueError):
                self._write_failed = True
                break
        with contextlib.suppress(OSError, ValueError):
            stdin.close()

    def _read_loop(self, stdout: IO[bytes]) -> None:
        try:
            while raw := stdout.readline(MAX_LINE + 1):
                if len(raw) > MAX_LINE and not raw.endswith(b"\n"):
                    while raw and not raw.endswith(b"\n"):  # skip the rest of the line
                        raw = stdout.readline(MAX_LINE + 1)
                    self._queue(f"<a line longer than {MAX_LINE} bytes>")
                    continue
                self._queue(raw.decode("utf-8", "replace").rstrip("\r\n"))
        except (OSError, ValueError):
            pass
        self._lines.put(None)

    def _queue(self, line: str) -> None:
        if self._lines.qsize() < MAX_QUEUED_LINES:
            self._lines.put(line)
        else:
            self._dropped += 1

    def _stderr_loop(self, stderr: IO[bytes]) -> None:
        try:
            for raw in iter(lambda: stderr.readline(MAX_LINE), b""):
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                self.stderr_tail.append(_cut(line))
                log.debug("%s stderr: %s", self.label, _cut(line))
        except (OSError, ValueError):
            pass

    # -- the caller's side ---------------------------------------------------------------------
    def send(self, line: str) -> None:
        """Queue one line for the engine; EngineExited if it is known to be gone."""
        if not self.alive:
            raise EngineExited(self._gone("before the bridge could send " + _cut(line)))
        log.debug("%s <- %s", self.label, _cut(line))
        self._outbox.put(line.encode() + b"\n")

    def read_line(self, deadline: float, waiting_for: str) -> str:
        """The next line, waiting until ``deadline`` (time.monotonic()) at the latest."""
        if self._eof:
            raise EngineExited(self._gone(f"while the bridge waited for {waiting_for}"))
        try:
            line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise EngineTimeout(f"still waiting for {waiting_for} at the deadline") from None
        if line is None:
            self._eof = True
            raise EngineExited(self._gone(f"while the bridge waited for {waiting_for}"))
        log.debug("%s -> %s", self.label, _cut(line))
        return line

    def drain(self) -> list[str]:
        """Lines the engine sent that nobody asked for (they are discarded)."""
        out: list[str] = []
        while True:
            try:
                line = self._lines.get_nowait()
            except queue.Empty:
                break
            if line is None:
                self._eof = True
                break
            out.append(line)
        if self._dropped:
            out.append(f"<{self._dropped} more lines dropped>")
            self._dropped = 0
        return out

    def _gone(self, when: str) -> str:
        try:
            code: int | None = self._proc.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            code = None
        how = "closed its output" if code is None else f"exited with code {code}"
        if code is not None:  # its stderr is closed too: let the reader take the last lines
            self._threads[2].join(timeout=0.5)
        tail = " | ".join(self.stderr_tail)
        return f"{how} {when}" + (f"; its last stderr: {tail}" if tail else "")

    def stop(self, quit_timeout: float = 1.0, term_timeout: float = 1.0) -> int:
        """Ask the engine to quit; terminate it if it does not; kill it if that fails too."""
        if self._proc.returncode is None and not self._write_failed:
            self._outbox.put(b"quit\n")
        self._outbox.put(None)  # then close its stdin
        try:
            return self._finish(self._proc.wait(timeout=quit_timeout))
        except subprocess.TimeoutExpired:
            log.warning("%s did not quit within %.1f s; terminating it", self.label, quit_timeout)
        self._signal(signal.SIGTERM)
        try:
            return self._finish(self._proc.wait(timeout=term_timeout))
        except subprocess.TimeoutExpired:
            log.warning("%s ignored SIGTERM for %.1f s; killing it", self.label, term_timeout)
        self._signal(SIGKILL)
        return self._finish(self._proc.wait())

    def kill(self) -> int:
        """Kill the engine (and its process group) at once."""
        self._signal(SIGKILL)
        self._outbox.put(None)
        return self._finish(self._proc.wait())

    def _signal(self, sig: signal.Signals) -> None:
        """Signal the engine's process group; only while it is unreaped, so that its id
        cannot have been reused by another process."""
        if self._proc.returncode is not None:
            return
        try:
            if os.name == "posix":
                os.killpg(self._proc.pid, sig)
            elif sig == SIGKILL:
                self._proc.kill()
            else:
                self._proc.terminate()
        except (ProcessLookupError, PermissionError):
            pass

    def _finish(self, code: int) -> int:
        for t in self._threads:
            t.join(timeout=0.5)
        return code


def _options_text(options: Mapping[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in options.items()) or "-"


class EngineBot(Bot):
    """A bot that asks an external engine (``command``, a program and its arguments).

    The engine is started by the first :meth:`new_game` (or :meth:`start`) and kept for the
    following games; call :meth:`close` (or use ``with``) when done. Timing: each request for
    a move suggests ``think`` = ``budget.seconds_for_move(ply)`` and allows up to
    ``2 * think + grace_s``, never beyond the clock (less a small margin); an engine silent
    past that is killed. ``startup_timeout_s`` bounds the handshake and ``newgame``.
    """

    name = "engine"

    def __init__(self, command: Sequence[str], seed: int | None = None, *,
                 grace_s: float = 1.0, startup_timeout_s: float = 10.0,
                 quit_timeout_s: float = 1.0, cwd: str | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        super().__init__(seed)
        if isinstance(command, str) or not command:
            raise ValueError("command must be a non-empty list: the program and its arguments")
        self.command = list(command)
        self.grace_s = grace_s
        self.startup_timeout_s = startup_timeout_s
        self.quit_timeout_s = quit_timeout_s
        self.cwd = cwd
        self.env = env
        self.engine_id: dict[str, str] = {}  # from the engine's "id <key> <value>" lines
        self._proc: EngineProcess | None = None
        self._game: tuple[str, dict[str, int | str], int] | None = None
        self._ready = False  # the running engine has accepted the current game
        self._restarts_left = RESTARTS_PER_GAME
        self._refused: str | None = None

    # -- copies: the match runner copies (or pickles) bots for every game ----------------------
    def _config(self) -> dict[str, Any]:
        return {"command": self.command, "seed": self.seed, "grace_s": self.grace_s,
                "startup_timeout_s": self.startup_timeout_s,
                "quit_timeout_s": self.quit_timeout_s, "cwd": self.cwd, "env": self.env}

    def __deepcopy__(self, memo: dict[int, Any]) -> EngineBot:
        """A fresh bot with the same command and settings, whose engine is not started yet
        (a running engine cannot be copied)."""
        return EngineBot(**self._config())

    def __getstate__(self) -> dict[str, Any]:
        return self._config()

    def __setstate__(self, state: dict[str, Any]) -> None:
        EngineBot.__init__(self, **state)

    def __del__(self) -> None:
        """A bot dropped without close() still takes its engine with it."""
        proc = getattr(self, "_proc", None)
        if proc is not None:
            with contextlib.suppress(Exception):
                proc.kill()

    @property
    def engine_name(self) -> str:
        """The name the engine gave in the handshake, else its command line."""
        return self.engine_id.get("name") or _cut(" ".join(
            [os.path.basename(self.command[0]), *self.command[1:]]))

    def __repr__(self) -> str:
        return f"<EngineBot {self.engine_name!r} {' '.join(self.command)!r}>"

    # -- the Bot interface ---------------------------------------------------------------------
    def new_game(self, game_key: str, options: dict[str, Any], seat: int) -> None:
        """Tell the engine about a new game, starting it first if needed. Never raises for
        engine trouble: a failed start is retried (as the game's one restart) at the first
        move, and a refused game makes the first move resign."""
        game = engine.get_game(game_key)
        self._game = (game.key, game.normalize_options(options), seat)
        self._restarts_left = RESTARTS_PER_GAME
        self._refused = None
        self._ready = False
        try:
            self._prepare(time.monotonic() + self.startup_timeout_s)
        except EngineRefused as e:
            self._refused = str(e)
            log.error("engine %s refused the game %s: %s", self.engine_name, game.key, e)
        except EngineFailure as e:
            log.warning("engine %s failed to start the game: %s; will restart it at its "
                        "first move", self.engine_name, e)
            self._discard()

    def choose_move(self, state: engine.State, budget: TimeBudget) -> str:
        """The engine's move for ``state`` as canonical text; raises BridgeResign if the
        engine resigns or fails beyond what the bridge forgives (see the module doc)."""
        started = time.monotonic()
        clock_deadline = self._clock_deadline(started, budget)
        min_attempt = (MIN_ATTEMPT_MS / 1000 if clock_deadline is None
                       else margin_ms(clock_deadline - started, MIN_ATTEMPT_MS / 1000))
        think = budget.seconds_for_move(state.ply)
        options = dict(state.options)
        if self._game is None or self._game[:2] != (state.game.key, options):
            self.new_game(state.game.key, options, state.to_move)
        bad_answer: str | None = None
        while True:
            if self._refused is not None:
                self._resign(self._refused)
            now = time.monotonic()
            deadline = now + 2 * think + self.grace_s
            if clock_deadline is not None:
                deadline = min(deadline, clock_deadline)
            if deadline - now < min_attempt:
                self._resign("no time left on the clock to get a move from the engine")
            try:
                if not self._ready:
                    self._restart(clock_deadline)
                    continue  # recompute the time left after the restart
                kind, text = self._ask(state, think, deadline, budget)
            except EngineRefused as e:
                self._refused = str(e)
                continue
            except EngineFailure as e:
                self._failed(e)
                continue
            if kind == "resign":
                log.info("engine %s resigned", self.engine_name)
                raise BridgeResign("the engine resigned")
            if kind == "move":
                try:
                    return state.parse_move(text).text
                except engine.IllegalMove as e:
                    kind, text = "illegal", str(e)
            if bad_answer is not None:
                self._resign(f"a second bad answer in one turn ({kind}: {_cut(text)}) "
                             f"after {bad_answer}")
            bad_answer = f"{kind}: {_cut(text)}"
            log.warning("engine %s gave a bad answer (%s); sending 'error %s' and asking "
                        "once more", self.engine_name, bad_answer, kind)
            try:
                self._send(f"error {kind} {' '.join(text.split())}")
            except EngineFailure as e:
                self._failed(e)

    def game_over(self, winner: int | None, reason: str | None = None) -> None:
        """Tell the engine the result (``reason``, e.g. "resign", is optional)."""
        self._game = None
        self._ready = False
        if self._proc is not None and self._proc.alive:
            text = "none" if winner is None else str(winner)
            with contextlib.suppress(EngineFailure):
                self._send(f"result {text}" + (f" {reason}" if reason else ""))

    # -- starting and stopping -----------------------------------------------------------------
    def start(self, deadline: float | None = None) -> None:
        """Start the engine and do the handshake (EngineFailure / EngineRefused if it fails)."""
        self._discard()
        if deadline is None:
            deadline = time.monotonic() + self.startup_timeout_s
        proc = EngineProcess(self.command, label=f"engine {self.engine_name}",
                             cwd=self.cwd, env=self.env)
        self._proc = proc
        log.info("started engine %s (pid %d): %s", self.engine_name, proc.pid,
                 " ".join(self.command))
        hello = f"tessera {PROTOCOL_VERSION}"
        proc.send(hello)
        ids: dict[str, str] = {}
        while True:
            word, rest = self._read_answer(deadline, hello, ("id", "ok", "error"))
            if word == "id":
                key, _, value = rest.partition(" ")
                ids[key] = value.strip()
            elif word == "error":
                raise EngineRefused(f"the handshake: {rest}")
            elif not rest:
                break
            else:
                raise EngineFailure(f"'ok {_cut(rest)}' in answer to {hello!r}: expected 'ok'")
        self.engine_id = ids
        proc.label = f"engine {self.engine_name}"
        log.info("engine %s is ready (%s)", self.engine_name,
                 ", ".join(f"{k}: {v}" for k, v in ids.items()) or "no id lines")

    def close(self) -> None:
        """Stop the engine: ``quit``, then SIGTERM, then SIGKILL. Safe to call twice."""
        proc, self._proc, self._ready = self._proc, None, False
        if proc is not None:
            code = proc.stop(self.quit_timeout_s, self.quit_timeout_s)
            log.info("engine %s stopped (exit code %s)", self.engine_name, code)

    def __enter__(self) -> EngineBot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the pieces ----------------------------------------------------------------------------
    def _prepare(self, deadline: float) -> None:
        """Make sure an engine is running, then send it ``newgame`` and wait for ``ok``."""
        assert self._game is not None
        if self._proc is None or not self._proc.alive:
            self.start(deadline)
        key, options, seat = self._game
        self._send(f"newgame {key} {_options_text(options)} {seat}")
        word, rest = self._read_answer(deadline, "newgame", ("ok", "error"))
        if word == "error":
            raise EngineRefused(f"newgame {key}: {rest}")
        self._ready = True

    def _restart(self, clock_deadline: float | None) -> None:
        """Start the engine afresh within ``startup_timeout_s`` and the clock."""
        if self._restarts_left <= 0:
            self._resign("the engine failed again after its restart")
        self._restarts_left -= 1
        log.warning("restarting engine %s (the one restart allowed per game)", self.engine_name)
        self._discard()
        deadline = time.monotonic() + self.startup_timeout_s
        self._prepare(deadline if clock_deadline is None else min(deadline, clock_deadline))

    def _ask(self, state: engine.State, think: float, deadline: float,
             budget: TimeBudget) -> tuple[str, str]:
        """Send the position and ``go``; return ("move", text), ("resign", "") or
        ("malformed", why) for any other answer."""
        self._send(f"position {state.to_text()}")
        if len(state.moves) == state.ply:  # the full history is known
            self._send(" ".join(["moves", *state.moves]))
        window_ms = int((deadline - time.monotonic()) * 1000)
        think_ms = max(1, min(int(think * 1000), window_ms))
        clock = "-" if budget.remaining_ms is None else str(budget.remaining_ms)
        per_move = "-" if budget.per_move_ms is None else str(budget.per_move_ms)
        self._send(f"go think={think_ms} deadline={window_ms} clock={clock} "
                   f"inc={budget.increment_ms} permove={per_move}")
        while True:
            word, rest = self._read_answer(deadline, "go", ("legal", "move", "resign", "error"),
                                           f" (allowed {window_ms} ms)")
            if word == "legal":
                self._send(" ".join(["legal", *(str(m) for m in state.legal_moves())]))
            elif word == "move" and len(rest.split()) == 1:
                return "move", rest
            elif word == "resign":
                return "resign", ""
            else:
                return "malformed", f"it answered {_cut(f'{word} {rest}'.strip())!r}"

    def _read_answer(self, deadline: float, command: str, answers: tuple[str, ...],
                     note: str = "") -> tuple[str, str]:
        """The next line that starts with one of ``answers``, as (that word, the rest).

        Blank, ``info`` and ``#`` lines are skipped; any other line is logged and skipped, so
        that an engine's stray debug output does not cost it the game.
        """
        assert self._proc is not None
        while True:
            line = self._proc.read_line(deadline, f"its answer to {command!r}{note}").strip()
            word, _, rest = line.partition(" ")
            if word in answers:
                return word, rest.strip()
            if _ignorable(line):
                if line:
                    log.debug("engine %s says: %s", self.engine_name, _cut(line))
            else:
                log.warning("engine %s: ignored a line that is no answer to %r: %r",
                            self.engine_name, command, _cut(line))

    def _send(self, line: str) -> None:
        if self._proc is None:
            raise EngineExited("the engine is not running")
        for stale in self._proc.drain():
            if not _ignorable(stale):
                log.warning("engine %s sent a line nobody asked for (ignored): %r",
                            self.engine_name, _cut(stale))
        self._proc.send(line)

    def _failed(self, error: EngineFailure) -> None:
        """Log a crash or hang, kill what is left of the engine, resign if out of restarts."""
        if isinstance(error, EngineTimeout):
            log.warning("engine %s hung: %s; killing it", self.engine_name, error)
        else:
            log.warning("engine %s crashed: %s", self.engine_name, error)
        self._discard()
        if self._restarts_left <= 0:
            self._resign(f"the engine failed again after its restart ({error})")

    def _discard(self) -> None:
        proc, self._proc, self._ready = self._proc, None, False
        if proc is not None:
            proc.kill()

    def _resign(self, reason: str) -> None:
        log.error("engine %s: resigning the game: %s", self.engine_name, reason)
        raise BridgeResign(reason)

    @staticmethod
    def _clock_deadline(started: float, budget: TimeBudget) -> float | None:
        """When the clock runs out, less the bridge's margin (which scales with the time);
        None without a clock. The budget's ``cap_ms`` is a think time, not a deadline."""
        limits = [ms for ms in (budget.remaining_ms, budget.per_move_ms) if ms is not None]
        if not limits:
            return None
        left = min(limits)
        return started + (left - margin_ms(left, MARGIN_MS)) / 1000
