"""The queries users ask of the results database, against the documents they come from: a metric's history and
one run's medians are the medians of its result documents; a user's SQL is read-only, one statement, bounded. On
SQLite and on a real PostgreSQL (results/db/pgserver.py).
Fixture: calibration-nightly-planted-20261207-2vcpu (a real night of this VM, results/db/testdocs.py)."""

import os
import statistics
import tempfile
import unittest


from results.db import pgserver, queries, rows, schema, store
from results.db.testdocs import PLANTED, count, documents


class Cases:
    """The same answers from both engines; self.url is a new empty database."""

    def test_history_and_show_are_the_medians_of_the_documents(self):
        engine = store.open_for_writing(self.url)
        manifest, results = documents(PLANTED)
        rows.import_run(engine, manifest, results)
        engine.dispose()
        engine = store.open_for_reading(self.url)
        expected = {}
        for r in results:
            if r.content["status"] == "ok":
                value = next(m["value"] for m in r.content["metrics"] if m["name"] == "cpu_loop_rate")
                expected.setdefault(r.content["cell"]["params"]["revision"], []).append(value)
        with engine.connect() as connection:
            columns, answer = queries.history(connection, "calibration", "cpu_loop_rate")
            self.assertEqual(columns[:3], ["run", "host", "parameters"])
            by_side = {row[2]: row for row in answer}
            self.assertEqual(set(by_side), {"revision=accepted", "revision=candidate"})
            for side, values in expected.items():
                self.assertEqual(by_side[f"revision={side}"][4], f"{statistics.median(values):.6g}")
                self.assertEqual(by_side[f"revision={side}"][6], len(values))
            _, only = queries.history(connection, "calibration", "cpu_loop_rate", cell={"revision": "candidate"})
            self.assertEqual(len(only), 1)
            _, none = queries.history(connection, "calibration", "cpu_loop_rate", cell={"revision": "nope"})
            self.assertEqual(none, [])
            _, shown = queries.show(connection, manifest.content["run_id"])
            self.assertIn(f"{statistics.median(expected['candidate']):.6g}",
                          [row[3] for row in shown if row[1] == "revision=candidate" and row[2] == "cpu_loop_rate"])
            with self.assertRaisesRegex(queries.QueryError, "no run 'nope'"):
                queries.show(connection, "nope")
            self.assertEqual(queries.read_only_query(connection, "SELECT count(*) AS n FROM results"), (["n"], [(24,)]))
            # A % is the user's (LIKE, a column's name), not a placeholder: psycopg would read it as one.
            self.assertEqual(queries.read_only_query(
                connection, "SELECT count(*) AS \"runs %\" FROM runs WHERE rig LIKE 'calib%'"), (["runs %"], [(1,)]))
            for sql, why in (("DELETE FROM results", "refused the query: .*(readonly database|read-only transaction)"),
                             ("SELECT 1; DELETE FROM results", "one statement only"),
                             ("SELECT * FROM results", "more than 5 rows")):
                with self.assertRaisesRegex(queries.QueryError, why):
                    queries.read_only_query(connection, sql, limit=5)
        self.assertEqual(count(engine, schema.results), 24)
        engine.dispose()



class SQLiteQueriesTest(Cases, unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.url = "sqlite:///" + os.path.join(self.tmp.name, "tunelab.sqlite")

    def tearDown(self):
        self.tmp.cleanup()


class PostgresQueriesTest(Cases, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = pgserver.Server("queries-test-password").__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)

    def setUp(self):
        self.url = self.server.create("queries_test")


if __name__ == "__main__":
    unittest.main()
