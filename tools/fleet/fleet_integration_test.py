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
controller exits 1 without a traceback. Host f's work root was made first by a local user (nobody), with
links where root writes and a planted bundle: f is refused with the reason, nothing is written through the
links and nothing planted runs. Host g's work root and host state folder lie below a link that user owns:
refused at the link, nothing made through it. Nothing listens beyond loopback; every process,
container and folder the test made is removed at the end.

  args: FLEET_BINARY REPORT_BINARY BUNDLE ARGS_FILE JAVA
"""

import glob
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

from tools.fleet.testhosts import SSHD, Host, free_port

FLEET, REPORT, BUNDLE, ARGS_FILE, JAVA = (os.path.abspath(p) for p in sys.argv[1:6])
del sys.argv[1:6]
PODMAN = ["podman", "--cgroup-manager=cgroupfs", "--events-backend=file"]
PROFILE = "fleet_smoke"
NOBODY = 65534  # Debian's nobody: the local user who is not root


def read_thp():
    with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
        return f.read()


# What makes hosts d and e hostile: a sitecustomize.py their sshd puts on every session's PYTHONPATH, so
# the host's Python answers in place of the bundle's programs (which the fleet now ships and verifies
# itself: a planted bundle is not run). d: a plan no controller should believe. e: an honest-looking plan and
# a run that does nothing, then a tiny archive whose pax header declares 2^80 bytes. Anything else (Ansible's
# own modules, the rest of remote_run) runs as on an honest host.
HOSTILE_SITECUSTOMIZE = {
    "d": """import json, os, sys
if os.path.basename(sys.argv[0]) == "matrix" and "--plan-json" in sys.argv:
    out = sys.argv[sys.argv.index("--plan-json") + 1]
    with open(out, "w") as f:
        json.dump({"estimated_s": 1, "cells": "all of them",
                   "doctor": {"host": {"host_id": "[/red] boom [link=x]"}, "cpu": {}}}, f)
    os._exit(0)  # not sys.exit: site.py would report SystemExit and go on to run the real program
""",
    "e": """import gzip, json, os, sys, tarfile
if os.path.basename(sys.argv[0]) == "matrix":
    if "--plan-json" in sys.argv:
        out = sys.argv[sys.argv.index("--plan-json") + 1]
        with open(out, "w") as f:
            json.dump({"estimated_s": 5, "cells": [{"id": "2c0b5e67fcfd", "skip_reason": None}],
                       "doctor": {"host": {"host_id": "vm-e"}, "cpu": {"online_cpus": 2}}}, f)
    os._exit(0)
if os.path.basename(sys.argv[0]) == "remote_run.py" and sys.argv[1:2] == ["pack"]:
    out = sys.argv[sys.argv.index("--out") + 1]
    info = tarfile.TarInfo("././@PaxHeader")
    info.type = tarfile.XHDTYPE
    block = bytearray(info.tobuf(tarfile.USTAR_FORMAT))
    block[124:136] = b"\\x80" + (1 << 80).to_bytes(11, "big")
    block[148:156] = b" " * 8
    block[148:156] = ("%06o" % sum(block)).encode() + b"\\0 "
    with open(out, "wb") as f:
        f.write(gzip.compress(bytes(block) + bytes(1024)))
    print(json.dumps({"archive": out, "bytes": 3}), flush=True)
    os._exit(0)
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
            # Each host's runner serves its live metrics on its own loopback address (both share this kernel).
            cls.metrics_ports = {h.name: free_port(h.address) for h in cls.hosts.values()}
            for h, extra in zip(cls.hosts.values(), ("", " tunelab_runner=image")):
                f.write(f"{h.name} ansible_host={h.address} ansible_port={h.port} tunelab_root={h.root} "
                        f"tunelab_state_dir={h.root}/state tunelab_metrics_port={cls.metrics_ports[h.name]} "
                        f"tunelab_metrics_address={h.address}{extra}\n")
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

    def indexed(self):
        """{run id} of the runs in the results database the fleet wrote (the default SQLite file)."""
        database = sqlite3.connect(f"file:{os.path.join(self.results, '.db', 'tunelab.sqlite')}?mode=ro", uri=True)
        try:
            return {run_id for (run_id,) in database.execute("SELECT run_id FROM runs")}
        finally:
            database.close()

    def state(self, fleet_id):
        with open(os.path.join(self.results, ".fleet", fleet_id, "fleet.json")) as f:
            return json.load(f)

    def scrape_hosts(self, log, seen):
        """Scrapes each target of the fleet run's Prometheus file_sd list (once the fleet has written it);
        keeps {host: what its endpoint served} of those that answered with a run."""
        log.seek(0)
        ids = [line.split()[2].rstrip(":") for line in log.read().splitlines() if line.startswith("fleet run fleet-")]
        path = os.path.join(self.results, ".fleet", ids[0], "prometheus-sd.json") if ids else ""
        if not path or not os.path.exists(path):
            return
        with open(path) as f:
            targets = json.load(f)
        for entry in targets:
            try:
                with urllib.request.urlopen(f"http://{entry['targets'][0]}/metrics", timeout=2) as r:
                    text = r.read().decode()
            except OSError:
                continue
            if "tunelab_run_info{" in text:
                seen[entry["labels"]["host"]] = text

    def test_fleet_runs_drops_a_host_resumes_it_and_reports_across_hosts(self):
        a, b = self.hosts["a"], self.hosts["b"]
        proc, log = self.fleet("//rigs:calibration_matrix", "--profile", PROFILE, "--metrics-port", "9464", wait=False)
        deadline = time.monotonic() + 600
        seen = {}  # issue 63: each host's runner serves its endpoint where the fleet's file_sd list says
        while not b.cells():
            if proc.poll() is not None:
                log.seek(0)
                self.fail(f"the fleet ended before host b stored a result:\n{log.read()}")
            self.assertLess(time.monotonic(), deadline, "host b stored no result within 10 minutes")
            self.scrape_hosts(log, seen)
            time.sleep(0.2)
        self.scrape_hosts(log, seen)
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
        self.assertIn(state["a"]["run_id"], self.indexed())  # indexed as it came home (issue 83)
        self.assertNotIn(state["b"]["run_id"], self.indexed())  # b dropped out: nothing of it yet
        self.assertIn(f"live metrics: 127.0.0.2:{self.metrics_ports['a']}; 127.0.0.3:{self.metrics_ports['b']}", out)
        self.assertEqual(sorted(seen), ["a", "b"], out)  # both hosts' runs were watched live, each its own run
        for host in ("a", "b"):
            self.assertIn(f'run_id="{state[host]["run_id"]}"', seen[host])
            self.assertIn("tunelab_host_cpu_seconds_total{", seen[host])
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
        self.assertIn(state["b"]["run_id"], self.indexed())
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
        hostile = {}
        for name, address in (("d", "127.0.0.5"), ("e", "127.0.0.6")):
            site = os.path.join(self.base, f"hostile-{name}")
            os.makedirs(site)
            with open(os.path.join(site, "sitecustomize.py"), "w") as f:
                f.write(HOSTILE_SITECUSTOMIZE[name])
            hostile[name] = Host(self.base, name, address, env={"PYTHONPATH": site})
            hostile[name].start()
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
            # One round: what is tested is that a's run comes home whole beside the hostile hosts (issue 80).
            code, out = self.fleet("//rigs:calibration_matrix", "--profile", PROFILE, "--set", "policy.repetitions=1",
                                   inventory=inventory)
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
        self.assertEqual(len(glob.glob(os.path.join(run_a, "cells", "*.json"))), 2)
        self.assertFalse(os.path.exists(os.path.join(self.results, "d")))
        self.assertFalse(os.path.exists(os.path.join(self.results, "e")))

    def test_a_work_root_another_user_made_first_is_refused_and_nothing_is_written_through_it(self):
        # Issue 39, finding 1: a local user (nobody, uid 65534) makes the work root first, as anyone can in
        # /var/tmp (here: a sticky folder like it), with links where root writes its markers, log and archive,
        # and a planted bundle that says it is complete and would run their code as root. The fleet refuses
        # the host with the reason; nothing is written through the links, nothing of the bundle runs.
        host = Host(self.base, "f", "127.0.0.7")
        sticky = os.path.join(host.dir, "var-tmp")
        os.mkdir(sticky)
        os.chmod(sticky, 0o1777)
        root = os.path.join(sticky, "tunelab")
        victim = os.path.join(self.base, "victim")
        with open(victim, "w") as f:
            f.write("precious\n")
        ran = os.path.join(self.base, "planted-code-ran")
        with open(BUNDLE, "rb") as f:  # where the fleet would look for it: named by the bundle's sha256
            bundle_dir = os.path.join(root, "bundles", hashlib.file_digest(f, "sha256").hexdigest()[:16])
        os.makedirs(bundle_dir)
        os.makedirs(os.path.join(root, "fleet"))
        with open(os.path.join(bundle_dir, ".complete"), "w") as f:
            f.write("yes\n")
        for name in ("remote_run.py", "matrix"):
            with open(os.path.join(bundle_dir, name), "w") as f:
                f.write(f"#!/usr/bin/python3\nopen({ran!r}, 'w').write('as root')\n")
            os.chmod(os.path.join(bundle_dir, name), 0o755)
        for name in ("run.pid.tmp", "run.log", "run.tar.gz.tmp"):
            os.symlink(victim, os.path.join(root, "fleet", name))
        for folder, dirs, files in os.walk(root):
            for path in [folder] + [os.path.join(folder, n) for n in dirs + files]:
                os.lchown(path, NOBODY, NOBODY)
        os.chmod(root, 0o777)
        host.start()
        # Host g (issue 58): a non-default work root and host state folder below a link the local user owns
        # (their link to a folder of root's): refused at the link, nothing made or written through it.
        linked = Host(self.base, "g", "127.0.0.8")
        real = os.path.join(linked.dir, "real")
        os.mkdir(real, 0o755)
        their_link = os.path.join(linked.dir, "theirs")
        os.symlink(real, their_link)
        os.lchown(their_link, NOBODY, NOBODY)
        linked.start()
        inventory = os.path.join(self.base, "squatted-hosts.ini")
        with open(self.inventory) as f, open(inventory, "w") as out:
            for line in f:
                if not line.startswith(("a ", "b ", "c ")):
                    out.write(line)
                    if line.startswith("[fleet]"):
                        out.write(f"f ansible_host={host.address} ansible_port={host.port} tunelab_root={root} "
                                  f"tunelab_state_dir={host.root}/state\n")
                        out.write(f"g ansible_host={linked.address} ansible_port={linked.port} "
                                  f"tunelab_root={their_link}/tunelab tunelab_state_dir={their_link}/state\n")
        try:
            code, out = self.fleet("//rigs:calibration_matrix", "--profile", PROFILE, inventory=inventory)
        finally:
            host.drop_out()
            linked.drop_out()
        print(out)
        self.assertEqual(code, 1, out)
        fleet_id = next(line.split()[2].rstrip(":") for line in out.splitlines() if line.startswith("fleet run fleet-"))
        state = self.state(fleet_id)["hosts"]["f"]
        self.assertEqual(state["status"], "failed", out)
        self.assertIn(f"work root {root} is owned by uid {NOBODY}", state["error"])
        with open(victim) as f:
            self.assertEqual(f.read(), "precious\n")
        self.assertFalse(os.path.exists(ran), "root ran the planted bundle's code")
        self.assertEqual(sorted(os.listdir(os.path.join(root, "fleet"))),
                         ["run.log", "run.pid.tmp", "run.tar.gz.tmp"])
        self.assertEqual(os.stat(root).st_uid, NOBODY)  # refused, not taken over
        state = self.state(fleet_id)["hosts"]["g"]
        self.assertEqual(state["status"], "failed", out)
        self.assertIn(f"{their_link} (on the way to", state["error"])
        self.assertIn(f"owned by uid {NOBODY}", state["error"])
        self.assertEqual(os.listdir(real), [])

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
