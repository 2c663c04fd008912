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
# than BUDGET_S seconds (default 420) have passed. SECTIONS (default: all)
# lists the sections to run by name (scaling core load load-threads
# collections types scripting). PROFILE=1 first records a CPU profile of
# each server on the rows in PROFILE_ROWS, if perf runs there
# ($OUT/profile-*.txt).
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
    # perf and its libraries, for the CPU profiles (PROFILE=1).
    if command -v perf >/dev/null; then
        mkdir -p "$BIN/perflib"
        cp "$(readlink -f "$(command -v perf)")" "$BIN/perf.bin"
        ldd "$BIN/perf.bin" | awk '/=> \// {print $3}' | grep -v -E '/(libc|libm|libpthread|libdl|librt|libresolv|libutil|ld-linux[^/]*)\.so' |
            xargs -I{} cp {} "$BIN/perflib/"
        printf '#!/bin/sh\nd=$(dirname "$0")\nLD_LIBRARY_PATH=$d/perflib exec "$d/perf.bin" "$@"\n' >"$BIN/perf"
        chmod +x "$BIN/perf"
    fi
    rm -rf .whl && python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_17_x86_64 -d .whl \
        resp-benchmark==0.1.7 pydantic==2.13.4 pydantic-core==2.46.4 annotated-types==0.7.0 \
        typing-inspection==0.4.2 typing-extensions==4.15.0 redis==8.1.0
    du -sh "$BIN" .whl
}

# A CPU profile of one server (pinned to core 0, Tessera on one thread)
# while resp-benchmark runs one row: the flat profile by symbol.
profile_row() {
    local kind=$1 name=$2 load=$3 command=$4 port=7400 pid
    if [[ $kind == redis ]]; then
        taskset -c 0 "$REDIS_BIN" --port $port --save '' --appendonly no >/dev/null 2>&1 &
    else
        taskset -c 0 "$TESSERA_BIN" --port $port --threads 1 >/dev/null 2>&1 &
    fi
    pid=$!
    sleep 1
    [[ -n $load ]] && resp-benchmark -p $port --cores "$CLIENTS" --load -c 64 -P 16 -n 1000000 "$load" >/dev/null 2>&1
    resp-benchmark -p $port --cores "$CLIENTS" -c 64 -s 8 "$command" >"$OUT/profile-$kind-$name.bench" 2>&1 &
    local bench=$!
    sleep 2
    perf record -F 1999 -g -p $pid -o "/tmp/perf-$kind-$name.data" -- sleep 4 >/dev/null 2>&1
    wait $bench
    {
        echo "# $kind, $command${load:+ after --load $load}"
        perf report -i "/tmp/perf-$kind-$name.data" --no-children --sort dso -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -8
        perf report -i "/tmp/perf-$kind-$name.data" --no-children --sort dso,sym -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -60
    } >"$OUT/profile-$kind-$name.txt"
    kill $pid
    wait $pid 2>/dev/null
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
    CLIENTS=$clients
    if [[ -n ${PROFILE:-} ]] && perf record -o /tmp/perf-probe.data -- true >/dev/null 2>&1; then
        for kind in redis tessera; do
            profile_row $kind lpush "" "LPUSH {key uniform 100} {value 64}"
            profile_row $kind get "SET {key sequence 1000000} {value 64}" "GET {key uniform 1000000}"
        done
        echo "profiles done at ${SECONDS}s" | tee -a "$OUT/log"
    elif [[ -n ${PROFILE:-} ]]; then
        perf record -o /tmp/perf-probe.data -- true 2>&1 | tail -3 | tee -a "$OUT/log"
    fi
    local bench=(python3 scripts/bench.py --no-build --output "$OUT/benchmarks.md" --client-cores "$clients")
    # Most wanted first; each section is skipped once the time budget is spent.
    local -A sections=(
        [scaling]="--section scaling --scale-threads $threads --seconds $secs"
        [core]="--section core --doc-section core-many --rounds $rounds --seconds $secs"
        [load]="--section load --doc-section load-many --probe-core ${PROBE_CORE:-4} --keys $keys"
        [load-threads]="--section load --doc-section load-many-threads ${THREADED_LOAD:---server-core 0-7 --threads 8 --client-cores 8-14 --probe-core 15} --keys $keys"
        [collections]="--section collections --doc-section collections-many --rounds $rounds --seconds $secs"
        [types]="--section types --doc-section types-many --rounds $rounds --seconds $secs"
        [scripting]="--section scripting --doc-section scripting-many --rounds $rounds --seconds $secs"
        [repl-apply]="--section repl-apply --doc-section replica-apply-many --threads 8 --keys 4000000 --rounds 1"
        [read-scaling]="--section read-scaling --doc-section read-scaling-many --server-core 0-11 --threads 4 --client-cores 12-15 --rounds 1"
    )
    local name s
    for name in ${SECTIONS:-scaling core load load-threads collections types scripting repl-apply read-scaling}; do
        s=${sections[$name]:-}
        [[ -n $s ]] || { echo "unknown section $name" | tee -a "$OUT/log"; continue; }
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
