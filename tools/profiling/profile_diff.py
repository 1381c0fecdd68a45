"""What moved between the two sides of each comparison of a profiled run (policy.profile, issue 60): the frames
whose share of samples changed most, each with its interval over runs (analysis/profiling/profiles.py), and a
differential flame graph per comparison (async-profiler's converter, --diff: candidate against baseline, each
side merged over its runs; red grew, blue shrank).

    bazel run //tools:profile_diff -- --run RUN [--axis A --baseline V --candidate V] [--event cpu] [--self]
                                      [--top 15] [--html-dir DIR]

--event instructions: for Redis runs with measure=instructions, the functions whose own instructions per
request (Callgrind; --inclusive: with all they call) moved most, with their intervals; no flame graph.

RUN: a run folder, a run id under results/, or a committed set (as //tools:gate takes them). Exit status: 0
printed, 2 bad input (no such run, no profiled comparison, a corrupt profile is named and left out)."""

import argparse
import os
import subprocess
import sys

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from analysis import resultsets
from analysis.profiling import profiles
from rigs.host import terminal

EXIT_OK, EXIT_BAD_INPUT = 0, 2
INSTRUCTIONS = "instructions"


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="profile_diff", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", required=True, help="a run folder, a run id, or a set under results/")
    parser.add_argument("--axis", help="only the comparisons of this axis")
    parser.add_argument("--baseline", help="with --axis: the baseline value (default: the matrix's)")
    parser.add_argument("--candidate", help="with --axis: only this candidate value")
    parser.add_argument("--event", default="cpu", choices=(*profiles.EVENTS, INSTRUCTIONS),
                        help="the profile event, or instructions: Callgrind's per-function counts (Redis, "
                             "measure=instructions)")
    parser.add_argument("--self", action="store_true", dest="self_only",
                        help="self shares (the frame is the leaf) instead of inclusive ones")
    parser.add_argument("--inclusive", action="store_true",
                        help="instructions: inclusive counts (a function and all it calls) instead of self ones")
    parser.add_argument("--top", type=int, default=15, help="movers per comparison (default 15)")
    parser.add_argument("--html-dir", help="where the differential flame graphs go (default: "
                        "results/profile-diffs/<set>/ of the workspace, which git ignores as it ignores fresh runs)")
    parser.add_argument("--java", help=argparse.SUPPRESS)
    parser.add_argument("--converter", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if (args.baseline or args.candidate) and not args.axis:
        parser.error("--baseline and --candidate need --axis")
    if args.top < 1:
        parser.error("--top must be at least 1")
    return args


def mover_table(comparison):
    unit = comparison.rows[0].unit if comparison.rows else "points"
    what = "share of samples, points" if unit == "points" else unit
    table = Table(title=escape(f"{comparison.label()} ({comparison.event}, runs {len(comparison.baseline_runs)}/"
                               f"{len(comparison.candidate_runs)}): {what}"), title_justify="left")
    for column, justify in (("frame" if unit == "points" else "function", "left"), ("baseline", "right"),
                            ("candidate", "right"), ("change", "right"), ("interval", "right"), ("", "left")):
        table.add_column(column, justify=justify, overflow="fold")
    for m in comparison.rows:
        interval = "-" if m.low != m.low else f"{m.low:+,.1f}..{m.high:+,.1f}"
        table.add_row(escape(m.short), f"{m.baseline:,.1f}", f"{m.candidate:,.1f}", f"{m.change:+,.1f}", interval,
                      "moved" if m.moved else ("noise" if m.low == m.low else "1 run"))
    return table


def main(argv=None, console=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    console = console or Console(highlight=False, soft_wrap=True, width=terminal.width())  # 100 columns piped
    where = os.environ.get("BUILD_WORKING_DIRECTORY", os.getcwd())
    results_root = os.path.join(os.environ.get("BUILD_WORKSPACE_DIRECTORY", where), "results")
    try:
        result_set = resultsets.resolve(os.path.join(where, args.run) if os.path.isdir(os.path.join(where, args.run))
                                        else args.run, results_root)
        if args.event == INSTRUCTIONS:
            found = profiles.instruction_comparisons(result_set, not args.inclusive, args.top)
        else:
            found = profiles.comparisons(result_set, args.event, args.self_only, args.top)
    except (resultsets.ResultSetError, profiles.ProfileError) as e:
        console.print(f"[red]error:[/red] {escape(str(e))}")
        return EXIT_BAD_INPUT
    if args.axis:
        found = [c for c in found if c.axis == args.axis and (not args.baseline or c.baseline_value == args.baseline)
                 and (not args.candidate or c.value == args.candidate)]
    usable = [c for c in found if c.rows]
    if not usable:
        why = "; ".join(c.missing[0] for c in found if c.missing)[:400] or "its cells were not profiled (policy.profile)"
        console.print(f"[red]error:[/red] {escape(result_set.name)}: no profiled comparison"
                      + (f" of {escape(args.axis)}" if args.axis else "") + f": {escape(why)}")
        return EXIT_BAD_INPUT
    # Not the working folder by default: run from the workspace, that made a new top-level folder in the clone.
    html_dir = (os.path.join(where, args.html_dir) if args.html_dir
                else os.path.join(results_root, "profile-diffs", result_set.name))
    for c in usable:
        console.print(mover_table(c))
        console.print(escape(f"movers: {profiles.one_line(c.rows, limit=3)}"))
        if "gc" in c.axis.split("+") and c.gc_line():  # pauses beside a comparison of collectors only
            console.print(escape(c.gc_line()))
        for why in c.missing:
            console.print(escape(f"left out: {why}"))
        if args.java and args.converter and args.event != INSTRUCTIONS:
            try:
                console.print(escape(f"differential flame graph: {profiles.flame_graph(args.java, args.converter, c, html_dir)}"))
            except (profiles.ProfileError, OSError, subprocess.SubprocessError) as e:
                console.print(f"[yellow]no flame graph:[/yellow] {escape(str(e))}")
    console.print("Intervals: Welch's t over runs, simultaneous over the frames of a table (Bonferroni); 'noise': "
                  "the interval holds zero; '1 run': one run a side, no interval (run more rounds).")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
