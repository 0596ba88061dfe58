#!/usr/bin/env bash
# Main venv: pyspark + Delta, the gridlake package (editable), test and lint tools. Idempotent:
# a stamp holding the requirements' hash skips the work when nothing changed.
set -euo pipefail
source "$(dirname "$0")/env.sh"
stamp="$GRIDLAKE_VENV/.gridlake-stamp"
want="$(cat "$GRIDLAKE_REPO/infra/requirements.txt" "$GRIDLAKE_REPO/pyproject.toml" | sha256sum | cut -c1-16)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then exit 0; fi
log "installing the main venv in $GRIDLAKE_VENV (about a minute)"
[ -x "$GRIDLAKE_VENV/bin/python" ] || python3 -m venv "$GRIDLAKE_VENV"
"$GRIDLAKE_VENV/bin/pip" install -q --upgrade pip setuptools wheel
"$GRIDLAKE_VENV/bin/pip" install -q -r "$GRIDLAKE_REPO/infra/requirements.txt"
"$GRIDLAKE_VENV/bin/pip" install -q --no-deps -e "$GRIDLAKE_REPO"
echo "$want" > "$stamp"
log "main venv ready"
