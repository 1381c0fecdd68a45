"""//tools:bisect's input checks and builds, without a run: the first-parent range (a merge is one commit, a
good commit after bad, the same, on a side branch or on another line is refused), revisions that do not exist,
the command line's refusals, a metric no workload gates, a matrix target the checkout does not have, and a
build that fails (named with its log's error line) or succeeds (found again on resume)."""

import contextlib
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
import types
import unittest

from analysis.reports import bisect_pages
from rigs.host import hoststate
from tools.bisection import build as bisect_build
from tools.bisection import core as bisect_core
from tools.bisection import command as bisect_command
from tools.bisection import step_profiles as bisect_profiles
from tools.bisection import texts as bisect_texts
from tools.bisection.build import BisectInputError, BuildFailed

HERE = os.path.dirname(os.path.abspath(__file__))
# A recorded profiled run (analysis/testdata/profiled_run/README.md): the calibration loop with 0 and 20 % of
# injected spin, profiled (cpu) 3 rounds; the answer's run of an axis bisect over injected_slowdown_pct.
PROFILED_RUN = os.path.join(os.path.dirname(os.path.dirname(HERE)), "analysis", "testdata", "profiled_run", "vm-0035969e",
                            "20261128T191712Z-edcd")
# The java and converter jar //tools/bisection:command_test is given (its args, as //tools:bisect's).
TOOLS = {k: os.path.abspath(v) for k, v in (a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--"))}
del sys.argv[1:]


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, "-c", "user.name=bisect test", "-c", "user.email=test@localhost", *args],
                          check=True, stdout=subprocess.PIPE, text=True).stdout.strip()


def commit(repo, message, path="notes.txt"):
    with open(os.path.join(repo, path), "a") as f:
        f.write(message + "\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


class History(unittest.TestCase):
    """c0 - c1 - c2 - M - c3 on main, M merging a side branch s1 (off c1); o1 on an unrelated line."""

    @classmethod
    def setUpClass(cls):
        cls.repo = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        git(cls.repo, "init", "-q", "-b", "main")
        cls.c0 = commit(cls.repo, "c0")
        cls.c1 = commit(cls.repo, "c1")
        git(cls.repo, "checkout", "-q", "-b", "side")
        cls.s1 = commit(cls.repo, "s1", "side.txt")
        git(cls.repo, "checkout", "-q", "main")
        cls.c2 = commit(cls.repo, "c2")
        git(cls.repo, "merge", "-q", "--no-ff", "-m", "merge side", "side")
        cls.m = git(cls.repo, "rev-parse", "HEAD")
        cls.c3 = commit(cls.repo, "c3")
        git(cls.repo, "checkout", "-q", "--orphan", "other")
        cls.o1 = commit(cls.repo, "o1")
        git(cls.repo, "checkout", "-q", "main")

    def test_the_first_parent_line_with_a_merge_as_one_commit(self):
        commits, merges = bisect_build.first_parent_range(self.repo, self.c0, self.c3)
        self.assertEqual(commits, [self.c0, self.c1, self.c2, self.m, self.c3])
        self.assertEqual(merges, 1)
        self.assertNotIn(self.s1, commits)

    def test_refused_ranges(self):
        cases = [((self.c3, self.c0), "comes after --bad"), ((self.c1, self.c1), "same commit"),
                 ((self.s1, self.c3), "side branch"), ((self.o1, self.c3), "not an ancestor")]
        for (good, bad), words in cases:
            with self.subTest(words), self.assertRaisesRegex(BisectInputError, words):
                bisect_build.first_parent_range(self.repo, good, bad)

    def test_revisions_resolve_or_are_named(self):
        self.assertEqual(bisect_build.resolve(self.repo, "main~1", "--bad"), self.m)
        for rev in ("no-such-branch", "deadbeef" * 5, "--all", "", "main\x00x", "main\nx"):  # NUL: issue 78
            with self.subTest(rev), self.assertRaises(BisectInputError):
                bisect_build.resolve(self.repo, rev, "--good")

    def test_subjects(self):
        self.assertEqual(bisect_build.subject(self.repo, self.m), "merge side")


class CommandLine(unittest.TestCase):
    BASE = ["--matrix", "//rigs:calibration_matrix", "--profile", "nightly", "--good", "a", "--bad", "b"]

    def refused(self, argv):
        with contextlib.redirect_stderr(io.StringIO()) as err, self.assertRaises(SystemExit) as e:
            bisect_command.parse_args(argv)
        self.assertEqual(e.exception.code, 2)
        return err.getvalue()

    def test_refusals(self):
        self.assertIn("policy.repetitions", self.refused(self.BASE + ["--set", "policy.repetitions=9"]))
        self.assertIn("revision", self.refused(self.BASE + ["--set", "revision=a,b"]))
        self.assertIn("3 <= rounds", self.refused(self.BASE + ["--rounds", "2"]))
        self.assertIn("3 <= rounds", self.refused(self.BASE + ["--rounds", "30", "--max-rounds", "20"]))
        self.assertIn("give --matrix", self.refused(["--matrix", "//rigs:calibration_matrix"]))
        self.assertIn("--good", self.refused(["--resume", "x", "--good", "a"]))
        self.assertIn("duration", self.refused(self.BASE + ["--budget", "soon"]))

    def test_an_axis_bisect_takes_ordered_values(self):
        axis = ["--matrix", "//rigs:namenode_matrix", "--profile", "p", "--axis", "variant"]
        self.assertIn("go together", self.refused(axis))
        self.assertIn("go together", self.refused(axis + ["--values", "a,b", "--good", "x"]))
        self.assertIn("variant", self.refused(axis + ["--values", "a,b", "--set", "variant=a"]))
        self.assertEqual(bisect_command.axis_values("variant", "stock, patched:nn-log-out-of-lock@1,patched:nn-log-out-of-lock"),
                         ["stock", "patched:nn-log-out-of-lock@1", "patched:nn-log-out-of-lock"])
        for axis_name, values, words in [("variant", "stock", "in order"), ("variant", "a,,b", "in order"),
                                         ("variant", "a,b,a", "twice"), ("revision", "a,b", "not revision"),
                                         ("--x", "a,b", "a matrix axis"), ("variant", "a,b c", "not an axis value")]:
            with self.subTest(values), self.assertRaisesRegex(BisectInputError, words):
                bisect_command.axis_values(axis_name, values)

    def test_the_rounds_an_unclear_check_would_need(self):
        self.assertEqual(bisect_texts.rounds_to_see(5, 0.06, 0.03), 20)  # half the noise: four times the rounds
        self.assertIsNone(bisect_texts.rounds_to_see(5, 0.02, 0.03))  # it sees enough already
        self.assertIsNone(bisect_texts.rounds_to_see(5, None, 0.03))
        text = bisect_texts.pair_text({"state": "INCONCLUSIVE", "checks": [{"worse_by": 0.01, "interval_98": [-0.05, 0.06],
                                 "can_see": 0.03, "reasons": ["too noisy"], "rounds_to_see": 20}]})
        self.assertEqual(text, "INCONCLUSIVE: worse by +1.0% (98 % CI -5.0%..+6.0%; catches >= 3.0%; too noisy; "
                               "~20 rounds would see it)")

    def test_an_unknown_confirmation_answers_with_its_change_the_gates_d_and_the_rounds_it_would_need(self):
        # Issue 61's NameNode acceptance: UNKNOWN is a correct answer only with what would decide it.
        check = {"worse_by": 0.025, "interval_98": [-0.027, 0.075], "can_see": 0.05, "reasons": ["neither"],
                 "rounds": 6, "rounds_to_see": 17}
        record = {"confirmation": {"rounds": 10, "pairs": {"good->candidate": {"state": "INCONCLUSIVE", "checks": [check]}}},
                  "max_rounds": 10, "machine_s": 1234.0, "axis": "variant", "commits": []}
        saved, removed = [], []
        fake = types.SimpleNamespace(record=record, bisection=types.SimpleNamespace(steps=[]), folder="/nonexistent",
                                     save=lambda: saved.append(True), args=types.SimpleNamespace(keep_builds=False),
                                     builder=types.SimpleNamespace(remove=removed.append))
        with contextlib.redirect_stdout(io.StringIO()):
            status = bisect_command.run_bisect(fake)
        self.assertEqual(status, bisect_command.EXIT_UNKNOWN)
        self.assertEqual(record["answer"]["state"], "unknown")
        for words in ("stayed INCONCLUSIVE at 10 rounds", "worse by +2.5%", "-2.7%..+7.5%", "catches >= 5.0%",
                      "~17 rounds would see it"):
            self.assertIn(words, record["answer"]["text"])
        self.assertTrue(saved)
        self.assertEqual(removed, [["checkout"]])
        # The report's comparison row says it too.
        cells = bisect_pages.check_cells(record["confirmation"]["pairs"]["good->candidate"])
        self.assertEqual((cells[3], cells[5]), ("5.0%", "6 (~17 to see)"))
        decided = dict(record["confirmation"]["pairs"]["good->candidate"], state="REGRESSED")
        self.assertEqual(bisect_pages.check_cells(decided)[5], "6")  # a decided check needs no more rounds

    def test_an_unknown_step_records_the_range_the_culprit_is_in(self):
        # CI on 2026-12-06: a step stayed INCONCLUSIVE at --max-rounds on a loaded host, and the record's answer
        # lacked the range its words named (the history test's KeyError 'last_good').
        commits = ["c0", "c1", "c2", "c3", "c4"]
        bisection = bisect_core.Bisection(commits)
        bisection.record(bisect_core.Step(commit="c2", index=2, verdict=bisect_core.SKIPPED, why="does not build"))
        bisection.record(bisect_core.Step(commit="c1", index=1, verdict=bisect_core.UNKNOWN, toward_good="INCONCLUSIVE",
                                          toward_bad="REGRESSED", rounds=10))
        regressed = {"state": "REGRESSED", "checks": [{"worse_by": 0.207, "interval_98": [0.151, 0.259], "can_see": 0.03,
                                                       "reasons": [], "rounds_to_see": None}]}
        unclear = {"state": "INCONCLUSIVE", "checks": [{"worse_by": 0.018, "interval_98": [-0.026, 0.061],
                                                         "can_see": 0.03, "reasons": ["neither"], "rounds_to_see": 56}]}
        record = {"confirmation": {"rounds": 5, "pairs": {"good->candidate": regressed}}, "max_rounds": 10,
                  "machine_s": 300.0, "commits": commits, "subjects": {},
                  "measures": {"c1": {"pairs": {"good->candidate": unclear, "candidate->bad": regressed}}}}
        fake = types.SimpleNamespace(record=record, bisection=bisection, folder="/nonexistent", save=lambda: None,
                                     args=types.SimpleNamespace(keep_builds=False),
                                     builder=types.SimpleNamespace(remove=lambda names: None))
        with contextlib.redirect_stdout(io.StringIO()):
            status = bisect_command.run_bisect(fake)
        self.assertEqual(status, bisect_command.EXIT_UNKNOWN)
        answer = record["answer"]
        self.assertEqual((answer["state"], answer["last_good"], answer["first_bad"]), ("unknown", "c0", "c4"))
        self.assertIn("the culprit is between c0 and c4", answer["text"])

    def test_durations(self):
        for text, seconds in [("2h", 7200), ("90m", 5400), ("1h30m", 5400), ("45s", 45), ("3600", 3600)]:
            self.assertEqual(bisect_command.parse_duration(text), seconds)

    def test_a_metric_no_workload_gates_is_refused_before_a_build(self):
        args = bisect_command.parse_args(self.BASE + ["--metric", "no_such_rate"])
        workspace = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        with self.assertRaisesRegex(BisectInputError, "no_such_rate: no workload gates it"):
            bisect_command.new_record(args, workspace, workspace)

    def test_a_target_the_checkout_lacks_is_refused(self):
        workspace = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        os.makedirs(os.path.join(workspace, "rigs"))
        with open(os.path.join(workspace, "rigs", "BUILD.bazel"), "w") as f:
            f.write('rig_matrix(\n    name = "calibration_matrix",\n)\n')
        args = bisect_command.parse_args(["--matrix", "//rigs:yarn_cps_matrix"] + self.BASE[2:])
        with self.assertRaisesRegex(BisectInputError, "not a matrix target of this checkout"):
            bisect_command.new_record(args, workspace, workspace)
        args = bisect_command.parse_args(["--matrix", "rigs/calibration"] + self.BASE[2:])
        with self.assertRaisesRegex(BisectInputError, "expected a matrix target"):
            bisect_command.new_record(args, workspace, workspace)


class OneAHost(unittest.TestCase):
    def test_a_second_bisect_is_refused_while_one_holds_the_lock(self):
        state = os.path.join(tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR")), "state")
        held = hoststate.HostLock(os.path.join(state, "bisect.lock"))
        held.acquire({"pid": 1, "command": "bisect one"})
        try:
            answer = os.path.join(os.path.dirname(state), "answer.json")
            with contextlib.redirect_stderr(io.StringIO()) as err:
                status = bisect_command.main(CommandLine.BASE + ["--state-dir", state, "--answer-file", answer])
            self.assertEqual(status, bisect_command.EXIT_UNUSABLE)
            self.assertIn("another bisect runs on this host", err.getvalue())
            self.assertIn("bisect one", err.getvalue())
            with open(answer) as f:
                self.assertEqual(json.load(f)["state"], "error")
        finally:
            held.release()


class Builds(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.repo = os.path.join(self.tmp, "repo")
        os.makedirs(self.repo)
        git(self.repo, "init", "-q")
        self.good = commit(self.repo, "good")
        self.bad = commit(self.repo, "broken", "BROKEN")
        self.program = os.path.join(self.tmp, "build.sh")
        with open(self.program, "w") as f:
            f.write(textwrap.dedent("""\
                #!/bin/sh
                # CHECKOUT TARGET OUT: fails where the checkout has BROKEN, else a runfiles tree at OUT.
                if [ -e "$1/BROKEN" ]; then echo "step 1 of 2"; echo "error: BROKEN is here"; echo "done"; exit 1; fi
                mkdir -p "$3/tunelab/rigs"
                echo "--workload=workloads/calibration/workload.toml" > "$3/tunelab/rigs/${2#//rigs:}.args"
                """))
        os.chmod(self.program, os.stat(self.program).st_mode | stat.S_IXUSR)
        self.builder = bisect_build.Builder(self.repo, "//rigs:calibration_matrix", os.path.join(self.tmp, "bisect"),
                                            self.program, trust_dir=os.path.join(self.tmp, "state", "bisect-builds"))

    def test_a_build_that_fails_names_its_commit_and_error_line(self):
        with self.assertRaisesRegex(BuildFailed, rf"does not build at {self.bad[:12]} \(exit 1\): error: BROKEN is here"):
            self.builder.build(self.bad)

    def test_a_build_is_made_once_and_found_again(self):
        build = self.builder.build(self.good)
        self.assertTrue(build.exists())
        self.assertEqual(build.runfiles, os.path.realpath(build.runfiles))
        self.assertEqual(bisect_command.gated_metrics(build, []), ["cpu_loop_rate", "memory_copy_rate"])
        with self.assertRaisesRegex(BisectInputError, "not a metric this rig gates"):
            bisect_command.gated_metrics(build, ["create_rate"])
        os.chmod(self.program, 0)  # a second build would fail: the first is found instead
        self.assertEqual(self.builder.build(self.good).runfiles, build.runfiles)
        self.builder.remove([self.good])
        self.assertFalse(os.path.exists(build.runfiles))


class StoredFolderIsData(unittest.TestCase):
    """Issue 78, rows 1-3: a bisect folder that comes with a pull is data. A resumed bisect never runs a
    launcher or trusts an `.ok` it finds, never makes a path of a forged `good`/`bad`, and refuses a record of
    another shape with a message (no TypeError, KeyError), or a `sets` the command line refuses."""

    LAUNCHER = "#!/bin/sh\ntouch {marker}\n"

    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.repo = os.path.join(self.tmp, "repo")
        os.makedirs(os.path.join(self.repo, "rigs"))
        git(self.repo, "init", "-q")
        self.good = commit(self.repo, "good")
        self.bad = commit(self.repo, "bad")
        self.folder = os.path.join(self.tmp, "results", "bisects", "pulled")
        self.marker = os.path.join(self.tmp, "PLANTED_LAUNCHER_RAN")
        self.state = os.path.join(self.tmp, "state")
        self.record = {"schema": bisect_pages.SCHEMA, "matrix": "//rigs:calibration_matrix", "profile": "nightly",
                       "metrics": ["cpu_loop_rate"], "sets": [], "rounds": 3, "max_rounds": 6, "no_host_reference": True,
                       "axis": None, "good": self.good, "bad": self.bad, "commits": [self.good, self.bad], "merges": 0,
                       "subjects": {}, "started": "2026-12-06T00:00:00+00:00", "machine_s": 0.0, "confirmation": None,
                       "measures": {}, "steps": [], "final": None, "answer": None}

    def plant(self, record=None, worktrees=True):
        """The folder a pull could bring: the record, and for both ends a launcher with its args and an .ok (in a
        worktree's bazel-bin, as Bazel's build leaves it, and where a --builder program's goes)."""
        os.makedirs(os.path.join(self.folder, "logs"), exist_ok=True)
        with open(os.path.join(self.folder, "bisect.json"), "w") as f:
            json.dump(record or self.record, f)
        for c in (self.good, self.bad):
            for runfiles in ([os.path.join(self.folder, "worktrees", c, "bazel-bin", "rigs", "calibration_matrix.runfiles")]
                             * worktrees + [os.path.join(self.folder, "builds", c + ".runfiles")]):
                rigs = os.path.join(runfiles, "tunelab", "rigs")
                os.makedirs(rigs, exist_ok=True)
                with open(os.path.join(rigs, "calibration_matrix"), "w") as f:
                    f.write(self.LAUNCHER.format(marker=self.marker))
                os.chmod(os.path.join(rigs, "calibration_matrix"), 0o755)
                with open(os.path.join(rigs, "calibration_matrix.args"), "w") as f:
                    f.write("--no-host-reference\n")
                with open(os.path.join(os.path.dirname(runfiles), "calibration_matrix.args"), "w") as f:
                    f.write("--no-host-reference\n")
            with open(os.path.join(self.folder, "logs", f"build-{c}.ok"), "w") as f:
                f.write("1.0\n")

    def resume(self, *extra):
        os.environ.update(BUILD_WORKSPACE_DIRECTORY=self.repo, BUILD_WORKING_DIRECTORY=self.repo)
        with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()) as err:
            status = bisect_command.main(["--resume", self.folder, "--state-dir", self.state,
                                          "--results-dir", os.path.join(self.tmp, "results"), *extra])
        return status, out.getvalue() + err.getvalue()

    def test_a_planted_launcher_and_ok_markers_are_never_run(self):
        self.plant()
        status, text = self.resume()  # Bazel's way: the worktrees found are not this checkout's
        self.assertEqual(status, bisect_command.EXIT_UNUSABLE, text)
        self.assertIn("not a worktree this checkout's git made", text)
        self.assertFalse(os.path.exists(self.marker), "the folder's own launcher ran")

    def test_with_a_builder_program_the_build_is_made_again(self):
        self.plant(worktrees=False)
        program = os.path.join(self.tmp, "build.sh")
        with open(program, "w") as f:
            f.write("#!/bin/sh\necho built > " + os.path.join(self.tmp, "BUILT") + "\nexit 1\n")
        os.chmod(program, 0o755)
        status, text = self.resume("--builder", program)
        self.assertFalse(os.path.exists(self.marker), "the folder's own launcher ran")
        self.assertTrue(os.path.exists(os.path.join(self.tmp, "BUILT")), text)  # it built instead of trusting the .ok
        self.assertIn("does not build", text)

    def test_a_build_is_reused_only_as_recorded_in_the_host_state(self):
        program = os.path.join(self.tmp, "build.sh")
        with open(program, "w") as f:
            f.write("#!/bin/sh\nmkdir -p \"$3/tunelab/rigs\"\necho x > \"$3/tunelab/rigs/${2#//rigs:}.args\"\n"
                    "echo real > \"$3/tunelab/rigs/${2#//rigs:}\"\necho >> " + os.path.join(self.tmp, "builds.log") + "\n")
        os.chmod(program, 0o755)
        trust = os.path.join(self.state, "bisect-builds")
        builder = bisect_build.Builder(self.repo, "//rigs:calibration_matrix", self.folder, program, trust_dir=trust)
        first = builder.build(self.good)
        self.assertEqual(builder.build(self.good).runfiles, first.runfiles)  # found again: recorded, unchanged
        launcher = os.path.join(first.runfiles, "tunelab", "rigs", "calibration_matrix")
        with open(launcher, "w") as f:  # swapped after the build
            f.write(self.LAUNCHER.format(marker=self.marker))
        builder.build(self.good)
        with open(launcher) as f:
            self.assertEqual(f.read(), "real\n")  # built again, the swapped one gone
        with open(os.path.join(self.tmp, "builds.log")) as f:
            self.assertEqual(len(f.read().splitlines()), 2)
        # Another folder's record is not this one's.
        other = bisect_build.Builder(self.repo, "//rigs:calibration_matrix", self.folder + "2", program, trust_dir=trust)
        self.assertIsNone(other._trusted(self.good))

    def test_a_forged_end_never_becomes_a_path(self):
        outside = os.path.join(self.tmp, "x.runfiles")
        os.makedirs(outside)
        for forged in ("../../../x", self.good[:12]):
            self.plant(dict(self.record, good=forged))
            status, text = self.resume()
            self.assertEqual(status, bisect_command.EXIT_UNUSABLE, text)
            self.assertIn("bisect.json", text)
            self.assertTrue(os.path.isdir(outside))
        with self.assertRaises(BisectInputError):
            bisect_build.Builder(self.repo, "//rigs:calibration_matrix", self.folder, "true").planned("../../../x")

    def test_a_record_of_another_shape_is_refused_with_a_message(self):
        step = {"commit": self.bad, "index": 1, "verdict": "bad"}
        measure = {"run": "/r", "rounds": 3, "pairs": {"good->candidate": {"state": "PASS", "checks": [
            {"cell": "c", "metric": "m", "state": "PASS", "worse_by": 0.0, "interval_98": [0, 0], "can_see": 0.03}]}}}
        mid = commit(self.repo, "mid")
        three = dict(self.record, commits=[self.good, self.bad, mid], bad=mid)
        for forged, words in [
                (dict(three, steps=[dict(step, extra=1)]), "Additional properties"),
                (dict(self.record, confirmation={"run": "/r"}), "confirmation"),
                (dict(self.record, confirmation=dict(measure, pairs={"candidate->bad": measure["pairs"]["good->candidate"]})),
                 "lacks its pairs"),
                (dict(self.record, final=[1, 2]), "final"),
                (dict(self.record, answer={"state": "found"}), "answer"),
                (dict(self.record, sets=["policy.repetitions=100000"]), "the bisect sets"),
                (dict(self.record, sets=["gc=G1 --results-dir=/"]), "not AXIS=VALUE"),
                (dict(self.record, launcher="/bin/sh"), "Additional properties"),
                (dict(three, steps=[dict(step, index=2)]), "at another index")]:
            self.plant(forged)
            status, text = self.resume()
            self.assertEqual(status, bisect_command.EXIT_UNUSABLE, text)
            self.assertIn(words, text)
            self.assertNotIn("Traceback", text)
        self.assertFalse(os.path.exists(self.marker))

    def test_the_command_line_refuses_the_same_sets(self):
        base = ["--matrix", "//rigs:calibration_matrix", "--profile", "nightly", "--good", "a", "--bad", "b"]
        for item in ("policy.repetitions=9", "revision=a,b", "gc=G1 x", "--x=1"):
            with self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
                bisect_command.parse_args(base + ["--set", item])
        self.assertEqual(bisect_command.parse_args(base + ["--set", "policy.profile=cpu"]).set, ["policy.profile=cpu"])

    def test_every_committed_record_still_reads(self):
        for name in os.listdir(os.path.join(os.path.dirname(os.path.dirname(HERE)), "results", "bisects")):
            bisect_pages.read_record(os.path.join(os.path.dirname(os.path.dirname(HERE)), "results", "bisects", name))


class AnswerProfiles(unittest.TestCase):
    """What moved between the last good and the first bad value, from the answer run's profiles."""

    def bisect(self, run, converter=True):
        folder = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        args = types.SimpleNamespace(java=TOOLS["java"], converter=TOOLS["converter"] if converter else None)
        return types.SimpleNamespace(record={"axis": "injected_slowdown_pct", "final": {"run": run}}, folder=folder,
                                     results_root=os.path.dirname(os.path.dirname(run)), args=args)

    def test_the_injected_spin_moved_and_its_flame_graph_is_drawn(self):
        bisect = self.bisect(PROFILED_RUN)
        [entry] = bisect_profiles.answer_profiles(bisect, {"last_good": "0", "first_bad": "20"})
        self.assertEqual((entry["event"], entry["runs"]), ("cpu", [3, 3]))
        self.assertRegex(entry["movers"], r"^Calibration\.spin \+[0-9.]+ points")
        self.assertTrue(entry["rows"][0]["moved"])
        self.assertLess(entry["rows"][0]["interval"][0], entry["rows"][0]["change"])
        page = os.path.join(bisect.folder, entry["flame_graph"])
        self.assertTrue(page.startswith(os.path.join(bisect.folder, "profiles") + os.sep) and os.path.isfile(page))
        [line] = bisect_profiles.profile_text([entry])
        self.assertIn("profile (cpu, 3/3 runs): Calibration.spin +", line)
        self.assertIn("differential flame graph profiles/", line)

    def test_the_report_shows_the_movers_and_reads_a_hostile_entry_as_text(self):
        [entry] = bisect_profiles.answer_profiles(self.bisect(PROFILED_RUN), {"last_good": "0", "first_bad": "20"})
        hostile = {"event": "lock" * 30, "rows": [{"frame": "x" * 500, "baseline": "1", "change": float("nan")}, 7],
                   "why": ["not", "text"], "flame_graph": 3}
        blocks = bisect_pages.profile_blocks({"final_profiles": [entry, "junk", hostile]})
        heading, table, flame, other = blocks[:4]
        self.assertIn("What moved", heading.text)
        self.assertEqual(table.rows[0][0], "Calibration.spin")
        self.assertEqual(table.rows[0][-1], "moved")
        self.assertIn(entry["flame_graph"], flame.text)
        self.assertEqual(other.rows, [["x" * 70, "-", "-", "-", "-..-", "noise"]])
        self.assertEqual(len(blocks), 5)  # the hostile entry's table and its reason; no flame graph line
        self.assertEqual(bisect_pages.profile_blocks({}), [])

    def test_the_pair_is_oriented_as_the_answer_names_it(self):
        # A bisect's good end need not be the matrix's baseline value: 20 as the good end, 0 as the bad one.
        [entry] = bisect_profiles.answer_profiles(self.bisect(PROFILED_RUN, converter=False),
                                                 {"last_good": "20", "first_bad": "0"})
        self.assertRegex(entry["movers"], r"^Calibration\.spin -[0-9.]+ points")
        self.assertNotIn("flame_graph", entry)

    def test_a_run_without_profiles_adds_nothing_and_an_unreadable_one_says_why(self):
        plain = os.path.join(tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR")), "run")
        shutil.copytree(PROFILED_RUN, plain, ignore=shutil.ignore_patterns("profiles"))
        for name in os.listdir(os.path.join(plain, "cells")):
            path = os.path.join(plain, "cells", name)
            with open(path) as f:
                doc = json.load(f)
            doc.pop("profile", None)
            with open(path, "w") as f:
                json.dump(doc, f)
        self.assertEqual(bisect_profiles.answer_profiles(self.bisect(plain), {"last_good": "0", "first_bad": "20"}), [])
        [entry] = bisect_profiles.answer_profiles(self.bisect("/nonexistent/run"), {"last_good": "0", "first_bad": "20"})
        self.assertIn("could not be read", entry["why"])
        self.assertEqual(bisect_profiles.profile_text([entry]), [f"profile (-): {entry['why']}"])


if __name__ == "__main__":
    unittest.main()
