"""Another revision's build (`--revision NAME=RUNFILES`, the nightly's accepted commit) runs its own rig data, as
its target's args file names them (rigs/defs.bzl puts it in the runfiles; an older build leaves it beside them),
never this build's paths looked up in its tree: on 2026-12-07 a planted NameNode regression pointed the
candidate's classpath at the slowed build and the accepted side ran its own copy of that slowed jar too."""

import os
import tempfile
import types
import unittest

from rigs.matrix.planning import cli, spec

TARGET = "//rigs:namenode_matrix"


def tree(parent, name, files, args=None, args_beside=False):
    """A runfiles tree <parent>/<name>/bazel-bin/rigs/namenode_matrix.runfiles with `files` (workspace-relative)
    and, if given, its args file in the tree or beside it. Returns the runfiles folder."""
    root = os.path.join(parent, name, "bazel-bin", "rigs", "namenode_matrix.runfiles")
    ws = os.path.join(root, "tunelab")
    for rel in files:
        os.makedirs(os.path.dirname(os.path.join(ws, rel)), exist_ok=True)
        open(os.path.join(ws, rel), "w").close()
    os.makedirs(os.path.join(ws, "rigs"), exist_ok=True)
    open(os.path.join(ws, "rigs", "matrix.toml"), "w").close()
    if args is not None:
        where = os.path.dirname(root) if args_beside else os.path.join(ws, "rigs")
        with open(os.path.join(where, "namenode_matrix.args"), "w") as f:
            f.write("\n".join(["--no-host-reference"] + args) + "\n")
    return root


class RevisionRigData(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        # This build (the candidate): its classpath is the slowed one.
        self.mine = tree(self.dir, "candidate", ["made/slowed.jar", "made/stock.jar"])
        self.mine_ws = os.path.join(self.mine, "tunelab")
        self.rig_data = {"classpath": os.path.join(self.mine_ws, "made", "slowed.jar")}
        self.matrix = types.SimpleNamespace(axes={"revision": ["accepted", "candidate"]})

    def load(self, accepted):
        return cli.load_revisions([f"accepted={accepted}"], self.matrix, self.rig_data, self.mine_ws,
                                  os.path.join(self.mine_ws, "rigs", "matrix.toml"), target=TARGET)["accepted"]

    def test_the_accepted_build_runs_its_own_rig_data(self):
        accepted = tree(self.dir, "accepted", ["made/slowed.jar", "made/stock.jar"],
                        ["--rig-data=classpath=made/stock.jar"])
        rev = self.load(accepted)
        self.assertEqual(rev.rig_data, {"classpath": os.path.join(accepted, "tunelab", "made", "stock.jar")})

    def test_an_older_build_s_args_beside_its_runfiles_are_read(self):
        accepted = tree(self.dir, "older", ["made/slowed.jar", "made/stock.jar"],
                        ["--rig-data=classpath=made/stock.jar"], args_beside=True)
        self.assertEqual(self.load(accepted).rig_data["classpath"],
                         os.path.join(accepted, "tunelab", "made", "stock.jar"))

    def test_without_an_args_file_this_build_s_paths_are_looked_up_there(self):
        accepted = tree(self.dir, "no-args", ["made/slowed.jar"])
        self.assertEqual(self.load(accepted).rig_data["classpath"],
                         os.path.join(accepted, "tunelab", "made", "slowed.jar"))

    def test_a_key_the_other_build_lacks_or_a_path_out_of_its_tree_is_refused(self):
        accepted = tree(self.dir, "other-rig", ["made/stock.jar"], ["--rig-data=jar=made/stock.jar"])
        with self.assertRaisesRegex(spec.SpecError, "its build names no rig data 'classpath' \\(it names jar\\)"):
            self.load(accepted)
        for line in ("--rig-data=classpath=../../../../../etc/passwd", "--rig-data=classpath=/etc/passwd",
                     "--rig-data=classpath"):
            outside = tree(self.dir, f"outside-{len(line)}", [], [line])
            with self.assertRaisesRegex(spec.SpecError, "not a rig data line of a runfiles tree"):
                self.load(outside)
        # An external repository's file (../<repo>/...) is inside the runfiles root: accepted.
        external = tree(self.dir, "external", [], ["--rig-data=classpath=../maven/x.jar"])
        os.makedirs(os.path.join(external, "maven"))
        open(os.path.join(external, "maven", "x.jar"), "w").close()
        self.assertEqual(self.load(external).rig_data["classpath"], os.path.join(external, "maven", "x.jar"))


if __name__ == "__main__":
    unittest.main()
