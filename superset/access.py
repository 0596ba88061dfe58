"""Roles, users and row-level security of gridlake in Superset (run with the Superset venv python).

    python superset/access.py sync                      # after every asset import
    python superset/access.py add-site-user SITE USER   # password from $GRIDLAKE_USER_PASSWORD
    python superset/access.py add-operator USER         # password from $GRIDLAKE_USER_PASSWORD

infra/superset.sh runs these (``gridlake superset add-site-user`` calls it); the password travels
in the environment, never on a command line. Environment: Superset's own (SUPERSET_CONFIG_PATH,
SUPERSET_HOME, SUPERSET_SECRET_KEY).

Roles:

- ``Admin``: Superset's own.
- ``GridOperator``: reads everything (every dataset and SQL Lab on the whole database) and writes
  nothing shared: Superset's Gamma and sql_lab permissions minus every permission that creates,
  changes or deletes charts, dashboards, datasets, databases, saved queries, tags, themes, users or
  RLS rules. What stays writable is the user's own UI state (dashboard filter state, permalinks,
  SQL Lab tabs), without which the UI does not work.
- ``Site_<SITE>``: the same read-only permissions, ``datasource_access`` on each gridlake dataset
  (no database or schema access: SQL Lab then accepts only tables that are such datasets), and
  one Regular RLS rule per scope, from each dataset's ``extra.gridlake_rls`` (written by
  gridlake.serving.superset_assets): ``site = 'X'``; links ``src_site = 'X' OR dst_site = 'X'``;
  outlier rows about the site itself. Grid-wide datasets (no site column) get no rule. A dataset
  without a scope is never granted (deny by default).

SQL Lab: superset_config.py turns on RLS_IN_SQLLAB, so Superset rewrites every table of a SQL Lab
query that is a dataset with RLS into a filtered subquery; a table that is not a dataset is
refused for site roles by the per-table access check (they hold no schema or database access).
"""

from __future__ import annotations

import json
import os
import re
import sys

OPERATOR_ROLE = "GridOperator"
SITE_ROLE_PREFIX = "Site_"
DATABASE_NAME = "gridlake"
RULE_PREFIX = "gridlake "
SITE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
USER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")

# Permissions that change shared content; a read-only role never holds them...
WRITE_PERMISSIONS = {
    "can_write",
    "can_add",
    "can_edit",
    "can_delete",
    "can_tag",
    "can_bulk_create",
    "can_delete_embedded",
    "can_put_chart_customizations",
    "can_invalidate",
    "can_set_embedded",
    "can_import_",
    "can_delete_query",
}
# ...except on the user's own UI state: filter state, permalinks, explore form data, SQL Lab tabs.
UI_STATE_VIEWS = {
    "DashboardFilterStateRestApi",
    "DashboardPermalinkRestApi",
    "ExploreFormDataRestApi",
    "ExplorePermalinkRestApi",
    "SqlLabPermalinkRestApi",
    "TabStateView",
    "TableSchemaView",
    "CurrentUserRestApi",
}
# Reads a site role does not need: the RLS rules themselves name every site.
SITE_ROLE_EXCLUDED_READS = {("can_read", "RowLevelSecurity")}


class AccessError(Exception):
    pass


def is_read_only(permission: str, view: str) -> bool:
    if view in UI_STATE_VIEWS:
        return True
    return permission not in WRITE_PERMISSIONS


def _app():
    from superset.app import create_app

    return create_app()


def _base_permissions(sm) -> set[tuple[str, str]]:
    """Gamma + sql_lab, read-only."""
    pairs = set()
    for name in ("Gamma", "sql_lab"):
        role = sm.find_role(name)
        if role is None:
            raise AccessError(f"role {name} missing: run `superset init` first")
        pairs |= {(p.permission.name, p.view_menu.name) for p in role.permissions}
    return {pv for pv in pairs if is_read_only(*pv)}


def _set_permissions(sm, role, wanted: set[tuple[str, str]]) -> None:
    from superset import db

    pvs = []
    for perm, view in sorted(wanted):
        pv = sm.find_permission_view_menu(perm, view) or sm.add_permission_view_menu(perm, view)
        pvs.append(pv)
    role.permissions = pvs
    db.session.commit()


def _gridlake_datasets():
    from superset.connectors.sqla.models import SqlaTable
    from superset.models.core import Database

    from superset import db

    database = db.session.query(Database).filter_by(database_name=DATABASE_NAME).one_or_none()
    if database is None:
        raise AccessError(f"database {DATABASE_NAME!r} missing: import the assets first")
    return db.session.query(SqlaTable).filter_by(database_id=database.id).all()


def rls_scope(dataset) -> tuple[str, str | None] | None:
    """(scope, clause template) from the dataset's extra, or None when it has none."""
    try:
        extra = json.loads(dataset.extra or "{}")
    except ValueError:
        return None
    rls = extra.get("gridlake_rls") if isinstance(extra, dict) else None
    if not isinstance(rls, dict) or "scope" not in rls:
        return None
    clause = rls.get("clause")
    if rls["scope"] != "grid" and not clause:
        return None
    return rls["scope"], clause


def sync_operator(sm) -> None:
    role = sm.find_role(OPERATOR_ROLE) or sm.add_role(OPERATOR_ROLE)
    wanted = _base_permissions(sm) | {
        ("all_datasource_access", "all_datasource_access"),
        ("all_database_access", "all_database_access"),
    }
    _set_permissions(sm, role, wanted)


def sync_site_role(sm, site: str) -> dict[str, int]:
    """Create or update Site_<site>: permissions and one RLS rule per scope; {scope: tables}."""
    from superset.connectors.sqla.models import RowLevelSecurityFilter
    from superset.utils.core import RowLevelSecurityFilterType

    from superset import db

    if not SITE_NAME.fullmatch(site):
        raise AccessError(f"not a site name: {site!r} (letters, digits, '.', '_', '-')")
    role_name = SITE_ROLE_PREFIX + site
    role = sm.find_role(role_name) or sm.add_role(role_name)
    datasets = _gridlake_datasets()
    granted, by_scope = [], {}
    for ds in datasets:
        scope = rls_scope(ds)
        if scope is None:
            continue  # deny by default: a dataset must say how it is scoped
        granted.append(ds)
        if scope[1]:
            by_scope.setdefault(scope[0], (scope[1], []))[1].append(ds)
    wanted = {pv for pv in _base_permissions(sm) if pv not in SITE_ROLE_EXCLUDED_READS}
    wanted |= {("datasource_access", ds.perm) for ds in granted}
    _set_permissions(sm, role, wanted)

    rule_names = set()
    for scope, (template, tables) in sorted(by_scope.items()):
        name = f"{RULE_PREFIX}{role_name} {scope}"
        rule_names.add(name)
        rule = db.session.query(RowLevelSecurityFilter).filter_by(name=name).one_or_none()
        if rule is None:
            rule = RowLevelSecurityFilter(name=name)
            db.session.add(rule)
        rule.filter_type = RowLevelSecurityFilterType.REGULAR.value
        rule.clause = template.replace("{site}", site)
        rule.group_key = None
        rule.description = f"gridlake: rows of site {site} only ({scope} scope)"
        rule.roles = [role]
        rule.tables = sorted(tables, key=lambda t: t.id)
    # rules of this role for scopes that no longer exist
    for rule in db.session.query(RowLevelSecurityFilter).all():
        if rule.name.startswith(f"{RULE_PREFIX}{role_name} ") and rule.name not in rule_names:
            db.session.delete(rule)
    db.session.commit()
    return {scope: len(tables) for scope, (_, tables) in by_scope.items()}


def _site_roles(sm) -> list[str]:
    return sorted(r.name[len(SITE_ROLE_PREFIX) :] for r in sm.get_all_roles()
                  if r.name.startswith(SITE_ROLE_PREFIX))  # fmt: skip


def _ensure_user(sm, user_name: str, role, password: str) -> str:
    from superset import db

    if not USER_NAME.fullmatch(user_name):
        raise AccessError(f"not a user name: {user_name!r}")
    if not password:
        raise AccessError("no password: set GRIDLAKE_USER_PASSWORD")
    user = sm.find_user(username=user_name)
    if user is None:
        created = sm.add_user(user_name, user_name, role.name, f"{user_name}@gridlake.invalid",
                              role, password=password)  # fmt: skip
        if not created:
            raise AccessError(f"could not create user {user_name}")
        return "created"
    if any(r.name == "Admin" for r in user.roles):
        raise AccessError(f"{user_name} is an Admin: refusing to turn it into a restricted user")
    user.roles = [role]
    db.session.commit()
    sm.reset_password(user.id, password)
    return "updated"


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("sync", "add-site-user", "add-operator"):
        print(__doc__, file=sys.stderr)
        return 2
    app = _app()
    with app.app_context():
        sm = app.appbuilder.sm
        try:
            sync_operator(sm)
            if argv[0] == "sync":
                for site in _site_roles(sm):
                    scopes = sync_site_role(sm, site)
                    print(f"{SITE_ROLE_PREFIX}{site}: RLS {scopes}")
                print(f"{OPERATOR_ROLE} and {len(_site_roles(sm))} site roles in sync")
            elif argv[0] == "add-site-user":
                if len(argv) != 3:
                    raise AccessError("usage: add-site-user SITE USER")
                site, user_name = argv[1], argv[2]
                scopes = sync_site_role(sm, site)
                role = sm.find_role(SITE_ROLE_PREFIX + site)
                password = os.environ.get("GRIDLAKE_USER_PASSWORD", "")
                how = _ensure_user(sm, user_name, role, password)
                print(f"user {user_name} {how} with role {role.name} (RLS {scopes})")
            else:
                if len(argv) != 2:
                    raise AccessError("usage: add-operator USER")
                role = sm.find_role(OPERATOR_ROLE)
                how = _ensure_user(sm, argv[1], role, os.environ.get("GRIDLAKE_USER_PASSWORD", ""))
                print(f"user {argv[1]} {how} with role {OPERATOR_ROLE}")
        except AccessError as exc:
            print(f"access: {exc}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
