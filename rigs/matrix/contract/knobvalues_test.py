"""The knobs' values as a matrix writes them (knobvalues.py): heap sizes and JDK names, and what is refused."""

import unittest

from rigs.matrix.contract import knobvalues


class KnobValuesTest(unittest.TestCase):
    def test_heap_sizes_in_bytes(self):
        self.assertEqual(knobvalues.parse_heap("512m"), 512 << 20)
        self.assertEqual(knobvalues.parse_heap("14G"), 14 << 30)
        self.assertEqual(knobvalues.parse_heap("64k"), 64 << 10)

    def test_what_is_not_a_jvm_size_is_refused(self):
        # A size the JVM would read otherwise (bytes, a fraction, a unit it lacks) or a trailing newline.
        for text in ("512", "1.5g", "2t", "m", "512m\n", " 512m", "-1g", ""):
            with self.assertRaisesRegex(ValueError, "is not a JVM size", msg=repr(text)):
                knobvalues.parse_heap(text)

    def test_jdk_names(self):
        self.assertEqual([knobvalues.jdk_major(n) for n in (11, "17", "jdk21")], [11, 17, 21])
        for name in ("none", "jdk", "17.0.2", "openjdk17", "17\n"):
            self.assertIsNone(knobvalues.jdk_major(name), repr(name))


if __name__ == "__main__":
    unittest.main()
