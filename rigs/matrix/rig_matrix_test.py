"""Test behind every rig_matrix target (rigs/defs.bzl).

--mode=dry-run plans every profile of the matrix on this host and checks the plan is printed with an
estimated time. --mode=smoke runs the given profile for real into a temporary results folder and checks
what was stored: a complete manifest, schema-valid results, evidence for every knob of every ok cell, and
a reason for every cell that did not run. With --dockerd, the test first starts a Docker engine of its own
(Debian's docker.io: its own data root and socket, no bridge, no iptables) for executor=docker cells, and
stops it at the end.
"""

import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import unittest

from rich.console import Console

from analysis import profiles, resultsets
from results import resultfile, safeio
from rigs import main as rig_main
from rigs.matrix import runner
from rigs.matrix.cell import processes
from rigs.matrix.knobs import perfrecord

MODE_ARGS, RIG_ARGS = sys.argv[1:sys.argv.index("--")], sys.argv[sys.argv.index("--") + 1:]
MODE = next(a.split("=", 1)[1] for a in MODE_ARGS if a.startswith("--mode="))
PROFILE = next((a.split("=", 1)[1] for a in MODE_ARGS if a.startswith("--profile=")), None)


def run(extra):
    """The rig target as a user runs it: the runner, then the summary (rigs/main.py)."""
    out = io.StringIO()
    code = rig_main.main(RIG_ARGS + extra, console=Console(file=out, width=100))
    return code, out.getvalue()


class Dockerd:
    """A private dockerd: no bridge, no iptables, its own data and exec roots; DOCKER_HOST points at it."""

    def __init__(self):
        self.dockerd = shutil.which("dockerd") or "/usr/sbin/dockerd"
        if not os.path.exists(self.dockerd):
            raise AssertionError("no dockerd: ./bazelw installs Debian's docker.io")
        # Short paths: containerd's socket lives under the exec root (unix socket paths stop at 108 bytes).
        self.root = tempfile.mkdtemp(prefix="tl-dockerd-", dir="/tmp")
        self.socket = f"unix://{self.root}/docker.sock"
        self.log = open(os.path.join(self.root, "dockerd.log"), "w")
        self.proc = subprocess.Popen(
            [self.dockerd, "--data-root", f"{self.root}/data", "--exec-root", f"{self.root}/exec", "--host",
             self.socket, "--pidfile", f"{self.root}/docker.pid", "--bridge", "none", "--iptables=false",
             "--ip6tables=false", "--ip-masq=false", "--userland-proxy=false"],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 60
        while subprocess.run(["docker", "-H", self.socket, "info"], capture_output=True).returncode != 0:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                with open(os.path.join(self.root, "dockerd.log")) as f:
                    raise AssertionError(f"dockerd did not start:\n{f.read()[-3000:]}")
            time.sleep(0.5)
        os.environ["DOCKER_HOST"] = self.socket

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()  # dockerd stops its containers and unmounts its layers
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        # dockerd leaves its network namespace mounted (exec/netns/default): unmount what is under the root.
        with open("/proc/mounts") as f:
            mounts = [line.split()[1] for line in f if line.split()[1].startswith(self.root + "/")]
        for mount in sorted(mounts, key=len, reverse=True):
            subprocess.run(["umount", mount], capture_output=True)
        shutil.rmtree(self.root, ignore_errors=True)


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
        if "--dockerd" in MODE_ARGS:
            dockerd = Dockerd()
            self.addCleanup(dockerd.stop)
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
        stored = resultfile.stored_results(run_dir)
        self.assertEqual(len(stored), len(manifest["order"]))
        ok = 0
        for cell_id, rep in stored:
            doc = resultfile.load_result(resultfile.result_path(run_dir, cell_id, rep))
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
            if params.get("executor") in ("container", "docker"):  # inside its container, on its cpuset
                placed = ev["containers"][ev["role"]]
                marker = {"container": "libpod", "docker": "docker"}[params["executor"]]
                self.assertTrue(placed["cgroups"] and marker in placed["cgroups"][0], placed)
                if placed["cpuset_cpus"]:
                    self.assertEqual(ev["process_status"]["Cpus_allowed_list"], placed["cpuset_cpus"])
            self.assertEqual(doc["provenance"]["host"]["host"]["host_id"], host)
            # A profiled cell (policy.profile): its extra launch's recording and stacks stored as recorded; a
            # native server's by perf, unless this host's perf cannot sample (then missing with that reason).
            profile = doc.get("profile")
            native_problem = perfrecord.problem(perfrecord.binary()) if ev.get("native_program") else ""
            known_answer = any(k["cell_id"] == doc["cell"]["id"] for k in manifest["matrix"].get("known_answers", []))
            if doc["policy"].get("profile") and not known_answer and not native_problem:
                # Where the profiler ran: in an extra launch, or in the timed launch itself (profile_launch=timed).
                self.assertEqual(profile.get("launch"), params.get("profile_launch", "extra"), profile)
            for event in doc["policy"].get("profile", []) if not known_answer else []:
                if native_problem:
                    self.assertEqual(profile.get("missing"), native_problem)
                    continue
                self.assertNotIn("missing", profile, profile.get("missing"))
                recording = profile["perf_script"] if ev.get("native_program") else profile["jfr"]
                for stored in (recording, profile["collapsed"][event]):
                    self.assertEqual(safeio.sha256_of(os.path.join(run_dir, stored["file"])), stored["sha256"])
                if ev.get("native_program"):  # the server's own code, unwound to its main
                    stacks = profiles.read_collapsed(os.path.join(run_dir, profile["collapsed"][event]["file"]))
                    self.assertGreater(sum(n for stack, n in stacks.items() if "main" in stack), 0, stacks)
            # Every server the cell started (a ZooKeeper, a NameNode, redis-server) is gone, its ports free.
            for role, server in ev.get("servers", {}).items():
                self.assertTrue(all(server["ports_freed"].values()), (role, server))
                self.assertFalse(processes.running_with_argv(doc["provenance"]["commands"][role]), role)
        self.assertGreater(ok, 0)
        self.check_profiles(run_dir)

    def check_profiles(self, run_dir):
        """Every comparison of a profiled run has its movers; an injected slowdown (the calibration rig's
        profile_slowdown) shows as the spinning frame, moved, its share within 2 points of the injected one: the
        injected percentage of the loop's samples (the loop thread's share of the process' samples, ~97 %: the
        rest is the JVM's own threads and its start)."""
        for c in profiles.comparisons(resultsets.load_run(run_dir)):
            self.assertTrue(c.rows, c.missing)
            if c.axis == "injected_slowdown_pct" and c.baseline_value == "0":
                top = c.rows[0]
                self.assertEqual(top.frame, "tunelab/rigs/calibration/Calibration.spin", c.rows[:3])
                loop = [profiles.shares(run).get("tunelab/rigs/calibration/Calibration.cpuLoop", 0.0)
                        for run in c.candidate_runs]
                injected = float(c.value) * sum(loop) / len(loop)
                self.assertAlmostEqual(top.change, injected, delta=2.0, msg=f"{top.describe()}; injected {injected:.1f}")
                self.assertTrue(top.moved, top.describe())

if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
