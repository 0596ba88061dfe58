#!/usr/bin/env bash
# The demo: a simulated grid of the last few ISO weeks -> Kafka -> the Airflow DAGs (grid_ingest,
# grid_analytics, then a backfill of grid_weekly_site_reports run by a scheduled Airflow) ->
# weekly site reports, SQL and Superset. Leaves Airflow running on 127.0.0.1, DAGs unpaused.
# Idempotent: the grid is published once (a marker), ingest then finds nothing new, analytics
# rewrites the same gold, and the report weeks whose latest runs succeeded are not run again.
# Tunables: GRIDLAKE_DEMO_WEEKS (4; reports for the last min(3, weeks)), GRIDLAKE_DEMO_JOBS,
# GRIDLAKE_DEMO_TODAY (YYYY-MM-DD, default today UTC: the day the demo's weeks end before; the
# tests pin it to cover the ISO-week edges), GRIDLAKE_DEMO_BACKFILL_TIMEOUT (seconds, 1800),
# GRIDLAKE_DEMO_DATA (a folder of canonical JSON lines, jobs.jsonl, nodes.jsonl, network.jsonl,
# e.g. from `gridlake demo-data`: published instead of the simulated grid; make test builds the
# warehouse its tests read this way), GRIDLAKE_DEMO_KEEP_PAUSED=1 (the periodic DAGs stay paused
# at the end: make test's tests then own the warehouse, no scheduled run writes beside them),
# GRIDLAKE_DEMO_WARM_DASHBOARDS=0 (no warming of the dashboards' queries: make test, whose
# Superset tests query every chart themselves).
# Each step's time goes to $GRIDLAKE_LOGS/demo-steps.tsv (step, seconds).
set -euo pipefail
source "$(dirname "$0")/env.sh"
gl="$GRIDLAKE_VENV/bin/gridlake"
af=(bash "$GRIDLAKE_REPO/infra/airflow.sh")
t0=$SECONDS
weeks="${GRIDLAKE_DEMO_WEEKS:-4}"
jobs="${GRIDLAKE_DEMO_JOBS:-16000}"
today="${GRIDLAKE_DEMO_TODAY:-$(date -u +%F)}"
date -u -d "$today" +%F > /dev/null 2>&1 || die "GRIDLAKE_DEMO_TODAY=$today is not a date (YYYY-MM-DD)"
today="$(date -u -d "$today" +%F)"
# The Monday that starts today's ISO week (%u: 1 = Monday ... 7 = Sunday).
last_monday="$(date -u -d "$today - $(( $(date -u -d "$today" +%u) - 1 )) days" +%F)"
first="$(date -u -d "$last_monday - $((7 * weeks)) days" +%F)"
data="${GRIDLAKE_DEMO_DATA:-$GRIDLAKE_STATE/demo-data/grid-$first-${weeks}w-${jobs}}"
# GRIDLAKE_DEMO_PLAN=1: print the weeks the demo would simulate and report, and exit (tests).
n_report=$((weeks < 3 ? weeks : 3))
mondays=()  # the report runs' run_after dates (Mondays 06:00), oldest first
want=()     # the ISO weeks they report: each the week before its run
for i in $(seq "$((n_report - 1))" -1 0); do
  mondays+=("$(date -u -d "$last_monday - $((7 * i)) days" +%F)")
  want+=("$(date -u -d "$last_monday - $((7 * i)) days - 7 days" +%G-W%V)")
done
if [ -n "${GRIDLAKE_DEMO_PLAN:-}" ]; then
  echo "today=$today first=$first last_monday=$last_monday runs=${mondays[*]} weeks=${want[*]}"
  exit 0
fi
[ "$(date -u -d "$today" +%s)" -le "$(date -u +%s)" ] || die "GRIDLAKE_DEMO_TODAY=$today lies in the future"
steps="$GRIDLAKE_LOGS/demo-steps.tsv"
: > "$steps"
step_name="" step_t0=$SECONDS
step() {
  [ -n "$step_name" ] && printf '%s\t%d\n' "$step_name" "$((SECONDS - step_t0))" >> "$steps"
  step_name="$1" step_t0=$SECONDS
  log "[$((SECONDS - t0)) s] $2"
}

# 1. The simulated grid (planted effects: slow storage, memory-restricted, misconfigured and
#    diskless sites, congested and drifting network paths), published to Kafka once.
if [ -n "${GRIDLAKE_DEMO_DATA:-}" ] && [ ! -f "$data/.published" ]; then
  step simulate "publishing the records of $data (GRIDLAKE_DEMO_DATA) instead of a simulated grid"
  for kind in jobs nodes network; do
    [ -f "$data/$kind.jsonl" ] || die "GRIDLAKE_DEMO_DATA=$data holds no $kind.jsonl"
    "$gl" publish --topic "grid.$kind" --quiet "$data/$kind.jsonl"
  done
  touch "$data/.published"
elif [ ! -f "$data/.published" ]; then
  step simulate "simulating $weeks ISO weeks from $first ($jobs jobs, 8 sites) into $data and publishing"
  "$gl" simulate --out "$data" --start "$first" --days "$((7 * weeks))" --sites 8 --jobs "$jobs" \
    --seed 11 --node-interval 600 --latency-interval 3600 --quiet --publish
  touch "$data/.published"
else
  step simulate "the simulated grid in $data is already published (delete .published to publish again)"
fi

# The periodic DAGs stay paused while the demo works (a warm re-run finds them unpaused): a paused
# DAG gets no run from the scheduler and no queued asset event from the ingest below.
periodic='^grid_(ingest|analytics|maintenance)$'
pause_periodic() {  # no DAG is known before the first parse: nothing to pause then
  "${af[@]}" run dags pause --treat-dag-id-as-regex -y "$periodic" > /dev/null 2>&1 || true
}

# 2. Kafka -> bronze -> silver, then silver -> gold: the DAGs themselves, run in-process.
step pause "pausing the periodic DAGs while the demo runs"
"${af[@]}" init
pause_periodic
# A re-run whose ingest refined nothing new skips analytics when an earlier demo's analytics run
# succeeded on the same data (its gold is current: analytics would rewrite the same tables).
for dag in grid_ingest grid_analytics; do
  if [ "$dag" = grid_analytics ] && [ -f "$data/.analytics-done" ] \
      && ! grep -qE "<- [1-9][0-9]* bronze records in" "$GRIDLAKE_LOGS/demo-grid_ingest.log"; then
    step "$dag" "silver unchanged since the analytics run of $(cat "$data/.analytics-done"): gold is current, grid_analytics not re-run"
    continue
  fi
  step "$dag" "airflow dags test $dag"
  "${af[@]}" dags-test "$dag" "$today" > "$GRIDLAKE_LOGS/demo-$dag.log" 2>&1 \
    || { tail -40 "$GRIDLAKE_LOGS/demo-$dag.log"; die "$dag failed; full log: $GRIDLAKE_LOGS/demo-$dag.log"; }
  [ "$dag" = grid_analytics ] && date -u +%FT%TZ > "$data/.analytics-done"
done

# 3. The weekly reports of the last n weeks: a backfill of grid_weekly_site_reports, executed by
#    a scheduled Airflow on 127.0.0.1. Its runs come after Mondays 06:00 (run_after) and report
#    the week before: in Airflow 3 a run's logical_date is the start of its data interval, the
#    Monday before its run_after, so runs are matched on run_after.
from="${mondays[0]}"
to="$(date -u -d "$last_monday + 1 day" +%F)"  # inclusive of the run at $last_monday 06:00

# report_runs: the runs of grid_weekly_site_reports as a JSON list, from the Airflow API server
# (a token from the instance's generated admin password, then one GET: milliseconds of CPU);
# from the Airflow CLI while the API server is down (~6 s of CPU per call, which every poll of the
# wait loop below used to take from the reports it waits for).
api="http://127.0.0.1:$((8080 + GRIDLAKE_PORT_OFFSET))"
report_runs() {
  local pw tok
  pw="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["admin"])' \
    "$GRIDLAKE_STATE/secrets/airflow_passwords.json" 2>/dev/null || true)"
  # the login goes to curl on its stdin (printf is a shell builtin): never on a command line
  if [ -n "$pw" ] && tok="$(printf '{"username": "admin", "password": "%s"}' "$pw" \
      | curl -sf --max-time 20 -X POST "$api/auth/token" -H 'Content-Type: application/json' -d @- 2>/dev/null \
      | python3 -c 'import json, sys; print(json.load(sys.stdin)["access_token"])' 2>/dev/null)"; then
    printf 'header = "Authorization: Bearer %s"\n' "$tok" | curl -sf --max-time 30 -K - \
      "$api/api/v2/dags/grid_weekly_site_reports/dagRuns?limit=100" 2>/dev/null \
      | python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["dag_runs"]))' 2>/dev/null \
      && return 0
  fi
  "${af[@]}" run dags list-runs grid_weekly_site_reports -o json 2>/dev/null
}

# run_states: the state of the latest run (by start) of each of $mondays, "missing" for none.
run_states() {
  report_runs | python3 -c '
import json, sys
runs = []
for line in reversed(sys.stdin.read().splitlines()):  # Airflow logs lines starting with "[" too
    if line.startswith("[{") or line.strip() == "[]":
        runs = json.loads(line)
        break
latest = {}
for r in sorted(runs, key=lambda r: r["start_date"] or ""):
    latest[(r["run_after"] or "")[:10]] = r["state"]
print(" ".join(latest.get(d, "missing") for d in sys.argv[1:]))
' "${mondays[@]}"
}

# failed_task_log: the log of the newest failed try of a report task, for a failure's reason.
failed_task_log() {
  grep -rls "exit code\|ERROR" "$GRIDLAKE_STATE/airflow/logs/dag_id=grid_weekly_site_reports" 2>/dev/null \
    | xargs -r ls -t 2>/dev/null | head -n1
}

# reports_busy: true while a run of grid_weekly_site_reports is queued or running.
reports_busy() {
  report_runs | python3 -c '
import json, sys
for line in reversed(sys.stdin.read().splitlines()):
    if line.startswith("[{") or line.strip() == "[]":
        sys.exit(0 if any(r["state"] in ("queued", "running") for r in json.loads(line)) else 1)
sys.exit(1)
'
}

all_success() { [ -z "$(tr ' ' '\n' <<< "$1" | grep -v '^success$' || true)" ]; }

step reports "weekly reports of ${want[*]} (grid_weekly_site_reports runs after Mondays ${mondays[*]})"
states="$(run_states)"
if all_success "$states" && [ -f "$GRIDLAKE_STATE/reports/${want[-1]}/index.html" ]; then
  log "every report week's latest run succeeded ($states): nothing to backfill"
else
  # The backfill is created with Airflow stopped: its CLI writes the runs into the SQLite metadata
  # DB, which a running scheduler, DAG processor and triggerer write to all the time, and SQLite
  # refuses a second writer ("database is locked"). Airflow is then started with only the report
  # DAG unpaused, so that no catch-up run of ingest, analytics or maintenance competes with the
  # backfill for the two cores; the others are unpaused once the reports are written.
  reprocess=failed
  all_success "$states" && reprocess=completed  # the runs succeeded but the reports are gone
  deadline=$((SECONDS + ${GRIDLAKE_DEMO_BACKFILL_TIMEOUT:-1800}))
  blog="$GRIDLAKE_LOGS/demo-backfill.log"
  for attempt in 1 2; do
    "${af[@]}" stop
    pause_periodic
    "${af[@]}" run backfill create --dag-id grid_weekly_site_reports --from-date "$from" \
      --to-date "$to" --reprocess-behavior "$reprocess" > "$blog" 2>&1 && break
    if [ "$attempt" = 1 ] && grep -q "AlreadyRunningBackfill" "$blog"; then
      # An interrupted earlier demo left its backfill unfinished (Airflow allows one per DAG):
      # let the scheduler complete it, then create this one.
      log "an earlier backfill of grid_weekly_site_reports is unfinished: letting the scheduler complete it"
      GRIDLAKE_AIRFLOW_UNPAUSE=grid_weekly_site_reports "${af[@]}" start
      while reports_busy; do
        [ "$SECONDS" -gt "$deadline" ] && die "the earlier backfill did not finish in time; see the Airflow UI"
        sleep 10
      done
      continue
    fi
    tail -20 "$blog"
    die "backfill create failed; full log: $blog"
  done
  GRIDLAKE_AIRFLOW_UNPAUSE=grid_weekly_site_reports "${af[@]}" start
  while :; do
    states="$(run_states)"
    if [[ " $states " == *" failed "* ]]; then
      f="$(failed_task_log)"
      [ -n "$f" ] && { log "the failed task's log: $f"; tail -25 "$f" >&2; }
      die "a grid_weekly_site_reports run failed (runs after ${mondays[*]}: $states); see the Airflow UI"
    fi
    all_success "$states" && break
    pid_alive airflow-scheduler || die "the Airflow scheduler exited; see $GRIDLAKE_LOGS/airflow-scheduler.log"
    [ "$SECONDS" -gt "$deadline" ] && die "the backfill did not finish in time (runs after ${mondays[*]}: $states); see the Airflow UI"
    sleep 10
  done
fi
step check "reports of ${want[*]} written; listening sockets of the instance's services:"
# 4. Nothing of the instance listens beyond 127.0.0.1 (Airflow's log servers never started).
bash "$GRIDLAKE_REPO/infra/check_loopback.sh" || die "a service listens beyond 127.0.0.1 (above)"

# 5. What came out (before the periodic DAGs are unpaused: the Spark server is still idle).
step summary "the efficiency of the week ${want[-1]}"
summary="$("$gl" sql "SELECT site, round(sum(cpu_hours) / sum(core_hours), 3) AS cpu_eff,
  round(sum(badput_core_hours), 1) AS badput_core_hours, sum(failed_jobs) AS failed_jobs
  FROM grid.site_efficiency_weekly WHERE week = DATE'$(date -u -d "$last_monday - 7 days" +%F)'
  GROUP BY site ORDER BY cpu_eff" 2>/dev/null)"
echo "$summary"
# The least efficient site of the week (the table's first row), for the report the summary offers.
try_site="$(awk -F'|' '/^\|/ { if (++n == 2) { gsub(/ /, "", $2); print $2; exit } }' <<< "$summary")"
try_site="${try_site:-PIC}"
# 6. Every dashboard's chart queries once through Superset, as a browser opening it sends them:
# the first person to open a dashboard then finds a warm Thrift Server (JIT-compiled, its
# generated code, Delta snapshots and metastore lookups cached) instead of waiting for all that.
if [ "${GRIDLAKE_DEMO_WARM_DASHBOARDS:-1}" = 0 ]; then
  step warm "GRIDLAKE_DEMO_WARM_DASHBOARDS=0: the dashboards are not warmed"
else
  step warm "warming the six dashboards (each chart's query once through Superset)"
  "$gl" superset warm > "$GRIDLAKE_LOGS/demo-warm.log" 2>&1 \
    || { tail -5 "$GRIDLAKE_LOGS/demo-warm.log"; die "a dashboard query failed; full log: $GRIDLAKE_LOGS/demo-warm.log"; }
fi
step unpause "unpausing the periodic DAGs"
# 7. Airflow runs with every DAG unpaused (start is a no-op when it already runs). Catch-up is off:
# each periodic DAG now runs its latest interval once (ingest finds nothing new).
GRIDLAKE_AIRFLOW_UNPAUSE=grid_weekly_site_reports "${af[@]}" start
if [ "${GRIDLAKE_DEMO_KEEP_PAUSED:-0}" = 1 ]; then
  log "GRIDLAKE_DEMO_KEEP_PAUSED=1: grid_ingest, grid_analytics and grid_maintenance stay paused"
else
  "${af[@]}" run dags unpause --treat-dag-id-as-regex -y "$periodic" > "$GRIDLAKE_LOGS/demo-unpause.log" 2>&1 \
    || { tail -5 "$GRIDLAKE_LOGS/demo-unpause.log"; die "could not unpause the periodic DAGs"; }
fi
step end "done"
cat <<TXT

gridlake demo is up ($((SECONDS - t0)) s; per step: $steps).
  Reports:      $GRIDLAKE_STATE/reports/<week>/index.html, weeks: ${want[*]}
$("${af[@]}" login | sed 's/^/  /')
  Superset:     http://127.0.0.1:$GRIDLAKE_SUPERSET_PORT/superset/dashboard/grid-operations/
  admin login:  $GRIDLAKE_STATE/secrets/superset_admin.txt
  Thrift/JDBC:  jdbc:hive2://127.0.0.1:$GRIDLAKE_THRIFT_PORT  (user operator; password in $GRIDLAKE_STATE/secrets/thrift_users/operator.password)
  Try:          $gl report --site $try_site --week ${want[-1]}
                $gl sql "SELECT site, sum(core_hours) FROM grid.site_efficiency_weekly GROUP BY site" --format csv
  Stop:         make down
TXT
