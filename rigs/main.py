"""Entry point of every `rig_matrix` target (rigs/defs.bzl): parses the arguments once, has the runner
measure and store (rigs/matrix/runner.py), prints analysis' summary of what was stored, indexes the run in the
results database (analysis/indexer.py: TUNELAB_DB, else results/.db/tunelab.sqlite), and writes --run-info, which
scripts read instead of the console. The runner only measures and stores: the fidelity benchmarks and the tests
call it without a summary."""

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
            else:
                index_run(outcome.run_dir, console)
        return status
    except KeyboardInterrupt:
        status = runner.EXIT_INTERRUPTED
        raise
    finally:
        if run_info:
            write_run_info(run_info, status, run_dir)


def index_run(run_dir, console=None):
    """The stored run indexed in the results database (issue 83: its documents first, then its rows); a database
    that cannot take it is said in one line and never changes the run's exit status."""
    results_root = os.path.dirname(os.path.dirname(os.path.abspath(run_dir)))
    where = "the results database"
    try:
        # Here, not at the top: the index is the run's last step, and nothing of it may keep a run from starting.
        from analysis import indexer
        from results.db import store as db_store

        url = db_store.database_url(None, results_root)
        where = db_store.redacted(url)
        problem = indexer.index(url, [run_dir], results_root)
    except Exception as e:  # noqa: BLE001 - the run is stored; an index is never worth its exit status
        problem = f"{type(e).__name__}: {e}"
    line = (f"results database: the run is not indexed in {where}: {problem[:500]} (index it again: bazel run "
            f"//tools:results -- import {run_dir})" if problem else f"results database: the run is indexed in {where}")
    if console is not None:
        console.print(line, markup=False, highlight=False)
    else:
        print(line, file=sys.stderr if problem else sys.stdout, flush=True)


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
