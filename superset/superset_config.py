"""Superset configuration for gridlake (loaded through SUPERSET_CONFIG_PATH by infra/superset.sh).

Kept free of Superset imports at module level: this file is read while Superset's own config
module is being imported, and importing Superset from here (e.g. its time grain constants)
crashes the gunicorn workers with a circular import.
"""

from __future__ import annotations

import os
import re

# --- SQL dialects, loaded before the first request ------------------------------------------------
# sqlglot (Superset's SQL parser) loads a dialect on first use and registers its class before it
# has finished setting it up: a second request thread asking for the same dialect in that window
# gets the class with the base dialect's tokenizer, and a hive query with backquoted names fails
# to parse ("Invalid expression / Unexpected token", line 1, column 11), a chart-data 422. Seen
# once in make test (a dashboard's first charts and native filters are queried concurrently by
# gunicorn's threads); reproduced with 8 threads parsing one hive query at once in a fresh process.
# Loading every bundled dialect here, while the worker is single-threaded, closes the window
# (~0.3 s per worker). sqlglot is not Superset, so the module docstring's rule holds.
from sqlglot.dialects.dialect import Dialect as _SqlglotDialect

_SQLGLOT_DIALECTS_LOADED = len(_SqlglotDialect.classes)

# --- secrets and metadata database --------------------------------------------------------------
# infra/superset.sh generates the key once into $GRIDLAKE_STATE/secrets/superset.env and exports it.
SECRET_KEY = os.environ.get("SUPERSET_SECRET_KEY", "")
if not SECRET_KEY:
    raise RuntimeError(
        "SUPERSET_SECRET_KEY is not set: start Superset with infra/superset.sh, which makes one"
    )

DATA_DIR = os.environ.get("SUPERSET_HOME") or os.path.expanduser("~/.superset")
SQLALCHEMY_DATABASE_URI = (
    f"sqlite:///{os.path.join(DATA_DIR, 'superset.db')}?check_same_thread=false"
)

# --- web security: the defaults, stated explicitly ----------------------------------------------
WTF_CSRF_ENABLED = True
WTF_CSRF_TIME_LIMIT = 60 * 60 * 24 * 7
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
PREVENT_UNSAFE_DB_CONNECTIONS = True

# No example data: infra/superset.sh never runs `superset load-examples`, and `superset init`
# does not load them.

# --- features -----------------------------------------------------------------------------------
# Native dashboard filters, cross filters and row level security are always on in Superset 6.x
# (their old flags DASHBOARD_NATIVE_FILTERS / ROW_LEVEL_SECURITY were removed once GA);
# what is listed here is what gridlake switches on beyond the defaults.
FEATURE_FLAGS = {
    "DRILL_TO_DETAIL": True,
    "DRILL_BY": True,
    "ALERT_REPORTS": False,
    "THUMBNAILS": False,
    # Row-level security in SQL Lab too: every table of a query that is a dataset with RLS rules
    # for the user's roles is replaced by a filtered subquery (superset/utils/rls.py). Site roles
    # hold per-dataset access only, so SQL Lab refuses any other table for them
    # (superset/access.py); tests/test_superset_access.py checks both.
    "RLS_IN_SQLLAB": True,
}

# Spark SQL functions that reach outside the data (Java reflection): refused in SQL Lab for all.
DISALLOWED_SQL_FUNCTIONS = {
    "hive": {"reflect", "java_method", "try_reflect"},
}

# --- read-only SQL: what reaches the Thrift Server through Superset ------------------------------
# Every statement Superset sends to the gridlake database (SQL Lab, chart data, native filters)
# passes SQL_QUERY_MUTATOR first, and only reads get through, for every role: a query (SELECT,
# WITH, UNION / INTERSECT / EXCEPT) or a plain DESCRIBE. Refused, whatever the role (tests:
# test_superset_access.py through SQL Lab and the chart-data API; test_superset.py the rules):
# - any other statement: SET / RESET (e.g. turning SQL on files back on), ADD JAR, EXECUTE
#   IMMEDIATE, SHOW CREATE TABLE and other SHOW commands (storage locations), CACHE, USE,
#   DESCRIBE EXTENDED / FORMATTED, every write (INSERT, CREATE, DROP, LOAD DATA, MSCK ...);
# - inside a query: IDENTIFIER() (a table named by a string, out of sight of the table checks and
#   row-level security), Java reflection (reflect, java_method, try_reflect), time travel (VERSION
#   / TIMESTAMP AS OF, table@v<N>: rows as they were before a correction or a deletion), script
#   transforms (SELECT TRANSFORM ... USING '<command>' runs a process on the server), SQL on files
#   (text.`/path`, parquet.`...`, delta.`...`), and table-valued functions (read_files ...);
# - what cannot be parsed (by Spark's and Hive's grammar): deny by default.
_FILE_SOURCES = {
    "text", "json", "csv", "parquet", "orc", "avro", "delta", "binaryfile", "jdbc", "hive",
    "xml", "file", "files",
}  # fmt: skip
_REFUSED_FUNCTIONS = {"identifier", "reflect", "java_method", "try_reflect", "read_files"}


def gridlake_sql_refusal(sql: str) -> str | None:
    """Why gridlake refuses ``sql`` (a statement or a script), or None when it only reads."""
    import sqlglot
    from sqlglot import exp

    statements = None
    for dialect in ("spark", "hive"):
        try:
            statements = [s for s in sqlglot.parse(sql, dialect=dialect) if s is not None]
            break
        except sqlglot.errors.SqlglotError:
            continue
    if statements is None:
        return "gridlake accepts queries only, and this statement could not be parsed as one"
    for statement in statements:
        if isinstance(statement, exp.Describe):
            if statement.args.get("style") or statement.args.get("partition"):
                return "only a plain DESCRIBE <table> is accepted (no EXTENDED or FORMATTED)"
            continue
        if not isinstance(statement, (exp.Select, exp.SetOperation)):
            head = sql.strip().split(None, 2)[:2]
            return f"gridlake accepts queries only (SELECT, WITH, DESCRIBE), not {' '.join(head)}"
        for node in statement.walk():
            if isinstance(node, (exp.Version, exp.Parameter)):
                return "time travel (VERSION / TIMESTAMP AS OF, @v<N>) is not accepted"
            if isinstance(node, exp.QueryTransform):
                return "script transforms (TRANSFORM ... USING) are not accepted"
            if isinstance(node, exp.Func):
                name = (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
                if name in _REFUSED_FUNCTIONS:
                    return f"the function {name}() is not accepted"
                if isinstance(node.parent, (exp.From, exp.Join, exp.Table)):
                    return f"table-valued functions ({name}) are not accepted"
            if isinstance(node, exp.Table):
                db = (node.db or "").lower()
                if db in _FILE_SOURCES or any(c in node.name for c in "/:\\"):
                    return f"SQL on files ({db}.`{node.name}`) is not accepted"
    return None


def SQL_QUERY_MUTATOR(sql: str, **kwargs) -> str:  # Superset's name for the hook
    why = gridlake_sql_refusal(sql)
    if why is None:
        return sql
    from superset.errors import ErrorLevel, SupersetError, SupersetErrorType
    from superset.exceptions import SupersetErrorException

    raise SupersetErrorException(
        SupersetError(
            message=f"Refused by gridlake: {why}.",
            error_type=SupersetErrorType.QUERY_SECURITY_ACCESS_ERROR,
            level=ErrorLevel.ERROR,
        ),
        status=403,
    )


# SQL Lab runs queries synchronously: no Celery worker or results backend runs here.
SQLLAB_ASYNC_TIME_LIMIT_SEC = 300
SUPERSET_WEBSERVER_TIMEOUT = 120
SQLLAB_TIMEOUT = 120
ROW_LIMIT = 50000

# --- Spark SQL through hive:// ------------------------------------------------------------------
# Superset's Hive engine spec truncates weeks with from_unixtime(..., 'u'), which Spark 3+ rejects
# ("Fail to recognize 'u' pattern"). Spark has date_trunc: weeks start on Monday, like the
# `week` column of the gold tables. Written out here on purpose (see the module docstring).
TIME_GRAIN_ADDON_EXPRESSIONS = {
    "hive": {
        "PT1S": "date_trunc('second', {col})",
        "PT1M": "date_trunc('minute', {col})",
        "PT1H": "date_trunc('hour', {col})",
        "P1D": "date_trunc('day', {col})",
        "P1W": "date_trunc('week', {col})",
        "P1M": "date_trunc('month', {col})",
        "P3M": "date_trunc('quarter', {col})",
        "P1Y": "date_trunc('year', {col})",
        # week ending Saturday / week starting Sunday
        "P1W/1970-01-03T00:00:00Z": (
            "date_trunc('week', {col} + interval '1 day') + interval '5 days'"
        ),
        "1969-12-28T00:00:00Z/P1W": (
            "date_trunc('week', {col} + interval '1 day') - interval '1 day'"
        ),
    }
}


def _spark_name(row) -> str:
    """Spark's SHOW TABLES/VIEWS: (namespace, tableName, isTemporary); Hive's: (tab_name,)."""
    return row[1] if len(row) >= 2 else row[0]


# --- the event log keeps no secret -------------------------------------------------------------
# Superset's event log (the `logs` table) keeps each logged request's form and JSON body: an asset
# import's `passwords` (the Thrift Server password of Superset's own user), a database PUT's URI.
# Keys that name secrets are kept out, and a password inside a URI is masked (#25; tested: no
# secret of the instance in any file of its state, superset.db included).
_SECRET_KEY_NAMES = re.compile(r"(?i)passw|secret|token|private_key|credential|encrypted_extra")
_URI_PASSWORD = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^:/@\s]*:)[^@\s]+@")


def _redacted(value):
    if isinstance(value, dict):
        return {
            k: "<redacted>" if _SECRET_KEY_NAMES.search(str(k)) else _redacted(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_redacted(v) for v in value]
    if isinstance(value, str):
        return _URI_PASSWORD.sub(r"\1XXXXXXXXXX@", value)
    return value


def _redact_event_log() -> None:
    from superset.utils.log import DBEventLogger

    original = DBEventLogger.log
    if getattr(original, "gridlake_redacts", False):
        return

    def log(self, user_id, action, *args, **kwargs):
        for key in ("records", "curated_payload"):
            if kwargs.get(key) is not None:
                kwargs[key] = _redacted(kwargs[key])
        return original(self, user_id, action, *args, **kwargs)

    log.gridlake_redacts = True
    DBEventLogger.log = log


def FLASK_APP_MUTATOR(app):
    """Make table and view listings read the name column of Spark's answer, not the database;
    keep secrets out of the event log."""
    _redact_event_log()
    from pyhive.sqlalchemy_hive import HiveDialect
    from sqlalchemy import text
    from superset.db_engine_specs.hive import HiveEngineSpec

    def get_table_names(self, connection, schema=None, **kw):
        query = "SHOW TABLES"
        if schema:
            query += " IN " + self.identifier_preparer.quote_identifier(schema)
        return [_spark_name(row) for row in connection.execute(text(query))]

    def get_view_names(cls, database, inspector, schema):
        sql = "SHOW VIEWS"
        if schema:
            sql += f" IN `{schema}`"
        with database.get_raw_connection(schema=schema) as conn:
            cursor = conn.cursor()
            cursor.execute(sql)
            return {_spark_name(row) for row in cursor.fetchall()}

    HiveDialect.get_table_names = get_table_names
    HiveEngineSpec.get_view_names = classmethod(get_view_names)
    # HiveEngineSpec inherits Presto's catalog support and reads the database of the URI
    # (hive://host:port/grid) as the default *catalog*: SQL Lab then qualifies a table as
    # grid.grid.<view>, finds no dataset of that name, and refuses every table to a role that holds
    # per-dataset access only (site roles). Spark's one catalog is implicit here: no catalogs.
    HiveEngineSpec.supports_catalog = False
    HiveEngineSpec.supports_dynamic_catalog = False
    HiveEngineSpec.supports_cross_catalog_queries = False
    HiveEngineSpec.get_default_catalog = classmethod(lambda cls, database: None)
    return app
