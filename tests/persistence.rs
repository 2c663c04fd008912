//! Persistence: RDB files and DUMP payloads, both ways with redis-server 7.0 and checked by
//! redis-check-rdb; SAVE, BGSAVE (a point in time while clients keep writing), save rules,
//! saving at SHUTDOWN and SIGTERM, loading at start-up (with -LOADING meanwhile), MISCONF after
//! a failed save, and refusals of corrupt files and payloads.

mod common;

use std::fs;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::dataset::*;
use common::{bulk, error, fmt_frame, simple, Frame, RawClient, ServerKind, TestServer};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

// ---------------------------------------------------------------- RDB files

#[test]
fn tessera_rdb_loads_into_redis_and_passes_redis_check_rdb() {
    let dir = DataDir::new("t2r");
    let t = start(ServerKind::Tessera, &dir, &["--databases", "16"]);
    let mut c = t.raw();
    populate(&mut c, 1);
    let before = describe(&mut c);
    assert_eq!(c.call(&["SAVE"]), simple("OK"));
    check_rdb(&dir.rdb());

    let rdir = DataDir::new("t2r-redis");
    fs::copy(dir.rdb(), rdir.rdb()).expect("copy dump");
    let r = start(ServerKind::Redis, &rdir, &[]);
    let mut rc = r.raw();
    assert_same_data(&describe(&mut rc), &before, "after reload");
    assert_eq!(rc.call(&["FCALL", "answer", "0"]), Frame::Integer(42));
}

#[test]
fn redis_rdb_loads_into_tessera() {
    let rdir = DataDir::new("r2t-redis");
    let r = start(ServerKind::Redis, &rdir, &[]);
    let mut rc = r.raw();
    populate(&mut rc, 2);
    let before = describe(&mut rc);
    assert_eq!(rc.call(&["SAVE"]), simple("OK"));

    let dir = DataDir::new("r2t");
    fs::copy(rdir.rdb(), dir.rdb()).expect("copy dump");
    let t = start(ServerKind::Tessera, &dir, &[]);
    let mut c = t.raw();
    assert_same_data(&describe(&mut c), &before, "after reload");
    assert_eq!(c.call(&["FCALL", "answer", "0"]), Frame::Integer(42));
    assert_eq!(
        info_field(&mut c, "persistence", "rdb_last_load_keys_loaded"),
        before.len().to_string()
    );
    // Saved again by Tessera, the data is still what Redis had.
    assert_eq!(c.call(&["SAVE"]), simple("OK"));
    check_rdb(&dir.rdb());
    drop(t);
    let t = start(ServerKind::Tessera, &dir, &[]);
    assert_same_data(&describe(&mut t.raw()), &before, "after reload");
}

#[test]
fn uncompressed_and_unchecksummed_files_round_trip() {
    let dir = DataDir::new("plain");
    let t = start(
        ServerKind::Tessera,
        &dir,
        &["--rdbcompression", "no", "--rdbchecksum", "no"],
    );
    let mut c = t.raw();
    populate(&mut c, 3);
    let before = describe(&mut c);
    assert_eq!(c.call(&["SAVE"]), simple("OK"));
    drop(t);
    let rdir = DataDir::new("plain-redis");
    fs::copy(dir.rdb(), rdir.rdb()).expect("copy");
    let r = start(ServerKind::Redis, &rdir, &[]);
    assert_same_data(&describe(&mut r.raw()), &before, "after reload");
    drop(r);
    let t = start(ServerKind::Tessera, &dir, &[]);
    assert_same_data(&describe(&mut t.raw()), &before, "after reload");
}

#[test]
fn expired_keys_are_not_loaded() {
    let dir = DataDir::new("expired");
    let t = start(ServerKind::Tessera, &dir, &[]);
    let mut c = t.raw();
    c.call(&["SET", "gone", "x", "PX", "300"]);
    c.call(&["SET", "kept", "y"]);
    assert_eq!(c.call(&["SAVE"]), simple("OK"));
    drop(t);
    std::thread::sleep(Duration::from_millis(400));
    let t = start(ServerKind::Tessera, &dir, &[]);
    let mut c = t.raw();
    assert_eq!(c.call(&["DBSIZE"]), Frame::Integer(1));
    assert_eq!(
        info_field(&mut c, "persistence", "rdb_last_load_keys_expired"),
        "1"
    );
}

#[test]
fn corrupt_or_truncated_files_refuse_to_start_with_a_log_line() {
    let dir = DataDir::new("corrupt");
    let t = start(ServerKind::Tessera, &dir, &[]);
    let mut c = t.raw();
    populate(&mut c, 4);
    assert_eq!(c.call(&["SAVE"]), simple("OK"));
    drop(t);
    let good = fs::read(dir.rdb()).expect("read dump");
    let mut rng = StdRng::seed_from_u64(5);
    let mut cases: Vec<(String, Vec<u8>)> = vec![
        ("truncated header".into(), good[..5].to_vec()),
        ("truncated body".into(), good[..good.len() / 2].to_vec()),
        ("no checksum".into(), good[..good.len() - 8].to_vec()),
        ("foreign file".into(), b"PK\x03\x04 not an rdb".to_vec()),
        (
            "future version".into(),
            [b"REDIS0011".as_slice(), &good[9..]].concat(),
        ),
    ];
    for _ in 0..6 {
        let mut bad = good.clone();
        let at = rng.gen_range(9..bad.len() - 8);
        bad[at] ^= 1 << rng.gen_range(0..8);
        cases.push((format!("bit flipped at {at}"), bad));
    }
    for (what, bytes) in cases {
        fs::write(dir.rdb(), &bytes).expect("write");
        let (status, log) = run_to_exit(
            Command::new(common::ServerKind::Tessera.binary())
                .args(["--port", "0", "--unixsocket"])
                .arg(dir.path().join("s.sock"))
                .args(["--dir", &dir.arg(), "--save", ""]),
            &dir.path().join("out.log"),
        );
        assert_eq!(
            status,
            Some(1),
            "{what}: expected a clean refusal (exit 1):\n{log}"
        );
        assert!(
            log.contains("# ") && !log.contains("panicked"),
            "{what}: no clean log line:\n{log}"
        );
    }
}

// ---------------------------------------------------------------- SAVE, BGSAVE, rules

#[test]
fn bgsave_is_one_point_in_time_while_clients_write() {
    let dir = DataDir::new("pit");
    let t = start(ServerKind::target(), &dir, &["--rdb-key-save-delay", "300"]);
    let mut c = t.raw();
    // Pairs of keys on different shards, always written together by MSET: a snapshot that is
    // one instant holds equal values for each pair.
    let pairs = 300;
    let mut init = vec!["MSET".to_string()];
    for i in 0..pairs {
        init.extend([format!("a{i}"), "0".into(), format!("b{i}"), "0".into()]);
    }
    assert_eq!(c.call(&init), simple("OK"));
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let stop = stop.clone();
            let port = t.port();
            std::thread::spawn(move || {
                let mut c = RawClient::connect(port);
                let mut rng = StdRng::seed_from_u64(w);
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let i = rng.gen_range(0..pairs);
                    n += 1;
                    let v = format!("{w}-{n}");
                    let reply = c.call(&["MSET", &format!("a{i}"), &v, &format!("b{i}"), &v]);
                    assert_eq!(reply, simple("OK"));
                }
                n
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(c.call(&["BGSAVE"]), simple("Background saving started"));
    assert_eq!(
        c.call(&["BGSAVE"]),
        error("ERR Background save already in progress")
    );
    assert_eq!(
        info_field(&mut c, "persistence", "rdb_bgsave_in_progress"),
        "1"
    );
    assert!(common::wait_until(Duration::from_secs(60), || {
        info_field(&mut c, "persistence", "rdb_bgsave_in_progress") == "0"
    }));
    stop.store(true, Ordering::Relaxed);
    let written: u64 = writers.into_iter().map(|w| w.join().expect("writer")).sum();
    assert!(written > 0);
    assert_eq!(
        info_field(&mut c, "persistence", "rdb_last_bgsave_status"),
        "ok"
    );
    assert_eq!(info_field(&mut c, "stats", "total_forks"), "1");
    check_rdb(&dir.rdb());

    let rdir = DataDir::new("pit-redis");
    fs::copy(dir.rdb(), rdir.rdb()).expect("copy");
    let r = start(ServerKind::Redis, &rdir, &[]);
    let mut rc = r.raw();
    for i in 0..pairs {
        let a = rc.call(&["GET", &format!("a{i}")]);
        let b = rc.call(&["GET", &format!("b{i}")]);
        assert_eq!(a, b, "pair {i} torn in the snapshot");
    }
}

#[test]
fn save_rules_trigger_background_saves() {
    let dir = DataDir::new("rules");
    let t = start(ServerKind::Tessera, &dir, &["--save", "1 3"]);
    let mut c = t.raw();
    assert_eq!(
        c.call(&["CONFIG", "GET", "save"]),
        common::bulks(&["save", "1 3"])
    );
    let last = int(&c.call(&["LASTSAVE"]));
    c.call(&["SET", "a", "1"]);
    c.call(&["SET", "b", "2"]);
    assert_eq!(
        info_field(&mut c, "persistence", "rdb_changes_since_last_save"),
        "2"
    );
    std::thread::sleep(Duration::from_millis(1500));
    assert!(!dir.rdb().exists(), "saved below the rule's change count");
    c.call(&["SET", "c", "3"]);
    assert!(common::wait_until(Duration::from_secs(10), || dir
        .rdb()
        .exists()
        && info_field(&mut c, "persistence", "rdb_bgsave_in_progress")
            == "0"));
    assert!(int(&c.call(&["LASTSAVE"])) >= last);
    assert_eq!(
        info_field(&mut c, "persistence", "rdb_changes_since_last_save"),
        "0"
    );
    assert!(t
        .log_tail(40)
        .contains("Background saving terminated with success"));
}

#[test]
fn shutdown_saves_when_rules_exist_and_nosave_skips() {
    let dir = DataDir::new("shutdown");
    let mut t = start(ServerKind::Tessera, &dir, &["--save", "3600 1"]);
    let mut c = t.raw();
    c.call(&["SET", "k", "v1"]);
    c.send(&["SHUTDOWN"]);
    assert!(t.wait_exit(Duration::from_secs(30)).is_some());
    assert!(dir.rdb().exists());

    let mut t = start(ServerKind::Tessera, &dir, &["--save", "3600 1"]);
    let mut c = t.raw();
    assert_eq!(c.call(&["GET", "k"]), bulk("v1"));
    c.call(&["SET", "k", "v2"]);
    c.send(&["SHUTDOWN", "NOSAVE"]);
    assert!(t.wait_exit(Duration::from_secs(30)).is_some());

    // SIGTERM saves as SHUTDOWN does.
    let mut t = start(ServerKind::Tessera, &dir, &["--save", "3600 1"]);
    let mut c = t.raw();
    assert_eq!(c.call(&["GET", "k"]), bulk("v1"));
    c.call(&["SET", "k", "v3"]);
    t.stop();
    drop(t);

    // Without rules only SHUTDOWN SAVE saves.
    let mut t = start(ServerKind::Tessera, &dir, &[]);
    let mut c = t.raw();
    assert_eq!(c.call(&["GET", "k"]), bulk("v3"));
    c.call(&["SET", "k", "v4"]);
    c.send(&["SHUTDOWN", "SAVE"]);
    assert!(t.wait_exit(Duration::from_secs(30)).is_some());
    let t = start(ServerKind::Tessera, &dir, &[]);
    assert_eq!(t.raw().call(&["GET", "k"]), bulk("v4"));
}

#[test]
fn a_failed_save_refuses_writes_with_misconf_until_a_save_succeeds() {
    let dir = DataDir::new("misconf");
    let t = start(ServerKind::target(), &dir, &["--save", "3600 1"]);
    let mut c = t.raw();
    c.call(&["SET", "k", "v"]);
    // A directory where the file goes: the save is written but cannot be put in place.
    let blocker = dir.rdb();
    let block = || {
        let _ = fs::remove_file(&blocker);
        fs::create_dir_all(blocker.join("inside")).expect("mkdir");
    };
    let unblock = || {
        fs::remove_dir_all(&blocker).expect("rmdir");
    };
    block();
    assert_eq!(c.call(&["BGSAVE"]), simple("Background saving started"));
    assert!(common::wait_until(Duration::from_secs(10), || {
        info_field(&mut c, "persistence", "rdb_last_bgsave_status") == "err"
    }));
    let misconf = error("MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error.");
    assert_eq!(c.call(&["SET", "k", "w"]), misconf);
    assert_eq!(c.call(&["PING"]), misconf);
    assert_eq!(c.call(&["GET", "k"]), bulk("v"));
    assert_eq!(c.call(&["MULTI"]), simple("OK"));
    assert_eq!(c.call(&["GET", "k"]), simple("QUEUED"));
    assert_eq!(c.call(&["EXEC"]), Frame::Array(vec![bulk("v")]));
    // The way is clear again; the next save succeeds and writes are accepted again.
    unblock();
    assert_eq!(c.call(&["BGSAVE"]), simple("Background saving started"));
    assert!(common::wait_until(Duration::from_secs(10), || {
        info_field(&mut c, "persistence", "rdb_last_bgsave_status") == "ok"
    }));
    assert_eq!(c.call(&["SET", "k", "w"]), simple("OK"));
    // With stop-writes-on-bgsave-error off, a failure does not refuse writes.
    assert_eq!(
        c.call(&["CONFIG", "SET", "stop-writes-on-bgsave-error", "no"]),
        simple("OK")
    );
    block();
    assert_eq!(c.call(&["SAVE"]), error("ERR"));
    assert_eq!(c.call(&["SET", "k", "x"]), simple("OK"));
    unblock();
}

#[test]
fn clients_get_loading_while_the_dataset_loads() {
    if common::target_is_redis() {
        return; // key-load-delay timing differs; the reply is checked against Tessera only.
    }
    let dir = DataDir::new("loading");
    let t = start(ServerKind::Tessera, &dir, &[]);
    let mut c = t.raw();
    let mut cmds = Vec::new();
    for i in 0..2000 {
        cmds.push(vec!["SET".to_string(), format!("k{i}"), "v".into()]);
    }
    c.pipeline(&cmds);
    assert_eq!(c.call(&["SAVE"]), simple("OK"));
    drop(t);
    let d = dir.arg();
    let t = TestServer::start_kind(
        ServerKind::Tessera,
        &["--dir", &d, "--key-load-delay", "1000"],
    );
    let mut c = t.raw();
    assert_eq!(
        c.call(&["GET", "k1"]),
        error("LOADING Redis is loading the dataset in memory")
    );
    assert_eq!(info_field(&mut c, "persistence", "loading"), "1");
    // The count of loaded keys grows while the load runs (2000 keys, 1 ms each).
    let growing = common::wait_until(Duration::from_secs(30), || {
        let info = text(&c.call(&["INFO", "persistence"]));
        let get = |name: &str| {
            info.lines()
                .find_map(|l| l.strip_prefix(&format!("{name}:")))
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        get("loading") == 1 && (1..2000).contains(&get("rdb_last_load_keys_loaded"))
    });
    assert!(
        growing,
        "rdb_last_load_keys_loaded did not grow during the load"
    );
    wait_loaded(&mut c);
    assert_eq!(c.call(&["DBSIZE"]), Frame::Integer(2000));
    assert_eq!(
        info_field(&mut c, "persistence", "rdb_last_load_keys_loaded"),
        "2000"
    );
}

// ---------------------------------------------------------------- DUMP and RESTORE

#[test]
fn dump_payloads_cross_between_tessera_and_redis() {
    let t = TestServer::start();
    let r = TestServer::redis();
    let (mut tc, mut rc) = (t.raw(), r.raw());
    populate(&mut rc, 6);
    populate(&mut tc, 6);
    let keys = match rc.call(&["KEYS", "*"]) {
        Frame::Array(k) => k,
        other => panic!("{}", fmt_frame(&other)),
    };
    for k in keys {
        let Frame::Bulk(key) = k else { panic!() };
        let key = key.as_slice();
        let Frame::Bulk(from_redis) = rc.call(&[b"DUMP".as_slice(), key]) else {
            panic!()
        };
        let Frame::Bulk(from_tessera) = tc.call(&[b"DUMP".as_slice(), key]) else {
            panic!()
        };
        let copy = [b"copy:".as_slice(), key].concat();
        assert_eq!(
            tc.call(&[b"RESTORE".as_slice(), &copy, b"0", &from_redis]),
            simple("OK")
        );
        assert_eq!(
            rc.call(&[b"RESTORE".as_slice(), &copy, b"0", &from_tessera]),
            simple("OK")
        );
    }
    // Each side holds its own originals and the other's copies: all equal.
    assert_eq!(describe(&mut tc), describe(&mut rc));
}

#[test]
fn restore_options_and_errors_match_redis() {
    let s = TestServer::start();
    let mut c = s.raw();
    c.call(&["RPUSH", "l", "a", "b"]);
    let Frame::Bulk(p) = c.call(&["DUMP", "l"]) else {
        panic!("DUMP")
    };
    let p = p.as_slice();
    assert_eq!(c.call(&["DUMP", "nokey"]), Frame::NullBulk);
    assert_eq!(
        c.call(&[b"RESTORE".as_slice(), b"l", b"0", p]),
        error("BUSYKEY Target key name already exists.")
    );
    assert_eq!(
        c.call(&[b"RESTORE".as_slice(), b"n", b"-1", p]),
        error("ERR Invalid TTL value, must be >= 0")
    );
    assert_eq!(
        c.call(&[b"RESTORE".as_slice(), b"n", b"x", p]),
        error("ERR value is not an integer or out of range")
    );
    assert_eq!(
        c.call(&[b"RESTORE".as_slice(), b"n", b"0", p, b"IDLETIME", b"-1"]),
        error("ERR Invalid IDLETIME value, must be >= 0")
    );
    assert_eq!(
        c.call(&[b"RESTORE".as_slice(), b"n", b"0", p, b"FREQ", b"256"]),
        error("ERR Invalid FREQ value, must be >= 0 and <= 255")
    );
    assert_eq!(
        c.call(&[
            b"RESTORE".as_slice(),
            b"n",
            b"0",
            p,
            b"IDLETIME",
            b"1",
            b"FREQ",
            b"1"
        ]),
        error("ERR syntax error")
    );
    assert_eq!(
        c.call(&[b"RESTORE".as_slice(), b"n", b"0", p, b"BOGUS"]),
        error("ERR syntax error")
    );
    assert_eq!(
        c.call(&[b"RESTORE".as_slice(), b"n", b"0", b"short"]),
        error("ERR DUMP payload version or checksum are wrong")
    );
    assert_eq!(
        c.call(&[
            b"RESTORE".as_slice(),
            b"l",
            b"0",
            p,
            b"REPLACE",
            b"IDLETIME",
            b"100"
        ]),
        simple("OK")
    );
    let idle = int(&c.call(&["OBJECT", "IDLETIME", "l"]));
    assert!((100..110).contains(&idle), "idle {idle}");
    assert_eq!(
        c.call(&[b"RESTORE".as_slice(), b"t", b"100000", p]),
        simple("OK")
    );
    let ttl = int(&c.call(&["PTTL", "t"]));
    assert!(ttl > 90_000 && ttl <= 100_000, "ttl {ttl}");
    // An absolute time already past: nothing is created, an existing key is deleted.
    assert_eq!(
        c.call(&[b"RESTORE".as_slice(), b"t", b"1", p, b"ABSTTL", b"REPLACE"]),
        simple("OK")
    );
    assert_eq!(c.call(&["EXISTS", "t"]), Frame::Integer(0));
    // A payload with a good checksum and a bad body.
    let mut body = vec![2u8, 0x80, 0xff, 0xff, 0xff, 0xff];
    body.extend_from_slice(&10u16.to_le_bytes());
    let crc = redis_crc64(&body);
    body.extend_from_slice(&crc.to_le_bytes());
    assert_eq!(
        c.call(&[b"RESTORE".as_slice(), b"bad", b"0", &body]),
        error("ERR Bad data format")
    );
}

#[test]
fn restore_asking_restores_as_restore_does_outside_cluster() {
    let s = TestServer::start();
    let mut c = s.raw();
    c.call(&["RPUSH", "l", "a", "b"]);
    let Frame::Bulk(p) = c.call(&["DUMP", "l"]) else {
        panic!("DUMP")
    };
    assert_eq!(
        c.call(&[b"RESTORE-ASKING".as_slice(), b"copy", b"0", &p]),
        Frame::Simple(b"OK".to_vec())
    );
    assert_eq!(
        c.call(&["LRANGE", "copy", "0", "-1"]),
        Frame::Array(vec![Frame::Bulk(b"a".to_vec()), Frame::Bulk(b"b".to_vec())])
    );
    assert_eq!(
        c.call(&[b"restore-asking".as_slice(), b"copy", b"0", &p]),
        error("BUSYKEY Target key name already exists.")
    );
    assert_eq!(
        c.call(&["RESTORE-ASKING", "x"]),
        error("ERR wrong number of arguments for 'restore-asking' command")
    );
}

#[test]
fn corrupted_restore_payloads_never_hurt_the_server() {
    // (redis-server needs sanitize-dump-payload to survive this; Tessera validates every payload
    // whatever the setting.)
    let mut s = TestServer::start_with(&["--sanitize-dump-payload", "yes"]);
    let mut c = s.raw();
    populate(&mut c, 7);
    let keys = match c.call(&["KEYS", "*"]) {
        Frame::Array(k) => k,
        other => panic!("{}", fmt_frame(&other)),
    };
    let mut rng = StdRng::seed_from_u64(8);
    for k in keys {
        let Frame::Bulk(key) = k else { panic!() };
        let Frame::Bulk(p) = c.call(&[b"DUMP".as_slice(), &key]) else {
            panic!()
        };
        for _ in 0..20 {
            let mut bad = p[..p.len() - 10].to_vec();
            for _ in 0..rng.gen_range(1..4) {
                let at = rng.gen_range(0..bad.len());
                bad[at] ^= 1 << rng.gen_range(0..8);
            }
            if rng.gen_bool(0.3) {
                bad.truncate(rng.gen_range(1..=bad.len()));
            }
            bad.extend_from_slice(&10u16.to_le_bytes());
            let crc = redis_crc64(&bad);
            bad.extend_from_slice(&crc.to_le_bytes());
            let reply = c.call(&[b"RESTORE".as_slice(), b"fuzzed", b"0", &bad, b"REPLACE"]);
            assert!(
                reply == simple("OK") || reply == error("ERR Bad data format"),
                "unexpected reply {}",
                fmt_frame(&reply)
            );
        }
    }
    s.assert_healthy();
}

/// Redis's CRC-64 (Jones polynomial, reflected), bit by bit: slow and obviously right.
fn redis_crc64(data: &[u8]) -> u64 {
    const POLY: u64 = 0x95ac_9329_ac4b_c9b5;
    let mut crc = 0u64;
    for &b in data {
        crc ^= b as u64;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ POLY
            } else {
                crc >> 1
            };
        }
    }
    crc
}

// ---------------------------------------------------------------- DEBUG DIGEST and RELOAD

#[test]
fn debug_digest_equals_redis_for_the_same_data() {
    let t = TestServer::start_with(&["--enable-debug-command", "yes"]);
    let r = TestServer::redis_with(&["--enable-debug-command", "yes"]);
    let (mut tc, mut rc) = (t.raw(), r.raw());
    assert_eq!(
        tc.call(&["DEBUG", "DIGEST"]),
        simple("0000000000000000000000000000000000000000")
    );
    populate(&mut tc, 9);
    populate(&mut rc, 9);
    assert_eq!(tc.call(&["DEBUG", "DIGEST"]), rc.call(&["DEBUG", "DIGEST"]));
    let keys = [
        "k0:0:9", "k0:1:9", "k0:2:9", "k0:3:9", "k0:4:9", "k0:5:9", "k0:6:9", "nokey",
    ];
    let mut args = vec!["DEBUG", "DIGEST-VALUE"];
    args.extend(keys);
    assert_eq!(tc.call(&args), rc.call(&args));
    // Scores that print differently in every notation.
    for c in [&mut tc, &mut rc] {
        c.call(&[
            "ZADD", "zs", "0.1", "a", "1e20", "b", "-2.5e-7", "c", "inf", "d",
        ]);
    }
    assert_eq!(
        tc.call(&["DEBUG", "DIGEST-VALUE", "zs"]),
        rc.call(&["DEBUG", "DIGEST-VALUE", "zs"])
    );
    assert_eq!(tc.call(&["DEBUG", "DIGEST"]), rc.call(&["DEBUG", "DIGEST"]));
}

#[test]
fn debug_reload_keeps_the_dataset() {
    let dir = DataDir::new("reload");
    let s = start(
        ServerKind::target(),
        &dir,
        &["--enable-debug-command", "yes"],
    );
    let mut c = s.raw();
    populate(&mut c, 10);
    let digest = c.call(&["DEBUG", "DIGEST"]);
    let before = describe(&mut c);
    assert_eq!(c.call(&["DEBUG", "RELOAD"]), simple("OK"));
    assert_eq!(c.call(&["DEBUG", "DIGEST"]), digest);
    assert_same_data(&describe(&mut c), &before, "after reload");
    assert_eq!(c.call(&["FCALL", "answer", "0"]), Frame::Integer(42));
    // NOFLUSH loads the file over the data still there: the libraries clash.
    assert_eq!(
        c.call(&["DEBUG", "RELOAD", "NOFLUSH"]),
        error("ERR Error trying to load the RDB dump")
    );
    c.call(&["DEL", "k0:0:10"]);
    assert_eq!(c.call(&["DEBUG", "RELOAD", "NOSAVE"]), simple("OK"));
    assert_eq!(c.call(&["DEBUG", "DIGEST"]), digest);
    assert_eq!(
        c.call(&["DEBUG", "RELOAD", "MERGE", "NOFLUSH", "NOSAVE"]),
        simple("OK")
    );
    assert_eq!(c.call(&["DEBUG", "DIGEST"]), digest);
}

/// INFO's `dump_payload_sanitizations` counts what Redis validates deeply: one per listpack or
/// intset blob, in RESTORE under `sanitize-dump-payload yes` (or `clients`, except for users
/// with `skip-sanitize-payload`), and in loaded files only under `yes`. Compared with
/// redis-server step by step; CONFIG RESETSTAT clears it (and `rdb_saves`).
#[test]
fn dump_payload_sanitizations_count_as_redis_counts_them() {
    let run = |kind: ServerKind| -> Vec<String> {
        let dir = DataDir::new("sanitize");
        let mut s = start(kind, &dir, &["--enable-debug-command", "yes"]);
        let mut c = s.raw();
        let mut seen = Vec::new();
        let mut note = |c: &mut RawClient, step: &str| {
            seen.push(format!(
                "{step}: {} (rdb_saves {})",
                info_field(c, "stats", "dump_payload_sanitizations"),
                info_field(c, "persistence", "rdb_saves")
            ));
        };
        c.call(&["HSET", "hash", "f1", "v1", "f2", "v2"]);
        c.call(&["ZADD", "zset", "1", "a", "2", "b"]);
        c.call(&["SADD", "intset", "1", "2", "3"]);
        c.call(&["SADD", "strset", "a", "b"]);
        c.call(&["RPUSH", "list", "a", "b", "c"]);
        c.call(&["SET", "str", "v"]);
        for i in 0..250 {
            c.call(&["XADD", "stream", &format!("1-{}", i + 1), "f", "v"]);
        }
        let keys = ["hash", "zset", "intset", "strset", "list", "str", "stream"];
        let dumps: Vec<Vec<u8>> = keys
            .iter()
            .map(|k| match c.call(&["DUMP", k]) {
                Frame::Bulk(p) => p,
                other => panic!("DUMP {k}: {}", fmt_frame(&other)),
            })
            .collect();
        let restore_all = |c: &mut RawClient| {
            for (k, p) in keys.iter().zip(&dumps) {
                let copy = format!("copy:{k}");
                let reply = c.call(&[b"RESTORE".as_slice(), copy.as_bytes(), b"0", p, b"REPLACE"]);
                assert_eq!(reply, simple("OK"), "RESTORE {k}");
            }
        };
        note(&mut c, "start");
        restore_all(&mut c);
        note(&mut c, "restore, no");
        c.call(&["CONFIG", "SET", "sanitize-dump-payload", "yes"]);
        restore_all(&mut c);
        note(&mut c, "restore, yes");
        assert_eq!(c.call(&["DEBUG", "RELOAD"]), simple("OK"));
        note(&mut c, "reload, yes");
        c.call(&["CONFIG", "SET", "sanitize-dump-payload", "clients"]);
        restore_all(&mut c);
        note(&mut c, "restore, clients");
        assert_eq!(c.call(&["DEBUG", "RELOAD"]), simple("OK"));
        note(&mut c, "reload, clients");
        c.call(&[
            "ACL",
            "SETUSER",
            "skipper",
            "on",
            "nopass",
            "+@all",
            "~*",
            "skip-sanitize-payload",
        ]);
        c.call(&[
            "ACL",
            "SETUSER",
            "checked",
            "on",
            "nopass",
            "+@all",
            "~*",
            "sanitize-payload",
        ]);
        assert_eq!(c.call(&["AUTH", "skipper", "x"]), simple("OK"));
        restore_all(&mut c);
        note(&mut c, "restore, clients, skip-sanitize-payload");
        assert_eq!(c.call(&["AUTH", "checked", "x"]), simple("OK"));
        restore_all(&mut c);
        note(&mut c, "restore, clients, sanitize-payload");
        assert_eq!(c.call(&["SAVE"]), simple("OK"));
        note(&mut c, "save");
        c.call(&["CONFIG", "RESETSTAT"]);
        note(&mut c, "resetstat");
        s.assert_healthy();
        seen
    };
    let tessera = run(ServerKind::Tessera);
    let redis = run(ServerKind::Redis);
    assert_eq!(tessera, redis);
}

// ---------------------------------------------------------------- SYNC

/// SYNC, the legacy full synchronization: the snapshot as one bulk of RDB bytes (redis-server
/// may send newlines first while it prepares it), then every write as the commands a replica
/// applies.
#[test]
fn sync_sends_a_snapshot_then_the_write_stream() {
    use std::io::Read;
    let s = TestServer::start();
    let mut c = s.raw();
    c.call(&["SET", "before", "1"]);
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", s.port())).expect("connect");
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .expect("timeout");
    use std::io::Write;
    stream.write_all(b"SYNC\r\n").expect("send");
    let mut byte = [0u8; 1];
    loop {
        stream.read_exact(&mut byte).expect("read");
        if byte[0] != b'\n' {
            break;
        }
    }
    assert_eq!(byte[0], b'$', "the snapshot is a bulk");
    let mut len = Vec::new();
    loop {
        stream.read_exact(&mut byte).expect("read");
        if byte[0] == b'\r' {
            stream.read_exact(&mut byte).expect("read");
            break;
        }
        len.push(byte[0]);
    }
    let len: usize = String::from_utf8_lossy(&len).parse().expect("length");
    let mut rdb = vec![0u8; len];
    stream.read_exact(&mut rdb).expect("the snapshot");
    assert!(rdb.starts_with(b"REDIS"));
    let dir = DataDir::new("sync");
    fs::write(dir.rdb(), &rdb).expect("write");
    check_rdb(&dir.rdb());

    c.call(&["SET", "after", "2"]);
    c.call(&["INCR", "before"]);
    // The stream: the writes after the snapshot, in order (PINGs aside).
    let mut got: Vec<Vec<String>> = Vec::new();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while got.iter().filter(|c| c[0] != "PING").count() < 3 {
        let n = stream.read(&mut chunk).expect("read the stream");
        assert!(n > 0, "stream closed");
        buf.extend_from_slice(&chunk[..n]);
        while let Ok(Some((frame, used))) = tessera_resp::frame::parse_frame(&buf) {
            buf.drain(..used);
            if let Frame::Array(items) = frame {
                got.push(
                    items
                        .iter()
                        .map(|i| match i {
                            Frame::Bulk(b) => String::from_utf8_lossy(b).to_uppercase(),
                            other => fmt_frame(other),
                        })
                        .collect(),
                );
            }
        }
    }
    let writes: Vec<Vec<String>> = got.into_iter().filter(|c| c[0] != "PING").collect();
    assert_eq!(
        writes,
        vec![
            vec!["SELECT".to_string(), "0".into()],
            vec!["SET".into(), "AFTER".into(), "2".into()],
            vec!["INCR".into(), "BEFORE".into()],
        ]
    );
}

/// Kills the server with SIGKILL, starts it again on its files, and connects once it has loaded.
fn crash_and_restart(t: &mut TestServer) -> RawClient {
    t.kill_hard();
    t.restart();
    let mut c = t.raw();
    wait_loaded(&mut c);
    c
}

/// FLUSHALL with save rules saves the emptied dataset at once (stopping a background save of
/// the old data first), so a crash right after it cannot bring the flushed keys back; without
/// rules it saves nothing. Inside MULTI the save is the flush's too. As redis-server does.
#[test]
fn flushall_with_save_rules_saves_the_empty_dataset_at_once() {
    for kind in [ServerKind::Tessera, ServerKind::Redis] {
        let dir = DataDir::new("flushall");
        let mut t = start(kind, &dir, &["--save", "3600 1"]);
        let mut c = t.raw();
        c.call(&["SET", "a", "1"]);
        assert_eq!(c.call(&["SAVE"]), simple("OK"));
        c.call(&["SET", "b", "2"]);
        assert_eq!(c.call(&["FLUSHALL"]), simple("OK"));
        assert_eq!(
            info_field(&mut c, "persistence", "rdb_changes_since_last_save"),
            "0",
            "{}",
            kind.name()
        );
        let mut c = crash_and_restart(&mut t);
        assert_eq!(c.call(&["DBSIZE"]), Frame::Integer(0), "{}", kind.name());

        // A background save still writing the old keys is stopped, not left to replace the
        // empty file when it ends.
        for i in 0..40 {
            c.call(&["SET", &format!("k{i}"), "v"]);
        }
        assert_eq!(c.call(&["SAVE"]), simple("OK"));
        assert_eq!(
            c.call(&["CONFIG", "SET", "rdb-key-save-delay", "100000"]),
            simple("OK")
        );
        assert_eq!(c.call(&["BGSAVE"]), simple("Background saving started"));
        assert_eq!(c.call(&["FLUSHALL"]), simple("OK"));
        assert!(
            common::wait_until(Duration::from_secs(30), || info_field(
                &mut c,
                "persistence",
                "rdb_bgsave_in_progress"
            ) == "0"),
            "{}: the background save went on after FLUSHALL",
            kind.name()
        );
        assert_eq!(
            info_field(&mut c, "persistence", "rdb_last_bgsave_status"),
            "ok"
        );
        c.call(&["CONFIG", "SET", "rdb-key-save-delay", "0"]);
        std::thread::sleep(Duration::from_millis(500));
        let mut c = crash_and_restart(&mut t);
        assert_eq!(c.call(&["DBSIZE"]), Frame::Integer(0), "{}", kind.name());

        // Inside a transaction.
        c.call(&["SET", "x", "1"]);
        assert_eq!(c.call(&["SAVE"]), simple("OK"));
        let replies = c.pipeline(&[
            vec!["MULTI"],
            vec!["SET", "y", "2"],
            vec!["FLUSHALL"],
            vec!["EXEC"],
        ]);
        assert_eq!(
            replies[3],
            Frame::Array(vec![simple("OK"), simple("OK")]),
            "{}",
            kind.name()
        );
        let mut c = crash_and_restart(&mut t);
        assert_eq!(c.call(&["DBSIZE"]), Frame::Integer(0), "{}", kind.name());
        t.stop();

        // Without save rules FLUSHALL writes no file and the changes stay counted.
        let dir = DataDir::new("flushall-nosave");
        let mut t = start(kind, &dir, &["--save", ""]);
        let mut c = t.raw();
        c.call(&["SET", "a", "1"]);
        c.call(&["FLUSHALL"]);
        assert_ne!(
            info_field(&mut c, "persistence", "rdb_changes_since_last_save"),
            "0"
        );
        assert!(!dir.rdb().exists(), "{}", kind.name());
        t.stop();
    }
}
