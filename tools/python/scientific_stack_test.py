"""The locked wheels import from the system interpreter and matplotlib renders a PNG headless."""

import os
import tempfile
import unittest

import matplotlib

matplotlib.use("Agg")  # no display in tests or CI
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import scipy.stats  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class ScientificStackTest(unittest.TestCase):
    def test_numpy_and_scipy_compute(self):
        rng = np.random.default_rng(7)
        a = rng.normal(100.0, 1.0, 200)
        b = rng.normal(95.0, 1.0, 200)
        result = scipy.stats.mannwhitneyu(a, b)
        self.assertLess(result.pvalue, 1e-30)

    def test_matplotlib_renders_png(self):
        fig, ax = plt.subplots(figsize=(3, 2))
        ax.plot(np.arange(10), np.arange(10) ** 2)
        with tempfile.TemporaryDirectory(dir=os.environ.get("TEST_TMPDIR")) as tmp:
            path = os.path.join(tmp, "plot.png")
            fig.savefig(path, dpi=50)
            plt.close(fig)
            with open(path, "rb") as f:
                data = f.read()
        self.assertEqual(data[:8], PNG_MAGIC)
        self.assertGreater(len(data), 1000)


if __name__ == "__main__":
    unittest.main()
