#!/usr/bin/env bash
# airflow.sh install|init|dags-test DAG [DATE]|start|stop|status|login|run ARGS...|python FILE ARGS...
#   install    own venv in $GRIDLAKE_AIRFLOW_VENV from infra/airflow-lock.txt (resolves and writes
#              the lock first when it is missing or its spec line differs from AIRFLOW_SPEC below)
#   init       install, then `airflow db migrate` of the SQLite metadata DB (once per lock: a stamp
#              holding the lock's hash skips it, so a new lock migrates every instance again)
#   dags-test  init, then `airflow dags test DAG DATE [CONF]` (DATE defaults to today, UTC; CONF, a
#              JSON object, the run's params, e.g. '{"full": true}' for grid_analytics); exits
#              non-zero when the run does not end in state "success"
#   start      a scheduled Airflow on 127.0.0.1: the components of `airflow standalone` (scheduler
#              with the LocalExecutor, DAG processor, triggerer, API server and UI), each started
#              on its own so that no log server is started (see "Log servers" below); unpauses
#              the DAGs named in GRIDLAKE_AIRFLOW_UNPAUSE (default: all four of gridlake's; empty:
#              none)
#   stop       stop those components, by PID, and the task processes they left running
#   status     venv, metadata DB, secrets and components at a glance
#   login      print the UI's URL, user and the file that holds its generated password
#   run        any airflow command with gridlake's environment, e.g. `run tasks states-for-dag-run ..`
#   python     the Airflow venv's python with that environment (no DB needed), e.g. the DAG checks
# Airflow never shares a venv with Spark or Superset: tasks call the gridlake CLI of the main venv
# ($GRIDLAKE_CLI).
#
# Log servers. `airflow scheduler` (with the LocalExecutor) and `airflow triggerer` each fork a
# log server, `airflow serve-logs`, that binds every address: airflow/utils/serve_logs/core.py
# runs uvicorn with host="" (or "::" in the URL it logs) on [logging] worker_log_server_port
# (8793) / trigger_log_server_port (8794); no setting changes the host. `airflow standalone` starts
# both that way. The log server only exists so that an API server on *another* machine can read
# the logs of a running task; here the API server reads the same local log folder
# (FileTaskHandler reads local files first). So `start` runs the components itself, the
# scheduler and the triggerer with --skip-serve-logs (cli/commands/scheduler_command.py
# _serve_logs, triggerer_command.py _serve_logs): no log server is forked, and nothing of
# Airflow listens but the API server on 127.0.0.1. The scheduler's health-check server (also
# 0.0.0.0 by default) stays disabled and is pinned to 127.0.0.1 should anyone enable it.
set -euo pipefail
source "$(dirname "$0")/env.sh"

AIRFLOW_SPEC="apache-airflow==3.3.2 pandas>=2.2,<3"
LOCK="$GRIDLAKE_REPO/infra/airflow-lock.txt"
VENV="$GRIDLAKE_AIRFLOW_VENV"
SECRETS="$GRIDLAKE_STATE/secrets/airflow.env"
PASSWORDS="$GRIDLAKE_STATE/secrets/airflow_passwords.json"
COMPONENTS=(airflow-scheduler airflow-dag-processor airflow-triggerer airflow-api-server)

# --- environment of every airflow call -------------------------------------------------------
airflow_env() {
  export AIRFLOW_HOME="$GRIDLAKE_STATE/airflow"
  export AIRFLOW__CORE__DAGS_FOLDER="$GRIDLAKE_REPO/dags"
  export AIRFLOW__CORE__LOAD_EXAMPLES=False
  # timeout: seconds a connection waits for SQLite's write lock (default 5): with a scheduler, a DAG
  # processor, the API server and a CLI writing at once on a loaded 2-core machine, 5 s is too short
  export AIRFLOW__DATABASE__SQL_ALCHEMY_CONN="sqlite:///$AIRFLOW_HOME/airflow.db?timeout=120"
  # Two cores: one task at a time is plenty (the tasks are Spark jobs, each with local[2]).
  export AIRFLOW__CORE__PARALLELISM="${AIRFLOW__CORE__PARALLELISM:-2}"
  export AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG=1
  export AIRFLOW__API__HOST=127.0.0.1
  export AIRFLOW__API__PORT="$((8080 + GRIDLAKE_PORT_OFFSET))"
  export AIRFLOW__CORE__EXECUTION_API_SERVER_URL="http://127.0.0.1:$AIRFLOW__API__PORT/execution/"
  export AIRFLOW__LOGGING__BASE_LOG_FOLDER="$AIRFLOW_HOME/logs"
  # Task logs and their folders are the owner's only (Airflow's defaults 0o664 and 0o775 set them
  # explicitly, whatever the umask)
  export AIRFLOW__LOGGING__FILE_TASK_HANDLER_NEW_FOLDER_PERMISSIONS=0o700
  export AIRFLOW__LOGGING__FILE_TASK_HANDLER_NEW_FILE_PERMISSIONS=0o600
  # Never started (see "Log servers" above); shifted anyway so instances could never collide.
  export AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT="$((8793 + GRIDLAKE_PORT_OFFSET))"
  export AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT="$((8794 + GRIDLAKE_PORT_OFFSET))"
  export AIRFLOW__SCHEDULER__ENABLE_HEALTH_CHECK=False
  export AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_SERVER_HOST=127.0.0.1
  export AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_SERVER_PORT="$((8974 + GRIDLAKE_PORT_OFFSET))"
  export AIRFLOW__CORE__EXECUTOR=LocalExecutor
  export AIRFLOW__API__WORKERS=1
  # The UI's login: one admin whose password is generated on first use (ensure_secrets).
  export AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS="admin:admin"
  export AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE="$PASSWORDS"
  # Newly parsed DAGs start paused; `start` unpauses gridlake's own.
  export AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION=True
  export GRIDLAKE_CLI="${GRIDLAKE_CLI:-$GRIDLAKE_VENV/bin/gridlake}"
  # A gold group whose inputs did not change since its last run is not recomputed (the daily
  # run, a catch-up run after unpausing): see gridlake.gold.analyze.fingerprint.
  export GRIDLAKE_ANALYZE_SKIP_CURRENT="${GRIDLAKE_ANALYZE_SKIP_CURRENT:-1}"
  export PATH="$VENV/bin:$GRIDLAKE_VENV/bin:$PATH"
  mkdir -p "$AIRFLOW_HOME"
  # Without a config file Airflow writes one full of defaults (host 0.0.0.0, load_examples True,
  # keys of its own) that these variables override: misleading to read, so write a pointer instead.
  [ -f "$AIRFLOW_HOME/airflow.cfg" ] \
    || echo "# Set by environment variables: see infra/airflow.sh (airflow_env)." > "$AIRFLOW_HOME/airflow.cfg"
  ensure_secrets
  set -a
  # shellcheck disable=SC1090
  source "$SECRETS"
  set +a
}

# Secrets generated once per instance, never a default: JWT signing key of the API server, the
# Flask secret key and the Fernet key that encrypts connections in the metadata DB.
ensure_secrets() {
  if [ ! -s "$PASSWORDS" ]; then
    mkdir -p "$(dirname "$PASSWORDS")"
    chmod 700 "$(dirname "$PASSWORDS")"
    # SimpleAuthManager reads {"user": "password"}; writing it first means the password is never
    # printed into a log by the API server (it prints the ones it has to generate).
    (umask 077; python3 -c 'import json, secrets; print(json.dumps({"admin": secrets.token_urlsafe(18)}))' > "$PASSWORDS.tmp")
    mv "$PASSWORDS.tmp" "$PASSWORDS"
    chmod 600 "$PASSWORDS"
  fi
  [ -s "$SECRETS" ] && return 0
  mkdir -p "$(dirname "$SECRETS")"
  chmod 700 "$(dirname "$SECRETS")"
  (
    umask 077
    py="$VENV/bin/python"
    [ -x "$py" ] || py=python3
    "$py" - > "$SECRETS.tmp" <<'PY'
import base64, secrets
print(f"AIRFLOW__API_AUTH__JWT_SECRET={secrets.token_urlsafe(48)}")
print(f"AIRFLOW__API__SECRET_KEY={secrets.token_urlsafe(48)}")
print(f"AIRFLOW__CORE__FERNET_KEY={base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()}")
PY
    mv "$SECRETS.tmp" "$SECRETS"
  )
  chmod 600 "$SECRETS"
  log "airflow: generated secrets in $SECRETS"
}

airflow_cmd() { airflow_env; "$VENV/bin/airflow" "$@"; }

# --- install -----------------------------------------------------------------------------------
lock_spec_ok() { [ -f "$LOCK" ] && [ "$(head -n1 "$LOCK")" = "# spec: $AIRFLOW_SPEC" ]; }

install() {
  local stamp="$VENV/.gridlake-stamp" want
  if lock_spec_ok; then
    want="$(sha256sum "$LOCK" | cut -c1-16)"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then return 0; fi
  fi
  local t0=$SECONDS
  # Resolving anew starts from an empty venv, so the frozen lock holds nothing left over.
  lock_spec_ok || rm -rf "$VENV"
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check --upgrade pip setuptools wheel
  if lock_spec_ok; then
    log "airflow: installing $VENV from infra/airflow-lock.txt (about a minute)"
    "$VENV/bin/pip" install -q --disable-pip-version-check -r "$LOCK"
  else
    log "airflow: resolving $AIRFLOW_SPEC into $VENV, then writing infra/airflow-lock.txt (a few minutes)"
    # shellcheck disable=SC2086  # the spec is a list of requirements
    "$VENV/bin/pip" install -q --disable-pip-version-check $AIRFLOW_SPEC
    {
      echo "# spec: $AIRFLOW_SPEC"
      echo "# Written by infra/airflow.sh install (pip freeze); delete this file to re-resolve."
      "$VENV/bin/pip" freeze --disable-pip-version-check --exclude-editable | LC_ALL=C sort -f
    } > "$LOCK.tmp"
    mv "$LOCK.tmp" "$LOCK"
    want="$(sha256sum "$LOCK" | cut -c1-16)"
  fi
  "$VENV/bin/pip" check --disable-pip-version-check > /dev/null || die "airflow venv: pip check failed"
  echo "$want" > "$stamp"
  log "airflow: venv ready in $((SECONDS - t0)) s ($("$VENV/bin/airflow" version 2>/dev/null | tail -n1))"
}

# --- init --------------------------------------------------------------------------------------
init() {
  install
  airflow_env
  local stamp="$AIRFLOW_HOME/.gridlake-migrated" want
  want="$(sha256sum "$LOCK" | cut -c1-16)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f "$AIRFLOW_HOME/airflow.db" ]; then
    return 0
  fi
  local t0=$SECONDS
  log "airflow: migrating the metadata DB $AIRFLOW_HOME/airflow.db"
  "$VENV/bin/airflow" db migrate > "$GRIDLAKE_LOGS/airflow-db-migrate.log" 2>&1 \
    || { tail -n 30 "$GRIDLAKE_LOGS/airflow-db-migrate.log" >&2; die "airflow db migrate failed"; }
  echo "$want" > "$stamp"
  log "airflow: metadata DB ready in $((SECONDS - t0)) s"
}

# --- dags-test ---------------------------------------------------------------------------------
dags_test() {
  local dag="${1:?usage: airflow.sh dags-test DAG [DATE] [CONF]}" date="${2:-$(date -u +%Y-%m-%d)}"
  local conf=()
  [ -n "${3:-}" ] && conf=(--conf "$3")
  init
  airflow_env
  local out="$GRIDLAKE_LOGS/airflow-dags-test-$dag.log" rc=0 state
  log "airflow: dags test $dag $date ${3:+$3 }(GRIDLAKE_CLI=$GRIDLAKE_CLI; output also in $out)"
  "$VENV/bin/airflow" dags test "${conf[@]}" "$dag" "$date" 2>&1 | tee "$out" || rc=$?
  # Airflow 3.3.2 exits 1 ("DagRun failed") when the run ends failed, after the retries. Belt and
  # braces against a future change: a run logged as finished in any state but success fails too.
  state="$(grep -oE 'DagRun Finished: .* state=[a-z_]+' "$out" | tail -n1 | grep -oE '[a-z_]+$' || true)"
  if [ "$rc" -eq 0 ] && [ -n "$state" ] && [ "$state" != "success" ]; then
    log "airflow: dags test exited 0 but the run finished in state '$state'"
    rc=1
  fi
  if [ "$rc" -eq 0 ]; then log "airflow: $dag run succeeded"; else log "airflow: $dag run failed (exit $rc)"; fi
  return "$rc"
}

# --- start / stop ------------------------------------------------------------------------------
start() {
  init
  airflow_env
  if pid_alive airflow-api-server && pid_alive airflow-scheduler; then
    log "airflow: already running on http://127.0.0.1:$AIRFLOW__API__PORT"
    return 0
  fi
  stop_components
  log "airflow: starting scheduler, DAG processor, triggerer and API server on 127.0.0.1"
  local a="$VENV/bin/airflow" logs="$GRIDLAKE_LOGS"
  # The scheduler (and the tasks it runs), the DAG processor and the triggerer are batch work:
  # they run at a lower CPU priority than the Thrift Server and Superset, so that dashboards
  # stay responsive while DAGs run (GRIDLAKE_BATCH_NICE, start_batch_bg in env.sh).
  start_batch_bg airflow-scheduler "$logs/airflow-scheduler.log" "$a" scheduler --skip-serve-logs
  start_batch_bg airflow-dag-processor "$logs/airflow-dag-processor.log" "$a" dag-processor
  start_batch_bg airflow-triggerer "$logs/airflow-triggerer.log" "$a" triggerer --skip-serve-logs
  start_bg airflow-api-server "$logs/airflow-api-server.log" \
    "$a" api-server --host 127.0.0.1 --port "$AIRFLOW__API__PORT" --workers 1
  wait_port "$AIRFLOW__API__PORT" 180 airflow-api-server
  # The DAG processor registers the DAGs a few seconds after start; then unpause gridlake's
  # (GRIDLAKE_AIRFLOW_UNPAUSE, default all four, empty for none; the others stay as they are:
  # paused when new).
  local dags=() d
  read -r -a dags <<< "${GRIDLAKE_AIRFLOW_UNPAUSE-grid_ingest grid_analytics grid_weekly_site_reports grid_maintenance}"
  # `dags unpause` of a DAG the processor has not registered yet exits 0 ("No paused DAGs were
  # found") and does nothing: so a DAG counts as unpaused only once `dags list` shows it so.
  local ok
  for d in "${dags[@]}"; do
    ok=0
    for _ in $(seq 1 60); do
      if "$a" dags list -o plain --columns dag_id,is_paused 2> /dev/null | grep -Eq "^$d +False *$"; then
        ok=1
        break
      fi
      "$a" dags unpause "$d" > /dev/null 2>&1 || true
      pid_alive airflow-dag-processor || die "airflow DAG processor exited; see $logs/airflow-dag-processor.log"
      sleep 2
    done
    [ "$ok" = 1 ] || die "airflow: could not unpause $d (not registered by the DAG processor?); see $logs/airflow-dag-processor.log"
  done
  log "airflow: up on http://127.0.0.1:$AIRFLOW__API__PORT (DAGs unpaused: ${dags[*]})"
}

stop_components() {
  local c
  for c in "${COMPONENTS[@]}"; do stop_pid "$c"; done
  stop_task_processes
}

# task_processes: PIDs of this instance's Airflow task processes, the LocalExecutor's workers and
# the task runners they fork (both titled "airflow worker -- ..."), told from other instances' by
# the AIRFLOW_HOME they inherited. A task runner makes a process group of its own, and one forked
# while the scheduler stops is not among the descendants stop_pid found: it outlives the scheduler,
# reparented to init, with the task's `gridlake` command and its Spark JVM below it; and a task's
# command (it runs in a session of its own) outlives a runner that exits first: those are told by
# the AIRFLOW_CTX_DAG_ID Airflow sets for a task's command.
task_processes() {
  local home="$GRIDLAKE_STATE/airflow" d pid title env_
  for d in /proc/[0-9]*; do
    pid="${d#/proc/}"
    title="$(tr '\0' ' ' 2>/dev/null < "$d/cmdline")" || continue
    env_="$(tr '\0' '\n' 2>/dev/null < "$d/environ")" || continue
    grep -qxF "AIRFLOW_HOME=$home" <<< "$env_" || continue
    case "$title" in "airflow worker "*) echo "$pid"; continue ;; esac
    grep -q "^AIRFLOW_CTX_DAG_ID=" <<< "$env_" && echo "$pid"
  done
  return 0
}

# stop_task_processes: stop those task processes and everything below them, by PID: TERM, then
# KILL what is left after 30 s. The descendants are listed first (a task's command runs in a
# session of its own and would be orphaned by its runner's exit).
stop_task_processes() {
  local pids p all=() alive
  pids="$(task_processes)"
  [ -n "$pids" ] || return 0
  mapfile -t all < <(for p in $pids; do echo "$p"; descendants "$p"; done | awk '!seen[$0]++')
  for p in "${all[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for _ in $(seq 1 30); do
    alive=0
    for p in "${all[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 1
  done
  for p in "${all[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  log "airflow task processes: stopped (pids ${all[*]})"
}

login() {
  airflow_env
  # the path of the 0600 file, never the password itself (it would end up in terminals and logs)
  echo "Airflow UI:   http://127.0.0.1:$AIRFLOW__API__PORT  (user admin, password: key \"admin\" of $PASSWORDS)"
}

status() {
  local c
  for c in "${COMPONENTS[@]}"; do
    if pid_alive "$c"; then echo "airflow   $c running (pid $(cat "$GRIDLAKE_RUN/$c.pid"))"; fi
  done
  if [ -x "$VENV/bin/airflow" ]; then
    echo "airflow   venv     $VENV ($("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("apache-airflow"))'))"
  else
    echo "airflow   venv     missing (run: bash infra/airflow.sh install)"
  fi
  local home="$GRIDLAKE_STATE/airflow"
  if [ -f "$home/.gridlake-migrated" ]; then echo "airflow   db       $home/airflow.db"; else echo "airflow   db       not migrated"; fi
  if [ -s "$SECRETS" ]; then echo "airflow   secrets  $SECRETS ($(stat -c %a "$SECRETS"))"; else echo "airflow   secrets  not generated"; fi
}

case "${1:-status}" in
  install) install ;;
  init) init ;;
  dags-test) shift; dags_test "$@" ;;
  start) start ;;
  stop) stop_components ;;
  login) install; login ;;
  status) status ;;
  run) shift; init; airflow_cmd "$@" ;;
  python) shift; install; airflow_env; exec "$VENV/bin/python" "$@" ;;
  *) die "usage: airflow.sh install|init|dags-test DAG [DATE] [CONF]|start|stop|status|login|run ARGS...|python FILE ARGS..." ;;
esac
