"""The runner end to end with the fake rig (fakerig.py: no JVM, fake host files): results and their evidence,
failing cells, the host lock, bad input, resume after SIGKILL, SIGTERM, servers stopped on interruption,
patched variants, sealed runs, the rig contract. Processes with roles: roles_test.py; sequential
repetitions: sequential_run_test.py.
"""

import dataclasses
import faulthandler
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
from unittest import mock

from rich.console import Console

from results import resultfile, store
from rigs.host import hoststate
from rigs.matrix import runner
from rigs.matrix.cell import cellrunner
from rigs.matrix.contract import rig as rig_contract
from rigs.matrix.knobs import hostknobs, threadpinning
from rigs.matrix.planning import preflight, spec
from rigs.matrix.testing.fakerig import FakeRig, FakeRigTestCase, Sandbox, install_fake_rig, running_with_argv_containing

class RunnerTest(FakeRigTestCase):
    def spawn(self, *args):
        """The runner in a child process (see child_main), so that it can be signalled."""
        return subprocess.Popen([sys.executable, __file__, "--child", self.box.root, *args],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ)

    def wait_child(self, child, timeout):
        """The child's exit status; a child still running after `timeout` fails the test with every thread's
        stack (child_main has faulthandler write them on SIGUSR1), so a hang seen once in CI names its place."""
        try:
            return child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGUSR1)
            time.sleep(2)
            with open(os.path.join(self.box.root, CHILD_STACKS)) as f:
                self.fail(f"the child runner still ran {timeout} s after the signal; its threads:\n{f.read()}")

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
            # The workload's ceiling (testdata/fake_workload/ceilings.toml: 2 x seconds), marked as stored.
            rate = doc["metrics"][0]
            cap = 2 * float(doc["cell"]["params"]["seconds"])
            self.assertEqual(rate["ceiling"], {"name": "fake cap", "value": cap, "at_ceiling": rate["value"] >= 0.97 * cap})
            if doc["cell"]["params"]["pinning"] == "workers":
                (thread,) = doc["evidence"]["threads"]
                self.assertEqual((thread["wanted"], thread["cpus_allowed"]), ("1", "1"))
        with open(os.path.join(run_dir, "manifest.json")) as f:
            self.assertEqual(json.load(f)["state"], "complete")
        self.assertEqual(self.box.thp(), "madvise")
        self.assertIn("ETA", out)

    def test_what_the_cells_share_is_made_once_and_never_replaced(self):
        # One RunContext for every cell of the run, the same at the last cell as at the first (its repr
        # reaches into the matrix, its cells and the host facts), and each of its values frozen.
        seen = []
        run_cell = cellrunner.CellRunner.run

        def spy(cell_runner, planned, repetition):
            seen.append((cell_runner.ctx, repr(cell_runner.ctx)))
            return run_cell(cell_runner, planned, repetition)
        with mock.patch.object(cellrunner.CellRunner, "run", spy):
            code, out = self.box.main("--set", "pinning=none", "--seed", "7")
        self.assertEqual(code, runner.EXIT_OK, out)
        self.assertEqual(len(seen), 2)  # 1 cell x 2 repetitions
        (ctx,) = {id(c): c for c, _ in seen}.values()
        self.assertEqual({text for _, text in seen}, {repr(ctx)})
        self.assertEqual(ctx.config.matrix.seed, 7)  # --seed is part of what was asked, not set on it after
        for value in (ctx, ctx.config, ctx.host, ctx.provenance, ctx.handles, ctx.config.matrix):
            with self.assertRaises(dataclasses.FrozenInstanceError, msg=type(value).__name__):
                value.run_id = "another"

    def test_parameters_the_rig_declares_are_checked_before_anything_runs(self):
        for value, message in (("soon", "seconds='soon' is not a number"), ("nan", "seconds='nan' is not a finite"),
                               ("900", "seconds=900: at most 600")):
            code, out = self.box.main("--set", f"seconds={value}")
            self.assertEqual(code, runner.EXIT_BAD_INPUT, out)
            self.assertIn(message, out)
        self.assertEqual(self.box.run_dirs(), [])
        self.assertEqual(rig_contract.load_rig("fake").typed({"seconds": "2.5", "server": "none"}), {"seconds": 2.5})

    def test_hugepages_the_kernel_cannot_reserve_now_skip_the_cell_with_the_reason(self):
        # A fake kernel whose memory is too fragmented: every write to nr_hugepages reserves 15 pages.
        self.box.paths.compact_memory = os.path.join(self.box.root, "compact_memory")
        write = hostknobs.HostKnobs._write

        def fragmented(knobs, path, value):
            write(knobs, path, value)
            if path == knobs.paths.nr_hugepages:
                with open(path, "w") as f:
                    f.write("15\n")
        with mock.patch.object(hostknobs.HostKnobs, "_write", fragmented):
            code, out = self.box.main("--set", "hugepages=explicit")
        self.assertEqual(code, runner.EXIT_OK, out)  # skipped, not failed: nothing under test went wrong
        (run_dir,) = self.box.run_dirs()
        docs = self.docs(run_dir)
        self.assertEqual(len(docs), 4)
        for doc in docs.values():
            self.assertEqual(doc["status"], "skipped", doc.get("reason"))
            self.assertRegex(doc["reason"], r"^host knob: asked the kernel for \d+ hugepages, it reserved 15 after 3")
        with open(self.box.paths.nr_hugepages) as f:
            self.assertEqual(f.read().strip(), "0")  # restored after every cell

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
        # The host's noise during the measurement window, read from this machine's /proc as the cell ran.
        noise = by_behaviour["ok"]["provenance"]["noise"]
        self.assertGreater(noise["window_s"], 0)
        self.assertGreaterEqual(noise["steal_fraction"], 0.0)
        self.assertTrue(all(isinstance(x, float) for x in noise["load_average"]))
        self.assertNotIn("noise", by_behaviour["hang"]["provenance"])  # timed out: no window closed
        # Ran to the end but measured nothing valid: invalid, with the rig's reason, and the matrix went on.
        self.assertEqual(by_behaviour["short"]["status"], "invalid")
        self.assertIn("only 2 warm-up samples", by_behaviour["short"]["reason"])
        self.assertEqual(by_behaviour["ok"]["evidence"]["thp_mode"], "always")
        self.assertEqual(self.box.thp(), "madvise")  # restored after the crash and the hang too

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
                self.assertTrue(threadpinning.wait_for(lambda: listening() is not None, 30), "server never listened")
                port = listening()
                self.assertTrue(rig_contract.port_in_use(port))
                child.send_signal(sig)
                child.wait(timeout=30)
            finally:
                child.kill()
            self.assertTrue(threadpinning.wait_for(lambda: not rig_contract.port_in_use(port), 10),
                            f"port {port} still in use after {sig.name}")
            self.assertFalse(running_with_argv_containing(["fake.Server", str(port)]),
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
            self.assertEqual(doc["cell"]["id"], spec.cell_id(dict(doc["cell"]["params"],
                                                                        patch_set_sha256="ab" * 32)))
            self.assertEqual(doc["provenance"]["variant"]["patch_set_sha256"], "ab" * 32)
            self.assertEqual(doc["provenance"]["variant"]["applied"], ["0001-a.patch"])
            self.assertIn("-Xlog:class+load=info:file=", " ".join(doc["provenance"]["command"]))
            # The fake JVM loads no class from the overlay: the patch did not run, the cell is invalid.
            self.assertEqual(doc["status"], "invalid")
            self.assertIn("the patch was not exercised", doc["reason"])

    def test_second_run_on_the_host_is_refused(self):
        lock = hoststate.HostLock(os.path.join(self.box.state_dir, hoststate.LOCK_NAME))
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
        self.assertIn("is not stock, patched:<set>, patched:<set>@<k> or bump:<component>-<version>", out)
        code, out = self.box.main("--set", "variant=bump:hadoop")
        self.assertEqual(code, runner.EXIT_BAD_INPUT)
        self.assertIn("'bump:hadoop' is not stock", out)
        code, out = self.box.main("--set", "variant=stock,bump:hadoop-3.5.0")
        self.assertEqual(code, runner.EXIT_BAD_INPUT)
        self.assertIn("variant=bump:hadoop-3.5.0: this target has no such build (built: none)", out)
        # The profiler inside the timed launch needs the events to profile.
        code, out = self.box.main("--set", "profile_launch=extra,timed", "--dry-run")
        self.assertEqual(code, runner.EXIT_BAD_INPUT)
        self.assertIn("profile_launch=timed profiles the timed launch; policy.profile names no event", " ".join(out.split()))
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
                if dirs and resultfile.stored_results(dirs[0]):
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
        before = {k: os.stat(resultfile.result_path(run_dir, *k)).st_mtime_ns for k in resultfile.stored_results(run_dir)}
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
            self.assertEqual(os.stat(resultfile.result_path(run_dir, *key)).st_mtime_ns, mtime)
        with open(os.path.join(run_dir, "manifest.json")) as f:
            self.assertEqual(json.load(f)["state"], "complete")

    def test_sigterm_stops_cleanly_and_sigkill_leftovers_are_recovered(self):
        # Cells of 30 s: the signal lands inside the first, however slowly a loaded host starts the child (with
        # 3 s cells a CI room under load saw the knob only in the last cell, and the signal after the run).
        child = self.spawn("--profile", "slow", "--set", "hugepages=thp_always", "--set", "seconds=30")
        try:
            self.assertTrue(threadpinning.wait_for(lambda: self.box.thp() == "always", 30), "knob never set")
            child.send_signal(signal.SIGTERM)
            self.assertEqual(self.wait_child(child, 30), runner.EXIT_INTERRUPTED)
        finally:
            child.kill()
        self.assertEqual(self.box.thp(), "madvise")
        (run_dir,) = self.box.run_dirs()
        with open(os.path.join(run_dir, "manifest.json")) as f:
            self.assertEqual(json.load(f)["state"], "interrupted")

        # A SIGKILL leaves the knob changed; the next run that takes the lock restores it first.
        child = self.spawn("--profile", "slow", "--set", "hugepages=thp_always", "--set", "seconds=30")
        try:
            self.assertTrue(threadpinning.wait_for(lambda: self.box.thp() == "always", 30), "knob never set")
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
        journal = os.path.join(self.box.state_dir, hoststate.JOURNAL_NAME)
        with open(journal, "w") as f:
            json.dump([[victim, "attacker key\n"]], f)
        os.chmod(journal, 0o600)
        code, out = self.box.main()
        self.assertEqual(code, runner.EXIT_BAD_INPUT, out)
        self.assertIn("which the runner never changes", " ".join(out.split()))
        with open(victim) as f:
            self.assertEqual(f.read(), "the real key\n")
        self.assertEqual(self.box.run_dirs(), [])

    def test_a_complete_run_is_never_rewritten(self):
        code, _ = self.box.main()
        self.assertEqual(code, runner.EXIT_OK)
        (run_dir,) = self.box.run_dirs()
        stored = {p: pathlib.Path(p).read_bytes() for p in (os.path.join(run_dir, "manifest.json"),
                  *(resultfile.result_path(run_dir, *k) for k in resultfile.stored_results(run_dir)))}
        code, out = self.box.main("--resume", os.path.basename(run_dir))
        self.assertEqual(code, runner.EXIT_OK, out)
        self.assertIn("is complete: nothing to resume", out)
        # A run id that is not there names the runs that are (issue 41, item 5).
        code, out = self.box.main("--resume", "20200101T000000Z-0000")
        self.assertEqual(code, runner.EXIT_BAD_INPUT, out)
        self.assertIn("cannot resume 20200101T000000Z-0000: no such run of this host", out)
        self.assertIn(f"runs here, newest first: {os.path.basename(run_dir)}", " ".join(out.split()))
        # A --resume that is not a run id becomes no path: refused before anything is read.
        code, out = self.box.main("--resume", "../" + os.path.basename(run_dir))
        self.assertEqual(code, runner.EXIT_BAD_INPUT, out)
        self.assertIn("expected a run id", out)
        for path, body in stored.items():
            with open(path, "rb") as f:
                self.assertEqual(f.read(), body, path)
        with self.assertRaisesRegex(store.StoreError, "complete run"):
            store.write_manifest(run_dir, json.loads(stored[os.path.join(run_dir, "manifest.json")]))

    def test_a_rig_must_implement_the_contract(self):
        class Duck:  # has the methods, is not a Rig: the runner would have guessed its optional members
            name = "duck"
            launch = parse = FakeRig.launch
        sys.modules["rigs.duck"], sys.modules["rigs.duck.rig"] = types.ModuleType("rigs.duck"), types.ModuleType("r")
        sys.modules["rigs.duck.rig"].RIG = Duck()
        with self.assertRaisesRegex(ImportError, "an instance of rigs.matrix.contract.rig.Rig with name 'duck'"):
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
        with self.assertRaisesRegex(spec.SpecError, "load average 7.5 is over half of 2 CPUs"):
            preflight.preflight(report, strict=True)
        self.assertTrue(preflight.preflight(report, strict=False)["warnings"])

    def test_resume_refuses_a_corrupt_stored_result(self):
        code, _ = self.box.main()
        self.assertEqual(code, runner.EXIT_OK)
        (run_dir,) = self.box.run_dirs()
        # A run killed after its last cell but before it was sealed: resumable, and one result is corrupt.
        with open(os.path.join(run_dir, "manifest.json")) as f:
            manifest = json.load(f)
        with open(os.path.join(run_dir, "manifest.json"), "w") as f:
            json.dump(dict(manifest, state="interrupted"), f)
        key = sorted(resultfile.stored_results(run_dir))[0]
        path = resultfile.result_path(run_dir, *key)
        with open(path, "w") as f:
            f.write("{not json")
        code, out = self.box.main("--resume", os.path.basename(run_dir))
        self.assertEqual(code, runner.EXIT_BAD_INPUT)
        self.assertIn("corrupt", out)
        self.assertTrue(os.path.exists(path))  # kept for inspection, never deleted


CHILD_STACKS = "child-stacks.txt"


def child_main(argv):
    """Run in a subprocess by the signal tests: the same sandbox, the runner in the foreground."""
    stacks = open(os.path.join(argv[0], CHILD_STACKS), "w")  # noqa: SIM115 (open while the child lives)
    faulthandler.register(signal.SIGUSR1, file=stacks, all_threads=True)
    install_fake_rig()
    box = Sandbox(argv[0])
    sys.exit(runner.main(box.args(*argv[1:]), console=Console(file=io.StringIO()), host_paths=box.paths,
                         report=box.report()))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child_main(sys.argv[2:])
    else:
        unittest.main()
