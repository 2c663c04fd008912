//! maxmemory and the eviction policies. Each test starts a server with `--maxmemory 20mb` and one
//! policy, writes about three times that much in 1 KB values through pipelines, and checks what
//! Redis 7.0 guarantees: noeviction refuses writes with the OOM error, allkeys-* keep the server
//! usable near the limit by evicting, volatile-* only ever evict keys with a TTL, and volatile-ttl
//! prefers the nearest expiry. Memory figures differ between servers, so the checks are relative
//! (fractions of what was written, the configured limit), never exact counts.

mod common;

use common::{fmt_frame, simple, Frame, RawClient, TestServer};
use std::collections::BTreeMap;

const LIMIT: u64 = 20 * 1024 * 1024;
const VALUE_LEN: usize = 1024;
/// About three times the limit in values alone.
const TOTAL_KEYS: usize = 3 * (LIMIT as usize) / VALUE_LEN;
const BATCH: usize = 500;
const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";

fn start(policy: &str) -> TestServer {
    TestServer::start_with(&["--maxmemory", "20mb", "--maxmemory-policy", policy])
}

fn value() -> String {
    "x".repeat(VALUE_LEN)
}

fn info(raw: &mut RawClient, section: &str) -> BTreeMap<String, String> {
    let text = match raw.call(&["INFO", section]) {
        Frame::Bulk(b) => String::from_utf8(b).unwrap(),
        other => panic!("INFO answered {}", fmt_frame(&other)),
    };
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_string(), v.trim_end().to_string()))
        .collect()
}

fn stat(raw: &mut RawClient, section: &str, name: &str) -> u64 {
    info(raw, section)
        .get(name)
        .unwrap_or_else(|| panic!("no {name} in INFO {section}"))
        .parse()
        .unwrap()
}

fn dbsize(raw: &mut RawClient) -> usize {
    match raw.call(&["DBSIZE"]) {
        Frame::Integer(n) => n as usize,
        other => panic!("DBSIZE answered {}", fmt_frame(&other)),
    }
}

/// SETs `prefix:i` for i in `range`, optionally with `EX ttl(i)`, in pipelined batches. Returns
/// the replies in order.
fn write_keys(
    raw: &mut RawClient,
    prefix: &str,
    range: std::ops::Range<usize>,
    ttl: Option<&dyn Fn(usize) -> u64>,
) -> Vec<Frame> {
    let v = value();
    let mut replies = Vec::with_capacity(range.len());
    let ids: Vec<usize> = range.collect();
    for chunk in ids.chunks(BATCH) {
        let cmds: Vec<Vec<String>> = chunk
            .iter()
            .map(|&i| {
                let mut c = vec!["SET".to_string(), format!("{prefix}:{i}"), v.clone()];
                if let Some(ttl) = ttl {
                    c.push("EX".into());
                    c.push(ttl(i).to_string());
                }
                c
            })
            .collect();
        replies.extend(raw.pipeline(&cmds));
    }
    replies
}

/// Which of `prefix:i` for i in `range` exist, asked in batches (small pipelines, so that the
/// check itself does not need much memory).
fn existing(raw: &mut RawClient, prefix: &str, range: std::ops::Range<usize>) -> Vec<bool> {
    let ids: Vec<usize> = range.collect();
    let mut out = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(BATCH) {
        let cmds: Vec<Vec<String>> = chunk
            .iter()
            .map(|&i| vec!["EXISTS".to_string(), format!("{prefix}:{i}")])
            .collect();
        for r in raw.pipeline(&cmds) {
            match r {
                Frame::Integer(n) => out.push(n == 1),
                other => panic!("EXISTS answered {}", fmt_frame(&other)),
            }
        }
    }
    out
}

fn assert_all_ok(replies: &[Frame], what: &str) {
    if let Some((i, bad)) = replies
        .iter()
        .enumerate()
        .find(|(_, r)| **r != simple("OK"))
    {
        panic!(
            "{what}: reply {i} of {} was {} (an evicting policy must not refuse writes)",
            replies.len(),
            fmt_frame(bad)
        );
    }
}

fn assert_memory_near_limit(raw: &mut RawClient) {
    let mem = info(raw, "memory");
    assert_eq!(mem["maxmemory"], LIMIT.to_string());
    let used: u64 = mem["used_memory"].parse().unwrap();
    assert!(
        used <= LIMIT + LIMIT / 10,
        "used_memory {used} is more than 10% over maxmemory {LIMIT}"
    );
}

fn assert_still_usable(raw: &mut RawClient) {
    assert_eq!(raw.call(&["SET", "after-fill", "ok"]), simple("OK"));
    assert_eq!(raw.call(&["GET", "after-fill"]), common::bulk("ok"));
    assert_eq!(raw.call(&["PING"]), simple("PONG"));
}

// ---------------------------------------------------------------- noeviction

#[test]
fn noeviction_refuses_writes_over_the_limit() {
    let s = start("noeviction");
    let mut raw = s.raw();
    let v = value();
    let mut written = 0usize;
    let mut refused = None;
    'fill: for start in (0..TOTAL_KEYS).step_by(BATCH) {
        let replies = write_keys(&mut raw, "k", start..(start + BATCH).min(TOTAL_KEYS), None);
        for r in replies {
            if r == simple("OK") {
                written += 1;
            } else {
                refused = Some(r);
                break 'fill;
            }
        }
    }
    let refused = refused.expect("noeviction never refused a write after 3x maxmemory");
    assert_eq!(refused, common::error(OOM));
    assert!(
        written > TOTAL_KEYS / 10,
        "only {written} keys fit under 20mb"
    );
    // Nothing was evicted: every accepted key is still there (some of the refused batch may
    // have been accepted after the first refusal, never fewer).
    assert!(dbsize(&mut raw) >= written);
    assert_eq!(stat(&mut raw, "stats", "evicted_keys"), 0);
    assert_memory_near_limit(&mut raw);
    // Writes keep being refused, whatever their size; reads and deletes work.
    assert_eq!(raw.call(&["SET", "tiny", "1"]), common::error(OOM));
    assert_eq!(raw.call(&["SET", "k:0", &v]), common::error(OOM));
    assert_eq!(raw.call(&["APPEND", "k:0", "x"]), common::error(OOM));
    assert_eq!(raw.call(&["GET", "k:0"]), common::bulk(&v));
    assert_eq!(raw.call(&["EXISTS", "k:1"]), Frame::Integer(1));
    assert_eq!(raw.call(&["PING"]), simple("PONG"));
    // Deleting makes room again.
    let dels: Vec<Vec<String>> = (0..written / 2)
        .map(|i| vec!["DEL".to_string(), format!("k:{i}")])
        .collect();
    for chunk in dels.chunks(BATCH) {
        for r in raw.pipeline(chunk) {
            assert_eq!(r, Frame::Integer(1));
        }
    }
    assert!(
        common::wait_until(std::time::Duration::from_secs(10), || {
            raw.call(&["SET", "tiny", "1"]) == simple("OK")
        }),
        "still refusing writes after deleting half the keys"
    );
}

#[test]
fn volatile_policy_without_volatile_keys_refuses_writes() {
    let s = start("volatile-lru");
    let mut raw = s.raw();
    let mut refused = None;
    'fill: for start in (0..TOTAL_KEYS).step_by(BATCH) {
        for r in write_keys(&mut raw, "k", start..(start + BATCH).min(TOTAL_KEYS), None) {
            if r != simple("OK") {
                refused = Some(r);
                break 'fill;
            }
        }
    }
    assert_eq!(
        refused.expect("volatile-lru with no TTL keys never refused a write"),
        common::error(OOM)
    );
    assert_eq!(stat(&mut raw, "stats", "evicted_keys"), 0);
}

// ---------------------------------------------------------------- allkeys-*

fn allkeys_policy_keeps_the_server_within_the_limit(policy: &str) {
    let s = start(policy);
    let mut raw = s.raw();
    let replies = write_keys(&mut raw, "k", 0..TOTAL_KEYS, None);
    assert_all_ok(&replies, policy);
    let n = dbsize(&mut raw);
    assert!(
        n < TOTAL_KEYS / 2,
        "{policy}: {n} of {TOTAL_KEYS} keys left: nothing much was evicted"
    );
    assert!(n > TOTAL_KEYS / 20, "{policy}: only {n} keys left");
    let evicted = stat(&mut raw, "stats", "evicted_keys");
    assert!(evicted > 0, "{policy}: evicted_keys is 0");
    // Every key is either present or was evicted.
    assert!(
        evicted as usize + n >= TOTAL_KEYS,
        "{policy}: {n} present + {evicted} evicted < {TOTAL_KEYS} written"
    );
    assert_memory_near_limit(&mut raw);
    assert_eq!(info(&mut raw, "memory")["maxmemory_policy"], policy);
    assert_still_usable(&mut raw);
    // Survivors are intact.
    let present = existing(&mut raw, "k", TOTAL_KEYS - 100..TOTAL_KEYS);
    if let Some(i) = present.iter().position(|&p| p) {
        let key = format!("k:{}", TOTAL_KEYS - 100 + i);
        assert_eq!(raw.call(&["GET", &key]), common::bulk(value()));
    }
}

#[test]
fn allkeys_lru_evicts_to_stay_under_maxmemory() {
    allkeys_policy_keeps_the_server_within_the_limit("allkeys-lru");
}

#[test]
fn allkeys_lfu_evicts_to_stay_under_maxmemory() {
    allkeys_policy_keeps_the_server_within_the_limit("allkeys-lfu");
}

#[test]
fn allkeys_random_evicts_to_stay_under_maxmemory() {
    allkeys_policy_keeps_the_server_within_the_limit("allkeys-random");
}

// ---------------------------------------------------------------- volatile-*

/// Keys without a TTL: about a fifth of the limit.
const PERSISTENT_KEYS: usize = 3000;
/// Keys with a TTL: enough to overflow the limit about three times.
const VOLATILE_KEYS: usize = TOTAL_KEYS - PERSISTENT_KEYS;

/// A permutation of 0..VOLATILE_KEYS (7919 is prime and does not divide VOLATILE_KEYS), so that
/// TTL order is unrelated to write order.
fn ttl_rank(i: usize) -> usize {
    (i * 7919) % VOLATILE_KEYS
}

/// Writes the persistent keys, then the volatile ones (TTLs ordered by `ttl_rank`), and checks
/// what every volatile policy must do. Returns which volatile keys survived.
fn volatile_fill(s: &TestServer, policy: &str) -> Vec<bool> {
    assert_ne!(VOLATILE_KEYS % 7919, 0);
    let mut raw = s.raw();
    let replies = write_keys(&mut raw, "keep", 0..PERSISTENT_KEYS, None);
    assert_all_ok(&replies, policy);
    let ttl = |i: usize| 100_000 + ttl_rank(i) as u64;
    let replies = write_keys(&mut raw, "vol", 0..VOLATILE_KEYS, Some(&ttl));
    assert_all_ok(&replies, policy);

    let evicted = stat(&mut raw, "stats", "evicted_keys");
    assert!(evicted > 0, "{policy}: evicted_keys is 0");
    assert_memory_near_limit(&mut raw);
    // Keys without a TTL are never evicted.
    let kept = existing(&mut raw, "keep", 0..PERSISTENT_KEYS);
    let lost = kept.iter().filter(|&&k| !k).count();
    assert_eq!(lost, 0, "{policy} evicted {lost} keys that have no TTL");
    let vol = existing(&mut raw, "vol", 0..VOLATILE_KEYS);
    let survivors = vol.iter().filter(|&&k| k).count();
    assert!(
        survivors < VOLATILE_KEYS / 2,
        "{policy}: {survivors} of {VOLATILE_KEYS} volatile keys left"
    );
    assert!(survivors > 0, "{policy}: every volatile key was evicted");
    // Each command may evict a few more keys (the server hovers at the limit), so later counts
    // can only be lower, and always consistent: keys = persistent + volatile.
    let n = dbsize(&mut raw);
    assert!(
        (PERSISTENT_KEYS..=PERSISTENT_KEYS + survivors).contains(&n),
        "{policy}: DBSIZE {n}"
    );
    let ks = info(&mut raw, "keyspace");
    let db0: BTreeMap<&str, usize> = ks["db0"]
        .split(',')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k, v.parse().unwrap()))
        .collect();
    assert_eq!(
        db0["keys"] - db0["expires"],
        PERSISTENT_KEYS,
        "{policy}: {}",
        ks["db0"]
    );
    assert_still_usable(&mut raw);
    vol
}

#[test]
fn volatile_lru_evicts_only_keys_with_a_ttl() {
    let s = start("volatile-lru");
    volatile_fill(&s, "volatile-lru");
}

#[test]
fn volatile_lfu_evicts_only_keys_with_a_ttl() {
    let s = start("volatile-lfu");
    volatile_fill(&s, "volatile-lfu");
}

#[test]
fn volatile_random_evicts_only_keys_with_a_ttl() {
    let s = start("volatile-random");
    volatile_fill(&s, "volatile-random");
}

#[test]
fn volatile_ttl_evicts_the_nearest_expiry_first() {
    let s = start("volatile-ttl");
    let vol = volatile_fill(&s, "volatile-ttl");
    // Survival by TTL quartile: shortest TTLs first.
    let mut by_quartile = [0usize; 4];
    for (i, &present) in vol.iter().enumerate() {
        if present {
            by_quartile[ttl_rank(i) * 4 / VOLATILE_KEYS] += 1;
        }
    }
    let per_quartile = VOLATILE_KEYS / 4;
    eprintln!("volatile-ttl survivors by TTL quartile (of {per_quartile} each): {by_quartile:?}");
    assert!(
        by_quartile[0] * 4 < by_quartile[3],
        "shortest-TTL quartile kept {} keys, longest kept {}: not evicting nearest expiry first",
        by_quartile[0],
        by_quartile[3]
    );
}

/// Lowering maxmemory far under what is in use evicts everything evictable with no command
/// after CONFIG SET: what one call leaves (Redis bounds it in time, Tessera in keys) is finished
/// in the background, as Redis's eviction timer finishes it. Seen through the evicted events.
#[test]
fn eviction_started_by_config_set_finishes_without_commands() {
    const KEYS: usize = 20_000;
    let s = TestServer::start_with(&["--maxmemory-policy", "allkeys-random"]);
    let mut raw = s.raw();
    assert_eq!(
        raw.call(&["CONFIG", "SET", "notify-keyspace-events", "Ee"]),
        simple("OK")
    );
    write_keys(&mut raw, "k", 0..KEYS, None);
    assert_eq!(dbsize(&mut raw), KEYS);
    let mut sub = s.raw();
    sub.set_timeout(std::time::Duration::from_secs(60));
    sub.send(&["SUBSCRIBE", "__keyevent@0__:evicted"]);
    sub.read_frame();
    assert_eq!(raw.call(&["CONFIG", "SET", "maxmemory", "1"]), simple("OK"));
    for n in 0..KEYS {
        match sub.read_frame() {
            Frame::Array(items) if items.len() == 3 => {}
            other => panic!("event {n}: {}", fmt_frame(&other)),
        }
    }
    assert_eq!(raw.call(&["CONFIG", "SET", "maxmemory", "0"]), simple("OK"));
    assert_eq!(dbsize(&mut raw), 0);
    assert_eq!(stat(&mut raw, "stats", "evicted_keys"), KEYS as u64);
}
