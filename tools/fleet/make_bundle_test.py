"""make_bundle.py: the same inputs give the same bytes; links are followed; modes and empty files kept."""

import hashlib
import os
import tarfile
import tempfile
import time
import unittest

from tools.fleet import make_bundle


class MakeBundleTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.src = os.path.join(self.tmp, "src")
        os.makedirs(self.src)
        self.write("launcher", "#!/bin/sh\n", 0o755)
        self.write("data.txt", "data\n", 0o644)
        os.symlink(os.path.join(self.src, "data.txt"), os.path.join(self.src, "link.txt"))
        self.listing = os.path.join(self.tmp, "listing.txt")
        with open(self.listing, "w") as f:
            f.write(f"file matrix {self.src}/launcher\n"
                    f"file matrix.runfiles/ws/pkg/data.txt {self.src}/link.txt\n"
                    "empty matrix.runfiles/ws/pkg/__init__.py\n")

    def write(self, name, text, mode):
        path = os.path.join(self.src, name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)

    def bundle(self, name):
        out = os.path.join(self.tmp, name)
        self.assertEqual(make_bundle.main(["--listing", self.listing, "--out", out]), 0)
        with open(out, "rb") as f:
            return out, hashlib.sha256(f.read()).hexdigest()

    def test_reproducible_and_complete(self):
        first, sha1 = self.bundle("a.tar.gz")
        time.sleep(1.1)
        os.utime(os.path.join(self.src, "data.txt"))  # a newer time changes nothing
        _, sha2 = self.bundle("b.tar.gz")
        self.assertEqual(sha1, sha2)
        with tarfile.open(first) as tar:
            members = {m.name: m for m in tar.getmembers()}
            self.assertEqual(sorted(members), ["BUNDLE.sha256", "matrix", "matrix.runfiles", "matrix.runfiles/ws",
                                               "matrix.runfiles/ws/pkg", "matrix.runfiles/ws/pkg/__init__.py",
                                               "matrix.runfiles/ws/pkg/data.txt"])
            self.assertTrue(members["matrix.runfiles/ws/pkg/data.txt"].isfile())  # the link's content
            self.assertEqual(tar.extractfile("matrix.runfiles/ws/pkg/data.txt").read(), b"data\n")
            self.assertEqual(members["matrix"].mode, 0o755)
            self.assertEqual(members["matrix.runfiles/ws/pkg/data.txt"].mode, 0o644)
            self.assertEqual({m.mtime for m in members.values()}, {0})
            # The manifest comes first (the controller reads its digest without reading the rest) and lists
            # every file with the digest and mode it is packed with.
            self.assertEqual(tar.getmembers()[0].name, "BUNDLE.sha256")
            listed = tar.extractfile("BUNDLE.sha256").read().decode().splitlines()
        launcher, empty, data = (hashlib.sha256(text).hexdigest() for text in (b"#!/bin/sh\n", b"", b"data\n"))
        self.assertEqual(listed[1:], [f"{launcher} 0755 matrix", f"{empty} 0644 matrix.runfiles/ws/pkg/__init__.py",
                                      f"{data} 0644 matrix.runfiles/ws/pkg/data.txt"])
        self.assertEqual(make_bundle.manifest_sha256(first),
                         hashlib.sha256(("\n".join(listed) + "\n").encode()).hexdigest())

    def test_a_folder_runfile_brings_its_files_without_bytecode(self):
        # The locked Python site is one runfile, a folder (tools/python/pip.bzl): the bundle carries its files.
        site = os.path.join(self.src, "site")
        os.makedirs(os.path.join(site, "pkg", "__pycache__"))
        for rel, text in (("pkg/mod.py", "x = 1\n"), ("pkg/__pycache__/mod.cpython-311.pyc", "pyc"),
                          ("data with space.txt", "d\n")):
            with open(os.path.join(site, rel), "w") as f:
                f.write(text)
        with open(self.listing, "a") as f:
            f.write(f"file matrix.runfiles/pypi/site {site}\n")
        out, _ = self.bundle("a.tar.gz")
        with tarfile.open(out) as tar:
            names = set(tar.getnames())
            self.assertEqual(tar.extractfile("matrix.runfiles/pypi/site/pkg/mod.py").read(), b"x = 1\n")
        # Left out: bytecode, and a name with white space (BUNDLE.sha256's lines are "<sha256> <mode> <path>";
        # the fleet's hosts refused the whole bundle over scipy's "Transparent Busy.ani").
        self.assertNotIn("matrix.runfiles/pypi/site/data with space.txt", names)
        self.assertFalse([n for n in names if "__pycache__" in n], names)
        with tarfile.open(out) as tar:
            listed = tar.extractfile("BUNDLE.sha256").read().decode().splitlines()[1:]
        self.assertTrue(all(len(line.split(" ")) == 3 for line in listed), listed)

    def test_bad_listings_are_refused(self):
        for line in ("file ../escape /etc/passwd", "copy a b", "file a", "empty BUNDLE.sha256"):
            with open(self.listing, "w") as f:
                f.write(line + "\n")
            with self.subTest(line=line):
                self.assertEqual(make_bundle.main(["--listing", self.listing, "--out", os.path.join(self.tmp, "x")]), 1)


def elf_header(machine):
    """The first 20 bytes of a little-endian 64-bit ELF file for e_machine `machine`, then padding."""
    return b"\x7fELF\x02\x01\x01" + bytes(11) + machine.to_bytes(2, "little") + bytes(44)


class ForeignProgramTest(unittest.TestCase):
    def test_a_bundle_for_aarch64_refuses_an_x86_program_and_names_it(self):
        tmp = tempfile.mkdtemp()
        files = {"arm": elf_header(183), "x86": elf_header(62), "text": b"#!/bin/sh\n"}
        for name, data in files.items():
            with open(os.path.join(tmp, name), "wb") as f:
                f.write(data)
        self.assertIsNone(make_bundle.elf_machine(os.path.join(tmp, "text")))
        self.assertEqual(make_bundle.elf_machine(os.path.join(tmp, "arm")), 183)
        listing = os.path.join(tmp, "listing.txt")
        with open(listing, "w") as f:
            f.write("".join(f"file matrix.runfiles/{name} {tmp}/{name}\n" for name in files))
        out = os.path.join(tmp, "b.tar.gz")
        self.assertEqual(make_bundle.main(["--listing", listing, "--out", out, "--machine", "aarch64"]), 1)
        self.assertFalse(os.path.exists(out))
        entries = make_bundle.read_listing(listing)
        self.assertEqual(make_bundle.foreign_elf_files(entries, "aarch64"), [("matrix.runfiles/x86", 62)])
        self.assertEqual(make_bundle.foreign_elf_files(entries, "x86_64"), [("matrix.runfiles/arm", 183)])
        # selenium's driver managers for every platform ride in a pure wheel and never run on a host
        allowed = {"matrix.runfiles/pypi/site/selenium/webdriver/common/linux/selenium-manager": f"{tmp}/x86"}
        self.assertEqual(make_bundle.foreign_elf_files(allowed, "aarch64"), [])


if __name__ == "__main__":
    unittest.main()
