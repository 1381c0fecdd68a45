"""A profile or a hostname given to the guest tools cannot add parameters to the guest kernel's command line
(issue 39: `--profile "guest init=/bin/sh"` put init=/bin/sh on it)."""

import os
import stat
import tempfile
import unittest

from tools.guest import host_guest, run_guest


def appended(argv):
    return argv[argv.index("-append") + 1]


class KernelArgsTest(unittest.TestCase):
    def test_the_two_node_guests_profile(self):
        argv = run_guest.qemu_argv("qemu", "/k", "/i", "guest", 1536)
        self.assertTrue(appended(argv).endswith(" tunelab.profile=guest"))
        for bad in ("guest init=/bin/sh", "guest\ninit=/bin/sh", "", "-x", "a" * 65, "guest;reboot"):
            with self.subTest(bad), self.assertRaisesRegex(run_guest.GuestError, "--profile .*kernel's command line"):
                run_guest.qemu_argv("qemu", "/k", "/i", bad, 1536)
        self.assertEqual(run_guest.main(["--kernel", "/k", "--initramfs", "/i", "--profile", "guest init=/bin/sh",
                                         "--qemu", "true"]), 2)

    def test_the_arm64_hosts_name(self):
        argv = host_guest.qemu_argv("arm64", "qemu", "/k", "/i", 2222, "ssh-ed25519 AAAA k", hostname="arm64-guest")
        self.assertIn(" tunelab.hostname=arm64-guest ", appended(argv))
        with self.assertRaisesRegex(host_guest.GuestError, "--name 'x tunelab.mode=guest'"):
            host_guest.qemu_argv("arm64", "qemu", "/k", "/i", 2222, "k", hostname="x tunelab.mode=guest")


class GuestImageTest(unittest.TestCase):
    """run_redis_guest builds its image when it is about to boot (issue 41: `-- --help` built ~150 MB first)."""

    def test_the_image_is_built_by_label_and_found_in_bazel_bin(self):
        with tempfile.TemporaryDirectory() as tmp:
            calls = os.path.join(tmp, "calls")
            fake = os.path.join(tmp, "bazel")  # a stand-in for Bazel: records its arguments, names a bazel-bin
            with open(fake, "w") as f:
                f.write(f"#!/bin/sh\necho \"$@\" >> {calls}\n[ \"$1\" = info ] && echo {tmp}/bin\nexit 0\n")
            os.chmod(fake, stat.S_IRWXU)
            kernel, initramfs = run_guest.image_files("//tools/guest:redis_guest", tmp, bazel=fake)
            self.assertEqual(kernel, f"{tmp}/bin/tools/guest/redis_guest/vmlinuz")
            self.assertEqual(initramfs, f"{tmp}/bin/tools/guest/redis_guest/initramfs.cpio.gz")
            with open(calls) as f:
                self.assertEqual(f.read().splitlines(), ["build //tools/guest:redis_guest", "info bazel-bin"])

    def test_a_failed_build_or_a_bad_label_is_an_error(self):
        for bad in ("redis_guest", "//tools/guest:x y", "//../etc:x", "//t:x --output_base=/tmp"):
            with self.subTest(bad), self.assertRaisesRegex(run_guest.GuestError, "target label"):
                run_guest.image_files(bad, "/nonexistent", bazel="/bin/false")
        with self.assertRaisesRegex(run_guest.GuestError, "exited 1"):
            run_guest.image_files("//tools/guest:redis_guest", "/", bazel="/bin/false")
        with self.assertRaisesRegex(run_guest.GuestError, "needs the checkout"):
            run_guest.image_files("//tools/guest:redis_guest", None)

    def test_help_and_usage_errors_need_no_image(self):
        with self.assertRaises(SystemExit) as done:
            run_guest.main(["--help"])
        self.assertEqual(done.exception.code, 0)
        for argv in ([], ["--kernel", "/k"], ["--image", "//a:b", "--kernel", "/k", "--initramfs", "/i"]):
            with self.subTest(argv), self.assertRaises(SystemExit) as done:
                run_guest.main(argv)
            self.assertEqual(done.exception.code, 2)


if __name__ == "__main__":
    unittest.main()
