#!/bin/bash
# KAFKA_* variables to server.properties (as the apache/kafka image: _ is ., __ is _, ___ is -), then a
# single-node KRaft broker and controller.
set -euo pipefail
mkdir -p /tmp/kafka/data
conf=/tmp/kafka/server.properties
: >"$conf"
for var in $(compgen -e); do
  case $var in
    KAFKA_HEAP_OPTS | KAFKA_OPTS | KAFKA_JVM_PERFORMANCE_OPTS) continue ;;
    KAFKA_*) ;;
    *) continue ;;
  esac
  key=${var#KAFKA_}
  key=${key,,}
  key=${key//___/-}
  key=${key//__/@}
  key=${key//_/.}
  key=${key//@/_}
  echo "$key=${!var}" >>"$conf"
done
grep -q '^log.dirs=' "$conf" || echo 'log.dirs=/tmp/kafka/data' >>"$conf"
# Kafka 4 logs through log4j2 (its jars are there), Kafka 3 through reload4j.
if compgen -G '/opt/kafka/libs/log4j-core-*.jar' >/dev/null; then
  logging=-Dlog4j2.configurationFile=/opt/kafka/log4j2.properties
else
  logging=-Dlog4j.configuration=file:/opt/kafka/log4j.properties
fi
jvm=(-Xmx384m -Xms384m -XX:+UseG1GC -Djava.awt.headless=true -Dkafka.logs.dir=/tmp/kafka "$logging"
  -cp '/opt/kafka/libs/*')
java "${jvm[@]}" kafka.tools.StorageTool format -t "${CLUSTER_ID:-5L6g3nShT-eMCtK--X86sw}" -c "$conf" -g
exec java "${jvm[@]}" kafka.Kafka "$conf"
