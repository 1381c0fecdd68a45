"""tools/nightly/nightly.sh end to end, on the builds this test's runfiles hold (NIGHTLY_RUNFILES: no Bazel
inside a Bazel test), from a git checkout whose path is long enough that a console wrapping at its width
broke the run folder's line (the nightly used to read it from the console and exited 2 after every run).

- A/A, the first night: HEAD as both revisions -> exit 0, the gate passes, HEAD becomes the accepted revision;
  or, on a night too noisy to rule out the asked effect, exit 3, INCONCLUSIVE, and the accepted revision
  stays (an A/A night may end either way; never REGRESSED, never 1).
- A slowed candidate: //rigs/calibration:calibration_slowed (the calibration program made 20 % slower by a
  change to its source) as tonight's build against the accepted one -> exit 1, the gate says REGRESSED, the
  accepted revision stays what it was; with NIGHTLY_BISECT_BUDGET set, the gate's summary says why no bisect
  ran (prebuilt trees have no commits to build; //tools/bisection:history_test runs the bisect itself).
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

RUNFILES = os.environ["TEST_SRCDIR"]
WORKSPACE_RUNFILES = os.path.join(RUNFILES, "tunelab")
NIGHTLY = os.path.join(WORKSPACE_RUNFILES, "tools", "nightly", "nightly.sh")
JAR = os.path.join("rigs", "calibration", "calibration_deploy.jar")
SLOWED_JAR = os.path.join(WORKSPACE_RUNFILES, "rigs", "calibration", "calibration_slowed_deploy.jar")
# Longer than the runner's 160-column console with the line's own words: the old nightly broke here.
TEST_BUDGET_MIN = 2  # a test night's measuring budget (make_checkout)
LONG_NAME = "a-checkout-path-long-enough-that-a-console-one-hundred-and-sixty-columns-wide-wraps-the-run-folder"


def git(checkout, *args):
    return subprocess.run(["git", "-C", checkout, "-c", "user.name=nightly test", "-c", "user.email=test@localhost",
                           *args], check=True, stdout=subprocess.PIPE, text=True).stdout.strip()


def make_checkout(parent):
    """A git checkout holding nightly.sh (it works from its own checkout: results land there) and the rigs'
    registry it reads the nightly's rigs from (rigs/registry.py, each rig's rig.toml)."""
    checkout = os.path.join(parent, LONG_NAME, "tunelab")
    os.makedirs(os.path.join(checkout, "tools", "nightly"))
    shutil.copy(NIGHTLY, os.path.join(checkout, "tools", "nightly", "nightly.sh"))
    for rel in ["rigs/registry.py", "results/safeio.py"] + [
            os.path.relpath(p, WORKSPACE_RUNFILES) for p in glob.glob(os.path.join(WORKSPACE_RUNFILES, "rigs", "*", "rig.toml"))]:
        os.makedirs(os.path.dirname(os.path.join(checkout, rel)), exist_ok=True)
        shutil.copy(os.path.join(WORKSPACE_RUNFILES, rel), os.path.join(checkout, rel))
    # A test night measures for at most 2 minutes (the rig's own budget is 10): an A/A night PASSes at round 6-11
    # (~1-2 min) or ends INCONCLUSIVE at the budget, which the test accepts. Until nightly.sh read its own checkout's
    # rig.toml files (--root), the test's copy was never read: an A/A night took up to 10 minutes of measuring.
    rig_toml = os.path.join(checkout, "rigs", "calibration", "rig.toml")
    with open(rig_toml) as f:
        text = f.read()
    assert "\nbudget_min = 10\n" in text, "the calibration rig's nightly budget moved: update this test"
    with open(rig_toml, "w") as f:
        f.write(text.replace("\nbudget_min = 10\n", f"\nbudget_min = {TEST_BUDGET_MIN}\n"))
    git(checkout, "init", "-q")
    git(checkout, "add", "-A")
    git(checkout, "commit", "-q", "-m", "tonight")
    return checkout


def run_nightly(checkout, out, candidate_runfiles, accepted_runfiles, accepted=None, cwd=None, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NIGHTLY_")}
    # No host reference (~20 s a night; the first night checks that NIGHTLY_RUN_ARGS reached the runner).
    env.update(NIGHTLY_MATRICES="calibration", NIGHTLY_RUNFILES=candidate_runfiles,
               NIGHTLY_ACCEPTED_RUNFILES=accepted_runfiles, NIGHTLY_RUN_ARGS="--no-host-reference",
               TUNELAB_STATE_DIR=tempfile.mkdtemp(prefix="state-", dir=os.environ["TEST_TMPDIR"]))
    env.update(extra)
    if accepted:
        env["NIGHTLY_ACCEPTED"] = accepted
    proc = subprocess.run(["bash", os.path.join(checkout, "tools", "nightly", "nightly.sh"), out], env=env, cwd=cwd,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1500)
    print(proc.stdout)
    return proc


def slowed_runfiles(parent):
    """This test's runfiles tree with the calibration program swapped for the slowed build: the candidate
    as a commit that slowed the program would build it (runfiles trees are links, so the copy is cheap)."""
    tree = os.path.join(parent, "slowed.runfiles")
    subprocess.run(["cp", "-a", RUNFILES + "/.", tree], check=True)
    jar = os.path.join(tree, "tunelab", JAR)
    os.remove(jar)
    os.symlink(os.path.realpath(SLOWED_JAR), jar)
    return tree


class NightlyTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ["TEST_TMPDIR"])
        self.checkout = make_checkout(self.tmp)
        self.out = os.path.join(self.tmp, "out")
        self.accepted_file = os.path.join(self.checkout, "results", "nightly-out", "accepted-revision")

    def run_info(self):
        with open(os.path.join(self.out, "calibration-run-info.json")) as f:
            return json.load(f)

    def test_a_matrix_no_rig_runs_nightly_is_refused_before_anything_runs(self):
        # The nightly's rigs are their rig.toml's [nightly] (issue 59); yarn_failover declares none.
        proc = run_nightly(self.checkout, self.out, RUNFILES, RUNFILES, NIGHTLY_MATRICES="calibration yarn_failover")
        self.assertEqual(proc.returncode, 2, proc.stdout)
        self.assertIn("NIGHTLY_MATRICES names yarn_failover, which no rigs/<rig>/rig.toml runs nightly", proc.stdout)
        self.assertIn("registered: calibration mr_compare namenode redis_numa yarn_cps", proc.stdout)
        self.assertNotIn("== calibration: running", proc.stdout)

    def test_first_night_is_an_aa_run_that_passes_and_accepts_head(self):
        head = git(self.checkout, "rev-parse", "HEAD")
        # OUT_DIR given relative, from another folder than the checkout: it is the caller's (self.out).
        proc = run_nightly(self.checkout, "out", RUNFILES, RUNFILES, cwd=self.tmp)
        self.assertIn(proc.returncode, (0, 3), proc.stdout[-4000:])
        info = self.run_info()
        self.assertEqual(info["status"], 0)
        run_dir = info["run_dir"]
        self.assertTrue(run_dir.startswith(os.path.join(self.checkout, "results") + os.sep), run_dir)
        self.assertGreater(len(run_dir), 160)
        # The folder stands whole on one line of the runner's output: long lines overflow, never break.
        with open(os.path.join(self.out, "calibration-run.log")) as f:
            log = f.read()
        self.assertIn(f"results in {run_dir}\n", log)
        self.assertNotIn("host reference (before the matrix)", log)  # NIGHTLY_RUN_ARGS reached the runner
        self.assertIn(f"within a time budget of {TEST_BUDGET_MIN} min", log)  # the checkout's rig.toml was read
        with open(os.path.join(self.out, "calibration-gate.md")) as f:
            gate = f.read()
        self.assertIn("cpu_loop_rate", gate)
        self.assertGreater(os.path.getsize(os.path.join(self.out, "calibration-report.pdf")), 10_000)
        # The night is in the results database (the default SQLite file of the checkout's results/), as decided.
        database = "sqlite:///" + os.path.join(self.checkout, "results", ".db", "tunelab.sqlite")
        query = subprocess.run([sys.executable, os.path.join(RUNFILES, "tunelab", "tools", "results", "results"),
                                "--db", database, "--json", "query",
                                "SELECT runs.run_id, nights.decided_state FROM nights JOIN runs ON runs.id = nights.run"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.assertEqual(query.returncode, 0, query.stdout)
        (night,) = json.loads(query.stdout)
        self.assertEqual(night["run_id"], info["run_id"])
        self.assertEqual(night["decided_state"], "PASS" if proc.returncode == 0 else "INCONCLUSIVE")
        # The gate's own verdict kept beside the run (gate.json, --record) and indexed with it.
        self.assertTrue(os.path.isfile(os.path.join(info["run_dir"], "gate.json")))
        verdicts = subprocess.run([sys.executable, os.path.join(RUNFILES, "tunelab", "tools", "results", "results"),
                                   "--db", database, "--json", "query",
                                   "SELECT DISTINCT verdict, axis FROM gate_verdicts"],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.assertEqual(json.loads(verdicts.stdout),
                         [{"verdict": night["decided_state"], "axis": "revision"}], verdicts.stdout)
        if proc.returncode == 0:
            self.assertTrue(gate.startswith("# tunelab gate: **PASS**"), gate)
            self.assertIn("every gate passed", proc.stdout)
            with open(self.accepted_file) as f:
                self.assertEqual(f.read().strip(), head)
        else:
            self.assertTrue(gate.startswith("# tunelab gate: **INCONCLUSIVE**"), gate)
            self.assertIn("a gate was INCONCLUSIVE", proc.stdout)
            self.assertFalse(os.path.exists(self.accepted_file))

    def test_a_slowed_candidate_fails_the_night_and_keeps_the_accepted_revision(self):
        accepted = git(self.checkout, "rev-parse", "HEAD")
        os.makedirs(os.path.dirname(self.accepted_file))
        with open(self.accepted_file, "w") as f:
            f.write(accepted + "\n")
        git(self.checkout, "commit", "-q", "--allow-empty", "-m", "a slower calibration loop")
        proc = run_nightly(self.checkout, self.out, slowed_runfiles(self.tmp), RUNFILES, NIGHTLY_BISECT_BUDGET="1h")
        self.assertEqual(proc.returncode, 1, proc.stdout[-4000:])
        # A bisect needs builds of commits: with prebuilt trees the night says why there is none.
        with open(os.path.join(self.out, "calibration-bisect.txt")) as f:
            self.assertIn("no bisect: NIGHTLY_RUNFILES names prebuilt builds", f.read())
        self.assertIn(f"accepted:  {accepted}", proc.stdout)
        with open(os.path.join(self.out, "calibration-gate.md")) as f:
            gate = f.read()
        self.assertTrue(gate.startswith("# tunelab gate: **REGRESSED** (1 of 1)"), gate)
        self.assertIn("## Bisect\n\n== calibration: no bisect", gate)
        with open(self.accepted_file) as f:
            self.assertEqual(f.read().strip(), accepted)


if __name__ == "__main__":
    unittest.main()
