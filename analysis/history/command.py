"""The history command: change points over a history of result sets, and the nightly history's plots.

    bazel run //analysis:history -- SET [SET...] [--metric M] [--min-segment 5] --out history.png

What it finds and how: analysis/history/changepoints.py."""

import argparse
import collections
import datetime
import os
import sys

from analysis import resultsets
from analysis.history.changepoints import change_points, drift_explains, nights, reference_series, series, short_name, started
from analysis.reports import plots

def main(argv=None):
    parser = argparse.ArgumentParser(description="Change points over a history of result sets (oldest first).")
    parser.add_argument("sets", nargs="+", metavar="RESULT_SET")
    parser.add_argument("--metric", help="only this metric")
    parser.add_argument("--min-segment", type=int, default=5, help="points a segment needs (default 5)")
    parser.add_argument("--out", required=True,
                        help="the plot to write (PNG); with several series (cells x metrics) one each, OUT-0.png, ...")
    parser.add_argument("--results-dir")
    args = parser.parse_args(argv)
    workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY", os.getcwd())
    cwd = os.environ.get("BUILD_WORKING_DIRECTORY", os.getcwd())
    results_root = args.results_dir or os.path.join(workspace, "results")
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
    stem, ext = os.path.splitext(os.path.join(cwd, args.out))
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
        print(f"{metric} [{cell}]: {len(found)} nights ({', '.join(f'{v} {k}' for k, v in sorted(states.items()))}), "
              f"{len(cps)} change point(s); plot {path}")
        for c in cps:
            regressions += c.regression
            print(f"  at {found[c.index].when:%Y-%m-%d %H:%M}: {c.before:,.4g} -> {c.after:,.4g} ({c.change:+.1%}, "
                  f"p {c.pvalue:.2g})" + (" REGRESSION" if c.regression else ""))
    return 1 if regressions else 0


if __name__ == "__main__":
    sys.exit(main())
