#!/usr/bin/env bash
# kafka.sh start|stop|status: one Kafka broker in KRaft mode on 127.0.0.1, with the project's topics.
set -euo pipefail
source "$(dirname "$0")/env.sh"
libs="$GRIDLAKE_HOME/kafka/libs"
dir="$GRIDLAKE_STATE/kafka"
conf="$dir/server.properties"
TOPICS="grid.jobs grid.nodes grid.network grid.accounting_summaries grid.deadletter"
PARTITIONS="${GRIDLAKE_KAFKA_PARTITIONS:-2}"

kjava() { java -cp "$libs/*" "$@"; }

write_conf() {
  mkdir -p "$dir/data"
  cat > "$conf" <<CONF
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$GRIDLAKE_KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$GRIDLAKE_KAFKA_PORT,CONTROLLER://127.0.0.1:$GRIDLAKE_KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$GRIDLAKE_KAFKA_PORT
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/data
num.partitions=$PARTITIONS
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
min.insync.replicas=1
auto.create.topics.enable=false
group.initial.rebalance.delay.ms=0
log.retention.hours=-1
CONF
}

case "${1:-status}" in
  start)
    pid_alive kafka && { log "kafka: already running"; exit 0; }
    bash "$GRIDLAKE_REPO/infra/fetch_jars.sh" kafka
    write_conf
    if [ ! -f "$dir/data/meta.properties" ]; then
      kjava kafka.tools.StorageTool format -t "$(kjava kafka.tools.StorageTool random-uuid)" \
        -c "$conf" --standalone > "$GRIDLAKE_LOGS/kafka-format.log" 2>&1
    fi
    KAFKA_HEAP="${GRIDLAKE_KAFKA_HEAP:-768m}"
    start_bg kafka "$GRIDLAKE_LOGS/kafka.log" java "-Xmx$KAFKA_HEAP" -Xms256m \
      "-Dlog4j2.configurationFile=$GRIDLAKE_REPO/infra/kafka/log4j2.yaml" -cp "$libs/*" kafka.Kafka "$conf"
    wait_port "$GRIDLAKE_KAFKA_PORT" 90 kafka
    for t in $TOPICS; do
      kjava org.apache.kafka.tools.TopicCommand --bootstrap-server "127.0.0.1:$GRIDLAKE_KAFKA_PORT" \
        --create --if-not-exists --topic "$t" --partitions "$PARTITIONS" --replication-factor 1 \
        >> "$GRIDLAKE_LOGS/kafka-topics.log" 2>&1
    done
    log "kafka: up on 127.0.0.1:$GRIDLAKE_KAFKA_PORT (topics: $TOPICS)"
    ;;
  stop) stop_pid kafka ;;
  status) if pid_alive kafka; then echo "kafka     running  pid $(cat "$GRIDLAKE_RUN/kafka.pid")  127.0.0.1:$GRIDLAKE_KAFKA_PORT"; else echo "kafka     stopped"; fi ;;
  *) die "usage: kafka.sh start|stop|status" ;;
esac
