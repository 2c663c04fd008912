#!/usr/bin/env python3
"""Runs the libFuzzer targets in fuzz/ from seeds made by real redis-server.

    python3 scripts/fuzz.py                      # every target, 300 s each
    python3 scripts/fuzz.py --seconds 3600 rdb_value

Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`; this
script installs it when it is missing) and redis-server for the seeds.

Seeds: every type and encoding redis-server 7.0 writes, as DUMP payloads (a
`rdb_value` input is a payload without its 10-byte footer: the type byte,
then the body) and as whole RDB files (SAVE with and without compression);
append-only files for `aof_reader`; pipelines of requests for
`request_parser`. Starting from them, libFuzzer reaches the decoders' deep
paths at once instead of first guessing an RDB header.

The targets are built without AddressSanitizer (`-s none`): the server's
allocator, jemalloc, replaces malloc, which ASan's start-up cannot survive,
and Tessera's decoders are safe Rust, so what the campaign looks for is
panics, hangs (`-timeout`) and runaway allocation (`-rss_limit_mb`,
`-malloc_limit_mb`). A crash leaves its input in fuzz/artifacts/<target>/;
rerun it with `cargo +nightly fuzz run -s none <target> <file>`.
"""

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FUZZ = os.path.join(ROOT, "fuzz")
TARGETS = ["rdb_value", "aof_reader", "request_parser"]


def encode(argv):
    out = [b"*%d\r\n" % len(argv)]
    for a in argv:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Client:
    """A minimal RESP2 client: enough for the seeds' commands."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.buf = b""

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def _reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind in (b"+", b":"):
            return rest
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        raise RuntimeError("unexpected reply %r" % line)

    def call(self, *argv):
        self.sock.sendall(encode(argv))
        return self._reply()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def populate(c):
    """Every type in each encoding redis-server 7.0 saves it with."""
    c.call("SET", "str", "hello")
    c.call("SET", "int", "12345")
    c.call("SET", "big", "x" * 5000)
    c.call("SET", "ttl", "v", "PX", "100000000")
    c.call("RPUSH", "list:small", "a", "1", "bb", "-7")
    c.call("RPUSH", "list:big", *["e%d" % i for i in range(300)])
    c.call("RPUSH", "list:plain", "y" * 9000)
    c.call("SADD", "set:int", "1", "2", "300", "-70000", "5000000000")
    c.call("SADD", "set:str", "a", "b", "c")
    c.call("SADD", "set:big", *["m%d" % i for i in range(600)])
    c.call("ZADD", "zset:small", "1", "a", "2.5", "b", "-3", "c")
    c.call("ZADD", "zset:big", *[x for i in range(200) for x in (str(i / 7), "z%d" % i)])
    c.call("HSET", "hash:small", "f1", "v1", "f2", "22")
    c.call("HSET", "hash:big", *[x for i in range(600) for x in ("f%d" % i, "v%d" % i)])
    for i in range(250):
        c.call("XADD", "stream", "%d-1" % (i + 1), "f", "v%d" % i, "g", str(i))
    c.call("XGROUP", "CREATE", "stream", "grp", "0")
    c.call("XREADGROUP", "GROUP", "grp", "alice", "COUNT", "5", "STREAMS", "stream", ">")
    c.call("XGROUP", "CREATECONSUMER", "stream", "grp", "bob")
    c.call("XDEL", "stream", "3-1")
    c.call("PFADD", "hll", *["h%d" % i for i in range(50)])
    c.call("FUNCTION", "LOAD", "#!lua name=seedlib\nredis.register_function('seed', function() return 1 end)")


def make_seeds(corpus_root):
    if shutil.which("redis-server") is None:
        sys.exit("redis-server is needed for the seeds (apt-get install redis-server)")
    work = tempfile.mkdtemp(prefix="tessera-fuzz-seeds-")
    port = free_port()
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--dir", work, "--save", "",
         "--appendonly", "yes", "--aof-use-rdb-preamble", "no", "--appendfsync", "always"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 20
        while True:
            try:
                c = Client(port)
                c.call("PING")
                break
            except (OSError, RuntimeError):
                if time.time() > deadline:
                    raise
                time.sleep(0.05)
        populate(c)
        seeds = {t: {} for t in TARGETS}
        for key in c.call("KEYS", "*"):
            payload = c.call("DUMP", key)
            seeds["rdb_value"][b"dump-" + key.replace(b":", b"-")] = payload[:-10]
        for compression in ("yes", "no"):
            c.call("CONFIG", "SET", "rdbcompression", compression)
            c.call("SAVE")
            with open(os.path.join(work, "dump.rdb"), "rb") as f:
                seeds["rdb_value"][b"file-compression-" + compression.encode()] = f.read()
        aof_dir = os.path.join(work, "appendonlydir")
        for name in os.listdir(aof_dir):
            if name.endswith(".aof"):
                with open(os.path.join(aof_dir, name), "rb") as f:
                    seeds["aof_reader"][name.encode()] = f.read()
        c.call("MULTI")
        c.call("SET", "a", "1")
        c.call("INCR", "a")
        c.call("EXEC")
        seeds["aof_reader"][b"transaction"] = (
            encode(["MULTI"]) + encode(["SET", "a", "1"]) + encode(["EXEC"]))
        # request_parser: byte 0 = auth and limits, byte 1 = where the input is split.
        requests = [
            encode(["PING"]),
            encode(["SET", "k", "v"]) + encode(["GET", "k"]) * 3,
            b"PING\r\nSET k v\r\n",
            b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPI",
            b"\r\n\r\n*0\r\n",
        ]
        for i, r in enumerate(requests):
            for flags in (0, 1, 2 | (16 << 2)):
                seeds["request_parser"][b"req-%d-%d" % (i, flags)] = bytes([flags, 128]) + r
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)
    for target, files in seeds.items():
        where = os.path.join(corpus_root, target)
        os.makedirs(where, exist_ok=True)
        for name, data in files.items():
            with open(os.path.join(where, "seed-" + name.decode()), "wb") as f:
                f.write(data)
        print("%s: %d seeds" % (target, len(files)))


def ensure_cargo_fuzz():
    have = subprocess.run(["cargo", "+nightly", "fuzz", "--version"],
                          capture_output=True, cwd=FUZZ)
    if have.returncode != 0:
        subprocess.run(["cargo", "install", "cargo-fuzz"], check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("targets", nargs="*", default=TARGETS, help=" ".join(TARGETS))
    ap.add_argument("--seconds", type=int, default=300, help="per target")
    ap.add_argument("--jobs", type=int, default=1, help="libFuzzer processes per target")
    args = ap.parse_args()
    unknown = [t for t in args.targets if t not in TARGETS]
    if unknown:
        ap.error("unknown targets: %s" % ", ".join(unknown))
    ensure_cargo_fuzz()
    corpus_root = os.path.join(FUZZ, "corpus")
    make_seeds(corpus_root)
    failed = []
    for target in args.targets:
        print("== %s for %d s" % (target, args.seconds), flush=True)
        cmd = ["cargo", "+nightly", "fuzz", "run", "-O", "-s", "none", target, "--",
               "-max_total_time=%d" % args.seconds, "-timeout=10",
               "-rss_limit_mb=2048", "-malloc_limit_mb=1024", "-print_final_stats=1"]
        if args.jobs > 1:
            cmd += ["-jobs=%d" % args.jobs, "-workers=%d" % args.jobs]
        rc = subprocess.run(cmd, cwd=FUZZ).returncode
        if rc != 0:
            failed.append(target)
    if failed:
        sys.exit("failed: %s (inputs in fuzz/artifacts/)" % ", ".join(failed))
    print("no crash, hang or runaway allocation in: %s" % ", ".join(args.targets))


if __name__ == "__main__":
    main()
