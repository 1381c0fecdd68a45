"""Committed nights as the results database's tests read them: real runs of this VM, read from disk as
analysis/indexer.py reads them (without the analysis readers' checks, which live a floor above)."""

import os

import sqlalchemy as sa

from results import resultfile, safeio, store as file_store
from results.db import rows

BASELINES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "baselines")
AA = "calibration-nightly-gated-20261207-2vcpu"  # 12 results, an A/A night
PLANTED = "calibration-nightly-planted-20261207-2vcpu"  # 24 results, a planted 3 % slowdown: REGRESSED


def documents(name):
    """(manifest Document, [result Documents]) of a committed set, as the indexer makes them."""
    folder = os.path.join(BASELINES, name)

    def document(path, kind, content):
        return rows.Document(kind=kind, path=os.path.relpath(path, BASELINES), sha256=safeio.sha256_of(path),
                              size_bytes=os.path.getsize(path), content=content)

    manifest = os.path.join(folder, "manifest.json")
    results = [document(resultfile.result_path(folder, *key), "tunelab.cell_result",
                        resultfile.load_result(resultfile.result_path(folder, *key)))
               for key in sorted(resultfile.stored_results(folder))]
    return document(manifest, "tunelab.run_manifest", file_store.load_manifest(manifest)), results


def count(engine, table):
    """The rows of a table now."""
    with engine.connect() as connection:
        return connection.execute(sa.select(sa.func.count()).select_from(table)).scalar_one()
