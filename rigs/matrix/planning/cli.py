"""The runner's inputs: its command line, the builds it is given (patched variants, other revisions), the
settings of a stored run it resumes, and the harness' own commit."""

import argparse
import dataclasses
import glob
import hashlib
import json
import os
import secrets
import subprocess
import sys
import time

from results import store
from rigs.host import hoststate
from rigs.matrix.planning import spec
from results import safeio

RUN_ID_RE = store.RUN_ID_RE


@dataclasses.dataclass(frozen=True)
class RunEnvironment:
    """What the runner reads of its process environment, read once where it starts (runner.execute) and
    handed down: no module below it reads os.environ (TUNELAB_STATE_DIR is --state-dir's default, read with
    the arguments; a cell's processes inherit the environment)."""
    workspace: str  # BUILD_WORKSPACE_DIRECTORY (set by bazel run), else the current folder: where results go
    runner_image: str = ""  # TUNELAB_RUNNER_IMAGE: this runner runs in the rigs' image (a fleet host's choice)
    fleet: tuple = ()  # ((key, value)...) of TUNELAB_FLEET_HOST and _ID: which inventory host and fleet run
    shipped_commit: str = ""  # TUNELAB_HARNESS_COMMIT: the commit a fleet bundle was built from (no git there)

    @classmethod
    def read(cls, environ):
        fleet = tuple((key, environ[var]) for key, var in (("host", "TUNELAB_FLEET_HOST"), ("fleet_id", "TUNELAB_FLEET_ID"))
                      if environ.get(var))
        return cls(workspace=environ.get("BUILD_WORKSPACE_DIRECTORY") or os.getcwd(),
                   runner_image=environ.get("TUNELAB_RUNNER_IMAGE", ""), fleet=fleet,
                   shipped_commit=environ.get("TUNELAB_HARNESS_COMMIT", ""))


def new_run_id():
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(2)


def check_run_id(run_id):
    """A run id given on the command line becomes a folder name: only the runner's own shape is accepted."""
    if not RUN_ID_RE.fullmatch(run_id):
        raise spec.SpecError(f"--run-id {run_id!r}: expected YYYYMMDDTHHMMSSZ-xxxx (4 hex digits), as the runner "
                             "makes them")
    return run_id


@dataclasses.dataclass
class Revision:
    """Another build of the rigs (a revision axis value): its runfiles tree, commit and rig data."""
    name: str
    runfiles: str
    commit: str
    rig_data: dict


def parse_args(argv):
    argv = list(sys.argv[1:] if argv is None else argv)
    # A matrix target (rigs/defs.bzl) passes --matrix, --workload and --bazel-target itself: its --help then
    # names the target and leaves out what the user cannot and need not give.
    target = next((a.split("=", 1)[1] for a in argv if a.startswith("--bazel-target=")), "")
    parser = argparse.ArgumentParser(
        prog=f"bazel run {target} --" if target else None,
        description="Run a benchmark matrix: plan, apply and prove every knob, store results with provenance.",
        epilog="Exit status: 0 all cells ok or skipped; 1 some cells failed or were invalid; 2 bad input; "
               "3 another matrix holds the host lock; 130 interrupted (resume with --resume RUN_ID).")
    parser.add_argument("--matrix", required=True,
                        help=argparse.SUPPRESS if target else "the matrix TOML file")
    parser.add_argument("--workload", required=True,
                        help=argparse.SUPPRESS if target else "the workload folder (holds workload.toml)")
    parser.add_argument("--rig-data", action="append", default=[], metavar="NAME=PATH", help=argparse.SUPPRESS)
    parser.add_argument("--profiler-jar", action="append", default=[], metavar="agent|converter=PATH",
                        help=argparse.SUPPRESS)
    parser.add_argument("--bazel-target", default="", help=argparse.SUPPRESS)
    parser.add_argument("--profile", help="a named profile of the matrix file (e.g. smoke, full)")
    parser.add_argument("--set", action="append", default=[], metavar="AXIS=V1,V2",
                        help="replace an axis' values, e.g. --set jdk=11,17 (repeatable); policy.<key>=N sets a "
                             "number of the policy: --set policy.repetitions=5 runs a fixed 5 rounds instead of "
                             "stopping when decided")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and the estimated time; run nothing")
    parser.add_argument("--resume", metavar="RUN_ID", help="run only the cells a stored run is missing")
    parser.add_argument("--run-id", help="the new run's id (default: the UTC time and 4 random hex digits); "
                        "for tools that start a run and must know where it will be stored (//tools:fleet)")
    parser.add_argument("--plan-json", metavar="FILE",
                        help="with --dry-run: also write the plan (every cell, its skip reason) and this host's "
                             "doctor report as JSON to FILE ('-' for stdout)")
    parser.add_argument("--strict", action="store_true", help="refuse to run on a busy host")
    parser.add_argument("--results-dir", help="where runs are stored (default: <workspace>/results)")
    parser.add_argument("--jdk", action="append", default=[], metavar="NAME=PATH",
                        help="declare a JDK (also TUNELAB_JDKS=NAME=PATH:...)")
    parser.add_argument("--variant-data", action="append", default=[], metavar="VARIANT=NAME=PATH",
                        help=argparse.SUPPRESS)  # from rig_matrix(variants = ...): a patched build's files
    parser.add_argument("--revision", action="append", default=[], metavar="NAME=RUNFILES",
                        help="a value of the revision axis: the runfiles tree of this target built from another "
                             "commit (e.g. in a git worktree); its cells run that build's rig artifacts")
    parser.add_argument("--no-host-reference", action="store_true",
                        help="skip the host reference probe before and after the matrix (~10 s each)")
    parser.add_argument("--seed", type=int, help="seed for the interleaved order (default: the matrix's)")
    parser.add_argument("--state-dir", default=hoststate.default_state_dir(),
                        help="the host state folder: the host lock (one matrix per host) and the journal of host "
                             "settings to restore; only the runner's user may write it (default: "
                             f"${hoststate.STATE_DIR_ENV}, else {hoststate.ROOT_STATE_DIR} for root)")
    parser.add_argument("--run-info", metavar="FILE",
                        help="write what a calling script needs as JSON to FILE when the runner ends: the exit "
                             "status, the run id and folder (null if no run started); scripts read this, never the "
                             "console")
    parser.add_argument("--metrics-port", type=int, metavar="PORT",
                        help="serve the run's live metrics (progress, the running cell's labels, its processes' CPU, "
                             "the host's CPU by mode, steal and load) for Prometheus on this port (0: any free one); "
                             "loopback only unless --metrics-address says otherwise")
    parser.add_argument("--metrics-address", default="127.0.0.1", metavar="ADDRESS",
                        help="the address the metrics endpoint binds (default 127.0.0.1)")
    parser.add_argument("--influx-url", metavar="URL",
                        help="also write the live metrics once a second as InfluxDB line protocol to this URL, e.g. "
                             "http://127.0.0.1:8086/write?db=tunelab (a refusal is said once; the run goes on)")
    parser.add_argument("--no-gc-probes", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--no-next-steps", action="store_true", help=argparse.SUPPRESS)  # for tools wrapping a run
    args = parser.parse_args(argv)
    if args.run_info is not None and not args.run_info.strip():
        parser.error("--run-info '': give the file to write (e.g. --run-info run-info.json), or leave the flag out")
    if args.metrics_port is not None and not 0 <= args.metrics_port <= 65535:
        parser.error(f"--metrics-port {args.metrics_port}: a TCP port, 0-65535")
    if args.influx_url is not None:
        problem = safeio.http_url_problem(args.influx_url)
        if problem:
            parser.error(f"--influx-url {safeio.redact_url(args.influx_url)!r}: {problem}; give an http(s) URL of "
                         "InfluxDB's write endpoint, e.g. http://127.0.0.1:8086/write?db=tunelab")
    return args


def load_variants(items, matrix):
    """{variant: {"data": {name: path}, "manifest": dict}} for every patched value of the variant axis;
    refuses a value the build does not provide, before anything runs."""
    given = {}
    for item in items:
        variant, name, path = (item.split("=", 2) + [None, None])[:3]
        if not name or path is None:
            raise spec.SpecError(f"--variant-data {item!r}: expected VARIANT=NAME=PATH")
        given.setdefault(variant, {})[name] = os.path.abspath(path)
    variants = {}
    for value in matrix.axes.get("variant", []):
        if value == "stock":
            continue
        data = given.get(value)
        if data is None:
            built = ", ".join(sorted(given)) or "none"
            raise spec.SpecError(f"variant={value}: this target has no such build (built: {built}); add it to the "
                                 "rig_matrix's `variants` in rigs/BUILD.bazel (third_party/<component>/defs.bzl)")
        if "manifest" not in data:
            raise spec.SpecError(f"variant={value}: its build gives no manifest (the patch set's identity)")
        variants[value] = {"data": data, "manifest": safeio.read_json(data.pop("manifest"))}
    return variants


ARGS_MAX_BYTES = 1 << 20


def revision_rig_data(name, root, ws, target):
    """{key: path} of the rig data another build's own target passes (its `<matrix>.args`, rigs/defs.bzl: in its
    runfiles, or beside the runfiles folder where an older build left it), or None when neither is there.
    Not this build's paths looked up in that tree: a candidate that moved a rig data label (a planted
    regression pointing the classpath at the slowed build, a dependency bump) made the accepted revision run
    its own copy of the candidate's choice (2026-12-07: both sides of a NameNode night ran a slowed jar)."""
    package, _, target_name = target.removeprefix("//").partition(":")
    if not target_name:
        return None
    here = os.path.join(ws, package, target_name + ".args")
    beside = os.path.join(os.path.dirname(os.path.abspath(root)), target_name + ".args")
    path = next((p for p in (here, beside) if os.path.isfile(p)), None)
    if path is None:
        return None
    try:
        lines = safeio.read_text(path, ARGS_MAX_BYTES).splitlines()
    except (OSError, ValueError) as e:
        raise spec.SpecError(f"--revision {name}: its args file {path} cannot be read ({e})") from None
    top = os.path.normpath(os.path.abspath(root))  # the runfiles root: the workspace and external repositories
    data = {}
    for line in lines:
        if not line.startswith("--rig-data="):
            continue
        key, sep, relative = line[len("--rig-data="):].partition("=")
        path_in_build = os.path.normpath(os.path.join(ws, relative))
        # Runfiles-relative, external repositories as ../<repo>/...: never outside the build's runfiles.
        if not sep or not key or os.path.isabs(relative) or not (
                path_in_build + os.sep).startswith(top + os.sep):
            raise spec.SpecError(f"--revision {name}: {path}: not a rig data line of a runfiles tree: {line[:120]!r}")
        data[key] = path_in_build
    return data


def load_revisions(items, matrix, rig_data, runfiles_ws, matrix_path, required=True, shipped_commit="", target=""):
    """{name: Revision} for every --revision; refuses a revision axis value without a build to run
    (unless not `required`: a dry run plans without the builds). Each build runs its own rig data
    (revision_rig_data), where its target (`--bazel-target`) left its args file."""
    revisions = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise spec.SpecError(f"--revision {item!r}: expected NAME=RUNFILES")
        if name == spec.CANDIDATE_REVISION:
            raise spec.SpecError(f"--revision {name}=...: `{name}` is the build being run; name the other one")
        root = os.path.abspath(path)
        if not os.path.isdir(root):
            raise spec.SpecError(f"--revision {name}: no runfiles folder {root} (build the target at that "
                                 "revision first)")
        ws = os.path.join(root, "tunelab") if os.path.isdir(os.path.join(root, "tunelab")) else root
        own = revision_rig_data(name, root, ws, target)
        data = {}
        for key, mine in rig_data.items():
            if own is not None:  # the build's own rig data, as its BUILD file named them
                if key not in own:
                    raise spec.SpecError(f"--revision {name}: its build names no rig data {key!r} (it names "
                                         f"{', '.join(sorted(own)) or 'none'}): the two builds' rigs differ")
                theirs = own[key]
            else:  # a build from before its args file was in its runfiles: this build's paths in that tree
                theirs = os.path.join(ws, os.path.relpath(mine, runfiles_ws))
            if not os.path.exists(theirs):
                raise spec.SpecError(f"--revision {name}: its build has no {os.path.relpath(theirs, ws)} "
                                     f"under {ws}; build this target there first")
            data[key] = theirs
        # Runfiles entries link back to the source tree the revision was built from: ask its git.
        source = os.path.realpath(os.path.join(ws, os.path.relpath(os.path.abspath(matrix_path), runfiles_ws)))
        commit, dirty = harness_provenance(os.path.dirname(source), shipped_commit)
        revisions[name] = Revision(name, ws, commit + ("-dirty" if dirty else ""), data)
    wanted = set(matrix.axes.get("revision", [])) - {spec.CANDIDATE_REVISION}
    missing = sorted(wanted - set(revisions))
    if missing and required:
        raise spec.SpecError(f"the revision axis names {', '.join(missing)}: give each build with "
                             "--revision NAME=RUNFILES (tools/nightly/nightly.sh builds the accepted one)")
    unused = sorted(set(revisions) - wanted)
    if unused:
        raise spec.SpecError(f"--revision {', '.join(unused)}: not a value of this matrix's revision axis "
                             f"({', '.join(matrix.axes.get('revision', [])) or 'no revision axis'})")
    return revisions


@dataclasses.dataclass(frozen=True)
class StoredRun:
    """The run --resume names, read once (the one resume path: its settings go into the arguments, then the
    runner opens its folder): its folder, and its manifest or why it could not be read."""
    run_dir: str
    manifest: dict = None
    error: str = ""


def find_stored_run(results_root, run_id):
    """The StoredRun `run_id` names under any host folder of `results_root` (a readable manifest first), or None;
    a run id not of the runner's shape is refused first (it becomes part of a path)."""
    if not RUN_ID_RE.fullmatch(run_id):
        raise spec.SpecError(f"--resume {run_id!r}: expected a run id (YYYYMMDDTHHMMSSZ-xxxx, as the runner makes them)")
    found = []
    for manifest_path in sorted(glob.glob(os.path.join(glob.escape(results_root), "*", glob.escape(run_id),
                                                       "manifest.json"))):
        try:
            found.append(StoredRun(os.path.dirname(manifest_path), store.load_manifest(manifest_path)))
        except store.StoreError as e:
            found.append(StoredRun(os.path.dirname(manifest_path), None, str(e)))
    return sorted(found, key=lambda s: s.manifest is None)[0] if found else None


def spec_digest(matrix_path, profile, overrides, workload):
    h = hashlib.sha256()
    with open(matrix_path, "rb") as f:
        h.update(f.read())
    h.update(json.dumps([profile, sorted(overrides), workload.sha256]).encode())
    return h.hexdigest()


def harness_provenance(workspace, shipped_commit=""):
    def git(*args):
        try:
            return subprocess.run(["git", "-C", workspace, *args], stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return ""
    commit = git("rev-parse", "HEAD")
    if not commit:
        # A copy of the runfiles on another host (//tools:fleet) has no git: the tool that built and shipped
        # it says which commit it was, as `<sha>` or `<sha>-dirty`.
        shipped = shipped_commit
        return (shipped[:-len("-dirty")], True) if shipped.endswith("-dirty") else (shipped or "unknown", False)
    dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    return commit, dirty


def resume_as_stored(args, stored):
    """`--resume RUN_ID` alone continues the stored run (`stored`: find_stored_run's) as it was started: its
    profile and --set values go into `args`. Returns the line saying so, or None (other arguments given, or
    no such run)."""
    if not (args.resume and args.profile is None and not args.set) or stored is None or stored.manifest is None:
        return None
    matrix = stored.manifest["matrix"]
    args.profile, args.set = matrix.get("profile"), list(matrix.get("overrides") or [])
    return (f"resuming {args.resume}: profile {args.profile or '(default)'}"
            + (f", --set {' '.join(args.set)}" if args.set else ""))
