"""The committed dashboard (tools/grafana/tunelab-live.json) against what generates it and what the endpoint
serves: the file is the generator's output for today's registry, every rig has its row, and every metric a
query names is one a watched run's endpoint serves (rigs/matrix/livemetrics.py, each rig's live_metrics)."""

import json
import os
import re
import tempfile
import unittest

from rigs import registry
from rigs.matrix import livemetrics
from tools.grafana import dashboard

HERE = os.path.dirname(os.path.abspath(__file__))
METRIC = re.compile(r"\btunelab_[a-z0-9_]+\b")


def fake_proc():
    proc = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
    for name, text in (("stat", "cpu  1 2 3 4 5 6 7 8 0 0\n"), ("loadavg", "0.5 0.4 0.3 1/2 3\n"),
                       ("meminfo", "MemAvailable: 1000 kB\n")):
        with open(os.path.join(proc, name), "w") as f:
            f.write(text)
    return proc


def served_names(rig, metrics):
    """Every sample name the endpoint serves during a cell of `rig` whose live() gave every declared value."""
    live = livemetrics.LiveMetrics("r", rig, "m", "p", ["jdk"], proc=fake_proc(), rig_metrics=metrics)
    live.set_planned(2, 10.0)
    live.cell_started("c0", 0, {"jdk": "17"})
    live.cell_done("ok")
    live.cell_started("c1", 0, {"jdk": "17"})
    live.process_cpu_seconds("main", 1.0)
    live.rig_values.update({("main", name): 1.0 for name in metrics})
    return {s.name for family in live.registry.collect() for s in family.samples}


class Dashboard(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.by_rig = dashboard.live_metrics_by_rig()
        with open(os.path.join(HERE, "tunelab-live.json")) as f:
            cls.text = f.read()
        cls.doc = json.loads(cls.text)

    def test_the_committed_file_is_the_generated_one(self):
        self.assertEqual(self.text, dashboard.render(dashboard.dashboard(self.by_rig)),
                         "regenerate: ./bazelw run //tools/grafana:dashboard -- --write")

    def test_every_registered_rig_has_its_row_and_a_panel_per_live_value(self):
        self.assertEqual(set(self.by_rig), set(registry.load()))
        rows = [p["title"] for p in self.doc["panels"] if p["type"] == "row"]
        self.assertEqual(rows, ["Run", "Host"] + [f"Rig: {r}" for r in self.by_rig])
        for rig, metrics in self.by_rig.items():
            for name, declared in metrics.items():
                served = dashboard.served_name(rig, name, declared)
                self.assertIn(served, self.text, (rig, name))
        self.assertTrue(self.by_rig["yarn_cps"], "the headline rig serves its live values")

    def test_every_query_names_a_metric_the_endpoint_serves(self):
        served = set()
        for rig, metrics in self.by_rig.items():
            served |= served_names(rig, metrics)
        queried = {m for p in self.doc["panels"] for t in p.get("targets", []) for m in METRIC.findall(t["expr"])}
        self.assertTrue(queried)
        self.assertEqual(queried - served, set())
        # The host's and the run's own series are all drawn.
        self.assertTrue({n for n in served if n.startswith(("tunelab_host_", "tunelab_run_eta"))} <= queried)


if __name__ == "__main__":
    unittest.main()
