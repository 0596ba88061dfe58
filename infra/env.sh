# Sourced by every infra script: one place for paths and ports.
# GRIDLAKE_HOME holds shared installs (venvs, jars); GRIDLAKE_INSTANCE selects a state folder
# with its own data, logs, PIDs and ports, so the test suite never touches the demo's warehouse.
# Everything an instance's services and jobs write is their owner's only (the state folder holds
# accounting data per site, logs and secrets): files 0600, folders 0700.
umask 077
GRIDLAKE_REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export GRIDLAKE_REPO
export GRIDLAKE_HOME="${GRIDLAKE_HOME:-$GRIDLAKE_REPO/.gridlake}"
export GRIDLAKE_INSTANCE="${GRIDLAKE_INSTANCE:-demo}"
export GRIDLAKE_STATE="$GRIDLAKE_HOME/$GRIDLAKE_INSTANCE"
# The instance's settings written by `make cluster-up` (cluster.env), where the environment does
# not set them (the same rule as gridlake.settings); read first, since it may hold the instance's
# port offset (a cluster instance other than `cluster`, e.g. make test's short form).
if [ -f "$GRIDLAKE_STATE/cluster.env" ]; then
  while IFS='=' read -r _k _v; do
    case "$_k" in '' | \#*) continue ;; esac
    [ -n "${!_k:-}" ] || export "$_k=$_v"
  done < "$GRIDLAKE_STATE/cluster.env"
fi
if [ -z "${GRIDLAKE_PORT_OFFSET:-}" ]; then
  case "$GRIDLAKE_INSTANCE" in
    demo) GRIDLAKE_PORT_OFFSET=0 ;;
    test) GRIDLAKE_PORT_OFFSET=100 ;;
    cluster) GRIDLAKE_PORT_OFFSET=500 ;;
    *) echo "[gridlake] instance '$GRIDLAKE_INSTANCE' needs GRIDLAKE_PORT_OFFSET (e.g. 200, 300): two instances must not share ports" >&2; exit 2 ;;
  esac
fi
export GRIDLAKE_PORT_OFFSET
export GRIDLAKE_KAFKA_PORT="${GRIDLAKE_KAFKA_PORT:-$((9092 + GRIDLAKE_PORT_OFFSET))}"
export GRIDLAKE_KAFKA_CONTROLLER_PORT="${GRIDLAKE_KAFKA_CONTROLLER_PORT:-$((9093 + GRIDLAKE_PORT_OFFSET))}"
export GRIDLAKE_DERBY_PORT="${GRIDLAKE_DERBY_PORT:-$((1527 + GRIDLAKE_PORT_OFFSET))}"
export GRIDLAKE_METASTORE_PORT="${GRIDLAKE_METASTORE_PORT:-$((9083 + GRIDLAKE_PORT_OFFSET))}"
export GRIDLAKE_THRIFT_PORT="${GRIDLAKE_THRIFT_PORT:-$((10000 + GRIDLAKE_PORT_OFFSET))}"
export GRIDLAKE_SUPERSET_PORT="${GRIDLAKE_SUPERSET_PORT:-$((8088 + GRIDLAKE_PORT_OFFSET))}"
export GRIDLAKE_VENV="$GRIDLAKE_HOME/venv"
export GRIDLAKE_AIRFLOW_VENV="$GRIDLAKE_HOME/airflow-venv"
export GRIDLAKE_SUPERSET_VENV="$GRIDLAKE_HOME/superset-venv"
export GRIDLAKE_M2="$GRIDLAKE_HOME/m2"
export GRIDLAKE_RUN="$GRIDLAKE_STATE/run"
export GRIDLAKE_LOGS="$GRIDLAKE_STATE/logs"
export SPARK_LOCAL_IP=127.0.0.1
mkdir -p "$GRIDLAKE_HOME" "$GRIDLAKE_RUN" "$GRIDLAKE_LOGS"

log() { printf '[gridlake %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# pid_alive NAME: true when the PID file of NAME names a live process.
pid_alive() {
  local f="$GRIDLAKE_RUN/$1.pid"
  [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null
}

# descendants PID: the PIDs of every process below PID (children, their children, ...), found
# by parent PID, so that it includes those that left PID's process group (Airflow runs a task's
# command in a session of its own).
descendants() {
  local c
  for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do
    echo "$c"
    descendants "$c"
  done
}

# stop_pid NAME: stop the process recorded in NAME's PID file, its group and every descendant
# (a running Airflow task's `gridlake` command and its Spark JVM among them), by PID.
stop_pid() {
  local f="$GRIDLAKE_RUN/$1.pid" pid below p
  [ -f "$f" ] || { log "$1: not running"; return 0; }
  pid="$(cat "$f")"
  if kill -0 "$pid" 2>/dev/null; then
    below="$(descendants "$pid" | tr '\n' ' ')"
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for p in $below; do kill -TERM "$p" 2>/dev/null || true; done
    for _ in $(seq 1 30); do
      local alive=0
      for p in "$pid" $below; do kill -0 "$p" 2>/dev/null && alive=1; done
      [ "$alive" = 0 ] && break
      sleep 1
    done
    for p in "$pid" $below; do
      kill -0 "$p" 2>/dev/null && { kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null || true; }
    done
    log "$1: stopped (pid $pid${below:+; with ${below% }})"
  fi
  rm -f "$f"
}

# Batch work (the gridlake Spark server, Airflow's scheduler and its tasks) runs at this nice
# level, interactive serving (Thrift Server, Superset) at the default: on a small machine the
# dashboards then keep their CPU share while the pipeline runs.
GRIDLAKE_BATCH_NICE="${GRIDLAKE_BATCH_NICE:-10}"

# start_bg NAME LOGFILE CMD...: start CMD in its own session (setsid), record its PID.
start_bg() {
  local name="$1" logf="$2"; shift 2
  setsid "$@" >>"$logf" 2>&1 < /dev/null &
  echo $! > "$GRIDLAKE_RUN/$name.pid"
}

# start_batch_bg NAME LOGFILE CMD...: start_bg at the batch priority. A nice level alone does
# nothing here: with the kernel's autogroup scheduling (sched_autogroup_enabled=1, the default
# on desktop and many server kernels) every session is a scheduling group and groups share the
# CPU equally whatever their processes' nice levels, so a niced Spark server in its own session
# still took as much CPU as the Thrift Server. The session's group gets the batch nice level
# too (/proc/self/autogroup; measured on this machine, two busy loops on one core in two
# sessions: nice 10 alone split 50/50, with the group's nice 90/10).
start_batch_bg() {
  local name="$1" logf="$2"; shift 2
  setsid bash -c 'n="$1"; shift; { echo "$n" > /proc/self/autogroup; } 2>/dev/null
    exec nice -n "$n" "$@"' batch "$GRIDLAKE_BATCH_NICE" "$@" >>"$logf" 2>&1 < /dev/null &
  echo $! > "$GRIDLAKE_RUN/$name.pid"
}

# wait_port PORT SECONDS NAME: wait until something listens on 127.0.0.1:PORT.
wait_port() {
  local port="$1" secs="$2" name="$3"
  for _ in $(seq 1 "$secs"); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    pid_alive "$name" || die "$name exited during start-up; see $GRIDLAKE_LOGS/$name.log"
    sleep 1
  done
  die "$name did not listen on 127.0.0.1:$port within ${secs}s; see $GRIDLAKE_LOGS/$name.log"
}
