"""Processes with roles, end to end with the fake rig (fakerig.py): a server started first and waited for, a
load generator placed on its own CPUs, phases in order, a background process beside its phase; every server
always stopped and its port freed, also when it dies, never gets ready or a phase fails."""

import json
import os
import shutil
import sys
import tempfile
import unittest
from unittest import mock

from rigs.matrix import runner
from rigs.matrix.cell import processes
from rigs.matrix.contract import rig as rig_contract
from rigs.matrix.testing.fakerig import FakeRig, FakeRigTestCase
from rigs.matrix.cell.processes import running_with_argv


class RolesTest(FakeRigTestCase):
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

    def test_a_role_on_the_cpus_of_a_role_the_rig_wants_apart_is_refused_unless_shared_on_purpose(self):
        if not {0, 1} <= os.sched_getaffinity(0):
            self.skipTest("the pinnings name CPUs 0 and 1")
        with mock.patch.object(FakeRig, "apart_roles", ("server",)):
            code, out = self.box.main("--profile", "served", "--set", "pinning=crowded", "--dry-run")
            self.assertEqual(code, runner.EXIT_BAD_INPUT, out)
            said = " ".join(out.split())  # the console wraps long lines
            self.assertIn("[pinning.crowded] puts loadgen on CPU(s) 1 of server, which the fake rig measures "
                          "apart", said)
            self.assertIn("share_cpus = true", said)
            code, out = self.box.main("--profile", "served", "--set", "pinning=crowded_on_purpose", "--dry-run")
            self.assertEqual(code, runner.EXIT_OK, out)
        # A rig that declares no role apart takes the crowded pinning as written.
        code, out = self.box.main("--profile", "served", "--set", "pinning=crowded", "--dry-run")
        self.assertEqual(code, runner.EXIT_OK, out)
        self.assertEqual(self.box.run_dirs(), [])

    def test_the_runner_keeps_off_the_cpus_of_a_bound_cell_and_gets_its_own_back(self):
        mine = os.sched_getaffinity(0)
        if not {1} < mine:
            self.skipTest(f"the runner may use CPUs {sorted(mine)}: with no CPU besides 1, none is spare")
        code, out = self.box.main("--set", "pinning=one_cpu,none")
        self.assertEqual(code, runner.EXIT_OK, out)
        (run_dir,) = self.box.run_dirs()
        docs = list(self.docs(run_dir).values())
        self.assertEqual({d["cell"]["params"]["pinning"] for d in docs}, {"one_cpu", "none"})
        for doc in docs:
            self.assertEqual(doc["status"], "ok", doc.get("reason"))
            ev = doc["evidence"]
            if doc["cell"]["params"]["pinning"] == "one_cpu":
                self.assertEqual(ev["process_status"]["Cpus_allowed_list"], "1")
                self.assertEqual(ev["harness_cpus"], ",".join(str(c) for c in sorted(mine - {1})))
            else:  # an unbound process may run on every CPU: none is spare, the runner stays where it was
                self.assertNotIn("harness_cpus", ev)
        self.assertEqual(os.sched_getaffinity(0), mine)

    def test_a_process_started_while_the_runner_keeps_off_can_be_bound_anywhere(self):
        # numactl refuses CPUs outside its own affinity ("<length> can have g (GB)..."): a process the runner
        # starts while it sits on the spare CPUs must begin on the runner's own CPUs from before.
        mine = os.sched_getaffinity(0)
        if not {0, 1} <= mine or not shutil.which("numactl"):
            self.skipTest("needs CPUs 0 and 1 and numactl")
        work = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        logs = {"stdout": os.path.join(work, "out"), "stderr": os.path.join(work, "err")}
        show = [sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"]
        with processes.runner_kept_off({1}):
            self.assertEqual(os.sched_getaffinity(0), {1})
            started = processes.Running(rig_contract.Process("main", program=show), ["numactl", "--physcpubind=0", "--"]
                                        + show, logs, work, dict(os.environ))
            started.popen.wait(timeout=30)
            started.stop()
        out, err = started.output()
        self.assertEqual(started.popen.returncode, 0, err)
        self.assertEqual(out.strip(), "[0]")
        self.assertEqual(os.sched_getaffinity(0), mine)

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
                self.assertFalse(running_with_argv(command), f"{role} still running: {command}")

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
        self.assertFalse(running_with_argv(holds["provenance"]["commands"]["pressure"]))
        self.assertEqual(dies["status"], "failed")
        self.assertIn("pressure (phase 0) exited with status 5: fake holder: lost its memory", dies["reason"])
        self.assertNotIn("loadgen", dies["evidence"]["exit_statuses"])

    def test_a_process_killed_on_purpose_ends_its_phase_as_expected(self):
        code, out = self.box.main("--profile", "killed_on_purpose")
        self.assertEqual(code, runner.EXIT_CELLS_FAILED, out)
        (run_dir,) = self.box.run_dirs()
        by_victim = {d["cell"]["params"]["victim"]: d for d in self.docs(run_dir).values()}
        killed, quits = by_victim["victim"], by_victim["quits"]
        self.assertEqual(killed["status"], "ok", killed.get("reason"))
        evidence = killed["evidence"]["killed_on_purpose"]["victim"]
        self.assertEqual((evidence["line"], evidence["signal"], evidence["exit_status"]),
                         ("state written, kill me now", "SIGKILL", -9))
        self.assertEqual(killed["evidence"]["exit_statuses"]["victim"], -9)
        self.assertEqual(killed["evidence"]["exit_statuses"]["loadgen"], 0)  # the next phase ran
        self.assertFalse(running_with_argv(killed["provenance"]["commands"]["victim"]))
        self.assertEqual(quits["status"], "failed")
        self.assertIn("victim (phase 0) was to be killed on its line /kill me now/ but exited by itself with "
                      "status 0: fake victim: done before its kill line", quits["reason"])
        self.assertNotIn("loadgen", quits["evidence"]["exit_statuses"])


if __name__ == "__main__":
    unittest.main()
