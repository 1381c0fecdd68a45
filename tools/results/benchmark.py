"""The results database's benchmark (issue 83): an import of every committed set from scratch and again, and a
metric's history over SYNTHETIC nights (1,000 nights x 6 rigs x their gated metrics, rows shaped as the import
writes them), on SQLite and on a real PostgreSQL started for it (results/db/pgserver.py), with the answers of
both compared. Writes its figures as JSON (--out; default results/.db/benchmark-<UTC time>.json).

    bazel run //tools/results:benchmark [-- --nights 1000 --repeat 5 --no-postgresql]
"""

import argparse
import dataclasses
import datetime
import hashlib
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time

import sqlalchemy as sa

from results import safeio
from results.db import queries, schema, store
from analysis import indexer

# Each rig's gated metrics (rigs/<rig>/rig.toml's nightly decide_on, yarn_failover its recovery time).
GATED = {"calibration": ["cpu_loop_rate"], "yarn_cps": ["container_allocation_rate"], "namenode": ["create_rate"],
         "redis": ["get_rate", "set_rate"], "mapreduce": ["job_duration"], "yarn_failover": ["recovery_time"]}
REPETITIONS = 10  # ok repetitions a side of a synthetic night (the gated nights take 5-37)


def timed(function):
    started = time.perf_counter()
    value = function()
    return value, time.perf_counter() - started


def import_all(url, results_root):
    """(seconds, what was added) of one import of every committed set and run."""
    engine = store.open_for_writing(url)
    try:
        outcome, seconds = timed(lambda: indexer.import_folders(engine, indexer.default_folders(results_root),
                                                                 results_root, everything=True))
    finally:
        engine.dispose()
    return seconds, outcome


def synthetic_nights(url, nights, seed=1):
    """Fills an empty database with SYNTHETIC nights: per rig and night one run (accepted and candidate cells,
    REPETITIONS ok results a side, the rig's gated metrics), explicit ids, one transaction a rig."""
    rng = random.Random(seed)
    engine = store.open_for_writing(url)
    start = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    ids = {"run": 0, "cell": 0, "result": 0}
    rows = 0
    try:
        for rig, metrics in GATED.items():
            documents, runs, cells, params, results, values = [], [], [], [], [], []
            for night in range(nights):
                ids["run"] += 1
                moment = start + datetime.timedelta(days=night, hours=2)
                manifest = hashlib.sha256(f"{rig}/{night}/manifest".encode()).hexdigest()
                documents.append({"sha256": manifest, "kind": "synthetic", "path": f"synthetic/{rig}/{night}",
                                  "size_bytes": 0, "imported_at": moment})
                runs.append({"id": ids["run"], "host_id": "synthetic", "run_id": f"{moment:%Y%m%dT%H%M%SZ}-{ids['run'] % 65536:04x}",
                             "matrix": f"{rig}_matrix", "rig": rig, "profile": "nightly", "harness_commit": None,
                             "state": "complete", "started_at": moment, "finished_at": moment, "manifest_sha256": manifest})
                for side, level in (("accepted", 1.0), ("candidate", 1.0 + rng.gauss(0, 0.02))):
                    ids["cell"] += 1
                    cells.append({"id": ids["cell"], "run": ids["run"], "cell_id": f"{side[:4]}{ids['cell']:08x}",
                                  "skip_reason": None})
                    params.append({"cell": ids["cell"], "name": "revision", "value": side})
                    for repetition in range(REPETITIONS):
                        ids["result"] += 1
                        sha = hashlib.sha256(f"{rig}/{night}/{side}/{repetition}".encode()).hexdigest()
                        documents.append({"sha256": sha, "kind": "synthetic", "path": f"synthetic/{rig}/{night}/{side}",
                                          "size_bytes": 0, "imported_at": moment})
                        results.append({"id": ids["result"], "cell": ids["cell"], "repetition": repetition,
                                        "status": "ok", "started_at": moment + datetime.timedelta(seconds=repetition),
                                        "finished_at": moment, "document_sha256": sha})
                        for metric in metrics:
                            values.append({"result": ids["result"], "metric": metric, "unit": "synthetic",
                                           "value": 1000.0 * level * (1 + rng.gauss(0, 0.05)),
                                           "direction": "higher_is_better", "statistic": "median", "samples": 5,
                                           "steady": True})
            with engine.begin() as connection:
                for table, batch in ((schema.documents, documents), (schema.runs, runs), (schema.cells, cells),
                                     (schema.cell_params, params), (schema.results, results),
                                     (schema.metric_values, values)):
                    connection.execute(sa.insert(table), batch)
                    rows += len(batch)
        # The planner's statistics, as a database in use has them (PostgreSQL's autovacuum analyzes a table after
        # this many new rows, at a moment of its own: the history was timed before or after it, 70 or 110 ms).
        with engine.begin() as connection:
            connection.exec_driver_sql("ANALYZE")
    finally:
        engine.dispose()
    return rows


def history_times(url, repeat):
    """{(rig, metric, filter): (answer rows, [seconds of each repeat])}: every gated metric's whole history and
    its candidate side since a date, each asked `repeat` times."""
    engine = store.open_for_reading(url)
    asked = {}
    try:
        with engine.connect() as connection:
            for rig, metrics in GATED.items():
                for metric in metrics:
                    for cell, since in ((None, None),
                                        ({"revision": "candidate"}, datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc))):
                        key = (rig, metric, "candidate since 2026-01-01" if cell else "all")
                        times, answer = [], None
                        for _ in range(repeat):
                            answer, seconds = timed(lambda: queries.history(connection, rig, metric, cell, since))
                            times.append(seconds)
                        asked[key] = (answer[1], times)
    finally:
        engine.dispose()
    return asked


def summary(asked):
    every = [t for _, times in asked.values() for t in times]
    return {"queries": len(every), "median_ms": round(1000 * statistics.median(every), 2),
            "p90_ms": round(1000 * statistics.quantiles(every, n=10)[-1], 2), "max_ms": round(1000 * max(every), 2),
            "rows_per_answer": sorted({len(rows) for rows, _ in asked.values()})}


def measure(engine_name, fresh_url, second_url, results_root, nights, repeat):
    """One engine's figures: the import twice into `fresh_url`, synthetic nights into `second_url`."""
    first_s, first = import_all(fresh_url, results_root)
    again_s, again = import_all(fresh_url, results_root)
    rows, fill_s = timed(lambda: synthetic_nights(second_url, nights))
    asked = history_times(second_url, repeat)
    figures = {
        "import": {"folders": first.folders, "refused": [f for f, _ in first.refused], "seconds": round(first_s, 2),
                   "documents": first.added.documents, "runs": first.added.runs, "results": first.added.results,
                   "metric_values": first.added.metric_values,
                   "again_seconds": round(again_s, 2),
                   "again_added": dataclasses.asdict(again.added)},
        "history": {"nights": nights, "rigs": len(GATED), "synthetic_rows": rows, "fill_seconds": round(fill_s, 2),
                    **summary(asked)},
    }
    print(f"{engine_name}: import of {first.folders} folders {first_s:.1f} s ({first.added.results} results, "
          f"{first.added.metric_values} metric values), again {again_s:.1f} s adding {again.added.results} results; "
          f"history over {nights} nights x {len(GATED)} rigs: median {figures['history']['median_ms']} ms, "
          f"p90 {figures['history']['p90_ms']} ms ({figures['history']['queries']} queries)")
    return figures, {key: rows for key, (rows, _) in asked.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nights", type=int, default=1000, help="synthetic nights per rig (default 1000)")
    parser.add_argument("--repeat", type=int, default=5, help="times each history is asked (default 5)")
    parser.add_argument("--no-postgresql", action="store_true", help="SQLite only (no server started)")
    parser.add_argument("--results-dir", default=None, help="the results root (default: the workspace's results/)")
    parser.add_argument("--out", default=None, help="the JSON figures (default results/.db/benchmark-<UTC>.json)")
    args = parser.parse_args(argv)
    if args.nights < 1 or args.repeat < 2:
        parser.error("--nights must be at least 1 and --repeat at least 2")
    workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY", os.getcwd())
    results_root = args.results_dir or os.path.join(workspace, "results")
    moment = datetime.datetime.now(datetime.timezone.utc)
    out = args.out or os.path.join(results_root, ".db", f"benchmark-{moment:%Y%m%dT%H%M%SZ}.json")
    doc = {"kind": "tunelab.db_benchmark", "schema_version": 1, "measured_at": moment.isoformat(timespec="seconds"),
           "host": platform.node(), "python": platform.python_version(), "engines": {},
           "note": "history is over SYNTHETIC nights (rows shaped as the import writes them); the import is of the "
                   "committed documents"}
    answers = {}
    with tempfile.TemporaryDirectory(prefix="tunelab-db-benchmark-") as folder:
        doc["engines"]["sqlite"], answers["sqlite"] = measure(
            "sqlite", "sqlite:///" + os.path.join(folder, "import.sqlite"),
            "sqlite:///" + os.path.join(folder, "nights.sqlite"), results_root, args.nights, args.repeat)
    if not args.no_postgresql:
        from results.db import pgserver  # a server of Debian's packages, started here on loopback
        with pgserver.Server(hashlib.sha256(os.urandom(16)).hexdigest()) as server:
            doc["engines"]["postgresql"], answers["postgresql"] = measure(
                "postgresql " + os.path.basename(os.path.dirname(pgserver.bin_dir())), server.create("bench_import"),
                server.create("bench_nights"), results_root, args.nights, args.repeat)
        doc["same_answers"] = answers["sqlite"] == answers["postgresql"]
        print("the same history from both engines" if doc["same_answers"] else "the engines' answers DIFFER")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    safeio.write_text(out, json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"wrote {out}")
    return 0 if doc.get("same_answers", True) else 1


if __name__ == "__main__":
    sys.exit(main())
