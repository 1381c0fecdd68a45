"""What the runner's end-to-end tests share: a fake rig whose "JVM" is testdata/fake/java (a small Python
script that behaves like a JVM as far as the runner can see: flags from its own command line, a worker thread
whose tid can be pinned; jcmd likewise), a sandbox of fake host files, and a test case that runs the runner
in it. The tests need no JVM and run in seconds (runner_test, roles_test, sequential_run_test).
"""

import io
import json
import os
import sys
import tempfile
import types
import unittest

from rich.console import Console

from results import resultfile
from rigs.host import jdks
from rigs.matrix import runner
from rigs.matrix.contract import rig as rig_contract
from rigs.matrix.knobs import hostknobs

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
            if p["victim"] != "none":
                processes.insert(1, rig_contract.Process(
                    "victim", program=[os.path.join(TESTDATA, "fake", "holder"), p["victim"]], under_test=False,
                    kill_pattern=r"kill me now"))
            if p["pressure"] != "none":
                processes.insert(1, rig_contract.Process(
                    "pressure", program=[os.path.join(TESTDATA, "fake", "holder"), p["pressure"]],
                    under_test=False, background=True, ready_pattern="holding"))
            return rig_contract.Launch(processes)
        iterations = ["--iterations", str(policy.warmup_iterations), str(policy.iterations)] if policy.iterating else []
        return rig_contract.Launch.jvm("fake.Main", ["/nonexistent.jar"],
                                   [p["behaviour"], p["seconds"], os.path.join(workdir, "started")] + iterations,
                                   generated_inputs={"input.txt": "0" * 64}, state={"seconds": p["seconds"]},
                                   memory_dirs=("scratch",) if p["behaviour"] == "scratch" else ())

    def can_iterate(self, params):
        return params["server"] == "none"  # the fake JVM runs the policy's iterations (testdata/fake/java)

    def parse(self, outputs, policy, workdir, launch):
        stdout_text = outputs.get(rig_contract.MAIN_ROLE) or outputs["loadgen"]
        warmup, measured = [], []
        for line in stdout_text.splitlines():
            rec = json.loads(line)
            sample = {"metric": "rate", "value": rec["value"], "unit": "ops/s", "t": rec["t"]}
            if "iteration" in rec:
                sample["metadata"] = {"iteration": rec["iteration"]}
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
        self.paths = hostknobs.HostPaths(thp_enabled=os.path.join(root, "thp_enabled"),
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


class FakeRigTestCase(unittest.TestCase):
    """A test case with its own sandbox (self.box) and the fake rig installed."""

    def setUp(self):
        install_fake_rig()
        self.box = Sandbox(tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR")))

    def docs(self, run_dir):
        return {key: resultfile.load_result(resultfile.result_path(run_dir, *key)) for key in resultfile.stored_results(run_dir)}


def running_with_argv_containing(words):
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        if all(w in argv for w in words):
            return True
    return False
