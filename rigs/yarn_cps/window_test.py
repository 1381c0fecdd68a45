"""The steady window and its rates, on per-second series recorded from real simulator runs (known answers
worked out by hand from the files in testdata/; see testdata/README.md)."""

import json
import os
import unittest

from rigs.yarn_cps import window

TESTDATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata")


def load(name):
    with open(os.path.join(TESTDATA, name)) as f:
        return window.counter_samples([json.loads(line) for line in f if line.startswith("{")])


class RecordedSeriesTest(unittest.TestCase):
    def test_heartbeat_capped_run_reads_exactly_500(self):
        s = load("sls342_jdk17_g1_500nodes_1s.jsonl")
        w = window.steady_window(s, warmup_s=8, min_window_s=15, total=20010)
        # First allocation at 6.165 s; 14.161 s is 7.996 s later, one sample short of the warm-up.
        self.assertEqual((w.first_allocation_t, w.start_t), (6.165, 15.159))
        # Pending demand first reaches zero at 47.159 s: the window ends one sample earlier.
        self.assertEqual(w.end_t, 46.159)
        self.assertAlmostEqual(w.allocation_rate, (19539 - 4039) / 31.0, places=9)
        self.assertAlmostEqual(w.allocation_rate, 500.0, places=6)
        self.assertAlmostEqual(w.release_rate, (18536 - 3029) / 31.0, places=9)
        rates = [r for _, r in window.per_interval_rates(s, "allocated", w.start_index, w.end_index)]
        self.assertEqual(len(rates), 31)
        self.assertTrue(all(abs(r - 500) < 1 for r in rates), rates)

    def test_release_fraction_delays_the_start(self):
        s = load("sls342_jdk17_g1_500nodes_1s.jsonl")
        # With no warm-up, the start waits for 5 % of 20010 containers (1000.5) to be released: 11.159 s.
        w = window.steady_window(s, warmup_s=0, min_window_s=1, total=20010)
        self.assertEqual(w.start_t, 11.159)

    def test_cpu_bound_run(self):
        s = load("sls342_jdk17_g1_1000nodes_100ms.jsonl")
        w = window.steady_window(s, warmup_s=8, min_window_s=9.5, total=150030)
        self.assertEqual((w.start_t, w.end_t), (15.173, 25.173))
        self.assertAlmostEqual(w.allocation_rate, (144952 - 60526) / (25.173 - 15.173), places=6)  # 8442.6/s

    def test_too_short_a_window_is_an_error_with_the_numbers(self):
        s = load("sls342_jdk17_g1_1000nodes_100ms.jsonl")
        with self.assertRaisesRegex(window.WindowError, r"steady window 10\.00 s is shorter than the declared 15 s"):
            window.steady_window(s, warmup_s=8, min_window_s=15, total=150030)
        with self.assertRaisesRegex(window.WindowError, "never got past its warm-up"):
            window.steady_window(s, warmup_s=60, min_window_s=1, total=150030)

    def test_thread_cpu_shares_are_cores(self):
        s = load("sls342_jdk17_g1_1000nodes_100ms.jsonl")
        w = window.steady_window(s, warmup_s=8, min_window_s=9.5, total=150030)
        shares = window.thread_cpu_shares(s, w.start_index, w.end_index)
        a, b = s[w.start_index], s[w.end_index]
        self.assertAlmostEqual(shares["process"], round((b["process_cpu_ns"] - a["process_cpu_ns"]) / 1e9 / (b["t"] - a["t"]), 3))
        self.assertGreater(shares["process"], 1.2)  # CPU-bound: well over one of the two cores
        self.assertLessEqual(shares["scheduler"], 1.0)


class SyntheticEdgeTest(unittest.TestCase):
    def series(self, rows):
        return [{"t": float(t), "allocated": a, "released": r, "pending_containers": p} for t, a, r, p in rows]

    def test_no_allocations_and_too_few_samples(self):
        with self.assertRaisesRegex(window.WindowError, "fewer than two samples"):
            window.steady_window(self.series([(0, 0, 0, 0)]), 0, 1)
        with self.assertRaisesRegex(window.WindowError, "allocated no containers"):
            window.steady_window(self.series([(0, 0, 0, 0), (1, 0, 0, 5)]), 0, 1)

    def test_a_dip_in_demand_is_tolerated_but_a_gap_is_not(self):
        # One idle sample in 13 (under 10 %): allowed and counted; the window runs to the last pending sample.
        rows = [(t, 100 * t, max(0, 100 * (t - 2)), 0 if t == 5 else 50) for t in range(0, 16)]
        rows += [(16, 1650, 1450, 0), (17, 1650, 1650, 0)]
        w = window.steady_window(self.series(rows), warmup_s=1, min_window_s=5, total=1650)
        self.assertEqual((w.start_t, w.end_t, w.idle_samples), (3.0, 15.0, 1))
        self.assertEqual(w.allocation_rate, 100.0)
        gappy = [(t, a, r, 0 if 4 <= t <= 6 else p) for t, a, r, p in rows]
        with self.assertRaisesRegex(window.WindowError, "nothing was pending in 3 of the window's 13 samples"):
            window.steady_window(self.series(gappy), warmup_s=1, min_window_s=5, total=1650)

    def test_demand_running_out_at_the_start(self):
        rows = [(0, 10, 0, 5), (1, 20, 10, 0), (2, 20, 20, 0)]
        with self.assertRaisesRegex(window.WindowError, "demand ran out"):
            window.steady_window(self.series(rows), 0, 1)


if __name__ == "__main__":
    unittest.main()
