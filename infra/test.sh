#!/usr/bin/env bash
# make test: the suite as pytest processes side by side, one per shard (tests/conftest.py
# SHARDS), each on its own instance with its own services and ports, so that the two cores are
# busy while one shard waits on a service. The warehouse shard's output goes to its log and is
# printed when it ends; the grid shard prints as it goes. Fails if either shard fails.
# (Temporary files: $GRIDLAKE_HOME/pytest-<shard>, outside the instances' state, which a session wipes.)
# The warehouse shard builds the warehouse its tests read with `make demo` itself, cold then warm
# (conftest's made_demo: the demo's short form, one week of records): make test's demo test.
# GRIDLAKE_TEST_DEMO=full also runs the demo as shipped (tests/test_demo.py: four simulated
# weeks, its dashboards timed, `make down`, on the demo-ci instance) after the warehouse shard.
# The fault trials' short form is a third lane beside them (GRIDLAKE_TEST_FAULTS=short).
# Usage: bash infra/test.sh [pytest args...]   (a marker expression comes from PYTEST_MARK)
set -uo pipefail
cd "$(dirname "$0")/.."
export GRIDLAKE_HOME="${GRIDLAKE_HOME:-$PWD/.gridlake}"
pytest="$GRIDLAKE_HOME/venv/bin/pytest"
mark="${PYTEST_MARK:-not nightly}"
log="$GRIDLAKE_HOME/test-warehouse.log"

# The warehouse lane: its shard, then (GRIDLAKE_TEST_DEMO=full) the shipped demo's test.
warehouse_lane() {
  local child rc drc
  trap 'kill "$child" 2>/dev/null; wait "$child" 2>/dev/null; exit 130' INT TERM
  GRIDLAKE_TEST_SHARD=warehouse GRIDLAKE_TEST_INSTANCE=test \
    "$pytest" -m "$mark" --basetemp="$GRIDLAKE_HOME/pytest-warehouse" "$@" &
  child=$!
  wait "$child"
  rc=$?
  case "${GRIDLAKE_TEST_DEMO:-off}" in
    off|short) ;;
    full)
      echo "[test] the demo test (the shipped demo), after the warehouse shard:"
      GRIDLAKE_TEST_INSTANCE=test-demo GRIDLAKE_PORT_OFFSET=200 \
        "$pytest" -m demo --basetemp="$GRIDLAKE_HOME/pytest-demo" "$@" tests/test_demo.py &
      child=$!
      wait "$child"
      drc=$?
      echo "[test] demo test exit $drc"
      if [ "$rc" -eq 0 ] || [ "$rc" -eq 5 ]; then rc=$drc; fi
      ;;
    *) echo "[test] GRIDLAKE_TEST_DEMO=$GRIDLAKE_TEST_DEMO: one of off, short, full" >&2; rc=2 ;;
  esac
  cat "$GRIDLAKE_HOME/bench-results/results-demo.json" 2>/dev/null  # the demo's figures
  return "$rc"
}
# The fault trials' short form (tests/faults: one round, a SIGKILL at a random moment of ingest
# and of refine, the two writers of bronze and silver; publish and analyze kills are in make
# test-faults, as are the disk-full, metastore, broker, agent and Thrift Server trials): a third
# lane on an instance of its own (test-faults, ports + 1200), started with the other two. Run
# after the grid shard, it had the machine's second core to itself while the warehouse shard had
# ended (~150 CPU-seconds left idle at the end of each make test); beside the others, the two
# cores stay busy to the end. Its kills are drawn within each step's own measured run, so a
# slower run under load moves them with it.
faults_log="$GRIDLAKE_HOME/test-faults.log"
faults_lane() {
  local child
  trap 'kill "$child" 2>/dev/null; wait "$child" 2>/dev/null; exit 130' INT TERM
  GRIDLAKE_TEST_INSTANCE=test-faults GRIDLAKE_PORT_OFFSET=1200 GRIDLAKE_FAULT_ROUNDS=1 \
    GRIDLAKE_FAULT_STEPS=ingest,refine GRIDLAKE_FAULT_MAX_OFFSETS=1000 GRIDLAKE_FAULT_DISK_FULL=0 \
    GRIDLAKE_FAULT_METASTORE=0 GRIDLAKE_FAULT_RESTARTS=0 \
    "$pytest" -m faults --basetemp="$GRIDLAKE_HOME/pytest-faults" "$@" tests/faults &
  child=$!
  wait "$child"
}
# After them in the same lane, the cluster's and the bench's short forms (GRIDLAKE_TEST_CLUSTER,
# GRIDLAKE_TEST_BENCH = short | off; make test: short): tests/test_cluster.py's cluster_short tests
# (`cluster-up` from a wiped instance of their own, test-cluster, ports + 1500, without the
# Thrift Server and Superset: the daemons on loopback, the switch by instance name, YARN
# applications over HDFS; then `cluster.sh down`;
# the Hadoop jars fetched on first use) and tests/test_bench.py's bench_short test (`make bench`
# at the tiny scale, three stages, instance bench-ci, ports + 1600). make test-cluster and make
# bench run them in full.
short_marks=()
for kind in CLUSTER BENCH; do
  var="GRIDLAKE_TEST_$kind"
  case "${!var:-off}" in
    off) ;;
    short) short_marks+=("${kind,,}_short") ;;
    *) echo "[test] $var=${!var}: off or short" >&2; exit 2 ;;
  esac
done
short_lane() {
  local child rc=0 expr
  trap 'kill "$child" 2>/dev/null; wait "$child" 2>/dev/null; exit 130' INT TERM
  if [ "${GRIDLAKE_TEST_FAULTS:-off}" = short ]; then
    faults_lane "$@"
    rc=$?
  fi
  if [ "${#short_marks[@]}" -gt 0 ]; then
    expr="$(printf ' or %s' "${short_marks[@]}")"
    echo "[test] the short forms of make test-cluster and make bench (${expr:4}):"
    GRIDLAKE_TEST_INSTANCE=test-faults GRIDLAKE_PORT_OFFSET=1200 \
      GRIDLAKE_TEST_CLUSTER_INSTANCE=test-cluster GRIDLAKE_TEST_CLUSTER_OFFSET=1500 \
      GRIDLAKE_TEST_CLUSTER_SERVING=0 \
      "$pytest" -m "${expr:4}" --basetemp="$GRIDLAKE_HOME/pytest-short" "$@" \
      tests/test_cluster.py tests/test_bench.py &
    child=$!
    wait "$child"
    local src=$?
    if [ "$rc" -eq 0 ] || [ "$rc" -eq 5 ]; then rc=$src; fi
  fi
  return "$rc"
}
faults=""
case "${GRIDLAKE_TEST_FAULTS:-off}" in
  off|short) ;;
  *) echo "[test] GRIDLAKE_TEST_FAULTS=$GRIDLAKE_TEST_FAULTS: off or short" >&2; exit 2 ;;
esac
if [ "${GRIDLAKE_TEST_FAULTS:-off}" = short ] || [ "${#short_marks[@]}" -gt 0 ]; then
  short_lane "$@" >"$faults_log" 2>&1 &
  faults=$!
  echo "[test] the short forms (fault trials: ${GRIDLAKE_TEST_FAULTS:-off}; ${short_marks[*]:-no cluster or bench}): pid $faults, output in $faults_log"
fi
warehouse_lane "$@" >"$log" 2>&1 &
warehouse=$!
stop() {
  kill "$warehouse" $faults 2>/dev/null
  wait "$warehouse" $faults 2>/dev/null
}
trap 'stop; exit 130' INT TERM
echo "[test] shard warehouse: pid $warehouse, output in $log (printed when it ends)"
echo "[test] shard grid:"
GRIDLAKE_TEST_SHARD=grid GRIDLAKE_TEST_INSTANCE=test-grid GRIDLAKE_PORT_OFFSET=300 \
  "$pytest" -m "$mark" --basetemp="$GRIDLAKE_HOME/pytest-grid" "$@"
grid_rc=$?
faults_rc=0
if [ -n "$faults" ]; then
  wait "$faults"
  faults_rc=$?
  echo "[test] the short forms (fault trials, cluster, bench):"
  cat "$faults_log"
fi
wait "$warehouse"
warehouse_rc=$?
trap - INT TERM
echo "[test] shard warehouse:"
cat "$log"
# 5: the shard collected no test (a file or -k selection only the other shard has)
ok() { [ "$1" -eq 0 ] || [ "$1" -eq 5 ]; }
echo "[test] shard grid exit $grid_rc, short forms (faults, cluster, bench) exit $faults_rc, shard warehouse exit $warehouse_rc"
if [ "$grid_rc" -eq 5 ] && [ "$warehouse_rc" -eq 5 ]; then exit 5; fi
ok "$grid_rc" && ok "$warehouse_rc" && ok "$faults_rc"
