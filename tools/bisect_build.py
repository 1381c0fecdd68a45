"""Commits, builds and runs for //tools:bisect (tools/bisect_command.py): the first-parent range between two revisions,
one commit's matrix target built in a git worktree of its own (by Bazel, as tools/nightly/nightly.sh builds
the accepted revision, or by a program the user names), and one matrix run of such a build.

Every commit gets its own worktree and, with Bazel, its own output base: a step's run needs the midpoint's
build and both ends' at once, and a second build in one worktree would rewrite the first's runfiles under it.
A build of the calibration matrix in a fresh worktree took ~28 s here (the repository cache is shared); each
output base is ~0.8 GB, removed when the bisect ends (--keep-builds keeps them).
"""

import dataclasses
import os
import re
import shutil
import subprocess
import time

from results import safeio

TARGET = re.compile(r"//rigs:([A-Za-z0-9_]+)")
MAX_ARGS_BYTES = 1 << 20


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
    if not rev or rev.startswith("-"):
        raise BisectInputError(f"{flag} {rev!r}: not a revision")
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
    tunelab/rigs/NAME and tunelab/rigs/NAME.args, the layout NIGHTLY_RUNFILES names). Logs in folder/logs."""

    def __init__(self, checkout, target, folder, program=None, bazel=None):
        self.checkout, self.target, self.folder, self.program = checkout, target, folder, program
        self.name = matrix_name(target)
        self.bazel = bazel or shutil.which("bazel") or os.path.join(checkout, "bazelw")
        self.worktrees = os.path.join(folder, "worktrees")

    def planned(self, commit):
        if self.program:
            # Named *.runfiles: a py_binary's stub finds its runfiles by that name in its own path.
            out = os.path.join(self.folder, "builds", commit + ".runfiles")
            return Build(commit, out, os.path.join(out, "tunelab", "rigs", self.name + ".args"))
        bin_dir = os.path.join(self.worktrees, commit, "bazel-bin", "rigs")
        return Build(commit, os.path.join(bin_dir, self.name + ".runfiles"), os.path.join(bin_dir, self.name + ".args"))

    def build_checkout(self):
        """This checkout's own build of the target (Bazel in the checkout itself, or the program into
        folder/builds/checkout.runfiles), for an axis bisect."""
        started = time.monotonic()
        if self.program:
            build = self.planned("checkout")
            if os.path.isdir(build.runfiles):
                shutil.rmtree(build.runfiles)
            safeio.check_folder(os.path.dirname(build.runfiles), create=True)
            argv = [self.program, self.checkout, self.target, build.runfiles]
        else:
            bin_dir = os.path.join(self.checkout, "bazel-bin", "rigs")
            build = Build("checkout", os.path.join(bin_dir, self.name + ".runfiles"),
                          os.path.join(bin_dir, self.name + ".args"))
            argv = [self.bazel, "build", self.target, self.target + "_args"]
        log_path = os.path.join(self.folder, "logs", "build-checkout.log")
        with safeio.open_log(log_path) as log:
            status = subprocess.run(argv, cwd=self.checkout, stdout=log, stderr=subprocess.STDOUT).returncode
        if status or not build.exists():
            raise BuildFailed(f"{self.target} does not build in {self.checkout} (exit {status}): {last_line(log_path)} "
                              f"(log: {log_path})")
        build.seconds = time.monotonic() - started
        return real(build)

    def build(self, commit):
        """The Build of `commit` (made now, or found from an earlier, interrupted bisect); BuildFailed with the
        log's last line when the target does not build. Its paths are real ones: a worktree's bazel-bin is a
        link into its output base, and the runner finds its rig data relative to where its runfiles really are."""
        build = self.planned(commit)
        done = os.path.join(self.folder, "logs", f"build-{commit}.ok")
        if build.exists() and os.path.exists(done):
            return real(build)
        started = time.monotonic()
        tree = os.path.join(self.worktrees, commit)
        if not os.path.isdir(tree):
            git(self.checkout, "worktree", "add", "--detach", tree, commit)
        log_path = os.path.join(self.folder, "logs", f"build-{commit}.log")
        if self.program:
            if os.path.isdir(build.runfiles):
                shutil.rmtree(build.runfiles)
            safeio.check_folder(os.path.dirname(build.runfiles), create=True)
            argv = [self.program, tree, self.target, build.runfiles]
        else:
            argv = [self.bazel, "build", self.target, self.target + "_args"]
        with safeio.open_log(log_path) as log:
            status = subprocess.run(argv, cwd=tree, stdout=log, stderr=subprocess.STDOUT).returncode
            if not self.program:  # its server is not needed again: each worktree would keep one (~0.5 GB)
                subprocess.run([self.bazel, "shutdown"], cwd=tree, stdout=log, stderr=subprocess.STDOUT)
        if status or not build.exists():
            raise BuildFailed(f"{self.target} does not build at {commit[:12]} (exit {status}): "
                              f"{last_line(log_path)} (log: {log_path})")
        build.seconds = time.monotonic() - started
        safeio.write_text(done, f"{build.seconds:.1f}\n")
        return real(build)

    def remove(self, commits):
        """Removes the worktrees (and their Bazel output bases) of `commits`."""
        for commit in commits:
            shutil.rmtree(os.path.join(self.folder, "builds", commit + ".runfiles"), ignore_errors=True)
            tree = os.path.join(self.worktrees, commit)
            if not os.path.isdir(tree):
                continue
            if not self.program:
                subprocess.run([self.bazel, "clean", "--expunge"], cwd=tree, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
            subprocess.run(["git", "-C", self.checkout, "worktree", "remove", "--force", tree],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


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
