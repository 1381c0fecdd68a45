"""A study's story on its report's title page (issue 82): what it declares (Story: the metrics that answer its
question, the mechanism's counters, its caveats, its key figure's kind) and what the title page draws of it: the
mechanism and caveats, the key figure (each comparison's change with the interval its words come from, or a
metric against a size with its fitted slopes). analysis/reports/report.py builds the report around it."""

import dataclasses
import os

from analysis import compare, oneline, scaling, stats
from analysis.reports import plots, render
from analysis.reports.kinds import ReportError
from analysis.reports.sections import verdict


# The key figure's kinds (issue 82): the paired change with its interval for A/B questions, or a scaling curve
# where an axis is a size (with a slope and its interval; the phases stacked).
FIGURE_KINDS = ("change", "scaling")


@dataclasses.dataclass(frozen=True)
class Story:
    """What a study says it is about (results/baselines/studies.toml, issue 82): the metrics that answer its
    question (the first a set measures leads the report, its title sentence and its one line), the counters
    that show the mechanism (said on the title page, each in one line) and its caveats (said there too)."""
    answer: tuple = ()
    mechanism: tuple = ()
    caveats: tuple = ()
    figure: str = "change"  # the key figure's kind: FIGURE_KINDS
    size_axis: str = ""  # figure "scaling": the axis that is a size (failover: apps)
    phases: tuple = ()  # figure "scaling": the metrics the answer's metric is made of, stacked per cell

    def metric_order(self, declared):
        """The declared metrics with the answer's first, in its order."""
        return [m for m in self.answer if m in declared] + [m for m in declared if m not in self.answer]




MECHANISM_CAPTION = "Mechanism: what moved"
MECHANISM_ROWS = 4  # per counter: its comparisons on the question's axis first


def story_blocks(story, cells, declared, prepared, declared_groups):
    """The title page's mechanism (a table: each declared counter's comparisons, a count that may be 0 as the
    difference of medians with its interval, any other metric as its change with the interval its words come
    from) and caveats, from a study's story."""
    table = []
    for metric in story.mechanism:
        if metric not in declared:
            continue  # measured by another part of a study in parts
        table += mechanism_rows(metric, declared[metric], cells, prepared, declared_groups)
    blocks = []
    if table:
        blocks.append(render.TableBlock(["counter", "comparison", "baseline", "candidate", "change (interval)"], table,
                                        caption=MECHANISM_CAPTION))
    if story.caveats:
        blocks.append(render.Para("Caveats: " + " ".join(c if c.endswith(".") else c + "." for c in story.caveats)))
    return blocks


def mechanism_rows(metric, decl, cells, prepared, declared_groups):
    """One counter's rows of the mechanism table (at most MECHANISM_ROWS, the question's axis first)."""
    unit = decl["unit"]
    asked = prepared.axes[0] if prepared.axes else None
    label = lambda r: f"{r.axis}={r.value} vs {r.baseline_value}" + (f" [{r.others}]" if r.others else "")  # noqa: E731
    if decl.get("zero_possible"):
        rows = compare.difference_rows(cells, metric, axes=prepared.axes, baselines=prepared.baselines,
                                       declared=declared_groups)
        said = [(r, compare.fmt_value(r.baseline.median, unit), compare.fmt_value(r.summary.median, unit),
                 compare.fmt_difference(r.difference, unit).replace("95% CI ", "")) for r in rows]
    else:
        rows = compare.axis_rows(cells, metric, axes=prepared.axes, baselines=prepared.baselines,
                                 declared=declared_groups)
        said = [(r, compare.fmt_value(r.baseline.median, unit), compare.fmt_value(r.summary.median, unit),
                 f"{r.comparison.change:+.1%} ({compare.fmt_change_ci(r.comparison)}), {verdict(r.comparison, decl)}"
                 if r.comparison.tested else "no test") for r in rows]
    said.sort(key=lambda x: x[0].axis != asked)
    out = [[f"{metric} ({unit})", label(r), base, cand, change] for r, base, cand, change in said[:MECHANISM_ROWS]]
    return out or [[f"{metric} ({unit})", "not compared", "", "", ""]]


def count_verdict(row, decl):
    """worse/better where a count's difference interval lies wholly beyond 0, else undecided (the bars' colour)."""
    d = row.difference
    if not d.has_ci or d.ci_low <= 0 <= d.ci_high:
        return "undecided"
    higher = d.ci_low > 0
    return "better" if higher == (decl["direction"] == "higher_is_better") else "worse"


def count_bars(cells, metric, decl, prepared, declared_groups, limit=16, neutral=False):
    """A count's bars (plots.ci_bars): every compared cell's median with its interval over runs, once, coloured by
    a pair it is the candidate of (grey: only a baseline), in the order of its parameters. neutral: "moved" where
    the difference is beyond 0, not better or worse (a mechanism's counter: fewer DONTNEED calls is not better)."""
    rows = compare.difference_rows(cells, metric, axes=prepared.axes, baselines=prepared.baselines,
                                   declared=declared_groups)
    seen = {}  # a cell is a side of several pairs: one bar
    for r in rows:
        for value, summary, role in ((r.baseline_value, r.baseline, "baseline"),
                                     (r.value, r.summary, _moved(count_verdict(r, decl)) if neutral
                                      else count_verdict(r, decl))):
            key = frozenset([f"{r.axis}={value}"] + r.others.split())
            if key not in seen or seen[key][4] == "baseline":
                seen[key] = (" ".join(sorted(key)), summary.median, summary.ci_low, summary.ci_high, role)
    return sorted(seen.values())[:limit]


def _moved(verdict):
    return "moved" if verdict in ("better", "worse") else verdict


def mechanism_figure(story, cells, declared, prepared, declared_groups, out_dir):
    """The mechanism's counts that may be 0 (DONTNEED calls, bytes read from disk) side by side, each cell's median
    with its interval (issue 82: a count's figure): (the figure, the metrics it draws), (None, ()) when the story
    declares none of them."""
    counts = [m for m in story.mechanism if m in declared and declared[m].get("zero_possible")]
    panels = [(m, declared[m]["unit"], count_bars(cells, m, declared[m], prepared, declared_groups, neutral=True))
              for m in counts]
    panels = [p for p in panels if p[2]]
    if not panels or out_dir is None:
        return None, ()
    labels = [b[0] for b in panels[0][2]]
    panels = [p for p in panels if [b[0] for b in p[2]] == labels]  # one order of cells: sharing the labels
    path = plots.ci_bars_panels(os.path.join(out_dir, "mechanism.png"), "The mechanism, per cell",
                                [(m, unit, bars) for m, unit, bars in panels])
    return render.Figure(path, f"Mechanism: {', '.join(m for m, _, _ in panels)} per cell, median and 95% CI over "
                               "runs; blue where a pair's difference is beyond 0 (the counter moved; a mechanism's "
                               "count is evidence, not better or worse), grey baselines and within noise."), \
        tuple(m for m, _, _ in panels)


def key_figure(rows, metric, decl, out_dir):
    """The answer's figure on the title page: each compared pair's change with the interval its words come from
    (at most 12 pairs, the largest changes), or None when nothing was tested."""
    tested = sorted((r for r in rows if r.comparison.tested), key=lambda r: -abs(r.comparison.change))[:12]
    if not tested or out_dir is None:
        return None
    changes = [(f"{r.axis}={r.value} vs {r.baseline_value}" + (f" [{r.others}]" if r.others else ""),
                r.comparison.change, r.comparison.ratio_ci_low - 1, r.comparison.ratio_ci_high - 1,
                verdict(r.comparison, decl)) for r in tested]
    levels = sorted({compare.fmt_level(r.comparison) for r in tested})
    path = plots.change_forest(os.path.join(out_dir, "key_figure.png"), f"{metric}: the answer", changes,
                               decl["min_effect"], ", ".join(levels))
    return render.Figure(path, f"Key figure: {metric}, each comparison's change with the interval its verdict "
                               f"comes from ({', '.join(levels)}); the ±{stats.fmt_effect(decl['min_effect'])} "
                               "minimum effect shaded.")


def scaling_blocks(story, cells, declared, headline, out_dir):
    """A scaling study's answer and figures: (its sentence, [the curve, the slopes' table, the phases stacked], its
    one line), or None when the story draws no scaling curve. ReportError when its size axis is not one."""
    if story.figure != "scaling" or out_dir is None:
        return None
    decl = declared[headline]
    try:
        fitted = scaling.fits(cells, headline, story.size_axis)
    except scaling.ScalingError as e:
        raise ReportError(f"the scaling figure of {headline}: {e}") from None
    size_step = scaling.step(fitted)
    unit = decl["unit"]
    said = "; ".join(f"{f.group or headline} {scaling.per(size_step, f, unit)}" for f in fitted)
    sentence = (f"{headline} against {story.size_axis}, the slope of a line fitted to every run (its 95% CI over "
                f"the runs), per {size_step:,g} {story.size_axis}: {said}.")
    path = plots.scaling(os.path.join(out_dir, "key_figure.png"), f"{headline} against {story.size_axis}", unit,
                         story.size_axis, fitted, size_step)
    blocks = [render.Figure(path, f"Key figure: {headline} against {story.size_axis}, each cell's median with its "
                                  "95% CI over runs, and the line fitted to the runs of each group with its slope "
                                  f"per {size_step:,g} {story.size_axis} (95% CI)."),
              render.TableBlock([story.size_axis] + [f.group or headline for f in fitted],
                                [[f"{x:,g}"] + [next((f"{compare.fmt_value(p[1], unit)} {unit} ({p[4]})"
                                                      for p in f.points if p[0] == x), "-") for f in fitted]
                                 for x in sorted({p[0] for f in fitted for p in f.points})]
                                + [[f"slope per {size_step:,g}"] + [scaling.per(size_step, f, unit) for f in fitted]],
                                caption=f"{headline} ({unit}): medians of run medians (runs) per size, and the fitted "
                                        "slopes")]
    phases = [m for m in story.phases if m in declared]
    if phases:
        measured = [c for c in cells if any(c.groups.get(m) for m in phases)]
        varying = [k for k in compare.varying_axes(measured)]
        rows = [(" ".join(f"{k}={c.params[k]}" for k in varying),
                 {m: stats.summarize(c.groups[m]).median for m in phases if c.groups.get(m)})
                for c in sorted(measured, key=lambda c: [c.params[k] for k in varying if k != story.size_axis]
                                + [scaling.size_of(c.params[story.size_axis], story.size_axis)])]
        path = plots.stacked(os.path.join(out_dir, "phases.png"), f"{headline}: its phases", unit, rows, phases)
        blocks.append(render.Figure(path, f"What {headline} is made of per cell: {', '.join(phases)} (medians of run "
                                          "medians), stacked."))
    labels = [scaling.label(f.group) or headline for f in fitted]
    axes = {g.split("=", 1)[0] for g in labels if "=" in g and " " not in g}
    named = ""  # numbered groups of one axis: the axis said once ("nm_heartbeat_ms 250 -219; 1000 +31.8")
    if len(axes) == 1 and all(g.startswith(f"{next(iter(axes))}=") for g in labels):
        named, labels = f"{next(iter(axes))} ", [g.split("=", 1)[1] for g in labels]
    short = "; ".join(f"{g} {f.slope * size_step:+.3g}" if f.fitted else f"{g} no fit"
                      for g, f in zip(labels, fitted))
    line = f"{headline} per {size_step:,g} {story.size_axis}: {named}{short} {unit}"
    return sentence, blocks, line if len(line) <= oneline.MAX_CHARS else line[:oneline.MAX_CHARS - 1] + "…"



def levels_of(cells, metric):
    """[(the cell's varying parameters, stats.Summary of its runs)] of every cell that measured `metric`."""
    varying = compare.varying_axes(cells)
    return [(" ".join(f"{a}={c.params[a]}" for a in varying), stats.summarize(c.groups[metric]))
            for c in cells if metric in c.groups]
