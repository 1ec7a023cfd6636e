#!/usr/bin/env bash
# Installs a Java runtime (Debian's headless JRE) for the Spark recipe's test, which runs PySpark in
# local mode. Idempotent; it never fails the test run: without root or apt it says so, and the test
# skips with the reason.
set -u

say() { echo "ensure-java: $*"; }

if command -v java >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    say "not root or no apt-get: not installing (the Spark test will skip)"
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null 2>&1 || say "apt-get update failed"
apt-get install -y -qq default-jre-headless >/dev/null 2>&1 || say "apt-get install default-jre-headless failed"
exit 0
