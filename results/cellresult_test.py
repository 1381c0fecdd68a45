"""CellResult: every status makes a document the schema takes; a status is given once and fixes the parts; the
document handed out is a copy and nobody else's dict."""

import copy
import math
import unittest

from results import cellresult, resultfile, testruns


def started(**overrides):
    """A result started from the blocks of a recorded real one (results/testdata/result_v1_ok.json)."""
    recorded = testruns.recorded_result()
    blocks = {k: copy.deepcopy(recorded[k]) for k in ("matrix", "cell", "policy", "logs")}
    blocks["provenance"] = dict(copy.deepcopy(recorded["provenance"]), command=[])  # as the runner starts it
    blocks.update(overrides)
    return cellresult.CellResult(recorded["run_id"], **blocks)


SAMPLES = [{"metric": "ops", "value": 10.0, "unit": "op/s", "t": 1.0},
           {"metric": "ops", "value": 12.0, "unit": "op/s", "t": 2.0}]


class Recorded(unittest.TestCase):
    def test_the_recorded_result_made_again_through_the_builder_is_the_same_but_its_clock(self):
        recorded = testruns.recorded_result()
        result = started()
        result.add_provenance("command", recorded["provenance"]["command"])
        result.ended(recorded["exit_status"], recorded["evidence"])
        result.measured(recorded["warmup_samples"], recorded["samples"], recorded["metrics"])
        doc = result.ok().document()
        clock = ("started_at", "finished_at", "duration_s")
        self.assertEqual({k: v for k, v in doc.items() if k not in clock},
                         {k: v for k, v in recorded.items() if k not in clock})
        self.assertEqual(sorted(doc), sorted(recorded))


class Statuses(unittest.TestCase):
    def test_a_planned_skip_takes_no_time_and_validates(self):
        doc = started().skipped("needs two NUMA nodes; this host has 1", ran=False).document()
        self.assertEqual((doc["status"], doc["reason"], doc["duration_s"]),
                         ("skipped", "needs two NUMA nodes; this host has 1", 0.0))
        self.assertEqual(doc["kind"], "tunelab.cell_result")
        self.assertEqual(doc["schema_version"], resultfile.SCHEMA_VERSION)

    def test_a_failure_keeps_the_evidence_read_before_it(self):
        doc = started().failed("host knob: refused", evidence={"cgroup": {"unavailable": "no v2"}}).document()
        self.assertEqual(doc["status"], "failed")
        self.assertEqual(doc["evidence"], {"cgroup": {"unavailable": "no v2"}})
        self.assertGreaterEqual(doc["duration_s"], 0.0)

    def test_a_measured_cell_is_ok_with_its_samples_metrics_and_evidence(self):
        result = started()
        result.add_provenance("command", ["java", "-Xmx1g"])
        result.add_generated_inputs({"trace.json": "2" * 64}, host_specific=["trace.json"])
        result.ended(0, {"role": "driver"})
        result.add_evidence("patched_classes", {})
        metrics = resultfile.run_metrics(SAMPLES, {})
        result.measured([], SAMPLES, metrics, observations={"files": 3})
        doc = result.ok().document()
        self.assertEqual(doc["status"], "ok")
        self.assertNotIn("reason", doc)
        self.assertEqual(doc["exit_status"], 0)
        self.assertEqual(doc["evidence"], {"role": "driver", "patched_classes": {}})
        self.assertEqual(doc["provenance"]["command"], ["java", "-Xmx1g"])
        self.assertEqual(doc["provenance"]["workload"]["generated"], {"trace.json": "2" * 64})
        self.assertEqual(doc["provenance"]["workload"]["generated_host_specific"], ["trace.json"])
        self.assertEqual([s["value"] for s in doc["samples"]], [10.0, 12.0])
        self.assertEqual(doc["observations"], {"files": 3})

    def test_invalid_names_the_first_problem_and_keeps_them_all(self):
        result = started()
        result.ended(0, {})
        doc = result.invalid("knob not in effect: heap", problems=["heap", "gc"]).document()
        self.assertEqual((doc["status"], doc["problems"]), ("invalid", ["heap", "gc"]))

    def test_ok_with_a_problem_is_refused(self):
        with self.assertRaisesRegex(cellresult.CellResultError, "invalid, not ok: heap"):
            started().ok(problems=["heap"])


PROFILE = {"events": ["cpu"], "launch": "extra", "duration_s": 4.4,
           "jfr": {"file": "profiles/ca872129ac7c.r0.jfr.gz", "sha256": "a" * 64, "bytes": 15354},
           "collapsed": {"cpu": {"file": "profiles/ca872129ac7c.r0.cpu.collapsed.gz", "sha256": "b" * 64, "bytes": 2261}}}


class Profile(unittest.TestCase):
    def measured(self):
        result = started()
        result.ended(0, {})
        result.measured([], SAMPLES, [])
        return result.ok()

    def test_a_measured_cell_takes_its_profile_after_its_status(self):
        doc = self.measured()
        doc.add_profile(PROFILE)
        self.assertEqual(doc.document()["profile"], PROFILE)

    def test_a_missing_profile_says_why_and_a_block_that_says_neither_is_refused(self):
        doc = self.measured()
        doc.add_profile({"events": ["cpu"], "launch": "extra", "duration_s": 1.0, "missing": "timed out"})
        self.assertEqual(doc.document()["profile"]["missing"], "timed out")
        doc.add_profile({"events": ["cpu"], "launch": "extra", "duration_s": 1.0})
        with self.assertRaisesRegex(resultfile.ResultError, "profile"):
            doc.document()

    def test_a_cell_that_was_not_measured_has_no_profile(self):
        with self.assertRaisesRegex(cellresult.CellResultError, "a failed cell has no profile"):
            started().failed("exit status 1").add_profile(PROFILE)


class Order(unittest.TestCase):
    def test_a_status_is_given_once_and_fixes_the_parts(self):
        result = started().failed("exit status 1")
        with self.assertRaisesRegex(cellresult.CellResultError, "already failed"):
            result.ok()
        with self.assertRaisesRegex(cellresult.CellResultError, "already failed"):
            result.add_provenance("noise", {})
        with self.assertRaisesRegex(cellresult.CellResultError, "already failed"):
            result.measured([], SAMPLES, [])

    def test_no_document_before_a_status(self):
        with self.assertRaisesRegex(cellresult.CellResultError, "no status yet"):
            started().document()

    def test_a_document_the_schema_refuses_is_never_handed_out(self):
        result = started()
        result.ended(0, {})
        result.measured([], [{"metric": "ops", "value": math.nan, "unit": "op/s", "t": 1.0}], [])
        with self.assertRaises(resultfile.ResultError):
            result.ok().document()


class Ownership(unittest.TestCase):
    def test_the_callers_blocks_and_the_document_handed_out_are_copies(self):
        provenance = dict(copy.deepcopy(testruns.recorded_result()["provenance"]), command=[])
        evidence = {"role": "driver"}
        result = started(provenance=provenance)
        result.add_generated_inputs({"a": "3" * 64})
        result.ended(0, evidence)
        evidence["late"] = True  # the cell room's dict changes after: the result does not
        result.measured([], SAMPLES, [])
        doc = result.ok().document()
        self.assertNotIn("generated", provenance["workload"])
        self.assertNotIn("late", doc["evidence"])
        doc["status"] = "failed"
        self.assertEqual(result.document()["status"], "ok")


if __name__ == "__main__":
    unittest.main()
