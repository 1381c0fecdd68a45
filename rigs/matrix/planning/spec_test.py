"""Matrix specification: expansion, stable ids, every validation error with its message."""

import os
import re
import tempfile
import unittest

from analysis import sequential
from results import resultfile, store
from rigs.matrix.planning import policy as policy_module
from rigs.matrix.contract import workload
from rigs.matrix.planning import schedule, spec

BASE = {"matrix": {"name": "t", "rig": "calibration", "seed": 1}, "axes": {"jdk": [17]}}


def build(extra=None, **kw):
    data = {k: (dict(v) if isinstance(v, dict) else v) for k, v in BASE.items()}
    for key, value in (extra or {}).items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return spec.from_dict(data, rig_params={"mode": "cpu"}, **kw)


class ExpansionTest(unittest.TestCase):
    def test_cross_product_with_defaults(self):
        m = build({"axes": {"gc": ["g1", "parallel"], "mode": ["cpu", "memory"]}})
        self.assertEqual(len(m.cells), 4)
        for cell in m.cells:
            self.assertEqual(cell.params["heap"], "512m")
            self.assertEqual(cell.params["variant"], "stock")
        # revision has no default: cells of matrices without the axis do not carry it (their ids stay).
        self.assertEqual(set(cell.params), set(spec.STANDARD_AXES) - {"revision"} | {"mode"})
        # The executor and profile_launch axes came later: their defaults stay out of the id, so stored cells keep
        # theirs.
        self.assertEqual((cell.params["executor"], cell.params["profile_launch"]), ("process", "extra"))
        self.assertEqual(cell.id, spec.cell_id({k: v for k, v in cell.params.items()
                                                if k not in ("executor", "profile_launch")}))
        self.assertNotEqual(spec.cell_id(dict(cell.params, executor="container")), cell.id)
        self.assertNotEqual(spec.cell_id(dict(cell.params, profile_launch="timed")), cell.id)

    def test_zip_pairs_instead_of_crossing(self):
        m = build({"axes": {"jdk": [11, 17], "gc": ["cms", "g1"]}, "zip": [{"axes": ["jdk", "gc"]}]})
        self.assertEqual(sorted((c.params["jdk"], c.params["gc"]) for c in m.cells), [("11", "cms"), ("17", "g1")])

    def test_set_on_one_zipped_axis_keeps_its_rows(self):
        zipped = {"axes": {"gc": ["g1", "parallel", "cms", "cms"], "gc_opts": ["default", "default", "a", "b"]},
                  "zip": [{"axes": ["gc", "gc_opts"]}], "gc_opts": {"a": {"flags": ["-Xmn1g"]}, "b": {"flags": ["-Xmn2g"]}}}
        m = build(zipped, overrides=["gc=g1"])
        self.assertEqual([(c.params["gc"], c.params["gc_opts"]) for c in m.cells], [("g1", "default")])
        m = build(zipped, overrides=["gc=cms", "jdk=11"])
        self.assertEqual(sorted(c.params["gc_opts"] for c in m.cells), ["a", "b"])
        # Every axis of the group set: the rows are replaced, paired in order.
        m = build(zipped, overrides=["gc=parallel,g1", "gc_opts=a,b"])
        self.assertEqual(sorted((c.params["gc"], c.params["gc_opts"]) for c in m.cells), [("g1", "b"), ("parallel", "a")])
        with self.assertRaisesRegex(spec.SpecError, r"--set gc=serial: no row of the \[\[zip\]\] group \(gc, gc_opts\)"):
            build(zipped, overrides=["gc=serial"])

    def test_exclude_and_include(self):
        m = build({"axes": {"jdk": [11, 17], "gc": ["cms", "g1"]},
                   "exclude": [{"gc": "cms", "jdk": [17]}],
                   "include": [{"numa": "interleave"}]})
        combos = sorted((c.params["jdk"], c.params["gc"], c.params["numa"]) for c in m.cells)
        # An include fills the axes it does not name with each axis' first value.
        self.assertEqual(combos, [("11", "cms", "default"), ("11", "cms", "interleave"), ("11", "g1", "default"),
                                  ("17", "g1", "default")])

    def test_a_named_memory_limit_has_a_size_per_value_of_its_axis(self):
        # Engines of different footprints squeezed alike, and still paired on memory_limit=squeezed.
        table = {"squeezed": {"by": "mode", "sizes": {"cpu": "850m", "memory": "1480m"}}}
        m = build({"axes": {"mode": ["cpu", "memory"], "memory_limit": ["none", "squeezed"]}, "memory_limit": table})
        limits = {(c.params["mode"], c.params["memory_limit"]): m.memory_limit_of(c) for c in m.cells}
        self.assertEqual(limits, {("cpu", "none"): "none", ("memory", "none"): "none",
                                  ("cpu", "squeezed"): "850m", ("memory", "squeezed"): "1480m"})
        self.assertIn(["memory_limit"], m.comparison_groups())
        cases = [
            ({"squeezed": {"by": "mode", "sizes": {"cpu": "850m"}}}, r"impossible cells:[\s\S]*memory_limit=squeezed "
             r"has no size for mode=memory"),
            ({"squeezed": {"by": "gc", "sizes": {"parallel": "1g"}}}, r"no size for gc=g1"),
            ({"squeezed": {"by": "nope", "sizes": {"x": "1g"}}}, r"by 'nope', which is not an axis"),
            ({"squeezed": {"by": "mode", "sizes": {"cpu": "lots"}}}, r"sizes.cpu: 'lots' is not a size"),
            ({"squeezed": {"by": "mode"}}, r"needs exactly `by`"),
            ({"none": {"by": "mode", "sizes": {"cpu": "1g"}}}, r"\[memory_limit.none\]: a name is"),
        ]
        for bad, pattern in cases:
            with self.subTest(pattern), self.assertRaisesRegex(spec.SpecError, pattern):
                build({"axes": {"mode": ["cpu", "memory"], "memory_limit": ["none", "squeezed"]}, "memory_limit": bad})
        # A limit that follows the cell: it starts at the room, the runner's CacheRoom keeps it there above
        # the cell's own memory.
        m = build({"axes": {"memory_limit": ["none", "room"]}, "memory_limit": {"room": {"cache_room": "96m"}}})
        squeezed = next(c for c in m.cells if c.params["memory_limit"] == "room")
        self.assertEqual((m.memory_limit_of(squeezed), m.cache_room_of(squeezed)), ("96m", "96m"))
        self.assertIsNone(m.cache_room_of(next(c for c in m.cells if c.params["memory_limit"] == "none")))
        with self.assertRaisesRegex(spec.SpecError, r"cache_room: 'lots' is not a size"):
            build({"axes": {"memory_limit": ["room"]}, "memory_limit": {"room": {"cache_room": "lots"}}})
        with self.assertRaisesRegex(spec.SpecError, r"'tight' is not none, a size such as 512m or 3g, or a "
                                                    r"\[memory_limit.NAME\] table's name \(squeezed\)"):
            build({"axes": {"memory_limit": ["tight"]}, "memory_limit": table})

    def test_profile_and_set_override(self):
        data = {"profiles": {"smoke": {"axes": {"gc": ["serial"]}, "policy": {"measure_s": 2, "repetitions": 1}}}}
        m = build(data, profile="smoke", overrides=["jdk=11,21"])
        self.assertEqual(sorted(c.params["jdk"] for c in m.cells), ["11", "21"])
        self.assertEqual({c.params["gc"] for c in m.cells}, {"serial"})
        self.assertEqual((m.policy.measure_s, m.policy.repetitions), (2.0, 1))

    def test_profile_lists_replace_the_top_level_ones(self):
        data = {"axes": {"jdk": [11, 17]}, "include": [{"numa": "interleave"}],
                "profiles": {"study": {"axes": {"gc": ["g1", "cms", "cms"], "gc_opts": ["default", "a", "b"]},
                                       "zip": [{"axes": ["gc", "gc_opts"]}],
                                       "exclude": [{"gc": "cms", "jdk": [17]}], "include": []}},
                "gc_opts": {"a": {"flags": ["-XX:CMSInitiatingOccupancyFraction=65"]},
                            "b": {"flags": ["-XX:CMSInitiatingOccupancyFraction=80"]}}}
        m = build(data, profile="study")
        combos = sorted((c.params["jdk"], c.params["gc"], c.params["gc_opts"], c.params["numa"]) for c in m.cells)
        # The profile's zip pairs gc with gc_opts (a zipped axis may repeat a value), its exclude drops CMS on
        # 17, and its empty include list replaces the top-level one.
        self.assertEqual(combos, [("11", "cms", "a", "default"), ("11", "cms", "b", "default"),
                                  ("11", "g1", "default", "default"), ("17", "g1", "default", "default")])
        self.assertEqual(len(build(data).cells), 3)  # without the profile: 2 JDKs + the include
        with self.assertRaisesRegex(spec.SpecError, "axis 'gc' lists a value twice"):
            build({"axes": {"gc": ["g1", "g1"]}})

    def test_policy_defaults_are_overridden_by_the_matrix(self):
        m = build({"policy": {"warmup_s": 5}}, policy_defaults={"warmup_s": 1, "measure_s": 7})
        self.assertEqual((m.policy.warmup_s, m.policy.measure_s), (5.0, 7.0))

    def test_cell_ids_are_stable_and_order_independent(self):
        a = spec.cell_id({"jdk": "17", "gc": "g1"})
        self.assertEqual(a, spec.cell_id({"gc": "g1", "jdk": "17"}))
        # Known answer (printf '{"gc":"g1","jdk":"17"}' | sha256sum): changing the hashing breaks resumes.
        self.assertEqual(a, "06fe3cd44a4d")
        self.assertNotEqual(a, spec.cell_id({"jdk": "17", "gc": "parallel"}))
        m1 = build({"axes": {"gc": ["g1", "parallel"]}})
        m2 = build({"axes": {"gc": ["parallel", "g1"]}})
        self.assertEqual(sorted(c.id for c in m1.cells), sorted(c.id for c in m2.cells))

    def test_known_answers_add_a_cell_that_runs_its_own_repetitions(self):
        m = build({"axes": {"gc": ["g1", "parallel"]}, "policy": {"repetitions": 3},
                   "known_answer": [{"cell": {"mode": "memory"}, "metric": "memory_copy_rate", "expect": 500,
                                     "tolerance": 0.02, "label": "check"}]})
        (known,) = m.known_answers
        check = next(c for c in m.cells if c.id == known.cell_id)
        self.assertEqual((check.params["mode"], check.params["gc"]), ("memory", "g1"))
        self.assertEqual((known.expect, known.tolerance, known.repetitions), (500.0, 0.02, 1))
        order = schedule.interleaved_order(m.cells, 3, 1, m.repetitions_of)
        self.assertEqual(sum(1 for c, _ in order if c.id == known.cell_id), 1)
        self.assertEqual(len(order), 2 * 3 + 1)
        with self.assertRaisesRegex(spec.SpecError, "needs `metric` and a numeric `expect`"):
            build({"known_answer": [{"cell": {}, "metric": "m"}]})

    def test_comparison_groups_are_the_declared_axes_and_zips(self):
        m = build({"axes": {"jdk": [11, 17], "gc": ["cms", "g1"], "mode": ["cpu"]}, "zip": [{"axes": ["jdk", "gc"]}],
                   "include": [{"mode": "memory", "heap": "1g"}]})
        # The include varies mode and heap, but neither is a declared comparison.
        self.assertEqual(m.comparison_groups(), [["jdk", "gc"]])
        self.assertEqual(build({"axes": {"gc": ["g1", "parallel"]}}).comparison_groups(), [["gc"]])
        stratified = build({"matrix": {"not_compared": ["mode"]}, "axes": {"gc": ["g1", "parallel"], "mode": ["cpu", "memory"]}})
        self.assertEqual(stratified.comparison_groups(), [["gc"]])

    def test_a_profile_asks_its_own_question(self):
        data = {"matrix": {"question": "G1 or Parallel?"},
                "profiles": {"smoke": {}, "nightly": {"question": "Did it regress?"}, "full": {}}}
        self.assertEqual(build(data).question, "G1 or Parallel?")
        self.assertEqual(build(data, profile="smoke").question, "G1 or Parallel?")
        self.assertEqual(build(data, profile="nightly").question, "Did it regress?")
        self.assertEqual(build(data, profile="full").question, "")

    def test_the_revision_axis_is_free_form_and_has_no_default(self):
        m = build({"axes": {"revision": ["accepted", "candidate"]}})
        self.assertEqual(sorted(c.params["revision"] for c in m.cells), ["accepted", "candidate"])

    def test_interleaved_order_is_seeded_rounds(self):
        cells = build({"axes": {"gc": ["g1", "parallel", "serial"]}}).cells
        order = schedule.interleaved_order(cells, 3, seed=7)
        self.assertEqual(order, schedule.interleaved_order(cells, 3, seed=7))
        self.assertNotEqual([c.id for c, _ in order], [c.id for c, _ in schedule.interleaved_order(cells, 3, seed=8)])
        self.assertEqual([r for _, r in order], [0, 0, 0, 1, 1, 1, 2, 2, 2])
        self.assertEqual(len({(c.id, r) for c, r in order}), 9)


class ValidationTest(unittest.TestCase):
    def assertSpecError(self, message, extra=None, **kw):
        with self.assertRaises(spec.SpecError) as ctx:
            build(extra, **kw)
        self.assertIn(message, str(ctx.exception))

    def test_a_sequential_policy_and_its_bad_input(self):
        m = build({"policy": {"repetitions": {"min": 3, "max": 12}, "stop": "decided"}})
        self.assertEqual((m.policy.sequential, m.policy.min_repetitions, m.policy.repetitions), (True, 3, 12))
        self.assertEqual(m.repetitions_of(m.cells[0]), 12)  # the schedule holds every round; the runner stops early
        fixed = build({"policy": {"repetitions": {"min": 3, "max": 12}, "stop": "decided"}},
                      overrides=["policy.repetitions=5"])
        self.assertEqual((fixed.policy.sequential, fixed.policy.repetitions), (False, 5))
        for policy, message in (
                ({"repetitions": {"min": 2, "max": 12}, "stop": "decided"}, "set min = 3 or more"),
                ({"repetitions": {"min": 6, "max": 4}, "stop": "decided"}, "max = 4 is below min = 6; set max = 6"),
                ({"repetitions": 5, "stop": "decided"}, "needs repetitions = { min = 3, max = 12 }"),
                ({"repetitions": {"min": 3, "max": 5}}, "needs stop = \"decided\""),
                ({"repetitions": {"min": 3}, "stop": "decided"}, "needs repetitions = { min = 3, max = 12 }"),
                ({"stop": "soon"}, "expected one of 'fixed', 'decided'"),
                ({"decide_on": ["rate"]}, "decide_on is for stop")):
            with self.assertRaisesRegex(spec.SpecError, re.escape(message)):
                build({"policy": policy})
        with self.assertRaisesRegex(spec.SpecError, "policy keys that --set takes"):
            build(overrides=["policy.stop=decided"])

    def test_iterations_and_their_bad_input(self):
        m = build({"policy": {"warmup_iterations": 3, "iterations": 8, "steady_band": 0.04}})
        self.assertEqual((m.policy.warmup_iterations, m.policy.iterations, m.policy.steady_band), (3, 8, 0.04))
        self.assertTrue(m.policy.iterating)
        self.assertEqual(m.policy.describe_iterations(), "3 + 8 iterations a launch (steady within 4%)")
        self.assertFalse(build().policy.iterating)
        self.assertEqual(build(overrides=["policy.iterations=6"]).policy.iterations, 6)
        for policy, message in (
                ({"iterations": 0}, "iterations = 0: at least 1"),
                ({"iterations": 4}, "give 1 or at least 5"),
                ({"iterations": -2}, "iterations = -2 is out of range"),
                ({"warmup_iterations": -1}, "warmup_iterations = -1 is out of range"),
                ({"iterations": 8, "steady_band": 1.5}, "steady_band = 1.5: a fraction in (0, 1)"),
                ({"iterations": 8, "steady_band": 0}, "steady_band = 0: a fraction in (0, 1)"),
                ({"warmup_s": 700, "timeout_s": 600}, "warmup_s = 700 is not shorter than timeout_s = 600"),
                # Issue 58, row 12: taken silently as 1 before.
                ({"iterations": 1.5}, "iterations = 1.5: expected a whole number"),
                ({"repetitions": True}, "repetitions = True: expected a whole number"),
                ({"measure_s": True}, "measure_s = True: expected a number")):
            with self.assertRaisesRegex(spec.SpecError, re.escape(message)):
                build({"policy": policy})

    def test_where_the_profiler_runs_is_an_axis(self):
        m = build({"policy": {"profile": ["cpu"]}}, overrides=["profile_launch=extra,timed"])
        self.assertEqual(sorted(c.params["profile_launch"] for c in m.cells), ["extra", "timed"])
        with self.assertRaisesRegex(spec.SpecError, "axis profile_launch: unknown value 'inside'; allowed: extra, timed"):
            build(overrides=["profile_launch=inside"])

    def test_profiles_and_their_bad_input(self):
        m = build({"policy": {"profile": ["alloc", "cpu"]}})
        self.assertEqual(m.policy.profile, ("cpu", "alloc"))  # in the declared order of events
        self.assertEqual(m.policy.describe_profile(), "+1 profiled launch a cell and round (cpu, alloc)")
        self.assertEqual(build().policy.profile, ())
        self.assertEqual(build(overrides=["policy.profile=wall,lock"]).policy.profile, ("wall", "lock"))
        self.assertEqual(build({"policy": {"profile": ["cpu"]}}, overrides=["policy.profile=none"]).policy.profile, ())
        for policy, message in (({"profile": ["cpu", "cache-misses"]}, "unknown profile event 'cache-misses'"),
                                ({"profile": "cpu"}, "profile must be a list of events"),
                                ({"profile": [1]}, "profile must be a list of events")):
            with self.subTest(policy=policy), self.assertRaisesRegex(spec.SpecError, re.escape(message)):
                build({"policy": policy})
        with self.assertRaisesRegex(spec.SpecError, "unknown profile event 'itimer'"):
            build(overrides=["policy.profile=cpu,itimer"])
        # One list of events: the policy's, the store's and the result schema's.
        self.assertEqual(policy_module.PROFILE_EVENTS, store.PROFILE_EVENTS)
        schema = resultfile.schema()["properties"]["policy"]["properties"]["profile"]["items"]["enum"]
        self.assertEqual(tuple(schema), store.PROFILE_EVENTS)

    def test_a_zip_group_of_the_wrong_shape_is_refused(self):
        # Issue 58, row 12: `zip = [{axes = 3}]` raised TypeError instead of a clear error.
        for group in ({"axes": 3}, {"axes": [{"a": 1}, "gc"]}, {"axes": "gc"}):
            with self.subTest(group=group):
                self.assertSpecError("[[zip]] needs `axes`, a list of at least two axis names", {"zip": [group]})
                self.assertSpecError("[[zip]] needs `axes`", {"zip": [group]}, overrides=["gc=g1"])

    def test_unknown_axis(self):
        self.assertSpecError("unknown axis 'gcc'", {"axes": {"gcc": ["g1"]}})

    def test_unknown_value(self):
        self.assertSpecError("axis gc: unknown value 'g2'", {"axes": {"gc": ["g2"]}})
        self.assertSpecError("axis numa: unknown value 'remote'", {"axes": {"numa": ["remote"]}})

    def test_cms_on_jdk_14_or_later(self):
        self.assertSpecError("CMS was removed in JDK 14", {"axes": {"jdk": [11, 17], "gc": ["cms"]}})

    def test_large_pages_without_hugepages(self):
        self.assertSpecError("asks for large pages with hugepages=off",
                             {"gc_opts": {"lp": {"flags": ["-XX:+UseLargePages"]}}, "axes": {"gc_opts": ["lp"]}})

    def test_pinned_thread_outside_process_binding(self):
        self.assertSpecError("outside the process's CPU binding",
                             {"pinning": {"p": {"cpus": "4-63", "threads": {"Scheduler": "1"}}}})

    def test_input_that_would_exhaust_the_host_or_crash_the_planner_is_a_spec_error(self):
        # Issue 39, finding 7: each of these was accepted (or raised something else) on 2026-11-25.
        for extra, message in (
                ({"policy": {"measure_s": float("nan")}}, "measure_s = nan is not a finite number"),
                ({"policy": {"timeout_s": float("inf")}}, "timeout_s = inf is not a finite number"),
                ({"policy": {"warmup_s": float("nan")}}, "warmup_s = nan is not a finite number"),
                ({"policy": {"repetitions": 10**9}}, "repetitions = 1000000000 is above its bound, 1,000"),
                ({"policy": {"iterations": 10**6}}, "iterations = 1000000 is above its bound, 1,000"),
                ({"policy": {"repetitions": {"min": 3, "max": 10**6}, "stop": "decided"}},
                 "repetitions.max = 1000000 is above its bound, 100"),
                ({"matrix": {"seed": "abc"}}, "seed = 'abc': a whole number"),
                ({"pinning": {"p": {"cpus": "0-999999999"}}}, "is not a range of CPUs 0..8191"),
                ({"axes": {"mode": [str(n) for n in range(200)], "revision": [f"r{n}" for n in range(100)]}},
                 "cross into 20,000 cells (before [[exclude]]), above the bound of 10,000")):
            with self.subTest(message):
                self.assertSpecError(message, extra)
        self.assertSpecError("repetitions = 1000000000 is above its bound", overrides=["policy.repetitions=1000000000"])
        # What a run may record, a reader replays: the same bound on both sides.
        self.assertEqual(policy_module.MAX_SEQUENTIAL_ROUNDS, sequential.MAX_ROUNDS)
        deep = os.path.join(tempfile.mkdtemp(), "deep.toml")
        with open(deep, "w") as f:
            f.write("a = " + "{b = " * 5000 + "1" + "}" * 5000 + "\n")
        with self.assertRaisesRegex(spec.SpecError, "nested too deep"):
            spec.load(deep)

    def test_roles_sharing_cpus(self):
        self.assertSpecError("share_cpus must be true or false",
                             {"pinning": {"p": {"roles": {"server": "1"}, "share_cpus": "yes"}}})
        pinning = spec._parse_pinning("m.toml", "p", {"roles": {"server": "1", "client": "0-1", "loader": "0"}})
        self.assertFalse(pinning.share_cpus)
        self.assertEqual(pinning.shared_cpus(("server",)), [("server", "client", [1])])
        self.assertEqual(pinning.shared_cpus(("loader",)), [("loader", "client", [0])])
        self.assertEqual(pinning.shared_cpus(()), [])
        self.assertEqual(pinning.shared_cpus(("absent",)), [])

    def test_bad_heap_and_cpu_list(self):
        self.assertSpecError("is not a JVM size", {"axes": {"heap": ["lots"]}})
        self.assertSpecError("bad CPU list", {"pinning": {"p": {"cpus": "one"}}})

    def test_set_override_errors(self):
        self.assertSpecError("unknown axis 'colour'", overrides=["colour=red"])
        self.assertSpecError("expected axis=value", overrides=["jdk"])

    def test_unknown_profile_and_tables(self):
        self.assertSpecError("no profile 'nightly'", profile="nightly")
        self.assertSpecError("unknown top-level tables", {"axis": {}})
        self.assertSpecError("[policy] has unknown keys", {"policy": {"warmups": 3}})

    def test_zip_errors(self):
        self.assertSpecError("equal lengths", {"axes": {"jdk": [11, 17], "gc": ["g1"]}, "zip": [{"axes": ["jdk", "gc"]}]})

    def test_everything_excluded(self):
        self.assertSpecError("no cells left", {"exclude": [{"jdk": 17}]})

    def test_malformed_toml_file(self):
        with tempfile.NamedTemporaryFile("w", suffix=".toml", dir=os.environ.get("TEST_TMPDIR"), delete=False) as f:
            f.write("[matrix\nname = ")
        with self.assertRaisesRegex(spec.SpecError, "not valid TOML"):
            spec.load(f.name)
        with self.assertRaisesRegex(spec.SpecError, "No such file"):
            spec.load(f.name + ".missing")

    def test_a_workload_the_matrix_is_not_for_is_refused(self):
        m = build({"matrix": {"workload": "workloads/calibration"}})
        calibration = workload.Workload("calibration/v1", "calibration", "x", {}, {}, {}, {}, "0" * 64)
        spec.check_workload(m, calibration, "/runfiles/tunelab/workloads/calibration")  # its own: fine
        with self.assertRaisesRegex(spec.SpecError, "is for workload workloads/calibration, not .*/redis"):
            spec.check_workload(m, calibration, "/runfiles/tunelab/workloads/redis")
        with self.assertRaisesRegex(spec.SpecError, "is for rig 'calibration', the workload redis/v1 for 'redis'"):
            spec.check_workload(m, workload.Workload("redis/v1", "redis", "x", {}, {}, {}, {}, "0" * 64),
                                "/w/calibration")


if __name__ == "__main__":
    unittest.main()
