"""Ratings: games.rated, a rating per player and pool, and each rated game's before/after.

``ratings`` holds one Glicko-2 rating per (user, pool), a pool being a game key;
``game_ratings`` one row per seat of a rated game, written in the transaction that
finishes it (docs/RATINGS.md). Games that exist are casual (``rated`` false).

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("games") as batch:
        batch.add_column(
            sa.Column("rated", sa.Boolean(), server_default=sa.text("false"), nullable=False))
    op.create_table(
        "ratings",
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("pool", sa.String(32), nullable=False),
        sa.Column("rating", sa.Double(), nullable=False),
        sa.Column("deviation", sa.Double(), nullable=False),
        sa.Column("volatility", sa.Double(), nullable=False),
        sa.Column("rated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("games", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("wins", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("losses", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("draws", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.CheckConstraint("deviation > 0", name=op.f("ck_ratings_deviation")),
        sa.CheckConstraint("volatility > 0", name=op.f("ck_ratings_volatility")),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE",
                                name=op.f("fk_ratings_user_id_users")),
        sa.PrimaryKeyConstraint("user_id", "pool", name=op.f("pk_ratings")),
    )
    op.create_index("ix_ratings_pool_rating", "ratings", ["pool", "rating"])
    op.create_table(
        "game_ratings",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("game_id", sa.String(16), nullable=False),
        sa.Column("seat", sa.SmallInteger(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("pool", sa.String(32), nullable=False),
        sa.Column("rated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("rating_before", sa.Double(), nullable=False),
        sa.Column("deviation_before", sa.Double(), nullable=False),
        sa.Column("volatility_before", sa.Double(), nullable=False),
        sa.Column("rating_after", sa.Double(), nullable=False),
        sa.Column("deviation_after", sa.Double(), nullable=False),
        sa.Column("volatility_after", sa.Double(), nullable=False),
        sa.CheckConstraint("seat IN (0, 1)", name=op.f("ck_game_ratings_seat")),
        sa.ForeignKeyConstraint(["game_id"], ["games.id"], ondelete="CASCADE",
                                name=op.f("fk_game_ratings_game_id_games")),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"],
                                name=op.f("fk_game_ratings_user_id_users")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_game_ratings")),
        sa.UniqueConstraint("game_id", "seat", name=op.f("uq_game_ratings_game_id_seat")),
    )
    op.create_index("ix_game_ratings_user_id_pool_id", "game_ratings",
                    ["user_id", "pool", "id"])


def downgrade() -> None:
    op.drop_index("ix_game_ratings_user_id_pool_id", table_name="game_ratings")
    op.drop_table("game_ratings")
    op.drop_index("ix_ratings_pool_rating", table_name="ratings")
    op.drop_table("ratings")
    with op.batch_alter_table("games") as batch:
        batch.drop_column("rated")
