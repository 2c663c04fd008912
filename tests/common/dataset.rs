//! Datasets and data directories for the persistence tests: a seeded generator of every type
//! in each encoding, a description of a whole dataset two servers can be compared by, and helpers
//! to start servers on a directory and read INFO fields.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{fmt_frame, simple, Frame, RawClient, ServerKind, TestServer};

/// A directory of the test's own, removed on drop.
pub struct DataDir(pub PathBuf);

impl DataDir {
    pub fn new(tag: &str) -> DataDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join("tessera-tests").join(format!(
            "persist-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("create data dir");
        DataDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn arg(&self) -> String {
        self.0.display().to_string()
    }

    pub fn rdb(&self) -> PathBuf {
        self.0.join("dump.rdb")
    }
}

impl Drop for DataDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

pub fn start(kind: ServerKind, dir: &DataDir, extra: &[&str]) -> TestServer {
    let d = dir.arg();
    let mut args = vec!["--dir", d.as_str()];
    args.extend_from_slice(extra);
    let s = TestServer::start_kind(kind, &args);
    wait_loaded(&mut s.raw());
    s
}

/// Waits until the server answers PING with PONG (not -LOADING).
pub fn wait_loaded(c: &mut RawClient) {
    assert!(
        super::wait_until(Duration::from_secs(60), || c.call(&["PING"])
            == simple("PONG")),
        "server still loading after 60 s"
    );
}

pub fn int(f: &Frame) -> i64 {
    match f {
        Frame::Integer(n) => *n,
        other => panic!("expected an integer, got {}", fmt_frame(other)),
    }
}

pub fn text(f: &Frame) -> String {
    match f {
        Frame::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        Frame::Simple(s) => String::from_utf8_lossy(s).into_owned(),
        other => panic!("expected a string, got {}", fmt_frame(other)),
    }
}

pub fn info_field(c: &mut RawClient, section: &str, field: &str) -> String {
    let info = text(&c.call(&["INFO", section]));
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")).map(str::to_string))
        .unwrap_or_else(|| panic!("INFO {section} has no {field}"))
}

pub fn strings(f: &Frame) -> Vec<String> {
    match f {
        Frame::Array(items) => items.iter().map(fmt_frame).collect(),
        other => vec![fmt_frame(other)],
    }
}

/// Every key of databases 0..3 with its type, encoding, contents and whether it has a TTL, in a
/// form two servers can be compared by.
pub fn describe(c: &mut RawClient) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for db in 0..3 {
        assert_eq!(c.call(&["SELECT", &db.to_string()]), simple("OK"));
        let keys = match c.call(&["KEYS", "*"]) {
            Frame::Array(k) => k,
            other => panic!("KEYS: {}", fmt_frame(&other)),
        };
        for k in keys {
            let Frame::Bulk(key) = k else { panic!("key") };
            let key = key.as_slice();
            let ty = text(&c.call(&[b"TYPE".as_slice(), key]));
            let enc = text(&c.call(&[b"OBJECT".as_slice(), b"ENCODING", key]));
            let body: Vec<String> = match ty.as_str() {
                "string" => vec![fmt_frame(&c.call(&[b"GET".as_slice(), key]))],
                "list" => strings(&c.call(&[b"LRANGE".as_slice(), key, b"0", b"-1"])),
                "set" => {
                    let mut v = strings(&c.call(&[b"SMEMBERS".as_slice(), key]));
                    v.sort();
                    v
                }
                "hash" => {
                    let flat = strings(&c.call(&[b"HGETALL".as_slice(), key]));
                    let mut pairs: Vec<String> = flat.chunks(2).map(|p| p.join("=")).collect();
                    pairs.sort();
                    pairs
                }
                "zset" => {
                    strings(&c.call(&[b"ZRANGE".as_slice(), key, b"0", b"-1", b"WITHSCORES"]))
                }
                "stream" => {
                    let mut v = strings(&c.call(&[b"XRANGE".as_slice(), key, b"-", b"+"]));
                    v.push(fmt_frame(&c.call(&[b"XINFO".as_slice(), b"GROUPS", key])));
                    v
                }
                other => panic!("unexpected type {other}"),
            };
            let ttl = int(&c.call(&[b"PTTL".as_slice(), key])) > 0;
            out.insert(
                format!("{db}:{}", String::from_utf8_lossy(key)),
                format!("{ty}/{enc}/ttl={ttl}: {}", body.join(" ")),
            );
        }
    }
    assert_eq!(c.call(&["SELECT", "0"]), simple("OK"));
    out
}

pub fn member(rng: &mut StdRng) -> String {
    match rng.gen_range(0..4) {
        0 => rng.gen_range(-5000i64..5000).to_string(),
        1 => rng.gen::<i64>().to_string(),
        2 => format!("m{}", rng.gen_range(0..100_000)),
        _ => "x".repeat(rng.gen_range(30..120)),
    }
}

/// A seeded dataset of every type in each of its encodings, with TTLs, over three databases,
/// and a function library.
pub fn populate(c: &mut RawClient, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut cmds: Vec<Vec<String>> = Vec::new();
    for db in 0..3 {
        cmds.push(vec!["SELECT".into(), db.to_string()]);
        for i in 0..40 {
            // (Keys carry the seed: one server can be populated twice.)
            let k = format!("k{db}:{i}:{seed}");
            let small = rng.gen_bool(0.5);
            let n = if small {
                rng.gen_range(1..10)
            } else {
                rng.gen_range(130..700)
            };
            match i % 7 {
                0 => {
                    let v = match rng.gen_range(0..3) {
                        0 => rng.gen::<i64>().to_string(),
                        1 => "v".repeat(rng.gen_range(0..40)),
                        _ => "abc".repeat(rng.gen_range(10..2000)),
                    };
                    cmds.push(vec!["SET".into(), k.clone(), v]);
                }
                1 => {
                    let mut c = vec!["RPUSH".into(), k.clone()];
                    c.extend((0..n).map(|_| member(&mut rng)));
                    cmds.push(c);
                }
                2 => {
                    let mut c = vec!["SADD".into(), k.clone()];
                    if rng.gen_bool(0.5) {
                        c.extend((0..n).map(|j| (j * 3 - 50).to_string()));
                    } else {
                        c.extend((0..n).map(|_| member(&mut rng)));
                    }
                    cmds.push(c);
                }
                3 => {
                    let mut c = vec!["HSET".into(), k.clone()];
                    for j in 0..n {
                        c.push(format!("f{j}"));
                        c.push(member(&mut rng));
                    }
                    cmds.push(c);
                }
                4 => {
                    let mut c = vec!["ZADD".into(), k.clone()];
                    for j in 0..n {
                        let score = match rng.gen_range(0..3) {
                            0 => rng.gen_range(-100i64..100).to_string(),
                            1 => format!("{}", rng.gen::<f64>() * 1e6),
                            _ => "inf".into(),
                        };
                        c.push(score);
                        c.push(format!("{}{j}", member(&mut rng)));
                    }
                    cmds.push(c);
                }
                5 => {
                    for j in 1..=n.min(150) {
                        let mut c =
                            vec!["XADD".into(), k.clone(), format!("{}-{}", j / 3 + 1, j % 3)];
                        for f in 0..rng.gen_range(1..4) {
                            c.push(format!("field{f}"));
                            c.push(member(&mut rng));
                        }
                        cmds.push(c);
                    }
                    if rng.gen_bool(0.5) {
                        cmds.push(vec!["XDEL".into(), k.clone(), "1-1".into()]);
                    }
                    cmds.push(vec![
                        "XGROUP".into(),
                        "CREATE".into(),
                        k.clone(),
                        "g1".into(),
                        "0".into(),
                    ]);
                    cmds.push(vec![
                        "XREADGROUP".into(),
                        "GROUP".into(),
                        "g1".into(),
                        "alice".into(),
                        "COUNT".into(),
                        "3".into(),
                        "STREAMS".into(),
                        k.clone(),
                        ">".into(),
                    ]);
                }
                _ => cmds.push(vec![
                    "SET".into(),
                    k.clone(),
                    rng.gen_range(0..10_000).to_string(),
                ]),
            }
            if rng.gen_bool(0.3) {
                cmds.push(vec![
                    "EXPIRE".into(),
                    k,
                    rng.gen_range(1000..100_000).to_string(),
                ]);
            }
        }
    }
    cmds.push(vec!["SELECT".into(), "0".into()]);
    cmds.push(vec![
        "FUNCTION".into(),
        "LOAD".into(),
        "REPLACE".into(),
        "#!lua name=persisted\nredis.register_function('answer', function() return 42 end)".into(),
    ]);
    for reply in c.pipeline(&cmds) {
        if let Frame::Error(e) = &reply {
            panic!("populating: {}", String::from_utf8_lossy(e));
        }
    }
}

/// Runs a command that should exit by itself within 30 s (killed otherwise): its exit code
/// (None when killed) and its output.
pub fn run_to_exit(cmd: &mut Command, log: &Path) -> (Option<i32>, String) {
    let out = fs::File::create(log).expect("create log");
    let err = out.try_clone().expect("clone log");
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .expect("spawn");
    let exited = super::wait_until(Duration::from_secs(30), || {
        matches!(child.try_wait(), Ok(Some(_)))
    });
    if !exited {
        let _ = child.kill();
    }
    let status = child.wait().ok().and_then(|s| s.code());
    let text = fs::read_to_string(log).unwrap_or_default();
    (if exited { status } else { None }, text)
}

pub fn check_rdb(path: &Path) {
    let out = Command::new("redis-check-rdb")
        .arg(path)
        .output()
        .expect("run redis-check-rdb (apt-get install redis-tools)");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("RDB looks OK"),
        "redis-check-rdb refused {}:\n{text}",
        path.display()
    );
}

/// Asserts two dataset descriptions are equal, naming only the keys that differ (a whole dataset
/// is too long to read).
pub fn assert_same_data(
    got: &BTreeMap<String, String>,
    want: &BTreeMap<String, String>,
    what: &str,
) {
    let short = |s: Option<&String>| match s {
        None => "(missing)".to_string(),
        Some(s) if s.len() > 300 => format!("{}...", &s[..300]),
        Some(s) => s.clone(),
    };
    let mut diffs = Vec::new();
    for k in want.keys().chain(got.keys()) {
        if got.get(k) != want.get(k) && !diffs.iter().any(|(d, _, _)| d == k) {
            diffs.push((k.clone(), short(got.get(k)), short(want.get(k))));
        }
    }
    assert!(
        diffs.is_empty(),
        "{what}: {} keys differ, first ones:\n{}",
        diffs.len(),
        diffs
            .iter()
            .take(4)
            .map(|(k, g, w)| format!("{k}\n  got:  {g}\n  want: {w}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// A description with the consumer groups' `entries-read` (and the `lag` derived from it)
/// blanked: replaying an AOF loses them in Redis 7.0 (its XREADGROUP propagates as XCLAIM with
/// LASTID, which leaves the read counter unknown), so AOF round trips compare without them.
pub fn without_read_counters(d: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let blank = |s: &str, field: &str| -> String {
        let marker = format!("\"{field}\", ");
        let mut out = String::new();
        let mut rest = s;
        while let Some(i) = rest.find(&marker) {
            out.push_str(&rest[..i + marker.len()]);
            rest = &rest[i + marker.len()..];
            let end = rest.find([',', ']']).unwrap_or(rest.len());
            out.push('_');
            rest = &rest[end..];
        }
        out.push_str(rest);
        out
    };
    d.iter()
        .map(|(k, v)| (k.clone(), blank(&blank(v, "entries-read"), "lag")))
        .collect()
}

/// `d` with the raw and embstr encodings of strings made one: a value built in place (APPEND,
/// SETRANGE) is raw where it was written and embstr where a snapshot loaded it, in redis-server
/// too.
#[allow(dead_code)]
pub fn without_string_encodings(d: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    d.iter()
        .map(|(k, v)| {
            let v = v.replacen("string/raw/", "string/str/", 1).replacen(
                "string/embstr/",
                "string/str/",
                1,
            );
            (k.clone(), v)
        })
        .collect()
}
