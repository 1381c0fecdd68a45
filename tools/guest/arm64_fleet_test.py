"""An emulated aarch64 host in the fleet, end to end (manual: ~40 min here, most of it QEMU's TCG).

Boots //tools/guest:arm64_host (Debian's arm64 kernel and userland under qemu-system-aarch64, sshd on a
loopback port) and an sshd on 127.0.0.2 for this x86-64 machine, then through the real fleet: the
calibration matrix's cross_arch profile, the Redis tiny profile (a native arm64 program, cross-compiled) and
the YARN cross_arch cell (a JVM on arm64), each host with the bundle of its machine. Every run must come
home schema-checked; the aarch64 runs must say `aarch64` and emulated, skip JDK 11 with its reason and use
the aarch64 builds; the cross-host (Kunpeng vs x86) report of the calibration and the YARN runs must carry
EMULATED HOST on every page. The guest is always stopped and its port freed.

  args: FLEET REPORT KERNEL INITRAMFS then per matrix (calibration, redis, yarn): BUNDLE BUNDLE_AARCH64 ARGS
TUNELAB_KEEP_RESULTS=DIR (--test_env) copies the runs and reports there, for promoting them.
"""

import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

from tools.fleet.testhosts import SSHD, Host
from tools.guest.host_guest import GuestHost

FLEET, REPORT, KERNEL, INITRAMFS = (os.path.abspath(p) for p in sys.argv[1:5])
MATRICES = {}
for index, name in enumerate(("calibration", "redis_numa", "yarn_cps")):
    bundle, bundle_aarch64, args_file = (os.path.abspath(p) for p in sys.argv[5 + 3 * index:8 + 3 * index])
    MATRICES[name] = {"bundle": bundle, "bundle_aarch64": bundle_aarch64, "args": args_file}
del sys.argv[1:14]
PROFILES = {"calibration": "cross_arch", "redis_numa": "tiny", "yarn_cps": "cross_arch"}


def pdf_pages_text(path):
    import pypdfium2
    return [page.get_textpage().get_text_range() for page in pypdfium2.PdfDocument(path)]


class Arm64FleetTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not shutil.which("qemu-system-aarch64"):
            raise unittest.SkipTest("qemu-system-aarch64 is not installed (apt-get install --no-install-recommends "
                                    "qemu-system-arm); ./bazelw does not install it: this test is manual")
        if not os.path.exists(SSHD):
            raise AssertionError(f"no sshd at {SSHD}: ./bazelw installs openssh-server")
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        cls.base = tempfile.mkdtemp(prefix="tl-arm64-")
        key = os.path.join(cls.base, "client_key")
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key], check=True)
        shutil.copy(key + ".pub", os.path.join(cls.base, "authorized_keys"))
        cls.x86 = Host(cls.base, "x86", "127.0.0.2")
        cls.x86.start()
        with open(key + ".pub") as f:
            cls.guest = GuestHost("arm64", KERNEL, INITRAMFS, f.read(), hostname="arm64-guest",
                                  console_path=os.path.join(cls.base, "guest-console.log"))
        cls.guest.__enter__()
        print(f"arm64 guest up after {cls.guest.boot_s:.0f} s on 127.0.0.1:{cls.guest.port}", flush=True)
        cls.inventory = os.path.join(cls.base, "hosts.ini")
        with open(cls.inventory, "w") as f:
            f.write(f"[fleet]\nx86 ansible_host={cls.x86.address} ansible_port={cls.x86.port} "
                    f"tunelab_root={cls.x86.root} tunelab_state_dir={cls.x86.root}/state\n"
                    f"arm64 ansible_host=127.0.0.1 ansible_port={cls.guest.port} tunelab_root=/var/tmp/tunelab\n"
                    "\n[fleet:vars]\nansible_user=root\n"
                    f"ansible_ssh_private_key_file={key}\n"
                    "ansible_ssh_common_args='-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null'\n")
        cls.results = os.path.join(cls.base, "home-results")
        cls.runs = {}

    @classmethod
    def tearDownClass(cls):
        cls.guest.__exit__(None, None, None)
        cls.x86.drop_out()
        keep = os.environ.get("TUNELAB_KEEP_RESULTS")
        if keep:
            shutil.copytree(cls.base, os.path.join(keep, os.path.basename(cls.base)), symlinks=False,
                            ignore=shutil.ignore_patterns("*.sock", "ansible*", "root"))
        shutil.rmtree(cls.base, ignore_errors=True)

    def fleet(self, matrix):
        m = MATRICES[matrix]
        argv = [FLEET, "--inventory", self.inventory, "--bundle", f"x86_64={m['bundle']}",
                "--bundle", f"aarch64={m['bundle_aarch64']}", "--args-file", m["args"],
                "--results-dir", self.results, f"//rigs:{matrix}_matrix", "--profile", PROFILES[matrix]]
        started = time.monotonic()
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=3600)
        print(f"--- fleet {matrix} ({time.monotonic() - started:.0f} s)\n{proc.stdout}", flush=True)
        self.assertEqual(proc.returncode, 0, proc.stdout)
        fleet_id = next(line.split()[2].rstrip(":") for line in proc.stdout.splitlines()
                        if line.startswith("fleet run fleet-"))
        with open(os.path.join(self.results, ".fleet", fleet_id, "fleet.json")) as f:
            hosts = json.load(f)["hosts"]
        self.assertEqual({h: s["machine"] for h, s in hosts.items()}, {"x86": "x86_64", "arm64": "aarch64"})
        self.assertEqual({h: s["status"] for h, s in hosts.items()}, {"x86": "home", "arm64": "home"})
        return {h: s["run_dir"] for h, s in hosts.items()}

    def cells(self, run_dir):
        docs = []
        for path in sorted(glob.glob(os.path.join(run_dir, "cells", "*.json"))):
            with open(path) as f:
                docs.append(json.load(f))
        return docs

    def report(self, runs, name):
        out = os.path.join(self.base, f"{name}.pdf")
        proc = subprocess.run([REPORT, runs["x86"], runs["arm64"], "--kind", "cross-host", "--out", out,
                               "--text", out[:-4] + ".txt"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, env=dict(os.environ, BUILD_WORKSPACE_DIRECTORY=self.base))
        self.assertEqual(proc.returncode, 0, proc.stdout)
        pages = pdf_pages_text(out)
        for number, text in enumerate(pages, 1):
            self.assertIn("EMULATED HOST: mechanics, not speed", text, f"{name} page {number}")
        with open(out[:-4] + ".txt") as f:
            return f.read()

    def test_1_calibration_on_both_architectures_and_the_report(self):
        runs = self.fleet("calibration")
        arm = self.cells(runs["arm64"])
        self.assertTrue(arm)
        for d in arm:
            cpu = d["provenance"]["host"]["cpu"]
            self.assertEqual(cpu["architecture"], "aarch64")
            self.assertTrue(cpu["emulated"], cpu)
            if d["cell"]["params"]["jdk"] == "11":
                self.assertEqual(d["status"], "skipped")
                self.assertIn("no pinned JDK 11 for aarch64", d["reason"])
        ok = [d for d in arm if d["status"] == "ok"]
        self.assertTrue(ok, [d.get("reason") for d in arm])
        builds = {d["cell"]["params"]["jdk"]: d["provenance"]["jdk"]["vendor"] for d in ok}
        self.assertIn("Debian", builds.get("17", ""))  # Debian's arm64 OpenJDK 17
        self.assertTrue(all(d["provenance"]["host"]["cpu"]["architecture"] == "x86_64"
                            for d in self.cells(runs["x86"])))
        text = self.report(runs, "calibration-cross-host")
        self.assertIn("Cross-host (x86_64 vs aarch64)", text)
        self.assertIn("QEMU TCG 'max' CPU", text)

    def test_2_redis_runs_natively_on_arm64(self):
        runs = self.fleet("redis_numa")
        ok = [d for d in self.cells(runs["arm64"]) if d["status"] == "ok"]
        self.assertTrue(ok)
        for d in ok:
            self.assertGreater(d["metrics"][0]["value"], 0)
            self.assertEqual(d["provenance"]["host"]["cpu"]["architecture"], "aarch64")

    def test_3_a_yarn_cell_on_arm64_and_the_report(self):
        runs = self.fleet("yarn_cps")
        arm = self.cells(runs["arm64"])
        self.assertTrue([d for d in arm if d["status"] == "ok"], [d.get("reason") for d in arm])
        text = self.report(runs, "yarn-cross-host")
        self.assertIn("Cross-host (x86_64 vs aarch64)", text)

    def test_4_the_guest_is_stopped_and_its_port_freed(self):
        port = self.guest.port
        self.guest.__exit__(None, None, None)
        self.assertIsNotNone(self.guest.proc.poll())
        with self.assertRaises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=2).close()


if __name__ == "__main__":
    unittest.main()
