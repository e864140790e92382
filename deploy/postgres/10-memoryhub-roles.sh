#!/usr/bin/env bash
# Runs once, when the PostgreSQL data volume is first initialised (the
# official image runs /docker-entrypoint-initdb.d/* as the superuser).
#
# Two roles besides the superuser:
#   memoryhub_owner  owns the database and every table; migrations connect
#                    as it (MIGRATE_DATABASE_URL).
#   memoryhub_app    owns nothing; the web, worker and beat connect as it
#                    (DATABASE_URL). Each migrate grants it SELECT/INSERT/
#                    UPDATE/DELETE where the app needs them and only
#                    SELECT/INSERT on history, log and audit tables
#                    (memoryhub/db_roles.py). Not being an owner, it cannot
#                    disable or drop the guard triggers.
set -euo pipefail

: "${MEMORYHUB_OWNER_PASSWORD:?set MEMORYHUB_OWNER_PASSWORD}"
: "${MEMORYHUB_APP_PASSWORD:?set MEMORYHUB_APP_PASSWORD}"
DB=${MEMORYHUB_DB:-memoryhub}

psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
    -v db="$DB" -v owner_pw="$MEMORYHUB_OWNER_PASSWORD" -v app_pw="$MEMORYHUB_APP_PASSWORD" <<'SQL'
CREATE ROLE memoryhub_owner LOGIN PASSWORD :'owner_pw';
CREATE ROLE memoryhub_app LOGIN PASSWORD :'app_pw' NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT;
CREATE DATABASE :"db" OWNER memoryhub_owner;
REVOKE ALL ON DATABASE :"db" FROM PUBLIC;
GRANT CONNECT, TEMPORARY ON DATABASE :"db" TO memoryhub_app;
\connect :"db"
-- PostgreSQL 15+: only the database owner creates objects in public.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO memoryhub_app;
SQL
