//! Real job-queue frameworks end to end against the server: BullMQ (Node.js,
//! ioredis, Lua scripts with many keys, streams read with XREAD BLOCK,
//! blocking moves), RQ (Python, redis-py in RESP2 and in RESP3, pub/sub,
//! sorted-set registries, transactions) and Celery (kombu's broker on lists
//! and BRPOP, the redis result backend with chord counters). Their own client code parses every
//! reply, so a reply shaped differently from redis-server's fails here even
//! where our own tests agree with themselves.
//!
//! `scripts/test.sh` installs what these need (`npm ci` in
//! tests/frameworks/bullmq, `pip install -r` of the rq and celery
//! requirements.txt files).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::TestServer;

fn frameworks_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("frameworks")
}

/// Runs `program script PORT` in tests/frameworks/`folder` against a fresh
/// server; fails with the script's output. The server runs several worker
/// threads (io-threads, a name redis-server takes too), so the framework's
/// connections and the keys its scripts touch are spread across threads
/// and shards.
fn run_check(folder: &str, program: &str, script: &str, setup_hint: &str) {
    let dir = frameworks_dir().join(folder);
    let script = dir.join(script);
    let server = TestServer::start_with(&["--io-threads", "4"]);
    let out = Command::new(program)
        .arg(&script)
        .arg(server.port().to_string())
        .current_dir(&dir)
        .output()
        .unwrap_or_else(|e| panic!("could not run {program} ({e}); {setup_hint}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The tail as bytes, so a cut through a multi-byte character cannot panic.
    let stderr = String::from_utf8_lossy(&out.stderr[out.stderr.len().saturating_sub(4000)..]);
    assert!(
        out.status.success(),
        "{} failed against {} (exit {:?}); {setup_hint}\nstdout:\n{stdout}\nstderr (last 4000 bytes):\n{}\nserver log:\n{}",
        script.display(),
        server.kind().name(),
        out.status.code(),
        stderr,
        server.log_tail(30),
    );
}

#[test]
fn bullmq_queue_worker_flows_and_events() {
    let dir = frameworks_dir().join("bullmq");
    assert!(
        dir.join("node_modules").join("bullmq").exists(),
        "BullMQ is not installed: run `npm ci` in {} (scripts/test.sh does)",
        dir.display()
    );
    run_check(
        "bullmq",
        "node",
        "smoke.js",
        "scripts/test.sh installs BullMQ",
    );
}

#[test]
fn rq_jobs_over_resp2_and_resp3() {
    run_check(
        "rq",
        "python3",
        "rq_smoke.py",
        "scripts/test.sh installs RQ (pip install -r tests/frameworks/rq/requirements.txt)",
    );
}

#[test]
fn celery_tasks_groups_and_chords() {
    run_check(
        "celery",
        "python3",
        "celery_smoke.py",
        "scripts/test.sh installs Celery (pip install -r tests/frameworks/celery/requirements.txt)",
    );
}
