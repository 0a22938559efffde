# The containers test's stand-in for docker.io/apache/kafka, which no registry here serves: Apache Kafka's jars
# from Maven Central (as the local broker of the tests), on Debian's Java, configured the apache/kafka image's
# way (KAFKA_FOO_BAR=x becomes foo.bar=x). Only for running compose.yaml where the real image cannot be pulled.
ARG BASE
FROM ${BASE}
USER root
RUN apt-get update \
  && apt-get install -y --no-install-recommends openjdk-21-jre-headless \
  && rm -rf /var/lib/apt/lists/*
COPY lib/ /opt/kafka/libs/
COPY kafka-entrypoint.sh log4j.properties log4j2.properties /opt/kafka/
USER 1000:1000
ENTRYPOINT ["/opt/kafka/kafka-entrypoint.sh"]
