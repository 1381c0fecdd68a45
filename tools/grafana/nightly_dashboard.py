"""The Grafana dashboard of the nightly history (issue 83), beside the live one (dashboard.py): its panels read the
results database on PostgreSQL (results/db: runs, nights, night_checks) with Grafana's PostgreSQL data source. Per
rig and gated metric (one panel each, repeated over the metric variable): the candidate against the accepted
revision with the gate's interval and the band of what it catches (D), the candidate's own value, and the state of
each night; a table of the nights. Watched companions (a gated night's latencies) are left out of the metric list:
they do not decide a night.

    ./bazelw run //tools/grafana:nightly_dashboard -- --write            # regenerate tools/grafana/tunelab-history.json
    ./bazelw run //tools/grafana:nightly_dashboard                       # print it
    ./bazelw run //tools/grafana:nightly_dashboard -- --check URL        # run every panel's query against a database

Import the file in Grafana (Dashboards, Import) and pick a PostgreSQL data source on the team's results database
(the URL the nightly writes to: TUNELAB_DB). --check runs each query as Grafana would for one rig and metric (the
first held, or --rig/--metric), on a read-only connection, and prints the rows each returns (exit 1 when one fails
or returns nothing)."""

import argparse
import json
import os
import re
import sys

import sqlalchemy as sa

from results import safeio
from results.db import queries as db_queries, store

OUTPUT = os.path.join("tools", "grafana", "tunelab-history.json")
DATASOURCE = {"type": "grafana-postgresql-datasource", "uid": "${datasource}"}
PANEL_W, PANEL_H = 12, 8
STATE_COLOURS = {"PASS": "green", "REGRESSED": "red", "INCONCLUSIVE": "orange"}

# The nights of one rig's nightly profile; $rig is single-valued (quoted here), $metric repeats the panels
# (Grafana quotes a multi-valued variable itself).
NIGHTS_OF = ("FROM night_checks n JOIN runs r ON r.id = n.run LEFT JOIN nights nt ON nt.run = n.run "
             "WHERE r.rig = '$rig' AND r.profile = 'nightly' AND n.metric IN ($metric) "
             "AND $__timeFilter(n.night_start)")

VARIABLES = [
    {"name": "datasource", "label": "PostgreSQL (results database)", "type": "datasource",
     "query": DATASOURCE["type"]},
    {"name": "rig", "label": "Rig", "type": "query", "datasource": DATASOURCE, "refresh": 1,
     "query": "SELECT DISTINCT r.rig FROM runs r JOIN night_checks n ON n.run = r.id WHERE r.profile = 'nightly' "
              "ORDER BY 1"},
    {"name": "metric", "label": "Gated metric", "type": "query", "datasource": DATASOURCE, "refresh": 1,
     "multi": True, "includeAll": True,
     "query": "SELECT DISTINCT n.metric FROM night_checks n JOIN runs r ON r.id = n.run WHERE r.rig = '$rig' "
              "AND r.profile = 'nightly' AND NOT n.watched ORDER BY 1"},
]

PANELS = [
    ("Worse than accepted (%), the gate's interval and D: $metric", "timeseries", "percent",
     "each night's candidate against that night's accepted build: the gate's estimate (positive = worse) with its "
     "interval, and +-D, what the gate catches at that night's design (the rig's committed figure, else the run's "
     "own)",
     'SELECT n.night_start AS "time", 100 * n.worse_by AS "worse by", 100 * n.worse_low AS "interval low", '
     '100 * n.worse_high AS "interval high", 100 * n.catches AS "D", -100 * n.catches AS "-D" ' + NIGHTS_OF
     + " ORDER BY 1"),
    ("Candidate's value: $metric", "timeseries", "short",
     "the candidate's median of run medians with its 95 % bootstrap interval (its unit: the unit column)",
     'SELECT n.night_start AS "time", n.candidate_value AS "candidate", n.candidate_low AS "low", '
     'n.candidate_high AS "high" ' + NIGHTS_OF + " ORDER BY 1"),
    ("State of each night: $metric", "state-timeline", "short",
     "the gate's state of this metric each night (PASS, REGRESSED, INCONCLUSIVE)",
     'SELECT n.night_start AS "time", n.state AS "state" ' + NIGHTS_OF + " ORDER BY 1"),
    ("Nights: $metric", "table", "short",
     "each night: its run, the gate's verdict over the whole night, this metric's state and numbers, its rounds "
     "and budget, the revisions compared",
     'SELECT n.night_start AS "time", r.run_id AS "run", nt.gate_state AS "night", n.state AS "state", '
     'round(CAST(100 * n.worse_by AS numeric), 2) AS "worse by %", '
     'round(CAST(100 * n.worse_low AS numeric), 2) AS "low %", '
     'round(CAST(100 * n.worse_high AS numeric), 2) AS "high %", round(CAST(100 * n.catches AS numeric), 2) AS "D %", '
     'round(CAST(100 * n.asked_effect AS numeric), 2) AS "asked %", n.unit AS "unit", nt.rounds AS "rounds", '
     'nt.elapsed_s AS "measuring s", nt.budget_s AS "budget s", nt.accepted_commit AS "accepted", '
     'nt.candidate_commit AS "candidate" ' + NIGHTS_OF + " ORDER BY 1 DESC"),
]


def panel(n, title, kind, unit, description, sql):
    mappings = [{"type": "value", "options": {state: {"color": colour, "index": i}
                                              for i, (state, colour) in enumerate(STATE_COLOURS.items())}}]
    return {"type": kind, "title": title, "id": n + 1, "datasource": DATASOURCE, "description": description,
            "repeat": "metric", "repeatDirection": "h",
            "targets": [{"refId": "A", "datasource": DATASOURCE, "editorMode": "code", "format":
                         "table" if kind == "table" else "time_series", "rawQuery": True, "rawSql": sql}],
            "fieldConfig": {"defaults": {"unit": unit, "mappings": mappings}, "overrides": []},
            "gridPos": {"x": (n % 2) * PANEL_W, "y": (n // 2) * PANEL_H, "w": PANEL_W, "h": PANEL_H}}


def dashboard():
    """The dashboard document."""
    return {
        "title": "tunelab: nightly history", "uid": "tunelab-history", "schemaVersion": 37, "version": 1,
        "description": "Generated by ./bazelw run //tools/grafana:nightly_dashboard -- --write from results/db's schema; do "
                       "not edit by hand.",
        "editable": True, "refresh": "", "time": {"from": "now-90d", "to": "now"}, "tags": ["tunelab"],
        "templating": {"list": VARIABLES},
        "panels": [panel(n, *p) for n, p in enumerate(PANELS)],
    }


def render(document):
    return json.dumps(document, indent=1, sort_keys=True) + "\n"


def queries(document):
    """[(where, SQL)] of every query in the dashboard: its variables' and its panels'."""
    found = [(f"variable {v['name']}", v["query"]) for v in document["templating"]["list"] if v["type"] == "query"]
    for p in document["panels"]:
        found += [(f"panel {p['title']!r}", t["rawSql"]) for t in p.get("targets", [])]
    return found


def as_grafana_sends(sql, rig, metric):
    """The query as Grafana sends it for one rig and one metric: variables interpolated (a repeated panel's
    $metric is one quoted value), the time filter over all time. rig and metric come from the database (--check)
    or a test, and are quoted as SQL literals."""
    def literal(text):
        return "'" + str(text).replace("'", "''") + "'"

    sql = re.sub(r"\$__timeFilter\(([^)]+)\)", r"\1 IS NOT NULL", sql)
    return sql.replace("'$rig'", literal(rig)).replace("$metric", literal(metric))


def check(url, rig=None, metric=None):
    """[(where, rows or None, error)] of every query run against the database at `url` (read-only)."""
    engine = store.open_for_reading(url)
    results = []
    try:
        with engine.connect() as connection:
            if rig is None:
                rig = db_queries.run_text(connection, as_grafana_sends(VARIABLES[1]["query"], "", "")).scalar()
            if metric is None and rig is not None:
                metric = db_queries.run_text(connection, as_grafana_sends(VARIABLES[2]["query"], rig, "")).scalar()
            for where, sql in queries(dashboard()):
                try:
                    rows = db_queries.run_text(connection, as_grafana_sends(sql, rig or "", metric or "")).all()
                    results.append((where, len(rows), ""))
                except sa.exc.DBAPIError as e:
                    connection.rollback()
                    results.append((where, None, str(e.orig).splitlines()[0][:300]))
    finally:
        engine.dispose()
    return rig, metric, results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help=f"write {OUTPUT} of the workspace instead of printing")
    parser.add_argument("--check", metavar="URL", help="run every query against this results database (PostgreSQL)")
    parser.add_argument("--rig", help="with --check: this rig (default: the first with nights)")
    parser.add_argument("--metric", help="with --check: this metric (default: the rig's first gated one)")
    args = parser.parse_args(argv)
    if args.check:
        if not args.check.startswith("postgresql"):
            parser.error("--check needs a PostgreSQL URL: the dashboard's data source is PostgreSQL")
        try:
            rig, metric, results = check(args.check, args.rig, args.metric)
        except store.DatabaseError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        print(f"{store.redacted(args.check)}: rig {rig}, metric {metric}")
        for where, rows, error in results:
            print(f"  {where}: {'FAILED: ' + error if error else f'{rows} row(s)'}")
        return 1 if any(error or not rows for _, rows, error in results) else 0
    text = render(dashboard())
    if not args.write:
        sys.stdout.write(text)
        return 0
    workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY")
    if not workspace:
        parser.error("--write needs `bazel run` (BUILD_WORKSPACE_DIRECTORY names the checkout)")
    safeio.write_text(os.path.join(workspace, OUTPUT), text)
    print(f"wrote {OUTPUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
