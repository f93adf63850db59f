"""The ``mcts`` bot: Monte Carlo tree search (UCT) with the engine's fast random playouts.

Each iteration walks down the tree by UCB1, adds one child, plays the position out at
random (``State.playout``) and backs the result up. Children are added by progressive
widening: a node with ``n`` visits has at most ``1 + widening * sqrt(n)`` children, so even
Xodd's ~12,000 turns per position leave room for depth. The root's candidate moves are
ranked by the greedy evaluation, so the first children searched are the promising ones; a
move that wins at once is played without searching. Deeper nodes take their moves in random
order: all legal moves for games with short move lists, ``State.random_move`` draws for
games with huge ones.

The search stops after ``iterations`` iterations if given (deterministic for a seed), else
at the time ``time_limit`` or the budget allows. The move played is the most visited child.
"""

from __future__ import annotations

import math
import time

import engine

from . import heuristics
from .base import Bot, TimeBudget, register

ROOT_SAMPLES = 300  # random draws among the root's candidates in games with huge move lists
RANKING_SHARE = 0.3  # at most this share of the think time goes to ranking the root moves
SAMPLE_TRIES = 8  # random_move draws to find one new child in a huge game before giving up


class _Node:
    """A tree node: a state, the move that led to it and whose move that was."""

    __slots__ = ("children", "move", "parent", "player", "seen", "state", "untried", "value",
                 "visits")

    def __init__(self, state: engine.State, parent: _Node | None, move: engine.Move | None
                 ) -> None:
        self.state = state
        self.parent = parent
        self.move = move
        self.player = 1 - state.to_move  # the player who made ``move``
        self.children: list[_Node] = []
        self.untried: list[engine.Move] | None = None  # next candidates, best last
        self.seen: set[str] = set()  # texts of moves already tried (sampled nodes)
        self.visits = 0
        self.value = 0.0  # total reward for ``player``


@register
class MctsBot(Bot):
    """UCT search. Options (keyword-only):

    ``iterations``: stop after this many iterations instead of on time (for tests).
    ``time_limit``: seconds per move, overriding the budget's suggestion.
    ``exploration``: UCB1 constant. ``widening``: progressive-widening factor.
    """

    name = "mcts"

    def __init__(self, seed: int | None = None, *, iterations: int | None = None,
                 time_limit: float | None = None, exploration: float = 0.7,
                 widening: float = 2.0) -> None:
        super().__init__(seed)
        if iterations is not None and iterations < 1:
            raise ValueError("iterations must be at least 1")
        self.iterations = iterations
        self.time_limit = time_limit
        self.exploration = exploration
        self.widening = widening
        self.last_iterations = 0  # iterations run for the last move (for tests and tuning)

    # -- the search loop ----------------------------------------------------------------------
    def choose_move(self, state: engine.State, budget: TimeBudget) -> str:
        start = time.perf_counter()
        seconds = self.time_limit if self.time_limit is not None else \
            budget.seconds_for_move(state.ply)
        deadline = None if self.iterations is not None else start + seconds
        root = _Node(state, None, None)
        ranking_deadline = None if deadline is None else start + RANKING_SHARE * seconds
        root.untried = self._ranked_root_moves(state, ranking_deadline)
        if len(root.untried) == 1 or self._wins_now(state, root.untried[-1]):
            self.last_iterations = 0
            return root.untried[-1].text
        done = 0
        while True:
            self._iterate(root)
            done += 1
            if deadline is None:
                if self.iterations is not None and done >= self.iterations:
                    break
            elif time.perf_counter() >= deadline:
                break
        self.last_iterations = done
        best = max(root.children, key=lambda c: (c.visits, c.value))
        assert best.move is not None
        return best.move.text

    def _iterate(self, root: _Node) -> None:
        node = root
        while not node.state.is_over:
            child = self._expand(node)
            if child is not None:
                node = child
                break
            node = self._select(node)
        reward = self._rollout(node.state)  # 1.0: player 0 wins
        up: _Node | None = node
        while up is not None:
            up.visits += 1
            up.value += reward if up.player == 0 else 1.0 - reward
            up = up.parent

    def _select(self, node: _Node) -> _Node:
        log_n = math.log(node.visits)
        c = self.exploration
        return max(node.children,
                   key=lambda ch: ch.value / ch.visits + c * math.sqrt(log_n / ch.visits))

    def _expand(self, node: _Node) -> _Node | None:
        """Add and return a new child if the node may widen and has moves left, else None."""
        if node.children and len(node.children) >= 1 + self.widening * math.sqrt(node.visits):
            return None
        move = self._next_move(node)
        if move is None:
            return None
        child = _Node(node.state.play(move), node, move)
        node.children.append(child)
        return child

    def _next_move(self, node: _Node) -> engine.Move | None:
        if node.untried is None:
            if heuristics.knowledge(node.state).huge:
                return self._sample_new_move(node)
            node.untried = node.state.legal_moves()
            self.rng.shuffle(node.untried)
        return node.untried.pop() if node.untried else None

    def _sample_new_move(self, node: _Node) -> engine.Move | None:
        for _ in range(SAMPLE_TRIES):
            move = node.state.random_move(self.rng)
            if move.text not in node.seen:
                node.seen.add(move.text)
                return move
        return None

    def _rollout(self, state: engine.State) -> float:
        end = state if state.is_over else state.playout(self.rng)
        return 1.0 if end.winner == 0 else 0.0

    # -- the root -----------------------------------------------------------------------------
    def _ranked_root_moves(self, state: engine.State, deadline: float | None
                           ) -> list[engine.Move]:
        """Root candidates, worst first (the search pops from the end), ties in random order.

        Candidates still unscored at ``deadline`` keep their random order below the rest.
        """
        know = heuristics.knowledge(state)
        moves = know.candidates(state, self.rng, ROOT_SAMPLES)
        self.rng.shuffle(moves)
        me = state.to_move
        values: dict[str, float] = {}
        for move in moves:
            if deadline is not None and time.perf_counter() >= deadline:
                break
            values[move.text] = heuristics.evaluate(state.play(move), me)
        moves.sort(key=lambda m: values.get(m.text, -math.inf))
        return moves

    @staticmethod
    def _wins_now(state: engine.State, move: engine.Move) -> bool:
        after = state.play(move)
        return after.is_over and after.winner == state.to_move
