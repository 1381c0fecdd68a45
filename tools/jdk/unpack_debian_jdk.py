"""Lays out a Debian OpenJDK package as a relocatable Java runtime: <out>/java-runtime/bin/java ...

  unpack_debian_jdk.py JAVA_HOME_IN_PACKAGE OUT DEB...

The packages (Debian splits a JDK: the runtime, -jre-headless; the tools such as jcmd, -jdk-headless) are
unpacked into one tree. jmods/ (jlink's input, 70 MB) is left out: no rig builds runtime images.

Debian's JDK links its configuration to /etc (lib/jvm.cfg -> /etc/java-17-openjdk/jvm-arm64.cfg, ...), which
the package ships too: each such link becomes a copy of the packaged file, so the runtime works wherever it
is unpacked. Links to files of other packages (lib/security/cacerts: ca-certificates-java) and to
documentation are removed and listed in <out>/java-runtime/DEBIAN_LINKS_REMOVED.txt (TLS trust anchors are
not used by any rig). Run by //tools/jdk:jdks.bzl's debian_jdk repository rule (dpkg-deb from dpkg).
"""

import os
import shutil
import subprocess
import sys
import tempfile


def main(argv):
    home, out, *debs = argv
    tree = tempfile.mkdtemp(prefix="_deb_", dir=out)
    try:
        for deb in debs:
            subprocess.run(["dpkg-deb", "-x", deb, tree], check=True)
        runtime = os.path.join(out, "java-runtime")
        shutil.move(os.path.join(tree, home.strip("/")), runtime)
        shutil.rmtree(os.path.join(runtime, "jmods"), ignore_errors=True)
        removed = []
        for folder, dirs, files in os.walk(runtime):
            for name in dirs + files:
                path = os.path.join(folder, name)
                if not os.path.islink(path):
                    continue
                target = os.readlink(path)
                packaged = os.path.join(tree, target.lstrip("/")) if target.startswith("/") else None
                os.unlink(path)
                if packaged and os.path.isfile(packaged):
                    shutil.copy2(packaged, path)
                elif not target.startswith("/") and os.path.isfile(os.path.join(folder, target)):
                    shutil.copy2(os.path.join(folder, target), path)
                else:
                    removed.append(f"{os.path.relpath(path, runtime)} -> {target}")
        with open(os.path.join(runtime, "DEBIAN_LINKS_REMOVED.txt"), "w") as f:
            f.write("".join(line + "\n" for line in sorted(removed)))
    finally:
        shutil.rmtree(tree, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
