"""The efficiency family's gold tables: definitions, grain, keys and checks."""

from __future__ import annotations

from gridlake.tabledef import Check, Column, Table

# --------------------------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------------------------

_JOB_TYPE = Column("job_type", "STRING", "Job type (evgen, simul, pile, reprocessing, ...)")

GOLD_CPU_MODEL_EFFICIENCY = Table(
    database="gold",
    name="cpu_model_efficiency",
    keys=("microarchitecture", "cpu_model_norm", "job_type"),
    question=(
        "Which CPU models are slow or inefficient for a given job type, per event and per HS23?"
    ),
    example=(
        "SELECT microarchitecture, job_type, round(cpu_efficiency, 3) AS eff, "
        "round(median_hs23_seconds_per_event, 1) AS hs23_s_per_event FROM "
        "gold.cpu_model_efficiency ORDER BY job_type, hs23_s_per_event DESC"
    ),
    grain="one row per microarchitecture, cpu_model_norm and job_type.",
    description=(
        "CPU efficiency and CPU seconds per event by CPU model and job type, over every attempt "
        "in silver (per-event figures from successful attempts with events > 0)."
    ),
    columns=(
        Column("microarchitecture", "STRING", "e.g. Haswell, Zen 2; null when unknown"),
        Column("cpu_model_norm", "STRING", "Normalised CPU model (silver cpu_model_norm)"),
        _JOB_TYPE,
        Column("jobs", "BIGINT", "Job attempts"),
        Column("core_hours", "DOUBLE", "sum(wall_seconds x cores) / 3600"),
        Column("cpu_hours", "DOUBLE", "sum(cpu_seconds) / 3600"),
        Column("cpu_efficiency", "DOUBLE", "cpu_hours / core_hours (ratio of sums)"),
        Column("jobs_with_events", "BIGINT", "Successful attempts with events > 0"),
        Column(
            "median_cpu_seconds_per_event",
            "DOUBLE",
            "Median of cpu_seconds / events over successful attempts with events > 0 "
            "(exact over the values rounded to 1 % on the log scale: within 0.5 %)",
        ),
        Column(
            "p90_cpu_seconds_per_event",
            "DOUBLE",
            "90th percentile of cpu_seconds / events, same attempts (same rounding)",
        ),
        Column(
            "median_hs23_seconds_per_event",
            "DOUBLE",
            "Median of cpu_seconds x hs23_per_core / events (HS23-normalised CPU seconds per "
            "event), same attempts with a known HS23 (same rounding)",
        ),
    ),
    checks=(Check("not_null", "job_type"), Check("between", "jobs", {"min_value": 1})),
)

GOLD_FAILURE_VS_DURATION = Table(
    database="gold",
    name="failure_vs_duration",
    keys=("job_type", "failure_mode", "bin_index"),
    question="Do long jobs fail more, and which failure modes grow with duration?",
    example=(
        "SELECT job_type, duration_bin, attempts, round(failure_probability, 3) AS p_fail, "
        "round(wilson_low, 3) AS lo, round(wilson_high, 3) AS hi FROM gold.failure_vs_duration "
        "WHERE failure_mode = 'ALL' ORDER BY job_type, bin_index"
    ),
    grain=(
        "one row per job_type, failure_mode (each mode seen for the job type, plus 'ALL') and "
        "wall-clock bin holding at least one attempt."
    ),
    description=(
        "Failure probability and hazard as a function of wall-clock duration, by job type and "
        "failure mode. Bins: log-spaced from 10 min to 96 h (DURATION_BIN_EDGES_SECONDS) with "
        "open-ended first (< 10 min) and last (>= 96 h) bins."
    ),
    columns=(
        _JOB_TYPE,
        Column(
            "failure_mode",
            "STRING",
            "Failure mode counted in failures; 'ALL' = any failure; 'unknown' = failed without one",
        ),
        Column("bin_index", "INT", "0 (< 10 min) to 13 (>= 96 h)"),
        Column("duration_bin", "STRING", "Readable bin label, e.g. 49m-1.4h"),
        Column("bin_low_hours", "DOUBLE", "Lower edge of the bin, hours (inclusive)"),
        Column("bin_high_hours", "DOUBLE", "Upper edge of the bin, hours (exclusive); null: open"),
        Column("attempts", "BIGINT", "Attempts of the job type whose wall_seconds fall in the bin"),
        Column("failures", "BIGINT", "Of those, attempts failed with this failure mode"),
        Column("failure_probability", "DOUBLE", "failures / attempts"),
        Column("wilson_low", "DOUBLE", "Lower end of the 95% Wilson score interval"),
        Column("wilson_high", "DOUBLE", "Upper end of the 95% Wilson score interval"),
        Column(
            "exposure_wall_hours",
            "DOUBLE",
            "Wall-hours at risk in the bin: over all attempts of the job type, the part of each "
            "attempt's run time that falls inside the bin (life table)",
        ),
        Column(
            "hazard_per_hour",
            "DOUBLE",
            "failures / exposure_wall_hours: cause-specific hazard in the bin",
        ),
        Column("wasted_core_hours", "DOUBLE", "Core-hours of the failed attempts counted"),
    ),
    checks=(
        Check("not_null", "job_type"),
        Check("not_null", "failure_mode"),
        Check("between", "attempts", {"min_value": 1}),
        Check("between", "failure_probability", {"min_value": 0, "max_value": 1}),
    ),
)

GOLD_JOB_LENGTH_ADVICE = Table(
    database="gold",
    name="job_length_advice",
    keys=("job_type",),
    question="How long should jobs of each type be, and how many core-hours would that save?",
    example=(
        "SELECT job_type, round(init_seconds) AS init_s, round(optimal_hours, 1) AS optimal_h, "
        "round(current_median_hours, 1) AS today_h, round(core_hours_saved_per_year) AS "
        "saved_per_year FROM gold.job_length_advice ORDER BY saved_per_year DESC"
    ),
    grain="one row per job_type.",
    description=(
        "Optimal job length per job type under the model: initialisation I, then payload T; "
        "duration-dependent failures at constant hazard h over I+T (START_FAILURE_MODES "
        "excluded). Useful work per wall-clock U(T) = h T / (exp(h (I+T)) - 1), "
        "-> T / (I+T) as h -> 0."
    ),
    columns=(
        _JOB_TYPE,
        Column("n_jobs", "BIGINT", "Job attempts of the job type"),
        Column(
            "n_init_groups",
            "BIGINT",
            "(task_id, cpu_model, site) groups with >= 3 successful attempts and varying events "
            "that gave an intercept",
        ),
        Column(
            "init_seconds",
            "DOUBLE",
            "I: weighted mean over the groups of the intercept of wall_seconds vs events "
            "(successful attempts, events > 0), weights = the group's information on its "
            "intercept / its task's mean wall-clock squared; floored at 0; null when no group "
            "qualifies",
        ),
        Column("hazard_failures", "BIGINT", "Failed attempts of non-start failure modes"),
        Column(
            "hazard_per_hour",
            "DOUBLE",
            "h: hazard_failures / wall-hours of all attempts of the job type",
        ),
        Column(
            "optimal_hours",
            "DOUBLE",
            "T* maximising U, searched in [1 min, 200 h] (200 h when h = 0)",
        ),
        Column("expected_useful_fraction", "DOUBLE", "U(T*)"),
        Column(
            "current_median_hours",
            "DOUBLE",
            "Median of (wall_seconds - I) over successful attempts, hours",
        ),
        Column("current_useful_fraction", "DOUBLE", "U at current_median_hours"),
        Column(
            "core_hours_per_year",
            "DOUBLE",
            "Core-hours of the job type scaled to 365 days by the span of end_time of the input",
        ),
        Column(
            "core_hours_saved_per_year",
            "DOUBLE",
            "core_hours_per_year x (1 - current_useful_fraction / expected_useful_fraction)",
        ),
    ),
    checks=(Check("not_null", "job_type"), Check("unique", "job_type")),
)

GOLD_MULTICORE_SCALING = Table(
    database="gold",
    name="multicore_scaling",
    keys=("job_type", "cores"),
    question="How does CPU efficiency change with the number of cores a job uses?",
    example=(
        "SELECT job_type, cores, jobs, round(cpu_efficiency, 3) AS eff, round(memory_per_core_mb)"
        " AS mb_per_core FROM gold.multicore_scaling ORDER BY job_type, cores"
    ),
    grain="one row per job_type and cores.",
    description=(
        "Efficiency, throughput and memory by number of cores, over successful attempts only "
        "(failed attempts would mix failure effects into scaling)."
    ),
    columns=(
        _JOB_TYPE,
        Column("cores", "BIGINT", "Cores allocated"),
        Column("jobs", "BIGINT", "Successful attempts"),
        Column("tasks", "BIGINT", "Distinct task_id (an attempt without one counts alone)"),
        Column("core_hours", "DOUBLE", "sum(wall_seconds x cores) / 3600"),
        Column("cpu_hours", "DOUBLE", "sum(cpu_seconds) / 3600"),
        Column("cpu_efficiency", "DOUBLE", "cpu_hours / core_hours (ratio of sums)"),
        Column(
            "cpu_efficiency_se",
            "DOUBLE",
            "Standard error of cpu_efficiency, ratio-estimator linearisation clustered by task "
            "(null with fewer than 2 tasks)",
        ),
        Column(
            "events_per_core_hour",
            "DOUBLE",
            "sum(events) / core-hours over attempts reporting events (ratio of sums)",
        ),
        Column("memory_per_core_mb", "DOUBLE", "Mean of max_rss_mb / cores"),
    ),
    checks=(Check("not_null", "job_type"), Check("between", "cores", {"min_value": 1})),
)

GOLD_MULTICORE_FIT = Table(
    database="gold",
    name="multicore_fit",
    keys=("job_type",),
    question=(
        "What is each job type's serial fraction, and above how many cores does it stop paying?"
    ),
    example=(
        "SELECT job_type, round(serial_fraction, 4) AS s, round(serial_fraction_se, 4) AS se, "
        "cores_below_90pct FROM gold.multicore_fit ORDER BY s DESC"
    ),
    grain="one row per job_type.",
    description=(
        "Amdahl fit per job type: eff(n) = e1 / (1 + s (n-1)), i.e. 1/eff(n) = a + b (n-1) "
        "with e1 = 1/a and s = b/a, by weighted least squares over the core counts run at one "
        "site (weights = core-hours), the site estimates combined by inverse variance. Core "
        "counts are compared within a site because sites differ in efficiency and in their "
        "mix of core counts; a pooled fit reads a slow site running mostly 8-core jobs as "
        "serial fraction."
    ),
    columns=(
        _JOB_TYPE,
        Column("serial_fraction", "DOUBLE", "s = b / a; null with fewer than 2 core counts"),
        Column(
            "serial_fraction_se",
            "DOUBLE",
            "Standard error of s: delta method on the WLS sandwich covariance of (a, b), each "
            "point's variance from the task-clustered variance of its 1/eff, per site; "
            "combined as sqrt(1 / sum(1/se^2)); null when a contributing site has none",
        ),
        Column("e1", "DOUBLE", "Fitted single-core efficiency 1/a, core-hour mean over sites"),
        Column(
            "cores_below_90pct",
            "BIGINT",
            "Smallest n with parallel efficiency 1/(1 + s (n-1)) < 0.9; null when s <= 0",
        ),
        Column("n_core_counts", "BIGINT", "Distinct core counts in the fit"),
    ),
    checks=(Check("not_null", "job_type"), Check("unique", "job_type")),
)

_RULE_COLUMNS = (
    Column("rule_version", "INT", "Version of the rule; the highest version of a rule_id applies"),
    Column("rule_id", "STRING", "Stable name of the rule"),
    Column("entity", "STRING", "What is scored: site | cpu_model | task"),
    Column(
        "metric",
        "STRING",
        "cpu_efficiency (successful attempts, ratio of sums) | hs23_seconds_per_event "
        "(HS23-normalised CPU s/event relative to the same tasks elsewhere; 1.0 = typical)",
    ),
    Column(
        "comparison",
        "STRING",
        "own_history: vs the entity's previous 8 weeks | peers: vs the same job type at the "
        "other entities in the same week",
    ),
    Column("direction", "STRING", "Which side is flagged: low | high | both"),
    Column("threshold", "DOUBLE", "|robust z| at or above which a row is flagged"),
    Column("min_jobs", "INT", "Minimum attempts behind a value (scored row and baseline points)"),
    Column("min_baseline_points", "INT", "Minimum peers or previous weeks behind the baseline"),
    Column(
        "min_scale",
        "DOUBLE",
        "Floor of the robust standard deviation (log scale, 0.03 ~ 3%): a MAD of 0 never divides",
    ),
    Column("enabled", "BOOLEAN", "false retires the rule (as a new version)"),
    Column("description", "STRING", "What the rule is for"),
)

GOLD_EFFICIENCY_OUTLIER_RULES = Table(
    database="gold",
    name="efficiency_outlier_rules",
    keys=("rule_id", "rule_version"),
    question="Which rules decide what counts as an efficiency outlier (editable, versioned)?",
    example=(
        "SELECT rule_id, rule_version, entity, metric, comparison, threshold, enabled FROM "
        "gold.efficiency_outlier_rules ORDER BY rule_id, rule_version"
    ),
    grain="one row per rule_id and rule_version.",
    description=(
        "Editable rules of gold.efficiency_outliers: add a row with a higher rule_version to "
        "change a rule; every week is re-scored with the latest enabled version of each rule."
    ),
    columns=_RULE_COLUMNS,
    checks=(Check("not_null", "rule_id"), Check("not_null", "rule_version")),
)

GOLD_EFFICIENCY_OUTLIERS = Table(
    database="gold",
    name="efficiency_outliers",
    stable_rows=False,
    keys=("week", "rule_id", "entity_value", "job_type"),
    question="Which sites, CPU models and tasks should I look at this week, and why?",
    example=(
        "SELECT week, entity, entity_value, job_type, round(deviation_pct, 1) AS dev_pct, "
        "round(robust_z, 1) AS z, rule_id FROM gold.efficiency_outliers ORDER BY week DESC, z "
        "LIMIT 20"
    ),
    grain="one row per week, rule_id, entity_value and job_type flagged by the rule.",
    description=(
        "The list an operator starts the week with: sites, CPU models and tasks whose CPU "
        "efficiency or HS23-normalised CPU time per event departs from their peers or their "
        "own history (robust z on the log of the metric: median and MAD)."
    ),
    columns=(
        Column("week", "DATE", "Monday of the ISO week scored"),
        Column("entity", "STRING", "site | cpu_model | task"),
        Column("entity_value", "STRING", "The site, normalised CPU model or task_id"),
        _JOB_TYPE,
        Column("metric", "STRING", "cpu_efficiency | hs23_seconds_per_event"),
        Column("value", "DOUBLE", "The metric for the entity, job type and week"),
        Column("baseline", "DOUBLE", "Median of the baseline (peers or previous weeks)"),
        Column("deviation_pct", "DOUBLE", "100 x (value / baseline - 1)"),
        Column(
            "robust_z",
            "DOUBLE",
            "(ln value - median ln baseline) / sqrt(max(1.4826 x MAD, min_scale)^2 + "
            "log_se^2), log_se the sampling error of ln value over the entity's jobs",
        ),
        Column("comparison", "STRING", "peers | own_history"),
        Column("baseline_points", "INT", "Peers or previous weeks behind the baseline"),
        Column("rule_id", "STRING", "Rule that flagged the row"),
        Column("rule_version", "INT", "Version of that rule"),
        Column("n_jobs", "BIGINT", "Successful attempts behind value"),
        Column("evidence", "STRING", "One readable sentence with the figures"),
    ),
    checks=(Check("not_null", "week"), Check("not_null", "rule_id")),
)

GOLD_MEMORY_PER_THREAD_FIT = Table(
    database="gold",
    name="memory_per_thread_fit",
    keys=("job_type",),
    question=(
        "How much memory does one more thread cost, and how much does one N-thread job save "
        "against N single-thread jobs?"
    ),
    example=(
        "SELECT job_type, round(base_mb) AS base_mb, round(per_thread_mb) AS per_thread_mb, "
        "round(per_thread_mb_low) AS low, round(per_thread_mb_high) AS high, "
        "round(4 * base_mb - (base_mb + 3 * per_thread_mb)) AS saved_mb_4_threads, "
        "round(saved_fraction_8_threads, 2) AS saved_8 FROM gold.memory_per_thread_fit "
        "ORDER BY job_type"
    ),
    grain="one row per job_type.",
    description=(
        "Peak RSS = base_mb + per_thread_mb x (threads - 1), threads = cores allocated, fitted "
        "by least squares over the successful attempts with a peak RSS (per ISO week, job type "
        "and core count, jobs beyond 5 robust standard deviations of the median RSS screened out "
        "first); "
        "intervals are +-1.96 standard errors, cluster-robust by task. One N-thread job instead "
        "of N single-thread jobs saves N x base_mb - (base_mb + (N-1) x per_thread_mb) = "
        "(N-1) x (base_mb - per_thread_mb) (seed 002: 8 threads in 4.1 GB against 14.2 GB)."
    ),
    columns=(
        _JOB_TYPE,
        Column("base_mb", "DOUBLE", "Fitted peak RSS of a single-thread job, MB"),
        Column("base_mb_low", "DOUBLE", "Lower bound of base_mb's 95 % interval"),
        Column("base_mb_high", "DOUBLE", "Upper bound of base_mb's 95 % interval"),
        Column(
            "per_thread_mb",
            "DOUBLE",
            "Fitted extra peak RSS per extra thread, MB; null with one core count",
        ),
        Column("per_thread_mb_low", "DOUBLE", "Lower bound of per_thread_mb's 95 % interval"),
        Column("per_thread_mb_high", "DOUBLE", "Upper bound of per_thread_mb's 95 % interval"),
        Column(
            "saved_mb_8_threads",
            "DOUBLE",
            "Memory one 8-thread job saves against eight single-thread jobs: 7 x (base_mb - "
            "per_thread_mb); null with one core count",
        ),
        Column(
            "saved_fraction_8_threads",
            "DOUBLE",
            "saved_mb_8_threads / (8 x base_mb)",
        ),
        Column("jobs", "BIGINT", "Successful attempts in the fit"),
        Column("tasks", "BIGINT", "Distinct task_id among them (clusters of the errors)"),
        Column("screened_jobs", "BIGINT", "Attempts screened out (RSS beyond 5 robust SD)"),
        Column("n_core_counts", "BIGINT", "Distinct core counts in the fit"),
        Column("max_cores", "BIGINT", "Largest core count in the fit"),
    ),
    checks=(
        Check("not_null", "job_type"),
        Check("unique", "job_type"),
        Check("not_null", "base_mb"),
        Check("between", "jobs", {"min_value": 1}),
    ),
)


# --------------------------------------------------------------------------------------------
# Internal state: per-week sufficient statistics (incremental analyze)
# --------------------------------------------------------------------------------------------

_WEEK = Column("week", "DATE", "Monday of the ISO week of the jobs' end_time")
_STATE_NOTE = (
    " Internal state (no grid view): each ISO week computed from that week's jobs alone; "
    "incremental analyze replaces the weeks whose jobs changed and recomputes the tables from "
    "the state of every week, never from the jobs."
)

GOLD_STATE_EFFICIENCY_TASKS = Table(
    database="gold",
    name="_state_efficiency_tasks",
    keys=("week", "job_type", "site", "cpu_model", "cores", "cluster"),
    partition_by=("week",),
    stable_rows=False,  # a week can lose every row (its jobs moved away)
    question="What do the multicore, memory and job-length fits read (sums per task and week)?",
    example=(
        "SELECT week, count(*) AS task_rows, sum(jobs) AS jobs, sum(mem_screened) AS screened "
        "FROM gold._state_efficiency_tasks GROUP BY week ORDER BY week"
    ),
    grain=(
        "one row per ISO week, job type, site, CPU model, core count and task (an attempt "
        "without a task_id is a cluster of its own) with a successful attempt."
    ),
    description=(
        "Sums over the successful attempts of gold.multicore_scaling, gold.multicore_fit "
        "(CPU and core-wall seconds, events, RSS per core), gold.memory_per_thread_fit (peak "
        "RSS of the attempts its screening kept: median and MAD per week, job type and core "
        "count) and the initialisation intercepts of gold.job_length_advice (least-squares "
        "sums of wall_seconds on events)." + _STATE_NOTE
    ),
    columns=(
        _WEEK,
        _JOB_TYPE,
        Column("site", "STRING", "Grid site"),
        Column("cpu_model", "STRING", "CPU model string"),
        Column("cores", "BIGINT", "Cores allocated"),
        Column("cluster", "STRING", "task_id, or 'job:<job_id>' for an attempt without one"),
        Column("task_id", "STRING", "task_id (null for an attempt without one)"),
        Column("jobs", "BIGINT", "Successful attempts"),
        Column("cpu_seconds", "DOUBLE", "sum(cpu_seconds)"),
        Column("cores_wall_seconds", "DOUBLE", "sum(wall_seconds x cores)"),
        Column("events", "DOUBLE", "sum(events) over attempts reporting events"),
        Column("events_wall_seconds", "DOUBLE", "sum(wall x cores) over the same attempts"),
        Column("rss_per_core_mb", "DOUBLE", "sum(max_rss_mb / cores)"),
        Column("rss_jobs", "BIGINT", "Attempts reporting max_rss_mb"),
        Column("mem_jobs", "BIGINT", "Attempts in the memory fit (screening kept them)"),
        Column("mem_rss_mb", "DOUBLE", "sum(max_rss_mb) of those attempts"),
        Column("mem_screened", "BIGINT", "Attempts the memory screening dropped"),
        Column("init_n", "BIGINT", "Attempts with events > 0 and a task_id"),
        Column("init_sx", "DOUBLE", "sum(events) of those attempts"),
        Column("init_sy", "DOUBLE", "sum(wall_seconds)"),
        Column("init_sxy", "DOUBLE", "sum(events x wall_seconds)"),
        Column("init_sxx", "DOUBLE", "sum(events^2)"),
    ),
    checks=(Check("not_null", "week"), Check("not_null", "cluster")),
)

GOLD_STATE_EFFICIENCY_MODELS = Table(
    database="gold",
    name="_state_efficiency_models",
    keys=("week", "microarchitecture", "cpu_model_norm", "job_type"),
    partition_by=("week",),
    stable_rows=False,
    question="What does gold.cpu_model_efficiency add up (sums per CPU model and week)?",
    example=(
        "SELECT cpu_model_norm, sum(jobs) AS jobs, sum(cpu_seconds) / sum(cores_wall_seconds) "
        "AS eff FROM gold._state_efficiency_models GROUP BY cpu_model_norm ORDER BY jobs DESC"
    ),
    grain="one row per ISO week, microarchitecture, cpu_model_norm and job type.",
    description="Sums of gold.cpu_model_efficiency over every attempt." + _STATE_NOTE,
    columns=(
        _WEEK,
        Column("microarchitecture", "STRING", "e.g. Haswell, Zen 2; null when unknown"),
        Column("cpu_model_norm", "STRING", "Normalised CPU model (silver cpu_model_norm)"),
        _JOB_TYPE,
        Column("jobs", "BIGINT", "Job attempts"),
        Column("cores_wall_seconds", "DOUBLE", "sum(wall_seconds x cores)"),
        Column("cpu_seconds", "DOUBLE", "sum(cpu_seconds)"),
        Column("jobs_with_events", "BIGINT", "Successful attempts with events > 0"),
    ),
    checks=(Check("not_null", "week"),),
)

GOLD_STATE_EFFICIENCY_VALUES = Table(
    database="gold",
    name="_state_efficiency_values",
    keys=("week", "measure", "microarchitecture", "cpu_model_norm", "job_type", "value"),
    partition_by=("week",),
    stable_rows=False,
    question="What are the medians of the efficiency tables taken over (value counts per week)?",
    example=(
        "SELECT measure, count(*) AS distinct_values, sum(n) AS jobs FROM "
        "gold._state_efficiency_values GROUP BY measure"
    ),
    grain=(
        "one row per ISO week, measure, microarchitecture, cpu_model_norm, job type and value "
        "(CPU model columns null for the wall-clock measure)."
    ),
    description=(
        "How many attempts had each value, for the percentiles of gold.cpu_model_efficiency "
        "(cpu_seconds_per_event and hs23_seconds_per_event) and the median wall-clock of "
        "gold.job_length_advice (success_wall_seconds), each value rounded to a step of 0.01 on "
        "the log scale (within 0.5 %). A percentile over these counts is the exact percentile "
        "of the rounded values, however many weeks are added up." + _STATE_NOTE
    ),
    columns=(
        _WEEK,
        Column(
            "measure",
            "STRING",
            "cpu_seconds_per_event | hs23_seconds_per_event | success_wall_seconds",
        ),
        Column("microarchitecture", "STRING", "Microarchitecture (null for success_wall_seconds)"),
        Column("cpu_model_norm", "STRING", "Normalised CPU model (null for success_wall_seconds)"),
        _JOB_TYPE,
        Column("value", "DOUBLE", "The value (rounded for the per-event measures)"),
        Column("n", "BIGINT", "Attempts with that value"),
    ),
    checks=(Check("not_null", "week"), Check("not_null", "measure")),
)

GOLD_STATE_EFFICIENCY_DURATIONS = Table(
    database="gold",
    name="_state_efficiency_durations",
    keys=("week", "job_type", "bin_index", "failure_mode"),
    partition_by=("week",),
    stable_rows=False,
    question="What do the failure-vs-duration and job-length tables add up (per bin and week)?",
    example=(
        "SELECT job_type, bin_index, sum(CASE WHEN failure_mode = '*' THEN attempts END) AS "
        "attempts, sum(CASE WHEN failure_mode <> '*' THEN attempts END) AS failed FROM "
        "gold._state_efficiency_durations GROUP BY job_type, bin_index ORDER BY 1, 2"
    ),
    grain=(
        "one row per ISO week, job type, wall-clock bin and failure mode ('*': every attempt "
        "of the bin, for every bin)."
    ),
    description=(
        "Counts and sums of gold.failure_vs_duration and gold.job_length_advice: attempts, "
        "exposure, wall and core-wall seconds and the span of end times per bin ('*'), failed "
        "attempts and their core-wall seconds per failure mode." + _STATE_NOTE
    ),
    columns=(
        _WEEK,
        _JOB_TYPE,
        Column("bin_index", "INT", "0 (< 10 min) to 13 (>= 96 h)"),
        Column("failure_mode", "STRING", "'*' (every attempt), or the mode of failed attempts"),
        Column(
            "attempts",
            "BIGINT",
            "Attempts whose wall_seconds fall in the bin ('*'), or the failed ones of the mode",
        ),
        Column("exposure_seconds", "DOUBLE", "Run time of every attempt inside the bin ('*')"),
        Column("wall_seconds", "DOUBLE", "sum(wall_seconds) ('*')"),
        Column("cores_wall_seconds", "DOUBLE", "sum(wall_seconds x cores) of those attempts"),
        Column("first_end", "TIMESTAMP", "Earliest end_time ('*')"),
        Column("last_end", "TIMESTAMP", "Latest end_time ('*')"),
    ),
    checks=(Check("not_null", "week"), Check("not_null", "failure_mode")),
)

GOLD_STATE_OUTLIER_METRICS = Table(
    database="gold",
    name="_state_outlier_metrics",
    keys=("week", "entity", "entity_value", "job_type", "metric"),
    partition_by=("week",),
    stable_rows=False,
    question="What does gold.efficiency_outliers score (each entity's metrics per week)?",
    example=(
        "SELECT week, entity, count(*) AS n_rows, sum(n_jobs) AS jobs FROM "
        "gold._state_outlier_metrics GROUP BY week, entity ORDER BY week DESC, entity"
    ),
    grain="one row per ISO week, entity, entity_value, job type and metric.",
    description=(
        "The metrics gold.efficiency_outliers scores, per site, CPU model and task: CPU "
        "efficiency (ratio of sums) and HS23-seconds per event relative to the same tasks on "
        "the same CPU models or sites that week (references of the row's own week only)."
        + _STATE_NOTE
    ),
    columns=(
        _WEEK,
        Column("entity", "STRING", "site | cpu_model | task"),
        Column("entity_value", "STRING", "The site, normalised CPU model or task_id"),
        _JOB_TYPE,
        Column("metric", "STRING", "cpu_efficiency | hs23_seconds_per_event"),
        Column("value", "DOUBLE", "The metric over the entity's successful attempts of the week"),
        Column("n_jobs", "BIGINT", "Successful attempts behind value"),
        Column(
            "log_se",
            "DOUBLE",
            "Standard error of ln value over those attempts (ratio-of-sums linearisation)",
        ),
    ),
    checks=(Check("not_null", "week"), Check("not_null", "metric")),
)

STATE_TABLES: tuple[Table, ...] = (
    GOLD_STATE_EFFICIENCY_TASKS,
    GOLD_STATE_EFFICIENCY_MODELS,
    GOLD_STATE_EFFICIENCY_VALUES,
    GOLD_STATE_EFFICIENCY_DURATIONS,
)


# The tables computed from the state (the efficiency group), and every table of the module
# (with the outlier rules and outliers: the efficiency_outliers group).
TABLES_FROM_STATE: tuple[Table, ...] = (
    GOLD_CPU_MODEL_EFFICIENCY,
    GOLD_FAILURE_VS_DURATION,
    GOLD_JOB_LENGTH_ADVICE,
    GOLD_MULTICORE_SCALING,
    GOLD_MULTICORE_FIT,
    GOLD_MEMORY_PER_THREAD_FIT,
)
TABLES: tuple[Table, ...] = (
    *STATE_TABLES,
    *TABLES_FROM_STATE,
    GOLD_EFFICIENCY_OUTLIER_RULES,
    GOLD_STATE_OUTLIER_METRICS,
    GOLD_EFFICIENCY_OUTLIERS,
)
