"""Entry point of `bazel run //analysis:report` (see analysis/report.py)."""

import sys

from analysis import report

if __name__ == "__main__":
    sys.exit(report.main())
