#!/usr/bin/env bash
# fetch_jars.sh NAME: copy the jars of infra/NAME/pom.xml into $GRIDLAKE_HOME/NAME/libs (idempotent).
set -euo pipefail
source "$(dirname "$0")/env.sh"
name="$1"
dest="$GRIDLAKE_HOME/$name/libs"
stamp="$dest/.stamp"
want="$(sha256sum "$GRIDLAKE_REPO/infra/$name/pom.xml" | cut -c1-16)"
[ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && exit 0
command -v mvn >/dev/null || die "maven is missing: run infra/install_system.sh"
log "fetching $name jars from Maven Central"
mkdir -p "$dest"
# A private Maven repository: Spark's Ivy resolver reads ~/.m2 and fails on a half-filled one.
# Explicit timeouts and retries: Maven's default read timeout is 30 minutes, and a stalled
# connection was seen to hang a fetch here for that long.
mvn_opts=(-q -B -Dmaven.repo.local="$GRIDLAKE_M2" -Dmaven.wagon.rto=20000
  -Dmaven.wagon.http.retryHandler.count=5 -Dmaven.wagon.http.pool=false -Dhttp.keepAlive=false)
for try in 1 2 3; do
  if mvn "${mvn_opts[@]}" -f "$GRIDLAKE_REPO/infra/$name/pom.xml" \
      dependency:copy-dependencies -DoutputDirectory="$dest" -DincludeScope=runtime; then
    break
  fi
  [ "$try" = 3 ] && die "could not fetch the $name jars"
  log "maven failed (try $try); retrying"
done
echo "$want" > "$stamp"
