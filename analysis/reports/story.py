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




def story_blocks(story, cells, declared, prepared, declared_groups):
    """The title page's mechanism (each declared counter's comparison in one line: a count that may be 0 as its
    difference with its interval) and caveats, from a study's story."""
    lines = []
    for metric in story.mechanism:
        if metric not in declared:
            continue  # measured by another part of a study in parts
        decl = declared[metric]
        if decl.get("zero_possible"):
            rows = compare.difference_rows(cells, metric, axes=prepared.axes, baselines=prepared.baselines,
                                           declared=declared_groups)
            said = "; ".join(f"{r.axis}={r.value} vs {r.baseline_value}{f' [{r.others}]' if r.others else ''} "
                             f"{compare.fmt_difference(r.difference, decl['unit'])}" for r in rows[:4]) or "not compared"
        else:
            rows = compare.axis_rows(cells, metric, axes=prepared.axes, baselines=prepared.baselines,
                                     declared=declared_groups)
            said = oneline.one_line(rows, metric, decl, None, levels_of(cells, metric))
        lines.append(f"{metric} ({decl['unit']}): {said}")
    blocks = []
    if lines:
        blocks.append(render.Para("Mechanism: " + " | ".join(lines)))
    if story.caveats:
        blocks.append(render.Para("Caveats: " + " ".join(c if c.endswith(".") else c + "." for c in story.caveats)))
    return blocks


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
    short = "; ".join(f"{f.group.split('=', 1)[-1] or headline} {f.slope * size_step:+.3g}" if f.fitted
                      else f"{f.group.split('=', 1)[-1]} no fit" for f in fitted)
    line = f"{headline} per {size_step:,g} {story.size_axis}: {short} {unit}"
    return sentence, blocks, line if len(line) <= oneline.MAX_CHARS else line[:oneline.MAX_CHARS - 1] + "…"



def levels_of(cells, metric):
    """[(the cell's varying parameters, stats.Summary of its runs)] of every cell that measured `metric`."""
    varying = compare.varying_axes(cells)
    return [(" ".join(f"{a}={c.params[a]}" for a in varying), stats.summarize(c.groups[metric]))
            for c in cells if metric in c.groups]
