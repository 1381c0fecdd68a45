"""Calibrates the sequential policy against the fixed design by resampling recorded runs: a benchmark that
writes results, not a timed test.

    bazel run //tools:sequential_calibration [-- --draws 4000 --min 3 --max 8 --out-set NAME]

For each rig with recorded sets, an A/A pair (one configuration as two interleaved arms) and a 5 % slowdown
(two arms, the second slowed), both designs are run many times on the recorded rounds in random order,
without replacement (a round = one run of each arm, measured next to each other: the pairing the
interleaved runner gives both sides of a comparison):
- fixed: 5 rounds, the gate's rule (tools/gate.py: Welch's t on run medians, p < 0.05, worse by more than
  the metric's minimum effect);
- sequential: looks from --min to --max rounds (analysis/sequential.py), stopping at the first decided look;
  a comparison still undecided at --max is judged by the fixed rule on all its rounds, as the gate does.
A false alarm is an A/A draw flagged either way; a detection a slowdown draw flagged as a regression. Draws
reuse the recorded runs, so the rates describe these runs, not independent experiments.

Writes sequential_calibration.json, {"<rig>": {"fixed": {false_alarm_rate, detection_rate, mean_rounds,
p95_rounds}, "sequential": {...}, ...}} (rates as fractions), into --out-set (a promoted set under
results/baselines/). The slowdowns are real: the calibration rig's injected spin, and patched builds of the
YARN scheduler and the NameNode that do 1/19 more work (third_party/hadoop/patches/*-calibration-slowdown).
"""

import argparse
import collections
import datetime
import json
import math
import os
import sys

import numpy as np

from analysis import resultsets, sequential, stats, thresholds

# (rig, metric, A/A set and its arm axis, slowdown set, its axis and (baseline, slowed) values). The YARN and
# NameNode slowdowns are real code made slower (third_party/hadoop/patches/*-calibration-slowdown).
STUDIES = (
    ("calibration", "cpu_loop_rate", "calibration-gate-aa-20261124-2vcpu", "arm",
     "calibration-gate-slowdown-20261124-2vcpu", "injected_slowdown_pct", ("0", "5")),
    ("yarn_cps", "container_allocation_rate", "yarn_cps-sequential-aa-20261124-2vcpu", "revision",
     "yarn_cps-sequential-slowdown-20261124-2vcpu", "variant", ("stock", "patched:yarn-calibration-slowdown")),
    ("namenode", "create_rate", "namenode-sequential-aa-20261124-2vcpu", "revision",
     "namenode-sequential-slowdown-20261124-2vcpu", "variant", ("stock", "patched:nn-calibration-slowdown")),
)
FIXED_ROUNDS = 5
TARGETS = {"false_alarm_rate_max": 0.01, "detection_rate_min": 0.95, "mean_rounds_saved_min": 0.40}


def arm_medians(result_set, axis, metric, values=None):
    """{arm value: {round: run median}} of the ok runs of the set's one cell per arm value."""
    out = collections.defaultdict(dict)
    for d in result_set.docs:
        value = d["cell"]["params"].get(axis)
        if d["status"] != "ok" or value is None or (values and value not in values):
            continue
        samples = [s["value"] for s in d["samples"] if s["metric"] == metric]
        if samples:
            out[value][d["cell"]["repetition"]] = float(np.median(samples))
    # The baseline arm first: the given order, else the matrix's (its first value is the baseline), else as seen.
    declared = [str(v) for v in (result_set.manifest.get("matrix", {}).get("axes") or {}).get(axis, [])]
    order = list(values) if values else list(dict.fromkeys(declared + list(out)))
    arms = [v for v in order if v in out]
    if len(arms) != 2:
        raise ValueError(f"{result_set.name}: expected two arms on {axis}, found {sorted(out)}")
    return out[arms[0]], out[arms[1]]


def rounds_of(baseline, candidate):
    """[(baseline, candidate)] run medians of the rounds both arms measured."""
    return [(baseline[r], candidate[r]) for r in sorted(set(baseline) & set(candidate))]


def fixed_flag(pairs, min_effect, direction):
    """The gate's rule on these rounds: "regressed", "improved" or "pass"."""
    comparison = stats.compare([[a] for a, _ in pairs], [[b] for _, b in pairs], resamples=0)
    if math.isnan(comparison.p_value) or comparison.p_value >= stats.ALPHA or abs(comparison.change) <= min_effect:
        return "pass"
    worse = comparison.change < 0 if direction == "higher_is_better" else comparison.change > 0
    return "regressed" if worse else "improved"


def simulate(pairs, draws, rng, min_effect, direction, low, high, first_share=sequential.FIRST_LOOK_SHARE):
    """Per design: [(flag, rounds)] over `draws` sequences of recorded rounds in random order, without
    replacement (a round drawn twice would understate the noise and inflate both designs' false alarms)."""
    out = {"fixed": [], "sequential": []}
    pairs = np.asarray(pairs, dtype=float)
    if len(pairs) < max(high, FIXED_ROUNDS):
        raise ValueError(f"{len(pairs)} recorded rounds: need at least {max(high, FIXED_ROUNDS)} (--max and the fixed "
                         f"design's {FIXED_ROUNDS}) to draw without replacement")
    for _ in range(draws):
        seq = pairs[rng.permutation(len(pairs))[:max(high, FIXED_ROUNDS)]]
        out["fixed"].append((fixed_flag(seq[:FIXED_ROUNDS], min_effect, direction), FIXED_ROUNDS))
        stop = sequential.replay({r: a for r, (a, _) in enumerate(seq[:high])},
                                 {r: b for r, (_, b) in enumerate(seq[:high])}, high, min_effect, low, high,
                                 first_share=first_share)
        if stop.state == sequential.DIFFERENT:
            worse = stop.change < 0 if direction == "higher_is_better" else stop.change > 0
            flag = "regressed" if worse else "improved"
        elif stop.state == sequential.EQUIVALENT:
            flag = "pass"
        else:
            flag = fixed_flag(seq[:stop.rounds], min_effect, direction)
        out["sequential"].append((flag, stop.rounds))
    return out


def rates(aa, slow):
    rounds = [r for _, r in aa] + [r for _, r in slow]
    return {"false_alarm_rate": sum(f != "pass" for f, _ in aa) / len(aa),
            "detection_rate": sum(f == "regressed" for f, _ in slow) / len(slow),
            "mean_rounds": float(np.mean(rounds)), "p95_rounds": float(np.percentile(rounds, 95)),
            "a_a_mean_rounds": float(np.mean([r for _, r in aa])),
            "slowdown_mean_rounds": float(np.mean([r for _, r in slow]))}


def calibrate(study, baselines, draws, low, high, seed, first_share=sequential.FIRST_LOOK_SHARE):
    rig, metric, aa_name, aa_axis, slow_name, slow_axis, slow_values = study
    aa_set = resultsets.resolve(os.path.join(baselines, aa_name), baselines)
    decl = aa_set.metrics()[metric]
    min_effect = thresholds.for_workload(aa_set.first_ok()["provenance"]["workload"]["id"]).get(
        metric, thresholds.DEFAULT_MIN_EFFECT)
    aa_pairs = rounds_of(*arm_medians(aa_set, aa_axis, metric))
    slow_set = resultsets.resolve(os.path.join(baselines, slow_name), baselines)
    slow_pairs = rounds_of(*arm_medians(slow_set, slow_axis, metric, slow_values))
    source = f"{slow_name} ({slow_axis} {slow_values[0]} vs {slow_values[1]})"
    rng = np.random.default_rng(seed)
    aa = simulate(aa_pairs, draws, rng, min_effect, decl["direction"], low, high, first_share)
    slow = simulate(slow_pairs, draws, rng, min_effect, decl["direction"], low, high, first_share)
    logs = np.log([b / a for a, b in aa_pairs])
    result = {design: rates(aa[design], slow[design]) for design in ("fixed", "sequential")}
    result.update({
        "metric": metric, "min_effect": min_effect, "a_a": {"set": aa_name, "rounds": len(aa_pairs),
                                                          "paired_log_ratio_sd": float(np.std(logs, ddof=1))},
        "slowdown": {"source": source, "rounds": len(slow_pairs),
                     "median_change": float(np.median([b / a - 1 for a, b in slow_pairs]))},
    })
    saved = 1 - result["sequential"]["mean_rounds"] / result["fixed"]["mean_rounds"]
    result["rounds_saved"] = saved
    seq = result["sequential"]
    fixed = result["fixed"]
    result["same_or_better_error_rates_than_fixed"] = (seq["false_alarm_rate"] <= fixed["false_alarm_rate"]
                                                       and seq["detection_rate"] >= fixed["detection_rate"])
    result["meets_targets"] = (seq["false_alarm_rate"] <= TARGETS["false_alarm_rate_max"]
                               and seq["detection_rate"] >= TARGETS["detection_rate_min"]
                               and saved >= TARGETS["mean_rounds_saved_min"])
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=4000)
    parser.add_argument("--min", type=int, default=3, help="the sequential policy's first look (rounds)")
    parser.add_argument("--max", type=int, default=8, help="the sequential policy's most rounds")
    parser.add_argument("--seed", type=int, default=20261124)
    parser.add_argument("--first-look-share", type=float, default=sequential.FIRST_LOOK_SHARE,
                        help="the share of alpha the first look spends (the runner's: "
                             f"{sequential.FIRST_LOOK_SHARE}); to compare designs")
    parser.add_argument("--out-set", default="yarn_cps-sequential-aa-20261124-2vcpu",
                        help="the promoted set (results/baselines/NAME) to write sequential_calibration.json into")
    parser.add_argument("--rig", action="append", default=[], help="calibrate only these rigs (repeatable)")
    args = parser.parse_args(argv)
    if not sequential.MIN_ROUNDS <= args.min <= args.max or args.draws < 100 or not 0 < args.first_look_share < 1:
        parser.error(f"need {sequential.MIN_ROUNDS} <= --min <= --max, --draws >= 100, 0 < --first-look-share < 1")
    workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY", os.getcwd())
    baselines = os.path.join(workspace, "results", "baselines")
    out_dir = os.path.join(baselines, args.out_set)
    if not os.path.isfile(os.path.join(out_dir, "manifest.json")):
        print(f"error: {out_dir} is not a promoted set", file=sys.stderr)
        return 2
    doc = {"kind": "tunelab.sequential_calibration",
           "generated_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "design": {"min": args.min, "max": args.max, "alpha": sequential.ALPHA,
                      "first_look_share": args.first_look_share, "fixed_rounds": FIXED_ROUNDS},
           "draws": args.draws, "seed": args.seed, "targets": TARGETS}
    for study in STUDIES:
        if args.rig and study[0] not in args.rig:
            continue
        try:
            doc[study[0]] = calibrate(study, baselines, args.draws, args.min, args.max, args.seed,
                                      args.first_look_share)
        except (resultsets.ResultSetError, ValueError, KeyError) as e:
            print(f"error: {study[0]}: {e}", file=sys.stderr)
            return 2
        r = doc[study[0]]
        for design in ("fixed", "sequential"):
            x = r[design]
            print(f"{study[0]:12} {design:10} false alarms {x['false_alarm_rate']:6.2%}  detection "
                  f"{x['detection_rate']:6.2%}  rounds mean {x['mean_rounds']:.2f} (A/A {x['a_a_mean_rounds']:.2f}, "
                  f"slowdown {x['slowdown_mean_rounds']:.2f})  p95 {x['p95_rounds']:g}")
        print(f"{'':12} rounds saved {r['rounds_saved']:+.1%}; meets the targets: {r['meets_targets']} "
              f"(paired sd {r['a_a']['paired_log_ratio_sd']:.2%}, minimum effect {r['min_effect']:.0%}; "
              f"slowdown {r['slowdown']['source']})")
    path = os.path.join(out_dir, "sequential_calibration.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
