"""Entry point of every `rig_matrix` target (rigs/defs.bzl)."""

import sys

from rigs.matrix import runner

if __name__ == "__main__":
    sys.exit(runner.main())
