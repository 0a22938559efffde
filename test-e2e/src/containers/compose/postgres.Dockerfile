# The containers test's stand-in for docker.io/library/postgres, which no registry here serves: Debian's
# PostgreSQL, configured the postgres image's way (POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DB). Only for
# running compose.yaml where the real image cannot be pulled.
ARG BASE
FROM ${BASE}
USER root
RUN apt-get update \
  && apt-get install -y --no-install-recommends postgresql \
  && rm -rf /var/lib/apt/lists/*
COPY postgres-entrypoint.sh /usr/local/bin/
USER postgres
ENTRYPOINT ["/usr/local/bin/postgres-entrypoint.sh"]
