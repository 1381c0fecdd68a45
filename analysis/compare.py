"""Axis comparisons within one run: for every declared axis (or zip group) that varies, each cell against
its baseline partner.

A cell's partner is the cell with the same parameters except the compared axis (or zip group), which takes
its baseline value (the first value in matrix order). Only declared axes are compared: the run manifest
records them (`comparison_groups`: multi-valued axes and zip groups), so cells that differ because an
[[include]] added them (a rig check, a CPU-bound extra cell) are never paired. A cell's values are the
per-second samples of its ok repetitions, grouped by repetition; analysis/stats.py makes runs the unit.
"""

import collections
import dataclasses
import re

from analysis import stats

@dataclasses.dataclass
class CellData:
    id: str
    params: dict
    statuses: collections.Counter
    reasons: list
    values: dict  # metric -> [raw samples of every ok repetition]
    groups: dict  # metric -> [[samples of one repetition], ...]
    timed: dict = dataclasses.field(default_factory=dict)  # metric -> [(t, value)] of the first ok repetition
    zero_possible: frozenset = frozenset()  # counts that may be 0 (workload.toml): no ratio where a side is 0
    rounds: dict = dataclasses.field(default_factory=dict)  # metric -> [(run id, repetition) of each group]


@dataclasses.dataclass
class Pair:
    """A cell and its baseline partner: the compared axis' two values, the other parameters, each a Summary."""
    axis: str
    baseline_value: str
    value: str
    others: str
    baseline: stats.Summary
    summary: stats.Summary


@dataclasses.dataclass
class Row(Pair):
    comparison: stats.Comparison
    runs: int  # the fewer ok repetitions of the two sides
    baseline_id: str = ""
    cell_id: str = ""
    params: dict = dataclasses.field(default_factory=dict)  # the candidate cell's parameters


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
        values, groups, rounds = {}, {}, {}
        metrics = sorted({s["metric"] for d in ok for s in d["samples"]})
        for metric in metrics:
            per_rep = [([s["value"] for s in d["samples"] if s["metric"] == metric],
                        (d.get("run_id"), d["cell"]["repetition"])) for d in ok]
            groups[metric] = [v for v, _ in per_rep if v]
            rounds[metric] = [r for v, r in per_rep if v]
            values[metric] = [x for v in groups[metric] for x in v]
        timed = {}
        if ok:
            for metric in metrics:
                timed[metric] = [(s["t"], s["value"]) for s in ok[0]["samples"]
                                 if s["metric"] == metric and "t" in s]
        zero_possible = frozenset(m["name"] for d in ok for m in d.get("metrics", []) if m.get("zero_possible"))
        out.append(CellData(cid, cell_docs[0]["cell"]["params"], statuses, reasons, values, groups, timed,
                            zero_possible, rounds))
    return out


def compare_cells(baseline, candidate, metric):
    """stats.compare of two cells' runs of `metric`: paired over rounds when every run of both came from one
    run (an interleaved run's round r measured both cells' repetition r), else measured apart (Welch)."""
    a, b = baseline.rounds.get(metric) or [], candidate.rounds.get(metric) or []
    runs = {run for run, _ in a + b}
    paired = len(runs) == 1 and None not in runs and len(a) == len(baseline.groups[metric]) and len(b) == len(
        candidate.groups[metric])
    rounds = ([r for _, r in a], [r for _, r in b]) if paired else None
    return stats.compare(baseline.groups[metric], candidate.groups[metric], rounds=rounds)


def varying_params(params_list):
    """{axis: its values, first seen first} of the axes whose value differs between these parameter mappings
    (the one way tunelab says which axes a set of cells varies: the plan's, the summary's, the site's)."""
    axes = collections.OrderedDict()
    for params in params_list:
        for k, v in params.items():
            axes.setdefault(k, [])
            if v not in axes[k]:
                axes[k].append(v)
    return {k: v for k, v in axes.items() if len(v) > 1}


def varying_axes(cells):
    """varying_params of cells' params."""
    return varying_params(c.params for c in cells)


def axis_groups(cells, declared=None):
    """The axis groups to compare. declared: the run's comparison groups ([[axis, ...]], from its manifest);
    those whose axes vary among `cells` are kept. Without it (sets older than the field), varying axes are
    inferred, with axes that change one-to-one (a zipped gc and gc_opts) merged into one group."""
    if declared is not None:
        varying = varying_axes(cells)
        return [list(g) for g in declared if any(a in varying for a in g)]
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


def _without_echoes(cells, axes):
    """`axes` without those that only echo an earlier one (values one-to-one over the cells, e.g. a zip
    group's mode/op/files): a row's context names each independent choice once. Only in the matrix's own
    axis order (the summary), where "earlier" is the author's order; the report names every axis."""
    kept = []
    for a in axes:
        if not any(_one_to_one(cells, k, a) for k in kept):
            kept.append(a)
    return kept


def partners(cells, groups, baselines=None):
    """[(group, baseline value, baseline cell, cell)]: every cell paired with the cell that has its parameters
    but the group's baseline value (baselines: {"a+b": value}, default the first cell's). Anything with
    `params` (a dict of strings) pairs: measured CellData, or a matrix's planned cells before a run."""
    by_params = {tuple(sorted(c.params.items())): c for c in cells}
    out = []
    for group in groups:
        value_of = lambda c: "/".join(c.params[a] for a in group)  # noqa: E731
        base_value = (baselines or {}).get("+".join(group)) or value_of(cells[0])
        base_cell = next((c for c in cells if value_of(c) == base_value), None)
        if base_cell is None:
            continue  # the requested baseline value was not measured
        base_params = {a: base_cell.params[a] for a in group}
        for c in cells:
            if value_of(c) == base_value:
                continue
            partner = by_params.get(tuple(sorted(dict(c.params, **base_params).items())))
            if partner is not None:
                out.append((group, base_value, partner, c))
    return out


def axis_rows(cells, metric, axes=None, baselines=None, declared=None, defaults=None):
    """Rows of every axis comparison for `metric`, one family per metric (stats.adjust: Bonferroni).

    Axes that change together (axis_groups) are compared as one, named "a+b" with values "x/y". axes:
    compare only these (default: every compared group); baselines: {axis: value} overriding the default
    baseline, the axis' first value in cell order; declared: the run's comparison groups (axis_groups).
    defaults: {axis: the matrix's first value}; with it, a row's "others" names only the other compared
    axes and the parameters where the row's cells leave the defaults (an [[include]]), not every axis."""
    groups = axis_groups(cells, declared)
    # The matrix's axis order where known (defaults follow it), so a row names e.g. mode before op.
    varying = sorted(varying_axes(cells), key=lambda a: (list(defaults or {}).index(a) if a in (defaults or {})
                                                         else len(defaults or {}), a))
    compared = [a for g in groups for a in g]
    rows = []
    for group, base_value, partner, c in partners(cells, groups, baselines):
        name = "+".join(group)
        if axes is not None and not set(group) & set(axes):
            continue
        others_axes = [a for a in varying if a not in group]
        if defaults is not None:
            others_axes = [a for a in others_axes if a in compared]
        if metric not in c.values or metric not in partner.values:
            continue
        if metric in c.zero_possible and stats.summarize(partner.groups[metric]).median == 0:
            continue  # a count whose baseline is 0 has no ratio: the cluster report shows its medians
        comparison = compare_cells(partner, c, metric)
        shown = [a for a in varying if a not in group and (
            a in others_axes or (defaults is not None and c.params[a] != defaults.get(a, c.params[a])))]
        rows.append(Row(axis=name, baseline_value=base_value, value="/".join(c.params[a] for a in group),
                        others=" ".join(f"{a}={c.params[a]}" for a in (
                            shown if defaults is None else _without_echoes(cells, shown))),
                        baseline=stats.summarize(partner.groups[metric]),
                        summary=stats.summarize(c.groups[metric]), comparison=comparison,
                        runs=min(len(partner.groups[metric]), len(c.groups[metric])),
                        baseline_id=partner.id, cell_id=c.id, params=dict(c.params)))
    stats.adjust([r.comparison for r in rows])
    return rows


@dataclasses.dataclass
class DifferenceRow(Pair):
    difference: stats.Difference


def difference_rows(cells, metric, axes=None, baselines=None, declared=None):
    """Rows of a count that may be 0 (workload.toml's zero_possible): every pair axis_rows would make, a zero
    baseline included, each the difference of the cells' values with its interval (stats.difference)."""
    varying = varying_axes(cells)
    rows = []
    for group, base_value, partner, c in partners(cells, axis_groups(cells, declared), baselines):
        if axes is not None and not set(group) & set(axes):
            continue
        if metric not in c.values or metric not in partner.values:
            continue
        rows.append(DifferenceRow(
            axis="+".join(group), baseline_value=base_value, value="/".join(c.params[a] for a in group),
            others=" ".join(f"{a}={c.params[a]}" for a in varying if a not in group),
            baseline=stats.summarize(partner.groups[metric]), summary=stats.summarize(c.groups[metric]),
            difference=stats.difference(partner.groups[metric], c.groups[metric])))
    return rows


def fmt_difference(d, unit=""):
    """"+64 (95% CI +62..+66)", or "+64" without an interval (fewer than 3 runs a side)."""
    signed = lambda x: ("+" if x > 0 else "") + fmt_value(x, unit)  # noqa: E731
    return signed(d.difference) + (f" (95% CI {signed(d.ci_low)}..{signed(d.ci_high)})" if d.has_ci else "")


_PATCHED = re.compile(r"patched:([^@]+)(?:@(\d+))?$")


@dataclasses.dataclass
class AttributionRow:
    patch_set: str
    step: int  # the k-th patch of the series
    patch: str  # its file name
    before: str  # the variant without it (stock or the (k-1)-prefix)
    after: str
    others: str
    comparison: object  # stats.Comparison of before -> after


def patch_attribution(cells, metric, applied_by_variant):
    """Patch-by-patch attribution over measured prefixes of a series: for every patch k whose prefix k and
    prefix k-1 (stock for k = 1) were both measured with otherwise equal parameters, the change it brings.
    applied_by_variant: {variant value: [applied patch names]} (from the results' provenance), which says
    how many patches `patched:<set>` (the whole series) applied. One family (stats.adjust)."""
    def step_of(variant):
        m = _PATCHED.fullmatch(variant)
        if not m:
            return None, 0
        applied = applied_by_variant.get(variant) or []
        return m.group(1), int(m.group(2)) if m.group(2) else len(applied)

    varying = set(varying_axes(cells)) - {"variant"}
    index = {}  # (set or None, k, other params) -> cell
    for c in cells:
        if metric not in c.groups or "variant" not in c.params:
            continue
        name, k = step_of(c.params["variant"])
        others = tuple(sorted((a, v) for a, v in c.params.items() if a != "variant"))
        index.setdefault((name, k, others), c)
    rows = []
    for (name, k, others), after in sorted(index.items(), key=lambda kv: (str(kv[0][0]), kv[0][2], kv[0][1])):
        if name is None or k < 1:
            continue
        before = index.get((name, k - 1, others)) or (index.get((None, 0, others)) if k == 1 else None)
        if before is None:
            continue
        if metric in after.zero_possible and stats.summarize(before.groups[metric]).median == 0:
            continue  # a count from 0 has no ratio: the report's count table gives its difference
        applied = applied_by_variant.get(after.params["variant"]) or []
        rows.append(AttributionRow(name, k, applied[k - 1] if len(applied) >= k else f"patch {k}",
                                   before.params["variant"], after.params["variant"],
                                   " ".join(f"{a}={v}" for a, v in others if a in varying),
                                   compare_cells(before, after, metric)))
    stats.adjust([r.comparison for r in rows])
    return rows


def fmt_value(x, unit=""):
    """A measured value for tables: thousands separated, 3 significant digits below 100; a number of bytes
    (unit B or bytes) in B, KB, MB or GB (powers of 1,000), one decimal (issue 82: 266,600,000 read as 266.6 MB)."""
    if unit in BYTE_UNITS:
        for name, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
            if abs(x) >= size:
                return f"{x / size:,.1f} {name}"
        return f"{x:,.0f} B"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:,.3g}"


BYTE_UNITS = ("B", "bytes", "byte")


def fmt_ci(summary):
    """A cell's 95 % interval over runs, or "-" with fewer than 3 runs (stats: no interval then)."""
    if not summary.has_ci:
        return "-"
    return f"{fmt_value(summary.ci_low)}..{fmt_value(summary.ci_high)}"


def fmt_change_ci(comparison, digits=1):
    if comparison.ratio_ci_low != comparison.ratio_ci_low:
        return "-"
    return f"{comparison.ratio_ci_low - 1:+.{digits}%}..{comparison.ratio_ci_high - 1:+.{digits}%}"


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


def fmt_level(comparison):
    """The interval's level as a table says it: "98% CI" for one comparison, "99.83% CI" for one of 12."""
    return f"{100 * comparison.level:.4g}% CI"
