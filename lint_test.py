"""Lint as a test: `ruff check` (pinned in tools/python/requirements.lock, settings in ruff.toml) over this
checkout's Python files, `buildifier` (pinned in third_party/buildifier/go.sum) over its Starlark files, the
floors of .importlinter, mypy (pinned there too, settings in mypy.ini) over the rig contract and every rig,
and the house rules no linter knows. Fails with the findings, file and line."""

import ast
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_FUNCTION_LINES = 80
CITED_RUN = re.compile(r"(?<![\w-])(\d{8}T\d{6}Z-[0-9a-f]{4})(?![\w-])")
# A repository path named in prose or code: a top-level folder, then path characters (not a Bazel label:
# nothing of a label or a longer path may stand before it).
TOP_FOLDERS = ("workloads", "rigs", "analysis", "results", "tools", "third_party")
NAMED_PATH = re.compile(r"(?<![\w/.:@$<{-])((?:%s)/[A-Za-z0-9_./-]*[A-Za-z0-9_/])" % "|".join(TOP_FOLDERS))
# Package registries' host names, by the first 16 hex digits of their sha256 (so that this file names none): the
# Maven, PyPI, npm, crates, Go module proxy and Debian archives this network reaches. A tracked file names no
# registry; the clients find their own (tools/maven/server_url.py for Maven). Issue 81.
REGISTRY_HOST_SHA256 = {
    "43c04ed1dabe979b", "317d2d52829b7812", "095fbbaf0076d564", "a4aa2ac280bb8d1a", "c899567ee9068517",
    "d6d7019ca9fcbf07", "0dc11026ac75c015", "70bb4000cd2fab03", "789e46d79514e280", "eb7e11c7f9ecbcf4",
    "3d01f3609be82d98", "00a7dc5a0cc38858", "9da5f32d96412512", "e680c440a2e92079", "1ba4e37997a2e986",
    "c2b35955576ffa71", "2e97613f5a81eaa4",
}
HOST_NAME = re.compile(r"(?<![\w.-])((?:[a-z0-9-]+\.)+[a-z]{2,})(?![\w-])", re.I)
# A command-line flag that takes a path, a URL, a program or a folder to resume, by the words of its name.
PATH_FLAG = re.compile(r"(?:^--|-)(?:dir|file|folder|path|url|resume|root|inventory|out|runfiles|bundle|jar|builder|java|"
                       r"converter|html|json|data|revision|key|deb|db|jdk|workdir|sha256|good|bad)(?:-|$)")
# Paths named on purpose that must not exist.
PATHS_NAMED_ABSENT = {
    "tools/gate_calibration.py": "retired (replaced by tools/sensitivity/sensitivity.py); named by workloads/calibration/workload.toml and "
                                 "rigs/yarn_cps/matrix.toml, whose bytes are digests of stored sets",
    "tools/bazel": "Debian's /usr/bin/bazel would exec it instead of Bazel (README: Bazel notes)",
}

# buildifier's default warnings but those asking to load native rules from rules_cc/rules_java/rules_python:
# on Bazel 4.2.3 those rules and JavaInfo are built in, and third_party/rules_* are the offline wrappers
# around them (third_party/README.md). By hand: `buildifier --lint=warn --warnings=<these> -r .`
BUILDIFIER_WARNINGS = ",".join("-native-" + name for name in (
    "py", "java-info", "java-library", "cc-binary", "cc-import", "cc-library", "cc-test", "cc-proto",
    "cc-toolchain", "cc-toolchain-suite", "cc-fdo-prefetch-hints", "cc-fdo-profile", "cc-objc-import",
    "cc-objc-library"))


def registry_host(host):
    """Whether `host` is a package registry's (REGISTRY_HOST_SHA256)."""
    import hashlib
    return hashlib.sha256(host.lower().encode()).hexdigest()[:16] in REGISTRY_HOST_SHA256


def compiled_patterns(tree):
    """{name: pattern} of the module-level `NAME = re.compile("...")` of a parsed module."""
    compiled = {}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Attribute) and node.value.func.attr == "compile"
                and node.value.args and isinstance(node.value.args[0], ast.Constant)
                and isinstance(node.value.args[0].value, str)):
            compiled.update({t.id: node.value.args[0].value for t in node.targets if isinstance(t, ast.Name)})
    return compiled


def dotted(node):
    """"a.b.c" of a Name or an Attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id] + parts[::-1]) if isinstance(node, ast.Name) else None


def dollar_anchored_matches(path, text, elsewhere=None):
    """`re.match("...$", s)` and `X.match(s)` with X = re.compile("...$"), in one module or compiled in another
    (`elsewhere`: {"pkg.module.NAME": pattern}, reached as `module.NAME`, `from pkg.module import NAME` or an
    alias `X = module.NAME`): `$` also matches before a final newline, so such a check passes a name with a
    newline after it (issue 39); use fullmatch."""
    tree = ast.parse(text, path)
    compiled = compiled_patterns(tree)
    elsewhere = elsewhere or {}
    imported = {}  # local name -> "pkg.module" or "pkg.module.NAME"
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            imported.update({(a.asname or a.name): f"{node.module}.{a.name}" for a in node.names})
        elif isinstance(node, ast.Import):
            imported.update({(a.asname or a.name): a.name for a in node.names})

    def pattern_of(expr):
        name = dotted(expr)
        if name is None:
            return None
        if name in compiled:
            return compiled[name]
        head, _, rest = name.partition(".")
        full = imported.get(head, head) + (f".{rest}" if rest else "")
        return elsewhere.get(full)
    for node in ast.walk(tree):  # aliases: X = module.NAME
        if isinstance(node, ast.Assign) and pattern_of(node.value) is not None:
            compiled.update({t.id: pattern_of(node.value) for t in node.targets if isinstance(t, ast.Name)})
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "match"):
            continue
        owner, pattern = node.func.value, None
        if (isinstance(owner, ast.Name) and owner.id == "re" and node.args and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)):
            pattern = node.args[0].value
        else:
            pattern = pattern_of(owner)
        if pattern is not None and pattern.endswith("$") and not pattern.endswith("\\$"):
            found.append(f"{path}:{node.lineno}: match with a $-anchored pattern")
    return found


# Issue 58: one way to write a file and one way to read untrusted input (results/safeio.py). Modules that may
# do either themselves, and why; tests and test-only helpers write their fixtures as they like.
OWN_FILE_IO = {
    "results/safeio.py": "the one writer and the one reader",
    "tools/fleet/remote_run.py": "runs on a fleet host with its Python 3.8 and the standard library only: its own "
                                 "O_EXCL|O_NOFOLLOW writer, in a work root tools/fleet/work_root.py checked",
    "rigs/matrix/knobs/container.py": "3.8-clean, standard library only: remote_run imports it on fleet hosts; it reads "
                                "only podman's answers",
    # Bazel actions: they write only their declared outputs, in the output tree Bazel creates and owns.
    "tools/jdk/unpack_debian_jdk.py": "a Bazel action", "tools/guest/build_image.py": "a Bazel action",
    "tools/container/build_image.py": "a Bazel action", "tools/container/debtree.py": "a Bazel action",
    "tools/fleet/make_bundle.py": "a Bazel action", "tools/patches/apply_series.py": "a Bazel action",
}
# JSON text in a Java string literal: an object opened ({\"...) or a member named (\"name\":).
HAND_WRITTEN_JSON = re.compile(r'\{\\"|\\"\w+\\":')
TEST_SUPPORT = re.compile(r"(^|/)(test\w*|fake\w*|\w+_test)\.py$")
WRITE_CALLS = {("os", "replace"), ("os", "rename"), ("os", "renames"), ("shutil", "copy"), ("shutil", "copy2"),
               ("shutil", "copyfile"), ("shutil", "copytree"), ("shutil", "move"), ("tempfile", "mkstemp"),
               ("tempfile", "NamedTemporaryFile")}
WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"}
READ_CALLS = {("json", "load"), ("json", "loads"), ("tomllib", "load"), ("tomllib", "loads")}
SAFE_STREAMS = ("atomic_file", "open_log")


def _mode(call, position):
    """The mode argument of an open-like call: its text, None where absent, '?' where not a constant."""
    node = next((k.value for k in call.keywords if k.arg == "mode"), None)
    if node is None and len(call.args) > position:
        node = call.args[position]
    if node is None:
        return None
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else "?"


def file_io_outside_safeio(path, text):
    """Writes and untrusted reads in one module that do not go through results/safeio.py: open() or X.open()
    with a mode that writes, os.open with a write flag, os.replace/rename, shutil.copy*/move, tempfile.mkstemp,
    Path.write_text/bytes, savefig or tarfile.open to a path, and json.load(s)/tomllib.load(s). A stream the
    one writer opened (`with safeio.atomic_file(...) as f`) may be written by any library."""
    tree = ast.parse(text, path)
    safe_names = {item.optional_vars.id for node in ast.walk(tree) if isinstance(node, ast.With) for item in node.items
                  if isinstance(item.optional_vars, ast.Name) and isinstance(item.context_expr, ast.Call)
                  and isinstance(item.context_expr.func, ast.Attribute) and item.context_expr.func.attr in SAFE_STREAMS}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func, what = node.func, None
        owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else None
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        to_safe_stream = any(isinstance(a, ast.Name) and a.id in safe_names for a in node.args[:1]) or any(
            k.arg == "fileobj" and isinstance(k.value, ast.Name) and k.value.id in safe_names for k in node.keywords)
        if name == "open" and owner in (None, "io", "tarfile", "gzip", "bz2", "lzma") or (name == "open" and owner is None):
            mode = _mode(node, 1)
            if mode is not None and (mode == "?" or set(mode) & set("wax+")) and not to_safe_stream:
                what = f"{owner + '.' if owner else ''}open(..., {mode!r})"
        elif name == "open" and owner == "os":
            flags = {n.attr for n in ast.walk(node.args[1]) if isinstance(n, ast.Attribute)} if len(node.args) > 1 else set()
            if flags & WRITE_FLAGS:
                what = "os.open with " + "|".join(sorted(flags & WRITE_FLAGS))
        elif (owner, name) in WRITE_CALLS:
            what = f"{owner}.{name}"
        elif name in ("write_text", "write_bytes") and owner != "safeio":
            what = f".{name}"
        elif name == "savefig" and not to_safe_stream:
            what = "savefig to a path"
        elif (owner, name) in READ_CALLS or name == "raw_decode" or (owner, name) == ("json", "JSONDecoder"):
            what = f"{owner + '.' if owner else ''}{name}"
        if what:
            found.append(f"{path}:{node.lineno}: {what}")
    return found


# Issue 59: every JSON document tunelab stores under results/ (results, manifests, the fleet's state, and
# the documents kept beside them: sensitivity figures, fidelity reports, a bisect's record) is written by
# results/store.py. The other modules that write JSON with safeio.write_json, and why it is not a stored one.
JSON_WRITERS = {
    "results/store.py": "the store",
    "rigs/main.py": "--run-info, a file at the path the caller names (scripts read it instead of the console)",
    "rigs/mapreduce/rig.py": "the expected output of a job, in the cell's scratch folder",
    "tools/bisection/command.py": "--answer-file, a file at the path the caller names (the nightly reads it)",
    "tools/maven/bump_manifest.py": "a build output: a dependency bump's manifest, at the path the genrule names",
    "tools/publish/publish.py": "--entries-json, a file at the path the caller names (the browser test reads it)",
}


def json_writes_outside_the_store(path, text):
    """Calls of safeio.write_json (or a bare write_json) in one module."""
    return [f"{path}:{node.lineno}: write_json" for node in ast.walk(ast.parse(text, path))
            if isinstance(node, ast.Call) and (getattr(node.func, "attr", None) == "write_json"
                                               or getattr(node.func, "id", None) == "write_json")]


# The rig contract and the classes that satisfy its protocols; every rigs/<rig>/rig.py is added (type_checked_files).
TYPE_CHECKED = ("rigs/matrix/contract/rig.py", "rigs/matrix/contract/workload.py", "rigs/matrix/contract/iterations.py",
                "rigs/matrix/planning/spec.py", "rigs/matrix/planning/policy.py")


def type_checked_files(tree):
    """The files mypy checks in `tree`: the contract (TYPE_CHECKED) and every rig module."""
    rigs = sorted(os.path.relpath(p, tree) for p in glob.glob(os.path.join(tree, "rigs", "*", "rig.py"))
                  if os.path.basename(os.path.dirname(p)) not in ("matrix", "host"))
    return [f for f in TYPE_CHECKED if os.path.isfile(os.path.join(tree, f))] + rigs


def type_check(tree, cache_dir):
    """(exit status, report) of mypy over type_checked_files(tree), with tree's mypy.ini; module names come
    from paths under `tree` (mypy.ini: explicit_package_bases), so it runs from there."""
    from mypy import api
    cwd = os.getcwd()
    os.chdir(tree)
    try:
        out, err, code = api.run(["--config-file", "mypy.ini", "--cache-dir", cache_dir] + type_checked_files(tree))
    finally:
        os.chdir(cwd)
    return code, out + err


def runfile(*parts):
    for root in (os.environ.get("RUNFILES_DIR", ""), os.path.join(HERE, "..")):
        path = os.path.join(root, *parts)
        if root and os.path.exists(path):
            return path
    raise FileNotFoundError(os.path.join(*parts))


def checkout():
    """The checkout this test was built from: the runfile links back to its ruff.toml."""
    return os.path.dirname(os.path.realpath(runfile("tunelab", "ruff.toml")))


def source_modules():
    """(path, text) of every Python module of the checkout but tests and test support (TEST_SUPPORT)."""
    tree = checkout()
    for root, dirs, files in os.walk(tree):
        dirs[:] = [d for d in dirs if not d.startswith((".", "bazel-")) and d not in ("third_party", "nightly-out")]
        for name in files:
            rel = os.path.relpath(os.path.join(root, name), tree)
            if name.endswith(".py") and not TEST_SUPPORT.search(rel):
                with open(os.path.join(root, name)) as f:
                    yield rel, f.read()


class LintTest(unittest.TestCase):
    def test_the_runner_calls_rigs_through_the_contract(self):
        # rigs/matrix/contract/rig.py's Rig declares every member the runner calls: no discovery by attribute name.
        found = []
        for path in glob.glob(os.path.join(checkout(), "rigs", "matrix", "**", "*.py"), recursive=True):
            with open(path) as f:
                for number, line in enumerate(f, 1):
                    if re.search(r"\b(getattr|hasattr)\((self\.)?(ctx\.)?rig\b", line):
                        found.append(f"{os.path.relpath(path, checkout())}:{number}: {line.strip()}")
        self.assertEqual(found, [])

    def test_the_floors_hold(self):
        # .importlinter: tools > rigs > analysis > results, rigs.host, workloads; no arrow runs upward.
        from importlinter import cli
        tree = checkout()
        sys.path.insert(0, tree)  # the checkout's packages, every file of them, not this test's runfiles
        for name in [m for m in sys.modules if m.split(".")[0] in ("results", "analysis", "rigs", "tools")]:
            del sys.modules[name]
        try:
            code = cli.lint_imports(config_filename=os.path.join(tree, ".importlinter"))
        finally:
            sys.path.remove(tree)
        self.assertEqual(code, 0, "a contract of .importlinter is broken (its report is above)")

    def test_ruff_finds_nothing(self):
        ruff = runfile("pypi", "site", "bin", "ruff")
        tree = checkout()
        self.assertTrue(os.path.isdir(os.path.join(tree, ".git")) or os.path.exists(os.path.join(tree, "WORKSPACE")),
                        tree)
        proc = subprocess.run([ruff, "check", "--no-cache", "--config", os.path.join(tree, "ruff.toml"), tree],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tree)
        self.assertEqual(proc.returncode, 0, f"ruff check found problems (fix them, or say why in ruff.toml):\n"
                                             f"{proc.stdout}")
        print(proc.stdout.strip(), file=sys.stderr)

    def test_the_contract_and_the_rigs_type_check(self):
        tmp = os.environ.get("TEST_TMPDIR", "/tmp")
        code, report = type_check(checkout(), os.path.join(tmp, "mypy-cache"))
        self.assertEqual(code, 0, f"mypy (mypy.ini) over the rig contract and the rigs:\n{report}")

    def test_the_type_check_fails_on_a_rig_that_breaks_the_contract(self):
        # A sixth rig, the calibration rig's copy, in a scratch tree with the contract: as is it passes; with
        # a member unannotated, or launch returning what parse returns, or a Policy that lost a field the
        # rigs read, mypy fails.
        real = checkout()
        tree = os.path.join(os.environ.get("TEST_TMPDIR", "/tmp"), "typed-rig")
        with open(os.path.join(real, "rigs", "calibration", "rig.py")) as f:
            rig = f.read().replace('name = "calibration"', 'name = "sixth"')
        with open(os.path.join(real, "rigs", "matrix", "planning", "policy.py")) as f:
            policy = f.read()
        broken = {
            None: (rig, policy, None),
            "untyped": (re.sub(r"def parse\(self, [^)]*\) -> Parsed:", "def parse(self, outputs, policy, workdir, launch):",
                               rig), policy, "no-untyped-def"),
            "wrong return": (rig.replace("        return Parsed(warmup, measured)", "        return launch"), policy,
                             "return-value"),
            "policy": (rig, policy.replace("    measure_s: float", "    measure_seconds: float"), "measure_s"),
        }
        for case, (rig_text, policy_text, expected) in broken.items():
            shutil.rmtree(tree, ignore_errors=True)
            for rel in [f for f in TYPE_CHECKED if not f.endswith("spec.py")] + ["mypy.ini", "results/safeio.py"]:  # spec: the runner's
                os.makedirs(os.path.dirname(os.path.join(tree, rel)), exist_ok=True)
                shutil.copy(os.path.join(real, rel), os.path.join(tree, rel))
            os.makedirs(os.path.join(tree, "rigs", "sixth"))
            for parts, text in ((("rigs", "sixth", "rig.py"), rig_text), (("rigs", "matrix", "planning", "policy.py"), policy_text)):
                with open(os.path.join(tree, *parts), "w") as f:
                    f.write(text)
            code, report = type_check(tree, os.path.join(tree, ".mypy_cache"))
            if expected is None:
                self.assertEqual(code, 0, report)
            else:
                self.assertNotEqual(code, 0, (case, report))
                self.assertIn(expected, report, case)

    def test_long_functions_say_why(self):
        # A function over MAX_FUNCTION_LINES is split by job, or its docstring says why it is one ("Why one
        # function"): a module's length says nothing of its jobs, a long function often does.
        found = []
        for root, dirs, files in os.walk(checkout()):
            dirs[:] = [d for d in dirs if not d.startswith((".", "bazel-")) and d != "third_party"]
            for name in files:
                if not name.endswith(".py") or name.endswith("_test.py"):
                    continue
                path = os.path.join(root, name)
                with open(path) as f:
                    tree = ast.parse(f.read(), path)
                for node in ast.walk(tree):
                    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        lines = node.end_lineno - node.lineno + 1
                        if lines > MAX_FUNCTION_LINES and "Why one function" not in (ast.get_docstring(node) or ""):
                            found.append(f"{os.path.relpath(path, checkout())}:{node.lineno}: {node.name}, {lines} lines")
        self.assertEqual(found, [], "split these by job, or say in the docstring why each is one function")

    def test_files_are_written_and_untrusted_input_read_only_through_safeio(self):
        # Issue 58: the holes of a planted link, a FIFO or a 200 MiB file came back with each new writer or
        # reader; the class is closed by having one of each (results/safeio.py).
        found = [p for rel, text in source_modules() if rel not in OWN_FILE_IO for p in file_io_outside_safeio(rel, text)]
        self.assertEqual(found, [], "write with safeio.write_*/atomic_file/open_log/copy_file/move_into_place, "
                                    "read with safeio.read_json/read_toml/parse_json/parse_toml")
        for rel in OWN_FILE_IO:
            self.assertTrue(os.path.isfile(os.path.join(checkout(), rel)), f"{rel}: named in OWN_FILE_IO, gone")

    def test_stored_documents_are_written_by_the_store(self):
        found = [p for rel, text in source_modules() if rel not in JSON_WRITERS and rel != "results/safeio.py"
                 for p in json_writes_outside_the_store(rel, text)]
        self.assertEqual(found, [], "a JSON document kept under results/ is written by results/store.py "
                                    "(write_result, write_manifest, write_side_document); else name the module "
                                    "in JSON_WRITERS with why its file is not a stored one")
        for rel in JSON_WRITERS:
            self.assertTrue(os.path.isfile(os.path.join(checkout(), rel)), f"{rel}: named in JSON_WRITERS, gone")
        self.assertEqual(json_writes_outside_the_store("x.py", "from results import safeio\nsafeio.write_json(p, d)\n"
                                                       "write_json(p, d)\nsafeio.write_text(p, t)\n"),
                         ["x.py:2: write_json", "x.py:3: write_json"])

    def test_the_file_rule_finds_each_form(self):
        text = ('import json, os, shutil, tarfile\nfrom results import safeio\n'
                'open(p, "w")\nopen(p)\nopen(p, "rb")\nopen(p, mode="a")\nopen(p, m)\n'
                'os.replace(a, b)\nshutil.copy2(a, b)\nP.write_text("x")\nsafeio.write_text(p, "x")\n'
                'os.open(p, os.O_WRONLY | os.O_CREAT)\nos.open(p, os.O_RDONLY)\nfig.savefig(p)\n'
                'with safeio.atomic_file(p, binary=True) as f:\n    fig.savefig(f)\n'
                '    tarfile.open(fileobj=f, mode="w:gz")\ntarfile.open(p, "w:gz")\njson.loads(t)\nsafeio.parse_json(t)\n'
                'json.JSONDecoder().raw_decode(t, 0)\n')
        self.assertEqual([line.split(": ", 1)[0] for line in file_io_outside_safeio("m.py", text)],
                         ["m.py:3", "m.py:6", "m.py:7", "m.py:8", "m.py:9", "m.py:10", "m.py:12", "m.py:14",
                          "m.py:18", "m.py:19", "m.py:21", "m.py:21"])

    def test_no_check_matches_a_pattern_anchored_with_dollar(self):
        # Issue 39: re.match(r"^name$", "name\n") matches. Every module of ours uses fullmatch instead.
        sources = {}
        for root, dirs, files in os.walk(checkout()):
            dirs[:] = [d for d in dirs if not d.startswith((".", "bazel-")) and d not in ("third_party", "nightly-out")]
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(root, name)
                    with open(path) as f:
                        sources[os.path.relpath(path, checkout())] = f.read()
        # Patterns compiled in one module and used in another (issue 81: cli.py matched store.RUN_ID_RE).
        elsewhere = {f"{rel[:-3].replace('/', '.')}.{name}": pattern for rel, text in sources.items()
                     for name, pattern in compiled_patterns(ast.parse(text, rel)).items()}
        found = [hit for rel, text in sources.items() for hit in dollar_anchored_matches(rel, text, elsewhere)]
        self.assertEqual(found, [], "use fullmatch: `$` matches before a trailing newline")

    def test_the_dollar_rule_finds_both_forms(self):
        text = ('import re\nNAME = re.compile(r"^[a-z]+$")\nNAME.match(x)\nNAME.fullmatch(x)\n'
                're.match(r"^[0-9]+$", y)\nre.match(r"cost \\$", z)\n')
        self.assertEqual(dollar_anchored_matches("m.py", text), ["m.py:3: match with a $-anchored pattern",
                                                                 "m.py:5: match with a $-anchored pattern"])
        # Compiled in another module: reached through the module, an import of the name, or an alias.
        elsewhere = {"results.store.RUN_ID_RE": r"^[0-9]{8}$"}
        text = ("from results import store\nfrom results.store import RUN_ID_RE as R\nA = store.RUN_ID_RE\n"
                "store.RUN_ID_RE.match(x)\nR.match(x)\nA.match(x)\nA.fullmatch(x)\n")
        self.assertEqual(dollar_anchored_matches("c.py", text, elsewhere),
                         [f"c.py:{n}: match with a $-anchored pattern" for n in (4, 5, 6)])

    def test_every_run_cited_in_the_documentation_is_a_committed_set(self):
        # Every figure we publish can be rebuilt: a run id a tracked Markdown file cites is the run of a set
        # under results/baselines/ (its manifest's run_id). Not counted: notes in testdata/ folders, which
        # tell where the recorded fixture beside them came from (the fixture is the committed evidence), and
        # fleet ids (fleet-<time>-<hex>).
        tree = checkout()
        committed = set()
        for manifest in glob.glob(os.path.join(tree, "results", "baselines", "*", "manifest.json")):
            with open(manifest) as f:
                committed.add(json.load(f)["run_id"])
        missing = []
        for root, dirs, files in os.walk(tree):
            dirs[:] = [d for d in dirs if not d.startswith((".", "bazel-")) and d != "testdata"]
            for name in files:
                if name.endswith(".md"):
                    path = os.path.join(root, name)
                    with open(path) as f:
                        for number, line in enumerate(f, 1):
                            missing += [f"{os.path.relpath(path, tree)}:{number}: {run}"
                                        for run in CITED_RUN.findall(line) if run not in committed]
        self.assertEqual(missing, [], "cited runs that are not committed sets: promote them (bazel run "
                                      "//tools:promote -- RUN --name NAME) or cite the set that holds them")

    def test_every_repository_path_named_in_a_tracked_file_exists(self):
        # A pointer to a file that is not there misleads the reader who follows it (two error messages named a
        # README that never existed). Not counted: placeholders (NAME, <run>, {x}, *), what git ignores (fresh
        # runs, the nightly's outputs), build outputs (a BUILD.bazel beside them names their stem), a module's
        # attribute (analysis/drift.DRIFT_FLOOR), recorded fixtures (testdata/) and data files.
        tree = checkout()
        tracked = subprocess.run(["git", "-C", tree, "ls-files", "-z"], check=True,
                                 stdout=subprocess.PIPE, text=True).stdout.split("\0")
        named = {}
        for rel in tracked:
            if not rel or "testdata/" in rel or rel.endswith((".json", ".lock", ".csv", ".tsv", ".patch", ".bzl.lock")):
                continue
            try:
                with open(os.path.join(tree, rel)) as f:
                    lines = f.read().splitlines()
            except (UnicodeDecodeError, OSError):
                continue
            for number, line in enumerate(lines, 1):
                for m in NAMED_PATH.finditer(line):
                    path = m.group(1).rstrip("/.")
                    if m.end() < len(line) and line[m.end()] in "<{*$%[":
                        continue  # the path goes on with a placeholder
                    named.setdefault(path, f"{rel}:{number}")
        missing = []
        for path, where in sorted(named.items(), key=lambda item: item[1]):
            folder, _, name = path.rpartition("/")
            if (os.path.exists(os.path.join(tree, path)) or path in PATHS_NAMED_ABSENT
                    or any(part.isupper() for part in path.split("/"))
                    or "." in name and os.path.exists(os.path.join(tree, folder, name.split(".")[0] + ".py"))
                    or self.built_here(tree, folder, name)):
                continue
            missing.append((path, where))
        ignored = subprocess.run(["git", "-C", tree, "check-ignore", "--no-index", "--stdin"],
                                 input="\n".join(f"{p}\n{p}/" for p, _ in missing), stdout=subprocess.PIPE,
                                 text=True).stdout
        ignored = {p.rstrip("/") for p in ignored.split()}
        self.assertEqual([f"{where}: {path}" for path, where in missing if path not in ignored], [],
                         "named paths that do not exist: fix the pointer, or the file is missing")

    @staticmethod
    def built_here(tree, folder, name):
        """Whether folder's BUILD.bazel names the file's stem: a build output, e.g. tools/container/rig_os.tar."""
        try:
            with open(os.path.join(tree, folder, "BUILD.bazel")) as f:
                return f'"{name.split(".")[0]}"' in f.read()
        except OSError:
            return False

    def test_no_tracked_file_names_a_package_registry(self):
        tree = checkout()
        tracked = subprocess.run(["git", "-C", tree, "ls-files", "-z"], check=True, stdout=subprocess.PIPE,
                                 text=True).stdout.split("\0")
        found = []
        for rel in tracked:
            path = os.path.join(tree, rel)
            if not rel or not os.path.isfile(path) or os.path.getsize(path) > 8 << 20:
                continue
            with open(path, "rb") as f:
                text = f.read().decode("utf-8", "replace")
            for number, line in enumerate(text.splitlines(), 1):
                for host in HOST_NAME.findall(line):
                    if registry_host(host):
                        found.append(f"{rel}:{number}")
        self.assertEqual(found, [], "a package registry's address is written here: let its client find it "
                                    "(Maven: tools/maven/server_url.py)")

    def test_the_registry_rule_knows_a_host_by_its_hash(self):
        import hashlib
        import unittest.mock
        self.assertFalse(registry_host("example.invalid"))
        planted = hashlib.sha256(b"pkgs.example.invalid").hexdigest()[:16]
        with unittest.mock.patch.dict(globals(), REGISTRY_HOST_SHA256=REGISTRY_HOST_SHA256 | {planted}):
            self.assertTrue(registry_host("Pkgs.Example.INVALID"))
            self.assertEqual(HOST_NAME.findall("see https://pkgs.example.invalid/x/ now"),
                             ["pkgs.example.invalid"])

    def test_every_flag_taking_a_path_a_url_or_a_folder_is_named_in_security_md(self):
        # Issue 78: an input surface is written down with its reader and its test (SECURITY.md) before it ships.
        tree = checkout()
        with open(os.path.join(tree, "SECURITY.md")) as f:
            named = set(re.findall(r"`(--[a-z0-9-]+)[ `]", f.read()))
        tracked = subprocess.run(["git", "-C", tree, "ls-files", "-z", "*.py"], check=True, stdout=subprocess.PIPE,
                                 text=True).stdout.split("\0")
        missing = []
        for rel in tracked:
            if not rel or rel.endswith("_test.py"):
                continue
            with open(os.path.join(tree, rel)) as f:
                for number, line in enumerate(f, 1):
                    for flag in re.findall(r'add_argument\(\s*"(--[a-z0-9-]+)"', line):
                        if PATH_FLAG.search(flag) and flag not in named:
                            missing.append(f"{rel}:{number}: {flag}")
        self.assertEqual(missing, [], "flags that take a path, a URL or a folder to resume, not in SECURITY.md: "
                                      "name each there with its reader and the test that holds it")

    def test_the_path_flag_rule_finds_each_kind(self):
        for flag in ("--results-dir", "--out", "--resume", "--influx-url", "--plan-json", "--classes-jar", "--db"):
            self.assertRegex(flag, PATH_FLAG)
        for flag in ("--profile", "--timeout-s", "--rounds", "--metric"):
            self.assertNotRegex(flag, PATH_FLAG)

    def test_packages_are_private_by_default(self):
        # A package names who may use it (the floors of .importlinter), never everyone.
        found = []
        for root, dirs, files in os.walk(checkout()):
            dirs[:] = [d for d in dirs if not d.startswith((".", "bazel-"))]
            if "BUILD.bazel" in files:
                with open(os.path.join(root, "BUILD.bazel")) as f:
                    if re.search(r"default_visibility\s*=\s*\[\s*\"//visibility:public\"", f.read()):
                        found.append(os.path.relpath(os.path.join(root, "BUILD.bazel"), checkout()))
        self.assertEqual(found, [])

    def test_buildifier_finds_nothing(self):
        buildifier = runfile("buildifier", "buildifier")
        tree = checkout()
        proc = subprocess.run([buildifier, "--mode=check", "--lint=warn", "--warnings=" + BUILDIFIER_WARNINGS, "-r", "."],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tree)
        self.assertEqual(proc.returncode, 0, "buildifier wants changes (`buildifier -r .` formats; fix or disable a "
                                             f"warning with a `# buildifier: disable=<name>` comment and why):\n"
                                             f"{proc.stdout}")

    def test_java_is_formatted(self):
        # google-java-format over every .java file of rigs/, tools/ and workloads/ (the drivers, the rigs'
        # Java tests); third_party/java_tools is the offline toolchain shim, built before anything else.
        formatter = runfile("tunelab", "tools", "google_java_format")
        tree = checkout()
        files = sorted(os.path.relpath(p, tree) for top in ("rigs", "tools", "workloads")
                       for p in glob.glob(os.path.join(tree, top, "**", "*.java"), recursive=True))
        self.assertGreater(len(files), 15)
        proc = subprocess.run([formatter, "--dry-run", "--set-exit-if-changed", *files], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, cwd=tree, timeout=300)
        self.assertEqual(proc.returncode, 0, "google-java-format would change these files (`bazel run "
                                             "//tools:google_java_format -- --replace FILE...` formats them):\n"
                                             + proc.stdout)

    def test_every_driver_writes_json_through_the_kit(self):
        # ARCHITECTURE.md: every driver reports through the kit's JsonLine; a string literal holding a JSON
        # member ("name": ...) or opening an object ({"...) outside it is JSON written by hand.
        tree = checkout()
        by_hand = []
        for path in sorted(glob.glob(os.path.join(tree, "rigs", "**", "*.java"), recursive=True)):
            rel = os.path.relpath(path, tree)
            if rel == "rigs/matrix/java/JsonLine.java" or "/javatests/" in rel:
                continue  # the writer itself; tests compare against JSON text on purpose
            with open(path, encoding="utf-8") as f:
                by_hand += [f"{rel}:{n}: {line.strip()}" for n, line in enumerate(f, 1)
                            if HAND_WRITTEN_JSON.search(line)]
        self.assertEqual(by_hand, [], "JSON written by hand in a driver: use tunelab.rigs.matrix.JsonLine")

    def test_the_hand_written_json_rule_finds_each_form(self):
        for line in ['emit("{\\"event\\":\\"start\\"");', 'b.append(",\\"t\\":").append(t);']:
            self.assertRegex(line, HAND_WRITTEN_JSON)
        self.assertNotRegex('JsonLine.event("start").put("t", 1.0);', HAND_WRITTEN_JSON)


if __name__ == "__main__":
    unittest.main()
