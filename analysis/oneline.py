"""A study's answer in one line (issue 40): what the site's index shows and the report's title page repeats.

One comparison speaks for the study, the one its question names (the caller passes those rows): the largest
change shown (worse or better), else the widest interval. Five shapes, each short enough for an index row (MAX_CHARS):

    different    gc=parallel vs g1 +22.8% (CI +3.4..+34.5%), better   (and "(2 of 6 changed)" of several)
    equivalent   no change detectable (±2.1%)      every interval within the metric's minimum effect
    within       gc=parallel vs g1 +1.2% (CI +0.5..+2.0%), within the ±3% minimum effect
    undecided    undecided: gc=parallel vs g1 +3.1% (CI -8.0..+14.2%), wider than ±5%
    not tested   host=arm64 vs x86 -43.1%, not tested: 1 run a side

and a side at its ceiling (analysis/ceilings.py) adds "; x86 at its heartbeat cap (100 containers/s): the gap
is a lower bound" (the capped side could have done more, so the difference is at least the one shown). The
words are the comparison's verdict (analysis/stats.decision_words: the interval shown, the gate's, against the
minimum effect); the CI printed is that interval (98 % for one comparison, split over the metric's family).
"""

from analysis import compare, stats

MAX_CHARS = 120


def _pair(r):
    return f"{r.axis}={r.value} vs {r.baseline_value}"


def _change(c):
    """'+22.8% (CI +19.9..+25.8%)'."""
    if c.ratio_ci_low != c.ratio_ci_low:
        return f"{c.change:+.1%}"
    return f"{c.change:+.1%} (CI {100 * (c.ratio_ci_low - 1):+.1f}..{100 * (c.ratio_ci_high - 1):+.1f}%)"


def _widest(c):
    """How far from no change the interval reaches, as a fraction."""
    return max(abs(c.ratio_ci_low - 1), abs(c.ratio_ci_high - 1))


def ceiling_note(r, metric, ceilings, figure=True):
    """'; x86 at its heartbeat cap (100 containers/s): the gap is a lower bound', or '' (figure=False: without
    the ceiling's value, for a line that would not fit)."""
    at = [(label, ceilings[(cid, metric)]) for label, cid, median in
          ((r.baseline_value, r.baseline_id, r.baseline.median), (r.value, r.cell_id, r.summary.median))
          if (cid, metric) in ceilings and ceilings[(cid, metric)].reached_by(median)]
    if not at:
        return ""
    label, ceiling = at[0]
    value = f" ({ceiling.figure().split(', ', 1)[1]})" if figure else ""
    if len(at) == 2:
        return f"; both at their {ceiling.name}{value}: the cap was measured"
    return f"; {label} at its {ceiling.name}{value}: the gap is a lower bound"


def one_line(rows, metric, decl, ceilings=None, levels=()):
    """The one line for `rows` (compare.Row of `metric`, the comparisons the question names); decl: the
    metric's unit, direction and min_effect; ceilings: {(cell id, metric): ceilings.Ceiling}; levels:
    [(cell label, stats.Summary)] of the metric, said when there is nothing to compare."""
    ceilings = ceilings or {}
    if not rows:
        if levels:
            label, s = levels[0]
            line = (f"{metric} {compare.fmt_value(s.median)} {decl.get('unit', '')}{' with ' + label if label else ''} "
                    f"({s.runs} run{'s' if s.runs != 1 else ''}): nothing to compare")
            return line if len(line) <= MAX_CHARS else f"{metric} {compare.fmt_value(s.median)} {decl.get('unit', '')}: nothing to compare"
        return "nothing to compare: no cell has a measured partner"
    min_effect = decl.get("min_effect", 0.0)
    tested = [r for r in rows if r.comparison.tested]
    if not tested:
        r = max(rows, key=lambda r: abs(r.comparison.change))
        reason = r.comparison.no_test_reason().removesuffix(": no test")
        line = f"{_pair(r)} {r.comparison.change:+.1%}, not tested: {reason}"
    else:
        words = {id(r): r.comparison.verdict(decl["direction"], min_effect=min_effect) for r in tested}
        moved = [r for r in tested if words[id(r)] in ("better", "worse")]
        # Inside ±m and beyond 0: a change smaller than the question cares about; inside ±m around 0: none seen.
        within = [r for r in tested if words[id(r)].startswith("within") and r.comparison.significant()]
        open_ended = [r for r in tested if r not in moved and not words[id(r)].startswith("within")
                      and words[id(r)] != "no change"]
        if moved:
            r = max(moved, key=lambda r: abs(r.comparison.change))
            line = f"{_pair(r)} {_change(r.comparison)}, {words[id(r)]}"
            if len(rows) > 1:
                line += f" ({len(moved)} of {len(rows)} changed)"
        elif open_ended:
            r = max(open_ended, key=lambda r: _widest(r.comparison))
            line = f"undecided: {_pair(r)} {_change(r.comparison)}, wider than ±{stats.fmt_effect(min_effect)}"
        elif within:
            r = max(within, key=lambda r: abs(r.comparison.change))
            line = f"{_pair(r)} {_change(r.comparison)}, within the ±{stats.fmt_effect(min_effect)} minimum effect"
        else:
            r = max(tested, key=lambda r: _widest(r.comparison))
            line = f"no change detectable (±{stats.fmt_effect(_widest(r.comparison))})"
    for note in (ceiling_note(r, metric, ceilings), ceiling_note(r, metric, ceilings, figure=False)):
        if len(line + note) <= MAX_CHARS:
            return line + note
    return (line + note)[:MAX_CHARS - 1] + "…"
