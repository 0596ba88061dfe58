"""gold.memory_per_thread_fit: what one more thread costs in memory, per job type."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from gridlake.gold.efficiency.state import tasks_state

# Two-sided 95 % normal quantile of the intervals (SCREEN_MADS: the MAD multiple beyond which a
# job's RSS is screened out of the fit, a leak, a mis-reported unit, before the least squares
# see it).
Z95 = 1.959963984540054
# The thread count the "saved" columns compare (one N-thread job vs N single-thread jobs);
# seed 002 compares 8 (CMS RECO: 4.1 GB for one 8-thread job vs 14.2 GB for eight 1-thread).
SAVED_AT_THREADS = 8


def memory_per_thread_fit(jobs: DataFrame) -> DataFrame:
    """silver.jobs -> one row per job_type (:func:`memory_per_thread_fit_from`)."""
    return memory_per_thread_fit_from(tasks_state(jobs))


def memory_per_thread_fit_from(tasks: DataFrame) -> DataFrame:
    """The state of any set of weeks (gold._state_efficiency_tasks rows) -> one row per
    job_type: peak RSS = base_mb + per_thread_mb x (threads - 1).

    Threads are the cores a job was allocated (grid multi-core jobs run one thread per core).
    Successful attempts with a peak RSS; per week, job_type and cores a job more than 5 robust
    standard deviations (1.4826 x MAD) from the median RSS was screened out when the state was
    built (gridlake.gold.efficiency.state). Ordinary least squares on the rest; the intervals
    are estimate +- 1.96 standard errors, the errors cluster-robust by task (jobs of one task
    share input and configuration, so they are not independent draws) with the G/(G-1)
    correction. A job type run on one core count gets its mean RSS as base_mb and no
    per_thread_mb. x = threads - 1 is the same for every job of a (task, core count), so the
    least squares and each task's share of the errors come from its sums of jobs and RSS per
    core count: Spark aggregates over the state, none per row in Python.
    """
    screened = tasks.groupBy("job_type").agg(F.sum("mem_screened").alias("screened_jobs"))
    kept = (
        tasks.where(F.col("mem_jobs") > 0)
        .groupBy("job_type", "cores", F.col("cluster").alias("_cluster"))
        .agg(F.sum("mem_jobs").alias("_nc"), F.sum("mem_rss_mb").alias("_yc"))
        .withColumn("_x", (F.col("cores") - 1).cast("double"))
    )
    x, nc, yc = F.col("_x"), F.col("_nc"), F.col("_yc")
    s = kept.groupBy("job_type").agg(
        F.sum(nc).alias("jobs"),
        F.countDistinct("_cluster").alias("tasks"),
        F.countDistinct("cores").alias("n_core_counts"),
        F.max("cores").alias("max_cores"),
        (F.sum(nc * x) / F.sum(nc)).alias("_xbar"),
        (F.sum(yc) / F.sum(nc)).alias("_ybar"),
        F.sum(nc * x * x).alias("_sxx"),
        F.sum(x * yc).alias("_sxy"),
    )
    n, xbar, ybar = F.col("jobs"), F.col("_xbar"), F.col("_ybar")
    sxx = F.col("_sxx") - n * xbar * xbar
    fit = s.withColumn("_Sxx", F.when(F.col("n_core_counts") >= 2, sxx)).withColumn(
        "_beta", F.try_divide(F.col("_sxy") - n * xbar * ybar, F.col("_Sxx"))
    )
    fit = fit.withColumn("_alpha", ybar - F.coalesce(F.col("_beta"), F.lit(0.0)) * xbar)
    # Each job's share of the estimates' errors (the influence of its residual), summed per
    # task: a (task, core count)'s jobs share x, so their residuals sum to y_c - n_c (a + b x).
    e = yc - nc * (F.col("_alpha") + F.coalesce(F.col("_beta"), F.lit(0.0)) * x)
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
