"""Axis comparisons within one run: for every axis that varies, each cell against its baseline partner.

A cell's partner is the cell with the same parameters except the compared axis, which takes the axis'
baseline value (the first value in matrix order). A cell's values are the raw samples of all its ok
repetitions, kept grouped by repetition: with 3 or more repetitions the intervals come from resampling
whole runs; with fewer, from single samples, which are autocorrelated, so the table says "optimistic".
"""

import collections
import dataclasses
import statistics

from rich.markup import escape
from rich.table import Table

from analysis import stats

MIN_REPETITIONS = 3


@dataclasses.dataclass
class CellData:
    id: str
    params: dict
    statuses: collections.Counter
    reasons: list
    values: dict  # metric -> [raw samples of every ok repetition]
    groups: dict  # metric -> [[samples of one repetition], ...]
    timed: dict = dataclasses.field(default_factory=dict)  # metric -> [(t, value)] of the first ok repetition


@dataclasses.dataclass
class Row:
    axis: str
    baseline_value: str
    value: str
    others: str
    baseline: stats.Summary
    summary: stats.Summary
    comparison: stats.Comparison
    runs: int  # the fewer ok repetitions of the two sides
    baseline_id: str = ""
    cell_id: str = ""


def collect(docs, cell_order=None):
    """CellData per cell id, in `cell_order` (ids) if given, else in first-seen order."""
    by_cell = collections.OrderedDict()
    for cid in cell_order or []:
        by_cell[cid] = None
    grouped = collections.defaultdict(list)
    for d in docs:
        grouped[d["cell"]["id"]].append(d)
        by_cell.setdefault(d["cell"]["id"], None)
    out = []
    for cid in by_cell:
        cell_docs = sorted(grouped.get(cid, []), key=lambda d: d["cell"]["repetition"])
        if not cell_docs:
            continue
        statuses = collections.Counter(d["status"] for d in cell_docs)
        reasons = sorted({d["reason"] for d in cell_docs if d.get("reason") and d["status"] != "ok"})
        ok = [d for d in cell_docs if d["status"] == "ok"]
        values, groups = {}, {}
        metrics = sorted({s["metric"] for d in ok for s in d["samples"]})
        for metric in metrics:
            per_rep = [[s["value"] for s in d["samples"] if s["metric"] == metric] for d in ok]
            groups[metric] = [v for v in per_rep if v]
            values[metric] = [x for v in groups[metric] for x in v]
        timed = {}
        if ok:
            for metric in metrics:
                timed[metric] = [(s["t"], s["value"]) for s in ok[0]["samples"]
                                 if s["metric"] == metric and "t" in s]
        out.append(CellData(cid, cell_docs[0]["cell"]["params"], statuses, reasons, values, groups, timed))
    return out


def varying_axes(cells):
    axes = collections.OrderedDict()
    for c in cells:
        for k, v in c.params.items():
            axes.setdefault(k, [])
            if v not in axes[k]:
                axes[k].append(v)
    return {k: v for k, v in axes.items() if len(v) > 1}


def axis_groups(cells):
    """Varying axes, with axes that change together merged into one group: a zipped pair such as gc and
    gc_opts (g1/default, cms/cms_iof80), whose values map one-to-one, has no cells differing in one alone."""
    groups = []
    for axis in varying_axes(cells):
        for group in groups:
            if _one_to_one(cells, group[0], axis):
                group.append(axis)
                break
        else:
            groups.append([axis])
    return groups


def _one_to_one(cells, a, b):
    forward, backward = {}, {}
    for c in cells:
        va, vb = c.params[a], c.params[b]
        if forward.setdefault(va, vb) != vb or backward.setdefault(vb, va) != va:
            return False
    return True


def axis_rows(cells, metric, axes=None, baselines=None):
    """Rows of every axis comparison for `metric`, Holm-adjusted together (one family per metric).

    Axes that change together (axis_groups) are compared as one, named "a+b" with values "x/y". axes:
    compare only these (default: every varying axis); baselines: {axis: value} overriding the default
    baseline, the axis' first value in cell order."""
    groups = axis_groups(cells)
    varying = [a for g in groups for a in g]
    by_params = {tuple(sorted(c.params.items())): c for c in cells}
    rows = []
    for group in groups:
        name = "+".join(group)
        if axes is not None and not set(group) & set(axes):
            continue
        value_of = lambda c: "/".join(c.params[a] for a in group)  # noqa: E731
        base_value = (baselines or {}).get(name) or value_of(cells[0])
        base_cell = next((c for c in cells if value_of(c) == base_value), None)
        if base_cell is None:
            continue  # the requested baseline value was not measured
        base_params = {a: base_cell.params[a] for a in group}
        others_axes = [a for a in varying if a not in group]
        for c in cells:
            if value_of(c) == base_value or metric not in c.values:
                continue
            partner = by_params.get(tuple(sorted(dict(c.params, **base_params).items())))
            if partner is None or metric not in partner.values:
                continue
            comparison = stats.compare(partner.values[metric], c.values[metric],
                                       partner.groups[metric], c.groups[metric])
            rows.append(Row(axis=name, baseline_value=base_value, value=value_of(c),
                            others=" ".join(f"{a}={c.params[a]}" for a in others_axes),
                            baseline=stats.summarize(partner.values[metric], partner.groups[metric]),
                            summary=stats.summarize(c.values[metric], c.groups[metric]), comparison=comparison,
                            runs=min(len(partner.groups[metric]), len(c.groups[metric])),
                            baseline_id=partner.id, cell_id=c.id))
    stats.adjust([r.comparison for r in rows])
    return rows


def fmt_value(x):
    """A measured value for tables: thousands separated, 3 significant digits below 100."""
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:,.3g}"


def fmt_p(p):
    return "-" if p != p else ("<0.001" if p < 0.001 else f"{p:.3f}")


def _n(summary, runs):
    return f"{summary.n}/{runs}" + ("" if runs >= stats.MIN_SAMPLES else " (optimistic)")


def tables(cells, metric, unit, direction, title_metric=None):
    """rich Tables, one per compared axis, for one metric."""
    rows = axis_rows(cells, metric)
    out = []
    for axis in dict.fromkeys(r.axis for r in rows):
        axis_rows_ = [r for r in rows if r.axis == axis]
        base = axis_rows_[0].baseline_value
        t = Table(title=f"{title_metric or metric} by {axis} (baseline {axis}={base}; {unit}, {direction.replace('_', ' ')})")
        for col in (axis, "other parameters", "median", "95% CI", "samples/runs", "change vs baseline",
                    "change 95% CI", "p (Holm)", "verdict"):
            t.add_column(col, overflow="fold")
        for r in axis_rows_:
            c = r.comparison
            verdict = c.verdict(direction)
            style = {"better": "green", "worse": "red"}.get(verdict, "")
            t.add_row(f"{escape(r.baseline_value)} (baseline)", escape(r.others), fmt_value(r.baseline.median),
                      f"{fmt_value(r.baseline.ci_low)}..{fmt_value(r.baseline.ci_high)}", _n(r.baseline, r.runs),
                      "", "", "", "")
            t.add_row(escape(r.value), escape(r.others), fmt_value(r.summary.median),
                      f"{fmt_value(r.summary.ci_low)}..{fmt_value(r.summary.ci_high)}", _n(r.summary, r.runs),
                      f"{c.change:+.1%}", f"{c.ratio_ci_low - 1:+.1%}..{c.ratio_ci_high - 1:+.1%}",
                      fmt_p(c.p_adjusted), f"[{style}]{verdict}[/{style}]" if style else verdict)
        out.append(t)
    return out


def not_measured_rows(cells):
    """[cell id, varying parameters, ok/failed/invalid/skipped counts, reasons] of every cell with a
    repetition that was skipped, failed or invalid."""
    axes = varying_axes(cells)
    rows = []
    for c in cells:
        if c.statuses.get("ok", 0) == sum(c.statuses.values()):
            continue
        counts = "/".join(str(c.statuses.get(s, 0)) for s in ("ok", "failed", "invalid", "skipped"))
        rows.append([c.id, " ".join(f"{a}={c.params[a]}" for a in axes), counts, "; ".join(c.reasons)[:300]])
    return rows


def not_measured_table(cells):
    """The not-measured rows as a rich Table, or None when every repetition was measured."""
    rows = not_measured_rows(cells)
    if not rows:
        return None
    t = Table(title="Cells not measured (or not in every repetition)")
    for col in ("cell", "parameters", "ok/failed/invalid/skipped", "reason"):
        t.add_column(col, overflow="fold")
    for row in rows:
        t.add_row(*(escape(v) for v in row))
    return t


def print_comparisons(console, docs, metrics, cell_order=None, names=None):
    """Prints the axis-comparison tables of every metric that has comparable cells, then the cells not
    measured. metrics: {name: {"unit", "direction"}} (the workload's declaration). names: display names."""
    cells = collect(docs, cell_order)
    printed = False
    for metric, decl in metrics.items():
        for t in tables(cells, metric, decl["unit"], decl["direction"], (names or {}).get(metric)):
            console.print(t)
            printed = True
    missing = not_measured_table(cells)
    if missing is not None:
        console.print(missing)
    if printed and any(len(g) < stats.MIN_SAMPLES for c in cells for g in c.groups.values()):
        console.print("(optimistic): fewer than 3 runs a side, so intervals resample per-second samples, which are "
                      "autocorrelated. A profile with 3 or more repetitions (e.g. --profile full) resamples whole "
                      "runs. p-values treat raw samples as independent in every case.")
    return printed
