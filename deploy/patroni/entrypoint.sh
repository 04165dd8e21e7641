#!/bin/sh
# Starts the command (Patroni, or etcd) as the postgres user. For Patroni, the passwords come
# from the Compose secrets: the superuser's and the replication user's into Patroni's own
# environment (PATRONI_SUPERUSER_PASSWORD, PATRONI_REPLICATION_PASSWORD; not the container's
# configuration, which `docker inspect` shows), and the BlueLibrary role's into a file only
# postgres can read, for patroni-post-bootstrap.
set -eu
if [ -r /run/secrets/postgres_password ]; then
    PATRONI_SUPERUSER_PASSWORD="$(cat /run/secrets/postgres_password)"
    PATRONI_REPLICATION_PASSWORD="$(cat /run/secrets/replication_password)"
    export PATRONI_SUPERUSER_PASSWORD PATRONI_REPLICATION_PASSWORD
    install -d -o postgres -g postgres -m 0700 /run/patroni
    install -o postgres -g postgres -m 0400 /run/secrets/db_password /run/patroni/db_password
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"
