#!/usr/bin/env bash
# The many-core benchmarks (docs/benchmarks.md, "on a 16-core machine"), for a
# borrowed machine that has no Rust toolchain, redis-server or resp-benchmark
# and cannot download them.
#
#   scripts/device_bench.sh prepare   # here: builds and gathers everything into
#                                     # .benchbin/ (binaries, libraries) and .whl/ (wheels)
#   scripts/device_bench.sh run       # there, from the repository root: writes
#                                     # $OUT/benchmarks.md and $OUT/log
#
# Cores: servers on 0..N-1, resp-benchmark on CLIENT_CORES (default 8-15).
# ROUNDS (default 1) per per-core case; sections start only while fewer
# than BUDGET_S seconds (default 420) have passed.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=$PWD/.benchbin

prepare() {
    set -e
    cargo build --release --bin tessera-server
    rm -rf "$BIN" && mkdir -p "$BIN/lib"
    objcopy --strip-debug target/release/tessera-server "$BIN/tessera-server"
    cp "$(readlink -f "$(command -v redis-server)")" "$BIN/redis-server.bin"
    # redis-server's own libraries travel with it; glibc is the machine's.
    ldd "$BIN/redis-server.bin" | awk '/=> \// {print $3}' | grep -v -E '/(libc|libm|libpthread|libdl|librt|libresolv|libutil|libnss[^/]*|ld-linux[^/]*)\.so' |
        xargs -I{} cp {} "$BIN/lib/"
    printf '#!/bin/sh\nd=$(dirname "$0")\nLD_LIBRARY_PATH=$d/lib exec "$d/redis-server.bin" "$@"\n' >"$BIN/redis-server"
    chmod +x "$BIN/redis-server"
    cp "$(command -v taskset)" "$BIN/"
    rm -rf .whl && python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_17_x86_64 -d .whl \
        resp-benchmark==0.1.7 pydantic==2.13.4 pydantic-core==2.46.4 annotated-types==0.7.0 \
        typing-inspection==0.4.2 typing-extensions==4.15.0 redis==8.1.0
    du -sh "$BIN" .whl
}

run() {
    OUT=${OUT:-/tmp/bench-out}
    mkdir -p "$OUT"
    local clients=${CLIENT_CORES:-8-15} threads=${SCALE_THREADS:-1,2,4,8} secs=${SECS:-4}
    local keys=${LOAD_KEYS:-10000000} budget=${BUDGET_S:-420} rounds=${ROUNDS:-1}
    [[ -n ${SKIP_WHEELS:-} ]] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$BIN:$PATH
    export TESSERA_BIN=$BIN/tessera-server REDIS_BIN=$BIN/redis-server PYTHONUNBUFFERED=1
    {
        nproc; lscpu | grep -E 'Model name|Thread|Core|Socket|NUMA node'
        "$REDIS_BIN" --version && "$TESSERA_BIN" --version && resp-benchmark --help | head -1
    } 2>&1 | tee "$OUT/log" || exit 1
    cp docs/benchmarks.md "$OUT/benchmarks.md"
    local bench=(python3 scripts/bench.py --no-build --output "$OUT/benchmarks.md" --client-cores "$clients")
    # Most wanted first; each section is skipped once the time budget is spent.
    local sections=(
        "--section scaling --scale-threads $threads --seconds $secs"
        "--section core --doc-section core-many --rounds $rounds --seconds $secs"
        "--section load --doc-section load-many --probe-core ${PROBE_CORE:-4} --keys $keys"
        "--section load --doc-section load-many-threads ${THREADED_LOAD:---server-core 0-7 --threads 8 --client-cores 8-14 --probe-core 15} --keys $keys"
        "--section collections --doc-section collections-many --rounds $rounds --seconds $secs"
        "--section types --doc-section types-many --rounds $rounds --seconds $secs"
        "--section scripting --doc-section scripting-many --rounds $rounds --seconds $secs"
    )
    for s in "${sections[@]}"; do
        if ((SECONDS > budget)); then echo "skipped (time budget): $s" | tee -a "$OUT/log"; continue; fi
        echo "== $s (at ${SECONDS}s)" | tee -a "$OUT/log"
        # shellcheck disable=SC2086
        "${bench[@]}" $s 2>&1 | tee -a "$OUT/log"
    done
    echo "done at ${SECONDS}s" | tee -a "$OUT/log"
}

case "${1:-}" in
prepare) prepare ;;
run) run ;;
*) echo "usage: $0 prepare|run" >&2; exit 2 ;;
esac
