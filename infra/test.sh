#!/usr/bin/env bash
# make test: the suite as two pytest processes side by side, one per shard (tests/conftest.py
# SHARDS), each on its own instance with its own services and ports, so that the two cores are
# busy while one shard waits on a service. The warehouse shard's output goes to its log and is
# printed when it ends; the grid shard prints as it goes. Fails if either shard fails.
# (Temporary files: $GRIDLAKE_HOME/pytest-<shard>, outside the instances' state, which a session wipes.)
# Usage: bash infra/test.sh [pytest args...]   (a marker expression comes from PYTEST_MARK)
set -uo pipefail
cd "$(dirname "$0")/.."
export GRIDLAKE_HOME="${GRIDLAKE_HOME:-$PWD/.gridlake}"
pytest="$GRIDLAKE_HOME/venv/bin/pytest"
mark="${PYTEST_MARK:-not nightly}"
log="$GRIDLAKE_HOME/test-warehouse.log"

GRIDLAKE_TEST_SHARD=warehouse GRIDLAKE_TEST_INSTANCE=test \
  "$pytest" -m "$mark" --basetemp="$GRIDLAKE_HOME/pytest-warehouse" "$@" >"$log" 2>&1 &
warehouse=$!
stop() { kill "$warehouse" 2>/dev/null; wait "$warehouse" 2>/dev/null; }
trap 'stop; exit 130' INT TERM
echo "[test] shard warehouse: pid $warehouse, output in $log (printed when it ends)"
echo "[test] shard grid:"
GRIDLAKE_TEST_SHARD=grid GRIDLAKE_TEST_INSTANCE=test-grid GRIDLAKE_PORT_OFFSET=300 \
  "$pytest" -m "$mark" --basetemp="$GRIDLAKE_HOME/pytest-grid" "$@"
grid_rc=$?
wait "$warehouse"
warehouse_rc=$?
trap - INT TERM
echo "[test] shard warehouse:"
cat "$log"
# 5: the shard collected no test (a file or -k selection only the other shard has)
ok() { [ "$1" -eq 0 ] || [ "$1" -eq 5 ]; }
echo "[test] shard grid exit $grid_rc, shard warehouse exit $warehouse_rc"
if [ "$grid_rc" -eq 5 ] && [ "$warehouse_rc" -eq 5 ]; then exit 5; fi
ok "$grid_rc" && ok "$warehouse_rc"
