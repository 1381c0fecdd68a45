"""What the indexer (analysis/indexer.py) writes beside a run's rows (issue 83): a night's checks as the gate judges
them, which the nightly history then reads back (analysis:history --matrix, the site) and must find equal to what
the same code makes from the documents; a set's sensitivity figures; a bisect and its steps, replaced when its
record grows. On SQLite and on a real PostgreSQL (results/db/pgserver.py).

Fixtures: committed calibration nights and bisects, a recorded profiled run (real runs of this VM) and a committed
sensitivity.json, copied into a made results root (the figures beside a SYNTHETIC set standing in for theirs); the
grown and broken bisect records are made here from a committed one."""

import contextlib
import io
import json
import os
import shutil
import tempfile
import unittest

from analysis import indexer, resultsets
from analysis.history import changepoints, command as history_command
from analysis.profiling import profiles
from analysis.reports import bisect_pages
from analysis.sensitivity import figures as sensitivity_figures
from analysis.testing.testsets import write_set
from results.db import pgserver, queries, schema, store

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "..", "results")
NIGHTS = ["calibration-nightly-gated-20261207-2vcpu", "calibration-nightly-planted-20261207-2vcpu"]
FIGURES = "calibration-gate-aa-20261124-2vcpu"  # its sensitivity.json: the calibration rig's figures
BISECT = "calibration-bisect-synthetic-20261128"
PROFILED = os.path.join(HERE, "testdata", "profiled_run")
PROFILED_RUN = "20261128T191712Z-edcd"  # a recorded profiled run (its README.md)


class ImporterCases:
    url = None  # set by each engine's class

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = os.path.join(self.tmp.name, "results")
        for name in NIGHTS:
            shutil.copytree(os.path.join(RESULTS, "baselines", name), os.path.join(self.root, "baselines", name))
        # The set the figures came from stands in as a made one (its 800 KB of results are not what is tested here).
        write_set(os.path.join(self.root, "baselines", FIGURES), [({}, 1000.0)], runs=2)
        shutil.copy(os.path.join(RESULTS, "baselines", FIGURES, "sensitivity.json"),
                    os.path.join(self.root, "baselines", FIGURES))
        shutil.copytree(os.path.join(RESULTS, "bisects", BISECT), os.path.join(self.root, "bisects", BISECT))
        self.engine = store.open_for_writing(self.database())

    def tearDown(self):
        self.engine.dispose()
        self.tmp.cleanup()

    def import_all(self):
        return indexer.import_folders(self.engine, indexer.default_folders(self.root), self.root, workers=2)

    def test_nights_read_back_equal_what_the_documents_give(self):
        outcome = self.import_all()
        self.assertEqual(outcome.refused, [])
        with self.engine.connect() as connection:
            rows = queries.night_checks(connection, matrix="calibration", profile="nightly")
            nights = {r.run: r for r in connection.execute(schema.nights.select())}
        self.assertEqual(len({r["run_id"] for r in rows}), 2)
        self.assertEqual({r["sets"][0] for r in rows}, set(NIGHTS))
        for name in NIGHTS:
            result_set = resultsets.load_run(os.path.join(self.root, "baselines", name))
            from_files = changepoints.nights([result_set], self.root)
            from_db, declared = changepoints.nights_from_rows([r for r in rows if r["sets"] == [name]])
            self.assertTrue(from_files)
            self.assertEqual(from_db.keys(), from_files.keys())
            for key in from_files:  # the same numbers: NaN where the gate had none on both sides
                self.assertEqual(repr(from_db[key]), repr(from_files[key]))
            self.assertEqual(declared["cpu_loop_rate"]["direction"], "higher_is_better")
        # The planted night REGRESSED by the gate's own rule, the A/A night passed: the night's verdict says so.
        states = sorted(n.gate_state for n in nights.values())
        self.assertEqual(states, ["PASS", "REGRESSED"])
        stated = {r["stated_d"] for r in rows if r["metric"] == "cpu_loop_rate"}
        self.assertTrue(all(d is not None and 0 < d < 0.2 for d in stated), stated)  # from the committed figure
        # The history command draws them from the database.
        out = os.path.join(self.tmp.name, "history.png")
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            code = history_command.main(["--matrix", "calibration", "--metric", "cpu_loop_rate", "--db", self.url,
                                         "--results-dir", self.root, "--out", out])
        self.assertEqual(code, 0, text.getvalue())
        self.assertIn("2 night(s) of --matrix calibration --metric cpu_loop_rate", text.getvalue())
        self.assertIn("1 PASS, 1 REGRESSED", text.getvalue())
        self.assertGreater(os.path.getsize(out), 5000)
        with contextlib.redirect_stderr(io.StringIO()) as err:
            self.assertEqual(history_command.main(["--matrix", "yarn_cps", "--db", self.url, "--out", out]), 2)
        self.assertIn("no night in", err.getvalue())

    def test_figures_and_bisects_and_a_grown_record(self):
        outcome = self.import_all()
        self.assertEqual((outcome.added.figures, outcome.added.bisects), (
            sum(len(m) for m in sensitivity_figures.read_file(
                os.path.join(self.root, "baselines", FIGURES, "sensitivity.json")).values()), 1))
        record = bisect_pages.read_record(os.path.join(self.root, "bisects", BISECT))
        with self.engine.connect() as connection:
            steps = connection.execute(schema.bisect_steps.select()
                                       .order_by(schema.bisect_steps.c.step)).all()
            bisect = connection.execute(schema.bisects.select()).one()
        self.assertEqual([(s.tested, s.verdict) for s in steps], [(s["commit"], s["verdict"]) for s in record["steps"]])
        self.assertEqual((bisect.name, bisect.answer_state, bisect.first_bad),
                         (BISECT, "found", record["answer"]["first_bad"]))
        again = self.import_all()
        self.assertEqual((again.added.documents, again.added.figures, again.added.bisects), (0, 0, 0))
        # A resumed bisect's record grew by a step: its rows are replaced, not doubled.
        path = os.path.join(self.root, "bisects", BISECT, "bisect.json")
        grown = dict(record, steps=record["steps"] + [dict(record["steps"][-1], index=record["steps"][-1]["index"])])
        with open(path, "w") as f:
            json.dump(grown, f)
        self.assertEqual(self.import_all().added.bisects, 1)
        with self.engine.connect() as connection:
            self.assertEqual(connection.execute(schema.bisect_steps.select()).all().__len__(),
                             len(record["steps"]) + 1)
            self.assertEqual(len(connection.execute(schema.bisects.select()).all()), 1)
        # A record the reader refuses (an unknown key: the schema is closed) is refused, named; nothing changes.
        with open(path, "w") as f:
            json.dump(dict(record, launcher="/bin/sh"), f)
        refused = self.import_all().refused
        self.assertEqual(len(refused), 1)
        self.assertIn("bisects/" + BISECT, refused[0][0] + refused[0][1])
        with self.engine.connect() as connection:
            self.assertEqual(len(connection.execute(schema.bisect_steps.select()).all()),
                             len(record["steps"]) + 1)

    def test_a_profiled_runs_movers_are_its_comparisons_rows(self):
        run = os.path.join(self.root, "vm-0035969e", PROFILED_RUN)
        shutil.copytree(os.path.join(PROFILED, "vm-0035969e", PROFILED_RUN), run)
        outcome = indexer.import_folders(self.engine, [run], self.root, workers=1)
        self.assertEqual(outcome.refused, [])
        (expected,) = profiles.comparisons(resultsets.load_run(run), event="cpu", top=10)
        with self.engine.connect() as connection:
            held = connection.execute(schema.profile_movers.select().order_by(schema.profile_movers.c.rank)).all()
        self.assertEqual([(m.frame, m.axis, m.candidate_value, m.event) for m in held],
                         [(r.frame, "injected_slowdown_pct", "20", "cpu") for r in expected.rows])
        self.assertEqual([m.moved for m in held], [r.moved for r in expected.rows])
        self.assertTrue(any(m.moved and "Calibration" in m.frame for m in held), held)  # the slowed loop moved
        # A profile whose bytes are not those its result records is not read: its repetition is left out of the
        # movers (named as missing), the others still give them.
        profile = os.path.join(run, "profiles", sorted(os.listdir(os.path.join(run, "profiles")))[0])
        with open(profile, "ab") as f:
            f.write(b"planted bytes")
        (tampered,) = profiles.comparisons(resultsets.load_run(run), event="cpu", top=10)
        self.assertTrue(any("sha256" in why for why in tampered.missing), tampered.missing)
        self.assertEqual([r["frame"] for r in indexer.mover_rows(resultsets.load_run(run))],
                         [r.frame for r in tampered.rows])

    def test_a_made_night_of_a_set_without_figures_still_has_its_checks(self):
        # A night whose rig has no committed figure: its checks keep this run's own D; the stated one is empty.
        folder = os.path.join(self.root, "baselines", "nightly-made-20261201")
        write_set(folder, [({"revision": "accepted"}, 1000.0), ({"revision": "candidate"}, 900.0)], runs=3,
                  rig="madeup")
        outcome = indexer.import_folders(self.engine, [folder], self.root, workers=1)
        self.assertEqual(outcome.refused, [])
        with self.engine.connect() as connection:
            rows = queries.night_checks(connection, rig="madeup")
        self.assertEqual(len(rows), 1)
        self.assertIsNone(rows[0]["stated_d"])
        self.assertEqual(rows[0]["state"], "REGRESSED")  # 10 % worse, asked 3 %
        self.assertAlmostEqual(rows[0]["worse_by"], 0.1, places=6)


class SQLiteTest(ImporterCases, unittest.TestCase):
    def database(self):
        self.url = "sqlite:///" + os.path.join(self.tmp.name, "t.sqlite")
        return self.url


class PostgreSQLTest(ImporterCases, unittest.TestCase):
    """A server for the class, a new database for each test."""

    @classmethod
    def setUpClass(cls):
        cls.server = pgserver.Server("indexer-test-password").__enter__()
        cls.databases = 0

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)

    def database(self):
        type(self).databases += 1
        self.url = self.server.create(f"indexer_test_{self.databases}")
        return self.url


if __name__ == "__main__":
    unittest.main()
