"""Gate checks and nights: what a gated run decided (its manifest's sequential comparisons), and a nightly's
revisions, rounds and budget. Rows of runs imported before this revision are made by the next import: the
`reread_documents` mark makes it read every folder again (nothing else changes), and it clears the mark.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "gate_checks",
        sa.Column("run", sa.Integer, nullable=False),
        sa.Column("baseline_cell", sa.String(32), nullable=False),
        sa.Column("candidate_cell", sa.String(32), nullable=False),
        sa.Column("metric", sa.String(64), nullable=False),
        sa.Column("axis", sa.String(64), nullable=False),
        sa.Column("baseline_value", sa.String(256), nullable=False),
        sa.Column("candidate_value", sa.String(256), nullable=False),
        sa.Column("asked_effect", sa.Float, nullable=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("ratio", sa.Float, nullable=True),
        sa.Column("ci_low", sa.Float, nullable=True),
        sa.Column("ci_high", sa.Float, nullable=True),
        sa.Column("pairs", sa.Integer, nullable=True),
        sa.Column("rounds", sa.Integer, nullable=True),
        sa.Column("reason", sa.Text, nullable=True),
        sa.PrimaryKeyConstraint("run", "baseline_cell", "candidate_cell", "metric", name="pk_gate_checks"),
        sa.ForeignKeyConstraint(["run"], ["runs.id"], name="fk_gate_checks_run", ondelete="CASCADE"),
    )
    op.create_table(
        "nights",
        sa.Column("run", sa.Integer, nullable=False),
        sa.Column("night", sa.Date, nullable=True),
        sa.Column("accepted_commit", sa.String(40), nullable=True),
        sa.Column("candidate_commit", sa.String(40), nullable=True),
        sa.Column("decided_state", sa.String(16), nullable=False),
        sa.Column("rounds", sa.Integer, nullable=True),
        sa.Column("budget_s", sa.Float, nullable=True),
        sa.Column("elapsed_s", sa.Float, nullable=True),
        sa.PrimaryKeyConstraint("run", name="pk_nights"),
        sa.ForeignKeyConstraint(["run"], ["runs.id"], name="fk_nights_run", ondelete="CASCADE"),
    )
    info = sa.table("database_info", sa.column("key", sa.String), sa.column("value", sa.String))
    op.execute(info.delete().where(info.c.key == "reread_documents"))
    op.execute(info.insert().values(key="reread_documents", value=revision))


def downgrade():
    info = sa.table("database_info", sa.column("key", sa.String))
    op.execute(info.delete().where(info.c.key == "reread_documents"))
    op.drop_table("nights")
    op.drop_table("gate_checks")
