"""The sensitivity calibrator on synthetic sets (analysis/testing/testsets.py: real documents, chosen values; mechanics,
not measurements): the figures it writes and the gate reads back, and every refusal, made before resampling."""

import io
import json
import os
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

from analysis import thresholds
from analysis.sensitivity import figures as sensitivity_figures
from analysis.gate import power as gate_power
from analysis.testing.testsets import write_set
from tools.sensitivity import designs, sensitivity


def calibrate(*argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        status = sensitivity.main(list(argv))
    return status, out.getvalue(), err.getvalue()


class SensitivityToolTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.baselines = os.path.join(self.tmp.name, "results", "baselines")
        os.makedirs(self.baselines)
        os.environ["BUILD_WORKSPACE_DIRECTORY"] = self.tmp.name
        os.environ["BUILD_WORKING_DIRECTORY"] = self.tmp.name
        self.aa = write_set(os.path.join(self.baselines, "aa"), [({"arm": "a"}, 1000.0), ({"arm": "b"}, 1000.0)],
                            runs=12, noise=0.01, seed=1)
        self.slow = write_set(os.path.join(self.baselines, "slow"),
                              [({"injected_slowdown_pct": "0"}, 1000.0), ({"injected_slowdown_pct": "5"}, 800.0)],
                              runs=12, noise=0.01, seed=2)

    def test_writes_figures_the_gate_reads(self):
        status, out, err = calibrate("--rig", "calibration", "--from-set", self.aa.path, "--slowdown-set",
                                     self.slow.path, "--draws", "500", "--budget", "10m")
        self.assertEqual(status, 0, err)
        with open(os.path.join(self.aa.path, "sensitivity.json")) as f:
            doc = json.load(f)
        self.assertEqual(doc["schema_version"], 2)
        e = doc["calibration"]["cpu_loop_rate"]
        # 1 % noise per run: paired sd ~1.4 %; the A/A rounds are stored for the gate to run its rule on.
        self.assertAlmostEqual(e["paired_sd"], 0.014, delta=0.007)
        self.assertEqual((e["rule"], len(e["aa_worse_log_ratios"])), (gate_power.RULE, 12))
        self.assertEqual((e["rounds"], e["slowdown_rounds"]), (12, 12))
        self.assertAlmostEqual(e["slowdown"], -0.2, delta=0.02)
        nightly = e["designs"]["nightly"]  # the calibration rig's gated profile: 3..5 rounds, sequential
        self.assertEqual(nightly["describe"], "3..30 rounds, gated")
        self.assertGreaterEqual(nightly["detection_at_d"], 0.95)
        self.assertLessEqual(nightly["false_alarm_rate"], 0.01)
        self.assertEqual(nightly["slowdown_rates"]["REGRESSED"], 1.0)  # a 20 % slowdown, always flagged
        # D is what the rule does: fresh draws (another seed) flag D in ~95 % and a third less rarely.
        design = gate_power.Design(**nightly["design"])
        noise = gate_power.resampled_noise(e["aa_worse_log_ratios"], design, draws=2000, seed=99)
        asked = gate_power.to_log(e["asked_min_effect"], "higher_is_better")
        self.assertGreaterEqual(gate_power.rates(noise, design, asked, "higher_is_better",
                                                 nightly["d_log"])["REGRESSED"], 0.92)
        self.assertLess(gate_power.rates(noise, design, asked, "higher_is_better",
                                         nightly["d_log"] / 3)["REGRESSED"], 0.9)
        self.assertIn("catches >=", out)
        figure = sensitivity_figures.committed(self.baselines, "calibration")["cpu_loop_rate"]
        self.assertEqual(figure.set_name, "aa")
        self.assertTrue(figure.usable)
        status, out, _ = calibrate("--table")
        self.assertEqual(status, 0)
        self.assertIn(f"| calibration `cpu_loop_rate` | nightly (3..30 rounds, gated) | "
                      f"{100 * nightly['d_worse_by']:.1f} % | 3.0 % |", out)

    def test_a_planted_link_at_the_figure_is_replaced_never_written_through(self):
        victim = os.path.join(self.tmp.name, "victim")
        with open(victim, "w") as f:
            f.write("keep")
        for name in ("sensitivity.json.tmp", ".tmp-planted.json"):
            os.symlink(victim, os.path.join(self.aa.path, name))
        status, _, err = calibrate("--rig", "calibration", "--from-set", self.aa.path, "--draws", "100")
        self.assertEqual(status, 0, err)
        with open(victim) as f:
            self.assertEqual(f.read(), "keep")
        self.assertTrue(os.path.isfile(os.path.join(self.aa.path, "sensitivity.json")))

    def test_a_committed_set_is_written_only_when_named(self):
        # The registry's own sets (rig.toml [sensitivity]) read by default: figures printed, the committed
        # folder untouched (issue 41, item 1); named with --from-set, written.
        aa = write_set(os.path.join(self.baselines, "calibration-gate-aa-20261124-2vcpu"),
                       [({"arm": "a"}, 1000.0), ({"arm": "b"}, 1000.0)], runs=10, noise=0.01, seed=3)
        write_set(os.path.join(self.baselines, "calibration-gate-slowdown-20261124-2vcpu"),
                  [({"injected_slowdown_pct": "0"}, 1000.0), ({"injected_slowdown_pct": "5"}, 800.0)],
                  runs=10, noise=0.01, seed=4)
        before = sorted(os.listdir(aa.path))
        status, out, err = calibrate("--rig", "calibration", "--draws", "100", "--budget", "10m")
        self.assertEqual(status, 0, err)
        self.assertIn("catches >=", out)
        self.assertIn("not written: calibration-gate-aa-20261124-2vcpu is a committed set", out)
        self.assertEqual(sorted(os.listdir(aa.path)), before)
        status, out, err = calibrate("--rig", "calibration", "--draws", "100", "--budget", "10m",
                                     "--from-set", "baselines/calibration-gate-aa-20261124-2vcpu")
        self.assertEqual(status, 0, err)
        self.assertTrue(os.path.exists(os.path.join(aa.path, "sensitivity.json")))

    def test_a_set_outside_the_results_folder_gets_no_figures(self):
        # Issue 78, row 7: --from-set baselines/../../.. wrote sensitivity.json outside results/.
        outside = write_set(os.path.join(self.tmp.name, "elsewhere"), [({"arm": "a"}, 1000.0), ({"arm": "b"}, 1000.0)],
                            runs=12, noise=0.01, seed=5)
        for spec in ("baselines/../../elsewhere", outside.path):
            status, _, err = calibrate("--rig", "calibration", "--from-set", spec, "--draws", "100")
            self.assertEqual(status, 2, err)
            self.assertIn("is not under", err)
            self.assertFalse(os.path.exists(os.path.join(outside.path, "sensitivity.json")))

    def test_a_set_name_is_shell_quoted_where_a_command_is_printed_or_stored(self):
        name = "aa;touch PWNED $(id)"
        os.rename(self.aa.path, os.path.join(self.baselines, name))
        status, out, err = calibrate("--rig", "calibration", "--from-set", f"baselines/{name}", "--draws", "100")
        self.assertEqual(status, 0, err)
        with open(os.path.join(self.baselines, name, "sensitivity.json")) as f:
            regenerate = json.load(f)["regenerate"]
        self.assertTrue(regenerate.endswith("--from-set 'baselines/aa;touch PWNED $(id)'"), regenerate)

    def refused(self, *argv, pattern):
        status, _, err = calibrate("--rig", "calibration", "--draws", "100", *argv)
        self.assertEqual(status, 2)
        self.assertRegex(err, pattern)
        self.assertFalse(os.path.exists(os.path.join(self.aa.path, "sensitivity.json")))

    def test_aa_set_mislabelled_as_slowdown(self):
        self.refused("--from-set", self.aa.path, "--slowdown-set", self.aa.path,
                     pattern="an A/A design \\(one build on both sides of 'arm'\\), not a known slowdown")

    def test_slowdown_set_given_as_aa(self):
        self.refused("--from-set", self.slow.path, pattern="do not vary 'arm'")
        two = write_set(os.path.join(self.baselines, "variants"),
                        [({"arm": "a", "variant": "stock"}, 1000.0), ({"arm": "b", "variant": "patched:x"}, 1000.0)],
                        runs=6)
        self.refused("--from-set", two.path, pattern="vary \\['variant'\\] besides 'arm'")

    def test_too_few_rounds(self):
        few = write_set(os.path.join(self.baselines, "few"), [({"arm": "a"}, 1000.0), ({"arm": "b"}, 1000.0)], runs=5)
        self.refused("--from-set", few.path, pattern="5 A/A rounds; need 6")

    def test_metric_not_gated(self):
        self.refused("--from-set", self.aa.path, "--metric", "memory_copy_rate", pattern="does not gate 'memory_copy_rate'")

    def test_budget_shorter_than_a_round(self):
        self.refused("--from-set", self.aa.path, "--budget", "3s", pattern="shorter than one round")
        self.refused("--from-set", self.aa.path, "--budget", "soon", pattern="expected a duration")

    def test_a_corrupt_figure_file_in_the_set_is_refused_and_kept(self):
        path = os.path.join(self.aa.path, "sensitivity.json")
        for text in ("{not json", json.dumps({"kind": "something else"}),
                     json.dumps({"kind": sensitivity_figures.KIND, "schema_version": 1, "calibration": {"x": {}}})):
            with open(path, "w") as f:
                f.write(text)
            status, _, err = calibrate("--rig", "calibration", "--from-set", self.aa.path, "--draws", "100")
            self.assertEqual(status, 2)
            self.assertIn("refusing to overwrite it", err)
            with open(path) as f:
                self.assertEqual(f.read(), text)

    def test_recording_a_rig_that_does_not_build_says_so(self):
        # A stand-in for ./bazelw whose build fails, as a broken rig's would (it records every call).
        calls = os.path.join(self.tmp.name, "calls")
        with open(os.path.join(self.tmp.name, "bazelw"), "w") as f:
            f.write(f'#!/bin/sh\necho "$@" >> {calls}\n[ "$1" = build ] && exit 1\nexit 0\n')
        os.chmod(os.path.join(self.tmp.name, "bazelw"), 0o755)
        status, _, err = calibrate("--rig", "calibration", "--record", "--draws", "100")
        self.assertEqual(status, 2)
        self.assertRegex(err, r"//rigs:calibration_matrix does not build \(bazel build exit 1\)")
        with open(calls) as f:
            self.assertEqual([line.split()[0] for line in f], ["build"])  # nothing recorded after it

    def test_foreign_rig(self):
        yarn = write_set(os.path.join(self.baselines, "yarn"), [({"arm": "a"}, 1.0), ({"arm": "b"}, 1.0)], runs=6,
                         rig="yarn_cps")
        self.refused("--from-set", yarn.path, pattern="is a yarn_cps set, not calibration")
        status, _, err = calibrate("--rig", "nosuch")
        self.assertEqual(status, 2)
        self.assertIn("no such rig", err)


class RegistryTest(unittest.TestCase):
    def test_every_rig_names_committed_sets_that_exist(self):
        here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        for study in designs.load_registry().values():
            for design in (study.aa, study.slowdown):
                if design.get("set"):
                    self.assertTrue(os.path.isfile(os.path.join(here, "results", "baselines", design["set"],
                                                                "manifest.json")), design["set"])


    def test_every_minimum_effect_names_its_source(self):
        # gate.toml records where each minimum effect came from; a sensitivity set it names must be committed.
        import re
        import tomllib
        here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        for name in ("calibration", "mapreduce", "namenode", "redis", "yarn_cps"):
            with open(os.path.join(here, "workloads", name, "gate.toml"), "rb") as f:
                table = tomllib.load(f)
            self.assertEqual(set(table["min_effect"]), set(table.get("min_effect_source", {})), name)
            for text in table["min_effect_source"].values():
                for set_name in re.findall(r"sensitivity set ([\w.-]+)", text):
                    self.assertTrue(os.path.isfile(os.path.join(here, "results", "baselines", set_name,
                                                                "sensitivity.json")), set_name)
            # Companions name metrics the workload declares (the summary pairs them by name).
            with open(os.path.join(here, "workloads", name, "workload.toml"), "rb") as f:
                declared = set(tomllib.load(f)["metrics"])
            companions = thresholds.read_companions(os.path.join(here, "workloads", name, "gate.toml"))
            for companion, of in companions.items():
                self.assertLessEqual({companion, of}, declared, name)
        with tempfile.TemporaryDirectory() as tmp:
            bad = os.path.join(tmp, "gate.toml")
            with open(bad, "w") as f:
                f.write('[companion_of]\nalloc = 3\n')
            with self.assertRaisesRegex(thresholds.ThresholdError, "companion_of.alloc = 3: expected another metric"):
                thresholds.read_companions(bad)


if __name__ == "__main__":
    unittest.main()
