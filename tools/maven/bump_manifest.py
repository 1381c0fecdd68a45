"""Writes the manifest of a dependency bump: the `bump:<component>-<version>` value of a matrix's variant axis.

  bump_manifest.py --component hadoop --from 3.4.2 --to 3.5.0 --set hadoop_hdfs_bench_3_5_0
                   --artifact GROUP:ARTIFACT[:PACKAGING:CLASSIFIER]:VERSION=SHA256 ... --class NAME ...
                   --classes-jar FILE.jar --out OUT.json

A bump runs the rig on another release's jars (a pinned Maven set of tools/maven/artifacts.toml). Its
identity in every result is a hash over that set's locked artifacts and their sha256s (the lock's, passed
by tools/maven/defs.bzl `maven_bump_manifest`), so a relocked set is another cell. `--class` names classes
the cell must load, and `--classes-jar` the jar they must come from (the evidence check of a patched
variant, cellstatus: a cell that ran on the old jars is invalid, not silently the old release).
"""

import argparse
import hashlib
import re
import sys

from results import safeio

_ARTIFACT = re.compile(r"([A-Za-z0-9_.-]+(?::[A-Za-z0-9_.-]+){2,4})=([0-9a-f]{64})")


def jar_name(coordinates):
    """The file name Maven gives a coordinate's jar: artifact-version[-classifier].jar."""
    parts = coordinates.split(":")
    name = f"{parts[1]}-{parts[-1]}"
    return name + (f"-{parts[3]}.jar" if len(parts) == 5 else ".jar")


def manifest(component, from_version, to_version, set_name, artifacts, classes, classes_jar):
    """The manifest (dict); raises ValueError on an input that would make a bump nobody can check."""
    if not artifacts:
        raise ValueError(f"set {set_name}: no artifacts (is it in tools/maven/artifacts.toml and locked?)")
    if from_version == to_version:
        raise ValueError(f"a bump from {from_version} to itself")
    if not classes:
        raise ValueError("no --class: a bump needs classes whose loading proves the new jars ran")
    jars = {jar_name(c) for c in artifacts}
    if classes_jar not in jars:
        raise ValueError(f"--classes-jar {classes_jar} is not a jar of set {set_name} ({len(jars)} jars)")
    if not classes_jar.endswith(f"-{to_version}.jar"):
        raise ValueError(f"--classes-jar {classes_jar} is not of release {to_version}")
    h = hashlib.sha256()
    for coordinates in sorted(artifacts):
        h.update(f"{coordinates}\0{artifacts[coordinates]}\n".encode())
    return {"kind": "bump", "component": component, "from": from_version, "to": to_version, "set": set_name,
            "artifacts_sha256": dict(sorted(artifacts.items())), "bump_sha256": h.hexdigest(),
            "classes": sorted(classes), "classes_jar": classes_jar,
            # The jar is known by its bytes, not its name (issue 78): a jar of that name elsewhere is another.
            "classes_jar_sha256": next(sha for c, sha in sorted(artifacts.items()) if jar_name(c) == classes_jar)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--component", required=True)
    parser.add_argument("--from", dest="from_version", required=True, help="the release the rig is built on")
    parser.add_argument("--to", dest="to_version", required=True, help="the release of the set")
    parser.add_argument("--set", dest="set_name", required=True, help="the Maven set the bump runs on")
    parser.add_argument("--artifact", action="append", default=[], help="COORDINATES=SHA256, each of the set's")
    parser.add_argument("--class", dest="classes", action="append", default=[])
    parser.add_argument("--classes-jar", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    artifacts = {}
    for item in args.artifact:
        m = _ARTIFACT.fullmatch(item)
        if not m:
            parser.error(f"--artifact {item!r}: expected COORDINATES=SHA256")
        artifacts[m.group(1)] = m.group(2)
    try:
        body = manifest(args.component, args.from_version, args.to_version, args.set_name, artifacts,
                        args.classes, args.classes_jar)
    except ValueError as e:
        parser.error(str(e))
    safeio.write_json(args.out, body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
