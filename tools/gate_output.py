"""The gate's outputs: its verdict line, the Markdown summary (stdout, --markdown) and JUnit XML (--junit),
from the checks analysis/gate_decision.py made. tools/testdata/golden_gate.txt holds both formats."""

import textwrap
from xml.etree import ElementTree

from analysis import compare, stats


def sensitivity_text(check):
    """What a check can see, in one line; "" without a committed figure."""
    if check.figure is None:
        return ""
    f = check.figure
    text = (f"{check.metric}: catches >= {check.mde:.1%} at 95 % with {min(check.runs)} rounds a side "
            f"(set {f.set_name}, {f.measured_at})")
    if check.judged_at_mde:
        text += (f"; asked {stats.fmt_effect(check.asked_min_effect)}, can see {check.mde:.1%}: judged at {check.mde:.1%}; quiet "
                 "the rig or raise the minimum effect")
    if f.stale:
        text += f"; the set is older than the workload's digest (measured on {f.workload_sha256[:12]})"
    other = f.other_cell(check.params)
    if other:
        shown = ", ".join(f"{k}={theirs}, here {ours}" for k, theirs, ours in other[:3])
        more = f" and {len(other) - 3} more" if len(other) > 3 else ""
        text += f"; measured on another cell ({shown}{more}): a guide, not this cell's figure"
    return text


def headline(checks):
    regressed = [c for c in checks if c.regressed]
    verdict = f"REGRESSED ({len(regressed)} of {len(checks)})" if regressed else f"PASS ({len(checks)} checks)"
    blind = sorted({(c.metric, c.asked_min_effect, c.mde) for c in checks if c.judged_at_mde})
    if blind:
        verdict += "; judged at the MDE: " + ", ".join(f"{m} asked {stats.fmt_effect(a)}, can see {d:.1%}"
                                                       for m, a, d in blind)
    return verdict


def md(text):
    """A value from results made inert in Markdown: on one line, no table bar, no HTML, no code span (issue 39:
    a parameter value with a newline, `|` or HTML wrote its own "PASS" line and a raw <img onerror>)."""
    text = " ".join(str(text).split())
    for raw, safe in (("<", "&lt;"), ("|", "\\|"), ("`", "'")):  # no tag can open without "<"
        text = text.replace(raw, safe)
    return text


def markdown(checks, baseline, candidate, confirmed=None, warnings=()):
    verdict = headline(checks)
    word, _, rest = verdict.partition(" ")
    lines = [f"# tunelab gate: **{word}** {rest}", ""]
    seen = set()
    for c in checks:
        text = sensitivity_text(c)  # one line per distinct statement (rounds, or the cell the figure fits, differ)
        if text and text not in seen:
            seen.add(text)
            lines.append(f"- Sensitivity: {md(text)}")
    unknown = list(dict.fromkeys(c.metric for c in checks if c.figure is None))
    if unknown:
        seen.add("unknown")
        lines.append(f"- Sensitivity: no committed figure for {md(', '.join(unknown))}: what this gate can see is "
                     "unknown (bazel run //tools:sensitivity)")
    if seen:
        lines.append("")
    lines += [f"**WARNING: {md(w)}**" for w in warnings] + ([""] if warnings else [])
    rule = ("Regression = worse by more than the metric's minimum effect AND Holm-adjusted Welch p < 0.05 on "
            "per-run medians.")
    if any(c.stop is not None for c in checks):
        rule = ("Sequential run: a comparison stopped when its repeated 95% confidence interval (all looks "
                "together, analysis/sequential.py) lay wholly outside ± the minimum effect (different: REGRESSED "
                "if worse) or wholly inside it (equivalent: pass); one still undecided at its last round is judged "
                "by the fixed rule. Fixed rule: " + rule)
    lines += [f"Baseline `{md(baseline.name)}`, candidate `{md(candidate.name)}`. {rule}", "",
             "| cell | metric | baseline median | candidate median | change | change 95% CI | min effect | p (Holm) "
             "| runs | status |", "|---|---|---|---|---|---|---|---|---|---|"]
    for c in checks:
        k = c.comparison
        lines.append(f"| {md(c.cell)} | {md(c.metric)} ({md(c.unit)}) | {k.baseline_median:,.4g} | {k.candidate_median:,.4g} | "
                     f"{k.change:+.2%} | {compare.fmt_change_ci(k, 2)} | {_effect(c)} | "
                     f"{compare.fmt_p(k.p_adjusted)} | {c.runs[0]}/{c.runs[1]} | {c.status} |")
    if confirmed is not None:
        lines += ["", f"Confirmation rerun: {md(confirmed)}"]
    return "\n".join(wrap_prose(line) for line in lines) + "\n"


MARKDOWN_WIDTH = 100


def wrap_prose(line):
    """A prose line of the Markdown at MARKDOWN_WIDTH (a paragraph or list item may span lines; a table row
    and a heading may not): CI systems' logs and diffs show it whole (issue 41: lines of 595 characters)."""
    if len(line) <= MARKDOWN_WIDTH or line.startswith(("|", "#")):
        return line
    return textwrap.fill(line, MARKDOWN_WIDTH, subsequent_indent="  " if line.startswith("- ") else "",
                         break_long_words=False, break_on_hyphens=False)


def _effect(c):
    """The minimum effect a check was judged at: "5%", or "12.7% (MDE; asked 5%)"."""
    if c.judged_at_mde:
        return f"{c.min_effect:.1%} (MDE; asked {stats.fmt_effect(c.asked_min_effect)})"
    return stats.fmt_effect(c.min_effect)


def junit(checks, baseline, candidate):
    suite = ElementTree.Element("testsuite", name="tunelab.gate", tests=str(len(checks)),
                                failures=str(sum(c.regressed for c in checks)))
    ElementTree.SubElement(ElementTree.SubElement(suite, "properties"), "property", name="baseline",
                           value=baseline.name)
    suite[0].append(ElementTree.Element("property", name="candidate", value=candidate.name))
    suite[0].append(ElementTree.Element("property", name="verdict", value=headline(checks)))
    seen = set()
    for c in checks:
        if c.figure is not None and c.metric not in seen:
            seen.add(c.metric)
            suite[0].append(ElementTree.Element("property", name=f"sensitivity.{c.metric}",
                                                value=sensitivity_text(c)))
    for c in checks:
        case = ElementTree.SubElement(suite, "testcase", classname=f"gate.{c.metric}", name=c.cell)
        k = c.comparison
        text = (f"{c.metric}: {k.baseline_median:.6g} -> {k.candidate_median:.6g} {c.unit} ({k.change:+.2%}, "
                f"95% CI {compare.fmt_change_ci(k, 2)}), p (Holm) {compare.fmt_p(k.p_adjusted)}, "
                f"min effect {_effect(c)}")
        if c.regressed:
            ElementTree.SubElement(case, "failure", message=f"regressed by {c.worse_by:.2%}").text = text
        else:
            ElementTree.SubElement(case, "system-out").text = text
    return ElementTree.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"
