"""Run and set folders read as the readers read them (analysis/resultsets.py: a folder they refuse is refused here too,
named), then indexed in the results database (results/db/rows.py), one run per transaction.

Beside a run's rows: a night's checks as the gate judges them (analysis/history/changepoints.night_checks, with the
rig's committed figures under the results root), a profiled run's movers (analysis/profiling/profiles.comparisons),
a run's gate.json as the gate's verdicts (results/gaterecord.py), a set's sensitivity.json as its figures (read as
the gate reads it: analysis/sensitivity/figures.py), and a bisect folder's record (read as --resume reads it:
analysis/reports/bisect_pages.read_record) as the bisect and its steps."""

import dataclasses
import math
import multiprocessing
import os

import sqlalchemy as sa

from analysis import resultsets
from analysis.history import changepoints
from analysis.profiling import profiles
from analysis.reports import bisect_pages
from analysis.sensitivity import figures as sensitivity_figures
from results import gaterecord as gate_record, resultfile, safeio, store as file_store
from results.db import rows, store as db_store

MANIFEST = "manifest.json"
SENSITIVITY = sensitivity_figures.FILE_NAME
BISECT = bisect_pages.RECORD


@dataclasses.dataclass
class Outcome:
    added: rows.Imported
    folders: int
    refused: list  # [(folder, reason)]


def _subfolders(path):
    return [os.path.join(path, name) for name in sorted(os.listdir(path))
            if not name.startswith(".") and os.path.isdir(os.path.join(path, name))
            and not os.path.islink(os.path.join(path, name))]


def _indexed(folder):
    """A folder the indexer reads: a run or set (a manifest) or a bisect (its record)."""
    return os.path.isfile(os.path.join(folder, MANIFEST)) or os.path.isfile(os.path.join(folder, BISECT))


def folders_under(path):
    """The run, set or bisect folders at `path`: itself when it is one, else those one level down (a baselines/
    folder, a host folder, results/bisects), else two (the results root: every host's runs and baselines/, not the
    folders the repository keeps for other things). Links are not followed."""
    if _indexed(path):
        return [path]
    one = [f for f in _subfolders(path) if _indexed(f)]
    if one:
        return one
    skipped = file_store.RESERVED_FOLDERS - {"baselines"}
    return [run for sub in _subfolders(path) if os.path.basename(sub).lower() not in skipped
            for run in _subfolders(sub) if os.path.isfile(os.path.join(run, MANIFEST))]


def default_folders(results_root):
    """Every committed set (baselines/NAME), every fresh run (HOST/RUN) and every bisect (bisects/NAME, a fresh
    bisect-out/ID) under the results root."""
    folders = []
    for name in ("baselines", "bisects", "bisect-out"):
        where = os.path.join(results_root, name)
        if os.path.isdir(where) and not os.path.islink(where):
            folders += [f for f in _subfolders(where) if _indexed(f)]
    for host in sorted(os.listdir(results_root)) if os.path.isdir(results_root) else []:
        folder = os.path.join(results_root, host)
        if (host.lower() in file_store.RESERVED_FOLDERS or host in ("bisect-out",) or host.startswith(".")
                or os.path.islink(folder)
                or not os.path.isdir(folder)):
            continue
        folders += sorted(os.path.join(folder, run) for run in os.listdir(folder)
                          if file_store.RUN_ID_RE.fullmatch(run) and os.path.isfile(os.path.join(folder, run, MANIFEST)))
    return folders


def _relative(path, results_root):
    rel = os.path.relpath(os.path.abspath(path), os.path.abspath(results_root))
    return os.path.abspath(path) if rel.startswith("..") else rel


def _document(path, kind, content, results_root):
    return rows.Document(kind=kind, path=_relative(path, results_root), sha256=safeio.sha256_of(path),
                          size_bytes=os.stat(path).st_size, content=content)


def read_folder(folder, results_root):
    """(manifest Document, [result Documents], set name or None, the ResultSet) of a run or set folder, checked by
    the readers."""
    result_set = resultsets.load_run(folder)
    manifest = _document(os.path.join(folder, MANIFEST), "tunelab.run_manifest", result_set.manifest, results_root)
    results = [_document(resultfile.result_path(folder, d["cell"]["id"], d["cell"]["repetition"]),
                         "tunelab.cell_result", d, results_root) for d in result_set.docs]
    return manifest, results, _set_name(folder, results_root), result_set


def _none_if_nan(x):
    return None if x is None or (isinstance(x, float) and not math.isfinite(x)) else x


def night_rows(result_set, results_root):
    """The night's checks as rows (rows.import_run's night_checks), [] when the run is not a night."""
    out = []
    for c in changepoints.night_checks(result_set, results_root):
        n = c.night
        out.append({"cell": c.cell[:512], "metric": c.metric[:64], "unit": str(c.unit)[:32],
                    "direction": c.direction[:24], "watched": bool(c.watched), "night_start": n.when,
                    "candidate_value": _none_if_nan(n.value), "candidate_low": _none_if_nan(n.value_low),
                    "candidate_high": _none_if_nan(n.value_high), "worse_by": _none_if_nan(n.worse_by),
                    "worse_low": _none_if_nan(n.worse_low), "worse_high": _none_if_nan(n.worse_high),
                    "asked_effect": _none_if_nan(c.asked), "stated_d": _none_if_nan(c.stated_d),
                    "tonight_d": _none_if_nan(c.tonight_d), "catches": _none_if_nan(n.catches), "state": n.state})
    return out


def mover_rows(result_set, top=10):
    """The top movers of each profiled comparison of the run, per profiled event, as rows (rows.import_run's
    movers); [] for a run without profiles. A profile the reader refuses leaves its comparison without rows."""
    out = []
    for event in profiles.profiled_events(result_set):
        try:
            found = profiles.comparisons(result_set, event=event, top=top)
        except profiles.ProfileError:
            continue
        for c in found:
            for rank, m in enumerate(c.rows, start=1):
                out.append({"baseline_cell": c.baseline_id[:32], "candidate_cell": c.cell_id[:32], "event": event[:16],
                            "rank": rank, "axis": c.axis[:64], "baseline_value": str(c.baseline_value)[:256],
                            "candidate_value": str(c.value)[:256], "frame": m.frame[:4000], "baseline": m.baseline,
                            "candidate": m.candidate, "change": m.change, "change_low": _none_if_nan(m.low),
                            "change_high": _none_if_nan(m.high), "unit": m.unit[:32], "moved": bool(m.moved)})
    return out


def _verdicts(folder, results_root):
    """(Document, entries) of the run's gate.json (the gate's recorded verdicts), None without one; RecordError
    when it is not one."""
    entries = gate_record.read(folder)
    if not entries:
        return None
    path = os.path.join(folder, gate_record.FILE)
    return _document(path, gate_record.KIND, {"verdicts": entries}, results_root), entries


def _figures(folder, results_root):
    """(Document, [figure rows]) of the set's sensitivity.json, None without one; SensitivityError if unusable."""
    path = os.path.join(folder, SENSITIVITY)
    if not os.path.isfile(path) or os.path.islink(path):
        return None
    content = sensitivity_figures.read_document(path)
    found = sensitivity_figures.read_file(path)
    out = []
    for rig, metrics in found.items():
        for metric, f in metrics.items():
            entry = content[rig][metric]
            designs = entry.get("designs") if f.usable and isinstance(entry.get("designs"), dict) else {}
            first = next(iter(designs.values()), {}) if designs else {}
            d = first.get("d_worse_by") if isinstance(first, dict) else None
            out.append({"rig": rig[:64], "metric": metric[:64], "set_name": f.set_name[:100],
                        "measured_at": f.measured_at[:10], "rule": f.rule[:128] if f.rule else None,
                        "unit": str(entry.get("unit", ""))[:32],
                        "direction": str(entry.get("direction", "higher_is_better"))[:24],
                        "paired_sd": f.paired_sd, "mde": f.mde, "design_rounds": f.design_rounds,
                        "d_worse_by": _none_if_nan(float(d)) if isinstance(d, (int, float)) else None,
                        "round_s": f.round_s, "workload_sha256": f.workload_sha256[:64]})
    return _document(path, sensitivity_figures.KIND, content, results_root), out


def _import_bisect(engine, folder, results_root):
    record = bisect_pages.read_record(folder)
    path = os.path.join(folder, BISECT)
    return rows.import_bisect(engine, os.path.basename(os.path.normpath(folder))[:128],
                              _document(path, bisect_pages.SCHEMA, record, results_root), record)


def _set_name(folder, results_root):
    parent = os.path.dirname(os.path.abspath(folder))
    return os.path.basename(folder) if parent == os.path.abspath(os.path.join(results_root, "baselines")) else None


def _held_already(engine, folder, results_root):
    """Whether every file the readers would read here is held by its sha256 (the folder adds nothing, so it is not
    read again); a file that changed or is new is not held, and the folder is read and checked in full."""
    cells = os.path.join(folder, "cells")
    names = [n for n in os.listdir(cells) if n.endswith(".json") and not n.startswith(".tmp-")] \
        if os.path.isdir(cells) and not os.path.islink(cells) else []
    paths = [os.path.join(folder, MANIFEST)] + [os.path.join(cells, n) for n in sorted(names)]
    figures = [os.path.join(folder, name) for name in (SENSITIVITY, gate_record.FILE)
               if os.path.lexists(os.path.join(folder, name))]
    if not names or any(os.path.islink(p) or not os.path.isfile(p) for p in paths + figures):
        return False
    return (rows.holds(engine, [safeio.sha256_of(p) for p in paths], _set_name(folder, results_root))
            and rows.holds(engine, [safeio.sha256_of(p) for p in figures]))


READ_REFUSED = (resultsets.ResultSetError, safeio.InputError, OSError, sensitivity_figures.SensitivityError,
                gate_record.RecordError)


def _read_for_import(job):
    """A worker's share (reading, checking and judging a folder is CPU work; writing stays in one process):
    ("ok", (manifest, results, set name, night rows, figures)) or ("refused", reason)."""
    folder, results_root = job
    try:
        manifest, results, set_name, result_set = read_folder(folder, results_root)
        return "ok", (manifest, results, set_name, night_rows(result_set, results_root),
                      _figures(folder, results_root), mover_rows(result_set), _verdicts(folder, results_root))
    except READ_REFUSED as e:
        return "refused", str(e)


def _read_all(jobs, workers):
    """(folder, outcome) of each job in order, read by `workers` forked processes (one: here)."""
    if workers <= 1 or len(jobs) < 2:
        for job in jobs:
            yield job[0], _read_for_import(job)
        return
    # fork: the workers only read files and compute; the parent's database connections stay unused there.
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        for job, outcome in zip(jobs, pool.imap(_read_for_import, jobs)):
            yield job[0], outcome


def import_folders(engine, folders, results_root, progress=None, everything=False, workers=None):
    """Indexes each folder; a folder the readers refuse, or one that contradicts the database, is listed with its
    reason and the others still go in. A folder whose files are all held is not read again, unless a migration
    asked that every folder be (rows.reread_pending): `everything` (the folders are every set and run) then
    clears that. Folders are read by `workers` processes (default: one per CPU, at most 4) and written here in
    their order. progress(folder) is called as each is done."""
    total, refused = rows.Imported(), []
    reread = rows.reread_pending(engine)
    jobs = []
    for folder in folders:
        try:
            if not os.path.isfile(os.path.join(folder, MANIFEST)):
                total.bisects += _import_bisect(engine, folder, results_root)
            elif reread or not _held_already(engine, folder, results_root):
                jobs.append((folder, results_root))
                continue
        except (bisect_pages.BisectRecordError, safeio.InputError, OSError) as e:
            refused.append((_relative(folder, results_root), str(e)))
        if progress:
            progress(folder)
    workers = workers if workers is not None else min(4, os.cpu_count() or 1)
    for folder, (state, found) in _read_all(jobs, workers):
        if progress:
            progress(folder)
        if state == "refused":
            refused.append((_relative(folder, results_root), found))
            continue
        manifest, results, set_name, nights, figures, movers, verdicts = found
        try:
            total.add(rows.import_run(engine, manifest, results, set_name=set_name, night_checks=nights,
                                      movers=movers, verdicts=verdicts))
            if figures:
                total.figures += rows.import_figures(engine, *figures)
        except rows.ImportRefused as e:
            refused.append((_relative(folder, results_root), str(e)))
    if reread and everything:
        rows.clear_reread(engine)
    return Outcome(added=total, folders=len(folders), refused=refused)


def index(url, folders, results_root):
    """Indexes `folders` in the database at `url` (one worker): what a writer beside a run calls once its documents
    are stored (the gate, the fleet, a bisect). Returns "" or what went wrong, for the caller to say; a stored
    document is never lost to a database that cannot take it."""
    try:
        engine = db_store.open_for_writing(url)
        try:
            refused = import_folders(engine, folders, results_root, workers=1).refused
        finally:
            engine.dispose()
        return "; ".join(f"{where}: {why}" for where, why in refused)
    except (db_store.DatabaseError, sa.exc.SQLAlchemyError) as e:
        return str(e).splitlines()[0]
