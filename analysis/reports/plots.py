"""Report figures (matplotlib, no display): medians with 95% CIs per cell, and per-second series.

Each function writes one PNG and returns its path. Colours carry the verdict (green better, red worse,
grey baseline, undecided or within the minimum effect); published reference values are dashed lines, labelled as such.
"""

import matplotlib

matplotlib.use("Agg")  # files only; never a display
# Labels are data (parameter values, metric names, set names): a `$` in one must never be read as math text
# (issue 58, row 14: a value `$\\undefinedcmd$` failed its set's report).
matplotlib.rcParams["text.parse_math"] = False

import textwrap  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import EngFormatter, MaxNLocator  # noqa: E402

from results import safeio  # noqa: E402

VERDICT_COLOURS = {"better": "#2e7d32", "worse": "#c62828", "undecided": "#546e7a", "baseline": "#9e9e9e",
                   "moved": "#1565c0"}  # moved: a mechanism's counter beyond 0, neither better nor worse
DPI = 110


def _save(fig, path):
    """Writes the figure as PNG through the one writer, and closes it."""
    try:
        with safeio.atomic_file(path, binary=True) as f:
            fig.savefig(f, dpi=DPI, format="png")
    finally:
        plt.close(fig)


def ci_bars(path, title, unit, bars):
    """bars: [(label, median, ci_low, ci_high, verdict)]. Published figures are never drawn on these axes
    (they would squash the measured bars); reports give them their own table."""
    fig, ax = plt.subplots(figsize=(7.5, 0.55 * len(bars) + 1.6))
    _bars_on(ax, bars, unit, title)
    ax.set_yticklabels([textwrap.fill(b[0], 38) for b in bars], fontsize=7)
    fig.tight_layout()
    _save(fig, path)
    return path


def ci_bars_panels(path, title, panels):
    """Several metrics of the same cells side by side (a study's mechanism counters on its title page): panels
    [(metric title, unit, bars)], bars as ci_bars' in one order of cells, labelled once on the left."""
    rows = max(len(bars) for _, _, bars in panels)
    fig, axes = plt.subplots(1, len(panels), figsize=(7.5, 0.42 * rows + 1.5), sharey=True, squeeze=False)
    for ax, (panel_title, unit, bars) in zip(axes[0], panels):
        _bars_on(ax, bars, unit, panel_title, short=True)
    axes[0][0].set_yticklabels([textwrap.fill(b[0], 30) for b in panels[0][2]], fontsize=6)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    _save(fig, path)
    return path


def _bars_on(ax, bars, unit, title, short=False):
    """Each cell's median with its interval on one axis, coloured by its verdict (an open circle: no interval)."""
    ys = list(range(len(bars)))[::-1]
    for y, (label, median, lo, hi, verdict) in zip(ys, bars):
        colour = VERDICT_COLOURS.get(verdict, VERDICT_COLOURS["undecided"])
        if lo != lo:  # fewer than 3 runs: no interval to draw, only the point
            ax.plot([median], [y], "o", color=colour, fillstyle="none")
        else:
            ax.errorbar([median], [y], xerr=[[median - lo], [hi - median]], fmt="o", color=colour, capsize=4)
    ax.set_yticks(ys)
    ax.xaxis.set_major_formatter(EngFormatter())
    if short:  # a narrow panel: few ticks, so their labels do not run into each other
        ax.xaxis.set_major_locator(MaxNLocator(4))
    ax.set_xlabel(f"{unit}, median and 95% CI over runs" if short else
                  f"{unit}: median of run medians, 95% CI over runs (open circle: under 3 runs, no CI)", fontsize=8)
    ax.set_title(title, fontsize=9 if short else 10)
    ax.grid(axis="x", alpha=0.3)
    ax.tick_params(axis="x", labelsize=7)


def _finish(fig, ax, path, title, legend_loc, grid_axis="x"):
    """The figures' common ending: title, grid, legend, layout, written through the one writer."""
    ax.set_title(title, fontsize=10)
    ax.grid(axis=grid_axis, alpha=0.3)
    ax.legend(fontsize=6, loc=legend_loc)
    fig.tight_layout()
    _save(fig, path)
    return path


def change_forest(path, title, changes, min_effect, level_text):
    """The answer's figure for A/B questions: changes [(label, change, low, high, verdict)] as fractions (0.05:
    +5 %), each with the interval its verdict comes from; the ±min_effect band shaded, no change marked."""
    fig, ax = plt.subplots(figsize=(7.5, 0.5 * len(changes) + 1.7))
    ys = list(range(len(changes)))[::-1]
    ax.axvspan(-100 * min_effect, 100 * min_effect, color="#e0e0e0", zorder=0,
               label=f"±{100 * min_effect:g} % (the minimum effect)")
    ax.axvline(0, color="#616161", linewidth=0.8)
    for y, (label, change, lo, hi, verdict) in zip(ys, changes):
        colour = VERDICT_COLOURS.get(verdict, VERDICT_COLOURS["undecided"])
        if lo != lo:
            ax.plot([100 * change], [y], "o", color=colour, fillstyle="none")
        else:
            ax.errorbar([100 * change], [y], xerr=[[100 * (change - lo)], [100 * (hi - change)]], fmt="o",
                        color=colour, capsize=4)
        ax.annotate(verdict, (100 * change, y), textcoords="offset points", xytext=(0, 7), fontsize=6,
                    ha="center", color=colour)
    ax.set_yticks(ys)
    ax.set_yticklabels([textwrap.fill(c[0], 38) for c in changes], fontsize=7)
    ax.set_ylim(-0.8, len(changes) - 0.3)
    ax.set_xlabel(f"change, % ({level_text}; open circle: no interval)", fontsize=8)
    return _finish(fig, ax, path, title, "lower right")


def movers(path, title, rows, unit="points"):
    """The "why" figure of a story (issue 82): a differential profile's top movers [(frame, change, low, high)],
    each frame's change in its share of samples with its interval over runs; red a larger share in the candidate,
    blue a smaller one (the flame graph's colours), grey where the interval holds 0 (noise)."""
    fig, ax = plt.subplots(figsize=(7.5, 0.32 * len(rows) + 1.3))
    ys = list(range(len(rows)))[::-1]
    ax.axvline(0, color="#616161", linewidth=0.8)
    for y, (_, change, lo, hi) in zip(ys, rows):
        colour = "#9e9e9e" if lo != lo or lo <= 0 <= hi else ("#c62828" if change > 0 else "#1565c0")
        if lo != lo:
            ax.plot([change], [y], "o", color=colour, fillstyle="none")
        else:
            ax.errorbar([change], [y], xerr=[[change - lo], [hi - change]], fmt="o", color=colour, capsize=3)
    ax.set_yticks(ys)
    ax.set_yticklabels([r[0] if len(r[0]) <= 60 else "…" + r[0][-59:] for r in rows], fontsize=6)
    ax.set_xlabel(f"change in share of samples, {unit} (interval over runs; open circle: one run a side)", fontsize=8)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    _save(fig, path)
    return path


def scaling(path, title, unit, size_label, fits, size_step):
    """A metric against a size (analysis/scaling.Fit per group): each cell's median with its 95 % CI over runs,
    the fitted line of each group, its slope per `size_step` with the slope's interval in the legend."""
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    for n, fit in enumerate(fits):
        colour = plt.get_cmap("tab10")(n % 10)
        xs = [p[0] for p in fit.points]
        for x, median, lo, hi, _ in fit.points:
            if lo == lo:
                ax.errorbar([x], [median], yerr=[[median - lo], [hi - median]], fmt="o", color=colour, capsize=3)
            else:
                ax.plot([x], [median], "o", color=colour, fillstyle="none")
        label = fit.group or "fit"
        if fit.fitted:
            line = [min(xs), max(xs)]
            f = lambda v: f"{v * size_step:.3g}"  # noqa: E731
            label += f": {f(fit.slope)} {unit} per {size_step:,g} ({f(fit.slope_low)}..{f(fit.slope_high)})"
            ax.plot(line, [fit.intercept + fit.slope * x for x in line], "-", color=colour, linewidth=1)
        ax.plot([], [], "-o", color=colour, label=textwrap.shorten(label, 80))
    ax.set_xlabel(size_label, fontsize=8)
    ax.set_ylabel(unit)
    return _finish(fig, ax, path, title, "upper left", grid_axis="both")


def stacked(path, title, unit, cells, phases):
    """cells: [(label, {phase: median})]: each cell's phases stacked (what a total is made of)."""
    fig, ax = plt.subplots(figsize=(7.5, 0.45 * len(cells) + 1.8))
    ys = list(range(len(cells)))[::-1]
    left = [0.0] * len(cells)
    for n, phase in enumerate(phases):
        widths = [values.get(phase, 0.0) for _, values in cells]
        ax.barh(ys, widths, left=left, color=plt.get_cmap("tab10")(n % 10), label=phase, height=0.6)
        left = [a + b for a, b in zip(left, widths)]
    ax.set_yticks(ys)
    ax.set_yticklabels([textwrap.fill(label, 38) for label, _ in cells], fontsize=7)
    ax.set_xlabel(f"{unit}: median of run medians, per phase", fontsize=8)
    return _finish(fig, ax, path, title, "upper right")


def series(path, title, unit, lines, xlabel="time since the process started (s)"):
    """lines: [(label, [t], [value])], one per cell (its first measured repetition)."""
    fig, ax = plt.subplots(figsize=(7.0, 3.0))
    for label, ts, values in lines:
        ax.plot(ts, values, linewidth=1, label=label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(unit)
    ax.yaxis.set_major_formatter(EngFormatter())
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    if lines:
        ax.legend([textwrap.shorten(label, 70) for label, _, _ in lines], fontsize=6, loc="lower right")
    fig.tight_layout()
    _save(fig, path)
    return path


def history(path, title, unit, points, change_points=(), reference=None, drift_points=()):
    """points: [(label, value)] in time order (a label is a date and a set's short name, never a path);
    change_points: indexes where a new segment starts (red); drift_points: those explained by host drift
    (grey); reference: (name, unit, [value or None]) of the host reference per point, drawn on a second axis
    so host drift shows beside the metric."""
    fig, ax = plt.subplots(figsize=(7.0, 3.2))
    xs = list(range(len(points)))
    ax.plot(xs, [v for _, v in points], marker="o", markersize=3, linewidth=1, color="#1565c0", label="metric")
    for i in change_points:
        drift = i in drift_points
        ax.axvline(i - 0.5, color="#757575" if drift else "#c62828", linestyle=":" if drift else "--", linewidth=1)
    if reference and any(v is not None for v in reference[2]):
        ref_ax = ax.twinx()
        ref_xs = [x for x, v in zip(xs, reference[2]) if v is not None]
        ref_ax.plot(ref_xs, [v for v in reference[2] if v is not None], marker="s", markersize=2, linewidth=1,
                    color="#ef6c00", alpha=0.8)
        ref_ax.set_ylabel(f"host reference: {reference[0]} ({reference[1]})", fontsize=7, color="#ef6c00")
        ref_ax.yaxis.set_major_formatter(EngFormatter())
    ax.set_xticks(xs)
    ax.set_xticklabels([label for label, _ in points], rotation=60, fontsize=6, ha="right")
    ax.yaxis.set_major_formatter(EngFormatter())  # "515.6 M", never matplotlib's offset ("+5.156e8")
    ax.set_ylabel(unit)
    ax.set_title(textwrap.fill(title, 90), fontsize=9)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    _save(fig, path)
    return path


STATE_STYLES = {"PASS": ("#2e7d32", "o"), "REGRESSED": ("#c62828", "v"), "INCONCLUSIVE": ("#ef6c00", "s")}


def nightly_history(path, title, unit, nights, change_points=(), drift_points=()):
    """A nightly series as a history: dates on the x axis. Above, each night's candidate value (median of run
    medians) with its 95 % interval over runs; below, the gate's change against that night's accepted build
    (the fraction worse, its 98 % interval), the band of what the gate catches (± D) shaded, each night's
    state as its marker (PASS, REGRESSED, INCONCLUSIVE). nights: [history.Night] in time order;
    change_points: indexes where a new segment of the candidate's value starts."""
    import matplotlib.dates as mdates
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7.2, 4.6), sharex=True, height_ratios=[1, 1])
    when = [n.when for n in nights]
    for state, (colour, marker) in STATE_STYLES.items():
        chosen = [n for n in nights if n.state == state]
        if not chosen:
            continue
        for ax, value, low, high in ((top, "value", "value_low", "value_high"),
                                     (bottom, "worse_by", "worse_low", "worse_high")):
            scale = 100.0 if ax is bottom else 1.0
            ys = [scale * getattr(n, value) for n in chosen]
            err = [[max(0.0, scale * (getattr(n, value) - getattr(n, low))) if getattr(n, low) == getattr(n, low) else 0.0
                    for n in chosen],
                   [max(0.0, scale * (getattr(n, high) - getattr(n, value))) if getattr(n, high) == getattr(n, high) else 0.0
                    for n in chosen]]
            ax.errorbar([n.when for n in chosen], ys, yerr=err, fmt=marker, color=colour, capsize=3, markersize=5,
                        label=state if ax is bottom else None)
    top.plot(when, [n.value for n in nights], color="#90a4ae", linewidth=0.8, zorder=0)
    for i in change_points:
        for ax in (top, bottom):
            x = when[i - 1] + (when[i] - when[i - 1]) / 2
            ax.axvline(x, color="#757575" if i in drift_points else "#c62828", linestyle="--", linewidth=1)
    catches = [100 * n.catches if n.catches == n.catches else float("nan") for n in nights]
    bottom.fill_between(when, [-c for c in catches], catches, step="mid", color="#cfd8dc", alpha=0.6,
                        label="± what the gate catches (D)")
    bottom.axhline(0, color="#546e7a", linewidth=0.8)
    # A scale no narrower than the band: two nights 0.02 % apart must not read as a steep line.
    values = [n.value for n in nights]
    middle = sorted(values)[len(values) // 2]
    span = max([abs(v - middle) for v in values] + [abs(middle) * max([c / 100 for c in catches if c == c] + [0.02])])
    top.set_ylim(middle - 1.3 * span, middle + 1.3 * span)
    top.yaxis.set_major_formatter(EngFormatter())
    top.set_ylabel(f"{unit}\ncandidate", fontsize=8)
    bottom.set_ylabel("% worse than\naccepted (98 % CI)", fontsize=8)
    bottom.xaxis.set_major_formatter(mdates.DateFormatter("%m-%d\n%H:%M"))
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=7)
    bottom.legend(fontsize=6, loc="upper left", ncol=4)
    top.set_title(textwrap.fill(title, 90), fontsize=9)
    fig.tight_layout()
    _save(fig, path)
    return path


def stacked_cores(path, title, rows, groups):
    """rows: [(label, {group: cores})]; one horizontal bar per row, one segment per group (CPUs busy)."""
    fig, ax = plt.subplots(figsize=(7.5, 0.5 * len(rows) + 1.9))
    ys = list(range(len(rows)))[::-1]
    palette = plt.get_cmap("tab10")
    for gi, group in enumerate(groups):
        lefts = [sum(r[1].get(g, 0.0) for g in groups[:gi]) for r in rows]
        widths = [r[1].get(group, 0.0) for r in rows]
        ax.barh(ys, widths, left=lefts, color=palette(gi % 10), label=group, height=0.6)
    ax.set_yticks(ys)
    ax.set_yticklabels([textwrap.fill(r[0], 38) for r in rows], fontsize=7)
    ax.set_xlabel("CPUs busy over the measured window (median of the cell's runs)", fontsize=8)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=6, ncol=min(len(groups), 4), loc="upper center", bbox_to_anchor=(0.5, -0.25))
    fig.tight_layout()
    _save(fig, path)
    return path


def _plain_log_ticks(axis):
    """Tick labels of a log axis as plain numbers ("0.5", "2", "10"): matplotlib's own are math text
    ($\\mathdefault{10^{1}}$), which labels read as data (text.parse_math off) print raw (issue 82)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


MIN_DATES = 3  # a date axis with fewer dates is one or two points over years of empty axis: bars instead


def sensitivity_history(path, title, series_by_metric):
    """series_by_metric: {metric: [(measured_at YYYY-MM-DD, stated D as a fraction worse)]}: what each metric's
    gate catches, on a log scale (they span 0.5 % to several x). Over time where the figures have MIN_DATES or
    more dates; else one bar per metric, its newest figure (a date axis of one or two dates says nothing)."""
    import datetime
    dates = {d for points in series_by_metric.values() for d, _ in points}
    if len(dates) < MIN_DATES:
        newest = {metric: max(points)[1] for metric, points in series_by_metric.items() if points}
        return sensitivity_bars(path, title, {m: {"stated D (its set's night)": v} for m, v in newest.items()})
    fig, ax = plt.subplots(figsize=(7.0, 3.0))
    for metric, points in sorted(series_by_metric.items()):
        days = [datetime.date.fromisoformat(d) for d, _ in points]
        ax.plot(days, [100 * m for _, m in points], "o-", linewidth=1, label=metric)
    ax.set_yscale("log")
    _plain_log_ticks(ax.yaxis)
    ax.set_ylabel("catches >= % worse (gated rounds)")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper right")
    fig.autofmt_xdate()
    fig.tight_layout()
    _save(fig, path)
    return path


def bar_axis(values):
    """(scale, (low, high) or None) for bars of these positive values: a log axis only where they span 10x or more
    (Redis' rates beside its tail latencies), with room for the shortest bar and the longest one's value; else
    linear from 0, where a bar's length means something (2.2 against 2.6 % on a log axis sat between "2" and "5")."""
    if not values:
        return "linear", None
    if max(values) >= 10 * min(values):
        return "log", (min(values) / 2, max(values) * 3)
    return "linear", (0, max(values) * 1.8)  # the right third for the legend, clear of the values written


def sensitivity_bars(path, title, values_by_metric):
    """values_by_metric: {metric: {label: D as a fraction worse}} (e.g. the stated D, a median and a noisy
    night's): horizontal bars per metric (bar_axis: linear from 0, or log with plain tick labels where they span
    10x), each bar's value written at its end."""
    import numpy as np
    metrics = sorted(values_by_metric)
    labels = sorted({label for v in values_by_metric.values() for label in v})
    height = 0.8 / max(len(labels), 1)
    fig, ax = plt.subplots(figsize=(7.0, max(1.6, 0.35 * len(metrics) * max(len(labels), 1) + 0.9)))
    for i, label in enumerate(labels):
        ys = [k + i * height for k, m in enumerate(metrics) if label in values_by_metric[m]]
        xs = [100 * values_by_metric[m][label] for m in metrics if label in values_by_metric[m]]
        bars = ax.barh(ys, xs, height=height, label=label)
        for bar, x in zip(bars, xs):
            ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, f" {x:.1f} %", va="center", fontsize=7)
    ax.set_yticks(np.arange(len(metrics)) + height * (len(labels) - 1) / 2)
    ax.set_yticklabels(metrics, fontsize=7)
    scale, limits = bar_axis([100 * v for values in values_by_metric.values() for v in values.values() if v and v > 0])
    logged = scale == "log"
    if logged:
        ax.set_xscale("log")
        _plain_log_ticks(ax.xaxis)
    if limits:
        ax.set_xlim(*limits)
    ax.set_xlabel(f"catches >= % worse (95 %, its gated rounds{'; log scale' if logged else ''})", fontsize=8)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    if len(labels) > 1:
        ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    _save(fig, path)
    return path


def bisect_steps(path, title, points, first_bad=None):
    """points: [(commit index, label, worse_by, low, high, verdict)] of a bisect's measured commits against the
    good end (fractions worse, 98 % interval; worse_by None: skipped, an x on the axis); a dashed line before
    the first bad commit."""
    colours = {"good": VERDICT_COLOURS["better"], "bad": VERDICT_COLOURS["worse"]}
    fig, ax = plt.subplots(figsize=(7.5, 3.2))
    for index, _label, worse, lo, hi, verdict in points:
        colour = colours.get(verdict, VERDICT_COLOURS["undecided"])
        if worse is None:  # skipped (does not build): marked on the axis, not measured
            ax.plot([index], [0], "x", color=colour, markersize=8)
        elif lo is None or hi is None:
            ax.plot([index], [100 * worse], "o", color=colour, fillstyle="none")
        else:
            ax.errorbar([index], [100 * worse], yerr=[[100 * (worse - lo)], [100 * (hi - worse)]], fmt="o",
                        color=colour, capsize=4)
    if first_bad is not None:
        ax.axvline(first_bad - 0.5, color=VERDICT_COLOURS["worse"], linestyle="--", linewidth=1)
    ax.axhline(0, color=VERDICT_COLOURS["baseline"], linewidth=0.8)
    ax.set_xticks([p[0] for p in points])
    ax.set_xticklabels([p[1] for p in points], fontsize=6, rotation=45, ha="right")
    ax.set_ylabel("worse than good (%), 98 % CI", fontsize=8)
    ax.set_xlabel("commit (first-parent order; dashed: before the first bad one)", fontsize=8)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    _save(fig, path)
    return path


def flame_diff(path, title, baseline, candidate, min_share=0.005, max_depth=48):
    """A differential flame graph as a picture (for the PDF; //tools:profile_diff writes the interactive one):
    the candidate's merged stacks (analysis/profiling/profiles.py parse_collapsed, {frames: samples}), each frame as wide
    as its share of the candidate's samples, red where its share grew against the baseline, blue where it shrank,
    grey within half a point. Frames under `min_share` are left out."""
    def tree(stacks):
        total = sum(stacks.values()) or 1
        nodes = {}
        for frames, count in stacks.items():
            for depth in range(1, min(len(frames), max_depth) + 1):
                nodes[frames[:depth]] = nodes.get(frames[:depth], 0) + count / total
        return nodes
    cand, base = tree(candidate), tree(baseline)
    depth = max((len(k) for k, v in cand.items() if v >= min_share), default=1)
    fig, ax = plt.subplots(figsize=(10, 0.22 * depth + 1.2))
    left = {(): 0.0}  # where each node's children start
    for node in sorted((k for k, v in cand.items() if v >= min_share), key=lambda k: (len(k), -cand[k], k)):
        parent = node[:-1]
        if parent not in left:
            continue  # its parent was too narrow to draw
        x, width = left[parent], cand[node]
        left[parent] = x + width
        left[node] = x
        change = width - base.get(node, 0.0)
        strength = min(1.0, abs(change) / 0.10)  # full colour at 10 points
        colour = ("#9e9e9e" if abs(change) < 0.005 else
                  (1.0, 0.85 - 0.6 * strength, 0.85 - 0.6 * strength) if change > 0 else
                  (0.85 - 0.6 * strength, 0.85 - 0.6 * strength, 1.0))
        y = len(node) - 1
        ax.barh(y, width, left=x, height=0.9, color=colour, edgecolor="white", linewidth=0.3)
        label = node[-1].rpartition("/")[2] if "/" in node[-1] and "." in node[-1].rpartition("/")[2] else node[-1]
        if width > 0.06:
            ax.text(x + 0.003, y, textwrap.shorten(label, int(width * 160), placeholder=".."), va="center",
                    fontsize=6, clip_on=True)
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.6, depth - 0.4)
    ax.set_yticks([])
    ax.set_xlabel("share of the candidate's samples (red: grew against the baseline, blue: shrank)")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    _save(fig, path)
    return path
