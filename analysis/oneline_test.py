"""The one-line answers (analysis/oneline.py) against a golden file, one line per shape: different, within
the minimum effect, equivalent, undecided, not tested, at a ceiling (issue 40). Synthetic runs with chosen
values (mechanics, not measurements); the statistics are analysis/stats.py's own.

Regenerate after an intended change: bazel test //analysis:oneline_test --test_env=TUNELAB_UPDATE_GOLDEN=$PWD
--spawn_strategy=local."""

import unittest

from analysis import ceilings, compare, oneline, stats
from analysis.testing import golden

DECL = {"unit": "containers/s", "direction": "higher_is_better", "min_effect": 0.03}


def runs(level, spread, n):
    """n runs of 5 samples around `level`, each run's median spread evenly over ±spread (a fraction)."""
    out = []
    for i in range(n):
        centre = level * (1 + spread * (2 * i / max(n - 1, 1) - 1))
        out.append([centre * (1 + d) for d in (-0.001, 0.0, 0.0, 0.0, 0.001)])
    return out


def row(axis, baseline_value, value, base, cand, metric="container_allocation_rate"):
    comparison = stats.compare(base, cand)
    stats.adjust([comparison])
    return compare.Row(axis=axis, baseline_value=baseline_value, value=value, others="", baseline=stats.summarize(base),
                       summary=stats.summarize(cand), comparison=comparison, runs=min(len(base), len(cand)),
                       baseline_id=f"{axis}={baseline_value}", cell_id=f"{axis}={value}")


CAP = ceilings.Ceiling("container_allocation_rate", "heartbeat cap", 100.0, "containers/s")
METRIC = "container_allocation_rate"

CASES = [
    ("different", [row("gc", "g1", "parallel", runs(1000, 0.02, 6), runs(1228, 0.02, 6))], {}),
    ("within the minimum effect", [row("gc", "g1", "parallel", runs(1000, 0.002, 8), runs(1012, 0.002, 8))], {}),
    ("equivalent", [row("gc", "g1", "parallel", runs(1000, 0.004, 8), runs(1001, 0.004, 8)),
                    row("jdk", "17", "21", runs(1000, 0.004, 8), runs(999, 0.004, 8))], {}),
    ("undecided", [row("gc", "g1", "parallel", runs(1000, 0.12, 5), runs(1031, 0.12, 5))], {}),
    ("not tested", [row("host", "x86", "arm64", runs(100, 0, 1), runs(56.9, 0, 1))], {}),
    ("at ceiling", [row("host", "x86", "arm64", runs(100, 0, 1), runs(56.9, 0, 1))],
     {("host=x86", METRIC): CAP, ("host=arm64", METRIC): CAP}),
    ("both at ceiling", [row("jdk", "17", "21", runs(99.8, 0.001, 3), runs(100, 0.001, 3))],
     {("jdk=17", METRIC): CAP, ("jdk=21", METRIC): CAP}),
    ("several changed", [row("gc", "g1", "parallel", runs(1000, 0.02, 6), runs(1228, 0.02, 6)),
                         row("gc", "g1", "serial", runs(1000, 0.02, 6), runs(880, 0.02, 6)),
                         row("jdk", "17", "21", runs(1000, 0.02, 6), runs(1001, 0.02, 6))], {}),
    ("nothing", [], {}),
]
LEVELS = [("numa=bind_local", stats.summarize(runs(76365, 0.01, 3)))]


class OneLineTest(unittest.TestCase):
    def test_the_shapes(self):
        lines = [f"{name:26} {oneline.one_line(rows, METRIC, DECL, caps)}" for name, rows, caps in CASES]
        lines.append(f"{'one cell measured':26} {oneline.one_line([], 'get_rate', {'unit': 'requests/s'}, None, LEVELS)}")
        golden.check(self, "\n".join(lines) + "\n", "analysis/testdata/golden/oneline.txt")

    def test_every_line_fits_an_index_row(self):
        for name, rows, caps in CASES:
            with self.subTest(name):
                line = oneline.one_line(rows, METRIC, DECL, caps)
                self.assertLessEqual(len(line), oneline.MAX_CHARS, line)
                self.assertNotIn("\n", line)

    def test_a_capped_side_is_named(self):
        line = oneline.one_line(CASES[5][1], METRIC, DECL, CASES[5][2])
        self.assertIn("; x86 at its heartbeat cap: the gap is a lower bound", line)  # the figure did not fit
        self.assertNotIn("arm64 at", line)
        note = oneline.ceiling_note(CASES[5][1][0], METRIC, CASES[5][2])
        self.assertEqual(note, "; x86 at its heartbeat cap (100 containers/s): the gap is a lower bound")


class CeilingRulesTest(unittest.TestCase):
    def test_the_yarn_heartbeat_cap(self):
        rules = ceilings.for_workload("yarn_cps/v1")
        params = {"nodes": "100", "offswitch_per_heartbeat": "1", "nm_heartbeat_ms": "1000", "trace": ""}
        self.assertEqual(rules["container_allocation_rate"].value(params), 100.0)
        self.assertEqual(rules["container_allocation_rate"].value(dict(params, nm_heartbeat_ms="500",
                                                                        offswitch_per_heartbeat="2")), 400.0)
        self.assertIsNone(rules["container_allocation_rate"].value(dict(params, trace="/t.json")))  # a user's trace
        self.assertIsNone(rules["container_allocation_rate"].value(dict(params, nodes="0")))
        self.assertIsNone(rules["container_allocation_rate"].value(dict(params, nodes="x")))
        self.assertEqual(ceilings.for_workload("redis/v1"), {})  # no ceilings.toml
        self.assertEqual(ceilings.for_workload("../etc/x"), {})

    def test_a_result_is_marked_and_a_stored_mark_stands(self):
        rules = ceilings.for_workload("yarn_cps/v1")
        params = {"nodes": "100", "offswitch_per_heartbeat": "1", "nm_heartbeat_ms": "1000", "trace": ""}
        metrics = [{"name": "container_allocation_rate", "unit": "containers/s", "value": 99.0},
                   {"name": "container_release_rate", "unit": "containers/s", "value": 50.0},
                   {"name": "scheduler_cpu_per_container", "unit": "us/container", "value": 340.0}]
        ceilings.mark(metrics, rules, params)
        self.assertEqual(metrics[0]["ceiling"], {"name": "heartbeat cap", "value": 100.0, "at_ceiling": True})
        self.assertEqual(metrics[1]["ceiling"], {"name": "heartbeat cap", "value": 100.0, "at_ceiling": False})
        self.assertNotIn("ceiling", metrics[2])
        doc = {"cell": {"id": "c1", "params": params}, "provenance": {"workload": {"id": "yarn_cps/v1"}},
               "metrics": metrics}
        self.assertEqual(ceilings.of_docs([doc])[("c1", "container_allocation_rate")].value, 100.0)
        metrics[0]["ceiling"] = {"name": "older cap", "value": 80.0, "at_ceiling": True}  # as it was stored
        self.assertEqual(ceilings.of_docs([doc])[("c1", "container_allocation_rate")].figure(), "older cap, 80 containers/s")
        doc["provenance"] = {}  # a foreign document: no workload, only what it stored
        self.assertEqual(set(ceilings.of_docs([doc])), {("c1", "container_allocation_rate"), ("c1", "container_release_rate")})

    def test_reached_within_three_percent(self):
        self.assertTrue(CAP.reached_by(100.0))
        self.assertTrue(CAP.reached_by(97.0))
        self.assertFalse(CAP.reached_by(96.9))
        self.assertFalse(CAP.reached_by(float("nan")))

    def test_a_wrong_declaration_is_an_error_naming_it(self):
        import os
        import tempfile
        for text, pattern in (('[m]\nname = "cap"\nmultiply = "nodes"\n', "m.multiply must be a list"),
                              ('[m]\nmultiply = ["nodes"]\n', "m.name must say"),
                              ('[m]\nname = "cap"\nmultiply = ["n"]\ntimes = -1\n', "m.times must be a positive"),
                              ('[m]\nname = "cap"\nmultiply = ["n"]\nwhen = { trace = 1 }\n', "m.when"),
                              ('[m]\nname = "cap"\nmultiply = ["n"]\nfloor = 3\n', "unknown key.*floor"),
                              ("m = 3\n", "m must be a table"), ("[m\n", "ceilings.toml")):
            with self.subTest(text), tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "ceilings.toml")
                with open(path, "w") as f:
                    f.write(text)
                with self.assertRaisesRegex(ceilings.CeilingError, pattern):
                    ceilings.read(path)


if __name__ == "__main__":
    unittest.main()
