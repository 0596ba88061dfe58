#!/usr/bin/env bash
# check_loopback.sh: every socket listened on by a service of this instance (the processes of its
# PID files in $GRIDLAKE_RUN and all their descendants: Kafka, Derby, Thrift Server, Superset,
# Airflow's scheduler, DAG processor, triggerer, API server and their children) must be bound to
# a loopback address. Prints each listener; exits 1 on the first non-loopback one, 2 when no
# service runs. Run by `make demo` at its end and by the test suite.
set -euo pipefail
source "$(dirname "$0")/env.sh"

descendants() {
  local pid="$1" child
  echo "$pid"
  for child in $(ps -o pid= --ppid "$pid" 2>/dev/null); do descendants "$child"; done
}

pids=()
for f in "$GRIDLAKE_RUN"/*.pid; do
  [ -f "$f" ] || continue
  pid="$(cat "$f")"
  kill -0 "$pid" 2>/dev/null || continue
  while read -r p; do pids+=("$p"); done < <(descendants "$pid")
done
[ "${#pids[@]}" -gt 0 ] || { log "check_loopback: no service of instance $GRIDLAKE_INSTANCE runs"; exit 2; }

bad=0 checked=0
while read -r line; do
  [ -n "$line" ] || continue
  owners=" $( (grep -oE 'pid=[0-9]+' <<< "$line" || true) | cut -d= -f2 | tr '\n' ' ')"
  ours=0
  for p in "${pids[@]}"; do
    case "$owners" in *" $p "*) ours=1; break ;; esac
  done
  [ "$ours" = 1 ] || continue
  addr="$(awk '{print $4}' <<< "$line")"
  host="${addr%:*}"
  proc="$( (grep -oE 'users:\(\("[^"]+"' <<< "$line" || true) | cut -d'"' -f2)"
  checked=$((checked + 1))
  case "$host" in
    127.0.0.1 | "[::1]" | "[::ffff:127.0.0.1]") echo "ok        $addr  $proc" ;;
    *) echo "NOT LOCAL $addr  $proc"; bad=1 ;;
  esac
done < <(ss -ltnpH)
log "check_loopback: $checked listening sockets of instance $GRIDLAKE_INSTANCE checked"
exit "$bad"
