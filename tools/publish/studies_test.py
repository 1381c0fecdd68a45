"""results/baselines/studies.toml as the site reads it (tools/publish/studies.py): the committed file is
valid, every wrong entry is a problem with its reason (the rest still published), a wrong file an error."""

import os
import unittest

from analysis import resultsets
from analysis.reports import story as story_lib
from tools.publish import studies

HERE = os.path.dirname(os.path.abspath(__file__))
BASELINES = os.path.join(HERE, "..", "..", "results", "baselines")
SETS = {"a-x86", "a-arm64", "b"}
GOOD = '''
[[study]]
id = "kunpeng-vs-x86"
title = "Kunpeng vs x86"
question = "How does arm64 compare with x86?"
case_study = "000"
sets = ["a-x86", "a-arm64"]
kind = "cross-host"
'''


def studies_sets():
    """The committed sets the committed studies name."""
    with open(os.path.join(BASELINES, studies.FILE_NAME), "rb") as f:
        names = {n for n in os.listdir(BASELINES) if os.path.isdir(os.path.join(BASELINES, n))}
        return sorted({n for d in studies.parse(f.read(), names)[0] for n in d.sets})


def entry(**changes):
    fields = {"id": '"s"', "title": '"T"', "question": '"Q?"', "case_study": '""', "sets": '["b"]'}
    fields.update(changes)
    return "[[study]]\n" + "".join(f"{k} = {v}\n" for k, v in fields.items() if v is not None)


class StudiesTest(unittest.TestCase):
    def test_the_committed_file_is_valid(self):
        names = {n for n in os.listdir(BASELINES) if os.path.isdir(os.path.join(BASELINES, n))}
        with open(os.path.join(BASELINES, studies.FILE_NAME)) as f:
            declared, problems = studies.parse(f.read(), names)
        self.assertEqual(problems, [])
        kunpeng = [d for d in declared if d.kind == "cross-host"]
        self.assertGreaterEqual(len(kunpeng), 2)  # YARN and calibration (issue 40)

    def test_a_good_entry(self):
        declared, problems = studies.parse(GOOD, SETS)
        self.assertEqual(problems, [])
        self.assertEqual(declared[0], studies.Declared("kunpeng-vs-x86", "Kunpeng vs x86", "How does arm64 compare "
                                                       "with x86?", "000", ("a-x86", "a-arm64"), "cross-host"))

    def test_each_wrong_entry_is_named_and_the_rest_kept(self):
        cases = [
            (entry(id='"Bad Id"'), "id must be"),
            (entry(title='"' + "x" * 101 + '"'), "title must be one line"),
            (entry(question=None), "question must be"),
            (entry(case_study='"7"'), "case_study must be three digits"),
            (entry(sets='["gone"]'), "no committed set 'gone'"),
            (entry(sets='["b", "b"]'), "the same set twice"),
            (entry(sets='[]'), "sets must list one or two"),
            (entry(sets='["a-x86", "a-arm64"]'), "two sets need the kind"),
            (entry(kind='"cross-host"'), "cross-host compares two sets"),
            (entry(kind='"fastest"'), "kind 'fastest' is not a report kind"),
            (entry(colour='"red"'), "unknown key.*colour"),
            (entry(parts='"yes"'), "parts must be true or false"),
            (entry(parts="true", kind='"mr1-vs-mr2"'), "parts = true takes two sets"),
            (entry(parts="true", sets='["a-x86", "b"]'), "parts = true takes two sets and a kind"),
            (entry(parts="true", sets='["a-x86", "b"]', kind='"cross-host"'), "parts = true takes"),
            (entry(answer='"rate"'), "answer must list at most 4 metric names"),
            (entry(answer='["a", "b", "c", "d", "e"]'), "answer must list at most 4"),
            (entry(mechanism='["not a name"]'), "mechanism must list"),
            (entry(caveats='["' + "x" * 301 + '"]'), "caveats must list at most 5 lines"),
            (entry(caveats='[1]'), "caveats must list"),
            (entry(figure='"pie"'), "figure must be one of change, scaling"),
            (entry(figure='"scaling"'), "figure = \"scaling\" takes size_axis"),
            (entry(size_axis='"apps"'), "figure = \"scaling\" takes size_axis"),
            (entry(figure='"scaling"', size_axis='"apps"', phases='["a b"]'), "phases must list"),
        ]
        for text, pattern in cases:
            with self.subTest(pattern):
                declared, problems = studies.parse(GOOD + text, SETS)
                self.assertEqual([d.id for d in declared], ["kunpeng-vs-x86"])
                self.assertEqual(len(problems), 1, problems)
                self.assertRegex(problems[0][1], pattern)
        declared, problems = studies.parse(GOOD + GOOD, SETS)
        self.assertRegex(problems[0][1], "a second study with this id")

    def test_two_sets_of_different_designs_in_parts(self):
        # MR1 vs MR2 in local mode and on a cluster: each set answers the kind's question within itself.
        declared, problems = studies.parse(GOOD + entry(parts="true", sets='["a-x86", "b"]', kind='"mr1-vs-mr2"'),
                                           SETS)
        self.assertEqual(problems, [])
        self.assertEqual((declared[1].sets, declared[1].kind, declared[1].parts), (("a-x86", "b"), "mr1-vs-mr2", True))
        self.assertFalse(declared[0].parts)

    def test_a_story(self):
        text = entry(answer='["set_instructions", "get_instructions"]', mechanism='["used_memory"]',
                     caveats='["Counted under Callgrind: work, not time."]')
        (declared,), problems = studies.parse(text, SETS)
        self.assertEqual(problems, [])
        self.assertEqual(declared.story, story_lib.Story(("set_instructions", "get_instructions"), ("used_memory",),
                                                      ("Counted under Callgrind: work, not time.",)))
        self.assertEqual(declared.report_args(), ["--answer=set_instructions", "--answer=get_instructions",
                                                  "--mechanism=used_memory",
                                                  "--caveat=Counted under Callgrind: work, not time."])
        self.assertEqual(declared.story.metric_order(["get_rate", "get_instructions", "set_instructions"]),
                         ["set_instructions", "get_instructions", "get_rate"])

    def test_a_scaling_story(self):
        text = entry(figure='"scaling"', size_axis='"apps"', phases='["store_load_time"]')
        (declared,), problems = studies.parse(text, SETS)
        self.assertEqual(problems, [])
        self.assertEqual(declared.report_args(), ["--figure=scaling", "--size-axis=apps", "--phase=store_load_time"])
        sets = {n: resultsets.load_run(os.path.join(BASELINES, n), name=n) for n in ("yarn_failover-full-20261127-2vcpu",
                                                                                  "namenode-smoke-2vcpu")}
        self.assertEqual(declared.unmeasured([sets["yarn_failover-full-20261127-2vcpu"]]), "")
        self.assertRegex(declared.unmeasured([sets["namenode-smoke-2vcpu"]]), "^store_load_time not measured")
        (declared,), _ = studies.parse(entry(figure='"scaling"', size_axis='"nodes"'), SETS)
        self.assertRegex(declared.unmeasured([sets["yarn_failover-full-20261127-2vcpu"]]),
                         r"^size_axis nodes is not an axis its sets compare \(apps, state_store\)")

    def test_a_story_s_metric_that_its_sets_do_not_measure_is_refused(self):
        sets = {n: resultsets.load_run(os.path.join(BASELINES, n), name=n) for n in studies_sets()}
        text = entry(sets='["redis-embstr-instructions-20261127-2vcpu"]', answer='["get_rate"]')
        (declared,), _ = studies.parse(text, set(sets))
        self.assertRegex(declared.unmeasured([sets["redis-embstr-instructions-20261127-2vcpu"]]),
                         r"^get_rate not measured by its sets \(they measure get_instructions_per_request, ")
        with open(os.path.join(BASELINES, studies.FILE_NAME), "rb") as f:
            committed = studies.parse(f.read(), set(sets))[0]
        for study in committed:
            self.assertEqual(study.unmeasured([sets[n] for n in study.sets]), "", study.id)

    def test_set_notes(self):
        good = '[[set_note]]\nset = "b"\ntext = "JVM start-up, not the engines."\n'
        self.assertEqual(studies.set_notes(GOOD + good, SETS), ({"b": "JVM start-up, not the engines."}, []))
        self.assertEqual(studies.parse(GOOD + good, SETS)[1], [])  # a file with notes is still a studies file
        for text, pattern in (('[[set_note]]\nset = "gone"\ntext = "t"\n', "no committed set 'gone'"),
                              ('[[set_note]]\nset = "b"\n', "needs exactly set and text"),
                              ('[[set_note]]\nset = "b"\ntext = "' + "x" * 401 + '"\n', "text must be one line"),
                              (good + good, "a second note for b")):
            with self.subTest(pattern):
                notes, problems = studies.set_notes(text, SETS)
                self.assertEqual(len(problems), 1, problems)
                self.assertRegex(problems[0][1], pattern)

    def test_the_committed_notes_are_valid(self):
        names = {n for n in os.listdir(BASELINES) if os.path.isdir(os.path.join(BASELINES, n))}
        with open(os.path.join(BASELINES, studies.FILE_NAME)) as f:
            notes, problems = studies.set_notes(f.read(), names)
        self.assertEqual(problems, [])
        self.assertIn("start-up", notes["mapreduce-mr1-vs-mr2-smoke-2vcpu"])

    def test_a_wrong_file_is_an_error(self):
        for text, pattern in (("[[study]\n", "studies.toml"), ("study = 3\n", "list of"),
                              ("[other]\nx = 1\n", "unknown table"),
                              # Issue 58, row 2: 50k levels deep was a RecursionError out of the site build.
                              ("x = " + "[" * 50_000 + "]" * 50_000 + "\n", "nested too deeply|deeper than"),
                              ("x = " + "9" * 5000 + "\n", "not valid TOML"), ("x" * (2 << 20), "byte limit")):
            with self.subTest(text), self.assertRaisesRegex(studies.StudiesError, pattern):
                studies.parse(text, SETS)


if __name__ == "__main__":
    unittest.main()
