"""Cluster mode's parse and the shuffle's known answer, on counts recorded from real cluster runs
(testdata/README.md): with the old shuffle and no early disconnect, DONTNEED = maps on the node x reducers;
each early disconnect adds advice; stock 3.4.2 advises nothing (Netty 4 releases the region first)."""

import json
import os
import tempfile
import unittest

from rigs.mapreduce import cluster
from rigs.matrix.contract import iterations
from rigs.matrix.contract.rig import MeasurementInvalid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata")


def recorded(name):
    with open(os.path.join(DATA, name)) as f:
        return f.read()


def jobs(text):
    return [cluster.job_line(it) for it in iterations.split(text)]


class KnownAnswerTest(unittest.TestCase):
    def test_old_shuffle_without_disconnects_advises_once_per_whole_fetch(self):
        for name in ("mr2_cluster_tiny_old_shuffle.jsonl",):
            for job in jobs(recorded(name)):
                self.assertEqual(job["merge_waits"], 0)
                advised = {node: a["dontneed"] for node, a in job["advice"].items()}
                self.assertEqual(advised, cluster.fetches_by_node(job), name)
                self.assertEqual(sum(advised.values()), job["maps"] * job["reduces"])

    def test_mr1_advises_once_per_whole_fetch(self):
        # MR1's map output servlet advises once it has written a part whole (TaskTracker.MapOutputServlet).
        for job in jobs(recorded("mr1_cluster_tiny.jsonl")):
            advised = {node: a["dontneed"] for node, a in job["advice"].items()}
            self.assertEqual(advised, cluster.fetches_by_node(job))
            self.assertEqual(job["merge_waits"], -1)  # MR1 logs no wait: not known, never 0
        warmup, measured, _ = cluster.parse(recorded("mr1_cluster_tiny.jsonl"))
        self.assertNotIn("merge_waits", {s["metric"] for s in measured})
        self.assertEqual({s["metric"]: s["value"] for s in measured}["dontneed_calls"], 4)

    def test_early_disconnects_add_advice_on_the_old_shuffle(self):
        job = jobs(recorded("mr2_cluster_1m_old_shuffle_waits.jsonl"))[0]
        self.assertGreater(job["merge_waits"], 0)
        whole = cluster.fetches_by_node(job)
        extra = {node: a["dontneed"] - whole[node] for node, a in job["advice"].items()}
        self.assertTrue(all(n >= 0 for n in extra.values()), extra)
        self.assertGreater(sum(extra.values()), 0)

    def test_stock_3_4_2_advises_nothing(self):
        for name in ("mr2_cluster_tiny_stock.jsonl", "mr2_cluster_1m_stock.jsonl"):
            for job in jobs(recorded(name)):
                self.assertGreater(sum(cluster.fetches_by_node(job).values()), 0)
                self.assertEqual(job["advice"], {}, name)


class ParseTest(unittest.TestCase):
    def test_samples_of_a_recorded_run(self):
        warmup, measured, observed = cluster.parse(recorded("mr2_cluster_1m_old_shuffle_waits.jsonl"))
        self.assertEqual(warmup, [])
        values = {s["metric"]: s["value"] for s in measured}
        self.assertEqual(values["dontneed_calls"], 38)
        self.assertEqual(values["merge_waits"], 5)
        self.assertEqual(values["spilled_records"], 2000000)
        self.assertGreater(values["job_duration"], values["map_time"])
        self.assertAlmostEqual(values["job_duration"], values["map_time"] + values["reduce_time"])
        self.assertLessEqual(values["shuffle_time"], values["shuffle_time_max"])
        self.assertEqual(observed["jobs"][0]["whole_fetches_by_node"], {"nm-0": 24, "nm-1": 8})

    def test_a_driver_that_did_not_end_is_invalid(self):
        text = recorded("mr2_cluster_tiny_stock.jsonl")
        cut = "\n".join(line for line in text.splitlines() if '"advice_problems"' not in line)
        with self.assertRaisesRegex(MeasurementInvalid, "did not end"):
            cluster.parse(cut)

    def test_advice_that_missed_the_kernel_is_invalid(self):
        text = recorded("mr2_cluster_tiny_stock.jsonl").replace('"unreachable":0', '"unreachable":3')
        with self.assertRaisesRegex(MeasurementInvalid, "did not reach the kernel"):
            cluster.parse(text)

    def test_a_failed_job_or_missing_reducer_is_invalid(self):
        text = recorded("mr2_cluster_tiny_stock.jsonl")
        with self.assertRaisesRegex(MeasurementInvalid, "FAILED"):
            cluster.parse(text.replace('"status":"SUCCEEDED"', '"status":"FAILED"'))
        lines = text.splitlines()
        for i, line in enumerate(lines):
            if line.startswith('{"event":"cluster_job"'):
                job = json.loads(line)
                job["reducers"] = job["reducers"][:-1]
                lines[i] = json.dumps(job, separators=(",", ":"))
        with self.assertRaisesRegex(MeasurementInvalid, "reducers in the history"):
            cluster.parse("\n".join(lines))


class ClusterShapeTest(unittest.TestCase):
    def test_mr2_containers_are_the_slots_of_mr1(self):
        # Unset, Hadoop 3 sized a 256m task's container at 384 MB and the AM's at 1536 MB (MAPREDUCE-5785):
        # 3-4 times MR1's slots at once.
        p = {"mapreduce": "mr2", "task_heap_mb": 256, "reduces": 4, "io_sort_mb": 32, "shuffle_buffer_percent": 0.08}
        opts = cluster.job_options(p)
        self.assertEqual({k: opts[k] for k in ("mapreduce.map.memory.mb", "mapreduce.reduce.memory.mb",
                                               "yarn.app.mapreduce.am.resource.mb")},
                         dict.fromkeys(("mapreduce.map.memory.mb", "mapreduce.reduce.memory.mb",
                                        "yarn.app.mapreduce.am.resource.mb"), str(cluster.SLOT_MB)))

    def test_the_input_is_evicted_through_no_link(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "part-0")
            with open(path, "wb") as f:
                f.write(b"x" * 5000)
            self.assertEqual(cluster.evict_input([path]), 5000)
            os.symlink(path, os.path.join(d, "planted"))
            with self.assertRaises(OSError):
                cluster.evict_input([os.path.join(d, "planted")])


if __name__ == "__main__":
    unittest.main()
