"""gold.memory_per_thread_fit: what one more thread costs in memory, per job type."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from gridlake.gold.efficiency.columns import _success

# Two-sided 95 % normal quantile of the intervals; the MAD multiple beyond which a job's RSS is
# screened out of the fit (a leak, a mis-reported unit) before the least squares see it.
Z95 = 1.959963984540054
SCREEN_MADS = 5.0
# The thread count the "saved" columns compare (one N-thread job vs N single-thread jobs);
# seed 002 compares 8 (CMS RECO: 4.1 GB for one 8-thread job vs 14.2 GB for eight 1-thread).
SAVED_AT_THREADS = 8


def memory_per_thread_fit(jobs: DataFrame) -> DataFrame:
    """silver.jobs -> one row per job_type: peak RSS = base_mb + per_thread_mb x (threads - 1).

    Threads are the cores a job was allocated (grid multi-core jobs run one thread per core).
    Successful attempts with a peak RSS; per (job_type, cores) a job more than 5 robust standard
    deviations (1.4826 x MAD) from the median RSS is screened out. Ordinary least squares on the
    rest; the intervals are estimate +- 1.96 standard errors, the errors cluster-robust by task
    (jobs of one task share input and configuration, so they are not independent draws) with
    the G/(G-1) correction. A job type run on one core count gets its mean RSS as base_mb and no
    per_thread_mb. Everything is Spark aggregates over the jobs (three passes), none per row in
    Python.
    """
    ok = _success() & (F.col("max_rss_mb") > 0) & (F.col("cores") >= 1)
    base = jobs.where(ok).select(
        "job_type",
        F.col("cores").cast("bigint").alias("cores"),
        F.coalesce(F.col("task_id"), F.concat(F.lit("job:"), "job_id")).alias("_cluster"),
        F.col("max_rss_mb").cast("double").alias("_y"),
    )
    med = base.groupBy("job_type", "cores").agg(F.median("_y").alias("_med"))
    dev = base.join(med, ["job_type", "cores"]).withColumn(
        "_dev", F.abs(F.col("_y") - F.col("_med"))
    )
    mad = dev.groupBy("job_type", "cores").agg(F.median("_dev").alias("_mad"))
    marked = dev.join(mad, ["job_type", "cores"]).withColumn(
        "_kept", F.col("_dev") <= F.lit(SCREEN_MADS * 1.4826) * F.col("_mad")
    )
    screened = marked.groupBy("job_type").agg(
        F.count(F.when(~F.col("_kept"), 1)).alias("screened_jobs")
    )
    kept = marked.where("_kept").withColumn("_x", (F.col("cores") - 1).cast("double"))
    x, y = F.col("_x"), F.col("_y")
    s = kept.groupBy("job_type").agg(
        F.count(F.lit(1)).alias("jobs"),
        F.countDistinct("_cluster").alias("tasks"),
        F.countDistinct("cores").alias("n_core_counts"),
        F.max("cores").alias("max_cores"),
        F.avg(x).alias("_xbar"),
        F.avg(y).alias("_ybar"),
        F.sum(x * x).alias("_sxx"),
        F.sum(x * y).alias("_sxy"),
    )
    n, xbar, ybar = F.col("jobs"), F.col("_xbar"), F.col("_ybar")
    sxx = F.col("_sxx") - n * xbar * xbar
    fit = s.withColumn("_Sxx", F.when(F.col("n_core_counts") >= 2, sxx)).withColumn(
        "_beta", F.try_divide(F.col("_sxy") - n * xbar * ybar, F.col("_Sxx"))
    )
    fit = fit.withColumn("_alpha", ybar - F.coalesce(F.col("_beta"), F.lit(0.0)) * xbar)
    # Each job's share of the estimates' errors (the influence of its residual), summed per task.
    e = y - F.col("_alpha") - F.coalesce(F.col("_beta"), F.lit(0.0)) * x
    centred = x - xbar
    u_beta = centred * e / F.col("_Sxx")
    u_alpha = F.when(F.col("_Sxx").isNull(), e / n).otherwise(
        (F.lit(1.0) / n - xbar * centred / F.col("_Sxx")) * e
    )
    per_task = (
        kept.join(fit.select("job_type", "jobs", "_xbar", "_Sxx", "_alpha", "_beta"), "job_type")
        .groupBy("job_type", "_cluster")
        .agg(F.sum(u_alpha).alias("_ua"), F.sum(u_beta).alias("_ub"))
    )
    variance = per_task.groupBy("job_type").agg(
        F.sum(F.col("_ua") * F.col("_ua")).alias("_va"),
        F.sum(F.col("_ub") * F.col("_ub")).alias("_vb"),
    )
    g = F.col("tasks")
    small = F.when(g >= 2, g / (g - 1))
    se_a = F.sqrt(small * F.col("_va"))
    se_b = F.sqrt(small * F.col("_vb"))
    alpha, beta = F.col("_alpha"), F.col("_beta")
    saved = F.lit(SAVED_AT_THREADS - 1) * (alpha - beta)
    return (
        fit.join(variance, "job_type")
        .join(screened, "job_type", "left")
        .select(
            "job_type",
            alpha.alias("base_mb"),
            (alpha - F.lit(Z95) * se_a).alias("base_mb_low"),
            (alpha + F.lit(Z95) * se_a).alias("base_mb_high"),
            beta.alias("per_thread_mb"),
            (beta - F.lit(Z95) * se_b).alias("per_thread_mb_low"),
            (beta + F.lit(Z95) * se_b).alias("per_thread_mb_high"),
            saved.alias(f"saved_mb_{SAVED_AT_THREADS}_threads"),
            F.try_divide(saved, F.lit(float(SAVED_AT_THREADS)) * alpha).alias(
                f"saved_fraction_{SAVED_AT_THREADS}_threads"
            ),
            F.col("jobs").cast("bigint").alias("jobs"),
            F.col("tasks").cast("bigint").alias("tasks"),
            F.coalesce("screened_jobs", F.lit(0)).cast("bigint").alias("screened_jobs"),
            F.col("n_core_counts").cast("bigint").alias("n_core_counts"),
            F.col("max_cores").cast("bigint").alias("max_cores"),
        )
    )
