"""The runner end to end with a fake rig: testdata/fake/java and jcmd are small Python scripts that behave
like a JVM as far as the runner can see (flags from their own command line, a worker thread whose tid
can be pinned), so these tests need no JVM and run in seconds. Host files are fakes in a temp folder.
"""

import io
import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time
import types
import unittest

from rich.console import Console

from results import resultfile as results
from rigs.matrix import rig as rig_contract, runner
from rigs.host import jdks

HERE = os.path.dirname(os.path.abspath(__file__))
TESTDATA = os.path.join(HERE, "testdata")


class FakeRig(rig_contract.Rig):
    name = "fake"
    parameters = {"seconds": rig_contract.Param(float, high=600, doc="-1: the client fails at once")}

    def launch(self, cell, workload, policy, workdir, data, inputs_dir):
        p = cell.params
        if p["server"] != "none":
            port = rig_contract.free_loopback_port()
            processes = [
                rig_contract.Process("server", main_class="fake.Server", classpath=["/nonexistent.jar"],
                                     args=[p["server"], str(port)], server=True, ready_pattern=r"listening",
                                     ready_timeout_s=3, ports=[port]),
                rig_contract.Process("loadgen", program=[os.path.join(TESTDATA, "fake", "client"), str(port),
                                                         p["seconds"]], under_test=False,
                                     fail_pattern=r"worker \d+ failed", phase=1)]
            if p["loader"] != "none":
                data = os.path.join(workdir, "data.txt")
                with open(data, "w") as f:
                    f.write("a\nb\nc\n")
                processes.insert(1, rig_contract.Process(
                    "loader", program=[os.path.join(TESTDATA, "fake", "loader"), p["loader"], "{pid:server}"],
                    under_test=False, stdin=data))
            if p["pressure"] != "none":
                processes.insert(1, rig_contract.Process(
                    "pressure", program=[os.path.join(TESTDATA, "fake", "holder"), p["pressure"]],
                    under_test=False, background=True, ready_pattern="holding"))
            return rig_contract.Launch(processes)
        return rig_contract.Launch.jvm("fake.Main", ["/nonexistent.jar"],
                                   [p["behaviour"], p["seconds"], os.path.join(workdir, "started")],
                                   generated_inputs={"input.txt": "0" * 64}, state={"seconds": p["seconds"]})

    def parse(self, outputs, policy, workdir, launch):
        stdout_text = outputs.get(rig_contract.MAIN_ROLE) or outputs["loadgen"]
        warmup, measured = [], []
        for line in stdout_text.splitlines():
            rec = json.loads(line)
            sample = {"metric": "rate", "value": rec["value"], "unit": "ops/s", "t": rec["t"]}
            (warmup if rec["phase"] == "warmup" else measured).append(sample)
        if not measured:
            raise rig_contract.MeasurementInvalid(f"only {len(warmup)} warm-up samples")
        # The single-JVM cells also declare their samples in two halves, as a rig measuring a cell in parts
        # does (the Redis rig: before and after a page migration); the state is what launch returned.
        split = {}
        if outputs.get(rig_contract.MAIN_ROLE) and len(measured) >= 2:
            half = len(measured) // 2
            split = {"half": {"first": measured[:half], "second": measured[half:],
                              "seconds": [dict(measured[0], value=float(launch.state["seconds"]))]}}
        return rig_contract.Parsed(warmup, measured, {"lines": len(warmup) + len(measured)}, split=split)


def install_fake_rig():
    package = types.ModuleType("rigs.fake")
    module = types.ModuleType("rigs.fake.rig")
    module.RIG = FakeRig()
    sys.modules["rigs.fake"], sys.modules["rigs.fake.rig"] = package, module


class Sandbox:
    """A temp folder with a fake JDK, fake host knob files, a results folder and a host state folder."""

    def __init__(self, root):
        self.root = root
        self.java_home = os.path.join(root, "jdk")
        os.makedirs(os.path.join(self.java_home, "bin"), exist_ok=True)
        for tool in ("java", "jcmd"):
            link = os.path.join(self.java_home, "bin", tool)
            if not os.path.exists(link):
                os.symlink(os.path.join(TESTDATA, "fake", tool), link)
        self.paths = runner.knobs.HostPaths(thp_enabled=os.path.join(root, "thp_enabled"),
                                            nr_hugepages=os.path.join(root, "nr_hugepages"))
        for path, text in ((self.paths.thp_enabled, "always [madvise] never\n"), (self.paths.nr_hugepages, "0\n")):
            if not os.path.exists(path):
                with open(path, "w") as f:
                    f.write(text)
        self.results = os.path.join(root, "results")
        self.state_dir = os.path.join(root, "state")

    def report(self):
        cap = lambda **kw: dict(evidence="fake host", **kw)  # noqa: E731
        return {
            "schema": "tunelab.doctor/1",
            "host": {"hostname": "fake", "host_id": "fakehost-00000000", "kernel": "Linux", "os": "test",
                     "load_average": [0.0, 0.0, 0.0]},
            "cpu": {"logical_cpus": 2, "frequency_governor": None, "frequency_governor_evidence": "fake"},
            "numa": {"nodes": [{"id": 0, "cpus": "0-1", "memory_total_kb": 1, "memory_free_kb": 1, "distances": [10]}],
                     "evidence": "fake"},
            "memory": {"available_kb": 1 << 30},
            "capabilities": {
                "transparent_hugepages": cap(available=True, value="madvise", writable=True),
                "explicit_hugepages": cap(available=True, value=0, writable=True),
                "numa_multi_node": cap(available=False, value=1),
                "numactl": cap(available=True), "taskset": cap(available=True),
            },
            "jdks": [{"name": "jdk17", "source": "pinned", "java_home": self.java_home,
                      "java": os.path.join(self.java_home, "bin", "java"), "version": "17.0.0", "major": 17,
                      "vendor": "fake", "vm": "", "runtime_version": "", "error": "",
                      "gcs": {gc: {"accepted": gc not in ("cms", "shenandoah"), "flags": flags,
                                   "evidence": "Unrecognized VM option" if gc in ("cms", "shenandoah") else "starts"}
                              for gc, flags in jdks.GC_FLAGS.items()}}],
        }

    def args(self, *extra):
        return ["--matrix", os.path.join(TESTDATA, "fake_matrix.toml"),
                "--workload", os.path.join(TESTDATA, "fake_workload"),
                "--results-dir", self.results, "--state-dir", self.state_dir, *extra]

    def main(self, *extra):
        out = io.StringIO()
        code = runner.main(self.args(*extra), console=Console(file=out, width=200), host_paths=self.paths,
                           report=self.report())
        return code, out.getvalue()

    def run_dirs(self):
        base = os.path.join(self.results, "fakehost-00000000")
        return sorted(os.path.join(base, d) for d in os.listdir(base)) if os.path.isdir(base) else []

    def thp(self):
        with open(self.paths.thp_enabled) as f:
            return f.read().strip()


class RunnerTest(unittest.TestCase):
    def setUp(self):
        install_fake_rig()
        self.box = Sandbox(tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR")))

    def spawn(self, *args):
        """The runner in a child process (see child_main), so that it can be signalled."""
        return subprocess.Popen([sys.executable, __file__, "--child", self.box.root, *args],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ)

    def docs(self, run_dir):
        return {key: results.load_result(results.result_path(run_dir, *key)) for key in results.stored_results(run_dir)}

    def test_run_stores_valid_results_with_pinning_evidence(self):
        code, out = self.box.main()
        self.assertEqual(code, runner.EXIT_OK, out)
        (run_dir,) = self.box.run_dirs()
        docs = self.docs(run_dir)
        self.assertEqual(len(docs), 4)  # 2 cells x 2 repetitions
        for doc in docs.values():
            self.assertEqual(doc["status"], "ok", doc.get("reason"))
            self.assertEqual(len(doc["warmup_samples"]), 3)
            self.assertTrue(doc["samples"])
            self.assertEqual(doc["evidence"]["thp_mode"], "never")  # hugepages=off
            # The parts the rig declared, each summarized as the samples are (the workload's metrics).
            split = doc["split"]
            self.assertEqual((split["axis"], [p["value"] for p in split["parts"]]), ("half", ["first", "second",
                                                                                            "seconds"]))
            self.assertEqual(sum(p["metrics"][0]["n"] for p in split["parts"][:2]), len(doc["samples"]))
            self.assertEqual(split["parts"][2]["samples"][0]["value"], float(doc["cell"]["params"]["seconds"]))
            if doc["cell"]["params"]["pinning"] == "workers":
                (thread,) = doc["evidence"]["threads"]
                self.assertEqual((thread["wanted"], thread["cpus_allowed"]), ("1", "1"))
        with open(os.path.join(run_dir, "manifest.json")) as f:
            self.assertEqual(json.load(f)["state"], "complete")
        self.assertEqual(self.box.thp(), "madvise")
        self.assertIn("ETA", out)

    def test_parameters_the_rig_declares_are_checked_before_anything_runs(self):
        for value, message in (("soon", "seconds='soon' is not a number"), ("nan", "seconds='nan' is not a finite"),
                               ("900", "seconds=900: at most 600")):
            code, out = self.box.main("--set", f"seconds={value}")
            self.assertEqual(code, runner.EXIT_BAD_INPUT, out)
            self.assertIn(message, out)
        self.assertEqual(self.box.run_dirs(), [])
        self.assertEqual(rig_contract.load_rig("fake").typed({"seconds": "2.5", "server": "none"}), {"seconds": 2.5})

    def test_failing_cells_are_recorded_and_the_matrix_goes_on(self):
        code, out = self.box.main("--profile", "failing")
        self.assertEqual(code, runner.EXIT_CELLS_FAILED, out)
        (run_dir,) = self.box.run_dirs()
        by_behaviour = {d["cell"]["params"]["behaviour"]: d for d in self.docs(run_dir).values()}
        self.assertEqual(by_behaviour["crash"]["status"], "failed")
        self.assertEqual(by_behaviour["crash"]["exit_status"], 3)
        self.assertIn("crashing on purpose", by_behaviour["crash"]["reason"])
        with open(by_behaviour["crash"]["logs"]["stderr"]) as f:
            self.assertIn("crashing on purpose", f.read())
        self.assertEqual(by_behaviour["hang"]["status"], "failed")
        self.assertIn("timed out after 2 s", by_behaviour["hang"]["reason"])
        self.assertEqual(by_behaviour["ok"]["status"], "ok", by_behaviour["ok"].get("reason"))
        self.assertGreater(by_behaviour["ok"]["observations"]["lines"], 3)
        self.assertEqual(by_behaviour["ok"]["provenance"]["workload"]["generated"], {"input.txt": "0" * 64})
        # Ran to the end but measured nothing valid: invalid, with the rig's reason, and the matrix went on.
        self.assertEqual(by_behaviour["short"]["status"], "invalid")
        self.assertIn("only 2 warm-up samples", by_behaviour["short"]["reason"])
        self.assertEqual(by_behaviour["ok"]["evidence"]["thp_mode"], "always")
        self.assertEqual(self.box.thp(), "madvise")  # restored after the crash and the hang too

    def test_a_server_and_a_load_generator_are_placed_proven_and_always_stopped(self):
        code, out = self.box.main("--profile", "served")
        self.assertEqual(code, runner.EXIT_OK, out)
        (run_dir,) = self.box.run_dirs()
        docs = self.docs(run_dir).values()
        self.assertEqual(len(docs), 4)
        for doc in docs:
            self.assertEqual(doc["status"], "ok", doc.get("reason"))
            ev = doc["evidence"]
            self.assertEqual(ev["role"], "server")
            self.assertGreaterEqual(min(s["value"] for s in doc["samples"]), 200)  # answered by the server
            server = ev["servers"]["server"]
            self.assertEqual(list(server["ports_freed"].values()), [True])
            stubborn = doc["cell"]["params"]["server"] == "stubborn"
            self.assertEqual(server["stopped_by"], "SIGKILL" if stubborn else "SIGTERM")
            self.assertEqual(set(doc["provenance"]["commands"]), {"server", "loadgen"})
            self.assertEqual(set(ev["process_cpu"]), {"server", "loadgen"})
            self.assertGreater(ev["process_cpu"]["loadgen"]["wall_s"], 0.5)
            with open(doc["logs"]["server.stdout"]) as f:
                self.assertIn("listening", f.read())
            if doc["cell"]["params"]["pinning"] == "apart":
                self.assertEqual(doc["provenance"]["commands"]["server"][:3], ["taskset", "-c", "1"])
                self.assertEqual(ev["process_status"]["Cpus_allowed_list"], "1")
                self.assertEqual(ev["other_processes"]["loadgen"]["process_status"]["Cpus_allowed_list"], "0")
            else:
                self.assertEqual(ev["other_processes"]["loadgen"]["cpus_wanted"], "")

    def test_a_server_that_dies_or_never_gets_ready_fails_the_cell_and_is_stopped(self):
        code, out = self.box.main("--profile", "served_failing")
        self.assertEqual(code, runner.EXIT_CELLS_FAILED, out)
        (run_dir,) = self.box.run_dirs()
        by_server = {d["cell"]["params"]["server"]: d for d in self.docs(run_dir).values()}
        self.assertEqual(by_server["dies"]["status"], "failed")
        self.assertIn("server server exited with status 4", by_server["dies"]["reason"])
        self.assertEqual(by_server["mute"]["status"], "failed")
        self.assertIn("server server not ready after 3 s", by_server["mute"]["reason"])
        self.assertEqual(by_server["mute"]["evidence"]["servers"]["server"]["stopped_by"], "SIGTERM")
        # A load generator that says it failed but keeps running is stopped at once, not at the timeout.
        self.assertEqual(by_server["serve"]["status"], "failed")
        self.assertIn("loadgen reported a failure: fake client: worker 1 failed", by_server["serve"]["reason"])
        self.assertLess(by_server["serve"]["duration_s"], 10)
        for doc in by_server.values():  # nothing of the cell is left running
            for role, command in doc["provenance"]["commands"].items():
                self.assertFalse(_running_with_argv(command), f"{role} still running: {command}")

    def test_phases_run_in_order_and_a_failing_phase_ends_the_cell(self):
        code, out = self.box.main("--profile", "phased")
        self.assertEqual(code, runner.EXIT_CELLS_FAILED, out)
        (run_dir,) = self.box.run_dirs()
        by_loader = {d["cell"]["params"]["loader"]: d for d in self.docs(run_dir).values()}
        ok, fails = by_loader["ok"], by_loader["fails"]
        self.assertEqual(ok["status"], "ok", ok.get("reason"))
        with open(ok["logs"]["loader.stdout"]) as f:
            self.assertEqual(f.read().strip(), "loaded 3 lines")  # its stdin was the data file
        with open(os.path.join(run_dir, "work", os.path.basename(ok["logs"]["loader.stdout"]).split(".loader")[0],
                               "loaded")) as f:
            loaded_at = json.load(f)["done_at"]
        self.assertLess(loaded_at, os.stat(ok["logs"]["loadgen.stdout"]).st_ctime)
        self.assertEqual(ok["evidence"]["exit_statuses"], {"server": ok["evidence"]["exit_statuses"]["server"],
                                                           "loader": 0, "loadgen": 0})
        self.assertEqual(fails["status"], "failed")
        self.assertIn("loader (phase 0) exited with status 3: fake loader: the server refused the data",
                      fails["reason"])
        self.assertNotIn("loadgen", fails["evidence"]["exit_statuses"])  # the next phase never started
        self.assertEqual(list(fails["evidence"]["servers"]["server"]["ports_freed"].values()), [True])
        # {pid:server} was the server's pid, as the fake server printed it.
        with open(ok["logs"]["server.stdout"]) as f:
            server_pid = f.read().split(" pid ")[1].split()[0]
        self.assertEqual(ok["provenance"]["commands"]["loader"][-1], "{pid:server}")
        self.assertEqual(ok["evidence"]["resolved_commands"]["loader"][-1], server_pid)

    def test_a_background_process_runs_beside_its_phase_and_is_stopped_after_it(self):
        code, out = self.box.main("--profile", "phased_background")
        self.assertEqual(code, runner.EXIT_CELLS_FAILED, out)
        (run_dir,) = self.box.run_dirs()
        by_pressure = {d["cell"]["params"]["pressure"]: d for d in self.docs(run_dir).values()}
        holds, dies = by_pressure["holds"], by_pressure["dies"]
        self.assertEqual(holds["status"], "ok", holds.get("reason"))
        self.assertEqual(holds["evidence"]["exit_statuses"]["pressure"], -15)  # stopped by the runner (SIGTERM)
        self.assertLess(os.stat(holds["logs"]["pressure.stdout"]).st_mtime,  # ready before the loader started
                        os.stat(holds["logs"]["loader.stdout"]).st_mtime)
        self.assertFalse(_running_with_argv(holds["provenance"]["commands"]["pressure"]))
        self.assertEqual(dies["status"], "failed")
        self.assertIn("pressure (phase 0) exited with status 5: fake holder: lost its memory", dies["reason"])
        self.assertNotIn("loadgen", dies["evidence"]["exit_statuses"])

    def test_servers_are_stopped_and_ports_freed_when_the_runner_is_interrupted_or_killed(self):
        for sig in (signal.SIGTERM, signal.SIGKILL):
            box = Sandbox(tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR")))
            child = subprocess.Popen([sys.executable, __file__, "--child", box.root, "--profile", "served",
                                      "--set", "server=serve", "--set", "pinning=none", "--set", "seconds=60"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ)
            try:
                def listening():
                    for run_dir in box.run_dirs():
                        for name in os.listdir(os.path.join(run_dir, "logs")) if os.path.isdir(
                                os.path.join(run_dir, "logs")) else []:
                            if name.endswith(".server.out"):
                                with open(os.path.join(run_dir, "logs", name)) as f:
                                    words = f.read().split()
                                if "listening" in words:
                                    return int(words[-1])
                    return None
                self.assertTrue(runner.knobs.wait_for(lambda: listening() is not None, 30), "server never listened")
                port = listening()
                self.assertTrue(rig_contract.port_in_use(port))
                child.send_signal(sig)
                child.wait(timeout=30)
            finally:
                child.kill()
            self.assertTrue(runner.knobs.wait_for(lambda: not rig_contract.port_in_use(port), 10),
                            f"port {port} still in use after {sig.name}")
            self.assertFalse(_running_with_argv_containing(["fake.Server", str(port)]),
                             f"the server outlived its runner ({sig.name})")

    def test_a_patched_variant_carries_its_identity_and_must_load_its_classes(self):
        manifest = os.path.join(self.box.root, "manifest.json")
        with open(manifest, "w") as f:
            json.dump({"series": ["0001-a.patch", "0002-b.patch"], "applied": ["0001-a.patch"], "upto": 1,
                       "patches_sha256": {"0001-a.patch": "1" * 64}, "patch_set_sha256": "ab" * 32,
                       "overlay_jar": "libfake_upto_1.jar", "classes": ["fake.Main"]}, f)
        code, out = self.box.main("--set", "variant=stock,patched:fake@1", "--set", "pinning=none",
                                  "--variant-data", f"patched:fake@1=manifest={manifest}")
        self.assertEqual(code, runner.EXIT_CELLS_FAILED, out)
        (run_dir,) = self.box.run_dirs()
        by_variant = {}
        for doc in self.docs(run_dir).values():
            by_variant.setdefault(doc["cell"]["params"]["variant"], []).append(doc)
        for doc in by_variant["stock"]:
            self.assertEqual(doc["status"], "ok", doc.get("reason"))
            self.assertIsNone(doc["provenance"]["variant"]["patch_set_sha256"])
        for doc in by_variant["patched:fake@1"]:
            # The patch set's content is in the cell id, not among the parameters (they compare as before).
            self.assertEqual(doc["cell"]["id"], runner.spec.cell_id(dict(doc["cell"]["params"],
                                                                        patch_set_sha256="ab" * 32)))
            self.assertEqual(doc["provenance"]["variant"]["patch_set_sha256"], "ab" * 32)
            self.assertEqual(doc["provenance"]["variant"]["applied"], ["0001-a.patch"])
            self.assertIn("-Xlog:class+load=info:file=", " ".join(doc["provenance"]["command"]))
            # The fake JVM loads no class from the overlay: the patch did not run, the cell is invalid.
            self.assertEqual(doc["status"], "invalid")
            self.assertIn("the patch was not exercised", doc["reason"])

    def test_second_run_on_the_host_is_refused(self):
        lock = runner.HostLock(os.path.join(self.box.state_dir, runner.hoststate.LOCK_NAME))
        lock.acquire({"run_id": "20261121T000000Z-beef", "pid": 1})
        try:
            code, out = self.box.main()
        finally:
            lock.release()
        self.assertEqual(code, runner.EXIT_LOCKED)
        self.assertIn("20261121T000000Z-beef", out)
        self.assertEqual(self.box.run_dirs(), [])

    def test_bad_input_fails_before_anything_runs(self):
        code, out = self.box.main("--set", "jdk=11")
        self.assertEqual(code, runner.EXIT_BAD_INPUT)
        self.assertIn("jdk=11: not installed", out)
        code, out = self.box.main("--set", "gc=cms")
        self.assertEqual(code, runner.EXIT_BAD_INPUT)
        self.assertIn("CMS was removed in JDK 14", out)
        code, out = self.box.main("--set", "gc=shenandoah")
        self.assertEqual(code, runner.EXIT_BAD_INPUT)
        self.assertIn("the JVM refuses it: Unrecognized VM option", out)
        # A revision axis value needs the build it names, before anything runs.
        code, out = self.box.main("--set", "revision=accepted,candidate")
        self.assertEqual(code, runner.EXIT_BAD_INPUT)
        self.assertIn("the revision axis names accepted: give each build with --revision NAME=RUNFILES", out)
        code, out = self.box.main("--set", "revision=accepted,candidate", "--revision",
                                  f"accepted={self.box.root}/no-such-build")
        self.assertEqual(code, runner.EXIT_BAD_INPUT)
        self.assertIn("--revision accepted: no runfiles folder", out)
        # A patched variant needs its build, and a variant value must name one.
        code, out = self.box.main("--set", "variant=stock,patched:nope")
        self.assertEqual(code, runner.EXIT_BAD_INPUT)
        self.assertIn("variant=patched:nope: this target has no such build (built: none)", out)
        code, out = self.box.main("--set", "variant=patched")
        self.assertEqual(code, runner.EXIT_BAD_INPUT)
        self.assertIn("is not stock, patched:<set> or patched:<set>@<k>", out)
        self.assertEqual(self.box.run_dirs(), [])

    def test_dry_run_writes_nothing(self):
        code, out = self.box.main("--dry-run")
        self.assertEqual(code, runner.EXIT_OK)
        self.assertIn("estimated time 0:00:", out)
        self.assertEqual(self.box.run_dirs(), [])

    def test_resume_after_sigkill_completes_without_duplicates(self):
        child = self.spawn("--profile", "slow")
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                dirs = self.box.run_dirs()
                if dirs and results.stored_results(dirs[0]):
                    started = [d for d in os.listdir(os.path.join(dirs[0], "work"))
                               if os.path.exists(os.path.join(dirs[0], "work", d, "started"))]
                    if len(started) >= 2:  # one stored, the next one running
                        break
                time.sleep(0.05)
            else:
                self.fail("the child run never got to its second cell")
            child.send_signal(signal.SIGKILL)
        finally:
            child.wait()
        (run_dir,) = self.box.run_dirs()
        before = {k: os.stat(results.result_path(run_dir, *k)).st_mtime_ns for k in results.stored_results(run_dir)}
        self.assertTrue(0 < len(before) < 3, before)
        run_id = os.path.basename(run_dir)

        code, out = self.box.main("--profile", "slow", "--set", "heap=128m", "--resume", run_id)
        self.assertEqual(code, runner.EXIT_BAD_INPUT)
        self.assertIn("differ from the stored run", out)

        # RUN_ID alone continues the run as it was started (profile "slow" taken from its manifest).
        code, out = self.box.main("--resume", run_id)
        self.assertEqual(code, runner.EXIT_OK, out)
        self.assertIn("profile slow", out)
        docs = self.docs(run_dir)
        self.assertEqual(len(docs), 3)
        self.assertEqual(sorted(os.listdir(os.path.join(run_dir, "cells"))),
                         sorted(f"{c}.r{r}.json" for c, r in docs))
        for key, mtime in before.items():  # nothing already stored was rewritten
            self.assertEqual(os.stat(results.result_path(run_dir, *key)).st_mtime_ns, mtime)
        with open(os.path.join(run_dir, "manifest.json")) as f:
            self.assertEqual(json.load(f)["state"], "complete")

    def test_sigterm_stops_cleanly_and_sigkill_leftovers_are_recovered(self):
        child = self.spawn("--profile", "slow", "--set", "hugepages=thp_always")
        try:
            self.assertTrue(runner.knobs.wait_for(lambda: self.box.thp() == "always", 30), "knob never set")
            child.send_signal(signal.SIGTERM)
            self.assertEqual(child.wait(timeout=30), runner.EXIT_INTERRUPTED)
        finally:
            child.kill()
        self.assertEqual(self.box.thp(), "madvise")
        (run_dir,) = self.box.run_dirs()
        with open(os.path.join(run_dir, "manifest.json")) as f:
            self.assertEqual(json.load(f)["state"], "interrupted")

        # A SIGKILL leaves the knob changed; the next run that takes the lock restores it first.
        child = self.spawn("--profile", "slow", "--set", "hugepages=thp_always")
        try:
            self.assertTrue(runner.knobs.wait_for(lambda: self.box.thp() == "always", 30), "knob never set")
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=30)
        finally:
            child.kill()
        self.assertEqual(self.box.thp(), "always")
        code, out = self.box.main("--dry-run")
        self.assertEqual(self.box.thp(), "always")  # a dry run takes no lock and touches nothing
        code, out = self.box.main("--set", "pinning=none")
        self.assertIn("restored host settings a killed run left changed", out)
        self.assertEqual(self.box.thp(), "madvise")

    def test_a_planted_knob_journal_is_refused_and_nothing_is_written(self):
        victim = os.path.join(self.box.root, "authorized_keys")
        with open(victim, "w") as f:
            f.write("the real key\n")
        os.makedirs(self.box.state_dir, mode=0o700, exist_ok=True)
        journal = os.path.join(self.box.state_dir, runner.hoststate.JOURNAL_NAME)
        with open(journal, "w") as f:
            json.dump([[victim, "attacker key\n"]], f)
        os.chmod(journal, 0o600)
        code, out = self.box.main()
        self.assertEqual(code, runner.EXIT_BAD_INPUT, out)
        self.assertIn("which the runner never changes", " ".join(out.split()))
        with open(victim) as f:
            self.assertEqual(f.read(), "the real key\n")
        self.assertEqual(self.box.run_dirs(), [])

    def test_a_sequential_run_stops_each_comparison_once_decided(self):
        code, out = self.box.main("--profile", "sequential")
        self.assertEqual(code, runner.EXIT_OK, out)
        (run_dir,) = self.box.run_dirs()
        docs = self.docs(run_dir)
        # 4 cells, every comparison decided at round 3 of at most 6: rounds 0-2 measured, 3-5 not needed.
        self.assertEqual(sorted({rep for _, rep in docs}), [0, 1, 2])
        self.assertEqual(len(docs), 12)
        with open(os.path.join(run_dir, "manifest.json")) as f:
            manifest = json.load(f)
        self.assertEqual(manifest["state"], "complete")
        for cell in manifest["cells"]:
            self.assertEqual(cell["repetitions"], {"0": "ok", "1": "ok", "2": "ok", "3": "not_needed",
                                                   "4": "not_needed", "5": "not_needed"})
        block = manifest["sequential"]
        self.assertEqual((block["min"], block["max"], block["family"], block["rounds"]), (3, 6, 4, 3))
        reasons = {(q["axis"], q["value"]): q["reason"] for q in block["comparisons"]}
        self.assertEqual(reasons, {("behaviour", "halved"): "decided at round 3: different",
                                   ("gc", "parallel"): "decided at round 3: equivalent"})
        self.assertEqual(len(block["comparisons"]), 4)  # each comparison at both values of the other axis
        self.assertIn("decided at round 3: different: behaviour=halved vs ok, rate -50.0%", out)
        self.assertIn("at most (3..6 rounds, stop when decided)", out)
        # Narrowed to one cell there is nothing to decide: it runs the first `min` rounds and says so.
        code, out = self.box.main("--profile", "sequential", "--set", "behaviour=ok", "--set", "gc=g1")
        self.assertEqual(code, runner.EXIT_OK, out)
        self.assertIn("nothing to decide", out)
        (narrowed,) = set(self.box.run_dirs()) - {run_dir}
        self.assertEqual(sorted(rep for _, rep in self.docs(narrowed)), [0, 1, 2])
        # The fixed count stays one flag away, and is another run (its own settings).
        code, out = self.box.main("--profile", "sequential", "--set", "policy.repetitions=2", "--dry-run")
        self.assertEqual(code, runner.EXIT_OK, out)
        self.assertIn("run x2", out)

    def test_a_sequential_policy_without_a_minimum_effect_is_refused(self):
        code, out = self.box.main("--profile", "undecidable")
        self.assertEqual(code, runner.EXIT_BAD_INPUT, out)
        self.assertIn("no minimum effect for latency", out)
        self.assertIn("latency = 0.05", out)
        self.assertEqual(self.box.run_dirs(), [])

    def test_a_complete_run_is_never_rewritten(self):
        code, _ = self.box.main()
        self.assertEqual(code, runner.EXIT_OK)
        (run_dir,) = self.box.run_dirs()
        stored = {p: pathlib.Path(p).read_bytes() for p in (os.path.join(run_dir, "manifest.json"),
                  *(results.result_path(run_dir, *k) for k in results.stored_results(run_dir)))}
        code, out = self.box.main("--resume", os.path.basename(run_dir))
        self.assertEqual(code, runner.EXIT_OK, out)
        self.assertIn("is complete: nothing to resume", out)
        for path, body in stored.items():
            with open(path, "rb") as f:
                self.assertEqual(f.read(), body, path)
        with self.assertRaisesRegex(runner.store.StoreError, "complete run"):
            runner.store.write_manifest(run_dir, json.loads(stored[os.path.join(run_dir, "manifest.json")]))

    def test_a_rig_must_implement_the_contract(self):
        class Duck:  # has the methods, is not a Rig: the runner would have guessed its optional members
            name = "duck"
            launch = parse = FakeRig.launch
        sys.modules["rigs.duck"], sys.modules["rigs.duck.rig"] = types.ModuleType("rigs.duck"), types.ModuleType("r")
        sys.modules["rigs.duck.rig"].RIG = Duck()
        with self.assertRaisesRegex(ImportError, "an instance of rigs.matrix.rig.Rig with name 'duck'"):
            rig_contract.load_rig("duck")

        class Half(rig_contract.Rig):  # no parse
            name = "half"

            def launch(self, cell, workload, policy, workdir, data, inputs_dir):
                return None
        with self.assertRaisesRegex(TypeError, "abstract method.* parse"):
            Half()
        self.assertEqual(rig_contract.load_rig("fake").estimate_seconds({}, None), None)  # the defaults

    def test_strict_refuses_a_busy_host(self):
        report = self.box.report()
        report["host"]["load_average"] = [7.5, 7.0, 6.0]
        with self.assertRaisesRegex(runner.spec.SpecError, "load average 7.5 is over half of 2 CPUs"):
            runner.preflight(report, strict=True)
        self.assertTrue(runner.preflight(report, strict=False)["warnings"])

    def test_resume_refuses_a_corrupt_stored_result(self):
        code, _ = self.box.main()
        self.assertEqual(code, runner.EXIT_OK)
        (run_dir,) = self.box.run_dirs()
        # A run killed after its last cell but before it was sealed: resumable, and one result is corrupt.
        with open(os.path.join(run_dir, "manifest.json")) as f:
            manifest = json.load(f)
        with open(os.path.join(run_dir, "manifest.json"), "w") as f:
            json.dump(dict(manifest, state="interrupted"), f)
        key = sorted(results.stored_results(run_dir))[0]
        path = results.result_path(run_dir, *key)
        with open(path, "w") as f:
            f.write("{not json")
        code, out = self.box.main("--resume", os.path.basename(run_dir))
        self.assertEqual(code, runner.EXIT_BAD_INPUT)
        self.assertIn("corrupt", out)
        self.assertTrue(os.path.exists(path))  # kept for inspection, never deleted


def _running_with_argv(argv):
    wanted = "\0".join(argv).encode()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().rstrip(b"\0") == wanted:
                    return True
        except OSError:
            continue
    return False


def _running_with_argv_containing(words):
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        if all(w in argv for w in words):
            return True
    return False


def child_main(argv):
    """Run in a subprocess by the SIGKILL test: the same sandbox, the runner in the foreground."""
    install_fake_rig()
    box = Sandbox(argv[0])
    sys.exit(runner.main(box.args(*argv[1:]), console=Console(file=io.StringIO()), host_paths=box.paths,
                         report=box.report()))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child_main(sys.argv[2:])
    else:
        unittest.main()
