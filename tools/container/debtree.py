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
    for deb in debs:
        subprocess.run(["dpkg-deb", "-x", deb, tree], check=True)
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
