"""Result files: schema validation, atomic writes, refusal to overwrite, untrusted input, migration.

testdata/result_v1_ok.json is a real result written by a calibration smoke run on this project's machine.
"""

import copy
import json
import os
import tempfile
import unittest

from results import resultfile, safeio, store

GOLDEN = os.path.join(os.path.dirname(__file__), "testdata", "result_v1_ok.json")


def golden():
    """The recorded version 1 result, migrated to the current version as every reader sees it."""
    with open(GOLDEN) as f:
        return resultfile.migrate(json.load(f))


class ResultsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))

    def test_golden_result_is_valid_and_carries_its_evidence(self):
        doc = resultfile.load_result(GOLDEN)
        self.assertEqual(doc["status"], "ok")
        (thread,) = doc["evidence"]["threads"]
        self.assertEqual(thread["cpus_allowed"], thread["wanted"])
        self.assertIs(doc["evidence"]["vm_flags"]["UseG1GC" if doc["cell"]["params"]["gc"] == "g1" else "UseParallelGC"], True)
        self.assertTrue(doc["samples"])

    def test_schema_violations_are_named(self):
        doc = golden()
        doc["status"] = "fine"
        with self.assertRaisesRegex(resultfile.ResultError, "at status"):
            resultfile.validate(doc)
        doc = golden()
        doc["metrics"][0]["direction"] = "up"
        with self.assertRaisesRegex(resultfile.ResultError, "metrics/0/direction"):
            resultfile.validate(doc)
        doc = golden()
        del doc["provenance"]["workload"]
        with self.assertRaisesRegex(resultfile.ResultError, "provenance"):
            resultfile.validate(doc)

    def test_atomic_write_then_never_overwrite(self):
        path = os.path.join(self.dir, "cells", "abc.r0.json")
        store.write_result_file(path, golden())
        self.assertEqual(os.listdir(os.path.dirname(path)), ["abc.r0.json"])
        with self.assertRaisesRegex(resultfile.ResultError, "never rewritten"):
            store.write_result_file(path, golden())
        self.assertEqual(resultfile.load_result(path), golden())

    def test_invalid_document_is_not_written(self):
        path = os.path.join(self.dir, "x.json")
        bad = golden()
        bad["schema_version"] = resultfile.SCHEMA_VERSION + 1
        with self.assertRaises(resultfile.ResultError):
            store.write_result_file(path, bad)
        self.assertFalse(os.path.exists(path))

    def test_version_1_results_are_migrated(self):
        with open(GOLDEN) as f:
            v1 = json.load(f)
        self.assertEqual(v1["schema_version"], 1)
        self.assertEqual(resultfile.migrate(copy.deepcopy(v1))["samples"], v1["samples"])  # nothing to rename
        # SYNTHETIC on the recorded document: a version 1 Redis pressured_migrated result, metric names with
        # units and the benchmark before the migration in observations, as the Redis rig wrote it.
        redis = copy.deepcopy(v1)
        redis["samples"] = [{"metric": "get_requests_per_s", "value": 129000.0, "unit": "requests/s", "t": 0.0},
                            {"metric": "get_p99_ms", "value": 0.5, "unit": "ms", "t": 0.0}]
        redis["warmup_samples"] = [dict(redis["samples"][1])]
        redis["metrics"] = resultfile.run_metrics(redis["samples"], {
            "get_requests_per_s": {"unit": "requests/s", "direction": "higher_is_better"},
            "get_p99_ms": {"unit": "ms", "direction": "lower_is_better"}})
        redis["observations"] = {"migration": {"home_node": 0, "before": {"local_ratio": 0.6442},
                                               "after": {"local_ratio": 1.0}},
                                 "before_migration": {"get_requests_per_s": 122000.0, "get_p99_ms": 0.7}}
        doc = resultfile.migrate(redis)
        resultfile.validate(doc)
        self.assertEqual(doc["schema_version"], resultfile.SCHEMA_VERSION)
        self.assertEqual([s["metric"] for s in doc["samples"]], ["get_rate", "get_latency_p99"])
        self.assertEqual(doc["warmup_samples"][0]["metric"], "get_latency_p99")
        self.assertEqual([(m["name"], m["unit"]) for m in doc["metrics"]],
                         [("get_rate", "requests/s"), ("get_latency_p99", "ms")])
        self.assertNotIn("before_migration", doc["observations"])
        self.assertIn("migration", doc["observations"])
        pre, post = doc["split"]["parts"]
        self.assertEqual((doc["split"]["axis"], pre["value"], post["value"]), ("locality", "pre", "post"))
        self.assertEqual({s["metric"]: (s["value"], s["unit"]) for s in pre["samples"]},
                         {"get_rate": (122000.0, "requests/s"), "get_latency_p99": (0.7, "ms"),
                          "local_page_ratio": (64.42, "%")})
        self.assertEqual({m["name"]: m["value"] for m in post["metrics"]},
                         {"get_rate": 129000.0, "get_latency_p99": 0.5, "local_page_ratio": 100.0})
        self.assertEqual(resultfile.v1_metric_name("create_ops_per_s"), "create_rate")  # the NameNode's
        broken = copy.deepcopy(redis)
        broken["schema_version"] = 1
        broken["observations"]["before_migration"] = {"get_requests_per_s": 1.0, "no_such_metric": 2.0}
        with self.assertRaisesRegex(resultfile.ResultError, "cannot migrate"):
            resultfile.migrate(broken)

    def test_untrusted_input(self):
        corrupt = os.path.join(self.dir, "corrupt.json")
        with open(corrupt, "w") as f:
            f.write('{"schema_version": 1, "kind": ')
        with self.assertRaisesRegex(resultfile.ResultError, "not valid JSON"):
            resultfile.load_result(corrupt)
        with self.assertRaisesRegex(resultfile.ResultError, "over the 10-byte limit"):
            resultfile.load_result(GOLDEN, max_bytes=10)
        future = copy.deepcopy(golden())
        future["schema_version"] = 99
        path = os.path.join(self.dir, "future.json")
        safeio.write_json(path, future)
        with self.assertRaisesRegex(resultfile.ResultError, "newer than this harness"):
            resultfile.load_result(path)

    def test_nan_infinite_and_negative_values_are_corrupt(self):
        for text, expected in (("NaN", "NaN, not a number"), ("Infinity", "Infinity, not a number"),
                               ("-12.5", "less than the minimum"),
                               # Issue 39: a JSON integer beyond a float's range passed the finiteness check.
                               ("9" * 400, "integer beyond 9e\\+18 at samples/0/value")):
            raw = json.dumps(golden(), indent=1)
            first = golden()["samples"][0]["value"]
            raw = raw.replace(f'"value": {json.dumps(first)}', f'"value": {text}', 1)
            path = os.path.join(self.dir, f"bad-{text[:20]}.json")
            with open(path, "w") as f:
                f.write(raw)
            with self.assertRaisesRegex(resultfile.ResultError, expected):
                resultfile.load_result(path)
            self.assertTrue(os.path.exists(path))  # refused, never deleted
        doc = golden()
        doc["metrics"][0]["value"] = float("nan")
        with self.assertRaisesRegex(resultfile.ResultError, "not a finite number at metrics/0/value"):
            store.write_result_file(os.path.join(self.dir, "nan.json"), doc)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "nan.json")))

    def test_a_pattern_anchored_with_dollar_takes_the_whole_string(self):
        # Issue 39, finding 6: Python's `$` matches before a final newline, so a run id with one passed the schema.
        doc = golden()
        doc["run_id"] += "\n"
        with self.assertRaisesRegex(resultfile.ResultError, "run_id: .* ends in a newline"):
            resultfile.validate(doc)
        doc["run_id"] = doc["run_id"].strip() + "x"
        with self.assertRaisesRegex(resultfile.ResultError, "does not match"):
            resultfile.validate(doc)

    def test_a_cell_is_bounded_like_its_manifest(self):
        # Issue 39, finding 3: a 60,000-character axis value in a cell file (the manifest caps it at 2,000) broke
        # the PDF layout, and 850,000 samples (63 MiB) were read whole.
        doc = golden()
        doc["cell"]["params"]["gc"] = "g" * 60000
        with self.assertRaisesRegex(resultfile.ResultError, "cell/params/gc: .* is too long"):
            resultfile.validate(doc)
        doc = golden()
        doc["samples"] = doc["samples"][:1] * 200001
        with self.assertRaisesRegex(resultfile.ResultError, "samples: .* is too long"):
            resultfile.validate(doc)
        self.assertLessEqual(resultfile.MAX_RESULT_BYTES, 16 << 20)

    def test_stored_results_ignore_partial_writes(self):
        run = self.dir
        store.write_result_file(resultfile.result_path(run, "aaaaaaaaaaaa", 0), golden())
        partial = os.path.join(run, "cells", ".tmp-killed.json")
        with open(partial, "w") as f:
            f.write("{")
        self.assertEqual(resultfile.stored_results(run), {("aaaaaaaaaaaa", 0)})
        self.assertEqual(resultfile.remove_partial_files(run), [".tmp-killed.json"])
        self.assertFalse(os.path.exists(partial))
        # the manifest's own partial write, in the run folder (a run killed while writing it; the fleet's
        # archive check refuses anything but the run's files)
        manifest_partial = os.path.join(run, ".tmp-manifest.json")
        with open(manifest_partial, "w") as f:
            f.write("{")
        self.assertEqual(resultfile.remove_partial_files(run), [".tmp-manifest.json"])
        self.assertFalse(os.path.exists(manifest_partial))

    def test_summary_is_the_median_per_metric(self):
        samples = [{"metric": "m", "value": v, "unit": "ops/s", "t": i} for i, v in enumerate([5.0, 1.0, 3.0, 100.0])]
        (metric,) = resultfile.run_metrics(samples, {"m": {"unit": "ops/s", "direction": "higher_is_better"},
                                                 "absent": {"unit": "s", "direction": "lower_is_better"}})
        self.assertEqual((metric["value"], metric["n"], metric["statistic"]), (4.0, 4, "median"))


if __name__ == "__main__":
    unittest.main()
