"""``gridlake whatif SCENARIO.yaml``: the cost of last month's work under a scenario.

Reads gold.site_workflow_cost (and gold.cpu_speed_factors, gold.job_length_advice when the
scenario needs them), never writes. The work is the events of every (site, job type, week) row
of the last ``weeks`` ISO weeks in the table that has a cost; its total cost is
``sum(events x core_seconds_per_event x price / 3600)`` (core-hours at price 1). The scenario's
changes are applied in order to those rows:

``replace_cpus: {site, cpu_model}``
    The site's CPU mix becomes that model: core_seconds_per_event x cpu_mix_speed / f, f the
    model's speed factor for the job type (gridlake.gold.cost.job_type_factors). The site's own
    slowdown, efficiency and waste stay.
``price: {site, price_per_core_hour}``
    The site's price changes.
``job_length: {job_type}``
    The job type's jobs get the advised optimal length (gold.job_length_advice): its
    core-seconds per event x current_useful_fraction / expected_useful_fraction.
``cloud_site: {name, price_per_core_hour, cpu_model, network, move, efficiency?, waste_factor?}``
    A site that does not exist yet. ``move: {share, job_types?, from_sites?}`` moves that share
    of the events of those job types (default all) from those sites (default all) to it. Its
    core-seconds per event = r / f / e x w + input GB per event x s per GB from the data site x
    mean cores (the network term of gold.placement_advice, input at the site the work leaves).
    e and w default to the job type's over the period's rows (ratios of sums: sum(events x x) /
    sum(events x x / e), and the core-seconds-weighted mean of w). ``network: {cost_seconds_per_gb:
    {SITE: s, ...}, default_cost_seconds_per_gb: s}``; a site the work leaves without a figure is
    an error (missing evidence is never taken as free).

Example::

    name: FZK buys EPYCs, simulation at optimal length
    changes:
      - replace_cpus: {site: FZK-LCG2, cpu_model: "AMD EPYC 7302 16-Core Processor"}
      - job_length: {job_type: simul}
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

__all__ = [
    "CloudSite",
    "JobLength",
    "PriceChange",
    "ReplaceCpus",
    "Scenario",
    "WhatIfResult",
    "load_scenario",
    "parse_scenario",
    "whatif",
]


@dataclass(frozen=True)
class ReplaceCpus:
    site: str
    cpu_model: str


@dataclass(frozen=True)
class PriceChange:
    site: str
    price_per_core_hour: float


@dataclass(frozen=True)
class JobLength:
    job_type: str


@dataclass(frozen=True)
class CloudSite:
    name: str
    price_per_core_hour: float
    cpu_model: str
    share: float
    cost_seconds_per_gb: dict[str, float] = field(default_factory=dict)
    default_cost_seconds_per_gb: float | None = None
    job_types: tuple[str, ...] | None = None
    from_sites: tuple[str, ...] | None = None
    efficiency: float | None = None
    waste_factor: float | None = None


Change = ReplaceCpus | PriceChange | JobLength | CloudSite


@dataclass(frozen=True)
class Scenario:
    name: str
    changes: tuple[Change, ...]


@dataclass(frozen=True)
class WhatIfResult:
    weeks: tuple[date, ...]
    rows: int
    events: float
    baseline_total: float
    scenario_total: float
    uncosted_core_hours: float  # work in the period without a cost (left out of both totals)
    by_job_type: dict[str, tuple[float, float]]  # job type: (baseline, scenario)

    @property
    def change(self) -> float:
        return self.scenario_total - self.baseline_total

    def report(self, name: str) -> str:
        pct = 100 * self.change / self.baseline_total if self.baseline_total else float("nan")
        lines = [
            f"scenario: {name}",
            f"period: {len(self.weeks)} weeks, {self.weeks[0]} to {self.weeks[-1]} (Mondays)"
            if self.weeks
            else "period: no week with a cost",
            f"work: {self.events:,.0f} events in {self.rows} site x job type x week rows "
            f"({self.uncosted_core_hours:,.1f} core-hours of work without a cost left out)",
            f"baseline total: {self.baseline_total:.3f}",
            f"scenario total: {self.scenario_total:.3f}",
            f"change: {self.change:+.3f} ({pct:+.2f} %)",
            "by job type (baseline -> scenario):",
        ]
        for jt, (b, s) in sorted(self.by_job_type.items()):
            lines.append(f"  {jt:16s} {b:14.3f} -> {s:14.3f} ({s - b:+.3f})")
        lines.append("(cost units: core-hours x price per core-hour; core-hours at price 1)")
        return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Scenario files
# --------------------------------------------------------------------------------------------


def _need(d: dict[str, Any], key: str, where: str) -> Any:
    if key not in d or d[key] is None:
        raise ValueError(f"{where}: missing '{key}'")
    return d[key]


def _number(value: Any, where: str, lo: float = 0.0, hi: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{where}: {value!r} is not a number")
    if value < lo or (hi is not None and value > hi):
        bound = f"[{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise ValueError(f"{where}: {value} is outside {bound}")
    return float(value)


def _names(value: Any, where: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{where}: expected a name or a list of names")
    return tuple(value)


def parse_scenario(doc: Any) -> Scenario:
    """A scenario from its YAML document (a mapping with ``changes``); clear errors."""
    if not isinstance(doc, dict):
        raise ValueError("a scenario is a mapping with 'name' and 'changes'")
    changes_doc = doc.get("changes")
    if not isinstance(changes_doc, list) or not changes_doc:
        raise ValueError("scenario: 'changes' must be a non-empty list")
    changes: list[Change] = []
    for i, item in enumerate(changes_doc, 1):
        if not isinstance(item, dict) or len(item) != 1:
            raise ValueError(f"change {i}: one of replace_cpus, price, job_length, cloud_site")
        kind, body = next(iter(item.items()))
        where = f"change {i} ({kind})"
        if not isinstance(body, dict):
            raise ValueError(f"{where}: expected a mapping")
        if kind == "replace_cpus":
            changes.append(
                ReplaceCpus(str(_need(body, "site", where)), str(_need(body, "cpu_model", where)))
            )
        elif kind == "price":
            changes.append(
                PriceChange(
                    str(_need(body, "site", where)),
                    _number(_need(body, "price_per_core_hour", where), where),
                )
            )
        elif kind == "job_length":
            changes.append(JobLength(str(_need(body, "job_type", where))))
        elif kind == "cloud_site":
            move = _need(body, "move", where)
            net = body.get("network") or {}
            if not isinstance(move, dict) or not isinstance(net, dict):
                raise ValueError(f"{where}: 'move' and 'network' are mappings")
            per_site = net.get("cost_seconds_per_gb") or {}
            if not isinstance(per_site, dict):
                raise ValueError(f"{where}: network.cost_seconds_per_gb maps sites to seconds")
            default = net.get("default_cost_seconds_per_gb")
            changes.append(
                CloudSite(
                    name=str(_need(body, "name", where)),
                    price_per_core_hour=_number(_need(body, "price_per_core_hour", where), where),
                    cpu_model=str(_need(body, "cpu_model", where)),
                    share=_number(_need(move, "share", where), f"{where} move.share", 0.0, 1.0),
                    cost_seconds_per_gb={
                        str(k): _number(v, f"{where} network {k}") for k, v in per_site.items()
                    },
                    default_cost_seconds_per_gb=None
                    if default is None
                    else _number(default, f"{where} network default"),
                    job_types=_names(move.get("job_types"), f"{where} move.job_types"),
                    from_sites=_names(move.get("from_sites"), f"{where} move.from_sites"),
                    efficiency=None
                    if body.get("efficiency") is None
                    else _number(body["efficiency"], f"{where} efficiency", 1e-6, 1.0),
                    waste_factor=None
                    if body.get("waste_factor") is None
                    else _number(body["waste_factor"], f"{where} waste_factor", 1.0),
                )
            )
        else:
            raise ValueError(
                f"{where}: unknown change; one of replace_cpus, price, job_length, cloud_site"
            )
    return Scenario(str(doc.get("name") or "unnamed scenario"), tuple(changes))


def load_scenario(path: Path) -> Scenario:
    import yaml

    try:
        doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: not valid YAML: {exc}") from exc
    return parse_scenario(doc)


# --------------------------------------------------------------------------------------------
# Applying a scenario
# --------------------------------------------------------------------------------------------

_WORK_COLUMNS = (
    "week",
    "site",
    "job_type",
    "events",
    "core_seconds_per_event",
    "price_per_core_hour",
    "cpu_mix_speed",
    "cpu_seconds_per_event",
    "cpu_efficiency",
    "waste_factor",
    "reference_cpu_seconds_per_event",
    "input_gb_per_event",
    "mean_cores",
)


def period_weeks(costs: DataFrame, weeks: int) -> list[date]:
    """The last ``weeks`` ISO weeks (Mondays) up to the newest week of the table."""
    newest = costs.agg(F.max("week")).first()[0]
    if newest is None:
        return []
    return [newest - timedelta(days=7 * i) for i in reversed(range(weeks))]


def _factor(factors: DataFrame, cpu_model: str, job_types: list[str]) -> dict[str, float]:
    from gridlake.gold.cost import job_type_factors

    rows = (
        job_type_factors(factors)
        .where((F.col("cpu_model") == cpu_model) & F.col("job_type").isin(job_types))
        .collect()
    )
    found = {r.job_type: r.f for r in rows if r.f is not None}
    missing = sorted(set(job_types) - set(found))
    if missing:
        raise ValueError(f"no speed factor of {cpu_model!r} for job types {missing}")
    return found


def _job_types(work: DataFrame, cond: SparkColumn | None = None) -> list[str]:
    w = work if cond is None else work.where(cond)
    return sorted(r.job_type for r in w.select("job_type").distinct().collect())


def _by_job_type(mapping: dict[str, float], default: float | None = None) -> SparkColumn:
    expr = F.lit(default)
    for jt, value in mapping.items():
        expr = F.when(F.col("job_type") == jt, F.lit(value)).otherwise(expr)
    return expr


def _cloud(work: DataFrame, baseline: DataFrame, c: CloudSite, factors: DataFrame) -> DataFrame:
    cond = F.lit(True)
    if c.job_types is not None:
        cond = cond & F.col("job_type").isin(list(c.job_types))
    if c.from_sites is not None:
        cond = cond & F.col("site").isin(list(c.from_sites))
    moving = work.where(cond)
    job_types = _job_types(moving)
    if not job_types:
        raise ValueError(f"cloud_site {c.name}: no work matches its 'move'")
    sites = sorted(r.site for r in moving.select("site").distinct().collect())
    network = {s: c.cost_seconds_per_gb.get(s, c.default_cost_seconds_per_gb) for s in sites}
    unknown = sorted(s for s, v in network.items() if v is None)
    if unknown:
        raise ValueError(f"cloud_site {c.name}: no network figure from {unknown}")
    f = _factor(factors, c.cpu_model, job_types)
    # the job type's efficiency and waste over the period's rows (before any change)
    x = F.col("cpu_seconds_per_event")
    at_e = F.col("events") * x / F.col("cpu_efficiency")
    grid = (
        baseline.where(F.col("job_type").isin(job_types))
        .groupBy("job_type")
        .agg(
            (F.sum(F.col("events") * x) / F.sum(at_e)).alias("_e"),
            (F.sum(at_e * F.col("waste_factor")) / F.sum(at_e)).alias("_w"),
        )
    )
    e = F.lit(c.efficiency) if c.efficiency is not None else F.col("_e")
    w = F.lit(c.waste_factor) if c.waste_factor is not None else F.col("_w")
    s_per_gb = F.lit(None).cast("double")
    for site, value in network.items():
        s_per_gb = F.when(F.col("site") == site, F.lit(value)).otherwise(s_per_gb)
    cs = F.col("reference_cpu_seconds_per_event") / _by_job_type(f) / e * w + F.col(
        "input_gb_per_event"
    ) * s_per_gb * F.col("mean_cores")
    moved = (
        moving.join(grid, "job_type", "left")
        .withColumn("events", F.col("events") * c.share)
        .withColumn("core_seconds_per_event", cs)
        .withColumn("site", F.lit(c.name))
        .withColumn("price_per_core_hour", F.lit(c.price_per_core_hour))
        .select(*_WORK_COLUMNS)
    )
    bad = moved.where(F.col("core_seconds_per_event").isNull()).select("job_type").distinct()
    missing = sorted(r.job_type for r in bad.collect())
    if missing:
        raise ValueError(
            f"cloud_site {c.name}: cannot cost {missing} there (no reference CPU time, "
            "input size, efficiency or mean cores)"
        )
    stay = work.withColumn(
        "events", F.when(cond, F.col("events") * (1 - c.share)).otherwise(F.col("events"))
    )
    return stay.unionByName(moved)


def whatif(
    costs: DataFrame,
    scenario: Scenario,
    factors: DataFrame | None = None,
    advice: DataFrame | None = None,
    weeks: int = 4,
) -> WhatIfResult:
    """gold.site_workflow_cost (+ gold.cpu_speed_factors, gold.job_length_advice as needed) and
    a scenario -> the totals of the period's work before and after. Collects only totals (and
    the few site, job-type and factor names the changes name)."""
    period = period_weeks(costs, weeks)
    in_period = costs.where(F.col("week").isin(period))
    costed = F.col("core_seconds_per_event").isNotNull() & F.col("price_per_core_hour").isNotNull()
    has_events = F.col("events") > 0
    uncosted = in_period.where(~(costed & has_events)).agg(F.sum("core_hours")).first()[0] or 0.0
    base = (
        in_period.where(costed & has_events)
        .withColumn("events", F.col("events").cast("double"))
        .select(*_WORK_COLUMNS)
        .localCheckpoint()
    )
    work = base
    for change in scenario.changes:
        if isinstance(change, ReplaceCpus):
            at_site = F.col("site") == change.site
            job_types = _job_types(work, at_site)
            if not job_types:
                raise ValueError(f"replace_cpus: no work at site {change.site!r} in the period")
            if factors is None:
                raise ValueError("replace_cpus needs gold.cpu_speed_factors")
            f = _by_job_type(_factor(factors, change.cpu_model, job_types))
            work = work.withColumn(
                "core_seconds_per_event",
                F.when(
                    at_site, F.col("core_seconds_per_event") * F.col("cpu_mix_speed") / f
                ).otherwise(F.col("core_seconds_per_event")),
            ).withColumn("cpu_mix_speed", F.when(at_site, f).otherwise(F.col("cpu_mix_speed")))
        elif isinstance(change, PriceChange):
            work = work.withColumn(
                "price_per_core_hour",
                F.when(F.col("site") == change.site, F.lit(change.price_per_core_hour)).otherwise(
                    F.col("price_per_core_hour")
                ),
            )
        elif isinstance(change, JobLength):
            if advice is None:
                raise ValueError("job_length needs gold.job_length_advice")
            row = advice.where(F.col("job_type") == change.job_type).first()
            if row is None or not row.current_useful_fraction or not row.expected_useful_fraction:
                raise ValueError(f"job_length: no advised length for {change.job_type!r}")
            ratio = row.current_useful_fraction / row.expected_useful_fraction
            work = work.withColumn(
                "core_seconds_per_event",
                F.when(
                    F.col("job_type") == change.job_type, F.col("core_seconds_per_event") * ratio
                ).otherwise(F.col("core_seconds_per_event")),
            )
        else:
            if factors is None:
                raise ValueError("cloud_site needs gold.cpu_speed_factors")
            work = _cloud(work, base, change, factors)
        work = work.localCheckpoint()

    def totals(df: DataFrame) -> dict[str, float]:
        cost = F.col("events") * F.col("core_seconds_per_event") * F.col("price_per_core_hour")
        rows = df.groupBy("job_type").agg((F.sum(cost) / 3600.0).alias("c")).collect()
        return {r.job_type: r.c for r in rows}

    b, s = totals(base), totals(work)
    stats = base.agg(F.count(F.lit(1)), F.sum("events")).first()
    return WhatIfResult(
        weeks=tuple(period) if stats[0] else (),
        rows=int(stats[0]),
        events=float(stats[1] or 0.0),
        baseline_total=sum(b.values()),
        scenario_total=sum(s.values()),
        uncosted_core_hours=float(uncosted),
        by_job_type={jt: (b.get(jt, 0.0), s.get(jt, 0.0)) for jt in sorted(set(b) | set(s))},
    )
