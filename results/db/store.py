"""The results database: where it is, opening it safely, its schema revision, and a run's documents written as rows.

One schema (results/db/schema.py), two engines: an embedded SQLite file by default, made on first use in the
git-ignored results area (results/.db/tunelab.sqlite: WAL, a busy timeout, writers one at a time), or a team's
PostgreSQL (`--db postgresql://...` or TUNELAB_DB; psycopg 3). The documents stay the source of truth: each
row carries its document's sha256, an import of a document already held adds nothing, and a run's rows are
written in one transaction (a kill in the middle leaves the database as it was; the next import completes it).

A database that is corrupt, not tunelab's, or at another schema revision is refused with what to do
(`bazel run //tools:results -- migrate`, or `import --rebuild`), never rewritten silently. SQL only with bound
parameters; table and column names come from schema.py, never from input. A URL's password is never printed
(`redacted`).
"""

import dataclasses
import datetime
import math
import os
import time
import urllib.parse

import alembic.command
import alembic.config
import alembic.script
import sqlalchemy as sa
from alembic.runtime import migration

from results.db import schema

DEFAULT_FILE = os.path.join(".db", "tunelab.sqlite")  # under the results root: git-ignored like fresh runs
ENV_VAR = "TUNELAB_DB"
MIGRATIONS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "migrations")
SQLITE_HEADER = b"SQLite format 3\x00"
BUSY_TIMEOUT_S = 60  # another writer (a nightly, the fleet) holds the lock at most one run's import


class DatabaseError(Exception):
    """The database cannot be used as it is; the message says which and what to do."""


class ImportRefused(ValueError):
    """A document that cannot be indexed (it contradicts what the database holds); the message names the file."""


def database_url(given, results_root):
    """The URL to use: the one given (--db), else TUNELAB_DB, else the SQLite file under the results root."""
    url = given or os.environ.get(ENV_VAR, "")
    if url:
        return url
    return "sqlite:///" + os.path.abspath(os.path.join(results_root, DEFAULT_FILE))


def redacted(url):
    """The URL as it may be printed: its password hidden."""
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except sa.exc.ArgumentError:
        return "(not a database URL)"


def _sqlite_path(url):
    return url.database if url.get_backend_name() == "sqlite" else None


def _check_sqlite_file(path):
    """Refuses a file that is not an SQLite database before SQLite would (its errors name no file)."""
    if not os.path.lexists(path):
        return
    if os.path.islink(path) or not os.path.isfile(path):
        raise DatabaseError(f"{path} is not a regular file (a link or a device): refused")
    with open(path, "rb") as f:
        head = f.read(len(SQLITE_HEADER))
    if head and head != SQLITE_HEADER:
        raise DatabaseError(f"{path} is not an SQLite database (corrupt or another file): remake it from the documents "
                            f"with `bazel run //tools:results -- import --rebuild`, or choose another --db")


def connect(url, read_only=False):
    """An Engine on the database at `url`. SQLite: the file made on first use (not when read-only), WAL, foreign
    keys on, each write transaction BEGIN IMMEDIATE (writers wait their turn instead of failing halfway);
    read-only opens the file with mode=ro. PostgreSQL (psycopg 3): read-only sessions are READ ONLY."""
    try:
        parsed = sa.engine.make_url(url)
    except sa.exc.ArgumentError:
        raise DatabaseError(f"{redacted(url)}: not a database URL (sqlite:///PATH or postgresql://...)") from None
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        path = _sqlite_path(parsed)
        if not path or path == ":memory:":
            raise DatabaseError("an SQLite database needs a file: sqlite:///PATH")
        _check_sqlite_file(path)
        if read_only:
            if not os.path.exists(path):
                raise DatabaseError(f"{path} does not exist yet: `bazel run //tools:results -- import` makes it")
            parsed = parsed.set(database=f"file:{urllib.parse.quote(path)}?mode=ro", query={"uri": "true"})
        else:
            os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
        engine = sa.create_engine(parsed, connect_args={"timeout": BUSY_TIMEOUT_S})
        begin = "BEGIN" if read_only else "BEGIN IMMEDIATE"

        @sa.event.listens_for(engine, "connect")
        def _on_connect(dbapi_connection, _record):
            dbapi_connection.isolation_level = None  # transactions are ours (below), not the driver's
            cursor = dbapi_connection.cursor()
            cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_S * 1000}")
            cursor.execute("PRAGMA foreign_keys = ON")
            if not read_only:
                cursor.execute("PRAGMA journal_mode = WAL")
            cursor.close()

        @sa.event.listens_for(engine, "begin")
        def _on_begin(connection):
            connection.exec_driver_sql(begin)

        return engine
    if backend == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
        options = {"options": "-c default_transaction_read_only=on"} if read_only else {}
        return sa.create_engine(parsed, connect_args={"connect_timeout": 10, **options}, pool_pre_ping=True)
    raise DatabaseError(f"{redacted(url)}: only sqlite:/// and postgresql:// databases are supported")


def _alembic_config(connection):
    config = alembic.config.Config()
    config.set_main_option("script_location", MIGRATIONS)
    config.attributes["connection"] = connection
    return config


def head_revision():
    """The schema revision this checkout writes (the newest migration)."""
    return alembic.script.ScriptDirectory(MIGRATIONS).get_current_head()


def _known_revisions():
    return {s.revision for s in alembic.script.ScriptDirectory(MIGRATIONS).walk_revisions()}


def state(connection):
    """("empty" | "ours" | "foreign", revision or None) of the database behind `connection`."""
    try:
        tables = set(sa.inspect(connection).get_table_names())
    except sa.exc.DatabaseError as e:
        raise DatabaseError(f"cannot read the database: {str(e).splitlines()[0][:200]}") from None
    if not tables:
        return "empty", None
    if "database_info" not in tables or "alembic_version" not in tables:
        return "foreign", None
    kind = connection.execute(sa.select(schema.database_info.c.value)
                              .where(schema.database_info.c.key == "kind")).scalar()
    if kind != schema.DATABASE_KIND:
        return "foreign", None
    return "ours", migration.MigrationContext.configure(connection).get_current_revision()


def unreachable(url, error):
    """A DatabaseError for a server that cannot be reached or refused us: the URL and the driver's first line,
    its password (if the driver echoed it) masked."""
    first = str(getattr(error, "orig", error)).strip().splitlines()[0][:300] if str(error).strip() else type(error).__name__
    password = sa.engine.make_url(url).password
    if password:
        first = first.replace(str(password), "***")
    return DatabaseError(f"{redacted(url)}: cannot be opened: {first}")


def open_for_writing(url):
    """An Engine at the head revision: an empty database is made (every migration, then its kind); one of an
    older revision, a newer one, a foreign one or a corrupt file is refused with what to do."""
    try:
        return _open_for_writing(url)
    except sa.exc.OperationalError as e:
        raise unreachable(url, e) from None


SCHEMA_LOCK = 7_301_830  # a PostgreSQL advisory lock: one writer at a time makes or migrates the schema


def _schema_lock(connection):
    """Two writers making an empty database at once: SQLite queues them (BEGIN IMMEDIATE), PostgreSQL here."""
    if connection.dialect.name == "postgresql":
        connection.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": SCHEMA_LOCK})


def _open_for_writing(url):
    engine = connect(url)
    try:
        with engine.begin() as connection:
            _schema_lock(connection)
            found, revision = state(connection)
            if found == "empty":
                alembic.command.upgrade(_alembic_config(connection), "head")
                connection.execute(sa.insert(schema.database_info), [{"key": "kind", "value": schema.DATABASE_KIND}])
                return engine
        _refuse_unless_current(redacted(url), found, revision)
    except BaseException:
        engine.dispose()
        raise
    return engine


def open_for_reading(url):
    """A read-only Engine on a database of this checkout's revision (refused otherwise, as for writing)."""
    try:
        return _open_for_reading(url)
    except sa.exc.OperationalError as e:
        raise unreachable(url, e) from None


def _open_for_reading(url):
    engine = connect(url, read_only=True)
    try:
        with engine.connect() as connection:
            found, revision = state(connection)
        if found == "empty":
            raise DatabaseError(f"{redacted(url)} holds no results yet: `bazel run //tools:results -- import`")
        _refuse_unless_current(redacted(url), found, revision)
    except BaseException:
        engine.dispose()
        raise
    return engine


def _refuse_unless_current(where, found, revision):
    if found == "foreign":
        raise DatabaseError(f"{where} is not a tunelab results database (it has tables, none of them ours): "
                            f"not touched; choose another --db")
    head = head_revision()
    if revision == head:
        return
    if revision not in _known_revisions():
        raise DatabaseError(f"{where} is at schema revision {revision!r}, newer than this checkout's {head} (made by a "
                            f"later tunelab): update this checkout, or remake it here with `import --rebuild`")
    raise DatabaseError(f"{where} is at schema revision {revision}, older than this checkout's {head}: "
                        f"`bazel run //tools:results -- migrate` upgrades it in place, keeping every row")


def migrate(url):
    """Upgrades a tunelab database to the head revision; returns (from revision, to revision)."""
    engine = connect(url)
    try:
        with engine.begin() as connection:
            _schema_lock(connection)
            found, revision = state(connection)
            if found == "empty":
                raise DatabaseError(f"{redacted(url)} is empty: nothing to migrate (`import` makes it)")
            if found == "foreign" or revision not in _known_revisions():
                _refuse_unless_current(redacted(url), found, revision)
            alembic.command.upgrade(_alembic_config(connection), "head")
        return revision, head_revision()
    finally:
        engine.dispose()


def drop_everything(url):
    """`import --rebuild`: an SQLite file removed (with its WAL), a PostgreSQL database's tunelab tables dropped.
    A foreign database is refused: never touched."""
    parsed = sa.engine.make_url(url)
    path = _sqlite_path(parsed) if parsed.get_backend_name() == "sqlite" else None
    if path:
        if os.path.lexists(path):
            try:
                _check_sqlite_file(path)
                engine = connect(url)
                try:
                    with engine.connect() as connection:
                        found, _ = state(connection)
                finally:
                    engine.dispose()
            except DatabaseError:
                found = "corrupt"
            if found == "foreign":
                raise DatabaseError(f"{path} is not a tunelab results database: not removed; choose another --db")
        for suffix in ("", "-wal", "-shm"):
            if os.path.lexists(path + suffix):
                os.unlink(path + suffix)
        return
    engine = connect(url)
    try:
        with engine.begin() as connection:
            found, _ = state(connection)
            if found == "foreign":
                raise DatabaseError(f"{redacted(url)} is not a tunelab results database: not touched")
            if found == "ours":
                schema.metadata.drop_all(connection)
                connection.exec_driver_sql("DROP TABLE IF EXISTS alembic_version")
    finally:
        engine.dispose()


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


def _gate_and_night_rows(connection, run, manifest, results, new_manifest):
    """The run's gate checks and, for a night, its night row, from its manifest: made again when the manifest is
    new to the run, or when they are missing (a database migrated from before they were kept)."""
    sequential = manifest.content.get("sequential") or {}
    comparisons = [c for c in sequential.get("comparisons") or [] if isinstance(c, dict)]
    held = connection.execute(sa.select(sa.func.count()).select_from(schema.gate_checks)
                              .where(schema.gate_checks.c.run == run)).scalar_one()
    if not new_manifest and held == len(comparisons):
        return
    connection.execute(sa.delete(schema.gate_checks).where(schema.gate_checks.c.run == run))
    connection.execute(sa.delete(schema.nights).where(schema.nights.c.run == run))
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
    accepted = ((manifest.content.get("revisions") or {}).get("accepted") or {}).get("commit")
    if not accepted:
        return
    candidate = next((((r.content.get("provenance") or {}).get("revision") or {}).get("commit") for r in results
                      if (r.content["cell"].get("params") or {}).get("revision") == "candidate"), None)
    states = {r["state"] for r in unique.values()}
    decided = "REGRESSED" if "REGRESSED" in states else "INCONCLUSIVE" if states - {"PASS"} or not states else "PASS"
    started = [t for t in (_time(r.content.get("started_at")) for r in results) if t]
    connection.execute(sa.insert(schema.nights).values(
        run=run, night=min(started).date() if started else None, accepted_commit=str(accepted)[:40],
        candidate_commit=str(candidate)[:40] if isinstance(candidate, str) else None, decided_state=decided,
        rounds=sequential.get("rounds") if isinstance(sequential.get("rounds"), int) else None,
        budget_s=_number(sequential.get("budget_s")), elapsed_s=_number(sequential.get("elapsed_s"))))


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

    def add(self, other):
        for field in dataclasses.fields(self):
            setattr(self, field.name, getattr(self, field.name) + getattr(other, field.name))


CONCURRENT_ATTEMPTS = 5  # PostgreSQL: another writer inserted the same rows first; the next attempt finds them


def import_run(engine, manifest, results, set_name=None):
    """Indexes one run's documents (its manifest and cell results, read and checked by the caller) in one
    transaction; with set_name, as that promoted set. A result whose place (run, cell, repetition) holds another
    document already is refused (a result is never rewritten), naming the file; nothing of the run is written.
    Two writers of the same run at once (a nightly and a fleet; PostgreSQL, where they do not queue as SQLite's
    BEGIN IMMEDIATE makes them): the one that finds the other's rows first rolls back and tries again."""
    for attempt in range(CONCURRENT_ATTEMPTS):
        try:
            return _import_run(engine, manifest, results, set_name)
        except sa.exc.IntegrityError:
            if attempt == CONCURRENT_ATTEMPTS - 1:
                raise
            time.sleep(0.05 * (attempt + 1))
    raise AssertionError("unreachable")


def _import_run(engine, manifest, results, set_name):
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
        _gate_and_night_rows(connection, run, manifest, results, new_manifest)
    return added


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
