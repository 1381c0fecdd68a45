"""The regression gate on synthetic result sets (analysis/testing/testsets.py: real documents, chosen values): it
passes A/A, fails a 5% slowdown with 5 runs a side, ignores a significant change smaller than the minimum
effect, and refuses unusable input with exit 2. Its Markdown and JUnit XML are checked by content."""

import io
import json
import os
import shutil
import sqlite3
import sys
import tomllib
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout
from xml.etree import ElementTree

import numpy as np

from analysis import resultsets, thresholds
from analysis.testing import golden
from analysis.testing import testsets
from analysis.sensitivity import figures as sensitivity_figures
from analysis.gate import decision as gate_decision
from analysis.gate import power as gate_power
from analysis.testing.testsets import write_set
from tools.gate import gate
from tools.gate import confirm as gate_confirm
from tools.gate import output as gate_output
from results import gaterecord as gate_record

RUNFILES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


# Stands in for a matrix target: prints the folder the way a console wraps it, writes it to --run-info.
FAKE_MATRIX = """import json, sys
info = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--run-info="))
folder = "/results/host/" + "x" * 150
print("results in " + folder[:60] + "\\n" + folder[60:])
if "--no-info" not in sys.argv:
    json.dump({"status": 0, "run_dir": folder, "run_id": "x"}, open(info, "w"))
"""


class RunMatrixTest(unittest.TestCase):
    def test_the_run_folder_comes_from_run_info_never_the_console(self):
        run_dir, status, output = gate_confirm.run_matrix([sys.executable, "-c", FAKE_MATRIX], os.getcwd())
        self.assertEqual((run_dir, status), ("/results/host/" + "x" * 150, 0))
        self.assertIn("results in /results/host/", output)

    def test_no_run_info_is_no_run(self):
        run_dir, _, _ = gate_confirm.run_matrix([sys.executable, "-c", FAKE_MATRIX, "--no-info"], os.getcwd())
        self.assertIsNone(run_dir)
        with self.assertRaisesRegex(gate_confirm.ConfirmError, "started no run"):
            gate_confirm.run_confirmation([sys.executable, "-c", FAKE_MATRIX, "--no-info"], os.getcwd())


class GateTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def sets(self, candidate_level, runs=5, candidate_runs=None, noise=0.005, base_level=1000.0, **candidate_kw):
        cells = lambda level: [({"gc": "g1"}, level), ({"gc": "parallel"}, level * 1.01)]  # noqa: E731
        base = os.path.join(self.dir, "base")
        cand = os.path.join(self.dir, "cand")
        write_set(base, cells(base_level), runs=runs, noise=noise, seed=1,
                  reference=candidate_kw.get("reference"))
        write_set(cand, cells(candidate_level), runs=candidate_runs or runs, noise=noise, seed=2, **candidate_kw)
        return base, cand

    def run_gate(self, base, cand, *extra):
        out, err = io.StringIO(), io.StringIO()
        md, xml = os.path.join(self.dir, "gate.md"), os.path.join(self.dir, "gate.xml")
        with redirect_stdout(out), redirect_stderr(err):
            code = gate.main(["--baseline", base, "--candidate", cand, "--markdown", md, "--junit", xml,
                              "--results-dir", self.dir, *extra])
        return code, out.getvalue() + err.getvalue(), xml

    def test_a_a_passes(self):
        code, out, xml = self.run_gate(*self.sets(1000.0))
        self.assertEqual(code, gate.EXIT_PASS, out)
        self.assertIn("**PASS** (2 checks)", out)  # 2 cells x the one metric the sets measured
        suite = ElementTree.parse(xml).getroot()
        self.assertEqual(suite.get("failures"), "0")

    def test_a_five_percent_slowdown_fails_with_five_runs_a_side(self):
        code, out, xml = self.run_gate(*self.sets(950.0))
        self.assertEqual(code, gate.EXIT_REGRESSED, out)
        self.assertIn("REGRESSED", out)
        suite = ElementTree.parse(xml).getroot()
        failures = [c for c in suite.iter("testcase") if c.find("failure") is not None]
        self.assertEqual(len(failures), 2)
        self.assertRegex(failures[0].find("failure").get("message"), r"regressed by [45]\.\d\d%")

    def test_a_significant_change_below_the_minimum_effect_passes(self):
        # 2% slower with little noise: significant, but under the workload's 3% minimum effect.
        code, out, _ = self.run_gate(*self.sets(980.0, noise=0.001))
        self.assertEqual(code, gate.EXIT_PASS, out)
        code, out, _ = self.run_gate(*self.sets_again(980.0), "--min-effect", "cpu_loop_rate=0.01")
        self.assertEqual(code, gate.EXIT_REGRESSED, out)

    def sets_again(self, level):
        self.tmp.cleanup()
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        return self.sets(level, noise=0.001)

    def write_figure(self, paired_sd, sha256=None, cell=None, schema_version=2):
        """A SYNTHETIC committed sensitivity figure for the calibration rig (not a measurement): 20 A/A rounds
        drawn normal with `paired_sd`, scaled to have exactly that sd."""
        folder = os.path.join(self.dir, "baselines", "calibration-aa")
        os.makedirs(folder)
        rounds = np.random.default_rng(7).standard_normal(20)
        rounds = (rounds - rounds.mean()) / rounds.std(ddof=1) * paired_sd
        entry = {"paired_sd": paired_sd, "mde": 0.1, "design": {"fixed": {"rounds": 5}},
                 "sets": {"aa": "calibration-aa"}, "measured_at": "2026-11-25",
                 "workload": {"sha256": sha256 or testsets.template()["provenance"]["workload"]["sha256"]},
                 "components": {"round_s": 10.0}}
        if schema_version == 2:
            entry.update({"rule": gate_power.RULE, "aa_worse_log_ratios": [float(x) for x in rounds]})
        if cell is not None:
            entry["cell"] = cell
        with open(os.path.join(folder, sensitivity_figures.FILE_NAME), "w") as f:
            json.dump({"kind": sensitivity_figures.KIND, "schema_version": schema_version,
                       "calibration": {"cpu_loop_rate": entry}}, f)

    def stated_d(self, paired_sd, rounds=5):
        """What the gate states for write_figure(paired_sd): its rule run on the same rounds."""
        with open(os.path.join(self.dir, "baselines", "calibration-aa", sensitivity_figures.FILE_NAME)) as f:
            ratios = json.load(f)["calibration"]["cpu_loop_rate"]["aa_worse_log_ratios"]
        design = gate_power.Design(rounds)
        power = gate_power.stated_d(gate_power.resampled_noise(ratios, design), design,
                                    gate_power.to_log(0.03, "higher_is_better"), "higher_is_better")
        return power.d_fraction("higher_is_better")

    def test_a_rig_that_cannot_see_the_asked_effect_says_so_on_the_verdict_line(self):
        base, cand = self.sets(900.0, noise=0.002)  # 10 % worse
        self.write_figure(0.05)  # 5 % paired noise: D ~ 12 % at 5 rounds
        d = self.stated_d(0.05)
        self.assertGreater(d, 0.10)
        code, out, xml = self.run_gate(base, cand)
        # This run is quiet: significantly worse and not shown smaller than the asked 3 %: flagged, below D.
        self.assertEqual(code, gate.EXIT_REGRESSED, out)
        first = out.splitlines()[0]
        self.assertIn(f"cannot see the asked effect: cpu_loop_rate asked 3%, catches >= {d:.1%}", first)
        self.assertIn(f"catches >= {d:.1%} worse at 95 % with 5 rounds (set calibration-aa, 2026-11-25); asked 3%: a "
                      "regression between the two may pass unflagged", " ".join(out.split()))
        suite = ElementTree.parse(xml).getroot()
        props = {p.get("name"): p.get("value") for p in suite.iter("property")}
        self.assertIn("cannot see the asked effect", props["verdict"])
        self.assertIn(f"catches >= {d:.1%}", props["sensitivity.cpu_loop_rate"])
        # A 2 % slowdown the quiet run shows clearly, ruled out as a regression of the asked 3 %: PASS.
        base, cand = self.sets_again(980.0)
        self.write_figure(0.05)
        code, out, _ = self.run_gate(base, cand)
        self.assertEqual(code, gate.EXIT_PASS, out)
        code, out, _ = self.run_gate(base, cand, "--strict")
        self.assertEqual(code, gate.EXIT_UNUSABLE, out)
        self.assertIn("--strict: the gate cannot see the asked minimum effect: ", out)
        self.assertIn("raise the minimum effect in the workload's gate.toml", out)

    def test_a_quiet_rig_is_judged_at_the_asked_effect_and_says_what_it_sees(self):
        base, cand = self.sets(900.0, noise=0.002)
        self.write_figure(0.002, sha256="cd" * 32)
        code, out, _ = self.run_gate(base, cand, "--strict")
        self.assertEqual(code, gate.EXIT_REGRESSED, out)
        self.assertNotIn("judged at the MDE", out)
        self.assertIn(f"cpu_loop_rate: catches >= {self.stated_d(0.002):.1%} worse at 95 % with 5 rounds", out)
        self.assertIn("older than the workload's digest", out)

    def test_a_figure_of_another_cell_is_named_as_a_guide(self):
        base, cand = self.sets(900.0, noise=0.002)
        params = testsets.template()["cell"]["params"]
        self.write_figure(0.002, cell=dict(params, gc="g1", heap="4g", executor="process"))
        code, out, _ = self.run_gate(base, cand)
        self.assertEqual(code, gate.EXIT_REGRESSED, out)
        # The g1 check shares the figure's gc; the parallel one does not; both differ in heap.
        self.assertIn(f"measured on another cell (heap=4g, here {params['heap']}): a guide", out)
        self.assertIn(f"measured on another cell (gc=g1, here parallel, heap=4g, here {params['heap']})", out)

    def test_a_figure_of_the_same_cell_says_nothing_of_cells(self):
        base, cand = self.sets(900.0, noise=0.002)
        self.write_figure(0.002, cell=dict(testsets.template()["cell"]["params"], gc="g1"))
        code, out, _ = self.run_gate(base, cand)
        self.assertEqual(code, gate.EXIT_REGRESSED, out)
        self.assertEqual(out.count("measured on another cell"), 1, out)  # gc=parallel only

    def test_an_improvement_is_not_a_regression(self):
        code, out, _ = self.run_gate(*self.sets(1100.0))
        self.assertEqual(code, gate.EXIT_PASS, out)
        self.assertIn("improved", out)

    def test_too_few_runs_is_inconclusive_never_a_pass(self):
        code, out, xml = self.run_gate(*self.sets(950.0, runs=5, candidate_runs=2))
        self.assertEqual(code, gate.EXIT_INCONCLUSIVE, out)
        self.assertIn("**INCONCLUSIVE** (2 of 2)", out)
        self.assertIn("INCONCLUSIVE: 2 round(s) a side: the rule needs 3", out)
        suite = ElementTree.parse(xml).getroot()
        self.assertEqual((suite.get("failures"), suite.get("skipped")), ("0", "2"))

    def test_a_figure_of_an_older_rule_is_named_and_not_used(self):
        base, cand = self.sets(1000.0)
        self.write_figure(0.05, schema_version=1)
        code, out, _ = self.run_gate(base, cand)
        self.assertEqual(code, gate.EXIT_PASS, out)
        self.assertIn("computed for an older gate rule (schema 1)", " ".join(out.split()))
        self.assertIn("regenerate it: bazel run //tools:sensitivity -- --rig calibration --from-set "
                      "baselines/calibration-aa", " ".join(out.split()))

    def test_mismatched_provenance_is_unusable_input(self):
        code, out, _ = self.run_gate(*self.sets(1000.0, host="another-host"))
        self.assertEqual(code, gate.EXIT_UNUSABLE)
        self.assertIn("mismatched provenance: host", out)
        code, out, _ = self.run_gate(os.path.join(self.dir, "base"), os.path.join(self.dir, "missing"))
        self.assertEqual(code, gate.EXIT_UNUSABLE)

    def test_markdown_and_junit_match_the_golden_file(self):
        # Fixed run-to-run pattern (no random noise): the output is the same on every machine. Regenerate:
        # bazel test //tools/gate:gate_test --test_env=TUNELAB_UPDATE_GOLDEN=$PWD --spawn_strategy=local
        base, cand = self.sets(950.0, noise=None)
        self.write_figure(0.002)  # the sensitivity line of a metric the gate can see at the asked effect
        code, out, xml = self.run_gate(base, cand)
        self.assertEqual(code, gate.EXIT_REGRESSED)
        with open(xml) as f:
            text = out + "\n" + f.read()
        golden.check(self, text, "tools/gate/testdata/golden_gate.txt")
        # Prose lines fit 100 columns (issue 41: 595-character lines); table rows and headings stay whole.
        self.assertEqual([line for line in out.splitlines() if len(line) > gate_output.MARKDOWN_WIDTH
                          and not line.startswith(("|", "#"))], [])

    def run_within(self, accepted, candidate, *extra):
        run = os.path.join(self.dir, f"run-{accepted:g}-{candidate:g}")
        write_set(run, [({"gc": "g1", "revision": "accepted"}, accepted), ({"gc": "g1", "revision": "candidate"},
                                                                          candidate)], runs=5, noise=0.005, seed=3)
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = gate.main(["--run", run, "--axis", "revision", "--results-dir", self.dir, *extra])
        return code, out.getvalue() + err.getvalue()

    def test_a_profiled_run_names_the_frames_that_moved_beside_its_verdict(self):
        # A real profiled run (analysis/testdata/profiled_run): the 20 % injected spin regresses the rate, and
        # the answer says why; a run without profiles (the rest of this class) gets no such lines.
        run = os.path.join(RUNFILES, "analysis", "testdata", "profiled_run", "vm-0035969e", "20261128T191712Z-edcd")
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = gate.main(["--run", run, "--axis", "injected_slowdown_pct", "--results-dir", self.dir])
        self.assertEqual(code, gate.EXIT_REGRESSED, out.getvalue() + err.getvalue())
        self.assertIn("- injected_slowdown_pct: 20 vs 0 (cpu, runs 3/3): Calibration.spin +21.4 points",
                      out.getvalue())
        code, text = self.run_within(1000.0, 1000.0)
        self.assertNotIn("Profiles, the frames that moved", text)

    def test_run_and_axis_swapped_are_named_as_such(self):
        # Issue 41, item 5: `--run revision --axis SET` said only "no result set 'revision'".
        run = os.path.join(self.dir, "swapped-run")
        write_set(run, [({"gc": "g1", "revision": "accepted"}, 1000.0), ({"gc": "g1", "revision": "candidate"}, 990.0)],
                  runs=3, seed=4)
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = gate.main(["--run", "revision", "--axis", run, "--results-dir", self.dir])
        self.assertEqual(code, gate.EXIT_UNUSABLE)
        self.assertIn(f"--run 'revision' is not a run, but --axis '{run}' is one: the two are swapped "
                      f"(--run {run} --axis revision)", " ".join((out.getvalue() + err.getvalue()).split()))

    def test_values_from_results_cannot_write_markdown(self):
        # Issue 39, finding 5: a parameter value with a newline, `|` and HTML wrote its own verdict line and a raw
        # <img onerror> into the gate's Markdown (the exit code stayed 1).
        hostile = "g1\n# tunelab gate: **PASS** (injected)|<img src=x onerror=alert(1)>"
        run = os.path.join(self.dir, "hostile")
        write_set(run, [({"gc": hostile, "revision": "accepted"}, 1000.0), ({"gc": hostile, "revision": "candidate"}, 900.0),
                        ({"gc": "parallel", "revision": "accepted"}, 1000.0),
                        ({"gc": "parallel", "revision": "candidate"}, 1000.0)], runs=5, noise=0.005, seed=3)
        md_path = os.path.join(self.dir, "gate.md")
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            code = gate.main(["--run", run, "--axis", "revision", "--results-dir", self.dir, "--markdown", md_path])
        self.assertEqual(code, gate.EXIT_REGRESSED)
        with open(md_path) as f:
            text = f.read()
        self.assertEqual([line for line in text.splitlines() if line.startswith("# ")][0][:26],
                         "# tunelab gate: **REGRESSE")
        self.assertNotIn("<img", text)
        self.assertIn("&lt;img", text)
        table = [line for line in text.splitlines() if line.startswith("| ")][2:]
        self.assertTrue(table and all(line.count(" | ") == 9 for line in table), table)  # 10 columns, no more

    def test_within_one_run_a_a_passes_and_a_slowdown_fails(self):
        code, out = self.run_within(1000.0, 1000.0, "--baseline-value", "accepted")
        self.assertEqual(code, gate.EXIT_PASS, out)
        self.assertIn("revision=accepted", out)
        code, out = self.run_within(1000.0, 950.0)  # the first value seen is the baseline by default
        self.assertEqual(code, gate.EXIT_REGRESSED, out)
        self.assertNotIn("WARNING", out)  # one run: same host, same day, nothing to warn about

    def test_a_recorded_verdict_is_kept_beside_the_run_and_indexed(self):
        # Issue 83: --record keeps the verdict as a document (gate.json) beside the judged run, then its rows; the
        # same comparison judged again replaces its entry; a committed set is never written.
        root = os.path.join(self.dir, "recorded")
        run = os.path.join(root, "vm-test", "20261207T000000Z-abcd")
        os.makedirs(os.path.dirname(run))
        write_set(run, [({"gc": "g1", "revision": "accepted"}, 1000.0), ({"gc": "g1", "revision": "candidate"}, 950.0)],
                  runs=5, noise=0.003, seed=4)
        argv = ["--run", run, "--axis", "revision", "--results-dir", root, "--record"]
        for _ in range(2):
            err = io.StringIO()
            with redirect_stdout(io.StringIO()), redirect_stderr(err):
                self.assertEqual(gate.main(argv), gate.EXIT_REGRESSED)
            self.assertIn("indexed in sqlite:///", err.getvalue())
        (entry,) = gate_record.read(run)
        self.assertEqual((entry["axis"], entry["state"], entry["against"]), ("revision", "REGRESSED", None))
        (check,) = entry["checks"]
        self.assertAlmostEqual(check["worse_by"], 0.05, delta=0.01)
        database = sqlite3.connect(os.path.join(root, ".db", "tunelab.sqlite"))
        try:
            rows = database.execute("SELECT verdict, metric, state, worse_by FROM gate_verdicts").fetchall()
        finally:
            database.close()
        self.assertEqual(rows, [("REGRESSED", "cpu_loop_rate", "REGRESSED", check["worse_by"])])
        committed = os.path.join(root, "baselines", "some-set")
        shutil.copytree(run, committed)
        os.remove(os.path.join(committed, "gate.json"))
        err = io.StringIO()
        with redirect_stdout(io.StringIO()), redirect_stderr(err):
            gate.main(["--run", committed, "--axis", "revision", "--results-dir", root, "--record"])
        self.assertIn("a committed set is never written", err.getvalue())
        self.assertFalse(os.path.exists(os.path.join(committed, "gate.json")))
        # A gate.json that is not one is refused by the indexer, named; the run's results stay indexed.
        with open(os.path.join(run, "gate.json"), "w") as f:
            json.dump({"kind": "tunelab.gate_verdicts", "schema_version": 1, "verdicts": [{"axis": "x"}]}, f)
        with self.assertRaisesRegex(gate_record.RecordError, "does not match gate_verdicts.v1"):
            gate_record.read(run)

    def sequential_run(self, candidate, rounds=3, design=None):
        """A run of a sequential policy (3..8 rounds) that stopped after `rounds` rounds: the manifest's
        sequential block names the design; the rounds after it were not run."""
        run = os.path.join(self.dir, f"seq-{candidate:g}-{rounds}-{'design' if design else 'ok'}")
        write_set(run, [({"gc": "g1", "revision": "accepted"}, 1000.0), ({"gc": "g1", "revision": "candidate"},
                                                                         candidate)], runs=5, noise=0.003, seed=4)
        for name in os.listdir(os.path.join(run, "cells")):
            if int(name.rsplit(".r", 1)[1].split(".")[0]) >= rounds:
                os.remove(os.path.join(run, "cells", name))
        with open(os.path.join(run, "manifest.json")) as f:
            manifest = json.load(f)
        manifest["sequential"] = design or {"min": 3, "max": 8, "family": 1, "rounds": rounds, "comparisons": [
            {"axis": "revision", "baseline_value": "accepted", "value": "candidate", "baseline": "0" * 12,
             "candidate": "0" * 11 + "1", "metric": "cpu_loop_rate", "min_effect": 0.03, "look": None,
             "reason": "a claim the gate does not read"}]}
        for cell in manifest["cells"]:
            cell["repetitions"] = {str(r): "ok" if r < rounds else "not_needed" for r in range(5)}
        with open(os.path.join(run, "manifest.json"), "w") as f:
            json.dump(manifest, f)
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = gate.main(["--run", run, "--axis", "revision", "--results-dir", self.dir])
        return code, out.getvalue() + err.getvalue()

    def test_a_sequential_run_is_judged_by_the_look_it_stopped_at(self):
        code, out = self.sequential_run(500.0)
        self.assertEqual(code, gate.EXIT_REGRESSED, out)
        self.assertIn("REGRESSED (decided at round 3: different)", out)
        self.assertIn("Sequential run", " ".join(out.split()))
        code, out = self.sequential_run(1000.0)
        self.assertEqual(code, gate.EXIT_PASS, out)
        self.assertIn("pass (decided at round 3: equivalent)", out)
        # 1 % slower with a 3 % minimum effect and 0.3 % noise: inside the band, equivalent, not a regression.
        code, out = self.sequential_run(990.0)
        self.assertEqual(code, gate.EXIT_PASS, out)
        self.assertIn("decided at round 3: equivalent", out)
        # A design the gate cannot trust is unusable input, never a pass.
        code, out = self.sequential_run(500.0, design={"min": 2, "max": 8, "family": 1, "rounds": 3,
                                                       "comparisons": []})
        self.assertEqual(code, gate.EXIT_UNUSABLE, out)

    def test_a_gated_night_decides_on_its_gated_metrics_and_watches_the_rest(self):
        # A real night (Redis' gated nightly, 2026-12-07, A/A): GET and SET decided PASS at round 18; its tail
        # latencies (paired sd up to 60 %) stayed INCONCLUSIVE at 5 %. Watched, they do not keep the night
        # undecided; a watched REGRESSED would still fail it.
        results = os.path.join(RUNFILES, "results")
        night = os.path.join(results, "baselines", "redis-nightly-gated-20261207-2vcpu")
        out = io.StringIO()
        with redirect_stdout(out), redirect_stderr(io.StringIO()):
            code = gate.main(["--run", night, "--axis", "revision", "--baseline-value", "accepted",
                              "--results-dir", results])
        text = out.getvalue()
        self.assertEqual(code, gate.EXIT_PASS, text)
        self.assertRegex(text.splitlines()[0], r"^# tunelab gate: \*\*PASS\*\* \(2 checks\); watched, not deciding: 9 "
                                              r"\(\d PASS, [1-9] INCONCLUSIVE\)")
        state, checks = gate.judge_within_run(night, "revision", "accepted", "candidate", results, RUNFILES)
        deciding = sorted(c.metric for c in checks if not c.watched)
        self.assertEqual((state, deciding), ("PASS", ["get_rate", "set_rate"]))
        watched = [c for c in checks if c.watched]
        self.assertTrue(any(c.inconclusive for c in watched))
        self.assertTrue(all("(watched: the run decides on its gated metrics)" in c.status for c in watched))
        watched[0].state = gate_decision.REGRESSED  # a companion shown worse still fails the night
        self.assertEqual(gate.exit_status(checks), gate.EXIT_REGRESSED)
        for c in checks:  # and a fixed run (nothing watched) is undecided by any of them
            c.watched, c.state = False, (gate_decision.INCONCLUSIVE if c in watched else c.state)
        self.assertEqual(gate.exit_status(checks), gate.EXIT_INCONCLUSIVE)

    def test_a_sequential_block_written_over_a_fixed_run_cannot_hide_its_later_rounds(self):
        # Issue 39, finding 2: ten rounds, the candidate 20 % slower from round 4 on. Without a sequential block the
        # gate exits 1; with {min 3, max 10} written into the manifest it said "decided at round 3: equivalent".
        run = os.path.join(self.dir, "forged")
        write_set(run, [({"gc": "g1", "revision": "accepted"}, 1000.0), ({"gc": "g1", "revision": "candidate"},
                                                                         1000.0)], runs=10, noise=0.003, seed=4)
        for name in os.listdir(os.path.join(run, "cells")):
            path = os.path.join(run, "cells", name)
            with open(path) as f:
                doc = json.load(f)
            if doc["cell"]["params"]["revision"] == "candidate" and doc["cell"]["repetition"] >= 3:
                for sample in doc["samples"]:
                    sample["value"] *= 0.8
                with open(path, "w") as f:
                    json.dump(doc, f)
        argv = ["--run", run, "--axis", "revision", "--results-dir", self.dir]
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            self.assertEqual(gate.main(argv), gate.EXIT_REGRESSED)
        with open(os.path.join(run, "manifest.json")) as f:
            manifest = json.load(f)
        for rounds in (3, None):  # the stop it claims, and none at all
            manifest["sequential"] = {"min": 3, "max": 10, "family": 1, "rounds": 10, "comparisons": [
                {"axis": "revision", "baseline_value": "accepted", "value": "candidate", "baseline": "0" * 12,
                 "candidate": "0" * 11 + "1", "metric": "cpu_loop_rate", "min_effect": 0.03,
                 "look": {"rounds": rounds} if rounds else None, "reason": "forged"}]}
            with open(os.path.join(run, "manifest.json"), "w") as f:
                json.dump(manifest, f)
            out, err = io.StringIO(), io.StringIO()
            with redirect_stdout(out), redirect_stderr(err):
                code = gate.main(argv)
            self.assertEqual(code, gate.EXIT_UNUSABLE, out.getvalue())
            self.assertIn("000000000001 holds 10 rounds, but its design stops cpu_loop_rate at round 3", err.getvalue())
        manifest["sequential"]["max"] = 1000  # a replay that allocates by max: refused before it starts
        with open(os.path.join(run, "manifest.json"), "w") as f:
            json.dump(manifest, f)
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            self.assertEqual(gate.main(argv), gate.EXIT_UNUSABLE)

    def test_rounds_deleted_from_a_run_are_refused_by_name(self):
        # Issue 58, row 5: rounds r3-r9 deleted from a complete run whose manifest lists 10 passed the gate.
        run = os.path.join(self.dir, "cherry-picked")
        write_set(run, [({"gc": "g1", "revision": "accepted"}, 1000.0), ({"gc": "g1", "revision": "candidate"},
                                                                         1000.0)], runs=10, noise=0.003, seed=4)
        argv = ["--run", run, "--axis", "revision", "--results-dir", self.dir]
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            self.assertEqual(gate.main(argv), gate.EXIT_PASS)
        for rep in range(3, 10):
            os.remove(os.path.join(run, "cells", f"{1:012x}.r{rep}.json"))
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            self.assertEqual(gate.main(argv), gate.EXIT_UNUSABLE)
        self.assertIn("is not whole: 7 round(s) missing: 000000000001 r3, 000000000001 r4", err.getvalue())
        # A round its manifest does not list (a result copied in) is refused too, in the stored-sets form.
        base, cand = self.sets(1000.0)
        with open(os.path.join(cand, "cells", f"{0:012x}.r0.json")) as f:
            doc = json.load(f)
        doc["cell"]["repetition"] = 7
        doc["started_at"] = "2026-11-22T00:00:00.000+00:00"
        with open(os.path.join(cand, "cells", f"{0:012x}.r7.json"), "w") as f:
            json.dump(doc, f)
        code, out, _ = self.run_gate(base, cand)
        self.assertEqual(code, gate.EXIT_UNUSABLE, out)
        self.assertIn("1 round(s) not in its manifest: 000000000000 r7", out)

    def test_within_one_run_refuses_a_missing_value(self):
        code, out = self.run_within(1000.0, 950.0, "--baseline-value", "nightly-7")
        self.assertEqual(code, gate.EXIT_UNUSABLE)
        self.assertIn("no value 'nightly-7' (values: accepted, candidate)", out)

    def test_the_confirmation_rerun_targets_the_regressed_cell_only(self):
        base, cand = self.sets(950.0)
        candidate = resultsets.load_run(cand)
        checks = gate_decision.gate(resultsets.load_run(base), candidate, {"cpu_loop_rate": 0.03})
        argv = gate_confirm.confirm_command(candidate, checks[0], RUNFILES)
        self.assertEqual(argv[:5], ["bazel", "run", "//rigs:calibration_matrix", "--", "--profile=smoke"])
        sets = [a.split("=", 1)[1] for a in argv if a.startswith("--set=")]
        self.assertIn("gc=g1", sets)  # the regressed cell's own values, every one of them
        self.assertEqual(len(sets), len(checks[0].params))
        self.assertEqual(argv[-1], "--no-next-steps")

    def test_the_confirmation_takes_only_axis_names_from_the_candidate(self):
        # Issue 58, row 6: a parameter named policy.measure_s became --set=policy.measure_s=604800.
        base, cand = self.sets(950.0)
        candidate = resultsets.load_run(cand)
        check = gate_decision.gate(resultsets.load_run(base), candidate, {"cpu_loop_rate": 0.03})[0]
        for name in ("policy.measure_s", "--x", "Gc", "a b"):
            with self.subTest(name=name):
                check.params = {name: "604800"}
                with self.assertRaisesRegex(gate_confirm.ConfirmError, "is not an axis name"):
                    gate_confirm.confirm_command(candidate, check, RUNFILES)

    def test_the_confirmation_runs_only_this_checkouts_matrix_targets(self):
        # The target comes from result data: a set naming another command is refused, nothing runs.
        base, cand = self.sets(950.0)
        candidate = resultsets.load_run(cand)
        checks = gate_decision.gate(resultsets.load_run(base), candidate, {"cpu_loop_rate": 0.03})
        self.assertIn("//rigs:yarn_cps_matrix", gate_confirm.matrix_targets(RUNFILES))
        for target in ("//tools:fleet", "@evil//:x", "--run_under=/bin/sh"):
            candidate.docs[0]["provenance"]["bazel_target"] = target
            with self.subTest(target=target):
                with self.assertRaisesRegex(gate_confirm.ConfirmError, "not a matrix target of this checkout"):
                    gate_confirm.confirm_command(candidate, checks[0], RUNFILES)
        candidate.docs[0]["provenance"]["bazel_target"] = "//rigs:calibration_matrix"
        checks[0].params["gc"] = "g1 --run_under=x"
        with self.assertRaisesRegex(gate_confirm.ConfirmError, "not a profile or axis value"):
            gate_confirm.confirm_command(candidate, checks[0], RUNFILES)

    def test_nothing_unusable_passes_and_only_a_regression_exits_1(self):
        base, cand = self.sets(500.0)  # a 50 % slowdown
        bad_options = (["--min-runs", "0"], ["--min-runs", "2"], ["--min-effect", "cpu_loop_rate=nan"],
                       ["--min-effect", "cpu_loop_rate=inf"], ["--min-effect", "cpu_loop_rate=1.5"],
                       ["--min-effect", "cpu_loop_rate=0"], ["--min-effect", "=0.1"])
        for extra in bad_options:
            with self.subTest(extra=extra):
                try:
                    code, out, _ = self.run_gate(base, cand, *extra)
                except SystemExit as e:  # argparse's own refusal
                    code, out = e.code, ""
                self.assertEqual(code, gate.EXIT_UNUSABLE, out)
        # An unexpected error is unusable input (2) with a traceback log, never "regressed" (1).
        real = gate_decision.gate
        gate_decision.gate = lambda *a, **kw: {}["boom"]
        try:
            code, out, _ = self.run_gate(base, cand)
        finally:
            gate_decision.gate = real
        self.assertEqual(code, gate.EXIT_UNUSABLE, out)
        log = out.split("traceback in ")[1].split()[0]
        with open(log) as f:
            self.assertIn("KeyError: 'boom'", f.read())
        os.unlink(log)

    def test_a_zero_baseline_is_unusable_input(self):
        code, out, _ = self.run_gate(*self.sets(1000.0, base_level=0.0))
        self.assertEqual(code, gate.EXIT_UNUSABLE, out)
        self.assertIn("baseline median is 0", out)

    def test_a_non_finite_host_reference_is_refused_not_ignored(self):
        # Before: NaN in a manifest's host reference turned the drift refusal off silently.
        base, cand = self.sets(1000.0, reference=5e8)
        with open(os.path.join(base, "manifest.json")) as f:
            manifest = json.load(f)
        manifest["host_reference"] = {"probe": "p", "measurements": [
            {"when": "before", "metric": "cpu_loop_rate", "unit": "ops/s", "median": float("nan"), "samples": []}]}
        with open(os.path.join(base, "manifest.json"), "w") as f:
            json.dump(manifest, f)  # allow_nan: writes NaN as Python does
        code, out, _ = self.run_gate(base, cand)
        self.assertEqual(code, gate.EXIT_UNUSABLE, out)
        self.assertIn("NaN", out)

    def test_a_published_reference_with_impossible_figures_is_refused(self):
        with open(os.path.join(RUNFILES, "results", "reference", "case000_yarn_cps.json")) as f:
            good = json.load(f)
        level = next(i for i, fig in enumerate(good["figures"]) if fig.get("kind", "level") == "level")
        for value, why in ((float("nan"), "NaN"), (float("inf"), "Infinity"), (-5.0, "negative")):
            doc = json.loads(json.dumps(good))
            doc["figures"][level]["value"] = value
            path = os.path.join(self.dir, "ref.json")
            with open(path, "w") as f:
                json.dump(doc, f)
            with self.subTest(value=value):
                with self.assertRaisesRegex(resultsets.ResultSetError, why):
                    resultsets.load_reference(path)
        self.assertEqual(resultsets.load_reference(os.path.join(
            RUNFILES, "results", "reference", "case000_yarn_cps.json")).reference["id"], "case000_yarn_cps")

    def test_the_gate_flags_host_drift_instead_of_failing_the_candidate(self):
        # analysis/testdata/drift/: two recorded calibration runs, the second with the host loaded by two
        # competing CPU spinners, so its host reference reads slower.
        drift_sets = os.path.join(RUNFILES, "analysis", "testdata", "drift")

        def run_gate(*extra):
            out = io.StringIO()
            with redirect_stdout(out), redirect_stderr(out):
                code = gate.main(["--baseline", os.path.join(drift_sets, "quiet"), "--candidate",
                                  os.path.join(drift_sets, "loaded"), "--results-dir", drift_sets, *extra])
            return code, out.getvalue()
        code, out = run_gate()
        self.assertEqual(code, gate.EXIT_UNUSABLE, out)
        self.assertIn("the host drifted between the two sets: host reference cpu_loop_rate", out)
        code, out = run_gate("--allow-host-drift")
        self.assertIn(code, (gate.EXIT_PASS, gate.EXIT_REGRESSED, gate.EXIT_INCONCLUSIVE))
        self.assertIn("WARNING: host drift allowed: host reference cpu_loop_rate", out)

    def test_minimum_effects_come_from_the_workloads_gate_files(self):
        doc = {"provenance": {"workload": {"id": "yarn_cps/v1"}}}
        # Not part of the workload's digest: workload.toml holds no threshold, gate.toml does.
        with open(os.path.join(RUNFILES, "workloads", "yarn_cps", "gate.toml"), "rb") as f:
            declared = tomllib.load(f)["min_effect"]["container_allocation_rate"]
        self.assertEqual(thresholds.min_effects([RUNFILES], [doc])["container_allocation_rate"], declared)
        # A workload without a gate file falls back to the gate's default, not to yarn_cps's.
        other = {"provenance": {"workload": {"id": "no_such_workload/v1"}}}
        self.assertNotIn("container_allocation_rate", thresholds.min_effects([RUNFILES], [other]))


if __name__ == "__main__":
    unittest.main()
