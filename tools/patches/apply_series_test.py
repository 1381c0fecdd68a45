"""apply_series on fixture patches made with GNU diff (testdata/README.md)."""

import json
import os
import tempfile
import unittest
import zipfile

from tools.patches import apply_series

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata")


class ApplySeriesTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.jar = os.path.join(self.tmp, "greeter-1.0-sources.jar")
        with zipfile.ZipFile(self.jar, "w") as z:
            z.write(os.path.join(HERE, "sources", "org", "example", "Greeter.java"), "org/example/Greeter.java")

    def run_tool(self, folder, *extra):
        series = os.path.join(HERE, folder, "series")
        patches = [os.path.join(HERE, folder, name) for name in apply_series.read_series(series)]
        out = os.path.join(self.tmp, folder + ".srcjar")
        manifest = os.path.join(self.tmp, folder + ".json")
        argv = ["--sources", self.jar, "--series", series, "--out-srcjar", out, "--out-manifest", manifest]
        for p in patches:
            argv += ["--patch", p]
        return apply_series.main(argv + list(extra)), out, manifest

    def patched_source(self, srcjar):
        with zipfile.ZipFile(srcjar) as z:
            self.assertEqual(z.namelist(), ["org/example/Greeter.java"])
            return z.read("org/example/Greeter.java").decode()

    def test_the_whole_series_and_a_prefix(self):
        code, out, manifest = self.run_tool("good")
        self.assertEqual(code, 0)
        text = self.patched_source(out)
        self.assertIn('"Hello, "', text)
        self.assertIn("return 2;", text)
        with open(manifest) as f:
            whole = json.load(f)
        self.assertEqual(whole["applied"], ["0001-capitalize.patch", "0002-version-2.patch"])

        code, out, manifest = self.run_tool("good", "--upto", "1")
        self.assertEqual(code, 0)
        text = self.patched_source(out)
        self.assertIn('"Hello, "', text)
        self.assertIn("return 1;", text)
        with open(manifest) as f:
            prefix = json.load(f)
        self.assertEqual(prefix["applied"], ["0001-capitalize.patch"])
        # The prefix is another patch set: another identity.
        self.assertNotEqual(prefix["patch_set_sha256"], whole["patch_set_sha256"])

    def test_the_same_series_gives_the_same_bytes(self):
        _, out1, _ = self.run_tool("good")
        with open(out1, "rb") as f:
            first = f.read()
        _, out2, _ = self.run_tool("good")
        with open(out2, "rb") as f:
            self.assertEqual(f.read(), first)

    def test_a_patch_that_does_not_apply_names_the_file_and_the_hunk(self):
        with self.assertRaisesRegex(apply_series.SeriesError,
                                    r"patch 0001-against-another-version.patch does not apply: "
                                    r"org/example/Greeter.java: hunk #1 FAILED at line 8"):
            apply_series.apply([self.jar], os.path.join(HERE, "broken", "series"),
                               [os.path.join(HERE, "broken", "0001-against-another-version.patch")], None,
                               tempfile.mkdtemp(dir=self.tmp))

    def test_the_build_must_list_the_series_in_order(self):
        series = os.path.join(HERE, "good", "series")
        reversed_patches = [os.path.join(HERE, "good", n) for n in reversed(apply_series.read_series(series))]
        with self.assertRaisesRegex(apply_series.SeriesError, "keep the BUILD file's patches in the series' order"):
            apply_series.apply([self.jar], series, reversed_patches, None, tempfile.mkdtemp(dir=self.tmp))

    def test_a_file_missing_from_the_sources_is_named(self):
        empty = os.path.join(self.tmp, "empty-sources.jar")
        with zipfile.ZipFile(empty, "w") as z:
            z.writestr("README", "nothing")
        series = os.path.join(HERE, "good", "series")
        patches = [os.path.join(HERE, "good", n) for n in apply_series.read_series(series)]
        with self.assertRaisesRegex(apply_series.SeriesError, "org/example/Greeter.java: not in the sources"):
            apply_series.apply([empty], series, patches, None, tempfile.mkdtemp(dir=self.tmp))


if __name__ == "__main__":
    unittest.main()
