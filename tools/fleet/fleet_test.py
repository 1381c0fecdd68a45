"""The fleet's decisions without a fleet: per-host paths and commands, how a run is (re)started from what the
host said, failures as messages, resuming a fleet run, and a refused archive. The real thing over SSH is
fleet_integration_test.py."""

import argparse
import io
import json
import os
import sys
import tarfile
import tempfile
import unittest

from rich.console import Console

from tools.fleet import fleet

SHA = "ab" * 32
RUN = "20261124T101500Z-1a2b"


def plan_for(hostvars=None, run_id=RUN):
    state = fleet.HostState(run_id=run_id)
    return fleet.host_plan("h1", hostvars or {}, "fleet-20261124T101500Z-0000", SHA,
                           ["--matrix=rigs/calibration/matrix.toml", "--workload=workloads/calibration/workload.toml"],
                           ["--profile", "smoke"], "c0ffee", state)


class HostPlanTest(unittest.TestCase):
    def test_paths_and_commands_live_under_the_hosts_root(self):
        p = plan_for({"tunelab_root": "/srv/tl", "tunelab_lock_file": "/srv/tl/lock"})
        bundle = f"/srv/tl/bundles/{SHA[:16]}"
        self.assertEqual(p["bundle_dir"], bundle)
        self.assertEqual(p["cwd"], bundle + "/matrix.runfiles/tunelab")
        self.assertEqual(p["env"], {"TUNELAB_HARNESS_COMMIT": "c0ffee", "TUNELAB_LOCK_FILE": "/srv/tl/lock",
                                    "TUNELAB_FLEET_HOST": "h1", "TUNELAB_FLEET_ID": "fleet-20261124T101500Z-0000"})
        self.assertEqual(p["plan_argv"][:5], [bundle + "/matrix", "--matrix=rigs/calibration/matrix.toml",
                                              "--workload=workloads/calibration/workload.toml", "--profile", "smoke"])
        self.assertEqual(p["plan_argv"][-5:], ["--results-dir", "/srv/tl/results", "--dry-run", "--plan-json",
                                               "/srv/tl/fleet/fleet-20261124T101500Z-0000.plan.json"])
        self.assertEqual(p["pack_argv"][-2:], ["--out", f"/srv/tl/fleet/{RUN}.tar.gz"])
        self.assertEqual(p["wait_argv"][:3], ["/usr/bin/python3", bundle + "/remote_run.py", "wait"])
        # The runner's command comes after `--`, whole, with the host's environment given to remote_run.
        base = p["start_base"]
        self.assertIn("--env=TUNELAB_LOCK_FILE=/srv/tl/lock", base)
        self.assertEqual(base[base.index("--") + 1], bundle + "/matrix")

    def test_defaults_and_refusals(self):
        p = plan_for({}, run_id="")
        self.assertTrue(p["bundle_dir"].startswith(fleet.DEFAULT_ROOT + "/bundles/"))
        self.assertNotIn("TUNELAB_LOCK_FILE", p["env"])  # the runner's own default lock
        self.assertEqual((p["status_argv"], p["wait_argv"], p["start_argv"]), ([], [], []))
        with self.assertRaisesRegex(fleet.FleetError, "must be an absolute path"):
            plan_for({"tunelab_root": "relative/root"})


    def test_a_host_that_runs_in_the_image(self):
        p = plan_for({"tunelab_root": "/srv/tl", "tunelab_runner": "image", "tunelab_jdks": "bisheng=/opt/bisheng17"})
        bundle = f"/srv/tl/bundles/{SHA[:16]}"
        cwd = bundle + "/matrix.runfiles/tunelab"
        self.assertEqual((p["runner"], p["python_needed"]), ("image", "3.8"))
        self.assertEqual(p["image_argv"], ["/usr/bin/python3", bundle + "/remote_run.py", "image", "--cwd", cwd])
        self.assertEqual(p["env"]["TUNELAB_JDKS"], "bisheng=/opt/bisheng17")
        # The plan and the run go through remote_run into the image, with the host folders the runner needs:
        # the bundle, the results, the fleet's state, the lock's folder (the runner's default) and the JDK the
        # host declares.
        mounts = ["--mount=" + m for m in (bundle, "/srv/tl/results", "/srv/tl/fleet", "/run/lock", "/opt/bisheng17")]
        for argv in (p["plan_argv"], p["start_base"]):
            before = argv[:argv.index("--")]
            self.assertIn(f"--image-tag-file={cwd}/tools/container/rig_os.tag", before)
            self.assertEqual([a for a in before if a.startswith("--mount=")], mounts)
            self.assertEqual(argv[argv.index("--") + 1], bundle + "/matrix")
        self.assertEqual(p["plan_argv"][2], "exec")
        self.assertEqual(p["start_base"].count("--cwd"), 1)
        # On the host: no image, the wheels' Python.
        host = plan_for({})
        self.assertEqual((host["image_argv"], host["runner"]), ([], "host"))
        self.assertEqual(host["python_needed"], "%d.%d" % sys.version_info[:2])
        with self.assertRaisesRegex(fleet.FleetError, "tunelab_runner 'docker': expected one of host, image"):
            plan_for({"tunelab_runner": "docker"})


class StartDecisionTest(unittest.TestCase):
    def test_what_the_host_said_decides_how_the_run_starts(self):
        p = plan_for()
        cases = {
            "absent": ["--run-id", RUN],  # never started: a new run with the fleet's id
            "dead": ["--resume", RUN],  # the host dropped out: the matrix resumes its stored run
            "interrupted": ["--resume", RUN],
        }
        self.assertEqual(fleet.start_argv(p, {"state": "absent"}, RUN)[-2:], cases["absent"])
        self.assertEqual(fleet.start_argv(p, {"state": "dead"}, RUN)[-2:], cases["dead"])
        self.assertEqual(fleet.start_argv(p, {"state": "finished", "exit_status": 130}, RUN)[-2:], cases["interrupted"])
        self.assertEqual(fleet.start_argv(p, {"state": "finished", "exit_status": None, "signal": 9}, RUN)[-2:],
                         cases["dead"])
        # Running, or finished (cells failed or not): only watched and brought home.
        self.assertEqual(fleet.start_argv(p, {"state": "running"}, RUN), [])
        self.assertEqual(fleet.start_argv(p, {"state": "finished", "exit_status": 1}, RUN), [])
        self.assertEqual(fleet.start_argv(p, {}, RUN)[-2:], cases["absent"])


class FailureMessageTest(unittest.TestCase):
    def test_messages_name_the_cause(self):
        unreachable = fleet.describe_failure("runner_on_unreachable", "python", {
            "msg": "Failed to connect to the host via ssh: ssh: connect to host 127.0.0.4 port 2299: Connection refused"})
        self.assertTrue(unreachable.startswith("unreachable over SSH: "))
        self.assertIn("Connection refused", unreachable)
        python = fleet.describe_failure("runner_on_failed", "python", {
            "msg": "[Errno 2] No such file or directory: b'/usr/bin/python3'", "rc": 2})
        self.assertIn("no usable /usr/bin/python3", python)
        plan = fleet.describe_failure("runner_on_failed", "plan", {
            "msg": "non-zero return code", "stderr": "Traceback ...\nerror: the matrix is bad"})
        self.assertEqual(plan, "plan: error: the matrix is bad")
        # The runner says why on its standard output, wrapped to the terminal; remote_run's JSON line ends it.
        jdk = fleet.describe_failure("runner_on_failed", "plan", {
            "msg": "non-zero return code", "rc": 1, "stderr": "",
            "stdout": "error: cannot run this matrix:\n  jdk=hostjdk: not installed. Known JDKs: jdk11, jdk17. "
                      "Declare one with\nTUNELAB_JDKS=NAME=PATH.\n{\"error\": \"exited 2\", \"exit_status\": 2}\n"})
        self.assertEqual(jdk, "plan: error: cannot run this matrix: jdk=hostjdk: not installed. Known JDKs: jdk11, "
                              "jdk17. Declare one with TUNELAB_JDKS=NAME=PATH.")


def make_args(**kw):
    base = dict(inventory="hosts.ini", target="//rigs:calibration_matrix", profile="smoke", set=None, limit=None,
                resume=None, results_dir=None, plan_only=False)
    base.update(kw)
    return argparse.Namespace(**base)


class ResumeTest(unittest.TestCase):
    def setUp(self):
        self.results = tempfile.mkdtemp()
        self.console = Console(file=io.StringIO(), width=200)

    def new_fleet(self, **kw):
        f = fleet.Fleet(make_args(results_dir=self.results, **kw), self.console, self.results)
        return f

    def test_a_fleet_run_resumes_with_its_own_matrix_and_hosts(self):
        first = self.new_fleet()
        first.load_or_create(["a", "b"])
        first.hosts["a"].status, first.hosts["a"].run_id = "home", RUN
        first.save()
        again = self.new_fleet(target=None, profile=None, resume=first.fleet_id)
        again.load_or_create(["a", "b"])
        self.assertEqual(again.meta["target"], "//rigs:calibration_matrix")
        self.assertEqual((again.hosts["a"].status, again.hosts["a"].run_id), ("home", RUN))
        with self.assertRaisesRegex(fleet.FleetError, "it ran profile 'smoke', not 'full'"):
            self.new_fleet(target=None, profile="full", resume=first.fleet_id).load_or_create(["a", "b"])
        with self.assertRaisesRegex(fleet.FleetError, "no longer in the inventory"):
            self.new_fleet(target=None, profile=None, resume=first.fleet_id).load_or_create(["a"])
        with self.assertRaisesRegex(fleet.FleetError, "expected a fleet id"):
            self.new_fleet(resume="../../etc").load_or_create(["a"])
        with self.assertRaisesRegex(fleet.FleetError, "cannot resume"):
            self.new_fleet(resume="fleet-20250101T000000Z-dead").load_or_create(["a"])
        with self.assertRaisesRegex(fleet.FleetError, "not in the inventory"):
            self.new_fleet(limit="a,c").load_or_create(["a", "b"])

    def test_a_refused_archive_fails_the_host_and_keeps_what_is_home(self):
        f = self.new_fleet()
        f.load_or_create(["a"])
        f.hosts["a"].run_id = RUN
        staging = os.path.join(self.results, "incoming")
        os.makedirs(os.path.join(staging, "a"))
        with tarfile.open(os.path.join(staging, "a", "run.tar.gz"), "w:gz") as tar:
            body = b"{}"
            info = tarfile.TarInfo(f"vm/{RUN}/manifest.json")
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
        home = os.path.join(self.results, "a", "kept.txt")
        os.makedirs(os.path.dirname(home))
        with open(home, "w") as out:
            out.write("kept")
        f.bring_home("a", {"staging": staging}, "0:00:01")
        self.assertEqual(f.hosts["a"].status, "failed")
        self.assertIn("the archive brought home was refused", f.hosts["a"].error)
        self.assertTrue(os.path.exists(home))
        with open(f.state_path(f.fleet_id)) as saved:
            self.assertEqual(json.load(saved)["hosts"]["a"]["status"], "failed")


if __name__ == "__main__":
    unittest.main()
