"""The runner's stop rule reads the minimum effects the gate reads (rigs/matrix/rounds/sequential_rounds.py
decided_metrics): a profile's own [profile_min_effect.<profile>] where gate.toml asks one (issue 79), so the
runner never stops a gated night on an effect the gate then judges at another."""

import os
import tempfile
import types
import unittest

from rigs.matrix.rounds import sequential_rounds


class DecidedMetricsTest(unittest.TestCase):
    def test_a_profile_decides_on_its_own_effect(self):
        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "gate.toml"), "w") as f:
                f.write("[min_effect]\nrate = 0.05\ncpu = 0.05\n[profile_min_effect.nightly]\nrate = 0.15\n")
            policy = types.SimpleNamespace(decide_on=("rate",))
            self.assertEqual(sequential_rounds.decided_metrics(policy, folder), {"rate": 0.05})
            self.assertEqual(sequential_rounds.decided_metrics(policy, folder, "nightly"), {"rate": 0.15})
            every = types.SimpleNamespace(decide_on=())
            self.assertEqual(sequential_rounds.decided_metrics(every, folder, "nightly"), {"rate": 0.15, "cpu": 0.05})


if __name__ == "__main__":
    unittest.main()
