"""Deleted accounts: users.deleted_at, and held_names, the former names of deleted
accounts that nobody may register for a while (``delete_account``).

A deleted account keeps its row (its games and ratings name it) under an anonymous name,
with ``deleted_at`` set. Accounts that exist are not deleted.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-20
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        "held_names",
        sa.Column("name_key", sa.String(64), nullable=False),
        sa.Column("held_until", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name_key", name=op.f("pk_held_names")),
    )


def downgrade() -> None:
    op.drop_table("held_names")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("deleted_at")
