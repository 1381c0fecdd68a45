"""The results database, the same cases on SQLite and on a real PostgreSQL (results/db/pgserver.py): made at the
head revision and equal to schema.py, refusals (foreign, newer, older; on SQLite a corrupt file), an import that is
idempotent and all-or-nothing, a migration that keeps every row, and concurrent writers.

Fixtures: committed nightly sets (real runs of this VM): calibration-nightly-gated-20261207-2vcpu (12 results,
A/A) and calibration-nightly-planted-20261207-2vcpu (24 results, a planted 3 % slowdown) (results/db/testdocs.py)."""

import multiprocessing
import os
import tempfile
import unittest

import alembic.command
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime import migration

from results.db import pgserver, rows, schema, store
from results.db.testdocs import AA, PLANTED, count, documents


def _import_in_child(url, name, barrier):
    manifest, results = documents(name)
    barrier.wait()
    engine = store.open_for_writing(url)
    rows.import_run(engine, manifest, results, set_name=name)
    engine.dispose()


class Cases:
    """What both engines must do; self.url is a new empty database of the engine under test."""

    def test_a_new_database_is_made_at_the_head_revision_and_equals_the_schema(self):
        engine = store.open_for_writing(self.url)
        with engine.connect() as connection:
            self.assertEqual(store.state(connection), ("ours", store.head_revision()))
            # The migrations and schema.py describe the same tables, columns, keys and indexes.
            self.assertEqual(compare_metadata(migration.MigrationContext.configure(connection), schema.metadata), [])
        engine.dispose()
        store.open_for_writing(self.url).dispose()  # opened again: nothing to do

    def test_an_import_adds_each_document_once_and_a_contradiction_writes_nothing(self):
        engine = store.open_for_writing(self.url)
        manifest, results = documents(AA)
        added = rows.import_run(engine, manifest, results, set_name=AA)
        self.assertEqual((added.documents, added.runs, added.results, added.sets), (13, 1, 12, 1))
        self.assertEqual(added.metric_values, sum(len(r.content["metrics"]) for r in results))
        again = rows.import_run(engine, manifest, results, set_name=AA)
        self.assertEqual((again.documents, again.runs, again.results, again.metric_values, again.sets), (0, 0, 0, 0, 0))
        self.assertEqual(count(engine, schema.results), 12)
        self.assertEqual(count(engine, schema.set_documents), 13)
        # A result whose place is held by another document (a forged copy of one): refused, named, and the run
        # is not half written (its other results, its cells, its run row: one transaction).
        other_manifest, other_results = documents(PLANTED)
        forged = rows.Document(kind=results[0].kind, path="forged/cells/x.json", sha256="0" * 64, size_bytes=1,
                                content=other_results[0].content)
        before = {t.name: count(engine, t) for t in schema.metadata.sorted_tables}
        with self.assertRaisesRegex(rows.ImportRefused, "forged/cells/x.json: .* held already as another document"):
            rows.import_run(engine, other_manifest, other_results + [forged], set_name=PLANTED)
        with self.assertRaisesRegex(rows.ImportRefused, "x.json: of run 2026.*, not of its manifest's run"):
            rows.import_run(engine, manifest, [forged])
        self.assertEqual({t.name: count(engine, t) for t in schema.metadata.sorted_tables}, before)
        rows.import_run(engine, other_manifest, other_results)
        self.assertEqual(count(engine, schema.runs), 2)
        engine.dispose()

    def test_a_night_and_its_gate_checks_come_from_the_manifest(self):
        engine = store.open_for_writing(self.url)
        manifest, results = documents(PLANTED)
        rows.import_run(engine, manifest, results, set_name=PLANTED)
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
            rows.import_run(engine, *documents(name), set_name=name)
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
            added = rows.import_run(engine, *documents(name), set_name=name)
            self.assertEqual(added.documents, 0)
        self.assertEqual(count(engine, schema.gate_checks), checks)
        self.assertEqual(count(engine, schema.nights), 2)
        engine.dispose()

    def test_concurrent_writers_lose_nothing_and_double_nothing(self):
        # Four writers at once, two of each night, the database not made yet: they race to make it too.
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

    def test_a_foreign_and_a_newer_database_are_refused_and_left_as_they_are(self):
        other = store.connect(self.url)
        with other.begin() as connection:
            connection.exec_driver_sql("CREATE TABLE invoices (id INTEGER)")
        with self.assertRaisesRegex(store.DatabaseError, "not a tunelab results database"):
            store.open_for_writing(self.url)
        with self.assertRaisesRegex(store.DatabaseError, "not a tunelab results database"):
            store.drop_everything(self.url)
        with other.begin() as connection:
            self.assertEqual(sa.inspect(connection).get_table_names(), ["invoices"])
            connection.exec_driver_sql("DROP TABLE invoices")
        store.open_for_writing(self.url).dispose()
        with other.begin() as connection:
            connection.exec_driver_sql("UPDATE alembic_version SET version_num = 'f00d'")
        other.dispose()
        with self.assertRaisesRegex(store.DatabaseError, "revision 'f00d', newer than this checkout's"):
            store.open_for_reading(self.url)
        with self.assertRaisesRegex(store.DatabaseError, "newer"):
            store.migrate(self.url)
        store.drop_everything(self.url)  # --rebuild: the user's explicit choice
        store.open_for_writing(self.url).dispose()


class SQLiteStoreTest(Cases, unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.tmp.name, "db", "tunelab.sqlite")
        self.url = "sqlite:///" + self.path

    def tearDown(self):
        self.tmp.cleanup()

    def test_the_default_file_is_in_wal_mode_under_the_results_root(self):
        self.assertEqual(store.database_url("", "/r"), "sqlite:////r/.db/tunelab.sqlite")
        engine = store.open_for_writing(self.url)
        with engine.connect() as connection:
            self.assertEqual(connection.exec_driver_sql("PRAGMA journal_mode").scalar(), "wal")
        engine.dispose()

    def test_a_corrupt_file_is_refused_and_kept_until_rebuilt(self):
        os.makedirs(os.path.dirname(self.path))
        with open(self.path, "wb") as f:
            f.write(b"not a database at all")
        for opener in (store.open_for_writing, store.open_for_reading):
            with self.assertRaisesRegex(store.DatabaseError, r"tunelab\.sqlite is not an SQLite database.*--rebuild"):
                opener(self.url)
        with open(self.path, "rb") as f:
            self.assertEqual(f.read(), b"not a database at all")
        store.drop_everything(self.url)  # --rebuild: the user's explicit choice
        self.assertFalse(os.path.exists(self.path))
        store.open_for_writing(self.url).dispose()


class PostgresStoreTest(Cases, unittest.TestCase):
    """A server for the class, a new database for each test."""

    @classmethod
    def setUpClass(cls):
        cls.server = pgserver.Server("store-test-password").__enter__()
        cls.databases = 0

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)

    def setUp(self):
        type(self).databases += 1
        self.url = self.server.create(f"store_test_{self.databases}")


if __name__ == "__main__":
    unittest.main()
