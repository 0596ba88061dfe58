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

from collections.abc import Callable

from pyspark.sql import DataFrame

from gridlake.gold.efficiency.cpu_models import cpu_model_efficiency
from gridlake.gold.efficiency.failures import failure_vs_duration
from gridlake.gold.efficiency.job_length import init_intercepts, job_length_advice
from gridlake.gold.efficiency.memory import memory_per_thread_fit
from gridlake.gold.efficiency.multicore import multicore_fit, multicore_scaling
from gridlake.gold.efficiency.outliers import (
    DEFAULT_OUTLIER_RULES,
    OutlierRule,
    efficiency_outliers,
    outlier_metrics,
    outlier_rules_frame,
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
from gridlake.gold.efficiency.tables import (
    GOLD_CPU_MODEL_EFFICIENCY,
    GOLD_EFFICIENCY_OUTLIER_RULES,
    GOLD_EFFICIENCY_OUTLIERS,
    GOLD_FAILURE_VS_DURATION,
    GOLD_JOB_LENGTH_ADVICE,
    GOLD_MEMORY_PER_THREAD_FIT,
    GOLD_MULTICORE_FIT,
    GOLD_MULTICORE_SCALING,
    TABLES,
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
    "init_intercepts",
    "job_length_advice",
    "memory_per_thread_fit",
    "multicore_fit",
    "multicore_scaling",
    "optimal_job_length",
    "outlier_metrics",
    "outlier_rules_frame",
    "site_model_effects",
    "two_way_effects",
    "useful_fraction",
    "wilson_interval",
]

# --------------------------------------------------------------------------------------------
# All tables of the module
# --------------------------------------------------------------------------------------------

_TRANSFORMS: dict[str, Callable[[DataFrame], DataFrame]] = {
    GOLD_CPU_MODEL_EFFICIENCY.full_name: cpu_model_efficiency,
    GOLD_FAILURE_VS_DURATION.full_name: failure_vs_duration,
    GOLD_JOB_LENGTH_ADVICE.full_name: job_length_advice,
    GOLD_MULTICORE_SCALING.full_name: multicore_scaling,
    GOLD_MULTICORE_FIT.full_name: multicore_fit,
    GOLD_MEMORY_PER_THREAD_FIT.full_name: memory_per_thread_fit,
}


def compute(jobs: DataFrame, rules: DataFrame | None = None) -> dict[str, DataFrame]:
    """silver.jobs (and the outlier rules; DEFAULT_OUTLIER_RULES when None) -> every table of
    this module by full name, conformed to its definition. The site_efficiency tables are not
    included (gridlake.gold.site_efficiency). job_length_advice and efficiency_outliers run their
    small aggregations now (per job type; per job type, site and CPU model).
    """
    if rules is None:
        rules = outlier_rules_frame(jobs.sparkSession)
    out = {name: fn(jobs) for name, fn in _TRANSFORMS.items()}
    out[GOLD_EFFICIENCY_OUTLIER_RULES.full_name] = rules
    out[GOLD_EFFICIENCY_OUTLIERS.full_name] = efficiency_outliers(jobs, rules)
    tables = {t.full_name: t for t in TABLES}
    return {name: tables[name].conform(df) for name, df in out.items()}


def _build(inputs: Inputs) -> dict[str, DataFrame]:
    rules = inputs.rules(GOLD_EFFICIENCY_OUTLIER_RULES, outlier_rules_frame)
    return compute(inputs.read(SILVER_JOBS), rules)


GROUP = GoldGroup(
    "efficiency", TABLES, reads=(SILVER_JOBS,), build=_build, rules=GOLD_EFFICIENCY_OUTLIER_RULES
)
