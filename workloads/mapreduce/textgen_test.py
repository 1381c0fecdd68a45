"""The WordCount input generator: deterministic bytes, the requested shape, the expected answer."""

import collections
import os
import tempfile
import unittest

from workloads.mapreduce import terarecords, textgen


class TextgenTest(unittest.TestCase):
    def generate(self, **kw):
        params = textgen.TextParams(**{"words": 5000, "vocabulary": 200, "zipf_s": 1.0, "seed": 1, "splits": 3, **kw})
        folder = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        return folder, textgen.generate(params, folder)

    def test_same_parameters_same_bytes_other_seed_other_bytes(self):
        _, (a, _) = self.generate()
        _, (b, _) = self.generate()
        _, (c, _) = self.generate(seed=2)
        self.assertEqual(a, b)
        self.assertNotEqual(a, c)

    def test_shape_and_counts(self):
        folder, (digests, counts) = self.generate()
        self.assertEqual(sorted(digests), ["part-00000.txt", "part-00001.txt", "part-00002.txt"])
        words = []
        for name in digests:
            with open(os.path.join(folder, name)) as f:
                lines = f.read().splitlines()
            self.assertTrue(all(len(line.split()) <= 10 for line in lines))
            words += [w for line in lines for w in line.split()]
        self.assertEqual(len(words), 5000)
        self.assertEqual(collections.Counter(words), counts)
        # Zipf with s = 1: the first word is drawn far more often than the hundredth.
        self.assertGreater(counts["w00000"], 5 * counts.get("w00099", 1))

    def test_the_expected_answer_is_the_sorted_counts(self):
        digest = textgen.wordcount_digest(collections.Counter({"b": 2, "a": 1}))
        import hashlib
        self.assertEqual(digest, hashlib.sha256(b"a\t1\nb\t2\n").hexdigest())

    def test_bad_parameters_are_refused(self):
        with self.assertRaisesRegex(ValueError, "must be >= 1"):
            textgen.TextParams(0, 10, 1.0, 1, 1).check()
        with self.assertRaisesRegex(ValueError, "zipf_s"):
            textgen.TextParams(10, 10, -1.0, 1, 1).check()


class TeraRecordsTest(unittest.TestCase):
    def test_records_are_teragen_lines_with_unique_keys_and_a_sorted_digest(self):
        folder = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        digests, expected = terarecords.generate(3000, 5, folder, splits=2)
        again = terarecords.generate(3000, 5, tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR")), splits=2)
        self.assertEqual((digests, expected), again)
        records = []
        for name in sorted(digests):
            with open(os.path.join(folder, name), "rb") as f:
                data = f.read()
            records += [data[i:i + 100] for i in range(0, len(data), 100)]
        self.assertEqual(len(records), 3000)
        self.assertTrue(all(r.endswith(b"\r\n") and b"\n" not in r[:98] for r in records))
        self.assertEqual(len({r[:10] for r in records}), 3000)
        import hashlib
        self.assertEqual(hashlib.sha256(b"".join(sorted(records))).hexdigest(), expected)


if __name__ == "__main__":
    unittest.main()
