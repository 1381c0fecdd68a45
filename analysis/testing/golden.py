"""Golden files for every output format, JMH-style: a test compares its output with a checked-in file.

To regenerate after an intended change (and say why in the commit), run the test with
--test_env=TUNELAB_UPDATE_GOLDEN=$PWD --spawn_strategy=local: the file is rewritten in the workspace.
"""

import os
from results import safeio


def check(testcase, text, workspace_path):
    """Asserts `text` equals the golden file at `workspace_path` (relative to the workspace root), or
    rewrites that file when TUNELAB_UPDATE_GOLDEN names the workspace."""
    workspace = os.environ.get("TUNELAB_UPDATE_GOLDEN")
    if workspace:
        safeio.write_text(os.path.join(workspace, workspace_path), text)
        return
    runfiles = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    with open(os.path.join(runfiles, workspace_path)) as f:
        testcase.assertEqual(text, f.read())
