"""The gate's outputs: its verdict line, the Markdown summary (stdout, --markdown) and JUnit XML (--junit),
from the checks analysis/gate/decision.py made. tools/gate/testdata/golden_gate.txt holds both formats."""

import collections
import math
import textwrap
from xml.etree import ElementTree

from analysis import stats
from analysis.gate import decision as gate_decision


def _pct(x, signed=False):
    if x is None or not math.isfinite(x):
        return "-" if x is None or math.isnan(x) else "no regression up to x148"
    return f"{x:+.1%}" if signed else f"{x:.1%}"


def sensitivity_text(check):
    """What a check can see, in one line: the rig's stated D at this comparison's design and what this run's
    own rounds could see; every effect a fraction worse."""
    design = check.design.describe() if check.design is not None else f"{min(check.runs)} rounds"
    parts = []
    f = check.figure
    if f is not None and check.stated is not None:
        parts.append(f"catches >= {_pct(check.stated_d)} worse at 95 % with {design} (set {f.set_name}, "
                     f"{f.measured_at})")
        if check.cannot_see_asked:
            parts.append(f"asked {stats.fmt_effect(check.min_effect)}: a regression between the two may pass "
                         "unflagged; quiet the rig, run more rounds or raise the minimum effect")
        if f.stale:
            parts.append(f"the set is older than the workload's digest (measured on {f.workload_sha256[:12]})")
        other = f.other_cell(check.params)
        if other:
            shown = ", ".join(f"{k}={theirs}, here {ours}" for k, theirs, ours in other[:3])
            more = f" and {len(other) - 3} more" if len(other) > 3 else ""
            parts.append(f"measured on another cell ({shown}{more}): a guide, not this cell's figure")
    elif f is not None:
        parts.append(f.why_not_usable())
    if check.tonight is not None:
        parts.append(f"this run could see {_pct(check.tonight_d)} ({'paired' if check.evidence.paired else 'unpaired'} "
                     f"sd {check.evidence.sd:.1%})")
    return f"{check.metric}: " + "; ".join(parts) if parts else ""


def headline(checks):
    """The verdict line, by gate.exit_status's rule: a watched check (a gated run's companion) only when REGRESSED."""
    regressed = [c for c in checks if c.regressed]
    deciding = [c for c in checks if not c.watched]
    inconclusive = [c for c in deciding if c.inconclusive]
    if regressed:
        verdict = f"REGRESSED ({len(regressed)} of {len(checks)})"
    elif inconclusive:
        verdict = f"INCONCLUSIVE ({len(inconclusive)} of {len(deciding)})"
    else:
        verdict = f"PASS ({len(deciding)} checks)"
    if regressed and inconclusive:
        verdict += f"; {len(inconclusive)} inconclusive"
    watched = [c for c in checks if c.watched]
    if watched:
        verdict += (f"; watched, not deciding: {len(watched)} ("
                    f"{', '.join(f'{n} {s}' for s, n in collections.Counter(c.state for c in watched).items())})")
    blind = sorted({(c.metric, c.min_effect, c.stated_d) for c in checks if c.cannot_see_asked})
    if blind:
        verdict += "; cannot see the asked effect: " + ", ".join(
            f"{m} asked {stats.fmt_effect(a)}, catches >= {_pct(d)}" for m, a, d in blind)
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
    rule = ("Rule (analysis/stats.py): per cell and metric, the interval of the mean log ratio at 1 % a side "
            f"({'paired over interleaved rounds' if all(c.evidence.paired for c in checks) else 'Welch, unpaired'}): "
            "PASS where it rules out a regression of the asked effect, REGRESSED where it is wholly worse than 0 "
            "and does not rule it out, INCONCLUSIVE otherwise, or where this run could see less than the gate "
            f"promises by more than {gate_decision.NOISE_MARGIN:.0%}. Effects are fractions worse.")
    if any(c.gated for c in checks):
        rule += (" Gated run (analysis/sequential.py): the runner stopped each check at this rule's first PASS or "
                 "REGRESSED, adding rounds while INCONCLUSIVE up to its budget; the rule is read at that look, on "
                 "its rounds, with its share of the error (the CI column's level), so it holds over every look and "
                 "no noise margin applies.")
    elif any(c.stop is not None for c in checks):
        rule += (" Sequential run: rounds stopped by repeated 95% intervals (analysis/sequential.py); the rule reads "
                 "the rounds measured.")
    lines += [f"Baseline `{md(baseline.name)}`, candidate `{md(candidate.name)}`. {rule}", "",
              f"| cell | metric | baseline median | candidate median | worse by | {_ci_header(checks)} | asked | "
              "this run catches | rounds | status |", "|---|---|---|---|---|---|---|---|---|---|"]
    for c in checks:
        k = c.comparison
        low, high = c.worse_by_interval
        level = "" if c.alpha == stats.GATE_ALPHA else f" ({c.ci_level:.2%})"
        lines.append(f"| {md(c.cell)} | {md(c.metric)} ({md(c.unit)}) | {k.baseline_median:,.4g} | "
                     f"{k.candidate_median:,.4g} | {_pct(c.worse_by, True)} | {_pct(low, True)}..{_pct(high, True)}{level} | "
                     f"{stats.fmt_effect(c.min_effect)} | {_pct(c.tonight_d)} | {c.evidence.n} | {md(c.status)} |")
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


def _ci_header(checks):
    """The interval column's header: "98% CI (worse by)" at the fixed-count rule's level; a gated look's own
    level is beside its interval."""
    return "98% CI (worse by)" if all(c.alpha == stats.GATE_ALPHA for c in checks) else "CI (worse by; level)"


def _effect(c):
    """The asked effect, and the rig's D where it cannot see it: "5%", or "5% (catches >= 12.7%)"."""
    if c.cannot_see_asked:
        return f"{stats.fmt_effect(c.min_effect)} (catches >= {_pct(c.stated_d)})"
    return stats.fmt_effect(c.min_effect)


def junit(checks, baseline, candidate):
    suite = ElementTree.Element("testsuite", name="tunelab.gate", tests=str(len(checks)),
                                failures=str(sum(c.regressed for c in checks)),
                                skipped=str(sum(c.inconclusive for c in checks)))
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
        low, high = c.worse_by_interval
        text = (f"{c.metric}: {k.baseline_median:.6g} -> {k.candidate_median:.6g} {c.unit} ({_pct(c.worse_by, True)} "
                f"worse, {100 * c.ci_level:.4g}% CI {_pct(low, True)}..{_pct(high, True)}), asked {_effect(c)}, "
                f"{c.evidence.n} rounds; "
                f"{c.status}")
        if c.regressed:
            ElementTree.SubElement(case, "failure", message=f"regressed by {c.worse_by:.2%}").text = text
        elif c.inconclusive:
            # JUnit has no third state: "skipped" with the reason is what CI systems show apart from a pass.
            ElementTree.SubElement(case, "skipped", message="inconclusive: " + "; ".join(c.reasons)).text = text
        else:
            ElementTree.SubElement(case, "system-out").text = text
    return ElementTree.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"
