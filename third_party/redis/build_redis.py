"""Builds redis-server, redis-benchmark and redis-cli from Debian's source package, stock or patched.

  build_redis.py --orig redis_X.orig.tar.gz --debian redis_X-Y.debian.tar.xz --debian-version V
                 [--series FILE --patch FILE ... [--upto K]] --out-dir DIR --out-manifest OUT.json
                 [--cross aarch64-linux-gnu --sysroot-deb libjemalloc-dev.deb --sysroot-deb libjemalloc2.deb]

Stock is what Debian ships: the upstream tarball with Debian's own patch series (debian/patches/series)
applied, built against Debian's jemalloc as debian/rules does (USE_SYSTEM_JEMALLOC=yes), with upstream's
compiler flags; TLS and systemd support are left out (nothing here uses them). Patched is stock plus a
series of ours (third_party/redis/patches/<name>/, `patch -p1`, no fuzz; a patch that does not apply
fails naming the file and the hunk). With --cross, the same source and flags are cross-compiled by Debian's
`<triplet>-gcc` (gcc-aarch64-linux-gnu) against that architecture's jemalloc, unpacked from the pinned
--sysroot-deb packages: the same rule as the native build, on a build host of another architecture (an
aarch64 build under emulation would take an hour). Everything happens in a scratch folder under --out-dir, removed
afterwards; make runs without network (the Bazel action blocks it).
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

from tools.patches import apply_series

BINARIES = ("redis-server", "redis-benchmark", "redis-cli")
MAKE_FLAGS = ("USE_SYSTEM_JEMALLOC=yes", "USE_JEMALLOC=yes", "BUILD_TLS=no", "USE_SYSTEMD=no")


class BuildError(RuntimeError):
    pass


def _extract(archive, dest):
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            target = os.path.realpath(os.path.join(dest, member.name))
            if not target.startswith(os.path.realpath(dest) + os.sep):
                raise BuildError(f"{archive}: {member.name} points outside the tree")
        tar.extractall(dest)


def source_tree(orig, debian, scratch):
    """Extracts the upstream tarball and Debian's folder into it; returns the tree and Debian's series."""
    _extract(orig, scratch)
    tops = [d for d in os.listdir(scratch) if os.path.isdir(os.path.join(scratch, d))]
    if len(tops) != 1:
        raise BuildError(f"{orig}: expected one top folder, found {tops}")
    tree = os.path.join(scratch, tops[0])
    _extract(debian, tree)
    series = os.path.join(tree, "debian", "patches", "series")
    debian_patches = apply_series.read_series(series)
    return tree, [os.path.join(tree, "debian", "patches", name) for name in debian_patches]


def cross_flags(triplet, sysroot_debs, scratch):
    """make variables that build for `triplet` against the jemalloc headers and library of those packages."""
    sysroot = os.path.abspath(os.path.join(scratch, "sysroot"))  # make runs in src/
    for deb in sysroot_debs:
        subprocess.run(["dpkg-deb", "-x", deb, sysroot], check=True)
    if not shutil.which(f"{triplet}-gcc"):
        raise BuildError(f"no {triplet}-gcc: install Debian's gcc-{triplet} (./bazelw does)")
    return [f"CC={triplet}-gcc", f"AR={triplet}-ar", f"RANLIB={triplet}-ranlib",
            f"CPPFLAGS=-I{sysroot}/usr/include", f"LDFLAGS=-L{sysroot}/usr/lib/{triplet}"]


def build(tree, jobs, log_path, extra_flags=()):
    with open(log_path, "w") as log:
        proc = subprocess.run(["make", f"-j{jobs}", "-C", "src", *MAKE_FLAGS, *extra_flags, *BINARIES],
                              cwd=tree, stdout=log, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        with open(log_path) as f:
            tail = f.read().splitlines()[-25:]
        raise BuildError("make failed (exit %d); the end of its output:\n%s" % (proc.returncode, "\n".join(tail)))


def _sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--orig", required=True, help="the upstream tarball of the Debian source package")
    parser.add_argument("--debian", required=True, help="the Debian tarball (debian/ with its patch series)")
    parser.add_argument("--debian-version", required=True)
    parser.add_argument("--series", help="our patch series file (patched builds)")
    parser.add_argument("--patch", action="append", default=[], help="the series' patches, in its order")
    parser.add_argument("--upto", type=int, help="apply only the first K patches of the series")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out-dir", required=True, help="where the binaries are written")
    parser.add_argument("--out-manifest", required=True)
    parser.add_argument("--cross", help="cross-compile for this GNU triplet, e.g. aarch64-linux-gnu")
    parser.add_argument("--sysroot-deb", action="append", default=[],
                        help="with --cross: a package of that architecture to build against (jemalloc)")
    args = parser.parse_args(argv)
    if bool(args.series) != bool(args.patch):
        parser.error("--series and --patch go together")
    if bool(args.cross) != bool(args.sysroot_deb):
        parser.error("--cross and --sysroot-deb go together")
    os.makedirs(args.out_dir, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="_redis_build_", dir=args.out_dir)
    try:
        tree, debian_patches = source_tree(args.orig, args.debian, scratch)
        apply_series.patch_tree(tree, debian_patches)
        manifest = {"component": "redis", "debian_version": args.debian_version,
                    "upstream_tarball": os.path.basename(args.orig), "upstream_sha256": _sha256(args.orig),
                    "debian_patches": [os.path.relpath(p, os.path.join(tree, "debian", "patches"))
                                       for p in debian_patches],
                    "make_flags": list(MAKE_FLAGS), "variant": "stock",
                    "architecture": (args.cross or os.uname().machine + "-linux-gnu").split("-")[0],
                    "compiler": f"{args.cross}-gcc" if args.cross else "gcc"}
        if args.series:
            names, applied = apply_series.select(args.series, args.patch, args.upto)
            apply_series.patch_tree(tree, applied)
            manifest.update(apply_series.manifest_for(args.series, names, applied))
            manifest["variant"] = "patched"
        extra = cross_flags(args.cross, args.sysroot_deb, scratch) if args.cross else ()
        build(tree, args.jobs, os.path.join(scratch, "make.log"), extra)
        manifest["binaries"] = {}
        for binary in BINARIES:
            out = os.path.join(args.out_dir, binary)
            shutil.copy2(os.path.join(tree, "src", binary), out)
            manifest["binaries"][binary] = _sha256(out)
    except (BuildError, apply_series.SeriesError) as e:
        print(f"build_redis: error: {e}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    with open(args.out_manifest, "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
