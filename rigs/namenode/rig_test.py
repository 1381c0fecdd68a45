"""The NameNode rig's parser on recorded real NNThroughputBenchmark output (testdata/README.md)."""

import os
import unittest

from rigs.matrix.rig import MeasurementInvalid
from rigs.namenode import rig

HERE = os.path.join(os.path.dirname(__file__), "testdata")


def recorded(name):
    with open(os.path.join(HERE, name)) as f:
        return f.read()


class ParseTest(unittest.TestCase):
    def test_every_operation_of_op_all(self):
        parsed = rig.RIG.parse({"main": recorded("inprocess_all_2000.log")}, None, None)
        values = {s["metric"]: s["value"] for s in parsed.samples}
        self.assertEqual(sorted(values), sorted(rig.metric_name(op) for op in rig.OPS))
        self.assertAlmostEqual(values["create_ops_per_s"], 2695.4177897574123)
        self.assertAlmostEqual(values["replication_ops_per_s"], 500.0)
        self.assertNotIn("clean", parsed.observations["report"])  # the benchmark's own clean-up pass
        self.assertEqual(parsed.observations["report"]["create"]["operations"], 2000)

    def test_one_operation(self):
        report = rig.parse_report(recorded("inprocess_create_20000.log"))
        self.assertEqual(report["create"], {"operations": 20000, "elapsed_ms": 2801, "ops_per_s": 7140.307033202428,
                                            "average_ms": 0})

    def test_no_report_is_invalid(self):
        with self.assertRaisesRegex(MeasurementInvalid, "no stats block"):
            rig.RIG.parse({"main": "Exception in thread main\n"}, None, None)

    def test_rpc_mode_and_bad_values_are_refused(self):
        params = {"mode": "inprocess", "op": "all", "fsync": "off", "threads": "2", "files": "10",
                  "files_per_dir": "4", "block_size": "16"}
        rig.RIG.check(params)
        with self.assertRaisesRegex(ValueError, "only the in-process mode"):
            rig.RIG.check(dict(params, mode="rpc"))
        with self.assertRaisesRegex(ValueError, "op=list"):
            rig.RIG.check(dict(params, op="list"))
        with self.assertRaisesRegex(ValueError, "threads=0"):
            rig.RIG.check(dict(params, threads="0"))


if __name__ == "__main__":
    unittest.main()
