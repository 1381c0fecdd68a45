"""The end-of-run summary: the rig-check line, one table under 100 columns that pairs only declared axes,
and no test (no p-value, no interval) with fewer than 3 runs a side. Golden file (regenerate after an
intended change, and say why in the commit:
bazel test //analysis:summary_test --test_env=TUNELAB_UPDATE_GOLDEN=$PWD --spawn_strategy=local).

The documents are synthetic (chosen values in the shape the YARN smoke stores), so the expected numbers
can be worked out by hand: G1 run medians 8,000 / 8,100 / 8,200, Parallel 8,800 / 8,900 / 9,000.
"""

import io
import unittest

from rich.console import Console

from analysis import compare, resultsets, summary
from analysis.testing import golden

METRICS = {"container_allocation_rate": {"unit": "containers/s", "direction": "higher_is_better",
                                         "label": "CPS (containers allocated per second)"}}
CHECK = {"nodes": "500", "gc": "g1"}
CPU_BOUND = {"nodes": "1000"}


def doc(params, rep, values, status="ok", reason=None):
    cell_id = "-".join(f"{v}" for v in params.values())
    d = {"cell": {"id": cell_id, "params": params, "repetition": rep}, "status": status,
         "samples": [{"metric": "container_allocation_rate", "value": v, "unit": "containers/s", "t": float(i)}
                     for i, v in enumerate(values)], "started_at": "2026-11-23T10:00:00+00:00"}
    if reason:
        d["reason"] = reason
    return d


def smoke_set(repetitions=3):
    docs = []
    for rep in range(repetitions):
        docs.append(doc(CHECK, rep, [500.0, 500.0, 499.0, 501.0]))
        docs.append(doc(dict(CPU_BOUND, gc="g1"), rep, [8000.0 + 100 * rep + d for d in (-50, 0, 50)]))
        docs.append(doc(dict(CPU_BOUND, gc="parallel"), rep, [8800.0 + 100 * rep + d for d in (-50, 0, 50)]))
    manifest = {
        "matrix": {"question": "Does Parallel GC schedule more containers/s than G1 (CPU-bound, 1000 nodes)?",
                   "axes": {"gc": ["g1", "parallel"], "nodes": ["1000"]}, "comparison_groups": [["gc"]],
                   "known_answers": [{"cell_id": "500-g1", "metric": "container_allocation_rate", "expect": 500,
                                      "tolerance": 0.01, "label": "500 nodes x 1 heartbeat/s"}]},
        "cells": [{"id": "500-g1"}, {"id": "1000-g1"}, {"id": "1000-parallel"}],
        "host_reference": {"probe": "calibration", "measurements": [
            {"when": "before", "metric": "cpu_loop_rate", "unit": "ops/s", "median": 1.0e9, "samples": [1.0e9]},
            {"when": "after", "metric": "cpu_loop_rate", "unit": "ops/s", "median": 0.99e9, "samples": [0.99e9]}]},
    }
    return resultsets.ResultSet("smoke", "", manifest, docs)


def render(result_set):
    out = io.StringIO()
    summary.render(Console(file=out, width=summary.WIDTH, color_system=None, force_terminal=False), result_set,
                   METRICS)
    return out.getvalue()


class SummaryTest(unittest.TestCase):
    def test_golden_output_fits_100_columns(self):
        text = render(smoke_set())
        golden.check(self, text, "analysis/testdata/golden_summary.txt")
        self.assertTrue(all(len(line) <= 100 for line in text.splitlines()), text)
        # The check cell is a self-check line, not an axis; the question's answer is the table's only row.
        self.assertIn("rig check: 500 nodes x 1 heartbeat/s -> 500 ✔ (measured 500.0, 3 runs)", text)
        self.assertIn("gc: parallel vs g1", text)
        self.assertNotIn("nodes: ", text)
        self.assertRegex(text, r"gc: parallel vs g1 .* better")

    def test_a_wrong_known_answer_is_flagged(self):
        s = smoke_set()
        for d in s.docs:
            if d["cell"]["id"] == "500-g1":
                d["samples"] = [dict(x, value=450.0) for x in d["samples"]]
        self.assertIn("-> 500 ✘ (measured 450.0, 3 runs; outside ±1%)", render(s))

    def test_no_test_and_no_interval_with_fewer_than_three_runs(self):
        text = render(smoke_set(repetitions=1))
        self.assertIn("1 run a side: no test", text)
        row = next(line for line in text.splitlines() if "gc: parallel vs g1" in line)
        # baseline, candidate, change and then "-" where the CI would be: nothing derived from per-second samples.
        self.assertRegex(row, r"8,000 +8,800 +\+10\.0% +- +1/1 +1 run a side: no test")
        # No p-value anywhere (the footnote's rule "p < 0.05" aside).
        self.assertNotRegex(text.replace("p < 0.05", ""), r"\bp\s*[=<(]|p-value|\d\.\d{3}\b")

    def test_a_sequential_run_says_when_each_comparison_stopped(self):
        s = smoke_set()
        s.manifest["sequential"] = {"min": 3, "max": 5, "family": 1, "rounds": 3, "comparisons": [
            {"axis": "gc", "baseline_value": "g1", "value": "parallel", "baseline": "1000-g1",
             "candidate": "1000-parallel", "metric": "container_allocation_rate", "min_effect": 0.05,
             "look": {"state": "different", "pairs": 3, "rounds": 3, "ratio": 1.1, "ci_low": 1.07, "ci_high": 1.13,
                      "level": 0.025, "final": True}, "reason": "decided at round 3: different"}]}
        text = render(s)
        self.assertIn("When each comparison stopped (3..5 rounds; container_allocation_rate)", text)
        self.assertRegex(text, r"gc: parallel vs g1 +\+10\.0% +\+7\.0%\.\.\+13\.0% +3 +decided at round 3: different")
        self.assertTrue(all(len(line) <= 100 for line in text.splitlines()), text)
        self.assertNotIn("When each comparison stopped", render(smoke_set()))

    def test_companions_not_steady_in_ok_launches_are_said(self):
        check = lambda steady: {"iterations": 16, "steady": steady}  # noqa: E731
        docs = [{"status": "ok", "steady_state": {"band": 0.05, "metrics": {"create_rate": check(True),
                                                                            "create_cpu_per_op": check(k % 3 != 0)}}}
                for k in range(12)]
        docs.append({"status": "invalid", "steady_state": {"metrics": {"create_rate": check(False)}}})
        self.assertEqual(summary.unsteady_line(docs), "not steady, recorded but not judged (not a metric the stop rule "
                                                      "decides on): create_cpu_per_op in 4 of 12 launches")
        self.assertEqual(summary.unsteady_line(docs[1:2] + [{"status": "ok"}]), "")

    def test_host_noise_names_the_rounds_outside_the_band(self):
        docs = smoke_set().docs
        self.assertEqual(summary.host_noise_line(docs, "yarn_cps"), "")  # nothing recorded: nothing said
        for d in docs:
            steal = 0.09 if d["cell"]["repetition"] == 2 else 0.002
            d["provenance"] = {"noise": {"steal_fraction": steal, "load_average": [1.0, 1.5], "window_s": 15.0,
                                         "steal_s": 0.0, "harness_cpu_s": 0.1}}
        line = summary.host_noise_line(docs, "no-such-rig")
        self.assertIn("steal 0.2%..9.0% of CPU time, load 1.00..1.50", line)
        self.assertIn("FLAGGED: round(s) 2 (9.0%) stole more than 5.0% (no A/A set recorded steal: the default)",
                      line)

    def test_a_busy_host_stands_on_every_verdict_and_the_last_line(self):
        # Issue 57: the headline on a host with another process at 100 % CPU ended "better" with no word of the
        # load beside it (the preflight's warning scrolled off at the top). Synthetic figures of that shape.
        s = smoke_set()
        self.assertEqual(summary.host_context(s), "")  # a calm run says nothing
        self.assertNotIn("busy host", render(s))
        s.manifest["preflight"] = {"warnings": ["load average 2.8 is over half of 2 CPUs",
                                                "busy processes: yes[4242] 100%"]}
        s.manifest["host_reference"]["measurements"] += [
            {"when": "before", "metric": "memory_copy_rate", "unit": "MiB/s", "median": 1.0e4, "samples": [1.0e4]},
            {"when": "after", "metric": "memory_copy_rate", "unit": "MiB/s", "median": 0.732e4, "samples": [0.732e4]}]
        for d in s.docs:
            d["provenance"] = {"host": {"cpu": {"logical_cpus": 2}},
                               "noise": {"steal_fraction": 0.0, "load_average": [2.8, 5.7], "window_s": 15.0}}
        context = summary.host_context(s)
        for part in ("load average 2.8 is over half of 2 CPUs", "busy processes: yes[4242] 100%",
                     "window load up to 5.7 on 2 CPUs", "host reference memory_copy_rate -26.8% within the run"):
            self.assertIn(part, context)
        self.assertNotIn("cpu_loop_rate", context)  # -1 %: within the reference's own noise
        text = render(s)
        self.assertRegex(text, r"gc: parallel vs g1 .* better \(busy host\)")
        tail = " ".join(text.strip().splitlines()[-3:])  # the last line, wrapped at 100 columns
        self.assertIn("verdicts above on a busy host: load average 2.8 is over half of 2 CPUs", tail)
        self.assertTrue(tail.endswith("memory_copy_rate -26.8% within the run"), tail)
        self.assertTrue(all(len(line) <= 100 for line in text.splitlines()), text)

    def test_precision_says_which_intervals_are_too_wide(self):
        self.assertEqual(summary.precision_line(2, []),
                         "Precision: 2 of 2 comparison(s) have an interval within ± the minimum effect.")
        line = summary.precision_line(0, ["parallel vs g1 (-16.9..+75.0%, ±5%)"])
        self.assertIn("0 of 1", line)
        self.assertIn("Too wide to answer: parallel vs g1 (-16.9..+75.0%, ±5%)", line)

    def test_a_companion_that_moves_where_its_rate_does_not_is_named(self):
        # Five runs a side: the rate scatters (no significant change), heap per create is 4 % higher in
        # every run of the candidate; CPU per create does not move.
        metrics = {"create_rate": {"unit": "ops/s", "direction": "higher_is_better"},
                   "create_alloc_per_op": {"unit": "B/op", "direction": "lower_is_better"},
                   "create_cpu_per_op": {"unit": "us/op", "direction": "lower_is_better"}}
        rates = {"stock": [40.0, 44.0, 38.0, 42.0, 41.0], "patched": [43.0, 37.0, 41.0, 44.0, 39.0]}
        docs = []
        for rep in range(5):
            for variant, alloc in (("stock", 13900.0), ("patched", 13900.0 * 1.04)):
                values = {"create_rate": rates[variant][rep], "create_alloc_per_op": alloc + rep,
                          "create_cpu_per_op": 27.5 + 0.1 * rep}
                docs.append({"cell": {"id": variant, "params": {"variant": variant}, "repetition": rep},
                             "status": "ok", "samples": [{"metric": m, "value": v, "unit": metrics[m]["unit"],
                                                          "t": 0.0} for m, v in values.items()]})
        cells = compare.collect(docs, ["stock", "patched"])
        companion_of = {"create_alloc_per_op": "create_rate", "create_cpu_per_op": "create_rate"}
        lines = summary.companion_lines(cells, metrics, [["variant"]], {"variant": ["stock", "patched"]},
                                        {"create_alloc_per_op": 0.016}, companion_of)
        self.assertEqual(len(lines), 1, lines)
        self.assertTrue(lines[0].startswith("variant: patched vs stock: create_alloc_per_op moved, +4.0% ("), lines)
        self.assertIn("worse), while create_rate did not (", lines[0])
        # A companion change smaller than its minimum effect is not named.
        self.assertEqual(summary.companion_lines(cells, metrics, [["variant"]], {"variant": ["stock", "patched"]},
                                                 {"create_alloc_per_op": 0.05}, companion_of), [])


if __name__ == "__main__":
    unittest.main()
