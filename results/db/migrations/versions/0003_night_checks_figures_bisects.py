"""A night's checks as the gate judges them, and the night's gate verdict; every committed sensitivity figure; bisects
and their steps; the frames that moved in a profiled run's comparisons; the gate's recorded verdicts. Rows of
documents imported before this revision are made by the next full import: the `reread_documents` mark makes it read
every folder again (nothing else changes), and it clears the mark.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def _night_checks():
    op.create_table(
        "night_checks",
        sa.Column("run", sa.Integer, nullable=False),
        sa.Column("cell", sa.String(512), nullable=False),
        sa.Column("metric", sa.String(64), nullable=False),
        sa.Column("unit", sa.String(32), nullable=False),
        sa.Column("direction", sa.String(24), nullable=False),
        sa.Column("watched", sa.Boolean, nullable=False),
        sa.Column("night_start", sa.DateTime(timezone=True), nullable=False),
        sa.Column("candidate_value", sa.Float, nullable=True),
        sa.Column("candidate_low", sa.Float, nullable=True),
        sa.Column("candidate_high", sa.Float, nullable=True),
        sa.Column("worse_by", sa.Float, nullable=True),
        sa.Column("worse_low", sa.Float, nullable=True),
        sa.Column("worse_high", sa.Float, nullable=True),
        sa.Column("asked_effect", sa.Float, nullable=True),
        sa.Column("stated_d", sa.Float, nullable=True),
        sa.Column("tonight_d", sa.Float, nullable=True),
        sa.Column("catches", sa.Float, nullable=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("manifest_sha256", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("run", "cell", "metric", name="pk_night_checks"),
        sa.ForeignKeyConstraint(["run"], ["runs.id"], name="fk_night_checks_run", ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["manifest_sha256"], ["documents.sha256"], name="fk_night_checks_manifest_sha256"),
    )
    op.create_index("ix_night_checks_metric", "night_checks", ["metric"])


def _sensitivity_figures():
    op.create_table(
        "sensitivity_figures",
        sa.Column("document_sha256", sa.String(64), nullable=False),
        sa.Column("rig", sa.String(64), nullable=False),
        sa.Column("metric", sa.String(64), nullable=False),
        sa.Column("set_name", sa.String(100), nullable=False),
        sa.Column("measured_at", sa.String(10), nullable=False),
        sa.Column("rule", sa.String(128), nullable=True),
        sa.Column("unit", sa.String(32), nullable=False),
        sa.Column("direction", sa.String(24), nullable=False),
        sa.Column("paired_sd", sa.Float, nullable=False),
        sa.Column("mde", sa.Float, nullable=False),
        sa.Column("design_rounds", sa.Integer, nullable=False),
        sa.Column("d_worse_by", sa.Float, nullable=True),
        sa.Column("round_s", sa.Float, nullable=False),
        sa.Column("workload_sha256", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("document_sha256", "rig", "metric", name="pk_sensitivity_figures"),
        sa.ForeignKeyConstraint(["document_sha256"], ["documents.sha256"],
                                name="fk_sensitivity_figures_document_sha256"),
    )


def _bisects():
    op.create_table(
        "bisects",
        sa.Column("id", sa.Integer, nullable=False, autoincrement=True),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("document_sha256", sa.String(64), nullable=False),
        sa.Column("matrix", sa.String(128), nullable=False),
        sa.Column("profile", sa.String(128), nullable=False),
        sa.Column("axis", sa.String(64), nullable=True),
        sa.Column("metrics", sa.Text, nullable=False),
        sa.Column("good", sa.String(200), nullable=False),
        sa.Column("bad", sa.String(200), nullable=False),
        sa.Column("commits", sa.Integer, nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("machine_s", sa.Float, nullable=True),
        sa.Column("answer_state", sa.String(32), nullable=True),
        sa.Column("last_good", sa.String(200), nullable=True),
        sa.Column("first_bad", sa.String(200), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_bisects"),
        sa.UniqueConstraint("name", name="uq_bisects_name"),
        sa.ForeignKeyConstraint(["document_sha256"], ["documents.sha256"], name="fk_bisects_document_sha256"),
    )
    op.create_table(
        "bisect_steps",
        sa.Column("bisect", sa.Integer, nullable=False),
        sa.Column("step", sa.Integer, nullable=False),
        sa.Column("tested", sa.String(200), nullable=False),
        sa.Column("commit_index", sa.Integer, nullable=False),
        sa.Column("verdict", sa.String(16), nullable=False),
        sa.Column("toward_good", sa.String(16), nullable=True),
        sa.Column("toward_bad", sa.String(16), nullable=True),
        sa.Column("rounds", sa.Integer, nullable=True),
        sa.Column("why", sa.Text, nullable=True),
        sa.PrimaryKeyConstraint("bisect", "step", name="pk_bisect_steps"),
        sa.ForeignKeyConstraint(["bisect"], ["bisects.id"], name="fk_bisect_steps_bisect", ondelete="CASCADE"),
    )


def _profile_movers():
    op.create_table(
        "profile_movers",
        sa.Column("run", sa.Integer, nullable=False),
        sa.Column("baseline_cell", sa.String(32), nullable=False),
        sa.Column("candidate_cell", sa.String(32), nullable=False),
        sa.Column("event", sa.String(16), nullable=False),
        sa.Column("rank", sa.Integer, nullable=False),
        sa.Column("axis", sa.String(64), nullable=False),
        sa.Column("baseline_value", sa.String(256), nullable=False),
        sa.Column("candidate_value", sa.String(256), nullable=False),
        sa.Column("frame", sa.Text, nullable=False),
        sa.Column("baseline", sa.Float, nullable=False),
        sa.Column("candidate", sa.Float, nullable=False),
        sa.Column("change", sa.Float, nullable=False),
        sa.Column("change_low", sa.Float, nullable=True),
        sa.Column("change_high", sa.Float, nullable=True),
        sa.Column("unit", sa.String(32), nullable=False),
        sa.Column("moved", sa.Boolean, nullable=False),
        sa.PrimaryKeyConstraint("run", "baseline_cell", "candidate_cell", "event", "rank", name="pk_profile_movers"),
        sa.ForeignKeyConstraint(["run"], ["runs.id"], name="fk_profile_movers_run", ondelete="CASCADE"),
    )


def _gate_verdicts():
    op.create_table(
        "gate_verdicts",
        sa.Column("run", sa.Integer, nullable=False),
        sa.Column("entry", sa.Integer, nullable=False),
        sa.Column("cell", sa.String(512), nullable=False),
        sa.Column("metric", sa.String(64), nullable=False),
        sa.Column("axis", sa.String(64), nullable=True),
        sa.Column("baseline_value", sa.String(256), nullable=True),
        sa.Column("candidate_value", sa.String(256), nullable=True),
        sa.Column("against", sa.String(512), nullable=True),
        sa.Column("verdict", sa.String(16), nullable=False),
        sa.Column("judged_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("unit", sa.String(32), nullable=False),
        sa.Column("direction", sa.String(24), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("watched", sa.Boolean, nullable=False),
        sa.Column("worse_by", sa.Float, nullable=True),
        sa.Column("worse_low", sa.Float, nullable=True),
        sa.Column("worse_high", sa.Float, nullable=True),
        sa.Column("asked_effect", sa.Float, nullable=True),
        sa.Column("stated_d", sa.Float, nullable=True),
        sa.Column("tonight_d", sa.Float, nullable=True),
        sa.Column("rounds", sa.Integer, nullable=True),
        sa.Column("document_sha256", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("run", "entry", "cell", "metric", name="pk_gate_verdicts"),
        sa.ForeignKeyConstraint(["run"], ["runs.id"], name="fk_gate_verdicts_run", ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["document_sha256"], ["documents.sha256"], name="fk_gate_verdicts_document_sha256"),
    )


def upgrade():
    _night_checks()
    _profile_movers()
    _gate_verdicts()
    with op.batch_alter_table("nights") as batch:  # SQLite alters a table by copying it: batch mode
        batch.add_column(sa.Column("gate_state", sa.String(16), nullable=True))
    _sensitivity_figures()
    _bisects()
    info = sa.table("database_info", sa.column("key", sa.String), sa.column("value", sa.String))
    op.execute(info.delete().where(info.c.key == "reread_documents"))
    op.execute(info.insert().values(key="reread_documents", value=revision))


def downgrade():
    info = sa.table("database_info", sa.column("key", sa.String))
    op.execute(info.delete().where(info.c.key == "reread_documents"))
    op.drop_table("gate_verdicts")
    op.drop_table("profile_movers")
    op.drop_table("bisect_steps")
    op.drop_table("bisects")
    op.drop_table("sensitivity_figures")
    with op.batch_alter_table("nights") as batch:
        batch.drop_column("gate_state")
    op.drop_index("ix_night_checks_metric", table_name="night_checks")
    op.drop_table("night_checks")
