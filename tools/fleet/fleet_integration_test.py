"""The fleet for real, on hosts this test makes on this machine: two sshd (Debian's openssh-server) on
loopback addresses 127.0.0.2 and 127.0.0.3, each host with its own root for bundles, runs and its host state (lock, knob journal), and
a third inventory host where nothing listens. Through the real ansible-runner, the calibration matrix's
fleet_smoke profile runs on both: on a with the host's Python, on b in the rigs' image (tunelab_runner=image:
the image archive loaded into podman from the bundle, the runner in a privileged container). Host b is
killed mid-run (its sshd and every process of its run), the fleet reports it and host c, and brings a's run
home; then b comes back and `--resume` finishes it without rerunning a or b's stored cells, and without the
killed run's container; a cross-host report compares the two (one physical machine, and says so; the
runner's place is flagged as a provenance difference). A plan-only fleet run asks for a JDK that only host a
declares (tunelab_jdks): b is reported with a clear error. Two hostile hosts (127.0.0.5, .6) beside a: one
answers the plan with a document that crashed the controller before, one sends back a tiny archive whose
pax header declares 2^80 bytes; each fails alone with its reason while a's run comes home complete, and the
controller exits 1 without a traceback. Nothing listens beyond loopback; every process,
container and folder the test made is removed at the end.

  args: FLEET_BINARY REPORT_BINARY BUNDLE ARGS_FILE JAVA
"""

import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest

from tools.fleet.testhosts import SSHD, Host, free_port

FLEET, REPORT, BUNDLE, ARGS_FILE, JAVA = (os.path.abspath(p) for p in sys.argv[1:6])
del sys.argv[1:6]
PODMAN = ["podman", "--cgroup-manager=cgroupfs", "--events-backend=file"]
PROFILE = "fleet_smoke"


def read_thp():
    with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
        return f.read()


def write_script(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)


# What the hostile hosts run in place of the bundle's programs (the fleet ships nothing: their bundle folder
# says it is complete). d: a plan no controller should believe. e: an honest-looking plan and run, then a
# tiny archive whose pax header declares 2^80 bytes.
HOSTILE_MATRIX = {
    "d": """#!/usr/bin/python3
import json, sys
out = sys.argv[sys.argv.index("--plan-json") + 1]
json.dump({"estimated_s": 1, "cells": "all of them", "doctor": {"host": {"host_id": "[/red] boom [link=x]"},
           "cpu": {}}}, open(out, "w"))
""",
    "e": """#!/usr/bin/python3
import json, sys
if "--plan-json" in sys.argv:
    out = sys.argv[sys.argv.index("--plan-json") + 1]
    json.dump({"estimated_s": 5, "cells": [{"id": "2c0b5e67fcfd", "skip_reason": None}],
               "doctor": {"host": {"host_id": "vm-e"}, "cpu": {"online_cpus": 2}}}, open(out, "w"))
""",
}
_PASS_THROUGH = """#!/usr/bin/python3
import os, sys
here = os.path.dirname(os.path.abspath(__file__))
os.execv(sys.executable, [sys.executable, os.path.join(here, "remote_run_real.py")] + sys.argv[1:])
"""
HOSTILE_REMOTE_RUN = {
    "d": _PASS_THROUGH,
    "e": """#!/usr/bin/python3
import gzip, json, os, sys, tarfile
here = os.path.dirname(os.path.abspath(__file__))
if sys.argv[1] != "pack":
    os.execv(sys.executable, [sys.executable, os.path.join(here, "remote_run_real.py")] + sys.argv[1:])
out = sys.argv[sys.argv.index("--out") + 1]
info = tarfile.TarInfo("././@PaxHeader")
info.type = tarfile.XHDTYPE
block = bytearray(info.tobuf(tarfile.USTAR_FORMAT))
block[124:136] = b"\\x80" + (1 << 80).to_bytes(11, "big")
block[148:156] = b" " * 8
block[148:156] = ("%06o" % sum(block)).encode() + b"\\0 "
open(out, "wb").write(gzip.compress(bytes(block) + bytes(1024)))
print(json.dumps({"archive": out, "bytes": 3}))
""",
}


class FleetIntegrationTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(SSHD):
            raise AssertionError(f"no sshd at {SSHD}: ./bazelw installs openssh-server")
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation folder
        cls.base = tempfile.mkdtemp(prefix="tl-fleet-")
        key = os.path.join(cls.base, "client_key")
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key], check=True)
        shutil.copy(key + ".pub", os.path.join(cls.base, "authorized_keys"))
        cls.hosts = {"a": Host(cls.base, "a", "127.0.0.2"), "b": Host(cls.base, "b", "127.0.0.3")}
        cls.refusing_port = free_port("127.0.0.4")  # nothing will listen there
        for host in cls.hosts.values():
            host.start()
        cls.inventory = os.path.join(cls.base, "hosts.ini")
        with open(cls.inventory, "w") as f:
            f.write("[fleet]\n")
            for h, extra in zip(cls.hosts.values(), ("", " tunelab_runner=image")):
                f.write(f"{h.name} ansible_host={h.address} ansible_port={h.port} tunelab_root={h.root} "
                        f"tunelab_state_dir={h.root}/state{extra}\n")
            f.write(f"c ansible_host=127.0.0.4 ansible_port={cls.refusing_port} tunelab_root={cls.base}/c\n")
            f.write("\n[fleet:vars]\nansible_user=root\n"
                    f"ansible_ssh_private_key_file={key}\n"
                    "ansible_ssh_common_args='-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null'\n")
        cls.results = os.path.join(cls.base, "home-results")
        cls.thp_before = read_thp()

    @classmethod
    def tearDownClass(cls):
        for host in cls.hosts.values():
            host.drop_out()
        shutil.rmtree(cls.base, ignore_errors=True)

    def fleet(self, *args, wait=True, inventory=None):
        argv = [FLEET, "--inventory", inventory or self.inventory, "--bundle", BUNDLE, "--args-file", ARGS_FILE,
                "--results-dir", self.results, *args]
        log = open(os.path.join(self.base, f"fleet-{time.monotonic_ns()}.log"), "w+")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, text=True)
        if not wait:
            return proc, log
        proc.wait(timeout=900)
        log.seek(0)
        text = log.read()
        log.close()
        return proc.returncode, text

    def state(self, fleet_id):
        with open(os.path.join(self.results, ".fleet", fleet_id, "fleet.json")) as f:
            return json.load(f)

    def test_fleet_runs_drops_a_host_resumes_it_and_reports_across_hosts(self):
        a, b = self.hosts["a"], self.hosts["b"]
        proc, log = self.fleet("//rigs:calibration_matrix", "--profile", PROFILE, wait=False)
        deadline = time.monotonic() + 600
        while not b.cells():
            if proc.poll() is not None:
                log.seek(0)
                self.fail(f"the fleet ended before host b stored a result:\n{log.read()}")
            self.assertLess(time.monotonic(), deadline, "host b stored no result within 10 minutes")
            time.sleep(0.2)
        b.drop_out()
        before_kill = {}
        for path in b.cells():
            with open(path, "rb") as f:
                before_kill[os.path.basename(path)] = f.read()
        proc.wait(timeout=900)
        log.seek(0)
        out = log.read()
        log.close()
        print(out)  # kept in the test log: what a user sees
        self.assertEqual(proc.returncode, 1, out)
        fleet_id = next(line.split()[2].rstrip(":") for line in out.splitlines() if line.startswith("fleet run fleet-"))
        state = self.state(fleet_id)["hosts"]
        self.assertEqual(state["a"]["status"], "home", out)
        self.assertIn(state["b"]["status"], ("dropped", "failed", "interrupted"), out)
        self.assertEqual(state["c"]["status"], "failed")
        self.assertIn("unreachable over SSH", state["c"]["error"])
        self.assertIn("Connection refused", state["c"]["error"])
        run_a = os.path.join(self.results, "a", state["a"]["run_id"])
        with open(os.path.join(run_a, "manifest.json")) as f:
            manifest = json.load(f)
        self.assertEqual(manifest["state"], "complete")
        self.assertEqual(manifest["fleet"], {"host": "a", "fleet_id": fleet_id})
        a_files = {p: os.stat(p).st_mtime_ns for p in glob.glob(os.path.join(run_a, "**"), recursive=True)}
        a_markers = sorted(glob.glob(os.path.join(a.root, "fleet", "*.pid")))

        b.start()
        code, out = self.fleet("--resume", fleet_id)
        print(out)
        self.assertEqual(code, 1, out)  # host c still refuses
        self.assertIn(f"a: run {state['a']['run_id']} is home already; not run again", out)
        resumed = self.state(fleet_id)["hosts"]
        self.assertEqual(resumed["b"]["status"], "home", out)
        self.assertEqual(resumed["b"]["run_id"], state["b"]["run_id"])
        self.assertEqual(resumed["c"]["status"], "failed")
        # Nothing of a's changed, and a ran nothing new.
        self.assertEqual({p: os.stat(p).st_mtime_ns for p in a_files}, a_files)
        self.assertEqual(sorted(glob.glob(os.path.join(a.root, "fleet", "*.pid"))), a_markers)
        run_b = os.path.join(self.results, "b", state["b"]["run_id"])
        with open(os.path.join(run_b, "manifest.json")) as f:
            manifest_b = json.load(f)
        self.assertEqual(manifest_b["state"], "complete")
        cells_b = sorted(os.listdir(os.path.join(run_b, "cells")))
        self.assertEqual(len(cells_b), 6)  # 2 cells x 3 repetitions
        for name, body in before_kill.items():  # stored before the drop-out: kept, not rerun
            with open(os.path.join(run_b, "cells", name), "rb") as f:
                self.assertEqual(f.read(), body, name)

        # b's runner ran in the image (its cells say which), a's on the host; no runner container is left.
        tag = next(iter(self.cell_provenance(run_b)))
        self.assertRegex(tag, r"^localhost/tunelab-rig-os:[0-9a-f]{16}$")
        self.assertEqual(self.cell_provenance(run_a), {None})
        self.assertEqual(self.cell_provenance(run_b), {tag})
        left = subprocess.run([*PODMAN, "ps", "--all", "--format", "{{.Names}}", "--filter", "name=^tl-runner-"],
                              stdout=subprocess.PIPE, text=True, check=True).stdout.split()
        self.assertEqual(left, [])

        report = os.path.join(self.base, "cross-host.pdf")
        argv = [REPORT, state["a"]["run_id"], state["b"]["run_id"], "--kind", "cross-host", "--out",
                report, "--text", report + ".txt", "--results-dir", self.results, "--no-reference"]
        refused = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.assertNotEqual(refused.returncode, 0, refused.stdout)
        self.assertIn(f"runner: on the host vs in image {tag}", refused.stdout)
        done = subprocess.run(argv + ["--allow-provenance-mismatch"], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
        self.assertEqual(done.returncode, 0, done.stdout)
        with open(report + ".txt") as f:
            text = f.read()
        self.assertIn("ONE PHYSICAL MACHINE: a and b are two fleet hosts on host", text)
        self.assertIn("PROVENANCE MISMATCH, compared anyway: runner: on the host vs in image", text)
        self.assertIn("a (baseline)", text)
        self.assertGreater(os.path.getsize(report), 10_000)

        # Two fleet hosts on one kernel ran with hugepages=host: the host's THP setting is as it was.
        self.assertEqual(read_thp(), self.thp_before)

    def test_hostile_hosts_fail_alone_and_the_good_one_comes_home(self):
        # d answers the plan with a document that crashed the controller before (rich markup in its host id,
        # cells that are not a list); e plans and "runs" as asked but sends back a 200-byte archive whose pax
        # header declares 2^80 bytes (MemoryError in tarfile before). a is an honest host.
        hostile = {"d": Host(self.base, "d", "127.0.0.5"), "e": Host(self.base, "e", "127.0.0.6")}
        with tarfile.open(BUNDLE) as bundle:
            real_remote_run = bundle.extractfile("remote_run.py").read()
        with open(BUNDLE, "rb") as f:
            sha = hashlib.sha256(f.read()).hexdigest()
        for host in hostile.values():
            bundle_dir = os.path.join(host.root, "bundles", sha[:16])  # "shipped" already: fleet leaves it
            os.makedirs(os.path.join(bundle_dir, "matrix.runfiles", "tunelab"))
            with open(os.path.join(bundle_dir, ".complete"), "w") as f:
                f.write(sha + "\n")
            write_script(os.path.join(bundle_dir, "matrix"), HOSTILE_MATRIX[host.name])
            with open(os.path.join(bundle_dir, "remote_run_real.py"), "wb") as f:
                f.write(real_remote_run)
            write_script(os.path.join(bundle_dir, "remote_run.py"), HOSTILE_REMOTE_RUN[host.name])
            host.start()
        inventory = os.path.join(self.base, "hostile-hosts.ini")
        with open(self.inventory) as f, open(inventory, "w") as out:
            for line in f:
                if line.startswith(("b ", "c ")):
                    continue
                out.write(line)
                if line.startswith("a "):
                    for h in hostile.values():
                        out.write(f"{h.name} ansible_host={h.address} ansible_port={h.port} tunelab_root={h.root} "
                                  f"tunelab_state_dir={h.root}/state\n")
        try:
            code, out = self.fleet("//rigs:calibration_matrix", "--profile", PROFILE, inventory=inventory)
        finally:
            for h in hostile.values():
                h.drop_out()
        print(out)
        self.assertEqual(code, 1, out)
        self.assertNotIn("Traceback", out)
        fleet_id = next(line.split()[2].rstrip(":") for line in out.splitlines() if line.startswith("fleet run fleet-"))
        hosts = self.state(fleet_id)["hosts"]
        self.assertEqual(hosts["a"]["status"], "home", out)
        self.assertEqual(hosts["d"]["status"], "failed", out)
        self.assertIn("no usable plan came back", hosts["d"]["error"])
        self.assertEqual(hosts["e"]["status"], "failed", out)
        self.assertIn("the archive brought home was refused", hosts["e"]["error"])
        self.assertIn("extended tar header", hosts["e"]["error"])
        run_a = os.path.join(self.results, "a", hosts["a"]["run_id"])
        with open(os.path.join(run_a, "manifest.json")) as f:
            self.assertEqual(json.load(f)["state"], "complete")
        self.assertEqual(len(glob.glob(os.path.join(run_a, "cells", "*.json"))), 6)
        self.assertFalse(os.path.exists(os.path.join(self.results, "d")))
        self.assertFalse(os.path.exists(os.path.join(self.results, "e")))

    def cell_provenance(self, run_dir):
        runner_images = set()
        for path in glob.glob(os.path.join(run_dir, "cells", "*.json")):
            with open(path) as f:
                runner_images.add(json.load(f)["provenance"].get("runner_image"))
        return runner_images

    def test_a_host_without_the_jdk_asked_for_is_reported_with_the_reason(self):
        # Plan only: a declares its own JDK under a name the matrix asks for, b does not have it.
        jdk_home = os.path.dirname(os.path.dirname(os.path.realpath(JAVA)))
        inventory = os.path.join(self.base, "jdk-hosts.ini")
        with open(self.inventory) as f, open(inventory, "w") as out:
            for line in f:
                out.write(line.rstrip("\n") + (f" tunelab_jdks=hostjdk={jdk_home}\n" if line.startswith("a ")
                                               else "\n"))
        code, out = self.fleet("//rigs:calibration_matrix", "--profile", PROFILE, "--set", "jdk=hostjdk",
                               "--limit", "a,b", "--plan-only", inventory=inventory)
        print(out)
        self.assertEqual(code, 1, out)
        fleet_id = next(line.split()[2].rstrip(":") for line in out.splitlines() if line.startswith("fleet run fleet-"))
        hosts = self.state(fleet_id)["hosts"]
        self.assertEqual(hosts["a"]["status"], "planned", out)
        self.assertEqual(hosts["b"]["status"], "failed", out)
        self.assertIn("jdk=hostjdk: not installed", hosts["b"]["error"])
        self.assertIn("jdk=hostjdk: not installed", out)


if __name__ == "__main__":
    unittest.main()
