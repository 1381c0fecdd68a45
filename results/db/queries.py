"""Reading the results database the way users ask: runs, one run, a metric's history, a read-only query.

Each returns (columns, rows) for the command line to print as a table, CSV or JSON. Filters are bound
parameters; a user's SQL runs only in `query`, on a read-only connection (results/db/store.py).
"""

import datetime
import statistics

import sqlalchemy as sa

from results.db import schema

MAX_QUERY_ROWS = 10_000  # a query's answer is printed: more rows than a terminal or a CSV reader wants


class QueryError(ValueError):
    pass


def runs(connection, rig=None, limit=50):
    """The newest runs first: (run id, host, rig, profile, state, started, cells, results ok of all)."""
    r, c, res = schema.runs, schema.cells, schema.results
    ok = sa.func.sum(sa.case((res.c.status == "ok", 1), else_=0))
    query = (sa.select(r.c.run_id, r.c.host_id, r.c.rig, r.c.profile, r.c.state, r.c.started_at,
                       sa.func.count(sa.distinct(c.c.id)), ok, sa.func.count(res.c.id))
             .select_from(r.outerjoin(c, c.c.run == r.c.id).outerjoin(res, res.c.cell == c.c.id))
             .group_by(r.c.id).order_by(r.c.started_at.desc().nulls_last(), r.c.run_id.desc()).limit(limit))
    if rig:
        query = query.where(r.c.rig == rig)
    rows = [(run_id, host, rig_, profile, state, _day_time(started), cells, f"{int(good or 0)}/{total}")
            for run_id, host, rig_, profile, state, started, cells, good, total in connection.execute(query)]
    return ["run", "host", "rig", "profile", "state", "started (UTC)", "cells", "ok results"], rows


def _day_time(moment):
    """UTC, whichever engine: PostgreSQL answers in its session's time zone, SQLite as stored (UTC)."""
    if not moment:
        return ""
    if moment.tzinfo is not None:
        moment = moment.astimezone(datetime.timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M")


def find_run(connection, run_id):
    """The run's row id, or QueryError naming what is held when it is not there (or held for several hosts)."""
    r = schema.runs
    found = connection.execute(sa.select(r.c.id, r.c.host_id).where(r.c.run_id == run_id)).all()
    if len(found) == 1:
        return found[0].id
    if len(found) > 1:
        raise QueryError(f"run {run_id} is held for several hosts: {', '.join(sorted(h for _, h in found))}")
    newest = connection.execute(sa.select(r.c.run_id).order_by(r.c.started_at.desc().nulls_last()).limit(3)).scalars()
    raise QueryError(f"no run {run_id!r} in the database (newest: {', '.join(newest) or 'none'}; "
                     f"`import` indexes new runs)")


def show(connection, run_id):
    """One run: per cell, its varying parameters and per metric the median over its ok repetitions."""
    run = find_run(connection, run_id)
    c, p, res, m = schema.cells, schema.cell_params, schema.results, schema.metric_values
    params = {}
    for cell_id, name, value in connection.execute(
            sa.select(c.c.cell_id, p.c.name, p.c.value).join(p, p.c.cell == c.c.id).where(c.c.run == run)):
        params.setdefault(cell_id, {})[name] = value
    values, statuses = {}, {}
    for cell_id, status, metric, value, unit in connection.execute(
            sa.select(c.c.cell_id, res.c.status, m.c.metric, m.c.value, m.c.unit)
            .select_from(c.join(res, res.c.cell == c.c.id).outerjoin(m, m.c.result == res.c.id))
            .where(c.c.run == run)):
        statuses.setdefault(cell_id, []).append(status)
        if metric is not None and status == "ok":
            values.setdefault((cell_id, metric, unit), []).append(value)
    names = sorted({k for ps in params.values() for k in ps})
    varying = [k for k in names if len({ps.get(k) for ps in params.values()}) > 1]
    rows = []
    for (cell_id, metric, unit), vals in sorted(values.items()):
        shown = " ".join(f"{k}={params.get(cell_id, {}).get(k, '')}" for k in varying) or "(one cell)"
        rows.append((cell_id, shown, metric, f"{statistics.median(vals):.6g}", unit, len(vals)))
    return ["cell", "parameters", "metric", "median", "unit", "ok reps"], rows


HISTORY_COLUMNS = ["run", "host", "parameters", "started (UTC)", "median", "unit", "n"]  # n: ok repetitions


def history(connection, rig, metric, cell=None, since=None):
    """A metric over time on one rig: per run and cell (its parameters matching `cell`, {name: value}), the
    median of its ok repetitions, oldest first; the parameters shown are those that differ between the rows."""
    r, c, p, res, m = schema.runs, schema.cells, schema.cell_params, schema.results, schema.metric_values
    query = (sa.select(r.c.run_id, r.c.host_id, r.c.profile, c.c.id, c.c.cell_id, res.c.started_at, m.c.value,
                       m.c.unit)
             .select_from(r.join(c, c.c.run == r.c.id).join(res, res.c.cell == c.c.id)
                          .join(m, m.c.result == res.c.id))
             .where(r.c.rig == rig, m.c.metric == metric, res.c.status == "ok"))
    for name, value in sorted((cell or {}).items()):
        query = query.where(sa.exists().where(p.c.cell == c.c.id, p.c.name == name, p.c.value == value))
    if since is not None:
        query = query.where(res.c.started_at >= since)
    groups = {}
    for run_id, host, profile, cell_row, cell_id, started, value, unit in connection.execute(query):
        group = groups.setdefault((run_id, cell_row), {"host": host, "profile": profile, "cell": cell_id,
                                                       "unit": unit, "values": [], "first": started})
        group["values"].append(value)
        if started and (group["first"] is None or started < group["first"]):
            group["first"] = started
    if not groups:
        return HISTORY_COLUMNS, []
    cell_rows = sorted({cell_row for _, cell_row in groups})
    params = {}
    for cell_row, name, value in connection.execute(sa.select(p.c.cell, p.c.name, p.c.value)
                                                    .where(p.c.cell.in_(cell_rows))):
        params.setdefault(cell_row, {})[name] = value
    names = sorted({k for ps in params.values() for k in ps})
    varying = [k for k in names if len({ps.get(k) for ps in params.values()}) > 1 and k not in (cell or {})]
    rows = []
    for (run_id, cell_row), g in sorted(groups.items(), key=lambda kv: (kv[1]["first"] is None, kv[1]["first"], kv[0])):
        shown = " ".join(f"{k}={params.get(cell_row, {}).get(k, '')}" for k in varying) or "(one cell)"
        rows.append((run_id, g["host"], shown, _day_time(g["first"]), f"{statistics.median(g['values']):.6g}",
                     g["unit"], len(g["values"])))
    return HISTORY_COLUMNS, rows


def run_text(connection, sql):
    """A statement's text run as written: psycopg reads % as a placeholder even without parameters (LIKE 'a%',
    a column named "worse by %"), so it is doubled there; SQLite's driver takes the text as it is."""
    if connection.dialect.name == "postgresql":
        sql = sql.replace("%", "%%")
    return connection.exec_driver_sql(sql)


def read_only_query(connection, sql, limit=MAX_QUERY_ROWS):
    """A user's one SELECT on a read-only connection: (columns, rows), at most `limit` rows (QueryError beyond)."""
    text = sql.strip().rstrip(";").strip()
    if not text:
        raise QueryError("an empty query")
    if ";" in text:
        raise QueryError("one statement only (no ';' inside)")
    try:
        result = run_text(connection, text)
        if not result.returns_rows:
            raise QueryError("the statement returns no rows (the database is read-only here: SELECT only)")
        columns = list(result.keys())
        rows = result.fetchmany(limit + 1)
    except sa.exc.DBAPIError as e:
        connection.rollback()  # PostgreSQL keeps a failed transaction aborted: the next question starts clean
        raise QueryError(f"the database refused the query: {str(e.orig).splitlines()[0][:300]}") from None
    if len(rows) > limit:
        raise QueryError(f"more than {limit:,} rows: narrow the query (WHERE, LIMIT)")
    return columns, [tuple(row) for row in rows]


NIGHT_COLUMNS = ("run_id", "host_id", "matrix", "rig", "profile", "cell", "metric", "unit", "direction", "watched",
                 "night_start", "candidate_value", "candidate_low", "candidate_high", "worse_by", "worse_low",
                 "worse_high", "asked_effect", "stated_d", "tonight_d", "catches", "state")


def night_checks(connection, rig=None, matrix=None, metric=None, since=None, profile=None):
    """Every night's checks as the gate judged them (schema.night_checks), oldest night first: dicts of
    NIGHT_COLUMNS plus `sets` (the names the night's run is promoted as, sorted; [] for a fresh run) and
    `gate_state` (the night's verdict). Filters are bound parameters; `since` a date or datetime (UTC)."""
    r, n, nt, s = schema.runs, schema.night_checks, schema.nights, schema.sets
    query = (sa.select(r.c.run_id, r.c.host_id, r.c.matrix, r.c.rig, r.c.profile, n.c.cell, n.c.metric, n.c.unit,
                       n.c.direction, n.c.watched, n.c.night_start, n.c.candidate_value, n.c.candidate_low,
                       n.c.candidate_high, n.c.worse_by, n.c.worse_low, n.c.worse_high, n.c.asked_effect,
                       n.c.stated_d, n.c.tonight_d, n.c.catches, n.c.state, r.c.id, nt.c.gate_state)
             .select_from(n.join(r, r.c.id == n.c.run).outerjoin(nt, nt.c.run == n.c.run))
             .order_by(n.c.night_start, r.c.run_id, n.c.cell, n.c.metric))
    if rig:
        query = query.where(r.c.rig == rig)
    if matrix:
        query = query.where(r.c.matrix == matrix)
    if metric:
        query = query.where(n.c.metric == metric)
    if profile:
        query = query.where(r.c.profile == profile)
    if since is not None:
        if not isinstance(since, datetime.datetime):
            since = datetime.datetime.combine(since, datetime.time(), datetime.timezone.utc)
        query = query.where(n.c.night_start >= since)
    found = connection.execute(query).all()
    names = {}
    for run, name in connection.execute(sa.select(s.c.run, s.c.name).where(s.c.run.in_({row.id for row in found}))):
        names.setdefault(run, []).append(name)
    out = []
    for row in found:
        values = dict(zip(NIGHT_COLUMNS, row[:len(NIGHT_COLUMNS)]))
        moment = values["night_start"]
        values["night_start"] = (moment.astimezone(datetime.timezone.utc) if moment.tzinfo
                                 else moment.replace(tzinfo=datetime.timezone.utc))
        out.append(dict(values, sets=sorted(names.get(row.id, [])), gate_state=row.gate_state))
    return out
