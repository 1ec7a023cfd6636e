#!/usr/bin/env bash
# Installs Debian's Chromium and its WebDriver (chromium, chromium-driver) for the browser tests of
# the search page (tests/test_search_page.py drives /usr/bin/chromium through /usr/bin/chromedriver).
# Idempotent, and quick once installed. It never fails the test run: without root or apt it says so
# and the browser tests skip with the reason (in CI, CI=true, they fail instead).
set -u

say() { echo "ensure-chromium: $*"; }

if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
    exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    say "not root or no apt-get: not installing chromium (the browser tests will skip)"
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null 2>&1 || say "apt-get update failed"
apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null 2>&1 \
    || say "apt-get install chromium chromium-driver failed: the browser tests will skip"
exit 0
