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

/// Data with seed `seed` in the base (written by a BGREWRITEAOF), more with
/// `seed + 1` after it in the new incremental file, some with TTLs, some in MULTI.
fn populate_across_a_rewrite(c: &mut RawClient, seed: u64) {
    populate(c, seed);
    assert_eq!(
        c.call(&["BGREWRITEAOF"]),
        simple("Background append only file rewriting started")
    );
    assert!(common::wait_until(Duration::from_secs(30), || {
        info_field(c, "persistence", "aof_rewrite_in_progress") == "0"
    }));
    populate(c, seed + 1);
    c.pipeline(&[
        vec!["MULTI"],
        vec!["INCR", "counter"],
        vec!["SET", "ttl", "v", "EX", "1000"],
        vec!["EXEC"],
    ]);
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
    populate_across_a_rewrite(&mut c, 11);
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

/// Runs a command line; its success.
fn sh(cmd: &str) -> bool {
    Command::new("sh")
        .args(["-c", cmd])
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// A file system of its own for one test, unmounted on drop.
struct Mounted {
    dir: std::path::PathBuf,
}

impl Mounted {
    /// A loop-mounted ext4 image (`image` is created), or None where the machine cannot (not
    /// root, no loop devices).
    fn ext4(image: &Path, dir: &Path, mib: u32) -> Option<Mounted> {
        fs::create_dir_all(dir).ok()?;
        let ok = sh(&format!(
            "truncate -s {mib}M {img} && mkfs.ext4 -q -F {img} && mount -o loop {img} {dir}",
            img = image.display(),
            dir = dir.display()
        ));
        ok.then(|| Mounted {
            dir: dir.to_path_buf(),
        })
    }

    fn tmpfs(dir: &Path, kib: u32) -> Option<Mounted> {
        fs::create_dir_all(dir).ok()?;
        sh(&format!(
            "mount -t tmpfs -o size={kib}k tmpfs {}",
            dir.display()
        ))
        .then(|| Mounted {
            dir: dir.to_path_buf(),
        })
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        for _ in 0..50 {
            if sh(&format!("umount {} 2>/dev/null", self.dir.display())) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// A power cut: the data directory lives on a loop-mounted file system whose image is copied
/// the moment the server is killed, so only what reached the disk survives; the copy is then
/// mounted (its journal replayed) and a new server started on it. Under `always` every
/// acknowledged write must be there, under `everysec` all but the last seconds'; a rewrite
/// in the middle of the writes must not change that.
#[test]
fn power_cuts_lose_nothing_acknowledged() {
    if common::target_is_redis() {
        return; // redis-server 7.0 may refuse to restart on a zero-filled tail (see the issue)
    }
    let work = DataDir::new("powercut");
    let Some(live) = Mounted::ext4(&work.path().join("disk.img"), &work.path().join("live"), 64)
    else {
        eprintln!("skipping the power-cut test: cannot loop-mount an ext4 image here (needs root and loop devices)");
        return;
    };
    let mut rng = StdRng::seed_from_u64(17);
    let mut expected: HashMap<String, (i64, Instant)> = HashMap::new();
    for (round, fsync) in ["always", "always", "everysec", "always"]
        .iter()
        .enumerate()
    {
        let image = if round == 0 {
            None
        } else {
            Some(work.path().join(format!("cut-{}.img", round - 1)))
        };
        // Each round starts on the previous round's cut copy.
        let mounted = match &image {
            None => None,
            Some(img) => {
                let dir = work.path().join(format!("restored-{round}"));
                fs::create_dir_all(&dir).expect("mkdir");
                assert!(
                    sh(&format!(
                        "mount -o loop {} {}",
                        img.display(),
                        dir.display()
                    )),
                    "mounting the cut image"
                );
                Some(Mounted { dir })
            }
        };
        let data_dir = mounted.as_ref().map_or(live.dir.clone(), |m| m.dir.clone());
        let d = data_dir.display().to_string();
        let args = [
            "--dir",
            d.as_str(),
            "--appendonly",
            "yes",
            "--appendfsync",
            fsync,
        ];
        let mut t = TestServerOn::start(&args);
        let mut c = t.server.raw();
        // `expected` holds what must have survived: every acknowledged write of an `always`
        // round, and of an `everysec` round those acknowledged seconds before the cut.
        for (k, (v, _)) in &expected {
            let got = get_int(&mut c, k).unwrap_or(-1);
            assert!(
                got >= *v,
                "round {round}: {k} = {got}, acknowledged {v}, lost in the cut"
            );
            assert_eq!(get_int(&mut c, &format!("{k}:twin")), Some(got), "{k} torn");
        }
        let writers = start_writers(t.server.port(), 100 + round as u64);
        if round == 1 {
            std::thread::sleep(Duration::from_millis(100));
            c.call(&["BGREWRITEAOF"]);
        }
        std::thread::sleep(Duration::from_millis(rng.gen_range(200..700)));
        // The cut: kill, then copy the image as the disk holds it now.
        t.server.kill_hard();
        let src = match &image {
            None => work.path().join("disk.img"),
            Some(img) => img.clone(),
        };
        let cut = work.path().join(format!("cut-{round}.img"));
        fs::copy(&src, &cut).expect("copy the image");
        let acked = writers.finish();
        drop(mounted);
        for (k, (v, at)) in acked {
            let keep =
                *fsync == "always" || Instant::now().duration_since(at) > Duration::from_secs(3);
            if keep {
                let e = expected.entry(k).or_insert((v, at));
                if v > e.0 {
                    *e = (v, at);
                }
            }
        }
    }
    assert!(
        !expected.is_empty(),
        "no write was acknowledged in any round"
    );
    drop(live);
}

/// A server on a data directory, with the server's own scratch directory for its log.
struct TestServerOn {
    server: common::TestServer,
}

impl TestServerOn {
    fn start(args: &[&str]) -> TestServerOn {
        let server = common::TestServer::start_kind(ServerKind::target(), args);
        let mut c = server.raw();
        assert!(common::wait_until(Duration::from_secs(60), || c
            .call(&["PING"])
            == simple("PONG")));
        TestServerOn { server }
    }
}

/// A full disk: the AOF cannot be written, writes get MISCONF, the writes already accepted wait
/// for the disk (under `always` nothing unwritten is acknowledged), and everything resumes
/// once there is room again.
#[test]
fn a_full_disk_holds_acknowledgements_and_recovers() {
    if common::target_is_redis() {
        return; // redis-server exits when an `always` fsync fails; Tessera retries
    }
    let work = DataDir::new("fulldisk");
    let Some(disk) = Mounted::tmpfs(&work.path().join("small"), 4096) else {
        eprintln!("skipping the full-disk test: cannot mount a tmpfs here (needs root)");
        return;
    };
    let d = disk.dir.display().to_string();
    let t = TestServerOn::start(&[
        "--dir",
        d.as_str(),
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
    ]);
    let mut c = t.server.raw();
    c.call(&["SET", "before", "1"]);
    // Fill the disk.
    let filler = disk.dir.join("filler");
    let _ = sh(&format!(
        "dd if=/dev/zero of={} bs=64k 2>/dev/null",
        filler.display()
    ));
    let big = "x".repeat(256 * 1024);
    let mut writer = RawClient::connect(t.server.port());
    writer.send(&["SET", "during", &big]);
    let mut other = t.server.raw();
    assert!(common::wait_until(Duration::from_secs(10), || {
        info_field(&mut other, "persistence", "aof_last_write_status") == "err"
    }));
    // The write is not acknowledged while it is not on disk; new writes are refused.
    writer.set_timeout(Duration::from_millis(300));
    assert!(
        writer.try_read_frame().is_err(),
        "acknowledged a write the disk does not hold"
    );
    match other.call(&["SET", "refused", "1"]) {
        Frame::Error(e) => assert!(
            String::from_utf8_lossy(&e).starts_with("MISCONF Errors writing to the AOF file"),
            "{}",
            String::from_utf8_lossy(&e)
        ),
        f => panic!("expected MISCONF, got {}", common::fmt_frame(&f)),
    }
    assert_eq!(other.call(&["GET", "before"]), bulk("1"));
    // Room again: the held write completes and writes are accepted.
    fs::remove_file(&filler).expect("rm filler");
    writer.set_timeout(Duration::from_secs(20));
    assert_eq!(writer.read_frame(), simple("OK"));
    assert!(common::wait_until(Duration::from_secs(10), || {
        info_field(&mut other, "persistence", "aof_last_write_status") == "ok"
    }));
    assert_eq!(other.call(&["SET", "after", "1"]), simple("OK"));
    let mut t = t;
    t.server.kill_hard();
    let t = TestServerOn::start(&["--dir", d.as_str(), "--appendonly", "yes"]);
    let mut c = t.server.raw();
    assert_eq!(
        c.call(&["STRLEN", "during"]),
        Frame::Integer(big.len() as i64)
    );
    assert_eq!(c.call(&["GET", "after"]), bulk("1"));
    assert_eq!(c.call(&["EXISTS", "refused"]), Frame::Integer(0));
    drop(t);
}

/// Bytes in every file of the append-only directory.
fn aof_bytes(dir: &DataDir) -> u64 {
    fs::read_dir(aof_dir(dir))
        .expect("appendonlydir")
        .filter_map(|e| e.ok()?.metadata().ok())
        .map(|m| m.len())
        .sum()
}

#[test]
fn debug_loadaof_reloads_the_directory_without_writing_it_again() {
    let dir = DataDir::new("aof-loadaof");
    let args = [
        "--appendonly",
        "yes",
        "--appendfsync",
        "everysec",
        "--enable-debug-command",
        "yes",
    ];
    let t = start(ServerKind::target(), &dir, &args);
    let mut c = t.raw();
    populate_across_a_rewrite(&mut c, 21);
    let before = describe(&mut c);
    let digest = c.call(&["DEBUG", "DIGEST"]);
    std::thread::sleep(Duration::from_millis(300));
    let bytes = aof_bytes(&dir);
    assert_eq!(c.call(&["DEBUG", "LOADAOF"]), simple("OK"));
    assert_eq!(c.call(&["DEBUG", "DIGEST"]), digest);
    assert_same_data(
        &without_read_counters(&describe(&mut c)),
        &without_read_counters(&before),
        "after DEBUG LOADAOF",
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        aof_bytes(&dir),
        bytes,
        "the reload wrote nothing to the AOF"
    );
    // Writing goes on into the same files, and all of it loads again.
    c.call(&["SET", "after", "reload"]);
    assert_eq!(c.call(&["DEBUG", "LOADAOF"]), simple("OK"));
    assert_eq!(c.call(&["GET", "after"]), bulk("reload"));
    drop(t);
    check_aof(&dir);
    let t = start(ServerKind::target(), &dir, &args);
    let mut c = t.raw();
    assert_eq!(c.call(&["GET", "after"]), bulk("reload"));
    c.call(&["DEL", "after"]);
    assert_same_data(
        &without_read_counters(&describe(&mut c)),
        &without_read_counters(&before),
        "after restart",
    );
}

/// An approximate trim with LIMIT is logged as the exact trim it came to,
/// with its LIMIT kept: replaying it must accept LIMIT without `~` (as
/// Redis's AOF client does) and reach the same length.
#[test]
fn approximate_trims_with_limit_replay_from_the_aof() {
    let dir = DataDir::new("aof-xtrim-limit");
    let args = [
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--stream-node-max-entries",
        "10",
        "--enable-debug-command",
        "yes",
    ];
    let t = start(ServerKind::target(), &dir, &args);
    let mut c = t.raw();
    for i in 0..100 {
        c.call(&["XADD", "s", "*", "n", &i.to_string()]);
    }
    c.call(&[
        "XADD", "s", "MAXLEN", "~", "55", "LIMIT", "30", "*", "x", "v",
    ]);
    assert_eq!(c.call(&["XLEN", "s"]), Frame::Integer(71));
    c.call(&["XTRIM", "s", "MAXLEN", "~", "20", "LIMIT", "10"]);
    assert_eq!(c.call(&["XLEN", "s"]), Frame::Integer(61));
    let first = c.call(&["XRANGE", "s", "-", "+", "COUNT", "1"]);
    assert_eq!(c.call(&["DEBUG", "LOADAOF"]), simple("OK"));
    assert_eq!(c.call(&["XLEN", "s"]), Frame::Integer(61));
    assert_eq!(c.call(&["XRANGE", "s", "-", "+", "COUNT", "1"]), first);
    drop(t);
    check_aof(&dir);
    let t = start(ServerKind::target(), &dir, &args);
    let mut c = t.raw();
    assert_eq!(c.call(&["XLEN", "s"]), Frame::Integer(61));
    assert_eq!(c.call(&["XRANGE", "s", "-", "+", "COUNT", "1"]), first);
}

#[test]
fn debug_loadaof_without_an_aof_ends_the_server() {
    let dir = DataDir::new("aof-loadaof-none");
    let mut t = start(
        ServerKind::target(),
        &dir,
        &["--enable-debug-command", "yes"],
    );
    let mut c = t.raw();
    c.call(&["SET", "k", "v"]);
    // As redis-server 7.0: no AOF to load is fatal.
    assert_eq!(c.try_call(&["DEBUG", "LOADAOF"]), None);
    let status = t.wait_exit(Duration::from_secs(30)).expect("server exits");
    assert_eq!(status.code(), Some(1));
}

#[test]
fn bases_without_rdb_preamble_are_commands_redis_loads() {
    for timestamps in ["no", "yes"] {
        let dir = DataDir::new("aof-nopreamble");
        let args = [
            "--appendonly",
            "yes",
            "--aof-use-rdb-preamble",
            "no",
            "--aof-timestamp-enabled",
            timestamps,
        ];
        let t = start(ServerKind::target(), &dir, &args);
        let mut c = t.raw();
        populate(&mut c, 31);
        // The stream shapes the rewrite has its own commands for: empty, a
        // consumer with nothing pending, pending entries delivered twice.
        c.pipeline(&[
            vec!["XGROUP", "CREATE", "empty", "g", "$", "MKSTREAM"],
            vec!["XADD", "s", "5-1", "f", "v"],
            vec!["XADD", "s", "6-1", "f", "w"],
            vec!["XGROUP", "CREATE", "s", "g", "0"],
            vec!["XGROUP", "CREATECONSUMER", "s", "g", "idle"],
            vec!["XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">"],
            vec!["XCLAIM", "s", "g", "bob", "0", "5-1"],
            // (A deleted entry still pending is dropped by XCLAIM when a
            // rewrite is loaded, by redis-server as by Tessera.)
            vec!["XADD", "s", "7-1", "f", "x"],
            vec!["XDEL", "s", "7-1"],
        ]);
        let pending = c.call(&["XPENDING", "s", "g", "-", "+", "10"]);
        assert_eq!(
            c.call(&["BGREWRITEAOF"]),
            simple("Background append only file rewriting started")
        );
        assert!(common::wait_until(Duration::from_secs(30), || {
            info_field(&mut c, "persistence", "aof_rewrite_in_progress") == "0"
        }));
        let before = describe(&mut c);
        let info = fmt_info(&mut c);
        assert_eq!(info, "true true consumers [\"idle\", \"bob\"]");
        drop(t);
        let base = aof_dir(&dir).join("appendonly.aof.2.base.aof");
        let head = fs::read(&base).unwrap_or_else(|e| panic!("{}: {e}", base.display()));
        let first = if timestamps == "yes" { b'#' } else { b'*' };
        assert_eq!(head.first(), Some(&first), "a base of commands");
        check_aof(&dir);

        // Loaded by redis-server and by Tessera: the same data.
        for kind in [ServerKind::Redis, ServerKind::Tessera] {
            let copy = DataDir::new("aof-nopreamble-copy");
            copy_dir(&aof_dir(&dir), &aof_dir(&copy));
            let s = start(kind, &copy, &args);
            let mut sc = s.raw();
            assert_same_data(
                &without_read_counters(&describe(&mut sc)),
                &without_read_counters(&before),
                &format!("command base loaded by {} ({timestamps})", kind.name()),
            );
            let delivered = |f: &Frame| common::fmt_frame(f).replace(char::is_numeric, "");
            assert_eq!(
                delivered(&sc.call(&["XPENDING", "s", "g", "-", "+", "10"])),
                delivered(&pending),
                "{}",
                kind.name()
            );
            assert_eq!(fmt_info(&mut sc), info, "{}", kind.name());
        }
    }
}

/// What XINFO STREAM FULL says of `s` that a rewrite keeps.
fn fmt_info(c: &mut RawClient) -> String {
    let full = common::fmt_frame(&c.call(&["XINFO", "STREAM", "s", "FULL"]));
    let groups = common::fmt_frame(&c.call(&["XINFO", "CONSUMERS", "s", "g"]));
    let names: Vec<&str> = ["idle", "bob"]
        .into_iter()
        .filter(|n| groups.contains(n))
        .collect();
    format!(
        "{} {} consumers {:?}",
        full.contains("\"max-deleted-entry-id\", \"7-1\""),
        full.contains("\"entries-added\", :3"),
        names
    )
}

#[test]
fn the_aof_rewrites_itself_when_it_doubles() {
    let dir = DataDir::new("aof-auto");
    let args = [
        "--appendonly",
        "yes",
        "--auto-aof-rewrite-percentage",
        "100",
        "--auto-aof-rewrite-min-size",
        "64kb",
    ];
    let t = start(ServerKind::target(), &dir, &args);
    let mut c = t.raw();
    assert_eq!(info_field(&mut c, "persistence", "aof_rewrites"), "0");
    // The same ten keys over and over: the log grows, the data does not.
    let value = "x".repeat(100);
    for round in 0..300 {
        let cmds: Vec<Vec<String>> = (0..10)
            .map(|k| vec!["SET".into(), format!("k{k}"), format!("{value}{round}")])
            .collect();
        c.pipeline(&cmds);
    }
    assert!(
        common::wait_until(Duration::from_secs(30), || {
            info_field(&mut c, "persistence", "aof_rewrites") != "0"
                && info_field(&mut c, "persistence", "aof_rewrite_in_progress") == "0"
        }),
        "no automatic rewrite"
    );
    let log = t.log_tail(200);
    assert!(
        log.contains("Starting automatic rewriting of AOF on"),
        "{log}"
    );
    let base: u64 = info_field(&mut c, "persistence", "aof_base_size")
        .parse()
        .expect("aof_base_size");
    assert!(
        base < 64 * 1024,
        "the new base holds only the live data ({base} bytes)"
    );
    drop(t);
    check_aof(&dir);
    let t = start(ServerKind::target(), &dir, &args);
    let mut c = t.raw();
    assert_eq!(c.call(&["GET", "k9"]), bulk(format!("{value}299")));
}

/// CONFIG SET appendonly no stops a rewrite in progress, as Redis kills its child: the reply
/// comes once it has stopped, the log says so, and the rewrite does not count as failed. The
/// AOF turned on again starts a fresh one and keeps everything.
#[test]
fn turning_the_aof_off_stops_a_rewrite_in_progress() {
    let kind = ServerKind::target();
    let dir = DataDir::new("aof-kill-rewrite");
    let mut s = start(
        kind,
        &dir,
        &["--appendonly", "yes", "--aof-use-rdb-preamble", "no"],
    );
    let mut c = s.raw();
    wait_loaded(&mut c);
    assert!(common::wait_until(Duration::from_secs(30), || {
        info_field(&mut c, "persistence", "aof_rewrite_in_progress") == "0"
    }));
    assert_eq!(c.call(&["SET", "k", "v"]), simple("OK"));
    assert_eq!(
        c.call(&["CONFIG", "SET", "rdb-key-save-delay", "10000000"]),
        simple("OK")
    );
    assert_eq!(
        c.call(&["BGREWRITEAOF"]),
        simple("Background append only file rewriting started")
    );
    assert_eq!(c.call(&["CONFIG", "SET", "appendonly", "no"]), simple("OK"));
    assert!(common::wait_until(Duration::from_secs(30), || {
        s.log_tail(10).contains("Killing running AOF rewrite child")
            && info_field(&mut c, "persistence", "aof_rewrite_in_progress") == "0"
    }));
    assert_eq!(
        info_field(&mut c, "persistence", "aof_last_bgrewrite_status"),
        "ok"
    );
    assert_eq!(
        c.call(&["CONFIG", "SET", "rdb-key-save-delay", "0"]),
        simple("OK")
    );
    assert_eq!(c.call(&["SET", "k2", "v2"]), simple("OK"));
    assert_eq!(
        c.call(&["CONFIG", "SET", "appendonly", "yes"]),
        simple("OK")
    );
    assert!(common::wait_until(Duration::from_secs(30), || {
        info_field(&mut c, "persistence", "aof_rewrite_in_progress") == "0"
    }));
    assert_eq!(c.call(&["SET", "k3", "v3"]), simple("OK"));
    drop(c);
    s.restart();
    let mut c = s.raw();
    wait_loaded(&mut c);
    assert_eq!(
        c.call(&["MGET", "k", "k2", "k3"]),
        common::bulks(&["v", "v2", "v3"])
    );
    check_aof(&dir);
}

/// CONFIG SET appendonly yes inside a transaction schedules the first rewrite for after it, as
/// Redis does (and logs); the AOF then holds what the transaction wrote.
#[test]
fn appendonly_turned_on_in_a_transaction_starts_after_it() {
    let kind = ServerKind::target();
    let dir = DataDir::new("aof-on-in-multi");
    let s = start(kind, &dir, &[]);
    let mut c = s.raw();
    let replies = c.pipeline(&[
        vec!["MULTI"],
        vec!["SET", "foo", "bar"],
        vec!["CONFIG", "SET", "appendonly", "yes"],
        vec!["EXEC"],
    ]);
    assert_eq!(replies[3], Frame::Array(vec![simple("OK"), simple("OK")]));
    assert!(common::wait_until(Duration::from_secs(30), || {
        s.log_tail(20).contains("AOF background was scheduled")
            && info_field(&mut c, "persistence", "aof_enabled") == "1"
            && info_field(&mut c, "persistence", "aof_rewrite_scheduled") == "0"
            && info_field(&mut c, "persistence", "aof_rewrite_in_progress") == "0"
            && info_field(&mut c, "persistence", "aof_rewrites") == "1"
    }));
    assert_eq!(c.call(&["SET", "after", "1"]), simple("OK"));
    drop(c);
    drop(s);
    let s = start(kind, &dir, &["--appendonly", "yes"]);
    let mut c = s.raw();
    wait_loaded(&mut c);
    assert_eq!(
        c.call(&["MGET", "foo", "after"]),
        common::bulks(&["bar", "1"])
    );
    check_aof(&dir);
}
