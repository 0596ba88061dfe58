"""silver -> gold: recompute the gold tables, one group at a time (each an Airflow task).

A full run (``gridlake analyze --full``) overwrites every table from silver, so a rerun gives the
same table and a changed rule table re-scores all of history. The incremental run (the default,
and Airflow's) skips a group whose inputs did not change; a group with ``build_weeks``
(site_efficiency, efficiency, efficiency_outliers, speed_factors) recomputes only the ISO weeks
whose jobs changed (with their retried originals' weeks where the group reads ``retry_of``),
replaces those weeks' rows of its weekly and ``gold._state_*`` tables and rebuilds its
history-wide tables from every week's state; the other groups are recomputed whole when an
input changed. Incremental and full give the same tables (tests/test_incremental_gold.py).
Groups and what they read:

- ``site_efficiency``: silver.jobs (+ gold.failure_cause_rules) -> gold.site_efficiency_weekly,
  site_jobtype_efficiency_weekly, site_failure_modes_weekly, failure_causes_weekly
- ``efficiency``: silver.jobs (+ gold.efficiency_outlier_rules) -> cpu_model_efficiency,
  failure_vs_duration, job_length_advice, multicore_scaling/fit, efficiency_outliers
- ``speed_factors``: silver.jobs -> cpu_speed_factors, speed_factor_agreement,
  benchmark_mismatch, site_speed_anomalies
- ``io_signatures``: silver.jobs, node samples, job_node_features (+ gold.io_signature_rules)
  -> job_io_signature, node_saturation, workflow_io_profile, site_io_stress_weekly
- ``network``: silver.network -> network_link_status, network_alarms, network_cost_matrix
- ``site_efficiency_monthly``: silver.accounting_summaries + silver.jobs ->
  site_efficiency_monthly (APEL summaries beside the per-job path)
- ``cost``: silver.jobs + gold.cpu_speed_factors, site_speed_anomalies, workflow_io_profile,
  network_cost_matrix (+ gold.cost_prices) -> site_workflow_cost, placement_advice; runs after
  the groups it reads
- ``serving``: gold.network_link_status -> network_link_hourly (pre-aggregate for dashboards)

Rule tables are operator-editable: the highest ``rule_version`` of a rule applies, so an
operator's new version takes effect on the next run. Shipped rule versions the table lacks are
added to it (an upgrade reaches existing instances) unless the operator's own version is higher.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime

from pyspark.sql import DataFrame, SparkSession

from gridlake.gold import (
    cost,
    efficiency,
    io_signatures,
    ipc,
    network,
    serving,
    site_efficiency,
    site_efficiency_monthly,
    speed_factors,
)
from gridlake.gold.group import GoldGroup, Inputs
from gridlake.quality import CheckResult, gate_counted
from gridlake.settings import Settings, get_settings
from gridlake.spark import rows_frame, scheduler_pool
from gridlake.tabledef import Table, ensure_tables

log = logging.getLogger(__name__)

# The gold families, in the order analyze runs them: each module declares its GROUP (tables,
# inputs, build, the groups it reads) beside its transforms. A group's ``after`` groups must come
# earlier here. After a change run ``gridlake docs``: it writes the DAG's manifest
# (dags/gridlake_manifest.json), so the DAG gains the task with no DAG edit.
FAMILIES: tuple[GoldGroup, ...] = (
    site_efficiency.GROUP,
    efficiency.GROUP,
    efficiency.OUTLIERS_GROUP,
    speed_factors.GROUP,
    ipc.GROUP,
    io_signatures.GROUP,
    network.GROUP,
    site_efficiency_monthly.GROUP,
    cost.GROUP,
    serving.GROUP,
)
GROUPS: tuple[str, ...] = tuple(g.name for g in FAMILIES)
# Groups that read gold tables of other groups, and those groups (a group listed here runs after
# them, in ``analyze`` and as Airflow tasks of grid_analytics).
DEPENDS_ON: dict[str, tuple[str, ...]] = {g.name: g.after for g in FAMILIES if g.after}


def group(name: str) -> GoldGroup:
    for g in FAMILIES:
        if g.name == name:
            return g
    raise ValueError(f"unknown gold group {name!r}; one of {GROUPS}")


def group_tables(name: str) -> tuple[Table, ...]:
    return group(name).tables


def gold_tables() -> tuple[Table, ...]:
    return tuple(t for g in FAMILIES for t in g.tables)


def gold_frames(jobs: DataFrame, name: str) -> dict[str, DataFrame]:
    """The gold DataFrames of a group that needs silver.jobs only (benchmarks, what-ifs)."""
    compute = {"site_efficiency": site_efficiency.compute, "efficiency": efficiency.tables,
               "efficiency_outliers": efficiency.outliers,
               "speed_factors": speed_factors.compute}  # fmt: skip
    if name not in compute:
        raise ValueError(f"group {name!r} needs more than silver.jobs")
    return compute[name](jobs)


LABELS_SCHEMA = "src_site STRING, dst_site STRING, ts TIMESTAMP, utilisation DOUBLE"


def train_network(
    spark: SparkSession,
    labels_path: str,
    settings: Settings | None = None,
    *,
    model_types: Sequence[str] | None = None,
    n_held_out: int = 3,
) -> DataFrame:
    """Train the link-congestion predictor on silver.network and a utilisation series.

    ``labels_path``: CSV files with a header ``src_site,dst_site,ts,utilisation`` (link
    utilisation 0-1 from router interface counters; the simulator writes ``link_truth.csv``).
    Each model type is evaluated leave-one-link-out, the best is refitted on every link and
    saved under the storage root, and the run's rows are appended to gold.network_model_runs
    (one version per training: never overwritten). The next ``analyze`` applies the model.
    Returns the run's rows.
    """
    from gridlake.silver.tables import SILVER_NETWORK

    settings = settings or get_settings()
    labels = spark.read.csv(labels_path, header=True, schema=LABELS_SCHEMA)
    samples = network.latency_samples(Inputs(spark, settings).read(SILVER_NETWORK))
    features = network.interval_features(samples, network.path_baselines(samples))
    trained = network.train_congestion_model(
        features.localCheckpoint(),
        labels,
        model_types=tuple(model_types or network.MODEL_TYPES),
        n_held_out=n_held_out,
    )
    runs = network.GOLD_NETWORK_MODEL_RUNS
    runs.ensure(spark, settings)
    rows = runs.conform(trained.runs).localCheckpoint()
    rows.write.format("delta").mode("append").save(runs.path(settings))
    network.save_model(trained.model, settings)
    return rows


# What each group reads besides the rule table it owns (whose content is in the fingerprint).
GROUP_INPUTS: dict[str, tuple[str, ...]] = {
    g.name: tuple(t.full_name for t in g.reads) for g in FAMILIES
}
RULE_TABLES: dict[str, str] = {g.name: g.rules.full_name for g in FAMILIES if g.rules}
FINGERPRINT_KEY = "gridlake.analyze.inputs"


def _code_hash() -> str:
    """The gold code: a changed transform recomputes every group."""
    import hashlib
    from pathlib import Path

    root = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    files = [*root.rglob("*.py"), root.parent / "tabledef.py", root.parent / "silver" / "tables.py"]
    for path in sorted(files):  # family subpackages (gold/network/) included
        digest.update(path.relative_to(root.parent).as_posix().encode() + path.read_bytes())
    return digest.hexdigest()[:16]


def fingerprint(
    spark: SparkSession, group: str, settings: Settings, rules_frame: DataFrame | None = None
) -> str:
    """What a group's gold depends on: the code, the Delta version of every input table and the
    content of its rule table. Equal fingerprints give equal gold (analyze is deterministic).

    ``rules_frame``: the rules the group is about to write to its rule table (the operator's plus
    the shipped versions it lacked), hashed instead of the table's current content; the
    fingerprint written with the tables is then the one the next run reads back, so a run that
    added shipped rules is current afterwards (not recomputed once more for its own write)."""
    import hashlib
    import json

    from gridlake import deltalog
    from gridlake.silver.tables import TABLES as SILVER_TABLES

    known = {t.full_name: t for t in (*SILVER_TABLES, *gold_tables())}
    versions = {}
    for name in GROUP_INPUTS[group]:
        found = deltalog.version(spark, known[name].path(settings))
        versions[name] = -1 if found is None else found
    rules = ""
    if group in RULE_TABLES:
        table = known[RULE_TABLES[group]]
        source = table.conform(rules_frame) if rules_frame is not None else None
        written = None if source is not None else _written_rules(spark, table, settings)
        if written is not None:
            rules = written
        elif source is not None or deltalog.version(spark, table.path(settings)) is not None:
            rule_rows = (source or Inputs(spark, settings).read(table)).collect()  # a few rules
            rows = sorted(json.dumps(r.asDict(), sort_keys=True, default=str) for r in rule_rows)
            rules = hashlib.sha256("\n".join(rows).encode()).hexdigest()[:16]
    return json.dumps({"code": _code_hash(), "inputs": versions, "rules": rules}, sort_keys=True)


def _written_rules(spark: SparkSession, table: Table, settings: Settings) -> str | None:
    """The hash of a rule table's content when its latest commit is an analyze write (whose
    fingerprint holds the hash of the rules it wrote): no read of the table. None after an
    operator's edit (or any other commit): the caller hashes the rows."""
    import json

    from gridlake import deltalog

    last = deltalog.commits(spark, table.path(settings), 1)
    if not last or last[0].operation != "WRITE":
        return None
    try:
        value = json.loads(json.loads(last[0].user_metadata or "")[FINGERPRINT_KEY])["rules"]
    except (TypeError, ValueError, KeyError, AttributeError):
        return None
    return str(value) if value else None


def _record_empty_write(spark: SparkSession, table: Table, meta: str, settings: Settings) -> None:
    """An empty result written over an empty table commits nothing (Delta skips a write that
    adds and removes no file), so that table would never carry the fingerprint of the run that
    computed it and its group would never count as current. The fingerprint is then committed
    as a table property (:func:`_last_fingerprint` reads it back from that commit)."""
    import json

    from gridlake import deltalog
    from gridlake.tabledef import _q

    path = table.path(settings)
    last = deltalog.commits(spark, path, 1)
    if last and last[0].user_metadata == meta:
        return  # the write committed (it removed rows)
    value = json.loads(meta)[FINGERPRINT_KEY]
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ({_q(FINGERPRINT_KEY)} = {_q(value)})")


def _last_fingerprint(spark: SparkSession, table: Table, settings: Settings) -> str | None:
    """The fingerprint of the latest analyze write of a table (OPTIMIZE commits carry none).

    None (unknown: the group is recomputed) when a RESTORE came after that write without a
    fingerprint of its own: the table then holds an older version's rows, which the last
    write's fingerprint does not describe. A RESTORE that carries one (its commit's
    userMetadata, set to the restored version's fingerprint) counts as that write."""
    import json

    from gridlake import deltalog

    path = table.path(settings)
    for limit in (1, 20):  # the latest commit decides but after OPTIMIZE and the like
        commits = deltalog.commits(spark, path, limit)
        for commit in commits:  # bounded: 20 commits
            try:
                value = json.loads(commit.user_metadata or "").get(FINGERPRINT_KEY)
            except (TypeError, ValueError, AttributeError):
                value = None
            if not value and commit.operation == "SET TBLPROPERTIES":  # an empty result's commit
                try:
                    props = json.loads(commit.parameters.get("properties") or "{}")
                    value = props.get(FINGERPRINT_KEY)
                except (TypeError, ValueError, AttributeError):
                    value = None
            if value:
                return str(value)
            if commit.operation == "RESTORE":
                return None
        if len(commits) < limit:
            return None  # the whole history read
    return None


def analyze(
    spark: SparkSession,
    settings: Settings | None = None,
    groups: Sequence[str] | None = None,
    skip_current: bool = False,
    timings: dict[str, float] | None = None,
) -> dict[str, int]:
    """Recompute the gold tables of ``groups`` (all by default); returns rows per table.

    ``skip_current`` (incremental; the CLI's default, ``--full`` turns it off): leave a group
    alone when every one of its tables was last written from the inputs it would read now (same
    code, same input table versions, same rules: see :func:`fingerprint`), so a run after
    nothing changed costs a few Delta log reads and commits nothing; and for a group of weekly
    tables (``build_weeks``), recompute only the ISO weeks whose jobs changed since its last
    write (:func:`changed_weeks`) and replace those weeks' rows. Without it every group is
    recomputed whole from silver. Skipped groups are absent from the returned counts; for a
    group recomputed by weeks the counts are the rows of those weeks. ``timings``, when given,
    receives each group's wall-clock seconds (from its start to its last commit; groups run side
    by side, so they add up to more than the run)."""
    settings = settings or get_settings()
    counts: dict[str, int] = {}
    unknown = [g for g in groups or () if g not in GROUPS]
    if unknown:
        raise ValueError(f"unknown gold groups {unknown}; one of {', '.join(GROUPS)}")
    checked: list[tuple] = []  # the gate's outcomes, appended in one commit at the end
    memo = Memo()  # the changed weeks of silver.jobs between two versions: read once per run
    names = list(groups or GROUPS)
    # every table the run writes or reads exists, empty until its data suffices: ensured at
    # once (one metastore listing per database, the tables checked side by side)
    needed = {t.full_name: t for n in names for g in [group(n)]
              for t in (*g.tables, *g.reads, *((g.rules,) if g.rules else ()))}  # fmt: skip
    ensure_tables(spark, needed.values(), settings)
    ensured = frozenset(needed)
    # The start order. Incremental: the costliest chain first (the groups' weight), which ends
    # a week's recompute ~8 % sooner at full scale. Whole (--full): the groups' order, so the
    # two heaviest (efficiency, speed_factors) do not start their scans of all of silver.jobs
    # at the same moment: at the bench's full scale (30 days, 30 M jobs, a 12 GB driver) they
    # ran out of heap side by side (2026-12-06); in this order site_efficiency and efficiency
    # start first and speed_factors only when a worker frees (it had passed at that scale).
    weights = None if skip_current else dict.fromkeys(names, 0.0)
    try:
        by_group = dict(
            _run_groups(
                names,
                lambda name: _timed_group(
                    name,
                    lambda: _in_pool(
                        spark,
                        name,
                        lambda: _analyze_group(
                            spark, name, settings, skip_current, checked, ensured, memo
                        ),
                    ),
                    timings,
                ),
                settings.analyze_workers,
                weights,
            )
        )
        for name in names:  # in the groups' order, whatever order they finished in
            counts.update(by_group[name])
    finally:
        _record_gold_checks(spark, checked, settings)
    return counts


def _in_pool(spark: SparkSession, name: str, run: Callable[[], dict[str, int]]) -> dict[str, int]:
    """``run`` with the Spark jobs it submits in the fair-scheduler pool of group ``name``:
    groups side by side share the cores, a group's short jobs (its gates, Delta log reads and
    commits) do not queue behind the other group's long stages."""
    with scheduler_pool(spark, f"analyze-{name}"):
        return run()


def _timed_group(
    name: str, run: Callable[[], dict[str, int]], timings: dict[str, float] | None
) -> dict[str, int]:
    t0 = time.perf_counter()
    counts = run()
    seconds = time.perf_counter() - t0
    log.info("gold group %s: %.1f s (%s)", name, seconds, "skipped" if not counts else
                f"{len(counts)} tables written")  # fmt: skip
    if timings is not None:
        timings[name] = round(seconds, 1)
    return counts


def _analyze_group(
    spark: SparkSession,
    name: str,
    settings: Settings,
    skip_current: bool,
    checked: list[tuple],
    ensured: frozenset[str] = frozenset(),
    memo: Memo | None = None,
) -> dict[str, int]:
    """One group of :func:`analyze`: rows per table written ({} when skipped as current).
    ``ensured``: the tables the caller ensured (its own tables and inputs, else ensured here);
    ``memo``: the run's :class:`Memo` (the changed weeks, shared by the groups)."""
    import json

    tables = {t.full_name: t for t in group_tables(name)}
    if not set(tables) <= ensured:  # every table exists, empty until its data suffices
        ensure_tables(spark, tables.values(), settings)
    fp = fingerprint(spark, name, settings)
    written = [t for t in tables.values() if t.full_name != "gold.network_model_runs"]
    last = {_last_fingerprint(spark, t, settings) for t in written}
    if skip_current and last == {fp}:
        log.warning("gold group %s is current (inputs unchanged): not recomputed", name)
        return {}
    weeks = (
        changed_weeks(spark, name, last.pop() if len(last) == 1 else None, fp, settings, memo)
        if skip_current
        else None
    )
    if weeks == []:
        log.warning("gold group %s: no job of any week changed: not recomputed", name)
        return {}
    if weeks and any(t.partitioning_differs(spark, settings) for t in written):
        log.warning("gold group %s: a table's partitioning changed: recomputed whole", name)
        weeks = None
    run_id = f"analyze-{name}-{datetime.now(UTC):%Y%m%dT%H%M%S.%fZ}"
    build_weeks = group(name).build_weeks
    replace_where = None
    if skip_current and weeks and build_weeks is not None:
        frames = build_weeks(Inputs(spark, settings, ensured), weeks)
        replace_where = "week IN (" + ", ".join(f"DATE'{w.isoformat()}'" for w in weeks) + ")"
        log.warning("gold group %s: recomputing the weeks %s", name, [str(w) for w in weeks])
    else:
        frames = group(name).build(Inputs(spark, settings, ensured))
    if name in RULE_TABLES:  # the rules as written below (built from collected rows)
        fp = fingerprint(spark, name, settings, frames[RULE_TABLES[name]])
    meta = {FINGERPRINT_KEY: fp}
    by_weeks = {**meta, WEEKS_KEY: [w.isoformat() for w in weeks or ()]}
    whole = {t.full_name for t in group(name).whole}
    writes = []
    for full_name, df in frames.items():
        # by weeks: the tables with a week column; a rule table, a history-wide fit, a table
        # scored from every week's state (``whole``): whole
        weekly = (
            replace_where
            and full_name not in whole
            and any(c.name == "week" for c in tables[full_name].columns)
        )
        writes.append((tables[full_name], df, json.dumps(by_weeks if weekly else meta),
                       replace_where if weekly else None))  # fmt: skip
    counts = write_group(spark, writes, run_id, settings, checked)
    for full_name, rows in counts.items():
        log.info("gold %s: %d rows", full_name, rows)
    return counts


WEEKS_KEY = "gridlake.analyze.weeks"
# the rows a whole-table write wrote (the next write's previous row count, without a query)
ROWS_KEY = "gridlake.analyze.rows"


class Memo:
    """Values computed once per analyze run and shared by its groups (threads): the first to
    ask for a key computes it, one asking meanwhile waits for it rather than computing it too."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key_locks: dict[tuple, threading.Lock] = {}
        self._values: dict[tuple, object] = {}

    def get(self, key: tuple, compute: Callable[[], object]) -> object:
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            if key not in self._values:
                self._values[key] = compute()
            return self._values[key]


def changed_weeks(
    spark: SparkSession,
    name: str,
    last: str | None,
    now: str,
    settings: Settings,
    memo: Memo | None = None,
) -> list[date] | None:
    """The ISO weeks whose gold rows can differ between the group's last write (fingerprint
    ``last``) and its inputs now (fingerprint ``now``); None when that cannot be told from the
    changes alone, and the group is recomputed whole: a group without ``build_weeks``, no
    previous write, other code or rules, an input other than silver.jobs changed, or the
    change data feed of silver.jobs not readable over the versions between (enabled later,
    its log or change files cleaned up).

    The weeks are those of every row silver.jobs' change data feed holds between the two
    versions (pre- and post-images: a job moved to another week touches both), plus, for a
    group whose weeks depend on their attempts' retries (``GoldGroup.retries``), the weeks of
    the jobs those rows name as ``retry_of`` (a retry arriving weeks later changes its
    original's week: the retry waste). A version that changed no row (a property, OPTIMIZE)
    gives no week: nothing is rewritten, the group's fingerprint stays the last one written.
    With ``memo`` the weeks between two versions are read once per run, whichever groups ask.
    """
    import json

    from gridlake.silver.tables import SILVER_JOBS

    g = group(name)
    if g.build_weeks is None or last is None:
        return None
    try:
        before, after = json.loads(last), json.loads(now)
    except ValueError:
        return None
    if before.get("code") != after["code"] or before.get("rules") != after["rules"]:
        return None
    old, new = before.get("inputs", {}), after["inputs"]
    jobs_name = SILVER_JOBS.full_name
    if set(old) != set(new) or any(old[k] != new[k] for k in new if k != jobs_name):
        return None
    since, until = int(old.get(jobs_name, -1)), int(new.get(jobs_name, -1))
    if since < 0 or until < since:
        return None
    if until == since:
        return []
    path = SILVER_JOBS.path(settings)
    weeks = (memo or Memo()).get(
        ("changed_weeks", path, since, until, g.retries),
        lambda: _weeks_changed(spark, path, since, until, jobs_name, g.retries),
    )
    if weeks is None:
        log.warning("gold group %s: recomputed whole", name)
    return weeks  # type: ignore[return-value]


def _weeks_changed(
    spark: SparkSession, path: str, since: int, until: int, jobs_name: str, retries: bool
) -> list[date] | None:
    """The weeks of :func:`changed_weeks` between versions ``since`` (excluded) and ``until``
    of silver.jobs at ``path`` (with ``retries``, the retried originals' weeks too); None when
    its change data feed is not readable."""
    from pyspark.sql import functions as F

    try:
        changes = (
            spark.read.format("delta").option("readChangeFeed", "true")
            .option("startingVersion", since + 1).option("endingVersion", until)
            .load(path).select("week", "retry_of")
        )  # fmt: skip
        weeks = changes.select("week")
        if retries:
            retried = changes.where(F.col("retry_of").isNotNull()).select(
                F.col("retry_of").alias("job_id")
            )
            weeks = weeks.union(
                spark.read.format("delta").option("versionAsOf", until).load(path)
                .join(retried.distinct(), "job_id", "left_semi").select("week")
            )  # fmt: skip
        rows = weeks.distinct().collect()  # one row per week
    except Exception as error:  # any failure: the whole group is recomputed
        reason = str(error).splitlines()[0][:300] if str(error) else type(error).__name__
        log.warning("changes of %s v%d..v%d not readable (%s)", jobs_name, since + 1, until,
                    reason)  # fmt: skip
        return None
    return sorted(r.week for r in rows if r.week is not None)


def chain_costs(names: Sequence[str], weights: Mapping[str, float]) -> dict[str, float]:
    """Each group's cost chain among ``names``: its weight plus the costliest chain of the
    groups in ``names`` that read it (``DEPENDS_ON``), the work that cannot start before it ends."""
    chains: dict[str, float] = {}

    def chain(name: str) -> float:
        if name not in chains:
            readers = [g for g in names if name in DEPENDS_ON.get(g, ())]
            chains[name] = weights[name] + max((chain(g) for g in readers), default=0.0)
        return chains[name]

    return {name: chain(name) for name in names}


def _run_groups(
    names: list[str],
    run: Callable[[str], dict[str, int]],
    workers: int,
    weights: Mapping[str, float] | None = None,
) -> Iterator[tuple[str, dict[str, int]]]:
    """Run ``run(name)`` for every group, up to ``workers`` at once in threads of the one Spark
    session (Spark schedules their jobs side by side; a small group's driver-side work, Delta
    log reads and commits overlaps another's tasks). A group starts once every group it reads
    (``DEPENDS_ON``) that is also in ``names`` has finished; of the groups ready, the one with
    the costliest chain starts first (:func:`chain_costs` of the groups' ``weight``, or of
    ``weights``), ties in ``names``' order: the long groups do not wait for a free worker at
    the end while the short ones ran first. Yields (name, counts) as groups finish. After a
    failure no group starts; the groups running finish, and the first failure is raised."""
    from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

    chains = chain_costs(names, weights or {n: group(n).weight for n in names})
    pending = sorted(names, key=lambda n: -chains[n])  # stable: ties keep names' order
    done: set[str] = set()
    running: dict[Future, str] = {}
    failure: BaseException | None = None
    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="analyze") as pool:
        while pending or running:
            if failure is None:
                for name in list(pending):
                    if len(running) >= max(1, workers):
                        break
                    needs = [g for g in DEPENDS_ON.get(name, ()) if g in names and g not in done]
                    if not needs:
                        pending.remove(name)
                        running[pool.submit(run, name)] = name
            else:
                pending.clear()
            if not running:
                if pending:  # cannot happen: FAMILIES lists a group after those it reads
                    raise RuntimeError(f"gold groups {pending} wait on each other")
                break
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                name = running.pop(future)
                error = future.exception()
                if error is not None:
                    failure = failure or error
                    continue
                done.add(name)
                yield name, future.result()
    if failure is not None:
        raise failure


def _previous_rows(
    spark: SparkSession, table: Table, settings: Settings, where: str | None = None
) -> int | None:
    """The row count of the table's current version, or of its rows matching ``where`` (the
    weeks about to be replaced); None for a table never written.

    Whole: the count the latest commit recorded when that commit is an analyze write of the
    whole table (``ROWS_KEY`` in its metadata: no query), else counted from the Delta log's
    file statistics (no data read, but a Spark query)."""
    import json

    from gridlake import deltalog

    path = table.path(settings)
    if where is None:
        last = deltalog.commits(spark, path, 1)
        if not last:
            return None
        try:
            meta = json.loads(last[0].user_metadata or "")
            if last[0].operation == "WRITE" and ROWS_KEY in meta and WEEKS_KEY not in meta:
                return int(meta[ROWS_KEY])
        except (TypeError, ValueError, AttributeError):
            pass
    elif deltalog.version(spark, path) is None:
        return None
    current = spark.read.format("delta").load(path)
    return int((current.where(where) if where else current).count())  # whole: the log's stats


def _check_rows(table: Table, results: list[CheckResult], run_id: str) -> list[tuple]:
    return [(run_id, table.full_name, r.check.kind, r.check.column, r.check.severity, r.success,
             r.detail) for r in results]  # fmt: skip


def _record_gold_checks(spark: SparkSession, rows: list[tuple], settings: Settings) -> None:
    """The gate's results of gold tables (rows of :func:`_check_rows`), appended to
    silver.quality_results in one commit (one per analyze run, not one per table)."""
    from pyspark.sql import functions as F

    from gridlake.silver.tables import QUALITY_RESULTS

    if not rows:
        return
    schema = ("batch_id string, table_name string, check_kind string, check_column string, "
              "severity string, success boolean, detail string")  # fmt: skip
    df = rows_frame(spark, rows, schema).withColumn("checked_at", F.current_timestamp())
    QUALITY_RESULTS.ensure(spark, settings)
    QUALITY_RESULTS.conform(df).write.format("delta").mode("append").save(
        QUALITY_RESULTS.path(settings)
    )


@dataclass
class Gated:
    """A frame that passed its table's gate, persisted, waiting for its write."""

    table: Table
    frame: DataFrame
    rows: int
    meta: str
    replace_where: str | None


def gate_frame(spark: SparkSession, table: Table, df: DataFrame, meta: str, run_id: str,
               settings: Settings, checked: list[tuple],
               replace_where: str | None = None) -> Gated:  # fmt: skip
    """``df`` conformed to ``table``, computed once (persisted, spilling to disk if large) and
    checked by the table's gate (its checks, a unique key, no collapse of the row count against
    the rows it replaces: the current version, or with ``replace_where`` its rows matching the
    predicate). A failed gate raises QualityGateError with the reason (the frame unpersisted).
    Every outcome is added to ``checked`` (rows for silver.quality_results, which the caller
    appends once, failure or not)."""
    import json

    from pyspark import StorageLevel

    frame = table.conform(df).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        previous = (
            _previous_rows(spark, table, settings, replace_where) if table.stable_rows else None
        )
        # the first action (the checks' aggregation, which counts the rows) computes the frame
        _, rows = gate_counted(
            table,
            frame,
            previous_rows=previous,
            record=lambda results: checked.extend(_check_rows(table, results, run_id)),
        )
    except BaseException:
        frame.unpersist()
        raise
    if not replace_where:  # the rows, for the next write's gate (_previous_rows)
        meta = json.dumps({**json.loads(meta), ROWS_KEY: rows})
    return Gated(table, frame, rows, meta, replace_where)


def write_frame(spark: SparkSession, gated: Gated, settings: Settings) -> int:
    """Write a gated frame to its table (replacing it, or with ``replace_where`` the rows
    matching the predicate: the weeks an incremental analyze recomputed); returns the rows
    written. The table exists (analyze ensures a group's tables before building it)."""
    from gridlake import deltalog

    table, frame, meta, replace_where = gated.table, gated.frame, gated.meta, gated.replace_where
    try:
        missing = bool(table.partition_by) and (
            deltalog.partition_columns(spark, table.path(settings)) is None
        )
        if not replace_where and table.partitioning_differs(spark, settings):
            log.warning("%s: re-partitioned by %s (its definition changed)", table.full_name,
                        table.partition_by)  # fmt: skip
            writer = table.repartitioning_writer(frame).option("userMetadata", meta)
        elif missing:
            # no table at the path (its name registered, its folder gone or another
            # warehouse's): created partitioned as declared, not unpartitioned by the overwrite
            writer = table.repartitioning_writer(frame).option("userMetadata", meta)
        else:
            writer = table.overwriter(frame).option("userMetadata", meta)
        if replace_where and not missing:
            writer = writer.option("replaceWhere", replace_where)
        writer.save(table.path(settings))
        if gated.rows == 0:
            _record_empty_write(spark, table, meta, settings)
        return gated.rows
    finally:
        frame.unpersist()


def write_gated(spark: SparkSession, table: Table, df: DataFrame, meta: str, run_id: str,
                settings: Settings, checked: list[tuple],
                replace_where: str | None = None) -> int:  # fmt: skip
    """Replace a gold table with ``df`` once it passes the table's gate (:func:`gate_frame`,
    then :func:`write_frame`); returns the rows written. A failed gate raises and writes
    nothing: the previous version stays what readers see."""
    gated = gate_frame(spark, table, df, meta, run_id, settings, checked, replace_where)
    return write_frame(spark, gated, settings)


def write_group(
    spark: SparkSession,
    writes: Sequence[tuple[Table, DataFrame, str, str | None]],
    run_id: str,
    settings: Settings,
    checked: list[tuple],
) -> dict[str, int]:
    """The tables of one group, each ``(table, frame, meta, replace_where)``: every frame gated
    first (:func:`gate_frame`), then all written (:func:`write_frame`); rows written per table
    (full name), in ``writes``' order.

    A failed gate writes none of them: a group's tables are computed from the same inputs and
    from one another (a state and the tables read from it, a fit and its agreement), so none is
    replaced unless all pass, and readers keep the previous consistent set. The first failure
    is raised once every gate has run, so silver.quality_results has every outcome. A failed
    write raises at once; the tables written before it keep their new version (each commit is
    atomic) and carry the new fingerprint while the others keep the old one, so the next
    analyze recomputes the group whole.

    (Tried: the gates, then the writes, four at a time in threads of the group's pool, their
    small Spark jobs and commits overlapping. At standard scale with two groups side by side
    the incremental run took 41.6 s against 40.0 s: the two cores were already busy.)"""
    gated: list[Gated] = []
    failure: BaseException | None = None
    try:
        for table, df, meta, replace_where in writes:
            try:
                gated.append(
                    gate_frame(spark, table, df, meta, run_id, settings, checked, replace_where)
                )
            except Exception as error:  # the other gates still run: every outcome recorded
                failure = failure or error
    except BaseException:
        for g in gated:
            g.frame.unpersist()
        raise
    if failure is not None:
        for g in gated:
            g.frame.unpersist()
        raise failure
    counts: dict[str, int] = {}
    for i, g in enumerate(gated):
        try:
            counts[g.table.full_name] = write_frame(spark, g, settings)
        except BaseException:
            for rest in gated[i + 1 :]:
                rest.frame.unpersist()
            raise
    return counts
