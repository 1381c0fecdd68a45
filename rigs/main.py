"""Entry point of every `rig_matrix` target (rigs/defs.bzl): parses the arguments once, has the runner
measure and store (rigs/matrix/runner.py), prints analysis' summary of what was stored, and writes
--run-info, which scripts read instead of the console. The runner only measures and stores: the fidelity
benchmarks and the tests call it without a summary."""

import os
import sys

from analysis import summary
from results import resultfile, safeio
from rigs.matrix.planning import cli
from rigs.matrix import runner

RUN_INFO_SCHEMA = "tunelab-run-info/1"
STATUS_NAMES = {runner.EXIT_OK: "ok", runner.EXIT_CELLS_FAILED: "cells_failed", runner.EXIT_BAD_INPUT: "bad_input",
                runner.EXIT_LOCKED: "locked", runner.EXIT_INTERRUPTED: "interrupted"}


def main(argv=None, console=None, **runner_options):
    """Runs the matrix (runner.execute; runner_options: its host_paths and report, for tests), prints the
    summary, writes --run-info; returns the exit status."""
    argv = sys.argv[1:] if argv is None else argv
    args = cli.parse_args(argv)
    run_info = args.run_info
    status, run_dir = runner.EXIT_BAD_INPUT, ""
    try:
        outcome = runner.execute(args=args, console=console, **runner_options)
        status, run_dir = outcome.status, outcome.run_dir
        if outcome.run_dir and outcome.status in (runner.EXIT_OK, runner.EXIT_CELLS_FAILED):
            if not summary.print_run(outcome.run_dir, outcome.workload.metrics, console=console):
                status = runner.EXIT_BAD_INPUT
        return status
    except KeyboardInterrupt:
        status = runner.EXIT_INTERRUPTED
        raise
    finally:
        if run_info:
            write_run_info(run_info, status, run_dir)


def write_run_info(path, status, run_dir):
    """What a calling script needs (tools/nightly/nightly.sh, //tools:gate_confirm), as JSON: scripts never
    parse the console, whose lines wrap at its width."""
    doc = {"schema": RUN_INFO_SCHEMA, "status": status, "status_name": STATUS_NAMES.get(status, "error"),
           "run_id": os.path.basename(run_dir) if run_dir else None,
           "run_dir": os.path.abspath(run_dir) if run_dir else None}
    try:
        safeio.write_json(os.path.abspath(path), doc)
    except (OSError, resultfile.ResultError) as e:  # said, and never in place of the run's own exit status
        print(f"error: --run-info {path}: not written: {e}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
