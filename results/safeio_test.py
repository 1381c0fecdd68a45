"""The one writer and the one reader (results/safeio.py) against what issue 58 planted: links at the name and
on the way, folders another user owns or may write, FIFOs and devices, huge, deep and malformed input."""

import hashlib
import json
import os
import shutil
import stat
import tempfile
import threading
import unittest

from hypothesis import given, settings, strategies as st

from results import safeio

NOBODY = 65534


class Box(unittest.TestCase):
    def setUp(self):
        self.dir = os.path.realpath(tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR")))
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.victim = os.path.join(self.dir, "victim")
        with open(self.victim, "w") as f:
            f.write("precious\n")

    def victim_text(self):
        with open(self.victim) as f:
            return f.read()


class WriterTest(Box):
    def test_a_file_is_written_whole_with_its_mode(self):
        path = os.path.join(self.dir, "a", "b", "out.json")
        safeio.write_json(path, {"x": 1})
        with open(path) as f:
            self.assertEqual(json.load(f), {"x": 1})
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o644)
        self.assertEqual([n for n in os.listdir(os.path.dirname(path)) if n.startswith(".tmp-")], [])

    def test_a_link_at_the_name_is_refused_and_its_target_untouched(self):
        for target in (self.victim, os.path.join(self.dir, "dangling")):
            path = os.path.join(self.dir, "out.json")
            os.symlink(target, path)
            with self.assertRaisesRegex(safeio.WriteRefused, "not a regular file"):
                safeio.write_text(path, "overwritten")
            os.unlink(path)
        self.assertEqual(self.victim_text(), "precious\n")
        self.assertFalse(os.path.lexists(os.path.join(self.dir, "dangling")))

    def test_a_planted_temporary_name_is_never_opened(self):
        # Issue 58, row 1: `ln -s VICTIM SET/sensitivity.json.tmp` made root overwrite VICTIM.
        path = os.path.join(self.dir, "sensitivity.json")
        os.symlink(self.victim, path + ".tmp")
        safeio.write_json(path, {"ok": True})
        self.assertEqual(self.victim_text(), "precious\n")

    def test_a_fifo_or_folder_at_the_name_is_refused_without_blocking(self):
        fifo = os.path.join(self.dir, "fifo")
        os.mkfifo(fifo)
        folder = os.path.join(self.dir, "folder")
        os.mkdir(folder)
        for path in (fifo, folder):
            for write in (lambda p: safeio.write_text(p, "x"), safeio.open_log, lambda p: safeio.write_setting(p, "1")):
                outcome = []

                def attempt(write=write, path=path, outcome=outcome):
                    try:
                        outcome.append(write(path))
                    except OSError as e:
                        outcome.append(e)
                worker = threading.Thread(target=attempt, daemon=True)
                worker.start()
                worker.join(5)
                self.assertFalse(worker.is_alive(), f"{path}: blocked")
                self.assertIsInstance(outcome[0], OSError, f"{path}: written")

    def test_a_log_is_never_written_through_a_link(self):
        path = os.path.join(self.dir, "cell.out")
        os.symlink(self.victim, path)
        with self.assertRaises(safeio.WriteRefused):
            safeio.open_log(path)
        self.assertEqual(self.victim_text(), "precious\n")

    def test_create_new_never_replaces(self):
        path = os.path.join(self.dir, "new")
        safeio.create_new(path, b"1")
        with self.assertRaises(FileExistsError):
            safeio.create_new(path, b"2")
        os.unlink(path)
        os.symlink(self.victim, path)
        with self.assertRaises(FileExistsError):
            safeio.create_new(path, b"3")
        self.assertEqual(self.victim_text(), "precious\n")

    @unittest.skipUnless(os.geteuid() == 0, "needs root to plant another user's folder")
    def test_a_folder_another_user_owns_or_may_write_is_refused_on_the_way(self):
        theirs = os.path.join(self.dir, "theirs")
        os.mkdir(theirs)
        os.chown(theirs, NOBODY, NOBODY)
        with self.assertRaisesRegex(safeio.WriteRefused, "owned by uid 65534"):
            safeio.write_text(os.path.join(theirs, "sub", "out"), "x")
        shared = os.path.join(self.dir, "shared")
        os.mkdir(shared)
        os.chmod(shared, 0o777)
        with self.assertRaisesRegex(safeio.WriteRefused, "writable by other users"):
            safeio.write_text(os.path.join(shared, "out"), "x")
        os.chmod(shared, 0o1777)  # sticky, as /tmp: nobody may rename what is ours in it
        safeio.write_text(os.path.join(shared, "mine", "out"), "x")

    @unittest.skipUnless(os.geteuid() == 0, "needs root to plant another user's link")
    def test_a_link_another_user_owns_on_the_way_is_refused(self):
        # The link's own owner counts, not only where it points (issue 58: the fleet's ancestor walk).
        link = os.path.join(self.dir, "link")
        os.symlink(self.dir, link)
        os.lchown(link, NOBODY, NOBODY)
        with self.assertRaisesRegex(safeio.WriteRefused, "owned by uid 65534"):
            safeio.write_text(os.path.join(link, "out"), "x")
        os.lchown(link, 0, 0)
        safeio.write_text(os.path.join(link, "out"), "x")
        self.assertTrue(os.path.isfile(os.path.join(self.dir, "out")))

    def test_the_walk_follows_links_to_their_real_folder(self):
        real = os.path.join(self.dir, "real")
        os.mkdir(real)
        os.symlink("real", os.path.join(self.dir, "rel"))
        self.assertEqual(safeio.check_folder(os.path.join(self.dir, "rel")), real)
        os.symlink("loop", os.path.join(self.dir, "loop"))
        with self.assertRaisesRegex(safeio.WriteRefused, "links on the way"):
            safeio.check_folder(os.path.join(self.dir, "loop", "x"))


class ReaderTest(Box):
    def test_fifos_devices_and_folders_are_refused_before_a_byte_is_read(self):
        fifo = os.path.join(self.dir, "fifo")
        os.mkfifo(fifo)
        zero = os.path.join(self.dir, "zero.json")
        os.symlink("/dev/zero", zero)  # issue 58, row 11: 2.4 GB read before MemoryError
        for path in (fifo, zero, self.dir):
            with self.assertRaisesRegex(safeio.InputError, "not a regular file|cannot be read"):
                safeio.read_json(path)

    def test_a_digest_reads_any_size_through_links_and_refuses_what_is_not_a_file(self):
        path = os.path.join(self.dir, "blob")
        with open(path, "wb") as f:
            f.write(b"x" * (3 << 20))  # three read blocks
        os.symlink("blob", os.path.join(self.dir, "link"))
        expected = hashlib.sha256(b"x" * (3 << 20)).hexdigest()
        self.assertEqual(safeio.sha256_of(os.path.join(self.dir, "link")), expected)
        fifo = os.path.join(self.dir, "fifo")
        os.mkfifo(fifo)
        for bad in (fifo, "/dev/zero", self.dir):
            with self.assertRaisesRegex(safeio.InputError, "not a regular file"):
                safeio.sha256_of(bad)

    def test_size_depth_digits_and_constants_are_bounded(self):
        big = os.path.join(self.dir, "big.json")
        with open(big, "w") as f:
            f.write("[" + "0," * 600 + "0]")
        with self.assertRaisesRegex(safeio.InputError, "over the 1000-byte limit"):
            safeio.read_json(big, max_bytes=1000)
        for text, why in (("[" * 100_000 + "]" * 100_000, "nested"), ("9" * 5000, "digits"), ("NaN", "NaN"),
                          ('{"a": 1e999}', "finite"), ("[1, 2", "not valid JSON"), (b"\xff\xfe", "not valid JSON")):
            with self.assertRaisesRegex(safeio.InputError, why):
                safeio.parse_json(text)
        for text, why in (("a = " + "[" * 50_000 + "]" * 50_000, "nested"), ("a = " + "9" * 5000, "TOML"),
                          ("a = [", "TOML"), (b"a = '\xff'", "TOML")):
            with self.assertRaisesRegex(safeio.InputError, why):
                safeio.parse_toml(text)

    def test_a_schema_names_the_first_problem(self):
        with self.assertRaisesRegex(safeio.InputError, r"at a: 'x' is not of type 'integer'"):
            safeio.parse_json('{"a": "x"}', schema={"type": "object", "properties": {"a": {"type": "integer"}}})

    def test_a_missing_file_is_file_not_found(self):
        with self.assertRaises(FileNotFoundError):
            safeio.read_json(os.path.join(self.dir, "absent.json"))

    @settings(max_examples=200, deadline=None, database=None, derandomize=True)
    @given(st.one_of(st.binary(max_size=200), st.text(max_size=200)))
    def test_any_bytes_give_a_document_or_the_readers_error(self, data):
        for parse in (safeio.parse_json, safeio.parse_toml):
            try:
                parse(data)
            except safeio.InputError:
                pass


if __name__ == "__main__":
    unittest.main()
