"""Merged latency distributions: known answers and properties (the recorded redis-benchmark case is in
rigs/redis/rig_test.py)."""

import math
import unittest

from hypothesis import given, settings
from hypothesis import strategies as st

from analysis import distributions as dist


def expanded(d):
    """Every request at its printed bound (the oracle: sort all requests, take the rank)."""
    out, previous = [], 0
    for bound, count in zip(d.bounds, d.counts):
        out += [bound] * (count - previous)
        previous = count
    return out


def oracle_percentile(ds, percent):
    values = sorted(v for d in ds for v in expanded(d))
    return values[math.ceil(percent / 100 * len(values) - 1e-9) - 1]


# Two runs, written by hand: 1,000 requests each.
RUN_A = dist.Distribution.from_points([(0.1, 500), (0.2, 990), (0.5, 999), (2.0, 1000)], total=1000)
RUN_B = dist.Distribution.from_points([(0.15, 100), (0.3, 980), (1.0, 1000)], total=1000)


class KnownAnswerTest(unittest.TestCase):
    def test_merged_percentiles_by_hand(self):
        merged = dist.merge([RUN_A, RUN_B])
        self.assertEqual(merged.bounds, (0.1, 0.15, 0.2, 0.3, 0.5, 1.0, 2.0))
        # At 0.2 ms: A has 990, B only what it printed at 0.15 (100): a lower bound.
        self.assertEqual(merged.counts, (500, 600, 1090, 1970, 1979, 1999, 2000))
        self.assertEqual(dist.percentile(merged, 50), 0.2)  # rank 1,000 of 2,000: 1,090 at 0.2
        self.assertEqual(dist.percentile(merged, 99), 1.0)  # rank 1,980: 1,979 at 0.5 falls one short
        self.assertEqual(dist.percentile(merged, 99.5), 1.0)  # 10 requests beyond it: the floor, read
        self.assertIsNone(dist.percentile(merged, 99.9))  # 2 requests beyond it: not read

    def test_averaged_percentiles_are_not_the_merged_one(self):
        # Why counts are added: A's p99 is 0.2 ms and B's 1.0 ms; their mean, 0.6 ms, is below the merged
        # p99 (1.0 ms: A's 10 and B's 20 slowest requests are 30 beyond 0.3 ms, 21 beyond 0.5 ms).
        self.assertEqual(dist.percentile(RUN_A, 99), 0.2)
        self.assertEqual(dist.percentile(RUN_B, 99), 1.0)
        self.assertEqual(dist.percentile(dist.merge([RUN_A, RUN_B]), 99), oracle_percentile([RUN_A, RUN_B], 99))

    def test_requests_needed_for_a_tail(self):
        self.assertEqual(dist.requests_needed(99.99), 100_000)
        self.assertEqual(dist.requests_needed(99.9), 10_000)
        self.assertEqual(dist.requests_needed(99), 1_000)
        self.assertEqual(dist.requests_needed(50), 20)

    def test_bad_distributions_are_refused(self):
        with self.assertRaisesRegex(dist.DistributionError, "fall"):
            dist.Distribution.from_points([(0.1, 10), (0.2, 5)])
        with self.assertRaisesRegex(dist.DistributionError, "made 20"):
            dist.Distribution.from_points([(0.1, 10)], total=20)
        with self.assertRaisesRegex(dist.DistributionError, "not a stored"):
            dist.Distribution.from_json({"points": [[0.1, 1]]})
        with self.assertRaises(dist.DistributionError):
            dist.percentile(RUN_A, 100)

    def test_stored_form_round_trips(self):
        self.assertEqual(dist.Distribution.from_json(RUN_A.to_json()), RUN_A)

    def test_old_results_from_printed_percentiles(self):
        d = dist.Distribution.from_percentiles([(0.0, 0.1), (50.0, 0.2), (99.5, 0.4), (100.0, 0.9)], 2000)
        self.assertEqual(d.counts, (0, 1000, 1990, 2000))

    def test_bootstrap_interval_over_runs(self):
        runs = [dist.Distribution.from_points([(0.1 * k, 500), (0.2 * k, 1000)], total=1000) for k in (1, 2, 3, 4)]
        (p50,) = dist.tails(runs, (50,))
        self.assertEqual(p50.runs, 4)
        self.assertLessEqual(p50.ci_low, p50.value)
        self.assertGreaterEqual(p50.ci_high, p50.value)
        self.assertGreater(p50.ci_high, p50.ci_low)  # the runs differ: the interval has width
        self.assertEqual(dist.tails(runs, (50,)), [p50])  # seeded: the same runs, the same interval
        (two,) = dist.tails(runs[:2], (50,))
        self.assertTrue(math.isnan(two.ci_low))  # under 3 runs: no interval

    def test_run_distributions_of_stored_documents(self):
        new = {"status": "ok", "observations": {"latency_distributions": {"get": RUN_A.to_json()}}}
        self.assertEqual(dist.run_distributions(new), {"get": RUN_A})
        old = {"status": "ok", "cell": {"params": {"requests": "1000"}},
               "observations": {"latency_percentiles_ms": {"get": [[50.0, 0.1], [99.0, 0.2], [100.0, 2.0]]}}}
        self.assertEqual(dist.run_distributions(old)["get"].counts, (500, 990, 1000))
        self.assertEqual(dist.run_distributions({"status": "ok"}), {})


def distributions_strategy():
    def build(steps):
        points, bound, count = [], 0.0, 0
        for gap, added in steps:
            bound, count = round(bound + gap, 3), count + added
            points.append((bound, count))
        return dist.Distribution.from_points(points)
    step = st.tuples(st.floats(min_value=0.001, max_value=5.0), st.integers(min_value=0, max_value=400))
    return st.lists(step, min_size=1, max_size=12).map(build).filter(lambda d: d.total >= 1)


class PropertyTest(unittest.TestCase):
    @settings(max_examples=200, deadline=None)
    @given(st.lists(distributions_strategy(), min_size=1, max_size=4), st.sampled_from([50.0, 90.0, 99.0]))
    def test_merged_percentile_is_the_oracle_on_the_union_of_bounds(self, runs, percent):
        merged = dist.merge(runs)
        self.assertEqual(merged.total, sum(r.total for r in runs))
        got = dist.percentile(merged, percent)
        if got is None:
            self.assertLess(dist.requests_beyond(merged.total, percent), dist.MIN_TAIL_REQUESTS)
            return
        # Every request counted at its own run's printed bound: the merge is the sorted union of requests.
        self.assertEqual(got, oracle_percentile(runs, percent))
        self.assertGreaterEqual(got, min(dist.percentile(r, percent) or 0 for r in runs))

    @settings(max_examples=100, deadline=None)
    @given(distributions_strategy(), st.integers(min_value=1, max_value=5), st.sampled_from([50.0, 99.0]))
    def test_a_run_merged_with_copies_of_itself_keeps_its_percentiles(self, run, copies, percent):
        single, merged = dist.percentile(run, percent), dist.percentile(dist.merge([run] * copies), percent)
        if single is not None:
            self.assertEqual(merged, single)


class HostileDistributionTest(unittest.TestCase):
    """Issue 58, row 9: small stored files exhausted memory (3 runs x 10,000 points: MemoryError under 3 GB with
    2,000 resamples), counts near 2**63 wrapped negative, and bools, text and fractions passed as counts."""

    def test_many_points_cost_runs_times_points_of_memory(self):
        import random
        import tracemalloc
        rng = random.Random(58)
        runs = []
        for _ in range(3):
            bounds = sorted(rng.sample(range(1, 10**7), 10_000))
            counts = sorted(rng.randint(0, 10**7) for _ in range(9_999)) + [10**7]
            runs.append(dist.Distribution.from_points([(b / 1000, c) for b, c in zip(bounds, counts)]))
        tracemalloc.start()
        self.addCleanup(tracemalloc.stop)
        tails = dist.tails(runs)
        self.assertLess(tracemalloc.get_traced_memory()[1], 100 << 20)
        self.assertTrue(all(t.ci_low <= t.value <= t.ci_high for t in tails if t.value is not None))

    def test_counts_are_whole_bounded_numbers(self):
        for point in ([1.0, True], [1.0, "5"], [1.0, 2.5], [1.0, 2**63 - 1], ["1", 5], [True, 5], [1.0], "x"):
            with self.assertRaises(dist.DistributionError, msg=point):
                dist.Distribution.from_points([point])
        with self.assertRaises(dist.DistributionError):
            dist.Distribution.from_json({"requests": 1, "points": [[1.0, 1]] * 200_001})
        big = dist.Distribution.from_points([[1.0, dist.MAX_COUNT]])
        self.assertGreater(dist.merge([big] * 3).total, 0)


if __name__ == "__main__":
    unittest.main()
