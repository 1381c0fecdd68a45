"""The bisect's words (tools/bisection/command.py): a gate check as a record's summary, a pair's verdict as
one line, commit ids, durations and the table of steps, apart from the command's running and storing."""

import datetime
import math
import re

from tools.bisection.step_profiles import finite


def summarize(check):
    low, high = check.worse_by_interval
    rounds = check.evidence.n if check.evidence else 0
    return {"cell": check.cell, "metric": check.metric, "state": check.state, "worse_by": finite(check.worse_by),
            "interval_98": [finite(low), finite(high)], "can_see": finite(check.can_see),
            "this_run_could_see": finite(check.tonight_d), "rounds": rounds,
            "rounds_to_see": rounds_to_see(rounds, finite(check.tonight_d), finite(check.can_see)),
            "reasons": list(check.reasons)[:3]}


def rounds_to_see(rounds, could_see, can_see):
    """The rounds at which this run's noise would see what the gate promises: what a run sees shrinks as
    1/sqrt(rounds) (the paired t's standard error; its t quantile, smaller with more rounds, is left out, so
    this errs high). None without the figures."""
    if not rounds or not could_see or not can_see or could_see <= can_see:
        return None
    return math.ceil(rounds * (could_see / can_see) ** 2)


def pct(x):
    return "-" if x is None else f"{x:+.1%}"


def pair_text(pair):
    """"REGRESSED: worse by +20.3 % (98 % CI +18.1..+22.4 %; could see 2.9 %)" for the first check."""
    c = pair["checks"][0]
    low, high = c["interval_98"]
    see = f"{c['can_see']:.1%}" if c["can_see"] is not None else "-"
    why = f"; {c['reasons'][0]}" if pair["state"] == "INCONCLUSIVE" and c.get("reasons") else ""
    if pair["state"] == "INCONCLUSIVE" and c.get("rounds_to_see"):
        why += f"; ~{c['rounds_to_see']} rounds would see it"
    return f"{pair['state']}: worse by {pct(c['worse_by'])} (98 % CI {pct(low)}..{pct(high)}; catches >= {see}{why})"


def short(commit):
    """A commit id's first 12 digits; an axis value whole (up to 60 characters)."""
    text = str(commit)
    return text[:12] if re.fullmatch(r"[0-9a-f]{40}", text) else text[:60]


def fmt_s(seconds):
    return str(datetime.timedelta(seconds=round(seconds)))


def steps_table(bisect):
    rec = bisect.record
    rows = [f"{'commit':12}  {'vs good':13} {'bad vs it':13} {'rounds':>6}  state    subject"]
    for s in sorted(bisect.bisection.steps, key=lambda s: s.index):
        rows.append(f"{short(s.commit):12}  {s.toward_good or '-':13} {s.toward_bad or '-':13} {s.rounds or '-':>6}  "
                    f"{s.verdict:8} {rec['subjects'].get(s.commit, '')[:50]}")
    return "\n".join(rows)
