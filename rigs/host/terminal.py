"""How wide console output is: the terminal's own width, or 100 columns when stdout is a file or a pipe
(logs, CI), where a table wraps its cells to fit rather than running off a reader's screen (issue 41: piped
tables were 160 columns). analysis/summary.py's tables are 100 wide too (it cannot import this floor)."""

import sys

PIPED_WIDTH = 100


def width():
    """rich's Console width: None (the terminal's) on a terminal, else PIPED_WIDTH."""
    return None if sys.stdout.isatty() else PIPED_WIDTH
