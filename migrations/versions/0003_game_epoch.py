"""Add games.epoch: the fencing token of a live game's owner in a cluster.

A node that takes a game over bumps its epoch, and every write an owner makes carries the
epoch it holds the game at, so the database refuses the late writes of an owner that lost
the game (server/cluster/fencing.py). Games that exist start at 0, as new games do; a
single server never bumps it.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("games") as batch:
        batch.add_column(
            sa.Column("epoch", sa.Integer(), server_default=sa.text("0"), nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("games") as batch:
        batch.drop_column("epoch")
