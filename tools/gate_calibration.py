"""Calibrates the regression gate on this machine: false alarms on A/A, detection of a known 5 % slowdown.

    bazel run //tools:gate_calibration [-- --draws 2000 --runs-per-side 5]

It calibrates the gate as the nightly uses it: inside one run, the two sides being two values of an axis
whose repetitions were interleaved (tools/gate.py split_run, the code behind `gate --run --axis`).
Runs two profiles of the calibration matrix (rigs/calibration/matrix.toml): gate_aa (one configuration as
arms a and b, repetitions interleaved) and gate_slowdown (the same cell with 0 % and 5 % injected
slowdown); and, unless --skip-cps, the gate_cps profile of the YARN CPS matrix: the CPU-bound smoke cell
10 times as it is (even vs odd repetitions: the A/A pair) and 10 times confined to one core (the slowdown).
Then, many times, it draws --runs-per-side runs of each side at random (without replacement) and
asks the gate (tools/gate.py, the same decision rule and minimum effect) whether the candidate regressed:
the share of A/A draws flagged is the false-alarm rate, the share of slowdown draws flagged the detection
rate. Draws reuse the same runs, so the rates describe these runs, not independent experiments; the
stored runs and calibration.json (written into the A/A run's folder) let anyone recompute them.
"""

import argparse
import datetime
import json
import os
import shutil
import sys

import numpy as np

from analysis import resultsets
from tools import gate, gate_confirm

CALIBRATION_MATRIX = "//rigs:calibration_matrix"
CPS_MATRIX = "//rigs:yarn_cps_matrix"


def run_profile(profile, workspace, target=CALIBRATION_MATRIX):
    bazel = shutil.which("bazel") or os.path.join(workspace, "bazelw")
    argv = [bazel, "run", target, "--", "--profile", profile, "--no-next-steps"]
    print(f"running {' '.join(argv[1:])}", flush=True)
    run_dir, status, output = gate_confirm.run_matrix(argv, workspace)
    # Exit 1 = some cells failed or were invalid: still a run; arms() uses its ok repetitions and says so.
    if status not in (0, 1) or not run_dir:
        raise RuntimeError(f"{profile} failed (exit {status}):\n{output[-3000:]}")
    return run_dir


def arms(result_set, axis):
    """{axis value: [ok docs]}: the run split along `axis` as the within-run gate splits it (the axis removed
    from the params, so the arms' cells pair). Only cells present in every arm are kept: the draws must
    compare like with like."""
    values = list(dict.fromkeys(d["cell"]["params"][axis] for d in result_set.docs))
    out = {}
    for value in values:
        _, side = gate.split_run(result_set, axis, next(v for v in values if v != value), value)
        out[value] = [d for d in side.docs if d["status"] == "ok"]
    key = lambda d: tuple(sorted(d["cell"]["params"].items()))  # noqa: E731
    common = set.intersection(*({key(d) for d in docs} for docs in out.values()))
    if len(common) != 1:
        raise RuntimeError(f"{result_set.name}: expected one cell per {axis} value, found {len(common)} in common")
    return {value: [d for d in docs if key(d) in common] for value, docs in out.items()}


def by_parity(docs):
    """Repetitions split into even and odd: two interleaved arms of one configuration (an A/A pair)."""
    return ([d for d in docs if d["cell"]["repetition"] % 2 == 0],
            [d for d in docs if d["cell"]["repetition"] % 2 == 1])


def flagged_share(base_docs, cand_docs, k, draws, rng, thresholds, either_direction=False):
    """Share of draws (k runs a side) the gate calls regressed (or, with either_direction, regressed or
    improved: an A/A pair has no right direction), and the median change it measured."""
    flagged, changes = 0, []
    for _ in range(draws):
        a = [base_docs[i] for i in rng.choice(len(base_docs), k, replace=False)]
        b = [cand_docs[i] for i in rng.choice(len(cand_docs), k, replace=False)]
        checks = gate.gate(resultsets.ResultSet("a", "", {}, a), resultsets.ResultSet("b", "", {}, b), thresholds, k,
                           resamples=0)
        flagged += any(c.status != "pass" if either_direction else c.regressed for c in checks)
        changes.append(checks[0].comparison.change)
    return flagged / draws, float(np.median(changes))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--runs-per-side", type=int, default=5)
    parser.add_argument("--aa-run", help="reuse a stored gate_aa run (folder) instead of running it")
    parser.add_argument("--slowdown-run", help="reuse a stored gate_slowdown run (folder)")
    parser.add_argument("--cps-run", help="reuse a stored gate_cps run (folder) of the YARN CPS matrix")
    parser.add_argument("--skip-cps", action="store_true", help="calibrate on the calibration rig only")
    parser.add_argument("--seed", type=int, default=20261121)
    args = parser.parse_args(argv)
    workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY", os.getcwd())
    runfiles = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
    results_root = os.path.join(workspace, "results")
    aa_folder = args.aa_run or run_profile("gate_aa", workspace)
    slow_folder = args.slowdown_run or run_profile("gate_slowdown", workspace)
    aa_set = resultsets.resolve(aa_folder, results_root)
    aa = arms(aa_set, "arm")
    slow = arms(resultsets.resolve(slow_folder, results_root), "injected_slowdown_pct")
    thresholds = gate.min_effects([runfiles, workspace], aa["a"])
    rng = np.random.default_rng(args.seed)
    k = args.runs_per_side
    false_alarms, aa_change = flagged_share(aa["a"], aa["b"], k, args.draws, rng, thresholds, either_direction=True)
    detected, slow_change = flagged_share(slow["0"], slow["5"], k, args.draws, rng, thresholds)
    full_aa = gate.gate(resultsets.ResultSet("a", "", {}, aa["a"]), resultsets.ResultSet("b", "", {}, aa["b"]),
                        thresholds, k)
    full_slow = gate.gate(resultsets.ResultSet("0", "", {}, slow["0"]), resultsets.ResultSet("5", "", {}, slow["5"]),
                          thresholds, k)
    result = {
        "kind": "tunelab.gate_calibration",
        "generated_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "runs": {"a_a": aa_folder, "slowdown": slow_folder},
        "runs_per_side": k, "draws": args.draws, "seed": args.seed, "min_effect": thresholds,
        "a_a": {"runs": [len(aa["a"]), len(aa["b"])], "false_alarm_rate": false_alarms,
                "median_change_of_draws": aa_change, "all_runs_verdict": full_aa[0].status,
                "all_runs_change": full_aa[0].comparison.change},
        "slowdown_5pct": {"runs": [len(slow["0"]), len(slow["5"])], "detection_rate": detected,
                          "median_change_of_draws": slow_change, "all_runs_verdict": full_slow[0].status,
                          "all_runs_change": full_slow[0].comparison.change},
        "targets": {"false_alarm_rate_max": 0.01, "detection_rate_min": 0.95, "runs_per_side_max": 5},
    }
    result["pass"] = false_alarms <= 0.01 and detected >= 0.95 and k <= 5
    if not args.skip_cps:
        cps_folder = args.cps_run or run_profile("gate_cps", workspace, CPS_MATRIX)
        cps = arms(resultsets.resolve(cps_folder, results_root), "pinning")
        even, odd = by_parity(cps["none"])
        cps_thresholds = gate.min_effects([runfiles, workspace], cps["none"])
        cps_k = min(k, len(even), len(odd))
        # One A/A comparison (5 vs 5 interleaved runs of one configuration): a verdict, not a rate.
        full = gate.gate(resultsets.ResultSet("even", "", {}, even), resultsets.ResultSet("odd", "", {}, odd),
                         cps_thresholds, cps_k)
        cps_detected, cps_change = flagged_share(cps["none"], cps["one_core"], cps_k, args.draws, rng, cps_thresholds)
        cps_aa_pass = all(c.status == "pass" for c in full)  # either direction is a false alarm
        result["cps"] = {"run": cps_folder, "runs": {"all_cores": len(cps["none"]), "one_core": len(cps["one_core"])},
                         "a_a_even_vs_odd": {c.metric: {"status": c.status, "change": c.comparison.change,
                                                        "p_holm": c.comparison.p_adjusted} for c in full},
                         "one_core_detection_rate": cps_detected, "one_core_median_change": cps_change}
        result["pass"] = result["pass"] and cps_aa_pass and cps_detected >= 0.95
        print(f"CPS A/A (even vs odd of {len(cps['none'])} runs, {cps_k} a side): "
              + ", ".join(f"{c.metric} {c.status} ({c.comparison.change:+.2%})" for c in full))
        print(f"CPS one core taken away: detected in {cps_detected:.2%} of draws of {cps_k} vs {cps_k} (median change "
              f"{cps_change:+.2%})")
    out = os.path.join(aa_set.path, "calibration.json")
    with open(out, "w") as f:
        json.dump(result, f, indent=2)
    print(f"A/A: {len(aa['a'])}+{len(aa['b'])} runs; false alarms in {false_alarms:.2%} of {args.draws} draws of "
          f"{k} vs {k} (target <= 1%); all runs: {full_aa[0].status} ({full_aa[0].comparison.change:+.2%})")
    print(f"5% slowdown: {len(slow['0'])}+{len(slow['5'])} runs; detected in {detected:.2%} of draws (median change "
          f"{slow_change:+.2%}); all runs: {full_slow[0].status} ({full_slow[0].comparison.change:+.2%})")
    print(f"{'PASS' if result['pass'] else 'FAIL'}; wrote {out}")
    return 0 if result["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
