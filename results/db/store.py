"""The results database: where it is, opening it safely, its engines and its schema revision.

One schema (results/db/schema.py), two engines: an embedded SQLite file by default, made on first use in the
git-ignored results area (results/.db/tunelab.sqlite: WAL, a busy timeout, writers one at a time), or a team's
PostgreSQL (`--db postgresql://...` or TUNELAB_DB; psycopg 3). The documents stay the source of truth: a run's
documents become rows in results/db/rows.py.

A database that is corrupt, not tunelab's, or at another schema revision is refused with what to do
(`bazel run //tools:results -- migrate`, or `import --rebuild`), never rewritten silently. SQL only with bound
parameters; table and column names come from schema.py, never from input. A URL's password is never printed
(`redacted`).
"""

import os
import urllib.parse

import alembic.command
import alembic.config
import alembic.script
import sqlalchemy as sa
from alembic.runtime import migration

from results import safeio
from results.db import schema

DEFAULT_FILE = os.path.join(".db", "tunelab.sqlite")  # under the results root: git-ignored like fresh runs
ENV_VAR = "TUNELAB_DB"
MIGRATIONS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "migrations")
SQLITE_HEADER = b"SQLite format 3\x00"
BUSY_TIMEOUT_S = 60  # another writer (a nightly, the fleet) holds the lock at most one run's import


class DatabaseError(Exception):
    """The database cannot be used as it is; the message says which and what to do."""


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
            try:
                safeio.check_folder(os.path.dirname(path), create=True)
            except safeio.WriteRefused as refused:
                raise DatabaseError(f"{path}: its folder is refused ({refused})") from None
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
