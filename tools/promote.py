"""Promotes a fresh run to a curated baseline: results/<host>/<run>/ -> results/baselines/<name>/.

    bazel run //tools:promote -- RUN --name NAME [--replace]

Copies the manifest, every cell result and the profiles they name (policy.profile; each checked against the
sha256 its result records), not logs or work folders, after validating each result; refuses
to overwrite an existing baseline unless --replace, and then swaps it in whole (never half-written). Then the
set is indexed in the results database (//tools:results; --db or TUNELAB_DB, else results/.db/tunelab.sqlite): the
document first, its rows after. A database that cannot take it is said, and the promotion stands (`bazel run
//tools:results -- import` indexes it later).
"""

import argparse
import os
import sys

import sqlalchemy as sa

from analysis import resultsets
from results import store
from results.db import store as db_store
from analysis import indexer


def promote(run_folder, baselines, name, replace=False):
    """results/store.py does the writing (staged, renamed into place), after every result is validated."""
    return store.promote(run_folder, baselines, name, replace, load_run=resultsets.load_run)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Promote a run to results/baselines/NAME (commit it afterwards).")
    parser.add_argument("run", help="a run folder or run id")
    parser.add_argument("--name", required=True)
    parser.add_argument("--replace", action="store_true", help="replace an existing baseline of that name")
    parser.add_argument("--db", default="", help="the results database that indexes the set (default: $TUNELAB_DB, "
                        "else results/.db/tunelab.sqlite)")
    args = parser.parse_args(argv)
    workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY", os.getcwd())
    cwd = os.environ.get("BUILD_WORKING_DIRECTORY", os.getcwd())
    results_root = os.path.join(workspace, "results")
    try:
        run = args.run if os.path.isabs(args.run) else os.path.join(cwd, args.run)
        folder = run if os.path.isdir(run) else resultsets.resolve(args.run, results_root).path
        target, n = promote(folder, os.path.join(results_root, "baselines"), args.name, args.replace)
    except (resultsets.ResultSetError, store.StoreError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"promoted {n} results to {target}; commit it to share the baseline")
    print(index(target, results_root, db_store.database_url(args.db, results_root)))
    return 0


def index(folder, results_root, url):
    """The promoted set indexed in the results database: one line saying so, or why not (the set stays promoted)."""
    try:
        engine = db_store.open_for_writing(url)
        try:
            outcome = indexer.import_folders(engine, [folder], results_root)
        finally:
            engine.dispose()
    except db_store.DatabaseError as e:
        return f"not indexed in the results database: {e}"
    except sa.exc.SQLAlchemyError as e:
        return f"not indexed in the results database: {db_store.unreachable(url, e)}"
    if outcome.refused:
        return f"not indexed in the results database: {outcome.refused[0][1]}"
    return f"indexed in the results database {db_store.redacted(url)} ({outcome.added.results} new results)"


if __name__ == "__main__":
    sys.exit(main())
