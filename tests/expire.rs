//! Expiry commands through the `redis` crate. Expected values are what redis-server 7.0 replies.
//! No timing assertions: relative TTLs are checked by range, real expiry by polling with generous
//! limits.

mod common;

use common::{q, q_err, wait_until, TestServer};
use redis::Value;
use std::time::Duration;

fn server() -> (TestServer, redis::Connection) {
    let s = TestServer::start();
    let c = s.client();
    (s, c)
}

#[test]
fn expire_sets_ttl_in_seconds() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "k", "v"]);
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", "k", "100"]), 1);
    assert!((1..=100).contains(&q::<i64>(&mut c, &["TTL", "k"])));
    let pttl: i64 = q(&mut c, &["PTTL", "k"]);
    assert!((1..=100_000).contains(&pttl), "pttl {pttl}");
}

#[test]
fn pexpire_sets_ttl_in_milliseconds() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "k", "v"]);
    assert_eq!(q::<i64>(&mut c, &["PEXPIRE", "k", "100000"]), 1);
    let pttl: i64 = q(&mut c, &["PTTL", "k"]);
    assert!((1..=100_000).contains(&pttl), "pttl {pttl}");
}

#[test]
fn expire_on_missing_key_returns_zero() {
    let (_s, mut c) = server();
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", "nope", "100"]), 0);
    assert_eq!(q::<i64>(&mut c, &["PEXPIREAT", "nope", "4000000000000"]), 0);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "nope"]), 0);
}

#[test]
fn ttl_distinguishes_missing_and_persistent_keys() {
    let (_s, mut c) = server();
    assert_eq!(q::<i64>(&mut c, &["TTL", "nope"]), -2);
    assert_eq!(q::<i64>(&mut c, &["PTTL", "nope"]), -2);
    q::<()>(&mut c, &["SET", "k", "v"]);
    assert_eq!(q::<i64>(&mut c, &["TTL", "k"]), -1);
    assert_eq!(q::<i64>(&mut c, &["PTTL", "k"]), -1);
}

#[test]
fn pexpire_key_disappears_after_expiry() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "k", "v"]);
    assert_eq!(q::<i64>(&mut c, &["PEXPIRE", "k", "100"]), 1);
    std::thread::sleep(Duration::from_millis(1000));
    assert!(wait_until(Duration::from_secs(10), || q::<i64>(
        &mut c,
        &["EXISTS", "k"]
    ) == 0));
    assert_eq!(q::<Value>(&mut c, &["GET", "k"]), Value::Nil);
    assert_eq!(q::<i64>(&mut c, &["TTL", "k"]), -2);
}

#[test]
fn expired_keys_are_not_listed() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "gone", "v", "PX", "100"]);
    q::<()>(&mut c, &["SET", "kept", "v"]);
    std::thread::sleep(Duration::from_millis(1000));
    assert!(wait_until(Duration::from_secs(10), || q::<Vec<String>>(
        &mut c,
        &["KEYS", "*"]
    ) == vec![
        "kept".to_string()
    ]));
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "gone", "kept"]), 1);
}

#[test]
fn expire_with_non_positive_time_deletes_key() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "k", "v"]);
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", "k", "-1"]), 1);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "k"]), 0);
    q::<()>(&mut c, &["SET", "k", "v"]);
    assert_eq!(q::<i64>(&mut c, &["PEXPIRE", "k", "0"]), 1);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "k"]), 0);
}

#[test]
fn expireat_in_the_past_deletes_key() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "k", "v"]);
    assert_eq!(q::<i64>(&mut c, &["EXPIREAT", "k", "1"]), 1);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "k"]), 0);
    q::<()>(&mut c, &["SET", "k", "v"]);
    assert_eq!(q::<i64>(&mut c, &["PEXPIREAT", "k", "1600000000000"]), 1);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "k"]), 0);
}

#[test]
fn expireat_sets_absolute_time() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "k", "v"]);
    assert_eq!(q::<i64>(&mut c, &["EXPIREAT", "k", "4000000000"]), 1);
    assert_eq!(q::<i64>(&mut c, &["EXPIRETIME", "k"]), 4_000_000_000);
    assert_eq!(q::<i64>(&mut c, &["PEXPIRETIME", "k"]), 4_000_000_000_000);
    assert!(q::<i64>(&mut c, &["TTL", "k"]) > 1_000_000_000);
}

#[test]
fn expiretime_rounds_milliseconds_to_nearest_second() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "k", "v"]);
    q::<()>(&mut c, &["PEXPIREAT", "k", "4000000000499"]);
    assert_eq!(q::<i64>(&mut c, &["EXPIRETIME", "k"]), 4_000_000_000);
    q::<()>(&mut c, &["PEXPIREAT", "k", "4000000000999"]);
    assert_eq!(q::<i64>(&mut c, &["EXPIRETIME", "k"]), 4_000_000_001);
    assert_eq!(q::<i64>(&mut c, &["PEXPIRETIME", "k"]), 4_000_000_000_999);
}

#[test]
fn expiretime_of_missing_and_persistent_keys() {
    let (_s, mut c) = server();
    assert_eq!(q::<i64>(&mut c, &["EXPIRETIME", "nope"]), -2);
    assert_eq!(q::<i64>(&mut c, &["PEXPIRETIME", "nope"]), -2);
    q::<()>(&mut c, &["SET", "k", "v"]);
    assert_eq!(q::<i64>(&mut c, &["EXPIRETIME", "k"]), -1);
    assert_eq!(q::<i64>(&mut c, &["PEXPIRETIME", "k"]), -1);
}

#[test]
fn expire_nx_only_when_no_ttl() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "k", "v"]);
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", "k", "100", "NX"]), 1);
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", "k", "200", "NX"]), 0);
    assert!(q::<i64>(&mut c, &["TTL", "k"]) <= 100);
}

#[test]
fn expire_xx_only_when_ttl_exists() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "k", "v"]);
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", "k", "100", "XX"]), 0);
    assert_eq!(q::<i64>(&mut c, &["TTL", "k"]), -1);
    q::<()>(&mut c, &["EXPIRE", "k", "100"]);
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", "k", "200", "xx"]), 1);
    assert!(q::<i64>(&mut c, &["TTL", "k"]) > 100);
}

#[test]
fn expire_gt_and_lt_compare_with_current_ttl() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "k", "v"]);
    // No TTL counts as infinite: GT never applies, LT always does.
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", "k", "1000", "GT"]), 0);
    assert_eq!(q::<i64>(&mut c, &["TTL", "k"]), -1);
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", "k", "1000", "LT"]), 1);
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", "k", "500", "GT"]), 0);
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", "k", "2000", "GT"]), 1);
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", "k", "3000", "LT"]), 0);
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", "k", "1500", "LT"]), 1);
    let ttl: i64 = q(&mut c, &["TTL", "k"]);
    assert!((1000..=1500).contains(&ttl), "ttl {ttl}");
    assert_eq!(q::<i64>(&mut c, &["EXPIREAT", "k", "4000000000", "GT"]), 1);
    assert_eq!(q::<i64>(&mut c, &["EXPIRETIME", "k"]), 4_000_000_000);
}

#[test]
fn expire_option_conflicts_are_errors() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "k", "v"]);
    let nx_xx = "ERR NX and XX, GT or LT options at the same time are not compatible";
    assert_eq!(q_err(&mut c, &["EXPIRE", "k", "100", "NX", "XX"]), nx_xx);
    assert_eq!(q_err(&mut c, &["EXPIRE", "k", "100", "NX", "GT"]), nx_xx);
    assert_eq!(q_err(&mut c, &["PEXPIRE", "k", "100", "LT", "NX"]), nx_xx);
    assert_eq!(
        q_err(&mut c, &["EXPIRE", "k", "100", "GT", "LT"]),
        "ERR GT and LT options at the same time are not compatible"
    );
    assert_eq!(
        q_err(&mut c, &["EXPIRE", "k", "100", "foo"]),
        "ERR Unsupported option foo"
    );
    assert_eq!(q::<i64>(&mut c, &["TTL", "k"]), -1);
}

#[test]
fn expire_rejects_invalid_times() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "k", "v"]);
    assert_eq!(
        q_err(&mut c, &["EXPIRE", "k", "abc"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        q_err(&mut c, &["EXPIRE", "k", "1.5"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        q_err(&mut c, &["EXPIRE", "k", "9999999999999999"]),
        "ERR invalid expire time in 'expire' command"
    );
    assert_eq!(
        q_err(&mut c, &["PEXPIRE", "k", "9223372036854775807"]),
        "ERR invalid expire time in 'pexpire' command"
    );
    assert_eq!(
        q_err(&mut c, &["EXPIREAT", "k", "9223372036854775807"]),
        "ERR invalid expire time in 'expireat' command"
    );
    assert_eq!(q::<i64>(&mut c, &["TTL", "k"]), -1);
}

#[test]
fn persist_removes_ttl() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "k", "v", "EX", "100"]);
    assert_eq!(q::<i64>(&mut c, &["PERSIST", "k"]), 1);
    assert_eq!(q::<i64>(&mut c, &["TTL", "k"]), -1);
    assert_eq!(q::<i64>(&mut c, &["PERSIST", "k"]), 0);
    assert_eq!(q::<i64>(&mut c, &["PERSIST", "nope"]), 0);
}

#[test]
fn set_clears_ttl_but_append_incr_setrange_keep_it() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "n", "1", "EX", "1000"]);
    q::<()>(&mut c, &["INCR", "n"]);
    assert!(q::<i64>(&mut c, &["TTL", "n"]) > 0);
    q::<()>(&mut c, &["APPEND", "n", "0"]);
    assert!(q::<i64>(&mut c, &["TTL", "n"]) > 0);
    q::<()>(&mut c, &["SETRANGE", "n", "0", "9"]);
    assert!(q::<i64>(&mut c, &["TTL", "n"]) > 0);
    assert_eq!(q::<String>(&mut c, &["GET", "n"]), "90");
    q::<()>(&mut c, &["SET", "n", "x"]);
    assert_eq!(q::<i64>(&mut c, &["TTL", "n"]), -1);
}

#[test]
fn rename_and_copy_carry_ttl() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "a", "v"]);
    q::<()>(&mut c, &["EXPIREAT", "a", "4000000000"]);
    q::<()>(&mut c, &["COPY", "a", "b"]);
    assert_eq!(q::<i64>(&mut c, &["EXPIRETIME", "b"]), 4_000_000_000);
    q::<()>(&mut c, &["RENAME", "a", "c"]);
    assert_eq!(q::<i64>(&mut c, &["EXPIRETIME", "c"]), 4_000_000_000);
    // Renaming onto a key with a TTL replaces it, TTL included.
    q::<()>(&mut c, &["SET", "d", "plain"]);
    q::<()>(&mut c, &["RENAME", "d", "c"]);
    assert_eq!(q::<i64>(&mut c, &["TTL", "c"]), -1);
}

#[test]
fn getex_and_getset_change_ttl() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "k", "v"]);
    assert_eq!(
        q::<String>(&mut c, &["GETEX", "k", "EXAT", "4000000000"]),
        "v"
    );
    assert_eq!(q::<i64>(&mut c, &["EXPIRETIME", "k"]), 4_000_000_000);
    assert_eq!(q::<String>(&mut c, &["GETEX", "k", "PERSIST"]), "v");
    assert_eq!(q::<i64>(&mut c, &["TTL", "k"]), -1);
    q::<()>(&mut c, &["EXPIRE", "k", "100"]);
    q::<()>(&mut c, &["GETSET", "k", "w"]);
    assert_eq!(q::<i64>(&mut c, &["TTL", "k"]), -1);
}

#[test]
fn expire_commands_check_arity() {
    let (_s, mut c) = server();
    assert_eq!(
        q_err(&mut c, &["EXPIRE", "k"]),
        "ERR wrong number of arguments for 'expire' command"
    );
    assert_eq!(
        q_err(&mut c, &["TTL"]),
        "ERR wrong number of arguments for 'ttl' command"
    );
    assert_eq!(
        q_err(&mut c, &["PERSIST"]),
        "ERR wrong number of arguments for 'persist' command"
    );
    assert_eq!(
        q_err(&mut c, &["EXPIRETIME", "a", "b"]),
        "ERR wrong number of arguments for 'expiretime' command"
    );
}

/// Writes `n` keys `prefix:i` that expire after `px` milliseconds, in one pipeline.
fn write_expiring(c: &mut redis::Connection, prefix: &str, n: usize, px: u64) {
    let mut p = redis::pipe();
    for i in 0..n {
        p.cmd("SET")
            .arg(format!("{prefix}:{i}"))
            .arg("v")
            .arg("PX")
            .arg(px)
            .ignore();
    }
    p.query::<()>(c).unwrap();
}

fn keyspace_line(c: &mut redis::Connection) -> String {
    let info: String = q(c, &["INFO", "keyspace"]);
    info.lines()
        .find(|l| l.starts_with("db0:"))
        .unwrap_or("")
        .to_string()
}

fn info_stat(c: &mut redis::Connection, name: &str) -> i64 {
    let info: String = q(c, &["INFO", "stats"]);
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name} in INFO stats"))
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn active_expiry_removes_keys_nobody_touches() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "persistent", "v"]);
    write_expiring(&mut c, "volatile", 2000, 100);
    // Only DBSIZE and INFO are used from here on: neither touches a key.
    let gone = wait_until(Duration::from_secs(10), || {
        q::<i64>(&mut c, &["DBSIZE"]) == 1
    });
    assert!(
        gone,
        "active expiry left {} keys after 10 s ({})",
        q::<i64>(&mut c, &["DBSIZE"]),
        keyspace_line(&mut c)
    );
    assert_eq!(keyspace_line(&mut c), "db0:keys=1,expires=0,avg_ttl=0");
    assert!(info_stat(&mut c, "expired_keys") >= 2000);
    assert_eq!(q::<String>(&mut c, &["GET", "persistent"]), "v");
}

#[test]
fn without_active_expiry_keys_stay_until_touched() {
    let s = TestServer::start_with(&["--enable-debug-command", "yes"]);
    let mut c = s.client();
    assert_eq!(
        q::<Value>(&mut c, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]),
        Value::Okay
    );
    write_expiring(&mut c, "volatile", 2000, 100);
    std::thread::sleep(Duration::from_millis(300));
    // Logically expired, physically present: DBSIZE and INFO still count them, for as long
    // as nobody looks at them.
    for _ in 0..5 {
        assert_eq!(q::<i64>(&mut c, &["DBSIZE"]), 2000);
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        keyspace_line(&mut c).starts_with("db0:keys=2000,expires=2000,"),
        "{}",
        keyspace_line(&mut c)
    );
    assert_eq!(info_stat(&mut c, "expired_keys"), 0);
    // Touching a key removes it (lazy expiry).
    let mut p = redis::pipe();
    for i in 0..1000 {
        p.cmd("GET").arg(format!("volatile:{i}"));
    }
    let got: Vec<Option<String>> = p.query(&mut c).unwrap();
    assert!(got.iter().all(Option::is_none));
    assert_eq!(q::<i64>(&mut c, &["DBSIZE"]), 1000);
    assert_eq!(info_stat(&mut c, "expired_keys"), 1000);
    // Switched back on, the background cycle removes the rest.
    assert_eq!(
        q::<Value>(&mut c, &["DEBUG", "SET-ACTIVE-EXPIRE", "1"]),
        Value::Okay
    );
    assert!(
        wait_until(Duration::from_secs(10), || q::<i64>(&mut c, &["DBSIZE"])
            == 0),
        "active expiry left {} keys after 10 s",
        q::<i64>(&mut c, &["DBSIZE"])
    );
    assert_eq!(info_stat(&mut c, "expired_keys"), 2000);
}

/// INFO keyspace's avg_ttl: Redis's running estimate from the TTLs active expiry samples (so it
/// appears after a cycle or two), 0 once the database has no TTLs.
#[test]
fn info_keyspace_reports_an_average_ttl() {
    let (_s, mut c) = server();
    for i in 0..50 {
        q::<()>(&mut c, &["SET", &format!("k{i}"), "v", "EX", "1000"]);
    }
    let avg = |c: &mut redis::Connection| -> i64 {
        let line = keyspace_line(c);
        line.rsplit("avg_ttl=")
            .next()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no avg_ttl in {line}"))
    };
    assert!(
        wait_until(Duration::from_secs(20), || avg(&mut c) > 0),
        "avg_ttl stayed 0: {}",
        keyspace_line(&mut c)
    );
    let v = avg(&mut c);
    assert!((1..=1_000_000).contains(&v), "avg_ttl {v}");
    for i in 0..50 {
        q::<()>(&mut c, &["PERSIST", &format!("k{i}")]);
    }
    // (Redis resets it at its next expiry cycle.)
    assert!(
        wait_until(Duration::from_secs(20), || keyspace_line(&mut c)
            .ends_with("expires=0,avg_ttl=0")),
        "{}",
        keyspace_line(&mut c)
    );
}
