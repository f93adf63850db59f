"""Add users.challenge_policy: who may challenge the user (everyone, registered players
only, nobody), the choice a player makes with ``set_challenge_policy``.

Accounts that exist take everyone's challenges, as before.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-15
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("challenge_policy", sa.String(length=16),
                                   server_default=sa.text("'everyone'"), nullable=False))
        batch.create_check_constraint(
            op.f("ck_users_challenge_policy"),
            "challenge_policy IN ('everyone', 'registered', 'nobody')")


def downgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.drop_constraint(op.f("ck_users_challenge_policy"), type_="check")
        batch.drop_column("challenge_policy")
