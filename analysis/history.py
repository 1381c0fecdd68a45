"""Change points in a history of result sets (e.g. nightly runs), per cell and metric, with Apache Otava.

    bazel run //analysis:history -- SET [SET...] [--metric M] [--min-segment 5] --out history.png

Each set contributes one point per (cell, metric): the median of its run medians (analysis/stats.py). Otava's
E-divisive means (Fleming et al., "Hunter", ICPE 2023) finds where the series' level shifts; a change point
is kept when both segments are at least --min-segment points long and the shift is larger than the
metric's minimum effect; it is a regression when it moves the metric in its bad direction.

Host drift is not a regression: every set carries its host reference (rigs/matrix/host_reference.py), plotted
beside the metric. A change point is attributed to host drift when, across the same split, the host
reference moved the same way by more than analysis/drift.DRIFT_FLOOR and by at least half the metric's
change (a slower host explains at least half of it); it is then reported as "host drift", never as a
regression of the system under test.
"""

import argparse
import collections
import dataclasses
import os
import statistics
import sys

from otava.analysis import compute_change_points

from analysis import drift, plots, resultsets, stats

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
    """{(cell label, metric): [(set name, median of run medians)]} in the order of `sets` (oldest first).

    A cell is followed by its id, not its parameters: an axis added later appears in newer results at its
    default value, which leaves the id as it was (rigs/matrix/spec.cell_id), so the nightly history does not
    split at the version that added it. The label shows the parameters every point's results share."""
    points = collections.OrderedDict()
    shared = {}
    for s in sets:
        by_cell = collections.defaultdict(list)
        for d in s.docs:
            if d["status"] == "ok":
                cell_id, params = d["cell"]["id"], d["cell"]["params"]
                shared[cell_id] = shared[cell_id] & params.items() if cell_id in shared else set(params.items())
                per_metric = collections.defaultdict(list)
                for sample in d["samples"]:
                    per_metric[sample["metric"]].append(sample["value"])
                for metric, values in per_metric.items():
                    by_cell[(cell_id, metric)].append(values)
        for key, runs in by_cell.items():
            points.setdefault(key, []).append((s.name, stats.summarize(runs).median))
    return collections.OrderedDict(((" ".join(f"{k}={v}" for k, v in sorted(shared[cell_id])), metric), found)
                                   for (cell_id, metric), found in points.items())


def reference_series(sets, metric=drift.PRIMARY_REFERENCE):
    """(metric, unit, [the set's host reference median, or None]) in the order of `sets`."""
    values, unit = [], ""
    for s in sets:
        measurements = drift.reference(s).get(metric, [])
        values.append(statistics.median(m["median"] for m in measurements) if measurements else None)
        unit = unit or (measurements[0]["unit"] if measurements else "")
    return metric, unit, values


def drift_explains(change_point, reference_values, min_segment):
    """True when the host reference moved across the same split the same way, by more than the drift floor
    and by at least half the metric's change (see the module docstring)."""
    before = [v for v in reference_values[:change_point.index] if v is not None]
    after = [v for v in reference_values[change_point.index:] if v is not None]
    if len(before) < min(min_segment, 2) or len(after) < min(min_segment, 2):
        return False
    ref_change = statistics.mean(after) / statistics.mean(before) - 1
    same_way = (ref_change > 0) == (change_point.change > 0)
    return same_way and abs(ref_change) > drift.DRIFT_FLOOR and abs(ref_change) >= 0.5 * abs(change_point.change)


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
    chosen = [(key, points) for key, points in series(sets).items() if not args.metric or key[1] == args.metric]
    for n, ((cell, metric), points) in enumerate(chosen):
        decl = declared.get(metric, {"unit": "?", "direction": "higher_is_better"})
        names = [name for name, _ in points]
        reference = reference_series([s for s in sets if s.name in names])
        cps = change_points([v for _, v in points], decl["direction"], args.min_segment)
        drifted = {c.index for c in cps if drift_explains(c, reference[2], args.min_segment)}
        # One series: the file asked for; more: one file each, numbered.
        target = f"{stem}{ext or '.png'}" if len(chosen) == 1 else f"{stem}-{n}{ext or '.png'}"
        path = plots.history(target, f"{metric}: {cell}"[:110], decl["unit"], points,
                             [c.index for c in cps], reference, drifted)
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


if __name__ == "__main__":
    sys.exit(main())
