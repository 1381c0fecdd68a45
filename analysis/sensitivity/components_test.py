"""Known-answer tests of analysis/sensitivity/components.py: synthetic rounds drawn from known variance components (not
measurements) come back within their sampling error; the MDE formula agrees with a simulation of the test it
describes; the allocation spends its budget; resampled rates of clear cases are what they must be."""

import math
import os
import tempfile
import unittest

import numpy as np

from analysis.sensitivity import components
from analysis.sensitivity import figures as sensitivity_figures
from analysis.sensitivity import sets as sensitivity_sets


def synthetic_rounds(rng, rounds, round_sd, run_sd, window_sd, windows, level=1000.0):
    """[[run windows] per round], two runs a round, from the model: log y = round + run + window."""
    out = []
    for _ in range(rounds):
        r = rng.normal(0, round_sd)
        out.append([list(level * np.exp(r + rng.normal(0, run_sd) + rng.normal(0, window_sd, windows)))
                    for _ in range(2)])
    return out


class ComponentsTest(unittest.TestCase):
    def test_known_components_come_back(self):
        # 2 % between rounds, 1 % between runs, 3 % between independent windows (40 a run), 400 rounds: the
        # estimates' relative standard errors are ~5-10 %; 25 % bounds fail a broken estimator, not a noisy one.
        rng = np.random.default_rng(7)
        c = components.estimate_components(synthetic_rounds(rng, 400, 0.02, 0.01, 0.03, 40), round_s=10,
                                            run_overhead_s=1, window_s=0.1)
        self.assertTrue(c.windows_separable)
        self.assertAlmostEqual(math.sqrt(c.rounds), 0.02, delta=0.02 * 0.25)
        # The run's value is its median: independent normal windows reach it with pi/2 times their variance.
        self.assertAlmostEqual(c.windows, math.pi / 2 * 0.03 ** 2, delta=math.pi / 2 * 0.03 ** 2 * 0.25)
        self.assertAlmostEqual(math.sqrt(c.runs), 0.01, delta=0.01 * 0.25)
        self.assertEqual((c.windows_per_run, c.runs_per_round), (40.0, 2))
        predicted = c.paired_sd()
        d = [math.log(np.median(b) / np.median(a)) for a, b in synthetic_rounds(rng, 400, 0.02, 0.01, 0.03, 40)]
        self.assertAlmostEqual(predicted, float(np.std(d, ddof=1)), delta=predicted * 0.15)

    def test_dependent_windows_fold_into_runs(self):
        # A run's total is fixed: every slow window is made up by a fast one (what YARN's per-second allocation
        # counts do), so windows say nothing about a run's value beyond it.
        rng = np.random.default_rng(3)
        rounds = []
        for _ in range(30):
            rounds.append([])
            for _ in range(2):
                level = 1000 * math.exp(rng.normal(0, 0.02))
                swing = rng.normal(0, 0.3, 10)
                rounds[-1].append(list(level * np.exp(np.concatenate([swing, -swing]))))
        c = components.estimate_components(rounds)
        self.assertFalse(c.windows_separable)
        self.assertEqual(c.windows, 0.0)
        self.assertAlmostEqual(math.sqrt(c.runs), 0.02, delta=0.01)

    def test_bad_input_is_refused(self):
        with self.assertRaisesRegex(components.SensitivityError, "need at least 2"):
            components.estimate_components([[[1.0], [1.0]]])
        with self.assertRaisesRegex(components.SensitivityError, "median <= 0"):
            components.estimate_components([[[1.0], [0.0]], [[1.0], [1.0]]])
        with self.assertRaisesRegex(components.SensitivityError, "same number"):
            components.estimate_components([[[1.0], [1.0]], [[1.0]]])


class MdeTest(unittest.TestCase):
    def test_the_issue_table(self):
        # Paired sd 3.77 % (YARN's nightly cell) and 15.35 % (NameNode create), 5 and 20 rounds.
        self.assertAlmostEqual(components.mde_paired(0.0377, 5), 0.127, delta=0.001)
        self.assertAlmostEqual(components.mde_paired(0.0377, 20), 0.039, delta=0.001)
        self.assertAlmostEqual(components.mde_paired(0.1535, 5), 0.516, delta=0.001)
        self.assertEqual(components.mde_paired(0.0, 5), 0.0)

    def test_formula_against_simulation(self):
        c = components.Components(rounds=0.02 ** 2, runs=0.01 ** 2, windows=0.03 ** 2, windows_per_run=20,
                                   runs_per_round=2, round_s=10, run_overhead_s=1, window_s=0.2)
        for rounds in (5, 12):
            mde = components.mde_paired(c.paired_sd(), rounds)
            self.assertAlmostEqual(components.power_paired(mde, c.paired_sd(), rounds), 0.95, places=6)
            rate = components.simulated_paired_power(c, rounds, mde, draws=20000, seed=rounds)
            self.assertAlmostEqual(rate, 0.95, delta=0.01)
            # Half the MDE is seen far less often, and nothing at all at the false-alarm rate.
            self.assertLess(components.simulated_paired_power(c, rounds, mde / 2, draws=20000), 0.6)
            self.assertAlmostEqual(components.simulated_paired_power(c, rounds, 0.0, draws=20000), 0.01, delta=0.004)


class AllocationTest(unittest.TestCase):
    C = components.Components(rounds=0.0, runs=0.01 ** 2, windows=0.05 ** 2, windows_per_run=10, runs_per_round=2,
                               round_s=2 * (5 + 10 * 1.0), run_overhead_s=5, window_s=1.0, windows_separable=True)

    def test_within_budget_and_better_with_more(self):
        small = components.allocation(self.C, 300)
        large = components.allocation(self.C, 3000)
        for a, budget in ((small, 300), (large, 3000)):
            self.assertLessEqual(a["cost_s"], budget)
            self.assertGreaterEqual(a["rounds"], 3)
        self.assertLess(large["mde"], small["mde"])
        # The allocation's MDE is the formula's for what it chose.
        sd = self.C.paired_sd(large["windows_per_run"])
        self.assertAlmostEqual(large["mde"], components.mde_paired(sd, large["rounds"]))

    def test_budget_shorter_than_a_round_is_refused(self):
        with self.assertRaisesRegex(components.SensitivityError, "shorter than one round"):
            components.allocation(self.C, 10)
        with self.assertRaisesRegex(components.SensitivityError, "fewer than 3 rounds"):
            components.allocation(self.C, 35)  # one round of 30 s fits; 3 of the cheapest (12 s) do not


class NoisyRoundsTest(unittest.TestCase):
    def test_rounds_beyond_the_band_are_named(self):
        def doc(rep, steal):
            return {"cell": {"repetition": rep}, "provenance": {"noise": {"steal_fraction": steal}}}
        docs = [doc(0, 0.001), doc(0, 0.002), doc(1, 0.08), doc(1, 0.0), doc(2, None), {"cell": {"repetition": 3}}]
        flagged, seen = sensitivity_figures.noisy_rounds(docs, 0.05)
        self.assertEqual(flagged, [(1, 0.08)])
        self.assertEqual(sorted(seen), [0.0, 0.001, 0.002, 0.08])
        self.assertEqual(sensitivity_figures.noisy_rounds(docs, 0.1)[0], [])


class CommittedTest(unittest.TestCase):
    def test_newest_wins_and_foreign_files_are_refused(self):
        import json
        with tempfile.TemporaryDirectory() as baselines:
            def write(name, measured_at, mde, doc=None):
                os.makedirs(os.path.join(baselines, name))
                entry = {"paired_sd": 0.01, "mde": mde, "design": {"fixed": {"rounds": 5}}, "sets": {"aa": name},
                         "measured_at": measured_at, "workload": {"sha256": "ab" * 32},
                         "components": {"round_s": 10.0}}
                with open(os.path.join(baselines, name, sensitivity_figures.FILE_NAME), "w") as f:
                    json.dump(doc or {"kind": sensitivity_figures.KIND, "schema_version": 1, "yarn_cps": {"rate": entry}}, f)
            write("old", "2026-11-01", 0.2)
            write("new", "2026-11-25", 0.1)
            figure = sensitivity_figures.committed(baselines, "yarn_cps")["rate"]
            self.assertEqual((figure.set_name, figure.mde), ("new", 0.1))
            self.assertFalse(figure.usable)  # schema 1: an older rule's figure, no stated D
            self.assertEqual(sensitivity_figures.committed(baselines, "redis"), {})
            write("foreign", "2026-11-26", 0.1, doc={"kind": "something else"})
            with self.assertRaisesRegex(components.SensitivityError, "not a tunelab.sensitivity file"):
                sensitivity_figures.committed(baselines, "yarn_cps")


class HostileFileTest(unittest.TestCase):
    """Issue 58, row 2: one bad sensitivity.json took the site and the gate down (TypeError, RecursionError,
    a rig named a/b in a plot's file name, 200 MiB read). Each is now refused whole, named, as one error."""

    def test_each_hostile_file_is_the_readers_error(self):
        import json
        committed = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "results", "baselines",
                                 "calibration-gate-aa-20261124-2vcpu", sensitivity_figures.FILE_NAME)
        with open(committed) as f:
            good = json.load(f)

        def spoiled(change):
            doc = json.loads(json.dumps(good))
            change(doc, doc["calibration"]["cpu_loop_rate"])
            return json.dumps(doc)
        cases = {
            "rig key a/b": spoiled(lambda d, e: d.update({"a/b": d.pop("calibration")})),
            "rate a string": spoiled(lambda d, e: e.update(false_alarm_rate="low")),
            "sd a list": spoiled(lambda d, e: e["components"].update(sd=[1, 2])),
            "measured_at a list": spoiled(lambda d, e: e.update(measured_at=["2026-11-24"])),
            "a design's rate a string": spoiled(lambda d, e: e["designs"]["nightly"].update(detection_at_d="high")),
            "100k deep": '{"kind": "tunelab.sensitivity", "schema_version": 2, "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
        }
        with tempfile.TemporaryDirectory() as baselines:
            folder = os.path.join(baselines, "set")
            os.makedirs(folder)
            path = os.path.join(folder, sensitivity_figures.FILE_NAME)
            for case, text in cases.items():
                with open(path, "w") as f:
                    f.write(text)
                for read in (sensitivity_figures.read_file, lambda p: sensitivity_figures.history(baselines),
                             lambda p: sensitivity_figures.committed(baselines, "calibration")):
                    with self.assertRaisesRegex(components.SensitivityError, "set/sensitivity.json", msg=case):
                        read(path)
                unreadable = []
                self.assertEqual(sensitivity_figures.history(baselines, unreadable), [])
                self.assertEqual(len(unreadable), 1, case)
            os.truncate(path, 200 << 20)  # sparse: refused by its size before a byte is read
            with self.assertRaisesRegex(components.SensitivityError, "byte limit"):
                sensitivity_figures.read_file(path)


class IterationCostTest(unittest.TestCase):
    """A window is an iteration where the runs record their iterations' time (their cost lines)."""

    def doc(self, walls_s, warmup_s=(9.0,)):
        its = [{"iteration": i, "warmup": True, "cost": {"wall_ns": int(w * 1e9)}} for i, w in enumerate(warmup_s)]
        its += [{"iteration": len(warmup_s) + i, "warmup": False, "cost": {"wall_ns": int(w * 1e9)}}
                for i, w in enumerate(walls_s)]
        return {"observations": {"iterations": its}}

    def test_the_measured_iterations_median_is_a_window(self):
        self.assertAlmostEqual(sensitivity_sets.iteration_seconds(self.doc([0.5, 0.6, 0.7])), 0.6)
        self.assertEqual(sensitivity_sets.iteration_seconds({"observations": {}}), 0.0)
        # Untrusted fields: a wall time that is not a positive number is not a time.
        bad = {"observations": {"iterations": [{"warmup": False, "cost": {"wall_ns": "x"}}, "junk",
                                               {"warmup": False, "cost": {"wall_ns": -5}}]}}
        self.assertEqual(sensitivity_sets.iteration_seconds(bad), 0.0)

    def test_components_price_an_iteration_not_the_measure_phase(self):
        class Set:
            def first_ok(self):
                return {"policy": {"measure_s": 1, "cooldown_s": 1, "iterations": 4}}
        rng = np.random.default_rng(3)

        def run():
            return sensitivity_sets.Run(list(1000 * np.exp(rng.normal(0, 0.01, 4))), 10.0, None, 0.5)
        comps = sensitivity_sets.components_of(Set(), [(run(), run()) for _ in range(8)])
        self.assertAlmostEqual(comps.window_s, 0.5)  # not measure_s / 4
        self.assertAlmostEqual(comps.run_overhead_s, 10.0 - 4 * 0.5)


if __name__ == "__main__":
    unittest.main()
