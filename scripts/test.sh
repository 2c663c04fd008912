#!/usr/bin/env bash
# Runs every test on a fresh machine: installs what the tests need
# (redis-server 7.0 for the differential tests), then the whole workspace's
# unit, property and integration tests.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v redis-server >/dev/null 2>&1; then
    echo "redis-server not found; installing it with apt-get (needed by the differential tests)"
    if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
    if ! { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq redis-server >/dev/null; }; then
        echo "ERROR: could not install redis-server. Install Redis 7.0 (apt-get install -y redis-server) and re-run." >&2
        exit 1
    fi
fi
# Debian starts a redis-server service on install; the tests start their own
# on free ports, so the service is harmless, but stop it to free port 6379.
if command -v systemctl >/dev/null 2>&1; then systemctl stop redis-server >/dev/null 2>&1 || true; fi
redis-server --version

cargo build --workspace --all-targets
cargo test --workspace --no-fail-fast -- --test-threads "${TEST_THREADS:-2}"
