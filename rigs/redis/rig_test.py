"""The Redis rig on recorded real output (testdata/README.md) and its launch, without starting Redis."""

import os
import tempfile
import unittest

from rigs.matrix import rig as rig_contract
from rigs.matrix import spec
from rigs.redis import rig

TESTDATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata")


def recorded(name):
    with open(os.path.join(TESTDATA, name), newline="") as f:
        return f.read()


PARAMS = {"keys": "1000", "value_size": "100", "seed": "1", "tests": "get+set", "requests": "20000",
          "warmup_requests": "5000", "clients": "50", "pipeline": "1", "bench_threads": "1", "io_threads": "2",
          "home_node": "0", "pressure_leave_mb": "64", "numa": "bind_local"}
CAPTURES = os.path.join(os.path.dirname(TESTDATA), "..", "matrix", "testdata", "captures")


class ParseTest(unittest.TestCase):
    def test_plain_output_has_the_whole_distribution(self):
        tests = rig.parse_benchmark(recorded("redis-benchmark-7.0.15-get-set.txt"))
        self.assertEqual(sorted(tests), ["get", "set"])
        s = tests["set"]
        self.assertEqual(s["requests"], 20000)
        self.assertEqual(s["requests_per_s"], 76628.35)
        self.assertEqual(s["summary"], {"avg": 0.346, "min": 0.088, "p50": 0.311, "p95": 0.463, "p99": 0.999,
                                        "max": 2.551})
        # Only the by-percentile table, not the cumulative-by-latency one after it.
        self.assertEqual(s["percentiles"][0], (0.0, 0.095))
        self.assertEqual(s["percentiles"][-1], (100.0, 2.551))
        self.assertEqual(len(s["percentiles"]), 17)
        self.assertEqual(rig.percentile_at_or_above(s["percentiles"], 99.99), (99.994, 2.527))
        self.assertEqual(rig.percentile_at_or_above(s["percentiles"], 99.0), (99.219, 1.063))

    def test_csv_output(self):
        tests = rig.parse_csv(recorded("redis-benchmark-7.0.15-get-set.csv"))
        self.assertEqual(tests["get"]["requests_per_s"], 90909.09)
        self.assertEqual(tests["set"]["p99"], 0.479)
        with self.assertRaises(ValueError):
            rig.parse_csv(recorded("redis-benchmark-7.0.15-get-set.txt"))

    def test_truncated_output_is_an_error(self):
        text = recorded("redis-benchmark-7.0.15-get-set.txt")
        with self.assertRaisesRegex(ValueError, "GET lacks"):
            rig.parse_benchmark(text[:text.index("throughput summary", text.index("====== GET"))])

    def test_parse_gives_samples_warmup_apart_and_memory(self):
        bench = recorded("redis-benchmark-7.0.15-get-set.txt")
        outputs = {"server": "", "loader": "All data transferred. Waiting for the last reply...\n"
                                          "Last reply received from server.\nerrors: 0, replies: 1000\n",
                   "memory": recorded("redis-cli-info-memory.txt"), "warmup": bench, "benchmark": bench}
        launch = rig_contract.Launch([], state={"home_node": 0})
        parsed = rig.RIG.parse(outputs, None, None, launch)
        by_metric = {s["metric"]: s for s in parsed.samples}
        self.assertEqual(by_metric["set_rate"]["value"], 76628.35)
        self.assertEqual(by_metric["set_rate"]["unit"], "requests/s")
        self.assertEqual(by_metric["set_latency_p99_99"]["value"], 2.527)
        self.assertEqual(by_metric["set_latency_p99_99"]["unit"], "ms")
        self.assertEqual(by_metric["set_latency_p99_99"]["metadata"], {"printed_percentile": 99.994})
        self.assertAlmostEqual(by_metric["used_memory_after_load"]["value"], 1185176 / 2**20)
        self.assertEqual(by_metric["used_memory_after_load"]["unit"], "MiB")
        self.assertEqual(parsed.split, {})  # one placement, no migration: nothing to split
        self.assertEqual(len(parsed.warmup_samples), 8)
        self.assertEqual(parsed.observations["keys_loaded"], 1000)
        self.assertEqual(parsed.observations["mem_allocator"], "jemalloc-5.3.0")  # Debian's, as in its binary
        outputs["loader"] = "errors: 3, replies: 1000\n"
        with self.assertRaisesRegex(rig_contract.MeasurementInvalid, "3 errors"):
            rig.RIG.parse(outputs, None, None, launch)


def cell_workdir(run_dir=None):
    """A cell's folder laid out as the runner makes it: <run>/work/<cell>.r<k>."""
    work = os.path.join(run_dir or tempfile.mkdtemp(), "work")
    os.makedirs(work, exist_ok=True)
    return tempfile.mkdtemp(prefix="cell.r", dir=work)


class LaunchTest(unittest.TestCase):
    def test_phases_dataset_and_placement_roles(self):
        run_dir = tempfile.mkdtemp()
        workdir = cell_workdir(run_dir)
        cell = spec.Cell(dict(PARAMS))
        data = {"server": "/b/redis-server", "benchmark": "/b/redis-benchmark", "cli": "/b/redis-cli"}
        launch = rig.RIG.launch(cell, None, None, workdir, data, os.path.join(run_dir, "inputs"))
        launch.validate()
        self.assertEqual([p.role for p in launch.processes], ["server", "loader", "memory", "warmup", "benchmark"])
        self.assertEqual([[p.role for p in phase] for phase in launch.phases()],
                         [["loader"], ["memory"], ["warmup"], ["benchmark"]])
        server = launch.processes[0]
        self.assertTrue(server.server and server.under_test)
        self.assertLessEqual({p.role for p in launch.processes}, set(rig.RIG.roles))
        port = server.ports[0]
        self.assertEqual(server.program[server.program.index("--bind") + 1], "127.0.0.1")
        self.assertEqual(server.program[-4:], ["--io-threads", "2", "--io-threads-do-reads", "yes"])
        bench = launch.processes[-1].program
        self.assertEqual(bench[bench.index("-p") + 1], str(port))
        self.assertEqual(bench[bench.index("-r") + 1], "1000")
        self.assertEqual(bench[bench.index("-n") + 1], "20000")
        self.assertEqual(bench[bench.index("-t") + 1], "get,set")
        # The data set: 1,000 SETs of key:%012d with 100-byte values, the same for the same seed.
        with open(launch.processes[1].stdin, "rb") as f:
            dataset = f.read()
        self.assertEqual(dataset.count(b"*3\r\n$3\r\nSET\r\n$16\r\nkey:000000000999\r\n$100\r\n"), 1)
        self.assertEqual(dataset.count(b"\r\nSET\r\n"), 1000)
        again = rig.RIG.launch(cell, None, None, cell_workdir(run_dir), data, os.path.join(run_dir, "inputs"))
        self.assertEqual(launch.generated_inputs, again.generated_inputs)
        # One data set per run and parameters, under <run>/inputs/, shared by the cells.
        self.assertEqual(launch.processes[1].stdin, again.processes[1].stdin)
        self.assertEqual(os.path.dirname(launch.processes[1].stdin), os.path.join(run_dir, "inputs"))
        other_run = tempfile.mkdtemp()
        other = rig.RIG.launch(spec.Cell(dict(PARAMS, seed="2")), None, None, cell_workdir(other_run), data,
                               os.path.join(other_run, "inputs"))
        self.assertNotEqual(launch.generated_inputs, other.generated_inputs)

    def test_pressured_then_migrated_adds_pressure_numa_maps_and_the_migration(self):
        sysfs = tempfile.mkdtemp()
        os.makedirs(os.path.join(sysfs, "node0"))
        with open(os.path.join(sysfs, "node0", "meminfo"), "w") as f:  # the layout of the kernel's file
            f.write("Node 0 MemTotal:         524288 kB\nNode 0 MemFree:          409600 kB\n")
        old, rig.NODE_SYSFS = rig.NODE_SYSFS, sysfs
        try:
            launch = rig.RIG.launch(spec.Cell(dict(PARAMS, numa="pressured_migrated")), None, None,
                                    cell_workdir(), {"server": "s", "benchmark": "b", "cli": "c"}, tempfile.mkdtemp())
        finally:
            rig.NODE_SYSFS = old
        launch.validate()
        by_role = {p.role: p for p in launch.processes}
        self.assertEqual([[p.role for p in phase] for phase in launch.phases()],
                         [["pressure", "loader"], ["memory", "numa_before"], ["warmup"], ["benchmark_before"],
                          ["migrate"], ["numa_after"], ["benchmark"]])
        self.assertTrue(by_role["pressure"].background)
        self.assertEqual(by_role["pressure"].program, ["numactl", "--preferred=0", "--", "memhog", "-r1000000000",
                                                       "336m"])  # 400 MiB free - 64 left
        self.assertEqual(by_role["migrate"].program, ["migratepages", "{pid:server}", "all", "0"])
        self.assertEqual(by_role["numa_after"].program, ["cat", "/proc/{pid:server}/numa_maps"])
        self.assertLessEqual(set(by_role), set(rig.RIG.roles))

    def test_migration_observations_and_the_locality_split_from_two_node_numa_maps(self):
        # Recorded in the two-node guest (../matrix/testdata/captures/README.md): the server's numa_maps
        # before and after `migratepages PID all 0`.
        with open(os.path.join(CAPTURES, "numa_maps_guest_redis_before_migration.txt")) as f:
            before = f.read()
        with open(os.path.join(CAPTURES, "numa_maps_guest_redis_after_migration.txt")) as f:
            after = f.read()
        bench = recorded("redis-benchmark-7.0.15-get-set.txt")
        outputs = {"numa_before": before, "numa_after": after, "benchmark_before": bench}
        found = rig.migration_observations(outputs, 0)
        m = found["migration"]
        self.assertEqual(m["before"]["bytes_per_node"], {0: 46497792, 1: 25686016})
        self.assertEqual(m["before"]["local_ratio"], 0.6442)
        self.assertEqual(m["after"], {"local_ratio": 1.0, "bytes_per_node": {0: 70389760}})
        self.assertEqual(m["moved_home_bytes"], 70389760 - 46497792)
        measured = [{"metric": "set_rate", "value": 80000.0, "unit": "requests/s", "t": 0.0}]
        split = rig.locality_split(outputs, measured, m)
        pre, post = split["locality"]["pre"], split["locality"]["post"]
        self.assertEqual({s["metric"]: s["value"] for s in pre}["set_rate"], 76628.35)
        self.assertEqual(pre[-1], {"metric": "local_page_ratio", "value": 64.42, "unit": "%", "t": 0.0})
        self.assertEqual(post, measured + [{"metric": "local_page_ratio", "value": 100.0, "unit": "%", "t": 0.0}])
        self.assertEqual(len(measured), 1)  # the cell's own samples are left as they were
        # The other way round: with node 1 as home nearly nothing was local, and the check refuses a
        # cell whose pressure pushed nothing away.
        self.assertEqual(rig.migration_observations(outputs, 1)["migration"]["after"]["local_ratio"], 0.0)
        with self.assertRaisesRegex(rig_contract.MeasurementInvalid, "did not push the server's pages off node 0"):
            rig.migration_observations({"numa_before": after, "numa_after": after, "benchmark_before": bench}, 0)

    def test_bad_parameters_are_refused(self):
        for key, value, message in (("tests", "get+lpush", "tests="), ("clients", "0", "clients=0"),
                                    ("keys", "many", "keys='many'")):
            with self.subTest(key):
                params = dict(PARAMS, **{key: value})
                with self.assertRaisesRegex(ValueError, message):  # as the core checks a cell: declarations first
                    rig.RIG.typed(params)
                    rig.RIG.check(params)


if __name__ == "__main__":
    unittest.main()
