#!/usr/bin/env bash
# `make install` after the system packages: the three venvs and the jars, side by side.
# Four chains run at once (each idempotent, each a no-op when its stamp is current):
#   the main venv; the Kafka and Derby jars (Maven, one after the other: one local repository);
#   the Airflow venv; the Superset venv. Spark's packages are resolved once the main venv and
#   the Maven jars are there. On a fresh machine this takes about half the serial time (pip is
#   mostly waiting on downloads and unpacking). A chain's output goes to its log and is printed
#   when it ends; the first failure is reported with its log, after every chain has ended.
set -euo pipefail
source "$(dirname "$0")/env.sh"
logs="$GRIDLAKE_HOME/install-logs"
mkdir -p "$logs"
infra="$GRIDLAKE_REPO/infra"

declare -A pid_of=()
start() {  # start NAME COMMAND...: run COMMAND in the background, output to NAME's log
  local name="$1"
  shift
  "$@" > "$logs/$name.log" 2>&1 &
  pid_of[$name]=$!
}
jars() { bash "$infra/fetch_jars.sh" kafka && bash "$infra/fetch_jars.sh" derby; }

start main-venv bash "$infra/install_python.sh"
start jars jars
start airflow bash "$infra/airflow.sh" install
start superset bash "$infra/superset.sh" install

failed=()
finish() {  # finish NAME: wait for NAME's chain, print its log, note a failure
  local name="$1" rc=0
  wait "${pid_of[$name]}" || rc=$?
  if [ -s "$logs/$name.log" ]; then cat "$logs/$name.log" >&2; fi
  if [ "$rc" != 0 ]; then
    failed+=("$name")
    log "install: $name failed (exit $rc); its log: $logs/$name.log"
  fi
}
finish main-venv
finish jars
if [ "${#failed[@]}" = 0 ] && [ ! -e "$GRIDLAKE_HOME/ivy/jars/.resolved" ]; then
  "$GRIDLAKE_VENV/bin/python" -m gridlake.spark --resolve || failed+=(spark-packages)
fi
finish airflow
finish superset
[ "${#failed[@]}" = 0 ] || die "install failed: ${failed[*]}"
