"""Axis comparisons: partner finding, the basis of the values, Holm across the family, and the printed
tables against a golden file (regenerate after an intended change, and say why in the commit:
bazel test //analysis:compare_test --test_env=TUNELAB_UPDATE_GOLDEN=$PWD --spawn_strategy=local)."""

import io
import unittest

from rich.console import Console

from analysis import compare, golden

METRICS = {"rate": {"unit": "ops/s", "direction": "higher_is_better"}}


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
        # Medians of the 15 raw samples: 100.2 and 110.2.
        self.assertAlmostEqual(by[("gc", "jdk=11")].comparison.ratio, 110.2 / 100.2)
        self.assertLess(by[("gc", "jdk=11")].comparison.p_adjusted, 0.001)
        # Holm over the family of 4: every adjusted p is at least the raw one.
        self.assertTrue(all(r.comparison.p_adjusted >= r.comparison.p_value for r in rows))

    def test_printed_tables_match_the_golden_file(self):
        out = io.StringIO()
        console = Console(file=out, width=160, color_system=None, force_terminal=False)
        self.assertTrue(compare.print_comparisons(console, docs(), METRICS))
        text = out.getvalue()
        golden.check(self, text, "analysis/testdata/golden_axis_tables.txt")
        self.assertIn("CMS does not exist on JDK 17", text)


if __name__ == "__main__":
    unittest.main()
