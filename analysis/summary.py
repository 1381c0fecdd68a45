"""The end of a matrix run: what a performance engineer reads in the terminal.

    rig check: 500 nodes x 1 heartbeat/s -> 500/s ✔ (measured 500.0 containers/s, 1 run)
    host reference: cpu_loop_rate 1.06e+09 ops/s before, 1.05e+09 after (-0.9 %)
    <one table, under 100 columns: each declared comparison, its change with a CI over runs, the verdict>

Known-answer cells (the matrix's [[known_answer]]) are self-checks, printed as one line each and never
compared. Only cells differing in one declared axis or zip group are paired (analysis/compare.py); the
statistics follow analysis/stats.py (runs are the unit; fewer than 3 runs a side: no test).
"""

import argparse
import os
import sys

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from analysis import ceilings, compare, distributions, resultsets, sequential, stats, thresholds
from analysis.profiling import profiles
from analysis.sensitivity import figures as sensitivity_figures

WIDTH = 100
FOOTNOTE = ("Runs are the unit: a cell is the median of its run medians, its CI a bootstrap over runs. Change: paired "
            "over rounds (Welch across runs), a t interval at 98% split over the metric's comparisons; the verdict is "
            "that interval's against the minimum effect, as the gate reads it. Under 3 a side: no test.")


def known_answer_lines(cells, known_answers):
    """One line per known answer: ✔ within tolerance, ✘ outside, or why it was not measured."""
    by_id = {c.id: c for c in cells}
    lines = []
    for k in known_answers:
        cell = by_id.get(k["cell_id"])
        head = f"rig check: {k['label']} -> {compare.fmt_value(k['expect'])}"
        groups = cell.groups.get(k["metric"]) if cell else None
        if not groups:
            reason = "; ".join(cell.reasons) if cell else "not in this run"
            lines.append(f"{head} ✘ not measured: {reason}"[:300])
            continue
        s = stats.summarize(groups)
        ok = abs(s.median - k["expect"]) <= k["tolerance"] * abs(k["expect"])
        lines.append(f"{head} {'✔' if ok else '✘'} (measured {s.median:,.1f}, {s.runs} run{'s' * (s.runs != 1)}"
                     + ("" if ok else f"; outside ±{k['tolerance']:.0%}") + ")")
    return lines


def host_reference_line(manifest):
    ref = (manifest or {}).get("host_reference") or {}
    by_metric = {}
    for m in ref.get("measurements", []):
        by_metric.setdefault(m["metric"], {})[m["when"]] = m
    parts = []
    for metric, when in by_metric.items():
        before, after = when.get("before"), when.get("after")
        text = f"{metric} {before['median']:.3g} {before['unit']} before" if before else f"{metric}"
        if before and after:
            text += f", {after['median']:.3g} after ({after['median'] / before['median'] - 1:+.1%})"
        parts.append(text)
    return "host reference: " + "; ".join(parts) if parts else "host reference: none recorded"


def host_noise_line(docs, rig, manifest=None):
    """The host's noise over the runs' measurement windows (steal, load), with the rounds whose steal fell
    outside the band of the rig's committed A/A runs named, and the rounds the policy ran again for them (the
    manifest's noise_reruns, rigs/matrix/rounds/noisyrounds.py); "" when no run recorded it."""
    reruns = ((manifest or {}).get("noise_reruns") or {})
    if reruns.get("band") is not None:  # the band the run judged its rounds by
        band, source = reruns["band"], reruns.get("band_source", "")
    else:
        band, source = sensitivity_figures.checkout_steal_band(rig)
    again = {r.get("round"): r.get("rerun_as") for r in reruns.get("reruns") or []}
    flagged, steal = sensitivity_figures.noisy_rounds(docs, band)
    if not steal:
        return ""
    loads = [x for d in docs for x in (((d.get("provenance") or {}).get("noise") or {}).get("load_average") or [])
             if isinstance(x, (int, float))]
    text = (f"host noise over the measurement windows: steal {min(steal):.1%}..{max(steal):.1%} of CPU time"
            + (f", load {min(loads):.2f}..{max(loads):.2f}" if loads else ""))
    if flagged:
        text += (f"; FLAGGED: round(s) {', '.join(f'{r} ({s:.1%})' for r, s in flagged)} stole more than "
                 f"{band:.1%} ({source}): their values carry the host's noise and stay in the statistics")
        answered = [f"{r} as round {again[r]}" for r, _ in flagged if again.get(r) is not None]
        if answered:
            text += f"; run again by the policy: {', '.join(answered)}"
        if len(answered) < len(flagged):
            text += "; rerun the others to be sure (policy rerun_noisy_rounds)"
    return text


# A host reference that moved by more than this within the run, or measurement windows whose load stood above
# this many times the CPUs (a running cell itself makes ~1 to 2 on 2 CPUs), name the host as busy beside the
# verdicts. A calm run here moved its memory-copy reference by up to ~13 % (NOISE.md: 8-12 % between windows).
REFERENCE_DRIFT = 0.15
WINDOW_LOAD_PER_CPU = 1.25


def host_context(result_set):
    """The host's noise in a few words, for the verdicts of a run that had it, or "": the preflight's warnings
    (load before the run, busy processes), measurement windows with a load over WINDOW_LOAD_PER_CPU x the CPUs
    or steal over the rig's A/A band, a host reference moving by more than REFERENCE_DRIFT within the run."""
    manifest = result_set.manifest or {}
    parts = [str(w) for w in ((manifest.get("preflight") or {}).get("warnings") or [])][:2]
    docs = result_set.docs
    first = result_set.first_ok() or {}
    cpus = ((((first.get("provenance") or {}).get("host") or {}).get("cpu") or {}).get("logical_cpus"))
    loads = [x for d in docs for x in (((d.get("provenance") or {}).get("noise") or {}).get("load_average") or [])
             if isinstance(x, (int, float)) and not isinstance(x, bool)]
    if isinstance(cpus, int) and cpus > 0 and loads and max(loads) > WINDOW_LOAD_PER_CPU * cpus:
        parts.append(f"window load up to {max(loads):.1f} on {cpus} CPUs")
    band, _ = sensitivity_figures.checkout_steal_band((manifest.get("matrix") or {}).get("rig"))
    flagged, steal = sensitivity_figures.noisy_rounds(docs, band)
    if flagged:
        parts.append(f"steal up to {max(steal):.1%} in {len(flagged)} round(s)")
    by_metric = {}
    for m in ((manifest.get("host_reference") or {}).get("measurements") or []):
        if isinstance(m, dict) and isinstance(m.get("median"), (int, float)):
            by_metric.setdefault(m.get("metric"), {})[m.get("when")] = m["median"]
    for metric, when in by_metric.items():
        if when.get("before") and when.get("after") is not None:
            moved = when["after"] / when["before"] - 1
            if abs(moved) > REFERENCE_DRIFT:
                parts.append(f"host reference {metric} {moved:+.1%} within the run")
    return "; ".join(parts)


def comparison_table(cells, metrics, declared, question="", axes=None, effects=None, context=""):
    """The one table: every declared comparison of the headline metric (the first declared metric that has
    comparisons), or each cell's value when nothing is compared. None when no cell has a value. axes: the
    matrix's axis values (its first value per axis is the default, so rows name only what differs). effects:
    {metric: minimum effect} (analysis/thresholds.py); an interval wholly inside it is "within ±X%". context:
    host_context() of a busy run: every verdict says "(busy host)" and the caption says why."""
    effects = effects or {}
    defaults = {a: str(v[0]) for a, v in axes.items()} if axes else None
    rows_by_metric = {m: compare.axis_rows(cells, m, declared=declared, defaults=defaults) for m in metrics}
    rows_by_metric = {m: r for m, r in rows_by_metric.items() if r}
    rows_by_metric = dict(list(rows_by_metric.items())[:1])
    several = False
    if rows_by_metric:
        first = next(iter(rows_by_metric))
        title = question or f"{metrics[first].get('label', first)}: declared comparisons"
        t = _table(title)
        t.add_column("comparison", ratio=1, min_width=24, overflow="fold")
        level = next((compare.fmt_level(r.comparison) for rows in rows_by_metric.values() for r in rows
                      if r.comparison.tested), "CI")
        for col in ("baseline", "candidate", "change", f"change {level}"):
            t.add_column(col, justify="right", no_wrap=True)
        t.add_column("runs", justify="right", no_wrap=True)
        t.add_column("verdict", min_width=15, overflow="fold")  # a long verdict wraps, the comparison keeps its room
        resolved, unresolved = 0, []
        for metric, rows in rows_by_metric.items():
            decl = metrics[metric]
            for r in rows:
                c = r.comparison
                effect = effects.get(metric, thresholds.DEFAULT_MIN_EFFECT)
                if c.ratio_ci_low == c.ratio_ci_low:  # a CI exists: is it narrow enough to answer?
                    if (c.ratio_ci_high - c.ratio_ci_low) / 2 <= effect:
                        resolved += 1
                    else:
                        unresolved.append(f"{r.value} vs {r.baseline_value} ({_short_ci(c)}, ±{stats.fmt_effect(effect)})")
                what = escape((f"{metric}, " if several else "") + f"{r.axis}: {r.value} vs {r.baseline_value}")
                if r.others:
                    what += f" [dim]({escape(r.others)})[/dim]"
                verdict = c.verdict(decl["direction"], min_effect=effects.get(metric, thresholds.DEFAULT_MIN_EFFECT))
                style = {"better": "green", "worse": "red"}.get(verdict)
                shown = f"[{style}]{verdict}[/{style}]" if style else verdict
                if context:
                    shown += " [yellow](busy host)[/yellow]"
                t.add_row(what, fmt_short(c.baseline_median), fmt_short(c.candidate_median), f"{c.change:+.1%}",
                          _short_ci(c), f"{c.n_baseline}/{c.n_candidate}", shown)
        if resolved or unresolved:
            t.caption += "\n" + escape(precision_line(resolved, unresolved))
        if context:
            t.caption += "\n" + escape(f"Busy host: {context}. The verdicts carry that noise; rerun on a quiet "
                                         "host, or --strict to refuse one.")
        units = sorted({f"{metrics[m]['unit']}, {metrics[m]['direction'].replace('_', ' ')}" for m in rows_by_metric})
        first = next(iter(rows_by_metric))
        t.title += escape(f" [{metrics[first].get('label', first)}; {'; '.join(units)}]")
        return t
    measured = [(c, m) for c in cells for m in metrics if c.groups.get(m)]
    if not measured:
        return None
    varying = list(compare.varying_axes(cells))
    t = _table(question or "Measured cells")
    t.add_column("cell", ratio=3, overflow="fold")
    t.add_column("metric", ratio=2, overflow="fold")
    for col in ("median", "95% CI", "runs", "run CV"):
        t.add_column(col, justify="right", no_wrap=True)
    for c, m in measured:
        s = stats.summarize(c.groups[m])
        label = " ".join(f"{a}={c.params[a]}" for a in varying) or c.id
        ci = f"{fmt_short(s.ci_low)}..{fmt_short(s.ci_high)}" if s.has_ci else "-"
        t.add_row(escape(label), escape(f"{m} ({metrics[m]['unit']})"), fmt_short(s.median), ci, str(s.runs),
                  "-" if s.cv != s.cv else f"{s.cv:.1%}")
    return t


def companion_lines(cells, metrics, declared, axes, effects, companion_of):
    """One line per comparison where a deterministic companion (heap or CPU per operation, gate.toml's
    `[companion_of]`) moved beyond its minimum effect while the metric it explains did not: the clock may be
    too noisy to see what the companion shows. Comparisons are matched by axis, values and other axes."""
    defaults = {a: str(v[0]) for a, v in axes.items()} if axes else None
    lines = []
    for companion, of in companion_of.items():
        if companion not in metrics or of not in metrics:
            continue
        explained = {(r.axis, r.value, r.baseline_value, r.others): r
                     for r in compare.axis_rows(cells, of, declared=declared, defaults=defaults)}
        for r in compare.axis_rows(cells, companion, declared=declared, defaults=defaults):
            verdict = r.comparison.verdict(metrics[companion]["direction"],
                                           min_effect=effects.get(companion, thresholds.DEFAULT_MIN_EFFECT))
            rate = explained.get((r.axis, r.value, r.baseline_value, r.others))
            if verdict not in ("better", "worse") or rate is None:
                continue
            rate_verdict = rate.comparison.verdict(metrics[of]["direction"],
                                                   min_effect=effects.get(of, thresholds.DEFAULT_MIN_EFFECT))
            if rate_verdict in ("better", "worse"):
                continue
            where = f"{r.axis}: {r.value} vs {r.baseline_value}" + (f" ({r.others})" if r.others else "")
            lines.append(f"{where}: {companion} moved, {r.comparison.change:+.1%} ({_short_ci(r.comparison)}, "
                         f"{verdict}), while {of} did not ({rate.comparison.change:+.1%}, {rate_verdict}): "
                         f"the companion sees a change the clock may be too noisy to show.")
    return lines


def ceiling_lines(cells, metric, caps):
    """'at ceiling: <cell>: <metric> <median> of its heartbeat cap 100 containers/s ...' for each measured cell
    whose median of `metric` is at the rig's declared ceiling (analysis/ceilings.py)."""
    varying = list(compare.varying_axes(cells))
    lines = []
    for c in cells:
        ceiling = caps.get((c.id, metric))
        if ceiling is None or not c.groups.get(metric):
            continue
        median = stats.summarize(c.groups[metric]).median
        if ceiling.reached_by(median):
            label = " ".join(f"{a}={c.params[a]}" for a in varying) or c.id
            lines.append(f"at ceiling: {label}: {metric} {fmt_short(median)}, its {ceiling.figure()}: the cell "
                         "measured the cap; a change against it is a lower bound")
    return lines


def precision_line(resolved, unresolved):
    """Whether the comparisons' intervals are narrow enough for the effect the question cares about (the
    metric's minimum effect): an interval wider than ± that effect cannot tell it from no change."""
    total = resolved + len(unresolved)
    text = f"Precision: {resolved} of {total} comparison(s) have an interval within ± the minimum effect."
    if unresolved:
        shown = "; ".join(unresolved[:3]) + (f"; {len(unresolved) - 3} more" if len(unresolved) > 3 else "")
        text += (f" Too wide to answer: {shown}. More rounds or a quieter rig narrow it (analysis/README.md: Sensitivity; "
                 "bazel run //tools:sensitivity -- --table: what each gate catches).")
    return text


def _table(title):
    return Table(title=escape(title), caption=FOOTNOTE, width=WIDTH, box=box.SIMPLE_HEAD, pad_edge=False,
                 title_justify="left", caption_justify="left")


def fmt_short(x):
    """A value in at most 8 characters: 8,100 / 604.1M / 1.06G / 0.25."""
    for scale, suffix in ((1e9, "G"), (1e6, "M")):
        if abs(x) >= scale:
            return f"{x / scale:.3g}{suffix}" if abs(x) < 100 * scale else f"{x / scale:,.0f}{suffix}"
    return compare.fmt_value(x)


def _short_ci(c):
    """The change's interval as "+7.3..+12.5%", or "-" without 3 rounds or runs a side."""
    if c.ratio_ci_low != c.ratio_ci_low:
        return "-"
    return f"{(c.ratio_ci_low - 1) * 100:+.1f}..{(c.ratio_ci_high - 1) * 100:+.1f}%"


def render(console, result_set, metrics=None):
    """Prints the summary of a measured set; returns True when there was anything to print."""
    manifest = result_set.manifest
    matrix = manifest.get("matrix", {})
    metrics = metrics or result_set.metrics()
    order = [c["id"] for c in manifest.get("cells", [])]
    cells = compare.collect(result_set.docs, order)
    known = matrix.get("known_answers") or []
    checks = {k["cell_id"] for k in known}
    for line in known_answer_lines(cells, known):
        console.print(escape(line))
    compared = [c for c in cells if c.id not in checks]
    for row in compare.not_measured_rows(compared):
        console.print(escape(f"not measured: {row[1] or row[0]} (ok/failed/invalid/skipped {row[2]}): {row[3]}"[:300]))
    console.print(escape(host_reference_line(manifest)))
    noise = host_noise_line(result_set.docs, matrix.get("rig"), result_set.manifest)
    if noise:
        console.print(escape(noise))
    headline = next((m for m in metrics if any(c.groups.get(m) for c in compared)), None)
    others = [m for m in metrics if m != headline and any(c.groups.get(m) for c in compared)]
    if others:
        console.print(escape(f"also measured: {', '.join(others)} (every metric: bazel run //analysis:report -- "
                             f"{os.path.basename(result_set.path) or result_set.name} --kind axis --out r.pdf)"))
    effects = thresholds.min_effects(None, result_set.docs)
    context = host_context(result_set)
    table = comparison_table(compared, metrics, matrix.get("comparison_groups"), matrix.get("question", ""),
                             matrix.get("axes"), effects, context)
    if table is None:
        console.print("no cell was measured: nothing to compare")
        return False
    console.print(table)
    for line in ceiling_lines(compared, headline, ceilings.of_docs(result_set.docs)):
        console.print(escape(line))
    for line in companion_lines(compared, metrics, matrix.get("comparison_groups"), matrix.get("axes"), effects,
                                thresholds.companions(None, result_set.docs)):
        console.print(escape(line))
    for line in profile_lines(result_set):
        console.print(escape(line))
    unsteady = unsteady_line(result_set.docs)
    if unsteady:
        console.print(escape(unsteady))
    tails = tail_table(compared, result_set.docs)
    if tails is not None:
        console.print(tails)
    if manifest.get("sequential"):
        console.print(stop_table(manifest["sequential"], context))
    if context:  # the last line, where the verdicts end: the preflight's warning scrolled off at the top
        console.print(escape(f"verdicts above on a busy host: {context}"))
    return True


def unsteady_line(docs):
    """"not steady, recorded but not judged: create_cpu_per_op in 4 of 12 launches" for the metrics whose
    steady-state check failed in launches that stayed ok (a design judging only the metrics it decides on),
    or ""."""
    counts = {}
    for d in docs:
        if d.get("status") != "ok":
            continue
        for metric, check in ((d.get("steady_state") or {}).get("metrics") or {}).items():
            bad, total = counts.get(metric, (0, 0))
            counts[metric] = (bad + (not check.get("steady", True)), total + 1)
    said = [f"{m} in {bad} of {total} launches" for m, (bad, total) in counts.items() if bad]
    return f"not steady, recorded but not judged (not a metric the stop rule decides on): {'; '.join(said)}" if said else ""


def profile_lines(result_set):
    """One line per profiled comparison and event (cpu first, then wall, alloc, lock: a lock profile sits beside
    a rig's own lock-hold figures) naming the frames that moved (analysis/profiling/profiles.py), and what is missing;
    likewise the functions whose instructions per request moved (Callgrind); none for a run without either."""
    lines, found, events = [], [], profiles.profiled_events(result_set)
    for event in events:
        try:
            of_event = profiles.comparisons(result_set, event)
        except profiles.ProfileError as e:
            return [f"profiles: {e}"]
        for c in of_event:
            if c.rows:
                lines.append(f"profile ({event}, {len(c.baseline_runs)}/{len(c.candidate_runs)} runs) of {c.label()}: "
                             f"{profiles.one_line(c.rows)}")
            if not found and "gc" in c.axis.split("+") and c.gc_line():  # the pauses once, under the first event
                lines.append(c.gc_line())
            for why in c.missing[:3] if not found else []:  # a launch that failed is missing for every event
                lines.append(f"profile missing: {why}")
        found += of_event
    if found:
        lines.append("flame graphs and every mover: bazel run //tools:profile_diff -- --run " + result_set.path
                     + (f" [--event {'|'.join(events)}]" if len(events) > 1 else ""))
    for c in profiles.instruction_comparisons(result_set):
        if c.rows:
            lines.append(f"{c.event}, {len(c.baseline_runs)}/{len(c.candidate_runs)} runs, of {c.label()}: "
                         f"{profiles.one_line(c.rows)}")
        for why in c.missing[:3]:
            lines.append(f"per-function counts missing: {why}")
    return lines


def tail_table(cells, docs):
    """Latency tails per cell and test from the runs' merged distributions (analysis/distributions.py), ms
    with a 95 % bootstrap interval over runs; None when no run kept a distribution. A cell's label is a row
    of its own, its tests below it (four tails with intervals fill the 100 columns)."""
    by_cell = {}
    for d in docs:
        by_cell.setdefault(d["cell"]["id"], []).append(d)
    varying = list(compare.varying_axes(cells))
    rows, percents_seen = [], []
    for c in cells:
        percents = distributions.percents_of(c.params)
        found = distributions.cell_tails(by_cell.get(c.id, []), percents)
        if not found:
            continue
        runs = max(tails[0].runs for tails in found.values())
        label = " ".join(c.params[a] for a in varying) if varying else c.id
        rows.append((f"{label} ({runs} run{'s' if runs != 1 else ''})", None))
        for test, tails in found.items():
            rows.append(("  " + test.upper(), {t.percent: t for t in tails}))
            percents_seen += [p for p in percents if p not in percents_seen]
    if not rows:
        return None
    t = _table("Latency tails, ms, from each cell's merged runs (95 % CI: bootstrap over runs)")
    t.add_column("cell, test", ratio=1, min_width=14, overflow="fold")
    for p in percents_seen:
        t.add_column(distributions.tail_label(p), justify="right", no_wrap=True)
    for label, by_percent in rows:
        if by_percent is None:
            t.add_row(escape(label), *([""] * len(percents_seen)))
            continue
        t.add_row(escape(label), *(distributions.tail_text(by_percent[p]) if p in by_percent else "" for p in percents_seen))
    t.caption = (f"counts added over runs, never percentiles averaged; a tail with fewer than "
                 f"{distributions.MIN_TAIL_REQUESTS} requests beyond it is not read")
    return t


def stop_table(block, context=""):
    """How many rounds each comparison of a sequential run took and why it stopped; the metric in the title
    when there is one (the table must fit 100 columns); context: host_context() of a busy run."""
    rows = sequential.stop_rows(block)
    metrics = sorted({r[1] for r in rows})
    title = f"When each comparison stopped ({block['min']}..{block['max']} rounds"
    t = _table(title + (f"; {metrics[0]})" if len(metrics) == 1 else ")"))
    t.add_column("comparison", ratio=1, min_width=20, overflow="fold")
    if len(metrics) > 1:
        t.add_column("metric", overflow="fold")
    for col in ("paired change", "repeated CI", "rounds"):
        t.add_column(col, justify="right", no_wrap=True)
    t.add_column("stopped", no_wrap=True)
    t.caption = escape(sequential.design_text(block))
    for row in rows:
        t.add_row(*(escape(x) for i, x in enumerate(row) if i != 1 or len(metrics) > 1))
    if context:  # in the title, not the rows: the table keeps its columns' room
        t.title += " [yellow](busy host)[/yellow]"
    return t


def print_run(run_dir, metrics=None, console=None):
    """The summary of a stored run (rigs/main.py calls it after the runner). False if it cannot be read."""
    console = console or Console(highlight=False, soft_wrap=True, width=WIDTH if not sys.stdout.isatty() else None)
    try:
        result_set = resultsets.load_run(run_dir)
    except resultsets.ResultSetError as e:
        console.print(f"[red]error:[/red] cannot summarize {escape(run_dir)}: {escape(str(e))}")
        return False
    render(console, result_set, metrics)
    return True


def main(argv=None):
    parser = argparse.ArgumentParser(description="Print the end-of-run summary of a stored run again.")
    parser.add_argument("run", help="a run folder, run id or baselines/NAME")
    args = parser.parse_args(argv)
    workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY", os.getcwd())
    try:
        result_set = resultsets.resolve(args.run, os.path.join(workspace, "results"))
    except resultsets.ResultSetError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    render(Console(highlight=False, soft_wrap=True, width=WIDTH if not sys.stdout.isatty() else None), result_set)
    return 0


if __name__ == "__main__":
    sys.exit(main())
