#!/bin/bash
# A database cluster made on first start (user, password and database from POSTGRES_*), then the server on :5432.
set -euo pipefail
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
data=/var/lib/postgresql/data
if [ ! -s "$data/PG_VERSION" ]; then
  password=$(mktemp)
  printf '%s\n' "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}" >"$password"
  "$bin/initdb" -D "$data" -U "${POSTGRES_USER:-postgres}" --pwfile="$password" \
    --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$password"
  echo 'host all all 0.0.0.0/0 scram-sha-256' >>"$data/pg_hba.conf"
  "$bin/postgres" -D "$data" -c listen_addresses= -k /tmp &
  until "$bin/pg_isready" -h /tmp -q; do sleep 0.2; done
  db=${POSTGRES_DB:-${POSTGRES_USER:-postgres}}
  [ "$db" = postgres ] || "$bin/createdb" -h /tmp -U "${POSTGRES_USER:-postgres}" "$db"
  "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null
fi
exec "$bin/postgres" -D "$data" -c listen_addresses='*' -k /tmp
