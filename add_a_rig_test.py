"""README "Add a rig" as a test: every rig of this checkout has each step a test can check (its two folders,
its rig.toml and README.md, its rig_matrix line), and the check names the step a rig lacks; a scratch rig
touches no shared file but that line and its README row.
Reads the checkout itself (lint_test.checkout), so it runs outside the sandbox and is never cached."""

import glob
import os
import re
import sys
import tomllib
import unittest

from lint_test import checkout

# README "Add a rig": the steps this test checks, by number (rig_layout_problems).
RIG_MATRIX_CALL = re.compile(r"^rig_matrix\((.*?)^\)", re.S | re.M)



def rig_layout_problems(tree):
    """What a rig of `tree` lacks of README's "Add a rig" checklist, one line each naming the step: a
    rigs/<rig>/rig.py without its rig.toml (registration_problems) or its README.md linked from the top README
    (step 1), with no rig_matrix call in rigs/BUILD.bazel (step 3), or a workload without workload.toml,
    gate.toml or its workload_definition() (step 2)."""
    def read(*parts):
        try:
            with open(os.path.join(tree, *parts)) as f:
                return f.read()
        except OSError:
            return ""
    calls, matrices = {}, {}  # rig -> workloads, matrix target -> rig, from rigs/BUILD.bazel's rig_matrix calls
    for body in RIG_MATRIX_CALL.findall(read("rigs", "BUILD.bazel")):
        rig = re.search(r'^\s*rig = "//rigs/(\w+):rig",', body, re.M)
        workload = re.search(r'^\s*workload = "//workloads/(\w+)",', body, re.M)
        name = re.search(r'^\s*name = "(\w+)",', body, re.M)
        if rig:
            calls.setdefault(rig.group(1), set()).add(workload.group(1) if workload else None)
            matrices[name.group(1) if name else ""] = rig.group(1)
    problems = []
    for path in sorted(glob.glob(os.path.join(tree, "rigs", "*", "rig.py"))):
        rig = os.path.basename(os.path.dirname(path))
        if rig in ("matrix", "host"):
            continue
        problems += registration_problems(tree, rig, matrices, read("rigs", rig, "BUILD.bazel"))
        if not os.path.isfile(os.path.join(tree, "rigs", rig, "README.md")):
            problems.append(f"rigs/{rig}: no README.md (its page: what it measures, its profiles; step 1)")
        elif f"](rigs/{rig}/README.md)" not in read("README.md"):
            problems.append(f"rigs/{rig}: README.md's \"The rigs\" does not link rigs/{rig}/README.md (step 1)")
        if rig not in calls:
            problems.append(f"rigs/{rig}: no rig_matrix(rig = \"//rigs/{rig}:rig\", ...) in rigs/BUILD.bazel (step 3)")
        for workload in sorted(w or "" for w in calls.get(rig, ())):
            if not workload:
                problems.append(f"rigs/{rig}: its rig_matrix names no workload = \"//workloads/NAME\" (step 3)")
                continue
            for name in ("workload.toml", "gate.toml"):
                if not os.path.isfile(os.path.join(tree, "workloads", workload, name)):
                    problems.append(f"workloads/{workload}: no {name} (step 2)")
            build = read("workloads", workload, "BUILD.bazel")
            if not re.search(r'^workload_definition\(name = "definition"\)|name = "definition"', build, re.M):
                problems.append(f"workloads/{workload}: its BUILD.bazel has no workload_definition() (step 2)")
    return problems


def checkout_registry():
    """rigs/registry.py of the checkout under test, imported from it (this test's runfiles hold no package of
    the checkout: the floors test imports them all from the checkout too)."""
    tree = checkout()
    sys.path.insert(0, tree)
    try:
        from rigs import registry
    finally:
        sys.path.remove(tree)
    return registry


def registration_problems(tree, rig, matrices, build):
    """What rigs/<rig>/rig.toml (rigs/registry.py) lacks for step 1: the file itself, exported by the rig's
    BUILD.bazel, well formed, naming a rig_matrix target of this rig and profiles its matrix.toml has."""
    path = os.path.join(tree, "rigs", rig, "rig.toml")
    if not os.path.isfile(path):
        return [f"rigs/{rig}: no rig.toml (its title, nightly profile and sensitivity sets; step 1)"]
    problems = [] if re.search(r'exports_files\(\[[^]]*"rig\.toml"', build) else [
        f"rigs/{rig}: its BUILD.bazel does not export rig.toml (exports_files; step 1)"]
    registry = checkout_registry()
    try:
        entry = registry.read(path)
    except registry.RegistryError as e:
        return problems + [f"rigs/{rig}: {e} (step 1)"]
    if matrices.get(entry.matrix) != rig:
        problems.append(f"rigs/{rig}: rig.toml's matrix = \"{entry.matrix}\" is not a rig_matrix of this rig in "
                        f"rigs/BUILD.bazel (step 1)")
    try:
        with open(os.path.join(tree, "rigs", rig, "matrix.toml"), "rb") as f:
            profiles = set(tomllib.load(f).get("profiles", {}))
    except (OSError, tomllib.TOMLDecodeError):
        profiles = set()
    named = ([entry.nightly_profile] if entry.nightly_profile else []) + list(entry.gated) + [
        d["profile"] for d in (entry.aa, entry.slowdown) if d]
    problems += [f"rigs/{rig}: rig.toml names profile {p!r}, which its matrix.toml lacks (step 1)"
                 for p in dict.fromkeys(named) if p not in profiles]
    return problems


# The only shared files a rig is written into: its rig_matrix line and its row in "The rigs" (steps 1 and 3).
RIG_LISTS_ALLOWED = ("README.md", "rigs/BUILD.bazel")


def rig_lists(tree, files):
    """Files of `files` (paths relative to `tree`) that name every rig by path or module (rigs/<rig>,
    rigs.<rig>, //rigs/<rig>): a list a new rig would have to be added to, beyond RIG_LISTS_ALLOWED."""
    rigs = sorted(os.path.basename(os.path.dirname(p)) for p in glob.glob(os.path.join(tree, "rigs", "*", "rig.py"))
                  if os.path.basename(os.path.dirname(p)) not in ("matrix", "host"))
    found = []
    for rel in sorted(files):
        if rel in RIG_LISTS_ALLOWED or rel.startswith("results/") or len(rigs) < 2:
            continue
        try:
            with open(os.path.join(tree, rel), encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError):
            continue
        if all(re.search(r"rigs[./:]%s\b" % re.escape(rig), text) for rig in rigs):
            found.append(rel)
    return found


def tracked_files(tree):
    """Every file of the checkout but outputs, dot folders and third_party."""
    out = []
    for root, dirs, names in os.walk(tree):
        dirs[:] = [d for d in dirs if not d.startswith((".", "bazel-")) and d not in ("third_party", "nightly-out")]
        out += [os.path.relpath(os.path.join(root, n), tree) for n in names]
    return out


class AddARigTest(unittest.TestCase):
    def test_every_rig_is_two_folders_and_one_line(self):
        # README "Add a rig": each rig's two folders and its rig_matrix line.
        self.assertEqual(rig_layout_problems(checkout()), [])

    def test_the_rig_layout_check_names_each_missing_step(self):
        # A sixth rig as its two folders and one line, in a scratch tree; then each piece deleted in turn, and
        # its rig.toml made wrong in each way the check knows.
        tree, r = os.path.join(os.environ.get("TEST_TMPDIR", "/tmp"), "sixth-rig"), "sixth"
        registration = f'[rig]\ntitle = "Sixth"\nmatrix = "{r}_matrix"\n\n[nightly]\nprofile = "nightly"\nbudget_min = 10\n'
        files = {
            f"rigs/{r}/rig.py": "RIG = None\n",
            f"rigs/{r}/BUILD.bazel": 'py_library(name = "rig")\n\nexports_files([\n    "matrix.toml",\n    "rig.toml",\n])\n',
            f"rigs/{r}/rig.toml": registration,
            f"rigs/{r}/matrix.toml": "[profiles.nightly]\n",
            f"rigs/{r}/README.md": "# Sixth\n",
            "README.md": f"| sixth | [rigs/{r}/README.md](rigs/{r}/README.md) |\n",
            "rigs/BUILD.bazel": f'rig_matrix(\n    name = "{r}_matrix",\n    rig = "//rigs/{r}:rig",\n'
                                f'    workload = "//workloads/{r}",\n)\n',
            f"workloads/{r}/workload.toml": "", f"workloads/{r}/gate.toml": "",
            f"workloads/{r}/BUILD.bazel": 'load("//workloads:defs.bzl", "workload_definition")\n\n'
                                          'workload_definition(name = "definition")\n',
        }
        cut = {"rigs/BUILD.bazel": f"no rig_matrix(rig = \"//rigs/{r}:rig\", ...) in rigs/BUILD.bazel (step 3)",
               f"rigs/{r}/rig.toml": f"rigs/{r}: no rig.toml (its title, nightly profile and sensitivity sets; step 1)",
               f"rigs/{r}/BUILD.bazel": f"rigs/{r}: its BUILD.bazel does not export rig.toml (exports_files; step 1)",
               f"rigs/{r}/matrix.toml": "rig.toml names profile 'nightly', which its matrix.toml lacks (step 1)",
               f"rigs/{r}/README.md": f"rigs/{r}: no README.md (its page: what it measures, its profiles; step 1)",
               "README.md": f"rigs/{r}: README.md's \"The rigs\" does not link rigs/{r}/README.md (step 1)",
               f"workloads/{r}/workload.toml": f"workloads/{r}: no workload.toml (step 2)",
               f"workloads/{r}/gate.toml": f"workloads/{r}: no gate.toml (step 2)",
               f"workloads/{r}/BUILD.bazel": f"workloads/{r}: its BUILD.bazel has no workload_definition() (step 2)"}
        wrong = {  # rig.toml's text -> what the check says
            registration.replace(f"{r}_matrix", "seventh_matrix"):
                'rig.toml\'s matrix = "seventh_matrix" is not a rig_matrix of this rig in rigs/BUILD.bazel (step 1)',
            registration + "[sensitivity]\ngated = [\"nightly\", \"quiet\"]\n": "[sensitivity] has no aa (step 1)",
            registration.replace("[rig]\n", "[rig]\ncolour = \"red\"\n"): "[rig] colour: not a key of [rig]",
        }
        for missing, text in [(None, None)] + [(m, None) for m in cut] + [(None, t) for t in wrong]:
            if os.path.isdir(tree):
                for root, _, names in os.walk(tree, topdown=False):
                    for name in names:
                        os.remove(os.path.join(root, name))
            for rel, content in dict(files, **({f"rigs/{r}/rig.toml": text} if text else {})).items():
                if rel != missing:
                    os.makedirs(os.path.dirname(os.path.join(tree, rel)), exist_ok=True)
                    with open(os.path.join(tree, rel), "w") as f:
                        f.write(content)
            problems = rig_layout_problems(tree)
            if missing is None and text is None:
                self.assertEqual(problems, [])
            else:
                expected = cut[missing] if missing else wrong[text]
                self.assertTrue(any(expected in p for p in problems), (missing, text, problems))

    def test_no_shared_file_lists_every_rig(self):
        # A new rig is its two folders, its rig_matrix line and its README row: no other file may list the rigs
        # (the import contracts name them by pattern, the gate files are collected from the rig_matrix calls).
        self.assertEqual(rig_lists(checkout(), tracked_files(checkout())), [],
                         "a file lists every rig: a new rig would have to be added to it; derive it from the registry")

    def test_the_list_rule_finds_a_list(self):
        tree = os.path.join(os.environ.get("TEST_TMPDIR", "/tmp"), "lists")
        a, b, rigs = "first", "second", "rigs"  # made-up rigs of a scratch tree
        for rel, text in {f"{rigs}/{a}/rig.py": "", f"{rigs}/{b}/rig.py": "", f"{rigs}/matrix/rig.py": "",
                          "README.md": f"{rigs}/{a} {rigs}/{b}", ".importlinter": f"{rigs}.{a}\n{rigs}.{b}.rig\n",
                          f"{rigs}/x.bzl": f"//{rigs}/{a}:rig", "ok.md": "rigs.*.rig"}.items():
            os.makedirs(os.path.dirname(os.path.join(tree, rel)), exist_ok=True)
            with open(os.path.join(tree, rel), "w") as f:
                f.write(text)
        self.assertEqual(rig_lists(tree, tracked_files(tree)), [".importlinter"])


if __name__ == "__main__":
    unittest.main()
