"""//tools:profile_diff on a recorded profiled run (analysis/testdata/profiled_run/README.md): the injected spin is the
top mover and the differential flame graph holds it; a comparison that is not there, a truncated profile and
one swapped for another are named, never read as data."""

import gzip
import io
import os
import shutil
import sys
import tempfile
import unittest

from rich.console import Console

from tools.profiling import profile_diff

HERE = os.path.dirname(os.path.abspath(__file__))
RUN = os.path.join(os.path.dirname(os.path.dirname(HERE)), "analysis", "testdata", "profiled_run", "vm-0035969e", "20261128T191712Z-edcd")
SPIN = "tunelab/rigs/calibration/Calibration.spin"


def tools_from_args():
    """The java and converter jar //tools/profiling:profile_diff_test is given (its args, as the binary's)."""
    found = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--"))
    return [f"--java={os.path.abspath(found['java'])}", f"--converter={os.path.abspath(found['converter'])}"]


TOOLS = tools_from_args()
del sys.argv[1:]


def run(*argv):
    out = io.StringIO()
    status = profile_diff.main(list(argv), Console(file=out, width=200))
    return status, out.getvalue()


class ProfileDiff(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))

    def copy_run(self):
        target = os.path.join(self.tmp, "run", "20261128T191712Z-edcd")
        shutil.copytree(RUN, target)
        return target

    def test_the_spin_is_the_top_mover_and_the_flame_graph_holds_it(self):
        html = os.path.join(self.tmp, "html")
        status, out = run("--run", RUN, "--html-dir", html, *TOOLS)
        self.assertEqual(status, 0, out)
        self.assertIn("injected_slowdown_pct: 20 vs 0 (cpu, runs 3/3)", out)
        self.assertIn("movers: Calibration.spin +2", out)
        self.assertIn("moved", out)
        [page] = os.listdir(html)
        self.assertEqual(page, "2e4a7ea95ecc_vs_2c0b5e67fcfd.cpu.html")
        with open(os.path.join(html, page)) as f:
            text = f.read()
        # The converter's page: its title, and a differential one (frames coloured by a non-zero difference);
        # frame names are prefix-packed in it, so the spin is found as the calibration class' "spin" entry.
        self.assertIn("<h1>injected_slowdown_pct: 20 vs 0 (cpu)</h1>", text)
        self.assertRegex(text, r"const maxdiff = [1-9][0-9]*;")
        self.assertRegex(text, r"'!unelab/rigs/calibration/Calibration.*\n(?:'.*\n){0,4}'Espin'")

    def test_a_comparison_that_is_not_there_is_refused(self):
        status, out = run("--run", RUN, "--axis", "gc", *TOOLS)
        self.assertEqual(status, 2)
        self.assertIn("no profiled comparison of gc", out)

    def test_a_truncated_profile_is_left_out_with_its_name(self):
        folder = self.copy_run()
        path = os.path.join(folder, "profiles", "2e4a7ea95ecc.r1.cpu.collapsed.gz")
        with open(path, "rb") as f:
            data = f.read()
        with open(path, "wb") as f:
            f.write(data[: len(data) // 2])
        status, out = run("--run", folder, *TOOLS, "--html-dir", os.path.join(self.tmp, "h"))
        self.assertEqual(status, 0, out)
        self.assertIn("runs 3/2", out)
        self.assertIn("left out: 2e4a7ea95ecc r1:", out)
        self.assertIn("2e4a7ea95ecc.r1.cpu.collapsed.gz", out)

    def test_a_profile_swapped_for_another_is_refused_by_its_recorded_sha256(self):
        folder = self.copy_run()
        profiles_dir = os.path.join(folder, "profiles")
        with gzip.open(os.path.join(profiles_dir, "2c0b5e67fcfd.r0.cpu.collapsed.gz")) as f:
            baseline = f.read()
        with open(os.path.join(profiles_dir, "2e4a7ea95ecc.r2.cpu.collapsed.gz"), "wb") as f:
            f.write(gzip.compress(baseline))
        status, out = run("--run", folder, *TOOLS, "--html-dir", os.path.join(self.tmp, "h"))
        self.assertEqual(status, 0, out)
        self.assertIn("left out: 2e4a7ea95ecc r2: profiles/2e4a7ea95ecc.r2.cpu.collapsed.gz: its sha256 is not", out)


if __name__ == "__main__":
    unittest.main()
