"""Resolves tools/maven/artifacts.toml into the pinned lock tools/maven/maven_lock.bzl.

Run it as `./bazelw run //tools/maven:lock` (needs `mvn` on PATH; `apt-get install maven`).
For every set it writes a throw-away pom.xml listing the set's top-level artifacts, asks Maven for the
runtime closure (`dependency:list -DincludeScope=runtime -DoutputAbsoluteArtifactFilename=true`) into a
private local repository (never ~/.m2, so what is locked is what was downloaded now), hashes every jar
and writes one Starlark dict. `defs.bzl` turns that dict into one `jvm_maven_import_external` per jar
and one `java_library` per set.
"""

import argparse
import ast
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from xml.sax.saxutils import escape

from results import safeio

LOCK_VERSION = 1
SCOPES = ("compile", "runtime", "provided", "test", "system", "import")


@dataclasses.dataclass(frozen=True, order=True)
class Coordinate:
    group: str
    artifact: str
    version: str
    packaging: str = "jar"
    classifier: str = ""

    @classmethod
    def parse(cls, text):
        """Parses group:artifact:version or group:artifact:packaging:classifier:version."""
        parts = text.strip().split(":")
        if len(parts) == 3:
            return cls(parts[0], parts[1], parts[2])
        if len(parts) == 4:
            return cls(parts[0], parts[1], parts[3], packaging=parts[2])
        if len(parts) == 5:
            return cls(parts[0], parts[1], parts[4], packaging=parts[2], classifier=parts[3])
        raise ValueError(
            f"bad Maven coordinate {text!r}: expected group:artifact:version or "
            "group:artifact:packaging:classifier:version")

    def __str__(self):
        """The form jvm_maven_import_external's `artifact` takes."""
        if self.classifier:
            return f"{self.group}:{self.artifact}:{self.packaging}:{self.classifier}:{self.version}"
        if self.packaging != "jar":
            return f"{self.group}:{self.artifact}:{self.packaging}:{self.version}"
        return f"{self.group}:{self.artifact}:{self.version}"

    @property
    def repo_name(self):
        """A repository name that keeps every version apart (Hadoop 1.2.1 and 3.4.2 coexist)."""
        raw = "__".join(p for p in ("maven", self.group, self.artifact, self.classifier, self.version) if p)
        return re.sub(r"[^A-Za-z0-9_]", "_", raw)


@dataclasses.dataclass(frozen=True)
class ResolvedJar:
    coordinate: Coordinate
    scope: str
    path: str


def load_spec(path):
    """Reads artifacts.toml: {set name: {"artifacts": [Coordinate], "sources": [Coordinate]}}."""
    data = safeio.read_toml(path)
    sets = data.get("sets")
    if not isinstance(sets, dict) or not sets:
        raise ValueError(f"{path}: no [sets.<name>] tables")
    spec = {}
    for name, body in sets.items():
        if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
            raise ValueError(f"{path}: set name {name!r} must be lower_snake_case (it becomes a Bazel target)")
        unknown = set(body) - {"artifacts", "sources", "managed"}
        if unknown:
            raise ValueError(f"{path}: set {name}: unknown keys {sorted(unknown)}")
        artifacts = [Coordinate.parse(c) for c in body.get("artifacts", [])]
        if not artifacts:
            raise ValueError(f"{path}: set {name} lists no artifacts")
        sources = [Coordinate.parse(c) for c in body.get("sources", [])]
        missing = [str(s) for s in sources if s not in artifacts]
        if missing:
            raise ValueError(f"{path}: set {name}: sources {missing} are not among its artifacts")
        # managed: versions that win wherever the closure meets the artifact (Maven's dependencyManagement),
        # for a release whose own version of a dependency is not served.
        managed = [Coordinate.parse(c) for c in body.get("managed", [])]
        spec[name] = {"artifacts": artifacts, "sources": sources, "managed": managed}
    return spec


def render_pom(set_name, coordinates, classifier_override=None, transitive=True, managed=()):
    """A minimal pom whose dependency closure is the set's (`managed` coordinates fix the version of those
    artifacts wherever the closure meets them)."""
    deps = []
    for c in coordinates:
        classifier = classifier_override if classifier_override is not None else c.classifier
        lines = [
            "    <dependency>",
            f"      <groupId>{escape(c.group)}</groupId>",
            f"      <artifactId>{escape(c.artifact)}</artifactId>",
            f"      <version>{escape(c.version)}</version>",
            f"      <type>{escape(c.packaging)}</type>",
        ]
        if classifier:
            lines.append(f"      <classifier>{escape(classifier)}</classifier>")
        if not transitive:
            lines.append("      <exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId>"
                         "</exclusion></exclusions>")
        lines.append("    </dependency>")
        deps.append("\n".join(lines))
    management = "".join(
        f"      <dependency><groupId>{escape(c.group)}</groupId><artifactId>{escape(c.artifact)}</artifactId>"
        f"<version>{escape(c.version)}</version></dependency>\n" for c in managed)
    if management:
        management = f"  <dependencyManagement>\n    <dependencies>\n{management}    </dependencies>\n  </dependencyManagement>\n"
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>tunelab.lock</groupId>
  <artifactId>{escape(set_name)}</artifactId>
  <version>0</version>
  <packaging>pom</packaging>
{management}  <dependencies>
{chr(10).join(deps)}
  </dependencies>
</project>
"""


def parse_dependency_list(text):
    """Parses `mvn dependency:list -DoutputAbsoluteArtifactFilename=true` output.

    Lines look like `   g:a:jar:3.4.2:compile:/abs/a-3.4.2.jar -- module a (auto)`, with an extra
    classifier field before the version when there is one.
    """
    jars = []
    for line in text.splitlines():
        line = line.strip()
        if ":/" not in line or line.startswith("The following"):
            continue
        head, tail = line.split(":/", 1)
        path = "/" + tail.split(" -- ", 1)[0].strip()
        fields = head.split(":")
        if len(fields) == 5:
            group, artifact, packaging, version, scope = fields
            classifier = ""
        elif len(fields) == 6:
            group, artifact, packaging, classifier, version, scope = fields
        else:
            raise ValueError(f"unexpected dependency:list line: {line!r}")
        if scope not in SCOPES:
            raise ValueError(f"unexpected scope {scope!r} in line: {line!r}")
        jars.append(ResolvedJar(Coordinate(group, artifact, version, packaging, classifier), scope, path))
    return jars


def build_lock(resolved_sets, source_jars, hasher=safeio.sha256_of):
    """Builds the lock dict from {set: [ResolvedJar]} and {Coordinate: sources jar path}."""
    artifacts = {}
    sets = {}
    for set_name in sorted(resolved_sets):
        names = []
        for jar in sorted(resolved_sets[set_name], key=lambda j: j.coordinate):
            if jar.coordinate.packaging != "jar":
                continue  # poms and other non-classpath packaging carry no classes
            name = jar.coordinate.repo_name
            entry = {"coordinates": str(jar.coordinate), "sha256": hasher(jar.path)}
            base = dataclasses.replace(jar.coordinate, classifier="")
            if jar.coordinate.classifier == "" and base in source_jars:
                entry["srcjar_sha256"] = hasher(source_jars[base])
            if name in artifacts and artifacts[name] != entry:
                raise ValueError(f"{name} resolved to two different files")
            artifacts[name] = entry
            names.append(name)
        sets[set_name] = sorted(set(names))
    return {"version": LOCK_VERSION, "artifacts": dict(sorted(artifacts.items())), "sets": sets}


def render_lock(lock):
    """Starlark source for the lock, formatted as buildifier formats it (//:lint_test checks that): JSON
    literals of strings, ints, lists and dicts, with a trailing comma after the last item of each."""
    header = (
        "# GENERATED by //tools/maven:lock from tools/maven/artifacts.toml. DO NOT EDIT BY HAND.\n"
        "# To change it: edit tools/maven/artifacts.toml, then run `./bazelw run //tools/maven:lock`.\n"
        '"""The pinned Maven artifacts (coordinates and sha256) and the sets tools/maven/defs.bzl builds from them."""\n'
        "\n"
    )
    body = re.sub(r'(["\d\]}])(?=\n\s*[\]}])', r"\1,", json.dumps(lock, indent=4, sort_keys=False))
    return header + "MAVEN_LOCK = " + body + "\n"


def read_lock(text):
    """Reads a lock written by render_lock (used by tests and tools)."""
    return ast.literal_eval(text.split("MAVEN_LOCK = ", 1)[1])


def run_maven(pom_text, workdir, local_repo, mvn):
    safeio.write_text(os.path.join(workdir, "pom.xml"), pom_text)
    out_file = os.path.join(workdir, "dependencies.txt")
    cmd = [
        mvn, "-B", "-q", "-f", os.path.join(workdir, "pom.xml"),
        f"-Dmaven.repo.local={local_repo}",
        "org.apache.maven.plugins:maven-dependency-plugin:3.6.1:list",
        "-DincludeScope=runtime", "-DoutputAbsoluteArtifactFilename=true",
        f"-DoutputFile={out_file}",
    ]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"mvn failed ({proc.returncode}) for {workdir}:\n{proc.stdout[-4000:]}")
    with open(out_file) as f:
        return f.read()


def main(argv=None):
    workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY", os.getcwd())
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default=os.path.join(workspace, "tools/maven/artifacts.toml"))
    parser.add_argument("--out", default=os.path.join(workspace, "tools/maven/maven_lock.bzl"))
    parser.add_argument("--local-repo", help="Maven local repository to resolve into (default: a fresh temp dir)")
    parser.add_argument("--keep-workdir", action="store_true", help="keep the generated poms and listings")
    parser.add_argument("--check", action="store_true",
                        help="resolve and exit 1 if the lock on disk differs (no write)")
    args = parser.parse_args(argv)

    mvn = shutil.which("mvn")
    if not mvn:
        sys.exit("error: `mvn` not found. Install Maven (apt-get install maven) to regenerate the lock.")
    spec = load_spec(args.spec)
    workdir = tempfile.mkdtemp(prefix="tunelab-maven-lock-")
    local_repo = args.local_repo or os.path.join(workdir, "repository")
    try:
        resolved = {}
        source_jars = {}
        for i, (name, body) in enumerate(sorted(spec.items()), 1):
            print(f"[{i}/{len(spec)}] resolving {name} ({len(body['artifacts'])} top-level artifacts)", flush=True)
            listing = run_maven(render_pom(name, body["artifacts"], managed=body["managed"]), os.path.join(workdir, name), local_repo, mvn)
            resolved[name] = parse_dependency_list(listing)
            if body["sources"]:
                listing = run_maven(render_pom(name + "_sources", body["sources"], "sources", transitive=False),
                                    os.path.join(workdir, name + "_sources"), local_repo, mvn)
                for jar in parse_dependency_list(listing):
                    source_jars[dataclasses.replace(jar.coordinate, classifier="")] = jar.path
            print(f"      {len(resolved[name])} jars", flush=True)
        text = render_lock(build_lock(resolved, source_jars))
        if args.check:
            with open(args.out) as f:
                if f.read() != text:
                    sys.exit(f"error: {args.out} is stale; run ./bazelw run //tools/maven:lock")
            print(f"{args.out} is up to date")
            return
        safeio.write_text(args.out, text)
        lock = read_lock(text)
        print(f"wrote {args.out}: {len(lock['artifacts'])} jars in {len(lock['sets'])} sets")
    finally:
        if args.keep_workdir:
            print(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
