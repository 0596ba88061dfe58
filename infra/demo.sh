#!/usr/bin/env bash
# The demo: a simulated week -> Kafka -> grid_pipeline DAG (ingest, refine, analyze) -> answers.
set -euo pipefail
source "$(dirname "$0")/env.sh"
gl="$GRIDLAKE_VENV/bin/gridlake"
week="${GRIDLAKE_DEMO_WEEK:-$(date -u -d 'last monday - 7 days' +%G-W%V)}"
data="$GRIDLAKE_STATE/demo-data/$week"
if [ ! -f "$data/.published" ]; then
  log "generating the demo week $week in $data"
  "$gl" demo-data --out "$data" --week "$week"
  for kind in jobs nodes network; do
    "$gl" publish --topic "grid.$kind" "$data/$kind.jsonl"
  done
  touch "$data/.published"
else
  log "demo week $week already published (delete $data/.published to publish it again)"
fi
log "running the Airflow DAG grid_pipeline (ingest -> refine -> analyze)"
bash "$GRIDLAKE_REPO/infra/airflow.sh" dags-test grid_pipeline > "$GRIDLAKE_LOGS/demo-dag.log" 2>&1 \
  || { tail -50 "$GRIDLAKE_LOGS/demo-dag.log"; die "grid_pipeline failed; full log: $GRIDLAKE_LOGS/demo-dag.log"; }
log "grid_pipeline succeeded (log: $GRIDLAKE_LOGS/demo-dag.log)"
"$gl" sql "SELECT week, site, vo, jobs, failed_jobs, outlier_jobs, round(core_hours, 1) AS core_hours,
  round(cpu_efficiency, 3) AS cpu_eff, round(good_cpu_over_all_wall, 3) AS good_cpu_eff,
  round(wasted_core_hours, 1) AS wasted_core_hours
  FROM grid.site_efficiency_weekly ORDER BY week, site, vo"
"$gl" sql "SELECT batch_id, bronze_rows, clean_rows, duplicate_rows, quarantined_rows FROM silver.batch_audit ORDER BY finished_at DESC" --limit 5
cat <<TXT

gridlake demo is up.
  Superset:     http://127.0.0.1:$GRIDLAKE_SUPERSET_PORT/superset/dashboard/grid-operations/
  admin login:  $GRIDLAKE_STATE/secrets/superset_admin.txt
  Thrift/JDBC:  jdbc:hive2://127.0.0.1:$GRIDLAKE_THRIFT_PORT  (beeline, PyHive)
  Try:          $gl sql "SELECT site, sum(core_hours) FROM grid.site_efficiency_weekly GROUP BY site" --format csv
  Stop:         make down
TXT
