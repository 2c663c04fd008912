//! Tessera's user-space cost per command, without the network: one client
//! runs a command stream straight through the dispatcher on this thread,
//! and the thread's CPU time per command is printed.
//!
//! The network benchmarks (scripts/bench.py) are the measure that counts;
//! this one only separates what Tessera's own code costs from the kernel's
//! TCP path, which dominates those and is noisy on a shared machine.
//!
//!     cargo run --release --example inproc -- evalsha 2000000
//!     cargo run --release --example inproc -- set 2000000

use std::net::SocketAddr;
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use tessera::config::Config;
use tessera::server::client::{Client, ClientInfo};
use tessera::server::dispatch;
use tessera::server::state::ServerState;
use tessera::server::stats::WorkerStats;
use tessera_resp::encode::{Protocol, ReplyBuf};

const SET_SCRIPT: &str = "return redis.call('SET', KEYS[1], ARGV[1])";
/// The same run with no command in it: what running a script costs.
const EMPTY_SCRIPT: &str = "return 1";

fn thread_cpu_seconds() -> (f64, f64) {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let usage = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut u);
        u
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(usage.ru_utime), secs(usage.ru_stime))
}

fn main() {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_else(|| "evalsha".to_string());
    let n: usize = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let keyspace: u64 = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000);

    let config = Arc::new(Config::new());
    let ncmds = tessera::commands::command_count_with_subs();
    let worker = Arc::new(WorkerStats::new(ncmds));
    let srv = ServerState::new(config, vec![worker.clone()], 1, 0, String::new());
    let addr: SocketAddr = "127.0.0.1:1".parse().expect("a socket address");
    let addr = tessera::server::client::PeerAddr::Tcp(addr);
    let info = Arc::new(ClientInfo::new(1, addr.clone(), addr, -1, 0));
    let mut client = Client::new(&srv, 1, info, worker);
    let mut out = ReplyBuf::new(Protocol::Resp2);

    let mut load = |body: &str| {
        dispatch::execute_now(
            &srv,
            &mut client,
            &mut out,
            &[b"SCRIPT", b"LOAD", body.as_bytes()],
        );
        let reply = String::from_utf8_lossy(&out.buf).into_owned();
        out.buf.clear();
        reply.split("\r\n").nth(1).unwrap_or_default().to_string()
    };
    let sha = load(SET_SCRIPT);
    let empty_sha = load(EMPTY_SCRIPT);
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let value = vec![b'v'; 64];
    let mut key = Vec::with_capacity(32);
    let run = |count: usize,
               rng: &mut rand::rngs::StdRng,
               key: &mut Vec<u8>,
               client: &mut Client,
               out: &mut ReplyBuf| {
        for _ in 0..count {
            key.clear();
            key.extend_from_slice(b"key_");
            let digits = rng.gen_range(0..keyspace).to_string();
            key.resize(key.len() + 10 - digits.len().min(10), b'0');
            key.extend_from_slice(digits.as_bytes());
            let argv: Vec<&[u8]> = match which.as_str() {
                "evalsha" => vec![b"EVALSHA", sha.as_bytes(), b"1", key, &value],
                "evalsha-empty" => vec![b"EVALSHA", empty_sha.as_bytes(), b"1", key, &value],
                "set" => vec![b"SET", key, &value],
                "get" => vec![b"GET", key],
                other => panic!("unknown case {other}"),
            };
            dispatch::execute_now(&srv, client, out, &argv);
            out.buf.clear();
        }
    };
    // Warm up (the Lua state, the allocator), then measure.
    run(n / 10, &mut rng, &mut key, &mut client, &mut out);
    let (u0, s0) = thread_cpu_seconds();
    let t0 = std::time::Instant::now();
    run(n, &mut rng, &mut key, &mut client, &mut out);
    let wall = t0.elapsed().as_secs_f64();
    let (u1, s1) = thread_cpu_seconds();
    println!(
        "{which}: {n} commands, {:.3} µs user + {:.3} µs system per command ({:.3} µs wall)",
        (u1 - u0) * 1e6 / n as f64,
        (s1 - s0) * 1e6 / n as f64,
        wall * 1e6 / n as f64
    );
}
