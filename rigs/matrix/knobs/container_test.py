"""container.py for real with podman: the rigs' OS image loaded from its archive (the docker-archive
layout build_image.py writes) under the tag it carries, a process in it on the CPU and
memory-node sets asked for (read inside the container and from the host's /proc, which must agree), a
pinned JDK from the runfiles running in it, and the container removed.

  args: IMAGE_ARCHIVE IMAGE_TAG JAVA
"""

import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import unittest

from rigs.matrix.knobs import container

TAR, TAG_FILE, JAVA = (os.path.abspath(p) for p in sys.argv[1:4])
del sys.argv[1:4]


def status_field(text, field):
    m = re.search(rf"^{field}:\s*(\S+)", text, re.M)
    return m.group(1) if m else None


class ContainerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        reason = container.unavailable_reason()
        if reason:
            raise AssertionError(f"{reason}: ./bazelw installs it")
        with open(TAG_FILE) as f:
            cls.tag = f.read().strip()
        cls.image_id = container.ensure_image(TAR, cls.tag)

    def test_the_image_comes_from_the_archive_and_is_loaded_once(self):
        self.assertRegex(self.tag, r"^localhost/tunelab-rig-os:[0-9a-f]{16}$")
        self.assertEqual(container.ensure_image(TAR, self.tag), self.image_id)
        # The archive's own words: one layer, named by the tag's hash, and the tag itself.
        with tarfile.open(TAR) as tar:
            (manifest,) = json.load(tar.extractfile("manifest.json"))
        self.assertEqual(manifest["RepoTags"], [self.tag])
        self.assertTrue(manifest["Layers"][0].startswith(self.tag.rsplit(":", 1)[1]), manifest)
        # A podman without the image loads it again from the archive, and refuses one that lacks the tag.
        with self.assertRaisesRegex(container.ContainerError, "did not bring localhost/tunelab-rig-os:0000"):
            container.ensure_image(TAR, "localhost/tunelab-rig-os:0000000000000000")

    def test_the_bundles_launcher_finds_python3(self):
        done = subprocess.run(container.run_argv(f"tl-test-{os.getpid()}-p", self.tag,
                                                 ["/usr/bin/python3", "-c", "import sys; print(sys.version_info[:2])"],
                                                 tempfile.mkdtemp()),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.strip(), "(3, 11)")

    def test_cpuset_is_what_the_process_inside_sees(self):
        cpus = str(os.cpu_count() - 1)  # the last CPU: not what an unpinned process would show
        work = tempfile.mkdtemp()
        argv = container.run_argv(f"tl-test-{os.getpid()}-a", self.tag, ["/bin/busybox", "cat", "/proc/self/status"],
                                  work, cpus=cpus, mems="0")
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(status_field(done.stdout, "Cpus_allowed_list"), cpus)
        self.assertEqual(status_field(done.stdout, "Mems_allowed_list"), "0")

    def test_a_pinned_jdk_runs_inside_and_the_host_sees_the_same_cpuset(self):
        name = f"tl-test-{os.getpid()}-b"
        jdk_home = os.path.dirname(os.path.dirname(os.path.realpath(JAVA)))
        work = tempfile.mkdtemp()
        argv = container.run_argv(name, self.tag, [os.path.realpath(JAVA), "-XX:+UseSerialGC", "-Xmx64m", "-version"],
                                  work, read_only=[jdk_home], env={"TUNELAB_TEST": "1"}, cpus="0")
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("OpenJDK 64-Bit Server VM", done.stderr)

        sleeper = subprocess.Popen(container.run_argv(name, self.tag, ["/bin/busybox", "sleep", "60"], work, cpus="0"),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            pid = container.main_pid(name)
            with open(f"/proc/{pid}/status") as f:
                host_view = f.read()
            inside = subprocess.run([container.podman(), *container.PODMAN_OPTIONS, "exec", name, "/bin/busybox",
                                     "cat", "/proc/1/status"], stdout=subprocess.PIPE, text=True, timeout=60).stdout
            self.assertEqual(status_field(host_view, "Cpus_allowed_list"), "0")
            self.assertEqual(status_field(inside, "Cpus_allowed_list"), "0")
            self.assertIn("busybox", host_view.splitlines()[0])  # the host pid is the container's process
        finally:
            container.remove(name)
            sleeper.wait(timeout=60)
        gone = subprocess.run([container.podman(), *container.PODMAN_OPTIONS, "container", "exists", name])
        self.assertNotEqual(gone.returncode, 0, "the container is still there after remove()")

    def test_containers_a_killed_run_left_are_removed(self):
        run_id = f"20261124T000000Z-{os.getpid() % 0xffff:04x}"
        work = tempfile.mkdtemp()
        lock, other_lock = os.path.join(work, "matrix.lock"), os.path.join(work, "other.lock")
        names, clients = [], []
        for cell, held in (("cafe", lock), ("beef", other_lock)):
            name = f"{container.container_prefix(run_id)}{cell}.r0-main"
            clients.append(subprocess.Popen(container.run_argv(name, self.tag, ["/bin/busybox", "sleep", "120"],
                                                               work, host_lock=held),
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            container.main_pid(name)
            names.append(name)
        for client in clients:
            client.kill()  # what SIGKILL of the runner does to `podman run`: the container stays
            client.wait()
        exists = [container.podman(), *container.PODMAN_OPTIONS, "container", "exists"]
        self.assertEqual(subprocess.run(exists + [names[0]]).returncode, 0, "the container went with its client")
        # Only the containers of runners that held this lock go (another lock is another host's matrix).
        self.assertEqual(container.remove_orphans(lock), [names[0]])
        self.assertNotEqual(subprocess.run(exists + [names[0]]).returncode, 0)
        self.assertEqual(subprocess.run(exists + [names[1]]).returncode, 0)
        self.assertEqual(container.remove_orphans(lock), [])
        self.assertEqual(container.remove_orphans(other_lock), [names[1]])


if __name__ == "__main__":
    unittest.main()
