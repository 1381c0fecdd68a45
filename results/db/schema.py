"""The results database's tables (SQLAlchemy Core), one schema for SQLite and PostgreSQL.

The JSON documents stay the source of truth (results/README.md); these tables index them. Every row names the
sha256 of the document it came from, so the database can always be remade from the documents alone
(`bazel run //tools:results -- import --rebuild`). Long format, named for what they hold: a run's cells and their
parameters, each repetition's result and its metric values. Changing a table here needs a migration under
results/db/migrations/versions/ (a test holds the two equal: //results/db:store_test).
"""

import sqlalchemy as sa

DATABASE_KIND = "tunelab.results_db"  # in database_info: a database tunelab made, not a foreign one

# Constraint names spelled out, so that a migration can name them on both engines.
metadata = sa.MetaData(naming_convention={
    "pk": "pk_%(table_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ix": "ix_%(table_name)s_%(column_0_name)s",
})

database_info = sa.Table(
    "database_info", metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.String(256), nullable=False),
)

# Every document a row came from: its bytes' sha256, its kind and where it was first read (relative to the results
# root). Importing a document already here adds nothing.
documents = sa.Table(
    "documents", metadata,
    sa.Column("sha256", sa.String(64), primary_key=True),
    sa.Column("kind", sa.String(64), nullable=False),
    sa.Column("path", sa.String(1024), nullable=False),
    sa.Column("size_bytes", sa.BigInteger, nullable=False),
    sa.Column("imported_at", sa.DateTime(timezone=True), nullable=False),
)

# A run: its manifest (the newest one read: a resumed run's manifest grows).
runs = sa.Table(
    "runs", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("host_id", sa.String(64), nullable=False),
    sa.Column("run_id", sa.String(32), nullable=False),
    sa.Column("matrix", sa.String(128), nullable=False),
    sa.Column("rig", sa.String(64), nullable=False),
    sa.Column("profile", sa.String(64), nullable=False),
    sa.Column("harness_commit", sa.String(40), nullable=True),
    sa.Column("state", sa.String(32), nullable=False),
    sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
    sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
    sa.Column("manifest_sha256", sa.String(64), sa.ForeignKey("documents.sha256"), nullable=False),
    sa.UniqueConstraint("host_id", "run_id", name="uq_runs_host_id_run_id"),
)

cells = sa.Table(
    "cells", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    sa.Column("cell_id", sa.String(32), nullable=False),
    sa.Column("skip_reason", sa.Text, nullable=True),
    sa.UniqueConstraint("run", "cell_id", name="uq_cells_run_cell_id"),
)

cell_params = sa.Table(
    "cell_params", metadata,
    sa.Column("cell", sa.Integer, sa.ForeignKey("cells.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("value", sa.String(256), nullable=False),
)

# One repetition of one cell (a cell result document): status ok, failed, invalid, skipped.
results = sa.Table(
    "results", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("cell", sa.Integer, sa.ForeignKey("cells.id", ondelete="CASCADE"), nullable=False),
    sa.Column("repetition", sa.Integer, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
    sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
    sa.Column("document_sha256", sa.String(64), sa.ForeignKey("documents.sha256"), nullable=False),
    sa.UniqueConstraint("cell", "repetition", name="uq_results_cell_repetition"),
)

# A result's metric values as the result states them (its statistic over its samples; steady: whether its
# iterations showed a steady state, where the rig judged one).
metric_values = sa.Table(
    "metric_values", metadata,
    sa.Column("result", sa.Integer, sa.ForeignKey("results.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("metric", sa.String(64), primary_key=True),
    sa.Column("value", sa.Float, nullable=False),
    sa.Column("unit", sa.String(32), nullable=False),
    sa.Column("direction", sa.String(24), nullable=False),
    sa.Column("statistic", sa.String(16), nullable=True),
    sa.Column("samples", sa.Integer, nullable=True),
    sa.Column("steady", sa.Boolean, nullable=True),
)

# A promoted set (results/baselines/NAME): the run it holds and the sha256 of each of its documents.
sets = sa.Table(
    "sets", metadata,
    sa.Column("name", sa.String(100), primary_key=True),
    sa.Column("run", sa.Integer, sa.ForeignKey("runs.id"), nullable=False),
    sa.Column("manifest_sha256", sa.String(64), sa.ForeignKey("documents.sha256"), nullable=False),
)

set_documents = sa.Table(
    "set_documents", metadata,
    sa.Column("set_name", sa.String(100), sa.ForeignKey("sets.name", ondelete="CASCADE"), primary_key=True),
    sa.Column("sha256", sa.String(64), sa.ForeignKey("documents.sha256"), primary_key=True),
)

# What a gated run decided per comparison (its manifest's sequential comparisons, analysis/sequential.py): the
# candidate/baseline ratio of the metric's run medians with its repeated interval, at the asked effect.
gate_checks = sa.Table(
    "gate_checks", metadata,
    sa.Column("run", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("baseline_cell", sa.String(32), primary_key=True),
    sa.Column("candidate_cell", sa.String(32), primary_key=True),
    sa.Column("metric", sa.String(64), primary_key=True),
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
)

# A night: a run of the accepted against the candidate revision (tools/nightly/nightly.sh). decided_state is what
# its deciding checks reached in the run (REGRESSED, else INCONCLUSIVE, else PASS); the gate's own verdict also
# judges the watched companions (tools/gate).
nights = sa.Table(
    "nights", metadata,
    sa.Column("run", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("night", sa.Date, nullable=True),
    sa.Column("accepted_commit", sa.String(40), nullable=True),
    sa.Column("candidate_commit", sa.String(40), nullable=True),
    sa.Column("decided_state", sa.String(16), nullable=False),
    sa.Column("rounds", sa.Integer, nullable=True),
    sa.Column("budget_s", sa.Float, nullable=True),
    sa.Column("elapsed_s", sa.Float, nullable=True),
    # The gate's own verdict over the night's night_checks (revision 0003): REGRESSED when any check is, a watched
    # companion's too; else INCONCLUSIVE when a deciding check is; else PASS (tools/gate's exit status).
    sa.Column("gate_state", sa.String(16), nullable=True),
)

sa.Index("ix_metric_values_metric", metric_values.c.metric)
sa.Index("ix_runs_rig", runs.c.rig)

# A night's checks as the gate judges them (revision 0003): every (cell, metric) of a night run, by the gate's own
# rule over the night's documents and the rig's committed sensitivity figures held when it was indexed
# (analysis/history/changepoints.night_checks), the points the nightly history plots. Fractions worse: positive is
# worse in the metric's bad direction. NULL where the gate had no number (too few rounds, no usable figure).
night_checks = sa.Table(
    "night_checks", metadata,
    sa.Column("run", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("cell", sa.String(512), primary_key=True),
    sa.Column("metric", sa.String(64), primary_key=True),
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
    sa.Column("manifest_sha256", sa.String(64), sa.ForeignKey("documents.sha256"), nullable=False),
)

# Every committed sensitivity figure (results/baselines/NAME/sensitivity.json, analysis/sensitivity/figures.py):
# a rig's metric's paired sd and D from one A/A set. d_worse_by: the stated D of its first gated design, a
# fraction worse (NULL for a figure of an older gate rule).
sensitivity_figures = sa.Table(
    "sensitivity_figures", metadata,
    sa.Column("document_sha256", sa.String(64), sa.ForeignKey("documents.sha256"), primary_key=True),
    sa.Column("rig", sa.String(64), primary_key=True),
    sa.Column("metric", sa.String(64), primary_key=True),
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
)

# A bisect (results/bisects/NAME or a fresh results/bisect-out/NAME: its bisect.json, tools/bisection) and its
# steps; a record that grew (a resumed bisect) replaces its rows.
bisects = sa.Table(
    "bisects", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(128), nullable=False),
    sa.Column("document_sha256", sa.String(64), sa.ForeignKey("documents.sha256"), nullable=False),
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
    sa.UniqueConstraint("name", name="uq_bisects_name"),
)

bisect_steps = sa.Table(
    "bisect_steps", metadata,
    sa.Column("bisect", sa.Integer, sa.ForeignKey("bisects.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("step", sa.Integer, primary_key=True),  # its order in the record, from 1
    sa.Column("tested", sa.String(200), nullable=False),  # the commit (or the axis' value) the step measured
    sa.Column("commit_index", sa.Integer, nullable=False),  # its place in the range (1 = good's child)
    sa.Column("verdict", sa.String(16), nullable=False),
    sa.Column("toward_good", sa.String(16), nullable=True),
    sa.Column("toward_bad", sa.String(16), nullable=True),
    sa.Column("rounds", sa.Integer, nullable=True),
    sa.Column("why", sa.Text, nullable=True),
)

# The frames that moved in a profiled run's comparisons (analysis/profiling/profiles.comparisons: a cell against its
# partner with the axis' baseline value, per profiled event), the top movers of each by |change|, in rank order.
# Shares in percentage points of the event's samples (unit "points").
profile_movers = sa.Table(
    "profile_movers", metadata,
    sa.Column("run", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("baseline_cell", sa.String(32), primary_key=True),
    sa.Column("candidate_cell", sa.String(32), primary_key=True),
    sa.Column("event", sa.String(16), primary_key=True),
    sa.Column("rank", sa.Integer, primary_key=True),  # 1 = moved most
    sa.Column("axis", sa.String(64), nullable=False),
    sa.Column("baseline_value", sa.String(256), nullable=False),
    sa.Column("candidate_value", sa.String(256), nullable=False),
    sa.Column("frame", sa.Text, nullable=False),
    sa.Column("baseline", sa.Float, nullable=False),
    sa.Column("candidate", sa.Float, nullable=False),
    sa.Column("change", sa.Float, nullable=False),
    sa.Column("change_low", sa.Float, nullable=True),  # NULL: one run a side, no interval
    sa.Column("change_high", sa.Float, nullable=True),
    sa.Column("unit", sa.String(32), nullable=False),
    sa.Column("moved", sa.Boolean, nullable=False),  # the interval excludes zero
)

# The gate's verdicts as it gave them (a run's gate.json, results/gaterecord.py: //tools:gate --record, which the
# nightly passes): per comparison it judged there (entry: its place in the document) every check, fractions worse.
gate_verdicts = sa.Table(
    "gate_verdicts", metadata,
    sa.Column("run", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("entry", sa.Integer, primary_key=True),
    sa.Column("cell", sa.String(512), primary_key=True),
    sa.Column("metric", sa.String(64), primary_key=True),
    sa.Column("axis", sa.String(64), nullable=True),
    sa.Column("baseline_value", sa.String(256), nullable=True),
    sa.Column("candidate_value", sa.String(256), nullable=True),
    sa.Column("against", sa.String(512), nullable=True),  # the stored set a two-set gate judged this run against
    sa.Column("verdict", sa.String(16), nullable=False),  # the comparison's: tools/gate's exit status as a word
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
    sa.Column("document_sha256", sa.String(64), sa.ForeignKey("documents.sha256"), nullable=False),
)

sa.Index("ix_night_checks_metric", night_checks.c.metric)
