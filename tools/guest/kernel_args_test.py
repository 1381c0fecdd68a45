"""A profile or a hostname given to the guest tools cannot add parameters to the guest kernel's command line
(issue 39: `--profile "guest init=/bin/sh"` put init=/bin/sh on it)."""

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


if __name__ == "__main__":
    unittest.main()
