"""README "Add a rig" as a test: every rig of this checkout has each step a test can check (its two folders,
its rig.toml and README.md, its rig_matrix line, the two lists), and the check names the step a rig lacks.
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
    (step 1), with no rig_matrix call in rigs/BUILD.bazel (step 3), no rigs.<rig> in .importlinter (step 4), a
    workload without workload.toml, gate.toml or its workload_definition() (step 2), or missing from
    workloads/BUILD.bazel's gate_files (step 4)."""
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
    linter = read(".importlinter")
    gate_files = read("workloads", "BUILD.bazel")
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
        problems += linter_problems(linter, rig)
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
            if f'"//workloads/{workload}:gate.toml"' not in gate_files:
                problems.append(f"workloads/{workload}: not in workloads/BUILD.bazel's gate_files (step 4)")
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


def linter_problems(text, rig):
    """Both import-linter contracts that name every rig must name this one (issue 81: a seventh rig named in
    one was checked by neither "Add a rig" nor this test in the other): the host imports no rig
    ([importlinter:contract:host] forbidden_modules rigs.RIG) and the rig's code sees only the contract
    ([importlinter:contract:rigs_see_the_contract] source_modules rigs.RIG.rig)."""
    import configparser
    config = configparser.ConfigParser()
    try:
        config.read_string(text)
    except configparser.Error as e:
        return [f".importlinter does not parse ({e}) (step 4)"]

    def names(section, key):
        return config.get(section, key, fallback="").split() if config.has_section(section) else []
    problems = []
    if f"rigs.{rig}" not in names("importlinter:contract:host", "forbidden_modules"):
        problems.append(f"rigs/{rig}: .importlinter's host contract does not forbid rigs.{rig} (step 4)")
    if f"rigs.{rig}.rig" not in names("importlinter:contract:rigs_see_the_contract", "source_modules"):
        problems.append(f"rigs/{rig}: .importlinter's rigs_see_the_contract does not name rigs.{rig}.rig (step 4)")
    return problems


class AddARigTest(unittest.TestCase):
    def test_every_rig_is_two_folders_and_one_line(self):
        # README "Add a rig": each rig's two folders, its rig_matrix line and the two lists a test can check.
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
            ".importlinter": (f"[importlinter:contract:host]\nforbidden_modules =\n    rigs.{r}\n\n"
                              f"[importlinter:contract:rigs_see_the_contract]\nsource_modules =\n    rigs.{r}.rig\n"),
            f"workloads/{r}/workload.toml": "", f"workloads/{r}/gate.toml": "",
            f"workloads/{r}/BUILD.bazel": 'load("//workloads:defs.bzl", "workload_definition")\n\n'
                                          'workload_definition(name = "definition")\n',
            "workloads/BUILD.bazel": f'srcs = ["//workloads/{r}:gate.toml"]\n',
        }
        cut = {"rigs/BUILD.bazel": f"no rig_matrix(rig = \"//rigs/{r}:rig\", ...) in rigs/BUILD.bazel (step 3)",
               f"rigs/{r}/rig.toml": f"rigs/{r}: no rig.toml (its title, nightly profile and sensitivity sets; step 1)",
               f"rigs/{r}/BUILD.bazel": f"rigs/{r}: its BUILD.bazel does not export rig.toml (exports_files; step 1)",
               f"rigs/{r}/matrix.toml": "rig.toml names profile 'nightly', which its matrix.toml lacks (step 1)",
               f"rigs/{r}/README.md": f"rigs/{r}: no README.md (its page: what it measures, its profiles; step 1)",
               "README.md": f"rigs/{r}: README.md's \"The rigs\" does not link rigs/{r}/README.md (step 1)",
               ".importlinter": f"rigs/{r}: .importlinter's host contract does not forbid rigs.{r} (step 4)",
               f"workloads/{r}/workload.toml": f"workloads/{r}: no workload.toml (step 2)",
               f"workloads/{r}/gate.toml": f"workloads/{r}: no gate.toml (step 2)",
               f"workloads/{r}/BUILD.bazel": f"workloads/{r}: its BUILD.bazel has no workload_definition() (step 2)",
               "workloads/BUILD.bazel": f"workloads/{r}: not in workloads/BUILD.bazel's gate_files (step 4)"}
        # Named in one contract only: the other says so.
        one = "[importlinter:contract:host]\nforbidden_modules =\n    rigs.{r}\n".format(r=r)
        self.assertEqual(linter_problems(one, r), [
            f"rigs/{r}: .importlinter's rigs_see_the_contract does not name rigs.{r}.rig (step 4)"])
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


if __name__ == "__main__":
    unittest.main()
