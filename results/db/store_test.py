"""The results database on SQLite: made at the head revision and equal to schema.py, refusals (corrupt, foreign,
newer, older), an import that is idempotent and all-or-nothing, a migration that keeps every row, and
concurrent writers.

Fixtures: committed nightly sets (real runs of this VM): calibration-nightly-gated-20261207-2vcpu (12 results,
A/A) and calibration-nightly-planted-20261207-2vcpu (24 results, a planted 3 % slowdown) (results/db/testdocs.py)."""

import multiprocessing
import os
import sqlite3
import tempfile
import unittest

import alembic.command
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime import migration

from results.db import schema, store
from results.db.testdocs import AA, PLANTED, count, documents



def _import_in_child(url, name, barrier):
    engine = store.open_for_writing(url)
    manifest, results = documents(name)
    barrier.wait()
    store.import_run(engine, manifest, results, set_name=name)
    engine.dispose()


class StoreTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.tmp.name, "db", "tunelab.sqlite")
        self.url = "sqlite:///" + self.path

    def tearDown(self):
        self.tmp.cleanup()

    def test_a_new_database_is_made_at_the_head_revision_and_equals_the_schema(self):
        engine = store.open_for_writing(self.url)
        with engine.connect() as connection:
            self.assertEqual(store.state(connection), ("ours", store.head_revision()))
            # The migrations and schema.py describe the same tables, columns, keys and indexes.
            self.assertEqual(compare_metadata(migration.MigrationContext.configure(connection), schema.metadata), [])
            self.assertEqual(connection.exec_driver_sql("PRAGMA journal_mode").scalar(), "wal")
        engine.dispose()
        store.open_for_writing(self.url).dispose()  # opened again: nothing to do
        self.assertEqual(store.database_url("", "/r"), "sqlite:////r/.db/tunelab.sqlite")

    def test_a_corrupt_a_foreign_and_a_newer_database_are_refused_and_left_as_they_are(self):
        os.makedirs(os.path.dirname(self.path))
        with open(self.path, "wb") as f:
            f.write(b"not a database at all")
        for opener in (store.open_for_writing, store.open_for_reading):
            with self.assertRaisesRegex(store.DatabaseError, r"tunelab\.sqlite is not an SQLite database.*--rebuild"):
                opener(self.url)
        with open(self.path, "rb") as f:
            self.assertEqual(f.read(), b"not a database at all")
        os.unlink(self.path)
        with sqlite3.connect(self.path) as other:
            other.execute("CREATE TABLE invoices (id INTEGER)")
        with self.assertRaisesRegex(store.DatabaseError, "not a tunelab results database"):
            store.open_for_writing(self.url)
        with self.assertRaisesRegex(store.DatabaseError, "not a tunelab results database: not removed"):
            store.drop_everything(self.url)
        with sqlite3.connect(self.path) as other:
            self.assertEqual(other.execute("SELECT name FROM sqlite_master").fetchall(), [("invoices",)])
        os.unlink(self.path)
        store.open_for_writing(self.url).dispose()
        with sqlite3.connect(self.path) as ours:
            ours.execute("UPDATE alembic_version SET version_num = 'f00d'")
        with self.assertRaisesRegex(store.DatabaseError, "revision 'f00d', newer than this checkout's"):
            store.open_for_reading(self.url)
        with self.assertRaisesRegex(store.DatabaseError, "newer"):
            store.migrate(self.url)
        store.drop_everything(self.url)  # --rebuild: the user's explicit choice
        self.assertFalse(os.path.exists(self.path))

    def test_an_import_adds_each_document_once_and_a_contradiction_writes_nothing(self):
        engine = store.open_for_writing(self.url)
        manifest, results = documents(AA)
        added = store.import_run(engine, manifest, results, set_name=AA)
        self.assertEqual((added.documents, added.runs, added.results, added.sets), (13, 1, 12, 1))
        self.assertEqual(added.metric_values, sum(len(r.content["metrics"]) for r in results))
        again = store.import_run(engine, manifest, results, set_name=AA)
        self.assertEqual((again.documents, again.runs, again.results, again.metric_values, again.sets), (0, 0, 0, 0, 0))
        self.assertEqual(count(engine, schema.results), 12)
        self.assertEqual(count(engine, schema.set_documents), 13)
        # A result whose place is held by another document (a forged copy of one): refused, named, and the run
        # is not half written (its other results, its cells, its run row: one transaction).
        other_manifest, other_results = documents(PLANTED)
        forged = store.Document(kind=results[0].kind, path="forged/cells/x.json", sha256="0" * 64, size_bytes=1,
                                content=other_results[0].content)
        before = {t.name: count(engine, t) for t in schema.metadata.sorted_tables}
        with self.assertRaisesRegex(store.ImportRefused, "forged/cells/x.json: .* held already as another document"):
            store.import_run(engine, other_manifest, other_results + [forged], set_name=PLANTED)
        with self.assertRaisesRegex(store.ImportRefused, "x.json: of run 2026.*, not of its manifest's run"):
            store.import_run(engine, manifest, [forged])
        self.assertEqual({t.name: count(engine, t) for t in schema.metadata.sorted_tables}, before)
        store.import_run(engine, other_manifest, other_results)
        self.assertEqual(count(engine, schema.runs), 2)
        engine.dispose()

    def test_a_night_and_its_gate_checks_come_from_the_manifest(self):
        engine = store.open_for_writing(self.url)
        manifest, results = documents(PLANTED)
        store.import_run(engine, manifest, results, set_name=PLANTED)
        sequential = manifest.content["sequential"]
        with engine.connect() as connection:
            checks = connection.execute(sa.select(schema.gate_checks)).mappings().all()
            night = connection.execute(sa.select(schema.nights)).mappings().one()
        self.assertEqual(len(checks), len(sequential["comparisons"]))
        comparison = sequential["comparisons"][0]
        check = next(c for c in checks if c["metric"] == comparison["metric"])
        self.assertEqual((check["state"], check["rounds"]), (comparison["look"]["state"], comparison["look"]["rounds"]))
        self.assertAlmostEqual(check["ratio"], comparison["look"]["ratio"])
        self.assertEqual(check["state"], "REGRESSED")  # the planted 3 % slowdown (results/baselines/README.md)
        self.assertEqual(night["decided_state"], "REGRESSED")
        self.assertEqual(night["accepted_commit"], manifest.content["revisions"]["accepted"]["commit"])
        self.assertEqual(night["rounds"], sequential["rounds"])
        self.assertEqual(str(night["night"]), "2026-12-07")
        engine.dispose()

    def test_a_database_of_the_older_revision_is_migrated_keeping_every_row(self):
        engine = store.open_for_writing(self.url)
        for name in (AA, PLANTED):
            store.import_run(engine, *documents(name), set_name=name)
        kept = ("documents", "runs", "cells", "cell_params", "results", "metric_values", "sets", "set_documents")
        before = {name: count(engine, schema.metadata.tables[name]) for name in kept}
        checks = count(engine, schema.gate_checks)
        with engine.begin() as connection:  # the database as revision 0001 made it, with its rows
            config = store._alembic_config(connection)
            alembic.command.downgrade(config, "0001")
        engine.dispose()
        with self.assertRaisesRegex(store.DatabaseError, "revision 0001, older than .* migrate"):
            store.open_for_writing(self.url)
        self.assertEqual(store.migrate(self.url), ("0001", store.head_revision()))
        engine = store.open_for_writing(self.url)
        self.assertEqual({name: count(engine, schema.metadata.tables[name]) for name in kept}, before)
        self.assertEqual(count(engine, schema.gate_checks), 0)  # made by the next import, from the manifests
        for name in (AA, PLANTED):
            added = store.import_run(engine, *documents(name), set_name=name)
            self.assertEqual(added.documents, 0)
        self.assertEqual(count(engine, schema.gate_checks), checks)
        self.assertEqual(count(engine, schema.nights), 2)
        engine.dispose()

    def test_concurrent_writers_lose_nothing_and_double_nothing(self):
        store.open_for_writing(self.url).dispose()
        context = multiprocessing.get_context("spawn")
        barrier = context.Barrier(4)
        children = [context.Process(target=_import_in_child, args=(self.url, name, barrier))
                    for name in (AA, PLANTED, AA, PLANTED)]
        for child in children:
            child.start()
        for child in children:
            child.join(120)
        self.assertEqual([c.exitcode for c in children], [0, 0, 0, 0])
        engine = store.open_for_reading(self.url)
        self.assertEqual(count(engine, schema.runs), 2)
        self.assertEqual(count(engine, schema.results), 36)
        self.assertEqual(count(engine, schema.sets), 2)
        engine.dispose()


if __name__ == "__main__":
    unittest.main()
