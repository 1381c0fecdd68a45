"""Comparison reports as PDF and HTML from stored result sets: a report's blocks (build), written by write. Its
command line is analysis/reports/command.py (`bazel run //analysis:report`); a report in parts, parts.py.

Kinds (analysis/reports/kinds.py): `axis` compares every varying axis of one run; `stock-vs-patched`, `mr1-vs-mr2` and
`memory-locality` compare one axis (variant, mapreduce, locality), within one run or across two sets (the
first is the baseline); `cross-host` pairs the same cells of two hosts' sets. Comparing two sets needs
their provenance to differ only where the kind allows (for cross-host: the host); otherwise the report is
refused (exit 2), or with --allow-provenance-mismatch written with a warning on its title page.

Every comparison follows analysis/stats.py's one rule, the gate's: an interval of the log ratio (paired over the
rounds of one interleaved run, Welch's across sets), 98 % for one comparison and split by Bonferroni over the
report's family per metric; the words come from that interval and the metric's minimum effect (under 3 rounds
or runs a side no test). Published figures of the
case studies (results/reference/) for the same rig and kind are shown beside, labelled as not measured.
"""

import collections
import datetime
import glob
import os

from analysis import ceilings, compare, oneline, resultsets, sequential, stats, thresholds
from analysis.reports import crosshost
from analysis.reports import plots
from analysis.reports import render
from analysis.reports import story as story_lib
# The kinds and the preparation of their documents: analysis/reports/kinds.py.
from analysis.reports.kinds import KINDS, ReportError, prepare
# The report's sections after its comparison tables (attribution, threads, observations, provenance).
from analysis.reports.sections import (attribution_blocks, monitor_blocks, observation_tables, profile_blocks, provenance_appendix,
                                      rerun_commands, sequential_blocks, tail_blocks, thread_cpu_blocks, verdict)
from results import safeio

EXIT_OK, EXIT_BAD_INPUT = 0, 2


TIME_UNITS = ("s", "ms", "us", "min")
HOW_TO_READ = (
    "How to read: each candidate cell is compared with its baseline partner (same parameters except the "
    "compared axis). Runs (repetitions) are the independent units: a cell's value is the median of its run "
    "medians (its 95% CI a bootstrap over runs). A change is the geometric mean ratio of the two cells' run "
    "medians - 1, paired round by round where both cells were measured in one interleaved run (Welch's "
    "interval across runs otherwise), with a t interval at 98% for one comparison, split by Bonferroni over "
    "all comparisons of the metric (the column says its level). The verdict is that interval's, read against "
    "the metric's minimum effect m: within ±m (wholly inside), better or worse (wholly beyond 0), not worse "
    "by m (rules out m worse), undecided otherwise; the regression gate reads the same interval (PASS, "
    "REGRESSED, INCONCLUSIVE). 3 or more rounds or runs a side: with fewer the table prints '-' and says 'no "
    "test'. Per-second samples appear only in the series plots (within-run stability).")
def main_rows(rows, kind, axis):
    """The comparisons the kind's question names: the compared axis, with the kind's further axes (e.g.
    MR1's record share) at their baselines."""
    if not axis:
        return []
    return [r for r in rows if r.axis == axis and all(r.params.get(a, base) == base for a, base in kind.extra_axes)]


def pair_clause(r, metric_label, decl, kind):
    """One comparison in words: `mapreduce=mr2 vs mr1 [job=wordcount]: job_duration -12.3% (98% CI ...),
    faster (better)`."""
    c = r.comparison
    # The kind's further axes at their baselines go without saying (mr1-vs-mr2: the default record share).
    shown = [o for o in r.others.split() if o not in {f"{a}={base}" for a, base in kind.extra_axes}]
    where = f" [{' '.join(shown)}]" if shown else ""
    head = f"{r.axis}={r.value} vs {r.baseline_value}{where}: {metric_label}"
    if not c.tested:
        return f"{head} {c.change:+.1%}, no test ({c.no_test_reason()})"
    word = verdict(c, decl)
    if kind.time_words and decl.get("unit") in TIME_UNITS and word in ("better", "worse"):
        word = f"{kind.time_words[0] if word == 'better' else kind.time_words[1]} ({word})"
    return f"{head} {c.change:+.1%} ({compare.fmt_level(c)} {compare.fmt_change_ci(c)}), {word}"


def title_sentence(rows, metric_label, decl, kind=KINDS["axis"], axis=None, levels=()):
    """The title page's one-sentence answer, from the rows of the headline metric: the comparison the kind's
    question names first (its axis, one clause per pair of cells), else the largest change shown (worse or better).
    levels: [(cell label, stats.Summary)] of the metric, said when there is nothing to compare."""
    if not rows:
        if levels:
            said = "; ".join(f"{compare.fmt_value(s.median)} {decl['unit']} (median of {s.runs} run(s)"
                             + (f", 95% CI {compare.fmt_ci(s)}" if s.has_ci else "") + ")"
                             + (f" with {label}" if label else "") for label, s in levels[:3])
            return f"{metric_label}: {said}. Nothing to compare: no cell has a partner differing in one axis."
        return f"No comparison was possible for {metric_label}: no cell had a measured partner."
    main = main_rows(rows, kind, axis)
    if main:
        shown = main[:4]
        text = "; ".join(pair_clause(r, metric_label, decl, kind) for r in shown)
        if len(main) > len(shown):
            text += f"; and {len(main) - len(shown)} more pair(s) in the table below"
        rest = [r for r in rows if r not in main]
        if rest:
            moved = sum(verdict(r.comparison, decl) in ("better", "worse") for r in rest)
            text += f". The other {len(rest)} comparison(s) ({moved} changed) follow the answer"
        return text + "."
    significant = [r for r in rows if verdict(r.comparison, decl) in ("better", "worse")]
    untested = [r for r in rows if not r.comparison.tested]
    if untested and len(untested) == len(rows):
        return (f"No test for {metric_label}: {untested[0].comparison.no_test_reason()} (a test needs 3 or more "
                "runs a side; per-second samples of one run are not independent).")
    if not significant:
        effect = stats.fmt_effect(decl.get("min_effect", 0.0))
        words = [verdict(r.comparison, decl) for r in rows if r.comparison.tested]
        if words and all(w.startswith("within") or w == "no change" for w in words):
            return (f"No change beyond ±{effect} in {metric_label}: every interval of the {len(words)} tested "
                    "comparison(s) lies within the metric's minimum effect.")
        return (f"Undecided for {metric_label}: none of the {len(rows)} comparison(s) has an interval wholly beyond "
                f"0, and {sum(not w.startswith('within') and w != 'no change' for w in words)} reach past ±{effect} "
                "(more rounds narrow them; analysis/stats.py: one rule, the gate's).")
    top = max(significant, key=lambda r: abs(r.comparison.change))
    c = top.comparison
    verb = "raises" if c.change > 0 else "lowers"
    where = f" (with {top.others})" if top.others else ""
    return (f"{top.axis}={top.value} {verb} {metric_label} by {c.change:+.1%} ({compare.fmt_level(c)} "
            f"{compare.fmt_change_ci(c)}) "
            f"vs {top.axis}={top.baseline_value}{where}; {len(significant)} of {len(rows)} comparison(s) changed, "
            f"{verdict(c, decl)} for this metric.")


def published_for(references, kind_name, rig):
    """Published figures of the reference sets that ask this kind's question for this rig."""
    out = []
    for ref in references:
        doc = ref.reference
        if kind_name in doc["report_kinds"] and doc["rig"] == rig:
            out += [(doc, f) for f in doc["figures"]]
    return out


def build(kind_name, sets, out_dir, metrics=None, axis=None, allow_mismatch=False, command=None, generated_at=None,
          question=None, story=story_lib.Story(), appendix=True):
    """The report's blocks. Figures are written into out_dir. question: the study's own (the site's
    studies.toml), else the run's matrix's, else the kind's in words. The sections in page order: the title page,
    each metric, attribution, published figures, observations, cells not measured, provenance. appendix=False: the
    story alone (the answer's metric and the mechanism's counters; the rest said, not drawn)."""
    prepared, declared, chosen, cells, declared_groups, rows_by_metric = comparisons(kind_name, sets, metrics, axis,
                                                                                      allow_mismatch, story)
    references = [s for s in sets if s.published]
    measured = prepared.sets
    rig = measured[0].docs[0]["matrix"]["rig"]
    published = published_for(references, kind_name, rig)
    mechanism, counted = story_lib.mechanism_figure(story, cells, declared, prepared, declared_groups, out_dir)
    blocks = title_blocks(kind_name, prepared, cells, rows_by_metric, declared, chosen[0], rig, published, question,
                          generated_at, story_lib.story_blocks(story, cells, declared, prepared, declared_groups)
                          + ([mechanism] if mechanism else []), out_dir,
                          story_lib.scaling_blocks(story, cells, declared, chosen[0], out_dir))
    figure_index = 0
    # Without the appendix a report is its story: the metric that answers and the mechanism's counters; the
    # other metrics' pages, the threads, monitors, tails and observations are the appendix (issue 82).
    # The answer's own comparison is on the title page already (its key figure and the question's table): a story
    # repeats it only where the title page had no table of it.
    asked_on_title = any(isinstance(b, render.TableBlock) and b.caption.endswith("the question's comparison")
                         for b in blocks)
    # Likewise the counts the title page's mechanism figure and table show (counted).
    drawn = chosen if appendix else list(dict.fromkeys(([] if asked_on_title else [chosen[0]])
                                                       + [m for m in story.mechanism if m in chosen and m not in counted]))
    for metric in drawn:
        metric_part, figure_index = metric_blocks(metric, declared[metric], rows_by_metric[metric], cells, prepared,
                                                  declared_groups, out_dir, figure_index, story_only=not appendix,
                                                  bars_drawn=appendix or metric != chosen[0])
        blocks += metric_part
    on_title = set(counted) | ({chosen[0]} if asked_on_title else set())
    undrawn = [m for m in chosen if m not in drawn and m not in on_title]
    if undrawn:
        blocks.append(render.Para(f"Not drawn here: {', '.join(undrawn)}, and the "
                                  "threads, monitors, tails and observations (the appendix: rerun the report with "
                                  "--appendix; the site's set pages have it)."))

    if kind_name == "stock-vs-patched":
        blocks += attribution_blocks(cells, chosen, declared, prepared.docs)

    if published:
        blocks.append(render.Heading(f"Published figures ({resultsets.PUBLISHED_LABEL})"))
        blocks.append(published_table(published))

    if appendix:
        blocks += thread_cpu_blocks(prepared.docs, out_dir)
        blocks += monitor_blocks(prepared.docs, out_dir)
    asked_axis = prepared.axes[0] if KINDS[kind_name].axis and prepared.axes else None
    blocks += profile_blocks(measured, out_dir, flame=appendix, axis=None if appendix else asked_axis)
    if appendix:
        blocks += tail_blocks(prepared.docs)
        blocks += observation_tables(prepared.docs)

    missing = compare.not_measured_rows(cells)
    blocks.append(render.Heading("Cells not measured"))
    if missing:
        blocks.append(render.TableBlock(["cell", "parameters", "ok/failed/invalid/skipped", "reason"], missing))
    else:
        blocks.append(render.Para("Every planned cell repetition was measured."))

    blocks.append(render.Break())
    blocks += provenance_appendix(measured, prepared)
    blocks.append(render.Heading("How to rerun"))
    blocks.append(render.Code("\n".join(rerun_commands(measured) + ["", "# this report:", command or ""]).strip()))
    return blocks


def comparisons(kind_name, sets, metrics=None, axis=None, allow_mismatch=False, story=story_lib.Story()):
    """What a report compares, before it is drawn: (prepared, declared metrics, chosen metrics, cells, declared
    comparison groups, {metric: [compare.Row]}): the rows whose words and intervals the report prints (the
    consistency test holds them to the gate's decision)."""
    prepared = prepare(kind_name, sets, axis, allow_mismatch)
    measured = prepared.sets
    declared = declared_metrics(measured, prepared)
    chosen = metrics or story.metric_order(declared)
    unknown = [m for m in chosen if m not in declared]
    if unknown:
        raise ReportError(f"no such metric {', '.join(unknown)}; the sets measure {', '.join(declared)}")
    # Matrix order (the manifests' plans): an axis' first value in it is the baseline, as in the runner.
    order = []
    for index, s in enumerate(measured):
        prefix = f"{index}:" if len(measured) > 1 else ""
        order += [prefix + c["id"] for c in s.manifest.get("cells", []) if isinstance(c, dict) and "id" in c]
    cells = compare.collect(prepared.docs, order)
    declared_groups = prepared.groups if prepared.groups is not None else _declared_groups(measured, prepared)
    rows_by_metric = {m: compare.axis_rows(cells, m, axes=prepared.axes, baselines=prepared.baselines,
                                           declared=declared_groups) for m in chosen}
    if len(measured) == 1:
        read_as_gated(measured[0].manifest or {}, rows_by_metric)
    return prepared, declared, chosen, cells, declared_groups, rows_by_metric


def read_as_gated(manifest, rows_by_metric):
    """A gated run (the nightlies': the gate's own rule at every look) is read as the gate reads it: its gated
    metrics' paired intervals at the look's share of the error (analysis/sequential.gate_levels), so that the
    report's words are the gate's state."""
    try:
        design = sequential.Design.of(manifest)
    except ValueError:
        return
    if design is None or not design.gated:
        return
    levels = sequential.gate_levels(design.min_rounds, design.max_rounds, max(design.family, 1))
    for metric in design.metrics & set(rows_by_metric):
        for r in rows_by_metric[metric]:
            c = r.comparison
            if c.paired and c.n_pairs >= design.min_rounds:
                c.look_alpha = levels[min(c.n_pairs, design.max_rounds)]


def title_blocks(kind_name, prepared, cells, rows_by_metric, declared, headline, rig, published, question,
                 generated_at, story=(), out_dir=None, scaled=None):
    """The title page: the question, the answer and its one line, the story's mechanism and caveats, ceilings and
    warnings, the question's own comparison, sequential stops, the cross-host pages, how to read the tables."""
    kind = KINDS[kind_name]
    measured = prepared.sets
    names = [s.name for s in measured]
    hosts = sorted({h for s in measured for h in s.host_ids()})
    # One run answers the question its matrix asks; two sets the kind's.
    asked = (measured[0].manifest.get("matrix") or {}).get("question") if len(measured) == 1 else None
    # Two sets are named by what the comparison calls them (x86 and arm64), never by their paths.
    side_a, side_b = prepared.labels if len(prepared.labels) == 2 else (names[0], names[-1])
    question = question or asked or kind.question.format(metric=headline, a=side_a, b=side_b)
    axis_asked = prepared.axes[0] if kind.axis and prepared.axes else None
    title = kind.title
    if kind_name == "cross-host" and len(set(crosshost.architectures(measured))) > 1:
        title += f" ({' vs '.join(crosshost.architectures(measured))})"
    caps = ceilings.of_docs(prepared.docs)
    asked_rows = main_rows(rows_by_metric[headline], kind, axis_asked)
    in_one_line = oneline.one_line(asked_rows or rows_by_metric[headline], headline, declared[headline], caps,
                                 story_lib.levels_of(cells, headline))
    notes = [oneline.ceiling_note(r, headline, caps) for r in asked_rows or rows_by_metric[headline]]
    capped = list(dict.fromkeys(n.removeprefix("; ") for n in notes if n))
    blocks = [render.Title(f"{title}: {question}",
                           f"{' vs '.join(names)} | host(s) {', '.join(hosts)} | rig {rig} | generated "
                           f"{generated_at or datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
                           banner=prepared.banner),
              render.Para("Answer: " + title_sentence(rows_by_metric[headline], headline, declared[headline], kind,
                                              axis_asked, story_lib.levels_of(cells, headline)), strong=True),
              render.Para("In one line: " + in_one_line)] + list(story)
    if scaled:
        blocks[1] = render.Para("Answer: " + scaled[0], strong=True)
        blocks[2] = render.Para("In one line: " + scaled[2])
        blocks += scaled[1]
    else:
        figure = story_lib.key_figure(asked_rows or rows_by_metric[headline], headline, declared[headline], out_dir)
        if figure is not None:
            blocks.append(figure)
    for note in capped:
        blocks.append(render.Para(f"AT CEILING: {note} (analysis/ceilings.py: the rig's declared ceiling of "
                                  f"{headline} for that cell, reached within {1 - ceilings.AT_CEILING:.0%})", strong=True))
    for w in prepared.warnings:
        blocks.append(render.Para("WARNING: " + w, strong=True))
    if asked_rows:  # the comparison the question names, on the title page
        blocks.append(render.TableBlock(
            table_header(axis_asked, asked_rows),
            [row for r in asked_rows for row in table_rows(r, declared[headline])],
            caption=f"{headline} ({declared[headline]['unit']}): {axis_asked}, the question's comparison"))
    blocks += sequential_blocks(measured)
    if kind_name == "cross-host":
        blocks += crosshost.blocks(measured, prepared.labels, asked_rows or rows_by_metric[headline], headline,
                                   declared[headline]["unit"])
    blocks.append(render.Para(HOW_TO_READ))
    if published:
        blocks.append(render.Para(f"Published figures ({resultsets.PUBLISHED_LABEL}) from "
                                  f"{', '.join(sorted({d['source']['title'] for d, _ in published}))} are in their "
                                  "own table after the measured ones, never on the measured data's axes."))
    blocks.append(render.Break())

    return blocks


def declared_metrics(measured, prepared):
    """Every metric the sets declare, with its unit, direction and minimum effect (better/worse only beyond
    it), in the sets' order; metrics only the parts of a split have (e.g. local_page_ratio) included."""
    declared = collections.OrderedDict()
    for s in measured:
        declared.update(s.metrics())
    for d in prepared.docs:
        for m in d.get("metrics", []):
            declared.setdefault(m["name"], {"unit": m["unit"], "direction": m["direction"]})
    effects = thresholds.min_effects(None, [d for s in measured for d in s.docs])
    return collections.OrderedDict((name, dict(decl, min_effect=effects.get(name, thresholds.DEFAULT_MIN_EFFECT)))
                                   for name, decl in declared.items())


def metric_blocks(metric, decl, rows, cells, prepared, declared_groups, out_dir, figure_index, story_only=False,
                  bars_drawn=True):
    """One metric's pages: a count's differences, or per compared axis its bars with intervals, its table and
    its per-second series; then its stability warnings. Figures are numbered on from figure_index; returns
    the blocks and the last figure's number. story_only: only the axis the question names (when the kind names
    one), no per-second series and no stability table (the appendix has them). bars_drawn=False: the table
    without its figure (the title page's key figure shows these changes)."""
    asked = prepared.axes[0] if story_only and prepared.axes else None
    if asked and any(r.axis == asked for r in rows):
        rows = [r for r in rows if r.axis == asked]
    blocks = [render.Heading(f"{metric} ({decl['unit']}, {decl['direction'].replace('_', ' ')})")]
    if decl.get("zero_possible"):
        figure_index += 1
        blocks += count_blocks(cells, metric, decl, prepared, declared_groups, out_dir, figure_index)
    elif not rows:
        blocks.append(render.Para("No comparable cells for this metric."))
    if decl.get("zero_possible") and story_only:
        rows = []  # a count's story is its bars and differences; its ratios (from a non-zero baseline) are appendix
    for ax in dict.fromkeys(r.axis for r in rows):
        group = [r for r in rows if r.axis == ax]
        if not bars_drawn:
            blocks.append(render.TableBlock(table_header(ax, group), [row for r in group for row in table_rows(r, decl)],
                                            caption=f"{metric} by {ax} (baseline {ax}={group[0].baseline_value})"))
            continue
        figure_index += 1
        bars = []
        seen = set()
        for r in group:
            key = (r.baseline_value, r.others)
            if key not in seen:
                seen.add(key)
                bars.append((_label(ax, r.baseline_value, r.others) + " (baseline)", r.baseline.median,
                             r.baseline.ci_low, r.baseline.ci_high, "baseline"))
            bars.append((_label(ax, r.value, r.others), r.summary.median, r.summary.ci_low, r.summary.ci_high,
                         verdict(r.comparison, decl)))
        # Published levels are not drawn here: on this axis they would squash the measured bars (the
        # study's 375 s beside our 3 s). They have their own table, labelled as not measured here.
        path = plots.ci_bars(os.path.join(out_dir, f"figure{figure_index}.png"), f"{metric} by {ax}",
                             decl["unit"], bars)
        blocks.append(render.Figure(path, f"Figure {figure_index}: {metric} by {ax}, median and 95% CI per "
                                          "cell; green better, red worse, grey baseline, undecided or within the minimum effect "
                                          f"({stats.fmt_effect(decl['min_effect'])})."))
        blocks.append(render.TableBlock(
            table_header(ax, group),
            [row for r in group for row in table_rows(r, decl)],
            caption=f"{metric} by {ax} (baseline {ax}={group[0].baseline_value})"))
        series_lines = [] if story_only else _series(cells, group, metric)
        if series_lines:
            figure_index += 1
            path = plots.series(os.path.join(out_dir, f"figure{figure_index}.png"),
                                f"{metric} per second, by {ax}", decl["unit"], series_lines)
            blocks.append(render.Figure(path, f"Figure {figure_index}: {metric} per second over the measured "
                                              "window, first measured repetition of each cell."))
    warns = [] if story_only else _stability_warnings(rows)
    if warns:
        blocks.append(render.TableBlock(["cell", "warning"], warns, caption=f"Stability warnings ({metric})"))
    return blocks, figure_index


def count_blocks(cells, metric, decl, prepared, declared_groups, out_dir=None, figure_index=0):
    """A count that may be 0 (workload.toml's zero_possible: page-cache advice, disk bytes, waits): bars of every
    compared cell's median with its interval over runs (a count's figure, issue 82; out_dir None: not drawn), each
    pair's medians and their difference with its interval, a zero baseline included; its ratios, where the baseline
    is not 0, follow in the usual table."""
    rows = compare.difference_rows(cells, metric, axes=prepared.axes, baselines=prepared.baselines,
                                   declared=declared_groups)
    if not rows:
        return [render.Para("No comparable cells for this metric.")]
    blocks = []
    if out_dir is not None:
        path = plots.ci_bars(os.path.join(out_dir, f"figure{figure_index}.png"), f"{metric} per cell", decl["unit"],
                             story_lib.count_bars(cells, metric, decl, prepared, declared_groups))
        blocks.append(render.Figure(path, f"Figure {figure_index}: {metric} per cell, median and 95% CI over runs; "
                                          "red or green where the pair's difference is beyond 0 (worse or better), "
                                          "grey baselines."))
    return blocks + [render.TableBlock(
        ["axis", "baseline", "candidate", "other parameters", "baseline median (runs' range, runs)",
         "candidate median (runs' range, runs)", "difference (95% CI)"],
        [[r.axis, r.baseline_value, r.value, r.others, _median_range(r.baseline, decl["unit"]),
          _median_range(r.summary, decl["unit"]), compare.fmt_difference(r.difference, decl["unit"]).replace("95% CI ", "")]
         for r in rows],
        caption=f"{metric} ({decl['unit']}): a count that may be 0, compared as a difference of medians, not a "
                "ratio; the interval is a bootstrap over runs (3 or more a side)")]


def _median_range(s, unit=""):
    """"102.1 MB (101.2..102.9, 5)": the range in the median's own scale, so a table cell stays one line."""
    median = compare.fmt_value(s.median, unit)
    scale = median.split(" ")[1] if " " in median else ""
    size = {"KB": 1e3, "MB": 1e6, "GB": 1e9}.get(scale, 1)
    edge = lambda x: compare.fmt_value(x / size) if size != 1 else compare.fmt_value(x, unit)  # noqa: E731
    return f"{median} ({edge(s.minimum)}..{edge(s.maximum)}, {s.runs})"


def published_table(published):
    return render.TableBlock(
        ["source", "figure", "host", "parameters", "metric", "value", "note"],
        [[f"case {d['source']['case_study']}", f["label"], f.get("host", ""), _params_text(f),
          f["metric"], _published_value(f), f.get("note", "")] for d, f in published],
        caption="Reference rows: the authors' numbers, not measured by tunelab; their setups differ from ours")


def _label(axis, value, others):
    return f"{axis}={value}" + (f" [{others}]" if others else "")


def table_header(axis, rows):
    """The comparison table's columns; the change's interval names its level (one family: one level)."""
    level = next((compare.fmt_level(r.comparison) for r in rows if r.comparison.tested), "CI")
    return [axis, "other parameters", "median", "95% CI", "runs", "change", f"change {level}", "verdict"]


def table_rows(r, decl):
    """The baseline and candidate rows of one comparison. Without 3 rounds or runs a side the intervals print
    "-" and the verdict says "no test" (analysis/stats.py)."""
    c = r.comparison
    return [[f"{r.baseline_value} (baseline)", r.others, compare.fmt_value(r.baseline.median),
             compare.fmt_ci(r.baseline), str(r.baseline.runs), "", "", ""],
            [r.value, r.others, compare.fmt_value(r.summary.median), compare.fmt_ci(r.summary),
             str(r.summary.runs), f"{c.change:+.1%}", compare.fmt_change_ci(c), verdict(c, decl)]]


def _declared_groups(measured, prepared):
    """The comparison groups the runs' manifests declare (one set: its own; two sets compared along an
    added axis: that axis), or None for sets older than the field (then axes are inferred)."""
    if len(measured) != 1:
        return None
    groups = measured[0].manifest.get("matrix", {}).get("comparison_groups")
    return [list(g) for g in groups] if groups is not None else None


def _series(cells, group, metric, limit=8):
    """Per-second lines of the cells of one axis group, when the samples carry a time ("t")."""
    by_id = {c.id: c for c in cells}
    wanted = {}
    for r in group:
        wanted.setdefault(r.baseline_id, _label(r.axis, r.baseline_value, r.others))
        wanted.setdefault(r.cell_id, _label(r.axis, r.value, r.others))
    lines = []
    for cid, label in list(wanted.items())[:limit]:
        samples = by_id[cid].timed.get(metric) or []
        if len(samples) >= 3:
            lines.append((label, [t for t, _ in samples], [v for _, v in samples]))
    return lines


def _stability_warnings(rows):
    out, seen = [], set()
    for r in rows:
        for label, s in ((f"{r.axis}={r.baseline_value} [{r.others}]", r.baseline), (f"{r.axis}={r.value} [{r.others}]", r.summary)):
            for w in s.warnings:
                if (label, w) not in seen:
                    seen.add((label, w))
                    out.append([label, w])
    return out


def _params_text(f):
    to = " ".join(f"{k}={v}" for k, v in (f.get("params") or {}).items())
    if f.get("params_from"):
        return " ".join(f"{k}={v}" for k, v in f["params_from"].items()) + " -> " + to
    return to


def _published_value(f):
    sign = "+" if f.get("kind") == "change" and f["value"] > 0 else ""
    text = f"{sign}{f['value']:,g} {f['unit']}"
    if "low" in f and "high" in f:
        text += f" ({f['low']:,g}..{f['high']:,g})"
    return text


def write(blocks, out_pdf, out_html=None, out_text=None):
    title = blocks[0].text if blocks and isinstance(blocks[0], render.Title) else "tunelab report"
    render.to_pdf(blocks, out_pdf, title)
    if out_html:
        safeio.write_text(out_html, render.to_html(blocks, title))
    if out_text:
        safeio.write_text(out_text, render.to_text(blocks))


def reference_sets(results_root):
    return [resultsets.load_reference(p) for p in sorted(glob.glob(os.path.join(results_root, "reference", "*.json")))]
