"""The nightly history dashboard (tools/grafana/tunelab-history.json) against what generates it and the schema it
reads: the committed file is the generator's output, and every query (its variables' and its panels', as Grafana
sends them for one rig and metric) runs on a real PostgreSQL (results/db/pgserver.py) holding two committed nights
indexed by analysis/indexer.py, and returns those nights; a database without the nights' table fails the check.

Fixtures: two committed calibration nights (real runs of this VM), copied into a made results root."""

import os
import shutil
import tempfile
import unittest

import alembic.command
import sqlalchemy as sa

from results.db import pgserver, queries as db_queries, store
from tools.grafana import nightly_dashboard
from analysis import indexer

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "..", "..", "results")
NIGHTS = ["calibration-nightly-gated-20261207-2vcpu", "calibration-nightly-planted-20261207-2vcpu"]


class GeneratedFile(unittest.TestCase):
    def test_the_committed_file_is_the_generated_one(self):
        with open(os.path.join(HERE, "tunelab-history.json")) as f:
            self.assertEqual(f.read(), nightly_dashboard.render(nightly_dashboard.dashboard()),
                             "regenerate: ./bazelw run //tools/grafana:nightly_dashboard -- --write")


class HistoryDashboard(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = pgserver.Server("history-dashboard-password").__enter__()
        cls.tmp = tempfile.TemporaryDirectory()
        cls.root = os.path.join(cls.tmp.name, "results")
        for name in NIGHTS:
            shutil.copytree(os.path.join(RESULTS, "baselines", name), os.path.join(cls.root, "baselines", name))
        cls.url = cls.server.create("history_dashboard")
        engine = store.open_for_writing(cls.url)
        try:
            outcome = indexer.import_folders(engine, indexer.default_folders(cls.root), cls.root, workers=1)
        finally:
            engine.dispose()
        assert not outcome.refused, outcome.refused

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)
        cls.tmp.cleanup()

    def test_every_query_runs_on_the_schema_and_returns_the_nights(self):
        rig, metric, results = nightly_dashboard.check(self.url)
        self.assertEqual((rig, metric), ("calibration", "cpu_loop_rate"))
        self.assertEqual(len(results), len(nightly_dashboard.queries(nightly_dashboard.dashboard())))
        for where, rows, error in results:
            self.assertEqual(error, "", where)
            self.assertGreater(rows, 0, where)
        # The worse-by panel returns one row a night, the gate's numbers as the database holds them.
        engine = sa.create_engine(self.url.replace("postgresql://", "postgresql+psycopg://"))
        try:
            with engine.connect() as connection:
                sql = nightly_dashboard.as_grafana_sends(nightly_dashboard.PANELS[0][4], "calibration", "cpu_loop_rate")
                got = db_queries.run_text(connection, sql).all()
                held = connection.exec_driver_sql(
                    "SELECT n.night_start, 100 * n.worse_by FROM night_checks n JOIN runs r ON r.id = n.run "
                    "WHERE r.rig = 'calibration' AND n.metric = 'cpu_loop_rate' ORDER BY 1").all()
        finally:
            engine.dispose()
        self.assertEqual(len(got), 2)
        self.assertEqual([(row[0], row[1]) for row in got], [tuple(row) for row in held])
        self.assertEqual(nightly_dashboard.main(["--check", self.url]), 0)

    def test_a_database_without_the_nights_table_fails_the_check(self):
        url = self.server.create("history_dashboard_old")
        engine = store.open_for_writing(url)
        try:
            with engine.begin() as connection:  # back to revision 0002: before night_checks
                alembic.command.downgrade(store._alembic_config(connection), "0002")
        finally:
            engine.dispose()
        with self.assertRaises(store.DatabaseError):  # an older revision is refused before any query
            nightly_dashboard.check(url)
        self.assertEqual(nightly_dashboard.main(["--check", url]), 2)
        # A query naming a column the schema does not have fails, named.
        broken = nightly_dashboard.PANELS[0][4].replace("n.worse_by", "n.worse_by_pct")
        engine = store.open_for_reading(self.url)
        try:
            with engine.connect() as connection, self.assertRaises(sa.exc.ProgrammingError):
                db_queries.run_text(connection, nightly_dashboard.as_grafana_sends(broken, "calibration", "cpu_loop_rate"))
        finally:
            engine.dispose()


if __name__ == "__main__":
    unittest.main()
