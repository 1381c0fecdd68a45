"""The steady-state check (steadystate.py) on known answers and on recorded NameNode iterations, then end to end with the fake rig's timed
iterations (testdata/fake/java: `ok` warms up over its warm-up iterations and is flat after them, `drifting`
gets 3 % faster every iteration): the flat launch is ok, the drifting one invalid and said so, every
iteration's sample stored raw with its iteration, and a rig that cannot iterate refuses the policy."""

import unittest
from unittest import mock

from rigs.matrix import runner
from rigs.matrix.cell import steadystate
from rigs.matrix.testing.fakerig import FakeRig, FakeRigTestCase


def samples(values, metric="rate", first=0):
    return [{"metric": metric, "value": v, "unit": "ops/s", "t": float(k), "metadata": {"iteration": first + k}}
            for k, v in enumerate(values)]


class SteadinessTest(unittest.TestCase):
    def test_flat_iterations_are_steady(self):
        (s,) = steadystate.check(samples([100, 101, 99, 100, 102, 100]), band=0.05)
        self.assertEqual((s.metric, s.iterations, s.first_half_median, s.second_half_median), ("rate", 6, 100, 100))
        self.assertTrue(s.steady)

    def test_a_drift_over_the_iterations_is_not_steady(self):
        # 100 * 1.03^k for k = 0..7: the halves' medians are 1.03^1.5 and 1.03^5.5 apart, 12.6 %.
        (s,) = steadystate.check(samples([100 * 1.03 ** k for k in range(8)]), band=0.05)
        self.assertFalse(s.steady)
        self.assertAlmostEqual(s.change, 1.03 ** 4 - 1, places=9)
        self.assertAlmostEqual(s.trend_p, 2 / 40320)  # Kendall's exact test: 2 of 8! orders are as monotone
        self.assertEqual(s.describe(), "rate: the second half of its 8 measured iterations is 12.6% above the first "
                                       "(band 5%), a trend (Kendall p = 0.000 < 0.05)")

    def test_one_outlier_iteration_is_resisted(self):
        self.assertTrue(steadystate.check(samples([100, 100, 160, 100, 100, 100]), band=0.05)[0].steady)

    def test_an_odd_count_leaves_the_middle_out_and_a_slowdown_is_seen_too(self):
        (s,) = steadystate.check(samples([100, 98, 95, 92, 90]), band=0.05)
        self.assertEqual((s.first_half_median, s.second_half_median), (99, 91))
        self.assertAlmostEqual(s.trend_p, 2 / 120)
        self.assertFalse(s.steady)
        self.assertIn("8.1% below the first", s.describe())

    def test_a_large_difference_without_a_trend_is_noise(self):
        # Halves 100 vs 80 (-20 %), but the values alternate: no trend, so no warm-up under way.
        (s,) = steadystate.check(samples([100, 80, 100, 80, 100, 80]), band=0.05)
        self.assertAlmostEqual(s.change, -0.2)
        self.assertGreater(s.trend_p, 0.5)
        self.assertTrue(s.steady)

    def test_recorded_namenode_iterations(self):
        # Two launches of the steady_aa profile (run 20261126T085118Z-629b, create x 20,000, ops/s): one still
        # warming up (34.6k -> 43.8k), one at its level with the ~10 % scatter of 0.5 s iterations.
        warming = [34602, 36232, 37807, 35778, 43764, 40900, 38911, 43764]
        level = [47506, 32895, 40486, 37951, 43573, 40323, 41152, 44643]
        (w,) = steadystate.check(samples(warming), band=0.05)
        (s,) = steadystate.check(samples(level), band=0.05)
        self.assertFalse(w.steady)
        self.assertTrue(s.steady)
        self.assertGreater(abs(s.change), 0.05)  # the band alone would have called it unsteady

    def test_several_samples_an_iteration_and_several_metrics(self):
        per_iteration = [dict(x, metadata={"iteration": k // 2}) for k, x in enumerate(samples([1, 3] * 5))]
        found = steadystate.check(per_iteration + samples([5, 5, 5, 5, 5], metric="latency"), band=0.05)
        self.assertEqual([(s.metric, s.iterations, s.first_half_median, s.trend_p) for s in found],
                         [("latency", 5, 5, 1.0), ("rate", 5, 2, 1.0)])  # constant values: no trend

    def test_a_trend_is_judged_over_every_metric_of_the_launch(self):
        # Kendall p = 0.031 and halves 6.8 % apart: a trend alone, not beside a second metric (0.05 / 2).
        drifting = [100, 101, 109, 104, 103, 111, 108, 112]
        (alone,) = steadystate.check(samples(drifting), band=0.05)
        self.assertAlmostEqual(alone.trend_p, 0.0312, places=4)
        self.assertFalse(alone.steady)
        self.assertEqual(alone.to_json()["trend_alpha"], 0.05)
        with_other = steadystate.check(samples(drifting) + samples([7] * 8, metric="latency"), band=0.05)
        rate = next(s for s in with_other if s.metric == "rate")
        self.assertEqual(rate.alpha, 0.025)
        self.assertTrue(rate.steady)

    def test_a_design_that_decides_on_some_metrics_is_refused_only_for_those(self):
        drifting = [100, 103, 106, 109, 112, 115, 118, 121]
        found = steadystate.check(samples([50] * 8) + samples(drifting, metric="cpu_per_op"), band=0.05)
        self.assertEqual([s.metric for s in steadystate.judged_unsteady(found)], ["cpu_per_op"])
        self.assertEqual(steadystate.judged_unsteady(found, ("rate",)), [])  # recorded, not judged
        self.assertEqual([s.metric for s in steadystate.judged_unsteady(found, ("cpu_per_op",))], ["cpu_per_op"])

    def test_untagged_samples_and_too_few_iterations_are_not_judged(self):
        untagged = [dict(x, metadata={}) for x in samples([1, 2, 3, 4, 5])]
        self.assertEqual(steadystate.check(untagged + samples([1, 2, 3, 4]), band=0.05), [])

    def test_a_zero_first_half(self):  # a rate of 0 becoming 5: infinitely above
        (s,) = steadystate.check(samples([0, 0, 0, 0, 5, 5, 5, 5]), band=0.05)
        self.assertFalse(s.steady)
        self.assertIsNone(s.to_json()["change"])  # JSON holds no infinity


class IteratingRunTest(FakeRigTestCase):
    def test_a_steady_launch_is_ok_and_a_drifting_one_is_invalid(self):
        code, out = self.box.main("--profile", "iterating")
        (run_dir,) = self.box.run_dirs()
        docs = {d["cell"]["params"]["behaviour"]: d for d in self.docs(run_dir).values()}
        ok, drifting = docs["ok"], docs["drifting"]
        self.assertEqual(ok["status"], "ok", ok.get("reason"))
        self.assertEqual(ok["policy"]["iterations"], 6)
        self.assertEqual(ok["policy"]["warmup_iterations"], 3)
        # Every iteration stored raw with its number: the warm-up ones apart.
        self.assertEqual([s["metadata"]["iteration"] for s in ok["warmup_samples"]], [0, 1, 2])
        self.assertEqual([s["metadata"]["iteration"] for s in ok["samples"]], [3, 4, 5, 6, 7, 8])
        self.assertEqual([s["value"] for s in ok["warmup_samples"]], [50.0, 60.0, 70.0])
        self.assertTrue(ok["steady_state"]["metrics"]["rate"]["steady"])
        self.assertEqual(ok["steady_state"]["band"], 0.05)
        self.assertEqual(drifting["status"], "invalid")
        self.assertEqual(drifting["reason"], "no steady state: rate: the second half of its 6 measured iterations is "
                                             "9.3% above the first (band 5%), a trend (Kendall p = 0.003 < 0.05); warm up "
                                             "longer (policy.warmup_iterations) or widen policy.steady_band")
        self.assertFalse(drifting["steady_state"]["metrics"]["rate"]["steady"])
        self.assertEqual(len(drifting["samples"]), 6)  # kept, raw, for whoever looks
        self.assertEqual(code, runner.EXIT_CELLS_FAILED, out)

    def test_the_plan_says_the_iterations(self):
        code, out = self.box.main("--profile", "iterating", "--dry-run")
        self.assertEqual(code, runner.EXIT_OK, out)
        self.assertIn("x 1 repetitions (3 + 6 iterations a launch (steady within 5%), warm-up 0.5 s", out)

    def test_fewer_iterations_than_asked_is_a_problem(self):
        real_parse = FakeRig.parse

        def four_of_six(rig, *args):
            parsed = real_parse(rig, *args)
            parsed.samples = parsed.samples[:4]
            return parsed
        with mock.patch.object(FakeRig, "parse", four_of_six):
            code, out = self.box.main("--profile", "iterating", "--set", "behaviour=ok")
        self.assertEqual(code, runner.EXIT_CELLS_FAILED, out)
        (run_dir,) = self.box.run_dirs()
        (doc,) = self.docs(run_dir).values()
        self.assertEqual(doc["status"], "invalid")
        self.assertIn("the policy asks for 6 measured iterations a launch; the rig reported 4", doc["reason"])

    def test_a_rig_that_cannot_iterate_refuses_the_policy(self):
        code, out = self.box.main("--profile", "iterating", "--set", "server=serve")
        self.assertEqual(code, runner.EXIT_BAD_INPUT, out)
        self.assertIn("asks for 3 + 6 iterations a launch (steady within 5%); the fake rig runs one unit of work "
                      "per launch for this cell", out)
        self.assertEqual(self.box.run_dirs(), [])

    def test_a_policy_the_rig_cannot_honour_is_refused_before_anything_runs(self):
        def too_short(rig, params, policy):
            raise ValueError(f"iterations = {policy.iterations} are too short here")
        with mock.patch.object(FakeRig, "check_policy", too_short):
            code, out = self.box.main("--profile", "iterating")
        self.assertEqual(code, runner.EXIT_BAD_INPUT, out)
        self.assertIn("iterations = 6 are too short here", out)
        self.assertEqual(self.box.run_dirs(), [])


if __name__ == "__main__":
    unittest.main()
