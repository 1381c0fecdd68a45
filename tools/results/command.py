"""tunelab results: the results database (results/db) from the command line.

    bazel run //tools:results -- import [PATH ...] [--rebuild]   index result documents (default: every set and run)
    bazel run //tools:results -- ls [--rig R]                     runs, newest first
    bazel run //tools:results -- show RUN                         one run: per cell, each metric's median
    bazel run //tools:results -- history --rig R --metric M [--cell NAME=VALUE ...] [--since YYYY-MM-DD]
    bazel run //tools:results -- query "SELECT ..."               read-only SQL
    bazel run //tools:results -- migrate                          upgrade a database made by an older tunelab

Every command takes --db URL (default: TUNELAB_DB, else the SQLite file results/.db/tunelab.sqlite, made on first
use) and prints a table that fits the terminal, or --csv / --json. The JSON documents stay the source of truth: an
import adds only documents not held (by sha256), `--rebuild` remakes the database from them alone.
Exit status: 0 done; 1 some folders refused (each named with its reason, the rest imported); 2 unusable input
(a database that is corrupt, foreign or at another schema revision, a run not there, a refused query).
"""

import argparse
import csv
import datetime
import json
import os
import sys
import time

import sqlalchemy as sa
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from results.db import queries, store
from rigs.host import terminal
from analysis import indexer

EXIT_OK, EXIT_REFUSED, EXIT_BAD_INPUT = 0, 1, 2


def default_results_root():
    return os.path.join(os.environ.get("BUILD_WORKSPACE_DIRECTORY", os.getcwd()), "results")


def _cell_filter(text):
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"{text!r}: a cell filter is NAME=VALUE (e.g. gc=g1)")
    return name, value


def _day(text):
    try:
        return datetime.datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=datetime.timezone.utc)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: a day is YYYY-MM-DD") from None


def _common(defaults):
    """The options every command takes, before or after its name: the top level's carry the defaults, a command's
    leave what the top level set (argparse.SUPPRESS)."""
    common = argparse.ArgumentParser(add_help=False)
    given = (lambda value: value) if defaults else (lambda value: argparse.SUPPRESS)
    common.add_argument("--db", default=given(""), help="database URL: sqlite:///PATH or postgresql://USER@HOST/NAME "
                        "(default: $TUNELAB_DB, else results/.db/tunelab.sqlite)")
    common.add_argument("--results-dir", default=given(None),
                        help="the results root (default: the workspace's results/)")
    output = common.add_mutually_exclusive_group()
    output.add_argument("--csv", action="store_true", default=given(False), help="CSV on standard output")
    output.add_argument("--json", action="store_true", default=given(False), help="JSON on standard output")
    return common


def parse_args(argv):
    common = _common(defaults=False)
    parser = argparse.ArgumentParser(prog="results", description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     parents=[_common(defaults=True)])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    imp = commands.add_parser("import", parents=[common], help="index result documents (run and set folders)")
    imp.add_argument("paths", nargs="*", metavar="PATH",
                     help="run or set folders, or folders of them (default: every set under baselines/ and every run)")
    imp.add_argument("--rebuild", action="store_true",
                     help="remake the database from the documents alone (an SQLite file is removed first; "
                          "then every set and run is imported, or only the PATHs given)")
    ls = commands.add_parser("ls", parents=[common], help="runs, newest first")
    ls.add_argument("--rig", default=None)
    ls.add_argument("--limit", type=int, default=50)
    show = commands.add_parser("show", parents=[common], help="one run: per cell, each metric's median")
    show.add_argument("run", metavar="RUN", help="a run id (e.g. 20261207T080131Z-1933)")
    hist = commands.add_parser("history", parents=[common], help="a metric over time on one rig")
    hist.add_argument("--rig", required=True)
    hist.add_argument("--metric", required=True)
    hist.add_argument("--cell", type=_cell_filter, action="append", default=[], metavar="NAME=VALUE",
                      help="only cells with this parameter value (repeatable)")
    hist.add_argument("--since", type=_day, default=None, metavar="YYYY-MM-DD")
    query = commands.add_parser("query", parents=[common], help="one read-only SELECT")
    query.add_argument("sql", metavar="SQL")
    commands.add_parser("migrate", parents=[common], help="upgrade a database made by an older tunelab")
    # Every command's own usage under the top --help: all the flags at a glance (and README commands checked there).
    shared = "[-h] [--db DB] [--results-dir RESULTS_DIR] [--csv | --json]"
    parser.epilog = "commands (each also takes the options above):\n" + "\n".join(
        "  " + " ".join(sub.format_usage().removeprefix("usage: ").split()).replace(shared, "").replace("  ", " ").rstrip()
        for sub in commands.choices.values())
    args = parser.parse_args(argv)
    if getattr(args, "limit", 1) < 1:
        parser.error("--limit must be at least 1")
    return args


def printable(text):
    """Text from a document, a database or a user as it may reach a terminal: control characters become '?'."""
    return "".join("?" if (ord(ch) < 32 and ch != "\t") or 127 <= ord(ch) < 160 else ch for ch in str(text))


def _cell_text(value):
    if value is None:
        return ""
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    return str(value)


def emit(columns, rows, args, console, title=""):
    """The answer as a table that fits the terminal (at most 100 columns), or CSV, or JSON."""
    if args.csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows([[_cell_text(v) for v in row] for row in rows])
        return
    if args.json:
        json.dump([{c: (v.isoformat() if isinstance(v, datetime.datetime) else v) for c, v in zip(columns, row)}
                   for row in rows], sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
        return
    table = Table(title=title or None, box=None, header_style="bold", pad_edge=False)
    for i, column in enumerate(columns):  # the first column (a run id, a cell) whole: it is what a reader looks up
        table.add_column(Text(printable(column)), overflow="fold", no_wrap=i == 0)
    for row in rows:
        table.add_row(*(Text(printable(_cell_text(v))) for v in row))
    console.print(table)
    if not rows:
        console.print("(no rows)")


def run_import(args, url, results_root, console):
    if args.rebuild:
        store.drop_everything(url)
    engine = store.open_for_writing(url)
    try:
        folders = []
        for path in args.paths or [None]:
            if path is None:
                folders += indexer.default_folders(results_root)
                continue
            # `bazel run` starts in its runfiles: a relative PATH is the caller's.
            path = os.path.join(os.environ.get("BUILD_WORKING_DIRECTORY", os.getcwd()), path)
            if not os.path.isdir(path):
                console.print(f"error: {printable(path)} is not a folder", style="red", markup=False)
                return EXIT_BAD_INPUT
            found = indexer.folders_under(path)
            if not found:
                console.print(f"error: {printable(path)} holds no run or set folder (a manifest.json)",
                              style="red", markup=False)
                return EXIT_BAD_INPUT
            folders += found
        started = time.monotonic()
        columns = [TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                   TimeRemainingColumn()]
        with Progress(*columns, console=console, transient=True) as progress:
            task = progress.add_task("import", total=len(folders))

            def step(folder):
                progress.update(task, description=f"import {os.path.basename(folder)[:40]}")
                progress.advance(task)

            outcome = indexer.import_folders(engine, folders, results_root, progress=step, everything=not args.paths)
    finally:
        engine.dispose()
    added = outcome.added
    console.print(f"{outcome.folders - len(outcome.refused)} of {outcome.folders} folders indexed in "
                  f"{time.monotonic() - started:.1f} s into {store.redacted(url)}: new {added.documents} documents, "
                  f"{added.runs} runs, {added.results} results, {added.metric_values} metric values, {added.sets} sets, "
                  f"{added.figures} sensitivity figures, {added.bisects} bisects"
                  + (" (all held already)" if not any((added.documents, added.runs, added.results)) else ""),
                  markup=False)
    for folder, reason in outcome.refused:
        console.print(f"refused: {printable(folder)}: {printable(reason[:400])}", style="yellow", markup=False)
    return EXIT_REFUSED if outcome.refused else EXIT_OK


def main(argv=None, console=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    console = console or Console(highlight=False, soft_wrap=False, width=terminal.width(),
                                 stderr=bool(args.csv or args.json))
    results_root = args.results_dir or default_results_root()
    url = store.database_url(args.db, results_root)
    try:
        if args.command == "import":
            return run_import(args, url, results_root, console)
        if args.command == "migrate":
            before, after = store.migrate(url)
            console.print(f"{store.redacted(url)}: schema revision {before} -> {after}"
                          + (" (already current)" if before == after else ""), markup=False)
            return EXIT_OK
        engine = store.open_for_reading(url)
        try:
            with engine.connect() as connection:
                if args.command == "ls":
                    emit(*queries.runs(connection, rig=args.rig, limit=args.limit), args, console)
                elif args.command == "show":
                    emit(*queries.show(connection, args.run), args, console, title=f"run {args.run}")
                elif args.command == "history":
                    columns, rows = queries.history(connection, args.rig, args.metric, dict(args.cell), args.since)
                    emit(columns, rows, args, console, title=f"{args.rig} {args.metric}")
                else:
                    emit(*queries.read_only_query(connection, args.sql), args, console)
        finally:
            engine.dispose()
    except (store.DatabaseError, queries.QueryError) as e:
        console.print(f"error: {printable(str(e))}", style="red", markup=False)
        return EXIT_BAD_INPUT
    except sa.exc.SQLAlchemyError as e:  # a server gone or refusing us mid-command: said, its password masked
        console.print(f"error: {printable(str(store.unreachable(url, e)))}", style="red", markup=False)
        return EXIT_BAD_INPUT
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
