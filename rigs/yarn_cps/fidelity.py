"""Benchmark: does the rig measure what SLS itself measures, and what does the harness cost?

  bazel run //rigs/yarn_cps:fidelity_benchmark

1. Runs the `fidelity` profile of the yarn_cps matrix (SLS metrics on) through the matrix runner.
2. Fidelity: for every ok cell, the rig's CPS over its steady window against the mean of SLS's own
   `scheduler.commit.success.throughput` (realtimetrack.json, one record per second) over the same
   wall-clock window. Target: within 2 %.
3. Overhead: the Hadoop 3.3.5 cell again, started by hand as its documentation says
   (`java ... org.apache.hadoop.yarn.sls.SLSRunner -tracetype SLS ...`, same JVM flags, configs and trace),
   against the rig's wall time for the cell. Target: the rig at most 10 % slower.
Writes fidelity.json into the run's folder and exits 0 when both targets hold, 1 otherwise.
"""

import os
import subprocess
import sys
import time

from rich.console import Console
from rich.table import Table

from results import resultfile, safeio, store
from rigs.host import terminal
from rigs.matrix import runner

FIDELITY_TOLERANCE = 0.02
OVERHEAD_TOLERANCE = 0.10


def sls_throughput(track_path, t0_epoch_ms, start_t, end_t):
    """Mean of SLS's per-second commit throughput over [start_t, end_t] (seconds after t0)."""
    text = safeio.read_text(track_path)
    # The driver stops the JVM once the trace is done, often before SLS closes its JSON array: read the
    # records one by one and drop a truncated last one.
    records = []
    try:
        for record, _ in safeio.json_stream(text[text.find("[") + 1:], separators=" \t\r\n,"):
            records.append(record)
    except safeio.InputError:
        pass  # the closing "]", or a record cut short
    lo, hi = t0_epoch_ms + start_t * 1000, t0_epoch_ms + end_t * 1000
    values = [r["scheduler.commit.success.throughput"] for r in records if lo <= r["time"] <= hi]
    if not values:
        raise ValueError(f"{track_path}: no records between {start_t} s and {end_t} s")
    return sum(values) / len(values), len(values)


def by_hand_argv(command, workdir):
    """The cell's own command with the driver replaced by SLSRunner's documented command line."""
    main_at = command.index("tunelab.rigs.yarn_cps.SlsDriver")
    driver_args = dict(zip(command[main_at + 1::2], command[main_at + 2::2]))
    argv = command[:main_at] + ["org.apache.hadoop.yarn.sls.SLSRunner",
                                "-tracetype", driver_args["--trace-type"], "-tracelocation", driver_args["--trace"],
                                "-output", os.path.join(workdir, "by-hand-output")]
    if "--nodes" in driver_args:
        argv += ["-nodes", driver_args["--nodes"]]
    return argv


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    console = Console(highlight=False, soft_wrap=True, width=terminal.width())
    outcome = runner.execute(argv + ["--profile", "fidelity", "--no-next-steps"], console=console)
    if outcome.status not in (runner.EXIT_OK, runner.EXIT_CELLS_FAILED):
        return outcome.status
    run_dir = outcome.run_dir
    docs = [resultfile.load_result(resultfile.result_path(run_dir, c, r)) for c, r in resultfile.stored_results(run_dir)]
    report = {"kind": "tunelab.yarn_cps_fidelity", "run_dir": run_dir, "cells": [], "overhead": None,
              "targets": {"fidelity_tolerance": FIDELITY_TOLERANCE, "overhead_tolerance": OVERHEAD_TOLERANCE}}
    table = Table(title="Fidelity: the rig's CPS vs SLS's scheduler.commit.success.throughput (same window)")
    for col in ("cell", "hadoop", "nodes", "heartbeat ms", "rig CPS", "SLS throughput", "SLS records", "difference"):
        table.add_column(col)
    ok = True
    for d in docs:
        p = d["cell"]["params"]
        if d["status"] != "ok":
            ok = False
            report["cells"].append({"cell": d["cell"]["id"], "status": d["status"], "reason": d.get("reason")})
            continue
        obs = d["observations"]
        w = obs["window"]
        workdir = os.path.join(run_dir, "work", f"{d['cell']['id']}.r{d['cell']['repetition']}")
        sls, n = sls_throughput(os.path.join(workdir, "sls-output", "realtimetrack.json"), obs["t0_epoch_ms"],
                                w["start_t"], w["end_t"])
        diff = w["allocation_rate"] / sls - 1
        ok &= abs(diff) <= FIDELITY_TOLERANCE
        report["cells"].append({"cell": d["cell"]["id"], "params": p, "rig_cps": w["allocation_rate"],
                                "sls_commit_throughput": sls, "sls_records": n, "difference": diff, "window": w})
        table.add_row(d["cell"]["id"], p["hadoop"], p["nodes"], p["nm_heartbeat_ms"], f"{w['allocation_rate']:,.1f}",
                      f"{sls:,.1f}", str(n), f"{diff:+.2%}")
    console.print(table)
    hand = next((d for d in docs if d["status"] == "ok" and d["cell"]["params"]["hadoop"] == "3.3.5"), None)
    if hand is not None:
        workdir = os.path.join(run_dir, "work", f"{hand['cell']['id']}.r{hand['cell']['repetition']}")
        cmd = by_hand_argv(hand["provenance"]["command"], workdir)
        console.print("by hand: " + " ".join(cmd[:3]) + " ... " + " ".join(cmd[cmd.index("org.apache.hadoop.yarn.sls.SLSRunner"):]))
        started = time.monotonic()
        with safeio.open_log(os.path.join(workdir, "by-hand.out")) as out, \
                safeio.open_log(os.path.join(workdir, "by-hand.err")) as err:
            status = subprocess.run(cmd, cwd=workdir, stdout=out, stderr=err, timeout=900).returncode
        by_hand_s = time.monotonic() - started
        ratio = hand["duration_s"] / by_hand_s
        ok &= status == 0 and ratio <= 1 + OVERHEAD_TOLERANCE
        report["overhead"] = {"cell": hand["cell"]["id"], "rig_wall_s": hand["duration_s"], "by_hand_wall_s": by_hand_s,
                              "by_hand_exit_status": status, "ratio": ratio, "command": cmd}
        console.print(f"overhead: rig {hand['duration_s']:.1f} s vs by hand {by_hand_s:.1f} s "
                      f"(exit {status}): {ratio - 1:+.1%} (target at most {OVERHEAD_TOLERANCE:+.0%})")
    report["passed"] = bool(ok)
    store.write_side_document(run_dir, "fidelity.json", report)
    console.print(f"{'PASS' if ok else 'FAIL'}: written {os.path.join(run_dir, 'fidelity.json')}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
