"""Every kind of file tunelab reads beyond results, manifests and archives (those: //tools:trust_fuzz_test),
with any value in any field and any nesting (issue 58): sensitivity figures, studies, a fleet host's plan and
the JSON it prints, the fleet's own state file, recorded latency distributions. Each is the reader's own error
or a valid object, never another exception, within fixed time and memory (fuzzkit.within_budget).

Budget: TUNELAB_FUZZ_EXAMPLES examples per property (60 in CI), the same on every run; TUNELAB_FUZZ_RANDOM
draws new ones."""

import json
import math
import os
import shutil
import tempfile
import unittest

from hypothesis import given, strategies as st

from results import resultfile
from tools.fuzzkit import FUZZ, deep, dumps, json_value, mutated_document, toml_value, within_budget

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _committed_json(*parts):
    with open(os.path.join(REPO, *parts)) as f:
        return json.load(f)


SENSITIVITY_DOC = _committed_json("results", "baselines", "calibration-gate-aa-20261124-2vcpu", "sensitivity.json")
DISTRIBUTION_DOC = _committed_json("results", "baselines", "redis-embstr-quiet-20261127-2vcpu", "cells",
                                   "45e12a48a43e.r0.json")
FLEET_STATE_DOC = {"fleet_id": "fleet-20261124T101500Z-1a2b", "target": "//rigs:calibration_matrix",
                   "profile": "fleet_smoke", "overrides": None, "inventory": "/x/hosts.ini", "bundles": {"x86_64": "ab"},
                   "created_at": "2026-11-24T10:15:00+00:00", "updated_at": "2026-11-24T10:16:00+00:00",
                   "hosts": {"a": {"run_id": "20261124T101501Z-0c0b", "status": "home", "error": "",
                                   "run_dir": "results/a/20261124T101501Z-0c0b", "host_id": "vm-1", "machine": "x86_64"}}}
PLAN_DOC = {"estimated_s": 60, "cells": [{"id": "2c0b5e67fcfd", "skip_reason": None}],
            "doctor": {"host": {"host_id": "vm-1"}, "cpu": {"online_cpus": 2}, "numa": {"nodes": [{}]}}}


class FileKindFuzzTest(unittest.TestCase):
    """Issue 58: every kind of file tunelab reads, with any value in any field and any nesting, is the reader's
    own error or a valid object, never another exception, within fixed time and memory: sensitivity figures,
    studies, a fleet host's plan and the JSON it prints, recorded latency distributions. (Results, manifests,
    archives, references and matrices: the classes above.)"""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def write(self, rel, body):
        path = os.path.join(self.tmp, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(body)
        return path

    @FUZZ
    @given(body=st.one_of(mutated_document(SENSITIVITY_DOC).map(dumps), deep.map(str.encode), st.binary(max_size=300)))
    def test_a_sensitivity_file_is_figures_or_the_sensitivity_error(self, body):
        from analysis.sensitivity import components
        from analysis.sensitivity import figures as sensitivity_figures
        path = self.write("baselines/set/sensitivity.json", body)
        with within_budget(self):
            try:
                figures = sensitivity_figures.read_file(path)
            except components.SensitivityError:
                return
            unreadable = []
            rows = sensitivity_figures.history(os.path.dirname(os.path.dirname(path)), unreadable)
            sensitivity_figures.committed(os.path.dirname(os.path.dirname(path)), "calibration")
        self.assertEqual(unreadable, [])
        self.assertEqual(len(rows), sum(len(m) for m in figures.values()))

    @FUZZ
    @given(entries=st.lists(st.dictionaries(st.sampled_from(["id", "title", "question", "case_study", "sets", "kind",
                                                             "other"]), json_value, max_size=7), max_size=3),
           tail=st.one_of(st.just(""), deep.map(lambda t: "x = " + t + "\n"), st.text(max_size=80)))
    def test_a_studies_file_is_studies_or_the_studies_error(self, entries, tail):
        from tools.publish import studies
        text = "".join("[[study]]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in e.items()) for e in entries)
        with within_budget(self):
            try:
                declared, problems = studies.parse(text + tail, {"calibration-gate-aa-20261124-2vcpu"})
            except studies.StudiesError:
                return
        self.assertTrue(all(isinstance(d, studies.Declared) for d in declared))
        self.assertTrue(all(isinstance(w, str) and isinstance(r, str) for w, r in problems))

    @FUZZ
    @given(body=st.one_of(mutated_document(PLAN_DOC).map(dumps), deep.map(str.encode), st.binary(max_size=300)),
           printed=st.one_of(st.text(max_size=200), mutated_document({"status": "running", "pid": 12}).map(
               lambda d: json.dumps(d, allow_nan=True))))
    def test_a_hosts_plan_and_answers_are_documents_or_the_fleet_error(self, body, printed):
        from tools.fleet import hostinput
        path = self.write("plan.json", body)
        with within_budget(self):
            try:
                plan = hostinput.read_plan(path)
                self.assertIsInstance(plan["cells"], list)
            except hostinput.FleetError:
                pass
            try:
                self.assertIsInstance(hostinput.host_json(printed, "status"), dict)
            except hostinput.FleetError:
                pass

    @FUZZ
    @given(body=st.one_of(mutated_document(FLEET_STATE_DOC).map(dumps), deep.map(str.encode), st.binary(max_size=300)))
    def test_a_fleet_state_is_hosts_or_the_fleet_error(self, body):
        from tools.fleet import fleet
        path = self.write("fleet.json", body)
        with within_budget(self):
            try:
                doc = fleet.read_state(path)
            except fleet.FleetError:
                return
        self.assertTrue(all(fleet.HostState(**h) for h in doc["hosts"].values()))

    @FUZZ
    @given(doc=mutated_document(DISTRIBUTION_DOC), runs=st.integers(min_value=1, max_value=4))
    def test_a_recorded_distribution_is_tails_or_the_distribution_error(self, doc, runs):
        from analysis import distributions
        try:
            resultfile.validate(doc)
        except resultfile.ResultError:
            return  # the set reader never hands such a document on
        with within_budget(self):
            try:
                tails = distributions.cell_tails([doc] * runs)
            except distributions.DistributionError:
                return
        for test_tails in tails.values():
            self.assertTrue(all(t.value is None or math.isfinite(t.value) for t in test_tails))


    # Issue 78, row 4: profiles and dumps bounded by what they cost to read, not only by their bytes.
    hostile_profile = st.one_of(
        st.integers(min_value=1, max_value=2_000_000).map(lambda n: "a;" * n + "leaf 1\n"),  # one deep stack
        st.integers(min_value=1, max_value=300_000).map(lambda n: "".join(f"f{i};g 1\n" for i in range(n))),  # wide
        st.integers(min_value=1, max_value=100_000).map(lambda n: "x" * n + " 3\n"),  # a long frame
        st.text(max_size=2000))

    @FUZZ
    @given(text=hostile_profile)
    def test_a_collapsed_profile_is_stacks_or_the_profile_error(self, text):
        from analysis.profiling import profiles
        with within_budget(self, seconds=10.0, peak_bytes=512 << 20):
            try:
                stacks = profiles.parse_collapsed(text)
            except profiles.ProfileError:
                return
        self.assertLessEqual(len(stacks), profiles.MAX_STACKS)
        self.assertTrue(all(len(frames) <= profiles.MAX_STACK_FRAMES for frames in stacks))


if __name__ == "__main__":
    unittest.main()
