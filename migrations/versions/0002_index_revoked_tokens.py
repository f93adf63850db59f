"""Index api_tokens.revoked_at: the server polls for recent revocations every second.

Without it each poll scans every token ever issued (one per login): about 120 ms at a
million tokens on SQLite; with it, a range lookup.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(op.f("ix_api_tokens_revoked_at"), "api_tokens", ["revoked_at"])


def downgrade() -> None:
    op.drop_index(op.f("ix_api_tokens_revoked_at"), table_name="api_tokens")
