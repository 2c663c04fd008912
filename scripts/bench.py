#!/usr/bin/env python3
"""Side-by-side benchmark of Tessera and redis-server with resp-benchmark.

Both servers run with the same settings on the same machine, each pinned to
the same core (default core 0), while resp-benchmark runs pinned to the
others. Each case runs `--rounds` times, alternating which server goes first,
and the medians are written as a Markdown table (command line, both results,
ratio) into docs/benchmarks.md between the BEGIN/END markers of the section
named by --section.

    pip install resp-benchmark==0.1.7
    python3 scripts/bench.py                 # the core table (SET/GET)
    python3 scripts/bench.py --seconds 5 --rounds 5

Speed is measured here, never in the test suite.
"""

import argparse
import hashlib
import select
import threading
import os
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (label, load command or None, benchmark command, extra resp-benchmark args)
# Shapes follow the seed whitepaper (../shared/seeds/000_*), key counts scaled
# down to fit a 2-core machine.
CORE_CASES = [
    ("SET -c 64", None, "SET {key uniform 1000000} {value 64}", ["-c", "64"]),
    ("SET -c 64 -P 16", None, "SET {key uniform 1000000} {value 64}", ["-c", "64", "-P", "16"]),
    (
        "GET -c 64",
        "SET {key sequence 1000000} {value 64}",
        "GET {key uniform 1000000}",
        ["-c", "64"],
    ),
    (
        "GET -c 64 -P 16",
        "SET {key sequence 1000000} {value 64}",
        "GET {key uniform 1000000}",
        ["-c", "64", "-P", "16"],
    ),
]

# The seed's collection rows, shapes kept (10,007 members per key, 10,000
# elements per list, 64-byte values) with 100 keys instead of 1,000 so the
# load phases fit this machine. (label, load, command, extra args, load count)
COLLECTION_CASES = [
    ("ZADD", None, "ZADD {key uniform 100} {rand 70000} {key uniform 10007}", ["-c", "64"]),
    ("ZSCORE", "ZADD {key sequence 100} {rand 70000} {key sequence 10007}",
     "ZSCORE {key uniform 100} {key uniform 10007}", ["-c", "64"], 1_000_700),
    ("HSET", None, "HSET {key uniform 100} {key uniform 10000} {value 64}", ["-c", "64"]),
    ("HGET", "HSET {key sequence 100} {key sequence 10007} {value 64}",
     "HGET {key uniform 100} {key uniform 10007}", ["-c", "64"], 1_000_700),
    ("LPUSH", None, "LPUSH {key uniform 100} {value 64}", ["-c", "64"]),
    ("LINDEX", "LPUSH {key sequence 100} {value 64}",
     "LINDEX {key uniform 100} {rand 10000}", ["-c", "64"], 1_000_000),
    ("SADD", None, "SADD {key uniform 100} {value 64}", ["-c", "64"]),
    ("SISMEMBER", "SADD {key sequence 100} {key sequence 10007}",
     "SISMEMBER {key uniform 100} {key uniform 10007}", ["-c", "64"], 1_000_700),
]

# Issue 4's rows: the whitepaper's EVALSHA (the script is loaded first, see
# SETUP) and PUBLISH with 1 and 100 subscribers draining the channel.
SET_SCRIPT = "return redis.call('SET', KEYS[1], ARGV[1])"
SET_SCRIPT_SHA = hashlib.sha1(SET_SCRIPT.encode()).hexdigest()
SCRIPTING_CASES = [
    ("EVALSHA", None, "EVALSHA " + SET_SCRIPT_SHA + " 1 {key uniform 10000000} {value 64}", ["-c", "64"]),
    ("EVALSHA -P 16", None, "EVALSHA " + SET_SCRIPT_SHA + " 1 {key uniform 10000000} {value 64}",
     ["-c", "64", "-P", "16"]),
    ("PUBLISH, 1 subscriber", None, "PUBLISH news {value 64}", ["-c", "64"]),
    ("PUBLISH, 100 subscribers", None, "PUBLISH news {value 64}", ["-c", "64"]),
]

# Issue 5's rows: streams, bitmaps, HyperLogLog, geo (100 keys).
TYPE_CASES = [
    ("XADD", None, "XADD {key uniform 100} * f {value 64}", ["-c", "64"]),
    ("XREAD COUNT 10", "XADD {key sequence 100} * f {value 64}",
     "XREAD COUNT 10 STREAMS {key uniform 100} 0", ["-c", "64"], 100_000),
    ("XREADGROUP", "XADD {key sequence 100} * f {value 64}",
     "XREADGROUP GROUP g c COUNT 1 STREAMS {key uniform 100} >", ["-c", "64"], 1_000_000),
    # XACK of entries pending in a group: every stream gets entries 1-1 .. 1-10000, all read
    # into consumer c's PEL (see SETUP); acks pick a random entry.
    ("XACK", None, "XACK {key uniform 100} g 1-{rand 10000}", ["-c", "64"]),
    ("SETBIT", None, "SETBIT {key uniform 100} {rand 1000000} 1", ["-c", "64"]),
    ("BITCOUNT", "SETBIT {key sequence 100} {rand 100000} 1",
     "BITCOUNT {key uniform 100}", ["-c", "64"], 1_000_000),
    ("PFADD", None, "PFADD {key uniform 100} {key uniform 1000000}", ["-c", "64"]),
    ("PFCOUNT", "PFADD {key sequence 100} {key uniform 1000000}",
     "PFCOUNT {key uniform 100}", ["-c", "64"], 1_000_000),
    ("GEOADD", None, "GEOADD {key uniform 100} {rand 180} {rand 80} {key uniform 100000}", ["-c", "64"]),
    ("GEOSEARCH", "GEOADD {key sequence 100} {rand 180} {rand 80} {key uniform 100000}",
     "GEOSEARCH {key uniform 100} FROMLONLAT 90 40 BYRADIUS 500 km ASC COUNT 10", ["-c", "64"], 1_000_000),
]

# Issue 20's rows: the whitepaper's writes in memory, with appendfsync everysec
# and with appendfsync always, each server against its own in-memory figure.
DURABLE_CASES = [
    ("SET", None, "SET {key uniform 1000000} {value 64}", ["-c", "64"]),
    ("HSET", None, "HSET {key uniform 100} {key uniform 10000} {value 64}", ["-c", "64"]),
    ("LPUSH", None, "LPUSH {key uniform 100} {value 64}", ["-c", "64"]),
    ("ZADD", None, "ZADD {key uniform 100} {rand 70000} {key uniform 10007}", ["-c", "64"]),
    ("SADD", None, "SADD {key uniform 100} {value 64}", ["-c", "64"]),
    ("EVALSHA", None, "EVALSHA " + SET_SCRIPT_SHA + " 1 {key uniform 10000000} {value 64}", ["-c", "64"]),
]
DURABLE_MODES = [
    ("in memory", ()),
    ("AOF everysec", ("--appendonly", "yes", "--appendfsync", "everysec")),
    ("AOF always", ("--appendonly", "yes", "--appendfsync", "always")),
]

# Commands sent before a case's benchmark (after its load).
XACK_SETUP_SCRIPT = (
    "for i = 1, 10000 do redis.call('XADD', KEYS[1], '1-' .. i, 'f', ARGV[1]) end "
    "redis.call('XGROUP', 'CREATE', KEYS[1], 'g', '0') "
    "redis.call('XREADGROUP', 'GROUP', 'g', 'c', 'COUNT', 10000, 'STREAMS', KEYS[1], '>') return 1"
)
SETUP = {
    "EVALSHA": [["SCRIPT", "LOAD", SET_SCRIPT]],
    "EVALSHA -P 16": [["SCRIPT", "LOAD", SET_SCRIPT]],
    "XACK": [["EVAL", XACK_SETUP_SCRIPT, "1", f"key_{i:010d}", "x" * 64] for i in range(100)],
    "XREADGROUP": [["XGROUP", "CREATE", f"key_{i:010d}", "g", "0"] for i in range(100)],
}
# Subscribers kept reading while the case runs.
SUBSCRIBERS = {"PUBLISH, 1 subscriber": 1, "PUBLISH, 100 subscribers": 100}

# --section floor: the rows of issues 3-5 whose replies are small, each run
# against redis-server and against bench/noop-server (a server that does no
# work: one recv and one send per request) replying as many bytes as the row's
# real reply. Values: the no-op server's --reply-bytes (None: a 5-byte nil).
FLOOR_REPLY_BYTES = {
    "ZADD": None, "ZSCORE": None, "HSET": None, "HGET": 64, "LPUSH": None, "LINDEX": 64,
    "SADD": None, "SISMEMBER": None, "EVALSHA": None, "XADD": 15, "XACK": None,
    "SETBIT": None, "BITCOUNT": None, "PFADD": None, "PFCOUNT": None, "GEOADD": None,
}
FLOOR_CASES = [c for c in COLLECTION_CASES + SCRIPTING_CASES + TYPE_CASES if c[0] in FLOOR_REPLY_BYTES]
NOOP_DIR = os.path.join(ROOT, "bench", "noop-server")
NOOP_BIN = os.path.join(ROOT, "target", "noop", "release", "noop-server")

LINE = re.compile(r"qps: (\d+), conn: \d+, cnt: (\d+), avg: ([\d.]+)ms, p99: ([\d.]+)ms")


def invocation():
    """The command line that produced a table, as it can be re-run (minus
    where the table was written and whether the server was rebuilt)."""
    argv, skip = [], False
    for a in sys.argv[1:]:
        if skip:
            skip = False
        elif a == "--output":
            skip = True
        elif not a.startswith("--output=") and a != "--no-build":
            argv.append(a)
    return "`" + shlex.join(["python3", "scripts/bench.py"] + argv) + "`"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(port, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"server on port {port} did not start")


def cpu_split(pid):
    """(user, system) CPU seconds the process has used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def cpu_seconds(pid):
    return sum(cpu_split(pid))


class Server:
    def __init__(self, kind, core, threads, extra=()):
        self.kind = kind
        self.port = free_port()
        if kind == "redis":
            cmd = [
                os.environ.get("REDIS_BIN") or shutil.which("redis-server") or "redis-server",
                "--port", str(self.port), "--bind", "127.0.0.1",
                "--save", "", "--appendonly", "no", "--daemonize", "no",
            ]
        else:
            cmd = [
                os.environ.get("TESSERA_BIN") or os.path.join(ROOT, "target", "release", "tessera-server"),
                "--port", str(self.port), "--bind", "127.0.0.1",
                "--threads", str(threads),
                # As redis-server above: no snapshot at stop unless a section asks.
                "--save", "",
            ]
        self.proc = subprocess.Popen(
            ["taskset", "-c", core] + cmd + list(extra),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_ready(self.port)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def run_bench(port, command, extra, seconds, client_cores, load=False, count=None, load_args=("-c", "64", "-P", "16")):
    args = ["resp-benchmark", "-p", str(port), "--cores", client_cores]
    if load:
        args += ["--load", *load_args, "-n", str(count)]
    else:
        args += ["-s", str(seconds)] + extra
    args.append(command)
    out = subprocess.run(args, capture_output=True, text=True, timeout=seconds * 4 + 600)
    if load:
        if out.returncode != 0:
            raise RuntimeError(f"load failed: {' '.join(args)}:\n{out.stdout}\n{out.stderr}")
        return None
    matches = LINE.findall(out.stdout + out.stderr)
    if not matches:
        raise RuntimeError(f"no result from {' '.join(args)}:\n{out.stdout}\n{out.stderr}")
    qps, cnt, avg, p99 = matches[-1]
    return int(qps), int(cnt), float(avg), float(p99)


def send_command(port, argv):
    """One command over a fresh connection; returns the raw reply."""
    s = socket.create_connection(("127.0.0.1", port))
    payload = f"*{len(argv)}\r\n".encode()
    for a in argv:
        a = a.encode() if isinstance(a, str) else a
        payload += f"${len(a)}\r\n".encode() + a + b"\r\n"
    s.sendall(payload)
    reply = s.recv(65536)
    s.close()
    return reply


def subscribers(port, n, channel, stop):
    """n connections subscribed to `channel`, drained by one thread."""
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(f"*2\r\n$9\r\nSUBSCRIBE\r\n${len(channel)}\r\n{channel}\r\n".encode())
        s.recv(4096)
        s.setblocking(False)
        socks.append(s)

    def drain():
        while not stop.is_set():
            ready, _, _ = select.select(socks, [], [], 0.1)
            for s in ready:
                try:
                    s.recv(1 << 20)
                except BlockingIOError:
                    pass
        for s in socks:
            s.close()

    t = threading.Thread(target=drain, daemon=True)
    t.start()
    return t


def measure(kind, case, args, server_extra=()):
    label, load, command, extra = case[:4]
    server_args = tuple(server_extra)
    if args.section == "floor" and kind == "tessera" and FLOOR_REPLY_BYTES.get(label) is not None:
        server_args = ("--reply-bytes", str(FLOOR_REPLY_BYTES[label]))
    data_dir = None
    if "--appendonly" in server_args or "--save" in server_args:
        data_dir = tempfile.mkdtemp(prefix=f"bench-{kind}-", dir=args.data_dir)
        server_args = server_args + ("--dir", data_dir)
    srv = Server(kind, args.server_core, args.threads, server_args)
    stop = threading.Event()
    drainer = None
    try:
        if load:
            n = case[4] if len(case) > 4 else int(re.search(r"sequence (\d+)", load).group(1))
            run_bench(srv.port, load, [], args.seconds, args.client_cores, load=True, count=n)
        for argv in SETUP.get(label, []):
            send_command(srv.port, argv)
        if label in SUBSCRIBERS:
            drainer = subscribers(srv.port, SUBSCRIBERS[label], "news", stop)
        user0, sys0 = cpu_split(srv.proc.pid)
        qps, cnt, avg, p99 = run_bench(srv.port, command, extra, args.seconds, args.client_cores)
        user1, sys1 = cpu_split(srv.proc.pid)
        per_req = 1e6 / cnt if cnt else 0.0
        # Kernel time is mostly the loopback TCP path, the same work for both
        # servers; user time is each server's own code.
        return qps, avg, p99, (user1 - user0 + sys1 - sys0) * per_req, (user1 - user0) * per_req
    finally:
        stop.set()
        if drainer:
            drainer.join(5)
        srv.stop()
        if data_dir:
            shutil.rmtree(data_dir, ignore_errors=True)


def latency_probe(port, stop, samples, core=None):
    """One request at a time on its own connection; records each latency (ms)."""
    if core is not None:
        os.sched_setaffinity(0, {int(core)})
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while not stop.is_set():
            t0 = time.perf_counter()
            s.sendall(b"*2\r\n$3\r\nGET\r\n$5\r\nprobe\r\n")
            buf = b""
            while not buf.endswith(b"\r\n"):
                buf += s.recv(64)
            samples.append((time.perf_counter() - t0) * 1000)
            time.sleep(0.0005)


def load_latency(kind, args, keys, command=None, load_args=None):
    """Sends `command` (default: SET of `keys` new keys) `keys` times while probing latency;
    returns (load qps, p99, p99.9, max) in ms."""
    import threading

    command = command or f"SET {{key sequence {keys}}} {{value 64}}"
    load_args = load_args or args.load_args.split()
    srv = Server(kind, args.server_core, args.threads)
    try:
        stop, samples = threading.Event(), []
        probe = threading.Thread(target=latency_probe, args=(srv.port, stop, samples, args.probe_core))
        probe.start()
        t0 = time.time()
        run_bench(srv.port, command, [], args.seconds, args.client_cores, load=True, count=keys,
                  load_args=load_args)
        elapsed = time.time() - t0
        stop.set()
        probe.join()
        samples.sort()
        pick = lambda q: samples[min(len(samples) - 1, int(q * len(samples)))]
        return keys / elapsed, pick(0.99), pick(0.999), samples[-1]
    finally:
        srv.stop()


def main_load(args):
    keys = args.keys
    results = {}
    for kind in ["redis", "tessera"]:
        results[kind] = load_latency(kind, args, keys)
        q, p99, p999, mx = results[kind]
        print(f"{kind:<8} load qps={q:.0f} probe p99={p99:.3f}ms p99.9={p999:.3f}ms max={mx:.3f}ms", flush=True)
    table = [
        f"Measured {time.strftime('%Y-%m-%d')} on a {os.cpu_count()}-core machine: {invocation()}. "
        f"Each server (pinned to core {args.server_core}) is loaded with `resp-benchmark --load {args.load_args} -n {keys} "
        f"\"SET {{key sequence {keys}}} {{value 64}}\"` (client on core(s) {args.client_cores}) while a probe on its own "
        f"connection (pinned to core {args.probe_core or args.client_cores}) sends one GET every 0.5 ms and records "
        "every latency." + (" On 2 cores the probe competes with the loader or the server for its core, so its tail "
        "includes that scheduling noise; both servers get the same treatment." if os.cpu_count() <= 2 else ""),
        "",
        "| server | keys loaded | load rate (keys/s) | probe p99 ms | probe p99.9 ms | probe max ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for kind in ["redis", "tessera"]:
        q, p99, p999, mx = results[kind]
        table.append(f"| {kind} | {keys} | {q:.0f} | {p99:.3f} | {p999:.3f} | {mx:.3f} |")
    write_section(args.output, args.doc_section or "load", "\n".join(table))
    print("\n".join(table))


# One key grown to --members members, through one pipelined connection.
GROW_CASES = [
    ("hash", "HSET big {key sequence %d} x"),
    ("set", "SADD big {key sequence %d}"),
    ("zset", "ZADD big {rand 1000} {key sequence %d}"),
]


def main_grow(args):
    """Latency of a probe while a single collection grows to --members members: a one-step
    resize of its table would show as a stall of the probe."""
    n = args.members
    rows = []
    for label, template in GROW_CASES:
        command = template % n
        for kind in ["redis", "tessera"]:
            q, p99, p999, mx = load_latency(kind, args, n, command, ["-c", "1", "-P", "16"])
            print(f"{label:<5} {kind:<8} rate={q:.0f}/s p99={p99:.3f} p99.9={p999:.3f} max={mx:.3f}", flush=True)
            rows.append((label, command, kind, q, p99, p999, mx))
    table = [
        f"Measured {time.strftime('%Y-%m-%d')} on a {os.cpu_count()}-core machine: {invocation()}. "
        f"Each server (pinned to core {args.server_core}) receives `resp-benchmark --load -c 1 -P 16 -n {n} "
        "\"<command>\"` (one key grown to that many members; client on core(s) "
        f"{args.client_cores}) while a probe on its own connection (pinned to core "
        f"{args.probe_core or args.client_cores}) sends one GET every 0.5 ms and records every latency.",
        "",
        "| type | command | server | members/s | probe p99 ms | probe p99.9 ms | probe max ms |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for label, command, kind, q, p99, p999, mx in rows:
        table.append(f"| {label} | `{command}` | {kind} | {q:.0f} | {p99:.3f} | {p999:.3f} | {mx:.3f} |")
    write_section(args.output, args.doc_section or "grow", "\n".join(table))
    print("\n".join(table))


def main_conns(args):
    """p99 of GET with and without `--idle` extra idle connections held open."""
    rows = []
    for kind in ["redis", "tessera"]:
        srv = Server(kind, args.server_core, args.threads, ["--maxclients", str(args.idle + 1000)])
        try:
            run_bench(srv.port, "SET {key sequence 100000} {value 64}", [], args.seconds,
                      args.client_cores, load=True, count=100000)
            cmd = "GET {key uniform 100000}"
            base = run_bench(srv.port, cmd, ["-c", "64"], args.seconds, args.client_cores)
            idle = []
            for _ in range(args.idle):
                s = socket.create_connection(("127.0.0.1", srv.port))
                idle.append(s)
            # Every idle connection must really be accepted and served.
            for s in idle[:: max(1, args.idle // 100)]:
                s.sendall(b"PING\r\n")
                assert s.recv(16).startswith(b"+PONG")
            loaded = run_bench(srv.port, cmd, ["-c", "64"], args.seconds, args.client_cores)
            for s in idle:
                s.close()
            rows.append((kind, base, loaded))
            print(kind, "baseline", base, "with idle", loaded, flush=True)
        finally:
            srv.stop()
    table = [
        f"Measured {time.strftime('%Y-%m-%d')}: {invocation()}. "
        f"`resp-benchmark -c 64 -s {args.seconds} \"GET {{key uniform 100000}}\"` alone, then again while "
        f"{args.idle} extra idle connections are held open (each checked to answer PING).",
        "",
        "| server | QPS alone | p99 ms alone | QPS with idle conns | p99 ms with idle conns |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for kind, base, loaded in rows:
        table.append(f"| {kind} | {base[0]} | {base[3]:.3f} | {loaded[0]} | {loaded[3]:.3f} |")
    write_section(args.output, "conns", "\n".join(table))
    print("\n".join(table))


# Multi-core rows: (label, load command or None, command, extra resp-benchmark args).
SCALING_CASES = [
    ("SET -c 256", None, "SET {key uniform 1000000} {value 64}", ["-c", "256"]),
    ("GET -c 256", "SET {key sequence 1000000} {value 64}", "GET {key uniform 1000000}", ["-c", "256"]),
    ("GET -c 256 -P 16", "SET {key sequence 1000000} {value 64}", "GET {key uniform 1000000}",
     ["-c", "256", "-P", "16"]),
]


def first_cores(n):
    return "0" if n == 1 else f"0-{n - 1}"


def main_scaling(args):
    """Throughput as the server is given more cores (needs a machine with many).

    Tessera runs `--threads N` pinned to cores 0..N-1; redis-server runs as
    released (one core) and with `io-threads N` on the same N cores, its own
    way of using more than one. The client stays on --client-cores throughout.
    """
    threads = [int(t) for t in args.scale_threads.split(",")]
    configs = [("redis-server", "redis", 1, [])]
    configs += [(f"redis-server io-threads {n}", "redis", n,
                 ["--io-threads", str(n), "--io-threads-do-reads", "yes"]) for n in threads if n > 1]
    configs += [(f"Tessera --threads {n}", "tessera", n, []) for n in threads]
    results = {}
    for case in SCALING_CASES:
        label, load, command, extra = case
        if args.only and args.only not in label:
            continue
        for name, kind, n, server_extra in configs:
            srv = Server(kind, first_cores(n), n, server_extra)
            try:
                if load:
                    count = int(re.search(r"sequence (\d+)", load).group(1))
                    run_bench(srv.port, load, [], args.seconds, args.client_cores, load=True, count=count)
                cpu0, t0 = cpu_seconds(srv.proc.pid), time.time()
                qps, _, avg, p99 = run_bench(srv.port, command, extra, args.seconds, args.client_cores)
                busy = (cpu_seconds(srv.proc.pid) - cpu0) / (time.time() - t0)
            finally:
                srv.stop()
            results[(label, name)] = (qps, avg, p99, busy, n)
            print(f"{label:<18} {name:<28} qps={qps:>9} avg={avg:.3f}ms p99={p99:.3f}ms cores busy={busy:.2f}",
                  flush=True)
    table = [
        f"Measured {time.strftime('%Y-%m-%d')} on a {os.cpu_count()}-core machine: {invocation()}. A server given N cores is pinned to cores "
        f"0..N-1 (Tessera `--threads N`; redis-server with `--io-threads N --io-threads-do-reads yes`, or as released "
        f"on one core); resp-benchmark 0.1.7 runs on cores {args.client_cores}. \"cores busy\" is the server's CPU "
        "time divided by wall time: when it is well below N the client, not the server, was the limit.",
        "",
        "| case | resp-benchmark command | server | cores | QPS | vs redis-server | avg / p99 ms | cores busy |",
        "| --- | --- | --- | ---: | ---: | ---: | --- | ---: |",
    ]
    for label, load, command, extra in SCALING_CASES:
        base = results.get((label, "redis-server"))
        for name, *_ in configs:
            if (label, name) not in results:
                continue
            qps, avg, p99, busy, n = results[(label, name)]
            cmdline = f"`resp-benchmark {' '.join(extra)} -s {args.seconds} \"{command}\"`"
            ratio = f"{qps / base[0]:.2f}x" if base and base[0] else "-"
            table.append(f"| {label} | {cmdline} | {name} | {n} | {qps} | {ratio} | {avg:.3f} / {p99:.3f} | {busy:.2f} |")
    write_section(args.output, args.doc_section or "scaling", "\n".join(table))
    print("\n".join(table))


# The whitepaper's data sets: (label, load command, element count at scale 1).
MEMORY_SETS = [
    ("1,000,000 strings, 64-byte values", "SET {key sequence 1000000} {value 64}", 1_000_000),
    ("1,000 hashes x 10,007 fields, 64-byte values", "HSET {key sequence 1000} {key sequence 10007} {value 64}", 10_007_000),
    ("1,000 sets x 10,007 members", "SADD {key sequence 1000} {key sequence 10007}", 10_007_000),
    ("1,000 zsets x 10,007 members", "ZADD {key sequence 1000} {rand 70000} {key sequence 10007}", 10_007_000),
    ("1,000 lists x 10,000 64-byte elements", "LPUSH {key sequence 1000} {value 64}", 10_000_000),
    ("1 stream x 1,000,000 entries, one 64-byte field", "XADD stream * f {value 64}", 1_000_000),
]


def main_durable(args):
    cases = [c for c in DURABLE_CASES if not args.only or args.only in c[0]]
    rows = []
    for case in cases:
        med = {}
        for mode, extra in DURABLE_MODES:
            results = {"redis": [], "tessera": []}
            for r in range(args.rounds):
                order = ["redis", "tessera"] if r % 2 == 0 else ["tessera", "redis"]
                for kind in order:
                    res = measure(kind, case, args, extra)
                    results[kind].append(res)
                    print(f"{case[0]:<8} {mode:<13} {kind:<8} qps={res[0]:>8} p99={res[2]:.3f}ms "
                          f"cpu/req={res[3]:.2f}us", flush=True)
            med[mode] = {k: [statistics.median(x[i] for x in v) for i in range(5)] for k, v in results.items()}
        rows.append((case, med))
    table = [
        f"Measured {time.strftime('%Y-%m-%d')} on this machine ({os.cpu_count()} cores): servers pinned to core {args.server_core} "
        f"(Tessera `--threads {args.threads}`), resp-benchmark 0.1.7 pinned to core(s) {args.client_cores}, "
        f"{args.seconds} s per run, median of {args.rounds} rounds alternating which server runs first; the data "
        f"directory is a fresh directory under {args.data_dir or tempfile.gettempdir()} for each run. "
        f"Produced by {invocation()}.",
        "",
        "| case | mode | redis QPS | Tessera QPS | Tessera / redis | redis vs its in-memory | Tessera vs its in-memory | redis p99 ms | Tessera p99 ms |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for (label, _load, command, extra, *_), med in rows:
        base_r, base_t = med["in memory"]["redis"][0], med["in memory"]["tessera"][0]
        for mode, _ in DURABLE_MODES:
            r, t = med[mode]["redis"], med[mode]["tessera"]
            table.append(
                f"| {label} (`{' '.join(extra)} \"{command}\"`) | {mode} | {r[0]:.0f} | {t[0]:.0f} | "
                f"{(t[0] / r[0] if r[0] else 0):.2f}x | {(r[0] / base_r if base_r else 0):.2f} | "
                f"{(t[0] / base_t if base_t else 0):.2f} | {r[2]:.3f} | {t[2]:.3f} |"
            )
    write_section(args.output, args.doc_section or "durable", "\n".join(table))
    print("\n".join(table))


def main_snapshot(args):
    """BGSAVE of --keys keys under concurrent writes (other clients' latency, extra memory), then
    loading the file at start-up, for both servers."""
    rows = []
    for kind in ["redis", "tessera"]:
        data_dir = tempfile.mkdtemp(prefix=f"bench-{kind}-", dir=args.data_dir)
        srv = Server(kind, args.server_core, args.threads, ("--save", "", "--dir", data_dir))
        try:
            run_bench(srv.port, "SET {key sequence %d} {value 64}" % args.keys, [], args.seconds,
                      args.client_cores, load=True, count=args.keys)
            stop = threading.Event()
            samples = []
            probe = threading.Thread(target=latency_probe, args=(srv.port, stop, samples, args.probe_core), daemon=True)
            probe.start()
            writer = subprocess.Popen(
                ["resp-benchmark", "-p", str(srv.port), "--cores", args.client_cores, "-s", str(args.seconds * 6),
                 "-c", "8", "SET {key uniform %d} {value 64}" % args.keys],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1)
            samples.clear()
            t0 = time.time()
            send_command(srv.port, ["BGSAVE"])
            while True:
                time.sleep(0.05)
                info = send_command(srv.port, ["INFO", "persistence"]).decode(errors="replace")
                if "rdb_bgsave_in_progress:0" in info:
                    break
            save_s = time.time() - t0
            stop.set()
            probe.join(10)
            writer.terminate()
            writer.wait()
            cow = re.search(r"rdb_last_cow_size:(\d+)", info)
            during = sorted(samples)
            p999 = during[int(len(during) * 0.999)] if during else 0.0
            worst = during[-1] if during else 0.0
        finally:
            srv.stop()
        size = os.path.getsize(os.path.join(data_dir, "dump.rdb"))
        t0 = time.time()
        srv = Server(kind, args.server_core, args.threads, ("--save", "", "--dir", data_dir))
        try:
            while b"loading:0" not in send_command(srv.port, ["INFO", "persistence"]):
                time.sleep(0.05)
            load_s = time.time() - t0
        finally:
            srv.stop()
            shutil.rmtree(data_dir, ignore_errors=True)
        rows.append((kind, save_s, p999, worst, int(cow.group(1)) if cow else 0, size, load_s))
        print(rows[-1], flush=True)
    table = [
        f"Measured {time.strftime('%Y-%m-%d')} on this machine ({os.cpu_count()} cores): {args.keys} keys of 64 bytes "
        f"(`resp-benchmark --load \"SET {{key sequence {args.keys}}} {{value 64}}\"`), then BGSAVE while 8 connections "
        f"keep writing (`SET {{key uniform {args.keys}}} {{value 64}}`) and a probe on its own connection sends a GET "
        f"every half millisecond (its latencies from BGSAVE to the save's end are the probe columns); then the server is restarted on the file and timed until INFO says loading:0. "
        f"Servers pinned to core {args.server_core} (Tessera `--threads {args.threads}`). Produced by {invocation()}.",
        "",
        "| server | BGSAVE s | probe p99.9 during the save (ms) | probe worst (ms) | extra memory reported (rdb_last_cow_size) | file bytes | start-up load s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for kind, save_s, p999, worst, cow, size, load_s in rows:
        table.append(f"| {kind} | {save_s:.2f} | {p999:.3f} | {worst:.3f} | {cow} | {size} | {load_s:.2f} |")
    write_section(args.output, args.doc_section or "snapshot", "\n".join(table))
    print("\n".join(table))


def info_memory(port):
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"INFO memory\r\n")
        data = b""
        while True:
            data += s.recv(65536)
            head, _, rest = data.partition(b"\r\n")
            if head.startswith(b"$") and len(rest) >= int(head[1:]):
                break
    fields = dict(l.split(":", 1) for l in rest.decode().split("\r\n") if ":" in l)
    return int(fields["used_memory"]), int(fields["used_memory_rss"])


def main_memory(args):
    rows = []
    for label, load, count in MEMORY_SETS:
        if args.only and args.only not in label:
            continue
        n = int(count * args.scale)
        res = {}
        for kind in ["redis", "tessera"]:
            srv = Server(kind, args.server_core, args.threads)
            try:
                run_bench(srv.port, load, [], args.seconds, args.client_cores, load=True, count=n)
                time.sleep(2)
                res[kind] = info_memory(srv.port)
            finally:
                srv.stop()
        print(label, res, flush=True)
        rows.append((label, load, n, res))
    table = [
        f"Measured {time.strftime('%Y-%m-%d')}: {invocation()}. "
        "Each data set is loaded into a fresh server with `resp-benchmark --load -c 64 -P 16 -n N \"<command>\"`; "
        "INFO memory is read 2 s later.",
        "",
        "| data set | load command | N | redis used / RSS MB | Tessera used / RSS MB | RSS ratio |",
        "| --- | --- | ---: | --- | --- | ---: |",
    ]
    mb = lambda b: b / 1048576
    for label, load, n, res in rows:
        r, t = res["redis"], res["tessera"]
        table.append(
            f"| {label} | `{load}` | {n} | {mb(r[0]):.1f} / {mb(r[1]):.1f} | {mb(t[0]):.1f} / {mb(t[1]):.1f} | {t[1] / r[1]:.2f}x |"
        )
    write_section(args.output, args.doc_section or "memory", "\n".join(table))
    print("\n".join(table))


def make_tls_certs(where):
    """A CA and a v3 server certificate for 127.0.0.1 (EC P-256), made with the openssl CLI."""
    def ossl(*a):
        subprocess.run(["openssl", *a], cwd=where, check=True, capture_output=True)
    ossl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key",
         "-out", "ca.crt", "-days", "30", "-subj", "/CN=bench-ca")
    ossl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "server.key",
         "-out", "server.csr", "-subj", "/CN=127.0.0.1")
    with open(os.path.join(where, "ext.cnf"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n")
    ossl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
         "-out", "server.crt", "-days", "30", "-extfile", "ext.cnf")
    return {k: os.path.join(where, f) for k, f in (("ca", "ca.crt"), ("cert", "server.crt"), ("key", "server.key"))}


def redis_benchmark(port, tests, extra, requests, client_core, tls=None):
    """redis-benchmark (it speaks TLS; resp-benchmark does not): {test: (rps, avg ms, p99 ms)}."""
    cmd = ["taskset", "-c", client_core, "redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-t", tests,
           "-n", str(requests), "-r", "100000", "--csv", *extra]
    if tls:
        cmd += ["--tls", "--cacert", tls["ca"]]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    rows = {}
    for line in out.stdout.splitlines():
        f = [x.strip('"') for x in line.split(",")]
        if len(f) >= 7 and f[0] in ("SET", "GET"):
            rows[f[0]] = (float(f[1]), float(f[2]), float(f[6]))
    if not rows:
        raise RuntimeError(f"no result from {' '.join(cmd)}:\n{out.stdout}\n{out.stderr}")
    return rows


def main_tls(args):
    """SET and GET, -c 64 and -c 64 -P 16, TLS off and on, both servers on one core."""
    where = tempfile.mkdtemp(prefix="bench-tls-")
    certs = make_tls_certs(where)
    client_core = args.client_cores.split(",")[0]
    shapes = [("-c 64", ["-c", "64"], 200_000), ("-c 64 -P 16", ["-c", "64", "-P", "16"], 2_000_000)]
    results = {}
    for shape, extra, n in shapes:
        for tls in (False, True):
            for r in range(args.rounds):
                for kind in (["redis", "tessera"] if r % 2 == 0 else ["tessera", "redis"]):
                    tls_port = free_port()
                    server_extra = ("--tls-port", str(tls_port), "--tls-cert-file", certs["cert"],
                                    "--tls-key-file", certs["key"], "--tls-ca-cert-file", certs["ca"],
                                    "--tls-auth-clients", "no") if tls else ()
                    srv = Server(kind, args.server_core, args.threads, server_extra)
                    try:
                        u0, s0 = cpu_split(srv.proc.pid)
                        rows = redis_benchmark(tls_port if tls else srv.port, "set,get", extra, n, client_core,
                                               certs if tls else None)
                        u1, s1 = cpu_split(srv.proc.pid)
                    finally:
                        srv.stop()
                    user_per_req = (u1 - u0) * 1e6 / (2 * n)
                    for test, v in rows.items():
                        results.setdefault((shape, test, tls, kind), []).append(v + (user_per_req,))
                        print(f"{shape:<12} {test} tls={'on ' if tls else 'off'} {kind:<8} rps={v[0]:>10.0f} "
                              f"p99={v[2]:.3f}ms user/req={user_per_req:.2f}us", flush=True)
    med = {k: [statistics.median(x[i] for x in v) for i in range(4)] for k, v in results.items()}
    table = [
        f"Measured {time.strftime('%Y-%m-%d')} on this machine ({os.cpu_count()} cores): servers pinned to core "
        f"{args.server_core} (Tessera `--threads {args.threads}`), redis-benchmark 7.0.15 (`-r 100000 -t set,get`, "
        f"200,000 requests per test without pipelining, 2,000,000 with) pinned to core {client_core}, median of "
        f"{args.rounds} rounds alternating which server runs first. TLS: TLS 1.3, an EC P-256 certificate, "
        f"`tls-auth-clients no`, the plain port beside it. User CPU per request is the server's user-space time "
        f"over the SET and GET runs together. Produced by {invocation()}.",
        "",
        "| test | shape | redis QPS off | redis QPS TLS | redis TLS cost | Tessera QPS off | Tessera QPS TLS | Tessera TLS cost | Tessera / redis with TLS | redis p99 TLS ms | Tessera p99 TLS ms | user us/req TLS redis / Tessera |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for shape, _, _ in shapes:
        for test in ("SET", "GET"):
            ro, rt = med[(shape, test, False, "redis")], med[(shape, test, True, "redis")]
            to, tt = med[(shape, test, False, "tessera")], med[(shape, test, True, "tessera")]
            table.append(
                f"| {test} | `{shape}` | {ro[0]:.0f} | {rt[0]:.0f} | {100 * (1 - rt[0] / ro[0]):.0f}% | {to[0]:.0f} | "
                f"{tt[0]:.0f} | {100 * (1 - tt[0] / to[0]):.0f}% | {tt[0] / rt[0]:.2f}x | {rt[2]:.3f} | {tt[2]:.3f} | "
                f"{rt[3]:.2f} / {tt[3]:.2f} |"
            )
    shutil.rmtree(where, ignore_errors=True)
    write_section(args.output, args.doc_section or "tls", "\n".join(table))
    print("\n".join(table))


def redis_benchmark_latency(port, test, conns, requests, client_core, tls=None):
    """redis-benchmark's full report: (rps, avg ms, p99 ms, p99.9 ms)."""
    cmd = ["taskset", "-c", client_core, "redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-t", test,
           "-n", str(requests), "-r", "100000", "-c", str(conns)]
    if tls:
        cmd += ["--tls", "--cacert", tls["ca"]]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900).stdout.replace("\r", "\n")
    rps = re.search(r"throughput summary: ([0-9.]+) requests per second", out)
    summary = re.search(r"avg\s+min\s+p50\s+p95\s+p99\s+max\s*\n\s*([0-9.]+)\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+\s+([0-9.]+)", out)
    if not rps or not summary:
        raise RuntimeError(f"no result from {' '.join(cmd)}:\n{out[-2000:]}")
    distribution = out.split("Latency by percentile distribution:")[-1].split("Cumulative distribution")[0]
    p999 = None
    for pct, ms in re.findall(r"([0-9.]+)% <= ([0-9.]+) milliseconds", distribution):
        if float(pct) >= 99.9:
            p999 = float(ms)
            break
    return float(rps.group(1)), float(summary.group(1)), float(summary.group(2)), p999 or float("nan")


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main_tls_conns(args):
    """The Huawei seeds' connection counts, TLS off and on: GET at 500, 1,000 and 4,000
    connections (QPS, avg, p99, p99.9), then --idle connections held open (each through its
    handshake and answering PING) with the memory each costs and GET -c 64 meanwhile."""
    import ssl
    where = tempfile.mkdtemp(prefix="bench-tls-conns-")
    certs = make_tls_certs(where)
    client_core = args.client_cores.split(",")[0]
    counts = (500, 1000, 4000)
    n = 200_000
    rows = {}
    held = {}
    for r in range(args.rounds):
        for kind in (["redis", "tessera"] if r % 2 == 0 else ["tessera", "redis"]):
            for tls in (False, True):
                tls_port = free_port()
                extra = ["--maxclients", str(args.idle + 5000)]
                if tls:
                    extra += ["--tls-port", str(tls_port), "--tls-cert-file", certs["cert"], "--tls-key-file",
                              certs["key"], "--tls-ca-cert-file", certs["ca"], "--tls-auth-clients", "no"]
                srv = Server(kind, args.server_core, args.threads, extra)
                port = tls_port if tls else srv.port
                try:
                    redis_benchmark(srv.port, "set", ["-c", "64", "-P", "16"], 200_000, client_core)
                    for c in counts:
                        v = redis_benchmark_latency(port, "get", c, n, client_core, certs if tls else None)
                        rows.setdefault((kind, tls, c), []).append(v)
                        print(f"{kind:<8} tls={'on ' if tls else 'off'} -c {c:<5} rps={v[0]:.0f} avg={v[1]:.3f} "
                              f"p99={v[2]:.3f} p99.9={v[3]:.3f}", flush=True)
                    # Idle connections, each through its handshake and checked to answer, on a
                    # fresh server (the runs above leave the allocator's high-water mark).
                    srv.stop()
                    srv = Server(kind, args.server_core, args.threads, extra)
                    port = tls_port if tls else srv.port
                    redis_benchmark(srv.port, "set", ["-c", "64", "-P", "16"], 200_000, client_core)
                    time.sleep(1)
                    before = rss_kb(srv.proc.pid)
                    ctx = ssl.create_default_context(cafile=certs["ca"])
                    ctx.check_hostname = False
                    idle = []
                    for i in range(args.idle):
                        sock = socket.create_connection(("127.0.0.1", port), timeout=30)
                        if tls:
                            sock = ctx.wrap_socket(sock)
                        idle.append(sock)
                        if i % 100 == 0:
                            sock.sendall(b"PING\r\n")
                            assert sock.recv(16).startswith(b"+PONG")
                    time.sleep(2)
                    after = rss_kb(srv.proc.pid)
                    v = redis_benchmark_latency(port, "get", 64, n, client_core, certs if tls else None)
                    for sock in idle:
                        sock.close()
                    per_conn = (after - before) * 1024 / args.idle
                    held.setdefault((kind, tls), []).append(v + (per_conn,))
                    print(f"{kind:<8} tls={'on ' if tls else 'off'} {args.idle} held: {per_conn:.0f} B/conn, "
                          f"-c 64 rps={v[0]:.0f} p99={v[2]:.3f} p99.9={v[3]:.3f}", flush=True)
                finally:
                    srv.stop()
    shutil.rmtree(where, ignore_errors=True)
    med = lambda v, i: statistics.median(x[i] for x in v)
    table = [
        f"Measured {time.strftime('%Y-%m-%d')} on this machine ({os.cpu_count()} cores): GET (`redis-benchmark -t get "
        f"-r 100000 -n {n} -c N`, TLS: `--tls`, TLS 1.3 with an EC P-256 certificate, `tls-auth-clients no`) after "
        f"200,000 SETs; servers pinned to core {args.server_core} (Tessera `--threads {args.threads}`), "
        f"redis-benchmark to core {client_core}; median of {args.rounds}. Produced by {invocation()}.",
        "",
        "| connections | TLS | redis QPS | Tessera QPS | Tessera / redis | redis avg / p99 / p99.9 ms | Tessera avg / p99 / p99.9 ms |",
        "| ---: | --- | ---: | ---: | ---: | --- | --- |",
    ]
    for c in counts:
        for tls in (False, True):
            rv, tv = rows[("redis", tls, c)], rows[("tessera", tls, c)]
            table.append(
                f"| {c:,} | {'on' if tls else 'off'} | {med(rv, 0):.0f} | {med(tv, 0):.0f} | {med(tv, 0) / med(rv, 0):.2f}x | "
                f"{med(rv, 1):.3f} / {med(rv, 2):.3f} / {med(rv, 3):.3f} | {med(tv, 1):.3f} / {med(tv, 2):.3f} / {med(tv, 3):.3f} |"
            )
    table += [
        "",
        f"{args.idle:,} connections held open (every one through its TLS handshake where TLS is on, one in a hundred "
        f"checked to answer PING) on a fresh server holding 200,000 keys: its resident memory growth per "
        f"connection, and GET `-c 64` meanwhile.",
        "",
        "| TLS | redis bytes / conn | Tessera bytes / conn | redis QPS / p99 / p99.9 ms | Tessera QPS / p99 / p99.9 ms |",
        "| --- | ---: | ---: | --- | --- |",
    ]
    for tls in (False, True):
        rv, tv = held[("redis", tls)], held[("tessera", tls)]
        table.append(
            f"| {'on' if tls else 'off'} | {med(rv, 4):.0f} | {med(tv, 4):.0f} | {med(rv, 0):.0f} / {med(rv, 2):.3f} / "
            f"{med(rv, 3):.3f} | {med(tv, 0):.0f} / {med(tv, 2):.3f} / {med(tv, 3):.3f} |"
        )
    write_section(args.output, args.doc_section or "tls conns", "\n".join(table))
    print("\n".join(table))


def main_acl(args):
    """SET and GET as the default user (no ACL check) and as a user with key patterns and categories."""
    client_core = args.client_cores.split(",")[0]
    shapes = [("-c 64", ["-c", "64"], 200_000), ("-c 64 -P 16", ["-c", "64", "-P", "16"], 2_000_000)]
    # The default user's rules are restricted rather than logging in as another user: redis-benchmark
    # with --user resends AUTH with its requests, which would be measured too.
    rules = ["resetkeys", "~key:*", "~counter:*", "-@all", "+@read", "+@write", "+@connection", "-@dangerous"]
    results = {}
    for shape, extra, n in shapes:
        for acl in (False, True):
            for r in range(args.rounds):
                for kind in (["redis", "tessera"] if r % 2 == 0 else ["tessera", "redis"]):
                    srv = Server(kind, args.server_core, args.threads, ())
                    try:
                        user = []
                        if acl:
                            subprocess.run(["redis-cli", "-p", str(srv.port), "ACL", "SETUSER", "default", *rules],
                                           check=True, capture_output=True)
                        u0, _ = cpu_split(srv.proc.pid)
                        rows = redis_benchmark(srv.port, "set,get", extra + user, n, client_core)
                        u1, _ = cpu_split(srv.proc.pid)
                    finally:
                        srv.stop()
                    user_per_req = (u1 - u0) * 1e6 / (2 * n)
                    for test, v in rows.items():
                        results.setdefault((shape, test, acl, kind), []).append(v + (user_per_req,))
                        print(f"{shape:<12} {test} acl={'on ' if acl else 'off'} {kind:<8} rps={v[0]:>10.0f} "
                              f"p99={v[2]:.3f}ms user/req={user_per_req:.2f}us", flush=True)
    med = {k: [statistics.median(x[i] for x in v) for i in range(4)] for k, v in results.items()}
    table = [
        f"Measured {time.strftime('%Y-%m-%d')} on this machine ({os.cpu_count()} cores): servers pinned to core "
        f"{args.server_core} (Tessera `--threads {args.threads}`), redis-benchmark 7.0.15 (`-r 100000 -t set,get`, "
        f"200,000 requests per test without pipelining, 2,000,000 with) pinned to core {client_core}, median of "
        f"{args.rounds} rounds alternating which server runs first. ACL off: the default user as it starts (all "
        f"commands, keys and channels: Tessera runs no check); ACL on: the same client after "
        f"`ACL SETUSER default {' '.join(rules)}`, so every SET and GET runs the whole check (command bit, key "
        f"against the patterns) and nothing else changes. "
        f"User CPU per request is the server's user-space time over the SET and GET runs together. "
        f"Produced by {invocation()}.",
        "",
        "| test | shape | redis QPS off | redis QPS ACL | redis ACL cost | Tessera QPS off | Tessera QPS ACL | Tessera ACL cost | user us/req off / ACL, redis | user us/req off / ACL, Tessera |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for shape, _, _ in shapes:
        for test in ("SET", "GET"):
            ro, ra = med[(shape, test, False, "redis")], med[(shape, test, True, "redis")]
            to, ta = med[(shape, test, False, "tessera")], med[(shape, test, True, "tessera")]
            table.append(
                f"| {test} | `{shape}` | {ro[0]:.0f} | {ra[0]:.0f} | {100 * (1 - ra[0] / ro[0]):.1f}% | {to[0]:.0f} | "
                f"{ta[0]:.0f} | {100 * (1 - ta[0] / to[0]):.1f}% | {ro[3]:.2f} / {ra[3]:.2f} | {to[3]:.2f} / {ta[3]:.2f} |"
            )
    write_section(args.output, args.doc_section or "acl", "\n".join(table))
    print("\n".join(table))

def info_fields(port, section):
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(f"INFO {section}\r\n".encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
            head, _, rest = data.partition(b"\r\n")
            if head.startswith(b"$") and len(rest) >= int(head[1:]):
                break
    return dict(l.split(":", 1) for l in rest.decode().split("\r\n") if ":" in l)


def wait_replica_synced(master, replica, timeout=600):
    """Seconds until the replica's link is up and its offset is the master's."""
    began = time.time()
    while time.time() - began < timeout:
        m, r = info_fields(master, "replication"), info_fields(replica, "replication")
        if r.get("master_link_status") == "up" and r.get("slave_repl_offset") == m.get("master_repl_offset"):
            return time.time() - began
        time.sleep(0.02)
    raise RuntimeError("replica did not sync")


def main_repl(args):
    """The master's cost of replication (SET with 0, 1, 2 replicas) and full sync times."""
    client_core = args.client_cores.split(",")[0]
    replica_core = args.client_cores.split(",")[-1]
    shapes = [("-c 64", ["-c", "64"], 200_000), ("-c 64 -P 16", ["-c", "64", "-P", "16"], 2_000_000)]
    results = {}
    for shape, extra, n in shapes:
        for replicas in (0, 1, 2):
            for r in range(args.rounds):
                for kind in (["redis", "tessera"] if r % 2 == 0 else ["tessera", "redis"]):
                    master = Server(kind, args.server_core, args.threads, ("--repl-diskless-sync-delay", "0"))
                    followers = []
                    try:
                        for _ in range(replicas):
                            followers.append(Server(kind, replica_core, args.threads,
                                                    ("--replicaof", "127.0.0.1", str(master.port))))
                        for f in followers:
                            wait_replica_synced(master.port, f.port)
                        lags = []
                        stop = threading.Event()

                        def sample():
                            while not stop.is_set():
                                m = info_fields(master.port, "replication")
                                off = int(m.get("master_repl_offset", 0))
                                for f in followers:
                                    lags.append(off - int(info_fields(f.port, "replication").get("slave_repl_offset", 0)))
                                time.sleep(0.2)

                        sampler = threading.Thread(target=sample, daemon=True)
                        sampler.start()
                        u0, _ = cpu_split(master.proc.pid)
                        rows = redis_benchmark(master.port, "set", extra, n, client_core)
                        u1, _ = cpu_split(master.proc.pid)
                        stop.set()
                        sampler.join(5)
                        for f in followers:
                            wait_replica_synced(master.port, f.port)
                    finally:
                        for f in followers:
                            f.stop()
                        master.stop()
                    v = rows["SET"] + ((u1 - u0) * 1e6 / n, max(lags) if lags else 0)
                    results.setdefault((shape, replicas, kind), []).append(v)
                    print(f"{shape:<12} replicas={replicas} {kind:<8} rps={v[0]:>10.0f} p99={v[2]:.3f}ms "
                          f"user/req={v[3]:.2f}us max-lag={v[4]}B", flush=True)
    med = {k: [statistics.median(x[i] for x in v) for i in range(5)] for k, v in results.items()}

    table = [
        f"Measured {time.strftime('%Y-%m-%d')} on this machine ({os.cpu_count()} cores): the master pinned to core "
        f"{args.server_core} (Tessera `--threads {args.threads}`), its replicas (the same server) to core {replica_core}, "
        f"redis-benchmark 7.0.15 (`-r 100000 -t set`, 200,000 requests without pipelining, 2,000,000 with) pinned to "
        f"core {client_core}, median of {args.rounds} rounds alternating which server runs first. Max lag: the largest "
        f"difference, sampled every 200 ms during the run, between the master's offset and a replica's (bytes). User "
        f"CPU per request is the master's. Produced by {invocation()}.",
        "",
        "| shape | replicas | redis QPS | redis vs 0 replicas | Tessera QPS | Tessera vs 0 replicas | Tessera / redis | redis / Tessera p99 ms | master user us/req redis / Tessera | max lag bytes redis / Tessera |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- |",
    ]
    for shape, _, _ in shapes:
        for replicas in (0, 1, 2):
            r, t = med[(shape, replicas, "redis")], med[(shape, replicas, "tessera")]
            r0, t0 = med[(shape, 0, "redis")], med[(shape, 0, "tessera")]
            table.append(
                f"| `{shape}` | {replicas} | {r[0]:.0f} | {r[0] / r0[0]:.2f} | {t[0]:.0f} | {t[0] / t0[0]:.2f} | "
                f"{t[0] / r[0]:.2f}x | {r[2]:.3f} / {t[2]:.3f} | {r[3]:.2f} / {t[3]:.2f} | {r[4]:.0f} / {t[4]:.0f} |"
            )
    write_section(args.output, args.doc_section or "replication", "\n".join(table))
    print("\n".join(table))



def main_full_sync(args):
    """Full synchronization of --keys keys, disk-based and diskless, both servers."""
    replica_core = args.client_cores.split(",")[-1]
    # Full sync of --keys keys (disk and diskless): from REPLICAOF to an up-to-date replica.
    sync_rows = []
    for diskless in ("no", "yes"):
        for kind in ("redis", "tessera"):
            times = []
            for r in range(args.rounds):
                data_dir = tempfile.mkdtemp(prefix=f"bench-repl-{kind}-", dir=args.data_dir)
                master = Server(kind, args.server_core, args.threads,
                                ("--repl-diskless-sync", diskless, "--repl-diskless-sync-delay", "0", "--enable-debug-command", "yes",
                                 "--dir", data_dir))
                replica = None
                try:
                    send_command(master.port, ["DEBUG", "POPULATE", str(args.keys), "key", "64"])
                    replica = Server(kind, replica_core, args.threads, ("--dir", data_dir,
                                                                         "--dbfilename", "replica.rdb"))
                    began = time.time()
                    send_command(replica.port, ["REPLICAOF", "127.0.0.1", str(master.port)])
                    wait_replica_synced(master.port, replica.port)
                    times.append(time.time() - began)
                finally:
                    if replica:
                        replica.stop()
                    master.stop()
                    shutil.rmtree(data_dir, ignore_errors=True)
                print(f"full sync {args.keys} keys diskless={diskless} {kind:<8} {times[-1]:.2f}s", flush=True)
            sync_rows.append((diskless, kind, statistics.median(times)))

    table = [
        f"Measured {time.strftime('%Y-%m-%d')} on this machine ({os.cpu_count()} cores): full synchronization of "
        f"{args.keys:,} keys (`DEBUG POPULATE {args.keys} key 64`), seconds from REPLICAOF to a replica whose offset "
        f"is the master's; the master on core {args.server_core}, the replica (the same server) on core "
        f"{replica_core}, Tessera `--threads {args.threads}`; median of {args.rounds}. Produced by {invocation()}.",
        "",
        "| transfer | redis s | Tessera s | redis / Tessera |",
        "| --- | ---: | ---: | ---: |",
    ]
    for diskless in ("no", "yes"):
        rs = [x for d, k, x in sync_rows if d == diskless and k == "redis"][0]
        ts = [x for d, k, x in sync_rows if d == diskless and k == "tessera"][0]
        table.append(f"| {'diskless (sockets)' if diskless == 'yes' else 'disk'} | {rs:.2f} | {ts:.2f} | {rs / ts:.2f}x |")
    write_section(args.output, args.doc_section or "full sync", "\n".join(table))
    print("\n".join(table))


class Resp:
    """A minimal RESP2 client for the sections that keep a connection (the failover writers)."""

    def __init__(self, port, timeout=5.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""

    def close(self):
        self.sock.close()

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\r\n")
        return line

    def _reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind in (b"+", b"-"):
            return (kind == b"-", rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise ConnectionError("closed")
                self.buf += chunk
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        raise ConnectionError(f"bad reply {line!r}")

    def call(self, *argv):
        payload = f"*{len(argv)}\r\n".encode()
        for a in argv:
            a = a.encode() if isinstance(a, str) else a
            payload += f"${len(a)}\r\n".encode() + a + b"\r\n"
        self.sock.sendall(payload)
        return self._reply()


def try_call(port, *argv, timeout=1.0):
    try:
        c = Resp(port, timeout)
        try:
            return c.call(*argv)
        finally:
            c.close()
    except OSError:
        return None


def main_failover(args):
    """Failover under three real redis-sentinel: seconds from SIGKILL of the master (under
    write load) to the first write accepted on the promoted replica, and how many
    acknowledged writes the new master lacks (those acknowledged by WAIT, and plain ones)."""
    sentinel_bin = shutil.which("redis-sentinel")
    if not sentinel_bin:
        raise RuntimeError("redis-sentinel is needed (apt-get install redis-sentinel)")
    configs = [("redis", ()), ("tessera", ()), ("tessera semi-sync", ("--repl-semi-sync-replicas", "1"))]
    runs = args.rounds
    results = {}
    for r in range(runs):
        for label, extra in (configs if r % 2 == 0 else list(reversed(configs))):
            kind = label.split()[0]
            work = tempfile.mkdtemp(prefix="bench-failover-", dir=args.data_dir)
            procs, sentinels = [], []
            try:
                base = ("--repl-diskless-sync-delay", "0") + extra
                master = Server(kind, args.server_core, args.threads, base)
                replicas = [Server(kind, args.server_core, args.threads,
                                   base + ("--replicaof", "127.0.0.1", str(master.port))) for _ in range(2)]
                procs += [master] + replicas
                for f in replicas:
                    wait_replica_synced(master.port, f.port)
                for i in range(3):
                    port = free_port()
                    d = os.path.join(work, f"sentinel-{i}")
                    os.makedirs(d)
                    conf = os.path.join(d, "sentinel.conf")
                    with open(conf, "w") as f:
                        f.write(f"port {port}\nbind 127.0.0.1\ndir {d}\n"
                                f"sentinel monitor mymaster 127.0.0.1 {master.port} 2\n"
                                "sentinel down-after-milliseconds mymaster 1000\n"
                                "sentinel failover-timeout mymaster 10000\n")
                    p = subprocess.Popen(["taskset", "-c", args.client_cores, sentinel_bin, conf],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    sentinels.append((port, p))
                    wait_ready(port)

                def known(port):
                    reps = try_call(port, "SENTINEL", "REPLICAS", "mymaster") or []
                    sens = try_call(port, "SENTINEL", "SENTINELS", "mymaster") or []
                    return isinstance(reps, list) and isinstance(sens, list) and len(reps) == 2 and len(sens) == 2

                deadline = time.time() + 60
                while not all(known(p) for p, _ in sentinels):
                    if time.time() > deadline:
                        raise RuntimeError("the sentinels did not discover the set")
                    time.sleep(0.2)

                acked = {"wait": [], "plain": []}
                stop = threading.Event()

                def writer(name, wait):
                    c = Resp(master.port, 5.0)
                    i = 0
                    try:
                        while not stop.is_set():
                            key = f"{name}:{i}"
                            i += 1
                            if c.call("SET", key, "v") != (False, "OK"):
                                return
                            if wait:
                                n = c.call("WAIT", "2", "1000")
                                if isinstance(n, int) and n >= 2:
                                    acked[name].append(key)
                            else:
                                acked[name].append(key)
                    except (OSError, ConnectionError):
                        return

                writers = [threading.Thread(target=writer, args=(n, n == "wait"), daemon=True) for n in acked]
                for w in writers:
                    w.start()
                time.sleep(1.5)
                killed = time.time()
                master.proc.kill()
                master.proc.wait()
                for w in writers:
                    w.join(10)
                stop.set()

                def agreed():
                    addrs = []
                    for p, _ in sentinels:
                        a = try_call(p, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster")
                        addrs.append(int(a[1]) if isinstance(a, list) and len(a) == 2 else None)
                    if addrs[0] not in (None, master.port) and all(a == addrs[0] for a in addrs):
                        return addrs[0]
                    return None

                new_port, first_write = None, None
                deadline = time.time() + 60
                while first_write is None and time.time() < deadline:
                    new_port = new_port or agreed()
                    if new_port and try_call(new_port, "SET", "after", "1") == (False, "OK"):
                        first_write = time.time() - killed
                    else:
                        time.sleep(0.02)
                if first_write is None:
                    raise RuntimeError(f"{label}: no promotion within 60 s")
                c = Resp(new_port, 10.0)
                lost = {name: sum(1 for k in keys if c.call("EXISTS", k) != 1) for name, keys in acked.items()}
                c.close()
            finally:
                for p in procs:
                    if p.proc.poll() is None:
                        p.stop()
                for _, p in sentinels:
                    p.kill()
                    p.wait()
                shutil.rmtree(work, ignore_errors=True)
            row = (first_write, lost["wait"], len(acked["wait"]), lost["plain"], len(acked["plain"]))
            results.setdefault(label, []).append(row)
            print(f"failover {label:<18} first write {row[0]:.2f}s, lost WAIT-acked {row[1]}/{row[2]}, "
                  f"lost plain-acked {row[3]}/{row[4]}", flush=True)
    table = [
        f"Measured {time.strftime('%Y-%m-%d')} on this machine ({os.cpu_count()} cores): a master and two replicas "
        f"(the same server, one core: {args.server_core}) under three redis-sentinel 7.0.15 (quorum 2, "
        f"`down-after-milliseconds 1000`), two writers on the master for 1.5 s (one SET + `WAIT 2 1000` after each "
        f"write, one plain SETs), then SIGKILL of the master. Time: from the kill to the first SET the promoted "
        f"replica accepts. Lost: acknowledged writes the new master lacks. {runs} runs of each. Produced by "
        f"{invocation()}.",
        "",
        "| server | first write after kill, median s | min / max s | WAIT-acked writes lost (all runs) | plain-acked writes lost (all runs) |",
        "| --- | ---: | --- | --- | --- |",
    ]
    for label, _ in configs:
        rows = results[label]
        times = [x[0] for x in rows]
        name = {"redis": "redis-server", "tessera": "Tessera", "tessera semi-sync": "Tessera, `repl-semi-sync-replicas 1`"}[label]
        table.append(
            f"| {name} | {statistics.median(times):.2f} | {min(times):.2f} / {max(times):.2f} | "
            f"{sum(x[1] for x in rows)} of {sum(x[2] for x in rows)} | {sum(x[3] for x in rows)} of {sum(x[4] for x in rows)} |"
        )
    write_section(args.output, args.doc_section or "failover", "\n".join(table))
    print("\n".join(table))


def main_read_scaling(args):
    """GET throughput against the master alone, then against the master and its two
    replicas at once (one redis-benchmark per node, the rates summed)."""
    cores = args.client_cores
    n = 400_000
    results = {}
    for r in range(args.rounds):
        for kind in (["redis", "tessera"] if r % 2 == 0 else ["tessera", "redis"]):
            master = Server(kind, args.server_core, args.threads, ("--repl-diskless-sync-delay", "0"))
            replicas = []
            try:
                redis_benchmark(master.port, "set", ["-c", "64", "-P", "16"], 400_000, cores)
                for _ in range(2):
                    replicas.append(Server(kind, args.server_core, args.threads,
                                           ("--replicaof", "127.0.0.1", str(master.port))))
                for f in replicas:
                    wait_replica_synced(master.port, f.port)
                alone = redis_benchmark(master.port, "get", ["-c", "50"], n, cores)["GET"][0]
                out = {}

                def one(port):
                    out[port] = redis_benchmark(port, "get", ["-c", "50"], n, cores)["GET"][0]

                threads = [threading.Thread(target=one, args=(s.port,)) for s in [master] + replicas]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                together = sum(out.values())
            finally:
                for f in replicas:
                    f.stop()
                master.stop()
            results.setdefault(kind, []).append((alone, together))
            print(f"read scaling {kind:<8} master alone {alone:.0f} GET/s, master + 2 replicas {together:.0f} GET/s", flush=True)
    med = {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)) for k, v in results.items()}
    table = [
        f"Measured {time.strftime('%Y-%m-%d')} on this machine ({os.cpu_count()} cores): GET (`redis-benchmark -t get "
        f"-c 50 -r 100000 -n {n}`) against the master alone, then against the master and its two replicas at once "
        f"(one redis-benchmark per node, rates summed); servers on core(s) {args.server_core}, load generators on "
        f"{cores} (Tessera `--threads {args.threads}`). Median of {args.rounds} rounds. Where every server and client "
        f"shares the same few cores, the sum shows the cost of spreading reads rather than a gain: the gain needs a "
        f"core (or machine) per node. Produced by {invocation()}.",
        "",
        "| server | master alone GET/s | master + 2 replicas GET/s | ratio |",
        "| --- | ---: | ---: | ---: |",
    ]
    for kind in ("redis", "tessera"):
        a, t = med[kind]
        table.append(f"| {'redis-server' if kind == 'redis' else 'Tessera'} | {a:.0f} | {t:.0f} | {t / a:.2f}x |")
    write_section(args.output, args.doc_section or "read scaling", "\n".join(table))
    print("\n".join(table))


def main_repl_apply(args):
    """How fast a replica applies a stream it has fallen behind on: the replica is stopped
    (SIGSTOP) while the master takes --keys pipelined SETs, then resumed; seconds until its
    offset is the master's. Tessera replicas with 1 and with --threads apply threads."""
    all_cores = ",".join(str(c) for c in range(os.cpu_count()))
    n = args.keys
    configs = [("redis", 1), ("tessera", 1), ("tessera", args.threads)]
    results = {}
    for r in range(args.rounds):
        for kind, threads in (configs if r % 2 == 0 else list(reversed(configs))):
            master = Server(kind, args.server_core, 1, ("--repl-diskless-sync-delay", "0",
                                                        "--repl-backlog-size", "1gb",
                                                        "--client-output-buffer-limit", "replica 0 0 0"))
            replica = None
            try:
                replica = Server(kind, all_cores, threads, ("--replicaof", "127.0.0.1", str(master.port)))
                wait_replica_synced(master.port, replica.port)
                replica.proc.send_signal(signal.SIGSTOP)
                before = int(info_fields(master.port, "replication")["master_repl_offset"])
                redis_benchmark(master.port, "set", ["-c", "50", "-P", "16", "-r", "1000000"], n, args.client_cores)
                after = int(info_fields(master.port, "replication")["master_repl_offset"])
                u0, _ = cpu_split(replica.proc.pid)
                replica.proc.send_signal(signal.SIGCONT)
                secs = wait_replica_synced(master.port, replica.port)
                u1, _ = cpu_split(replica.proc.pid)
            finally:
                if replica:
                    replica.proc.send_signal(signal.SIGCONT)
                    replica.stop()
                master.stop()
            v = (n / secs, (after - before) / secs / 1e6, (u1 - u0) * 1e6 / n)
            results.setdefault((kind, threads), []).append(v)
            print(f"apply {kind:<8} threads={threads} {v[0]:>10.0f} cmd/s {v[1]:.1f} MB/s user/cmd={v[2]:.2f}us", flush=True)
    med = {k: [statistics.median(x[i] for x in v) for i in range(3)] for k, v in results.items()}
    base = med[("redis", 1)][0]
    table = [
        f"Measured {time.strftime('%Y-%m-%d')} on this machine ({os.cpu_count()} cores): the master (same server, one "
        f"thread) pinned to core {args.server_core} takes {n:,} SETs (`redis-benchmark -t set -c 50 -P 16 -r 1000000`) "
        f"while its replica is stopped with SIGSTOP; the replica (may use every core) is then resumed and timed until "
        f"its offset is the master's. The master is idle meanwhile except for sending. Median of {args.rounds} rounds. "
        f"Produced by {invocation()}.",
        "",
        "| replica | apply threads | commands/s | stream MB/s | replica user us/command | vs redis-server |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for kind, threads in configs:
        v = med[(kind, threads)]
        name = "redis-server" if kind == "redis" else "Tessera"
        table.append(f"| {name} | {threads} | {v[0]:.0f} | {v[1]:.1f} | {v[2]:.2f} | {v[0] / base:.2f}x |")
    write_section(args.output, args.doc_section or "replica apply rate", "\n".join(table))
    print("\n".join(table))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--server-core", default="0")
    ap.add_argument("--client-cores", default="1")
    ap.add_argument("--threads", type=int, default=1, help="Tessera worker threads")
    ap.add_argument("--section", default="core")
    ap.add_argument("--data-dir", default=None, help="--section durable/snapshot: where data directories go")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--keys", type=int, default=10_000_000, help="keys for --section load")
    ap.add_argument("--load-args", default="-c 64 -P 16",
                    help="--section load: the loader's resp-benchmark arguments (fewer connections leave the "
                         "server headroom, so the probe measures pauses rather than queueing)")
    ap.add_argument("--members", type=int, default=3_000_000, help="--section grow: members of the one key")
    ap.add_argument("--probe-core", default=None, help="pin the --section load probe to this core")
    ap.add_argument("--only", default=None, help="only the cases (or --section memory data sets) whose label contains this")
    ap.add_argument("--scale", type=float, default=1.0, help="data-set size factor for --section memory")
    ap.add_argument("--doc-section", default=None,
                    help="write the table into this docs section instead of the one named by --section")
    ap.add_argument("--scale-threads", default="1,2,4,8", help="--section scaling: server core counts")
    ap.add_argument("--idle", type=int, default=10_000, help="idle connections for --section conns")
    ap.add_argument("--command", default="PING", help="--section custom: the command to measure")
    ap.add_argument("--load", default=None, help="--section custom: load command run first")
    ap.add_argument("--load-count", type=int, default=None,
                    help="--section custom: requests the load sends (default: N of its first {key sequence N})")
    ap.add_argument("--bench-args", default="-c 64", help="--section custom: resp-benchmark arguments")
    ap.add_argument("--output", default=os.path.join(ROOT, "docs", "benchmarks.md"))
    args = ap.parse_args()

    if args.section == "floor":
        # The no-op server takes Tessera's place (see FLOOR_REPLY_BYTES).
        subprocess.run(["cargo", "build", "--release", "--target-dir", os.path.join(ROOT, "target", "noop")],
                       cwd=NOOP_DIR, check=True)
        os.environ["TESSERA_BIN"] = NOOP_BIN
    elif not args.no_build:
        subprocess.run(["cargo", "build", "--release", "--bin", "tessera-server"], cwd=ROOT, check=True)
    if args.section == "load":
        return main_load(args)
    if args.section == "conns":
        return main_conns(args)
    if args.section == "grow":
        return main_grow(args)
    if args.section == "memory":
        return main_memory(args)
    if args.section == "scaling":
        return main_scaling(args)
    if args.section == "durable":
        return main_durable(args)
    if args.section == "snapshot":
        return main_snapshot(args)
    if args.section == "tls":
        return main_tls(args)
    if args.section == "acl":
        return main_acl(args)
    if args.section == "tls-conns":
        return main_tls_conns(args)
    if args.section == "repl":
        return main_repl(args)
    if args.section == "repl-apply":
        return main_repl_apply(args)
    if args.section == "full-sync":
        return main_full_sync(args)
    if args.section == "failover":
        return main_failover(args)
    if args.section == "read-scaling":
        return main_read_scaling(args)
    if args.section == "custom":
        # One ad-hoc case, for looking into a row: --command, optional --load, --bench-args.
        custom = [("custom", args.load, args.command, args.bench_args.split())]
        if args.load:
            seq = re.search(r"sequence (\d+)", args.load)
            if args.load_count is None and seq is None:
                sys.exit("--section custom: give --load-count for a --load without {key sequence N}")
            custom[0] += (args.load_count or int(seq.group(1)),)
    cases = {
        "custom": custom if args.section == "custom" else [],
        "core": CORE_CASES,
        "collections": COLLECTION_CASES,
        "scripting": SCRIPTING_CASES,
        "types": TYPE_CASES,
        "floor": FLOOR_CASES,
    }[args.section]
    if args.only:
        cases = [c for c in cases if args.only in c[0]]

    rows = []
    for case in cases:
        results = {"redis": [], "tessera": []}
        for r in range(args.rounds):
            order = ["redis", "tessera"] if r % 2 == 0 else ["tessera", "redis"]
            for kind in order:
                res = measure(kind, case, args)
                results[kind].append(res)
                print(f"{case[0]:<22} {kind:<8} qps={res[0]:>8} avg={res[1]:.3f}ms p99={res[2]:.3f}ms "
                      f"cpu/req={res[3]:.2f}us (user {res[4]:.2f}us)", flush=True)
        med = {k: [statistics.median(x[i] for x in v) for i in range(5)] for k, v in results.items()}
        rows.append((case, med))

    other = "no-op server" if args.section == "floor" else "Tessera"
    table = [
        f"Measured {time.strftime('%Y-%m-%d')} on this machine ({os.cpu_count()} cores): servers pinned to core {args.server_core} "
        f"({other} `--threads {args.threads}`), resp-benchmark 0.1.7 pinned to core(s) {args.client_cores}, "
        f"{args.seconds} s per run, median of {args.rounds} rounds alternating which server runs first. "
        f"Produced by {invocation()}.",
        "",
        f"| case | resp-benchmark command | redis QPS | {other} QPS | QPS ratio | redis avg / p99 ms | {other} avg / p99 ms | redis CPU µs/req (user) | {other} CPU µs/req (user) | per-core capacity ratio |",
        "| --- | --- | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: |",
    ]
    for (label, load, command, extra, *_), med in rows:
        r, t = med["redis"], med["tessera"]
        cmdline = f"`resp-benchmark {' '.join(extra)} -s {args.seconds} \"{command}\"`"
        if load:
            cmdline += f" after `--load \"{load}\"`"
        ratio = t[0] / r[0] if r[0] else 0
        # Requests one server core can serve, from its CPU time per request:
        # independent of whether the single client core kept it busy.
        capacity = r[3] / t[3] if t[3] else 0
        table.append(
            f"| {label} | {cmdline} | {r[0]:.0f} | {t[0]:.0f} | {ratio:.2f}x | {r[1]:.3f} / {r[2]:.3f} | {t[1]:.3f} / {t[2]:.3f} | {r[3]:.2f} ({r[4]:.2f}) | {t[3]:.2f} ({t[4]:.2f}) | {capacity:.2f}x |"
        )
    if args.section != "custom" or args.doc_section:
        write_section(args.output, args.doc_section or args.section, "\n".join(table))
    print("\n".join(table))


def write_section(path, section, body):
    begin, end = f"<!-- BEGIN {section} -->", f"<!-- END {section} -->"
    text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
    block = f"{begin}\n{body}\n{end}"
    if begin in text and end in text:
        text = text[: text.index(begin)] + block + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    with open(path, "w") as f:
        f.write(text)


if __name__ == "__main__":
    sys.exit(main())
