"""The site's side pages, beside the sets' and studies' pages (tools/publish/publish.py builds the site): the
nightly history plots, the Sensitivity page (every committed figure, and what each gated design promises over
the nights recorded), and the committed bisects. Each returns what it could not read as (name, reason), which
the index lists with its reason, never a crash."""

import argparse
import contextlib
import glob
import io
import math
import os
import re

import sqlalchemy as sa

from analysis.history import changepoints, command as history_command
from analysis.reports import bisect_pages
from analysis.reports import plots
from analysis.reports import report
from analysis.sensitivity import figures as sensitivity_figures
from results import safeio
from results.db import queries as db_queries, store as db_store
from analysis import indexer

NIGHTLY = re.compile(r"^nightly-(?P<series>[a-z0-9_]+?)(?:-\d{8}.*)?$")
SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def set_date(result_set):
    """The day the set was measured: its last result's end (UTC)."""
    ends = sorted(d.get("finished_at", "") for d in result_set.docs)
    return ends[-1][:10] if ends and ends[-1] else ""


def series_of(night):
    """The history a night belongs to (a row of results/db/queries.night_checks): the series of the nightly-<series>
    set it is promoted as; its matrix when it is a fresh night (a run of the nightly profile, not promoted); None
    when it is promoted only under other names (a study, shown as its own set) or is not of the nightly profile."""
    named = sorted(m.group("series") for m in map(NIGHTLY.fullmatch, night["sets"]) if m)
    if named:
        return named[0]
    return night["matrix"] if not night["sets"] and night["profile"] == "nightly" else None


def nightly_histories(results_root, studies_sets, db_url, out_dir):
    """([{name, nights: [run ids], plots}], [(name, reason)]) of the site's nightly history, read from the results
    database at db_url: the nightly-<series> sets are indexed in it first (idempotent: a fresh clone's database is
    made here), then every night it holds is grouped by series_of (a team database adds the nights the nightly
    indexed and nobody promoted). A database that cannot be read is one (name, reason), never a crash."""
    folders = [s.path for s in studies_sets if NIGHTLY.fullmatch(os.path.basename(os.path.normpath(s.path)))]
    try:
        engine = db_store.open_for_writing(db_url)
        try:
            outcome = indexer.import_folders(engine, folders, results_root, workers=1)
            with engine.connect() as connection:
                rows = db_queries.night_checks(connection)
        finally:
            engine.dispose()
    except (db_store.DatabaseError, sa.exc.SQLAlchemyError) as e:
        return [], [("nightly history", f"the results database {db_store.redacted(db_url)} cannot be read: "
                                        f"{str(e).splitlines()[0][:300]}")]
    failures = [(f"nightly history: {folder}", reason) for folder, reason in outcome.refused]
    by_series = {}
    for row in rows:
        name = series_of(row)
        if name and SAFE_NAME.fullmatch(name):
            by_series.setdefault(name, []).append(row)
    histories = []
    for name, found in sorted(by_series.items()):
        runs = list(dict.fromkeys(row["run_id"] for row in found))
        histories.append({"name": name, "nights": runs, "plots": write_history(name, found, out_dir)})
    return histories, failures


def write_history(name, rows, out_dir):
    """The series' history plots from its nights' rows (results/db/queries.night_checks; two or more nights: one
    plot per cell and metric, change points marked), [] with fewer. A change point found still has its plot."""
    if len({row["run_id"] for row in rows}) < 2:
        return []
    path = os.path.join(out_dir, f"history-{name}.png")
    by_night, declared = changepoints.nights_from_rows(rows)
    options = argparse.Namespace(metric=None, min_segment=history_command.MIN_SEGMENT)
    with contextlib.redirect_stdout(io.StringIO()):
        history_command.nightly_main(by_night, declared, options, *os.path.splitext(path))
    stem = os.path.splitext(path)[0]
    return sorted((os.path.basename(p) for p in glob.glob(glob.escape(stem) + "*.png")
                   if p == path or re.fullmatch(r"-[0-9]+\.png", p[len(stem):])),
                  key=lambda n: (len(n), n))


def write_sensitivity(baselines, out_dir):
    """(rows, [(rig, plot file, its nights' plot file or "")], nights rows, [(name, reason) of each unusable file]) of the
    Sensitivity page: every committed figure, per rig what its metrics' gates catch (D) over the committed
    sensitivity sets, and what each gated design promises over the nights recorded (results/baselines/nights.json,
    //tools:sensitivity -- --write-nights): D on a median and on a noisy night beside the set's stated D."""
    unreadable = []
    rows = sensitivity_figures.history(baselines, unreadable)
    failed = [(f"{name}/{sensitivity_figures.FILE_NAME}"[:80], f"cannot be read: {reason[:300]}")
              for name, reason in unreadable]
    promised, problem = read_nights(baselines)
    if problem:
        failed.append((NIGHTS_FILE, problem[:300]))
    out = []
    for rig in sorted({r["rig"] for r in rows} | {p["rig"] for p in promised}):
        series = {}
        for r in rows:
            if r["rig"] == rig and r["worse_by"] is not None:  # an older rule's figure has no stated D
                series.setdefault(r["metric"], []).append((r["measured_at"], r["worse_by"]))
        name = f"sensitivity-{rig}.png" if series else ""
        if series:
            plots.sensitivity_history(os.path.join(out_dir, name),
                                      f"{rig}: what the gate catches (95 %, its gated rounds)", series)
        bars = {}
        mine = [p for p in promised if p["rig"] == rig and p.get("median_worse_by") is not None]
        several = len({p["profile"] for p in mine}) > 1
        for p in mine:  # a metric gated by two profiles is two bars: each design promises its own D
            label = f"{p['metric']} ({p['profile']})" if several else p["metric"]
            bars[label] = {"a median night": p["median_worse_by"]}
            if p.get("noisy_worse_by") is not None:
                bars[label]["a noisy night (80th percentile)"] = p["noisy_worse_by"]
            if series.get(p["metric"]) and not several:
                bars[label]["stated D (its set's night)"] = max(series[p["metric"]])[1]
        nights_name = f"sensitivity-{rig}-nights.png" if bars else ""
        if bars:
            plots.sensitivity_bars(os.path.join(out_dir, nights_name),
                                   f"{rig}: what the gate catches over the nights recorded", bars)
        out.append((rig, name, nights_name))
    return rows, out, promised, failed


NIGHTS_FILE = "nights.json"  # tools/sensitivity/tables.py NIGHTS_FILE: written by --write-nights
NIGHTS_MAX_BYTES = 1 << 20


def read_nights(baselines):
    """([promise rows], problem or "") of results/baselines/nights.json, read through the bounded reader: no file is
    no rows; a file that is not the calibrator's is a problem named on the index, never a crash."""
    path = os.path.join(baselines, NIGHTS_FILE)
    if not os.path.lexists(path):
        return [], ""
    try:
        doc = safeio.read_json(path, NIGHTS_MAX_BYTES)
    except (safeio.InputError, OSError) as e:
        return [], f"cannot be read: {e}"
    if not isinstance(doc, dict) or doc.get("kind") != "tunelab.night_promises" or doc.get("schema_version") != 1:
        return [], "not a nights file of schema 1 (regenerate: bazel run //tools:sensitivity -- --write-nights)"
    rows = doc.get("promises")
    keys = {"rig": str, "metric": str, "profile": str, "design": str}
    if not isinstance(rows, list) or not all(isinstance(r, dict) and all(isinstance(r.get(k), t) for k, t in keys.items())
                                             for r in rows):
        return [], "its promises are not rows of rig, metric, profile and design"
    number = lambda x: x is None or (isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x))  # noqa: E731
    fields = ("asked", "sd_median", "sd_noisy", "median_worse_by", "noisy_worse_by", "held_share")
    if not all(number(r.get(f)) for r in rows for f in fields):
        return [], "a promise's figure is not a finite number"
    measured = [r for r in rows if not isinstance(r.get("none"), str)]
    if not all(isinstance(r.get("nights"), list) and all(isinstance(n, str) for n in r["nights"])
               and isinstance(r.get("rounds_per_night"), list) and all(isinstance(n, int) for n in r["rounds_per_night"])
               and isinstance(r.get("verdict"), str) for r in measured):
        return [], "a promise without its nights, their rounds and its verdict (or the reason it has none)"
    return rows, ""


def write_bisects(results_root, out_dir):
    """([page rows], [(name, reason) of each unreadable record]) of the committed bisects, results/bisects/NAME/bisect.json
    (//tools:bisect's records): each with its report (PDF, HTML) under bisects/NAME/."""
    folder = os.path.join(results_root, "bisects")
    rows, failed = [], []
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        if not os.path.isdir(os.path.join(folder, name)):
            continue
        if not SAFE_NAME.fullmatch(name):
            failed.append((f"bisects/{name}"[:60], "not a name tunelab writes"))
            continue
        try:
            record = bisect_pages.read_record(os.path.join(folder, name))
            page = os.path.join(out_dir, "bisects", name)
            os.makedirs(page)
            report.write(bisect_pages.blocks(record, name, page), os.path.join(page, "report.pdf"),
                         os.path.join(page, "report.html"))
        except (bisect_pages.BisectRecordError, ValueError, OSError) as e:
            failed.append((f"bisects/{name}"[:60], f"cannot be read: {str(e)[:300]}"))
            continue
        answer = record.get("answer") or {}
        rows.append({"name": name, "matrix": record.get("matrix", ""), "state": answer.get("state", "running"),
                     "text": str(answer.get("text", "")).splitlines()[0][:160] if answer.get("text") else "",
                     "steps": len(record["steps"]), "machine": bisect_pages.fmt_s(record.get("machine_s")),
                     "date": str(record.get("started", ""))[:10], "folder": f"bisects/{name}"})
    return rows, failed
