"""Applies a patch series to released sources and writes the patched files as a source jar.

  apply_series.py --sources JAR [--sources JAR ...] --series FILE --patch FILE [--patch FILE ...]
                  [--upto K] --out-srcjar OUT.srcjar --out-manifest OUT.json

The series folder (third_party/<component>/patches/<name>/) holds a `series` file (patch file names in
order, `#` comments) and the patches: plain `diff -u` against the sources jar's layout (`a/org/apache/...`),
applied with `patch -p1` and no fuzz. `--patch` lists the series' files as the build knows them; they must
be the series, in its order (Bazel macros cannot read the series file, so it is checked here). `--upto K`
applies only the first K patches (a prefix, for patch-by-patch attribution).

Only the files the applied patches touch are extracted and written. A patch that does not apply fails with
the patch, the file and the hunk named. The manifest holds the series, each patch's sha256 and the patch
set's content hash (over the series file and the applied patches), the variant's identity in every result.
"""

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile


class SeriesError(ValueError):
    pass


def read_series(path):
    with open(path) as f:
        names = [line.split("#", 1)[0].strip() for line in f]
    names = [n for n in names if n]
    if not names:
        raise SeriesError(f"{path}: the series lists no patch")
    if len(set(names)) != len(names):
        raise SeriesError(f"{path}: a patch is listed twice")
    return names


def touched_files(patch_text):
    """Paths (after -p1) of the files a unified diff changes, in order."""
    paths = []
    for m in re.finditer(r"^\+\+\+ (\S+)", patch_text, re.M):
        path = m.group(1).split("/", 1)[1] if "/" in m.group(1) else m.group(1)
        if path not in paths:
            paths.append(path)
    return paths


def content_hash(series_path, patch_paths):
    """sha256 over the series file and the applied patches, in order: the patch set's identity."""
    h = hashlib.sha256()
    for path in [series_path] + list(patch_paths):
        with open(path, "rb") as f:
            data = f.read()
        h.update(os.path.basename(path).encode() + b"\0" + hashlib.sha256(data).hexdigest().encode() + b"\n")
    return h.hexdigest()


def explain_failure(patch_name, output):
    """One line naming the file and the hunk that did not apply, from `patch`'s own output."""
    current, failures = None, []
    for line in output.splitlines():
        m = re.match(r"patching file (\S+)", line)
        if m:
            current = m.group(1)
        m = re.match(r"Hunk #(\d+) FAILED at (\d+)", line)
        if m:
            failures.append(f"{current}: hunk #{m.group(1)} FAILED at line {m.group(2)}")
        m = re.match(r"can't find file to patch", line)
        if m:
            failures.append(f"{current or 'a file'}: not in the sources")
    if not failures:
        failures = output.strip().splitlines()[-1:] or ["patch printed nothing"]
    detail = "; ".join(failures)
    return f"patch {patch_name} does not apply: {detail}"


def select(series_path, patches, upto):
    """The first `upto` of `patches` (all when None), checked against the series; returns (names, applied)."""
    names = read_series(series_path)
    given = [os.path.basename(p) for p in patches]
    if given != names:
        raise SeriesError(f"{series_path} lists {names}, the build gives {given}: keep the BUILD file's patches "
                          "in the series' order")
    upto = len(names) if upto is None else upto
    if not 1 <= upto <= len(names):
        raise SeriesError(f"--upto {upto}: the series has {len(names)} patches")
    return names, patches[:upto]


def patch_tree(workdir, patch_paths, patch_program="patch"):
    """Applies the patches, in order, to the tree in `workdir` (-p1, no fuzz); names file and hunk on failure."""
    for path in patch_paths:
        proc = subprocess.run([patch_program, "-p1", "--batch", "--forward", "--fuzz=0", "--no-backup-if-mismatch",
                               "-d", workdir, "-i", os.path.abspath(path)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if proc.returncode != 0:
            raise SeriesError(explain_failure(os.path.basename(path), proc.stdout))


def manifest_for(series_path, names, applied):
    """The applied patches and the patch set's content hash: the variant's identity in results."""
    texts = {p: open(p, "rb").read() for p in applied}
    return {"series": names, "applied": [os.path.basename(p) for p in applied], "upto": len(applied),
            "patches_sha256": {os.path.basename(p): hashlib.sha256(texts[p]).hexdigest() for p in applied},
            "patch_set_sha256": content_hash(series_path, applied)}


def apply(sources, series_path, patches, upto, workdir, patch_program="patch"):
    """Extracts the files the first `upto` patches touch and applies them in `workdir`; returns (paths, manifest)."""
    names, applied = select(series_path, patches, upto)
    texts = {}
    for path in applied:
        with open(path) as f:
            texts[path] = f.read()
    wanted = []
    for path in applied:
        for rel in touched_files(texts[path]):
            if rel not in wanted:
                wanted.append(rel)
    found = set()
    for jar in sources:
        with zipfile.ZipFile(jar) as z:
            for rel in wanted:
                if rel not in found and rel in z.namelist():
                    z.extract(rel, workdir)
                    found.add(rel)
    for path in applied:
        missing = [rel for rel in touched_files(texts[path]) if rel not in found and not _created(texts[path], rel)]
        if missing:
            raise SeriesError(f"patch {os.path.basename(path)} does not apply: {missing[0]}: not in the sources "
                              f"({', '.join(os.path.basename(s) for s in sources)})")
        patch_tree(workdir, [path], patch_program)
    manifest = manifest_for(series_path, names, applied)
    manifest["files"] = wanted
    return wanted, manifest


def _created(patch_text, rel):
    return re.search(r"^--- /dev/null\n\+\+\+ \S*" + re.escape(rel), patch_text, re.M) is not None


def write_srcjar(workdir, files, out):
    # Fixed timestamps: the same series gives a byte-identical source jar (Bazel caches by content).
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for rel in sorted(files):
            info = zipfile.ZipInfo(rel, date_time=(1980, 1, 1, 0, 0, 0))
            with open(os.path.join(workdir, rel), "rb") as f:
                z.writestr(info, f.read())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sources", action="extend", nargs="+", required=True,
                        help="the release's -sources jars")
    parser.add_argument("--series", required=True, help="the series file")
    parser.add_argument("--patch", action="append", required=True, help="the series' patches, in its order")
    parser.add_argument("--upto", type=int, help="apply only the first K patches")
    parser.add_argument("--out-srcjar", required=True)
    parser.add_argument("--out-manifest", required=True)
    parser.add_argument("--overlay-jar", default="",
                        help="file name of the jar the patched classes are compiled into (recorded for the "
                             "runner's class-load check)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as workdir:
        try:
            files, manifest = apply(args.sources, args.series, args.patch, args.upto, workdir)
        except SeriesError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        write_srcjar(workdir, files, args.out_srcjar)
    manifest["overlay_jar"] = args.overlay_jar
    manifest["classes"] = [rel[:-len(".java")].replace("/", ".") for rel in files if rel.endswith(".java")]
    with open(args.out_manifest, "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
