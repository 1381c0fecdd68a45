"""A root file system tree from Debian packages, shared by the rigs' container image and the NUMA guest.

Packages are unpacked with `dpkg-deb -x`: no maintainer scripts run (a container or guest that execs one
program needs none), and documentation is left out.
"""

import os
import re
import shutil
import subprocess

SHRINK = ("usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/locale", "usr/share/lintian")


def unpack_debs(debs, tree):
    os.makedirs(tree, exist_ok=True)
    for deb in debs:
        # Owners are not kept (the images and initramfs record root for every file): a build sandbox's
        # user namespace cannot give files to the packages' system groups (shadow, gid 42).
        contents = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", deb], stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "--no-same-owner", "-C", tree], stdin=contents.stdout, check=True)
        contents.stdout.close()
        if contents.wait() != 0:
            raise subprocess.CalledProcessError(contents.returncode, ["dpkg-deb", "--fsys-tarfile", deb])
    for rel in SHRINK:
        shutil.rmtree(os.path.join(tree, rel), ignore_errors=True)


def link_python3(tree):
    """/usr/bin/python3 -> the newest python3.N unpacked: the one link Debian's python3-minimal would add
    with its maintainer scripts (the bundle's launchers name /usr/bin/python3)."""
    bin_dir = os.path.join(tree, "usr", "bin")
    pythons = sorted((n for n in os.listdir(bin_dir) if re.fullmatch(r"python3\.\d+", n)),
                     key=lambda n: int(n.split(".")[1]))
    link = os.path.join(bin_dir, "python3")
    if pythons and not os.path.lexists(link):
        os.symlink(pythons[-1], link)


def merge_usr(tree):
    """Moves /bin, /sbin, /lib* into /usr and links them there, as Debian 12 installs do (usrmerge): one
    place per program, so busybox's applet links (made where nothing is) never shadow a Debian program."""
    for name in ("bin", "sbin", "lib", "lib64"):
        top = os.path.join(tree, name)
        if os.path.islink(top) or not os.path.isdir(top):
            continue
        usr = os.path.join(tree, "usr", name)
        os.makedirs(usr, exist_ok=True)
        for root, dirs, files in os.walk(top, topdown=False):
            rel = os.path.relpath(root, top)
            dest_dir = os.path.normpath(os.path.join(usr, rel))
            os.makedirs(dest_dir, exist_ok=True)
            for entry in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
                dest = os.path.join(dest_dir, entry)
                if not os.path.lexists(dest):
                    os.rename(os.path.join(root, entry), dest)
        shutil.rmtree(top)
        os.symlink(os.path.join("usr", name), top)
