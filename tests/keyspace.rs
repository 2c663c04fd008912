//! Keyspace commands (generic key operations, databases, KEYS/SCAN glob matching) through the
//! `redis` crate. Expected values are what redis-server 7.0 replies.

mod common;

use common::{q, q_err, TestServer};
use redis::Value;
use std::collections::BTreeSet;

fn server() -> (TestServer, redis::Connection) {
    let s = TestServer::start();
    let c = s.client();
    (s, c)
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[test]
fn del_counts_removed_keys() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["MSET", "a", "1", "b", "2"]);
    assert_eq!(q::<i64>(&mut c, &["DEL", "a", "b", "c", "a"]), 2);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "a", "b"]), 0);
    assert_eq!(q::<i64>(&mut c, &["DEL", "a"]), 0);
}

#[test]
fn unlink_counts_removed_keys() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["MSET", "a", "1", "b", "2"]);
    assert_eq!(q::<i64>(&mut c, &["UNLINK", "a", "b", "b"]), 2);
    assert_eq!(q::<i64>(&mut c, &["DBSIZE"]), 0);
}

#[test]
fn exists_counts_repeated_keys() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "a", "1"]);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "a"]), 1);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "a", "a", "b", "a"]), 3);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "nope"]), 0);
}

#[test]
fn touch_counts_existing_keys() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["MSET", "a", "1", "b", "2"]);
    assert_eq!(q::<i64>(&mut c, &["TOUCH", "a", "b", "c"]), 2);
}

#[test]
fn type_reports_string_and_none() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "a", "1"]);
    assert_eq!(q::<String>(&mut c, &["TYPE", "a"]), "string");
    assert_eq!(q::<String>(&mut c, &["TYPE", "nope"]), "none");
}

#[test]
fn rename_moves_value_and_ttl() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "a", "1", "EX", "1000"]);
    q::<()>(&mut c, &["SET", "b", "old"]);
    assert_eq!(q::<Value>(&mut c, &["RENAME", "a", "b"]), Value::Okay);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "a"]), 0);
    assert_eq!(q::<String>(&mut c, &["GET", "b"]), "1");
    assert!(q::<i64>(&mut c, &["TTL", "b"]) > 0);
}

#[test]
fn rename_missing_key_is_an_error() {
    let (_s, mut c) = server();
    assert_eq!(q_err(&mut c, &["RENAME", "nope", "x"]), "ERR no such key");
    assert_eq!(q_err(&mut c, &["RENAMENX", "nope", "x"]), "ERR no such key");
}

#[test]
fn rename_to_itself_is_ok() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "a", "1"]);
    assert_eq!(q::<Value>(&mut c, &["RENAME", "a", "a"]), Value::Okay);
    assert_eq!(q::<i64>(&mut c, &["RENAMENX", "a", "a"]), 0);
    assert_eq!(q::<String>(&mut c, &["GET", "a"]), "1");
}

#[test]
fn renamenx_does_not_overwrite() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["MSET", "a", "1", "b", "2"]);
    assert_eq!(q::<i64>(&mut c, &["RENAMENX", "a", "b"]), 0);
    assert_eq!(q::<String>(&mut c, &["GET", "b"]), "2");
    assert_eq!(q::<i64>(&mut c, &["RENAMENX", "a", "c"]), 1);
    assert_eq!(q::<String>(&mut c, &["GET", "c"]), "1");
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "a"]), 0);
}

#[test]
fn copy_copies_value_and_ttl() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "a", "1", "EX", "1000"]);
    assert_eq!(q::<i64>(&mut c, &["COPY", "a", "b"]), 1);
    assert_eq!(q::<String>(&mut c, &["GET", "b"]), "1");
    assert!(q::<i64>(&mut c, &["TTL", "b"]) > 0);
    assert_eq!(q::<String>(&mut c, &["GET", "a"]), "1");
    assert_eq!(q::<i64>(&mut c, &["COPY", "missing", "x"]), 0);
}

#[test]
fn copy_needs_replace_to_overwrite() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["MSET", "a", "1", "b", "2"]);
    assert_eq!(q::<i64>(&mut c, &["COPY", "a", "b"]), 0);
    assert_eq!(q::<String>(&mut c, &["GET", "b"]), "2");
    assert_eq!(q::<i64>(&mut c, &["COPY", "a", "b", "REPLACE"]), 1);
    assert_eq!(q::<String>(&mut c, &["GET", "b"]), "1");
}

#[test]
fn copy_to_another_db() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "a", "1"]);
    assert_eq!(q::<i64>(&mut c, &["COPY", "a", "a", "DB", "3"]), 1);
    q::<()>(&mut c, &["SELECT", "3"]);
    assert_eq!(q::<String>(&mut c, &["GET", "a"]), "1");
}

#[test]
fn copy_errors() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "a", "1"]);
    assert_eq!(
        q_err(&mut c, &["COPY", "a", "a"]),
        "ERR source and destination objects are the same"
    );
    assert_eq!(
        q_err(&mut c, &["COPY", "a", "b", "DB", "16"]),
        "ERR DB index is out of range"
    );
    assert_eq!(
        q_err(&mut c, &["COPY", "a", "b", "DB", "abc"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        q_err(&mut c, &["COPY", "a", "b", "FOO"]),
        "ERR syntax error"
    );
}

#[test]
fn move_moves_key_between_dbs() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "a", "1"]);
    assert_eq!(q::<i64>(&mut c, &["MOVE", "a", "1"]), 1);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "a"]), 0);
    assert_eq!(q::<i64>(&mut c, &["MOVE", "a", "1"]), 0);
    q::<()>(&mut c, &["SELECT", "1"]);
    assert_eq!(q::<String>(&mut c, &["GET", "a"]), "1");
    // The target already has the key: nothing moves.
    q::<()>(&mut c, &["SELECT", "0"]);
    q::<()>(&mut c, &["SET", "a", "2"]);
    assert_eq!(q::<i64>(&mut c, &["MOVE", "a", "1"]), 0);
    assert_eq!(q::<String>(&mut c, &["GET", "a"]), "2");
}

#[test]
fn move_errors() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "a", "1"]);
    assert_eq!(
        q_err(&mut c, &["MOVE", "a", "0"]),
        "ERR source and destination objects are the same"
    );
    assert_eq!(
        q_err(&mut c, &["MOVE", "a", "16"]),
        "ERR DB index is out of range"
    );
    assert_eq!(
        q_err(&mut c, &["MOVE", "a", "abc"]),
        "ERR value is not an integer or out of range"
    );
}

#[test]
fn select_isolates_databases() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "a", "db0"]);
    assert_eq!(q::<Value>(&mut c, &["SELECT", "5"]), Value::Okay);
    assert_eq!(q::<Value>(&mut c, &["GET", "a"]), Value::Nil);
    q::<()>(&mut c, &["SET", "a", "db5"]);
    q::<()>(&mut c, &["SELECT", "0"]);
    assert_eq!(q::<String>(&mut c, &["GET", "a"]), "db0");
}

#[test]
fn select_rejects_bad_index() {
    let (_s, mut c) = server();
    assert_eq!(
        q_err(&mut c, &["SELECT", "16"]),
        "ERR DB index is out of range"
    );
    assert_eq!(
        q_err(&mut c, &["SELECT", "-1"]),
        "ERR DB index is out of range"
    );
    assert_eq!(
        q_err(&mut c, &["SELECT", "abc"]),
        "ERR value is not an integer or out of range"
    );
}

#[test]
fn swapdb_swaps_contents() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "a", "db0"]);
    q::<()>(&mut c, &["SELECT", "1"]);
    q::<()>(&mut c, &["MSET", "a", "db1", "b", "db1"]);
    assert_eq!(q::<Value>(&mut c, &["SWAPDB", "0", "1"]), Value::Okay);
    // This connection still has db 1 selected, which now holds what db 0 had.
    assert_eq!(q::<String>(&mut c, &["GET", "a"]), "db0");
    assert_eq!(q::<i64>(&mut c, &["DBSIZE"]), 1);
    q::<()>(&mut c, &["SELECT", "0"]);
    assert_eq!(q::<String>(&mut c, &["GET", "b"]), "db1");
    assert_eq!(q::<Value>(&mut c, &["SWAPDB", "2", "2"]), Value::Okay);
}

#[test]
fn swapdb_errors() {
    let (_s, mut c) = server();
    assert_eq!(
        q_err(&mut c, &["SWAPDB", "0", "16"]),
        "ERR DB index is out of range"
    );
    assert_eq!(
        q_err(&mut c, &["SWAPDB", "a", "0"]),
        "ERR invalid first DB index"
    );
    assert_eq!(
        q_err(&mut c, &["SWAPDB", "0", "b"]),
        "ERR invalid second DB index"
    );
}

#[test]
fn dbsize_counts_keys_of_selected_db() {
    let (_s, mut c) = server();
    assert_eq!(q::<i64>(&mut c, &["DBSIZE"]), 0);
    q::<()>(&mut c, &["MSET", "a", "1", "b", "2", "c", "3"]);
    assert_eq!(q::<i64>(&mut c, &["DBSIZE"]), 3);
    q::<()>(&mut c, &["SELECT", "1"]);
    assert_eq!(q::<i64>(&mut c, &["DBSIZE"]), 0);
}

#[test]
fn keys_matches_glob_patterns() {
    let (_s, mut c) = server();
    let all = [
        "hello", "hallo", "hxllo", "hllo", "heeeello", "hbllo", "key:1", "key:22", "a*b", "a?b",
        "a[b", "a\\b",
    ];
    for k in all {
        q::<()>(&mut c, &["SET", k, "v"]);
    }
    let keys = |c: &mut redis::Connection, p: &str| sorted(q::<Vec<String>>(c, &["KEYS", p]));
    assert_eq!(keys(&mut c, "*").len(), all.len());
    assert_eq!(keys(&mut c, "h?llo"), ["hallo", "hbllo", "hello", "hxllo"]);
    assert_eq!(
        keys(&mut c, "h*llo"),
        ["hallo", "hbllo", "heeeello", "hello", "hllo", "hxllo"]
    );
    assert_eq!(keys(&mut c, "h[ae]llo"), ["hallo", "hello"]);
    assert_eq!(keys(&mut c, "h[^e]llo"), ["hallo", "hbllo", "hxllo"]);
    assert_eq!(keys(&mut c, "h[a-b]llo"), ["hallo", "hbllo"]);
    assert_eq!(keys(&mut c, "h[b-a]llo"), ["hallo", "hbllo"]);
    assert_eq!(keys(&mut c, "key:?"), ["key:1"]);
    assert_eq!(keys(&mut c, "key:*"), ["key:1", "key:22"]);
    assert_eq!(keys(&mut c, "nomatch*"), Vec::<String>::new());
}

#[test]
fn keys_escapes_metacharacters() {
    let (_s, mut c) = server();
    for k in ["a*b", "a?b", "axb", "a[b", "a\\b"] {
        q::<()>(&mut c, &["SET", k, "v"]);
    }
    let keys = |c: &mut redis::Connection, p: &str| sorted(q::<Vec<String>>(c, &["KEYS", p]));
    assert_eq!(keys(&mut c, "a\\*b"), ["a*b"]);
    assert_eq!(keys(&mut c, "a\\?b"), ["a?b"]);
    assert_eq!(keys(&mut c, "a?b"), ["a*b", "a?b", "a[b", "a\\b", "axb"]);
    assert_eq!(keys(&mut c, "a\\[b"), ["a[b"]);
    assert_eq!(keys(&mut c, "a\\\\b"), ["a\\b"]);
    assert_eq!(keys(&mut c, "a[*?]b"), ["a*b", "a?b"]);
}

#[test]
fn scan_iterates_every_key_once_per_full_pass() {
    let (_s, mut c) = server();
    let mut expected = BTreeSet::new();
    let mut pipe = redis::pipe();
    for i in 0..1000 {
        let k = format!("key:{i}");
        pipe.cmd("SET").arg(&k).arg(i).ignore();
        expected.insert(k);
    }
    pipe.query::<()>(&mut c).unwrap();
    let mut seen = BTreeSet::new();
    let mut cursor = "0".to_string();
    let mut rounds = 0;
    loop {
        let (next, keys): (String, Vec<String>) = q(&mut c, &["SCAN", &cursor, "COUNT", "10"]);
        seen.extend(keys);
        rounds += 1;
        assert!(rounds < 100_000, "SCAN does not terminate");
        if next == "0" {
            break;
        }
        cursor = next;
    }
    assert_eq!(seen, expected);
}

fn scan_all(c: &mut redis::Connection, extra: &[&str]) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut cursor = "0".to_string();
    loop {
        let mut args = vec!["SCAN", cursor.as_str()];
        args.extend_from_slice(extra);
        let (next, keys): (String, Vec<String>) = q(c, &args);
        seen.extend(keys);
        if next == "0" {
            return seen;
        }
        cursor = next;
    }
}

#[test]
fn scan_filters_by_match_and_type() {
    let (_s, mut c) = server();
    for i in 0..50 {
        q::<()>(&mut c, &["SET", &format!("user:{i}"), "v"]);
        q::<()>(&mut c, &["SET", &format!("item:{i}"), "v"]);
    }
    let users = scan_all(&mut c, &["MATCH", "user:*", "COUNT", "7"]);
    assert_eq!(users.len(), 50);
    assert!(users.iter().all(|k| k.starts_with("user:")));
    assert_eq!(scan_all(&mut c, &["MATCH", "user:1?"]).len(), 10);
    assert_eq!(scan_all(&mut c, &["TYPE", "string"]).len(), 100);
    assert_eq!(scan_all(&mut c, &["TYPE", "list"]).len(), 0);
}

#[test]
fn scan_rejects_bad_arguments() {
    let (_s, mut c) = server();
    assert_eq!(q_err(&mut c, &["SCAN", "abc"]), "ERR invalid cursor");
    assert_eq!(
        q_err(&mut c, &["SCAN", "0", "COUNT", "0"]),
        "ERR syntax error"
    );
    assert_eq!(
        q_err(&mut c, &["SCAN", "0", "COUNT", "abc"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(q_err(&mut c, &["SCAN", "0", "MATCH"]), "ERR syntax error");
    assert_eq!(
        q_err(&mut c, &["SCAN", "0", "FOO", "bar"]),
        "ERR syntax error"
    );
}

#[test]
fn randomkey_returns_existing_key_or_nil() {
    let (_s, mut c) = server();
    assert_eq!(q::<Value>(&mut c, &["RANDOMKEY"]), Value::Nil);
    q::<()>(&mut c, &["MSET", "a", "1", "b", "2", "c", "3"]);
    for _ in 0..20 {
        let k: String = q(&mut c, &["RANDOMKEY"]);
        assert!(["a", "b", "c"].contains(&k.as_str()), "{k}");
    }
}

#[test]
fn flushdb_clears_only_selected_db() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "a", "1"]);
    q::<()>(&mut c, &["SELECT", "1"]);
    q::<()>(&mut c, &["SET", "b", "1"]);
    assert_eq!(q::<Value>(&mut c, &["FLUSHDB"]), Value::Okay);
    assert_eq!(q::<i64>(&mut c, &["DBSIZE"]), 0);
    q::<()>(&mut c, &["SELECT", "0"]);
    assert_eq!(q::<i64>(&mut c, &["DBSIZE"]), 1);
    assert_eq!(q::<Value>(&mut c, &["FLUSHDB", "ASYNC"]), Value::Okay);
    assert_eq!(q::<i64>(&mut c, &["DBSIZE"]), 0);
    assert_eq!(q_err(&mut c, &["FLUSHDB", "FOO"]), "ERR syntax error");
}

#[test]
fn flushall_clears_every_db() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "a", "1"]);
    q::<()>(&mut c, &["SELECT", "7"]);
    q::<()>(&mut c, &["SET", "b", "1"]);
    assert_eq!(q::<Value>(&mut c, &["FLUSHALL"]), Value::Okay);
    assert_eq!(q::<i64>(&mut c, &["DBSIZE"]), 0);
    q::<()>(&mut c, &["SELECT", "0"]);
    assert_eq!(q::<i64>(&mut c, &["DBSIZE"]), 0);
}

#[test]
fn keyspace_commands_check_arity() {
    let (_s, mut c) = server();
    for (args, name) in [
        (&["DEL"][..], "del"),
        (&["EXISTS"], "exists"),
        (&["KEYS"], "keys"),
        (&["TYPE"], "type"),
        (&["RENAME", "a"], "rename"),
        (&["SELECT"], "select"),
        (&["DBSIZE", "x"], "dbsize"),
        (&["RANDOMKEY", "x"], "randomkey"),
    ] {
        assert_eq!(
            q_err(&mut c, args),
            format!("ERR wrong number of arguments for '{name}' command")
        );
    }
}

const LFU_NOT_SELECTED: &str = "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.";
const LFU_SELECTED: &str = "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.";

#[test]
fn object_freq_counts_accesses_under_lfu() {
    // Log factor 0: every access increments the counter; decay time 0: it never decays.
    let s = TestServer::start_with(&[
        "--maxmemory-policy",
        "allkeys-lfu",
        "--lfu-log-factor",
        "0",
        "--lfu-decay-time",
        "0",
    ]);
    let mut c = s.client();
    q::<()>(&mut c, &["SET", "k", "hello"]);
    // New keys start at LFU_INIT_VAL (5).
    assert_eq!(q::<i64>(&mut c, &["OBJECT", "FREQ", "k"]), 5);
    for _ in 0..10 {
        assert_eq!(q::<String>(&mut c, &["GET", "k"]), "hello");
    }
    assert_eq!(q::<i64>(&mut c, &["OBJECT", "FREQ", "k"]), 15);
    // OBJECT FREQ itself is not an access.
    assert_eq!(q::<i64>(&mut c, &["OBJECT", "FREQ", "k"]), 15);
    // A write is an access too.
    assert_eq!(q::<i64>(&mut c, &["APPEND", "k", "!"]), 6);
    assert_eq!(q::<i64>(&mut c, &["OBJECT", "FREQ", "k"]), 16);
    assert_eq!(
        q::<Value>(&mut c, &["OBJECT", "FREQ", "missing"]),
        Value::Nil
    );
    // With the default log factor growth is probabilistic, but the first access from the
    // initial value always counts.
    q::<()>(&mut c, &["CONFIG", "SET", "lfu-log-factor", "10"]);
    q::<()>(&mut c, &["SET", "p", "hello"]);
    for _ in 0..50 {
        q::<String>(&mut c, &["GET", "p"]);
    }
    let f = q::<i64>(&mut c, &["OBJECT", "FREQ", "p"]);
    assert!((6..=55).contains(&f), "OBJECT FREQ after 50 reads: {f}");
}

#[test]
fn key_inspection_commands_are_not_accesses() {
    let s = TestServer::start_with(&[
        "--maxmemory-policy",
        "allkeys-lfu",
        "--lfu-log-factor",
        "0",
        "--lfu-decay-time",
        "0",
    ]);
    let mut c = s.client();
    q::<()>(&mut c, &["SET", "k", "hello"]);
    assert_eq!(q::<i64>(&mut c, &["OBJECT", "FREQ", "k"]), 5);
    for args in [
        &["EXISTS", "k"][..],
        &["TYPE", "k"],
        &["TTL", "k"],
        &["PTTL", "k"],
        &["EXPIRETIME", "k"],
        &["OBJECT", "ENCODING", "k"],
    ] {
        q::<Value>(&mut c, args);
        assert_eq!(
            q::<i64>(&mut c, &["OBJECT", "FREQ", "k"]),
            5,
            "{} counted as an access",
            args.join(" ")
        );
    }
    // TOUCH and reads are.
    assert_eq!(q::<i64>(&mut c, &["TOUCH", "k"]), 1);
    assert_eq!(q::<i64>(&mut c, &["OBJECT", "FREQ", "k"]), 6);
    assert_eq!(q::<i64>(&mut c, &["STRLEN", "k"]), 5);
    assert_eq!(q::<i64>(&mut c, &["OBJECT", "FREQ", "k"]), 7);
}

#[test]
fn object_freq_and_idletime_depend_on_the_policy() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "k", "hello"]);
    assert_eq!(q_err(&mut c, &["OBJECT", "FREQ", "k"]), LFU_NOT_SELECTED);
    assert!(q::<i64>(&mut c, &["OBJECT", "IDLETIME", "k"]) >= 0);
    // A missing key is nil before the policy is looked at.
    assert_eq!(
        q::<Value>(&mut c, &["OBJECT", "FREQ", "missing"]),
        Value::Nil
    );
    for policy in ["allkeys-lfu", "volatile-lfu"] {
        q::<()>(&mut c, &["CONFIG", "SET", "maxmemory-policy", policy]);
        assert_eq!(
            q_err(&mut c, &["OBJECT", "IDLETIME", "k"]),
            LFU_SELECTED,
            "{policy}"
        );
        assert!(q::<i64>(&mut c, &["OBJECT", "FREQ", "k"]) >= 0, "{policy}");
        assert_eq!(
            q::<Value>(&mut c, &["OBJECT", "IDLETIME", "missing"]),
            Value::Nil
        );
    }
    for policy in [
        "allkeys-lru",
        "volatile-ttl",
        "allkeys-random",
        "noeviction",
    ] {
        q::<()>(&mut c, &["CONFIG", "SET", "maxmemory-policy", policy]);
        assert_eq!(
            q_err(&mut c, &["OBJECT", "FREQ", "k"]),
            LFU_NOT_SELECTED,
            "{policy}"
        );
        assert!(
            q::<i64>(&mut c, &["OBJECT", "IDLETIME", "k"]) >= 0,
            "{policy}"
        );
    }
}

#[test]
fn object_idletime_grows_until_the_key_is_accessed() {
    let (_s, mut c) = server();
    // Not a small integer: those are shared objects with their own clock.
    q::<()>(&mut c, &["SET", "k", "hello"]);
    q::<()>(&mut c, &["SET", "other", "hello"]);
    assert!(q::<i64>(&mut c, &["OBJECT", "IDLETIME", "k"]) <= 1);
    std::thread::sleep(std::time::Duration::from_millis(2500));
    assert!(q::<i64>(&mut c, &["OBJECT", "IDLETIME", "k"]) >= 2);
    // OBJECT IDLETIME itself does not reset it; a read does.
    assert!(q::<i64>(&mut c, &["OBJECT", "IDLETIME", "k"]) >= 2);
    assert_eq!(q::<String>(&mut c, &["GET", "k"]), "hello");
    assert!(q::<i64>(&mut c, &["OBJECT", "IDLETIME", "k"]) <= 1);
    // TOUCH resets it as well; other keys are unaffected.
    assert!(q::<i64>(&mut c, &["OBJECT", "IDLETIME", "other"]) >= 2);
    assert_eq!(q::<i64>(&mut c, &["TOUCH", "other"]), 1);
    assert!(q::<i64>(&mut c, &["OBJECT", "IDLETIME", "other"]) <= 1);
    assert_eq!(
        q::<Value>(&mut c, &["OBJECT", "IDLETIME", "missing"]),
        Value::Nil
    );
}

#[test]
fn object_refcount_of_strings() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "s", "hello"]);
    assert_eq!(q::<i64>(&mut c, &["OBJECT", "REFCOUNT", "s"]), 1);
    q::<()>(&mut c, &["SET", "big", "123456"]);
    assert_eq!(q::<i64>(&mut c, &["OBJECT", "REFCOUNT", "big"]), 1);
    // Small integers (0..9999) are shared objects with the maximal reference count.
    q::<()>(&mut c, &["SET", "small", "123"]);
    assert_eq!(
        q::<i64>(&mut c, &["OBJECT", "REFCOUNT", "small"]),
        2147483647
    );
    assert_eq!(
        q::<Value>(&mut c, &["OBJECT", "REFCOUNT", "missing"]),
        Value::Nil
    );
}

#[test]
fn object_subcommand_errors() {
    let (_s, mut c) = server();
    assert_eq!(
        q_err(&mut c, &["OBJECT"]),
        "ERR wrong number of arguments for 'object' command"
    );
    for sub in ["REFCOUNT", "FREQ", "IDLETIME", "ENCODING"] {
        assert_eq!(
            q_err(&mut c, &["OBJECT", sub]),
            format!(
                "ERR wrong number of arguments for 'object|{}' command",
                sub.to_ascii_lowercase()
            )
        );
        assert_eq!(
            q_err(&mut c, &["OBJECT", sub, "a", "b"]),
            format!(
                "ERR wrong number of arguments for 'object|{}' command",
                sub.to_ascii_lowercase()
            )
        );
    }
    assert_eq!(
        q_err(&mut c, &["OBJECT", "foo", "k"]),
        "ERR unknown subcommand 'foo'. Try OBJECT HELP."
    );
}
