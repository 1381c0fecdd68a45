"""The rig's parse() on a real recorded lean-path run (testdata/sls342_lean_jdk17_g1_1000nodes_100ms.*): the
same window and rate the matrix stored for that run (results/baselines/yarn_cps-gate-cps-lean-2vcpu, r0),
and the new observations worked out here from the raw records: the scheduler's event-queue gauge over the
window, memory per simulated node, the lean clock's counters."""

import json
import os
import tempfile
import unittest

from rigs.matrix.cell import steadystate
from rigs.matrix.planning import policy
from rigs.matrix.contract.rig import MAIN_ROLE, Launch
from rigs.yarn_cps import rig

TESTDATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata")
NAME = "sls342_lean_jdk17_g1_1000nodes_100ms"


class LeanRunParseTest(unittest.TestCase):
    def setUp(self):
        self.workdir = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        with open(os.path.join(TESTDATA, NAME + ".launch.json")) as f:
            self.launch = Launch([], state=json.load(f))  # what the rig's launch returned for this run
        with open(os.path.join(TESTDATA, NAME + ".jsonl")) as f:
            self.stdout = f.read()
        self.records = rig.records(self.stdout)

    def test_window_queue_memory_and_clock(self):
        parsed = rig.RIG.parse({MAIN_ROLE: self.stdout}, policy.Policy(warmup_s=8, measure_s=15), self.workdir,
                               self.launch)
        w = parsed.observations["window"]
        # What the matrix stored for this run (gate_cps, 20261123T231015Z-bc6a r0).
        self.assertEqual(w["allocation_rate"], 8262.905)
        self.assertEqual((w["start_t"], w["end_t"]), (15.047, 36.047))
        samples = [r for r in self.records if r.get("event") == "sample" and w["start_t"] <= r["t"] <= w["end_t"]]
        queues = [r["scheduler_event_queue"] for r in samples]
        self.assertEqual(w["scheduler_event_queue_mean"], round(sum(queues) / len(queues), 1))
        self.assertEqual(w["scheduler_event_queue_max"], max(queues))
        rm_queues = [r["rm_event_queue"] for r in samples]
        self.assertEqual((w["rm_event_queue_mean"], w["rm_event_queue_max"]),
                         (round(sum(rm_queues) / len(rm_queues), 1), max(rm_queues)))
        heap = max(r["heap_used_bytes"] for r in samples)
        peak = max(r["peak_rss_kb"] for r in self.records if r.get("event") == "sample")
        self.assertEqual(parsed.observations["memory_per_node"],
                         {"peak_rss_kb": round(peak / 1000, 2), "heap_used_kb": round(heap / 1024 / 1000, 2)})
        done = next(r for r in self.records if r.get("event") == "done")
        self.assertEqual(parsed.observations["lean"], done["lean"])
        self.assertEqual(done["lean"]["heartbeat_failures"], 0)
        self.assertIn("simulator_nm", w["cpu_cores_by_thread_group"])
        metrics = {s["metric"] for s in parsed.samples}
        self.assertEqual(metrics, {"container_allocation_rate", "container_release_rate",
                                   "scheduler_cpu_per_container"})


def parse_recorded(name, pol):
    """rig.parse on a recorded run (testdata/<name>.jsonl and the rig's launch record of it)."""
    with open(os.path.join(TESTDATA, name + ".launch.json")) as f:
        launch = Launch([], state=json.load(f))
    with open(os.path.join(TESTDATA, name + ".jsonl")) as f:
        stdout = f.read()
    return rig.RIG.parse({MAIN_ROLE: stdout}, pol, tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR")), launch)


class LiveValuesTest(unittest.TestCase):
    def test_the_recorded_run_read_line_by_line_as_a_watched_run_reads_it(self):
        """Each sample line gives the RM's counters and the JVM's heap and GC time, all declared; other lines
        and roles give nothing; the allocated count only grows and ends where the run's last sample does."""
        with open(os.path.join(TESTDATA, NAME + ".jsonl")) as f:
            lines = f.read().splitlines()
        values = [rig.RIG.live(MAIN_ROLE, line) for line in lines]
        self.assertTrue(all(set(v) <= set(rig.RIG.live_metrics) for v in values))
        allocated = [v["containers_allocated"] for v in values if "containers_allocated" in v]
        last = [r for r in rig.records("\n".join(lines)) if r.get("event") == "sample"][-1]
        self.assertEqual(allocated, sorted(allocated))
        self.assertEqual(allocated[-1], last["allocated"])
        self.assertEqual(values[lines.index(next(x for x in lines if '"allocated"' in x))]["jvm_gc_seconds"] * 1000,
                         rig.records(next(x for x in lines if '"allocated"' in x))[0]["gc_time_ms"])
        self.assertEqual(rig.RIG.live("other_role", lines[-1]), {})
        self.assertEqual(rig.RIG.live(MAIN_ROLE, "log4j: a line"), {})


class SubWindowIterationsTest(unittest.TestCase):
    """policy.iterations on this rig cuts the measured window into sub-windows, which the runner's steady-state
    check judges (cellstatus: steadystate.check on the measured samples). Known answers from two real runs of
    the nightly's CPU-bound cell with an 8 s warm-up: one on 2026-11-23 at ~8k/s from its window's start
    (steady), one on 2026-11-26 whose JIT threads still took 0.6-0.9 cores through the window while CPS
    climbed from ~4.5k to ~8-9k/s through the window (testdata/README.md)."""

    POLICY = policy.Policy(warmup_s=8, measure_s=16, iterations=8)

    def test_every_per_second_sample_is_in_one_of_the_sub_windows(self):
        parsed = parse_recorded(NAME, self.POLICY)
        w = parsed.observations["window"]
        rates = [s for s in parsed.samples if s["metric"] == "container_allocation_rate"]
        span = (w["end_t"] - w["start_t"]) / 8
        for s in rates:
            k = s["metadata"]["iteration"]
            self.assertTrue(w["start_t"] + k * span < s["t"] <= w["start_t"] + (k + 1) * span + 1e-6, s)
        self.assertEqual(steadystate.iteration_values(parsed.samples).keys(),
                         {"container_allocation_rate", "container_release_rate"})
        self.assertEqual({len(v) for v in steadystate.iteration_values(parsed.samples).values()}, {8})
        # One value a run, not a sub-window's: left out of the check.
        cpu = [s for s in parsed.samples if s["metric"] == "scheduler_cpu_per_container"]
        self.assertEqual(len(cpu), 1)
        self.assertNotIn("metadata", cpu[0])

    def test_a_window_at_steady_rate_is_steady(self):
        parsed = parse_recorded(NAME, self.POLICY)
        self.assertTrue(all(s.steady for s in steadystate.check(parsed.samples, self.POLICY.steady_band)))

    def test_a_window_inside_the_jits_warm_up_is_not_steady(self):
        parsed = parse_recorded(NAME + "_jit_warmup", self.POLICY)
        verdict = {s.metric: s for s in steadystate.check(parsed.samples, self.POLICY.steady_band)}
        # Releases follow allocations by a container's life: they climb steadily through the window (+70 %
        # between its halves, Kendall p 0.014); allocations climb +20 % between the halves, but in bursts as
        # the JIT's threads come and go, too unevenly for the trend test over 8 sub-windows.
        self.assertFalse(verdict["container_release_rate"].steady)
        self.assertGreater(verdict["container_release_rate"].change, 0.5)
        self.assertGreater(verdict["container_allocation_rate"].change, 0.15)
        # Without sub-windows the same run gives one rate and nothing to judge: what the rig did before.
        plain = parse_recorded(NAME + "_jit_warmup", policy.Policy(warmup_s=8, measure_s=16))
        self.assertEqual(steadystate.iteration_values(plain.samples), {})

    def test_policies_it_cannot_honour_are_refused_before_anything_runs(self):
        params = {}
        rig.RIG.check_policy(params, self.POLICY)
        with self.assertRaisesRegex(ValueError, "warmup_iterations = 2: this rig warms up for warmup_s"):
            rig.RIG.check_policy(params, policy.Policy(warmup_iterations=2, iterations=6))
        with self.assertRaisesRegex(ValueError, "under 2 s .* use at most 6 iterations"):
            rig.RIG.check_policy(params, policy.Policy(measure_s=12, iterations=8))
        rig.RIG.check_policy(params, policy.Policy(measure_s=12, iterations=6))


if __name__ == "__main__":
    unittest.main()
