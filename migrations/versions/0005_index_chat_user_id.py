"""Index chat.user_id: the guest sweep deletes users, and each deleted user is checked
against the chat lines that name it.

A foreign key's referencing column without an index makes every delete of a referenced
row scan the whole referencing table, on SQLite and PostgreSQL alike; ``chat.user_id`` was
the only such column (``games.player0_id``/``player1_id`` lead indexes of their own,
``api_tokens.user_id`` has one). The sweep also asks which guests never chatted.

It follows 0004 (ratings), which was numbered before it.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(op.f("ix_chat_user_id"), "chat", ["user_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_chat_user_id"), table_name="chat")
