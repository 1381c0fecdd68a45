"""The Redis rig on recorded real output (testdata/README.md) and its launch, without starting Redis."""

import os
import re
import subprocess
import sys
import tempfile
import types
import unittest

from analysis import distributions
from rigs.matrix.contract import rig as rig_contract
from rigs.matrix.planning import spec
from rigs.redis import callgrind, rig

TESTDATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata")


def recorded(name):
    with open(os.path.join(TESTDATA, name), newline="") as f:
        return f.read()


PARAMS = {"keys": "1000", "value_size": "100", "seed": "1", "tests": "get+set", "requests": "20000",
          "warmup_requests": "5000", "clients": "50", "pipeline": "1", "bench_threads": "1", "io_threads": "2",
          "home_node": "0", "pressure_leave_mb": "64", "numa": "bind_local", "tail_percentiles": "50+99",
          "measure": "wall"}
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

    def test_two_recorded_distributions_merge_to_known_percentiles(self):
        # The recorded SET and GET runs as two runs of one cell (20,000 requests each), read by hand from the
        # file: both tables' points, each run's count at its own largest bound at or below a merged bound.
        tests = rig.parse_benchmark(recorded("redis-benchmark-7.0.15-get-set.txt"))
        get, set_ = tests["get"]["distribution"], tests["set"]["distribution"]
        self.assertEqual((get.total, set_.total), (20000, 20000))
        self.assertEqual(set_.count_at(0.303), 9239)  # from the by-latency table
        self.assertEqual(set_.count_at(0.311), 10163)  # from the by-percentile table
        merged = distributions.merge([get, set_])
        # p50, rank 20,000: at 0.351 ms SET 10,163 (its 0.311) + GET 10,156 = 20,319; at 0.311 only 14,796.
        self.assertEqual(distributions.percentile(merged, 50), 0.351)
        # p99, rank 39,600: 0.903 ms (19,734 + 19,896); 0.839 ms falls short (19,689 + 19,872). The runs' own
        # p99s are 0.999 and 0.671 ms: their mean, 0.835 ms, is no tail of this cell.
        self.assertEqual(distributions.percentile(merged, 99), 0.903)
        self.assertEqual(distributions.percentile(merged, 99.9), 2.183)  # 19,961 + 20,000 >= 39,960
        self.assertIsNone(distributions.percentile(merged, 99.99))  # 4 requests beyond it: not read

    def test_a_recorded_callgrind_dump_without_the_timer_work(self):
        cost = callgrind.cost(recorded("callgrind-3.19.0-redis-7.0.15-dump-get-5000.out"))
        self.assertEqual(cost, {"summary": 32270479, "timer": 3073337, "counted": 29197142})
        self.assertAlmostEqual(cost["counted"] / 5000, 5839.43, places=2)  # instructions per GET
        workdir = tempfile.mkdtemp()
        with open(os.path.join(workdir, "callgrind.out.19518.1"), "w") as f:
            f.write(recorded("callgrind-3.19.0-redis-7.0.15-dump-get-5000.out"))
        with open(os.path.join(workdir, "callgrind.out.19518"), "w") as f:
            f.write("# callgrind format\nsummary: 5\n")  # the dump at exit: no trigger, left out
        functions = callgrind.functions(recorded("callgrind-3.19.0-redis-7.0.15-dump-get-5000.out"))
        self.assertEqual(callgrind.dumps(workdir), {"get": {**cost, "functions": functions}})
        with self.assertRaisesRegex(ValueError, "without its summary"):
            callgrind.cost("# callgrind format\ndesc: Trigger: dump get\n")
        # Issue 78, row 8: counts of thousands of digits, or a timer that costs more than the whole dump.
        call = "fn=(1) main\ncalls=1 0\ncfn=(2) serverCron\n0 {timer}\n"
        with self.assertRaisesRegex(ValueError, "summary of 3000 digits"):
            callgrind.cost("summary: " + "9" * 3000 + "\n" + call.format(timer=1))
        with self.assertRaisesRegex(ValueError, "cost of 25 digits"):
            callgrind.cost("summary: 10\n" + call.format(timer="1" * 25))
        with self.assertRaisesRegex(ValueError, "cost more than its summary"):
            callgrind.cost("summary: 10\n" + call.format(timer=11))
        self.assertEqual(callgrind.cost("summary: 10\n" + call.format(timer=4))["counted"], 6)
        replies = {"script_get": "v\n" * 5000, "script_set": "OK\n" * 5000}
        with self.assertRaisesRegex(ValueError, "no Callgrind dump 'set'"):
            rig.instruction_samples(replies, workdir, 5000)
        with self.assertRaisesRegex(rig_contract.MeasurementInvalid, "4999 lines, 1 errors \\(ERR unknown"):
            rig.instruction_samples({"script_get": "v\n" * 4998 + "ERR unknown command\n"}, workdir, 5000)
        samples, counted = rig.instruction_samples({"script_get": "v\n" * 5000}, workdir, 5000)
        self.assertEqual([(s["metric"], s["unit"]) for s in samples],
                         [("get_instructions_per_request", "instructions/request")])
        self.assertEqual(counted["instructions"]["get"]["timer_instructions"], 3073337)

    def test_a_recorded_dump_per_function(self):
        # Known answers from Valgrind 3.19's callgrind_annotate on the same dump: --inclusive=yes per function;
        # --inclusive=no per file:function, summed over the files a function's code came from (inlined
        # headers: readQueryFromClient is 330,137 in networking.c + 265,065 in sds.h + 15,006 in connection.h).
        text = recorded("callgrind-3.19.0-redis-7.0.15-dump-get-5000.out")
        every = callgrind.functions(text, keep=10**6)
        self.assertEqual(every["lookupKey"], [280000, 1739648])
        self.assertEqual(every["readQueryFromClient"], [610208, 24333619])
        self.assertEqual(every["aeProcessEvents.part.0"], [876687, 32240615])
        self.assertEqual(every["serverCron"][1], 3073337)  # what callgrind_cost takes out as the timer's
        # Self costs add up to the dump's "totals:" line (its "summary:" leaves out the calls still open).
        self.assertEqual(sum(c[0] for c in every.values()), 32840895)
        kept = callgrind.functions(text)
        by_self = sorted(every, key=lambda n: -every[n][0])[:callgrind.FUNCTIONS_KEPT]
        self.assertEqual(set(kept), set(by_self) | set(list(every)[:callgrind.FUNCTIONS_KEPT]))  # the largest of each
        self.assertLessEqual(len(kept), 2 * callgrind.FUNCTIONS_KEPT)

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
        # From the distribution: the first printed bound with 99 % of the 20,000 requests at or below it
        # (19,808 at 1.007 ms); redis-benchmark's own summary line says 0.999 (HdrHistogram's value within it).
        self.assertEqual(by_metric["set_latency_p99"]["value"], 1.007)
        self.assertEqual(by_metric["set_latency_p99"]["unit"], "ms")
        self.assertEqual(by_metric["set_latency_p99"]["metadata"], {"requests_beyond": 200.0})
        self.assertEqual(by_metric["set_latency_p50"]["value"], 0.311)  # the summary's p50 too
        # 20,000 requests put 2 beyond p99.99: a run this short reports no p99.99 of its own.
        self.assertNotIn("set_latency_p99_99", by_metric)
        self.assertAlmostEqual(by_metric["used_memory_after_load"]["value"], 1185176 / 2**20)
        self.assertEqual(by_metric["used_memory_after_load"]["unit"], "MiB")
        self.assertEqual(parsed.split, {})  # one placement, no migration: nothing to split
        self.assertEqual(len(parsed.warmup_samples), 8)  # rate, p50, p99, p99.9 (20 beyond it) per test
        kept = parsed.observations["latency_distributions"]["get"]
        self.assertEqual((kept["requests"], kept["points"][-1]), (20000, [3.103, 20000]))
        self.assertEqual(parsed.observations["keys_loaded"], 1000)
        self.assertEqual(parsed.observations["mem_allocator"], "jemalloc-5.3.0")  # Debian's, as in its binary
        outputs["loader"] = "errors: 3, replies: 1000\n"
        with self.assertRaisesRegex(rig_contract.MeasurementInvalid, "3 errors"):
            rig.RIG.parse(outputs, None, None, launch)

    def test_iterations_give_tagged_rates_and_tails_of_their_merged_distribution(self):
        # bench_iterations.py's marks around the recorded run (the driver's own output is only its marks).
        bench = recorded("redis-benchmark-7.0.15-get-set.txt")
        mark = '{"event":"iteration","index":%d,"warmup":%s}\n'
        text = mark % (0, "true") + bench + mark % (1, "false") + bench + mark % (2, "false") + bench
        outputs = {"loader": "errors: 0, replies: 1000\n", "memory": recorded("redis-cli-info-memory.txt"),
                   "benchmark": text}
        parsed = rig.RIG.parse(outputs, None, None, rig_contract.Launch([], state={"home_node": 0}))
        rates = [s for s in parsed.samples if s["metric"] == "set_rate"]
        self.assertEqual([(s["value"], s["metadata"]) for s in rates],
                         [(76628.35, {"iteration": 0}), (76628.35, {"iteration": 1})])
        self.assertEqual([s["metadata"]["iteration"] for s in parsed.warmup_samples if s["metric"] == "set_rate"], [0])
        by_metric = {s["metric"]: s for s in parsed.samples}
        # Two runs of 20,000: 40 requests beyond p99.9, so the run reads it; p99.99 (4 beyond) it does not.
        self.assertEqual(by_metric["set_latency_p99_9"]["metadata"], {"requests_beyond": 40.0})
        self.assertNotIn("set_latency_p99_99", by_metric)
        self.assertEqual(parsed.observations["latency_distributions"]["set"]["requests"], 40000)
        with self.assertRaisesRegex(ValueError, "iteration 2: redis-benchmark output for GET lacks"):
            rig.RIG.parse(dict(outputs, benchmark=text[:text.index("throughput summary", text.rindex("== GET"))]),
                          None, None, rig_contract.Launch([], state={"home_node": 0}))

    def test_the_iterations_driver_marks_each_run_and_stops_at_a_failing_one(self):
        driver = [sys.executable, rig.BENCH_ITERATIONS]
        done = subprocess.run(driver + ["1", "2", "--", sys.executable, "-c", "print('run')"], capture_output=True,
                              text=True, check=True)
        self.assertEqual(done.stdout.splitlines(), [
            '{"event":"iteration","index":0,"warmup":true}', "run", '{"event":"iteration","index":1,"warmup":false}',
            "run", '{"event":"iteration","index":2,"warmup":false}', "run"])
        failed = subprocess.run(driver + ["0", "3", "--", sys.executable, "-c", "raise SystemExit(3)"],
                                capture_output=True, text=True)
        self.assertEqual((failed.returncode, failed.stdout.count("iteration")), (3, 1))
        self.assertEqual(subprocess.run(driver + ["x"], capture_output=True).returncode, 2)


def cell_workdir(run_dir=None):
    """A cell's folder laid out as the runner makes it: <run>/work/<cell>.r<k>."""
    work = os.path.join(run_dir or tempfile.mkdtemp(), "work")
    os.makedirs(work, exist_ok=True)
    return tempfile.mkdtemp(prefix="cell.r", dir=work)


class LiveValuesTest(unittest.TestCase):
    def test_the_benchmarks_progress_lines_give_its_rate(self):
        """redis-benchmark's recorded output, split as the runner splits a live line (at \\n or \\r)."""
        with open(os.path.join(TESTDATA, "redis-benchmark-7.0.15-get-set.txt")) as f:
            lines = [line for line in re.split(r"[\r\n]", f.read()) if line]
        rates = [rig.RIG.live("benchmark", line) for line in lines]
        self.assertIn({"requests_per_second": 77015.9}, rates)
        self.assertIn({"requests_per_second": 0.0}, rates)  # the first progress line, before any reply
        self.assertEqual(rig.RIG.live("server", lines[1]), {})
        self.assertEqual(rig.RIG.live("benchmark", "====== SET ======"), {})


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

    def test_instructions_run_the_server_under_callgrind_between_zero_and_dump(self):
        run_dir = tempfile.mkdtemp()
        workdir = cell_workdir(run_dir)
        data = {"server": "/b/redis-server", "benchmark": "/b/redis-benchmark", "cli": "/b/redis-cli"}
        params = dict(PARAMS, measure="instructions", requests="300")
        launch = rig.RIG.launch(spec.Cell(params), None, None, workdir, data, os.path.join(run_dir, "inputs"))
        launch.validate()
        server = launch.processes[0]
        self.assertEqual(server.wrapper, ["valgrind", "--tool=callgrind",
                                          f"--callgrind-out-file={workdir}/callgrind.out.%p", "--"])
        self.assertEqual(server.program[0], "/b/redis-server")
        self.assertEqual([[p.role for p in phase] for phase in launch.phases()],
                         [["loader"], ["memory"], ["zero_get"], ["script_get"], ["dump_get"], ["zero_set"],
                          ["script_set"], ["dump_set"]])
        self.assertLessEqual({p.role for p in launch.processes}, set(rig.RIG.roles))
        by_role = {p.role: p for p in launch.processes}
        self.assertEqual(by_role["dump_get"].program, ["callgrind_control", "--dump=get", "{pid:server}"])
        with open(by_role["script_get"].stdin, "rb") as f:
            script = f.read().splitlines()
        self.assertEqual(len(script), 300)
        self.assertTrue(all(line.startswith(b"GET key:0000000") and len(line) == 20 for line in script))  # 1,000 keys
        with open(by_role["script_set"].stdin, "rb") as f:
            self.assertEqual({len(line.split()[2]) for line in f.read().splitlines()}, {100})  # value_size
        # One command a line, each sent when the last one's reply came (closed loop, no --pipe).
        self.assertEqual(by_role["script_get"].program, ["/b/redis-cli", "-h", "127.0.0.1", "-p", str(server.ports[0])])
        self.assertEqual(set(launch.generated_inputs), {"dataset.resp", "get_script.txt", "set_script.txt"})
        again = rig.RIG.launch(spec.Cell(params), None, None, cell_workdir(run_dir), data,
                               os.path.join(run_dir, "inputs"))
        self.assertEqual(launch.generated_inputs, again.generated_inputs)  # seeded: the same script
        self.assertFalse(rig.RIG.can_iterate(params))
        with self.assertRaisesRegex(ValueError, "use measure=wall"):
            rig.RIG.check(dict(params, numa="pressured_migrated"))

    def test_with_iterations_the_benchmark_role_runs_the_driver(self):
        run_dir = tempfile.mkdtemp()
        data = {"server": "/b/redis-server", "benchmark": "/b/redis-benchmark", "cli": "/b/redis-cli"}
        policy = types.SimpleNamespace(repetitions=3, warmup_iterations=2, iterations=6)
        launch = rig.RIG.launch(spec.Cell(dict(PARAMS)), None, policy, cell_workdir(run_dir), data,
                                os.path.join(run_dir, "inputs"))
        bench = launch.processes[-1]
        self.assertEqual((bench.role, bench.program[1:6]), ("benchmark", [rig.BENCH_ITERATIONS, "2", "6", "--",
                                                                         "/b/redis-benchmark"]))
        self.assertTrue(rig.RIG.can_iterate(PARAMS))
        self.assertFalse(rig.RIG.can_iterate(dict(PARAMS, numa="pressured_migrated")))

    def test_bad_parameters_are_refused(self):
        for key, value, message in (("tests", "get+lpush", "tests="), ("clients", "0", "clients=0"),
                                    ("keys", "many", "keys='many'"), ("tail_percentiles", "99+100", "in \\(0, 100\\)"),
                                    ("tail_percentiles", "p99", "tail_percentiles=")):
            with self.subTest(key):
                params = dict(PARAMS, **{key: value})
                with self.assertRaisesRegex(ValueError, message):  # as the core checks a cell: declarations first
                    rig.RIG.typed(params)
                    rig.RIG.check(params)

    def test_a_timed_profile_of_a_cell_under_callgrind_is_refused(self):
        counted = dict(PARAMS, measure="instructions")
        rig.RIG.check(dict(counted, profile_launch="extra"))  # its extra launch says why its profile is missing
        rig.RIG.check(dict(PARAMS, measure="wall", profile_launch="timed"))
        with self.assertRaisesRegex(ValueError, "profile_launch=timed .* under Callgrind"):
            rig.RIG.check(dict(counted, profile_launch="timed"))

    def test_a_tail_the_requests_cannot_support_is_refused_with_the_count_needed(self):
        policy = types.SimpleNamespace(repetitions=3, warmup_iterations=0, iterations=1)
        rig.RIG.check_policy(dict(PARAMS, tail_percentiles="50+99+99.9", requests="4000"), policy)  # 12,000
        with self.assertRaisesRegex(ValueError, r"p99\.99.*1 iteration\(s\) x 3 runs = 12,000.*needs 100,000 requests"):
            rig.RIG.check_policy(dict(PARAMS, tail_percentiles="50+99.99", requests="4000"), policy)


if __name__ == "__main__":
    unittest.main()
