"""Test behind every rig_matrix target (rigs/defs.bzl).

--mode=dry-run plans every profile of the matrix on this host and checks the plan is printed with an
estimated time. --mode=smoke runs the given profile for real into a temporary results folder and checks
what was stored: a complete manifest, schema-valid results, evidence for every knob of every ok cell, and
a reason for every cell that did not run.
"""

import io
import json
import os
import sys
import tomllib
import unittest

from rich.console import Console

from results import resultfile as results
from rigs import main as rig_main
from rigs.matrix import runner

MODE_ARGS, RIG_ARGS = sys.argv[1:sys.argv.index("--")], sys.argv[sys.argv.index("--") + 1:]
MODE = next(a.split("=", 1)[1] for a in MODE_ARGS if a.startswith("--mode="))
PROFILE = next((a.split("=", 1)[1] for a in MODE_ARGS if a.startswith("--profile=")), None)


def run(extra):
    """The rig target as a user runs it: the runner, then the summary (rigs/main.py)."""
    out = io.StringIO()
    code = rig_main.main(RIG_ARGS + extra, console=Console(file=out, width=100))
    return code, out.getvalue()


def matrix_path():
    return next(a.split("=", 1)[1] for a in RIG_ARGS if a.startswith("--matrix="))


class RigMatrixTest(unittest.TestCase):
    @unittest.skipUnless(MODE == "dry-run", "dry-run mode")
    def test_every_profile_plans(self):
        with open(matrix_path(), "rb") as f:
            profiles = [None] + sorted(tomllib.load(f).get("profiles", {}))
        for profile in profiles:
            extra = ["--dry-run", "--no-gc-probes"] + (["--profile", profile] if profile else [])
            code, out = run(extra)
            self.assertEqual(code, 0, f"profile {profile}:\n{out}")
            self.assertIn("estimated time", out, out)

    @unittest.skipUnless(MODE == "smoke", "smoke mode")
    def test_smoke_profile_runs_and_proves_its_knobs(self):
        tmp = os.environ["TEST_TMPDIR"]
        results_dir = os.path.join(tmp, "results")
        code, out = run(["--profile", PROFILE, "--results-dir", results_dir,
                         "--state-dir", os.path.join(tmp, "state")])
        print(out)
        self.assertEqual(code, runner.EXIT_OK, out)
        (host,) = os.listdir(results_dir)
        (run_id,) = os.listdir(os.path.join(results_dir, host))
        run_dir = os.path.join(results_dir, host, run_id)
        with open(os.path.join(run_dir, "manifest.json")) as f:
            manifest = json.load(f)
        self.assertEqual(manifest["state"], "complete")
        # The host reference was measured before and after, and the summary ended the output.
        self.assertEqual({m["when"] for m in manifest["host_reference"]["measurements"]}, {"before", "after"})
        self.assertIn("host reference: cpu_loop_rate", out)
        self.assertTrue(all(len(line) <= 100 for line in out.splitlines()), out)
        stored = results.stored_results(run_dir)
        self.assertEqual(len(stored), len(manifest["order"]))
        ok = 0
        for cell_id, rep in stored:
            doc = results.load_result(results.result_path(run_dir, cell_id, rep))
            params = doc["cell"]["params"]
            if doc["status"] == "skipped":
                self.assertTrue(doc["reason"])
                continue
            self.assertEqual(doc["status"], "ok", doc.get("reason"))
            ok += 1
            ev = doc["evidence"]
            if ev.get("native_program"):  # a native server under test (Redis): the program it ran, proven
                self.assertRegex(ev["executable"]["sha256"], "^[0-9a-f]{64}$")
                self.assertEqual(params["jdk"], "none")
            else:
                gc_flag = {"g1": "UseG1GC", "parallel": "UseParallelGC", "serial": "UseSerialGC",
                           "cms": "UseConcMarkSweepGC"}[params["gc"]]
                self.assertIs(ev["vm_flags"][gc_flag], True)
            self.assertTrue(doc["samples"] and doc["metrics"])
            self.assertTrue(all(s["t"] >= 0 for s in doc["warmup_samples"] + doc["samples"]))
            for thread in ev.get("threads", []):
                self.assertEqual(thread["cpus_allowed"], thread["wanted"], thread)
            if params.get("executor") == "container":  # ran inside its container, on the container's cpuset
                placed = ev["containers"][ev["role"]]
                self.assertTrue(placed["cgroups"] and "libpod" in placed["cgroups"][0], placed)
                if placed["cpuset_cpus"]:
                    self.assertEqual(ev["process_status"]["Cpus_allowed_list"], placed["cpuset_cpus"])
            self.assertEqual(doc["provenance"]["host"]["host"]["host_id"], host)
        self.assertGreater(ok, 0)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
