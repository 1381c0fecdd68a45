"""Scaling fits: known answers on made-up runs, and the committed failover set (real runs)."""

import math
import os
import unittest

from analysis import compare, resultsets, scaling

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "results")


def cell(cid, params, run_values):
    return compare.CellData(cid, params, None, [], {}, {"t": [[v] for v in run_values]})


class FitTest(unittest.TestCase):
    def test_a_line_through_exact_points_has_a_point_interval(self):
        # t = 1 + 0.002 * apps exactly: slope 0.002 s per app, intercept 1, every run on the line.
        cells = [cell(f"c{n}", {"apps": str(n), "store": "a"}, [1 + 0.002 * n] * 3) for n in (1000, 5000, 10000)]
        (fit,) = scaling.fits(cells, "t", "apps")
        self.assertEqual(fit.group, "")
        self.assertAlmostEqual(fit.slope, 0.002, places=12)
        self.assertAlmostEqual(fit.intercept, 1.0, places=9)
        self.assertAlmostEqual(fit.slope_low, fit.slope_high, delta=1e-9)
        self.assertEqual([p[0] for p in fit.points], [1000.0, 5000.0, 10000.0])
        self.assertEqual(scaling.per(scaling.step([fit]), fit, "s"), "+2 s per 1,000 (95% CI +2..+2)")

    def test_known_answer_with_scatter(self):
        # Runs at x = 0, 1, 2 with values 0, 1, 2 and 1, 2, 3: slope 1, residual sd sqrt(2/4 * ...) by hand:
        # x = 0,0,1,1,2,2; y = 0,1,1,2,2,3: Sxx = 4, slope 1, residuals -0.5,0.5,-0.5,0.5,-0.5,0.5, s^2 = 1.5/4,
        # stderr = sqrt(0.375 / 4) = 0.306186; t(0.975, 4) = 2.776445: 1 +- 0.850109.
        cells = [cell(f"c{x}", {"n": str(x)}, [x, x + 1]) for x in (0, 1, 2)]
        (fit,) = scaling.fits(cells, "t", "n")
        self.assertAlmostEqual(fit.slope, 1.0, places=12)
        self.assertAlmostEqual(fit.slope_high - 1, 0.850109, places=5)
        self.assertEqual(fit.runs, 6)

    def test_one_line_per_group_and_refusals(self):
        cells = [cell(f"{s}{n}", {"apps": str(n), "store": s}, [n / 1000 * k] * 3)
                 for s, k in (("leveldb", 1.0), ("zookeeper", 2.0)) for n in (1000, 2000)]
        fits = scaling.fits(cells, "t", "apps")
        self.assertEqual([(f.group, round(f.slope, 6)) for f in fits],
                         [("store=leveldb", 0.001), ("store=zookeeper", 0.002)])
        self.assertEqual([scaling.label(f.group) for f in fits], ["leveldb", "zookeeper"])
        with self.assertRaisesRegex(scaling.ScalingError, "apps takes 1 value"):
            scaling.fits(cells[:1], "t", "apps")
        with self.assertRaisesRegex(scaling.ScalingError, "store is not a size"):
            scaling.fits(cells, "t", "store")

    def test_numbered_groups_keep_their_number_order_and_their_axis_name(self):
        # Heartbeat intervals 250, 1000, 3000 ms: in that order (not "1000" < "250"), named with their axis.
        cells = [cell(f"h{h}n{n}", {"nodes": str(n), "nm_heartbeat_ms": str(h)}, [n / h] * 3)
                 for h in (3000, 1000, 250) for n in (5000, 20000)]
        fits = scaling.fits(cells, "t", "nodes")
        self.assertEqual([scaling.label(f.group) for f in fits],
                         ["nm_heartbeat_ms=250", "nm_heartbeat_ms=1000", "nm_heartbeat_ms=3000"])
        self.assertEqual([round(f.slope, 6) for f in fits], [0.004, 0.001, round(1 / 3000, 6)])

    def test_the_committed_failover_set(self):
        # Real runs (2026-11-27, 5 a cell): recovery time grows with the applications for every state store.
        rs = resultsets.resolve("baselines/yarn_failover-full-20261127-2vcpu", ROOT)
        fits = scaling.fits(compare.collect(rs.docs), "recovery_time", "apps")
        self.assertEqual([f.group for f in fits], ["state_store=filesystem", "state_store=leveldb",
                                                   "state_store=zookeeper"])
        for f in fits:
            self.assertTrue(f.fitted and f.slope_low > 0, f)
            self.assertEqual(f.runs, 15)
            self.assertTrue(math.isfinite(f.intercept))


if __name__ == "__main__":
    unittest.main()
