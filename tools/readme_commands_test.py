"""Every command in the README's code blocks still does what it says it does, at least as far as a test can
afford (issue 41): the Bazel target exists; a matrix target's profile and --set overrides plan (the matrix
spec with its workload's parameters, as the runner reads them) and its flags are the runner's; every other
command's flags are in its program's --help, which the test runs (the programs are this test's data); the
doctor's commands run as written. The dry runs themselves are each rig's //rigs:<rig>_matrix_dry_run_test;
the long runs are the smoke tests'.

A README command for a program the test does not have in its data fails with the line to add to BUILD.bazel.
Values written as placeholders (RUN, SET, RUN_ID, <run-id>, X86_RUN) are not checked, only flags.
"""

import glob
import io
import json
import os
import re
import shlex
import subprocess
import sys
import unittest

from rich.console import Console

from analysis import resultsets, summary
from rigs.matrix.contract import workload
from rigs.matrix.planning import cli, spec

HERE = os.path.dirname(os.path.abspath(__file__))
RUNFILES = os.path.dirname(HERE)  # the workspace's root in the runfiles: the programs' launchers
# The checkout itself, through the runfiles' link to its README (as //:lint_test reads it): the BUILD files,
# matrices and workloads as they are, not only those declared as data.
ROOT = os.path.dirname(os.path.realpath(os.path.join(RUNFILES, "README.md")))
README = os.path.join(ROOT, "README.md")
# Every README with commands a user runs: the top one, the references moved beside their code (the matrices',
# reports' and gate's, the builds', the trust boundaries) and each rig's page (rigs/<rig>/README.md).
READMES = [README] + [os.path.join(ROOT, *p) for p in (("analysis", "README.md"), ("third_party", "README.md"),
                                                       ("SECURITY.md",))] + sorted(
    glob.glob(os.path.join(ROOT, "rigs", "*", "README.md")))

# The programs whose flags the README uses, as their launchers lie in this test's runfiles (BUILD.bazel data).
PROGRAMS = {
    "//tools:doctor": "rigs/host/doctor",
    "//workloads/yarn_cps:generate": "workloads/yarn_cps/generate",
    "//analysis:report": "analysis/reports/report",
    "//workloads/mapreduce:textgen": "workloads/mapreduce/textgen",
    "//rigs/namenode:fidelity_benchmark": "rigs/namenode/fidelity_benchmark",
    "//tools:bisect": "tools/bisection/bisect",
    "//tools:gate": "tools/gate/gate",
    "//analysis:history": "analysis/history/history",
    "//tools:sensitivity": "tools/sensitivity/sensitivity",
    "//tools:publish": "tools/publish/publish",
    "//tools:results": "tools/results/results",
    "//tools/guest:run_redis_guest": "tools/guest/run_redis_guest",
}


def commands(text, name="README.md"):
    """[("NAME:line", argv)] of the command lines in ```sh blocks, comments left out."""
    out, in_block = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            in_block = line.strip() == "```sh" if not in_block else False
            continue
        stripped = line.strip()
        if in_block and stripped and not stripped.startswith("#"):
            out.append((f"{name}:{number}", shlex.split(stripped, comments=True)))
    return out


def bazel_parts(argv):
    """(verb, target, program args) of a `./bazelw|bazel VERB TARGET [flags] [-- args]` line, else None."""
    if argv[0] not in ("./bazelw", "bazel") or len(argv) < 3:
        return None
    args = argv[argv.index("--") + 1:] if "--" in argv else []
    return argv[1], argv[2], args


def package_targets(package):
    """The target names a package's BUILD.bazel declares (`name = "..."`, macros' names included), or None
    when there is no such package."""
    path = os.path.join(ROOT, package, "BUILD.bazel")
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        return set(re.findall(r'^\s*name = "([^"]+)"', f.read(), re.M))


def flags_of(args):
    return sorted({a.split("=", 1)[0] for a in args if a.startswith("--")})


def rig_matrices():
    """{target name: (matrix file, workload folder)} of the rig_matrix calls in rigs/BUILD.bazel."""
    with open(os.path.join(ROOT, "rigs", "BUILD.bazel")) as f:
        text = f.read()
    out = {}
    for call in re.findall(r"rig_matrix\((.*?)\n\)", text, re.S):
        name = re.search(r'name = "([^"]+)"', call).group(1)
        matrix = re.search(r'matrix = "//([^:]+):([^"]+)"', call)
        work = re.search(r'workload = "//([^"]+)"', call).group(1)
        out[name] = (os.path.join(ROOT, matrix.group(1), matrix.group(2)), os.path.join(ROOT, work))
    return out


def option_value(args, flag):
    values = []
    for i, a in enumerate(args):
        if a == flag and i + 1 < len(args):
            values.append(args[i + 1])
        elif a.startswith(flag + "="):
            values.append(a.split("=", 1)[1])
    return values


class ReadmeCommandsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.commands = []
        for path in READMES:
            with open(path) as f:
                cls.commands += commands(f.read(), os.path.relpath(path, ROOT))
        cls.help = {}

    def help_of(self, target):
        if target not in self.help:
            launcher = os.path.join(RUNFILES, PROGRAMS[target])
            done = subprocess.run([sys.executable, launcher, "--help"], stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, timeout=120)
            self.assertEqual(done.returncode, 0, f"{target} --help: {done.stdout[-800:]}")
            self.help[target] = done.stdout
        return self.help[target]

    def test_the_readme_has_its_commands(self):
        self.assertGreaterEqual(len(self.commands), 40)  # the parser found the blocks

    def test_every_target_exists(self):
        for where, argv in self.commands:
            parts = bazel_parts(argv)
            if parts is None:
                with self.subTest(line=where):
                    self.assertTrue(os.access(os.path.join(ROOT, argv[0]), os.X_OK),
                                    f"{where}: {argv[0]} is not an executable file of the repository")
                continue
            verb, target, _ = parts
            with self.subTest(line=where, target=target):
                self.assertIn(verb, ("run", "test", "build"), f"{where}")
                m = re.fullmatch(r"//([\w/.-]*)(?::([\w.-]+)|/\.\.\.)?", target)
                self.assertIsNotNone(m, f"{where}: {target} is not a target pattern")
                if target.endswith("..."):
                    continue
                names = package_targets(m.group(1))
                self.assertIsNotNone(names, f"{where}: no package {m.group(1)}")
                if m.group(2) not in (None, "all"):
                    self.assertIn(m.group(2), names, f"{where}: {target} is not declared")

    def test_every_programs_help_answers(self):
        # Cheap and run: a program whose --help needs a build or a host first fails here (issue 41:
        # run_redis_guest built its ~150 MB guest image before printing its usage).
        for target in PROGRAMS:
            with self.subTest(target=target):
                self.assertIn("usage:", self.help_of(target))

    def test_the_doctor_runs_as_written(self):
        # The cheapest commands are run whole (issue 41): the doctor, and its --json read back as JSON.
        ran = 0
        for where, argv in self.commands:
            parts = bazel_parts(argv)
            if parts is None or parts[:2] != ("run", "//tools:doctor"):
                continue
            with self.subTest(line=where):
                done = subprocess.run([sys.executable, os.path.join(RUNFILES, PROGRAMS["//tools:doctor"]), *parts[2]],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
                self.assertEqual(done.returncode, 0, f"{where}: {done.stderr[-800:]}")
                if "--json" in parts[2]:
                    self.assertIn("capabilities", json.loads(done.stdout))
                else:
                    self.assertIn("tunelab doctor", done.stdout)
                ran += 1
        self.assertGreaterEqual(ran, 2)

    def test_every_flag_is_the_programs(self):
        matrices = rig_matrices()
        for where, argv in self.commands:
            parts = bazel_parts(argv)
            if parts is None or parts[0] != "run" or not flags_of(parts[2]):
                continue
            target, args = parts[1], parts[2]
            with self.subTest(line=where, target=target):
                name = target.split(":")[-1]
                if target.startswith("//rigs:") and name in matrices:
                    continue  # test_every_matrix_command_plans
                self.assertIn(target, PROGRAMS, f"{where}: add {target} to PROGRAMS and to this test's "
                                                "data in tools/BUILD.bazel")
                text = self.help_of(target)
                for flag in flags_of(args):
                    self.assertTrue(re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text),
                                    f"{where}: {target} has no {flag} (its --help)")

    def test_every_matrix_command_plans(self):
        # The runner's own parser and the matrix spec with the workload's parameters: what a run would read
        # before it starts anything.
        matrices = rig_matrices()
        checked = 0
        for where, argv in self.commands:
            parts = bazel_parts(argv)
            if parts is None or parts[0] != "run" or parts[1].split(":")[-1] not in matrices:
                continue
            matrix_file, workload_dir = matrices[parts[1].split(":")[-1]]
            args = parts[2]
            with self.subTest(line=where, command=" ".join(argv)):
                if "--help" in args:
                    continue  # the runner's --help: HelpTest in rigs/main_test.py
                parsed = cli.parse_args([f"--matrix={matrix_file}", f"--workload={workload_dir}", *args])
                if parsed.resume:
                    continue  # a stored run's own matrix
                work = workload.load_workload(workload_dir)
                try:
                    m = spec.load(matrix_file, profile=parsed.profile, overrides=parsed.set,
                                  rig_params=work.parameters, policy_defaults=work.policy)
                except spec.SpecError as e:
                    self.fail(f"{where}: {e}")
                self.assertGreater(len(m.cells), 0)
                checked += 1
        self.assertGreaterEqual(checked, 15)


# Figures the README quotes from committed sets: the README's words, and what the summary of that set must
# print for them to be true (issue 41: figures that went stale). A figure the README quotes and the set no
# longer gives fails here; so does a README that no longer says it (then update or drop the entry).
FIGURES = [
    ("mapreduce-mr1-vs-mr2-smoke-2vcpu", "job_duration 3.07 vs 2.64 s, +19.8 % (98 % CI +9.8..+30.7 %)",
     ["2.64", "3.07", "+19.8%", "+9.8..+30.7%"]),
    ("redis-quiet-slowdown-20261127-2vcpu", "read -5.3 % (98 % CI -16.8..+7.6 %)", ["-5.3%", "-16.8..+7.6%"]),
    # One estimator since issue 82: the tables show the stopping rule's paired change and its interval.
    ("yarn_cps-nightly-sequential-20261124-2vcpu",
     "−1.8 % (98 % CI −18.8..+18.8 %), the stopping rule's paired change", ["-1.8%", "-18.8..+18.8%", "paired change"]),
    ("redis-embstr-instructions-20261127-2vcpu", "GET -0.5 % (98 % CI -1.8..+0.8 %)", ["-0.5%", "-1.8..+0.8%"]),
    ("calibration-container-overhead-2vcpu", "CPU loop +0.0 % (98 % CI −1.3..+1.4 %, within ±3 %)",
     ["+0.0%", "-1.3..+1.4%", "within ±3%"]),
    ("namenode-gate-slowdown-fixed-20261126-2vcpu", "read -7.0 % (98 % CI -8.9..-5.1 %), worse",
     ["36,748", "33,585", "-7.0%", "-8.9..-5.1%", "worse"]),
]


class ReadmeFiguresTest(unittest.TestCase):
    def test_quoted_figures_are_what_their_sets_give(self):
        readme = ""
        for path in READMES:
            with open(path) as f:
                readme += f.read() + " "
        with open(os.path.join(ROOT, "results", "baselines", "README.md")) as f:
            readmes = " ".join((readme + f.read()).split())  # words compared across the README's line breaks
        for name, words, printed in FIGURES:
            with self.subTest(set=name):
                self.assertTrue(words in readmes, f"the README no longer says {words!r} of {name}")
                result_set = resultsets.resolve(f"baselines/{name}", os.path.join(ROOT, "results"))
                out = io.StringIO()
                summary.render(Console(file=out, width=200, highlight=False, soft_wrap=True), result_set)
                for figure in printed:
                    self.assertTrue(figure in out.getvalue(), f"{name}: the README's {figure} is not what the set gives")


if __name__ == "__main__":
    unittest.main()
