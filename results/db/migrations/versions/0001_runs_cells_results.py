"""The first schema: documents, runs, their cells and parameters, results, metric values, promoted sets.

Frozen: a migration says what the schema was at its revision, never imports results/db/schema.py.

Revision ID: 0001
Revises: (none)
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade():
    """Why one function: a migration is one schema step, written out table by table as it was."""
    op.create_table(
        "database_info",
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("value", sa.String(256), nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_database_info"),
    )
    op.create_table(
        "documents",
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("path", sa.String(1024), nullable=False),
        sa.Column("size_bytes", sa.BigInteger, nullable=False),
        sa.Column("imported_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("sha256", name="pk_documents"),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("host_id", sa.String(64), nullable=False),
        sa.Column("run_id", sa.String(32), nullable=False),
        sa.Column("matrix", sa.String(128), nullable=False),
        sa.Column("rig", sa.String(64), nullable=False),
        sa.Column("profile", sa.String(64), nullable=False),
        sa.Column("harness_commit", sa.String(40), nullable=True),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("manifest_sha256", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_runs"),
        sa.ForeignKeyConstraint(["manifest_sha256"], ["documents.sha256"], name="fk_runs_manifest_sha256"),
        sa.UniqueConstraint("host_id", "run_id", name="uq_runs_host_id_run_id"),
    )
    op.create_index("ix_runs_rig", "runs", ["rig"])
    op.create_table(
        "cells",
        sa.Column("id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("run", sa.Integer, nullable=False),
        sa.Column("cell_id", sa.String(32), nullable=False),
        sa.Column("skip_reason", sa.Text, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_cells"),
        sa.ForeignKeyConstraint(["run"], ["runs.id"], name="fk_cells_run", ondelete="CASCADE"),
        sa.UniqueConstraint("run", "cell_id", name="uq_cells_run_cell_id"),
    )
    op.create_table(
        "cell_params",
        sa.Column("cell", sa.Integer, nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("value", sa.String(256), nullable=False),
        sa.PrimaryKeyConstraint("cell", "name", name="pk_cell_params"),
        sa.ForeignKeyConstraint(["cell"], ["cells.id"], name="fk_cell_params_cell", ondelete="CASCADE"),
    )
    op.create_table(
        "results",
        sa.Column("id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("cell", sa.Integer, nullable=False),
        sa.Column("repetition", sa.Integer, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("document_sha256", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_results"),
        sa.ForeignKeyConstraint(["cell"], ["cells.id"], name="fk_results_cell", ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["document_sha256"], ["documents.sha256"], name="fk_results_document_sha256"),
        sa.UniqueConstraint("cell", "repetition", name="uq_results_cell_repetition"),
    )
    op.create_table(
        "metric_values",
        sa.Column("result", sa.Integer, nullable=False),
        sa.Column("metric", sa.String(64), nullable=False),
        sa.Column("value", sa.Float, nullable=False),
        sa.Column("unit", sa.String(32), nullable=False),
        sa.Column("direction", sa.String(24), nullable=False),
        sa.Column("statistic", sa.String(16), nullable=True),
        sa.Column("samples", sa.Integer, nullable=True),
        sa.Column("steady", sa.Boolean, nullable=True),
        sa.PrimaryKeyConstraint("result", "metric", name="pk_metric_values"),
        sa.ForeignKeyConstraint(["result"], ["results.id"], name="fk_metric_values_result", ondelete="CASCADE"),
    )
    op.create_index("ix_metric_values_metric", "metric_values", ["metric"])
    op.create_table(
        "sets",
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("run", sa.Integer, nullable=False),
        sa.Column("manifest_sha256", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_sets"),
        sa.ForeignKeyConstraint(["run"], ["runs.id"], name="fk_sets_run"),
        sa.ForeignKeyConstraint(["manifest_sha256"], ["documents.sha256"], name="fk_sets_manifest_sha256"),
    )
    op.create_table(
        "set_documents",
        sa.Column("set_name", sa.String(100), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("set_name", "sha256", name="pk_set_documents"),
        sa.ForeignKeyConstraint(["set_name"], ["sets.name"], name="fk_set_documents_set_name", ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["sha256"], ["documents.sha256"], name="fk_set_documents_sha256"),
    )


def downgrade():
    for table in ("set_documents", "sets", "metric_values", "results", "cell_params", "cells", "runs", "documents",
                  "database_info"):
        op.drop_table(table)
