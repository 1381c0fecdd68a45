"""hostnoise on /proc files recorded on this machine (testdata/proc_noise, testdata/README.md) and on
chosen tick counts (arithmetic, not measurements)."""

import os
import unittest

from rigs.host import hostnoise

CAPTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata", "proc_noise")


class HostNoiseTest(unittest.TestCase):
    def test_recorded_proc_files(self):
        before = hostnoise.snapshot(os.path.join(CAPTURES, "before"))
        after = hostnoise.snapshot(os.path.join(CAPTURES, "after"))
        self.assertEqual((before.cpu_ticks, before.steal_ticks), (970797 + 294 + 467253 + 1052630 + 65289 + 15690 + 1517,
                                                                  1517))
        self.assertEqual(before.load1, float(open(os.path.join(CAPTURES, "before", "loadavg")).read().split()[0]))
        noise = hostnoise.window(before, after, clock_ticks=100)
        self.assertEqual(noise["steal_fraction"], 0.0)  # no steal in those 2 s
        self.assertEqual(noise["load_average"], [before.load1, after.load1])

    def test_steal_share_and_seconds(self):
        start = hostnoise.Snapshot(10.0, 1000, 50, 1.5, 2.0)
        end = hostnoise.Snapshot(14.0, 1800, 90, 2.5, 2.3)  # 4 s x 2 CPUs = 800 ticks at 100 Hz, 40 stolen
        noise = hostnoise.window(start, end, clock_ticks=100)
        self.assertEqual(noise, {"window_s": 4.0, "steal_fraction": 0.05, "steal_s": 0.4, "load_average": [1.5, 2.5],
                                 "harness_cpu_s": 0.3})

    def test_unreadable_proc_records_unknown_not_zero(self):
        missing = hostnoise.snapshot("/nonexistent-proc")
        noise = hostnoise.window(missing, missing)
        self.assertIsNone(noise["steal_fraction"])
        self.assertEqual(noise["load_average"], [None, None])


if __name__ == "__main__":
    unittest.main()
