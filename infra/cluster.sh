#!/usr/bin/env bash
# cluster.sh up|down|status|env: a pseudo-distributed Hadoop cluster on 127.0.0.1, from Maven
# Central jars (infra/hadoop/pom.xml, the Hadoop version of pyspark's hadoop-client jars) and the
# pip pyspark distribution, no Docker:
#   HDFS  one NameNode and two DataNodes (replication 2), the warehouse on hdfs://.../gridlake;
#   YARN  one ResourceManager and one NodeManager; gridlake's Spark jobs run as YARN applications.
#   Kafka three KRaft brokers (each also a controller of the one quorum), topics with replication
#         factor 3 and min.insync.replicas 2 (infra/kafka.sh with GRIDLAKE_KAFKA_BROKERS=3).
#   Hive metastore  a service of its own (infra/metastore.sh, thrift), the catalog in Derby; the
#         jobs and the Thrift Server reach it by GRIDLAKE_METASTORE_URI.
#   Spark Thrift Server  a YARN application (gridlake-thrift), and Superset on it
#         (GRIDLAKE_CLUSTER_SERVING=0 at the first `up`: neither, as in make test's short form;
#         kept in cluster.env for the later commands).
# Instance `cluster` (port offset 500) unless GRIDLAKE_INSTANCE says otherwise. `up` writes the
# instance's settings (GRIDLAKE_ENV=cluster, master, storage root, Hadoop conf) into
# $GRIDLAKE_STATE/cluster.env, which the CLI and the other infra scripts read.
# Every daemon listens on 127.0.0.1 only; small heaps (this is a 2-core machine).
set -euo pipefail
export GRIDLAKE_INSTANCE="${GRIDLAKE_INSTANCE:-cluster}"
source "$(dirname "$0")/env.sh"
libs="$GRIDLAKE_HOME/hadoop/libs"
cdir="$GRIDLAKE_STATE/hadoop"
conf="$cdir/conf"
o="$GRIDLAKE_PORT_OFFSET"
NN_RPC=$((8020 + o)) NN_HTTP=$((9870 + o))
DN_PORTS=("$((9866 + o)) $((9864 + o)) $((9867 + o))" "$((9966 + o)) $((9964 + o)) $((9967 + o))")
RM_SCHED=$((8030 + o)) RM_TRACKER=$((8031 + o)) RM_RPC=$((8032 + o)) RM_ADMIN=$((8033 + o))
RM_WEB=$((8090 + o))
NM_LOCALIZER=$((8040 + o)) NM_RPC=$((8041 + o)) NM_WEB=$((8042 + o))
HDFS_URI="hdfs://127.0.0.1:$NN_RPC"
KAFKA_BROKERS=3
KAFKA_PORTS=()
for _i in $(seq 1 "$KAFKA_BROKERS"); do KAFKA_PORTS+=("$((GRIDLAKE_KAFKA_PORT + 2 * (_i - 1)))"); done
KAFKA_BOOTSTRAP="$(printf '127.0.0.1:%s,' "${KAFKA_PORTS[@]}")"
KAFKA_BOOTSTRAP="${KAFKA_BOOTSTRAP%,}"
JAVA_HOME="${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")}"
export JAVA_HOME
# Hadoop 3.4 on Java 17: its web stack (Jersey 1, Guice) reflects into java.base.
OPENS=(--add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.lang.reflect=ALL-UNNAMED
  --add-opens=java.base/java.util=ALL-UNNAMED --add-opens=java.base/java.util.concurrent=ALL-UNNAMED
  --add-opens=java.base/java.net=ALL-UNNAMED --add-opens=java.base/java.nio=ALL-UNNAMED
  --add-opens=java.base/sun.nio.ch=ALL-UNNAMED --add-opens=java.base/java.io=ALL-UNNAMED)
DAEMONS=(namenode datanode1 datanode2 resourcemanager nodemanager)
serving="${GRIDLAKE_CLUSTER_SERVING:-1}"  # the Thrift Server and Superset (1) or not (0)
case "$serving" in 0|1) ;; *) die "GRIDLAKE_CLUSTER_SERVING=$serving: 0 or 1" ;; esac

# site NAME KEY=VALUE...: write NAME.xml (a Hadoop configuration file) into $conf_out.
site() {
  local name="$1" kv; shift
  {
    echo '<?xml version="1.0"?>'
    echo '<!-- written by infra/cluster.sh; edits are lost on the next `make cluster-up` -->'
    echo '<configuration>'
    for kv in "$@"; do
      printf '  <property><name>%s</name><value>%s</value></property>\n' "${kv%%=*}" "${kv#*=}"
    done
    echo '</configuration>'
  } > "$conf_out/$name.xml"
}

write_conf() {
  local conf_out="$conf" i p
  mkdir -p "$conf" "$cdir/nn" "$cdir/tmp" "$cdir/yarn/local" "$cdir/yarn/logs"
  site core-site \
    "fs.defaultFS=$HDFS_URI" \
    "hadoop.tmp.dir=$cdir/tmp" \
    "hadoop.security.authentication=simple" \
    "ipc.client.connect.max.retries=3" \
    "dfs.client.block.write.replace-datanode-on-failure.best-effort=true"
  # Heartbeats every second and a dead DataNode detected within ~30 s (2 x recheck + 10 x
  # heartbeat): the fault tests kill one and wait for the NameNode to notice.
  local hdfs_common=(
    "dfs.replication=2"
    "dfs.namenode.name.dir=file://$cdir/nn"
    "dfs.namenode.rpc-address=127.0.0.1:$NN_RPC"
    "dfs.namenode.http-address=127.0.0.1:$NN_HTTP"
    "dfs.namenode.secondary.http-address=127.0.0.1:0"
    "dfs.namenode.safemode.extension=1000"
    "dfs.namenode.datanode.registration.ip-hostname-check=false"
    "dfs.heartbeat.interval=1"
    "dfs.namenode.heartbeat.recheck-interval=5000"
    "dfs.client.block.write.replace-datanode-on-failure.best-effort=true"
    "dfs.datanode.du.reserved=0"
  )
  site hdfs-site "${hdfs_common[@]}"
  site yarn-site \
    "yarn.resourcemanager.hostname=127.0.0.1" \
    "yarn.resourcemanager.address=127.0.0.1:$RM_RPC" \
    "yarn.resourcemanager.scheduler.address=127.0.0.1:$RM_SCHED" \
    "yarn.resourcemanager.resource-tracker.address=127.0.0.1:$RM_TRACKER" \
    "yarn.resourcemanager.admin.address=127.0.0.1:$RM_ADMIN" \
    "yarn.resourcemanager.webapp.address=127.0.0.1:$RM_WEB" \
    "yarn.nodemanager.hostname=127.0.0.1" \
    "yarn.nodemanager.address=127.0.0.1:$NM_RPC" \
    "yarn.nodemanager.localizer.address=127.0.0.1:$NM_LOCALIZER" \
    "yarn.nodemanager.webapp.address=127.0.0.1:$NM_WEB" \
    "yarn.nodemanager.local-dirs=$cdir/yarn/local" \
    "yarn.nodemanager.log-dirs=$cdir/yarn/logs" \
    "yarn.nodemanager.resource.memory-mb=${GRIDLAKE_YARN_MEMORY_MB:-8192}" \
    "yarn.nodemanager.resource.cpu-vcores=${GRIDLAKE_YARN_VCORES:-4}" \
    "yarn.nodemanager.vmem-check-enabled=false" \
    "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage=98" \
    "yarn.nodemanager.env-whitelist=JAVA_HOME,HADOOP_COMMON_HOME,HADOOP_HDFS_HOME,HADOOP_CONF_DIR,HADOOP_YARN_HOME,PATH,LANG,TZ" \
    "yarn.scheduler.minimum-allocation-mb=256" \
    "yarn.scheduler.maximum-allocation-mb=4096" \
    "yarn.log-aggregation-enable=false" \
    "yarn.timeline-service.enabled=false"
  # The HDFS daemons' web servers (JMX, WebHDFS, health) look up webapps/<name> on the class
  # path; Hadoop's distribution ships those folders beside its jars, Maven Central's jars do not
  # (YARN's are inside hadoop-yarn-common). Empty web apps suffice: the servlets are added in code.
  for p in hdfs datanode secondary journal; do
    mkdir -p "$cdir/web/webapps/$p/WEB-INF"
    printf '<?xml version="1.0"?>\n<web-app xmlns="http://java.sun.com/xml/ns/j2ee" version="2.4"/>\n' \
      > "$cdir/web/webapps/$p/WEB-INF/web.xml"
  done
  # One queue (the distribution's capacity-scheduler.xml, which Maven's jars lack); application
  # masters may take half the memory (client-mode AMs are small, and a test runs two at once).
  site capacity-scheduler \
    "yarn.scheduler.capacity.root.queues=default" \
    "yarn.scheduler.capacity.root.default.capacity=100" \
    "yarn.scheduler.capacity.root.default.maximum-capacity=100" \
    "yarn.scheduler.capacity.root.default.state=RUNNING" \
    "yarn.scheduler.capacity.maximum-am-resource-percent=0.5" \
    "yarn.scheduler.capacity.node-locality-delay=-1"
  cat > "$conf/log4j.properties" <<'L4J'
log4j.rootLogger=INFO,console
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.target=System.err
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %p %c{2}: %m%n
log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR
L4J
  # Each DataNode: the shared files plus its own data folder and ports.
  for i in 1 2; do
    conf_out="$cdir/conf-dn$i"
    mkdir -p "$conf_out" "$cdir/dn$i"
    cp "$conf/core-site.xml" "$conf/log4j.properties" "$conf_out/"
    read -r -a p <<< "${DN_PORTS[$((i - 1))]}"
    site hdfs-site "${hdfs_common[@]}" \
      "dfs.datanode.data.dir=file://$cdir/dn$i" \
      "dfs.datanode.address=127.0.0.1:${p[0]}" \
      "dfs.datanode.http.address=127.0.0.1:${p[1]}" \
      "dfs.datanode.ipc.address=127.0.0.1:${p[2]}" \
      "dfs.datanode.hostname=127.0.0.1"
  done
}

# hjava CONFDIR HEAP CLASS ARGS...: a Hadoop JVM with the cluster's jars.
hjava() {
  local cd="$1" heap="$2"; shift 2
  java "-Xmx$heap" "${OPENS[@]}" -Dhadoop.log.dir="$GRIDLAKE_LOGS" \
    -Dhadoop.home.dir="$GRIDLAKE_HOME/hadoop" -cp "$cd:$cdir/web:$libs/*" "$@"
}

start_daemon() {  # NAME CONFDIR HEAP CLASS
  local name="$1" cd="$2" heap="$3" cls="$4"
  pid_alive "$name" && return 0
  HADOOP_CONF_DIR="$cd" start_bg "$name" "$GRIDLAKE_LOGS/$name.log" \
    java "-Xmx$heap" "${OPENS[@]}" -Dhadoop.log.dir="$GRIDLAKE_LOGS" \
    -Dhadoop.home.dir="$GRIDLAKE_HOME/hadoop" -Dproc_"$name" -cp "$cd:$cdir/web:$libs/*" "$cls"
}

# json GET of a daemon's REST/JMX endpoint (empty on failure)
get() { curl -sf --max-time 5 "$1" 2>/dev/null || true; }

live_datanodes() {
  get "http://127.0.0.1:$NN_HTTP/jmx?qry=Hadoop:service=NameNode,name=FSNamesystemState" \
    | python3 -c 'import json,sys
try: print(json.load(sys.stdin)["beans"][0]["NumLiveDataNodes"])
except Exception: print(0)'
}

running_nodemanagers() {
  get "http://127.0.0.1:$RM_WEB/ws/v1/cluster/metrics" \
    | python3 -c 'import json,sys
try: print(json.load(sys.stdin)["clusterMetrics"]["activeNodes"])
except Exception: print(0)'
}

safemode_off() {
  get "http://127.0.0.1:$NN_HTTP/jmx?qry=Hadoop:service=NameNode,name=NameNodeInfo" \
    | python3 -c 'import json,sys
try: sys.exit(0 if json.load(sys.stdin)["beans"][0]["Safemode"] == "" else 1)
except Exception: sys.exit(1)'
}

# hdfs ARGS...: the HDFS shell (hdfs dfs ...) against the cluster.
hdfs() { hjava "$conf" 256m -Dlog4j.configuration="file:$conf/log4j.properties" org.apache.hadoop.fs.FsShell "$@" 2> >(grep -v "WARN\|INFO" >&2); }

write_env() {
  local pyspark_home
  pyspark_home="$("$GRIDLAKE_VENV/bin/python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')"
  cat > "$GRIDLAKE_STATE/cluster.env" <<ENV
# written by infra/cluster.sh up: the settings of instance $GRIDLAKE_INSTANCE (read by the CLI and infra/)
GRIDLAKE_ENV=cluster
GRIDLAKE_PORT_OFFSET=$o
GRIDLAKE_CLUSTER_SERVING=$serving
GRIDLAKE_SPARK_MASTER=yarn
GRIDLAKE_STORAGE_ROOT=$HDFS_URI/gridlake/warehouse
HADOOP_CONF_DIR=$conf
YARN_CONF_DIR=$conf
GRIDLAKE_KAFKA_BROKERS=$KAFKA_BROKERS
GRIDLAKE_KAFKA_BOOTSTRAP=$KAFKA_BOOTSTRAP
GRIDLAKE_METASTORE_URI=thrift://127.0.0.1:$GRIDLAKE_METASTORE_PORT
GRIDLAKE_SPARK_CONF=spark.yarn.archive=$HDFS_URI/spark/spark-jars.zip;spark.executor.instances=${GRIDLAKE_YARN_EXECUTORS:-2};spark.executor.cores=1;spark.executor.memory=${GRIDLAKE_YARN_EXECUTOR_MEMORY:-1g};spark.yarn.am.memory=512m;spark.pyspark.python=$GRIDLAKE_VENV/bin/python;spark.driver.host=127.0.0.1;spark.driver.bindAddress=127.0.0.1;spark.ui.enabled=false;spark.yarn.appMasterEnv.SPARK_LOCAL_IP=127.0.0.1;spark.executorEnv.SPARK_LOCAL_IP=127.0.0.1;spark.yarn.submit.waitAppCompletion=true
SPARK_HOME=$pyspark_home
ENV
}

# The jars of pyspark (Spark's own, plus the jars gridlake adds through spark.jars) as one
# archive on HDFS: every YARN container reads them from there instead of each submission
# uploading ~300 MB.
upload_spark_jars() {
  local zip="$cdir/spark-jars.zip" jars
  jars="$("$GRIDLAKE_VENV/bin/python" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')"
  if [ ! -f "$zip" ] || [ "$jars" -nt "$zip" ]; then
    (cd "$jars" && rm -f "$zip.tmp" && zip -q -0 -r "$zip.tmp" . && mv "$zip.tmp" "$zip")
  fi
  if ! hdfs -test -e /spark/spark-jars.zip; then
    hdfs -mkdir -p /spark /gridlake/warehouse
    hdfs -put -f "$zip" /spark/spark-jars.zip
  fi
}

up() {
  bash "$GRIDLAKE_REPO/infra/fetch_jars.sh" hadoop
  # The metastore's database (Derby network server, as in local mode) for the jobs.
  bash "$GRIDLAKE_REPO/infra/derby.sh" start
  command -v zip > /dev/null || die "zip is missing: run infra/install_system.sh"
  write_conf
  if [ ! -f "$cdir/nn/current/VERSION" ]; then
    hjava "$conf" 256m org.apache.hadoop.hdfs.server.namenode.NameNode -format -nonInteractive \
      -clusterid "gridlake-$GRIDLAKE_INSTANCE" > "$GRIDLAKE_LOGS/namenode-format.log" 2>&1 \
      || die "formatting the NameNode failed; see $GRIDLAKE_LOGS/namenode-format.log"
  fi
  log "cluster: starting HDFS (NameNode 127.0.0.1:$NN_RPC, two DataNodes) and YARN (ResourceManager 127.0.0.1:$RM_RPC, one NodeManager)"
  start_daemon namenode "$conf" "${GRIDLAKE_NN_HEAP:-384m}" org.apache.hadoop.hdfs.server.namenode.NameNode
  start_daemon datanode1 "$cdir/conf-dn1" "${GRIDLAKE_DN_HEAP:-256m}" org.apache.hadoop.hdfs.server.datanode.DataNode
  start_daemon datanode2 "$cdir/conf-dn2" "${GRIDLAKE_DN_HEAP:-256m}" org.apache.hadoop.hdfs.server.datanode.DataNode
  start_daemon resourcemanager "$conf" "${GRIDLAKE_RM_HEAP:-512m}" org.apache.hadoop.yarn.server.resourcemanager.ResourceManager
  start_daemon nodemanager "$conf" "${GRIDLAKE_NM_HEAP:-512m}" org.apache.hadoop.yarn.server.nodemanager.NodeManager
  local n
  for _ in $(seq 1 180); do
    [ "$(live_datanodes)" = 2 ] && safemode_off && break
    for n in namenode datanode1 datanode2; do
      pid_alive "$n" || die "$n exited during start-up; see $GRIDLAKE_LOGS/$n.log"
    done
    sleep 1
  done
  [ "$(live_datanodes)" = 2 ] || die "HDFS: the two DataNodes did not register within 180 s; see $GRIDLAKE_LOGS"
  for _ in $(seq 1 180); do
    [ "$(running_nodemanagers)" -ge 1 ] && break
    for n in resourcemanager nodemanager; do
      pid_alive "$n" || die "$n exited during start-up; see $GRIDLAKE_LOGS/$n.log"
    done
    sleep 1
  done
  [ "$(running_nodemanagers)" -ge 1 ] || die "YARN: no NodeManager registered within 180 s; see $GRIDLAKE_LOGS"
  upload_spark_jars
  write_env
  # Kafka and the metastore read their settings from the cluster.env just written.
  bash "$GRIDLAKE_REPO/infra/kafka.sh" start
  bash "$GRIDLAKE_REPO/infra/metastore.sh" start
  # Every table and view registered (a YARN application, gridlake-init; idempotent), then the
  # Thrift Server (a YARN application, gridlake-thrift) and Superset on it.
  if [ ! -f "$GRIDLAKE_STATE/.initialized" ] || [ "$GRIDLAKE_STATE/.initialized" -ot "$GRIDLAKE_STATE/cluster.env" ]; then
    log "cluster: registering the tables and views (gridlake init on YARN)"
    "$GRIDLAKE_VENV/bin/gridlake" init > "$GRIDLAKE_LOGS/cluster-init.log" 2>&1 \
      || { tail -20 "$GRIDLAKE_LOGS/cluster-init.log" >&2; die "gridlake init failed; see $GRIDLAKE_LOGS/cluster-init.log"; }
    touch "$GRIDLAKE_STATE/.initialized"
  fi
  if [ "$serving" = 1 ]; then
    bash "$GRIDLAKE_REPO/infra/thrift.sh" start
    bash "$GRIDLAKE_REPO/infra/superset.sh" start
  fi
  log "cluster: up (HDFS $HDFS_URI, web http://127.0.0.1:$NN_HTTP; YARN http://127.0.0.1:$RM_WEB; Kafka $KAFKA_BOOTSTRAP; metastore thrift://127.0.0.1:$GRIDLAKE_METASTORE_PORT; Thrift Server jdbc:hive2://127.0.0.1:$GRIDLAKE_THRIFT_PORT; Superset http://127.0.0.1:$GRIDLAKE_SUPERSET_PORT); settings in $GRIDLAKE_STATE/cluster.env"
}

down() {
  local i s
  for s in airflow superset thrift spark_server metastore; do bash "$GRIDLAKE_REPO/infra/$s.sh" stop; done
  GRIDLAKE_KAFKA_BROKERS=$KAFKA_BROKERS bash "$GRIDLAKE_REPO/infra/kafka.sh" stop
  for ((i = ${#DAEMONS[@]} - 1; i >= 0; i--)); do stop_pid "${DAEMONS[$i]}"; done
  bash "$GRIDLAKE_REPO/infra/derby.sh" stop
}

# status: one JSON object per daemon; exit 1 when any is unhealthy.
status() {
  local dn nm bad=0 line
  dn="$(live_datanodes)" nm="$(running_nodemanagers)"
  emit() {  # service address web healthy
    printf '{"service": "%s", "address": "%s", "web": "%s", "healthy": %s}\n' "$@"
    [ "$4" = true ] || bad=1
  }
  healthy() { if pid_alive "$1" && [ "$2" = 0 ]; then echo true; else echo false; fi; }
  emit namenode "127.0.0.1:$NN_RPC" "http://127.0.0.1:$NN_HTTP" \
    "$(healthy namenode "$(safemode_off && echo 0 || echo 1)")"
  local i p
  for i in 1 2; do
    read -r -a p <<< "${DN_PORTS[$((i - 1))]}"
    # Healthy: alive, and the NameNode counts as many live DataNodes as are running.
    emit datanode "127.0.0.1:${p[0]}" "http://127.0.0.1:${p[1]}" \
      "$(healthy "datanode$i" "$([ "$dn" -ge "$(for d in 1 2; do pid_alive "datanode$d" && echo; done | wc -l)" ] && echo 0 || echo 1)")"
  done
  emit resourcemanager "127.0.0.1:$RM_RPC" "http://127.0.0.1:$RM_WEB" \
    "$(healthy resourcemanager "$(get "http://127.0.0.1:$RM_WEB/ws/v1/cluster/info" | grep -q '"state":"STARTED"' && echo 0 || echo 1)")"
  emit nodemanager "127.0.0.1:$NM_RPC" "http://127.0.0.1:$NM_WEB" "$(healthy nodemanager "$([ "$nm" -ge 1 ] && echo 0 || echo 1)")"
  # Kafka: healthy when alive and a member of the cluster's metadata (asked of every broker).
  local ids
  ids=" $("$GRIDLAKE_VENV/bin/python" - "$KAFKA_BOOTSTRAP" <<'PY' 2>/dev/null || true
import sys
from confluent_kafka.admin import AdminClient
from gridlake.settings import get_settings
from gridlake.sources.kafka_auth import client_conf
try:
    conf = {**client_conf(get_settings(), "admin"), "bootstrap.servers": sys.argv[1]}
    md = AdminClient({**conf, "socket.timeout.ms": 5000}).list_topics(timeout=8)
    print(" ".join(str(b) for b in sorted(md.brokers)))
except Exception:
    print("")
PY
) "
  for i in $(seq 1 "$KAFKA_BROKERS"); do
    emit kafka "127.0.0.1:${KAFKA_PORTS[$((i - 1))]}" "" \
      "$(healthy "kafka$i" "$([[ "$ids" == *" $i "* ]] && echo 0 || echo 1)")"
  done
  emit metastore "127.0.0.1:$GRIDLAKE_METASTORE_PORT" "" \
    "$(healthy metastore "$( (exec 3<>"/dev/tcp/127.0.0.1/$GRIDLAKE_METASTORE_PORT") 2>/dev/null && echo 0 || echo 1)")"
  [ "$serving" = 1 ] || return "$bad"  # no Thrift Server or Superset on this instance
  # The Thrift Server: its port open and its YARN application running.
  emit thrift "127.0.0.1:$GRIDLAKE_THRIFT_PORT" "" \
    "$(healthy thrift "$( (exec 3<>"/dev/tcp/127.0.0.1/$GRIDLAKE_THRIFT_PORT") 2>/dev/null \
      && get "http://127.0.0.1:$RM_WEB/ws/v1/cluster/apps?states=RUNNING" | grep -q '"name":"gridlake-thrift"' && echo 0 || echo 1)")"
  emit superset "127.0.0.1:$GRIDLAKE_SUPERSET_PORT" "http://127.0.0.1:$GRIDLAKE_SUPERSET_PORT" \
    "$(healthy superset "$(curl -fsS -m 5 -o /dev/null "http://127.0.0.1:$GRIDLAKE_SUPERSET_PORT/health" 2>/dev/null && echo 0 || echo 1)")"
  return "$bad"
}

case "${1:-status}" in
  up) up ;;
  down) down ;;
  status) status ;;
  hdfs) shift; hdfs "$@" ;;
  *) die "usage: cluster.sh up|down|status|hdfs ARGS" ;;
esac
