"""Test totals from every test.xml under a Bazel testlogs folder, printed as `N passed, N failed, N skipped`
(the line CI reads). Used by .ci/run on the host and by tools/cleanroom/cleanroom.sh in the room.

    python3 .ci/test_totals.py "$(bazel info bazel-testlogs)"
"""

import pathlib
import sys
import xml.etree.ElementTree as ET

passed = failed = skipped = 0
for xml in pathlib.Path(sys.argv[1]).rglob("test.xml"):
    try:
        root = ET.parse(xml).getroot()
    except ET.ParseError:
        failed += 1
        continue
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
