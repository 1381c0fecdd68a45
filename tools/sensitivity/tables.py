"""analysis/README.md's three sensitivity tables and results/baselines/nights.json (`bazel run //tools:sensitivity --
--table`, `-- --write-nights`): every committed figure (newest per rig and metric), what each gated design
promises over the nights recorded ([sensitivity] nights of its rig.toml; analysis/sensitivity/nights.py), and
the covariates' variance reduction (analysis/sensitivity/covariates.py). //tools/sensitivity:gate_power_test
holds the README and nights.json to a fresh computation."""

import math
import os

from rigs import registry
from analysis import resultsets, stats, thresholds
from analysis.sensitivity import components, covariates, nights
from analysis.sensitivity import figures as sensitivity_figures
from analysis.sensitivity import sets as sensitivity_sets
from analysis.gate import power as gate_power
from tools.sensitivity.designs import gated_design, gated_metrics, load_registry, profile_effects

DRAWS = gate_power.DRAWS


def table(baselines):
    """analysis/README.md's table of the newest committed figure of every rig and metric, in Markdown: one row per gated
    profile, every effect the fraction the metric gets worse by, at that profile's own rounds and policy."""
    newest = {}
    rows = sensitivity_figures.history(baselines)
    # A rig's metrics are those its current A/A set (rig.toml [sensitivity] aa) states: a metric its gated
    # profiles no longer produce keeps its old figure in the old set, not in this table (MapReduce cpu_time).
    current = {r["rig"]: set() for r in rows}
    studies = load_registry(os.path.dirname(os.path.dirname(os.path.abspath(baselines))))
    for r in rows:
        if r["rig"] in studies and r["set"] == studies[r["rig"]].aa.get("set"):
            current[r["rig"]].add(r["metric"])
    for r in rows:
        key = (r["rig"], r["metric"])
        if current[r["rig"]] and r["metric"] not in current[r["rig"]]:
            continue
        if r["designs"] or key not in newest:  # history() is oldest first; an older rule's figure only if alone
            newest[key] = r
    pct = lambda x, signed=False: "-" if x is None else (f"{100 * x:+.1f} %" if signed else f"{100 * x:.1f} %")  # noqa: E731
    lines = ["| rig, metric | gated profile (rounds) | catches >= (worse, 95 %) | asked | A/A: false alarms / PASS / "
             "INCONCLUSIVE | known slowdown flagged | paired sd (A/A rounds) |", "|---|---|---|---|---|---|---|"]
    for (rig, metric), r in sorted(newest.items()):
        designs = r["designs"].items() or [("-", None)]
        for profile, d in designs:
            if d is None:
                lines.append(f"| {rig} `{metric}` | - (set {r['set']}: an older rule, regenerate) | - | {pct(r['asked'])} "
                             f"| - | - | {100 * r['paired_sd']:.2f} % ({r['rounds']}) |")
                continue
            aa, slow = d.get("aa_rates") or {}, d.get("slowdown_rates")
            flagged = "-" if not slow else f"{pct(slow['REGRESSED'])} ({pct(r['slowdown'], signed=True)} change)"
            seen = "none up to x148" if d["d_worse_by"] is None else pct(d["d_worse_by"])
            lines.append(f"| {rig} `{metric}` | {profile} ({d['describe']}) | {seen} | "
                         f"{pct(d.get('asked_min_effect', r['asked']))} | "
                         f"{pct(d['false_alarm_rate'])} / {pct(aa.get('PASS'))} / {pct(aa.get('INCONCLUSIVE'))} | "
                         f"{flagged} | {100 * r['paired_sd']:.2f} % ({r['rounds']}) |")
    return "\n".join(lines)


def night_rounds(result_set, metric, direction):
    """A committed night's rounds of `metric` as worse-oriented log ratios, its arm axis found (arm or revision)
    and checked to be one build on both sides (sensitivity_sets.check_design)."""
    return [w for w, _ in night_round_runs(result_set, metric, direction)]


def night_round_runs(result_set, metric, direction):
    """[(worse-oriented log ratio, (baseline Run, candidate Run))] of a committed night (night_rounds)."""
    varying = [a for a in sensitivity_sets.arm_values(result_set) if a in sensitivity_sets.ARM_AXES]
    if len(varying) != 1:
        raise components.SensitivityError(f"{result_set.name}: not a night of one build on both sides (its cells "
                                           f"vary {sorted(sensitivity_sets.arm_values(result_set)) or 'nothing'})")
    values = sensitivity_sets.check_design(result_set, varying[0], "A/A")
    return [(stats.orient(math.log(b.median / a.median), direction), (a, b))
            for a, b in sensitivity_sets.rounds_of(result_set, varying[0], values, metric)
            if a.median > 0 and b.median > 0]


def covariate_table(results_root, draws=DRAWS, seed=gate_power.SEED, roots=None):
    """analysis/README.md's table of variance reduction by covariates (analysis/sensitivity/covariates.py): per gated design with
    nights and the metrics it decides on (a fixed design: its rates), each covariate's median-night D without and
    with the adjustment fitted on the other nights, and whether it is kept (D shrinks by >= 15 %)."""
    pct = lambda x: "-" if x is None or not math.isfinite(x) else f"{100 * x:.1f} %"  # noqa: E731
    lines = ["| rig, metric | gated profile (rounds) | covariate | nights (rounds) | catches >= on a median night: "
             "without / with | shrink | worth keeping |", "|---|---|---|---|---|---|---|"]
    for rig, reg in sorted(registry.load(os.path.dirname(os.path.abspath(results_root))).items()):
        for profile, names in sorted(reg.nights.items()):
            sets = [resultsets.load_run(os.path.join(results_root, "baselines", name)) for name in names]
            effects = profile_effects(sets[0].first_ok(), profile, roots)
            designs = {}
            for metric, decl in sorted(gated_metrics(sets[0]).items()):
                if not decl.get("zero_possible"):
                    asked = effects.get(metric, thresholds.DEFAULT_MIN_EFFECT)
                    designs[metric] = (decl, asked, gated_design(rig, profile, metric, asked, roots))
            # The metrics the design decides on (a sequential one's), else its rates: the rows a reader needs.
            decided = {m for m, (_, _, d) in designs.items() if d.sequential}
            for metric, (decl, asked, design) in designs.items():
                if metric not in decided if decided else not metric.endswith("_rate"):
                    continue
                for name in covariates.COVARIATES:
                    found = []
                    for result_set in sets:
                        rounds = night_round_runs(result_set, metric, decl["direction"])
                        x = [covariates.round_difference(name, a.noise, b.noise) for _, (a, b) in rounds]
                        if len(rounds) >= nights.MIN_ROUNDS and None not in x:
                            found.append(covariates.CovariateNight(result_set.name, tuple(w for w, _ in rounds),
                                                                   tuple(x)))
                    head = f"| {rig} `{metric}` | {profile} ({design.describe()}) | {name} |"
                    if len(found) < 2:
                        lines.append(f"{head} {len(found)} | - | - | fewer than two nights recorded it |")
                        continue
                    r = covariates.reduction(name, found, design, gate_power.to_log(asked, decl["direction"]),
                                             decl["direction"], draws, seed)
                    rounds_text = ", ".join(str(len(n.worse_log_ratios)) for n in found)
                    lines.append(f"{head} {r.nights} ({rounds_text}) | {pct(r.without)} / {pct(r.with_covariate)} | "
                                 f"{pct(r.shrink)} | {r.verdict()} |")
    return "\n".join(lines)


def night_promises(results_root, draws=DRAWS, seed=gate_power.SEED, roots=None):
    """[(rig, metric, profile, design, asked, Promise or the reason there is none)] of every gated design whose
    rig.toml names its nights ([sensitivity] nights), over those nights (analysis/sensitivity/nights.py)."""
    out = []
    for rig, reg in sorted(registry.load(os.path.dirname(os.path.abspath(results_root))).items()):
        for profile, names in sorted(reg.nights.items()):
            sets = [resultsets.load_run(os.path.join(results_root, "baselines", name)) for name in names]
            first = sets[0].first_ok()
            effects = profile_effects(first, profile, roots)
            for metric, decl in sorted(gated_metrics(sets[0]).items()):
                if decl.get("zero_possible"):
                    continue
                asked = effects.get(metric, thresholds.DEFAULT_MIN_EFFECT)
                design = gated_design(rig, profile, metric, asked, roots)
                found, why = [], []
                for result_set in sets:
                    try:
                        found.append(nights.night(result_set.name, night_rounds(result_set, metric, decl["direction"])))
                    except (nights.NightsError, components.SensitivityError) as e:
                        why.append(str(e))
                if not found:
                    out.append((rig, metric, profile, design, asked, "; ".join(why) or "no night"))
                    continue
                out.append((rig, metric, profile, design, asked,
                            nights.promise(found, design, gate_power.to_log(asked, decl["direction"]),
                                           decl["direction"], draws, seed)))
    return out


NIGHTS_FILE = "nights.json"  # results/baselines/: what each gated design promises, for the site's Sensitivity page
NIGHTS_KIND = "tunelab.night_promises"


def nights_doc(promises):
    """results/baselines/nights.json of night_promises(): each gated design's D on a median and a noisy night, the
    nights behind it and its out-of-sample verdict (the site reads it; //tools:gate_power_test holds it to a fresh
    computation). Fractions to 6 digits, so a regeneration on another machine writes the same bytes."""
    num = lambda x: None if x is None or not math.isfinite(x) else round(float(x), 6)  # noqa: E731
    rows = []
    for rig, metric, profile, design, asked, p in promises:
        row = {"rig": rig, "metric": metric, "profile": profile, "design": design.describe(), "asked": num(asked)}
        if isinstance(p, str):
            row["none"] = p
        else:
            row.update(nights=list(p.nights), rounds_per_night=list(p.rounds_per_night), sd_median=num(p.sd_median),
                       sd_noisy=num(p.sd_noisy), median_worse_by=num(p.median_worse_by),
                       noisy_worse_by=num(p.noisy_worse_by), held_share=num(p.held_share), verdict=p.verdict())
        rows.append(row)
    return {"kind": NIGHTS_KIND, "schema_version": 1,
            "regenerate": "bazel run //tools:sensitivity -- --write-nights (after promoting a night or a set)",
            "promises": rows}


def nights_table(results_root, draws=DRAWS, promises=None):
    """analysis/README.md's table of what each gated design promises over the nights recorded: D (a fraction worse, at
    95 %) on a median and on a noisy night (the 80th percentile of the nights' paired sd), the nights behind it
    and on how many of them, each left out in turn, the D made from the others was caught >= 90 % of the time.
    promises: night_promises() computed already."""
    pct = lambda x: "-" if x is None or not math.isfinite(x) else f"{100 * x:.1f} %"  # noqa: E731
    lines = ["| rig, metric | gated profile (rounds) | nights (rounds) | paired sd: median / noisy night | "
             "catches >= on a median night | on a noisy night | out of sample |", "|---|---|---|---|---|---|---|"]
    for rig, metric, profile, design, asked, p in promises or night_promises(results_root, draws):
        if isinstance(p, str):
            lines.append(f"| {rig} `{metric}` | {profile} ({design.describe()}) | - | - | - | - | {p[:120]} |")
            continue
        rounds = ", ".join(str(n) for n in p.rounds_per_night)
        lines.append(f"| {rig} `{metric}` | {profile} ({design.describe()}) | {len(p.nights)} ({rounds}) | "
                     f"{pct(p.sd_median)} / {pct(p.sd_noisy)} | {pct(p.median_worse_by)} | {pct(p.noisy_worse_by)} | "
                     f"{p.verdict()} |")
    return "\n".join(lines)
