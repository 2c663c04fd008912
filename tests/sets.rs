//! Set commands through a real client, over both encodings (intset and hashtable) and the
//! conversion between them. Expected values are what redis-server 7.0 replies (run with
//! `TESSERA_TEST_TARGET=redis` to check them against it).

mod common;

use common::{bulk, bulks, q, q_err, Frame, RawClient, TestServer};
use redis::Value;
use std::collections::BTreeSet;

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

fn members(c: &mut redis::Connection, key: &str) -> BTreeSet<String> {
    q(c, &["SMEMBERS", key])
}

fn set_of(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

#[test]
fn sadd_srem_and_membership() {
    let (_s, mut c) = server();
    assert_eq!(q::<i64>(&mut c, &["SADD", "s", "a", "b", "a", "c"]), 3);
    assert_eq!(q::<i64>(&mut c, &["SADD", "s", "a", "d"]), 1);
    assert_eq!(q::<i64>(&mut c, &["SCARD", "s"]), 4);
    assert_eq!(q::<i64>(&mut c, &["SCARD", "nosuch"]), 0);
    assert_eq!(q::<i64>(&mut c, &["SISMEMBER", "s", "a"]), 1);
    assert_eq!(q::<i64>(&mut c, &["SISMEMBER", "s", "z"]), 0);
    assert_eq!(q::<i64>(&mut c, &["SISMEMBER", "nosuch", "a"]), 0);
    assert_eq!(
        q::<Vec<i64>>(&mut c, &["SMISMEMBER", "s", "a", "z", "d"]),
        [1, 0, 1]
    );
    assert_eq!(
        q::<Vec<i64>>(&mut c, &["SMISMEMBER", "nosuch", "a", "b"]),
        [0, 0]
    );
    assert_eq!(members(&mut c, "s"), set_of(&["a", "b", "c", "d"]));
    assert_eq!(q::<i64>(&mut c, &["SREM", "s", "a", "z", "a"]), 1);
    assert_eq!(q::<i64>(&mut c, &["SREM", "nosuch", "a"]), 0);
    assert_eq!(q::<i64>(&mut c, &["SREM", "s", "b", "c", "d"]), 3);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "s"]), 0);
    assert_eq!(members(&mut c, "nosuch"), BTreeSet::new());
    q::<()>(&mut c, &["SADD", "t", "x"]);
    assert_eq!(q::<String>(&mut c, &["TYPE", "t"]), "set");
}

#[test]
fn wrong_type_errors() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "str", "x"]);
    q::<()>(&mut c, &["SADD", "s", "1"]);
    for args in [
        &["SADD", "str", "a"][..],
        &["SREM", "str", "a"],
        &["SCARD", "str"],
        &["SISMEMBER", "str", "a"],
        &["SMISMEMBER", "str", "a"],
        &["SMEMBERS", "str"],
        &["SRANDMEMBER", "str"],
        &["SRANDMEMBER", "str", "1"],
        &["SPOP", "str"],
        &["SPOP", "str", "0"],
        &["SMOVE", "str", "s", "1"],
        &["SMOVE", "s", "str", "9"],
        &["SINTER", "nosuch", "str"],
        &["SINTER", "s", "str"],
        &["SINTERCARD", "2", "nosuch", "str"],
        &["SINTERSTORE", "d", "nosuch", "str"],
        &["SUNION", "s", "str"],
        &["SUNIONSTORE", "d", "str"],
        &["SDIFF", "nosuch", "str"],
        &["SDIFFSTORE", "d", "s", "str"],
        &["SSCAN", "str", "0"],
    ] {
        assert_eq!(q_err(&mut c, args), WRONGTYPE, "{args:?}");
    }
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "d"]), 0);
    // A missing source answers 0 before the destination's type matters.
    assert_eq!(q::<i64>(&mut c, &["SMOVE", "nosuch", "str", "1"]), 0);
}

#[test]
fn intset_encoding_and_conversion() {
    let (_s, mut c) = server();
    q::<()>(
        &mut c,
        &[
            "SADD",
            "i",
            "5",
            "-3",
            "70000",
            "-9223372036854775808",
            "9223372036854775807",
        ],
    );
    assert_eq!(encoding(&mut c, "i"), "intset");
    // Intsets reply in ascending order, as in Redis.
    assert_eq!(
        q::<Vec<String>>(&mut c, &["SMEMBERS", "i"]),
        [
            "-9223372036854775808",
            "-3",
            "5",
            "70000",
            "9223372036854775807"
        ]
    );
    assert_eq!(q::<i64>(&mut c, &["SISMEMBER", "i", "70000"]), 1);
    assert_eq!(q::<i64>(&mut c, &["SISMEMBER", "i", "070000"]), 0);
    // A non-integer converts; "01" and "-0" are not integers.
    q::<()>(&mut c, &["SADD", "j", "1", "01"]);
    assert_eq!(encoding(&mut c, "j"), "hashtable");
    q::<()>(&mut c, &["SADD", "k", "-0"]);
    assert_eq!(encoding(&mut c, "k"), "hashtable");
    q::<()>(&mut c, &["SADD", "l", "abc", "1"]);
    q::<()>(&mut c, &["SREM", "l", "abc"]);
    assert_eq!(encoding(&mut c, "l"), "hashtable", "never converts back");
    // The entry limit: up to set-max-intset-entries stays an intset.
    let n: Vec<String> = q(&mut c, &["CONFIG", "GET", "set-max-intset-entries"]);
    assert_eq!(n[1], "512");
    let nums: Vec<String> = (0..512).map(|i| i.to_string()).collect();
    let mut args = vec!["SADD", "big"];
    args.extend(nums.iter().map(|s| s.as_str()));
    assert_eq!(q::<i64>(&mut c, &args), 512);
    assert_eq!(encoding(&mut c, "big"), "intset");
    q::<()>(&mut c, &["SADD", "big", "512"]);
    assert_eq!(encoding(&mut c, "big"), "hashtable");
    assert_eq!(q::<i64>(&mut c, &["SCARD", "big"]), 513);
    assert_eq!(q::<i64>(&mut c, &["SISMEMBER", "big", "100"]), 1);
    // Lowering the limit converts at the next real insertion only.
    q::<()>(&mut c, &["SADD", "m", "1", "2", "3"]);
    q::<()>(&mut c, &["CONFIG", "SET", "set-max-intset-entries", "1"]);
    q::<()>(&mut c, &["SADD", "m", "1"]);
    assert_eq!(encoding(&mut c, "m"), "intset");
    q::<()>(&mut c, &["SADD", "m", "4"]);
    assert_eq!(encoding(&mut c, "m"), "hashtable");
    q::<()>(&mut c, &["CONFIG", "SET", "set-max-intset-entries", "0"]);
    q::<()>(&mut c, &["SADD", "z", "1"]);
    assert_eq!(encoding(&mut c, "z"), "hashtable");
    // 7.0 has no listpack sets: a small set of strings is a hashtable.
    q::<()>(&mut c, &["SADD", "w", "a"]);
    assert_eq!(encoding(&mut c, "w"), "hashtable");
}

#[test]
fn spop_and_srandmember() {
    let (_s, mut c) = server();
    for enc in ["intset", "hashtable"] {
        let items: Vec<String> = if enc == "intset" {
            (1..=10).map(|i| i.to_string()).collect()
        } else {
            (1..=10).map(|i| format!("m{i}")).collect()
        };
        let all: BTreeSet<String> = items.iter().cloned().collect();
        let mut args = vec!["SADD", "s"];
        args.extend(items.iter().map(|s| s.as_str()));
        q::<()>(&mut c, &args);
        assert_eq!(encoding(&mut c, "s"), enc);
        for _ in 0..10 {
            let one: String = q(&mut c, &["SRANDMEMBER", "s"]);
            assert!(all.contains(&one));
            let three: Vec<String> = q(&mut c, &["SRANDMEMBER", "s", "3"]);
            assert_eq!(three.iter().collect::<BTreeSet<_>>().len(), 3);
            assert!(three.iter().all(|m| all.contains(m)));
            let many: Vec<String> = q(&mut c, &["SRANDMEMBER", "s", "-25"]);
            assert_eq!(many.len(), 25);
            assert!(many.iter().all(|m| all.contains(m)));
        }
        let every: Vec<String> = q(&mut c, &["SRANDMEMBER", "s", "100"]);
        assert_eq!(every.into_iter().collect::<BTreeSet<_>>(), all);
        assert_eq!(
            q::<Vec<String>>(&mut c, &["SRANDMEMBER", "s", "0"]),
            Vec::<String>::new()
        );
        // SPOP takes distinct members out.
        let one: String = q(&mut c, &["SPOP", "s"]);
        let three: Vec<String> = q(&mut c, &["SPOP", "s", "3"]);
        let mut gone: BTreeSet<String> = three.into_iter().collect();
        gone.insert(one);
        assert_eq!(gone.len(), 4);
        assert_eq!(q::<i64>(&mut c, &["SCARD", "s"]), 6);
        let left = members(&mut c, "s");
        assert!(left.is_disjoint(&gone));
        assert_eq!(left.union(&gone).cloned().collect::<BTreeSet<_>>(), all);
        assert_eq!(encoding(&mut c, "s"), enc, "SPOP keeps the encoding");
        let four: Vec<String> = q(&mut c, &["SPOP", "s", "4"]);
        assert_eq!(four.len(), 4);
        assert_eq!(encoding(&mut c, "s"), enc);
        let rest: Vec<String> = q(&mut c, &["SPOP", "s", "10"]);
        assert_eq!(rest.len(), 2);
        assert_eq!(q::<i64>(&mut c, &["EXISTS", "s"]), 0);
    }
    q::<()>(&mut c, &["SADD", "one", "x"]);
    assert_eq!(q::<String>(&mut c, &["SPOP", "one"]), "x");
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "one"]), 0);
    assert_eq!(q::<Value>(&mut c, &["SPOP", "nosuch"]), Value::Nil);
    assert_eq!(
        q::<Vec<String>>(&mut c, &["SPOP", "nosuch", "3"]),
        Vec::<String>::new()
    );
    assert_eq!(q::<Value>(&mut c, &["SRANDMEMBER", "nosuch"]), Value::Nil);
    assert_eq!(
        q::<Vec<String>>(&mut c, &["SRANDMEMBER", "nosuch", "-3"]),
        Vec::<String>::new()
    );
    let positive = "ERR value is out of range, must be positive";
    assert_eq!(q_err(&mut c, &["SPOP", "nosuch", "-1"]), positive);
    assert_eq!(q_err(&mut c, &["SPOP", "nosuch", "x"]), positive);
    assert_eq!(q_err(&mut c, &["SPOP", "s", "1", "2"]), "ERR syntax error");
    assert_eq!(
        q_err(&mut c, &["SRANDMEMBER", "s", "1", "2"]),
        "ERR syntax error"
    );
    assert_eq!(
        q_err(&mut c, &["SRANDMEMBER", "nosuch", "-0"]),
        "ERR value is not an integer or out of range"
    );
    // A missing key answers an empty array whatever the count.
    assert_eq!(
        q::<Vec<String>>(&mut c, &["SRANDMEMBER", "nosuch", "-9223372036854775807"]),
        Vec::<String>::new()
    );
    if !common::target_is_redis() {
        // Redis runs out of memory building this reply; Tessera refuses it.
        q::<()>(&mut c, &["SADD", "x", "1"]);
        assert_eq!(
            q_err(&mut c, &["SRANDMEMBER", "x", "-9223372036854775807"]),
            "ERR value is out of range"
        );
    }
    assert_eq!(
        q_err(&mut c, &["SRANDMEMBER", "nosuch", "-9223372036854775808"]),
        "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
    );
}

#[test]
fn resp3_reply_types() {
    let s = TestServer::start();
    let mut r = resp3(&s);
    r.call(&["SADD", "s", "1"]);
    assert_eq!(r.call(&["SMEMBERS", "s"]), Frame::Set(vec![bulk("1")]));
    assert_eq!(r.call(&["SMEMBERS", "nosuch"]), Frame::Set(vec![]));
    assert_eq!(r.call(&["SINTER", "s", "s"]), Frame::Set(vec![bulk("1")]));
    assert_eq!(
        r.call(&["SUNION", "s", "nosuch"]),
        Frame::Set(vec![bulk("1")])
    );
    assert_eq!(r.call(&["SDIFF", "nosuch", "s"]), Frame::Set(vec![]));
    assert_eq!(r.call(&["SPOP", "nosuch", "2"]), Frame::Set(vec![]));
    assert_eq!(r.call(&["SPOP", "nosuch"]), Frame::Null);
    assert_eq!(r.call(&["SRANDMEMBER", "s", "-2"]), bulks(&["1", "1"]));
    assert_eq!(r.call(&["SRANDMEMBER", "nosuch"]), Frame::Null);
    assert_eq!(
        r.call(&["SMISMEMBER", "s", "1", "2"]),
        Frame::Array(vec![Frame::Integer(1), Frame::Integer(0)])
    );
    assert_eq!(r.call(&["SPOP", "s", "5"]), Frame::Set(vec![bulk("1")]));
    assert_eq!(
        r.call(&["SSCAN", "nosuch", "0"]),
        Frame::Array(vec![bulk("0"), Frame::Array(vec![])])
    );
}

#[test]
fn smove_moves_members() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SADD", "src", "1", "2", "a"]);
    assert_eq!(q::<i64>(&mut c, &["SMOVE", "src", "dst", "1"]), 1);
    assert_eq!(
        encoding(&mut c, "dst"),
        "intset",
        "created for its first member"
    );
    assert_eq!(q::<i64>(&mut c, &["SMOVE", "src", "dst", "1"]), 0);
    assert_eq!(q::<i64>(&mut c, &["SMOVE", "src", "dst", "a"]), 1);
    assert_eq!(encoding(&mut c, "dst"), "hashtable");
    assert_eq!(q::<i64>(&mut c, &["SMOVE", "src", "dst2", "a"]), 0);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "dst2"]), 0);
    // Same source and destination: 1 if a member, and nothing changes.
    assert_eq!(q::<i64>(&mut c, &["SMOVE", "src", "src", "2"]), 1);
    assert_eq!(q::<i64>(&mut c, &["SMOVE", "src", "src", "9"]), 0);
    assert_eq!(members(&mut c, "src"), set_of(&["2"]));
    // The last member leaves: the source disappears.
    assert_eq!(q::<i64>(&mut c, &["SMOVE", "src", "dst", "2"]), 1);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "src"]), 0);
    assert_eq!(members(&mut c, "dst"), set_of(&["1", "2", "a"]));
    // Across shards (different hash slots) and with a TTL on the destination.
    q::<()>(&mut c, &["SADD", "{x}a", "m"]);
    q::<()>(&mut c, &["SADD", "{y}b", "n"]);
    q::<()>(&mut c, &["EXPIRE", "{y}b", "1000"]);
    assert_eq!(q::<i64>(&mut c, &["SMOVE", "{x}a", "{y}b", "m"]), 1);
    assert_eq!(members(&mut c, "{y}b"), set_of(&["m", "n"]));
    assert!(q::<i64>(&mut c, &["TTL", "{y}b"]) > 0);
}

#[test]
fn algebra() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SADD", "a", "1", "2", "3", "x"]);
    q::<()>(&mut c, &["SADD", "b", "2", "3", "4"]);
    q::<()>(&mut c, &["SADD", "c", "3", "x", "5"]);
    assert_eq!(members(&mut c, "nosuch"), BTreeSet::new());
    assert_eq!(
        q::<BTreeSet<String>>(&mut c, &["SINTER", "a", "b"]),
        set_of(&["2", "3"])
    );
    assert_eq!(
        q::<BTreeSet<String>>(&mut c, &["SINTER", "a", "b", "c"]),
        set_of(&["3"])
    );
    assert_eq!(
        q::<BTreeSet<String>>(&mut c, &["SINTER", "a"]),
        set_of(&["1", "2", "3", "x"])
    );
    assert_eq!(
        q::<BTreeSet<String>>(&mut c, &["SINTER", "a", "nosuch"]),
        BTreeSet::new()
    );
    assert_eq!(
        q::<BTreeSet<String>>(&mut c, &["SUNION", "a", "b", "nosuch"]),
        set_of(&["1", "2", "3", "4", "x"])
    );
    assert_eq!(
        q::<BTreeSet<String>>(&mut c, &["SDIFF", "a", "b"]),
        set_of(&["1", "x"])
    );
    assert_eq!(
        q::<BTreeSet<String>>(&mut c, &["SDIFF", "a", "b", "c"]),
        set_of(&["1"])
    );
    assert_eq!(
        q::<BTreeSet<String>>(&mut c, &["SDIFF", "a", "a"]),
        BTreeSet::new()
    );
    assert_eq!(
        q::<BTreeSet<String>>(&mut c, &["SDIFF", "nosuch", "a"]),
        BTreeSet::new()
    );
    assert_eq!(q::<i64>(&mut c, &["SINTERCARD", "2", "a", "b"]), 2);
    assert_eq!(
        q::<i64>(&mut c, &["SINTERCARD", "2", "a", "b", "LIMIT", "1"]),
        1
    );
    assert_eq!(
        q::<i64>(&mut c, &["SINTERCARD", "2", "a", "b", "limit", "0"]),
        2
    );
    assert_eq!(
        q::<i64>(
            &mut c,
            &["SINTERCARD", "1", "a", "LIMIT", "9", "LIMIT", "3"]
        ),
        3
    );
    assert_eq!(q::<i64>(&mut c, &["SINTERCARD", "2", "a", "nosuch"]), 0);
    for (args, err) in [
        (
            &["SINTERCARD", "0", "a"][..],
            "ERR numkeys should be greater than 0",
        ),
        (
            &["SINTERCARD", "x", "a"],
            "ERR numkeys should be greater than 0",
        ),
        (
            &["SINTERCARD", "3", "a", "b"],
            "ERR Number of keys can't be greater than number of args",
        ),
        (&["SINTERCARD", "1", "a", "LIMIT"], "ERR syntax error"),
        (&["SINTERCARD", "1", "a", "b"], "ERR syntax error"),
        (
            &["SINTERCARD", "1", "a", "LIMIT", "-1"],
            "ERR LIMIT can't be negative",
        ),
        (
            &["SINTERCARD", "1", "a", "LIMIT", "x"],
            "ERR LIMIT can't be negative",
        ),
    ] {
        assert_eq!(q_err(&mut c, args), err, "{args:?}");
    }
}

#[test]
fn store_forms_replace_or_delete_the_destination() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SADD", "a", "1", "2", "x"]);
    q::<()>(&mut c, &["SADD", "b", "2", "3"]);
    q::<()>(&mut c, &["SET", "d", "string"]);
    q::<()>(&mut c, &["EXPIRE", "d", "1000"]);
    assert_eq!(q::<i64>(&mut c, &["SINTERSTORE", "d", "a", "b"]), 1);
    assert_eq!(members(&mut c, "d"), set_of(&["2"]));
    assert_eq!(
        q::<i64>(&mut c, &["TTL", "d"]),
        -1,
        "the destination is replaced"
    );
    assert_eq!(encoding(&mut c, "d"), "intset");
    assert_eq!(q::<i64>(&mut c, &["SUNIONSTORE", "d", "a", "b"]), 4);
    assert_eq!(encoding(&mut c, "d"), "hashtable");
    assert_eq!(q::<i64>(&mut c, &["SDIFFSTORE", "d", "a", "b"]), 2);
    assert_eq!(members(&mut c, "d"), set_of(&["1", "x"]));
    // The destination may be a source.
    assert_eq!(q::<i64>(&mut c, &["SUNIONSTORE", "a", "a", "b"]), 4);
    assert_eq!(members(&mut c, "a"), set_of(&["1", "2", "3", "x"]));
    // An empty result deletes the destination, whatever it held.
    for cmd in ["SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"] {
        q::<()>(&mut c, &["SET", "d", "string"]);
        assert_eq!(q::<i64>(&mut c, &[cmd, "d", "nosuch"]), 0);
        assert_eq!(q::<i64>(&mut c, &["EXISTS", "d"]), 0, "{cmd}");
    }
    assert_eq!(q::<i64>(&mut c, &["SDIFFSTORE", "d", "b", "b"]), 0);
    // Integer results become intsets, even from hashtable sources.
    q::<()>(&mut c, &["SADD", "h", "1", "2", "y"]);
    q::<()>(&mut c, &["SREM", "h", "y"]);
    assert_eq!(encoding(&mut c, "h"), "hashtable");
    for cmd in ["SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"] {
        assert_eq!(q::<i64>(&mut c, &[cmd, "d", "h"]), 2);
        assert_eq!(encoding(&mut c, "d"), "intset", "{cmd}");
    }
    // SDIFFSTORE picks Redis's algorithm by estimated work: subtracting small sets from a big
    // one adds the whole first set (a string in it makes a hashtable) before removing.
    let mut args = vec!["SADD".to_string(), "big".into(), "a".into()];
    args.extend((0..100).map(|i| i.to_string()));
    let args: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    q::<()>(&mut c, &args);
    q::<()>(&mut c, &["SADD", "small1", "a"]);
    q::<()>(&mut c, &["SADD", "small2", "zz"]);
    assert_eq!(q::<i64>(&mut c, &["SDIFFSTORE", "d", "big", "small1"]), 100);
    assert_eq!(encoding(&mut c, "d"), "intset");
    assert_eq!(
        q::<i64>(&mut c, &["SDIFFSTORE", "d", "big", "small1", "small2"]),
        100
    );
    assert_eq!(encoding(&mut c, "d"), "hashtable");
    // ... unless they are larger than set-max-intset-entries.
    q::<()>(&mut c, &["CONFIG", "SET", "set-max-intset-entries", "1"]);
    assert_eq!(q::<i64>(&mut c, &["SUNIONSTORE", "d", "h"]), 2);
    assert_eq!(encoding(&mut c, "d"), "hashtable");
    // A wrong-type source fails and leaves the destination alone.
    q::<()>(&mut c, &["SET", "str", "x"]);
    assert_eq!(q_err(&mut c, &["SUNIONSTORE", "d", "h", "str"]), WRONGTYPE);
    assert_eq!(q::<i64>(&mut c, &["SCARD", "d"]), 2);
    // Across hash slots.
    q::<()>(&mut c, &["SADD", "{p}1", "a", "b"]);
    q::<()>(&mut c, &["SADD", "{q}2", "b", "c"]);
    assert_eq!(
        q::<i64>(&mut c, &["SINTERSTORE", "{r}3", "{p}1", "{q}2"]),
        1
    );
    assert_eq!(members(&mut c, "{r}3"), set_of(&["b"]));
}

/// Runs a whole SSCAN, returning the members seen and the number of calls.
fn full_sscan(c: &mut redis::Connection, key: &str, extra: &[&str]) -> (Vec<String>, usize) {
    let mut cursor = "0".to_string();
    let mut seen = Vec::new();
    let mut calls = 0;
    loop {
        let mut args = vec!["SSCAN", key, &cursor];
        args.extend_from_slice(extra);
        let (next, items): (String, Vec<String>) = q(c, &args);
        calls += 1;
        seen.extend(items);
        if next == "0" {
            return (seen, calls);
        }
        cursor = next;
    }
}

#[test]
fn sscan_both_encodings() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SADD", "i", "3", "1", "2", "11"]);
    let (seen, calls) = full_sscan(&mut c, "i", &["COUNT", "1"]);
    assert_eq!(
        (seen, calls),
        (vec!["1".into(), "2".into(), "3".into(), "11".into()], 1)
    );
    let (seen, _) = full_sscan(&mut c, "i", &["MATCH", "1*"]);
    assert_eq!(seen, ["1", "11"]);
    assert_eq!(q_err(&mut c, &["SSCAN", "i", "x"]), "ERR invalid cursor");
    assert_eq!(
        q_err(&mut c, &["SSCAN", "i", "0", "COUNT", "0"]),
        "ERR syntax error"
    );
    assert_eq!(
        q_err(&mut c, &["SSCAN", "i", "0", "TYPE", "set"]),
        "ERR syntax error"
    );
    let mut pipe = redis::pipe();
    for i in 0..3000 {
        pipe.cmd("SADD").arg("big").arg(format!("m{i}")).ignore();
    }
    pipe.query::<()>(&mut c).unwrap();
    let (seen, calls) = full_sscan(&mut c, "big", &["COUNT", "100"]);
    assert!(calls > 1);
    assert_eq!(seen.iter().collect::<BTreeSet<_>>().len(), 3000);
    // Members present for the whole scan are returned even as the set changes.
    let mut cursor = "0".to_string();
    let mut seen = BTreeSet::new();
    let mut round = 0;
    loop {
        let (next, items): (String, Vec<String>) = q(&mut c, &["SSCAN", "big", &cursor]);
        seen.extend(items);
        round += 1;
        q::<()>(&mut c, &["SREM", "big", &format!("m{}", 3000 - round)]);
        q::<()>(
            &mut c,
            &[
                "SADD",
                "big",
                &format!("new{round}"),
                &format!("new{round}b"),
            ],
        );
        if next == "0" {
            break;
        }
        cursor = next;
    }
    for i in 0..3000 - round {
        assert!(seen.contains(&format!("m{i}")), "m{i} was never returned");
    }
}

/// A set grown to 60,000 members goes through index doublings that drain
/// over many writes. Members stay findable, SSCAN started before the
/// growth returns every member present throughout, and removals (by member
/// and by SPOP) keep the rest intact.
#[test]
fn large_set_grows_and_shrinks_while_scanned() {
    let (_s, mut c) = server();
    let name = |i: usize| format!("member:{i}");
    let mut model: BTreeSet<String> = BTreeSet::new();
    let add =
        |c: &mut redis::Connection, range: std::ops::Range<usize>, model: &mut BTreeSet<String>| {
            let mut cmd = redis::cmd("SADD");
            cmd.arg("big");
            for i in range {
                cmd.arg(name(i));
                model.insert(name(i));
            }
            let _: i64 = cmd.query(c).expect("SADD");
        };
    add(&mut c, 0..1000, &mut model);
    let kept_throughout: BTreeSet<String> = model.clone();
    let mut scanned = BTreeSet::new();
    let mut cursor = 0u64;
    let mut scanning = true;
    let mut next = 1000;
    while scanning || next < 60_000 {
        if scanning {
            let (cur, batch): (u64, Vec<String>) = redis::cmd("SSCAN")
                .arg("big")
                .arg(cursor)
                .arg("COUNT")
                .arg(50)
                .query(&mut c)
                .expect("SSCAN");
            scanned.extend(batch);
            cursor = cur;
            scanning = cursor != 0;
        }
        if next < 60_000 {
            add(&mut c, next..next + 1000, &mut model);
            next += 1000;
        }
    }
    assert!(kept_throughout.is_subset(&scanned));
    assert_eq!(q::<i64>(&mut c, &["SCARD", "big"]), 60_000);
    for i in (0..60_000).step_by(997) {
        assert_eq!(q::<i64>(&mut c, &["SISMEMBER", "big", &name(i)]), 1);
    }
    assert_eq!(q::<i64>(&mut c, &["SISMEMBER", "big", "member:60000"]), 0);
    for i in (0..60_000).step_by(3) {
        model.remove(&name(i));
    }
    for chunk in (0..60_000).step_by(3).collect::<Vec<_>>().chunks(1000) {
        let mut cmd = redis::cmd("SREM");
        cmd.arg("big");
        for &i in chunk {
            cmd.arg(name(i));
        }
        let _: i64 = cmd.query(&mut c).expect("SREM");
    }
    let popped: Vec<String> = q(&mut c, &["SPOP", "big", "5000"]);
    assert_eq!(popped.len(), 5000);
    for m in &popped {
        assert!(model.remove(m), "SPOP returned {m}, not a member");
    }
    assert_eq!(members(&mut c, "big"), model);
    assert_eq!(encoding(&mut c, "big"), "hashtable");
}
