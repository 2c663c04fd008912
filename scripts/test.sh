#!/usr/bin/env bash
# Runs every test on a fresh machine: installs what the tests need
# (redis-server 7.0 for the differential tests, redis-check-rdb and
# redis-check-aof for the persistence tests, mkfs.ext4 for the power-cut
# test, openssl for the TLS tests' certificates), then the whole workspace's
# unit, property and integration tests.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-check-aof >/dev/null 2>&1 \
    || ! command -v redis-check-rdb >/dev/null 2>&1 || ! command -v mkfs.ext4 >/dev/null 2>&1 \
    || ! command -v openssl >/dev/null 2>&1 || ! command -v redis-sentinel >/dev/null 2>&1; then
    echo "installing redis-server, redis-tools, redis-sentinel, e2fsprogs and openssl with apt-get (the reference server, its file checkers, Sentinel for the failover tests, mkfs.ext4, certificates for the TLS tests)"
    if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
    if ! { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq redis-server redis-tools redis-sentinel e2fsprogs openssl >/dev/null; }; then
        echo "ERROR: could not install redis-server/redis-tools/redis-sentinel/e2fsprogs/openssl. Install them (apt-get install -y redis-server redis-tools redis-sentinel e2fsprogs openssl) and re-run." >&2
        exit 1
    fi
fi
# Debian starts a redis-server service on install; the tests start their own
# on free ports, so the service is harmless, but stop it to free port 6379.
if command -v systemctl >/dev/null 2>&1; then
    systemctl stop redis-server >/dev/null 2>&1 || true
    systemctl stop redis-sentinel >/dev/null 2>&1 || true
fi
redis-server --version

# Real job-queue frameworks for tests/frameworks.rs: BullMQ (Node.js, pinned by
# its package-lock.json), RQ and Celery over redis-py (pinned in their
# requirements.txt files).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "ERROR: node and npm are needed for the BullMQ tests (apt-get install -y nodejs npm)." >&2
    exit 1
fi
if [ ! -d tests/frameworks/bullmq/node_modules/bullmq ]; then
    if ! (cd tests/frameworks/bullmq && npm ci --no-audit --no-fund --loglevel=error); then
        echo "ERROR: could not install BullMQ (npm ci in tests/frameworks/bullmq)." >&2
        exit 1
    fi
fi
if ! python3 -c 'import rq, celery, kombu, packaging, redis' >/dev/null 2>&1; then
    if ! python3 -m pip install -q -r tests/frameworks/rq/requirements.txt -r tests/frameworks/celery/requirements.txt; then
        echo "ERROR: could not install RQ and Celery (pip install -r tests/frameworks/{rq,celery}/requirements.txt)." >&2
        exit 1
    fi
fi

cargo build --workspace --all-targets
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
cargo test --workspace --no-fail-fast -- --test-threads "${TEST_THREADS:-2}" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
# One closing line summing every test binary's result (the last binary cargo
# runs is a doc-test target with nothing in it).
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     END { printf "total: %d passed, %d failed\n", p, f }' "$log"
exit "$status"
