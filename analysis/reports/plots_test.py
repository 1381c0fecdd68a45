"""Report figures that a reader could misread (issue 82): a log axis labels its ticks in plain numbers (math
text is off for labels, so matplotlib's own "$\\mathdefault{10^{1}}$" would print raw), and the Sensitivity
chart draws no date axis for fewer than three dates (bars per metric instead)."""

import os
import tempfile
import unittest

import matplotlib.pyplot as plt

from analysis.reports import plots


class PlotsTest(unittest.TestCase):
    def test_a_log_axis_says_its_ticks_in_plain_numbers(self):
        fig, ax = plt.subplots()
        ax.plot([1, 2, 3], [0.4, 12.0, 180.0])
        ax.set_yscale("log")
        plots._plain_log_ticks(ax.yaxis)
        fig.canvas.draw()
        labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
        plt.close(fig)
        self.assertTrue(labels)
        self.assertFalse([t for t in labels if "$" in t or "mathdefault" in t], labels)
        self.assertIn("10", labels)
        self.assertIn("0.5", labels)

    def test_bars_of_close_values_start_at_zero_and_only_a_wide_span_is_logged(self):
        self.assertEqual(plots.bar_axis([2.2, 2.2, 2.6]), ("linear", (0, 2.6 * 1.8)))
        scale, (low, high) = plots.bar_axis([12.4, 172.6])  # Redis' GET rate beside its p99 latency
        self.assertEqual(scale, "log")
        self.assertLess(low, 12.4)
        self.assertGreater(high, 172.6)
        self.assertEqual(plots.bar_axis([]), ("linear", None))

    def test_fewer_than_three_dates_draw_bars_not_a_date_axis(self):
        folder = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        drawn = []
        real = plots.sensitivity_bars
        plots.sensitivity_bars = lambda path, title, values: drawn.append(values) or real(path, title, values)
        try:
            two_dates = {"cpu_loop_rate": [("2026-11-24", 0.028), ("2029-01-01", 0.03)], "memory": [("2026-11-24", 0.5)]}
            path = plots.sensitivity_history(os.path.join(folder, "a.png"), "t", two_dates)
            self.assertEqual(drawn, [{"cpu_loop_rate": {"stated D (its set's night)": 0.03},
                                      "memory": {"stated D (its set's night)": 0.5}}])
            three = {"m": [("2026-11-24", 0.03), ("2026-11-25", 0.04), ("2026-11-26", 0.05)]}
            plots.sensitivity_history(os.path.join(folder, "b.png"), "t", three)
            self.assertEqual(len(drawn), 1)  # a history: no bars
        finally:
            plots.sensitivity_bars = real
        with open(path, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")


if __name__ == "__main__":
    unittest.main()
