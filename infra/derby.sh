#!/usr/bin/env bash
# derby.sh start|stop|status: Derby network server on 127.0.0.1 holding the Hive metastore.
set -euo pipefail
source "$(dirname "$0")/env.sh"
libs="$GRIDLAKE_HOME/derby/libs"
home="$GRIDLAKE_STATE/derby"
case "${1:-status}" in
  start)
    pid_alive derby && { log "derby: already running"; exit 0; }
    bash "$GRIDLAKE_REPO/infra/fetch_jars.sh" derby
    mkdir -p "$home"
    start_bg derby "$GRIDLAKE_LOGS/derby.log" java -Xmx256m "-Dderby.system.home=$home" \
      -Dderby.drda.host=127.0.0.1 -cp "$libs/*" org.apache.derby.drda.NetworkServerControl \
      start -h 127.0.0.1 -p "$GRIDLAKE_DERBY_PORT" -noSecurityManager
    wait_port "$GRIDLAKE_DERBY_PORT" 60 derby
    log "derby: up on 127.0.0.1:$GRIDLAKE_DERBY_PORT"
    ;;
  stop) stop_pid derby ;;
  status) if pid_alive derby; then echo "derby     running  pid $(cat "$GRIDLAKE_RUN/derby.pid")  127.0.0.1:$GRIDLAKE_DERBY_PORT"; else echo "derby     stopped"; fi ;;
  *) die "usage: derby.sh start|stop|status" ;;
esac
