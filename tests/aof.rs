//! The append-only file: Redis 7's multi-part directory both ways with redis-server 7.0 and
//! checked by redis-check-aof; acknowledged writes surviving SIGKILL under `appendfsync always`
//! (and all but the last second's under `everysec`); multi-key writes all or nothing; torn and
//! zero-filled tails cut cleanly; BGREWRITEAOF and CONFIG SET appendonly while clients write.

mod common;

use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::dataset::*;
use common::{bulk, simple, Frame, RawClient, ServerKind};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const AOF_ON: &[&str] = &["--appendonly", "yes", "--appendfsync", "always"];

fn aof_dir(dir: &DataDir) -> std::path::PathBuf {
    dir.path().join("appendonlydir")
}

fn check_aof(dir: &DataDir) {
    let manifest = aof_dir(dir).join("appendonly.aof.manifest");
    let out = Command::new("redis-check-aof")
        .arg(&manifest)
        .output()
        .expect("run redis-check-aof (apt-get install redis-tools)");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("All AOF files and manifest are valid"),
        "redis-check-aof refused {}:\n{text}",
        manifest.display()
    );
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("mkdir");
    for e in fs::read_dir(from).expect("read dir").flatten() {
        fs::copy(e.path(), to.join(e.file_name())).expect("copy");
    }
}

#[test]
fn tessera_aof_is_valid_for_redis_check_aof_and_loads_into_redis() {
    let dir = DataDir::new("aof-t2r");
    let t = start(ServerKind::Tessera, &dir, AOF_ON);
    let mut c = t.raw();
    populate(&mut c, 11);
    assert_eq!(
        c.call(&["BGREWRITEAOF"]),
        simple("Background append only file rewriting started")
    );
    assert!(common::wait_until(Duration::from_secs(30), || {
        info_field(&mut c, "persistence", "aof_rewrite_in_progress") == "0"
    }));
    // More after the rewrite, in the new incremental file; some with TTLs, some in MULTI.
    populate(&mut c, 12);
    c.pipeline(&[
        vec!["MULTI"],
        vec!["INCR", "counter"],
        vec!["SET", "ttl", "v", "EX", "1000"],
        vec!["EXEC"],
    ]);
    let before = describe(&mut c);
    assert_eq!(info_field(&mut c, "persistence", "aof_enabled"), "1");
    assert_eq!(
        info_field(&mut c, "persistence", "aof_last_bgrewrite_status"),
        "ok"
    );
    drop(t);
    check_aof(&dir);

    let rdir = DataDir::new("aof-t2r-redis");
    copy_dir(&aof_dir(&dir), &aof_dir(&rdir));
    let r = start(ServerKind::Redis, &rdir, &["--appendonly", "yes"]);
    assert_same_data(
        &without_read_counters(&describe(&mut r.raw())),
        &without_read_counters(&before),
        "Tessera's AOF loaded by redis-server",
    );
    drop(r);
    let t = start(ServerKind::Tessera, &dir, AOF_ON);
    assert_same_data(
        &without_read_counters(&describe(&mut t.raw())),
        &without_read_counters(&before),
        "after reload",
    );
}

#[test]
fn redis_aof_loads_into_tessera_with_either_base() {
    for preamble in ["yes", "no"] {
        let rdir = DataDir::new("aof-r2t-redis");
        let r = start(
            ServerKind::Redis,
            &rdir,
            &["--appendonly", "yes", "--aof-use-rdb-preamble", preamble],
        );
        let mut rc = r.raw();
        populate(&mut rc, 13);
        assert_eq!(
            rc.call(&["BGREWRITEAOF"]),
            simple("Background append only file rewriting started")
        );
        assert!(common::wait_until(Duration::from_secs(30), || {
            info_field(&mut rc, "persistence", "aof_rewrite_in_progress") == "0"
                && info_field(&mut rc, "persistence", "aof_rewrite_scheduled") == "0"
        }));
        populate(&mut rc, 14);
        let before = describe(&mut rc);
        drop(r);

        let dir = DataDir::new("aof-r2t");
        copy_dir(&aof_dir(&rdir), &aof_dir(&dir));
        let t = start(ServerKind::Tessera, &dir, &["--appendonly", "yes"]);
        let mut c = t.raw();
        assert_same_data(
            &without_read_counters(&describe(&mut c)),
            &without_read_counters(&before),
            &format!("aof-use-rdb-preamble {preamble}"),
        );
        assert_eq!(c.call(&["FCALL", "answer", "0"]), Frame::Integer(42));
    }
}

/// Writers that record what was acknowledged: per key, the last value the server confirmed.
struct Writers {
    stop: Arc<AtomicBool>,
    handles: Vec<std::thread::JoinHandle<()>>,
    acked: Arc<Mutex<HashMap<String, (i64, Instant)>>>,
}

/// Values written are `seed * 10^9 + n`, so a later start (a larger seed) always writes larger
/// values than an earlier one.
fn start_writers(port: u16, seed: u64) -> Writers {
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(Mutex::new(HashMap::new()));
    let handles = (0..3)
        .map(|w| {
            let stop = stop.clone();
            let acked = acked.clone();
            std::thread::spawn(move || {
                let mut c = RawClient::connect(port);
                c.set_timeout(Duration::from_secs(20));
                let mut rng = StdRng::seed_from_u64(seed * 10 + w);
                let mut n: i64 = 0;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let key = format!("w{w}:{}", rng.gen_range(0..20));
                    // The counter and its twin on another shard change together.
                    let value = seed as i64 * 1_000_000_000 + n;
                    let v = value.to_string();
                    let reply = match c.try_call(&["MSET", &key, &v, &format!("{key}:twin"), &v]) {
                        Some(r) => r,
                        None => return, // the server was killed
                    };
                    if reply != simple("OK") {
                        return;
                    }
                    acked
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(key, (value, Instant::now()));
                }
            })
        })
        .collect();
    Writers {
        stop,
        handles,
        acked,
    }
}

impl Writers {
    fn finish(self) -> HashMap<String, (i64, Instant)> {
        self.stop.store(true, Ordering::Relaxed);
        for h in self.handles {
            let _ = h.join();
        }
        let acked = self.acked.lock().unwrap_or_else(|e| e.into_inner());
        acked.clone()
    }
}

fn get_int(c: &mut RawClient, key: &str) -> Option<i64> {
    match c.call(&["GET", key]) {
        Frame::Bulk(b) => String::from_utf8_lossy(&b).parse().ok(),
        _ => None,
    }
}

/// SIGKILL at random moments under `appendfsync always`: after every restart, every
/// acknowledged write is there (a later one may be too: it reached the disk, its reply did
/// not reach the client), and the two keys of each MSET agree.
#[test]
fn acknowledged_writes_survive_sigkill_with_appendfsync_always() {
    let dir = DataDir::new("aof-crash");
    let mut rng = StdRng::seed_from_u64(15);
    let mut expected: HashMap<String, i64> = HashMap::new();
    for round in 0..6 {
        let mut t = start(ServerKind::target(), &dir, AOF_ON);
        let mut c = t.raw();
        for (k, v) in &expected {
            let got = get_int(&mut c, k).unwrap_or(-1);
            assert!(got >= *v, "round {round}: {k} = {got}, acknowledged {v}");
            assert_eq!(get_int(&mut c, &format!("{k}:twin")), Some(got), "{k} torn");
        }
        if round == 3 {
            c.call(&["BGREWRITEAOF"]);
        }
        let writers = start_writers(t.port(), round);
        std::thread::sleep(Duration::from_millis(rng.gen_range(50..400)));
        t.kill_hard();
        for (k, (v, _)) in writers.finish() {
            let e = expected.entry(k).or_insert(v);
            *e = (*e).max(v);
        }
    }
    assert!(!expected.is_empty());
}

/// Under `everysec` only the last second or so may be lost.
#[test]
fn everysec_loses_at_most_about_a_second() {
    let dir = DataDir::new("aof-everysec");
    let args = ["--appendonly", "yes", "--appendfsync", "everysec"];
    let mut t = start(ServerKind::target(), &dir, &args);
    let writers = start_writers(t.port(), 99);
    std::thread::sleep(Duration::from_millis(2500));
    let killed_at = Instant::now();
    t.kill_hard();
    let acked = writers.finish();
    let t = start(ServerKind::target(), &dir, &args);
    let mut c = t.raw();
    for (k, (v, at)) in acked {
        // Acknowledged more than 2 s (a generous second) before the kill: on disk.
        if killed_at.duration_since(at) > Duration::from_secs(2) {
            let got = get_int(&mut c, &k).unwrap_or(-1);
            assert!(
                got >= v,
                "{k} = {got}, acknowledged {v} long before the kill"
            );
        }
    }
}

#[test]
fn torn_and_zero_filled_tails_are_cut_and_corruption_refused() {
    let dir = DataDir::new("aof-torn");
    let t = start(ServerKind::Tessera, &dir, AOF_ON);
    let mut c = t.raw();
    c.call(&["SET", "a", "1"]);
    c.call(&["SET", "b", "2"]);
    drop(t);
    let incr = aof_dir(&dir).join("appendonly.aof.1.incr.aof");
    let good = fs::read(&incr).expect("read incr");

    // A command cut in the middle, an open MULTI, a zero-filled tail: all cut off.
    for tail in [
        b"*3\r\n$3\r\nSET\r\n$1\r\nc\r\n$".to_vec(),
        b"*1\r\n$5\r\nMULTI\r\n*3\r\n$3\r\nSET\r\n$1\r\nc\r\n$1\r\n3\r\n".to_vec(),
        vec![0u8; 4096],
    ] {
        fs::write(&incr, [&good[..], &tail[..]].concat()).expect("write");
        let t = start(ServerKind::Tessera, &dir, AOF_ON);
        let mut c = t.raw();
        assert_eq!(
            c.call(&["MGET", "a", "b", "c"]),
            Frame::Array(vec![bulk("1"), bulk("2"), Frame::NullBulk])
        );
        drop(t);
        assert_eq!(fs::read(&incr).expect("read"), good, "tail not cut");
    }
    // With aof-load-truncated no, a torn tail stops the server.
    fs::write(&incr, [&good[..], b"*3\r\n$3\r\nSET"].concat()).expect("write");
    let (code, log) = run_to_exit(
        Command::new(ServerKind::Tessera.binary())
            .args([
                "--port",
                "0",
                "--save",
                "",
                "--dir",
                &dir.arg(),
                "--appendonly",
                "yes",
                "--aof-load-truncated",
                "no",
                "--unixsocket",
            ])
            .arg(dir.path().join("s.sock")),
        &dir.path().join("out.log"),
    );
    assert_eq!(code, Some(1), "{log}");
    assert!(
        log.contains("Unexpected end of file reading the append only file"),
        "{log}"
    );
    // Garbage in the middle is refused whatever aof-load-truncated says.
    fs::write(&incr, [&good[..10], b"garbage!", &good[10..]].concat()).expect("write");
    let (code, log) = run_to_exit(
        Command::new(ServerKind::Tessera.binary())
            .args([
                "--port",
                "0",
                "--save",
                "",
                "--dir",
                &dir.arg(),
                "--appendonly",
                "yes",
                "--unixsocket",
            ])
            .arg(dir.path().join("s.sock")),
        &dir.path().join("out.log"),
    );
    assert_eq!(code, Some(1), "{log}");
    assert!(
        log.contains("Bad file format reading the append only file"),
        "{log}"
    );
}

#[test]
fn config_set_appendonly_writes_a_base_and_keeps_every_write() {
    let dir = DataDir::new("aof-config");
    let t = start(ServerKind::target(), &dir, &[]);
    let mut c = t.raw();
    populate(&mut c, 16);
    assert_eq!(
        c.call(&["CONFIG", "SET", "appendonly", "yes"]),
        simple("OK")
    );
    let writers = start_writers(t.port(), 7);
    assert!(common::wait_until(Duration::from_secs(30), || {
        info_field(&mut c, "persistence", "aof_rewrite_in_progress") == "0"
    }));
    std::thread::sleep(Duration::from_millis(200));
    let acked = writers.finish();
    assert_eq!(
        c.call(&["CONFIG", "SET", "appendfsync", "always"]),
        simple("OK")
    );
    c.call(&["SET", "last", "write"]);
    let before = describe(&mut c);
    let mut t = t;
    t.kill_hard();
    check_aof(&dir);
    let t = start(ServerKind::target(), &dir, &["--appendonly", "yes"]);
    let mut c = t.raw();
    assert_same_data(
        &without_read_counters(&describe(&mut c)),
        &without_read_counters(&before),
        "after reload",
    );
    for (k, (v, _)) in acked {
        assert_eq!(get_int(&mut c, &k), Some(v), "{k}");
    }
}
