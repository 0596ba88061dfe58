#!/usr/bin/env bash
# spark_server.sh start|stop|status: the instance's gridlake server (jobs/gridlake/ops/server.py), one Spark
# session in local mode that runs the Spark commands of `gridlake` (ingest, refine, analyze,
# report, sql, ...) sent to it over a Unix socket in $GRIDLAKE_RUN (mode 0600; nothing listens on
# the network), so that an Airflow task costs no JVM start. Commands run in-process when it is
# not running. GRIDLAKE_SERVER_MEMORY (3g) is its driver memory. Nothing to do in cluster mode.
set -euo pipefail
source "$(dirname "$0")/env.sh"
sock="$GRIDLAKE_RUN/spark-server.sock"
ping() { GRIDLAKE_SERVER=auto "$GRIDLAKE_VENV/bin/python" -c \
  'import sys; from gridlake.ops.server import ping; sys.exit(0 if ping() else 1)' 2>/dev/null; }
case "${1:-status}" in
  start)
    if [ "${GRIDLAKE_ENV:-local}" != local ]; then log "spark-server: not used with GRIDLAKE_ENV=${GRIDLAKE_ENV}"; exit 0; fi
    # A server running a command answers no ping until it ends (one command at a time): its
    # busy file says it works. Killing it there (as this did) failed the command it ran.
    if pid_alive spark-server && { [ -f "$GRIDLAKE_RUN/spark-server.busy" ] || ping; }; then
      log "spark-server: already running"; exit 0
    fi
    stop_pid spark-server
    pid_alive derby || bash "$GRIDLAKE_REPO/infra/derby.sh" start
    mkdir -p "$GRIDLAKE_STATE/spark-server"
    cd "$GRIDLAKE_STATE/spark-server"
    GRIDLAKE_DRIVER_MEMORY="${GRIDLAKE_SERVER_MEMORY:-3g}" \
      start_batch_bg spark-server "$GRIDLAKE_LOGS/spark-server.log" "$GRIDLAKE_VENV/bin/gridlake" server
    # It starts at the batch priority: on a busy machine (make test's other lane, a refine) its
    # JVM and metastore connection take minutes, not the ~20 s of an idle one.
    secs="${GRIDLAKE_SERVER_START_SECONDS:-600}"
    for _ in $(seq 1 "$secs"); do
      [ -S "$sock" ] && ping && break
      pid_alive spark-server || die "spark-server exited during start-up; see $GRIDLAKE_LOGS/spark-server.log"
      sleep 1
    done
    ping || die "spark-server did not answer within $secs s; see $GRIDLAKE_LOGS/spark-server.log"
    log "spark-server: up on $sock"
    ;;
  stop) stop_pid spark-server; rm -f "$sock" "$GRIDLAKE_RUN/spark-server.busy" ;;
  status) if pid_alive spark-server; then echo "spark     server   pid $(cat "$GRIDLAKE_RUN/spark-server.pid")  $sock"; else echo "spark     server   stopped"; fi ;;
  *) die "usage: spark_server.sh start|stop|status" ;;
esac
