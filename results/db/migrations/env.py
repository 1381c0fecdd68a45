"""Alembic's entry point for tunelab's results database: always given an open connection by results/db/store.py
(never a URL from a config file), migrations run inside the caller's transaction."""

from alembic import context

connection = context.config.attributes["connection"]
# render_as_batch: SQLite alters a table by copying it, which Alembic's batch mode does for it.
context.configure(connection=connection, target_metadata=None, render_as_batch=True,
                  transactional_ddl=True)
with context.begin_transaction():
    context.run_migrations()
