#!/usr/bin/env bash
# Installs Debian's PostgreSQL server, and its pgvector package where the release has one, for the
# database tests (tests/postgres_server.py starts a throwaway cluster from it). Idempotent, and
# quick once installed. It never fails the test run: without root or apt it says so and the tests
# that need a server skip with the reason (or use the server bundled in the pgserver wheel).
set -u

say() { echo "ensure-postgres: $*"; }
installed_major() { ls /usr/lib/postgresql 2>/dev/null | sort -n | tail -n 1; }

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    say "not root or no apt-get: not installing (an installed server is still used)"
    exit 0
fi

export DEBIAN_FRONTEND=noninteractive
updated=no
update_once() {
    if [ "$updated" = no ]; then
        apt-get update -qq >/dev/null 2>&1 || say "apt-get update failed"
        updated=yes
    fi
}

if [ -z "$(installed_major)" ]; then
    # Only the binaries are wanted: no cluster of the system's own, no server on port 5432.
    mkdir -p /etc/postgresql-common/createcluster.d
    echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.d/fanfuse-tests.conf
    update_once
    apt-get install -y -qq postgresql >/dev/null 2>&1 || say "apt-get install postgresql failed"
fi
major="$(installed_major)"
if [ -z "$major" ]; then
    say "no PostgreSQL server installed: the database tests will skip"
    exit 0
fi

# pgvector: Debian's package where the release has one (Debian 13 does, Debian 12 does not). The
# answer is remembered per PostgreSQL version so later runs do not ask apt again.
stamp="/var/lib/postgresql/.fanfuse-pgvector-checked-$major"
if [ ! -f "/usr/share/postgresql/$major/extension/vector.control" ] && [ ! -f "$stamp" ]; then
    package="postgresql-$major-pgvector"
    update_once
    if apt-cache show "$package" >/dev/null 2>&1; then
        apt-get install -y -qq "$package" >/dev/null 2>&1 || say "apt-get install $package failed"
    else
        say "this Debian release has no $package: the pgvector tests use the pgserver wheel's server"
    fi
    mkdir -p "$(dirname "$stamp")" && touch "$stamp"
fi
exit 0
