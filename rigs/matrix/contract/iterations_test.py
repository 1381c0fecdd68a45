"""A JVM driver's iteration and cost lines (iterations.py), on hand-made lines in the drivers' format (the
recorded real outputs are the NameNode and MapReduce rigs' fixtures, tested in their rig_test)."""

import unittest

from rigs.matrix.contract import iterations
from rigs.matrix.contract.rig import MeasurementInvalid


def cost_line(index, **fields):
    values = dict(dict(allocated_bytes=1000, cpu_ns=500, driver_allocated_bytes=10, driver_cpu_ns=20, jit_cpu_ns=100,
                       wall_ns=900), **fields)
    return '{"event":"cost","index":%d,%s}' % (index, ",".join(f'"{k}":{v}' for k, v in values.items()))


class IterationsTest(unittest.TestCase):
    def test_split_in_order_with_the_warm_up_marked(self):
        text = ('{"event":"start"}\n{"event":"iteration","index":0,"warmup":true}\nreport 0\n' + cost_line(0)
                + '\n{"event":"iteration","index":1,"warmup":false}\nreport 1\n' + cost_line(1) + '\n{"event":"end"}\n')
        found = iterations.split(text)
        self.assertEqual([(it.index, it.warmup) for it in found], [(0, True), (1, False)])
        self.assertIn("report 1", found[1].text)
        self.assertNotIn("report 0", found[1].text)
        self.assertEqual(iterations.cost(found[1])["allocated_bytes"], 1000)
        self.assertEqual(iterations.split("one report, no iterations\n"), [])

    def test_cost_without_the_jit_and_where_it_is_unknown(self):
        it = iterations.Iteration(0, False, cost_line(0))
        cost = iterations.cost(it)
        self.assertEqual(iterations.cpu_without_jit_ns(cost), 400)
        self.assertEqual(iterations.cpu_without_jit_ns(cost, with_driver=True), 420)
        unknown = iterations.cost(iterations.Iteration(0, False, cost_line(0, jit_cpu_ns=-1)))
        self.assertIsNone(iterations.cpu_without_jit_ns(unknown))

    def test_a_wrong_cost_line_is_invalid(self):
        for text, message in ((cost_line(1), "iteration 0: its cost line is of iteration 1"),
                              (cost_line(0) + "\n" + cost_line(0), "iteration 0: 2 cost lines"),
                              ("", "iteration 0: 0 cost lines"),
                              (cost_line(0, jit_cpu_ns=501), "iteration 0: impossible cost"),
                              (cost_line(0, allocated_bytes=-1), "iteration 0: impossible cost"),
                              ('{"event":"cost","index":0,"cpu_ns":5}', "iteration 0: malformed cost line")):
            with self.assertRaisesRegex(MeasurementInvalid, message):
                iterations.cost(iterations.Iteration(0, False, text))


if __name__ == "__main__":
    unittest.main()
