"""Change points in a history of result sets (e.g. nightly runs), per cell and metric, with Apache Otava.

    bazel run //analysis:history -- SET [SET...] [--metric M] [--min-segment 5] --out history.png

Each set contributes one point per (cell, metric): the median of its measured samples. Otava's E-divisive
means (Fleming et al., "Hunter", ICPE 2023) finds where the series' level shifts; a change point is kept
when both segments are at least --min-segment points long and the shift is larger than the metric's
minimum effect; it is a regression when it moves the metric in its bad direction.
"""

import argparse
import collections
import dataclasses
import os
import statistics
import sys

from otava.analysis import compute_change_points

from analysis import plots, resultsets

MAX_PVALUE = 0.001  # Otava's default significance for a change point
WINDOW = 50


@dataclasses.dataclass
class ChangePoint:
    index: int  # the first point of the new segment
    before: float  # mean of the segment before
    after: float
    change: float  # relative, after / before - 1
    pvalue: float
    regression: bool


def change_points(values, direction, min_segment=5, min_effect=0.0):
    """Change points of one series, filtered by segment length and size; known-answer tested."""
    found, _ = compute_change_points(list(values), window_len=WINDOW, max_pvalue=MAX_PVALUE)
    kept, last = [], 0
    for cp in sorted(found, key=lambda c: c.index):
        if cp.index - last < min_segment or len(values) - cp.index < min_segment:
            continue
        before, after = cp.stats.mean_before(), cp.stats.mean_after()
        change = after / before - 1 if before else float("inf")
        if abs(change) <= min_effect:
            continue
        worse = change < 0 if direction == "higher_is_better" else change > 0
        kept.append(ChangePoint(cp.index, before, after, change, cp.stats.pvalue, worse))
        last = cp.index
    return kept


def series(sets):
    """{(cell label, metric): [(set name, median)]} in the order of `sets` (oldest first)."""
    out = collections.OrderedDict()
    for s in sets:
        by_cell = collections.defaultdict(list)
        for d in s.docs:
            if d["status"] == "ok":
                key = " ".join(f"{k}={v}" for k, v in sorted(d["cell"]["params"].items()))
                for sample in d["samples"]:
                    by_cell[(key, sample["metric"])].append(sample["value"])
        for key, values in by_cell.items():
            out.setdefault(key, []).append((s.name, statistics.median(values)))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description="Change points over a history of result sets (oldest first).")
    parser.add_argument("sets", nargs="+", metavar="RESULT_SET")
    parser.add_argument("--metric", help="only this metric")
    parser.add_argument("--min-segment", type=int, default=5, help="points a segment needs (default 5)")
    parser.add_argument("--out", required=True, help="the plot to write (PNG); one per series gets a suffix")
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
    for n, ((cell, metric), points) in enumerate(series(sets).items()):
        if args.metric and metric != args.metric:
            continue
        decl = declared.get(metric, {"unit": "?", "direction": "higher_is_better"})
        cps = change_points([v for _, v in points], decl["direction"], args.min_segment)
        path = plots.history(f"{stem}-{n}{ext or '.png'}", f"{metric}: {cell}"[:110], decl["unit"], points,
                             [c.index for c in cps])
        print(f"{metric} [{cell}]: {len(points)} points, {len(cps)} change point(s); plot {path}")
        for c in cps:
            regressions += c.regression
            print(f"  at {points[c.index][0]}: {c.before:,.4g} -> {c.after:,.4g} ({c.change:+.1%}, p {c.pvalue:.2g})"
                  f"{' REGRESSION' if c.regression else ''}")
    return 1 if regressions else 0


if __name__ == "__main__":
    sys.exit(main())
