"""Noisy rounds run again (policy rerun_noisy_rounds, noisyrounds.py) end to end with the fake rig: a round whose
measurement windows lost more CPU to steal than the band gets one more round of the same cells, at most N; the
flagged round stays in the run; the manifest declares every re-run; a resumed run keeps the rounds it added.

The steal of each window is chosen here (hostnoise.window stands in, in call order: one measured window per
cell repetition), since this host's real steal cannot be set: these are mechanics, not measurements."""

import json
import os
import unittest
from unittest import mock

from analysis import summary
from results import resultfile
from rigs.host import hostnoise
from rigs.matrix import runner
from rigs.matrix.planning import spec
from rigs.matrix.testing.fakerig import FakeRigTestCase

REAL_WINDOW = hostnoise.window
QUIET, NOISY = 0.001, 0.09  # shares of all CPUs' time; the fake rig has no committed A/A set: band 5 %


def windows(steals):
    """A stand-in for hostnoise.window returning the next of `steals` (then QUIET) as the window's steal."""
    queue = list(steals)

    def window(start, end, clock_ticks=None):
        doc = REAL_WINDOW(start, end, clock_ticks)
        doc["steal_fraction"] = queue.pop(0) if queue else QUIET
        return doc
    return window


class NoisyRoundsTest(FakeRigTestCase):
    def run_noisy(self, steals, *extra):
        with mock.patch.object(hostnoise, "window", windows(steals)):
            return self.box.main("--profile", "noisy", *extra)

    def manifest(self, run_dir):
        with open(os.path.join(run_dir, "manifest.json")) as f:
            return json.load(f)

    def test_a_noisy_round_is_run_again_and_kept(self):
        # 2 cells a round: round 1 is noisy, then its re-run (round 3) is noisy too, then round 4 is quiet.
        code, out = self.run_noisy([QUIET, QUIET, NOISY, QUIET, QUIET, QUIET, QUIET, NOISY])
        self.assertEqual(code, runner.EXIT_OK, out)
        (run_dir,) = self.box.run_dirs()
        docs = self.docs(run_dir)
        self.assertEqual(sorted({rep for _, rep in docs}), [0, 1, 2, 3, 4])
        self.assertEqual(len(docs), 10)
        self.assertIn("round 1 lost 9.0% of the CPUs to steal (band 5.0%): its cells run again as round 3 "
                      "(1 of at most 2); round 1 stays in the run", out)
        self.assertIn("round 3 lost 9.0% of the CPUs to steal (band 5.0%): its cells run again as round 4", out)
        manifest = self.manifest(run_dir)
        self.assertEqual(manifest["state"], "complete")
        block = manifest["noise_reruns"]
        self.assertEqual((block["max"], block["band"]), (2, 0.05))
        self.assertEqual([(r["round"], r["steal_fraction"], r["rerun_as"]) for r in block["reruns"]],
                         [(1, NOISY, 3), (3, NOISY, 4)])
        for cell in manifest["cells"]:
            self.assertEqual(cell["repetitions"], {str(r): "ok" for r in range(5)})
        # The summary names the flagged rounds, keeps them, and says what was run for them.
        line = summary.host_noise_line(list(docs.values()), "fake", manifest)
        self.assertIn("FLAGGED: round(s) 1 (9.0%), 3 (9.0%) stole more than 5.0%", line)
        self.assertIn("stay in the statistics; run again by the policy: 1 as round 3, 3 as round 4", line)
        self.assertNotIn("rerun the others", line)

    def test_at_most_the_declared_rounds_are_added(self):
        code, out = self.run_noisy([NOISY] * 20)
        self.assertEqual(code, runner.EXIT_OK, out)
        (run_dir,) = self.box.run_dirs()
        self.assertEqual(sorted({rep for _, rep in self.docs(run_dir)}), [0, 1, 2, 3, 4])
        manifest = self.manifest(run_dir)
        self.assertEqual([r["round"] for r in manifest["noise_reruns"]["reruns"]], [0, 1])
        line = summary.host_noise_line(list(self.docs(run_dir).values()), "fake", manifest)
        self.assertIn("rerun the others to be sure (policy rerun_noisy_rounds)", line)

    def test_a_quiet_run_adds_nothing(self):
        code, out = self.run_noisy([])
        self.assertEqual(code, runner.EXIT_OK, out)
        (run_dir,) = self.box.run_dirs()
        self.assertEqual(len(self.docs(run_dir)), 6)
        self.assertEqual(self.manifest(run_dir)["noise_reruns"]["reruns"], [])
        self.assertNotIn("run again as round", out)

    def test_a_resumed_run_keeps_the_rounds_it_added(self):
        code, out = self.run_noisy([QUIET, QUIET, NOISY, QUIET])
        self.assertEqual(code, runner.EXIT_OK, out)
        (run_dir,) = self.box.run_dirs()
        # As if killed during the added round 3: its results gone, the manifest still "running".
        manifest = self.manifest(run_dir)
        for cell in manifest["cells"]:
            os.remove(resultfile.result_path(run_dir, cell["id"], 3))
            cell["repetitions"]["3"] = "pending"
        manifest["state"] = "running"
        with open(os.path.join(run_dir, "manifest.json"), "w") as f:
            json.dump(manifest, f)
        code, out = self.run_noisy([], "--resume", os.path.basename(run_dir))
        self.assertEqual(code, runner.EXIT_OK, out)
        self.assertIn("2 of 8 cell repetitions to run", out)
        docs = self.docs(run_dir)
        self.assertEqual(sorted({rep for _, rep in docs}), [0, 1, 2, 3])
        self.assertEqual([(r["round"], r["rerun_as"]) for r in self.manifest(run_dir)["noise_reruns"]["reruns"]],
                         [(1, 3)])

    def test_the_plan_says_how_many_rounds_may_be_added(self):
        code, out = self.box.main("--profile", "noisy", "--dry-run")
        self.assertEqual(code, runner.EXIT_OK, out)
        self.assertIn("3 repetitions (+ at most 2 rounds run again for steal)", out)

    def test_bad_policies_are_refused_before_anything_runs(self):
        for extra, reason in ((["--profile", "noisy", "--set", "policy.rerun_noisy_rounds=4"],
                               "is more than the 3 repetitions"),
                              (["--profile", "sequential", "--set", "policy.rerun_noisy_rounds=1"],
                               "rerun_noisy_rounds is for a fixed count")):
            code, out = self.box.main(*extra)
            self.assertEqual(code, runner.EXIT_BAD_INPUT, out)
            self.assertIn(reason, out)
        self.assertEqual(self.box.run_dirs(), [])
        with self.assertRaisesRegex(spec.SpecError, "rerun_noisy_rounds must be a number"):
            spec.from_dict({"matrix": {"name": "m", "rig": "fake", "seed": 1}, "axes": {"jdk": [17]},
                            "policy": {"rerun_noisy_rounds": "two"}})


if __name__ == "__main__":
    unittest.main()
