"""What the Airflow DAGs run, derived from the code: the manifest ``dags/gridlake_manifest.json``.

The DAGs live in Airflow's own venv, which has no pyspark and cannot import gridlake; they read
this manifest instead, written by ``gridlake docs`` (a test checks it is current):

- ``refine``: one entry per silver input (``gridlake refine --inputs X``), the silver tables it
  writes (the Airflow assets grid_ingest publishes) and the inputs it must run after;
- ``ingest_cron``: grid_ingest's production schedule (``INGEST_CRON``);
- ``gold_groups``: one entry per gold group of ``gridlake.gold.analyze.GROUPS`` (one task of
  grid_analytics each), the gold tables it writes (its assets), the groups it runs after
  (``DEPENDS_ON``) and its ``priority`` (Airflow's absolute priority weight: the groups'
  order in ``FAMILIES``, the first highest, so that of the tasks ready at once the scheduler
  starts site_efficiency, what the operations dashboards open on, first; the tasks queue
  behind each other on the one Spark server). This is freshness first, on purpose: a
  ``gridlake analyze`` of every group by hand starts the costliest chain first instead
  (``GoldGroup.weight``), which ends the whole run sooner but would keep the dashboards'
  table waiting behind the efficiency group's minutes at grid scale.

So a new gold group is its family module's ``GROUP`` and one line in ``analyze.FAMILIES``: after
``gridlake docs`` the analytics DAG has its task, outlets and dependencies.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gridlake.settings import REPO_ROOT

__all__ = [
    "INGEST_CRON",
    "INGEST_PERIOD_MINUTES",
    "MANIFEST_PATH",
    "asset_uri",
    "check_dependencies",
    "manifest",
    "render_manifest",
    "write_manifest",
]

MANIFEST_PATH = REPO_ROOT / "dags" / "gridlake_manifest.json"
# grid_ingest's schedule in production: every five minutes, so that a finished job is on the
# operations dashboards within minutes, as in MONIT (the wait for the next run is at most the
# period: 285 s at its 95th percentile). A run that finds nothing new costs seconds (ingest's
# empty micro-batch, each refine's idle exit: no asset event, no analytics). The DAG reads it
# from the manifest; GRIDLAKE_INGEST_CRON in the scheduler's environment overrides it (the
# freshness bench shortens it to take its probes faster).
INGEST_PERIOD_MINUTES = 5
INGEST_CRON = f"*/{INGEST_PERIOD_MINUTES} * * * *"


def asset_uri(full_name: str) -> str:
    """The Airflow asset URI of a table: ``silver.jobs`` -> ``gridlake://silver/jobs``."""
    database, name = full_name.split(".", 1)
    return f"gridlake://{database}/{name}"


def check_dependencies(order: tuple[str, ...], after: dict[str, tuple[str, ...]]) -> None:
    """Every dependency names a known step that comes earlier in ``order`` (so no cycle)."""
    position = {name: i for i, name in enumerate(order)}
    for step, deps in after.items():
        if step not in position:
            raise ValueError(f"dependencies declared for unknown step {step!r}")
        for dep in deps:
            if dep not in position:
                raise ValueError(f"{step!r} depends on unknown step {dep!r}")
            if position[dep] >= position[step]:
                raise ValueError(f"{step!r} depends on {dep!r}, which does not come before it")


def manifest() -> dict[str, Any]:
    from gridlake.gold.analyze import DEPENDS_ON, GROUPS, group_tables
    from gridlake.silver.refine import FEATURE_INPUTS, REFINE_AFTER, SPECS
    from gridlake.silver.tables import SILVER_JOB_NODE_FEATURES

    first = [d for deps in REFINE_AFTER.values() for d in deps]
    inputs = tuple(dict.fromkeys([*first, *SPECS]))
    check_dependencies(inputs, REFINE_AFTER)
    check_dependencies(GROUPS, DEPENDS_ON)
    refine = []
    for name in inputs:
        writes = [o.table.full_name for o in SPECS[name].outputs]
        if name in FEATURE_INPUTS:
            writes.append(SILVER_JOB_NODE_FEATURES.full_name)
        refine.append({"input": name, "after": list(REFINE_AFTER.get(name, ())), "writes": writes})
    groups = [
        {
            "group": g,
            "after": list(DEPENDS_ON.get(g, ())),
            "writes": [t.full_name for t in group_tables(g)],
            "priority": len(GROUPS) - i,
        }
        for i, g in enumerate(GROUPS)
    ]
    return {
        "generated_by": "gridlake docs (jobs/gridlake/ops/orchestration.py); do not edit",
        "ingest_cron": INGEST_CRON,
        "refine": refine,
        "gold_groups": groups,
    }


def render_manifest() -> str:
    return json.dumps(manifest(), indent=2) + "\n"


def write_manifest(path: Path = MANIFEST_PATH) -> bool:
    """Write the manifest; returns True when the file changed."""
    text = render_manifest()
    if path.is_file() and path.read_text() == text:
        return False
    path.write_text(text)
    return True
