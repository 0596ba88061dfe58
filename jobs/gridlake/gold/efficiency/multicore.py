"""gold.multicore_scaling and gold.multicore_fit: efficiency by core count, Amdahl fits."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from gridlake.gold.efficiency.state import tasks_state

# --------------------------------------------------------------------------------------------
# gold.multicore_scaling and gold.multicore_fit
# --------------------------------------------------------------------------------------------


def _multicore_points(tasks: DataFrame, strata: tuple[str, ...] = ()) -> DataFrame:
    """The state of any set of weeks (gold._state_efficiency_tasks rows) -> per (job_type,
    *strata, cores): the measures of multicore_scaling plus the fit inputs (y = 1/eff, its
    task-clustered variance), from per-task partial sums (a task's weeks, sites and CPU models
    added up first)."""
    per_task = tasks.groupBy("job_type", *strata, "cores", "cluster").agg(
        F.sum("jobs").alias("n"),
        F.sum("cpu_seconds").alias("c"),
        F.sum("cores_wall_seconds").alias("w"),
        F.sum("events").alias("ev"),
        F.sum("events_wall_seconds").alias("ev_w"),
        F.sum("rss_per_core_mb").alias("rss"),
        F.sum("rss_jobs").alias("rss_n"),
    )
    pts = per_task.groupBy("job_type", *strata, "cores").agg(
        F.sum("n").alias("jobs"),
        F.count(F.lit(1)).alias("tasks"),
        F.sum("c").alias("c"),
        F.sum("w").alias("w"),
        F.sum(F.col("c") * F.col("c")).alias("cc"),
        F.sum(F.col("w") * F.col("w")).alias("ww"),
        F.sum(F.col("c") * F.col("w")).alias("cw"),
        F.sum("ev").alias("ev"),
        F.sum("ev_w").alias("ev_w"),
        F.sum("rss").alias("rss"),
        F.sum("rss_n").alias("rss_n"),
    )
    c, w, t = F.col("c"), F.col("w"), F.col("tasks")
    y = F.try_divide(w, F.when(c > 0, c))
    # Linearised variance of the ratio W/C, tasks as clusters.
    resid_ss = F.col("ww") - F.lit(2.0) * y * F.col("cw") + y * y * F.col("cc")
    var_y = F.when(t >= 2, F.try_divide(t / (t - 1) * F.greatest(resid_ss, F.lit(0.0)), c * c))
    eff = F.try_divide(c, F.when(w > 0, w))
    return pts.select(
        "job_type",
        *strata,
        F.col("cores").cast("bigint").alias("cores"),
        "jobs",
        "tasks",
        (w / 3600.0).alias("core_hours"),
        (c / 3600.0).alias("cpu_hours"),
        eff.alias("cpu_efficiency"),
        (F.sqrt(var_y) * eff * eff).alias("cpu_efficiency_se"),
        F.try_divide(F.col("ev"), F.when(F.col("ev_w") > 0, F.col("ev_w") / 3600.0)).alias(
            "events_per_core_hour"
        ),
        F.try_divide(F.col("rss"), F.when(F.col("rss_n") > 0, F.col("rss_n"))).alias(
            "memory_per_core_mb"
        ),
        y.alias("_y"),
        var_y.alias("_var_y"),
    )


def multicore_scaling(jobs: DataFrame) -> DataFrame:
    """silver.jobs -> one row per (job_type, cores), successful attempts."""
    return multicore_scaling_from(tasks_state(jobs))


def multicore_scaling_from(tasks: DataFrame) -> DataFrame:
    """The state of any set of weeks (gold._state_efficiency_tasks rows) -> one row per
    (job_type, cores) over those weeks, successful attempts."""
    return _multicore_points(tasks).drop("_y", "_var_y")


def multicore_fit(jobs: DataFrame) -> DataFrame:
    """silver.jobs -> one row per job_type (:func:`multicore_fit_from`)."""
    return multicore_fit_from(tasks_state(jobs))


def multicore_fit_from(tasks: DataFrame) -> DataFrame:
    """The state of any set of weeks (gold._state_efficiency_tasks rows) -> one row per
    job_type: Amdahl fit within each site, combined over sites.

    Core counts are compared inside a site (the same storage, network and CPUs), because sites
    differ in efficiency and in their mix of core counts: a pooled fit would read a slow site
    that runs mostly 8-core jobs as serial fraction. Per (job_type, site) the maths of
    ``amdahl_fit`` (WLS of 1/eff on n-1, weights = core-hours, delta-method standard error from
    task-clustered point variances) runs as Spark aggregates; the site estimates of s are then
    combined by inverse variance (by core-hours when some site has no standard error).
    """
    pts = _multicore_points(tasks, ("site",)).where(
        F.col("_y").isNotNull() & (F.col("core_hours") > 0)
    )
    x, y, w, v = F.col("cores") - 1.0, F.col("_y"), F.col("core_hours"), F.col("_var_y")
    s = pts.groupBy("job_type", "site").agg(
        F.count(F.lit(1)).alias("n_core_counts"),
        F.count(v).alias("n_var"),
        F.sum(w).alias("sw"),
        F.sum(w * x).alias("swx"),
        F.sum(w * y).alias("swy"),
        F.sum(w * x * x).alias("swxx"),
        F.sum(w * x * y).alias("swxy"),
        F.sum(w * w * v).alias("m11"),
        F.sum(w * w * v * x).alias("m12"),
        F.sum(w * w * v * x * x).alias("m22"),
    )
    sw, swx, swy, swxx, swxy = (F.col(c) for c in ("sw", "swx", "swy", "swxx", "swxy"))
    m11, m12, m22 = F.col("m11"), F.col("m12"), F.col("m22")
    det = sw * swxx - swx * swx
    ok = (F.col("n_core_counts") >= 2) & (det > 0)
    det2 = F.when(ok, det * det)
    b = F.try_divide(sw * swxy - swx * swy, F.when(ok, det))
    a = F.try_divide(swy - b * swx, sw)
    p, q, r = swxx, -swx, sw
    var_a = F.try_divide(p * p * m11 + 2 * p * q * m12 + q * q * m22, det2)
    var_b = F.try_divide(q * q * m11 + 2 * q * r * m12 + r * r * m22, det2)
    cov = F.try_divide(p * q * m11 + (p * r + q * q) * m12 + q * r * m22, det2)
    var_s = (
        F.try_divide(var_b, a * a)
        + F.try_divide(b * b * var_a, F.pow(a, 4))
        - F.try_divide(2 * b * cov, F.pow(a, 3))
    )
    per_site = s.select(
        "job_type",
        F.try_divide(b, a).alias("s"),
        F.when(
            ok & (F.col("n_var") == F.col("n_core_counts")) & var_s.isNotNull(),
            F.greatest(var_s, F.lit(0.0)),
        ).alias("var_s"),
        F.try_divide(F.lit(1.0), a).alias("e1"),
        sw.alias("core_hours"),
    ).where(F.col("s").isNotNull())
    inv = F.when(F.col("var_s") > 0, F.lit(1.0) / F.col("var_s"))
    exact = F.col("var_s") == 0  # a site whose points lie exactly on the curve
    ch = F.col("core_hours")
    comb = per_site.groupBy("job_type").agg(
        F.count(F.lit(1)).alias("n_sites"),
        F.count("var_s").alias("n_var"),
        F.sum(inv).alias("sinv"),
        F.sum(inv * F.col("s")).alias("sinv_s"),
        F.sum(F.when(exact, ch)).alias("sex"),
        F.sum(F.when(exact, ch * F.col("s"))).alias("sex_s"),
        F.sum(ch).alias("sch"),
        F.sum(ch * F.col("s")).alias("sch_s"),
        F.sum(ch * F.col("e1")).alias("sch_e1"),
    )
    all_var = F.col("n_var") == F.col("n_sites")
    sf = (
        F.when(F.col("sex") > 0, F.col("sex_s") / F.col("sex"))
        .when(all_var & (F.col("sinv") > 0), F.col("sinv_s") / F.col("sinv"))
        .otherwise(F.col("sch_s") / F.col("sch"))
    )
    se = F.when(all_var & (F.col("sex") > 0), F.lit(0.0)).when(
        all_var & (F.col("sinv") > 0), F.sqrt(F.lit(1.0) / F.col("sinv"))
    )
    counts = pts.groupBy("job_type").agg(F.countDistinct("cores").alias("n_core_counts"))
    fit = comb.select(
        "job_type",
        sf.alias("serial_fraction"),
        se.alias("serial_fraction_se"),
        (F.col("sch_e1") / F.col("sch")).alias("e1"),
    )
    return counts.join(fit, "job_type", "left").select(
        "job_type",
        "serial_fraction",
        "serial_fraction_se",
        "e1",
        F.when(F.col("serial_fraction") > 0, F.floor(1.0 / (9.0 * F.col("serial_fraction"))) + 2)
        .cast("bigint")
        .alias("cores_below_90pct"),
        F.col("n_core_counts").cast("bigint").alias("n_core_counts"),
    )
