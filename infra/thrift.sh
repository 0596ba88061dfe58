#!/usr/bin/env bash
# thrift.sh start|stop|status: Spark Thrift Server on 127.0.0.1 serving the Delta tables
# (JDBC/ODBC for beeline, PyHive, Superset), configured by the same settings as the jobs.
set -euo pipefail
source "$(dirname "$0")/env.sh"
# Password authentication and per-user rules (issue 25) are ours: a few Java classes under
# infra/thrift/, compiled here against the jars pyspark ships (HiveServer2's CUSTOM provider, a
# Spark check rule). The users and their roles: jobs/gridlake/serving/thrift_auth.py.
classes="$GRIDLAKE_HOME/thrift/classes"
build() {
  local src=("$GRIDLAKE_REPO"/infra/thrift/org/gridlake/thrift/*.java) stamp="$classes/.built"
  if [ -f "$stamp" ]; then
    local newer
    newer="$(find "${src[@]}" -newer "$stamp" | head -1)"
    [ -z "$newer" ] && return 0
  fi
  command -v javac > /dev/null || die "javac is missing: run infra/install_system.sh"
  local jars
  jars="$(ls -d "$GRIDLAKE_VENV"/lib/python3*/site-packages/pyspark | head -1)/jars"
  rm -rf "$classes" && mkdir -p "$classes"
  javac -nowarn -d "$classes" -cp "$jars/*" "${src[@]}" || die "compiling infra/thrift/ failed"
  touch "$stamp"
}
case "${1:-status}" in
  start)
    pid_alive thrift && { log "thrift: already running"; exit 0; }
    pid_alive derby || bash "$GRIDLAKE_REPO/infra/derby.sh" start
    # Resolve the Spark packages into the Ivy cache once (the Delta jars must also be on the
    # driver class path, or sessions fail with "Cannot find catalog plugin class ... DeltaCatalog").
    ivy="$GRIDLAKE_HOME/ivy/jars"
    if [ ! -f "$ivy/.resolved" ]; then
      "$GRIDLAKE_VENV/bin/python" -m gridlake.spark --resolve
    fi
    build
    users="$("$GRIDLAKE_VENV/bin/python" -c 'from gridlake.serving import thrift_auth; print(thrift_auth.ensure())')"
    cp="$(ls "$ivy"/io.delta_*.jar | tr '\n' ':')$GRIDLAKE_HOME/derby/libs/*:$classes"
    export PATH="$GRIDLAKE_VENV/bin:$PATH"
    SPARK_HOME="$(ls -d "$GRIDLAKE_VENV"/lib/python3*/site-packages/pyspark | head -1)"
    export SPARK_HOME
    # The Thrift Server runs with spark.sql.datetime.java8API.enabled, and Delta 4.0's
    # metadata-only answer to MIN/MAX of a DATE column then fails with "LocalDate cannot be cast
    # to java.sql.Date" (e.g. `SELECT max(week) FROM grid.site_efficiency_weekly`): answer those
    # from the data instead.
    # Its users query tables and views by name only: no SQL on files (``text.`<path>` `` would
    # read any file the service can, the instance's secrets included; ``delta.`<path>` `` would
    # read silver around the views). A statement running past the timeout is cancelled; a result
    # past the cap fails alone: one query cannot take the only query server down.
    # The settings go in a 0600 properties file, not on the command line (GRIDLAKE_SPARK_CONF
    # may carry object-store keys; `ps` shows every process's arguments to every local user).
    mkdir -p "$GRIDLAKE_STATE/thrift"
    props="$GRIDLAKE_STATE/thrift/spark.properties"
    (
      umask 077
      {
        # gridlake's check rule after Delta's extension; the user file's path for both classes
        "$GRIDLAKE_VENV/bin/gridlake" spark-conf --properties | awk -v users="$users" -v debug="${GRIDLAKE_THRIFT_DEBUG:-false}" '
          /^spark\.sql\.extensions=/ { $0 = $0 ",org.gridlake.thrift.AccessRules" }
          /^spark\.driver\.extraJavaOptions=/ { $0 = $0 " -Dgridlake.thrift.users=" users " -Dgridlake.thrift.debug=" debug; j = 1 }
          { print } END { if (!j) print "spark.driver.extraJavaOptions=-Dgridlake.thrift.users=" users }'
        echo "spark.driver.extraClassPath=$cp"
        echo "spark.executor.instances=${GRIDLAKE_THRIFT_EXECUTORS:-1}"
        echo "spark.databricks.delta.optimizeMetadataQuery.enabled=false"
        echo "spark.sql.runSQLOnFiles=false"
        echo "spark.sql.thriftServer.queryTimeout=${GRIDLAKE_THRIFT_QUERY_TIMEOUT:-600}s"
        echo "spark.driver.maxResultSize=${GRIDLAKE_THRIFT_MAX_RESULT:-512m}"
      } > "$props.tmp"
      mv "$props.tmp" "$props"
    )
    cd "$GRIDLAKE_STATE/thrift"
    start_bg thrift "$GRIDLAKE_LOGS/thrift.log" "$GRIDLAKE_VENV/bin/spark-submit" \
      --master "${GRIDLAKE_SPARK_MASTER:-local[2]}" --driver-memory "${GRIDLAKE_THRIFT_MEMORY:-2g}" \
      --name gridlake-thrift --class org.apache.spark.sql.hive.thriftserver.HiveThriftServer2 \
      --properties-file "$props" \
      spark-internal \
      --hiveconf hive.server2.thrift.bind.host=127.0.0.1 \
      --hiveconf "hive.server2.thrift.port=$GRIDLAKE_THRIFT_PORT" \
      --hiveconf hive.server2.transport.mode=binary \
      --hiveconf hive.server2.authentication=CUSTOM \
      --hiveconf hive.server2.custom.authentication.class=org.gridlake.thrift.PasswordFile \
      --hiveconf hive.server2.enable.doAs=false
    wait_port "$GRIDLAKE_THRIFT_PORT" 180 thrift
    log "thrift: up on 127.0.0.1:$GRIDLAKE_THRIFT_PORT (beeline -u jdbc:hive2://127.0.0.1:$GRIDLAKE_THRIFT_PORT -n operator -w $GRIDLAKE_STATE/secrets/thrift_users/operator.password)"
    ;;
  stop) stop_pid thrift ;;
  status) if pid_alive thrift; then echo "thrift    running  pid $(cat "$GRIDLAKE_RUN/thrift.pid")  jdbc:hive2://127.0.0.1:$GRIDLAKE_THRIFT_PORT"; else echo "thrift    stopped"; fi ;;
  *) die "usage: thrift.sh start|stop|status" ;;
esac
