"""Commits, builds and runs for //tools:bisect (tools/bisection/command.py): the first-parent range between two revisions,
one commit's matrix target built in a git worktree of its own (by Bazel, as tools/nightly/nightly.sh builds
the accepted revision, or by a program the user names), and one matrix run of such a build.

Every commit gets its own worktree and, with Bazel, its own output base: a step's run needs the midpoint's
build and both ends' at once, and a second build in one worktree would rewrite the first's runfiles under it.
A build of the calibration matrix in a fresh worktree took ~28 s here (the repository cache is shared); each
output base is ~0.8 GB, removed when the bisect ends (--keep-builds keeps them).
"""

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import shutil
import subprocess
import time

from results import safeio
from rigs.host import hoststate

TARGET = re.compile(r"//rigs:([A-Za-z0-9_]+)")
MAX_ARGS_BYTES = 1 << 20
MAX_TREE_FILES = 500_000
COMMIT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


class BisectInputError(ValueError):
    """Bad input, found before anything is built or run."""


class BuildFailed(RuntimeError):
    """A commit whose matrix target does not build: the bisect skips it and names it."""


def git(checkout, *args):
    """git's stdout, stripped; BisectInputError with its message when it fails."""
    proc = subprocess.run(["git", "-C", checkout, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode:
        raise BisectInputError(f"git {' '.join(args[:2])}: {proc.stderr.strip()[-300:] or 'failed'}")
    return proc.stdout.strip()


def resolve(checkout, rev, flag):
    """The full commit id of `rev`, or BisectInputError naming the flag it came from."""
    if not rev or rev.startswith("-") or any(ord(c) < 32 or ord(c) == 127 for c in rev) or len(rev) > 256:
        raise BisectInputError(f"{flag} {rev[:80]!r}: not a revision")
    try:
        return git(checkout, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    except BisectInputError:
        raise BisectInputError(f"{flag} {rev!r}: no such commit in {checkout}") from None


def is_ancestor(checkout, older, newer):
    return subprocess.run(["git", "-C", checkout, "merge-base", "--is-ancestor", older, newer]).returncode == 0


def first_parent_range(checkout, good, bad):
    """([good, ..., bad] along bad's first parents, the number of merges among them). A merge counts as one
    commit (its side branch is not bisected: said in the output). Refuses good after bad, good equal to bad, and
    a good reached from bad only through a merge's second parent."""
    if good == bad:
        raise BisectInputError(f"--good and --bad are the same commit ({good[:12]}): nothing to bisect")
    if not is_ancestor(checkout, good, bad):
        if is_ancestor(checkout, bad, good):
            raise BisectInputError(f"--good {good[:12]} comes after --bad {bad[:12]}: swap them")
        raise BisectInputError(f"--good {good[:12]} is not an ancestor of --bad {bad[:12]} (they are on different "
                               "lines): give a good commit that --bad's history contains")
    later = git(checkout, "rev-list", "--first-parent", "--reverse", f"{good}..{bad}").split()
    first_parent = git(checkout, "rev-parse", f"{later[0]}^1") if later else ""
    if first_parent != good:
        raise BisectInputError(f"--good {good[:12]} is in --bad's history only through a merge's side branch; a "
                               "bisect follows first parents only: give a commit of the first-parent line "
                               f"(git log --first-parent {bad[:12]})")
    merges = int(git(checkout, "rev-list", "--first-parent", "--merges", "--count", f"{good}..{bad}") or 0)
    return [good] + later, merges


def subject(checkout, commit):
    return git(checkout, "log", "-1", "--format=%s", commit)[:200]


def matrix_name(target):
    m = TARGET.fullmatch(target or "")
    if not m:
        raise BisectInputError(f"--matrix {target!r}: expected a matrix target, //rigs:NAME_matrix")
    return m.group(1)


@dataclasses.dataclass
class Build:
    """One commit's matrix target, built: its runfiles tree and the arguments its BUILD file gives the runner."""
    commit: str
    runfiles: str
    args_file: str
    seconds: float = 0.0

    def exists(self):
        return os.path.isdir(os.path.join(self.runfiles, "tunelab")) and os.path.isfile(self.args_file)


class Builder:
    """Builds one commit's matrix target in `folder`/worktrees/<commit>, with Bazel or with `program`
    (called as PROGRAM CHECKOUT TARGET OUT: it must leave a runfiles tree at OUT holding
    tunelab/rigs/NAME and tunelab/rigs/NAME.args, the layout NIGHTLY_RUNFILES names). Logs in folder/logs.

    The bisect folder is data (issue 78): a build found in it is used again only where this host's state
    folder (`trust_dir`, root's, never the bisect folder) holds the record this Builder wrote when it made
    that build, and the tree still has the sha256 it recorded; anything else is built again. A worktree is
    built in only when this checkout's git made it (`git worktree list`) at that commit, clean."""

    def __init__(self, checkout, target, folder, program=None, bazel=None, trust_dir=None):
        self.checkout, self.target, self.folder, self.program = checkout, target, folder, program
        self.name = matrix_name(target)
        self.bazel = bazel or shutil.which("bazel") or os.path.join(checkout, "bazelw")
        self.trust_dir = trust_dir
        for sub in ("worktrees", "builds", "logs", "profiles"):
            inside(folder, sub)  # a stored folder's own subfolders are never links out of it
        self.worktrees = os.path.join(folder, "worktrees")

    def planned(self, commit):
        """Where the program puts `commit`'s build (Bazel's is where `bazel info bazel-bin` says)."""
        out = inside(self.folder, "builds", commit + ".runfiles")
        return Build(commit, out, os.path.join(out, "tunelab", "rigs", self.name + ".args"))

    def bazel_build(self, tree, bin_dir):
        return Build("", os.path.join(bin_dir, "rigs", self.name + ".runfiles"),
                     os.path.join(bin_dir, "rigs", self.name + ".args"))

    def _fresh_out(self, build):
        if os.path.lexists(build.runfiles):
            shutil.rmtree(build.runfiles)
        safeio.check_folder(os.path.dirname(build.runfiles), create=True)

    def build_checkout(self):
        """This checkout's own build of the target (Bazel in the checkout itself, or the program into
        folder/builds/checkout.runfiles), for an axis bisect. Always built: Bazel's cache makes it cheap."""
        started = time.monotonic()
        log_path = inside(self.folder, "logs", "build-checkout.log")
        if self.program:
            build = self.planned("checkout")
            self._fresh_out(build)
            status = self._run([self.program, self.checkout, self.target, build.runfiles], self.checkout, log_path)
        else:
            status, build = self._bazel(self.checkout, log_path, shutdown=False)
        if status or not build.exists():
            raise BuildFailed(f"{self.target} does not build in {self.checkout} (exit {status}): {last_line(log_path)} "
                              f"(log: {log_path})")
        build.seconds = time.monotonic() - started
        return real(build)

    def build(self, commit):
        """The Build of `commit` (made now, or the one this Builder made earlier for this folder, if its tree
        is unchanged); BuildFailed with the log's last line when the target does not build. Its paths are
        real ones: the runner finds its rig data relative to where its runfiles really are."""
        safeio.path_component(commit, "a commit")
        if not COMMIT_ID.fullmatch(commit):
            raise BisectInputError(f"{commit[:80]!r}: not a full commit id")
        trusted = self._trusted(commit)
        if trusted is not None:
            return trusted
        started = time.monotonic()
        tree = self._worktree(commit)
        log_path = inside(self.folder, "logs", f"build-{commit}.log")
        if self.program:
            build = self.planned(commit)
            self._fresh_out(build)
            status = self._run([self.program, tree, self.target, build.runfiles], tree, log_path)
        else:
            status, build = self._bazel(tree, log_path, shutdown=True)
        if status or not build.exists():
            raise BuildFailed(f"{self.target} does not build at {commit[:12]} (exit {status}): "
                              f"{last_line(log_path)} (log: {log_path})")
        build = dataclasses.replace(real(build), commit=commit, seconds=time.monotonic() - started)
        self._trust(build)
        return build

    def _run(self, argv, cwd, log_path):
        with safeio.open_log(log_path) as log:
            return subprocess.run(argv, cwd=cwd, stdout=log, stderr=subprocess.STDOUT).returncode

    def _bazel(self, tree, log_path, shutdown):
        """(status, Build) of `bazel build` in `tree`; the runfiles where Bazel itself says its outputs are."""
        with safeio.open_log(log_path) as log:
            status = subprocess.run([self.bazel, "build", self.target, self.target + "_args"], cwd=tree, stdout=log,
                                    stderr=subprocess.STDOUT).returncode
            info = subprocess.run([self.bazel, "info", "bazel-bin"], cwd=tree, stdout=subprocess.PIPE, stderr=log,
                                  text=True)
            if shutdown:  # its server is not needed again: each worktree would keep one (~0.5 GB)
                subprocess.run([self.bazel, "shutdown"], cwd=tree, stdout=log, stderr=subprocess.STDOUT)
        bin_dir = info.stdout.strip() if info.returncode == 0 else os.path.join(tree, "bazel-bin")
        return status, self.bazel_build(tree, bin_dir)

    def _worktree(self, commit):
        """folder/worktrees/<commit>: made now by git, or the one git made before, at `commit`, unchanged.
        A folder there that this checkout's git did not make is refused (it is not built in: a build runs
        the BUILD files and .bazelrc it finds)."""
        tree = inside(self.folder, "worktrees", commit)
        if not os.path.lexists(tree):
            safeio.check_folder(self.worktrees, create=True)
            git(self.checkout, "worktree", "add", "--detach", tree, commit)
            return tree
        heads = registered_worktrees(self.checkout)
        if heads.get(os.path.realpath(tree)) != commit:
            raise BisectInputError(f"{tree}: not a worktree this checkout's git made at {commit[:12]} (git worktree "
                                   "list does not name it): a bisect folder's files are never built or run; remove "
                                   "it, or start a new bisect")
        if git(tree, "status", "--porcelain", "--untracked-files=all"):
            raise BisectInputError(f"{tree}: the worktree has changes git did not make (git status): refused; remove "
                                   "it, or start a new bisect")
        return tree

    def _trust_path(self, commit):
        key = hashlib.sha256(os.path.realpath(self.folder).encode()).hexdigest()[:16]
        return os.path.join(self.trust_dir, f"{key}-{commit}.json")

    def _trust(self, build):
        """Records in the host state folder the build this Builder made: its paths and its tree's sha256."""
        if not self.trust_dir:
            return
        try:
            digest = tree_sha256(build.runfiles)
        except (OSError, TreeTooLarge, safeio.InputError):
            return  # not recorded: a resumed bisect builds it again
        hoststate.ensure_state_dir(self.trust_dir)
        doc = {"folder": os.path.realpath(self.folder), "commit": build.commit, "runfiles": build.runfiles,
               "args_file": build.args_file, "sha256": digest, "seconds": round(build.seconds, 1)}
        hoststate.write_file(self._trust_path(build.commit), json.dumps(doc).encode())

    def _trusted(self, commit):
        """The build of `commit` this Builder recorded for this folder, if its tree is as recorded; else None."""
        if not self.trust_dir:
            return None
        try:
            data = hoststate.read_file(self._trust_path(commit), 1 << 16)
            doc = safeio.parse_json(data) if data is not None else None
        except (hoststate.StateError, safeio.InputError):
            return None
        if (not isinstance(doc, dict) or doc.get("folder") != os.path.realpath(self.folder)
                or doc.get("commit") != commit or not all(isinstance(doc.get(k), str) for k in ("runfiles", "args_file"))):
            return None
        build = Build(commit, doc["runfiles"], doc["args_file"])
        try:
            if not build.exists() or tree_sha256(build.runfiles) != doc.get("sha256"):
                return None
        except (OSError, TreeTooLarge, safeio.InputError):
            return None
        return build

    def remove(self, commits):
        """Removes the builds and worktrees (with their Bazel output bases) of `commits`: only worktrees this
        checkout's git made (Bazel is never started in another folder: its .bazelrc could name a program)."""
        heads = registered_worktrees(self.checkout)
        for commit in commits:
            try:
                out = inside(self.folder, "builds", commit + ".runfiles")
                tree = inside(self.folder, "worktrees", commit)
            except safeio.InputError:
                continue
            shutil.rmtree(out, ignore_errors=True)
            if self.trust_dir and COMMIT_ID.fullmatch(commit):
                with contextlib.suppress(OSError):
                    os.remove(self._trust_path(commit))
            if os.path.realpath(tree) not in heads or os.path.islink(tree):
                continue
            if not self.program:
                subprocess.run([self.bazel, "clean", "--expunge"], cwd=tree, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
            subprocess.run(["git", "-C", self.checkout, "worktree", "remove", "--force", tree],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class TreeTooLarge(ValueError):
    pass


def tree_sha256(root, max_files=MAX_TREE_FILES):
    """sha256 over a runfiles tree: every path below `root` (sorted), its kind, its executable bit and the
    bytes of the file it is or links to (a runfiles tree is mostly links into Bazel's output base; a linked
    folder is walked once)."""
    digest = hashlib.sha256()
    seen, count = set(), 0
    for top, dirs, files in os.walk(root, followlinks=True):
        real_top = os.path.realpath(top)
        if real_top in seen:
            dirs[:] = []
            continue
        seen.add(real_top)
        dirs.sort()
        for name in sorted(files):
            count += 1
            if count > max_files:
                raise TreeTooLarge(f"{root}: over {max_files} files")
            path = os.path.join(top, name)
            rel = os.path.relpath(path, root)
            digest.update(f"{rel}\0{os.access(path, os.X_OK)}\0".encode())
            digest.update(safeio.sha256_of(path).encode())
        for name in dirs:
            digest.update(f"{os.path.relpath(os.path.join(top, name), root)}/\0".encode())
    return digest.hexdigest()


def registered_worktrees(checkout):
    """{real path: HEAD commit} of the worktrees this checkout's git made (git keeps their list in its own
    folder, which no bisect folder can reach)."""
    out, heads, path = git(checkout, "worktree", "list", "--porcelain"), {}, None
    for line in out.splitlines():
        if line.startswith("worktree "):
            path = os.path.realpath(line[len("worktree "):])
        elif line.startswith("HEAD ") and path:
            heads[path] = line[len("HEAD "):]
    return heads


def inside(folder, *names):
    try:
        return safeio.inside(folder, *names, what="a bisect folder's name")
    except safeio.InputError as e:
        raise BisectInputError(str(e)) from None


def real(build):
    return dataclasses.replace(build, runfiles=os.path.realpath(build.runfiles), args_file=os.path.realpath(build.args_file))


def last_line(path):
    try:
        lines = [line for line in safeio.read_text(path, 1 << 24).splitlines() if line.strip()]
    except (OSError, safeio.InputError):
        return "no log"
    errors = [line for line in lines if "ERROR" in line or "error:" in line]
    return (errors or lines or ["no output"])[-1].strip()[:300]


def run_matrix(build, target, argv, workspace, log_path, info_path):
    """Runs `build`'s matrix target with its BUILD arguments and `argv` (from the build's own runfiles, as
    `bazel run` would), storing into `workspace`'s results; returns the runner's --run-info document ({} if
    it wrote none)."""
    name = matrix_name(target)
    try:
        build_args = safeio.read_text(build.args_file, MAX_ARGS_BYTES).splitlines()
    except (OSError, safeio.InputError) as e:
        raise BuildFailed(f"{build.args_file}: the build's runner arguments cannot be read ({e})") from None
    env = {k: v for k, v in os.environ.items()
           if k not in ("RUNFILES_DIR", "RUNFILES_MANIFEST_FILE", "TEST_SRCDIR", "PYTHON_RUNFILES", "JAVA_RUNFILES")}
    env.update(BUILD_WORKSPACE_DIRECTORY=workspace, BUILD_WORKING_DIRECTORY=workspace)
    if os.path.exists(info_path):
        os.remove(info_path)
    home = os.path.join(build.runfiles, "tunelab")
    with safeio.open_log(log_path) as log:
        subprocess.run([os.path.join(home, "rigs", name), *[a for a in build_args if a], *argv,
                        f"--run-info={info_path}"], cwd=home, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        info = safeio.read_json(info_path, 1 << 20)
    except (OSError, safeio.InputError):
        return {}
    return info if isinstance(info, dict) else {}
