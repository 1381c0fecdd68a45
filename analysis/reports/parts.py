"""A report in parts (`bazel run //analysis:report -- SET SET --kind mr1-vs-mr2 --parts`): sets of different designs,
each compared within itself on the kind's axis, under one title page that gives every part's answer and lifts
each part's mechanism onto it (analysis/reports/report.py builds each part)."""

import dataclasses
import datetime
import os

from analysis import oneline, resultsets
from analysis.reports import render
from analysis.reports import report
from analysis.reports import story as story_lib
from analysis.reports.kinds import KINDS, ReportError


def build_parts(kind_name, sets, out_dir, metrics=None, axis=None, command=None, generated_at=None, question=None,
                story=story_lib.Story(), appendix=True):
    """Sets of different designs that each answer the kind's question within themselves (MR1 vs MR2 in local
    mode and on a cluster): one part per set, each its own run's comparison on the kind's axis, under one
    title page that gives every part's answer. The sets are never compared with each other: their cells
    measure different things. Published figures once, after the parts."""
    kind = KINDS[kind_name]
    references = [s for s in sets if s.published]
    measured = [s for s in sets if not s.published]
    if len(measured) < 2:
        raise ReportError("a report in parts takes two or more measured sets (one: the ordinary report)")
    parts = []
    for index, s in enumerate(measured, 1):
        folder = os.path.join(out_dir, f"part{index}")
        os.makedirs(folder, exist_ok=True)
        chosen = [m for m in metrics or [] if m in s.metrics()] or None
        blocks = report.build(kind_name, [s] + references, folder, chosen, axis, generated_at=generated_at,
                       story=dataclasses.replace(story, caveats=()), appendix=appendix)
        parts.append((s, blocks))
    hosts = sorted({h for s in measured for h in s.host_ids()})
    names = [s.name for s in measured]
    question = question or kind.question.format(metric=", ".join(dict.fromkeys(next(iter(s.metrics())) for s in measured)),
                                                a=kind.baseline or "", b="")
    labels = [f"part {i} ({s.name}, {(s.manifest.get('matrix') or {}).get('name', '?')})"
              for i, (s, _) in enumerate(parts, 1)]
    out = [render.Title(f"{kind.title}: {question}",
                        f"{' + '.join(names)} | host(s) {', '.join(hosts)} | rig {measured[0].docs[0]['matrix']['rig']} "
                        f"| generated {generated_at or datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
                        banner=next((b[0].banner for _, b in parts if b[0].banner), "")),
           render.Para("Answer: " + " ".join(f"In {label}: {para_text(b, 'Answer: ')}" for label, (_, b)
                                             in zip(labels, parts)), strong=True),
           render.Para("In one line: " + parts_line(kind, [(s, para_text(b, "In one line: ")) for s, b in parts])),
           render.Para(f"This report has {len(parts)} parts, one per set: each set is one run whose cells were "
                       "measured interleaved and is compared within itself. The sets are of different designs "
                       "(their matrices and workloads differ), so no cell of one is compared with a cell of another.")]
    # Each part's mechanism (its counts' figure, its table) is the study's finding: on the title page, not in the part.
    moved = {id(b): b for _, blocks in parts for b in blocks
             if (isinstance(b, render.Figure) and b.caption.startswith("Mechanism: "))
             or (isinstance(b, render.TableBlock) and b.caption == story_lib.MECHANISM_CAPTION)}
    titled = [(label, b) for label, (_, blocks) in zip(labels, parts) for b in blocks if id(b) in moved]
    out[3:3] = ([render.Figure(b.path, f"{b.caption.removesuffix('.')} ({label}).") for label, b in titled
                 if isinstance(b, render.Figure)]
                + [render.TableBlock(b.columns, b.rows, caption=f"{b.caption} ({label})") for label, b in titled
                   if isinstance(b, render.TableBlock)]
                + story_lib.story_blocks(dataclasses.replace(story, mechanism=()), [], {}, None, None))
    for label, (s, blocks) in zip(labels, parts):
        out.append(render.Break())
        out.append(render.Heading(f"{label[0].upper()}{label[1:]}: {blocks[0].text.split(': ', 1)[-1]}"))
        for b in blocks[1:]:
            if isinstance(b, render.Heading) and b.text.startswith(f"Published figures ({resultsets.PUBLISHED_LABEL})"):
                break  # said once, after the parts
            if (isinstance(b, render.Para) and b.text == report.HOW_TO_READ) or id(b) in moved or isinstance(b, render.Break):
                continue  # said once, on the title page or after the parts; a part's own title page ends nowhere
            out.append(render.Heading(b.text, 2) if isinstance(b, render.Heading) else b)
    out.append(render.Para(report.HOW_TO_READ))
    published = report.published_for(references, kind_name, measured[0].docs[0]["matrix"]["rig"])
    if published:
        out += [render.Break(), render.Heading(f"Published figures ({resultsets.PUBLISHED_LABEL})"),
                report.published_table(published)]
    out += [render.Heading("This report"), render.Code(command or "")]
    return out


def parts_line(kind, lines):
    """The parts' one lines in one index row: each after its matrix' name, the kind's pair said once
    ("mr2 vs mr1: mr_compare undecided -0.0% (...); mr_cluster +73.3% (...), worse")."""
    pair = f"{kind.axis}={kind.set_labels[1]} vs {kind.set_labels[0]}" if kind.set_labels else ""
    said = []
    for s, line in lines:
        name = (s.manifest.get("matrix") or {}).get("name", s.name)
        if pair and pair in line:  # "undecided: mapreduce=mr2 vs mr1 -0.0% (...)" -> "undecided -0.0% (...)"
            line = line.replace(pair, "")
            line = " ".join((line.replace(":", "", 1) if line.startswith("undecided:") else line).split())
        said.append(f"{name} {line}")
    head = f"{kind.set_labels[1]} vs {kind.set_labels[0]}: " if pair and all(pair in line for _, line in lines) else ""
    text = head + "; ".join(said)
    return text if len(text) <= oneline.MAX_CHARS else text[:oneline.MAX_CHARS - 1] + "…"


def para_text(blocks, label):
    para = next((b for b in blocks if isinstance(b, render.Para) and b.text.startswith(label)), None)
    return para.text[len(label):] if para else ""
