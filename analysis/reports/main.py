"""Entry point of `bazel run //analysis:report` (see analysis/reports/report.py)."""

import sys

from analysis.reports import report

if __name__ == "__main__":
    sys.exit(report.main())
