"""remote_run.py for real: detached runs, their markers, a killed run, a dead supervisor, packing a run."""

import importlib.util
import json
import os
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import types
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "remote_run.py")


def remote_run(*args):
    out = subprocess.run([sys.executable, SCRIPT, *args], stdout=subprocess.PIPE, text=True, timeout=60)
    return out.returncode, json.loads(out.stdout)


class RemoteRunTest(unittest.TestCase):
    def setUp(self):
        self.state = tempfile.mkdtemp()

    def start(self, run_id, *argv):
        return remote_run("start", "--state", self.state, "--run-id", run_id, "--env", "GREETING=hello", "--",
                          *argv)

    def test_a_detached_run_leaves_its_exit_status_in_the_marker(self):
        started = time.monotonic()
        code, doc = self.start("r1", sys.executable, "-c",
                               "import os, time; time.sleep(1); print(os.environ['GREETING']); raise SystemExit(1)")
        self.assertEqual(code, 0, doc)
        self.assertLess(time.monotonic() - started, 1.0, "start must return at once, not wait for the run")
        self.assertEqual(doc["state"], "running")
        code, again = self.start("r1", "true")
        self.assertEqual(code, 1)
        self.assertIn("still running", again["error"])
        code, done = remote_run("wait", "--state", self.state, "--run-id", "r1", "--interval-s", "0.2")
        self.assertEqual((done["state"], done["exit_status"], done["signal"]), ("finished", 1, None))
        with open(os.path.join(self.state, "r1.log")) as f:
            self.assertEqual(f.read(), "hello\n")

    def test_a_killed_matrix_is_recorded_with_its_signal(self):
        code, doc = self.start("r2", "sleep", "30")
        supervisor = doc["pid"]
        child = int(subprocess.run(["pgrep", "-P", str(supervisor)], stdout=subprocess.PIPE, text=True).stdout.split()[0])
        os.kill(child, signal.SIGKILL)
        code, done = remote_run("wait", "--state", self.state, "--run-id", "r2", "--interval-s", "0.2")
        self.assertEqual((done["state"], done["exit_status"], done["signal"]), ("finished", None, 9))

    def test_a_dead_supervisor_is_told_apart_from_a_running_one(self):
        code, doc = self.start("r3", "sleep", "30")
        supervisor = doc["pid"]
        child = int(subprocess.run(["pgrep", "-P", str(supervisor)], stdout=subprocess.PIPE, text=True).stdout.split()[0])
        os.kill(supervisor, signal.SIGKILL)
        os.kill(child, signal.SIGKILL)
        code, done = remote_run("wait", "--state", self.state, "--run-id", "r3", "--interval-s", "0.2",
                                "--timeout-s", "20")
        self.assertEqual(done["state"], "dead")
        self.assertNotIn("timed_out", done)
        self.assertEqual(remote_run("status", "--state", self.state, "--run-id", "never")[1], {"state": "absent"})

    def test_pack_takes_the_one_run_folder(self):
        results = tempfile.mkdtemp()
        run = os.path.join(results, "vm-1", "20261124T000000Z-abcd")
        os.makedirs(os.path.join(run, "cells"))
        with open(os.path.join(run, "manifest.json"), "w") as f:
            f.write("{}")
        os.symlink("/etc/passwd", os.path.join(run, "cells", "link"))
        out = os.path.join(self.state, "run.tar.gz")
        code, doc = remote_run("pack", "--results", results, "--run-id", "20261124T000000Z-abcd", "--out", out)
        self.assertEqual(code, 0, doc)
        with tarfile.open(out) as tar:
            names = sorted(tar.getnames())
        self.assertEqual(names, ["vm-1/20261124T000000Z-abcd", "vm-1/20261124T000000Z-abcd/cells",
                                 "vm-1/20261124T000000Z-abcd/manifest.json"])  # the link is left out
        code, doc = remote_run("pack", "--results", results, "--run-id", "20261124T000000Z-ffff", "--out", out)
        self.assertEqual(code, 1)
        self.assertIn("found 0", doc["error"])

    def test_links_planted_where_the_run_writes_are_never_written_through(self):
        # Issue 39, finding 1: root's remote_run followed a local user's links from <run>.pid.tmp, <run>.log
        # and <run>.tar.gz.tmp and overwrote or appended to their targets.
        victim = os.path.join(tempfile.mkdtemp(), "victim")
        with open(victim, "w") as f:
            f.write("precious\n")
        os.symlink(victim, os.path.join(self.state, "r5.pid.tmp"))
        os.symlink(victim, os.path.join(self.state, "r5.done.tmp"))
        code, doc = self.start("r5", "true")
        self.assertEqual(code, 0, doc)
        remote_run("wait", "--state", self.state, "--run-id", "r5", "--interval-s", "0.2", "--timeout-s", "20")
        self.assertFalse(os.path.islink(os.path.join(self.state, "r5.pid")))
        os.symlink(victim, os.path.join(self.state, "r6.log"))
        code, doc = self.start("r6", "echo", "appended")
        self.assertEqual(code, 1)
        self.assertIn("r6.log cannot be opened as a file of its own", doc["error"])
        results = tempfile.mkdtemp()
        os.makedirs(os.path.join(results, "vm-1", "20261124T000000Z-abcd"))
        with open(os.path.join(results, "vm-1", "20261124T000000Z-abcd", "manifest.json"), "w") as f:
            f.write("{}")
        out = os.path.join(self.state, "run.tar.gz")
        os.symlink(victim, out + ".tmp")
        code, doc = remote_run("pack", "--results", results, "--run-id", "20261124T000000Z-abcd", "--out", out)
        self.assertEqual(code, 0, doc)
        with open(victim) as f:
            self.assertEqual(f.read(), "precious\n")
        with tarfile.open(out) as tar:
            self.assertIn("vm-1/20261124T000000Z-abcd/manifest.json", tar.getnames())

    def test_exec_runs_in_the_foreground_and_passes_the_exit_status_on(self):
        out = subprocess.run([sys.executable, SCRIPT, "exec", "--env", "GREETING=hi", "--", sys.executable, "-c",
                              "import os; print(os.environ['GREETING']); raise SystemExit(2)"],
                             stdout=subprocess.PIPE, text=True, timeout=60)
        self.assertEqual(out.returncode, 1)
        said, doc = out.stdout.splitlines()
        self.assertEqual(said, "hi")
        self.assertEqual(json.loads(doc), {"error": "exited 2", "exit_status": 2})


class InImageTest(unittest.TestCase):
    """How a command is wrapped into the rigs' image (podman itself: fleet_integration_test)."""

    def test_the_runner_container_shares_the_hosts_namespaces_and_only_the_folders_given(self):
        spec = importlib.util.spec_from_file_location("remote_run", SCRIPT)
        remote_run_module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(remote_run_module)
        fake = types.SimpleNamespace(unavailable_reason=lambda: None, podman=lambda: "/usr/bin/podman",
                                     PODMAN_OPTIONS=["--runtime", "runc"],
                                     rlimit_options=lambda: ["--ulimit", "nofile=1024:1024"])
        argv = remote_run_module.in_image_argv(fake, "localhost/tunelab-rig-os:0123456789abcdef", "tl-runner-r1",
                                               ["/b/matrix", "--dry-run"], "/b/matrix.runfiles/tunelab",
                                               {"TUNELAB_FLEET_HOST": "h1"}, ["/r", "/b", "/r"])
        identity = [a for path in ("/etc/machine-id", "/etc/os-release") if os.path.exists(path)
                    for a in ("-v", f"{path}:{path}:ro")]
        self.assertEqual(argv, [
            "/usr/bin/podman", "--runtime", "runc", "run", "--rm", "--name", "tl-runner-r1", "--privileged",
            "--pid=host", "--ipc=host", "--network=host", "--uts=host", "--init=false", "--ulimit",
            "nofile=1024:1024", "-v", "/b:/b", "-v", "/r:/r", *identity, "-w", "/b/matrix.runfiles/tunelab",
            "--env", "TUNELAB_FLEET_HOST=h1",
            "--env", "TUNELAB_RUNNER_IMAGE=localhost/tunelab-rig-os:0123456789abcdef",
            "localhost/tunelab-rig-os:0123456789abcdef", "/b/matrix", "--dry-run"])
        fake.unavailable_reason = lambda: "podman is not installed"
        with self.assertRaisesRegex(RuntimeError, "tunelab_runner=image: podman is not installed"):
            remote_run_module.in_image_argv(fake, "t", "n", ["x"], "/", {}, [])


if __name__ == "__main__":
    unittest.main()
