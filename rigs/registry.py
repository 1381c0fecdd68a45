"""Who each rig is to the rest of tunelab: its `rigs/<rig>/rig.toml`, read here and nowhere else.

A rig declares there its site title and matrix target (`[rig]`), whether the nightly runs it and with which
profile (`[nightly]`), the profiles the gate's sensitivity figures describe and the A/A and slowdown sets
they come from (`[sensitivity]`), and the report kind a set varying one of its axes calls for (`[reports]`).
The site (tools/publish), the nightly (tools/nightly/nightly.sh, through `python3 -m rigs.registry
--nightly`) and the calibrator (tools/sensitivity/sensitivity.py) read these and keep no list of rigs of their own;
//:add_a_rig_test checks each file against rigs/BUILD.bazel and the rig's matrix.toml (add_a_rig_test.py
rig_layout_problems).

Standard library and results.safeio only: the nightly runs this module with the host's python3.
"""

import argparse
import dataclasses
import glob
import os
import sys

from results import safeio

# The tree holding rigs/<rig>/rig.toml: the runfiles of a target that depends on //rigs:registry, or the
# checkout when run from it (both have this file two levels down).
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Every key a rig.toml may have, with its type; anything else is refused (nothing silently ignored).
_KEYS = {
    "rig": {"title": str, "matrix": str},
    "nightly": {"profile": str, "budget_min": int},
    "sensitivity": {"gated": list, "aa": dict, "slowdown": dict, "nights": dict},
    "reports": {"axis_kinds": dict},
}
_REQUIRED = {"rig": ("title", "matrix"), "nightly": ("profile", "budget_min"), "sensitivity": ("gated", "aa")}
_SET_KEYS = {"aa": {"profile", "axis", "set"}, "slowdown": {"profile", "axis", "baseline", "slowed", "set"}}


class RegistryError(ValueError):
    """A rig.toml that does not say what the registry needs; the message names the file and the key."""


@dataclasses.dataclass(frozen=True)
class Registration:
    rig: str
    title: str
    matrix: str                   # the rig_matrix target's name in rigs/BUILD.bazel, e.g. "mr_compare_matrix"
    nightly_profile: str | None   # None: the nightly does not run this rig
    nightly_budget_min: int       # the most measuring minutes a night gives it (its gated profile's budget_s)
    gated: tuple                  # the profiles the sensitivity figures describe (the A/A cell is theirs)
    aa: dict                      # {profile, axis, set}; {} where the rig is not calibrated
    slowdown: dict                # {profile, axis, baseline, slowed, set}; {} where it has no known slowdown
    nights: dict                  # {gated profile: (set, ...)}: A/A-like nights of that design (analysis/sensitivity/nights.py)
    axis_kinds: dict              # {axis: report kind} for a set that varies that axis

    @property
    def label(self):
        return f"//rigs:{self.matrix}"


def _checked(path, doc):
    for table, value in doc.items():
        if table not in _KEYS or not isinstance(value, dict):
            raise RegistryError(f"{path}: [{table}] is not a table a rig.toml has (tables: {', '.join(_KEYS)})")
        for key, item in value.items():
            kind = _KEYS[table].get(key)
            if kind is None:
                raise RegistryError(f"{path}: [{table}] {key}: not a key of [{table}] "
                                    f"(keys: {', '.join(_KEYS[table])})")
            if not isinstance(item, kind) or isinstance(item, bool) or (kind is str and not item.strip()):
                raise RegistryError(f"{path}: [{table}] {key} = {item!r}: expected a non-empty {kind.__name__}")
            if kind is int and not 1 <= item <= 24 * 60:
                raise RegistryError(f"{path}: [{table}] {key} = {item!r}: expected minutes from 1 to {24 * 60}")
        for key in _REQUIRED.get(table, ()):
            if key not in value:
                raise RegistryError(f"{path}: [{table}] has no {key}")
    if "rig" not in doc:
        raise RegistryError(f"{path}: no [rig] table (title, matrix)")
    for name, keys in _SET_KEYS.items():
        given = doc.get("sensitivity", {}).get(name)
        if given is not None and set(given) != keys:
            raise RegistryError(f"{path}: [sensitivity] {name}: expected exactly {', '.join(sorted(keys))} "
                                f"(given: {', '.join(sorted(given))})")
    if not all(isinstance(p, str) for p in doc.get("sensitivity", {}).get("gated", [])):
        raise RegistryError(f"{path}: [sensitivity] gated: expected profile names")
    gated = doc.get("sensitivity", {}).get("gated", [])
    for profile, sets in doc.get("sensitivity", {}).get("nights", {}).items():
        if profile not in gated:
            raise RegistryError(f"{path}: [sensitivity] nights: {profile!r} is not a gated profile ({', '.join(gated)})")
        if not isinstance(sets, list) or not sets or not all(isinstance(x, str) and x.strip() for x in sets):
            raise RegistryError(f"{path}: [sensitivity] nights.{profile}: expected a list of committed set names")
    return doc


def read(path):
    """The Registration of one rig.toml (the rig is its folder's name); RegistryError if it is malformed."""
    rig = os.path.basename(os.path.dirname(path))
    try:
        doc = _checked(path, safeio.read_toml(path, max_bytes=64 << 10))
    except safeio.InputError as e:
        raise RegistryError(str(e)) from None
    nightly, sens = doc.get("nightly", {}), doc.get("sensitivity", {})
    return Registration(rig, doc["rig"]["title"], doc["rig"]["matrix"], nightly.get("profile"),
                        int(nightly.get("budget_min", 0)), tuple(sens.get("gated", ())),
                        dict(sens.get("aa", {})), dict(sens.get("slowdown", {})),
                        {p: tuple(sets) for p, sets in sens.get("nights", {}).items()},
                        dict(doc.get("reports", {}).get("axis_kinds", {})))


def load(root=ROOT):
    """{rig: Registration} of every rigs/<rig>/rig.toml under `root`, in the rigs' name order."""
    return {r.rig: r for r in (read(p) for p in sorted(glob.glob(os.path.join(root, "rigs", "*", "rig.toml"))))}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m rigs.registry", description=__doc__.split("\n\n")[0])
    parser.add_argument("--nightly", action="store_true",
                        help="print the nightly's rigs, one per line: MATRIX PROFILE BUDGET_S (its measuring budget) "
                             "(MATRIX without its _matrix suffix, as NIGHTLY_MATRICES names it)")
    parser.add_argument("--root", default=ROOT, help="the tree holding rigs/<rig>/rig.toml (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        registry = load(args.root)
    except RegistryError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for r in registry.values():
        if not args.nightly:
            print(f"{r.rig:<14} {r.label:<28} {r.title}")
        elif r.nightly_profile:
            print(r.matrix.removesuffix("_matrix"), r.nightly_profile, 60 * r.nightly_budget_min)
    return 0


if __name__ == "__main__":
    sys.exit(main())
