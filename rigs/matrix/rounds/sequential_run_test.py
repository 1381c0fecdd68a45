"""Sequential repetitions (policy stop = "decided") end to end with the fake rig (fakerig.py): comparisons
decided at the first look stop their cells, the manifest says when and why, a matrix with nothing to decide
runs `min` rounds, a metric without a minimum effect is refused. The rule itself: analysis/sequential_test.py."""

import json
import os
import shutil
import unittest

from rigs.matrix import runner
from rigs.matrix.testing.fakerig import TESTDATA, FakeRigTestCase


class SequentialRunTest(FakeRigTestCase):
    def test_a_sequential_run_stops_each_comparison_once_decided(self):
        code, out = self.box.main("--profile", "sequential")
        self.assertEqual(code, runner.EXIT_OK, out)
        (run_dir,) = self.box.run_dirs()
        docs = self.docs(run_dir)
        # 4 cells, every comparison decided at round 3 of at most 6: rounds 0-2 measured, 3-5 not needed.
        self.assertEqual(sorted({rep for _, rep in docs}), [0, 1, 2])
        self.assertEqual(len(docs), 12)
        with open(os.path.join(run_dir, "manifest.json")) as f:
            manifest = json.load(f)
        self.assertEqual(manifest["state"], "complete")
        for cell in manifest["cells"]:
            self.assertEqual(cell["repetitions"], {"0": "ok", "1": "ok", "2": "ok", "3": "not_needed",
                                                   "4": "not_needed", "5": "not_needed"})
        block = manifest["sequential"]
        self.assertEqual((block["min"], block["max"], block["family"], block["rounds"]), (3, 6, 4, 3))
        reasons = {(q["axis"], q["value"]): q["reason"] for q in block["comparisons"]}
        self.assertEqual(reasons, {("behaviour", "halved"): "decided at round 3: different",
                                   ("gc", "parallel"): "decided at round 3: equivalent"})
        self.assertEqual(len(block["comparisons"]), 4)  # each comparison at both values of the other axis
        self.assertIn("decided at round 3: different: behaviour=halved vs ok, rate -50.0%", out)
        self.assertIn("at most (3..6 rounds, stop when decided)", out)
        # Narrowed to one cell there is nothing to decide: it runs the first `min` rounds and says so.
        code, out = self.box.main("--profile", "sequential", "--set", "behaviour=ok", "--set", "gc=g1")
        self.assertEqual(code, runner.EXIT_OK, out)
        self.assertIn("nothing to decide", out)
        (narrowed,) = set(self.box.run_dirs()) - {run_dir}
        self.assertEqual(sorted(rep for _, rep in self.docs(narrowed)), [0, 1, 2])
        # The fixed count stays one flag away, and is another run (its own settings).
        code, out = self.box.main("--profile", "sequential", "--set", "policy.repetitions=2", "--dry-run")
        self.assertEqual(code, runner.EXIT_OK, out)
        self.assertIn("run x2", out)

    def test_a_gated_run_stops_at_the_gates_own_verdicts(self):
        code, out = self.box.main("--profile", "gated")
        self.assertEqual(code, runner.EXIT_OK, out)
        (run_dir,) = self.box.run_dirs()
        self.assertEqual(sorted({rep for _, rep in self.docs(run_dir)}), [0, 1, 2])
        with open(os.path.join(run_dir, "manifest.json")) as f:
            block = json.load(f)["sequential"]
        self.assertEqual((block["rule"], block["budget_s"], block["min"], block["max"]), ("gated", 3600, 3, 6))
        self.assertGreater(block["elapsed_s"], 0)
        reasons = {(q["axis"], q["value"]): q["reason"] for q in block["comparisons"]}
        self.assertEqual(reasons, {("behaviour", "halved"): "decided at round 3: REGRESSED",
                                   ("gc", "parallel"): "decided at round 3: PASS"})
        self.assertIn("stop at the gate's PASS or REGRESSED or after 60 min", out)
        # A noisy comparison gets rounds until the next one would end past the budget, then says so.
        code, out = self.box.main("--profile", "gated_budget")
        self.assertEqual(code, runner.EXIT_OK, out)
        (noisy,) = set(self.box.run_dirs()) - {run_dir}
        with open(os.path.join(noisy, "manifest.json")) as f:
            manifest = json.load(f)
        (question,) = manifest["sequential"]["comparisons"]
        self.assertRegex(question["reason"], r"^time budget reached \(3 rounds, \d+\.\d min\): inconclusive$")
        self.assertEqual(question["look"]["stopped_by"], "budget")
        for cell in manifest["cells"]:
            self.assertEqual(cell["repetitions"], {"0": "ok", "1": "ok", "2": "ok", "3": "not_needed",
                                                   "4": "not_needed", "5": "not_needed"})
        # A budget needs the gated rule: refused before anything runs.
        code, out = self.box.main("--profile", "sequential", "--set", "policy.budget_s=60")
        self.assertEqual(code, runner.EXIT_BAD_INPUT, out)
        self.assertIn("budget_s is for stop = \"gated\"", out)

    def test_a_sequential_policy_without_a_minimum_effect_is_refused(self):
        code, out = self.box.main("--profile", "undecidable")
        self.assertEqual(code, runner.EXIT_BAD_INPUT, out)
        self.assertIn("no minimum effect for latency", out)
        self.assertIn("latency = 0.05", out)
        self.assertEqual(self.box.run_dirs(), [])

    def test_a_workload_without_its_gate_file_is_named_as_such(self):
        folder = os.path.join(self.box.root, "workload_without_gate")
        shutil.copytree(os.path.join(TESTDATA, "fake_workload"), folder)
        os.remove(os.path.join(folder, "gate.toml"))
        code, out = self.box.main("--profile", "sequential", "--workload", folder)
        self.assertEqual(code, runner.EXIT_BAD_INPUT, out)
        out = " ".join(out.split())  # the console wraps long paths
        self.assertIn("gate.toml does not exist", out)
        self.assertIn("README: Add a rig", out)


if __name__ == "__main__":
    unittest.main()
