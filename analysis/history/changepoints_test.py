"""Known-answer tests of change-point detection (in the spirit of Apache Otava's own): seeded series with
steps at known places, and a flat one that must yield none."""

import os
import shutil
import tempfile
import unittest

import numpy as np

from analysis import resultsets
from analysis.history import changepoints, command
from analysis.testing.testsets import write_set


def noisy(levels, noise=0.005, seed=7):
    rng = np.random.default_rng(seed)
    return [level * (1 + rng.normal(0, noise)) for level in levels]


class ChangePointTest(unittest.TestCase):
    def test_a_five_percent_drop_is_found_where_it_happened(self):
        values = noisy([1000.0] * 30 + [950.0] * 20)
        (cp,) = changepoints.change_points(values, "higher_is_better")
        self.assertEqual(cp.index, 30)
        self.assertAlmostEqual(cp.change, -0.05, delta=0.005)
        self.assertTrue(cp.regression)

    def test_a_flat_series_has_no_change_point(self):
        self.assertEqual(changepoints.change_points(noisy([1000.0] * 60, seed=3), "higher_is_better"), [])

    def test_direction_decides_what_is_a_regression(self):
        values = noisy([100.0] * 20 + [110.0] * 20)
        (up,) = changepoints.change_points(values, "lower_is_better")
        self.assertTrue(up.regression)
        (up,) = changepoints.change_points(values, "higher_is_better")
        self.assertFalse(up.regression)

    def test_two_steps_and_the_minimum_segment(self):
        values = noisy([1000.0] * 20 + [900.0] * 20 + [1000.0] * 20)
        self.assertEqual([c.index for c in changepoints.change_points(values, "higher_is_better")], [20, 40])
        late = noisy([1000.0] * 47 + [900.0] * 3)
        self.assertEqual(changepoints.change_points(late, "higher_is_better", min_segment=5), [])
        self.assertEqual(changepoints.change_points(values, "higher_is_better", min_effect=0.2), [])

    def test_history_of_result_sets_plots_and_flags_the_regression(self):
        with tempfile.TemporaryDirectory() as d:
            levels = [1000.0] * 8 + [940.0] * 8
            for n, level in enumerate(levels):
                write_set(os.path.join(d, f"night{n:02d}"), [({"gc": "g1"}, level)], runs=1, noise=0.003, seed=n)
            out = os.path.join(d, "history.png")
            code = command.main([os.path.join(d, f"night{n:02d}") for n in range(len(levels))] + ["--out", out,
                                                                                                   "--results-dir", d])
            self.assertEqual(code, 1)
            self.assertTrue(os.path.getsize(os.path.join(d, "history.png")) > 1000)  # one series: the file asked for

    def test_nightly_sets_are_drawn_as_a_history_with_each_nights_state(self):
        # Issue 57: the site's nightly history put the sets' folder paths on the x axis. Synthetic nights (each
        # one run of accepted and candidate, 5 rounds): two A/A nights and one whose candidate is 20 % slower.
        with tempfile.TemporaryDirectory() as d:
            paths = []
            for n, slower in enumerate([1.0, 1.0, 0.8]):
                path = os.path.join(d, "a-machines-own-path", f"nightly-calibration-2026112{n}")
                write_set(path, [({"gc": "g1", "revision": "accepted"}, 1000.0),
                                 ({"gc": "g1", "revision": "candidate"}, 1000.0 * slower)], runs=5, noise=0.002, seed=n)
                paths.append(path)
            sets = [resultsets.load_run(p) for p in paths]
            found = changepoints.nights(sets, d)
            (key,) = found
            self.assertEqual(key[1], "cpu_loop_rate")
            self.assertEqual([x.state for x in found[key]], ["PASS", "PASS", "REGRESSED"])
            last = found[key][-1]
            self.assertAlmostEqual(last.worse_by, 0.2, delta=0.01)
            self.assertLess(last.worse_low, 0.2)
            self.assertGreater(last.worse_high, 0.2)
            self.assertTrue(last.catches > 0)  # this run's own D: no committed figure here
            out = os.path.join(d, "h.png")
            code = command.main(paths + ["--out", out, "--results-dir", d])
            self.assertEqual(code, 0)  # three nights: too few for a change point
            self.assertGreater(os.path.getsize(out), 5000)
            self.assertEqual(changepoints.short_name(sets[0]), "nightly-calibration-20261120")
            # A set that is not a nightly run: the history is a plain series, labelled by date and folder name.
            self.assertEqual(changepoints.nights(sets + [resultsets.load_run(self.plain(d))], d), {})

    @staticmethod
    def plain(d):
        path = os.path.join(d, "plain")
        write_set(path, [({"gc": "g1"}, 1000.0)], runs=3, seed=9)
        return path

    def test_an_axis_added_later_at_its_default_does_not_split_the_history(self):
        # Issue 41, item 3: newer sets carry executor=process (an axis added later, at its default: the cell id
        # stays); the history made two one-point series of one cell and never found the drop.
        with tempfile.TemporaryDirectory() as d:
            levels = [1000.0] * 8 + [940.0] * 8
            for n, level in enumerate(levels):
                params = {"gc": "g1"} if n < 8 else {"gc": "g1", "executor": "process"}
                write_set(os.path.join(d, f"night{n:02d}"), [(params, level)], runs=1, noise=0.003, seed=n)
            keys = [k for k in changepoints.series([resultsets.load_run(os.path.join(d, f"night{n:02d}"))
                                               for n in range(len(levels))]) if k[1] == "cpu_loop_rate"]
            self.assertEqual(len(keys), 1, keys)
            self.assertNotIn("executor", keys[0][0])  # the label: what every point shares
            code = command.main([os.path.join(d, f"night{n:02d}") for n in range(len(levels))]
                                + ["--out", os.path.join(d, "h.png"), "--metric", "cpu_loop_rate", "--results-dir", d])
            self.assertEqual(code, 1)
            self.assertTrue(os.path.isfile(os.path.join(d, "h.png")))

    def test_host_drift_is_not_reported_as_a_regression(self):
        # The metric drops 8 % where the host reference drops 9 %: the host got slower, not the code.
        with tempfile.TemporaryDirectory() as d:
            levels = [(1000.0, 6.0e8)] * 8 + [(920.0, 5.46e8)] * 8
            for n, (level, ref) in enumerate(levels):
                write_set(os.path.join(d, f"night{n:02d}"), [({"gc": "g1"}, level)], runs=1, noise=0.003, seed=n,
                          reference=ref)
            sets = [os.path.join(d, f"night{n:02d}") for n in range(len(levels))]
            code = command.main(sets + ["--out", os.path.join(d, "h.png"), "--results-dir", d])
            self.assertEqual(code, 0)
            # The same drop with a steady host reference is a regression.
            for n in range(len(levels)):
                shutil.rmtree(sets[n])
                write_set(sets[n], [({"gc": "g1"}, levels[n][0])], runs=1, noise=0.003, seed=n, reference=6.0e8)
            self.assertEqual(command.main(sets + ["--out", os.path.join(d, "h.png"), "--results-dir", d]), 1)


if __name__ == "__main__":
    unittest.main()
