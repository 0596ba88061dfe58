"""Gold tables of the job-efficiency analysis, one module per table family: ``cpu_models``,
``failures``, ``job_length``, ``multicore``, ``outliers``; their declarations in ``tables``,
parameters in ``params``, the pure-Python references of the maths in ``reference``. This
package module wires them into ``compute`` and the gold group, and re-exports the public names.

- gold.cpu_model_efficiency: CPU efficiency and CPU time per event by CPU model and job type;
- gold.failure_vs_duration: failure probability (Wilson interval) and hazard by job type, failure
  mode and log-spaced wall-clock bin;
- gold.job_length_advice: the job length that maximises useful work per wall-clock hour;
- gold.multicore_scaling and gold.multicore_fit: efficiency by core count, Amdahl fit;
- gold.efficiency_outlier_rules and gold.efficiency_outliers: the editable rules and the weekly
  list of entities (site, CPU model, task) that depart from their peers or their own history.

Transforms are pure DataFrame -> DataFrame functions on silver.jobs. Only small per-job-type
aggregates are ever collected to the driver (job_length_advice optimises one number per job type
there). Efficiencies are ratios of sums, never means of ratios.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from gridlake.gold.efficiency.cpu_models import cpu_model_efficiency, cpu_model_efficiency_from
from gridlake.gold.efficiency.failures import failure_vs_duration, failure_vs_duration_from
from gridlake.gold.efficiency.job_length import (
    init_intercepts,
    job_length_advice,
    job_length_advice_from,
)
from gridlake.gold.efficiency.memory import memory_per_thread_fit, memory_per_thread_fit_from
from gridlake.gold.efficiency.multicore import (
    multicore_fit,
    multicore_fit_from,
    multicore_scaling,
    multicore_scaling_from,
)
from gridlake.gold.efficiency.outliers import (
    DEFAULT_OUTLIER_RULES,
    OutlierRule,
    efficiency_outliers,
    outlier_metrics,
    outlier_rules_frame,
    outliers_from_metrics,
    site_model_effects,
    two_way_effects,
)
from gridlake.gold.efficiency.params import DURATION_BIN_EDGES_SECONDS, START_FAILURE_MODES
from gridlake.gold.efficiency.reference import (
    AmdahlFit,
    AmdahlPoint,
    amdahl_fit,
    optimal_job_length,
    useful_fraction,
    wilson_interval,
)
from gridlake.gold.efficiency.state import weekly_state
from gridlake.gold.efficiency.tables import (
    GOLD_CPU_MODEL_EFFICIENCY,
    GOLD_EFFICIENCY_OUTLIER_RULES,
    GOLD_EFFICIENCY_OUTLIERS,
    GOLD_FAILURE_VS_DURATION,
    GOLD_JOB_LENGTH_ADVICE,
    GOLD_MEMORY_PER_THREAD_FIT,
    GOLD_MULTICORE_FIT,
    GOLD_MULTICORE_SCALING,
    GOLD_STATE_EFFICIENCY_DURATIONS,
    GOLD_STATE_EFFICIENCY_MODELS,
    GOLD_STATE_EFFICIENCY_TASKS,
    GOLD_STATE_EFFICIENCY_VALUES,
    GOLD_STATE_OUTLIER_METRICS,
    STATE_TABLES,
    TABLES,
    TABLES_FROM_STATE,
)
from gridlake.gold.group import GoldGroup, Inputs
from gridlake.silver.tables import SILVER_JOBS

__all__ = [
    "DEFAULT_OUTLIER_RULES",
    "DURATION_BIN_EDGES_SECONDS",
    "GOLD_CPU_MODEL_EFFICIENCY",
    "GOLD_EFFICIENCY_OUTLIERS",
    "GOLD_EFFICIENCY_OUTLIER_RULES",
    "GOLD_FAILURE_VS_DURATION",
    "GOLD_JOB_LENGTH_ADVICE",
    "GOLD_MEMORY_PER_THREAD_FIT",
    "GOLD_MULTICORE_FIT",
    "GOLD_MULTICORE_SCALING",
    "START_FAILURE_MODES",
    "TABLES",
    "AmdahlFit",
    "AmdahlPoint",
    "OutlierRule",
    "amdahl_fit",
    "compute",
    "cpu_model_efficiency",
    "efficiency_outliers",
    "failure_vs_duration",
    "from_state",
    "init_intercepts",
    "job_length_advice",
    "memory_per_thread_fit",
    "multicore_fit",
    "multicore_scaling",
    "optimal_job_length",
    "outlier_metrics",
    "outlier_rules_frame",
    "outliers",
    "outliers_from_metrics",
    "site_model_effects",
    "tables",
    "two_way_effects",
    "useful_fraction",
    "weekly_state",
    "wilson_interval",
]

# --------------------------------------------------------------------------------------------
# All tables of the module
# --------------------------------------------------------------------------------------------


def from_state(states: dict[str, DataFrame]) -> dict[str, DataFrame]:
    """The state tables' rows of any set of weeks (full table name -> DataFrame) -> the six
    tables computed from them (full name -> DataFrame, conformed)."""
    tasks = states[GOLD_STATE_EFFICIENCY_TASKS.full_name]
    models = states[GOLD_STATE_EFFICIENCY_MODELS.full_name]
    values = states[GOLD_STATE_EFFICIENCY_VALUES.full_name]
    durations = states[GOLD_STATE_EFFICIENCY_DURATIONS.full_name]
    out = (
        (GOLD_CPU_MODEL_EFFICIENCY, cpu_model_efficiency_from(models, values)),
        (GOLD_FAILURE_VS_DURATION, failure_vs_duration_from(durations)),
        (GOLD_JOB_LENGTH_ADVICE, job_length_advice_from(tasks, durations, values)),
        (GOLD_MULTICORE_SCALING, multicore_scaling_from(tasks)),
        (GOLD_MULTICORE_FIT, multicore_fit_from(tasks)),
        (GOLD_MEMORY_PER_THREAD_FIT, memory_per_thread_fit_from(tasks)),
    )
    return {t.full_name: t.conform(df) for t, df in out}


def outliers(jobs: DataFrame, rules: DataFrame | None = None) -> dict[str, DataFrame]:
    """silver.jobs and the outlier rules (DEFAULT_OUTLIER_RULES when None) -> the three tables
    of the outliers group (full name -> DataFrame, conformed): the rules, the metrics of every
    week (gold._state_outlier_metrics) and the outliers scored from them."""
    metrics = GOLD_STATE_OUTLIER_METRICS.conform(outlier_metrics(jobs)).localCheckpoint(eager=True)
    return _outliers_from(metrics, metrics, jobs.sparkSession, rules)


def _outliers_from(
    new: DataFrame, every: DataFrame, spark: SparkSession, rules: DataFrame | None
) -> dict[str, DataFrame]:
    """The outliers group's tables: ``new`` (metrics rows to write), the outliers scored from
    ``every`` (the metrics of every week)."""
    if rules is None:
        rules = outlier_rules_frame(spark)
    return {
        GOLD_EFFICIENCY_OUTLIER_RULES.full_name: GOLD_EFFICIENCY_OUTLIER_RULES.conform(rules),
        GOLD_STATE_OUTLIER_METRICS.full_name: new,
        GOLD_EFFICIENCY_OUTLIERS.full_name: GOLD_EFFICIENCY_OUTLIERS.conform(
            outliers_from_metrics(every, rules)
        ),
    }


def compute(jobs: DataFrame, rules: DataFrame | None = None) -> dict[str, DataFrame]:
    """silver.jobs (and the outlier rules; DEFAULT_OUTLIER_RULES when None) -> every table of
    this module by full name, conformed to its definition: the state of every week, the six
    tables computed from it, the outlier rules and outliers. The site_efficiency tables are not
    included (gridlake.gold.site_efficiency). job_length_advice and efficiency_outliers run
    their small aggregations now (per job type; per job type, site and CPU model).
    """
    return {**tables(jobs), **outliers(jobs, rules)}


def tables(jobs: DataFrame) -> dict[str, DataFrame]:
    """silver.jobs -> the tables of the efficiency group: the state of every week and the six
    tables computed from it (full name -> DataFrame, conformed)."""
    states = {name: df.localCheckpoint(eager=True) for name, df in weekly_state(jobs).items()}
    return {**states, **from_state(states)}


def _build(inputs: Inputs) -> dict[str, DataFrame]:
    return tables(inputs.read(SILVER_JOBS))


def _build_weeks(inputs: Inputs, weeks: Sequence[date]) -> dict[str, DataFrame]:
    """The state of ``weeks`` recomputed from their jobs (the state tables' rows of those weeks
    are replaced), the other weeks' state read back, and the six tables from the state of
    every week (written whole)."""
    changed = F.col("week").isin(list(weeks))
    jobs = inputs.read(SILVER_JOBS).where(changed)
    new = {name: df.localCheckpoint(eager=True) for name, df in weekly_state(jobs).items()}
    # read (and materialised) before the state tables are rewritten with the new weeks
    every = {
        t.full_name: inputs.read(t).where(~changed).unionByName(new[t.full_name])
        .localCheckpoint(eager=True)
        for t in STATE_TABLES
    }  # fmt: skip
    return {**new, **from_state(every)}


def _build_outliers(inputs: Inputs) -> dict[str, DataFrame]:
    rules = inputs.rules(GOLD_EFFICIENCY_OUTLIER_RULES, outlier_rules_frame)
    return outliers(inputs.read(SILVER_JOBS), rules)


def _build_outliers_weeks(inputs: Inputs, weeks: Sequence[date]) -> dict[str, DataFrame]:
    """The metrics of ``weeks`` recomputed from their jobs (their rows of
    gold._state_outlier_metrics replaced), the other weeks' metrics read back, and every week
    scored again from the metrics of every week (gold.efficiency_outliers written whole: a
    changed week moves the own-history baselines of the weeks after it)."""
    changed = F.col("week").isin(list(weeks))
    jobs = inputs.read(SILVER_JOBS).where(changed)
    new = GOLD_STATE_OUTLIER_METRICS.conform(outlier_metrics(jobs)).localCheckpoint(eager=True)
    # read (and materialised) before the state table is rewritten with the new weeks
    every = (
        inputs.read(GOLD_STATE_OUTLIER_METRICS)
        .where(~changed)
        .unionByName(new)
        .localCheckpoint(eager=True)
    )
    rules = inputs.rules(GOLD_EFFICIENCY_OUTLIER_RULES, outlier_rules_frame)
    return _outliers_from(new, every, inputs.spark, rules)


GROUP = GoldGroup(
    "efficiency",
    (*STATE_TABLES, *TABLES_FROM_STATE),
    reads=(SILVER_JOBS,),
    build=_build,
    build_weeks=_build_weeks,
    weight=625,
)
# The outliers: each week's metrics from that week's jobs (kept per week), every week scored
# from them (a week's own-history baseline is its previous weeks'), so the scores are written
# whole; their own group, as they read no table of the efficiency group.
OUTLIERS_GROUP = GoldGroup(
    "efficiency_outliers",
    (GOLD_EFFICIENCY_OUTLIER_RULES, GOLD_STATE_OUTLIER_METRICS, GOLD_EFFICIENCY_OUTLIERS),
    reads=(SILVER_JOBS,),
    build=_build_outliers,
    build_weeks=_build_outliers_weeks,
    whole=(GOLD_EFFICIENCY_OUTLIERS,),
    rules=GOLD_EFFICIENCY_OUTLIER_RULES,
    weight=190,
)
