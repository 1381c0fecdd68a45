"""rigs/main.py with the fake rig (rigs/matrix/testing/fakerig.py): --run-info tells a calling script the exit status,
the run id and the run folder as JSON (nightly.sh and the gate's --confirm read it, never the console), for a
run that completed, one refused before it started, and one refused by the host lock."""

import contextlib
import io
import json
import os
import sqlite3
import unittest

from rich.console import Console

from rigs import main as rig_main
from rigs.host import hoststate
from rigs.matrix import runner
from rigs.matrix.testing.fakerig import FakeRigTestCase


class RunInfoTest(FakeRigTestCase):
    def run_main(self, *extra):
        info = os.path.join(self.box.root, "info", "run-info.json")
        code = rig_main.main(self.box.args("--run-info", info, *extra), console=Console(file=io.StringIO(), width=80),
                             host_paths=self.box.paths, report=self.box.report())
        with open(info) as f:
            return code, json.load(f)

    def test_a_run_says_where_it_is_stored_and_how_it_ended(self):
        code, info = self.run_main()
        self.assertEqual(code, runner.EXIT_OK)
        (run_dir,) = self.box.run_dirs()
        self.assertEqual(info, {"schema": rig_main.RUN_INFO_SCHEMA, "status": 0, "status_name": "ok",
                                "run_id": os.path.basename(run_dir), "run_dir": run_dir})
        self.assertTrue(os.path.isfile(os.path.join(info["run_dir"], "manifest.json")))
        # Indexed in the results database beside its results (issue 83), the default SQLite file.
        database = sqlite3.connect(os.path.join(os.path.dirname(os.path.dirname(run_dir)), ".db", "tunelab.sqlite"))
        try:
            self.assertEqual(database.execute("SELECT run_id, state FROM runs").fetchall(),
                             [(os.path.basename(run_dir), "complete")])
        finally:
            database.close()

    def test_a_database_that_cannot_take_the_run_leaves_its_status(self):
        corrupt = os.path.join(self.box.root, "corrupt.sqlite")
        with open(corrupt, "wb") as f:
            f.write(b"not a database" * 100)
        os.environ["TUNELAB_DB"] = "sqlite:///" + corrupt
        try:
            out = io.StringIO()
            code = rig_main.main(self.box.args(), console=Console(file=out, width=200), host_paths=self.box.paths,
                                 report=self.box.report())
        finally:
            del os.environ["TUNELAB_DB"]
        self.assertEqual(code, runner.EXIT_OK)
        self.assertIn("results database: the run is not indexed in sqlite:///", " ".join(out.getvalue().split()))

    def test_a_refused_run_has_no_folder(self):
        code, info = self.run_main("--set", "jdk=11")
        self.assertEqual(code, runner.EXIT_BAD_INPUT)
        self.assertEqual((info["status"], info["status_name"], info["run_id"], info["run_dir"]),
                         (2, "bad_input", None, None))

    def test_a_run_refused_by_the_host_lock_says_so(self):
        lock = hoststate.HostLock(os.path.join(self.box.state_dir, hoststate.LOCK_NAME))
        lock.acquire({"run_id": "20261121T000000Z-beef", "pid": 1})
        try:
            code, info = self.run_main()
        finally:
            lock.release()
        self.assertEqual((code, info["status_name"], info["run_dir"]), (runner.EXIT_LOCKED, "locked", None))


class RunInfoTargetTest(unittest.TestCase):
    def test_only_a_regular_file_or_nothing_is_replaced_and_the_status_stays(self):
        # Issue 58, row 10: a FIFO or device at --run-info became a regular file (as root, /dev/null was
        # replaced); a folder there masked the runner's exit status with IsADirectoryError.
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            fifo, folder, link = os.path.join(d, "fifo"), os.path.join(d, "folder"), os.path.join(d, "link")
            os.mkfifo(fifo)
            os.mkdir(folder)
            os.symlink(os.path.join(d, "elsewhere"), link)
            for path in (fifo, folder, link):
                err = io.StringIO()
                with contextlib.redirect_stderr(err):
                    rig_main.write_run_info(path, runner.EXIT_CELLS_FAILED, "")
                self.assertIn("not a regular file", err.getvalue())
            self.assertTrue(os.path.exists(fifo) and not os.path.isfile(fifo))
            self.assertTrue(os.path.islink(link) and not os.path.exists(os.path.join(d, "elsewhere")))
            plain = os.path.join(d, "info.json")
            rig_main.write_run_info(plain, runner.EXIT_OK, "")
            rig_main.write_run_info(plain, runner.EXIT_CELLS_FAILED, "")  # a file of its own is replaced
            with open(plain) as f:
                self.assertEqual(json.load(f)["status"], runner.EXIT_CELLS_FAILED)


class HelpTest(unittest.TestCase):
    def test_a_matrix_targets_help_names_the_target_and_not_what_it_passes_itself(self):
        # Issue 41, item 5: `bazel run //rigs:X -- --help` showed --matrix and --workload as required.
        from rigs.matrix.planning import cli
        out = io.StringIO()
        with contextlib.redirect_stdout(out), self.assertRaises(SystemExit) as done:
            cli.parse_args(["--matrix=rigs/calibration/matrix.toml", "--workload=workloads/calibration",
                            "--bazel-target=//rigs:calibration_matrix", "--help"])
        self.assertEqual(done.exception.code, 0)
        text = out.getvalue()
        self.assertTrue(text.startswith("usage: bazel run //rigs:calibration_matrix -- [-h]"), text[:200])
        self.assertNotIn("--matrix", text)
        self.assertNotIn("--workload", text)
        out = io.StringIO()
        with contextlib.redirect_stdout(out), self.assertRaises(SystemExit):
            cli.parse_args(["--help"])  # run as a program, not through a target: both are asked for
        self.assertIn("--matrix MATRIX", out.getvalue())


class CommandLineInputTest(unittest.TestCase):
    def test_a_run_id_with_a_trailing_newline_is_refused(self):
        # Issue 81: the check matched store.RUN_ID_RE (anchored with $) instead of fullmatch.
        from rigs.matrix.planning import cli, spec
        self.assertEqual(cli.check_run_id("20261206T033151Z-83c4"), "20261206T033151Z-83c4")
        with self.assertRaises(spec.SpecError):
            cli.check_run_id("20261206T033151Z-83c4\n")

    def test_an_empty_run_info_and_an_influx_password_are_refused_and_never_shown(self):
        # Issue 78, rows 6 and 8.
        from rigs.matrix.planning import cli
        base = ["--matrix=rigs/calibration/matrix.toml", "--workload=workloads/calibration"]
        for extra, words in [(["--run-info", ""], "--run-info ''"),
                             (["--influx-url", "http://tl:S3cretPw@127.0.0.1:8086write"], "tl:***@127.0.0.1")]:
            err = io.StringIO()
            with contextlib.redirect_stderr(err), self.assertRaises(SystemExit):
                cli.parse_args(base + extra)
            self.assertIn(words, err.getvalue())
            self.assertNotIn("S3cretPw", err.getvalue())


if __name__ == "__main__":
    unittest.main()
