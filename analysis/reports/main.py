"""Entry point of `bazel run //analysis:report` (analysis/reports/command.py)."""

import sys

from analysis.reports import command

if __name__ == "__main__":
    sys.exit(command.main())
