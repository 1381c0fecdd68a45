"""The sensitivity calibrator: what each gated metric's gate catches on this machine, found by running the gate.

    bazel run //tools:sensitivity -- --rig R [--budget 15m] [--from-set SET [--slowdown-set SET]] [--rounds N]
    bazel run //tools:sensitivity -- --table
    bazel run //tools:sensitivity -- --write-nights   # results/baselines/nights.json, for the site

It reads (--from-set; by default the rig's committed sets named in its rigs/<rig>/rig.toml) or records (--record:
the rig's A/A and slowdown profiles, as many interleaved rounds as --budget allows) an A/A set, one build as
both sides of an arm axis, and, where the rig has one, a known-slowdown set. For every metric the rig gates:
- the A/A rounds' log ratios (positive = worse), which the gate resamples to state D at any comparison's design,
  and the arms' bias with its 95 % interval;
- per gated profile (its rounds and policy read from the rig's matrix, gated_design; --rounds adds a fixed
  design): the stated D, the smallest true regression the gate's own rule (analysis/gate/power.py, the one
  analysis/gate/decision.py applies) flags REGRESSED in 95 % of designs resampled from the A/A rounds; the
  false alarms at zero, how A/A designs end (PASS, INCONCLUSIVE), and the share of the known slowdown's
  resampled designs flagged;
- the variance components by level (rounds, runs inside a round, windows inside a run) with each level's cost,
  after Kalibera and Jones, and a modelled allocation within --budget (analysis/sensitivity/components.py: advice only).
It writes sensitivity.json (schema 2: {"<rig>": {"<metric>": {...}}}) into the A/A set's folder (a promoted set
under results/baselines/, or a fresh run to promote) through the one atomic writer. The gate reads the newest
committed figure of the present rule for each rig and metric; //tools/sensitivity:gate_power_test holds them to it.

Refused with the reason, before any resampling: a set that is not an A/A design (its sides differ in anything
but the arm axis), a slowdown set whose sides are one build (an A/A design), fewer than 6 rounds, a metric the
rig does not gate, a budget shorter than one round.
"""

import argparse
import dataclasses
import datetime
import math
import os
import re
import subprocess
import shlex
import sys
import tempfile

import numpy as np
from scipy import stats as sps

from results import safeio, store
from analysis import resultsets, stats, thresholds
from analysis.sensitivity import components
from analysis.sensitivity import figures as sensitivity_figures
from analysis.sensitivity import sets as sensitivity_sets
from analysis.gate import power as gate_power
from tools.sensitivity import tables
from tools.sensitivity.designs import gated_design, gated_metrics, load_registry, profile_effects

DRAWS = gate_power.DRAWS


def parse_budget(text):
    """Seconds of "900", "900s", "15m", "1.5h"; SensitivityError otherwise."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text or "")
    if not m or float(m.group(1)) <= 0:
        raise components.SensitivityError(f"--budget {text!r}: expected a duration such as 900s, 15m or 1.5h")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]


def calibrate_metric(metric, decl, aa_pairs, slow_pairs, comps, min_effect, budget_s, designs, draws, seed):
    """One metric's entry of sensitivity.json: for each gated profile's design (`designs`, {profile: Design, or
    (Design, the effect that profile is asked)}), the stated D found by running the gate's rule on the A/A rounds
    resampled (analysis/gate/power.py), the false alarms at zero and the detection of the known slowdown there."""
    direction = decl["direction"]
    worse = [stats.orient(math.log(b.median / a.median), direction) for a, b in aa_pairs
             if a.median > 0 and b.median > 0]
    slow = [stats.orient(math.log(b.median / a.median), direction) for a, b in slow_pairs
            if a.median > 0 and b.median > 0] if slow_pairs is not None else None
    paired_sd = float(np.std(worse, ddof=1)) if len(worse) > 1 else 0.0
    per_design = {}
    for profile, design in designs.items():
        design, asked = design if isinstance(design, tuple) else (design, min_effect)
        asked_log = gate_power.to_log(asked, direction)
        noise = gate_power.resampled_noise(worse, design, draws, seed)
        power = gate_power.stated_d(noise, design, asked_log, direction)
        entry = {"design": design.to_json(), "describe": design.describe(), **power.to_json(direction),
                 "aa_rates": gate_power.rates(noise, design, asked_log, direction)}
        if asked != min_effect:
            entry["asked_min_effect"] = asked  # this profile's own (gate.toml [profile_min_effect.<profile>])
        if slow:
            # The recorded slowdown rounds as they are (not centred: the slowdown is the shift).
            raw = np.asarray(slow)[np.random.default_rng(seed + 1).integers(0, len(slow), (draws, design.rounds))]
            entry["slowdown_rates"] = gate_power.rates(raw, design, asked_log, direction)
        per_design[profile] = entry
    primary = per_design[next(iter(designs))]
    bias = float(np.mean(worse))
    bias_half = (float(sps.t.ppf(0.975, len(worse) - 1)) * paired_sd / math.sqrt(len(worse))) if len(worse) > 1 else 0.0
    entry = {
        "unit": decl["unit"], "direction": direction, "rule": gate_power.RULE, "resampling": gate_power.RESAMPLING,
        "aa_worse_log_ratios": worse,
        # The arms' mean difference (one build on both): an arm bias, with its 95 % t interval, worse-oriented.
        "aa_bias_log": {"mean": bias, "ci95": [bias - bias_half, bias + bias_half]},
        "asked_min_effect": min_effect, "designs": per_design,
        "mde": primary["d_log"] if primary["d_log"] is not None else gate_power.MAX_SHIFT,
        "mde_worse_by": primary["d_worse_by"], "paired_sd": paired_sd,
        "false_alarm_rate": primary["false_alarm_rate"],
        "detection_rate": (primary.get("slowdown_rates") or {}).get("REGRESSED"),
        "slowdown": float(np.median([math.expm1(stats.orient(w, direction)) for w in slow])) if slow else None,
        "components": comps.to_json(),
        "design": {"fixed": {"rounds": primary["design"]["rounds"]},
                   # A model's advice (analysis/sensitivity/components.py's components and formula), not the gate's figure.
                   "allocation_modelled": components.allocation(comps, budget_s) if paired_sd > 0 else None},
        "budget_s": budget_s, "rounds": len(worse), "slowdown_rounds": len(slow) if slow else 0,
        "noise_band": sensitivity_sets.noise_band([r for pair in aa_pairs for r in pair]),
    }
    return entry


def describe(rig, metric, e):
    lines = [f"{rig} {metric}: paired sd {e['paired_sd']:.2%} over {e['rounds']} A/A rounds (log); arm bias "
             f"{e['aa_bias_log']['mean']:+.2%} (95 % CI {e['aa_bias_log']['ci95'][0]:+.2%}..{e['aa_bias_log']['ci95'][1]:+.2%})"]
    for profile, d in e["designs"].items():
        slow = d.get("slowdown_rates")
        seen = "-" if d["d_worse_by"] is None else f"{d['d_worse_by']:.1%} worse"
        aa = d["aa_rates"]
        lines.append(f"  {profile} ({d['describe']}): catches >= {seen} at {d['detection_at_d']:.1%}; asked "
                     f"{stats.fmt_effect(d.get('asked_min_effect', e['asked_min_effect']))}; A/A: false alarms "
                     f"{d['false_alarm_rate']:.1%}, "
                     f"PASS {aa['PASS']:.0%}, INCONCLUSIVE {aa['INCONCLUSIVE']:.0%}"
                     + (f"; the known slowdown ({_pct(e['slowdown'], signed=True)}) flagged {slow['REGRESSED']:.1%}"
                        if slow else ""))
    c = e["components"]["sd"]
    separable = {False: ", not independent: folded into runs", True: "", None: ""}[e["components"]["windows_separable"]]
    lines.append(f"  components (sd of log): rounds {c['rounds']:.2%}, runs {c['runs']:.2%}, windows {c['windows']:.2%} "
                 f"(x{e['components']['windows_per_run']:.0f} a run{separable}); a round costs "
                 f"{e['components']['round_s']:.0f} s")
    return "\n".join(lines)


def _pct(x, signed=False):
    return "-" if x is None else (f"{x:+.1%}" if signed else f"{x:.1%}")


def record(study, kind, workspace, repetitions):
    """Runs the rig's A/A or slowdown profile (`kind`: aa, slowdown) and returns its run folder."""
    bazel = os.path.join(workspace, "bazelw")
    design = study.aa if kind == "aa" else study.slowdown
    argv = [bazel, "run", study.matrix, "--", "--profile", design["profile"], "--no-next-steps"]
    if repetitions:
        argv.append(f"--set=policy.repetitions={repetitions}")
    # Built first, so that a rig that does not build is said as such (not as a failed recording).
    built = subprocess.run([bazel, "build", study.matrix], cwd=workspace).returncode
    if built != 0:
        raise components.SensitivityError(f"{study.matrix} does not build (bazel build exit {built}): nothing "
                                           "recorded; fix the build first")
    with tempfile.TemporaryDirectory(prefix="tunelab-sensitivity-") as tmp:
        if design["axis"] == "revision":
            # One build as both revisions: the target's own runfiles as "accepted".
            package, name = study.matrix[2:].split(":")
            runfiles = os.path.join(workspace, "bazel-bin", package, name + ".runfiles", "tunelab")
            argv += ["--revision", f"accepted={runfiles}"]
        info_path = os.path.join(tmp, "run-info.json")
        print(f"recording {kind}: {' '.join(argv[1:])}", flush=True)
        status = subprocess.run(argv + [f"--run-info={info_path}"], cwd=workspace).returncode
        try:
            run_dir = safeio.read_json(info_path, 1 << 20).get("run_dir")
        except (OSError, ValueError, AttributeError):  # safeio.InputError is a ValueError
            run_dir = None
    if status not in (0, 1) or not run_dir:
        raise components.SensitivityError(f"recording the {kind} profile {design['profile']} failed (exit {status})")
    return run_dir


def read_existing(path):
    """The sensitivity.json already in the A/A set's folder ({} where none), which this run adds to. One that is
    not a valid sensitivity file is refused, never overwritten: it may be a committed figure someone broke."""
    if not os.path.lexists(path):
        return {}
    if os.path.islink(path) or not os.path.isfile(path):
        raise components.SensitivityError(f"{path} is not a regular file: refusing to write over it")
    try:
        sensitivity_figures.read_file(path)
    except components.SensitivityError as e:
        raise components.SensitivityError(f"{e}; refusing to overwrite it: restore it (git checkout -- {path}) "
                                           "or move it away") from None
    return sensitivity_figures.read_document(path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     epilog="Exit status: 0 written; 2 refused input (the reason printed).")
    parser.add_argument("--rig", help="a rig whose rigs/<rig>/rig.toml declares [sensitivity]")
    parser.add_argument("--table", action="store_true",
                        help="print analysis/README.md's three tables: every committed figure (newest per rig and metric), "
                             "what each gated design promises over the nights recorded, the covariates")
    parser.add_argument("--write-nights", action="store_true",
                        help=f"write results/baselines/{tables.NIGHTS_FILE}: what each gated design promises over the nights "
                             "recorded (the site's Sensitivity page reads it)")
    parser.add_argument("--profile", help="the A/A profile to record (default: the rig's, its rig.toml)")
    parser.add_argument("--budget", default="15m", help="wall time for recording, and the allocation's budget "
                                                         "(default 15m)")
    parser.add_argument("--from-set", help="an A/A set to read instead of the rig's committed one (a run folder, "
                                           "run id or baselines/NAME)")
    parser.add_argument("--slowdown-set", help="the known-slowdown set to read (default: the rig's committed one)")
    parser.add_argument("--record", action="store_true", help="record new A/A and slowdown sets within --budget")
    parser.add_argument("--metric", action="append", default=[], help="only these gated metrics (repeatable)")
    parser.add_argument("--rounds", type=int, help="also state D for a fixed design of this many rounds (the "
                                                  "gated profiles' own designs are always stated)")
    parser.add_argument("--draws", type=int, default=DRAWS, help=f"resampled designs (default {DRAWS})")
    parser.add_argument("--seed", type=int, default=components.SEED)
    parser.add_argument("--dry-run", action="store_true", help="print the figures, write nothing")
    args = parser.parse_args(argv)
    if not args.rig and not args.table and not args.write_nights:
        parser.error("give --rig RIG (or --table, or --write-nights)")
    workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY", os.getcwd())
    cwd = os.environ.get("BUILD_WORKING_DIRECTORY", os.getcwd())
    results_root = os.path.join(workspace, "results")
    try:
        return run(args, workspace, cwd, results_root)
    except (components.SensitivityError, resultsets.ResultSetError, thresholds.ThresholdError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def resolve(spec, cwd, results_root):
    here = os.path.join(cwd, spec)
    if os.path.isdir(here):
        return resultsets.load_run(here)
    named = os.path.join(results_root, "baselines", spec)
    return resultsets.load_run(named) if os.path.isdir(named) else resultsets.resolve(spec, results_root)


def set_name(result_set):
    """A set's folder name: what results/baselines/NAME and --from-set NAME call it."""
    return os.path.basename(os.path.normpath(result_set.path))


def run(args, workspace, cwd, results_root):
    """The calibrator's work for main(): read or record the sets, refuse what cannot be calibrated, compute
    and write the figures. Every refusal comes before any resampling (the issue's rule): the sets', the
    metrics' and the budget's checks all run in calibration_plan, before the first calibrate_metric."""
    if args.write_nights:
        path = store.write_side_document(os.path.join(results_root, "baselines"), tables.NIGHTS_FILE,
                                         tables.nights_doc(tables.night_promises(results_root, args.draws)))
        print(f"wrote {path}")
        return 0
    if args.table:
        print(tables.table(os.path.join(results_root, "baselines")))
        print()
        print(tables.nights_table(results_root, args.draws))
        print()
        print(tables.covariate_table(results_root, args.draws))
        return 0
    studies = load_registry()
    if args.rig not in studies:
        raise components.SensitivityError(f"--rig {args.rig}: no such rig declares [sensitivity] in its rig.toml "
                                           f"(rigs: {', '.join(sorted(studies))})")
    study = studies[args.rig]
    if args.profile:
        study = dataclasses.replace(study, aa=dict(study.aa, profile=args.profile))
    budget_s = parse_budget(args.budget)
    if (args.rounds is not None and args.rounds < 3) or args.draws < 100:
        raise components.SensitivityError("need --rounds >= 3 and --draws >= 100")
    if args.record and (args.from_set or args.slowdown_set):
        raise components.SensitivityError("--record records new sets; --from-set/--slowdown-set read stored ones")
    aa_set, slow_set = calibration_sets(args, study, budget_s, workspace, cwd, results_root)
    chosen, plan, slow_values, first = calibration_plan(args, study, aa_set, slow_set, budget_s)
    doc = {}
    for metric, (aa_pairs, slow_pairs, comps, asked, designs) in plan.items():
        entry = calibrate_metric(metric, chosen[metric], aa_pairs, slow_pairs, comps, asked, budget_s, designs,
                                 args.draws, args.seed)
        entry.update({
            "sets": {"aa": set_name(aa_set), "slowdown": set_name(slow_set) if slow_set else None},
            "slowdown_design": (f"{study.slowdown['axis']} {slow_values[0]} vs {slow_values[1]}" if slow_values
                                else None),
            "profile": (aa_set.manifest.get("matrix") or {}).get("profile"), "gated_profiles": list(study.gated),
            "cell": {k: v for k, v in first["cell"]["params"].items() if k != study.aa["axis"]},
            "workload": {k: first["provenance"]["workload"][k] for k in ("id", "sha256")},
            "measured_at": str(first.get("started_at", ""))[:10], "host": first["provenance"]["host"]["host"]["host_id"],
            "generated_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "draws": args.draws, "seed": args.seed,
        })
        doc[metric] = entry
        print(describe(args.rig, metric, entry), flush=True)
    return write_figures(args, aa_set, slow_set, doc, results_root)


def calibration_sets(args, study, budget_s, workspace, cwd, results_root):
    """The A/A set and the slowdown set (or None) the figures come from: recorded now (--record, as many rounds
    as the budget pays for at the committed figures' cost of a round) or the stored ones named."""
    if args.record:
        rounds = None
        committed = sensitivity_figures.committed(os.path.join(results_root, "baselines"), args.rig)
        if committed:
            round_s = max(f.round_s for f in committed.values())
            parts = 2 if study.slowdown else 1
            rounds = int(budget_s / parts // round_s)
            if rounds < components.MIN_ROUNDS:
                raise components.SensitivityError(
                    f"--budget {args.budget} fits {rounds} rounds of {'each set' if parts == 2 else 'the A/A set'} "
                    f"(a round costs ~{round_s:.0f} s here): need {components.MIN_ROUNDS}")
        else:
            print(f"note: {args.rig} has no committed sensitivity figure, so a round's cost is unknown: recording the "
                  "profiles' own repetitions; --budget sizes the allocation only", flush=True)
        aa_set = resultsets.load_run(record(study, "aa", workspace, rounds))
        slow_set = resultsets.load_run(record(study, "slowdown", workspace, rounds)) if study.slowdown else None
    else:
        if not (args.from_set or study.aa.get("set")):
            raise components.SensitivityError(f"{args.rig} has no committed A/A set yet: --record one, or give "
                                               "--from-set")
        aa_set = resolve(args.from_set or study.aa["set"], cwd, results_root)
        slow_spec = args.slowdown_set or (study.slowdown.get("set") if not args.from_set else None)
        slow_set = resolve(slow_spec, cwd, results_root) if slow_spec else None
    return aa_set, slow_set


def calibration_plan(args, study, aa_set, slow_set, budget_s):
    """Every check of the sets, the metrics and the budget, before any resampling: the metrics chosen, per
    metric its rounds, variance components, asked effect and gated designs, the slowdown's two values and the
    A/A set's first result."""
    rig = (aa_set.manifest.get("matrix") or {}).get("rig")
    if rig != args.rig:
        raise components.SensitivityError(f"{aa_set.name} is a {rig} set, not {args.rig}")
    aa_values = sensitivity_sets.check_design(aa_set, study.aa["axis"], "A/A")
    slow_values = None
    if slow_set is not None:
        if (slow_set.manifest.get("matrix") or {}).get("rig") != args.rig:
            raise components.SensitivityError(f"{slow_set.name} is not a {args.rig} set")
        slow_values = sensitivity_sets.check_design(slow_set, study.slowdown["axis"], "slowdown",
                                   (study.slowdown["baseline"], study.slowdown["slowed"]))
    metrics = gated_metrics(aa_set)
    unknown = [m for m in args.metric if m not in metrics]
    if unknown:
        raise components.SensitivityError(f"{args.rig} does not gate {unknown[0]!r} (gated: {', '.join(metrics)})")
    chosen = {m: metrics[m] for m in (args.metric or metrics)}
    read_existing(os.path.join(aa_set.path, sensitivity_figures.FILE_NAME))  # refuse a corrupt one before work
    first = aa_set.first_ok()
    effects = thresholds.min_effects(None, [first])
    plan = {}
    for metric in chosen:  # every refusal before any resampling
        aa_pairs = sensitivity_sets.rounds_of(aa_set, study.aa["axis"], aa_values, metric)
        if len(aa_pairs) < components.MIN_ROUNDS:
            raise components.SensitivityError(f"{aa_set.name} {metric}: {len(aa_pairs)} A/A rounds; need "
                                               f"{components.MIN_ROUNDS}")
        slow_pairs = (sensitivity_sets.rounds_of(slow_set, study.slowdown["axis"], slow_values, metric)
                      if slow_set else None)
        if slow_pairs is not None and len(slow_pairs) < components.MIN_ROUNDS:
            raise components.SensitivityError(f"{slow_set.name} {metric}: {len(slow_pairs)} slowdown rounds; need "
                                               f"{components.MIN_ROUNDS}")
        comps = sensitivity_sets.components_of(aa_set, aa_pairs)
        if budget_s < comps.round_s:
            raise components.SensitivityError(f"--budget {args.budget} is shorter than one round of {args.rig} "
                                               f"({comps.round_s:.0f} s)")
        asked = effects.get(metric, thresholds.DEFAULT_MIN_EFFECT)
        designs = {}
        for profile in study.gated:  # each gated profile at the effect its own runs are asked
            own = profile_effects(first, profile).get(metric, asked)
            designs[profile] = (gated_design(args.rig, profile, metric, own), own)
        if args.rounds:
            designs[f"fixed {args.rounds}"] = gate_power.Design(args.rounds)
        plan[metric] = (aa_pairs, slow_pairs, comps, asked, designs)
    return chosen, plan, slow_values, first


def write_figures(args, aa_set, slow_set, doc, results_root):
    """The figures written into the A/A set (only under the results folder; a committed set only when named by
    --from-set), through the store; --dry-run writes nothing."""
    out = os.path.join(aa_set.path, sensitivity_figures.FILE_NAME)
    root = os.path.realpath(results_root)
    if os.path.commonpath([os.path.realpath(aa_set.path), root]) != root:
        raise components.SensitivityError(f"{aa_set.path} is not under {root}: figures are written only into a set "
                                           "of the results folder (copy or promote the set there first)")
    named = shlex.quote(f"baselines/{set_name(aa_set)}")
    if args.dry_run:
        print(f"(dry run: {out} not written)")
        return 0
    committed_root = os.path.join(os.path.realpath(results_root), "baselines") + os.sep
    if os.path.realpath(out).startswith(committed_root) and not args.from_set:
        # A committed set is written only when asked to by name (issue 41: a documented recompute rewrote a
        # committed file it was only reading).
        print(f"not written: {set_name(aa_set)} is a committed set; to replace its figures, name it: "
              f"--from-set {named}")
        return 0
    existing = read_existing(out)
    existing.setdefault(args.rig, {}).update(doc)
    # The store writes it (a new temporary file, then a rename over `out`: never through a link planted there).
    store.write_side_document(aa_set.path, sensitivity_figures.FILE_NAME, {
        "kind": "tunelab.sensitivity", "schema_version": 2,
        # The slowdown set read, named: without it a regeneration would drop the known slowdown's rates.
        "regenerate": f"bazel run //tools:sensitivity -- --rig {shlex.quote(args.rig)} --from-set {named}" + (
            f" --slowdown-set {shlex.quote('baselines/' + set_name(slow_set))}" if slow_set is not None else ""),
        **{k: v for k, v in sorted(existing.items()) if k not in ("kind", "schema_version", "regenerate")}})
    print(f"wrote {out}")
    if not os.path.abspath(out).startswith(os.path.join(results_root, "baselines") + os.sep):
        print(f"promote it: bazel run //tools:promote -- {shlex.quote(aa_set.path)} --name "
              f"{shlex.quote(args.rig)}-sensitivity-aa-DATE-HOST")
    return 0


if __name__ == "__main__":
    sys.exit(main())
