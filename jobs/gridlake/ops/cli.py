"""The ``gridlake`` command line: thin wrappers that read settings, call a job, print a summary."""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from gridlake.settings import TOPICS, get_settings


def _spark():  # noqa: ANN202
    from gridlake.spark import get_spark

    return get_spark()


def cmd_ingest(args: argparse.Namespace) -> int:
    from gridlake.bronze.ingest import ingest

    inputs = tuple(args.inputs.split(",")) if args.inputs else tuple(TOPICS)
    for r in ingest(_spark(), inputs, max_offsets_per_trigger=args.max_offsets):
        print(f"bronze <- {r.topic}: {r.rows} records in {r.batches} batches")
    return 0


def cmd_refine(args: argparse.Namespace) -> int:
    from gridlake.quality import QualityGateError
    from gridlake.silver.refine import FEATURE_INPUTS, SPECS, refine, refresh_job_node_features

    inputs = args.inputs.split(",") if args.inputs else list(SPECS)
    unknown = [name for name in inputs if name not in SPECS]
    if unknown:
        print(f"unknown input(s) {', '.join(unknown)}; one of {', '.join(SPECS)}", file=sys.stderr)
        return 2
    spark = _spark()
    bronze_rows = 0
    for name in inputs:
        try:
            s = refine(spark, name, accept_volume_drop=args.accept_volume_drop)
        except QualityGateError as exc:
            print(f"refine {name} FAILED: {exc}", file=sys.stderr)
            _refused(spark, name, str(exc))
            return 3
        except Exception as exc:  # Spark wraps errors raised inside foreachBatch
            if "quality gate failed" in str(exc):
                msg = str(exc)[str(exc).find("quality gate failed") :].splitlines()[0]
                print(f"refine {name} FAILED: {msg}", file=sys.stderr)
                _refused(spark, name, msg)
                return 3
            raise
        print(
            f"silver.{name} <- {s.bronze_rows} bronze records in {s.batches} batches: "
            f"{s.clean_rows} clean, {s.duplicate_rows} duplicates absorbed, "
            f"{s.quarantined_rows} quarantined"
        )
        bronze_rows += s.bronze_rows
    if any(name in FEATURE_INPUTS for name in inputs):
        f = refresh_job_node_features(spark)
        print(
            f"silver.job_node_features <- {len(f.batches)} refine batches (weeks "
            f"{', '.join(f.weeks) or '-'}): {f.inserted} jobs inserted, {f.updated} updated"
        )
    if bronze_rows == 0 and args.idle_exit_code is not None:
        # Airflow skips a task that exits with this code: no asset event, no analytics run.
        print(f"nothing new in bronze for {', '.join(inputs)}: exit {args.idle_exit_code}")
        return int(args.idle_exit_code)
    return 0


def _refused(spark, name: str, message: str) -> None:  # noqa: ANN001
    """A refused batch is an alert (ops.alerts): a person must decide what to do with it."""
    from gridlake import alerts

    try:
        alerts.record(spark, [alerts.from_airflow_env("batch_refused", f"silver.{name}", message)])
        print(f"alert recorded in {alerts.ALERTS.full_name} (gridlake alerts)", file=sys.stderr)
    except Exception as exc:  # the refusal is the error to report, not this
        print(f"could not record the alert: {exc}", file=sys.stderr)


def cmd_alerts(args: argparse.Namespace) -> int:
    from gridlake import alerts

    spark = _spark()
    if args.flush:
        read, inserted = alerts.flush(spark)
        print(f"{alerts.ALERTS.full_name} <- {inserted} new of {read} pending alerts")
    rows = alerts.recent(spark, args.days).limit(args.limit).collect()  # bounded: --limit
    for r in rows:
        where = ".".join(x for x in (r.dag_id, r.task_id) if x) or "by hand"
        print(f"{r.raised_at:%Y-%m-%d %H:%M:%S}  {r.kind:<13} {r.subject}  [{where}]  {r.message}")
    if not args.flush:
        print(f"{len(rows)} alerts in the last {args.days} days")
    return 0


def cmd_analyze(args: argparse.Namespace) -> int:
    from gridlake.gold.analyze import analyze
    from gridlake.serving.views import ensure_views

    groups = args.only.split(",") if args.only else None
    spark = _spark()
    written = analyze(spark, groups=groups, skip_current=args.skip_current)
    if args.skip_current:
        from gridlake.gold.analyze import GROUPS, group_tables

        for group in groups or GROUPS:
            if not any(t.full_name in written for t in group_tables(group)):
                print(f"gold group {group} is current (inputs unchanged since its last run)")
    for table, rows in written.items():
        print(f"{table}: {rows} rows")
    for view in ensure_views(spark, written):
        print(f"view {view} created")
    return 0


def _f3(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def cmd_train_network(args: argparse.Namespace) -> int:
    from gridlake.gold.analyze import train_network

    models = args.models.split(",") if args.models else None
    rows = train_network(_spark(), args.labels, model_types=models, n_held_out=args.held_out)
    for r in rows.orderBy("scope", "model_type").collect():
        where = f" {r.held_out_src_site}->{r.held_out_dst_site}" if r.held_out_src_site else ""
        print(
            f"{r.run_id[:8]} {r.model_type:4} {r.scope:14}{where}: mse {_f3(r.mse)} "
            f"auc {_f3(r.auc)} (filter {_f3(r.empirical_auc)}) precision {_f3(r.precision)} "
            f"recall {_f3(r.recall)}{'  <- selected' if r.selected and r.scope == 'final' else ''}"
        )
    print("model saved; the next `gridlake analyze --only network` fills p_util_over_70_next")
    return 0


def cmd_whatif(args: argparse.Namespace) -> int:
    """Cost of last month's work under a scenario; reads the warehouse, never writes."""
    from gridlake.gold.whatif import load_scenario, whatif

    try:
        scenario = load_scenario(Path(args.scenario))
    except (OSError, ValueError) as exc:
        print(f"whatif: {exc}", file=sys.stderr)
        return 2
    from gridlake.gold.cost import GOLD_SITE_WORKFLOW_COST
    from gridlake.gold.efficiency import GOLD_JOB_LENGTH_ADVICE
    from gridlake.gold.speed_factors import GOLD_CPU_SPEED_FACTORS

    settings = get_settings()
    kinds = {type(c).__name__ for c in scenario.changes}
    needed = [GOLD_SITE_WORKFLOW_COST]
    needed += [GOLD_CPU_SPEED_FACTORS] if kinds & {"ReplaceCpus", "CloudSite"} else []
    needed += [GOLD_JOB_LENGTH_ADVICE] if "JobLength" in kinds else []
    for table in needed:  # on a local warehouse, a missing table is told before Spark starts
        path = table.path(settings)
        local = path.removeprefix("file:") if "://" not in path.replace("file://", "") else None
        if local is not None and not (Path(local) / "_delta_log").is_dir():
            print(f"whatif: {table.full_name} not found at {path}: run gridlake analyze",
                  file=sys.stderr)  # fmt: skip
            return 2
    spark = _spark()

    def read(table):  # noqa: ANN001, ANN202
        path = table.path(settings)
        try:
            return spark.read.format("delta").load(path)
        except Exception as exc:  # AnalysisException: not a Delta table / path missing
            raise ValueError(
                f"{table.full_name} not found at {path}: run gridlake analyze"
            ) from exc

    try:
        costs = read(GOLD_SITE_WORKFLOW_COST)
        factors = read(GOLD_CPU_SPEED_FACTORS) if kinds & {"ReplaceCpus", "CloudSite"} else None
        advice = read(GOLD_JOB_LENGTH_ADVICE) if "JobLength" in kinds else None
        result = whatif(costs, scenario, factors, advice, weeks=args.weeks)
    except ValueError as exc:
        print(f"whatif: {exc}", file=sys.stderr)
        return 2
    print(result.report(scenario.name))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """Weekly site reports, the grid summary and the index (HTML and PDF)."""
    from gridlake.serving.report import (
        NoGoldDataError,
        build_reports,
        ensure_views,
        parse_week,
        report_dir,
        week_label,
        week_sites,
    )

    try:
        week = parse_week(args.week) if args.week else _week_start(None)
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    if args.send or args.resend:
        return _send_reports(week, resend=args.resend)
    everything = not (args.site or args.all_sites or args.summary)
    spark = _spark()
    ensure_views(spark)
    try:
        sites = args.site or (week_sites(spark, week) if args.all_sites or everything else [])
        files = build_reports(
            spark,
            week,
            sites,
            summary=args.summary or everything,
            pdf=not args.no_pdf,
            progress=not args.quiet,
        )
    except NoGoldDataError as exc:
        print(f"report {week_label(week)} FAILED: {exc}", file=sys.stderr)
        return 3
    print(f"{len(files)} files for {week_label(week)} in {report_dir(week)}")
    for f in files:
        print(f"  {f.name}")
    return 0


def _send_reports(week: date, resend: bool) -> int:
    """E-mail the week's site PDFs (already written) to the contacts in ops.sites."""
    from gridlake.contacts import report_contacts
    from gridlake.serving.report import report_dir, week_label
    from gridlake.serving.report.mail import send_reports, smtp_from_env

    try:
        smtp = smtp_from_env()
    except ValueError as exc:
        print(f"report --send: {exc}", file=sys.stderr)
        return 2
    folder = report_dir(week)
    if not any(folder.glob("site-*.pdf")):
        print(f"report --send: no site PDF in {folder}, nothing to send")
        return 0
    contacts = report_contacts(_spark())
    results = send_reports(week, folder, contacts, smtp, resend=resend)
    mode = f"through {smtp.host}:{smtp.port}" if smtp else "DRY RUN (no GRIDLAKE_SMTP_URL)"
    counts: dict[str, int] = {}
    for r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
        print(f"  {r['site']:<28} {r['status']:<13} {', '.join(r['to'])}")
    summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no site"
    print(f"reports of {week_label(week)} by e-mail {mode}: {summary}")
    if smtp is None and counts.get("dry_run"):
        print(f"  messages written to {folder / 'mail'} (*.eml)")
    if not contacts:
        print("  no site has contacts: gridlake sites set SITE --contacts a@example.org")
    return 0


def cmd_sites(args: argparse.Namespace) -> int:
    """The site reference (ops.sites): list it, or set a site's report contacts."""
    from gridlake.contacts import parse_contacts, read_sites, set_site

    spark = _spark()
    if args.action == "set":
        if not args.site:
            print("sites set: name the site", file=sys.stderr)
            return 2
        try:
            contacts = parse_contacts(args.contacts or "")
        except ValueError as exc:
            print(f"sites set: {exc}", file=sys.stderr)
            return 2
        set_site(spark, args.site, contacts, send_reports=not args.no_reports)
    rows = read_sites(spark)
    for r in rows:
        flag = "" if r["send_reports"] is not False else "  (reports not e-mailed)"
        print(f"{r['site']:<28} {', '.join(r['contacts'] or []) or '-'}{flag}")
    print(f"{len(rows)} sites in ops.sites")
    return 0


def cmd_maintain(args: argparse.Namespace) -> int:
    """Delta OPTIMIZE and VACUUM of every table (or --tables); first, the pending alerts."""
    from gridlake import alerts
    from gridlake.ops.maintain import maintain, maintained_tables

    read, inserted = alerts.flush(_spark())
    if read:
        print(f"{alerts.ALERTS.full_name} <- {inserted} new of {read} pending alerts")

    both = not (args.optimize or args.vacuum)
    known = {t.full_name: t for t in maintained_tables()}
    names = args.tables.split(",") if args.tables else list(known)
    unknown = [n for n in names if n not in known]
    if unknown:
        print(f"unknown table(s): {', '.join(unknown)}", file=sys.stderr)
        return 2
    try:
        results = maintain(
            _spark(),
            [known[n] for n in names],
            optimize=args.optimize or both,
            vacuum=args.vacuum or both,
            retain_hours=args.retain_hours,
        )
        failed = 0
        t0 = time.monotonic()
        for r in results:
            seconds, t0 = time.monotonic() - t0, time.monotonic()
            if r.error:
                failed += 1
                print(f"{r.table}: FAILED {r.error}", file=sys.stderr)
            else:
                mode = f", VACUUM {r.vacuum_mode.upper()}" if r.vacuum_mode else ""
                if r.retained_for:
                    mode += f" keeping {r.retained_hours:.0f} h: {r.retained_for}"
                print(
                    f"{r.table}: {r.files_before} -> {r.files_after} files "
                    f"({r.files_compacted} compacted, {r.files_vacuumed} vacuumed{mode}; "
                    f"{seconds:.1f} s)"
                )
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    return 1 if failed else 0


def cmd_quality_docs(args: argparse.Namespace) -> int:
    """great_expectations Data Docs from the table checks and the kept gate results."""
    from gridlake.serving.quality_docs import build_quality_docs

    docs = build_quality_docs(_spark(), keep_batches=args.keep_batches)
    print(
        f"Data Docs: {docs.suites} expectation suites, {docs.validations} validation results"
        + (
            f" ({docs.skipped_results} results of retired checks left out)"
            if docs.skipped_results
            else ""
        )
        + f"\n  {docs.index}"
    )
    return 0


def cmd_docs(args: argparse.Namespace) -> int:
    """The table reference (sql/grid/README.md) and the grid views' SQL files, from the Table
    declarations; the Superset assets and the DAG manifest."""
    from gridlake.ops.orchestration import MANIFEST_PATH, render_manifest, write_manifest
    from gridlake.serving.docs import current_block, render, update_readme
    from gridlake.serving.views import VIEW_DIR, render_view, view_sources, write_view_files

    if args.check:
        stale = [] if current_block() == render() else ["sql/grid/README.md table reference"]
        wanted = {f"{t.name}.sql": render_view(t) for t in view_sources()}
        files = {p.name: p.read_text() for p in VIEW_DIR.glob("*.sql")}
        stale += [f"sql/grid/{n}" for n in sorted(set(wanted) | set(files))
                  if wanted.get(n) != files.get(n)]  # fmt: skip
        stale += _stale_assets()
        if not MANIFEST_PATH.is_file() or MANIFEST_PATH.read_text() != render_manifest():
            stale.append(f"dags/{MANIFEST_PATH.name}")
        if stale:
            print(f"stale: {', '.join(stale)}: run `gridlake docs`", file=sys.stderr)
            return 1
        print("table reference, sql/grid views, superset/assets, DAG manifest: current")
        return 0
    print("sql/grid/README.md " + ("updated" if update_readme() else "already current"))
    changed = write_view_files()
    print(f"sql/grid: {len(changed)} view files written or removed")
    # the dataset YAML carries the views' columns and comments
    from gridlake.serving.superset_assets import write_assets

    print(f"superset/assets: {len(write_assets())} YAML files written or removed")
    print(f"dags/{MANIFEST_PATH.name} " + ("updated" if write_manifest() else "already current"))
    return 0


def _stale_assets() -> list[str]:
    from gridlake.serving.superset_assets import ASSETS_DIR, render_assets

    wanted = render_assets()
    files = {
        p.relative_to(ASSETS_DIR).as_posix(): p.read_text() for p in ASSETS_DIR.rglob("*.yaml")
    }
    return [f"superset/assets/{n}" for n in sorted(set(wanted) | set(files))
            if wanted.get(n) != files.get(n)]  # fmt: skip


def cmd_superset(args: argparse.Namespace) -> int:
    """Superset assets (YAML from the spec) and users (through infra/superset.sh)."""
    import subprocess

    from gridlake.settings import REPO_ROOT

    if args.action == "assets":
        if args.check:
            stale = _stale_assets()
            if stale:
                print(f"stale: {', '.join(stale)}: run `gridlake superset assets`", file=sys.stderr)
                return 1
            print("superset/assets is current")
            return 0
        from gridlake.serving.superset_assets import write_assets

        print(f"superset/assets: {len(write_assets())} YAML files written or removed")
        return 0
    if args.action == "warm":
        return _superset_warm()
    # The password never travels on a command line: infra/superset.sh reads it from the
    # environment (GRIDLAKE_USER_PASSWORD) or generates it into the instance's secrets folder.
    if args.action == "add-site-user":
        if not args.site or not args.user:
            print("usage: gridlake superset add-site-user SITE USER", file=sys.stderr)
            return 2
        cmd = ["add-site-user", args.site, args.user]
    else:
        if not args.site or args.user:
            print("usage: gridlake superset add-operator USER", file=sys.stderr)
            return 2
        cmd = ["add-operator", args.site]
    return subprocess.run(["bash", str(REPO_ROOT / "infra" / "superset.sh"), *cmd]).returncode


def _superset_warm() -> int:
    """Every dashboard's chart queries once through Superset, as a browser opening it sends them."""
    from gridlake.serving.superset_assets import DASHBOARDS
    from gridlake.serving.superset_client import SupersetClient, read_login, warm_dashboards
    from gridlake.settings import get_settings

    settings = get_settings()
    login = settings.state / "secrets" / "superset_admin.txt"
    if not login.is_file():
        print(f"no Superset login in {login}: start Superset first (make up)", file=sys.stderr)
        return 1
    user, password = read_login(login)
    api = SupersetClient(f"http://127.0.0.1:{settings.superset_port}", user, password)
    try:
        seconds = warm_dashboards(api, list(DASHBOARDS))
    except RuntimeError as e:
        print(f"warming the dashboards failed: {e}", file=sys.stderr)
        return 1
    print(json.dumps({"warmed_s": seconds}))
    return 0


def cmd_publish(args: argparse.Namespace) -> int:
    from gridlake.sources.publish import publish_files

    if not args.topic and not args.format:
        print("publish needs --topic (canonical JSON lines) or --format", file=sys.stderr)
        return 2
    files = [Path(f) for f in args.files]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        print(f"no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    opts: dict[str, object] = {
        k: v for k, v in (("site", args.site), ("host", args.host), ("vo", args.vo)) if v
    }
    for item in args.opt or []:
        key, sep, value = item.partition("=")
        if not sep:
            print(f"--opt takes key=value, not {item!r}", file=sys.stderr)
            return 2
        opts[key.strip()] = value.strip()
    from gridlake.sources.kafka_auth import KafkaAuthError

    try:
        report = publish_files(
            args.topic, files, progress=not args.quiet, fmt=args.format, reader_opts=opts
        )
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except KafkaAuthError as exc:  # nothing was published
        print(f"gridlake publish: {exc}", file=sys.stderr)
        return 1
    for p in report.problems:
        print(p, file=sys.stderr)
    print(
        f"{report.topic}: {report.published} published, {report.dead_lettered} dead-lettered "
        f"to {TOPICS['deadletter']}, {report.delivery_errors} delivery errors"
    )
    return 0 if report.ok else 1


def cmd_sql(args: argparse.Namespace) -> int:
    from gridlake.serving.sqlcli import run_sql

    run_sql(_spark(), args.query, fmt=args.format, limit=args.limit)
    return 0


def cmd_init(_args: argparse.Namespace) -> int:
    from gridlake.catalog import ALL_TABLES, ensure_all
    from gridlake.serving.views import create_views

    spark = _spark()
    ensure_all(spark)
    views = create_views(spark)
    print(f"{len(ALL_TABLES)} tables and {len(views)} views registered")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """Every table of a layer here against the same table under another storage root."""
    import dataclasses

    from gridlake.catalog import ALL_TABLES
    from gridlake.ops.compare import compare

    settings = get_settings()
    other = dataclasses.replace(settings, storage_root=args.other_root)
    wanted = set(args.tables.split(",")) if args.tables else None
    tables = [
        t for t in ALL_TABLES
        if t.database == args.layer
        and (wanted is None or t.name in wanted or t.full_name in wanted)
    ]  # fmt: skip
    if wanted and len(tables) != len(wanted):
        known = {t.name for t in tables} | {t.full_name for t in tables}
        print(f"unknown {args.layer} tables: {sorted(wanted - known)}", file=sys.stderr)
        return 2
    spark = _spark()
    bad = 0
    for t in tables:
        try:
            here = spark.read.format("delta").load(t.path(settings))
            there = spark.read.format("delta").load(t.path(other))
        except Exception as exc:  # a table missing on one side is a difference, reported
            print(json.dumps({"table": t.full_name, "same": False, "error": str(exc)[:300]}))
            bad += 1
            continue
        result = compare(here, there, t, rel_tol=args.rel_tol)
        print(json.dumps(result.as_dict()), flush=True)
        bad += not result.same
    print(f"{len(tables) - bad} of {len(tables)} {args.layer} tables agree with {args.other_root}"
          f" (floats to {args.rel_tol:g} relative)", file=sys.stderr)  # fmt: skip
    return 1 if bad else 0


def _week_start(text: str | None) -> date:
    if not text:
        today = datetime.now(UTC).date()
        return today - timedelta(days=today.weekday() + 7)  # the ISO week just ended
    year, week = text.split("-W")
    return date.fromisocalendar(int(year), int(week), 1)


def cmd_demo_data(args: argparse.Namespace) -> int:
    from gridlake.sources.demo import generate_week, write_week

    week = generate_week(_week_start(args.week), seed=args.seed)
    paths = write_week(Path(args.out), week)
    for kind, path in paths.items():
        print(f"{kind}: {path}")
    return 0


_DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


def _spike_days(text: str) -> tuple[int, ...]:
    """'sat,sun' -> (5, 6): the simulator's days of the week, Monday = 0."""
    days = [d.strip().lower()[:3] for d in text.split(",") if d.strip()]
    unknown = [d for d in days if d not in _DAYS]
    if unknown:
        raise SystemExit(f"--spike-days: unknown day(s) {unknown}; use {', '.join(_DAYS)}")
    return tuple(sorted({_DAYS.index(d) for d in days}))


def cmd_simulate(args: argparse.Namespace) -> int:
    import time

    from gridlake.sources.simulate import SimConfig, simulate

    start = _week_start(args.start_week) if args.start is None else date.fromisoformat(args.start)
    config = SimConfig(
        start=start,
        days=args.days,
        sites=args.sites,
        cpu_models=args.cpu_models,
        jobs=args.jobs,
        seed=args.seed,
        effects=not args.no_effects,
        monitored_hosts_per_site=args.monitored_hosts,
        node_interval=args.node_interval,
        latency_interval=args.latency_interval,
        bad_share=args.bad_share,
        resend_share=args.resend_share,
        spike_days=_spike_days(args.spike_days),
    )
    out = Path(args.out)
    t0 = time.perf_counter()
    truth = simulate(config, out, progress=not args.quiet)
    seconds = time.perf_counter() - t0
    counts = truth["counts"]
    print(
        f"simulated {counts.get('jobs', 0)} jobs, {counts.get('nodes', 0)} node samples, "
        f"{counts.get('network', 0)} network results in {seconds:.1f} s "
        f"({counts.get('jobs', 0) / max(seconds, 1e-9):.0f} jobs/s) -> {out}"
    )
    if args.publish:
        from gridlake.sources.publish import publish_files

        failed = False
        for name in ("jobs", "nodes", "network"):
            report = publish_files(f"grid.{name}", [out / f"{name}.jsonl"], progress=not args.quiet)
            print(f"{report.topic}: published {report.published}")
            failed |= not report.ok
        return 1 if failed else 0
    return 0


def cmd_agent(args: argparse.Namespace) -> int:
    from gridlake.sources.agent import main as agent_main

    return agent_main(args)


def cmd_formats(_args: argparse.Namespace) -> int:
    from gridlake.sources.registry import FORMATS

    for name, (topic, reader) in sorted(FORMATS.items()):
        doc = (reader.__doc__ or "").strip().splitlines()
        print(f"{name:16} -> {topic:26} {doc[0] if doc else ''}")
    return 0


def cmd_spark_conf(args: argparse.Namespace) -> int:
    """Print the settings' Spark configuration as spark-submit arguments, or with
    ``--properties`` as a Java properties file (for ``spark-submit --properties-file``: settings
    that may carry secrets then stay off the command line, which every local user can read)."""
    from gridlake.settings import java_properties

    conf = get_settings().spark_conf()
    if args.properties:
        print(java_properties(conf), end="")
        return 0
    # As arguments they would sit on a command line: secrets are left out (Spark's own
    # redaction pattern), with a pointer to the properties form.
    secret = re.compile(r"(?i)secret|password|token|access[.]?key")
    for key, value in conf.items():
        shown = "<redacted: gridlake spark-conf --properties>" if secret.search(key) else value
        print(f"--conf\n{key}={shown}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gridlake", description=__doc__)
    p.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("ingest", help="Kafka -> bronze, all topics (exactly once)")
    s.add_argument("--inputs", help="comma-separated subset of: " + ",".join(TOPICS))
    s.add_argument("--max-offsets", type=int, default=200_000, help="records per micro-batch")
    s.set_defaults(func=cmd_ingest)

    s = sub.add_parser("refine", help="bronze -> silver (validate, quarantine, gate, MERGE)")
    s.add_argument(
        "--inputs", help="comma-separated subset of: jobs,nodes,network,accounting_summaries"
    )
    s.add_argument(
        "--idle-exit-code",
        type=int,
        metavar="N",
        help="exit N (instead of 0) when bronze held nothing new (Airflow skips the task on 99)",
    )
    s.add_argument("--accept-volume-drop", action="store_true",
                   help="let batches below the volume rule through (a genuine drop)")  # fmt: skip
    s.set_defaults(func=cmd_refine)

    s = sub.add_parser("analyze", help="silver -> gold tables")
    s.add_argument(
        "--only",
        help="comma-separated gold groups (default all; the groups of the DAG manifest, "
        "dags/gridlake_manifest.json)",
    )
    s.add_argument(
        "--skip-current",
        action="store_true",
        default=os.environ.get("GRIDLAKE_ANALYZE_SKIP_CURRENT", "1") != "0",
        help="incremental (the default; GRIDLAKE_ANALYZE_SKIP_CURRENT=0 turns it off): leave a "
        "group whose inputs did not change since its last run, recompute only the weeks whose "
        "jobs changed in a group of weekly tables",
    )
    s.add_argument(
        "--full",
        dest="skip_current",
        action="store_false",
        help="recompute every gold table of the groups from all of silver",
    )
    s.set_defaults(func=cmd_analyze)

    s = sub.add_parser(
        "train-network", help="train the link-congestion predictor (gold.network_model_runs)"
    )
    s.add_argument("--labels", required=True,
                   help="CSV (src_site,dst_site,ts,utilisation): link utilisation 0-1")  # fmt: skip
    s.add_argument("--models", help="comma-separated model types (default: mlp,gbt)")
    s.add_argument("--held-out", type=int, default=3, help="links evaluated leave-one-out")
    s.set_defaults(func=cmd_train_network)
    s = sub.add_parser("whatif", help="cost of last month's work under a scenario (read-only)")
    s.add_argument("scenario", help="scenario YAML (see gridlake.gold.whatif)")
    s.add_argument("--weeks", type=int, default=4, help="ISO weeks of work (default 4: a month)")
    s.set_defaults(func=cmd_whatif)

    s = sub.add_parser(
        "docs",
        help="regenerate the table reference (sql/grid/README.md), sql/grid views and DAG manifest",
    )
    s.add_argument("--check", action="store_true", help="only say whether it is current")
    s.set_defaults(func=cmd_docs)

    s = sub.add_parser(
        "superset",
        help="Superset: write the YAML assets, add a site user / a read-only operator, or warm "
        "the dashboards",
        description="assets [--check] | add-site-user SITE USER | add-operator USER | warm "
        "(send every dashboard's chart queries once, as a browser opening it does). The "
        "password comes from GRIDLAKE_USER_PASSWORD or is generated into "
        ".gridlake/<instance>/secrets/superset_users/USER.txt (never a command-line argument).",
    )
    s.add_argument("action", choices=["assets", "add-site-user", "add-operator", "warm"])
    s.add_argument("site", nargs="?", help="site (add-site-user) or user name (add-operator)")
    s.add_argument("user", nargs="?", help="user name (add-site-user)")
    s.add_argument("--check", action="store_true", help="assets: only say whether current")
    s.set_defaults(func=cmd_superset)

    s = sub.add_parser(
        "report", help="weekly site reports, grid summary and index (HTML + PDF) of an ISO week"
    )
    s.add_argument(
        "--week", help="ISO week (2026-W46) or a date in it (default: the week just ended)"
    )
    s.add_argument("--site", action="append", help="one site (repeatable); default: every site")
    s.add_argument("--all-sites", action="store_true", help="every site with jobs in the week")
    s.add_argument("--summary", action="store_true", help="the grid-wide summary and the index")
    s.add_argument("--no-pdf", action="store_true", help="HTML only")
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    s.add_argument(
        "--send",
        action="store_true",
        help="only e-mail the week's site PDFs to their contacts (ops.sites) through "
        "GRIDLAKE_SMTP_URL or AIRFLOW_CONN_SMTP_DEFAULT; a dry run (.eml files) without one",
    )
    s.add_argument("--resend", action="store_true", help="--send, also what was sent already")
    s.set_defaults(func=cmd_report)

    s = sub.add_parser("sites", help="the site reference (ops.sites): report contacts")
    s.add_argument("action", choices=("list", "set"), nargs="?", default="list")
    s.add_argument("site", nargs="?", help="the site (set)")
    s.add_argument("--contacts", help="comma-separated e-mail addresses (set)")
    s.add_argument("--no-reports", action="store_true", help="keep the row, send no e-mail")
    s.set_defaults(func=cmd_sites)

    s = sub.add_parser("alerts", help="what failed lately (ops.alerts); --flush the pending ones")
    s.add_argument(
        "--flush", action="store_true", help="first merge the DAGs' pending alerts into the table"
    )
    s.add_argument("--days", type=int, default=7, help="how far back (default 7)")
    s.add_argument("--limit", type=int, default=50, help="at most this many (newest first)")
    s.set_defaults(func=cmd_alerts)
    s = sub.add_parser("maintain", help="Delta OPTIMIZE and VACUUM (retention >= 7 days)")
    s.add_argument("--optimize", action="store_true", help="only compact (default: both)")
    s.add_argument("--vacuum", action="store_true", help="only vacuum (default: both)")
    s.add_argument("--retain-hours", type=float, default=168.0, help="VACUUM retention, >= 168")
    s.add_argument("--tables", help="comma-separated full names (default: every table)")
    s.set_defaults(func=cmd_maintain)

    s = sub.add_parser("quality-docs", help="great_expectations Data Docs of the quality checks")
    s.add_argument("--keep-batches", type=int, default=20, help="latest batches per table")
    s.set_defaults(func=cmd_quality_docs)

    s = sub.add_parser("publish", help="publish files (canonical JSON lines, or --format FMT)")
    s.add_argument("--topic", choices=sorted(v for v in TOPICS.values()),
                   help="target topic (required for canonical JSON lines)")  # fmt: skip
    s.add_argument("--format", help="source format read by an adapter (see gridlake formats)")
    s.add_argument("--site", help="site for records whose format lacks it")
    s.add_argument("--host", help="host for records whose format lacks it")
    s.add_argument("--vo", help="VO for records whose format lacks it")
    s.add_argument(
        "--opt",
        action="append",
        metavar="KEY=VALUE",
        help="adapter option, e.g. start=2026-11-16T00:00:00Z or tz=Europe/Zurich",
    )
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    s.add_argument("files", nargs="+")
    s.set_defaults(func=cmd_publish)

    s = sub.add_parser("sql", help="run SQL on the warehouse")
    s.add_argument("query")
    s.add_argument("--format", choices=["table", "csv", "json"], default="table")
    s.add_argument("--limit", type=int, default=1000, help="rows printed at most")
    s.set_defaults(func=cmd_sql)

    s = sub.add_parser(
        "compare",
        help="compare a layer's tables with another warehouse's (e.g. a cluster's), row for row",
    )
    s.add_argument(
        "other_root", help="the other storage root, e.g. hdfs://host:port/gridlake/warehouse"
    )
    s.add_argument("--layer", choices=("bronze", "silver", "gold"), default="gold")
    s.add_argument("--tables", help="comma-separated table names (default: the whole layer)")
    s.add_argument("--rel-tol", type=float, default=1e-9, help="relative tolerance of floats")
    s.set_defaults(func=cmd_compare)

    s = sub.add_parser("init", help="register every table and view in the metastore")
    s.set_defaults(func=cmd_init)

    s = sub.add_parser("demo-data", help="write a small simulated week as canonical JSON lines")
    s.add_argument("--out", required=True)
    s.add_argument("--week", help="ISO week, e.g. 2026-W46 (default: the week just ended)")
    s.add_argument("--seed", type=int, default=7)
    s.set_defaults(func=cmd_demo_data)

    s = sub.add_parser("simulate", help="simulate a grid with planted truth (files or Kafka)")
    s.add_argument("--out", required=True, help="folder for *.jsonl, truth.json, *_truth.csv")
    s.add_argument("--start", help="first day, YYYY-MM-DD (default: Monday of --start-week)")
    s.add_argument("--start-week", help="ISO week, e.g. 2026-W46 (default: the week just ended)")
    s.add_argument("--days", type=int, default=7)
    s.add_argument("--sites", type=int, default=8)
    s.add_argument("--cpu-models", type=int, default=12)
    s.add_argument("--jobs", type=int, default=20_000, help="first attempts (retries on top)")
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--no-effects", action="store_true", help="a clean control grid")
    s.add_argument("--monitored-hosts", type=int, default=2, help="hosts per site with samples")
    s.add_argument("--node-interval", type=int, default=60, help="seconds between node samples")
    s.add_argument("--latency-interval", type=int, default=60, help="seconds between results")
    s.add_argument("--bad-share", type=float, default=0.0, help="planted bad records share")
    s.add_argument("--resend-share", type=float, default=0.0, help="re-sent duplicates share")
    s.add_argument(
        "--spike-days",
        default="sat,sun",
        help="days of the recurring latency spike at one site, e.g. 'wed' or 'sat,sun' ('' none)",
    )
    s.add_argument("--publish", action="store_true", help="then publish the files to Kafka")
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    s.set_defaults(func=cmd_simulate)

    s = sub.add_parser("agent", help="sample this node (/proc) and publish grid.nodes records")
    s.add_argument("--site", required=True, help="grid site of this node")
    s.add_argument("--host", help="host name (default: this machine's FQDN)")
    s.add_argument("--interval", type=float, default=10.0, help="seconds between samples")
    s.add_argument("--count", type=int, help="stop after this many samples (default: run)")
    s.add_argument("--stdout", action="store_true", help="print records instead of publishing")
    s.add_argument("--spool", help="spool file for records the broker could not take yet")
    s.add_argument("--max-spool-mb", type=float, default=64.0)
    s.add_argument("--max-buffered", type=int, default=10_000, help="in-memory queue bound")
    s.add_argument("--flush-spool", action="store_true", help="re-send the spool and exit")
    s.add_argument("--flush-timeout", type=float, default=30.0, help="seconds to wait at exit")
    s.add_argument(
        "--perf", choices=("auto", "off"), default="auto",
        help="hardware counters (instructions, cycles) from perf stat: a perf record per "
        "interval, saying why when the host has none (default auto); off: no perf records",
    )  # fmt: skip
    s.set_defaults(func=cmd_agent)

    s = sub.add_parser("formats", help="list the source formats publish --format reads")
    s.set_defaults(func=cmd_formats)

    s = sub.add_parser("spark-conf", help="print the Spark settings as spark-submit arguments")
    s.add_argument(
        "--properties", action="store_true", help="as a properties file (key=value lines)"
    )
    s.set_defaults(func=cmd_spark_conf)

    s = sub.add_parser(
        "server",
        help="hold one Spark session of the instance and run the Spark commands sent to it "
        "(local mode; started by make up)",
    )
    s.set_defaults(func=cmd_server)
    return p


def cmd_server(_args: argparse.Namespace) -> int:
    from gridlake.ops.server import serve

    serve(main)
    return 0


def main(argv: list[str] | None = None) -> int:
    from gridlake.ops.server import forward

    argv = list(sys.argv[1:] if argv is None else argv)
    # What a command writes into the instance (reports, tables, logs) is its owner's only, as
    # what the services write (infra/env.sh), whatever the shell's umask.
    os.umask(0o077)
    rc = forward(argv)  # the instance's gridlake server runs it, when one runs
    if rc is not None:
        return rc
    args = build_parser().parse_args(argv)
    # On YARN each command is an application named after its verb (gridlake-refine, ...).
    os.environ.setdefault("GRIDLAKE_APP_NAME", f"gridlake-{args.command}")
    level = logging.INFO if args.verbose else logging.WARNING
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger().setLevel(level)
    logging.getLogger("py4j").setLevel(logging.WARNING)
    from gridlake.tabledef import TableLocationError

    try:
        return int(args.func(args) or 0)
    except TableLocationError as exc:
        print(f"gridlake {args.command} FAILED: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except Exception as exc:
        if not _no_space(exc):
            raise
        root = get_settings().storage_root
        print(
            f"gridlake {args.command} FAILED: no space left on the device ({root} or Spark's "
            "local folders). What it committed before stays (a Delta commit and a checkpoint "
            "entry are each one file, written whole or not at all); free space and run the "
            "same command again: it goes on from its last commit.",
            file=sys.stderr,
        )
        return EXIT_NO_SPACE


# Exit status of a command that ran out of disk space (EX_TEMPFAIL: run it again once freed).
EXIT_NO_SPACE = 75
# A registered table whose folder holds no Delta table (EX_CONFIG: an operator must decide).
EXIT_CONFIG = 78


def _no_space(exc: BaseException) -> bool:
    """True when ``exc`` or an exception it was raised from is a disk-full error: an OSError
    with ENOSPC, or a JVM error (Py4J, Spark's streaming and SQL errors carry the Java
    exception's text) saying "No space left on device"."""
    import errno

    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno == errno.ENOSPC:
            return True
        if "No space left on device" in str(e):
            return True
        e = e.__cause__ or e.__context__
    return False


if __name__ == "__main__":
    sys.exit(main())
