"""Fenced writes: the database refuses a write made under an epoch the game no longer has.

The statements live with the commit queue's batch writer, which runs them for every item
that carries an ``epoch`` (``server.storage.statements``: ``write_fenced_blocking``; the
design, and why the fence is an UPDATE, are in its docstrings and docs/SCALING.md section
4). This module names them for the cluster package.
"""

from __future__ import annotations

from server.storage.statements import Fenced, write_fenced, write_fenced_blocking

from .errors import StaleEpoch

__all__ = ["Fenced", "StaleEpoch", "write_fenced", "write_fenced_blocking"]
