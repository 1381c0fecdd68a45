"""Where a test run's time went (issue 80): every test's wall time from its test.xml, with its size and tags,
slowest first, and the sum per tier.

    bazel run //tools:test_times [-- TESTLOGS]        (default: this workspace's bazel-testlogs)
    python3 tools/test_times.py TESTLOGS [--bazel ./bazelw]   (.ci/run and the clean room: no build needed)

A test's tier is read from its tags: `quick` is what `--config=quick` runs (no `integration`, `e2e`, `fuzz`,
`exclusive`, `server`, `needs-*` tag), `integration` the rest of `bazel test //...`. Sizes and tags come from `bazel query`
(a "?" when it cannot answer). Beside a test whose wall time is outside its size's range as Bazel judges it (small
0-60 s, medium 30-300 s, large 300-900 s: its "size too big/small" warning), the size that fits: the smallest
whose timeout covers it.
Standard library only: it runs in the clean room before anything else is installed.
"""

import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

MAX_XML_BYTES = 64 << 20
SIZES = {"small": 60, "medium": 300, "large": 900, "enormous": 3600}  # Bazel's default timeouts, seconds
# The wall times Bazel finds in range for each size's timeout (its TestTimeout: short 0-60, moderate 30-300, long
# 300-900, eternal 900-): outside it, --test_verbose_timeout_warnings says the size is too big or too small.
IN_RANGE = {"small": (0, 60), "medium": (30, 300), "large": (300, 900), "enormous": (900, float("inf"))}
HEAVY_TAGS = ("integration", "e2e", "fuzz", "exclusive", "server", "needs-podman", "needs-dockerd", "needs-cleanroom")


def label_of(xml_path, testlogs):
    """//pkg:name of a test.xml under testlogs (pkg/name/test.xml, or .../shard_1_of_2/ or run_1_of_5/)."""
    parts = list(pathlib.Path(xml_path).relative_to(testlogs).parts[:-1])
    while parts and re.fullmatch(r"(shard|run)_\d+_of_\d+", parts[-1]):
        parts.pop()
    return f"//{'/'.join(parts[:-1])}:{parts[-1]}" if parts else "?"


def read_times(testlogs):
    """{label: (seconds, runs, failed)} summed over a test's shards and runs. A test run in shards or runs
    (run_K_of_N/, shard_K_of_N/) is read from those only: its folder's own test.xml is an earlier invocation's,
    which Bazel leaves in place (the flake hunt's table summed it with the hunt's runs)."""
    paths = [p for p in sorted(pathlib.Path(testlogs).rglob("test.xml"))
             if p.is_file() and p.stat().st_size <= MAX_XML_BYTES]  # runfiles: links to the files
    split = {label_of(p, testlogs) for p in paths if re.fullmatch(r"(shard|run)_\d+_of_\d+", p.parent.name)}
    times = {}
    for xml_path in paths:
        label = label_of(xml_path, testlogs)
        if label in split and not re.fullmatch(r"(shard|run)_\d+_of_\d+", xml_path.parent.name):
            continue
        seconds, runs, failed = times.get(label, (0.0, 0, 0))
        try:
            root = ET.fromstring(xml_path.read_bytes())
        except ET.ParseError:
            times[label] = (seconds, runs + 1, failed + 1)
            continue
        # Bazel's own test.xml: one testcase named for the target, its wall time in `time` (whole seconds);
        # a runner's own XML (JUnit): a testcase per case, their times summed.
        took = 0.0
        for case in root.iter("testcase"):
            try:
                took += float(case.get("time") or 0)
            except ValueError:
                pass
        bad = any(c.find("failure") is not None or c.find("error") is not None for c in root.iter("testcase"))
        times[label] = (seconds + took, runs + 1, failed + int(bad))
    return times


def query_attributes(bazel, workspace):
    """{label: (size, [tags])} of every test target, from `bazel query --output=xml`; {} if it cannot answer."""
    if not bazel:
        return {}
    try:
        out = subprocess.run([bazel, "query", "--output=xml", "tests(//...)"], cwd=workspace, capture_output=True,
                             timeout=600, check=False).stdout
        root = ET.fromstring(out[:MAX_XML_BYTES])
    except (OSError, subprocess.SubprocessError, ET.ParseError):
        return {}
    found = {}
    for rule in root.iter("rule"):
        size, tags = "medium", []
        for attr in rule:
            if attr.get("name") == "size":
                size = attr.get("value") or size
            elif attr.get("name") == "tags":
                tags = [s.get("value") for s in attr.iter("string")]
        found[rule.get("name")] = (size, tags)
    return found


def tier(tags):
    return "integration" if any(t in HEAVY_TAGS for t in tags) else "quick"


def fit(size, seconds):
    """Bazel's size rule for one test: '' when its wall time is in its size's range, else the size it fits."""
    if size not in SIZES:
        return ""
    low, high = IN_RANGE[size]
    if low <= seconds <= high:
        return ""
    fits = next((name for name, bound in SIZES.items() if seconds <= bound), "enormous")
    return f"{'too small' if SIZES[fits] > SIZES[size] else 'too big'}: {fits}"


def table(times, attributes, width=100):
    rows = sorted(times.items(), key=lambda kv: -kv[1][0])
    lines = [f"{'seconds':>8} {'runs':>4}  {'size':8} {'tier':11} test (tags)"]
    per_tier = {}
    for label, (seconds, runs, failed) in rows:
        size, tags = attributes.get(label, ("?", []))
        t = tier(tags) if label in attributes else "?"
        per_tier[t] = per_tier.get(t, 0.0) + seconds
        note = fit(size, seconds / max(runs, 1))
        text = f"{seconds:8.1f} {runs:>4}  {size:8} {t:11} {label}"
        shown = [t for t in tags if t and not t.startswith("__")]  # Bazel's own markers left out
        failures = f"FAILED {failed} of {runs} run{'s' if runs != 1 else ''}" if failed else ""
        extra = "; ".join(part for part in (", ".join(shown), note, failures) if part)
        if extra:
            text += f" ({extra})"
        lines.append(text[:width])
    total = sum(per_tier.values())
    lines.append("")
    lines.append(f"{len(rows)} tests, {total:.0f} s of test time in all (2 run at once but for exclusive ones)")
    lines.append("by tier: " + ", ".join(f"{name} {seconds:.0f} s" for name, seconds in sorted(per_tier.items())))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY", os.getcwd())
    parser.add_argument("testlogs", nargs="?", help="a bazel-testlogs folder (default: the workspace's)")
    parser.add_argument("--bazel", default=shutil.which("bazel") or "",
                        help="the Bazel to ask for sizes and tags (default: bazel on PATH; '' to skip)")
    args = parser.parse_args(argv)
    testlogs = args.testlogs or os.path.join(workspace, "bazel-testlogs")
    if not os.path.isdir(testlogs):
        parser.error(f"{testlogs}: no test logs folder (run some tests first, or give bazel info bazel-testlogs)")
    times = read_times(os.path.realpath(testlogs))
    if not times:
        print(f"no test.xml under {testlogs}")
        return 0
    print(table(times, query_attributes(args.bazel, workspace)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
