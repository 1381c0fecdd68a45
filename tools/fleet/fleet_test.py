"""The fleet's decisions without a fleet: per-host paths and commands, how a run is (re)started from what the
host said, failures as messages, resuming a fleet run, and a refused archive. The real thing over SSH is
fleet_integration_test.py."""

import argparse
import io
import json
import os
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import unittest

from rich.console import Console

from results import runarchive, testruns
from tools.fleet import fleet, fleetmetrics, hostinput, hostplan, playbook

SHA = "ab" * 32
MANIFEST_SHA = "cd" * 32
RUN = "20261124T101500Z-1a2b"


def plan_for(hostvars=None, run_id=RUN):
    state = fleet.HostState(run_id=run_id)
    return hostplan.host_plan("h1", hostvars or {}, "fleet-20261124T101500Z-0000", SHA, MANIFEST_SHA,
                           ["--matrix=rigs/calibration/matrix.toml", "--workload=workloads/calibration/workload.toml"],
                           ["--profile", "smoke"], "c0ffee", state)


class HostPlanTest(unittest.TestCase):
    def test_paths_and_commands_live_under_the_hosts_root(self):
        p = plan_for({"tunelab_root": "/srv/tl", "tunelab_state_dir": "/srv/tl/state"})
        bundle = f"/srv/tl/bundles/{SHA[:16]}"
        self.assertEqual(p["bundle_dir"], bundle)
        self.assertEqual(p["cwd"], bundle + "/matrix.runfiles/tunelab")
        self.assertEqual(p["env"], {"TUNELAB_HARNESS_COMMIT": "c0ffee", "TUNELAB_STATE_DIR": "/srv/tl/state",
                                    "TUNELAB_FLEET_HOST": "h1", "TUNELAB_FLEET_ID": "fleet-20261124T101500Z-0000"})
        self.assertEqual(p["plan_argv"][:5], [bundle + "/matrix", "--matrix=rigs/calibration/matrix.toml",
                                              "--workload=workloads/calibration/workload.toml", "--profile", "smoke"])
        self.assertEqual(p["plan_argv"][-5:], ["--results-dir", "/srv/tl/results", "--dry-run", "--plan-json",
                                               "/srv/tl/fleet/fleet-20261124T101500Z-0000.plan.json"])
        self.assertEqual(p["pack_argv"][-2:], ["--out", f"/srv/tl/fleet/{RUN}.tar.gz"])
        self.assertEqual(p["wait_argv"][:3], ["/usr/bin/python3", bundle + "/remote_run.py", "wait"])
        # The work root and the bundle are checked by the controller's copy of work_root.py, not the host's.
        with open(os.path.join(os.path.dirname(fleet.__file__), "work_root.py")) as f:
            source = f.read()
        self.assertEqual(p["work_root_argv"], ["/usr/bin/python3", "-c", source, "check", "--root", "/srv/tl",
                                               "--folder=/srv/tl/bundles", "--folder=/srv/tl/fleet",
                                               "--folder=/srv/tl/results", "--state-dir", "/srv/tl/state",
                                               "--bundle-dir", bundle,
                                               "--manifest-sha256", MANIFEST_SHA])
        self.assertEqual(p["verify_argv"], ["/usr/bin/python3", "-c", source, "verify", "--bundle-dir", bundle,
                                            "--manifest-sha256", MANIFEST_SHA])
        # Ansible templates the strings of its variables again: the source must hold no Jinja delimiter.
        self.assertEqual([d for d in ("{{", "{%", "{#") if d in source], [])
        # The runner's command comes after `--`, whole, with the host's environment given to remote_run.
        base = p["start_base"]
        self.assertIn("--env=TUNELAB_STATE_DIR=/srv/tl/state", base)
        self.assertEqual(base[base.index("--") + 1], bundle + "/matrix")

    def test_defaults_and_refusals(self):
        p = plan_for({}, run_id="")
        self.assertTrue(p["bundle_dir"].startswith(hostplan.DEFAULT_ROOT + "/bundles/"))
        self.assertNotIn("TUNELAB_STATE_DIR", p["env"])  # the runner's own default state folder
        self.assertEqual((p["status_argv"], p["wait_argv"], p["start_argv"]), ([], [], []))
        with self.assertRaisesRegex(fleet.FleetError, "must be an absolute path"):
            plan_for({"tunelab_root": "relative/root"})


    def test_a_watched_fleet_run_serves_each_hosts_endpoint_and_names_them_for_prometheus(self):
        metrics = {"port": 9464, "address": "0.0.0.0"}
        state = fleet.HostState(run_id=RUN)
        p = hostplan.host_plan("h1", {"tunelab_metrics_port": "9465"}, "fleet-20261124T101500Z-0000", SHA, MANIFEST_SHA,
                            [], ["--profile", "smoke"], "c0ffee", state, metrics)
        self.assertIn("--metrics-port=9465", p["matrix_argv"])
        self.assertIn("--metrics-address=0.0.0.0", p["start_base"])
        self.assertNotIn("--metrics-port=9464", p["start_base"])
        inventory = {"h1": {"ansible_host": "10.0.0.7", "tunelab_metrics_port": 9465}, "h2": {}}
        self.assertEqual(fleetmetrics.service_discovery(["h2", "h1"], inventory, metrics, "fleet-x"), [
            {"targets": ["10.0.0.7:9465"], "labels": {"fleet_id": "fleet-x", "host": "h1"}},
            {"targets": ["h2:9464"], "labels": {"fleet_id": "fleet-x", "host": "h2"}}])
        # Two inventory hosts on one machine: a loopback address each, where its runner binds and is scraped.
        on_one = {"a": {"ansible_host": "127.0.0.2", "tunelab_metrics_address": "127.0.0.2"},
                  "b": {"ansible_host": "127.0.0.3", "tunelab_metrics_address": "0.0.0.0"}}
        p = hostplan.host_plan("a", on_one["a"], "f", SHA, MANIFEST_SHA, [], [], "c", state, metrics)
        self.assertIn("--metrics-address=127.0.0.2", p["matrix_argv"])
        self.assertEqual([e["targets"] for e in fleetmetrics.service_discovery(["a", "b"], on_one, metrics, "f")],
                         [["127.0.0.2:9464"], ["127.0.0.3:9464"]])
        for bad in ("0", "70000", "http"):
            with self.assertRaisesRegex(fleet.FleetError, "tunelab_metrics_port"):
                hostplan.host_plan("h1", {"tunelab_metrics_port": bad}, "f", SHA, MANIFEST_SHA, [], [], "c", state, metrics)
        for bad in ("localhost", "127.0.0.1; rm -rf /", ""):
            with self.assertRaisesRegex(fleet.FleetError, "tunelab_metrics_address"):
                hostplan.host_plan("h1", {"tunelab_metrics_address": bad}, "f", SHA, MANIFEST_SHA, [], [], "c", state, metrics)
        self.assertNotIn("--metrics-port", " ".join(plan_for()["matrix_argv"]))  # not watched: nothing added

    def test_a_host_that_runs_in_the_image(self):
        p = plan_for({"tunelab_root": "/srv/tl", "tunelab_runner": "image", "tunelab_jdks": "bisheng=/opt/bisheng17"})
        bundle = f"/srv/tl/bundles/{SHA[:16]}"
        cwd = bundle + "/matrix.runfiles/tunelab"
        self.assertEqual((p["runner"], p["python_needed"]), ("image", "3.8"))
        self.assertEqual(p["image_argv"], ["/usr/bin/python3", bundle + "/remote_run.py", "image", "--cwd", cwd])
        self.assertEqual(p["env"]["TUNELAB_JDKS"], "bisheng=/opt/bisheng17")
        # The plan and the run go through remote_run into the image, with the host folders the runner needs:
        # the bundle, the results, the fleet's state, the host state folder (the runner's default) and the JDK the
        # host declares.
        mounts = ["--mount=" + m for m in (bundle, "/srv/tl/results", "/srv/tl/fleet", "/var/lib/tunelab", "/opt/bisheng17")]
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
        self.assertEqual(hostplan.start_argv(p, {"state": "absent"}, RUN)[-2:], cases["absent"])
        self.assertEqual(hostplan.start_argv(p, {"state": "dead"}, RUN)[-2:], cases["dead"])
        self.assertEqual(hostplan.start_argv(p, {"state": "finished", "exit_status": 130}, RUN)[-2:], cases["interrupted"])
        self.assertEqual(hostplan.start_argv(p, {"state": "finished", "exit_status": None, "signal": 9}, RUN)[-2:],
                         cases["dead"])
        # Running, or finished (cells failed or not): only watched and brought home.
        self.assertEqual(hostplan.start_argv(p, {"state": "running"}, RUN), [])
        self.assertEqual(hostplan.start_argv(p, {"state": "finished", "exit_status": 1}, RUN), [])
        self.assertEqual(hostplan.start_argv(p, {}, RUN)[-2:], cases["absent"])


class FailureMessageTest(unittest.TestCase):
    def test_messages_name_the_cause(self):
        unreachable = hostinput.describe_failure("runner_on_unreachable", "python", {
            "msg": "Failed to connect to the host via ssh: ssh: connect to host 127.0.0.4 port 2299: Connection refused"})
        self.assertTrue(unreachable.startswith("unreachable over SSH: "))
        self.assertIn("Connection refused", unreachable)
        python = hostinput.describe_failure("runner_on_failed", "python", {
            "msg": "[Errno 2] No such file or directory: b'/usr/bin/python3'", "rc": 2})
        self.assertIn("no usable /usr/bin/python3", python)
        plan = hostinput.describe_failure("runner_on_failed", "plan", {
            "msg": "non-zero return code", "stderr": "Traceback ...\nerror: the matrix is bad"})
        self.assertEqual(plan, "plan: error: the matrix is bad")
        # The runner says why on its standard output, wrapped to the terminal; remote_run's JSON line ends it.
        jdk = hostinput.describe_failure("runner_on_failed", "plan", {
            "msg": "non-zero return code", "rc": 1, "stderr": "",
            "stdout": "error: cannot run this matrix:\n  jdk=hostjdk: not installed. Known JDKs: jdk11, jdk17. "
                      "Declare one with\nTUNELAB_JDKS=NAME=PATH.\n{\"error\": \"exited 2\", \"exit_status\": 2}\n"})
        self.assertEqual(jdk, "plan: error: cannot run this matrix: jdk=hostjdk: not installed. Known JDKs: jdk11, "
                              "jdk17. Declare one with TUNELAB_JDKS=NAME=PATH.")


class ShownPathTest(unittest.TestCase):
    def test_inside_the_workspace_relative_outside_whole(self):
        self.assertEqual(fleet.shown_path("/ws/results/x86/RUN", "/ws"), os.path.join("results", "x86", "RUN"))
        self.assertEqual(fleet.shown_path("/tmp/home/x86/RUN", "/ws/a/b"), "/tmp/home/x86/RUN")
        self.assertEqual(fleet.shown_path("/ws", "/ws/sub"), "/ws")
        self.assertEqual(fleet.shown_path("/ws/..data/RUN", "/ws"), os.path.join("..data", "RUN"))


def make_args(**kw):
    base = dict(inventory="hosts.ini", target="//rigs:calibration_matrix", profile="smoke", set=None, limit=None,
                resume=None, results_dir=None, plan_only=False, metrics_port=None, metrics_address="127.0.0.1", db=None)
    base.update(kw)
    return argparse.Namespace(**base)


class ResumeTest(unittest.TestCase):
    def setUp(self):
        self.results = tempfile.mkdtemp()
        self.console = Console(file=io.StringIO(), width=200)

    def new_fleet(self, **kw):
        f = fleet.Fleet(make_args(results_dir=self.results, **kw), self.console, self.results)
        return f

    def test_the_service_discovery_file_sits_beside_the_fleets_state(self):
        plain = self.new_fleet()
        plain.load_or_create(["a"])
        self.assertIsNone(plain.write_service_discovery(plain.hosts, {"a": {}}))
        watched = self.new_fleet(metrics_port=9464, metrics_address="127.0.0.1")
        watched.load_or_create(["a", "b"])
        watched.save()
        path = watched.write_service_discovery(watched.hosts, {"a": {}, "b": {"tunelab_metrics_port": 9470}})
        self.assertEqual(os.path.dirname(path), os.path.dirname(watched.state_path(watched.fleet_id)))
        with open(path) as f:
            self.assertEqual([e["targets"] for e in json.load(f)], [["a:9464"], ["b:9470"]])
        self.assertEqual(fleet.read_state(watched.state_path(watched.fleet_id))["metrics"],
                         {"port": 9464, "address": "127.0.0.1"})

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


class HostileHostTest(unittest.TestCase):
    """What a host sends is untrusted: each case crashed the controller or got through before."""

    def setUp(self):
        self.results = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.out = io.StringIO()
        self.fleet = fleet.Fleet(make_args(results_dir=self.results), Console(file=self.out, width=200), self.results)

    def plan_file(self, doc):
        path = os.path.join(self.results, "plan.json")
        with open(path, "w") as f:
            f.write(doc if isinstance(doc, str) else json.dumps(doc))
        return path

    def good_plan(self, **kw):
        return dict({"estimated_s": 60, "cells": [{"id": "2c0b5e67fcfd", "skip_reason": None},
                                                  {"id": "970efeb64bf6", "skip_reason": "[/red] no [bold]NUMA"}],
                     "doctor": {"host": {"host_id": "vm-1"}, "cpu": {"online_cpus": 2}, "numa": {"nodes": [{}]}}}, **kw)

    def test_a_plan_that_does_not_fit_fails_with_the_reason(self):
        self.assertEqual(hostinput.read_plan(self.plan_file(self.good_plan()))["estimated_s"], 60)
        cases = {
            "null": "does not fit .*at \\(top\\)", "[1, 2]": "does not fit",
            json.dumps(self.good_plan(doctor={"host": {"host_id": "[red]x[/bold]"}, "cpu": {}})): "host_id",
            json.dumps(self.good_plan(cells="many")): "cells",
            json.dumps(self.good_plan(estimated_s=-1)): "estimated_s",
            json.dumps(self.good_plan(estimated_s=1e300)): "estimated_s",
            '{"estimated_s": NaN}': "NaN",
            "[" * 100_000 + "]" * 100_000: "nested",
            # Issue 58, row 7: Python's own ValueError for a 5,000-digit integer escaped the reader.
            '{"estimated_s": ' + "9" * 5000 + "}": "integer of 5000 digits",
        }
        for text, why in cases.items():
            with self.subTest(text=text[:40]):
                with self.assertRaisesRegex(fleet.FleetError, why):
                    hostinput.read_plan(self.plan_file(text))
        big = self.plan_file(" " * (hostinput.MAX_PLAN_BYTES + 1))
        with self.assertRaisesRegex(fleet.FleetError, "over the"):
            hostinput.read_plan(big)

    def test_a_run_state_line_with_a_huge_integer_is_a_fleet_error(self):
        with self.assertRaisesRegex(fleet.FleetError, "status: not valid JSON .*integer of 5000 digits"):
            hostinput.host_json('{"state": ' + "1" * 5000 + "}", "status")

    def test_markup_from_a_host_is_printed_as_text(self):
        self.fleet.load_or_create(["a", "b"])
        self.fleet.hosts["b"].host_id = "[/red]"
        self.fleet.hosts["b"].error = "[/bold] boom [link=file:///etc/passwd]x"
        self.fleet.print_plans({"a": self.good_plan()})
        self.fleet.summary()
        self.assertIn("[/red] no [bold]NUMA", self.out.getvalue())
        self.assertIn("[/bold] boom", self.out.getvalue())

    def test_inventory_host_names_must_name_a_safe_results_folder(self):
        for name in ("../../etc", "baselines", "a b", "-x"):
            with self.subTest(name=name):
                with self.assertRaisesRegex(fleet.FleetError, "cannot name a results folder"):
                    fleet.Fleet(make_args(results_dir=self.results), Console(file=io.StringIO()),
                                self.results).load_or_create([name])

    def test_an_error_handling_one_hosts_event_leaves_the_other_hosts_running(self):
        seen = []

        def on_event(kind, host, task, res):
            if host == "evil":
                raise KeyError("a host's result had no such field")
            seen.append(host)
        pb = playbook.Playbook(self.results, "run", {}, on_event)
        for host, res in (("evil", {"rc": 0}), ("good", {"rc": 0}), ("odd", ["not", "a", "dict"])):
            self.assertTrue(pb.handle({"event": "runner_on_ok", "event_data": {"host": host, "task": "start",
                                                                                "res": res}}))
        self.assertIn("could not handle its result", pb.errors["evil"])
        self.assertEqual(seen, ["good", "odd"])
        failed = hostinput.describe_failure("runner_on_failed", "pack", {"msg": ["a", 1], "stdout": {"x": 1}})
        self.assertIn("pack:", failed)

    def test_an_archive_of_another_run_or_fleet_is_refused(self):
        self.fleet.load_or_create(["a"])
        self.fleet.hosts["a"].run_id = testruns.RUN_ID
        staging = os.path.join(self.results, ".fleet", self.fleet.fleet_id, "incoming")
        remote = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        for fleet_block, why in ((None, "not 'a' of"), ({"host": "a", "fleet_id": "fleet-20250101T000000Z-0000"},
                                                         "not 'a' of")):
            run_dir = testruns.make_run(remote, run_id=testruns.RUN_ID, fleet=fleet_block)
            os.makedirs(os.path.join(staging, "a"), exist_ok=True)
            runarchive.pack_run(run_dir, os.path.join(staging, "a", "run.tar.gz"))
            self.fleet.bring_home("a", {"staging": staging}, "0:00:01")
            self.assertEqual(self.fleet.hosts["a"].status, "failed")
            self.assertIn(why, self.fleet.hosts["a"].error)
            self.assertFalse(os.path.exists(os.path.join(self.results, "a")))
            self.assertFalse(os.path.exists(os.path.join(staging, "a", "run.tar.gz")))  # not kept in staging
        run_dir = testruns.make_run(remote, run_id=testruns.RUN_ID, fleet={"host": "a", "fleet_id": self.fleet.fleet_id})
        runarchive.pack_run(run_dir, os.path.join(staging, "a", "run.tar.gz"))
        self.fleet.bring_home("a", {"staging": staging}, "0:00:02")
        self.assertEqual(self.fleet.hosts["a"].status, "home", self.fleet.hosts["a"].error)
        # Indexed as it came home (issue 83): the default database under the results folder holds it.
        database = sqlite3.connect(os.path.join(self.results, ".db", "tunelab.sqlite"))
        self.assertEqual(database.execute("SELECT run_id FROM runs").fetchall(), [(testruns.RUN_ID,)])
        database.close()

    def test_a_database_that_cannot_take_the_run_leaves_it_home(self):
        self.fleet.load_or_create(["a"])
        self.fleet.hosts["a"].run_id = testruns.RUN_ID
        staging = os.path.join(self.results, ".fleet", self.fleet.fleet_id, "incoming")
        remote = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        corrupt = os.path.join(remote, "corrupt.sqlite")
        with open(corrupt, "wb") as f:
            f.write(b"not a database" * 100)
        self.fleet.args.db = "sqlite:///" + corrupt
        run_dir = testruns.make_run(remote, run_id=testruns.RUN_ID, fleet={"host": "a", "fleet_id": self.fleet.fleet_id})
        os.makedirs(os.path.join(staging, "a"), exist_ok=True)
        runarchive.pack_run(run_dir, os.path.join(staging, "a", "run.tar.gz"))
        self.fleet.bring_home("a", {"staging": staging}, "0:00:02")
        self.assertEqual(self.fleet.hosts["a"].status, "home")
        self.assertIn("its run is home but not in the results database", " ".join(self.out.getvalue().split()))
        self.assertTrue(os.path.isfile(os.path.join(self.results, "a", testruns.RUN_ID, "manifest.json")))

    def test_what_ansible_fetches_is_capped_on_this_disk(self):
        # A real ansible-playbook (the launcher the fleet writes) fetching a file over the cap: the write
        # fails with EFBIG, the task fails, and no more than the cap lands here.
        work = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        site_bin = playbook.write_cli_launchers(os.path.join(work, "bin"))
        source, dest = os.path.join(work, "big.tar.gz"), os.path.join(work, "home", "run.tar.gz")
        with open(source, "wb") as f:
            f.write(os.urandom(1 << 20))
        fetch_yml = os.path.join(work, "fetch.yml")
        with open(fetch_yml, "w") as f:
            f.write(f"- hosts: all\n  gather_facts: false\n  tasks:\n    - ansible.builtin.fetch:\n"
                    f"        src: {source}\n        dest: {dest}\n        flat: true\n")
        env = dict(os.environ, **playbook.ansible_env(work, site_bin, work), PYTHONPATH=os.pathsep.join(sys.path),
                   ANSIBLE_REMOTE_TMP=os.path.join(work, "remote-tmp"))
        for cap, ok in ((str(4 << 20), True), ("65536", False)):
            env[playbook.MAX_FILE_BYTES_ENV] = cap
            if os.path.exists(dest):
                os.unlink(dest)
            proc = subprocess.run([os.path.join(site_bin, "ansible-playbook"), "-i", "localhost,", "-c", "local",
                                   fetch_yml], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  timeout=120)
            with self.subTest(cap=cap):
                self.assertEqual(proc.returncode == 0, ok, proc.stdout[-2000:])
                size = os.path.getsize(dest) if os.path.exists(dest) else 0
                self.assertLessEqual(size, int(cap))
                if ok:
                    self.assertEqual(size, 1 << 20)


class MachineTest(unittest.TestCase):
    def test_each_host_gets_the_bundle_of_its_machine_or_a_reason(self):
        from tools.fleet import machines
        self.assertEqual(machines.read_machine("aarch64\n"), "aarch64")
        self.assertEqual(machines.read_machine("x86_64"), "x86_64")
        with self.assertRaisesRegex(fleet.FleetError, "machine riscv64: tunelab has no pinned JDK, Redis or image"):
            machines.read_machine("riscv64")
        with self.assertRaisesRegex(fleet.FleetError, "not a machine name"):
            machines.read_machine("[/red]$(reboot)")
        bundles = machines.parse_bundle_option(["/b/x.tar.gz", "aarch64=/b/a.tar.gz"])
        self.assertEqual(bundles, {machines.controller_machine(): "/b/x.tar.gz", "aarch64": "/b/a.tar.gz"})
        with self.assertRaisesRegex(fleet.FleetError, "two bundles for aarch64"):
            machines.parse_bundle_option(["aarch64=/a", "aarch64=/b"])


if __name__ == "__main__":
    unittest.main()
