//! Hash commands through a real client, over both encodings (listpack and hashtable) and the
//! conversion between them. Expected values are what redis-server 7.0 replies (run with
//! `TESSERA_TEST_TARGET=redis` to check them against it).

mod common;

use common::{bulk, bulks, q, q_err, Frame, RawClient, TestServer};
use redis::Value;
use std::collections::{BTreeMap, BTreeSet};

fn server() -> (TestServer, redis::Connection) {
    let s = TestServer::start();
    let c = s.client();
    (s, c)
}

fn resp3(s: &TestServer) -> RawClient {
    let mut r = s.raw();
    assert!(matches!(r.call(&["HELLO", "3"]), Frame::Map(_)));
    r
}

fn encoding(c: &mut redis::Connection, key: &str) -> String {
    q(c, &["OBJECT", "ENCODING", key])
}

fn hgetall(c: &mut redis::Connection, key: &str) -> BTreeMap<String, String> {
    q(c, &["HGETALL", key])
}

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

#[test]
fn hset_hget_and_friends() {
    let (_s, mut c) = server();
    assert_eq!(q::<i64>(&mut c, &["HSET", "h", "a", "1", "b", "2"]), 2);
    assert_eq!(q::<i64>(&mut c, &["HSET", "h", "a", "3", "c", "4"]), 1);
    assert_eq!(q::<String>(&mut c, &["HGET", "h", "a"]), "3");
    assert_eq!(q::<Value>(&mut c, &["HGET", "h", "zz"]), Value::Nil);
    assert_eq!(q::<Value>(&mut c, &["HGET", "nosuch", "a"]), Value::Nil);
    assert_eq!(q::<String>(&mut c, &["HMSET", "h", "d", "5"]), "OK");
    assert_eq!(q::<i64>(&mut c, &["HSETNX", "h", "a", "9"]), 0);
    assert_eq!(q::<i64>(&mut c, &["HSETNX", "h", "e", "9"]), 1);
    assert_eq!(q::<i64>(&mut c, &["HSETNX", "new", "f", "v"]), 1);
    assert_eq!(q::<String>(&mut c, &["HGET", "new", "f"]), "v");
    assert_eq!(
        q::<Vec<Option<String>>>(&mut c, &["HMGET", "h", "a", "zz", "b"]),
        vec![Some("3".into()), None, Some("2".into())]
    );
    assert_eq!(
        q::<Vec<Option<String>>>(&mut c, &["HMGET", "nosuch", "a", "b"]),
        vec![None, None]
    );
    assert_eq!(q::<i64>(&mut c, &["HLEN", "h"]), 5);
    assert_eq!(q::<i64>(&mut c, &["HLEN", "nosuch"]), 0);
    assert_eq!(q::<i64>(&mut c, &["HSTRLEN", "h", "a"]), 1);
    assert_eq!(q::<i64>(&mut c, &["HSTRLEN", "h", "zz"]), 0);
    assert_eq!(q::<i64>(&mut c, &["HEXISTS", "h", "a"]), 1);
    assert_eq!(q::<i64>(&mut c, &["HEXISTS", "h", "zz"]), 0);
    assert_eq!(q::<i64>(&mut c, &["HEXISTS", "nosuch", "a"]), 0);
    assert_eq!(q::<String>(&mut c, &["TYPE", "h"]), "hash");
}

#[test]
fn hash_is_binary_safe() {
    let (_s, mut c) = server();
    let f: Vec<u8> = vec![0, b'\r', b'\n', 0xff];
    let v: Vec<u8> = vec![b' ', 0, 0x80];
    let n: i64 = redis::cmd("HSET")
        .arg("h")
        .arg(&f)
        .arg(&v)
        .arg("")
        .arg("")
        .query(&mut c)
        .unwrap();
    assert_eq!(n, 2);
    let got: Vec<u8> = redis::cmd("HGET").arg("h").arg(&f).query(&mut c).unwrap();
    assert_eq!(got, v);
    assert_eq!(q::<String>(&mut c, &["HGET", "h", ""]), "");
    assert_eq!(q::<i64>(&mut c, &["HSTRLEN", "h", ""]), 0);
}

#[test]
fn arity_and_wrong_type_errors() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "str", "x"]);
    assert_eq!(
        q_err(&mut c, &["HSET", "h", "a", "1", "b"]),
        "ERR wrong number of arguments for 'hset' command"
    );
    assert_eq!(
        q_err(&mut c, &["HMSET", "h", "a", "1", "b"]),
        "ERR wrong number of arguments for 'hmset' command"
    );
    assert_eq!(
        q_err(&mut c, &["HSET", "h", "a"]),
        "ERR wrong number of arguments for 'hset' command"
    );
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "h"]), 0);
    for args in [
        &["HSET", "str", "a", "1"][..],
        &["HMSET", "str", "a", "1"],
        &["HSETNX", "str", "a", "1"],
        &["HGET", "str", "a"],
        &["HMGET", "str", "a"],
        &["HDEL", "str", "a"],
        &["HLEN", "str"],
        &["HSTRLEN", "str", "a"],
        &["HEXISTS", "str", "a"],
        &["HKEYS", "str"],
        &["HVALS", "str"],
        &["HGETALL", "str"],
        &["HINCRBY", "str", "a", "1"],
        &["HINCRBYFLOAT", "str", "a", "1"],
        &["HRANDFIELD", "str"],
        &["HRANDFIELD", "str", "2"],
        &["HSCAN", "str", "0"],
    ] {
        assert_eq!(q_err(&mut c, args), WRONGTYPE, "{args:?}");
    }
    assert_eq!(q::<String>(&mut c, &["GET", "str"]), "x");
}

#[test]
fn hdel_removes_fields_and_the_empty_key() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["HSET", "h", "a", "1", "b", "2", "c", "3"]);
    assert_eq!(q::<i64>(&mut c, &["HDEL", "h", "zz"]), 0);
    assert_eq!(q::<i64>(&mut c, &["HDEL", "h", "a", "zz", "a", "b"]), 2);
    assert_eq!(q::<i64>(&mut c, &["HDEL", "nosuch", "a"]), 0);
    assert_eq!(q::<i64>(&mut c, &["HDEL", "h", "c"]), 1);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "h"]), 0);
    // The same in the hashtable encoding.
    q::<()>(&mut c, &["CONFIG", "SET", "hash-max-listpack-entries", "1"]);
    q::<()>(&mut c, &["HSET", "h", "a", "1", "b", "2"]);
    assert_eq!(encoding(&mut c, "h"), "hashtable");
    assert_eq!(q::<i64>(&mut c, &["HDEL", "h", "a", "b", "c"]), 2);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "h"]), 0);
}

#[test]
fn listpack_replies_in_insertion_order() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["HSET", "h", "z", "1", "a", "2", "m", "3"]);
    q::<()>(&mut c, &["HSET", "h", "a", "updated"]);
    q::<()>(&mut c, &["HDEL", "h", "z"]);
    q::<()>(&mut c, &["HSET", "h", "b", "4"]);
    assert_eq!(encoding(&mut c, "h"), "listpack");
    assert_eq!(q::<Vec<String>>(&mut c, &["HKEYS", "h"]), ["a", "m", "b"]);
    assert_eq!(
        q::<Vec<String>>(&mut c, &["HVALS", "h"]),
        ["updated", "3", "4"]
    );
    assert_eq!(
        q::<Vec<String>>(&mut c, &["HGETALL", "h"]),
        ["a", "updated", "m", "3", "b", "4"]
    );
    assert_eq!(
        q::<Vec<String>>(&mut c, &["HKEYS", "nosuch"]),
        Vec::<String>::new()
    );
    assert_eq!(
        q::<Vec<String>>(&mut c, &["HGETALL", "nosuch"]),
        Vec::<String>::new()
    );
}

#[test]
fn hgetall_is_a_map_in_resp3() {
    let s = TestServer::start();
    let mut r = resp3(&s);
    r.call(&["HSET", "h", "a", "1", "b", "2"]);
    assert_eq!(
        r.call(&["HGETALL", "h"]),
        Frame::Map(vec![(bulk("a"), bulk("1")), (bulk("b"), bulk("2"))])
    );
    assert_eq!(r.call(&["HGETALL", "nosuch"]), Frame::Map(vec![]));
    assert_eq!(r.call(&["HKEYS", "h"]), bulks(&["a", "b"]));
    assert_eq!(r.call(&["HGET", "h", "zz"]), Frame::Null);
    assert_eq!(
        r.call(&["HMGET", "h", "a", "zz"]),
        Frame::Array(vec![bulk("1"), Frame::Null])
    );
}

#[test]
fn listpack_converts_to_hashtable_on_entry_count() {
    let (_s, mut c) = server();
    // The 7.0 default is 512 fields.
    let n: Vec<String> = q(&mut c, &["CONFIG", "GET", "hash-max-listpack-entries"]);
    assert_eq!(n[1], "512");
    for i in 0..512 {
        q::<()>(&mut c, &["HSET", "h", &format!("f{i}"), "v"]);
    }
    assert_eq!(encoding(&mut c, "h"), "listpack");
    q::<()>(&mut c, &["HSET", "h", "f512", "v"]);
    assert_eq!(encoding(&mut c, "h"), "hashtable");
    assert_eq!(q::<i64>(&mut c, &["HLEN", "h"]), 513);
    // It never converts back.
    for i in 0..510 {
        q::<()>(&mut c, &["HDEL", "h", &format!("f{i}")]);
    }
    assert_eq!(encoding(&mut c, "h"), "hashtable");
    assert_eq!(
        hgetall(&mut c, "h"),
        [("f510", "v"), ("f511", "v"), ("f512", "v")]
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    );
    // A multi-pair HSET crossing the limit, with a lowered limit.
    q::<()>(&mut c, &["CONFIG", "SET", "hash-max-ziplist-entries", "3"]);
    q::<()>(&mut c, &["HSET", "h2", "a", "1", "b", "2", "c", "3"]);
    assert_eq!(encoding(&mut c, "h2"), "listpack");
    q::<()>(
        &mut c,
        &["HSET", "h3", "a", "1", "b", "2", "c", "3", "d", "4"],
    );
    assert_eq!(encoding(&mut c, "h3"), "hashtable");
    // Once the limit is below the size, even an update converts.
    q::<()>(&mut c, &["CONFIG", "SET", "hash-max-listpack-entries", "2"]);
    q::<()>(&mut c, &["HSETNX", "h2", "a", "x"]);
    assert_eq!(encoding(&mut c, "h2"), "listpack");
    q::<()>(&mut c, &["HSET", "h2", "a", "x"]);
    assert_eq!(encoding(&mut c, "h2"), "hashtable");
    assert_eq!(q::<String>(&mut c, &["HGET", "h2", "a"]), "x");
    // Zero entries allowed: every hash is a hashtable.
    q::<()>(&mut c, &["CONFIG", "SET", "hash-max-listpack-entries", "0"]);
    q::<()>(&mut c, &["HSET", "h4", "a", "1"]);
    assert_eq!(encoding(&mut c, "h4"), "hashtable");
}

#[test]
fn listpack_converts_to_hashtable_on_long_items() {
    let (_s, mut c) = server();
    let b64 = "x".repeat(64);
    let b65 = "x".repeat(65);
    q::<()>(&mut c, &["HSET", "h", &b64, &b64]);
    assert_eq!(encoding(&mut c, "h"), "listpack");
    q::<()>(&mut c, &["HSET", "h", "a", &b65]);
    assert_eq!(encoding(&mut c, "h"), "hashtable");
    q::<()>(&mut c, &["HSET", "h2", &b65, "1"]);
    assert_eq!(encoding(&mut c, "h2"), "hashtable");
    // HSETNX on an existing field writes nothing, so nothing converts.
    q::<()>(&mut c, &["HSET", "h3", "a", "1"]);
    assert_eq!(q::<i64>(&mut c, &["HSETNX", "h3", "a", &b65]), 0);
    assert_eq!(encoding(&mut c, "h3"), "listpack");
    assert_eq!(q::<i64>(&mut c, &["HSETNX", "h3", "b", &b65]), 1);
    assert_eq!(encoding(&mut c, "h3"), "hashtable");
    // Counters convert on a long field or a long result.
    q::<()>(&mut c, &["HINCRBY", "h4", &b65, "1"]);
    assert_eq!(encoding(&mut c, "h4"), "hashtable");
    q::<()>(&mut c, &["HINCRBYFLOAT", "h5", "f", "1e70"]);
    assert_eq!(encoding(&mut c, "h5"), "hashtable");
    q::<()>(&mut c, &["HINCRBYFLOAT", "h6", "f", "1e10"]);
    assert_eq!(encoding(&mut c, "h6"), "listpack");
    // hash-max-listpack-value 0: only empty fields and values stay compact.
    q::<()>(&mut c, &["CONFIG", "SET", "hash-max-ziplist-value", "0"]);
    q::<()>(&mut c, &["HSET", "h7", "", ""]);
    assert_eq!(encoding(&mut c, "h7"), "listpack");
    q::<()>(&mut c, &["HSET", "h7", "a", ""]);
    assert_eq!(encoding(&mut c, "h7"), "hashtable");
    assert_eq!(q::<i64>(&mut c, &["HLEN", "h7"]), 2);
}

#[test]
fn hincrby_counts_and_checks() {
    let (_s, mut c) = server();
    assert_eq!(q::<i64>(&mut c, &["HINCRBY", "h", "n", "5"]), 5);
    assert_eq!(q::<i64>(&mut c, &["HINCRBY", "h", "n", "-7"]), -2);
    assert_eq!(q::<String>(&mut c, &["HGET", "h", "n"]), "-2");
    q::<()>(
        &mut c,
        &[
            "HSET",
            "h",
            "t",
            "abc",
            "sp",
            " 1",
            "z",
            "01",
            "e",
            "",
            "max",
            "9223372036854775807",
        ],
    );
    for f in ["t", "sp", "z", "e"] {
        assert_eq!(
            q_err(&mut c, &["HINCRBY", "h", f, "1"]),
            "ERR hash value is not an integer",
            "{f}"
        );
    }
    assert_eq!(
        q_err(&mut c, &["HINCRBY", "h", "max", "1"]),
        "ERR increment or decrement would overflow"
    );
    assert_eq!(
        q_err(&mut c, &["HINCRBY", "h", "n", "1.5"]),
        "ERR value is not an integer or out of range"
    );
    // The increment is checked before the key.
    q::<()>(&mut c, &["SET", "str", "x"]);
    assert_eq!(
        q_err(&mut c, &["HINCRBY", "str", "n", "x"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(q_err(&mut c, &["HINCRBY", "str", "n", "1"]), WRONGTYPE);
    assert_eq!(
        q::<String>(&mut c, &["HGET", "h", "max"]),
        "9223372036854775807"
    );
    // In the hashtable encoding too.
    q::<()>(&mut c, &["CONFIG", "SET", "hash-max-listpack-entries", "1"]);
    assert_eq!(q::<i64>(&mut c, &["HINCRBY", "big", "a", "1"]), 1);
    assert_eq!(q::<i64>(&mut c, &["HINCRBY", "big", "b", "2"]), 2);
    assert_eq!(q::<i64>(&mut c, &["HINCRBY", "big", "b", "2"]), 4);
    assert_eq!(encoding(&mut c, "big"), "hashtable");
}

#[test]
fn hincrbyfloat_formats_and_checks() {
    let (_s, mut c) = server();
    assert_eq!(
        q::<String>(&mut c, &["HINCRBYFLOAT", "h", "f", "10.50"]),
        "10.5"
    );
    assert_eq!(
        q::<String>(&mut c, &["HINCRBYFLOAT", "h", "f", "0.1"]),
        "10.6"
    );
    assert_eq!(
        q::<String>(&mut c, &["HINCRBYFLOAT", "h", "f", "-5.0e3"]),
        "-4989.39999999999999991"
    );
    assert_eq!(
        q::<String>(&mut c, &["HINCRBYFLOAT", "h", "g", "0x10"]),
        "16"
    );
    q::<()>(&mut c, &["HSET", "h", "i", "5", "t", "abc", "e", ""]);
    assert_eq!(
        q::<String>(&mut c, &["HINCRBYFLOAT", "h", "i", "0.5"]),
        "5.5"
    );
    assert_eq!(
        q_err(&mut c, &["HINCRBYFLOAT", "h", "t", "1"]),
        "ERR hash value is not a float"
    );
    assert_eq!(
        q_err(&mut c, &["HINCRBYFLOAT", "h", "e", "1"]),
        "ERR hash value is not a float"
    );
    for bad in ["abc", "", " 1", "1 ", "nan"] {
        assert_eq!(
            q_err(&mut c, &["HINCRBYFLOAT", "h", "f", bad]),
            "ERR value is not a valid float",
            "{bad:?}"
        );
    }
    assert_eq!(
        q_err(&mut c, &["HINCRBYFLOAT", "h", "f", "inf"]),
        "ERR value is NaN or Infinity"
    );
    q::<()>(&mut c, &["HSET", "h", "big", "1.1e4932"]);
    assert_eq!(
        q_err(&mut c, &["HINCRBYFLOAT", "h", "big", "1e4932"]),
        "ERR increment would produce NaN or Infinity"
    );
    // Increment checks come before the key's type.
    q::<()>(&mut c, &["SET", "str", "x"]);
    assert_eq!(
        q_err(&mut c, &["HINCRBYFLOAT", "str", "f", "inf"]),
        "ERR value is NaN or Infinity"
    );
    assert_eq!(
        q_err(&mut c, &["HINCRBYFLOAT", "str", "f", "x"]),
        "ERR value is not a valid float"
    );
    assert_eq!(q_err(&mut c, &["HINCRBYFLOAT", "str", "f", "1"]), WRONGTYPE);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "nosuch"]), 0);
    assert_eq!(
        q_err(&mut c, &["HINCRBYFLOAT", "nosuch", "f", "inf"]),
        "ERR value is NaN or Infinity"
    );
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "nosuch"]), 0);
}

#[test]
fn hrandfield_counts() {
    let (_s, mut c) = server();
    let all: BTreeSet<String> = ["a", "b", "c", "d", "e"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    q::<()>(
        &mut c,
        &[
            "HSET", "h", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5",
        ],
    );
    for enc in ["listpack", "hashtable"] {
        if enc == "hashtable" {
            q::<()>(&mut c, &["CONFIG", "SET", "hash-max-listpack-entries", "1"]);
            q::<()>(&mut c, &["HSET", "h", "a", "1"]);
        }
        assert_eq!(encoding(&mut c, "h"), enc);
        for _ in 0..20 {
            let one: String = q(&mut c, &["HRANDFIELD", "h"]);
            assert!(all.contains(&one));
            let three: Vec<String> = q(&mut c, &["HRANDFIELD", "h", "3"]);
            assert_eq!(three.len(), 3);
            assert_eq!(
                three.iter().collect::<BTreeSet<_>>().len(),
                3,
                "distinct: {three:?}"
            );
            assert!(three.iter().all(|f| all.contains(f)));
            let many: Vec<String> = q(&mut c, &["HRANDFIELD", "h", "-20"]);
            assert_eq!(many.len(), 20);
            assert!(many.iter().all(|f| all.contains(f)));
            let pairs: Vec<String> = q(&mut c, &["HRANDFIELD", "h", "-4", "WITHVALUES"]);
            assert_eq!(pairs.len(), 8);
            for p in pairs.chunks(2) {
                assert_eq!(q::<String>(&mut c, &["HGET", "h", &p[0]]), p[1]);
            }
        }
        let everything: Vec<String> = q(&mut c, &["HRANDFIELD", "h", "10"]);
        assert_eq!(everything.into_iter().collect::<BTreeSet<_>>(), all);
        let with: BTreeMap<String, String> = q(&mut c, &["HRANDFIELD", "h", "5", "withvalues"]);
        assert_eq!(with.len(), 5);
        assert_eq!(
            q::<Vec<String>>(&mut c, &["HRANDFIELD", "h", "0"]),
            Vec::<String>::new()
        );
    }
    assert_eq!(q::<Value>(&mut c, &["HRANDFIELD", "nosuch"]), Value::Nil);
    assert_eq!(
        q::<Vec<String>>(&mut c, &["HRANDFIELD", "nosuch", "3"]),
        Vec::<String>::new()
    );
    assert_eq!(
        q_err(&mut c, &["HRANDFIELD", "h", "x"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        q_err(&mut c, &["HRANDFIELD", "nosuch", "1", "foo"]),
        "ERR syntax error"
    );
    assert_eq!(
        q_err(&mut c, &["HRANDFIELD", "h", "1", "withvalues", "x"]),
        "ERR syntax error"
    );
    assert_eq!(
        q::<Vec<String>>(&mut c, &["HRANDFIELD", "nosuch", "-9223372036854775807"]),
        Vec::<String>::new()
    );
    if !common::target_is_redis() {
        // Redis runs out of memory building this reply; Tessera refuses it.
        assert_eq!(
            q_err(&mut c, &["HRANDFIELD", "h", "-9223372036854775807"]),
            "ERR value is out of range"
        );
    }
    assert_eq!(
        q_err(&mut c, &["HRANDFIELD", "h", "-9223372036854775808"]),
        "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
    );
    assert_eq!(
        q_err(
            &mut c,
            &["HRANDFIELD", "nosuch", "-4611686018427387904", "WITHVALUES"]
        ),
        "ERR value is out of range"
    );
    assert_eq!(
        q_err(
            &mut c,
            &["HRANDFIELD", "nosuch", "4611686018427387904", "WITHVALUES"]
        ),
        "ERR value is out of range"
    );
}

#[test]
fn hrandfield_resp3_shapes() {
    let s = TestServer::start();
    let mut r = resp3(&s);
    r.call(&["HSET", "h", "a", "1"]);
    assert_eq!(r.call(&["HRANDFIELD", "h"]), bulk("a"));
    assert_eq!(r.call(&["HRANDFIELD", "nosuch"]), Frame::Null);
    assert_eq!(
        r.call(&["HRANDFIELD", "nosuch", "2", "WITHVALUES"]),
        Frame::Array(vec![])
    );
    let pair = Frame::Array(vec![bulk("a"), bulk("1")]);
    assert_eq!(
        r.call(&["HRANDFIELD", "h", "-2", "WITHVALUES"]),
        Frame::Array(vec![pair.clone(), pair.clone()])
    );
    assert_eq!(
        r.call(&["HRANDFIELD", "h", "3", "WITHVALUES"]),
        Frame::Array(vec![pair])
    );
    assert_eq!(r.call(&["HRANDFIELD", "h", "-2"]), bulks(&["a", "a"]));
    // RESP2: a flat array.
    let mut r2 = s.raw();
    assert_eq!(
        r2.call(&["HRANDFIELD", "h", "-2", "WITHVALUES"]),
        bulks(&["a", "1", "a", "1"])
    );
}

/// Runs a whole HSCAN, returning the pairs seen and the number of calls.
fn full_hscan(
    c: &mut redis::Connection,
    key: &str,
    extra: &[&str],
) -> (Vec<(String, String)>, usize) {
    let mut cursor = "0".to_string();
    let mut seen = Vec::new();
    let mut calls = 0;
    loop {
        let mut args = vec!["HSCAN", key, &cursor];
        args.extend_from_slice(extra);
        let (next, items): (String, Vec<String>) = q(c, &args);
        calls += 1;
        for p in items.chunks(2) {
            seen.push((p[0].clone(), p[1].clone()));
        }
        if next == "0" {
            return (seen, calls);
        }
        cursor = next;
    }
}

#[test]
fn hscan_listpack_returns_everything_at_once() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["HSET", "h", "a", "1", "b", "2", "ab", "3"]);
    let (seen, calls) = full_hscan(&mut c, "h", &["COUNT", "1"]);
    assert_eq!(calls, 1);
    assert_eq!(seen.len(), 3);
    // Any cursor works on a compact hash.
    let (next, items): (String, Vec<String>) = q(&mut c, &["HSCAN", "h", "12345"]);
    assert_eq!((next.as_str(), items.len()), ("0", 6));
    let (_, items): (String, Vec<String>) = q(&mut c, &["HSCAN", "h", "0", "MATCH", "a*"]);
    assert_eq!(items, ["a", "1", "ab", "3"]);
    let (_, items): (String, Vec<String>) = q(
        &mut c,
        &["HSCAN", "h", "0", "match", "a*", "COUNT", "5", "MATCH", "b"],
    );
    assert_eq!(items, ["b", "2"]);
    let (next, items): (String, Vec<String>) = q(&mut c, &["HSCAN", "nosuch", "0", "BAD"]);
    assert_eq!((next.as_str(), items.len()), ("0", 0));
}

#[test]
fn hscan_errors() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["HSET", "h", "a", "1"]);
    for cursor in ["abc", " 1", "1 ", "-", "18446744073709551616"] {
        assert_eq!(
            q_err(&mut c, &["HSCAN", "h", cursor]),
            "ERR invalid cursor",
            "{cursor:?}"
        );
        assert_eq!(
            q_err(&mut c, &["HSCAN", "nosuch", cursor]),
            "ERR invalid cursor"
        );
    }
    for cursor in ["", "+0", "-1", "00", "18446744073709551615"] {
        let (next, _): (String, Vec<String>) = q(&mut c, &["HSCAN", "h", cursor]);
        assert_eq!(next, "0", "{cursor:?}");
    }
    for args in [
        &["HSCAN", "h", "0", "COUNT", "0"][..],
        &["HSCAN", "h", "0", "COUNT", "-1"],
        &["HSCAN", "h", "0", "COUNT"],
        &["HSCAN", "h", "0", "MATCH"],
        &["HSCAN", "h", "0", "TYPE", "string"],
        &["HSCAN", "h", "0", "NOVALUES"],
    ] {
        assert_eq!(q_err(&mut c, args), "ERR syntax error", "{args:?}");
    }
    assert_eq!(
        q_err(&mut c, &["HSCAN", "h", "0", "COUNT", "x"]),
        "ERR value is not an integer or out of range"
    );
}

#[test]
fn hscan_hashtable_returns_every_field_while_it_changes() {
    let (_s, mut c) = server();
    let n = 2000;
    let mut pipe = redis::pipe();
    for i in 0..n {
        pipe.cmd("HSET")
            .arg("h")
            .arg(format!("f{i}"))
            .arg(i)
            .ignore();
    }
    pipe.query::<()>(&mut c).unwrap();
    assert_eq!(encoding(&mut c, "h"), "hashtable");
    let (seen, calls) = full_hscan(&mut c, "h", &["COUNT", "50"]);
    assert!(calls > 1, "a big hash takes several calls");
    let fields: BTreeSet<String> = seen.iter().map(|(f, _)| f.clone()).collect();
    assert_eq!(fields.len(), n);
    assert!(seen.iter().all(|(f, v)| f[1..] == *v));
    // Fields present for the whole scan are all returned, whatever is added and deleted
    // between calls.
    let mut cursor = "0".to_string();
    let mut seen = BTreeSet::new();
    let mut round = 0;
    loop {
        let (next, items): (String, Vec<String>) =
            q(&mut c, &["HSCAN", "h", &cursor, "COUNT", "20"]);
        seen.extend(items.chunks(2).map(|p| p[0].clone()));
        round += 1;
        // Delete from the top of the range we check, add new fields.
        q::<()>(&mut c, &["HDEL", "h", &format!("f{}", n - round)]);
        q::<()>(&mut c, &["HSET", "h", &format!("new{round}"), "x"]);
        if next == "0" {
            break;
        }
        cursor = next;
    }
    for i in 0..n - round {
        assert!(seen.contains(&format!("f{i}")), "f{i} was never returned");
    }
    // MATCH filters what a call returns.
    let (seen, _) = full_hscan(&mut c, "h", &["MATCH", "f1??", "COUNT", "100"]);
    assert_eq!(seen.len(), 100);
}

/// A hash grown to 60,000 fields goes through index doublings that drain
/// over many writes: every field keeps its value, updates in place and
/// deletions during the growth land, and HSCAN started before the growth
/// returns every field present throughout.
#[test]
fn large_hash_grows_while_updated_and_scanned() {
    let s = common::TestServer::start();
    let mut c = s.client();
    let field = |i: usize| format!("field:{i}");
    let mut model: std::collections::BTreeMap<String, String> = Default::default();
    let hset = |c: &mut redis::Connection,
                range: std::ops::Range<usize>,
                tag: &str,
                model: &mut std::collections::BTreeMap<String, String>| {
        let mut cmd = redis::cmd("HSET");
        cmd.arg("big");
        for i in range {
            cmd.arg(field(i)).arg(format!("{tag}{i}"));
            model.insert(field(i), format!("{tag}{i}"));
        }
        let _: i64 = cmd.query(c).expect("HSET");
    };
    hset(&mut c, 0..1000, "v", &mut model);
    let kept: Vec<String> = model
        .keys()
        .filter(|f| !f.ends_with('7'))
        .cloned()
        .collect();
    let mut scanned = std::collections::BTreeSet::new();
    let mut cursor = 0u64;
    let mut scanning = true;
    let mut next = 1000;
    while scanning || next < 60_000 {
        if scanning {
            let (cur, batch): (u64, Vec<String>) = redis::cmd("HSCAN")
                .arg("big")
                .arg(cursor)
                .arg("COUNT")
                .arg(50)
                .query(&mut c)
                .expect("HSCAN");
            for pair in batch.chunks(2) {
                scanned.insert(pair[0].clone());
            }
            cursor = cur;
            scanning = cursor != 0;
        }
        if next < 60_000 {
            hset(&mut c, next..next + 1000, "v", &mut model);
            // Rewrites with a longer value and deletions among the old fields.
            hset(&mut c, next - 500..next - 400, "longer-value-", &mut model);
            let gone = field(next - 993);
            if gone.ends_with('7') {
                let _: i64 = redis::cmd("HDEL")
                    .arg("big")
                    .arg(&gone)
                    .query(&mut c)
                    .expect("HDEL");
                model.remove(&gone);
            }
            next += 1000;
        }
    }
    for f in &kept {
        assert!(scanned.contains(f), "HSCAN missed {f}");
    }
    assert_eq!(q::<i64>(&mut c, &["HLEN", "big"]), model.len() as i64);
    let all: std::collections::BTreeMap<String, String> = q(&mut c, &["HGETALL", "big"]);
    assert_eq!(all, model);
    assert_eq!(
        q::<String>(&mut c, &["OBJECT", "ENCODING", "big"]),
        "hashtable"
    );
}
