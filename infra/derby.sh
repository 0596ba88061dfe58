#!/usr/bin/env bash
# derby.sh start|stop|status: Derby network server on 127.0.0.1 holding the Hive metastore, with
# authentication on (user APP, the instance's generated password in secrets/metastore_db.password).
set -euo pipefail
source "$(dirname "$0")/env.sh"
libs="$GRIDLAKE_HOME/derby/libs"
home="$GRIDLAKE_STATE/derby"
case "${1:-status}" in
  start)
    pid_alive derby && { log "derby: already running"; exit 0; }
    bash "$GRIDLAKE_REPO/infra/fetch_jars.sh" derby
    mkdir -p "$home" "$GRIDLAKE_STATE/secrets"
    # Authentication on: one user, APP (the owner of the metastore's schema, so catalogs made
    # before this keep working), with a password generated on first start into a 0600 file that
    # the clients read (gridlake's settings, infra/metastore.sh). Derby reads its system
    # properties from derby.properties in its home (0600 as well): nothing on a command line.
    pw_file="$GRIDLAKE_STATE/secrets/metastore_db.password"
    if [ ! -s "$pw_file" ]; then
      (umask 077; head -c 32 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 32 > "$pw_file.tmp" && mv "$pw_file.tmp" "$pw_file")
    fi
    (
      umask 077
      {
        echo "# written by infra/derby.sh start; edits are lost on the next start"
        echo "derby.connection.requireAuthentication=true"
        echo "derby.authentication.provider=BUILTIN"
        echo "derby.user.APP=$(cat "$pw_file")"
      } > "$home/derby.properties.tmp"
      mv "$home/derby.properties.tmp" "$home/derby.properties"
    )
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
