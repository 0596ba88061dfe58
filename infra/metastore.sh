#!/usr/bin/env bash
# metastore.sh start|stop|status: the Hive metastore as a service of its own (thrift on
# 127.0.0.1:$GRIDLAKE_METASTORE_PORT), keeping the catalog in the instance's Derby network server.
# The cluster instance runs it (infra/cluster.sh up); the jobs and the Thrift Server then reach the
# catalog through GRIDLAKE_METASTORE_URI=thrift://127.0.0.1:<port> instead of opening the
# database themselves. The server is Hive 2.3's (the jars pyspark ships, the version of Spark's
# metastore client), started by a launcher of ours (infra/metastore/GridlakeMetastore.java,
# compiled here) because Hive's own one listens on every interface.
set -euo pipefail
source "$(dirname "$0")/env.sh"
classes="$GRIDLAKE_HOME/metastore/classes"
conf="$GRIDLAKE_STATE/metastore/conf"
src="$GRIDLAKE_REPO/infra/metastore/GridlakeMetastore.java"
pyspark_jars() {
  echo "$(ls -d "$GRIDLAKE_VENV"/lib/python3*/site-packages/pyspark | head -1)/jars"
}
build() {
  [ -f "$classes/GridlakeMetastore.class" ] && [ "$classes/GridlakeMetastore.class" -nt "$src" ] && return 0
  command -v javac > /dev/null || die "javac is missing: run infra/install_system.sh"
  mkdir -p "$classes"
  javac -nowarn -d "$classes" -cp "$(pyspark_jars)/*" "$src" \
    || die "compiling $src failed"
}
write_conf() {
  local root="${GRIDLAKE_STORAGE_ROOT:-$GRIDLAKE_STATE/warehouse}"
  mkdir -p "$conf"
  # 0600: it holds the Derby password (infra/derby.sh)
  umask 077
  cat > "$conf/hive-site.xml" <<XML
<?xml version="1.0"?>
<!-- written by infra/metastore.sh start; edits are lost on the next start -->
<configuration>
  <property><name>javax.jdo.option.ConnectionURL</name><value>jdbc:derby://127.0.0.1:$GRIDLAKE_DERBY_PORT/metastore_db;create=true</value></property>
  <property><name>javax.jdo.option.ConnectionDriverName</name><value>org.apache.derby.client.ClientAutoloadedDriver</value></property>
  <property><name>javax.jdo.option.ConnectionUserName</name><value>APP</value></property>
  <property><name>javax.jdo.option.ConnectionPassword</name><value>$(cat "$GRIDLAKE_STATE/secrets/metastore_db.password")</value></property>
  <property><name>datanucleus.schema.autoCreateAll</name><value>true</value></property>
  <property><name>hive.metastore.schema.verification</name><value>false</value></property>
  <property><name>hive.metastore.warehouse.dir</name><value>$root</value></property>
  <property><name>hive.metastore.server.min.threads</name><value>4</value></property>
  <property><name>hive.metastore.server.max.threads</name><value>64</value></property>
</configuration>
XML
}
case "${1:-status}" in
  start)
    pid_alive metastore && { log "metastore: already running"; exit 0; }
    pid_alive derby || bash "$GRIDLAKE_REPO/infra/derby.sh" start
    build
    write_conf
    # The Derby client driver first (as the jobs have it), then Hive and Hadoop from pyspark;
    # the instance's Hadoop configuration (HDFS) where it has one.
    cp="$conf:$classes:$GRIDLAKE_HOME/derby/libs/*:$(pyspark_jars)/*${HADOOP_CONF_DIR:+:$HADOOP_CONF_DIR}"
    start_bg metastore "$GRIDLAKE_LOGS/metastore.log" java -Xmx"${GRIDLAKE_METASTORE_HEAP:-512m}" \
      -Dlog4j2.configurationFile="$GRIDLAKE_REPO/infra/spark/log4j2.properties" \
      -Dderby.stream.error.file="$GRIDLAKE_LOGS/derby-client.log" \
      -Dproc_metastore -cp "$cp" GridlakeMetastore 127.0.0.1 "$GRIDLAKE_METASTORE_PORT"
    wait_port "$GRIDLAKE_METASTORE_PORT" 120 metastore
    log "metastore: up on thrift://127.0.0.1:$GRIDLAKE_METASTORE_PORT"
    ;;
  stop) stop_pid metastore ;;
  status) if pid_alive metastore; then echo "metastore running  pid $(cat "$GRIDLAKE_RUN/metastore.pid")  thrift://127.0.0.1:$GRIDLAKE_METASTORE_PORT"; else echo "metastore stopped"; fi ;;
  *) die "usage: metastore.sh start|stop|status" ;;
esac
