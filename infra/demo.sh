#!/usr/bin/env bash
# The demo: a simulated grid of the last few ISO weeks -> Kafka -> the Airflow DAGs (grid_ingest,
# grid_analytics, then a backfill of grid_weekly_site_reports run by a scheduled Airflow) ->
# weekly site reports, SQL and Superset. Leaves Airflow running on 127.0.0.1, DAGs unpaused.
# Idempotent: the grid is published once (a marker), ingest then finds nothing new, analytics
# rewrites the same gold, and the backfill only re-runs weeks whose reports failed.
# Tunables: GRIDLAKE_DEMO_WEEKS (4; reports for the last min(3, weeks)), GRIDLAKE_DEMO_JOBS.
set -euo pipefail
source "$(dirname "$0")/env.sh"
gl="$GRIDLAKE_VENV/bin/gridlake"
af=(bash "$GRIDLAKE_REPO/infra/airflow.sh")
t0=$SECONDS
weeks="${GRIDLAKE_DEMO_WEEKS:-4}"
jobs="${GRIDLAKE_DEMO_JOBS:-16000}"
last_monday="$(date -u -d 'last monday' +%F)"          # start of the current ISO week
[ "$(date -u +%u)" = 1 ] && last_monday="$(date -u +%F)"  # today is a Monday
first="$(date -u -d "$last_monday - $((7 * weeks)) days" +%F)"
data="$GRIDLAKE_STATE/demo-data/grid-$first-${weeks}w-${jobs}"

step() { log "[$((SECONDS - t0)) s] $*"; }

# 1. The simulated grid (planted effects: slow storage, memory-restricted, misconfigured and
#    diskless sites, congested and drifting network paths), published to Kafka once.
if [ ! -f "$data/.published" ]; then
  step "simulating $weeks ISO weeks from $first ($jobs jobs, 8 sites) into $data and publishing"
  "$gl" simulate --out "$data" --start "$first" --days "$((7 * weeks))" --sites 8 --jobs "$jobs" \
    --seed 11 --node-interval 600 --latency-interval 3600 --quiet --publish
  touch "$data/.published"
else
  step "the simulated grid in $data is already published (delete .published to publish again)"
fi

# 2. Kafka -> bronze -> silver, then silver -> gold: the DAGs themselves, run in-process.
for dag in grid_ingest grid_analytics; do
  step "airflow dags test $dag"
  "${af[@]}" dags-test "$dag" > "$GRIDLAKE_LOGS/demo-$dag.log" 2>&1 \
    || { tail -40 "$GRIDLAKE_LOGS/demo-$dag.log"; die "$dag failed; full log: $GRIDLAKE_LOGS/demo-$dag.log"; }
done

# 3. A scheduled Airflow on 127.0.0.1, then a backfill of the weekly reports of the last three
#    weeks, executed by its scheduler (runs at Mondays 06:00 UTC after each week).
step "starting Airflow (scheduler, DAG processor, triggerer, API server) on 127.0.0.1"
"${af[@]}" start
n_report=$((weeks < 3 ? weeks : 3))
from="$(date -u -d "$last_monday - $((7 * (n_report - 1))) days" +%F)"
to="$(date -u -d "$last_monday + 1 day" +%F)"  # inclusive of the run at $last_monday 06:00
step "backfill of grid_weekly_site_reports: $n_report weekly runs (Mondays $from to $last_monday)"
# The CLI writes the backfill's runs into the SQLite metadata DB beside the running scheduler,
# DAG processor and triggerer; SQLite can refuse it outright ("database is locked", seen in the
# nightly tests). Airflow then removes the partial backfill, so trying again is safe. Airflow
# allows one running backfill per DAG: one that an interrupted earlier demo created is carried on
# by the scheduler started above, so wait for it to complete, then create this one (it re-runs
# only what failed).
deadline=$((SECONDS + ${GRIDLAKE_DEMO_BACKFILL_TIMEOUT:-3600}))
locked=0
while :; do
  "${af[@]}" run backfill create --dag-id grid_weekly_site_reports --from-date "$from" \
    --to-date "$to" --reprocess-behavior failed > "$GRIDLAKE_LOGS/demo-backfill.log" 2>&1 && break
  if grep -q "AlreadyRunningBackfill" "$GRIDLAKE_LOGS/demo-backfill.log" && [ "$SECONDS" -lt "$deadline" ]; then
    [ "${waiting:-}" ] || step "an earlier backfill of grid_weekly_site_reports is still running; the scheduler carries it on, waiting for it"
    waiting=1
    sleep 30
    continue
  fi
  if [ "$locked" -lt 4 ] && grep -q "database is locked" "$GRIDLAKE_LOGS/demo-backfill.log"; then
    locked=$((locked + 1))
    step "backfill create: the Airflow DB was locked (try $locked of 5); again in 10 s"
    sleep 10
    continue
  fi
  tail -20 "$GRIDLAKE_LOGS/demo-backfill.log"
  die "backfill create failed"
done
want=()
for i in $(seq "$((n_report - 1))" -1 0); do
  want+=("$(date -u -d "$last_monday - $((7 * i)) days - 7 days" +%G-W%V)")
done
# The runs of the backfill's Mondays: done when all succeeded, stop at the first failure.
while :; do
  states="$("${af[@]}" run dags list-runs grid_weekly_site_reports -o json 2>/dev/null \
    | python3 -c '
import json, sys
lines = [x for x in sys.stdin.read().splitlines() if x.startswith("[")]
runs = json.loads(lines[-1]) if lines else []
want = set(sys.argv[1:])
latest = {}
for r in sorted(runs, key=lambda r: r["start_date"] or ""):
    if r["logical_date"][:10] in want:
        latest[r["logical_date"][:10]] = r["state"]
print(" ".join(latest.get(d, "missing") for d in sorted(want)))
' $(for i in $(seq "$((n_report - 1))" -1 0); do date -u -d "$last_monday - $((7 * i)) days" +%F; done))"
  case " $states " in
    *" failed "*) die "a grid_weekly_site_reports run failed ($states): see the Airflow UI ($("${af[@]}" login | head -1))" ;;
  esac
  [ -z "$(echo "$states" | tr ' ' '\n' | grep -v '^success$' || true)" ] && break
  [ "$SECONDS" -gt "$deadline" ] && die "the backfill did not finish in time ($states); see the Airflow UI"
  sleep 15
done
step "reports of ${want[*]} written"

# 4. Nothing of the instance listens beyond 127.0.0.1 (Airflow's log servers never started).
step "listening sockets of the instance's services:"
bash "$GRIDLAKE_REPO/infra/check_loopback.sh" || die "a service listens beyond 127.0.0.1 (above)"

# 5. What came out.
"$gl" sql "SELECT site, round(sum(cpu_hours) / sum(core_hours), 3) AS cpu_eff,
  round(sum(badput_core_hours), 1) AS badput_core_hours, sum(failed_jobs) AS failed_jobs
  FROM grid.site_efficiency_weekly WHERE week = DATE'$(date -u -d "$last_monday - 7 days" +%F)'
  GROUP BY site ORDER BY cpu_eff" 2>/dev/null
cat <<TXT

gridlake demo is up ($((SECONDS - t0)) s).
  Reports:      $GRIDLAKE_STATE/reports/<week>/index.html, weeks: ${want[*]}
$("${af[@]}" login | sed 's/^/  /')
  Superset:     http://127.0.0.1:$GRIDLAKE_SUPERSET_PORT/superset/dashboard/grid-operations/
  admin login:  $GRIDLAKE_STATE/secrets/superset_admin.txt
  Thrift/JDBC:  jdbc:hive2://127.0.0.1:$GRIDLAKE_THRIFT_PORT  (beeline, PyHive)
  Try:          $gl report --site PIC --week ${want[-1]}
                $gl sql "SELECT site, sum(core_hours) FROM grid.site_efficiency_weekly GROUP BY site" --format csv
  Stop:         make down
TXT
