"""The silver tables: typed, validated, deduplicated; their quarantines; the refine gate's
quality results and batch audit.

Declared here beside the refine that writes them (``gridlake.silver.refine``); the catalog
(``gridlake.catalog``) collects them.
"""

from __future__ import annotations

from gridlake.contracts import contract
from gridlake.reference.failure_causes import CAUSES as FAILURE_CAUSES
from gridlake.tabledef import Check, Column, Table

# --------------------------------------------------------------------------------------------
# silver: typed, validated, deduplicated.

_LINEAGE = (
    Column("_kafka_partition", "INT", "Lineage: Kafka partition of the record kept"),
    Column("_kafka_offset", "BIGINT", "Lineage: Kafka offset of the record kept"),
    Column("_kafka_timestamp", "TIMESTAMP", "Lineage: Kafka timestamp of the record kept"),
    Column("_batch_id", "STRING", "Lineage: refine batch that wrote the row"),
    Column("_refined_at", "TIMESTAMP", "Lineage: when the row was last written"),
    Column(
        "_content_hash",
        "STRING",
        "SHA-256 of the row's non-lineage columns: a re-sent identical record changes nothing",
    ),
)


def _contract_columns(name: str) -> tuple[Column, ...]:
    cols = []
    for f in contract(name).fields:
        if f.json_type == "array":
            continue
        ddl = {
            "integer": "BIGINT",
            "number": "DOUBLE",
            "boolean": "BOOLEAN",
        }.get(f.json_type, "TIMESTAMP" if f.fmt == "date-time" else "STRING")
        cols.append(Column(f.name, ddl, f.description))
    return tuple(cols)


SILVER_JOBS = Table(
    database="silver",
    name="jobs",
    keys=("job_id",),
    grain="one row per job attempt (job_id); re-sent records update the row, never duplicate it.",
    description="Finished job attempts, typed and validated, with derived efficiency columns.",
    columns=(
        *_contract_columns("jobs"),
        Column("cpu_seconds", "DOUBLE", "cpu_user_seconds + cpu_system_seconds"),
        Column("cores_wall_seconds", "DOUBLE", "wall_seconds x cores: the core-seconds allocated"),
        Column(
            "cpu_efficiency",
            "DOUBLE",
            "cpu_seconds / cores_wall_seconds for this job (null when no wall time)",
        ),
        Column(
            "is_outlier",
            "BOOLEAN",
            "CPU time above wall x cores x 1.05: kept, counted, flagged for inspection",
        ),
        Column("week", "DATE", "Monday of the ISO week of end_time (UTC), as accounting does"),
        Column("cpu_model_norm", "STRING", "cpu_model normalised (case, (R)/(TM), frequency)"),
        Column("vendor", "STRING", "CPU vendor (Intel, AMD, ARM); null when unknown"),
        Column("microarchitecture", "STRING", "e.g. Haswell, Zen 2; null when unknown"),
        Column("cpu_match", "STRING", "exact (reference table) | family (rule) | unknown"),
        Column(
            "hs23_per_core",
            "DOUBLE",
            "HEPscore23 per core: declared by the job, else measured for the model (HEPiX)",
        ),
        Column("hs23_source", "STRING", "declared-hs23 | declared-hs06 (taken 1:1) | reference"),
        Column("hs23_core_hours", "DOUBLE", "hs23_per_core x cores_wall_seconds / 3600"),
        Column(
            "failure_cause",
            "STRING",
            "success | application_error | memory_exceeded | walltime_exceeded | "
            "evicted_or_preempted | input_read_failure | stage_out_failure | "
            "node_or_infrastructure | cancelled | unknown: shipped rules at refine "
            "(gold.failure_causes_weekly: rules in force)",
        ),
        *_LINEAGE,
    ),
    partition_by=("week",),
    # Incremental gold reads the rows each version changed (pre- and post-images: a job moved to
    # another week touches both weeks): gridlake.gold.analyze.
    properties=(("delta.enableChangeDataFeed", "true"),),
    checks=(
        Check("not_null", "job_id"),
        Check("unique", "job_id"),
        Check("not_null", "site"),
        Check("not_null", "end_time"),
        Check("between", "cores", {"min_value": 1}),
        Check("between", "wall_seconds", {"min_value": 0}),
        Check("between", "cpu_seconds", {"min_value": 0}),
        Check("in_set", "status", {"value_set": list(contract("jobs").field("status").enum or ())}),
        Check("in_set", "failure_cause", {"value_set": list(FAILURE_CAUSES)}),
        Check("pair_greater_or_equal", None, {"column_A": "end_time", "column_B": "start_time"}),
        # A grid never has more than a few percent of jobs above wall x cores; more means a unit
        # error upstream (e.g. CPU in minutes). A warning, not a circuit breaker.
        Check("in_set", "is_outlier", {"value_set": [False], "mostly": 0.95}, severity="warn"),
    ),
)

QUARANTINE_COLUMNS = (
    Column("raw", "STRING", "The original record, verbatim"),
    Column("reasons", "ARRAY<STRING>", "Every rule the record failed"),
    Column("reason", "STRING", "The reasons joined with '; '"),
    Column("topic", "STRING", "Kafka topic"),
    Column("partition", "INT", "Kafka partition"),
    Column("offset", "BIGINT", "Kafka offset"),
    Column("kafka_timestamp", "TIMESTAMP", "Kafka record timestamp"),
    Column("batch_id", "STRING", "Refine batch that quarantined the record"),
    Column("quarantined_at", "TIMESTAMP", "When it was quarantined"),
)


def _quarantine(name: str) -> Table:
    return Table(
        database="silver",
        name=f"quarantine_{name}",
        grain=f"one row per rejected record of {contract(name).topic} (topic, partition, offset).",
        description=f"Records of {contract(name).topic} that failed validation, with the reasons.",
        columns=QUARANTINE_COLUMNS,
    )


QUARANTINE_JOBS = _quarantine("jobs")
QUARANTINE_NODES = _quarantine("nodes")
QUARANTINE_NETWORK = _quarantine("network")

SILVER_NODE_SAMPLES = Table(
    database="silver",
    name="node_samples",
    keys=("host", "ts", "kind"),
    grain="one row per host, ts and kind (vmstat | iostat | perf).",
    description=(
        "Worker-node samples, typed and validated; iostat disks are in node_disk_samples; perf "
        "records carry the host's instructions and cycles (null, with counters_available saying "
        "why, where the host has no hardware counters)."
    ),
    columns=(
        *_contract_columns("nodes"),
        Column("sample_date", "DATE", "UTC date of ts (partition column)"),
        *_LINEAGE,
    ),
    partition_by=("sample_date",),
    checks=(
        Check("not_null", "host"),
        Check("not_null", "ts"),
        Check("in_set", "kind", {"value_set": list(contract("nodes").field("kind").enum or ())}),
        Check("between", "interval_seconds", {"min_value": 0}),
    ),
)

SILVER_NODE_DISK_SAMPLES = Table(
    database="silver",
    name="node_disk_samples",
    keys=("host", "ts", "device"),
    grain="one row per host, ts and device (from iostat samples).",
    description="Per-device iostat figures, exploded from the disks array of node samples.",
    columns=(
        Column("site", "STRING", "Grid site"),
        Column("host", "STRING", "Worker node host name"),
        Column("ts", "TIMESTAMP", "End of the sampling interval"),
        Column("interval_seconds", "DOUBLE", "Length of the sampling interval"),
        Column("device", "STRING", "Block device"),
        Column("r_s", "DOUBLE", "Reads per second"),
        Column("w_s", "DOUBLE", "Writes per second"),
        Column("rkb_s", "DOUBLE", "KiB read per second"),
        Column("wkb_s", "DOUBLE", "KiB written per second"),
        Column("r_await_ms", "DOUBLE", "Average read latency, ms"),
        Column("w_await_ms", "DOUBLE", "Average write latency, ms"),
        Column("aqu_sz", "DOUBLE", "Average queue size"),
        Column("util_pct", "DOUBLE", "Device utilisation, percent"),
        Column("sample_date", "DATE", "UTC date of ts (partition column)"),
        *_LINEAGE,
    ),
    partition_by=("sample_date",),
    checks=(Check("not_null", "device"), Check("between", "util_pct", {"min_value": 0})),
)

SILVER_NETWORK = Table(
    database="silver",
    name="network",
    keys=("src_host", "dst_host", "ts", "test"),
    grain="one row per path (src_host, dst_host), ts and test.",
    description=(
        "perfSONAR results, typed and validated; src_site/dst_site resolved from host names "
        "where the record lacks them."
    ),
    columns=(
        *_contract_columns("network"),
        Column(
            "sites_resolved", "BOOLEAN", "True when src_site or dst_site came from the host name"
        ),
        Column("measured_date", "DATE", "UTC date of ts (partition column)"),
        *_LINEAGE,
    ),
    partition_by=("measured_date",),
    checks=(
        Check("not_null", "src_host"),
        Check("not_null", "dst_host"),
        Check("in_set", "test", {"value_set": list(contract("network").field("test").enum or ())}),
        Check("between", "packet_loss", {"min_value": 0, "max_value": 1}),
    ),
)

SILVER_ACCOUNTING_SUMMARIES = Table(
    database="silver",
    name="accounting_summaries",
    keys=("summary_key",),
    grain="one row per APEL summary group (summary_key: month, site, VO, user, resource shape).",
    description=(
        "APEL monthly accounting summaries (not per job), typed and validated; a re-sent "
        "summary for the same group replaces the old one."
    ),
    columns=(
        *_contract_columns("accounting_summaries"),
        Column(
            "core_wall_seconds",
            "DOUBLE",
            "wall_duration_seconds x processors (1 when unknown): core-seconds allocated",
        ),
        Column("cpu_efficiency", "DOUBLE", "cpu_duration_seconds / core_wall_seconds"),
        *_LINEAGE,
    ),
    checks=(
        Check("not_null", "summary_key"),
        Check("unique", "summary_key"),
        Check("between", "wall_duration_seconds", {"min_value": 0}),
        Check("between", "number_of_jobs", {"min_value": 0}),
    ),
)

QUARANTINE_ACCOUNTING_SUMMARIES = _quarantine("accounting_summaries")

SILVER_JOB_NODE_FEATURES = Table(
    database="silver",
    name="job_node_features",
    keys=("job_id", "week"),
    grain="one row per job attempt (job_id).",
    description=(
        "Each job's node samples (its host, ts within [start_time, end_time]) summarised. "
        "Samples are of the whole node: a job sharing its node sees its neighbours' load too."
    ),
    columns=(
        Column("job_id", "STRING", "Job attempt"),
        Column("site", "STRING", "Grid site"),
        Column("host", "STRING", "Worker node"),
        Column("start_time", "TIMESTAMP", "Job start"),
        Column("end_time", "TIMESTAMP", "Job end"),
        Column("week", "DATE", "Monday of the ISO week of end_time (partition column)"),
        Column("vmstat_samples", "BIGINT", "vmstat samples of the host during the job"),
        Column("us_mean", "DOUBLE", "Mean user CPU, percent"),
        Column("us_p95", "DOUBLE", "95th percentile of user CPU, percent"),
        Column("wa_mean", "DOUBLE", "Mean I/O wait, percent"),
        Column("wa_p95", "DOUBLE", "95th percentile of I/O wait, percent"),
        Column("b_mean", "DOUBLE", "Mean processes blocked on I/O"),
        Column("b_p95", "DOUBLE", "95th percentile of blocked processes"),
        Column("swap_in_kb", "DOUBLE", "KiB swapped in during the job (si x interval)"),
        Column("swap_out_kb", "DOUBLE", "KiB swapped out during the job (so x interval)"),
        Column("cache_trend_kb", "DOUBLE", "Page cache at the last sample minus at the first"),
        Column("iostat_samples", "BIGINT", "iostat samples of the host during the job"),
        Column("disk_util_p95", "DOUBLE", "95th percentile of the busiest device's %util"),
        Column("r_await_ms_p95", "DOUBLE", "95th percentile of the slowest device's read await"),
        Column("read_kb_s_mean", "DOUBLE", "Mean KiB/s read, all devices"),
        Column("write_kb_s_mean", "DOUBLE", "Mean KiB/s written, all devices"),
        Column(
            "net_rx_kb_s_mean",
            "DOUBLE",
            "Mean network KiB/s the host received (null when its samples carry no network "
            "counters)",
        ),
    ),
    partition_by=("week",),
)

QUALITY_RESULTS = Table(
    database="silver",
    name="quality_results",
    grain="one row per refine batch, table and check.",
    description="Every great_expectations check run by the refine gate, with its outcome.",
    columns=(
        Column("batch_id", "STRING", "Refine batch"),
        Column("table_name", "STRING", "Table the batch was bound for"),
        Column("check_kind", "STRING", "Expectation kind"),
        Column("check_column", "STRING", "Column checked (null for multi-column checks)"),
        Column("severity", "STRING", "fail (circuit breaker) or warn"),
        Column("success", "BOOLEAN", "Whether the batch met the expectation"),
        Column("detail", "STRING", "Observed figures (unexpected count and percent)"),
        Column("checked_at", "TIMESTAMP", "When the check ran"),
    ),
)

BATCH_AUDIT = Table(
    database="silver",
    name="batch_audit",
    grain="one row per refine micro-batch and input.",
    description=(
        "Reconciliation of every refine batch: bronze_rows = clean_rows + duplicate_rows + "
        "quarantined_rows."
    ),
    columns=(
        Column("batch_id", "STRING", "Refine batch id (input-streamBatch)"),
        Column("input", "STRING", "jobs | nodes | network"),
        Column("bronze_rows", "BIGINT", "Bronze records read in the batch"),
        Column("clean_rows", "BIGINT", "Distinct valid records (by key) upserted into silver"),
        Column(
            "duplicate_rows", "BIGINT", "Valid records superseded by a newer one of the same key"
        ),
        Column("quarantined_rows", "BIGINT", "Records sent to quarantine"),
        Column("inserted_rows", "BIGINT", "Silver rows inserted by the MERGE"),
        Column("updated_rows", "BIGINT", "Silver rows updated by the MERGE (re-sent, newer)"),
        Column("finished_at", "TIMESTAMP", "When the batch committed"),
        Column("kafka_ts_max", "TIMESTAMP", "Latest Kafka timestamp of the batch's records"),
        Column(
            "arrival_rate_per_hour",
            "DOUBLE",
            "Records per hour of Kafka time since the previous batch's latest record (null when "
            "not measurable: first batch, a span under 10 minutes); the volume rule compares it "
            "with the median of the previous batches",
        ),
        Column(
            "volume_drop_accepted",
            "BOOLEAN",
            "The batch fell below the volume rule and an operator let it through "
            "(refine --accept-volume-drop)",
        ),
    ),
)

TABLES: tuple[Table, ...] = (
    SILVER_JOBS,
    SILVER_NODE_SAMPLES,
    SILVER_NODE_DISK_SAMPLES,
    SILVER_NETWORK,
    SILVER_JOB_NODE_FEATURES,
    SILVER_ACCOUNTING_SUMMARIES,
    QUARANTINE_ACCOUNTING_SUMMARIES,
    QUARANTINE_JOBS,
    QUARANTINE_NODES,
    QUARANTINE_NETWORK,
    BATCH_AUDIT,
    QUALITY_RESULTS,
)
