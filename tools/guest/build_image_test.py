"""The guest builder's pure parts: kernel modules in dependency order (read from their modinfo), and the package
lock's sets per architecture (resolved with a stand-in for apt)."""

import os
import tempfile
import unittest

from tools.guest import build_image, lock


class ModuleOrderTest(unittest.TestCase):
    def test_dependencies_load_first_and_are_read_from_the_modules(self):
        tmp = tempfile.mkdtemp()
        # modinfo as Debian's .ko files carry it: NUL-separated key=value strings (virtio_net, 6.1.0-56-cloud-arm64)
        path = os.path.join(tmp, "virtio_net.ko")
        with open(path, "wb") as f:
            f.write(b"\0ELF...\0license=GPL\0depends=virtio_ring,virtio,net_failover\0vermagic=6.1.0\0")
        self.assertEqual(build_image.module_depends(path), ["virtio_ring", "virtio", "net_failover"])
        deps = {"virtio_mmio": ["virtio", "virtio_ring"], "virtio": ["virtio_ring"], "virtio_ring": [],
                "virtio_net": ["virtio_ring", "virtio", "net_failover"], "net_failover": ["failover"],
                "failover": []}
        order = build_image.load_order(["virtio_mmio", "virtio_net"], deps.__getitem__)
        self.assertEqual(order, ["virtio_ring", "virtio", "virtio_mmio", "failover", "net_failover", "virtio_net"])
        with self.assertRaisesRegex(SystemExit, "cycle"):
            build_image.load_order(["a"], {"a": ["b"], "b": ["a"]}.__getitem__)


class LockSetsTest(unittest.TestCase):
    def test_sets_per_architecture_and_what_sshd_adds(self):
        tmp = tempfile.mkdtemp()
        path = os.path.join(tmp, "packages.txt")
        with open(path, "w") as f:
            f.write("# c\n[userland amd64 arm64]\nbusybox-static\n[sshd amd64 arm64]\nopenssh-server\n"
                    "[kernel arm64 nodeps]\nlinux-image-cloud-arm64\n")
        sets = lock.read_sets(path)
        self.assertEqual([(n, a, nd) for n, a, nd, _ in sets],
                         [("userland", "amd64", False), ("userland", "arm64", False), ("sshd", "amd64", False),
                          ("sshd", "arm64", False), ("kernel", "arm64", True)])
        closures = {("busybox-static",): [("busybox-static", "1", "A"), ("libc6", "2", "A")],
                    ("busybox-static", "openssh-server"): [("busybox-static", "1", "A"), ("libc6", "2", "A"),
                                                           ("openssh-server", "9", "A"), ("media-types", "10", "all")],
                    ("linux-image-cloud-arm64",): [("linux-image-cloud-arm64", "6.1", "arm64"), ("kmod", "30", "arm64")]}
        resolved = lock.resolve(sets, lambda packages, arch: [(p, v, arch if a == "A" else a)
                                                               for p, v, a in closures[tuple(packages)]])
        self.assertEqual(resolved["arm64"]["sshd"], [("media-types", "10", "all"), ("openssh-server", "9", "arm64")])
        self.assertEqual(resolved["arm64"]["kernel"], [("linux-image-cloud-arm64", "6.1", "arm64")])
        self.assertEqual(resolved["amd64"]["userland"], [("busybox-static", "1", "amd64"), ("libc6", "2", "amd64")])
        with open(path, "w") as f:
            f.write("busybox-static\n")
        with self.assertRaisesRegex(SystemExit, "before any"):
            lock.read_sets(path)


if __name__ == "__main__":
    unittest.main()
