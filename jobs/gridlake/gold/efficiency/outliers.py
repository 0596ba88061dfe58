"""gold.efficiency_outliers and its rules table: sites, CPU models and tasks off their peers
or their own history."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from gridlake.gold.efficiency.columns import _success
from gridlake.gold.efficiency.params import HISTORY_WEEKS, MAD_TO_SD
from gridlake.spark import rows_frame

# --------------------------------------------------------------------------------------------
# gold.efficiency_outlier_rules and gold.efficiency_outliers
# --------------------------------------------------------------------------------------------


class OutlierRule(NamedTuple):
    rule_version: int
    rule_id: str
    entity: str  # site | cpu_model | task
    metric: str  # cpu_efficiency | hs23_seconds_per_event
    comparison: str  # own_history | peers
    direction: str  # low | high | both
    threshold: float  # robust z
    min_jobs: int
    min_baseline_points: int
    min_scale: float  # floor of the robust sd, log scale
    enabled: bool
    description: str


DEFAULT_OUTLIER_RULES: tuple[OutlierRule, ...] = (
    OutlierRule(1, "site-efficiency-peers", "site", "cpu_efficiency", "peers", "low", 3.5, 20, 3,
                0.03, True, "Site less CPU-efficient than the other sites for the same job type "
                "(I/O, storage or network limits)"),
    OutlierRule(1, "site-efficiency-history", "site", "cpu_efficiency", "own_history", "low",
                3.5, 20, 4, 0.03, True, "Site less CPU-efficient than in its previous 8 weeks"),
    OutlierRule(1, "site-hs23-peers", "site", "hs23_seconds_per_event", "peers", "high", 3.5,
                20, 3, 0.03, True, "Site's nodes need more HS23-normalised CPU time per event "
                "than the same CPU models elsewhere (throttling, overcommit, VM steal)"),
    OutlierRule(1, "site-hs23-history", "site", "hs23_seconds_per_event", "own_history", "high",
                3.5, 20, 4, 0.03, True, "Site's nodes slower per event than in the previous "
                "8 weeks"),
    OutlierRule(1, "cpu-model-hs23-peers", "cpu_model", "hs23_seconds_per_event", "peers",
                "high", 3.5, 20, 3, 0.03, True, "CPU model slower for a job type than its HS23 "
                "score predicts, relative to the other models"),
    # v2 of the task rules: tasks of one job type differ honestly (events per job, init share),
    # so the scale floor is 0.08 (a task must be >= 24% below its peers at z 3.5); v1 (0.05)
    # flagged ordinary short-event analysis tasks on a grid with no planted effect
    OutlierRule(2, "task-efficiency-peers", "task", "cpu_efficiency", "peers", "low", 3.5, 10,
                5, 0.08, True, "Task less CPU-efficient than the other tasks of its job type"),
    OutlierRule(2, "task-efficiency-history", "task", "cpu_efficiency", "own_history", "low",
                3.5, 10, 4, 0.08, True, "Task less CPU-efficient than in its previous weeks"),
)  # fmt: skip

_RULES_DDL = (
    "rule_version int, rule_id string, entity string, metric string, comparison string, "
    "direction string, threshold double, min_jobs int, min_baseline_points int, "
    "min_scale double, enabled boolean, description string"
)


def outlier_rules_frame(
    spark: SparkSession, rules: Sequence[OutlierRule] = DEFAULT_OUTLIER_RULES
) -> DataFrame:
    """The rules as a DataFrame with the columns of gold.efficiency_outlier_rules."""
    return rows_frame(spark, [tuple(r) for r in rules], _RULES_DDL)


def _active_rules(rules: DataFrame) -> DataFrame:
    """Latest version of each rule_id, if enabled."""
    latest = Window.partitionBy("rule_id").orderBy(F.col("rule_version").desc())
    return (
        rules.withColumn("_rank", F.row_number().over(latest))
        .where((F.col("_rank") == 1) & F.coalesce(F.col("enabled"), F.lit(True)))
        .drop("_rank", "description", "enabled")
    )


def two_way_effects(
    cells: Sequence[tuple[str, str, float, float]], tol: float = 1e-10, max_rounds: int = 20_000
) -> tuple[dict[str, float], dict[str, float]]:
    """Weighted least squares of y ~ a[row] + b[col] over cells (row, col, weight, y), by
    backfitting to convergence (numpy: one weighted sum per sweep). Returns (a, b); the split of
    a common constant between them is arbitrary (comparisons between rows, or between columns,
    are not affected)."""
    import numpy as np

    rows = sorted({r for r, _, _, _ in cells})
    cols = sorted({c for _, c, _, _ in cells})
    if not cells:
        return {}, {}
    row_at = {r: i for i, r in enumerate(rows)}
    col_at = {c: i for i, c in enumerate(cols)}
    ri = np.fromiter((row_at[r] for r, _, _, _ in cells), dtype=np.int64, count=len(cells))
    ci = np.fromiter((col_at[c] for _, c, _, _ in cells), dtype=np.int64, count=len(cells))
    w = np.fromiter((w for _, _, w, _ in cells), dtype=np.float64, count=len(cells))
    y = np.fromiter((y for _, _, _, y in cells), dtype=np.float64, count=len(cells))
    den_a = np.bincount(ri, weights=w, minlength=len(rows))
    den_b = np.bincount(ci, weights=w, minlength=len(cols))
    a = np.zeros(len(rows))
    b = np.zeros(len(cols))

    def fit(own: np.ndarray, other: np.ndarray, den: np.ndarray, n: int) -> np.ndarray:
        num = np.bincount(own, weights=w * (y - other), minlength=n)
        return np.divide(num, den, out=np.zeros(n), where=den > 0)

    b = fit(ci, a[ri], den_b, len(cols))
    for _ in range(max_rounds):
        new_a = fit(ri, b[ci], den_a, len(rows))
        change_a = float(np.max(np.abs(new_a - a)))
        a = new_a
        new_b = fit(ci, a[ri], den_b, len(cols))
        change_b = float(np.max(np.abs(new_b - b)))
        b = new_b
        if max(change_a, change_b) < tol:
            break
    return (
        {r: float(v) for r, v in zip(rows, a, strict=True)},
        {c: float(v) for c, v in zip(cols, b, strict=True)},
    )


def site_model_effects(rel: DataFrame) -> tuple[DataFrame, DataFrame]:
    """Per ISO week and job type, ln(HS23 cost per event / task reference) ~ site effect +
    CPU-model effect.

    ``rel`` has week, site, _cpu, job_type and _lrel (one row per successful job). Each cell
    (week, job type, site, model) is summarised by its median and job count; only that cell
    table (one row per week, job type, site and CPU model in the fleet, never the jobs) is
    collected, and the effects are fitted exactly on the driver (``two_way_effects``, weights =
    jobs), one fit per week and job type. Returns (site effects _s by week, site and job_type,
    model effects _m by week, _cpu and job_type). Without this, a CPU model installed mostly at
    a slow site looks slow, and a site with many slow-for-this-workload models looks slow.
    """
    cells = (
        rel.where(F.col("_lrel").isNotNull())
        .groupBy("week", "job_type", "site", "_cpu")
        .agg(
            F.count(F.lit(1)).alias("_n"),
            F.percentile_approx("_lrel", 0.5, 10000).alias("_y"),
        )
        .collect()
    )
    per_type: dict[tuple, list[tuple[str, str, float, float]]] = {}
    for c in cells:
        per_type.setdefault((c.week, c.job_type), []).append((c.site, c._cpu, float(c._n), c._y))
    site_rows, model_rows = [], []
    for (week, job_type), type_cells in per_type.items():
        # sorted: the sums of the fit in one order whatever order the cells were collected in
        # (floating-point sums in another order differ in the last bits; a rerun is identical)
        a, b = two_way_effects(sorted(type_cells))
        site_rows += [(week, site, job_type, v) for site, v in a.items()]
        model_rows += [(week, model, job_type, v) for model, v in b.items()]
    spark = rel.sparkSession
    return (
        rows_frame(spark, site_rows, "week date, site string, job_type string, _s double"),
        rows_frame(spark, model_rows, "week date, _cpu string, job_type string, _m double"),
    )


def outlier_metrics(jobs: DataFrame) -> DataFrame:
    """silver.jobs -> one row per (week, entity, entity_value, job_type, metric): value, n_jobs,
    log_se (standard error of ln value, ratio-of-sums linearisation over the jobs).

    Successful attempts only. cpu_efficiency = sum(cpu) / sum(wall x cores). The
    hs23_seconds_per_event metric is relative, as a ratio of sums: sum(cpu x hs23) / sum(events
    x expected), where expected is the task's median HS23-seconds per event in the same ISO
    week over every entity (the job type's when task_id is null), times, for a site, the effect
    of the job's CPU model, and for a CPU model, the effect of the job's site in that week
    (``site_model_effects``): a site is compared with the same tasks on the same CPU models
    elsewhere that week, a model with the same sites.

    Every reference is of the row's own week, so a week's rows depend on that week's jobs
    alone: they are kept per week (gold._state_outlier_metrics) and an incremental analyze
    recomputes only the weeks whose jobs changed. (For a task, the hs23 metric is therefore its
    cost against its own median of the week; the task rules use cpu_efficiency.)
    """
    ok_events = (
        (F.col("events") > 0) & F.col("hs23_per_core").isNotNull() & (F.col("cpu_seconds") > 0)
    )
    hs23_per_event = F.when(
        ok_events, F.col("cpu_seconds") * F.col("hs23_per_core") / F.col("events")
    )
    succ = (
        jobs.where(_success())
        .withColumn(
            "_norm_key",
            F.coalesce(F.col("task_id"), F.concat(F.lit("job_type:"), F.col("job_type"))),
        )
        .withColumn("_cpu", F.coalesce(F.col("cpu_model_norm"), F.col("cpu_model")))
        .withColumn("_x", hs23_per_event)
    )
    ref = succ.groupBy("week", "_norm_key").agg(F.percentile_approx("_x", 0.5, 10000).alias("_ref"))
    succ = (
        succ.join(ref, ["week", "_norm_key"], "left")
        .select(
            "week", "job_type", "site", "_cpu", "task_id", "events", "cpu_seconds",
            "cores_wall_seconds", "hs23_per_core", "_x", "_ref",
            F.log(F.try_divide(F.col("_x"), F.when(F.col("_ref") > 0, F.col("_ref"))))
            .alias("_lrel"),
        )
        # read twice (the site and model effects' cells, then the metrics): computed once
        .localCheckpoint(eager=True)
    )  # fmt: skip
    site_eff, model_eff = site_model_effects(succ)
    succ = succ.join(F.broadcast(site_eff), ["week", "site", "job_type"], "left").join(
        F.broadcast(model_eff), ["week", "_cpu", "job_type"], "left"
    )
    expected = F.col("events") * F.col("_ref")
    entities = F.array(
        F.struct(
            F.lit("site").alias("entity"),
            F.col("site").alias("entity_value"),
            (expected * F.exp("_m")).alias("_expected"),
        ),
        F.struct(
            F.lit("cpu_model").alias("entity"),
            F.col("_cpu").alias("entity_value"),
            (expected * F.exp("_s")).alias("_expected"),
        ),
        F.struct(
            F.lit("task").alias("entity"),
            F.col("task_id").alias("entity_value"),
            expected.alias("_expected"),
        ),
    )
    exploded = succ.select(
        "week",
        "job_type",
        "cpu_seconds",
        "cores_wall_seconds",
        "_x",
        "hs23_per_core",
        F.inline(entities),
    ).where(F.col("entity_value").isNotNull())
    has_expected = F.col("_x").isNotNull() & (F.col("_expected") > 0)
    hs_a = F.when(has_expected, F.col("cpu_seconds") * F.col("hs23_per_core"))
    hs_e = F.when(has_expected, F.col("_expected"))
    cpu, cw = F.col("cpu_seconds"), F.col("cores_wall_seconds")
    agg = exploded.groupBy("week", "entity", "entity_value", "job_type").agg(
        F.count(F.lit(1)).alias("_n_eff"),
        F.sum(cpu).alias("_cpu_s"),
        F.sum(cw).alias("_cw"),
        F.sum(cpu * cpu).alias("_eff_aa"),
        F.sum(cpu * cw).alias("_eff_ae"),
        F.sum(cw * cw).alias("_eff_ee"),
        F.count(hs_a).alias("_n_hs"),
        F.sum(hs_a).alias("_hs_a"),
        F.sum(hs_e).alias("_hs_e"),
        F.sum(hs_a * hs_a).alias("_hs_aa"),
        F.sum(hs_a * hs_e).alias("_hs_ae"),
        F.sum(hs_e * hs_e).alias("_hs_ee"),
    )

    def ratio(prefix: str, a: str, e: str, n: str) -> tuple[SparkColumn, SparkColumn]:
        """Ratio of sums A/E and the standard error of its log (linearised, over jobs)."""
        r = F.try_divide(F.col(a), F.when(F.col(e) > 0, F.col(e)))
        aa, ae, ee = (F.col(f"_{prefix}_{x}") for x in ("aa", "ae", "ee"))
        k = F.col(n)
        ss = F.greatest(aa - F.lit(2.0) * r * ae + r * r * ee, F.lit(0.0))
        var_r = F.when(k >= 2, k / (k - 1) * ss / (F.col(e) * F.col(e)))
        return r, F.try_divide(F.sqrt(var_r), F.when(r > 0, r))

    eff, eff_se = ratio("eff", "_cpu_s", "_cw", "_n_eff")
    hs, hs_se = ratio("hs", "_hs_a", "_hs_e", "_n_hs")
    metrics = F.array(
        F.struct(
            F.lit("cpu_efficiency").alias("metric"),
            eff.alias("value"),
            F.col("_n_eff").cast("bigint").alias("n_jobs"),
            eff_se.alias("log_se"),
        ),
        F.struct(
            F.lit("hs23_seconds_per_event").alias("metric"),
            hs.alias("value"),
            F.col("_n_hs").cast("bigint").alias("n_jobs"),
            hs_se.alias("log_se"),
        ),
    )
    return agg.select("week", "entity", "entity_value", "job_type", F.inline(metrics))


def _middle_ranks(n: SparkColumn) -> tuple[SparkColumn, SparkColumn]:
    """The lower and upper middle ranks (1-based) of n - 1 values."""
    m = n - F.lit(1)
    lo = F.floor((m - F.lit(1)) / F.lit(2)).cast("int") + F.lit(1)
    hi = F.ceil((m - F.lit(1)) / F.lit(2)).cast("int") + F.lit(1)
    return lo, hi


def _leave_one_out_median(n: SparkColumn, r: SparkColumn) -> SparkColumn:
    """The median of a group's n sorted values v_1..v_n without the one at rank r (1-based), as
    Spark's ``median`` computes it over the n - 1 others: 0.5 o_lo + 0.5 o_hi at their lower
    and upper middle ranks lo, hi, where o_k = v_k below r and v_(k+1) from r on. The group's
    v_lo, v_(lo+1), v_hi, v_(hi+1) are in the columns _lo, _lo1, _hi, _hi1."""
    lo, hi = _middle_ranks(n)
    o_lo = F.when(lo < r, F.col("_lo")).otherwise(F.col("_lo1"))
    o_hi = F.when(hi < r, F.col("_hi")).otherwise(F.col("_hi1"))
    return F.lit(0.5) * o_lo + F.lit(0.5) * o_hi


def _array_median(sorted_values: SparkColumn) -> SparkColumn:
    """The median of a sorted, non-empty array, as Spark's ``median`` computes it: the middle
    value, or 0.5 x lower + 0.5 x upper middle value."""
    n = F.size(sorted_values)
    lo, hi = _middle_ranks(n + F.lit(1))  # the middle ranks of n values
    return F.lit(0.5) * F.element_at(sorted_values, lo) + F.lit(0.5) * F.element_at(
        sorted_values, hi
    )


def peer_baselines(points: DataFrame, group: Sequence[str]) -> DataFrame:
    """Each row's peers: the other rows of its ``group``. points: ``group`` + entity_value and
    ``_log``, one row per entity; -> key + ``_med`` (median of the peers' ``_log``), ``_mad``
    (median of the peers' absolute deviations from ``_med``) and ``baseline_points`` (peers), for
    every row with at least one peer; exactly what a join of each row with its peers followed by
    ``median`` gives, in a sort per group instead of n^2 pairs.

    The median without the row at rank r takes at most three values in a group (r below, at or
    above the middle); for each of them the deviations of all rows are ranked once, and the MAD
    of a row is the median of those without its own deviation (the same rank arithmetic)."""
    g = list(group)
    key = [*g, "entity_value"]
    by_group = Window.partitionBy(*g)
    pts = (
        points.withColumn("_n", F.count(F.lit(1)).over(by_group))
        .where(F.col("_n") >= 2)
        .withColumn("_r", F.row_number().over(by_group.orderBy("_log")))
    )
    n, r = F.col("_n"), F.col("_r")
    lo, hi = _middle_ranks(n)
    ranks = {"_lo": lo, "_lo1": lo + F.lit(1), "_hi": hi, "_hi1": hi + F.lit(1)}

    def order_stats(df: DataFrame, keys: list[str], value: str, rank: str) -> DataFrame:
        """Per group of ``keys``: ``value`` at the four middle ranks of ``rank``."""
        stats = [F.max(F.when(F.col(rank) == k, F.col(value))).alias(c) for c, k in ranks.items()]
        return df.groupBy(*keys, "_n").agg(*stats)

    # the row's peers' median: a candidate id (which middle ranks shift) and its value
    cand = F.when(lo < r, F.lit(2)).otherwise(F.lit(0)) + F.when(hi < r, F.lit(1)).otherwise(0)
    medians = (
        pts.join(order_stats(pts, g, "_log", "_r"), [*g, "_n"])
        .withColumn("_cand", cand)
        .withColumn("_med", _leave_one_out_median(n, r))
        .select(*key, "_log", "_n", "_r", "_cand", "_med")
    )
    centres = medians.select(*g, "_cand", "_med").distinct()  # <= 3 a group
    dev = (
        medians.select(*key, "_log", "_n", F.col("_cand").alias("_own_cand"))
        .join(centres, g)
        .withColumn("_d", F.abs(F.col("_log") - F.col("_med")))
        .withColumn("_rd", F.row_number().over(Window.partitionBy(*g, "_cand").orderBy("_d")))
    )
    dev_stats = order_stats(dev, [*g, "_cand"], "_d", "_rd").join(centres, [*g, "_cand"])
    own = dev.where(F.col("_cand") == F.col("_own_cand")).select(*key, "_cand", "_n", "_rd")
    return own.join(dev_stats, [*g, "_cand", "_n"]).select(
        *key,
        "_med",
        _leave_one_out_median(n, F.col("_rd")).alias("_mad"),
        (F.col("_n") - F.lit(1)).cast("int").alias("baseline_points"),
    )


def efficiency_outliers(jobs: DataFrame, rules: DataFrame) -> DataFrame:
    """silver.jobs + rules -> the flagged rows of every week: :func:`outliers_from_metrics`
    of :func:`outlier_metrics`."""
    return outliers_from_metrics(outlier_metrics(jobs), rules)


def outliers_from_metrics(metrics: DataFrame, rules: DataFrame) -> DataFrame:
    """Rows of :func:`outlier_metrics` (gold._state_outlier_metrics, any set of whole weeks) +
    rules -> the flagged rows of those weeks (every week re-scored on each run: a rule edit or
    a changed week moves the baselines of the HISTORY_WEEKS weeks after it).

    For each active rule (latest enabled version per rule_id), rows of its entity and metric
    with n_jobs >= min_jobs are scored on the log scale: baseline = median of the peers' values
    (same week and job type, the entity itself left out) or of the entity's own previous
    HISTORY_WEEKS weeks; scale = sqrt(max(1.4826 x MAD, min_scale)^2 + log_se^2), where log_se
    is the sampling error of the entity's own value (ratio-of-sums linearisation over its
    jobs), so an entity with few, varied jobs needs a larger departure; robust_z = (ln value -
    baseline) / scale. Medians are exact; the own-history points come from a window over the
    entity's rows (at most HISTORY_WEEKS points a row, sorted in an array whose middle values
    give the median and MAD as Spark's ``median`` does), the peers' median and MAD
    from the order statistics of each (rule, week, job type) (``peer_baselines``: linear in the
    entities, where a join of every entity with its peers is quadratic: the tasks of a week at
    1 M jobs took 14 minutes on two cores). A row is kept when it has >=
    min_baseline_points baseline points and its z passes the threshold on the rule's side.

    Runs one Spark job when called: the scored rows (one per rule, week, entity and job type)
    are materialised, since each baseline and the score read them.
    """
    scored = (
        metrics.join(F.broadcast(_active_rules(rules)), ["entity", "metric"])
        .where((F.col("n_jobs") >= F.col("min_jobs")) & (F.col("value") > 0))
        .withColumn("_log", F.log(F.col("value")))
        .withColumn("_day", F.datediff(F.col("week"), F.lit("1970-01-05").cast("date")))
        # one row per (rule, week, entity, job type), read by each baseline and the score
        .localCheckpoint(eager=True)
    )
    key = ["rule_id", "week", "entity_value", "job_type"]
    # own history: the entity's values of the HISTORY_WEEKS weeks before, in one window
    previous = (
        Window.partitionBy("rule_id", "entity_value", "job_type")
        .orderBy("_day")
        .rangeBetween(-7 * HISTORY_WEEKS, -1)
    )
    history = (
        scored.where(F.col("comparison") == "own_history")
        .select(*key, F.array_sort(F.collect_list("_log").over(previous)).alias("_pts"))
        .where(F.size("_pts") > 0)
        .withColumn("_med", _array_median(F.col("_pts")))
        .select(
            *key,
            "_med",
            _array_median(F.array_sort(F.transform("_pts", lambda v: F.abs(v - F.col("_med")))))
            .alias("_mad"),
            F.size("_pts").alias("baseline_points"),
        )
    )  # fmt: skip
    peers = peer_baselines(
        scored.where(F.col("comparison") == "peers").select(*key, "_log"),
        ["rule_id", "week", "job_type"],
    )
    centre = history.unionByName(peers)
    peer_scale = F.greatest(F.lit(MAD_TO_SD) * F.col("_mad"), F.col("min_scale"), F.lit(1e-9))
    own_se = F.coalesce(F.col("log_se"), F.lit(0.0))
    scale = F.sqrt(peer_scale * peer_scale + own_se * own_se)
    scored = scored.join(centre, key).withColumn(
        "robust_z", (F.col("_log") - F.col("_med")) / scale
    )
    z, thr = F.col("robust_z"), F.col("threshold")
    flagged = (F.col("baseline_points") >= F.col("min_baseline_points")) & (
        ((F.col("direction") == "low") & (z <= -thr))
        | ((F.col("direction") == "high") & (z >= thr))
        | ((F.col("direction") == "both") & (F.abs(z) >= thr))
    )
    out = scored.where(flagged).withColumn("baseline", F.exp("_med"))
    deviation = (F.col("value") / F.col("baseline") - 1.0) * 100.0
    against = F.when(F.col("comparison") == "peers", F.concat(F.lit("other "), F.col("entity")))
    against = against.otherwise(F.lit("previous weeks"))
    evidence = F.format_string(
        "%s %s, %s, week %s: %s %.3f vs %.3f (%+.1f%%), robust z %.1f over %d jobs; "
        "baseline: median of %d %s (rule %s v%d)",
        F.col("entity"),
        F.col("entity_value"),
        F.col("job_type"),
        F.col("week").cast("string"),
        F.col("metric"),
        F.col("value"),
        F.col("baseline"),
        deviation,
        z,
        F.col("n_jobs"),
        F.col("baseline_points"),
        against,
        F.col("rule_id"),
        F.col("rule_version"),
    )
    return out.select(
        "week",
        "entity",
        "entity_value",
        "job_type",
        "metric",
        "value",
        "baseline",
        deviation.alias("deviation_pct"),
        "robust_z",
        "comparison",
        "baseline_points",
        "rule_id",
        "rule_version",
        "n_jobs",
        evidence.alias("evidence"),
    )
