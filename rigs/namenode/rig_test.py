"""The NameNode rig's parser on recorded real NNThroughputBenchmark output (testdata/README.md)."""

import json
import os
import re
import tempfile
import types
import unittest

from rigs.matrix.contract.rig import MeasurementInvalid
from rigs.namenode import hadoop_output, rig

HERE = os.path.join(os.path.dirname(__file__), "testdata")


def recorded(name):
    with open(os.path.join(HERE, name)) as f:
        return f.read()


def check_cell(params):
    """As the core checks a cell before anything runs: the rig's declared parameters, then its own check."""
    rig.RIG.typed(params)
    rig.RIG.check(params)


class ParseTest(unittest.TestCase):
    def test_every_operation_of_op_all(self):
        parsed = rig.RIG.parse({"main": recorded("inprocess_all_2000.log")}, None, None, None)
        values = {s["metric"]: s["value"] for s in parsed.samples}
        self.assertEqual(sorted(values), sorted(rig.metric_name(op) for op in rig.OPS))
        self.assertAlmostEqual(values["create_rate"], 2695.4177897574123)
        self.assertAlmostEqual(values["replication_rate"], 500.0)
        self.assertNotIn("clean", parsed.observations["report"])  # the benchmark's own clean-up pass
        self.assertEqual(parsed.observations["report"]["create"]["operations"], 2000)

    def test_one_operation(self):
        report = hadoop_output.parse_report(recorded("inprocess_create_20000.log"))
        self.assertEqual(report["create"], {"operations": 20000, "elapsed_ms": 2801, "ops_per_s": 7140.307033202428,
                                            "average_ms": 0})

    def test_iterations_in_one_jvm(self):
        # NnBenchDriver --iterations 2 5: seven reports, each after its iteration line and before its cost line
        # (testdata/README.md).
        parsed = rig.RIG.parse({"main": recorded("inprocess_create_iterations.log")}, None, "", None)
        rates = [s for s in parsed.samples if s["metric"] == "create_rate"]
        self.assertEqual([s["metadata"]["iteration"] for s in parsed.warmup_samples if s["metric"] == "create_rate"],
                         [0, 1])
        self.assertEqual([s["metadata"]["iteration"] for s in rates], [2, 3, 4, 5, 6])
        reports = parsed.observations["iterations"]
        self.assertEqual([(r["iteration"], r["warmup"]) for r in reports],
                         [(0, True), (1, True), (2, False), (3, False), (4, False), (5, False), (6, False)])
        self.assertTrue(all(r["report"]["create"]["operations"] == 2000 for r in reports))
        self.assertEqual([s["value"] for s in rates], [r["report"]["create"]["ops_per_s"] for r in reports[2:]])

    def test_add_block_iterations_in_one_jvm(self):
        # AddBlockBench --iterations 2 5, a new NameNode each iteration (testdata/README.md).
        parsed = rig.RIG.parse({"main": recorded("inprocess_addblock_iterations.log")}, None, "", None)
        self.assertEqual([s["metadata"]["iteration"] for s in parsed.warmup_samples], [0, 1])
        self.assertEqual([(s["metric"], s["metadata"]["iteration"]) for s in parsed.samples],
                         [("addBlock_rate", k) for k in range(2, 7)])
        reports = parsed.observations["iterations"]
        self.assertTrue(all(r["report"]["addBlock"]["operations"] == 500 for r in reports))
        self.assertEqual([s["value"] for s in parsed.samples], [r["report"]["addBlock"]["ops_per_s"] for r in reports[2:]])
        # Its cost is kept for the reader; no companion metric is declared for addBlock.
        self.assertTrue(all(r["cost"]["allocated_bytes"] > 0 for r in reports))

    def test_cost_per_create_of_each_iteration(self):
        text = recorded("inprocess_create_iterations.log")
        costs = [json.loads(line) for line in text.splitlines() if line.startswith('{"event":"cost"')]
        self.assertEqual([c["index"] for c in costs], list(range(7)))
        parsed = rig.RIG.parse({"main": text}, None, "", None)
        by_metric = {}
        for s in parsed.warmup_samples + parsed.samples:
            by_metric.setdefault(s["metric"], []).append(s)
        self.assertEqual(set(by_metric), {"create_rate", "create_alloc_per_op", "create_cpu_per_op"})
        # Each iteration's cost line divided by its 2,000 creates, in the units the workload declares.
        self.assertEqual([s["value"] for s in by_metric["create_alloc_per_op"]],
                         [c["allocated_bytes"] / 2000 for c in costs])
        # CPU without the JIT compiler threads' share (it goes on after the rate settles).
        self.assertEqual([s["value"] for s in by_metric["create_cpu_per_op"]],
                         [(c["cpu_ns"] - c["jit_cpu_ns"]) / 1000 / 2000 for c in costs])
        self.assertEqual({s["unit"] for s in by_metric["create_alloc_per_op"]}, {"B/op"})
        self.assertEqual({s["unit"] for s in by_metric["create_cpu_per_op"]}, {"us/op"})
        self.assertEqual([s["metadata"]["iteration"] for s in parsed.samples if s["metric"] == "create_alloc_per_op"],
                         [2, 3, 4, 5, 6])
        # The heap a create allocates on this recording: thousands of bytes, not a counter's garbage.
        self.assertTrue(all(5_000 < s["value"] < 50_000 for s in by_metric["create_alloc_per_op"]))
        self.assertEqual(parsed.observations["iterations"][3]["cost"]["allocated_bytes"], costs[3]["allocated_bytes"])

    def test_an_iteration_without_its_cost_is_invalid(self):
        text = recorded("inprocess_create_iterations.log")
        cut = re.sub(r'^\{"event":"cost","index":4,.*\n', "", text, flags=re.M)
        self.assertNotEqual(cut, text)
        with self.assertRaisesRegex(MeasurementInvalid, "iteration 4: 0 cost lines"):
            rig.RIG.parse({"main": cut}, None, "", None)
        broken = re.sub(r'"allocated_bytes":\d+', '"allocated_bytes":"x"', text, count=1)
        with self.assertRaisesRegex(MeasurementInvalid, "iteration 0: malformed cost line"):
            rig.RIG.parse({"main": broken}, None, "", None)
        negative = re.sub(r'"cpu_ns":\d+', '"cpu_ns":-5', text, count=1)
        with self.assertRaisesRegex(MeasurementInvalid, "iteration 0: impossible cost"):
            rig.RIG.parse({"main": negative}, None, "", None)

    def test_an_iteration_without_its_report_is_invalid(self):
        text = recorded("inprocess_create_iterations.log")
        cut = text[:text.index('{"event":"iteration","index":3')] + '{"event":"iteration","index":3,"warmup":false}\n'
        with self.assertRaisesRegex(MeasurementInvalid, "no stats block in iteration 3"):
            rig.RIG.parse({"main": cut}, None, "", None)

    def test_the_driver_is_asked_for_the_iterations(self):
        work = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        classpath = os.path.join(work, "classpath.txt")
        with open(classpath, "w") as f:
            f.write("hadoop.jar\n")
        params = {"mode": "inprocess", "op": "create", "fsync": "off", "threads": "2", "files": "2000",
                  "files_per_dir": "4", "block_size": "16", "name_dir": "disk"}
        cell = types.SimpleNamespace(id="0" * 12, params=params)

        def args(**policy):
            policy = types.SimpleNamespace(**dict({"warmup_s": 0, "measure_s": 1, "warmup_iterations": 0,
                                                   "iterations": 1}, **policy))
            return rig.RIG.launch(cell, None, policy, work, {"classpath": classpath}, work).under_test.args
        self.assertNotIn("--iterations", args())
        self.assertEqual(args(warmup_iterations=2, iterations=4)[3:6], ["--iterations", "2", "4"])
        policy = types.SimpleNamespace(warmup_s=0, measure_s=1, warmup_iterations=0, iterations=1)
        on_disk = rig.RIG.launch(cell, None, policy, work, {"classpath": classpath}, work)
        self.assertEqual(on_disk.memory_dirs, ())
        in_memory = rig.RIG.launch(types.SimpleNamespace(id=cell.id, params=dict(params, name_dir="tmpfs")), None, policy,
                                   work, {"classpath": classpath}, work)
        # The name directory the driver is given is the one the runner puts on tmpfs.
        self.assertEqual(in_memory.memory_dirs, ("name",))
        self.assertEqual(in_memory.under_test.args[:2], ["--name-dir", os.path.join(work, "name")])

    def test_which_cells_iterate(self):
        params = {"mode": "inprocess", "op": "create"}
        self.assertTrue(rig.RIG.can_iterate(params))
        self.assertFalse(rig.RIG.can_iterate(dict(params, mode="rpc")))
        self.assertTrue(rig.RIG.can_iterate(dict(params, op="addBlock")))

    def test_no_report_is_invalid(self):
        with self.assertRaisesRegex(MeasurementInvalid, "no stats block"):
            rig.RIG.parse({"main": "Exception in thread main\n"}, None, None, None)

    def test_impossible_cells_are_refused(self):
        params = {"mode": "inprocess", "op": "all", "fsync": "off", "threads": "2", "files": "10",
                  "files_per_dir": "4", "block_size": "16", "clients": "1", "handlers": "10", "readers": "1",
                  "queue_per_handler": "100", "call_queue": "default", "name_dir": "disk"}
        check_cell(params)
        check_cell(dict(params, name_dir="tmpfs"))
        check_cell(dict(params, fsync="on"))
        with self.assertRaisesRegex(ValueError, "name_dir=tmpfs with fsync=on: an fsync on tmpfs costs nothing"):
            check_cell(dict(params, name_dir="tmpfs", fsync="on"))
        check_cell(dict(params, mode="rpc", call_queue="multi"))
        check_cell(dict(params, mode="rpc", op="create", clients="3"))
        with self.assertRaisesRegex(ValueError, "the in-process mode has no RPC clients or call queue"):
            check_cell(dict(params, call_queue="fair"))
        with self.assertRaisesRegex(ValueError, "several clients need one operation"):
            check_cell(dict(params, mode="rpc", clients="2"))
        with self.assertRaisesRegex(ValueError, "op=replication: one of all, create"):
            check_cell(dict(params, mode="rpc", op="replication"))
        with self.assertRaisesRegex(ValueError, "call_queue=.lifo.: one of default, fair, multi"):
            check_cell(dict(params, mode="rpc", call_queue="lifo"))
        with self.assertRaisesRegex(ValueError, "op=.list.: one of all, create"):
            check_cell(dict(params, op="list"))
        with self.assertRaisesRegex(ValueError, "threads=0: at least 1"):
            check_cell(dict(params, threads="0"))
        with self.assertRaisesRegex(ValueError, "clients=9: at most 8"):
            check_cell(dict(params, mode="rpc", op="create", clients="9"))

    def test_rpc_site_selects_the_call_queue_for_the_port(self):
        params = {"handlers": "16", "readers": "2", "queue_per_handler": "50", "call_queue": "fair"}
        site = rig.namenode_site(params, 40000, 40001)
        self.assertEqual(site["ipc.40000.callqueue.impl"], "org.apache.hadoop.ipc.FairCallQueue")
        self.assertEqual(site["ipc.40000.scheduler.impl"], "org.apache.hadoop.ipc.DecayRpcScheduler")
        self.assertEqual(site["dfs.namenode.rpc-address"], "127.0.0.1:40000")
        self.assertEqual(site["dfs.namenode.http-address"], "127.0.0.1:40001")
        multi = rig.namenode_site(dict(params, call_queue="multi"), 40000, 40001)
        self.assertEqual(multi["ipc.40000.callqueue.impl"], "tunelab.rigs.namenode.MultiQueue")
        self.assertEqual(multi["ipc.40000.multiqueue.queues"], "16")
        default = rig.namenode_site(dict(params, call_queue="default"), 40000, 40001)
        self.assertFalse([k for k in default if "callqueue" in k])


class LiveValuesTest(unittest.TestCase):
    def test_each_cost_line_gives_the_iterations_done_and_the_last_ones_cost(self):
        with open(os.path.join(HERE, "inprocess_create_iterations.log")) as f:
            lines = f.read().splitlines()
        values = [v for v in (rig.RIG.live(rig.MAIN_ROLE, line) for line in lines) if v]
        costs = [json.loads(line) for line in lines if line.startswith('{"event":"cost"')]
        self.assertEqual(len(values), len(costs))
        self.assertEqual([v["iterations_done"] for v in values], [c["index"] + 1 for c in costs])
        self.assertEqual(values[-1]["iteration_wall_seconds"], costs[-1]["wall_ns"] / 1e9)
        self.assertEqual(values[-1]["iteration_allocated_bytes"], costs[-1]["allocated_bytes"])
        self.assertTrue(all(set(v) <= set(rig.RIG.live_metrics) for v in values))
        self.assertEqual(rig.RIG.live(rig.NAMENODE_ROLE, lines[2]), {})


class RpcEvidenceTest(unittest.TestCase):
    def test_clients_reports_add_up(self):
        log = recorded("rpc_create_5000_client.log")
        parsed = rig.RIG.parse({"namenode": "", "client-1": log, "client-2": log}, None, HERE, None)
        (sample,) = parsed.samples
        one = hadoop_output.parse_report(log)["create"]["ops_per_s"]
        self.assertEqual(sample["metric"], "create_rate")
        self.assertAlmostEqual(sample["value"], 2 * one)
        self.assertEqual(sorted(parsed.observations["reports"]), ["client-1", "client-2"])

    def test_a_client_without_a_report_is_invalid(self):
        with self.assertRaisesRegex(MeasurementInvalid, "client-2 printed no stats block"):
            rig.RIG.parse({"client-1": recorded("rpc_create_5000_client.log"), "client-2": "boom\n"}, None, HERE, None)

    def test_window_metrics_from_the_file_sink(self):
        records = hadoop_output.parse_file_sink(recorded("rpc_multi_5000_metrics.out"))
        rpc = [r for r in records if r["record"] == "rpc.rpc"]
        self.assertEqual(len(rpc), 13)
        self.assertEqual(rpc[0]["values"]["port"], 49237)  # a numeric tag reads as a number
        window = hadoop_output.window_metrics(records)
        # Every call the NameNode's /jmx counted (5004) is in the window, and the window's means are the
        # per-second means weighted by that second's calls.
        self.assertEqual(window["rpc"]["calls"], 5004)
        busy, previous = [], 0.0
        for r in rpc:
            n = r["values"]["RpcQueueTimeNumOps"] - previous
            previous = r["values"]["RpcQueueTimeNumOps"]
            if n:
                busy.append((n, r["values"]["RpcQueueTimeAvgTime"]))
        self.assertAlmostEqual(window["rpc"]["queue_time_avg_ms"], sum(n * a for n, a in busy) / 5004)
        self.assertEqual(window["rpc"]["seconds_with_calls"], len(busy))
        self.assertAlmostEqual(window["rpc"]["lock_wait_total_ms"], 5004 * window["rpc"]["lock_wait_avg_ms"])
        create = window["lock_hold"]["write"]["Create"]
        self.assertEqual(create["count"], 5000)  # one write lock per file created
        self.assertGreater(create["held_ms"], 0)
        self.assertAlmostEqual(create["held_us_per_op"], 1000 * create["held_ms"] / 5000)
        write = window["lock_hold"]["write"]
        self.assertEqual(next(iter(write)), "Overall")  # largest first
        # Brief holders are summed, nothing lost: the kept operations and "others" add up to Overall.
        self.assertIn("others", write)
        self.assertAlmostEqual(sum(v["held_ms"] for op, v in write.items() if op != "Overall"),
                               write["Overall"]["held_ms"], delta=0.01 * write["Overall"]["held_ms"])

    def test_call_queue_from_the_start_up_log(self):
        lines = recorded("callqueue_log_lines.txt")
        found = [hadoop_output.call_queue_from_log(line, 0) for line in lines.splitlines()]
        self.assertEqual([f["queue"] for f in found], [rig.CALL_QUEUES[k] for k in ("default", "fair", "multi")])
        self.assertEqual(found[1]["scheduler"], "org.apache.hadoop.ipc.DecayRpcScheduler")
        self.assertIsNone(hadoop_output.call_queue_from_log("nothing here\n", 0))

    def test_jmx_answers_are_what_the_probe_reads(self):
        import json
        beans = json.loads(recorded("jmx_ipc_multiqueue.json"))["beans"]
        self.assertTrue(beans[0]["name"].endswith("name=" + rig.QUEUE_MBEANS["multi"]))
        self.assertEqual(beans[0]["QueueCount"], 10)
        (activity,) = json.loads(recorded("jmx_rpc_activity_idle.json"))["beans"]
        for key in ("RpcQueueTimeNumOps", "RpcQueueTimeAvgTime", "RpcProcessingTimeAvgTime", "CallQueueLength"):
            self.assertIn(key, activity)


if __name__ == "__main__":
    unittest.main()
