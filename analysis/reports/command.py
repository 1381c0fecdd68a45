"""The report's command line: comparison reports as PDF and HTML from stored result sets.

    bazel run //analysis:report -- RESULT_SET [RESULT_SET] --kind KIND --out report.pdf
    bazel run //analysis:report -- SET SET --kind mr1-vs-mr2 --parts --out report.pdf   # each set within itself
    bazel run //analysis:report -- results/bisect-out/ID --kind bisect --out bisect.pdf

What a report holds and the rule its words follow: analysis/reports/report.py. Exit status: 0 written; 2 unusable
input (nothing is written)."""

import argparse
import os
import shlex
import sys
import tempfile

from analysis import resultsets
from analysis.reports import bisect_pages
from analysis.reports import parts
from analysis.reports import report
from analysis.reports import story as story_lib
from analysis.reports.kinds import KINDS, ReportError


def write_bisect(args, argv, cwd, results_root):
    """--kind bisect: the report of one bisect folder (analysis/reports/bisect_pages.py)."""
    if len(args.sets) != 1:
        raise ReportError("--kind bisect takes one bisect folder (results/bisect-out/ID)")
    folder = args.sets[0]
    for base in (cwd, os.path.join(results_root, "bisect-out")):
        if not os.path.isabs(folder) and os.path.isdir(os.path.join(base, folder)):
            folder = os.path.join(base, folder)
            break
    record = bisect_pages.read_record(folder)
    out_pdf = os.path.join(cwd, args.out)
    out_html = os.path.join(cwd, args.html) if args.html else os.path.splitext(out_pdf)[0] + ".html"
    command = shlex.join(["bazel", "run", "//analysis:report", "--"] + (argv if argv is not None else sys.argv[1:]))
    with tempfile.TemporaryDirectory(prefix="tunelab-report-") as tmp:
        blocks = bisect_pages.blocks(record, os.path.basename(os.path.normpath(folder)), tmp, command)
        report.write(blocks, out_pdf, out_html, os.path.join(cwd, args.text) if args.text else None)
    print(f"wrote {out_pdf}\nwrote {out_html}")
    return report.EXIT_OK


def _parser():
    """The report's command line (argparse): sets, kind, output, and the story's flags."""
    parser = argparse.ArgumentParser(
        description="Write a comparison report (PDF, and the same as HTML) from stored result sets.",
        epilog="Result sets: a run folder, a run id, baselines/NAME or reference/NAME (relative to the results "
               "folder). Exit status: 0 written; 2 unusable input (nothing is written).")
    parser.add_argument("sets", nargs="+", metavar="RESULT_SET",
                        help="one or two measured sets (baseline first); with --parts, two or more")
    parser.add_argument("--kind", required=True, choices=sorted(KINDS) + ["bisect"],
                        help="bisect: RESULT_SET is a bisect's folder (results/bisect-out/ID, //tools:bisect)")
    parser.add_argument("--out", required=True, help="the PDF to write; the HTML goes next to it (.html)")
    parser.add_argument("--html", help="where to write the HTML (default: --out with .html)")
    parser.add_argument("--text", help="also write the report as plain text")
    parser.add_argument("--metric", action="append", help="report only this metric (repeatable)")
    parser.add_argument("--axis", help="the axis to compare for a one-set stock-vs-patched/mr1-vs-mr2/"
                                       "memory-locality report (default: the kind's)")
    parser.add_argument("--parts", action="store_true",
                        help="sets of different designs, each compared within itself on the kind's axis: a part "
                             "of the report each (MR1 vs MR2 in local mode and on a cluster), never one set "
                             "against the other")
    parser.add_argument("--allow-provenance-mismatch", action="store_true",
                        help="report two sets whose provenance differs beyond the kind's allowance, with a warning")
    parser.add_argument("--no-reference", action="store_true", help="leave out the published reference figures")
    parser.add_argument("--results-dir", help="the results folder (default: <workspace>/results)")
    parser.add_argument("--question", help="the report's question, in words (default: the run's matrix's, else "
                                           "the kind's); the site passes a study's (results/baselines/studies.toml)")
    parser.add_argument("--answer", action="append", default=[], metavar="METRIC",
                        help="a metric that answers the question (repeatable; the first a set measures leads the "
                             "report and its one line); the site passes a study's story")
    parser.add_argument("--mechanism", action="append", default=[], metavar="METRIC",
                        help="a counter that shows the mechanism, said in one line on the title page (repeatable)")
    parser.add_argument("--caveat", action="append", default=[], metavar="TEXT",
                        help="a caveat said on the title page (repeatable)")
    parser.add_argument("--figure", choices=story_lib.FIGURE_KINDS, default="change",
                        help="the title page's key figure: each comparison's change with its interval, or (scaling) "
                             "the answer's metric against --size-axis with a fitted slope per group")
    parser.add_argument("--size-axis", default="", help="--figure scaling: the axis that is a size (e.g. apps)")
    parser.add_argument("--phase", action="append", default=[], metavar="METRIC",
                        help="--figure scaling: a metric the answer's is made of, stacked per cell (repeatable)")
    parser.add_argument("--appendix", action="store_true",
                        help="draw every metric's pages, the threads, monitors, tails and observations too (default: "
                             "the story: the answer's metric and the --mechanism counters)")
    return parser


def main(argv=None):
    parser = _parser()
    args = parser.parse_args(argv)
    if args.question is not None and (not args.question.strip() or len(args.question) > 200 or "\n" in args.question):
        parser.error("--question: one line of 1-200 characters")
    workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY", os.getcwd())
    cwd = os.environ.get("BUILD_WORKING_DIRECTORY", os.getcwd())
    results_root = args.results_dir or os.path.join(workspace, "results")
    try:
        if args.kind == "bisect":
            return write_bisect(args, argv, cwd, results_root)
        sets = [resultsets.resolve(s if os.path.isabs(s) or not os.path.exists(os.path.join(cwd, s))
                                   else os.path.join(cwd, s), results_root) for s in args.sets]
        if not args.no_reference and not any(s.published for s in sets):
            sets += report.reference_sets(results_root)
        out_pdf = os.path.join(cwd, args.out)
        out_html = os.path.join(cwd, args.html) if args.html else os.path.splitext(out_pdf)[0] + ".html"
        for path in (out_pdf, out_html):
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        command = shlex.join(["bazel", "run", "//analysis:report", "--"] + (argv if argv is not None else sys.argv[1:]))
        if (args.figure == "scaling") != bool(args.size_axis) or (args.phase and args.figure != "scaling"):
            raise ReportError("--figure scaling goes with --size-axis (and --phase), and they with it")
        story = story_lib.Story(tuple(args.answer), tuple(args.mechanism), tuple(args.caveat), args.figure, args.size_axis,
                      tuple(args.phase))
        known = {m for s in sets if not s.published for m in s.metrics()}
        unknown = [m for m in story.answer + story.mechanism + story.phases if m not in known]
        if unknown:
            raise ReportError(f"--answer/--mechanism/--phase: no set measures {', '.join(unknown)} (they measure "
                              f"{', '.join(sorted(known))})")
        with tempfile.TemporaryDirectory(prefix="tunelab-report-") as tmp:
            if args.parts:
                blocks = parts.build_parts(args.kind, sets, tmp, args.metric, args.axis, command, question=args.question,
                                     story=story, appendix=args.appendix)
            else:
                blocks = report.build(args.kind, sets, tmp, args.metric, args.axis, args.allow_provenance_mismatch,
                               command, question=args.question, story=story, appendix=args.appendix)
            report.write(blocks, out_pdf, out_html, os.path.join(cwd, args.text) if args.text else None)
    except (resultsets.ResultSetError, ReportError, ValueError) as e:
        # ValueError: what the statistics refuse, e.g. a zero baseline has no ratio (issue 39: a traceback, exit 1).
        print(f"error: {e}", file=sys.stderr)
        return report.EXIT_BAD_INPUT
    print(f"wrote {out_pdf}\nwrote {out_html}")
    return report.EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
