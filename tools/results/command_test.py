"""//tools:results from its command line, over SQLite: an import of real committed sets (refusals named, the rest
indexed; a second import adds nothing), a kill -9 in the middle of an import that the next import completes,
--rebuild of a corrupt file, the output formats, a team's PostgreSQL (a real server, results/db/pgserver.py) named by
TUNELAB_DB giving SQLite's answers, and a planted password that never reaches the output.

Fixtures: two committed calibration nights (real runs of this VM), copied into a made results root; the corrupt
and foreign folders are made here from them."""

import contextlib
import csv
import io
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest

import alembic.command
from rich.console import Console

from results.db import pgserver, rows, store
from tools.results import command

HERE = os.path.dirname(os.path.abspath(__file__))
BASELINES = os.path.join(HERE, "..", "..", "results", "baselines")
NIGHTS = ["calibration-nightly-gated-20261207-2vcpu", "calibration-nightly-planted-20261207-2vcpu"]
COPIES = 16  # of the planted night, for the killed import


def run(argv):
    """(exit status, console text, standard output) of one command."""
    text, out = io.StringIO(), io.StringIO()
    console = Console(file=text, width=100, highlight=False, soft_wrap=False)
    with contextlib.redirect_stdout(out):
        code = command.main(argv, console=console)
    return code, text.getvalue(), out.getvalue()


class Fixture(unittest.TestCase):
    """A results root holding the two nights, and the SQLite database beside it."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = os.path.join(self.tmp.name, "results")
        for name in NIGHTS:
            shutil.copytree(os.path.join(BASELINES, name), os.path.join(self.root, "baselines", name))
        self.db = ["--db", "sqlite:///" + os.path.join(self.tmp.name, "t.sqlite"), "--results-dir", self.root]

    def tearDown(self):
        self.tmp.cleanup()


class CommandTest(Fixture):
    def test_import_names_what_it_refuses_and_a_second_import_adds_nothing(self):
        broken = os.path.join(self.root, "baselines", "broken-copy")
        shutil.copytree(os.path.join(self.root, "baselines", NIGHTS[0]), broken)
        cell = sorted(os.listdir(os.path.join(broken, "cells")))[0]
        with open(os.path.join(broken, "cells", cell), "w") as f:
            f.write("{not json")
        code, text, _ = run(self.db + ["import"])
        self.assertEqual(code, command.EXIT_REFUSED)
        self.assertIn("2 of 3 folders indexed", text)
        self.assertIn("new 38 documents, 2 runs, 36 results", " ".join(text.split()))  # 2 manifests, 36 results
        self.assertRegex(" ".join(text.split()), r"refused: baselines/broken-copy: corrupt result in .*broken-copy")
        shutil.rmtree(broken)
        code, text, _ = run(self.db + ["import"])
        self.assertEqual(code, command.EXIT_OK)
        self.assertIn("new 0 documents, 0 runs, 0 results, 0 metric values, 0 sets, 0 sensitivity figures, 0 bisects "
                      "(all held already)", " ".join(text.split()))
        code, text, _ = run(["import", os.path.join(self.tmp.name, "nowhere")] + self.db)
        self.assertEqual(code, command.EXIT_BAD_INPUT)
        self.assertIn("is not a folder", text)

    def test_after_a_migration_the_next_import_reads_every_folder_again(self):
        self.assertEqual(run(self.db + ["import"])[0], command.EXIT_OK)
        checks = "SELECT count(*) AS n FROM gate_checks"
        self.assertEqual(json.loads(run(self.db + ["--json", "query", checks])[2]), [{"n": 2}])
        engine = store.connect(self.db[1])
        with engine.begin() as connection:  # the database as revision 0001 left it: no gate checks kept
            alembic.command.downgrade(store._alembic_config(connection), "0001")
        engine.dispose()
        code, text, _ = run(self.db + ["ls"])
        self.assertEqual(code, command.EXIT_BAD_INPUT)
        self.assertIn("older than this checkout's", text)
        code, text, _ = run(self.db + ["migrate"])
        self.assertIn("schema revision 0001 -> 0003", text)
        nights = "SELECT count(*) AS n FROM night_checks"
        self.assertEqual(json.loads(run(self.db + ["--json", "query", checks])[2]), [{"n": 0}])
        self.assertEqual(json.loads(run(self.db + ["--json", "query", nights])[2]), [{"n": 0}])
        code, text, _ = run(self.db + ["import"])
        self.assertIn("new 0 documents, 0 runs, 0 results", " ".join(text.split()))
        self.assertEqual(json.loads(run(self.db + ["--json", "query", checks])[2]), [{"n": 2}])
        self.assertEqual(json.loads(run(self.db + ["--json", "query", nights])[2]), [{"n": 2}])  # a metric a night
        self.assertFalse(rows.reread_pending(store.connect(self.db[1])))

    def test_the_answers_fit_100_columns_or_come_as_csv_and_json(self):
        self.assertEqual(run(self.db + ["import"])[0], command.EXIT_OK)
        code, text, _ = run(self.db + ["ls"])
        self.assertEqual(code, command.EXIT_OK)
        self.assertEqual(len([line for line in text.splitlines() if "calibration" in line]), 2)
        self.assertLessEqual(max(len(line) for line in text.splitlines()), 100)
        code, _, out = run(self.db + ["history", "--rig", "calibration", "--metric", "cpu_loop_rate", "--csv"])
        history = list(csv.DictReader(io.StringIO(out)))
        self.assertEqual(len(history), 4)  # two nights, two revisions each
        self.assertEqual({r["parameters"] for r in history}, {"revision=accepted", "revision=candidate"})
        code, _, out = run(self.db + ["--json", "query", "SELECT rig, decided_state FROM nights JOIN runs ON runs.id = "
                                      "nights.run ORDER BY decided_state"])
        self.assertEqual(json.loads(out), [{"rig": "calibration", "decided_state": "PASS"},
                                           {"rig": "calibration", "decided_state": "REGRESSED"}])
        code, text, _ = run(self.db + ["show", "20261207T000000Z-0000"])
        self.assertEqual(code, command.EXIT_BAD_INPUT)
        self.assertIn("no run '20261207T000000Z-0000'", text)

    def test_a_killed_import_leaves_a_database_the_next_import_completes(self):
        # Copies of the nights (each its own run: a fresh run id in its manifest and results), enough that the
        # import is still running when it is killed after its first few runs (16: 40 cost ~15 s more).
        source = os.path.join(self.root, "baselines", NIGHTS[1])
        with open(os.path.join(source, "manifest.json")) as f:
            run_id = json.load(f)["run_id"]
        for n in range(COPIES):
            copy = os.path.join(self.root, "host-a", f"20261207T0100{n:02d}Z-aaaa")
            shutil.copytree(source, copy)
            for folder, _, files in os.walk(copy):
                for name in files:
                    path = os.path.join(folder, name)
                    with open(path) as f:
                        text = f.read()
                    with open(path, "w") as f:
                        f.write(text.replace(run_id, os.path.basename(copy)))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        child = subprocess.Popen([sys.executable, "-m", "tools.results.command", "import"] + self.db, env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        database = os.path.join(self.tmp.name, "t.sqlite")
        held, deadline = 0, time.monotonic() + 120
        while child.poll() is None and held < 3 and time.monotonic() < deadline:  # killed once some runs are in
            time.sleep(0.02)
            with contextlib.suppress(sqlite3.Error):
                with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=5)) as db:
                    held = db.execute("SELECT count(*) FROM runs").fetchone()[0]
        killed = child.poll() is None
        if killed:
            os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        self.assertTrue(killed, "the import ended before it was killed: make it larger")
        code, text, _ = run(self.db + ["import"])
        self.assertEqual(code, command.EXIT_OK, text)
        code, _, out = run(self.db + ["--json", "query", "SELECT count(*) AS runs FROM runs"])
        self.assertEqual(json.loads(out), [{"runs": COPIES + 2}])
        code, _, out = run(self.db + ["--json", "query", "SELECT count(*) AS results FROM results"])
        self.assertEqual(json.loads(out), [{"results": 12 + (COPIES + 1) * 24}])

    def test_a_corrupt_database_is_refused_until_rebuilt_and_a_password_is_never_shown(self):
        path = os.path.join(self.tmp.name, "t.sqlite")
        with open(path, "wb") as f:
            f.write(b"\x00garbage")
        code, text, _ = run(self.db + ["import"])
        self.assertEqual(code, command.EXIT_BAD_INPUT)
        self.assertIn("not an SQLite database", text)
        self.assertIn("--rebuild", text)
        code, text, _ = run(self.db + ["import", "--rebuild"])
        self.assertEqual(code, command.EXIT_OK, text)
        planted = "Pl4nted-s3cret"
        for argv in (["--db", f"postgresql://tunelab:{planted}@127.0.0.1:9/results", "ls"],
                     ["--db", f"postgresql://tunelab:{planted}@127.0.0.1:9/results", "import"],
                     ["--db", f"mysql://tunelab:{planted}@127.0.0.1:9/results", "ls"]):
            code, text, out = run(argv + ["--results-dir", self.root])
            self.assertEqual(code, command.EXIT_BAD_INPUT, text)
            self.assertNotIn(planted, text + out)
            self.assertIn("error:", text)

class TeamPostgreSQLTest(Fixture):
    """A PostgreSQL server the test starts (//tools/results:command_postgresql_test, tagged server)."""

    def test_a_team_postgresql_from_the_environment_answers_as_sqlite_and_never_shows_its_password(self):
        planted = "Pl4nted-team-s3cret"
        with pgserver.Server(planted) as server:
            url = server.create("team")
            os.environ[store.ENV_VAR] = url
            try:
                said = [run(["import", "--results-dir", self.root]), run(["ls", "--results-dir", self.root]),
                        run(["--csv", "history", "--rig", "calibration", "--metric", "cpu_loop_rate",
                             "--results-dir", self.root])]
            finally:
                del os.environ[store.ENV_VAR]
            sqlite = run(self.db + ["import"]), run(self.db + ["--csv", "history", "--rig", "calibration",
                                                                "--metric", "cpu_loop_rate"])
        self.assertEqual([code for code, _, _ in said], [command.EXIT_OK] * 3)
        self.assertIn("postgresql://tunelab:***@127.0.0.1", said[0][1])
        self.assertEqual(said[2][2], sqlite[1][2])  # the same history from both engines
        for code, text, out in said:
            self.assertNotIn(planted, text + out)


if __name__ == "__main__":
    unittest.main()
