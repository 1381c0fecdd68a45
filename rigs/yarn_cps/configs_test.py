"""Configuration rendering: the keys the measurement depends on, exact names, and refusals."""

import os
import tomllib
import unittest
import xml.etree.ElementTree as ET
from decimal import Decimal

from rigs.yarn_cps import configs, rig

WORKLOAD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "workloads", "yarn_cps",
                        "workload.toml")


def defaults(**kw):
    with open(WORKLOAD, "rb") as f:
        params = {k: str(v) for k, v in tomllib.load(f)["parameters"].items()}
    params.update(kw)
    return params


def props(xml_bytes):
    root = ET.fromstring(xml_bytes)
    return {p.find("name").text: p.find("value").text for p in root.iter("property")}


class RenderTest(unittest.TestCase):
    def test_capacity_scheduler_cell(self):
        files = configs.render(defaults(queues="3", offswitch_per_heartbeat="2"), "/w/conf")
        self.assertEqual(sorted(files), ["capacity-scheduler.xml", "log4j.properties", "sls-runner.xml", "yarn-site.xml"])
        site = props(files["yarn-site.xml"])
        self.assertEqual(site["yarn.resourcemanager.scheduler.class"], configs.CAPACITY)
        cs = props(files["capacity-scheduler.xml"])
        # The real key (the hyphenated "off-switch" spelling is silently ignored by the scheduler).
        self.assertEqual(cs["yarn.scheduler.capacity.per-node-heartbeat.maximum-offswitch-assignments"], "2")
        self.assertEqual(cs["yarn.scheduler.capacity.root.queues"], "q0,q1,q2")
        total = sum(Decimal(cs[f"yarn.scheduler.capacity.root.q{i}.capacity"]) for i in range(3))
        self.assertEqual(total, Decimal(100))
        sls = props(files["sls-runner.xml"])
        self.assertEqual(sls["yarn.sls.nm.heartbeat.interval.ms"], "1000")
        self.assertEqual(sls["yarn.sls.nm.memory.mb"], "245760")
        self.assertEqual(sls["yarn.sls.metrics.switch"], "false")  # a boolean: "OFF" would turn them on
        self.assertEqual(sls["yarn.sls.dns.caching.enabled"], "true")
        self.assertEqual(sls[configs.CAPACITY], "org.apache.hadoop.yarn.sls.scheduler.CapacitySchedulerMetrics")

    def test_fair_scheduler_cell(self):
        files = configs.render(defaults(scheduler="fair", queues="2", sls_metrics="on"), "/w/conf")
        self.assertNotIn("capacity-scheduler.xml", files)
        site = props(files["yarn-site.xml"])
        self.assertEqual(site["yarn.scheduler.fair.allocation.file"], "/w/conf/fair-scheduler.xml")
        queues = [q.get("name") for q in ET.fromstring(files["fair-scheduler.xml"]).iter("queue")]
        self.assertEqual(queues, ["q0", "q1"])
        self.assertEqual(props(files["sls-runner.xml"])["yarn.sls.metrics.switch"], "true")

    def test_rendering_is_deterministic(self):
        self.assertEqual(configs.render(defaults(), "/c"), configs.render(defaults(), "/c"))

    def test_refusals(self):
        for change, message in (({"scheduler": "fifo"}, "`scheduler` must be one of capacity, fair"),
                                ({"scheduler": "fair", "offswitch_per_heartbeat": "4"}, "CapacityScheduler setting"),
                                ({"nm_heartbeat_ms": "fast"}, "`nm_heartbeat_ms` must be an integer"),
                                ({"sls_metrics": "OFF"}, "`sls_metrics` must be on or off")):
            with self.subTest(change=change), self.assertRaisesRegex(configs.ConfigError, message):
                configs.render(defaults(**change), "/c")


class CheckTest(unittest.TestCase):
    def test_impossible_cells_are_refused_before_running(self):
        r = rig.RIG
        r.check(defaults())
        r.check(defaults(hadoop="3.3.5"))
        r.check(defaults(simulator="lean"))
        for change, message in (({"trace_format": "sls"}, "Hadoop 3.4.2 cannot read sls traces"),
                                ({"hadoop": "3.3.5", "trace_format": "rumen"}, "rumen traces are not generated"),
                                ({"hadoop": "2.7.3"}, "hadoop='2.7.3': one of"),
                                ({"trace": "/nonexistent/trace.json", "hadoop": "3.3.5"}, "does not exist"),
                                ({"nodes": "0"}, "`nodes` must be at least 1"),
                                ({"simulator": "fast"}, "simulator='fast': one of stock, lean"),
                                ({"simulator": "lean", "hadoop": "3.3.5"}, "lean drives the SLS runners of Hadoop 3.4.2 and 3.4.3"),
                                ({"simulator": "lean", "sls_metrics": "on"}, "simulator=lean runs with sls_metrics=off"),
                                ({"simulator": "lean", "heartbeat_threads": "0"}, "heartbeat_threads=0: at least 1"),
                                ({"nm_heartbeat_ms": "fast"}, "nm_heartbeat_ms='fast' is not a whole number")):
            with self.subTest(change=change), self.assertRaisesRegex(ValueError, message):
                r.typed(defaults(**change))  # as the core checks a cell: the declared parameters first
                r.check(defaults(**change))

    def test_estimate_follows_the_heartbeat_cap(self):
        class Policy:
            warmup_s, measure_s = 8, 15
        # 500 nodes x 1/s: 15,010 containers take ~30 s after ~6 s of start-up, plus the last containers.
        est = rig.RIG.estimate_seconds(defaults(), Policy)
        self.assertAlmostEqual(est, 5 + 500 / 600 + 15010 / 500 + 5 + 3, places=6)


if __name__ == "__main__":
    unittest.main()
