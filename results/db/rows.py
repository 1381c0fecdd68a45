"""A run's documents written as rows of the results database (results/db/schema.py), and what is held already.

Every row carries its document's sha256; an import of a document already held adds nothing; a run's rows are written
in one transaction (a kill in the middle leaves the database as it was; the next import completes it). A result is
never rewritten: a place (run, cell, repetition) held by another document is refused, naming the file. Opening the
database, its revision and its engines: results/db/store.py.
"""

import dataclasses
import datetime
import math
import time

import sqlalchemy as sa

from results.db import schema


class ImportRefused(ValueError):
    """A document that cannot be indexed (it contradicts what the database holds); the message names the file."""


@dataclasses.dataclass(frozen=True)
class Document:
    """A document as read from disk: its parsed content, the sha256 and size of its bytes, where it lies."""
    kind: str
    path: str  # relative to the results root
    sha256: str
    size_bytes: int
    content: dict


def _time(text):
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.timezone.utc)


def _now():
    return datetime.datetime.now(datetime.timezone.utc)


def _insert_documents(connection, documents):
    """Inserts the documents not held yet; returns how many were new."""
    shas = [d.sha256 for d in documents]
    held = set(connection.execute(sa.select(schema.documents.c.sha256)
                                  .where(schema.documents.c.sha256.in_(shas))).scalars())
    new = {d.sha256: d for d in documents if d.sha256 not in held}
    if new:
        now = _now()
        connection.execute(sa.insert(schema.documents), [
            {"sha256": d.sha256, "kind": d.kind, "path": d.path[:1024], "size_bytes": d.size_bytes,
             "imported_at": now} for d in new.values()])
    return len(new)


REREAD = "reread_documents"  # in database_info: a migration added tables that only reading documents again fills


def reread_pending(engine):
    """Whether the next import must read every folder again (a migration asked it), not skip those held."""
    with engine.connect() as connection:
        return connection.execute(sa.select(schema.database_info.c.value)
                                  .where(schema.database_info.c.key == REREAD)).first() is not None


def clear_reread(engine):
    with engine.begin() as connection:
        connection.execute(sa.delete(schema.database_info).where(schema.database_info.c.key == REREAD))


def holds(engine, shas, set_name=None):
    """Whether every document (by sha256) is held already, and the set (if named) holds them: an import of a folder
    that would add nothing can skip reading it."""
    shas = set(shas)
    with engine.connect() as connection:
        held = set(connection.execute(sa.select(schema.documents.c.sha256)
                                      .where(schema.documents.c.sha256.in_(sorted(shas)))).scalars())
        if held != shas:
            return False
        if set_name is None:
            return True
        in_set = set(connection.execute(sa.select(schema.set_documents.c.sha256)
                                        .where(schema.set_documents.c.set_name == set_name)).scalars())
        return in_set == shas


def _run_row(connection, manifest, results):
    """(the run's id, whether its manifest is new to it): inserted, or brought up to its newest manifest."""
    content = manifest.content
    matrix = content.get("matrix") or {}
    started = [t for t in (_time(r.content.get("started_at")) for r in results) if t]
    finished = [t for t in (_time(r.content.get("finished_at")) for r in results) if t]
    commits = [(r.content.get("provenance") or {}).get("harness_commit") for r in results]
    values = {
        "matrix": str(matrix.get("name", ""))[:128], "rig": str(matrix.get("rig", ""))[:64],
        "profile": str(matrix.get("profile", ""))[:64], "state": str(content.get("state", ""))[:32],
        "harness_commit": next((c for c in commits if isinstance(c, str)), None),
        "started_at": min(started) if started else None, "finished_at": max(finished) if finished else None,
        "manifest_sha256": manifest.sha256,
    }
    runs = schema.runs
    key = (str(content["host_id"]), str(content["run_id"]))
    row = connection.execute(sa.select(runs.c.id, runs.c.manifest_sha256, runs.c.started_at)
                             .where(runs.c.host_id == key[0], runs.c.run_id == key[1])).first()
    if row is None:
        return connection.execute(sa.insert(runs).values(host_id=key[0], run_id=key[1], **values)
                                  .returning(runs.c.id)).scalar_one(), True
    if row.manifest_sha256 != manifest.sha256:  # a resumed run's newer manifest, or the same run promoted
        connection.execute(sa.update(runs).where(runs.c.id == row.id).values(**values))
        return row.id, True
    return row.id, False


def _number(value):
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) \
        else None


def _gate_and_night_rows(connection, run, manifest, results, new_manifest, night_checks=None):
    """The run's gate checks and, for a night, its night row and its checks as the gate judges them: made again when
    the manifest is new to the run, when they are missing (a database migrated from before they were kept), or
    when `night_checks` (rows from analysis/indexer.py) are given."""
    sequential = manifest.content.get("sequential") or {}
    comparisons = [c for c in sequential.get("comparisons") or [] if isinstance(c, dict)]
    held = connection.execute(sa.select(sa.func.count()).select_from(schema.gate_checks)
                              .where(schema.gate_checks.c.run == run)).scalar_one()
    if not new_manifest and held == len(comparisons) and not night_checks:
        return
    for table in (schema.gate_checks, schema.nights, schema.night_checks):
        connection.execute(sa.delete(table).where(table.c.run == run))
    rows = []
    for c in comparisons:
        look = c.get("look") or {}
        rows.append({"run": run, "baseline_cell": str(c.get("baseline", ""))[:32],
                     "candidate_cell": str(c.get("candidate", ""))[:32], "metric": str(c.get("metric", ""))[:64],
                     "axis": str(c.get("axis", ""))[:64], "baseline_value": str(c.get("baseline_value", ""))[:256],
                     "candidate_value": str(c.get("value", ""))[:256], "asked_effect": _number(c.get("min_effect")),
                     "state": str(look.get("state", ""))[:16], "ratio": _number(look.get("ratio")),
                     "ci_low": _number(look.get("ci_low")), "ci_high": _number(look.get("ci_high")),
                     "pairs": look.get("pairs") if isinstance(look.get("pairs"), int) else None,
                     "rounds": look.get("rounds") if isinstance(look.get("rounds"), int) else None,
                     "reason": str(c.get("reason", ""))[:1000]})
    unique = {(r["baseline_cell"], r["candidate_cell"], r["metric"]): r for r in rows}
    if unique:
        connection.execute(sa.insert(schema.gate_checks), list(unique.values()))
    checks = {(c["cell"], c["metric"]): dict(c, run=run, manifest_sha256=manifest.sha256)
              for c in night_checks or []}
    if checks:
        connection.execute(sa.insert(schema.night_checks), list(checks.values()))
    accepted = ((manifest.content.get("revisions") or {}).get("accepted") or {}).get("commit")
    if not accepted and not checks:
        return
    candidate = next((((r.content.get("provenance") or {}).get("revision") or {}).get("commit") for r in results
                      if (r.content["cell"].get("params") or {}).get("revision") == "candidate"), None)
    gate_state = _gate_state(checks.values()) if checks else None
    states = {r["state"] for r in unique.values()}
    decided = ("REGRESSED" if "REGRESSED" in states else "INCONCLUSIVE" if states - {"PASS"} else "PASS") if states \
        else gate_state or "INCONCLUSIVE"
    started = [t for t in (_time(r.content.get("started_at")) for r in results) if t]
    connection.execute(sa.insert(schema.nights).values(
        run=run, night=min(started).date() if started else None,
        accepted_commit=str(accepted)[:40] if isinstance(accepted, str) else None,
        candidate_commit=str(candidate)[:40] if isinstance(candidate, str) else None, decided_state=decided,
        rounds=sequential.get("rounds") if isinstance(sequential.get("rounds"), int) else None,
        budget_s=_number(sequential.get("budget_s")), elapsed_s=_number(sequential.get("elapsed_s")),
        gate_state=gate_state))


def _gate_state(checks):
    """tools/gate's exit status as a word: REGRESSED over a deciding check's INCONCLUSIVE over PASS."""
    if any(c["state"] == "REGRESSED" for c in checks):
        return "REGRESSED"
    return "INCONCLUSIVE" if any(c["state"] == "INCONCLUSIVE" and not c["watched"] for c in checks) else "PASS"


def _cell_ids(connection, run, manifest, results):
    """{cell id: row id} of the run's cells (the manifest's plan, and any cell a result holds), inserted as needed."""
    planned = {}
    for cell in manifest.content.get("cells") or []:
        planned[str(cell["id"])] = (cell.get("params") or {}, cell.get("skip_reason"))
    for r in results:
        cell = r.content["cell"]
        planned.setdefault(str(cell["id"]), (cell.get("params") or {}, None))
    cells = schema.cells
    held = dict(connection.execute(sa.select(cells.c.cell_id, cells.c.id).where(cells.c.run == run)).all())
    for cell_id, (params, skip_reason) in sorted(planned.items()):
        if cell_id in held:
            continue
        held[cell_id] = connection.execute(sa.insert(cells).values(
            run=run, cell_id=cell_id[:32], skip_reason=skip_reason).returning(cells.c.id)).scalar_one()
        if params:
            connection.execute(sa.insert(schema.cell_params), [
                {"cell": held[cell_id], "name": str(k)[:64], "value": str(v)[:256]} for k, v in sorted(params.items())])
    return held


def _metric_rows(result_id, content):
    steady = ((content.get("steady_state") or {}).get("metrics") or {})
    rows = []
    for m in content.get("metrics") or []:
        value = m.get("value")
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        judged = steady.get(m["name"]) or {}
        rows.append({"result": result_id, "metric": str(m["name"])[:64], "value": float(value),
                     "unit": str(m.get("unit", ""))[:32], "direction": str(m.get("direction", ""))[:24],
                     "statistic": m.get("statistic"), "samples": m.get("n"),
                     "steady": judged.get("steady") if isinstance(judged.get("steady"), bool) else None})
    return rows


@dataclasses.dataclass
class Imported:
    """What one import added (0 everywhere: everything was held already)."""
    documents: int = 0
    runs: int = 0
    results: int = 0
    metric_values: int = 0
    sets: int = 0
    figures: int = 0  # sensitivity figures
    bisects: int = 0  # bisects whose rows were written (new, or a record that grew)

    def add(self, other):
        for field in dataclasses.fields(self):
            setattr(self, field.name, getattr(self, field.name) + getattr(other, field.name))


CONCURRENT_ATTEMPTS = 5  # PostgreSQL: another writer inserted the same rows first; the next attempt finds them


def import_run(engine, manifest, results, set_name=None, night_checks=None, movers=None, verdicts=None):
    """Indexes one run's documents (its manifest and cell results, read and checked by the caller) in one
    transaction; with set_name, as that promoted set. A result whose place (run, cell, repetition) holds another
    document already is refused (a result is never rewritten), naming the file; nothing of the run is written.
    Two writers of the same run at once (a nightly and a fleet; PostgreSQL, where they do not queue as SQLite's
    BEGIN IMMEDIATE makes them): the one that finds the other's rows first rolls back and tries again.
    night_checks: a night's checks as the gate judges them (dicts of schema.night_checks' columns less run and
    manifest_sha256), movers: a profiled run's movers (schema.profile_movers' columns less run), verdicts: its
    gate.json as (Document, entries); all written in the same transaction."""
    for attempt in range(CONCURRENT_ATTEMPTS):
        try:
            return _import_run(engine, manifest, results, set_name, night_checks, movers, verdicts)
        except sa.exc.IntegrityError:
            if attempt == CONCURRENT_ATTEMPTS - 1:
                raise
            time.sleep(0.05 * (attempt + 1))
    raise AssertionError("unreachable")


def _import_run(engine, manifest, results, set_name, night_checks, movers, verdicts):
    with engine.begin() as connection:
        added = Imported()
        added.documents = _insert_documents(connection, [manifest] + list(results))
        runs_before = connection.execute(sa.select(sa.func.count()).select_from(schema.runs)).scalar_one()
        run, new_manifest = _run_row(connection, manifest, results)
        added.runs = connection.execute(sa.select(sa.func.count()).select_from(schema.runs)).scalar_one() - runs_before
        cell_rows = _cell_ids(connection, run, manifest, results)
        t = schema.results
        held = {(row.cell, row.repetition): row.document_sha256 for row in connection.execute(
            sa.select(t.c.cell, t.c.repetition, t.c.document_sha256).where(t.c.cell.in_(list(cell_rows.values()))))}
        for r in results:
            if r.content.get("run_id") != manifest.content["run_id"]:
                raise ImportRefused(f"{r.path}: of run {str(r.content.get('run_id'))[:40]}, not of its manifest's run "
                                    f"{manifest.content['run_id']}: not imported")
            cell = cell_rows[str(r.content["cell"]["id"])]
            repetition = int(r.content["cell"]["repetition"])
            if (cell, repetition) in held:
                if held[cell, repetition] != r.sha256:
                    raise ImportRefused(f"{r.path}: run {manifest.content['run_id']}'s cell {r.content['cell']['id']} "
                                        f"repetition {repetition} is held already as another document "
                                        f"(sha256 {held[cell, repetition][:12]}, this one {r.sha256[:12]}): a result is "
                                        f"never rewritten; not imported")
                continue
            held[cell, repetition] = r.sha256
            result_id = connection.execute(sa.insert(t).values(
                cell=cell, repetition=repetition, status=str(r.content.get("status", ""))[:16],
                started_at=_time(r.content.get("started_at")), finished_at=_time(r.content.get("finished_at")),
                document_sha256=r.sha256).returning(t.c.id)).scalar_one()
            metric_rows = _metric_rows(result_id, r.content)
            if metric_rows:
                connection.execute(sa.insert(schema.metric_values), metric_rows)
            added.results += 1
            added.metric_values += len(metric_rows)
        if set_name:
            added.sets = _set_rows(connection, set_name, run, manifest, results)
        _gate_and_night_rows(connection, run, manifest, results, new_manifest, night_checks)
        if movers is not None:
            connection.execute(sa.delete(schema.profile_movers).where(schema.profile_movers.c.run == run))
            unique = {(m["baseline_cell"], m["candidate_cell"], m["event"], m["rank"]): dict(m, run=run)
                      for m in movers}
            if unique:
                connection.execute(sa.insert(schema.profile_movers), list(unique.values()))
        if verdicts is not None:
            _verdict_rows(connection, run, *verdicts)
    return added


def _verdict_rows(connection, run, document, entries):
    """The run's gate.json (a Document and its entries, read by results/gaterecord.py) as gate_verdicts rows,
    replacing those of the run's previous gate.json."""
    _insert_documents(connection, [document])
    connection.execute(sa.delete(schema.gate_verdicts).where(schema.gate_verdicts.c.run == run))
    rows = {}
    for n, e in enumerate(entries):
        for c in e["checks"]:
            rows[(n, c["cell"], c["metric"])] = {
                "run": run, "entry": n, "cell": c["cell"][:512], "metric": c["metric"][:64], "axis": e["axis"],
                "baseline_value": e["baseline_value"], "candidate_value": e["candidate_value"],
                "against": e["against"], "verdict": e["state"], "judged_at": _time(e["judged_at"]),
                "unit": c["unit"][:32], "direction": c["direction"], "state": c["state"], "watched": c["watched"],
                "worse_by": c["worse_by"], "worse_low": c["worse_low"], "worse_high": c["worse_high"],
                "asked_effect": c["asked"], "stated_d": c["stated_d"], "tonight_d": c["tonight_d"],
                "rounds": c["rounds"], "document_sha256": document.sha256}
    if rows:
        connection.execute(sa.insert(schema.gate_verdicts), list(rows.values()))


def _set_rows(connection, name, run, manifest, results):
    sets = schema.sets
    row = connection.execute(sa.select(sets.c.run, sets.c.manifest_sha256).where(sets.c.name == name)).first()
    new = 0
    if row is None:
        connection.execute(sa.insert(sets).values(name=name, run=run, manifest_sha256=manifest.sha256))
        new = 1
    elif row.run != run or row.manifest_sha256 != manifest.sha256:
        # The set replaced (promote --replace) or its manifest newer: the name now holds this run; the run it held
        # before keeps its rows (a stored result is never lost), only the name moves.
        connection.execute(sa.update(sets).where(sets.c.name == name).values(run=run, manifest_sha256=manifest.sha256))
        connection.execute(sa.delete(schema.set_documents).where(schema.set_documents.c.set_name == name))
    shas = {manifest.sha256} | {r.sha256 for r in results}
    held = set(connection.execute(sa.select(schema.set_documents.c.sha256)
                                  .where(schema.set_documents.c.set_name == name)).scalars())
    if shas - held:
        connection.execute(sa.insert(schema.set_documents),
                           [{"set_name": name, "sha256": s} for s in sorted(shas - held)])
    return new


def import_figures(engine, document, figures):
    """Indexes one sensitivity.json (a Document) as its figures (dicts of schema.sensitivity_figures' columns less
    document_sha256), in one transaction; a document held already adds nothing. Returns the figures added."""
    with engine.begin() as connection:
        held = connection.execute(sa.select(sa.func.count()).select_from(schema.sensitivity_figures)
                                  .where(schema.sensitivity_figures.c.document_sha256 == document.sha256)).scalar_one()
        _insert_documents(connection, [document])
        if held:
            return 0
        rows = {(f["rig"], f["metric"]): dict(f, document_sha256=document.sha256) for f in figures}
        if rows:
            connection.execute(sa.insert(schema.sensitivity_figures), list(rows.values()))
        return len(rows)


def import_bisect(engine, name, document, record):
    """Indexes one bisect record (a Document; record: its content, checked by the caller) as the bisect `name` and
    its steps, in one transaction. A record that grew (a resumed bisect) replaces the bisect's rows; the same one
    adds nothing. Returns 1 when rows were written, else 0."""
    b, steps = schema.bisects, schema.bisect_steps
    answer = record.get("answer") or {}
    values = {"document_sha256": document.sha256, "matrix": str(record["matrix"])[:128],
              "profile": str(record["profile"])[:128], "axis": record.get("axis"),
              "metrics": ",".join(str(m) for m in record.get("metrics") or [])[:10000], "good": str(record["good"]),
              "bad": str(record["bad"]), "commits": len(record.get("commits") or []),
              "started_at": _time(record.get("started")), "ended_at": _time(record.get("ended")),
              "machine_s": _number(record.get("machine_s")), "answer_state": answer.get("state"),
              "last_good": answer.get("last_good"), "first_bad": answer.get("first_bad")}
    with engine.begin() as connection:
        _insert_documents(connection, [document])
        row = connection.execute(sa.select(b.c.id, b.c.document_sha256).where(b.c.name == name)).first()
        if row is not None and row.document_sha256 == document.sha256:
            return 0
        if row is None:
            bisect = connection.execute(sa.insert(b).values(name=name, **values).returning(b.c.id)).scalar_one()
        else:
            bisect = row.id
            connection.execute(sa.update(b).where(b.c.id == bisect).values(**values))
            connection.execute(sa.delete(steps).where(steps.c.bisect == bisect))
        step_rows = [{"bisect": bisect, "step": n, "tested": str(s["commit"]), "commit_index": int(s["index"]),
                      "verdict": str(s["verdict"]), "toward_good": s.get("toward_good") or None,
                      "toward_bad": s.get("toward_bad") or None, "rounds": s.get("rounds"),
                      "why": s.get("why") or None}
                     for n, s in enumerate(record.get("steps") or [], start=1)]
        if step_rows:
            connection.execute(sa.insert(steps), step_rows)
        return 1
