"""The MR rig on recorded real logs of both engines (testdata/README.md), its output check, its refusals."""

import json
import os
import re
import tempfile
import types
import unittest

from rigs.mapreduce import joblog, rig
from rigs.matrix.contract import iterations
from rigs.matrix.contract.rig import Launch, MeasurementInvalid

HERE = os.path.join(os.path.dirname(__file__), "testdata")


def recorded_file(name):
    with open(os.path.join(HERE, name)) as f:
        return f.read()


def recorded(engine):
    return recorded_file(f"{engine}_wordcount_3m.log")


PARAMS = {"mapreduce": "mr1", "job": "wordcount", "words": "3000", "rows": "500", "vocabulary": "50", "zipf_s": "1.0",
          "seed": "7", "splits": "2", "io_sort_mb": "100", "io_sort_record_percent": "default"}


class JobLogTest(unittest.TestCase):
    def test_mr1_spills_twelve_times_on_the_study_input(self):
        log = joblog.parse(recorded("mr1"))
        self.assertEqual(log.map_spills, 12)
        self.assertEqual(log.counter("Spilled Records"), 166640)
        self.assertEqual(log.counter("Map output records"), 3000000)
        self.assertEqual(log.counter("Reduce output records"), 10000)
        # 19,160 first map attempt started, 21,788 map attempt finished, 21,825 reduce attempt done.
        self.assertAlmostEqual(log.map_s, 2.628, places=3)
        self.assertAlmostEqual(log.reduce_s, 0.037, places=3)
        self.assertAlmostEqual(log.job_s, 2.665, places=3)

    def test_mr2_spills_once_and_its_job_counters_are_the_last_block(self):
        log = joblog.parse(recorded("mr2"))
        self.assertEqual(log.map_spills, 1)
        # The job's total, not a task's (MR2 also logs "Final Counters for attempt_..." per task: 10000).
        self.assertEqual(log.counter("Spilled Records"), 20000)
        self.assertEqual(log.counters["Map-Reduce Framework"]["Map output records"], 3000000)
        self.assertIn("File System Counters", log.counters)

    def test_terasort_logs_of_both_engines(self):
        for engine in ("mr1", "mr2"):
            with open(os.path.join(HERE, f"{engine}_terasort_100k.log")) as f:
                log = joblog.parse(f.read())
            self.assertEqual(log.counter("Map output records"), 100000, engine)
            self.assertEqual(log.counter("Spilled Records"), 200000, engine)
            self.assertEqual(log.map_spills, 1, engine)

    def test_a_job_that_did_not_complete_is_refused(self):
        cut = recorded("mr2").split("completed successfully")[0]
        with self.assertRaisesRegex(joblog.JobLogError, "did not complete"):
            joblog.parse(cut)
        with self.assertRaisesRegex(joblog.JobLogError, "did not complete"):
            joblog.parse("java.lang.OutOfMemoryError: Java heap space\n")


class OutputCheckTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))

    def answer(self, corrupt=False):
        """Runs the input generator and writes the right (or a corrupted) WordCount answer as a job would."""
        input_dir, inputs, expected = rig.ensure_input(PARAMS, os.path.join(self.dir, "inputs"))
        counts = {}
        for name in inputs:
            with open(os.path.join(input_dir, name)) as f:
                for word in f.read().split():
                    counts[word] = counts.get(word, 0) + 1
        if corrupt:
            counts[min(counts)] += 1
        out = os.path.join(self.dir, "output")
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "part-r-00000"), "w") as f:
            f.writelines(f"{w}\t{c}\n" for w, c in sorted(counts.items()))
        self.launch = Launch([], state={"job": "wordcount", "output": out, "expected_output_sha256": expected})
        return expected

    def test_the_right_answer_is_measured(self):
        expected = self.answer()
        parsed = rig.RIG.parse({"main": recorded("mr1")}, None, self.dir, self.launch)
        self.assertEqual(parsed.observations["output_sha256"], expected)
        values = {s["metric"]: s["value"] for s in parsed.samples}
        self.assertEqual((values["map_spills"], values["spilled_records"]), (12.0, 166640.0))

    def test_a_corrupted_output_makes_the_cell_invalid(self):
        self.answer(corrupt=True)
        with self.assertRaisesRegex(MeasurementInvalid, "not the expected answer"):
            rig.RIG.parse({"main": recorded("mr1")}, None, self.dir, self.launch)

    def test_terasort_output_must_be_in_key_order(self):
        out = os.path.join(self.dir, "tera")
        os.makedirs(out)
        records = [b"%-10s%010d%s\r\n" % (key, i, b"A" * 78) for i, key in enumerate((b"!!a", b"Zz", b"za", b"~"))]
        with open(os.path.join(out, "part-r-00000"), "wb") as f:
            f.writelines(records[:2])
        with open(os.path.join(out, "part-r-00001"), "wb") as f:
            f.writelines(records[2:])
        self.assertIsNone(rig.first_out_of_order(out))
        with open(os.path.join(out, "part-r-00001"), "wb") as f:
            f.writelines([records[3], records[2]])  # the same records, the last two swapped
        self.assertEqual(rig.first_out_of_order(out), "part-r-00001 line 2")

    def test_inputs_are_generated_once_per_parameters(self):
        a = rig.ensure_input(PARAMS, os.path.join(self.dir, "inputs"))
        b = rig.ensure_input(dict(PARAMS), os.path.join(self.dir, "inputs"))
        self.assertEqual(a, b)
        self.assertEqual(len(os.listdir(os.path.join(self.dir, "inputs"))), 1)
        c = rig.ensure_input(dict(PARAMS, seed="8"), os.path.join(self.dir, "inputs"))
        self.assertNotEqual(a[2], c[2])


class LiveValuesTest(unittest.TestCase):
    def test_the_drivers_cost_lines_are_read_as_every_iterating_driver_s(self):
        """What the values are is the driver kit's (rigs/matrix/contract/iterations.py, read in full by the
        NameNode rig's test); here: MrJobLoop's recorded lines reach it, and only the job's own role's."""
        with open(os.path.join(HERE, "mr2_wordcount_iterations.log")) as f:
            lines = f.read().splitlines()
        costs = [line for line in lines if line.startswith('{"event":"cost"')]
        self.assertTrue(costs)
        self.assertEqual([rig.RIG.live(rig.MAIN_ROLE, line) for line in costs], [iterations.live_values(line) for line in costs])
        self.assertEqual(rig.RIG.live("other", costs[0]), {})


class IterationsTest(unittest.TestCase):
    """MrJobLoop's output: one job per iteration in one JVM (testdata/README.md)."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        out = os.path.join(self.dir, "output")
        os.makedirs(out)
        with open(os.path.join(out, "part-r-00000"), "w") as f:
            f.write("a\t1\n")
        digest = rig.output_digest(out)
        self.launch = Launch([], state={"job": "wordcount", "output": out, "expected_output_sha256": digest})

    def parse(self, text):
        return rig.RIG.parse({"main": text}, None, self.dir, self.launch)

    def test_every_job_is_an_iteration_with_its_cost(self):
        for engine in ("mr1", "mr2"):
            text = recorded_file(f"{engine}_wordcount_iterations.log")
            costs = [json.loads(line) for line in text.splitlines() if line.startswith('{"event":"cost"')]
            parsed = self.parse(text)
            by_metric = {}
            for s in parsed.warmup_samples + parsed.samples:
                by_metric.setdefault(s["metric"], []).append(s)
            self.assertEqual([s["metadata"]["iteration"] for s in by_metric["job_duration"]], list(range(6)), engine)
            self.assertEqual([s["metadata"]["iteration"] for s in parsed.warmup_samples if s["metric"] == "job_duration"],
                             [0], engine)
            # 20,000 input lines (200,000 words) a job: bytes and CPU per map input record from each job's cost
            # line, the whole JVM (job client and local runner) without the JIT compiler threads.
            self.assertEqual([s["value"] for s in by_metric["alloc_per_record"]],
                             [(c["allocated_bytes"] + c["driver_allocated_bytes"]) / 20000 for c in costs], engine)
            self.assertEqual([s["value"] for s in by_metric["cpu_per_record"]],
                             [(c["cpu_ns"] + c["driver_cpu_ns"] - c["jit_cpu_ns"]) / 1000 / 20000 for c in costs], engine)
            self.assertEqual({s["unit"] for s in by_metric["alloc_per_record"]}, {"B/record"})
            self.assertNotIn("cpu_time", by_metric)  # perf stat spans every job: an observation only
            # Every job read the whole input and gave the same answer (checked by parse against the first).
            framework = [it["counters"]["Map-Reduce Framework"] for it in parsed.observations["iterations"]]
            self.assertEqual({f["Map input records"] for f in framework}, {20000}, engine)  # the input's lines
            self.assertEqual(len({f["Reduce output records"] for f in framework}), 1, engine)

    def test_a_job_that_did_other_work_is_invalid(self):
        text = recorded_file("mr2_wordcount_iterations.log")
        marks = [m.start() for m in re.finditer(r'^\{"event":"iteration"', text, re.M)]
        third = text[marks[2]:marks[3]]
        changed = text[:marks[2]] + re.sub(r"Map input records=\d+", "Map input records=19999", third) + text[marks[3]:]
        with self.assertRaisesRegex(MeasurementInvalid, "iteration 2: Map input records = 19999, iteration 0 had 20000"):
            self.parse(changed)

    def test_a_job_without_its_cost_or_its_end_is_invalid(self):
        text = recorded_file("mr1_wordcount_iterations.log")
        without_cost = re.sub(r'^\{"event":"cost","index":3,.*\n', "", text, flags=re.M)
        with self.assertRaisesRegex(MeasurementInvalid, "iteration 3: 0 cost lines"):
            self.parse(without_cost)
        marks = [m.start() for m in re.finditer(r'^\{"event":"iteration"', text, re.M)]
        with self.assertRaisesRegex(MeasurementInvalid, "did not complete in iteration 5"):
            self.parse(text[:marks[5] + 200])

    def test_the_loop_is_launched_for_iterations(self):
        work = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        classpath = os.path.join(work, "classpath.txt")
        with open(classpath, "w") as f:
            f.write("hadoop.jar\n")
        cell = types.SimpleNamespace(id="0" * 12, params=PARAMS)

        def launch(name, **policy):
            policy = types.SimpleNamespace(**dict({"warmup_s": 0, "measure_s": 1, "warmup_iterations": 0,
                                                   "iterations": 1}, **policy))
            workdir = os.path.join(work, name)
            os.makedirs(workdir)
            return rig.RIG.launch(cell, None, policy, workdir, {"classpath_mr1": classpath},
                                  os.path.join(work, "inputs")).under_test
        once = launch("once")
        self.assertEqual(once.main_class, "org.apache.hadoop.examples.ExampleDriver")
        looped = launch("looped", warmup_iterations=2, iterations=6)
        self.assertEqual(looped.main_class, "tunelab.rigs.mapreduce.MrJobLoop")
        self.assertEqual(looped.args[:5], ["--iterations", "2", "6", "--", "wordcount"])
        self.assertEqual([a.replace("/looped/", "/once/") for a in looped.args[5:]], once.args[1:])
        self.assertTrue(rig.RIG.can_iterate(PARAMS))


class PerfTest(unittest.TestCase):
    def test_software_events_are_read_and_hardware_ones_skipped_with_the_reason(self):
        # Recorded here: perf stat -x, -e task-clock,...,cache-misses -- sleep 0.1 (no PMU in this VM).
        with open(os.path.join(HERE, "perf_stat_sleep.csv")) as f:
            perf = rig.parse_perf_csv(f.read())
        self.assertEqual(perf["task-clock"], {"value": 0.81, "unit": "msec"})
        self.assertEqual(perf["page-faults"]["value"], 76.0)
        self.assertIn("no PMU", perf["cache-misses"]["skipped"])
        self.assertNotIn("value", perf["instructions"])


class CheckTest(unittest.TestCase):
    def test_impossible_cells_are_refused_before_anything_runs(self):
        rig.RIG.check(PARAMS)
        with self.assertRaisesRegex(ValueError, "MR1-only"):
            rig.RIG.check(dict(PARAMS, mapreduce="mr2", io_sort_record_percent="0.5"))
        # The declared parameters, as the core checks every cell before the rig's own check.
        self.assertEqual(rig.RIG.typed(PARAMS)["io_sort_record_percent"], "default")
        self.assertEqual(rig.RIG.typed(dict(PARAMS, io_sort_record_percent="0.3"))["io_sort_record_percent"], 0.3)
        for params, message in ((dict(PARAMS, job="grep"), "job='grep': one of wordcount, terasort"),
                                (dict(PARAMS, mapreduce="mr3"), "mapreduce='mr3': one of mr1, mr2"),
                                (dict(PARAMS, io_sort_record_percent="1.5"), r"at most 0.999 \(or default\)"),
                                (dict(PARAMS, rows="many"), "rows='many' is not a whole number"),
                                ({k: v for k, v in PARAMS.items() if k != "seed"}, "no value for .* seed")):
            with self.assertRaisesRegex(ValueError, message):
                rig.RIG.typed(params)
        with self.assertRaisesRegex(ValueError, "the patch sets are MR2's"):
            rig.RIG.check(dict(PARAMS, mapreduce="mr1", variant="patched:mr2-sort-key-prefix"))
        with self.assertRaisesRegex(ValueError, "words, vocabulary, splits"):
            rig.RIG.check(dict(PARAMS, words="0"))


if __name__ == "__main__":
    unittest.main()
