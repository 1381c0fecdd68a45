"""Axis comparisons: partner finding, declared axes only, runs as the unit, paired rounds inside one run, a
family's interval split by Bonferroni.
(The printed summary has its golden file in summary_test.)"""

import math
import unittest

from analysis import compare



def doc(cell_id, params, rep, values, status="ok", reason=None):
    d = {"cell": {"id": cell_id, "params": params, "repetition": rep}, "status": status,
         "samples": [{"metric": "rate", "value": v, "unit": "ops/s", "t": float(i)} for i, v in enumerate(values)]}
    if reason:
        d["reason"] = reason
    return d


def docs():
    out = []
    # gc x jdk, 3 repetitions each: g1 is the baseline of gc, 11 of jdk.
    shapes = {("g1", "11"): 100.0, ("parallel", "11"): 110.0, ("g1", "17"): 101.0, ("parallel", "17"): 100.5}
    for n, ((gc, jdk), level) in enumerate(shapes.items()):
        for rep in range(3):
            jitter = (-0.5, 0.0, 0.5)[rep]
            out.append(doc(f"c{n}", {"gc": gc, "jdk": jdk}, rep, [level + jitter + k * 0.1 for k in range(5)]))
    out.append(doc("c4", {"gc": "cms", "jdk": "17"}, 0, [], status="skipped",
                   reason="CMS does not exist on JDK 17"))
    return out


class AttributionTest(unittest.TestCase):
    """A 2-patch series measured as stock, @1 and the whole series: each patch against its prefix."""

    def cells(self):
        out = []
        levels = {"stock": 100.0, "patched:fix@1": 110.0, "patched:fix": 110.0 * 1.2}
        for n, (variant, level) in enumerate(levels.items()):
            for rep in range(5):
                out.append(doc(f"v{n}", {"variant": variant, "gc": "g1"}, rep,
                               [level * (1 + (rep - 2) * 0.002)] * 3))
        return compare.collect(out)

    def test_each_patch_is_compared_with_the_build_without_it(self):
        applied = {"patched:fix@1": ["0001-a.patch"], "patched:fix": ["0001-a.patch", "0002-b.patch"]}
        rows = compare.patch_attribution(self.cells(), "rate", applied)
        self.assertEqual([(r.step, r.patch, r.before, r.after) for r in rows],
                         [(1, "0001-a.patch", "stock", "patched:fix@1"),
                          (2, "0002-b.patch", "patched:fix@1", "patched:fix")])
        self.assertAlmostEqual(rows[0].comparison.ratio, 1.10)
        self.assertAlmostEqual(rows[1].comparison.ratio, 1.20)
        self.assertTrue(all(r.comparison.verdict("higher_is_better") == "better" for r in rows))

    def test_without_the_prefix_there_is_nothing_to_attribute_to_patch_two(self):
        cells = [c for c in self.cells() if c.params["variant"] != "patched:fix@1"]
        rows = compare.patch_attribution(cells, "rate", {"patched:fix": ["0001-a.patch", "0002-b.patch"]})
        self.assertEqual(rows, [])


class CompareTest(unittest.TestCase):
    def test_values_are_raw_samples_grouped_by_repetition(self):
        cells = compare.collect([doc("a", {"x": "1"}, 1, [4.0]), doc("a", {"x": "1"}, 0, [1.0, 2.0, 3.0]),
                                 doc("a", {"x": "1"}, 2, [], status="failed", reason="exit status 1")])
        self.assertEqual(cells[0].values["rate"], [1.0, 2.0, 3.0, 4.0])
        self.assertEqual(cells[0].groups["rate"], [[1.0, 2.0, 3.0], [4.0]])
        self.assertEqual(cells[0].reasons, ["exit status 1"])

    def test_partners_differ_in_the_compared_axis_only(self):
        rows = compare.axis_rows(compare.collect(docs()), "rate")
        pairs = sorted((r.axis, r.value, r.others) for r in rows)
        # The skipped CMS cell has no values, so it is never a side of a comparison.
        self.assertEqual(pairs, [("gc", "parallel", "jdk=11"), ("gc", "parallel", "jdk=17"),
                                 ("jdk", "17", "gc=g1"), ("jdk", "17", "gc=parallel")])
        by = {(r.axis, r.others): r for r in rows}
        # Run medians 99.7, 100.2, 100.7 and 109.7, 110.2, 110.7: cell values 100.2 and 110.2; the change is
        # their geometric mean ratio (the centre of its interval), measured apart (no run id: not one run).
        c = by[("gc", "jdk=11")].comparison
        self.assertEqual((c.baseline_median, c.candidate_median), (100.2, 110.2))
        self.assertAlmostEqual(c.ratio, math.exp(sum(map(math.log, (109.7, 110.2, 110.7))) / 3
                                                 - sum(map(math.log, (99.7, 100.2, 100.7))) / 3), places=12)
        self.assertFalse(c.paired)
        self.assertEqual((c.n_baseline, c.n_candidate), (3, 3))
        self.assertLess(c.p_adjusted, 0.001)
        # One family of 4: every interval at 1 - 2 % / 4, every adjusted p at least the raw one.
        self.assertTrue(all(r.comparison.family == 4 and r.comparison.level == 1 - 0.02 / 4 for r in rows))
        self.assertTrue(all(r.comparison.p_adjusted >= r.comparison.p_value for r in rows))

    def test_cells_of_one_run_pair_by_round(self):
        # One run: round r measured both cells' repetition r. The host drifts 100 -> 130 -> 115 between rounds;
        # the candidate is 10 % faster in each round. Paired, that is a point; from two runs, no pairing.
        def run_docs(run_ids):
            out = []
            for rep, level in enumerate((100.0, 130.0, 115.0)):
                for cid, gc, factor in (("b", "g1", 1.0), ("c", "parallel", 1.1)):
                    d = doc(cid, {"gc": gc}, rep, [level * factor] * 3)
                    d["run_id"] = run_ids[cid]
                    out.append(d)
            return out
        (row,) = compare.axis_rows(compare.collect(run_docs({"b": "R1", "c": "R1"})), "rate")
        self.assertTrue(row.comparison.paired)
        self.assertAlmostEqual(row.comparison.ratio_ci_low, 1.1, places=12)
        self.assertEqual(row.comparison.verdict("higher_is_better", min_effect=0.05), "better")
        (row,) = compare.axis_rows(compare.collect(run_docs({"b": "R1", "c": "R2"})), "rate")
        self.assertFalse(row.comparison.paired)
        self.assertEqual(row.comparison.verdict("higher_is_better", min_effect=0.05), "undecided")

    def test_only_declared_axes_are_compared(self):
        # An extra cell that differs in two parameters (an include) is never paired, and an axis the run did
        # not declare is not compared even when its values differ.
        extra = [doc("c5", {"gc": "g1", "jdk": "11", "nodes": "1000"}, r, [500.0, 501.0]) for r in range(3)]
        cells = compare.collect([dict(d, cell=dict(d["cell"], params=dict(d["cell"]["params"], nodes="500")))
                                 for d in docs()] + extra)
        rows = compare.axis_rows(cells, "rate", declared=[["gc"]])
        self.assertEqual(sorted((r.axis, r.value, r.others) for r in rows),
                         [("gc", "parallel", "jdk=11 nodes=500"), ("gc", "parallel", "jdk=17 nodes=500")])
        zipped = compare.axis_rows(cells, "rate", declared=[["gc", "jdk"]])
        self.assertEqual(sorted((r.axis, r.value) for r in zipped), [("gc+jdk", "g1/17"), ("gc+jdk", "parallel/11"),
                                                                     ("gc+jdk", "parallel/17")])


class FormatTest(unittest.TestCase):
    def test_bytes_read_in_b_kb_mb_gb(self):
        # Issue 82: the pressure set's disk reads printed as 266,600,000.
        self.assertEqual(compare.fmt_value(266_600_000, "B"), "266.6 MB")
        self.assertEqual(compare.fmt_value(1_500, "bytes"), "1.5 KB")
        self.assertEqual(compare.fmt_value(999, "B"), "999 B")
        self.assertEqual(compare.fmt_value(-2.5e9, "B"), "-2.5 GB")
        self.assertEqual(compare.fmt_value(266_600_000, "records"), "266,600,000")
        self.assertEqual(compare.fmt_value(4.393), "4.39")


if __name__ == "__main__":
    unittest.main()
