"""Promotes a fresh run to a curated baseline: results/<host>/<run>/ -> results/baselines/<name>/.

    bazel run //tools:promote -- RUN --name NAME [--replace]

Copies the manifest and every cell result (not logs or work folders), after validating each result; refuses
to overwrite an existing baseline unless --replace, and then swaps it in whole (never half-written).
"""

import argparse
import os
import shutil
import sys
import tempfile

from analysis import resultsets


def promote(run_folder, baselines, name, replace=False):
    result_set = resultsets.load_run(run_folder)  # validates every result; raises on a corrupt one
    if not name.replace("-", "").replace("_", "").isalnum():
        raise resultsets.ResultSetError(f"baseline name {name!r}: use letters, digits, - and _")
    target = os.path.join(baselines, name)
    if os.path.exists(target) and not replace:
        raise resultsets.ResultSetError(f"{target} exists; pass --replace to swap it for {run_folder}")
    os.makedirs(baselines, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=f".{name}-", dir=baselines)
    shutil.copy2(os.path.join(run_folder, "manifest.json"), staging)
    shutil.copytree(os.path.join(run_folder, "cells"), os.path.join(staging, "cells"),
                    ignore=shutil.ignore_patterns(".tmp-*"))
    old = None
    if os.path.exists(target):
        old = target + ".old"
        os.replace(target, old)
    os.replace(staging, target)
    if old:
        shutil.rmtree(old)
    return target, len(result_set.docs)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Promote a run to results/baselines/NAME (commit it afterwards).")
    parser.add_argument("run", help="a run folder or run id")
    parser.add_argument("--name", required=True)
    parser.add_argument("--replace", action="store_true", help="replace an existing baseline of that name")
    args = parser.parse_args(argv)
    workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY", os.getcwd())
    cwd = os.environ.get("BUILD_WORKING_DIRECTORY", os.getcwd())
    results_root = os.path.join(workspace, "results")
    try:
        run = args.run if os.path.isabs(args.run) else os.path.join(cwd, args.run)
        folder = run if os.path.isdir(run) else resultsets.resolve(args.run, results_root).path
        target, n = promote(folder, os.path.join(results_root, "baselines"), args.name, args.replace)
    except (resultsets.ResultSetError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"promoted {n} results to {target}; commit it to share the baseline")
    return 0


if __name__ == "__main__":
    sys.exit(main())
