"""Alembic migrations of the Tessera database; run them with ``server.storage.upgrade``."""
