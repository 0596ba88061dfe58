#!/usr/bin/env bash
# kafka.sh start|stop|status: Kafka in KRaft mode on 127.0.0.1, with the project's topics.
# One broker (combined broker and controller) by default; GRIDLAKE_KAFKA_BROKERS=N (the cluster
# instance: 3, from its cluster.env) starts N combined brokers forming one controller quorum,
# broker i on GRIDLAKE_KAFKA_PORT + 2(i-1) and its controller on GRIDLAKE_KAFKA_CONTROLLER_PORT +
# 2(i-1); topics then have replication factor min(N, 3) and min.insync.replicas 2 (producers use
# acks=all: a record is acknowledged once two brokers hold it, so one broker may die).
set -euo pipefail
source "$(dirname "$0")/env.sh"
libs="$GRIDLAKE_HOME/kafka/libs"
TOPICS="grid.jobs grid.nodes grid.network grid.accounting_summaries grid.deadletter"
PARTITIONS="${GRIDLAKE_KAFKA_PARTITIONS:-2}"
N="${GRIDLAKE_KAFKA_BROKERS:-1}"
[[ "$N" =~ ^[1-9]$ ]] || die "GRIDLAKE_KAFKA_BROKERS=$N: a number of brokers from 1 to 9"
RF=$((N < 3 ? N : 3))
ISR=$((N >= 3 ? 2 : 1))

kjava() { java -cp "$libs/*" "$@"; }
# name/dir/port/cport I: broker I's PID name, state folder and ports (one broker: as before).
name() { if [ "$N" = 1 ]; then echo kafka; else echo "kafka$1"; fi; }
dir() { if [ "$N" = 1 ]; then echo "$GRIDLAKE_STATE/kafka"; else echo "$GRIDLAKE_STATE/kafka/broker$1"; fi; }
port() { echo $((GRIDLAKE_KAFKA_PORT + 2 * ($1 - 1))); }
cport() { echo $((GRIDLAKE_KAFKA_CONTROLLER_PORT + 2 * ($1 - 1))); }
bootstrap() {
  local i out=()
  for i in $(seq 1 "$N"); do out+=("127.0.0.1:$(port "$i")"); done
  (IFS=,; echo "${out[*]}")
}

write_conf() {  # I
  local i="$1" d quorum voters=() j pw jaas
  d="$(dir "$i")"
  mkdir -p "$d/data"
  pw="$(cat "$GRIDLAKE_STATE/secrets/kafka/admin.password")"
  jaas="org.apache.kafka.common.security.plain.PlainLoginModule required username=\"admin\" password=\"$pw\" user_admin=\"$pw\";"
  if [ "$N" = 1 ]; then
    quorum="controller.quorum.bootstrap.servers=127.0.0.1:$(cport 1)"
  else
    for j in $(seq 1 "$N"); do voters+=("$j@127.0.0.1:$(cport "$j")"); done
    quorum="controller.quorum.voters=$(IFS=,; echo "${voters[*]}")"
  fi
  cat > "$d/server.properties" <<CONF
process.roles=broker,controller
node.id=$i
$quorum
listeners=SASL_PLAINTEXT://127.0.0.1:$(port "$i"),CONTROLLER://127.0.0.1:$(cport "$i")
advertised.listeners=SASL_PLAINTEXT://127.0.0.1:$(port "$i")
controller.listener.names=CONTROLLER
listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT
inter.broker.listener.name=SASL_PLAINTEXT
# Every connection signs in (issue 25): clients with SCRAM-SHA-512 (their credentials in the
# cluster's metadata: jobs/gridlake/sources/kafka_auth.py), the brokers and controllers among
# themselves with PLAIN as admin, the one user this file defines. Without an ACL, nothing.
sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN
sasl.mechanism.inter.broker.protocol=PLAIN
sasl.mechanism.controller.protocol=PLAIN
listener.name.sasl_plaintext.sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN
listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_plaintext.plain.sasl.jaas.config=$jaas
listener.name.controller.sasl.enabled.mechanisms=PLAIN
listener.name.controller.plain.sasl.jaas.config=$jaas
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:admin
allow.everyone.if.no.acl.found=false
log.dirs=$d/data
num.partitions=$PARTITIONS
default.replication.factor=$RF
offsets.topic.replication.factor=$RF
transaction.state.log.replication.factor=$RF
transaction.state.log.min.isr=$ISR
share.coordinator.state.topic.replication.factor=$RF
share.coordinator.state.topic.min.isr=$ISR
min.insync.replicas=$ISR
auto.create.topics.enable=false
group.initial.rebalance.delay.ms=0
log.retention.hours=-1
CONF
}

start() {
  local i d id alive=1
  for i in $(seq 1 "$N"); do pid_alive "$(name "$i")" || alive=0; done
  [ "$alive" = 1 ] && { log "kafka: already running ($N broker(s))"; exit 0; }
  bash "$GRIDLAKE_REPO/infra/fetch_jars.sh" kafka
  # the principals' passwords (0600, generated once); server.properties (0600: umask) holds admin's
  "$GRIDLAKE_VENV/bin/python" -m gridlake.sources.kafka_auth passwords 2>/dev/null \
    || die "kafka: generating the passwords failed"
  # One cluster id for every broker of the quorum, kept beside them.
  mkdir -p "$GRIDLAKE_STATE/kafka"
  [ -s "$GRIDLAKE_STATE/kafka/cluster.id" ] \
    || kjava kafka.tools.StorageTool random-uuid > "$GRIDLAKE_STATE/kafka/cluster.id"
  id="$(cat "$GRIDLAKE_STATE/kafka/cluster.id")"
  for i in $(seq 1 "$N"); do
    write_conf "$i"
    d="$(dir "$i")"
    if [ ! -f "$d/data/meta.properties" ]; then
      if [ "$N" = 1 ]; then
        kjava kafka.tools.StorageTool format -t "$id" -c "$d/server.properties" --standalone
      else
        kjava kafka.tools.StorageTool format -t "$id" -c "$d/server.properties"
      fi > "$GRIDLAKE_LOGS/kafka-format.log" 2>&1 \
        || die "kafka: formatting broker $i failed; see $GRIDLAKE_LOGS/kafka-format.log"
    fi
  done
  local heap="${GRIDLAKE_KAFKA_HEAP:-$([ "$N" = 1 ] && echo 768m || echo 512m)}"
  for i in $(seq 1 "$N"); do
    pid_alive "$(name "$i")" && continue
    start_bg "$(name "$i")" "$GRIDLAKE_LOGS/$(name "$i").log" java "-Xmx$heap" -Xms256m \
      "-Dlog4j2.configurationFile=$GRIDLAKE_REPO/infra/kafka/log4j2.yaml" -cp "$libs/*" \
      kafka.Kafka "$(dir "$i")/server.properties"
  done
  for i in $(seq 1 "$N"); do wait_port "$(port "$i")" 90 "$(name "$i")"; done
  # SCRAM users and ACLs first (as admin with PLAIN): then everyone can sign in
  "$GRIDLAKE_VENV/bin/python" -m gridlake.sources.kafka_auth setup >> "$GRIDLAKE_LOGS/kafka-topics.log" 2>&1 \
    || die "kafka: creating the users and ACLs failed; see $GRIDLAKE_LOGS/kafka-topics.log"
  local t admin
  admin="$("$GRIDLAKE_VENV/bin/python" -c 'from gridlake.settings import get_settings
from gridlake.sources.kafka_auth import java_client_properties as j
print(j(get_settings(), "admin"))')"
  for t in $TOPICS; do
    kjava org.apache.kafka.tools.TopicCommand --bootstrap-server "$(bootstrap)" --command-config "$admin" \
      --create --if-not-exists --topic "$t" --partitions "$PARTITIONS" --replication-factor "$RF" \
      --config "min.insync.replicas=$ISR" >> "$GRIDLAKE_LOGS/kafka-topics.log" 2>&1 \
      || die "kafka: creating topic $t failed; see $GRIDLAKE_LOGS/kafka-topics.log"
  done
  log "kafka: up, $N broker(s) on $(bootstrap) (SASL/SCRAM-SHA-512, ACLs; topics: $TOPICS; replication $RF, min.insync.replicas $ISR; passwords in $GRIDLAKE_STATE/secrets/kafka/)"
}

case "${1:-status}" in
  start) start ;;
  stop) for i in $(seq "$N" -1 1); do stop_pid "$(name "$i")"; done ;;
  status)
    for i in $(seq 1 "$N"); do
      n="$(name "$i")"
      if pid_alive "$n"; then
        printf '%-9s running  pid %s  127.0.0.1:%s\n' "$n" "$(cat "$GRIDLAKE_RUN/$n.pid")" "$(port "$i")"
      else
        printf '%-9s stopped\n' "$n"
      fi
    done
    ;;
  bootstrap) bootstrap ;;
  *) die "usage: kafka.sh start|stop|status|bootstrap" ;;
esac
