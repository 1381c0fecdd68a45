"""Entry point of every `rig_matrix` target (rigs/defs.bzl): the runner measures and stores, then analysis
summarizes what was stored. Composed here, at the top, so that neither rigs/matrix nor analysis/ imports
the other."""

import sys

from analysis import summary
from rigs.matrix import runner


def main(argv=None, console=None):
    outcome = runner.execute(argv, console=console)
    if outcome.run_dir and outcome.status in (runner.EXIT_OK, runner.EXIT_CELLS_FAILED):
        if not summary.print_run(outcome.run_dir, outcome.workload.metrics, console=console):
            return runner.EXIT_BAD_INPUT
    return outcome.status


if __name__ == "__main__":
    sys.exit(main())
