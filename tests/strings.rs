//! String commands through the `redis` crate. Expected values are what redis-server 7.0 replies
//! (run with `TESSERA_TEST_TARGET=redis` to check them against it).

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
fn set_then_get_returns_value() {
    let (_s, mut c) = server();
    assert_eq!(q::<String>(&mut c, &["SET", "k", "hello"]), "OK");
    assert_eq!(q::<String>(&mut c, &["GET", "k"]), "hello");
    assert_eq!(q::<String>(&mut c, &["SET", "k", "world"]), "OK");
    assert_eq!(q::<String>(&mut c, &["GET", "k"]), "world");
}

#[test]
fn get_missing_key_is_nil() {
    let (_s, mut c) = server();
    assert_eq!(q::<Value>(&mut c, &["GET", "nope"]), Value::Nil);
}

#[test]
fn set_is_binary_safe() {
    let (_s, mut c) = server();
    let v: Vec<u8> = vec![0, b'\r', b'\n', 0xff, b' ', 0x80, 0];
    let key: Vec<u8> = vec![b'k', 0, b'\n'];
    let _: () = redis::cmd("SET").arg(&key).arg(&v).query(&mut c).unwrap();
    let got: Vec<u8> = redis::cmd("GET").arg(&key).query(&mut c).unwrap();
    assert_eq!(got, v);
    let empty: Vec<u8> = Vec::new();
    let _: () = redis::cmd("SET")
        .arg("e")
        .arg(&empty)
        .query(&mut c)
        .unwrap();
    assert_eq!(q::<Vec<u8>>(&mut c, &["GET", "e"]), empty);
    assert_eq!(q::<i64>(&mut c, &["STRLEN", "e"]), 0);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "e"]), 1);
}

#[test]
fn set_large_value_roundtrips() {
    let (_s, mut c) = server();
    let v: Vec<u8> = (0..4_000_000u32).map(|i| (i % 251) as u8).collect();
    let _: () = redis::cmd("SET").arg("big").arg(&v).query(&mut c).unwrap();
    let got: Vec<u8> = redis::cmd("GET").arg("big").query(&mut c).unwrap();
    assert!(got == v, "4 MB value came back different");
    assert_eq!(q::<i64>(&mut c, &["STRLEN", "big"]), 4_000_000);
}

#[test]
fn set_nx_only_sets_missing_key() {
    let (_s, mut c) = server();
    assert_eq!(q::<Value>(&mut c, &["SET", "k", "1", "NX"]), Value::Okay);
    assert_eq!(q::<Value>(&mut c, &["SET", "k", "2", "NX"]), Value::Nil);
    assert_eq!(q::<String>(&mut c, &["GET", "k"]), "1");
}

#[test]
fn set_xx_only_sets_existing_key() {
    let (_s, mut c) = server();
    assert_eq!(q::<Value>(&mut c, &["SET", "k", "1", "XX"]), Value::Nil);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "k"]), 0);
    q::<()>(&mut c, &["SET", "k", "1"]);
    assert_eq!(q::<Value>(&mut c, &["SET", "k", "2", "xx"]), Value::Okay);
    assert_eq!(q::<String>(&mut c, &["GET", "k"]), "2");
}

#[test]
fn set_options_conflicts_are_syntax_errors() {
    let (_s, mut c) = server();
    for args in [
        &["SET", "k", "v", "NX", "XX"][..],
        &["SET", "k", "v", "EX", "10", "PX", "100"],
        &["SET", "k", "v", "KEEPTTL", "EX", "10"],
        &["SET", "k", "v", "EX"],
        &["SET", "k", "v", "FOO"],
        &[
            "SET",
            "k",
            "v",
            "EXAT",
            "4000000000",
            "PXAT",
            "4000000000000",
        ],
    ] {
        assert_eq!(q_err(&mut c, args), "ERR syntax error", "{args:?}");
    }
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "k"]), 0);
}

#[test]
fn set_get_option_returns_old_value() {
    let (_s, mut c) = server();
    assert_eq!(q::<Value>(&mut c, &["SET", "k", "a", "GET"]), Value::Nil);
    assert_eq!(q::<String>(&mut c, &["SET", "k", "b", "GET"]), "a");
    assert_eq!(q::<String>(&mut c, &["GET", "k"]), "b");
    // With NX the old value is returned and nothing is written.
    assert_eq!(q::<String>(&mut c, &["SET", "k", "c", "NX", "GET"]), "b");
    assert_eq!(q::<String>(&mut c, &["GET", "k"]), "b");
}

#[test]
fn set_ex_sets_ttl() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "k", "v", "EX", "100"]);
    let ttl: i64 = q(&mut c, &["TTL", "k"]);
    assert!((1..=100).contains(&ttl), "ttl {ttl}");
    q::<()>(&mut c, &["SET", "k", "v", "PX", "100000"]);
    let pttl: i64 = q(&mut c, &["PTTL", "k"]);
    assert!((1..=100_000).contains(&pttl), "pttl {pttl}");
}

#[test]
fn set_px_key_expires() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "k", "v", "PX", "100"]);
    std::thread::sleep(Duration::from_millis(1000));
    assert!(wait_until(Duration::from_secs(10), || q::<Value>(
        &mut c,
        &["GET", "k"]
    ) == Value::Nil));
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "k"]), 0);
}

#[test]
fn set_exat_and_pxat_set_absolute_expiry() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "k", "v", "EXAT", "4000000000"]);
    assert_eq!(q::<i64>(&mut c, &["EXPIRETIME", "k"]), 4_000_000_000);
    q::<()>(&mut c, &["SET", "k", "v", "PXAT", "4000000000123"]);
    assert_eq!(q::<i64>(&mut c, &["PEXPIRETIME", "k"]), 4_000_000_000_123);
    // A time in the past: the write is acknowledged but the key is gone.
    assert_eq!(
        q::<Value>(&mut c, &["SET", "k", "v", "EXAT", "1000"]),
        Value::Okay
    );
    assert_eq!(q::<Value>(&mut c, &["GET", "k"]), Value::Nil);
}

#[test]
fn set_invalid_expire_times_are_rejected() {
    let (_s, mut c) = server();
    for t in ["0", "-1", "9999999999999999"] {
        assert_eq!(
            q_err(&mut c, &["SET", "k", "v", "EX", t]),
            "ERR invalid expire time in 'set' command",
            "EX {t}"
        );
    }
    assert_eq!(
        q_err(&mut c, &["SET", "k", "v", "PX", "0"]),
        "ERR invalid expire time in 'set' command"
    );
    assert_eq!(
        q_err(&mut c, &["SET", "k", "v", "EX", "abc"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        q_err(&mut c, &["SET", "k", "v", "EX", "1.5"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "k"]), 0);
}

#[test]
fn set_keepttl_keeps_ttl_and_plain_set_clears_it() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "k", "v", "EX", "1000"]);
    q::<()>(&mut c, &["SET", "k", "w", "KEEPTTL"]);
    assert!(q::<i64>(&mut c, &["TTL", "k"]) > 0);
    assert_eq!(q::<String>(&mut c, &["GET", "k"]), "w");
    q::<()>(&mut c, &["SET", "k", "x"]);
    assert_eq!(q::<i64>(&mut c, &["TTL", "k"]), -1);
}

#[test]
fn setnx_returns_whether_it_set() {
    let (_s, mut c) = server();
    assert_eq!(q::<i64>(&mut c, &["SETNX", "k", "1"]), 1);
    assert_eq!(q::<i64>(&mut c, &["SETNX", "k", "2"]), 0);
    assert_eq!(q::<String>(&mut c, &["GET", "k"]), "1");
}

#[test]
fn setex_and_psetex_set_value_and_ttl() {
    let (_s, mut c) = server();
    assert_eq!(q::<Value>(&mut c, &["SETEX", "k", "100", "v"]), Value::Okay);
    assert_eq!(q::<String>(&mut c, &["GET", "k"]), "v");
    assert!((1..=100).contains(&q::<i64>(&mut c, &["TTL", "k"])));
    assert_eq!(
        q::<Value>(&mut c, &["PSETEX", "p", "100000", "w"]),
        Value::Okay
    );
    assert!((1..=100_000).contains(&q::<i64>(&mut c, &["PTTL", "p"])));
}

#[test]
fn setex_rejects_non_positive_times() {
    let (_s, mut c) = server();
    assert_eq!(
        q_err(&mut c, &["SETEX", "k", "0", "v"]),
        "ERR invalid expire time in 'setex' command"
    );
    assert_eq!(
        q_err(&mut c, &["SETEX", "k", "-10", "v"]),
        "ERR invalid expire time in 'setex' command"
    );
    assert_eq!(
        q_err(&mut c, &["PSETEX", "k", "-5", "v"]),
        "ERR invalid expire time in 'psetex' command"
    );
    assert_eq!(
        q_err(&mut c, &["SETEX", "k", "ten", "v"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "k"]), 0);
}

#[test]
fn mget_returns_nil_for_missing_keys() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["MSET", "a", "1", "c", "3"]);
    let v: Vec<Option<String>> = q(&mut c, &["MGET", "a", "b", "c", "a"]);
    assert_eq!(
        v,
        vec![Some("1".into()), None, Some("3".into()), Some("1".into())]
    );
}

#[test]
fn mset_sets_every_pair_and_last_wins() {
    let (_s, mut c) = server();
    assert_eq!(
        q::<Value>(&mut c, &["MSET", "a", "1", "b", "2", "a", "3"]),
        Value::Okay
    );
    assert_eq!(
        q::<Vec<String>>(&mut c, &["MGET", "a", "b"]),
        vec!["3", "2"]
    );
}

#[test]
fn mset_odd_arguments_is_arity_error() {
    let (_s, mut c) = server();
    assert_eq!(
        q_err(&mut c, &["MSET", "a"]),
        "ERR wrong number of arguments for 'mset' command"
    );
    assert_eq!(
        q_err(&mut c, &["MSET", "a", "1", "b"]),
        "ERR wrong number of arguments for 'mset' command"
    );
    assert_eq!(
        q_err(&mut c, &["MSETNX", "a", "1", "b"]),
        "ERR wrong number of arguments for 'msetnx' command"
    );
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "a"]), 0);
}

#[test]
fn msetnx_is_all_or_nothing() {
    let (_s, mut c) = server();
    assert_eq!(q::<i64>(&mut c, &["MSETNX", "a", "1", "b", "2"]), 1);
    assert_eq!(q::<i64>(&mut c, &["MSETNX", "b", "x", "c", "3"]), 0);
    assert_eq!(
        q::<Vec<Option<String>>>(&mut c, &["MGET", "a", "b", "c"]),
        vec![Some("1".into()), Some("2".into()), None]
    );
}

#[test]
fn getset_returns_old_value_and_clears_ttl() {
    let (_s, mut c) = server();
    assert_eq!(q::<Value>(&mut c, &["GETSET", "k", "a"]), Value::Nil);
    q::<()>(&mut c, &["EXPIRE", "k", "1000"]);
    assert_eq!(q::<String>(&mut c, &["GETSET", "k", "b"]), "a");
    assert_eq!(q::<String>(&mut c, &["GET", "k"]), "b");
    assert_eq!(q::<i64>(&mut c, &["TTL", "k"]), -1);
}

#[test]
fn getdel_returns_value_and_deletes() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "k", "v"]);
    assert_eq!(q::<String>(&mut c, &["GETDEL", "k"]), "v");
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "k"]), 0);
    assert_eq!(q::<Value>(&mut c, &["GETDEL", "k"]), Value::Nil);
}

#[test]
fn getex_sets_and_removes_ttl() {
    let (_s, mut c) = server();
    assert_eq!(
        q::<Value>(&mut c, &["GETEX", "missing", "EX", "100"]),
        Value::Nil
    );
    q::<()>(&mut c, &["SET", "k", "v"]);
    assert_eq!(q::<String>(&mut c, &["GETEX", "k"]), "v");
    assert_eq!(q::<i64>(&mut c, &["TTL", "k"]), -1);
    assert_eq!(q::<String>(&mut c, &["GETEX", "k", "EX", "100"]), "v");
    assert!((1..=100).contains(&q::<i64>(&mut c, &["TTL", "k"])));
    assert_eq!(
        q::<String>(&mut c, &["GETEX", "k", "PXAT", "4000000000000"]),
        "v"
    );
    assert_eq!(q::<i64>(&mut c, &["EXPIRETIME", "k"]), 4_000_000_000);
    assert_eq!(q::<String>(&mut c, &["GETEX", "k", "PERSIST"]), "v");
    assert_eq!(q::<i64>(&mut c, &["TTL", "k"]), -1);
}

#[test]
fn getex_rejects_bad_options() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "k", "v"]);
    assert_eq!(
        q_err(&mut c, &["GETEX", "k", "PERSIST", "EX", "10"]),
        "ERR syntax error"
    );
    assert_eq!(
        q_err(&mut c, &["GETEX", "k", "EX", "10", "PX", "10"]),
        "ERR syntax error"
    );
    assert_eq!(
        q_err(&mut c, &["GETEX", "k", "KEEPTTL"]),
        "ERR syntax error"
    );
    assert_eq!(
        q_err(&mut c, &["GETEX", "k", "EX", "0"]),
        "ERR invalid expire time in 'getex' command"
    );
    assert_eq!(q::<i64>(&mut c, &["TTL", "k"]), -1);
}

#[test]
fn append_creates_and_extends() {
    let (_s, mut c) = server();
    assert_eq!(q::<i64>(&mut c, &["APPEND", "k", "Hello"]), 5);
    assert_eq!(q::<i64>(&mut c, &["APPEND", "k", " World"]), 11);
    assert_eq!(q::<String>(&mut c, &["GET", "k"]), "Hello World");
    assert_eq!(q::<i64>(&mut c, &["APPEND", "k", ""]), 11);
}

#[test]
fn strlen_counts_bytes() {
    let (_s, mut c) = server();
    assert_eq!(q::<i64>(&mut c, &["STRLEN", "missing"]), 0);
    q::<()>(&mut c, &["SET", "k", "h\u{e9}llo"]);
    assert_eq!(q::<i64>(&mut c, &["STRLEN", "k"]), 6);
    q::<()>(&mut c, &["SET", "n", "12345"]);
    assert_eq!(q::<i64>(&mut c, &["STRLEN", "n"]), 5);
}

#[test]
fn incr_and_decr_count_from_zero() {
    let (_s, mut c) = server();
    assert_eq!(q::<i64>(&mut c, &["INCR", "n"]), 1);
    assert_eq!(q::<i64>(&mut c, &["INCR", "n"]), 2);
    assert_eq!(q::<i64>(&mut c, &["DECR", "n"]), 1);
    assert_eq!(q::<i64>(&mut c, &["DECR", "m"]), -1);
    assert_eq!(q::<i64>(&mut c, &["INCRBY", "n", "10"]), 11);
    assert_eq!(q::<i64>(&mut c, &["DECRBY", "n", "20"]), -9);
    assert_eq!(q::<i64>(&mut c, &["INCRBY", "n", "-1"]), -10);
    assert_eq!(q::<String>(&mut c, &["GET", "n"]), "-10");
}

#[test]
fn incr_rejects_non_integer_values() {
    let (_s, mut c) = server();
    for v in ["abc", "1.5", " 1", "1 ", "", "9223372036854775808", "0x10"] {
        q::<()>(&mut c, &["SET", "k", v]);
        assert_eq!(
            q_err(&mut c, &["INCR", "k"]),
            "ERR value is not an integer or out of range",
            "value {v:?}"
        );
    }
    q::<()>(&mut c, &["SET", "k", "5"]);
    assert_eq!(
        q_err(&mut c, &["INCRBY", "k", "abc"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        q_err(&mut c, &["INCRBY", "k", "1.0"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(q::<String>(&mut c, &["GET", "k"]), "5");
}

#[test]
fn incr_overflow_is_an_error() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "k", "9223372036854775807"]);
    assert_eq!(
        q_err(&mut c, &["INCR", "k"]),
        "ERR increment or decrement would overflow"
    );
    q::<()>(&mut c, &["SET", "k", "-9223372036854775808"]);
    assert_eq!(
        q_err(&mut c, &["DECR", "k"]),
        "ERR increment or decrement would overflow"
    );
    assert_eq!(
        q_err(&mut c, &["DECRBY", "k", "-9223372036854775808"]),
        "ERR decrement would overflow"
    );
    assert_eq!(q::<String>(&mut c, &["GET", "k"]), "-9223372036854775808");
}

#[test]
fn incrbyfloat_adds_and_formats_like_redis() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "f", "10.50"]);
    assert_eq!(q::<String>(&mut c, &["INCRBYFLOAT", "f", "0.1"]), "10.6");
    assert_eq!(q::<String>(&mut c, &["INCRBYFLOAT", "f", "-5"]), "5.6");
    q::<()>(&mut c, &["SET", "f", "5.0e3"]);
    assert_eq!(q::<String>(&mut c, &["INCRBYFLOAT", "f", "2.0e2"]), "5200");
    assert_eq!(q::<String>(&mut c, &["INCRBYFLOAT", "new", "3"]), "3");
    assert_eq!(q::<String>(&mut c, &["INCRBYFLOAT", "new", "-3"]), "0");
    assert_eq!(q::<String>(&mut c, &["GET", "new"]), "0");
}

#[test]
fn incrbyfloat_rejects_bad_input() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "f", "1"]);
    assert_eq!(
        q_err(&mut c, &["INCRBYFLOAT", "f", "abc"]),
        "ERR value is not a valid float"
    );
    assert_eq!(
        q_err(&mut c, &["INCRBYFLOAT", "f", "inf"]),
        "ERR increment would produce NaN or Infinity"
    );
    q::<()>(&mut c, &["SET", "s", "abc"]);
    assert_eq!(
        q_err(&mut c, &["INCRBYFLOAT", "s", "1"]),
        "ERR value is not a valid float"
    );
    assert_eq!(q::<String>(&mut c, &["GET", "f"]), "1");
}

#[test]
fn getrange_handles_negative_and_out_of_range_indexes() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "k", "This is a string"]);
    assert_eq!(q::<String>(&mut c, &["GETRANGE", "k", "0", "3"]), "This");
    assert_eq!(q::<String>(&mut c, &["GETRANGE", "k", "-3", "-1"]), "ing");
    assert_eq!(
        q::<String>(&mut c, &["GETRANGE", "k", "0", "-1"]),
        "This is a string"
    );
    assert_eq!(
        q::<String>(&mut c, &["GETRANGE", "k", "10", "100"]),
        "string"
    );
    assert_eq!(q::<String>(&mut c, &["GETRANGE", "k", "5", "3"]), "");
    assert_eq!(q::<String>(&mut c, &["GETRANGE", "k", "-100", "2"]), "Thi");
    assert_eq!(q::<String>(&mut c, &["GETRANGE", "missing", "0", "-1"]), "");
    assert_eq!(q::<String>(&mut c, &["SUBSTR", "k", "0", "3"]), "This");
    assert_eq!(
        q_err(&mut c, &["GETRANGE", "k", "a", "b"]),
        "ERR value is not an integer or out of range"
    );
}

#[test]
fn setrange_overwrites_and_pads_with_zero_bytes() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "k", "Hello World"]);
    assert_eq!(q::<i64>(&mut c, &["SETRANGE", "k", "6", "Redis"]), 11);
    assert_eq!(q::<String>(&mut c, &["GET", "k"]), "Hello Redis");
    assert_eq!(q::<i64>(&mut c, &["SETRANGE", "p", "5", "x"]), 6);
    assert_eq!(q::<Vec<u8>>(&mut c, &["GET", "p"]), b"\0\0\0\0\0x".to_vec());
    // An empty value on a missing key creates nothing.
    assert_eq!(q::<i64>(&mut c, &["SETRANGE", "e", "3", ""]), 0);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "e"]), 0);
}

#[test]
fn setrange_rejects_bad_offsets() {
    let (_s, mut c) = server();
    assert_eq!(
        q_err(&mut c, &["SETRANGE", "k", "-1", "x"]),
        "ERR offset is out of range"
    );
    assert_eq!(
        q_err(&mut c, &["SETRANGE", "k", "536870912", "x"]),
        "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
    );
    assert_eq!(
        q_err(&mut c, &["SETRANGE", "k", "abc", "x"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "k"]), 0);
}

#[test]
fn lcs_returns_string_len_and_indexes() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["MSET", "key1", "ohmytext", "key2", "mynewtext"]);
    assert_eq!(q::<String>(&mut c, &["LCS", "key1", "key2"]), "mytext");
    assert_eq!(q::<i64>(&mut c, &["LCS", "key1", "key2", "LEN"]), 6);
    let idx: Value = q(
        &mut c,
        &[
            "LCS",
            "key1",
            "key2",
            "IDX",
            "MINMATCHLEN",
            "4",
            "WITHMATCHLEN",
        ],
    );
    let expected = Value::Array(vec![
        Value::BulkString(b"matches".to_vec()),
        Value::Array(vec![Value::Array(vec![
            Value::Array(vec![Value::Int(4), Value::Int(7)]),
            Value::Array(vec![Value::Int(5), Value::Int(8)]),
            Value::Int(4),
        ])]),
        Value::BulkString(b"len".to_vec()),
        Value::Int(6),
    ]);
    assert_eq!(idx, expected);
    let idx: Value = q(&mut c, &["LCS", "key1", "key2", "IDX"]);
    let expected = Value::Array(vec![
        Value::BulkString(b"matches".to_vec()),
        Value::Array(vec![
            Value::Array(vec![
                Value::Array(vec![Value::Int(4), Value::Int(7)]),
                Value::Array(vec![Value::Int(5), Value::Int(8)]),
            ]),
            Value::Array(vec![
                Value::Array(vec![Value::Int(2), Value::Int(3)]),
                Value::Array(vec![Value::Int(0), Value::Int(1)]),
            ]),
        ]),
        Value::BulkString(b"len".to_vec()),
        Value::Int(6),
    ]);
    assert_eq!(idx, expected);
}

#[test]
fn lcs_missing_keys_and_option_errors() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "a", "abc"]);
    assert_eq!(q::<String>(&mut c, &["LCS", "a", "missing"]), "");
    assert_eq!(q::<i64>(&mut c, &["LCS", "a", "missing", "LEN"]), 0);
    assert_eq!(
        q_err(&mut c, &["LCS", "a", "a", "LEN", "IDX"]),
        "ERR If you want both the length and indexes, please just use IDX."
    );
    assert_eq!(q_err(&mut c, &["LCS", "a", "a", "FOO"]), "ERR syntax error");
}

#[test]
fn object_encoding_reports_int_embstr_raw() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "i", "12345"]);
    assert_eq!(q::<String>(&mut c, &["OBJECT", "ENCODING", "i"]), "int");
    q::<()>(&mut c, &["SET", "e", "hello"]);
    assert_eq!(q::<String>(&mut c, &["OBJECT", "ENCODING", "e"]), "embstr");
    q::<()>(&mut c, &["SET", "r", &"x".repeat(45)]);
    assert_eq!(q::<String>(&mut c, &["OBJECT", "ENCODING", "r"]), "raw");
    q::<()>(&mut c, &["SET", "e44", &"x".repeat(44)]);
    assert_eq!(
        q::<String>(&mut c, &["OBJECT", "ENCODING", "e44"]),
        "embstr"
    );
    // APPEND turns a string into a raw one; INCR makes an int.
    q::<()>(&mut c, &["APPEND", "e", "!"]);
    assert_eq!(q::<String>(&mut c, &["OBJECT", "ENCODING", "e"]), "raw");
    q::<()>(&mut c, &["SET", "n", "0"]);
    q::<()>(&mut c, &["INCR", "n"]);
    assert_eq!(q::<String>(&mut c, &["OBJECT", "ENCODING", "n"]), "int");
    assert_eq!(
        q::<Value>(&mut c, &["OBJECT", "ENCODING", "missing"]),
        Value::Nil
    );
}

#[test]
fn string_commands_check_arity() {
    let (_s, mut c) = server();
    assert_eq!(
        q_err(&mut c, &["GET"]),
        "ERR wrong number of arguments for 'get' command"
    );
    assert_eq!(
        q_err(&mut c, &["GET", "a", "b"]),
        "ERR wrong number of arguments for 'get' command"
    );
    assert_eq!(
        q_err(&mut c, &["set", "k"]),
        "ERR wrong number of arguments for 'set' command"
    );
    assert_eq!(
        q_err(&mut c, &["APPEND", "k"]),
        "ERR wrong number of arguments for 'append' command"
    );
    assert_eq!(
        q_err(&mut c, &["INCRBY", "k"]),
        "ERR wrong number of arguments for 'incrby' command"
    );
    assert_eq!(
        q_err(&mut c, &["MGET"]),
        "ERR wrong number of arguments for 'mget' command"
    );
}

#[test]
fn commands_are_case_insensitive() {
    let (_s, mut c) = server();
    assert_eq!(
        q::<Value>(&mut c, &["sEt", "k", "v", "ex", "100", "nx"]),
        Value::Okay
    );
    assert_eq!(q::<String>(&mut c, &["get", "k"]), "v");
    assert_eq!(q::<String>(&mut c, &["GeTrAnGe", "k", "0", "0"]), "v");
}
