"""Benchmark: does the rig measure what NNThroughputBenchmark run by hand measures?

  bazel run //rigs/namenode:fidelity_benchmark [-- --pairs 5] [--steady]

Pairs, interleaved (rig first in even pairs, by hand first in odd ones, so a drifting host hits both):
- the rig: the `fidelity` profile of the namenode matrix (in-process create, 20,000 files, fsync on: the
  edit log as shipped) through the matrix runner, one repetition per run;
- by hand, as Hadoop's documentation says: `NameNode -format` then `NNThroughputBenchmark -fs file:/// -op
  create ...`, with the rig's own java, JVM flags and classpath, in a fresh hadoop.tmp.dir.
The verdict is over runs (Welch's 98 % interval of the log ratio of the two sides' ops/s; analysis/stats.py):
the rig is faithful when the interval contains 0, i.e. any difference is within run-to-run noise.

With --steady, both sides at steady state: the rig's `fidelity_steady` profile (the gated cell: 6 + 16
iterations in one JVM, the name directory on tmpfs) against NnBenchDriver run by hand with the rig's own
java, flags, classpath and arguments, its name directory a plain folder on the disk, as a person would; each
side's value is the median of its measured iterations. Faithful when the ratio's 95 % interval lies within
+-10 % (an equivalence test: the issue's tolerance), so a systematic difference of the rig's making shows.
Writes fidelity.json (fidelity-steady.json) into the first rig run's folder; exits 0 when faithful, 1 otherwise.
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

from rich.console import Console
from rich.table import Table

from analysis import stats
from results import resultfile, safeio, store
from rigs.host import terminal
from rigs.matrix import runner
from rigs.namenode import rig as nn_rig

BENCH = "org.apache.hadoop.hdfs.server.namenode.NNThroughputBenchmark"
DRIVER = "tunelab.rigs.namenode.NnBenchDriver"
STEADY_TOLERANCE = 0.10  # --steady: the ratio's interval within +-10 %


def by_hand_commands(command, tmp_dir):
    """The rig cell's command split into Hadoop's two documented steps, same java, flags and classpath."""
    main_at = command.index(DRIVER)
    bench_args = command[command.index("--", main_at) + 1:]
    java_and_flags = command[:main_at]
    if java_and_flags[0] in ("taskset", "numactl"):
        raise ValueError("the fidelity profile runs unpinned; got " + " ".join(java_and_flags[:3]))
    tmp = [f"-Dhadoop.tmp.dir={tmp_dir}"]  # generic options come first, or Hadoop ignores them
    return (java_and_flags + ["org.apache.hadoop.hdfs.server.namenode.NameNode"] + tmp + ["-format", "-force",
                                                                                        "-nonInteractive"],
            java_and_flags + [BENCH] + tmp + bench_args)


def run_by_hand(command, log_dir, pair):
    tmp_dir = tempfile.mkdtemp(prefix=f"nn-by-hand-{pair}-", dir=log_dir)
    fmt, bench = by_hand_commands(command, tmp_dir)
    with safeio.open_log(os.path.join(log_dir, f"by-hand-{pair}.format.log")) as log:
        if subprocess.run(fmt, cwd=tmp_dir, stdout=log, stderr=subprocess.STDOUT, timeout=300).returncode:
            raise RuntimeError(f"by hand: NameNode -format failed (see {log.name})")
    out_path = os.path.join(log_dir, f"by-hand-{pair}.out")
    with safeio.open_log(out_path) as out:
        status = subprocess.run(bench, cwd=tmp_dir, stdout=out, stderr=subprocess.STDOUT, timeout=600).returncode
    with open(out_path) as f:
        report = nn_rig.parse_report(f.read())
    if status or "create" not in report:
        raise RuntimeError(f"by hand: NNThroughputBenchmark exit {status}, no create report (see {out_path})")
    return report["create"]["ops_per_s"], bench


def steady_by_hand_command(command, name_dir):
    """The rig cell's command as a person would run it: the same java, flags, classpath and driver arguments,
    its --name-dir a fresh folder of theirs (not the runner's tmpfs link)."""
    main_at = command.index(DRIVER)
    if command[0] in ("taskset", "numactl"):
        raise ValueError("the fidelity profiles run unpinned; got " + " ".join(command[:3]))
    at = command.index("--name-dir", main_at)
    return command[:at + 1] + [name_dir] + command[at + 2:]


def run_steady_by_hand(command, log_dir, pair):
    """The median create rate of the measured iterations of one launch by hand."""
    work = tempfile.mkdtemp(prefix=f"nn-steady-by-hand-{pair}-", dir=log_dir)
    bench = steady_by_hand_command(command, os.path.join(work, "name"))
    out_path = os.path.join(log_dir, f"by-hand-{pair}.out")
    with safeio.open_log(out_path) as out:
        status = subprocess.run(bench, cwd=work, stdout=out, stderr=subprocess.STDOUT, timeout=900).returncode
    with open(out_path) as f:
        text = f.read()
    try:
        parsed = nn_rig.RIG.parse_inprocess(text, "")
    except ValueError as e:
        raise RuntimeError(f"by hand: {e} (see {out_path})") from None
    rates = [s["value"] for s in parsed.samples if s["metric"] == "create_rate"]
    if status or not rates:
        raise RuntimeError(f"by hand: NnBenchDriver exit {status}, {len(rates)} measured iterations (see {out_path})")
    return float(np.median(rates)), bench


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=5, help="interleaved (rig, by hand) pairs (default 5)")
    parser.add_argument("--steady", action="store_true", help="both sides at steady state (iterations in one JVM)")
    args, runner_args = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    if args.pairs < stats.MIN_RUNS:
        parser.error(f"--pairs {args.pairs}: a verdict needs {stats.MIN_RUNS} runs a side (analysis/stats.py)")
    console = Console(highlight=False, soft_wrap=True, width=terminal.width())
    profile = "fidelity_steady" if args.steady else "fidelity"
    rig_values, hand_values, rig_runs, commands = [], [], [], {}
    log_dir = None
    for pair in range(args.pairs):
        for side in (("rig", "hand") if pair % 2 == 0 else ("hand", "rig")):
            if side == "hand":  # pair 0 starts with the rig: its command is known by then
                value, commands["by_hand"] = (run_steady_by_hand if args.steady else run_by_hand)(
                    commands["rig"], log_dir, pair)
                hand_values.append(value)
                console.print(f"pair {pair + 1}/{args.pairs} by hand: create {value:,.0f} ops/s")
                continue
            outcome = runner.execute(runner_args + ["--profile", profile, "--no-host-reference", "--no-next-steps"],
                                     console=console)
            if outcome.status != runner.EXIT_OK:
                return outcome.status
            run_dir = outcome.run_dir
            (key,) = resultfile.stored_results(run_dir)
            doc = resultfile.load_result(resultfile.result_path(run_dir, *key))
            if doc["status"] != "ok":
                print(f"error: the rig's cell is {doc['status']}: {doc.get('reason')}", file=sys.stderr)
                return 2
            value = float(np.median([s["value"] for s in doc["samples"] if s["metric"] == "create_rate"]))
            rig_values.append(value)
            rig_runs.append(os.path.basename(run_dir))
            commands["rig"] = doc["provenance"]["command"]
            log_dir = log_dir or os.path.join(run_dir, "fidelity")
            os.makedirs(log_dir, exist_ok=True)
            console.print(f"pair {pair + 1}/{args.pairs} rig ({rig_runs[-1]}): create {value:,.0f} ops/s")
    comparison = stats.compare([[v] for v in hand_values], [[v] for v in rig_values])
    if args.steady:
        faithful = 1 - STEADY_TOLERANCE <= comparison.ratio_ci_low and comparison.ratio_ci_high <= 1 + STEADY_TOLERANCE
        within = f"within +-{STEADY_TOLERANCE:.0%}"
    else:
        faithful = comparison.ratio_ci_low <= 1 <= comparison.ratio_ci_high
        within = "within run-to-run noise"
    table = Table(title="Fidelity: the rig vs NNThroughputBenchmark by hand (in-process create, interleaved"
                        + (", steady state)" if args.steady else ")"))
    for col in ("side", "runs", "median ops/s", "values"):
        table.add_column(col)
    table.add_row("by hand", str(len(hand_values)), f"{comparison.baseline_median:,.0f}",
                  " ".join(f"{v:,.0f}" for v in hand_values))
    table.add_row("rig", str(len(rig_values)), f"{comparison.candidate_median:,.0f}",
                  " ".join(f"{v:,.0f}" for v in rig_values))
    console.print(table)
    verdict = (f"rig vs by hand: {comparison.ratio - 1:+.1%} ({100 * comparison.level:.4g}% CI "
               f"{comparison.ratio_ci_low - 1:+.1%}..{comparison.ratio_ci_high - 1:+.1%}, Welch p on logs="
               f"{comparison.p_value:.3f}): "
               + (within if faithful else "NOT " + within))
    console.print(verdict)
    report = {"kind": "tunelab.namenode_fidelity", "profile": profile, "rig_runs": rig_runs, "rig_ops_per_s": rig_values,
              "by_hand_ops_per_s": hand_values, "ratio": comparison.ratio,
              "ratio_ci": [comparison.ratio_ci_low, comparison.ratio_ci_high], "welch_p": comparison.p_value,
              "faithful": faithful, "commands": commands, "verdict": verdict}
    path = store.write_side_document(os.path.dirname(log_dir), "fidelity-steady.json" if args.steady else "fidelity.json",
                                     report)
    console.print(f"{'PASS' if faithful else 'FAIL'}: written {path}")
    return 0 if faithful else 1


if __name__ == "__main__":
    sys.exit(main())
