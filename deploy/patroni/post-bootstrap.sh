#!/bin/sh
# Patroni's post_bootstrap: run once, on the first primary, right after the cluster is made,
# with a superuser connection string as $1. Creates the role the BlueLibrary instances log in
# as (its password from the db_password secret, which the entrypoint copied) and their
# database. The standbys are copied from this primary afterwards, so they have both.
set -eu
password="$(cat /run/patroni/db_password)"
psql -X -v ON_ERROR_STOP=1 -v password="$password" -d "$1" <<'SQL'
CREATE ROLE bluelibrary LOGIN PASSWORD :'password';
CREATE DATABASE bluelibrary OWNER bluelibrary;
SQL
