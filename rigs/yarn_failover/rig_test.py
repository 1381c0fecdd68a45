"""The failover rig's refusals, its cell's processes, and parse() on the two RMs' output recorded from a real
tiny cell (testdata/: see its README.md)."""

import json
import os
import socket
import tempfile
import threading
import tomllib
import unittest

from rigs.matrix.planning import policy
from rigs.matrix.contract.rig import Launch, MeasurementInvalid
from rigs.yarn_failover import rig

HERE = os.path.dirname(os.path.abspath(__file__))
TESTDATA = os.path.join(HERE, "testdata")
WORKLOAD = os.path.join(HERE, "..", "..", "workloads", "yarn_failover", "workload.toml")


def defaults(**changes):
    with open(WORKLOAD, "rb") as f:
        params = dict(tomllib.load(f)["parameters"])
    params.update(heap="2g", jdk="17", pinning="none")
    params.update({k: str(v) for k, v in changes.items()})
    return params


class Cell:
    def __init__(self, params):
        self.id = "c0"
        self.params = params


class CheckTest(unittest.TestCase):
    def test_the_defaults_pass(self):
        rig.RIG.check(defaults())

    def test_a_heap_that_cannot_hold_the_applications_is_refused_with_what_it_needs(self):
        with self.assertRaisesRegex(ValueError, r"heap=512m cannot hold 20,000 applications: the rig's estimate is "
                                                r"[\d,]+ MiB .* give heap=\dg or fewer apps"):
            rig.RIG.check(defaults(apps=20000, nodes=2000, heap="512m"))
        with self.assertRaisesRegex(ValueError, r"populate_heap=256m cannot hold"):
            rig.RIG.check(defaults(apps=10000, nodes=1000, populate_heap="256m", heap="8g"))

    def test_containers_that_do_not_fit_the_nodes_are_refused(self):
        with self.assertRaisesRegex(ValueError, r"3,000 containers \(1,000 applications x 3\) do not fit 10 nodes "
                                                r"of 64 containers"):
            rig.RIG.check(defaults(apps=1000, nodes=10))

    def test_a_store_it_does_not_know_is_refused(self):
        with self.assertRaisesRegex(ValueError, r"state_store='etcd': one of zookeeper, leveldb, filesystem"):
            rig.RIG.check(defaults(state_store="etcd"))

    def test_the_zookeeper_patch_with_another_store_is_refused(self):
        rig.RIG.check(defaults(variant="patched:zk-pipelined-recovery"))
        with self.assertRaisesRegex(ValueError, r"variant=patched:zk-pipelined-recovery changes the ZooKeeper "
                                                r"store only; this cell's state_store is leveldb"):
            rig.RIG.check(defaults(variant="patched:zk-pipelined-recovery", state_store="leveldb"))


class ZookeeperStatsTest(unittest.TestCase):
    def test_mntr_lines_are_read(self):
        # testdata/zookeeper_mntr.txt: ZooKeeper 3.8.4's answer to mntr, recorded from the rig's server.
        with open(os.path.join(TESTDATA, "zookeeper_mntr.txt"), "rb") as f:
            answer = f.read()
        server = socket.create_server(("127.0.0.1", 0))
        port = server.getsockname()[1]

        def serve():
            conn, _ = server.accept()
            with conn:
                conn.recv(16)
                conn.sendall(answer)
            server.close()

        thread = threading.Thread(target=serve)
        thread.start()
        stats = rig.zookeeper_stats("127.0.0.1", port)
        thread.join()
        self.assertEqual(stats["zk_version"].split("-")[0], "3.8.4")
        self.assertIsInstance(stats["zk_znode_count"], int)
        self.assertGreater(stats["zk_znode_count"], 20)


class LaunchTest(unittest.TestCase):
    def launch(self, **changes):
        workdir = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        classpath = os.path.join(workdir, "cp.classpath")
        with open(classpath, "w") as f:
            f.write("a.jar\n")
        return workdir, rig.RIG.launch(Cell(defaults(**changes)), None, policy.Policy(timeout_s=600), workdir,
                                       {"classpath_3_4_2": classpath}, workdir)

    def test_zookeeper_is_a_loopback_server_and_the_first_rm_is_killed_on_its_line(self):
        workdir, launch = self.launch()
        launch.validate()
        zk, killed, recovering = launch.processes
        self.assertEqual([p.role for p in launch.processes], ["zookeeper", "rm_killed", "rm"])
        self.assertTrue(zk.server and not zk.under_test)
        with open(os.path.join(workdir, "zoo.cfg")) as f:
            cfg = f.read()
        self.assertIn("clientPortAddress=127.0.0.1\n", cfg)
        self.assertIn(f"clientPort={zk.ports[0]}\n", cfg)
        self.assertIn(f"dataDir={workdir}/zookeeper-data\n", cfg)
        self.assertEqual(killed.kill_pattern, "^" + rig.KILL_LINE + "$")
        self.assertEqual((killed.phase, recovering.phase), (0, 1))
        self.assertTrue(recovering.under_test)
        self.assertIn("-Xmx2g", killed.jvm_flags)  # populate_heap; the recovering RM gets the matrix's heap
        self.assertFalse(any(f.startswith("-Xmx") for f in recovering.jvm_flags))
        args = dict(zip(recovering.args[::2], recovering.args[1::2]))
        self.assertEqual(args["--zk"], f"127.0.0.1:{zk.ports[0]}")
        self.assertEqual(args["--mode"], "recover")
        self.assertIn("--conf", recovering.args)
        self.assertIn("hadoop.zk.timeout-ms=10000", recovering.args)
        # The simulated nodes' names resolve to loopback in both RMs (FailoverDriver names them sim-node-%05d).
        with open(os.path.join(workdir, "hosts")) as f:
            hosts = f.read()
        self.assertIn("sim-node-00000", hosts)
        self.assertIn("sim-node-00049", hosts)
        self.assertNotIn("sim-node-00050", hosts)
        for p in (killed, recovering):
            self.assertIn(f"-Djdk.net.hosts.file={workdir}/hosts", p.jvm_flags)
        self.assertEqual(launch.host_specific_inputs, ("hosts",))

    def test_other_stores_start_no_zookeeper(self):
        for store in ("leveldb", "filesystem"):
            _, launch = self.launch(state_store=store)
            self.assertEqual([p.role for p in launch.processes], ["rm_killed", "rm"])


class LiveValuesTest(unittest.TestCase):
    def test_the_recovered_record_gives_the_recovery_and_its_parts(self):
        with open(os.path.join(TESTDATA, "tiny_zookeeper.rm.jsonl")) as f:
            lines = f.read().splitlines()
        [values] = [v for v in (rig.RIG.live("rm", line) for line in lines) if v]
        recovered = json.loads(lines[1])
        self.assertEqual(values, {"recovery_seconds": recovered["recovery_s"],
                                  "store_load_seconds": recovered["store_load_s"],
                                  "app_recovery_seconds": recovered["app_recovery_s"]})
        self.assertEqual(rig.RIG.live("rm_killed", lines[1]), {})

    def test_the_phase_records_show_the_recovery_move_on_while_it_recovers(self):
        # A real cell's recovering RM with its phase records (testdata/README.md): a watched run sees each phase.
        with open(os.path.join(TESTDATA, "tiny_zookeeper_phases.rm.jsonl")) as f:
            lines = f.read().splitlines()
        values = [rig.RIG.live("rm", line) for line in lines]
        phases = [v["recovery_phase"] for v in values if "recovery_phase" in v]
        self.assertEqual(phases[0], 0.0)
        self.assertEqual(phases[-1], 7.0)  # recovered
        self.assertEqual(phases, sorted(phases))  # never back
        self.assertGreaterEqual(len(set(phases)), 4)  # a 20-application recovery passes through most phases
        elapsed = [v["recovery_elapsed_seconds"] for v in values if "recovery_elapsed_seconds" in v]
        self.assertEqual(elapsed, sorted(elapsed))
        last_phase = max(i for i, v in enumerate(values) if "recovery_phase" in v)
        recovered = [i for i, v in enumerate(values) if "recovery_seconds" in v]
        self.assertEqual(len(recovered), 1)
        self.assertGreater(recovered[0], last_phase)  # the account comes once recovered
        self.assertEqual(rig.RIG.live("rm_killed", lines[0]), {})
        # The phase records change nothing the rig measures: the recorded stdout parses to its account.
        recovered = json.loads(next(line for line in lines if line.startswith('{"event":"recovered"')))
        parsed = ParseTest.parse(ParseTest(), rm_text="\n".join(lines) + "\n")
        self.assertEqual(next(s["value"] for s in parsed.samples if s["metric"] == "recovery_time"),
                         recovered["recovery_s"])


class ParseTest(unittest.TestCase):
    """testdata/tiny_zookeeper.*: both RMs' stdout of one real cell (20 applications, 2 attempts, 2 containers)."""

    def parse(self, killed_text=None, rm_text=None, **state_changes):
        with open(os.path.join(TESTDATA, "tiny_zookeeper.launch.json")) as f:
            state = dict(json.load(f), **state_changes)
        with open(os.path.join(TESTDATA, "tiny_zookeeper.rm_killed.jsonl")) as f:
            killed = f.read() if killed_text is None else killed_text
        with open(os.path.join(TESTDATA, "tiny_zookeeper.rm.jsonl")) as f:
            recovering = f.read() if rm_text is None else rm_text
        return rig.RIG.parse({"rm_killed": killed, "rm": recovering}, policy.Policy(), "/nonexistent",
                             Launch([], state=state))

    def test_the_recorded_cell(self):
        parsed = self.parse()
        values = {s["metric"]: s["value"] for s in parsed.samples}
        with open(os.path.join(TESTDATA, "tiny_zookeeper.rm.jsonl")) as f:
            recovered = next(r for r in rig.records(f.read()) if r["event"] == "recovered")
        self.assertEqual(values["recovery_time"], recovered["recovery_s"])
        self.assertEqual(values["store_load_time"], recovered["store_load_s"])
        self.assertEqual(values["store_read_bytes"], recovered["store_read_bytes"])
        self.assertGreater(values["recovery_time"], values["store_load_time"] + values["app_recovery_time"])
        with open(os.path.join(TESTDATA, "tiny_zookeeper.rm_killed.jsonl")) as f:
            populated = next(r for r in rig.records(f.read()) if r["event"] == "populated")
        writes = sorted(ns / 1e6 for ns in populated["store_write_ns"])
        self.assertEqual(len(writes), 20)
        self.assertEqual(values["store_write_latency_p50"], writes[9])  # nearest rank: the 10th of 20
        self.assertEqual(values["store_write_latency_p99"], writes[19])
        self.assertEqual(parsed.observations["store_writes"], 20)

    def test_a_store_that_gave_back_less_than_was_written_is_invalid(self):
        with self.assertRaisesRegex(MeasurementInvalid, r"the store gave back 20 applications and 40 attempts; the "
                                                        r"first RM wrote 30 and 60"):
            self.parse(apps=30)

    def test_a_missing_record_is_invalid(self):
        with self.assertRaisesRegex(MeasurementInvalid, "the second RM printed no recovered record"):
            self.parse(rm_text="")
        with self.assertRaisesRegex(MeasurementInvalid, "the first RM printed no populated record"):
            self.parse(killed_text='{"event": "start"}\n')


if __name__ == "__main__":
    unittest.main()
