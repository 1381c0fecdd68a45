"""Downloads one version of a Debian source package through apt, without touching the system's apt setup.

  fetch_debian_source.py --package redis --version 5:7.0.15-1~deb12u10 --dest DIR [--apt-etc /etc/apt]

The image's apt lists binary packages only. This writes a private copy of its sources with `deb-src` in
place of `deb` (same archives, same suites, same keys), keeps the index in a private folder, and runs
`apt-get source --download-only` there: the .dsc, the upstream tarball and the Debian tarball land in
DIR. The caller checks them against pinned sha256 sums (third_party/redis/debian_source.bzl).

Debian serves only the newest update of a stable release: when the pinned version is gone, the error
says which versions apt offers now, so the pin can be moved on purpose.
"""

import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile
import urllib.parse


class FetchError(RuntimeError):
    pass


def source_entries(deb822_text):
    """A deb822 .sources text with every `Types:` field turned to deb-src (binary entries dropped)."""
    stanzas = re.split(r"\n\s*\n", deb822_text.strip())
    out = []
    for stanza in stanzas:
        lines = stanza.splitlines()
        types = [line for line in lines if line.lower().startswith("types:")]
        if not types or "deb" not in types[0].split(":", 1)[1].split():
            continue
        out.append("\n".join("Types: deb-src" if line.lower().startswith("types:") else line for line in lines))
    return "\n\n".join(out) + ("\n" if out else "")


def source_lines(list_text):
    """A one-line-style sources.list text with `deb` lines turned to `deb-src`."""
    out = []
    for line in list_text.splitlines():
        if re.match(r"^\s*deb\s", line):
            out.append(re.sub(r"^\s*deb\s", "deb-src ", line, count=1))
    return "\n".join(out) + ("\n" if out else "")


def private_sources(apt_etc, parts_dir):
    """Writes deb-src copies of the system's enabled apt sources into parts_dir; returns how many."""
    written = 0
    candidates = [os.path.join(apt_etc, "sources.list")] + sorted(
        glob.glob(os.path.join(apt_etc, "sources.list.d", "*.list"))
        + glob.glob(os.path.join(apt_etc, "sources.list.d", "*.sources")))
    for i, path in enumerate(candidates):
        if not os.path.isfile(path):
            continue
        with open(path) as f:
            text = f.read()
        if path.endswith(".sources"):
            converted, ext = source_entries(text), ".sources"
        else:
            converted, ext = source_lines(text), ".list"
        if converted:
            with open(os.path.join(parts_dir, "%02d-src%s" % (i, ext)), "w") as f:
                f.write(converted)
            written += 1
    return written


def apt_options(state):
    return ["-o", "Dir::Etc::SourceList=/dev/null", "-o", "Dir::Etc::SourceParts=" + os.path.join(state, "parts"),
            "-o", "Dir::State::Lists=" + os.path.join(state, "lists"), "-o", "Dir::Cache=" + os.path.join(state, "cache"),
            # apt drops to the _apt user for downloads, which cannot write to a private folder of root's.
            "-o", "APT::Sandbox::User=" + ("root" if os.geteuid() == 0 else os.environ.get("USER", "nobody"))]


def fetch(package, version, dest, apt_etc="/etc/apt", apt_get="apt-get"):
    with tempfile.TemporaryDirectory(prefix="debian-source-") as state:
        for sub in ("parts", "lists/partial", "cache/archives/partial"):
            os.makedirs(os.path.join(state, sub))
        if not private_sources(apt_etc, os.path.join(state, "parts")):
            raise FetchError(f"no enabled apt source under {apt_etc}: cannot fetch Debian source packages")
        opts = apt_options(state)
        update = subprocess.run([apt_get, "-q"] + opts + ["update"], capture_output=True, text=True)
        if update.returncode != 0:
            raise FetchError("apt-get update (source indices) failed:\n" + update.stdout + update.stderr)
        os.makedirs(dest, exist_ok=True)
        got = subprocess.run([apt_get, "-q"] + opts + ["source", "--download-only", f"{package}={version}"],
                             cwd=dest, capture_output=True, text=True)
        if got.returncode != 0:
            offered = subprocess.run([apt_get, "-q"] + opts + ["source", "--print-uris", package],
                                     capture_output=True, text=True)
            now = [urllib.parse.unquote(n) for n in re.findall(r"'\S*?/(" + re.escape(package) + r"_[^_']+)\.dsc'", offered.stdout)]
            raise FetchError(
                f"Debian no longer serves {package} {version} (a stable release keeps only its newest update). "
                f"apt offers now: {', '.join(now) or 'nothing'}. Move the pin (version and sha256 sums) "
                f"on purpose.\napt-get said:\n{got.stderr.strip()}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", required=True)
    parser.add_argument("--version", required=True, help="the Debian version, epoch included (5:7.0.15-1~deb12u10)")
    parser.add_argument("--dest", required=True)
    parser.add_argument("--apt-etc", default="/etc/apt")
    args = parser.parse_args(argv)
    try:
        fetch(args.package, args.version, args.dest, args.apt_etc)
    except FetchError as e:
        print(f"fetch_debian_source: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
