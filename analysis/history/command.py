"""The history command: change points over a history of result sets, and the nightly history's plots.

    bazel run //analysis:history -- SET [SET...] [--metric M] [--min-segment 5] --out history.png
    bazel run //analysis:history -- --matrix M | --rig R | --matrix-of RUN_DIR [--since DAY] [--db URL] --out h.png

The second form draws the nightly history from the results database (results/db: the nights the nightly indexed,
each as the gate judged it; --db or TUNELAB_DB, else the SQLite file under results/.db).

What it finds and how: analysis/history/changepoints.py."""

import argparse
import collections
import datetime
import os
import sys

from analysis import resultsets
from analysis.history.changepoints import (change_points, drift_explains, nights, nights_from_rows, reference_series,
                                           series, short_name, started)
from analysis.reports import plots
from results import safeio, store as file_store
from results.db import queries, store

MIN_SEGMENT = 5  # points a segment needs, by default


def main(argv=None):
    parser = argparse.ArgumentParser(description="Change points over a history of result sets (oldest first).")
    parser.add_argument("sets", nargs="*", metavar="RESULT_SET",
                        help="result sets, oldest first (or none: the nights of --matrix or --rig in the database)")
    parser.add_argument("--matrix", help="the nightly history of this matrix from the results database")
    parser.add_argument("--rig", help="the nightly history of this rig's matrices from the results database")
    parser.add_argument("--matrix-of", metavar="RUN_DIR",
                        help="the history of this run's matrix and profile (its manifest's) from the results database")
    parser.add_argument("--since", type=datetime.date.fromisoformat, metavar="YYYY-MM-DD",
                        help="with --matrix or --rig: nights from this day on (UTC)")
    parser.add_argument("--profile", default="nightly",
                        help="with --matrix or --rig: the runs of this profile (default: nightly; an A/A profile's "
                             "runs are nights too)")
    parser.add_argument("--db", help="the results database (default: TUNELAB_DB, else results/.db/tunelab.sqlite)")
    parser.add_argument("--metric", help="only this metric")
    parser.add_argument("--min-segment", type=int, default=MIN_SEGMENT,
                        help=f"points a segment needs (default {MIN_SEGMENT})")
    parser.add_argument("--out", required=True,
                        help="the plot to write (PNG); with several series (cells x metrics) one each, OUT-0.png, ...")
    parser.add_argument("--results-dir")
    args = parser.parse_args(argv)
    workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY", os.getcwd())
    cwd = os.environ.get("BUILD_WORKING_DIRECTORY", os.getcwd())
    results_root = args.results_dir or os.path.join(workspace, "results")
    if args.matrix_of:
        try:
            manifest = safeio.read_json(os.path.join(cwd, args.matrix_of, "manifest.json"), file_store.MAX_MANIFEST_BYTES)
            args.matrix, args.profile = (str(manifest["matrix"][k]) for k in ("name", "profile"))
        except (OSError, safeio.InputError, KeyError, TypeError) as e:
            print(f"error: --matrix-of {args.matrix_of}: not a run folder with a manifest ({e})", file=sys.stderr)
            return 2
    if bool(args.sets) == bool(args.matrix or args.rig):
        print("error: give result sets, or --matrix/--rig for the nights in the results database (not both)",
              file=sys.stderr)
        return 2
    stem, ext = os.path.splitext(os.path.join(cwd, args.out))
    if not args.sets:
        return database_main(args, results_root, stem, ext)
    try:
        sets = [resultsets.resolve(os.path.join(cwd, s) if os.path.exists(os.path.join(cwd, s)) else s, results_root)
                for s in args.sets]
    except resultsets.ResultSetError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    declared = {}
    for s in sets:
        declared.update(s.metrics())
    regressions = 0
    by_night = nights(sets, results_root)
    if by_night:
        return nightly_main(by_night, declared, args, stem, ext)
    chosen = [(key, points) for key, points in series(sets).items() if not args.metric or key[1] == args.metric]
    for n, ((cell, metric), points) in enumerate(chosen):
        decl = declared.get(metric, {"unit": "?", "direction": "higher_is_better"})
        names = [name for name, _ in points]
        reference = reference_series([s for s in sets if s.name in names])
        cps = change_points([v for _, v in points], decl["direction"], args.min_segment)
        drifted = {c.index for c in cps if drift_explains(c, reference[2], args.min_segment)}
        # One series: the file asked for; more: one file each, numbered.
        target = f"{stem}{ext or '.png'}" if len(chosen) == 1 else f"{stem}-{n}{ext or '.png'}"
        by_name = {s.name: s for s in sets}
        labels = [(f"{(started(by_name[name]) or datetime.datetime.min):%m-%d %H:%M} {short_name(by_name[name])}", v)
                  for name, v in points]
        path = plots.history(target, f"{metric}: {cell}", decl["unit"], labels, [c.index for c in cps], reference,
                             drifted)
        print(f"{metric} [{cell}]: {len(points)} points, {len(cps)} change point(s); plot {path}")
        for c in cps:
            verdict = ""
            if c.index in drifted:
                verdict = " host drift (the host reference moved with it), not a regression"
            elif c.regression:
                verdict = " REGRESSION"
                regressions += 1
            print(f"  at {points[c.index][0]}: {c.before:,.4g} -> {c.after:,.4g} ({c.change:+.1%}, p {c.pvalue:.2g})"
                  + verdict)
    return 1 if regressions else 0


def database_main(args, results_root, stem, ext):
    """main() over the nights the results database holds for --matrix or --rig."""
    url = store.database_url(args.db, results_root)
    try:
        engine = store.open_for_reading(url)
        try:
            with engine.connect() as connection:
                rows = queries.night_checks(connection, rig=args.rig, matrix=args.matrix, metric=args.metric,
                                            since=args.since, profile=args.profile)
        finally:
            engine.dispose()
    except store.DatabaseError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    which = " ".join(f"--{k} {v}" for k, v in (("matrix", args.matrix), ("rig", args.rig), ("metric", args.metric),
                                                ("since", args.since), ("profile", args.profile)) if v)
    if not rows:
        print(f"error: no night in {store.redacted(url)} for {which} (the nightly indexes each night; "
              f"`bazel run //tools:results -- import` indexes stored ones)", file=sys.stderr)
        return 2
    by_night, declared = nights_from_rows(rows)
    print(f"{len({r['run_id'] for r in rows})} night(s) of {which} in {store.redacted(url)}")
    return nightly_main(by_night, declared, args, stem, ext)


def nightly_main(by_night, declared, args, stem, ext):
    """main() for a history of nightly sets: one plots.nightly_history per (cell, metric); exit 1 when a
    change point of a candidate's value is a regression (as for any history)."""
    chosen = [(key, found) for key, found in by_night.items() if not args.metric or key[1] == args.metric]
    regressions = 0
    for n, ((cell, metric), found) in enumerate(chosen):
        decl = declared.get(metric, {"unit": "?", "direction": "higher_is_better"})
        cps = change_points([x.value for x in found], decl["direction"], args.min_segment)
        target = f"{stem}{ext or '.png'}" if len(chosen) == 1 else f"{stem}-{n}{ext or '.png'}"
        title = f"{metric}: nightly, candidate vs accepted" + ("" if cell == "(the only cell)" else f" ({cell})")
        path = plots.nightly_history(target, title, decl["unit"], found, [c.index for c in cps])
        states = collections.Counter(x.state for x in found)
        print(f"{metric} [{cell}]: {len(found)} night(s) ({', '.join(f'{v} {k}' for k, v in sorted(states.items()))}), "
              f"{len(cps)} change point(s); plot {path}")
        for c in cps:
            regressions += c.regression
            print(f"  at {found[c.index].when:%Y-%m-%d %H:%M}: {c.before:,.4g} -> {c.after:,.4g} ({c.change:+.1%}, "
                  f"p {c.pvalue:.2g})" + (" REGRESSION" if c.regression else ""))
    return 1 if regressions else 0


if __name__ == "__main__":
    sys.exit(main())
