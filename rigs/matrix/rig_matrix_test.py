"""Test behind every rig_matrix target (rigs/defs.bzl).

--mode=dry-run plans every profile of the matrix on this host and checks the plan is printed with an
estimated time. --mode=smoke runs the given profile for real into a temporary results folder and checks
what was stored: a complete manifest, schema-valid results, evidence for every knob of every ok cell, and
a reason for every cell that did not run. With --dockerd, the test first starts a Docker engine of its own
(Debian's docker.io: its own data root and socket, no bridge, no iptables) for executor=docker cells, and
stops it at the end. With --prometheus, the run is watched (--metrics-port) by Debian's Prometheus, which the
test starts on loopback and reads back through its HTTP API: every cell that ran with its labels, a CPU rate
that moved, the host's steal (issue 63).
"""

import glob
import io
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import tomllib
import urllib.parse
import urllib.request
import unittest

from rich.console import Console

from analysis import resultsets
from analysis.profiling import profiles
from results import resultfile, safeio
from rigs import main as rig_main
from rigs.matrix import runner
from rigs.matrix.cell import processes
from rigs.matrix.knobs import perfrecord
from rigs.matrix.testing.localserver import LocalServer, find_binary, free_port

MODE_ARGS, RIG_ARGS = sys.argv[1:sys.argv.index("--")], sys.argv[sys.argv.index("--") + 1:]
MODE = next(a.split("=", 1)[1] for a in MODE_ARGS if a.startswith("--mode="))
PROFILE = next((a.split("=", 1)[1] for a in MODE_ARGS if a.startswith("--profile=")), None)
SETS = [w for a in MODE_ARGS if a.startswith("--set=") for w in ("--set", a.split("=", 1)[1])]  # rig_matrix's smoke_sets


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


class Prometheus:
    """Debian's Prometheus (./bazelw installs it) on loopback, scraping `target` every second, its data in a
    folder of the test's."""

    def __init__(self, target, root):
        binary = find_binary("prometheus", "prometheus")
        self.port = free_port()
        config = os.path.join(root, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n  - job_name: tunelab\n"
                    f"    static_configs:\n      - targets: ['{target}']\n")
        self.server = LocalServer(
            "prometheus", [binary, f"--config.file={config}", f"--storage.tsdb.path={root}/data",
                           f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            root, f"http://127.0.0.1:{self.port}/-/ready", 200)

    def series(self, query, start, end):
        """[(labels, [values])] of a range query over [start, end], one point a second."""
        url = (f"http://127.0.0.1:{self.port}/api/v1/query_range?" +
               urllib.parse.urlencode({"query": query, "start": start, "end": end, "step": 1}))
        with urllib.request.urlopen(url, timeout=30) as r:
            answer = json.load(r)
        if answer.get("status") != "success":
            raise AssertionError(f"{query}: {answer}")
        return [(s["metric"], [float(v) for _, v in s["values"]]) for s in answer["data"]["result"]]

    def stop(self):
        self.server.stop()


def processes_in(folder):
    """[(pid, why)] of the processes whose working folder is in `folder` or whose command line names it."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if cwd == folder or cwd.startswith(folder + "/") or folder in cmdline:
            found.append((int(pid), cmdline[:200]))
    return found


# Failures of upstream code this test keeps out of its all-ok assertion, each matched on its exact line in the
# failed cell's own logs and only in the cells named (issue 80: a flake in a 60-minute CI costs an hour). Said
# in the test's output when seen; anything else a cell fails with still fails the test.
KNOWN_UPSTREAM_FAILURES = [
    # Stock SLS 3.3.5's MockAMLauncher.handle looks the AM simulator up in appIdAMSim, which the submitting thread
    # fills only after submitApplication returns: an AM launch event that comes first throws (seen once in CI's
    # room under load, 2026-11-28; never on 3.4.2, whose launcher waits for it).
    ({"hadoop": "3.3.5"}, re.compile(r"org\.apache\.hadoop\.yarn\.exceptions\.YarnRuntimeException: Didn't find any "
                                     r"AMSimulator for applicationId=application_\d+_\d+"),
     "SLS 3.3.5's AM-launch race (MockAMLauncher.handle before appIdAMSim is filled)"),
]


def known_upstream_failures(results_dir):
    """[(cell id, why)] of the failed cells whose failure is a KNOWN_UPSTREAM_FAILURES line in their logs."""
    found = []
    for run_dir in glob.glob(os.path.join(results_dir, "*", "*")):
        for cell_id, rep in resultfile.stored_results(run_dir):
            doc = resultfile.load_result(resultfile.result_path(run_dir, cell_id, rep))
            if doc["status"] != "failed":
                continue
            for axes, line, why in KNOWN_UPSTREAM_FAILURES:
                if any(str(doc["cell"]["params"].get(k)) != v for k, v in axes.items()):
                    continue
                for log in (doc.get("logs") or {}).values():
                    path = log if os.path.isabs(log) else os.path.join(run_dir, log)
                    try:
                        with open(path, errors="replace") as f:
                            if any(line.search(text) for text in f):
                                found.append((cell_id, why))
                                break
                    except OSError:
                        continue
    return found


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
            self.assertIn("estimated time", " ".join(out.split()), out)  # the console wraps long lines

    @unittest.skipUnless(MODE == "smoke", "smoke mode")
    def test_smoke_profile_runs_and_proves_its_knobs(self):
        if "--dockerd" in MODE_ARGS:
            dockerd = Dockerd()
            self.addCleanup(dockerd.stop)
        tmp = os.environ["TEST_TMPDIR"]
        results_dir = os.path.join(tmp, "results")
        watched, prometheus = [], None
        if "--prometheus" in MODE_ARGS:
            port = free_port()
            prometheus = Prometheus(f"127.0.0.1:{port}", tempfile.mkdtemp(dir=tmp))
            self.addCleanup(prometheus.stop)
            watched = ["--metrics-port", str(port)]
        started = time.time()
        # The host reference is one probe whatever the rig: one smoke test measures it (rig_matrix's
        # smoke_host_reference), the others skip its ~20 s (issue 80).
        reference = [] if "--host-reference" in MODE_ARGS else ["--no-host-reference"]
        code, out = run(["--profile", PROFILE, "--results-dir", results_dir,
                         "--state-dir", os.path.join(tmp, "state")] + SETS + watched + reference)
        print(out)
        known = known_upstream_failures(results_dir)
        for cell, why in known:
            print(f"known upstream failure, not this change's: cell {cell}: {why}")
        self.assertEqual(code, runner.EXIT_CELLS_FAILED if known else runner.EXIT_OK, out)
        if prometheus:
            self.check_watched(prometheus, results_dir, started, time.time(), out)
        (host,) = [h for h in os.listdir(results_dir) if not h.startswith(".")]  # .db: the results database
        (run_id,) = os.listdir(os.path.join(results_dir, host))
        run_dir = os.path.join(results_dir, host, run_id)
        with open(os.path.join(run_dir, "manifest.json")) as f:
            manifest = json.load(f)
        self.assertEqual(manifest["state"], "complete")
        # The run indexed itself in the results database beside it (issue 83), every result of it.
        database = sqlite3.connect(f"file:{os.path.join(results_dir, '.db', 'tunelab.sqlite')}?mode=ro", uri=True)
        try:
            indexed = database.execute("SELECT count(*) FROM results JOIN cells ON cells.id = results.cell JOIN runs "
                                       "ON runs.id = cells.run WHERE runs.run_id = ?", (run_id,)).fetchone()[0]
        finally:
            database.close()
        self.assertEqual(indexed, len(resultfile.stored_results(run_dir)), out[-2000:])
        # The host reference was measured before and after (or, not asked for, is absent), and the summary
        # ended the output.
        if reference:
            self.assertIsNone(manifest.get("host_reference"))
            self.assertIn("host reference: none recorded", out)
        else:
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
            if any(cell == doc["cell"]["id"] for cell, _ in known):
                continue
            self.assertEqual(doc["status"], "ok", doc.get("reason"))
            ok += 1
            # The launch's monitors: the host once a second and at its end (issue 63), in every result.
            monitors = doc["monitors"]
            self.assertTrue(monitors["t"] and "host_load1" in monitors["series"], monitors)
            self.assertFalse(monitors.get("problem"), monitors.get("problem"))
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
            self.check_cell_profile(doc, manifest, run_dir)
            # Every server the cell started (a ZooKeeper, a NameNode, redis-server) is gone, its ports free.
            for role, server in ev.get("servers", {}).items():
                self.assertTrue(all(server["ports_freed"].values()), (role, server))
                self.assertFalse(processes.running_with_argv(doc["provenance"]["commands"][role]), role)
        self.assertGreater(ok, 0)
        # Nothing any cell started runs on (a cluster's task JVMs and their shells included): no process works
        # in, or names, the run's folder.
        self.assertEqual(processes_in(os.path.realpath(run_dir)), [])
        self.check_profiles(run_dir)

    def check_cell_profile(self, doc, manifest, run_dir):
        """A profiled cell (policy.profile): its extra launch's recording and stacks stored as recorded; a native
        server's by perf, unless this host's perf cannot sample (then missing with that reason)."""
        ev, params = doc["evidence"], doc["cell"]["params"]
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

    def check_watched(self, prometheus, results_dir, started, ended, out):
        """What Prometheus scraped from the run's endpoint: each cell that ran, with its axes as labels; the
        CPU of the cell's process and of the host moving; the host's steal (0 is a value)."""
        self.assertIn("live metrics: http://127.0.0.1:", out)
        (host,) = [h for h in os.listdir(results_dir) if not h.startswith(".")]  # .db: the results database
        (run_id,) = os.listdir(os.path.join(results_dir, host))
        run_dir = os.path.join(results_dir, host, run_id)
        ran = {}
        for cell_id, rep in resultfile.stored_results(run_dir):
            doc = resultfile.load_result(resultfile.result_path(run_dir, cell_id, rep))
            if doc["status"] == "ok":
                ran[cell_id] = doc["cell"]["params"]
        cells = prometheus.series("tunelab_cell_info", started, ended)
        seen = {labels["cell"]: labels for labels, _ in cells}
        # A cell shorter than a scrape could slip between two; these cells run for seconds.
        self.assertEqual(set(seen), set(ran), cells)
        with open(os.path.join(run_dir, "manifest.json")) as f:
            rig = json.load(f)["matrix"]["rig"]
        for cell_id, labels in seen.items():
            self.assertEqual(labels["rig"], rig)
            for axis in ("jdk", "gc", "pinning"):
                if axis in labels:
                    self.assertEqual(labels[axis], str(ran[cell_id][axis]), labels)
        info = prometheus.series("tunelab_run_info", started, ended)
        self.assertEqual({labels["run_id"] for labels, _ in info}, {run_id})
        moved = prometheus.series("rate(tunelab_cell_process_cpu_seconds_total[3s])", started, ended)
        self.assertTrue(any(v > 0 for _, values in moved for v in values), moved)
        user = prometheus.series('rate(tunelab_host_cpu_seconds_total{mode="user"}[3s])', started, ended)
        self.assertTrue(user and max(user[0][1]) > 0, user)
        steal = prometheus.series('tunelab_host_cpu_seconds_total{mode="steal"}', started, ended)
        self.assertTrue(steal and all(v >= 0 for v in steal[0][1]), steal)
        # The rig's own live values (its live_metrics, read from its output as it ran), e.g. the loop's rate.
        own = prometheus.series(f'{{__name__=~"tunelab_{rig}_.+"}}', started, ended)
        self.assertTrue(any(v > 0 for _, values in own for v in values), own)
        done = prometheus.series("max(tunelab_run_cell_repetitions_done_total)", started, ended)
        self.assertTrue(done and max(done[0][1]) >= 1, done)

    def check_profiles(self, run_dir):
        """Every comparison of a profiled run has its movers; an injected slowdown (the calibration rig's
        profile_slowdown) shows as the spinning frame, moved, its interval over runs holding the injected share: the
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
                said = f"{top.describe()}; injected {injected:.1f}"
                # The frame's own interval over runs must hold the injected share; a fixed 2 points failed once on a
                # busy clean room (+21.8 [+18.9, +24.7] for 19.7): the interval is what the report claims.
                # (1 point of slack: the loop's own share is itself estimated from these runs.)
                self.assertTrue(top.low - 1.0 <= injected <= top.high + 1.0, said)
                self.assertLess(top.high - top.low, 12.0, f"too wide to locate the slowdown: {said}")
                self.assertAlmostEqual(top.change, injected, delta=4.0, msg=said)
                self.assertTrue(top.moved, top.describe())

if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
