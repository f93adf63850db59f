"""Crash test: ``tessera chaos --games N --kills M [--json]``.

Runs N live games between bot clients against a real server process and kills the server
with SIGKILL at random moments, M times, restarting it on the same database each time.
Every client keeps a ledger of the moves the server acknowledged, reconnects with its
session token after each crash and resumes its game. At the end it checks that:

- every game resumed and finished;
- no acknowledged move is missing from the database, and none is stored twice;
- every stored game re-plays through the engine to its stored result;
- the stored ratings equal their recomputation from the stored games
  (``tessera ratings verify``): every other game is rated, between registered players;
- SQLite's ``PRAGMA integrity_check`` answers ``ok``.

``--json`` prints one JSON object as the last line with ``games``, ``finished``, ``kills``,
``acknowledged``, ``lost``, ``duplicated``, ``replay_mismatches``, ``rated``,
``rating_differences`` and ``integrity`` (and
``interrupted``: games in progress at one kill or more; ``reconnects``; ``seconds``). The
run fails (exit status 1) if a check fails or the games ended before all M kills were made.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websockets.exceptions import ConnectionClosed, InvalidHandshake

import engine
import protocol as p

from .connection import Connection, Disconnected, ServerError
from .localserver import LocalServer
from .privatecluster import DEFAULT_DB, PrivateCluster
from .stored import problems, records, sqlite_file_url

GAMES: list[tuple[str, dict[str, Any]]] = [
    ("hadron", {"size": 5}),
    ("xodd", {"size": 5}),
    ("yodd", {"size": 3}),
    ("hexifact", {"board": "hex4"}),
]
NETWORK_ERRORS = (Disconnected, ConnectionClosed, OSError, InvalidHandshake,
                  asyncio.TimeoutError)


@dataclass
class Ledger:
    """What the server acknowledged to this client: (game_id, ply) -> move text."""

    acked: dict[tuple[str, int], str] = field(default_factory=dict)
    times: dict[tuple[str, int], float] = field(default_factory=dict)  # when acknowledged


class ChaosPlayer:
    """A client that plays one game to its end through any number of server crashes."""

    def __init__(self, url: str | list[str], token: str, name: str, ledger: Ledger,
                 rng: random.Random, think_s: float) -> None:
        self.urls = [url] if isinstance(url, str) else url  # a cluster's: tried in turn
        self.url = self.urls[0]
        self.token = token
        self.name = name
        self.ledger = ledger
        self.rng = rng
        self.think_s = think_s
        self.game_id: str | None = None
        self.result: p.GameOver | p.Result | None = None
        self.reconnects = 0

    async def play(self, game_id: str) -> None:
        self.game_id = game_id
        while self.result is None:
            try:
                conn = await Connection.open(self.url, client="tessera-chaos", open_timeout=5)
            except NETWORK_ERRORS:
                self._next_node()
                await asyncio.sleep(0.2)
                continue
            try:
                await conn.call(p.AuthToken, token=self.token)
                while self.result is None:  # a resync resumes on the same connection
                    await self._session(conn)
            except NETWORK_ERRORS:
                self.reconnects += 1
                self._next_node()
                await asyncio.sleep(0.1)
            finally:
                await conn.close()

    def _next_node(self) -> None:
        """A cluster's next node (a load balancer would pick a live one)."""
        self.url = self.urls[(self.urls.index(self.url) + 1) % len(self.urls)]

    async def _session(self, conn: Connection) -> None:
        """Resume the game from scratch (seq 0), then play until it ends or we drop."""
        assert self.game_id is not None
        state: engine.State | None = None
        seat = 0
        last_seq = 0
        reply = await conn.call(p.Resume, game_id=self.game_id, since_seq=0)
        if isinstance(reply, p.GameState):
            snap = reply.game
            seat = 0 if snap.players[0].name == self.name else 1
            state = engine.replay(snap.game, snap.options, [m.move for m in snap.moves])
            last_seq = snap.seq
            if snap.status == "over":
                self.result = snap.result
                return
        while True:
            if state is not None and not state.is_over and state.to_move == seat:
                await asyncio.sleep(self.rng.random() * self.think_s)
                move = state.random_move(self.rng).text
                try:
                    ack = await conn.call(p.Move, game_id=self.game_id, ply=state.ply, move=move)
                except ServerError as exc:
                    if exc.code in (p.ErrorCode.STALE_PLY, p.ErrorCode.GAME_OVER):
                        return  # our view is behind: resync from a fresh resume
                    if exc.code == p.ErrorCode.INTERNAL_ERROR:  # not stored (a failover)
                        await asyncio.sleep(0.1)
                        return
                    raise
                assert isinstance(ack, p.MoveAck)
                self.ledger.acked[self.game_id, ack.ply] = move
                self.ledger.times[self.game_id, ack.ply] = time.monotonic()
            event = await conn.next_event(timeout=30)
            if isinstance(event, p.GameState) and event.game.game_id == self.game_id:
                return  # unasked: a cluster node took the game over; resync
            seq = getattr(event, "seq", None)
            if getattr(event, "game_id", None) != self.game_id or seq is None:
                continue
            if isinstance(event, p.GameStarted):
                snap = event.snapshot
                seat = 0 if snap.players[0].name == self.name else 1
                state = engine.new_game(snap.game, **snap.options)
                last_seq = seq
            elif isinstance(event, p.Moved | p.GameOver | p.ChatMessage) and seq > last_seq:
                last_seq = seq
                if isinstance(event, p.Moved) and state is not None:
                    if event.ply != state.ply:
                        return  # a gap: resync
                    state = state.play(event.move)
                elif isinstance(event, p.GameOver):
                    self.result = event
                    return


async def _guest(url: str) -> tuple[str, str]:
    async with await Connection.open(url) as conn:
        authed = await conn.call(p.Guest)
        assert isinstance(authed, p.Authed)
        return authed.user.name, authed.session_token


async def _registered(url: str, name: str) -> tuple[str, str]:
    async with await Connection.open(url) as conn:
        authed = await conn.call(p.Register, username=name, password="chaos-password")
        assert isinstance(authed, p.Authed)
        return authed.user.name, authed.session_token


# The servers chaos starts serve its players alone, all from this machine's one address:
# no per-address budget of guests or logins, and no bound on the password hashes waiting.
OWN_SERVER_ARGS = ("--guests-per-hour", "0", "--logins-per-minute", "0", "--hash-queue", "0")

RATED_CLOCK = p.Fischer(base_ms=3_600_000, increment_ms=0)  # an hour: no kill flags it


async def run_chaos(games: int, kills: int, seed: int, think_s: float, workdir: Path
                    ) -> dict[str, Any]:
    rng = random.Random(seed)
    db_url = sqlite_file_url(workdir / "chaos.db")
    server = LocalServer(workdir, db_url=db_url, extra_args=OWN_SERVER_ARGS)
    server.start()
    url = server.url
    ledger = Ledger()
    done_kills = 0
    try:
        created = await _start_games([url], games)
        players = []
        for game_id, a, b in created:
            for name, token in (a, b):
                player = ChaosPlayer(url, token, name, ledger, random.Random(rng.random()),
                                     think_s)
                players.append((player, game_id))
        tasks = [asyncio.create_task(pl.play(gid)) for pl, gid in players]
        interrupted: set[str] = set()  # games in progress at a kill, which had to resume
        while done_kills < kills and not all(t.done() for t in tasks):
            # Kill after a random number of acknowledged moves, so that kills land while
            # games are live however fast they go (with games in parallel, other moves are
            # in flight at that moment), and at a random moment within a few milliseconds.
            target = len(ledger.acked) + rng.randint(1, games)
            while len(ledger.acked) < target and not all(t.done() for t in tasks):
                await asyncio.sleep(0.005)
            await asyncio.sleep(rng.random() * 0.02)
            if all(t.done() for t in tasks):
                break
            interrupted.update(gid for (_, gid), t in zip(players, tasks, strict=True)
                               if not t.done())
            server.kill()
            done_kills += 1
            await asyncio.sleep(rng.random() * 0.5)
            await asyncio.to_thread(server.start)
        await asyncio.wait_for(asyncio.gather(*tasks), timeout=300)
    finally:
        server.stop()
    return {**check(db_url, ledger), "games": games, "kills": done_kills,
            "interrupted": len(interrupted),
            "reconnects": sum(pl.reconnects for pl, _ in players)}


async def _start_games(urls: list[str], n: int
                       ) -> list[tuple[str, tuple[str, str], tuple[str, str]]]:
    """Create N games, every other one rated between registered players (the others
    casual between guests); return (game_id, (name, token) x2). On a cluster (several
    ``urls``) game i's players are on nodes i and i + 1 (the second accepts, so its node
    owns the game and the first plays it from another node)."""
    out = []
    for i in range(n):
        url_a, url_b = urls[i % len(urls)], urls[(i + 1) % len(urls)]
        rated = i % 2 == 0
        if rated:
            a, b = await _registered(url_a, f"ca{i}"), await _registered(url_b, f"cb{i}")
        else:
            a, b = await _guest(url_a), await _guest(url_b)
        game, options = GAMES[i % len(GAMES)]
        async with await Connection.open(url_a) as ca, await Connection.open(url_b) as cb:
            await ca.call(p.AuthToken, token=a[1])
            await cb.call(p.AuthToken, token=b[1])
            created = await ca.call(p.Challenge, to=b[0], game=game, options=options,
                                    clock=RATED_CLOCK if rated else p.Unlimited(),
                                    color=i % 2, rated=True if rated else None)
            assert isinstance(created, p.ChallengeCreated)
            await cb.call(p.AcceptChallenge, challenge_id=created.challenge_id)
            started = await ca.wait_for(p.GameStarted)
        out.append((started.game_id, a, b))
    return out


async def run_cluster_chaos(games: int, kills: int, nodes: int, seed: int, think_s: float,
                            workdir: Path, db_url: str, redis_url: str | None, lease_ms: int
                            ) -> dict[str, Any]:
    """``run_chaos`` on a cluster of ``nodes``: a random node is SIGKILLed M times (and
    started again after a moment, in the background); ``failover_*``: from a kill until
    each game the dead node owned accepted a move again.

    One failover at a time: the next kill waits until every game the last victim owned has
    accepted a move again (or ended, or 30 s passed), so that no failover is timed across
    two kills; it does not wait for the victim's restart (3 to 6 s on a loaded machine,
    long enough for the games to end before the last kill) and picks one of the nodes that
    are up, leaving one up at least."""
    rng = random.Random(seed)
    ledger = Ledger()
    done_kills = 0
    failovers: list[float] = []
    async with PrivateCluster(workdir, nodes, db_url=db_url, redis_url=redis_url,
                              lease_ms=lease_ms,
                              extra_args=OWN_SERVER_ARGS) as cluster:
        for node in cluster.nodes:
            await asyncio.to_thread(node.start)
        urls = cluster.urls
        created = await _start_games(urls, games)
        players = []
        for index, (game_id, a, b) in enumerate(created):
            for offset, (name, token) in enumerate((a, b)):
                turn = (index + offset) % nodes  # each player starts on their own node
                player = ChaosPlayer(urls[turn:] + urls[:turn], token, name, ledger,
                                     random.Random(rng.random()), think_s)
                players.append((player, game_id))
        tasks = [asyncio.create_task(pl.play(gid)) for pl, gid in players]
        interrupted: set[str] = set()
        orphaned: list[tuple[float, str]] = []  # (kill time, a game the dead node owned)
        restarts: dict[int, asyncio.Task[None]] = {}  # node index -> its restart

        async def restart(index: int) -> None:
            await asyncio.sleep(rng.random() * 0.5)
            await asyncio.to_thread(cluster.nodes[index].start)

        by_game: dict[str, list[asyncio.Task[None]]] = {}
        for (_, game_id), task in zip(players, tasks, strict=True):
            by_game.setdefault(game_id, []).append(task)

        def recovered(killed_at: float, game_id: str) -> bool:
            return all(t.done() for t in by_game[game_id]) or any(
                g == game_id and t > killed_at for (g, _), t in ledger.times.items())

        def live_games() -> list[str]:
            return sorted({gid for (_, gid), t in zip(players, tasks, strict=True)
                           if not t.done()})

        reading: asyncio.Task[dict[str, str | None]] | None = None
        try:
            while done_kills < kills and not all(t.done() for t in tasks):
                last = [(k, g) for k, g in orphaned if k == orphaned[-1][0]] if orphaned else []
                while (last and time.monotonic() < last[0][0] + 30
                       and not all(recovered(k, g) for k, g in last)):
                    await asyncio.sleep(0.01)
                # who owns each game, read while the play goes on to the kill: a read is
                # a command's process (most of a second on a busy machine), too slow to
                # make just before a kill, and after one the survivors take the dead
                # node's games within moments
                if reading is None:
                    reading = asyncio.create_task(cluster.lease_owners(live_games()))
                # as many acknowledged moves at most as games in progress: a kill and a
                # restart take seconds here, and the kills must land before the games end
                playing = sum(not t.done() for t in tasks) // 2 or 1
                target = len(ledger.acked) + rng.randint(1, playing)
                while len(ledger.acked) < target and not all(t.done() for t in tasks):
                    await asyncio.sleep(0.005)
                await asyncio.sleep(rng.random() * 0.02)
                if all(t.done() for t in tasks):
                    break
                live = live_games()
                up = [i for i in range(nodes) if i not in restarts or restarts[i].done()]
                if len(up) < 2:  # leave a node up: wait for a restart
                    await asyncio.wait([restarts[i] for i in range(nodes) if i not in up],
                                       return_when=asyncio.FIRST_COMPLETED)
                    continue
                victim = rng.choice(up)
                if victim in restarts:
                    restarts.pop(victim).result()  # it started again (or raise why not)
                owners, reading = await reading, None
                killed_at = time.monotonic()
                cluster.nodes[victim].kill()
                orphaned += [(killed_at, g) for g, owner in owners.items()
                             if owner == f"n{victim}" and g in live]
                interrupted.update(live)
                done_kills += 1
                restarts[victim] = asyncio.create_task(restart(victim))
            await asyncio.wait_for(asyncio.gather(*tasks, *restarts.values()), timeout=600)
        finally:
            for task in tasks:
                task.cancel()
            if reading is not None:
                reading.cancel()
                await asyncio.gather(reading, return_exceptions=True)
        for killed_at, game_id in orphaned:
            after = [t for (g, _), t in ledger.times.items() if g == game_id and t > killed_at]
            if after:
                failovers.append(min(after) - killed_at)
        checked = check(cluster.db_url, ledger)
    failovers.sort()
    return {**checked, "games": games, "kills": done_kills, "nodes": nodes,
            "interrupted": len(interrupted),
            "reconnects": sum(pl.reconnects for pl, _ in players),
            "failovers_measured": len(failovers),
            "failover_p50_s": round(_quantile(failovers, 0.5), 2),
            "failover_p99_s": round(_quantile(failovers, 0.99), 2)}


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def check(db_url: str, ledger: Ledger) -> dict[str, Any]:
    """Compare the ledger with what the server stored and re-play every stored game;
    ``integrity``: ``ok`` if ``tessera db check`` finds the store whole (on SQLite, the file
    too) and every stored game's event numbers are in order, else the first problem."""
    stored: dict[tuple[str, int], str] = {}
    duplicated = finished = mismatches = 0
    seq_order_ok = True
    dumped = list(records(db_url))
    for record in dumped:
        plies = [m["ply"] for m in record["moves"]]
        seqs = [m["seq"] for m in record["moves"] if "seq" in m]
        seq_order_ok = seq_order_ok and seqs == sorted(set(seqs))
        duplicated += len(plies) - len(set(plies))
        for m in record["moves"]:
            stored[record["game_id"], m["ply"]] = m["move"]
        try:
            state = engine.replay(record["game"], record["options"],
                                  [m["move"] for m in record["moves"]])
        except engine.IllegalMove:
            mismatches += 1
            continue
        result = record.get("result")
        if record["status"] == "over":
            finished += 1
            if result is None or (result["reason"] == "normal" and (
                    not state.is_over or state.winner != result.get("winner"))):
                mismatches += 1
        elif state.is_over:
            mismatches += 1
    lost = sum(1 for key, move in ledger.acked.items() if stored.get(key) != move)
    found = problems(db_url)
    integrity = found[0] if found else "ok" if seq_order_ok else "event numbers out of order"
    # the ratings: recomputed from the stored games by `tessera ratings verify`
    rated = sum(1 for record in dumped if record.get("rated"))
    differences = 0
    if rated:
        ratings = subprocess.run([sys.executable, "-m", "server", "ratings", "verify", "--db",
                                  db_url], capture_output=True, text=True)
        differences = len(ratings.stdout.splitlines()) if ratings.returncode == 1 else 0
        if ratings.returncode not in (0, 1):
            differences = -1  # it could not run: a failure too
            print(ratings.stderr, file=sys.stderr)
    return {"finished": finished, "acknowledged": len(ledger.acked), "lost": lost,
            "duplicated": duplicated, "replay_mismatches": mismatches, "rated": rated,
            "rating_differences": differences, "integrity": integrity}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="tessera chaos",
        description="Crash test: N live games against a real server that is killed "
                    "(SIGKILL) M times and restarted; then checks that no acknowledged move "
                    "was lost or stored twice and every game replays to its result (see "
                    "docs/RELIABILITY.md).")
    parser.add_argument("--games", type=int, default=20,
                        help="live games, N (default: %(default)s)")
    parser.add_argument("--kills", type=int, default=5,
                        help="server kills, M (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=1,
                        help="seed of the kill times and the bots (default: %(default)s)")
    parser.add_argument("--think", type=float, default=None,
                        help="a bot waits up to this many seconds before each move (raise "
                             "it if the games end before all the kills are made; default: "
                             "0.05, and 1.0 with --nodes, where a kill and a restart take "
                             "seconds)")
    parser.add_argument("--nodes", type=int, default=0,
                        help="run a cluster of this many nodes on PostgreSQL and Redis (each "
                             "game's players on two different nodes) and kill a random node "
                             "each time; reports failover_p50_s and failover_p99_s")
    parser.add_argument("--db", default=DEFAULT_DB,
                        help="with --nodes: the PostgreSQL server (a schema of the run's own "
                             "is made and dropped; default: %(default)s)")
    parser.add_argument("--cluster", default=None, metavar="REDIS_URL",
                        help="with --nodes: the Redis to use (a cluster name of the run's "
                             "own, deleted after); default: a private redis-server on a free "
                             "port if installed, else redis://127.0.0.1:6379/0")
    parser.add_argument("--lease-ms", type=int, default=3000,
                        help="with --nodes: the nodes' lease (default: %(default)s)")
    parser.add_argument("--json", action="store_true", help="print one JSON object last")
    opts = parser.parse_args(argv)
    if opts.think is None:
        opts.think = 1.0 if opts.nodes else 0.05
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tessera-chaos-") as tmp:
        if opts.nodes:
            result = asyncio.run(run_cluster_chaos(
                opts.games, opts.kills, opts.nodes, opts.seed, opts.think, Path(tmp),
                opts.db, opts.cluster, opts.lease_ms))
        else:
            result = asyncio.run(run_chaos(opts.games, opts.kills, opts.seed, opts.think,
                                           Path(tmp)))
    result["seconds"] = round(time.monotonic() - started, 1)
    ok = (result["kills"] == opts.kills and result["finished"] == result["games"]
          and result["lost"] == 0
          and result["duplicated"] == 0 and result["replay_mismatches"] == 0
          and result["rating_differences"] == 0 and result["integrity"] == "ok")
    if opts.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>18}: {value}")
        print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
