"""Test totals from every test.xml under a Bazel testlogs folder, printed as `N passed, N failed, N skipped`
(the line CI reads). Used by .ci/run on the host and by tools/cleanroom/cleanroom.sh in the room.

    python3 .ci/test_totals.py "$(bazel info bazel-testlogs)" [--add "N passed, N failed, N skipped" ...]

--add adds another suite's totals line (.ci/run: the clean room's, whose test logs go with the room).
"""

import pathlib
import re
import sys
import xml.etree.ElementTree as ET

passed = failed = skipped = 0
args = sys.argv[2:]
while args[:1] == ["--add"] and len(args) >= 2:
    m = re.fullmatch(r"(\d+) passed, (\d+) failed, (\d+) skipped", args[1].strip())
    if not m:
        sys.exit(f"test_totals: --add {args[1][:80]!r} is not a totals line")
    passed, failed, skipped = passed + int(m[1]), failed + int(m[2]), skipped + int(m[3])
    args = args[2:]
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
