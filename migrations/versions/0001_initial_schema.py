"""Initial schema: users, api_tokens, games, moves, chat.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _moment(name: str, *, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("name_key", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("password_hash", sa.String(length=255), nullable=True),
        _moment("created_at"),
        sa.Column("failed_logins", sa.Integer(), server_default=sa.text("0"), nullable=False),
        _moment("locked_until", nullable=True),
        sa.CheckConstraint("kind IN ('human', 'guest', 'bot')", name=op.f("ck_users_kind")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_users")),
        sa.UniqueConstraint("name_key", name=op.f("uq_users_name_key")),
    )
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("label", sa.String(length=64), server_default=sa.text("''"), nullable=False),
        _moment("created_at"),
        _moment("last_used_at", nullable=True),
        _moment("expires_at", nullable=True),
        _moment("revoked_at", nullable=True),
        sa.CheckConstraint("kind IN ('session', 'bot')", name=op.f("ck_api_tokens_kind")),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"],
            name=op.f("fk_api_tokens_user_id_users"), ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_tokens")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_api_tokens_token_hash")),
    )
    op.create_index(op.f("ix_api_tokens_user_id"), "api_tokens", ["user_id"])

    op.create_table(
        "games",
        sa.Column("id", sa.String(length=16), nullable=False),
        sa.Column("game_key", sa.String(length=32), nullable=False),
        sa.Column("options", sa.JSON(), nullable=False),
        sa.Column("clock", sa.JSON(), nullable=False),
        sa.Column("rules_version", sa.String(length=32), nullable=False),
        sa.Column("player0_id", sa.Integer(), nullable=False),
        sa.Column("player1_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=8), nullable=False),
        sa.Column("winner", sa.SmallInteger(), nullable=True),
        sa.Column("reason", sa.String(length=32), nullable=True),
        _moment("created_at"),
        _moment("started_at"),
        _moment("ended_at", nullable=True),
        sa.Column("last_seq", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.CheckConstraint(
            "(status = 'playing' AND ended_at IS NULL)"
            " OR (status <> 'playing' AND ended_at IS NOT NULL)",
            name=op.f("ck_games_ended_at"),
        ),
        sa.CheckConstraint(
            "status IN ('playing', 'over', 'aborted')", name=op.f("ck_games_status")
        ),
        sa.CheckConstraint(
            "winner IS NULL OR (winner IN (0, 1) AND status = 'over')",
            name=op.f("ck_games_winner"),
        ),
        sa.ForeignKeyConstraint(
            ["player0_id"], ["users.id"], name=op.f("fk_games_player0_id_users")
        ),
        sa.ForeignKeyConstraint(
            ["player1_id"], ["users.id"], name=op.f("fk_games_player1_id_users")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_games")),
    )
    # History listings: newest first, overall and by player, game, status.
    op.create_index("ix_games_ended_at_id", "games", ["ended_at", "id"])
    op.create_index("ix_games_player0_id_ended_at_id", "games", ["player0_id", "ended_at", "id"])
    op.create_index("ix_games_player1_id_ended_at_id", "games", ["player1_id", "ended_at", "id"])
    op.create_index("ix_games_game_key_ended_at_id", "games", ["game_key", "ended_at", "id"])
    op.create_index("ix_games_status_ended_at_id", "games", ["status", "ended_at", "id"])

    op.create_table(
        "moves",
        sa.Column("game_id", sa.String(length=16), nullable=False),
        sa.Column("ply", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("move", sa.String(length=256), nullable=False),
        sa.Column("player", sa.SmallInteger(), nullable=False),
        sa.Column("ms_used", sa.BigInteger(), nullable=False),
        sa.Column("clock_ms", sa.BigInteger(), nullable=True),
        _moment("played_at"),
        sa.CheckConstraint("ms_used >= 0", name=op.f("ck_moves_ms_used")),
        sa.CheckConstraint("player IN (0, 1)", name=op.f("ck_moves_player")),
        sa.CheckConstraint("ply >= 0", name=op.f("ck_moves_ply")),
        sa.ForeignKeyConstraint(
            ["game_id"], ["games.id"], name=op.f("fk_moves_game_id_games"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("game_id", "ply", name=op.f("pk_moves")),
        sa.UniqueConstraint("game_id", "seq", name=op.f("uq_moves_game_id_seq")),
    )
    op.create_table(
        "chat",
        sa.Column("game_id", sa.String(length=16), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        _moment("sent_at"),
        sa.ForeignKeyConstraint(
            ["game_id"], ["games.id"], name=op.f("fk_chat_game_id_games"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_chat_user_id_users")),
        sa.PrimaryKeyConstraint("game_id", "seq", name=op.f("pk_chat")),
    )


def downgrade() -> None:
    op.drop_table("chat")
    op.drop_table("moves")
    op.drop_table("games")
    op.drop_table("api_tokens")
    op.drop_table("users")
