//! List commands through a real client: pushes and pops (with counts and their RESP2/RESP3 null
//! shapes), positional access on small and large lists, ranges, LREM/LINSERT/LPOS, moves,
//! LMPOP, emptied keys disappearing, OBJECT ENCODING, and the blocking commands with several
//! clients on different connections (so different worker threads): timeouts, wake-up order,
//! pushes serving the first waiter, disconnects, CLIENT UNBLOCK, and pipelined commands queued
//! behind a blocked one. Expected values are what redis-server 7.0 replies (run with
//! `TESSERA_TEST_TARGET=redis` to check them against it).

mod common;

use common::{bulk, bulks, error, fmt_frame, q, q_err, wait_until, Frame, RawClient, TestServer};
use redis::Value;
use std::time::{Duration, Instant};

fn server() -> (TestServer, redis::Connection) {
    let s = TestServer::start();
    let c = s.client();
    (s, c)
}

fn lrange(c: &mut redis::Connection, key: &str) -> Vec<String> {
    q(c, &["LRANGE", key, "0", "-1"])
}

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

#[test]
fn push_and_pop_at_both_ends() {
    let (_s, mut c) = server();
    assert_eq!(q::<i64>(&mut c, &["RPUSH", "l", "a", "b"]), 2);
    assert_eq!(q::<i64>(&mut c, &["LPUSH", "l", "x", "y"]), 4);
    assert_eq!(lrange(&mut c, "l"), ["y", "x", "a", "b"]);
    assert_eq!(q::<String>(&mut c, &["LPOP", "l"]), "y");
    assert_eq!(q::<String>(&mut c, &["RPOP", "l"]), "b");
    assert_eq!(q::<i64>(&mut c, &["LLEN", "l"]), 2);
    assert_eq!(q::<Vec<String>>(&mut c, &["LPOP", "l", "5"]), ["x", "a"]);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "l"]), 0);
    assert_eq!(q::<i64>(&mut c, &["LLEN", "l"]), 0);
    assert_eq!(q::<Value>(&mut c, &["LPOP", "l"]), Value::Nil);
}

#[test]
fn pushx_only_touches_existing_lists() {
    let (_s, mut c) = server();
    assert_eq!(q::<i64>(&mut c, &["LPUSHX", "l", "a"]), 0);
    assert_eq!(q::<i64>(&mut c, &["RPUSHX", "l", "a", "b"]), 0);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "l"]), 0);
    q::<i64>(&mut c, &["RPUSH", "l", "m"]);
    assert_eq!(q::<i64>(&mut c, &["LPUSHX", "l", "a", "b"]), 3);
    assert_eq!(q::<i64>(&mut c, &["RPUSHX", "l", "y", "z"]), 5);
    assert_eq!(lrange(&mut c, "l"), ["b", "a", "m", "y", "z"]);
    q::<()>(&mut c, &["SET", "s", "v"]);
    assert_eq!(q_err(&mut c, &["LPUSHX", "s", "a"]), WRONGTYPE);
    assert_eq!(q_err(&mut c, &["RPUSHX", "s", "a"]), WRONGTYPE);
}

#[test]
fn pop_count_replies_and_errors() {
    let s = TestServer::start();
    let mut r = s.raw();
    assert_eq!(r.call(&["LPOP", "nokey", "0"]), Frame::NullArray);
    assert_eq!(r.call(&["LPOP", "nokey", "2"]), Frame::NullArray);
    assert_eq!(r.call(&["RPOP", "nokey"]), Frame::NullBulk);
    r.call(&["RPUSH", "l", "a", "b", "c"]);
    assert_eq!(r.call(&["LPOP", "l", "0"]), Frame::Array(vec![]));
    assert_eq!(r.call(&["RPOP", "l", "2"]), bulks(&["c", "b"]));
    for bad in ["-1", "abc", "1.5", "-9223372036854775808"] {
        assert_eq!(
            r.call(&["LPOP", "l", bad]),
            error("ERR value is out of range, must be positive")
        );
    }
    assert_eq!(
        r.call(&["LPOP", "l", "1", "2"]),
        error("ERR wrong number of arguments for 'lpop' command")
    );
    assert_eq!(
        r.call(&["RPOP", "l", "1", "2"]),
        error("ERR wrong number of arguments for 'rpop' command")
    );
    r.call(&["SET", "s", "v"]);
    // The type check comes before the count-0 shortcut.
    assert_eq!(r.call(&["LPOP", "s", "0"]), error(WRONGTYPE));
    assert_eq!(r.call(&["LPOP", "l", "9223372036854775807"]), bulks(&["a"]));
    assert_eq!(r.call(&["EXISTS", "l"]), Frame::Integer(0));
}

#[test]
fn resp3_null_shapes() {
    let s = TestServer::start();
    let mut r = s.raw();
    assert!(matches!(r.call(&["HELLO", "3"]), Frame::Map(_)));
    for cmd in [
        vec!["LPOP", "nokey"],
        vec!["LPOP", "nokey", "0"],
        vec!["RPOP", "nokey", "3"],
        vec!["LINDEX", "nokey", "0"],
        vec!["LPOS", "nokey", "x"],
        vec!["LMPOP", "1", "nokey", "LEFT"],
        vec!["LMOVE", "nokey", "d", "LEFT", "LEFT"],
        vec!["RPOPLPUSH", "nokey", "d"],
        vec!["BLPOP", "nokey", "0.01"],
        vec!["BRPOP", "nokey", "0.01"],
        vec!["BLMPOP", "0.01", "1", "nokey", "LEFT"],
        vec!["BLMOVE", "nokey", "d", "LEFT", "RIGHT", "0.01"],
        vec!["BRPOPLPUSH", "nokey", "d", "0.01"],
    ] {
        assert_eq!(r.call(&cmd), Frame::Null, "{cmd:?}");
    }
    r.call(&["RPUSH", "l", "a"]);
    assert_eq!(r.call(&["LPOP", "l", "0"]), Frame::Array(vec![]));
    assert_eq!(
        r.call(&["LPOS", "nokey", "x", "COUNT", "0"]),
        Frame::Array(vec![])
    );
    assert_eq!(
        r.call(&["BLPOP", "l", "0"]),
        Frame::Array(vec![bulk("l"), bulk("a")])
    );
}

#[test]
fn resp2_null_shapes_of_the_multi_pops() {
    let s = TestServer::start();
    let mut r = s.raw();
    assert_eq!(r.call(&["LMPOP", "2", "a", "b", "RIGHT"]), Frame::NullArray);
    assert_eq!(r.call(&["BLPOP", "a", "b", "0.01"]), Frame::NullArray);
    assert_eq!(
        r.call(&["BLMPOP", "0.01", "1", "a", "LEFT"]),
        Frame::NullArray
    );
    // A timed-out BLMOVE answers a null array, an immediate LMOVE miss a null bulk.
    assert_eq!(
        r.call(&["BLMOVE", "a", "b", "LEFT", "LEFT", "0.01"]),
        Frame::NullArray
    );
    assert_eq!(r.call(&["BRPOPLPUSH", "a", "b", "0.01"]), Frame::NullArray);
    assert_eq!(
        r.call(&["LMOVE", "a", "b", "LEFT", "LEFT"]),
        Frame::NullBulk
    );
}

#[test]
fn lindex_and_lset() {
    let (_s, mut c) = server();
    q::<i64>(&mut c, &["RPUSH", "l", "a", "b", "c"]);
    assert_eq!(q::<String>(&mut c, &["LINDEX", "l", "0"]), "a");
    assert_eq!(q::<String>(&mut c, &["LINDEX", "l", "-1"]), "c");
    assert_eq!(q::<Value>(&mut c, &["LINDEX", "l", "3"]), Value::Nil);
    assert_eq!(q::<Value>(&mut c, &["LINDEX", "l", "-4"]), Value::Nil);
    assert_eq!(
        q::<Value>(&mut c, &["LINDEX", "l", "-9223372036854775808"]),
        Value::Nil
    );
    // The key is looked up before the index is parsed.
    assert_eq!(q::<Value>(&mut c, &["LINDEX", "nokey", "abc"]), Value::Nil);
    assert_eq!(
        q_err(&mut c, &["LINDEX", "l", "abc"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(q::<String>(&mut c, &["LSET", "l", "-2", "B"]), "OK");
    assert_eq!(q::<String>(&mut c, &["LSET", "l", "0", ""]), "OK");
    assert_eq!(lrange(&mut c, "l"), ["", "B", "c"]);
    assert_eq!(
        q_err(&mut c, &["LSET", "l", "3", "x"]),
        "ERR index out of range"
    );
    assert_eq!(
        q_err(&mut c, &["LSET", "nokey", "abc", "x"]),
        "ERR no such key"
    );
    assert_eq!(
        q_err(&mut c, &["LSET", "l", "abc", "x"]),
        "ERR value is not an integer or out of range"
    );
    q::<()>(&mut c, &["SET", "s", "v"]);
    assert_eq!(q_err(&mut c, &["LINDEX", "s", "abc"]), WRONGTYPE);
    assert_eq!(q_err(&mut c, &["LSET", "s", "abc", "x"]), WRONGTYPE);
}

#[test]
fn large_list_positional_access() {
    let (_s, mut c) = server();
    // 10,000 elements of mixed sizes, some larger than a block.
    let elem = |i: usize| -> String {
        match i % 97 {
            0 => format!("{i}:{}", "L".repeat(5000)),
            1..=3 => format!("{i}:{}", "m".repeat(300)),
            _ => format!("{i}:{}", "x".repeat(i % 70)),
        }
    };
    let all: Vec<String> = (0..10_000).map(elem).collect();
    for chunk in all.chunks(500) {
        let mut cmd = redis::cmd("RPUSH");
        cmd.arg("big").arg(chunk);
        let _: i64 = cmd.query(&mut c).unwrap();
    }
    assert_eq!(q::<i64>(&mut c, &["LLEN", "big"]), 10_000);
    for i in (0..10_000).step_by(71).chain([9_999]) {
        assert_eq!(
            q::<String>(&mut c, &["LINDEX", "big", &i.to_string()]),
            all[i]
        );
        let neg = i as i64 - 10_000;
        assert_eq!(
            q::<String>(&mut c, &["LINDEX", "big", &neg.to_string()]),
            all[i]
        );
    }
    // LSET with longer and shorter values in the middle, then read back around them.
    let mut model = all.clone();
    for (n, i) in (0..10_000).step_by(333).enumerate() {
        let v = if n % 3 == 0 {
            "Z".repeat(6000)
        } else {
            format!("s{n}")
        };
        assert_eq!(
            q::<String>(&mut c, &["LSET", "big", &i.to_string(), &v]),
            "OK"
        );
        model[i] = v;
    }
    let got: Vec<String> = lrange(&mut c, "big");
    assert!(got == model, "LRANGE after LSETs differs");
    for i in (0..10_000).step_by(53) {
        assert_eq!(
            q::<String>(&mut c, &["LINDEX", "big", &i.to_string()]),
            model[i]
        );
    }
    assert_eq!(
        q::<Vec<String>>(&mut c, &["LRANGE", "big", "4998", "5001"]),
        model[4998..5002].to_vec()
    );
    assert_eq!(
        q::<Vec<String>>(&mut c, &["LRANGE", "big", "-3", "-1"]),
        model[9997..].to_vec()
    );
}

#[test]
fn lpush_built_list_keeps_order() {
    let (_s, mut c) = server();
    for chunk in (0..3000).collect::<Vec<i32>>().chunks(300) {
        let mut cmd = redis::cmd("LPUSH");
        cmd.arg("l").arg(chunk);
        let _: i64 = cmd.query(&mut c).unwrap();
    }
    let got: Vec<i32> = q(&mut c, &["LRANGE", "l", "0", "-1"]);
    let want: Vec<i32> = (0..3000).rev().collect();
    assert_eq!(got, want);
    assert_eq!(q::<i32>(&mut c, &["LINDEX", "l", "1500"]), 1499);
    let popped: Vec<i32> = q(&mut c, &["RPOP", "l", "10"]);
    assert_eq!(popped, (0..10).collect::<Vec<i32>>());
}

#[test]
fn lrange_clamping() {
    let (_s, mut c) = server();
    q::<i64>(&mut c, &["RPUSH", "l", "a", "b", "c", "d"]);
    let r = |c: &mut redis::Connection, a: &str, b: &str| -> Vec<String> {
        q(c, &["LRANGE", "l", a, b])
    };
    assert_eq!(r(&mut c, "1", "2"), ["b", "c"]);
    assert_eq!(r(&mut c, "-100", "100"), ["a", "b", "c", "d"]);
    assert_eq!(r(&mut c, "-2", "-1"), ["c", "d"]);
    assert!(r(&mut c, "3", "1").is_empty());
    assert!(r(&mut c, "4", "10").is_empty());
    assert!(r(&mut c, "0", "-5").is_empty());
    assert_eq!(
        r(&mut c, "-9223372036854775808", "9223372036854775807"),
        ["a", "b", "c", "d"]
    );
    assert!(q::<Vec<String>>(&mut c, &["LRANGE", "nokey", "0", "-1"]).is_empty());
    assert_eq!(
        q_err(&mut c, &["LRANGE", "nokey", "a", "1"]),
        "ERR value is not an integer or out of range"
    );
}

#[test]
fn ltrim_keeps_a_range_and_deletes_when_empty() {
    let (_s, mut c) = server();
    q::<i64>(&mut c, &["RPUSH", "l", "a", "b", "c", "d", "e"]);
    assert_eq!(q::<String>(&mut c, &["LTRIM", "l", "1", "-2"]), "OK");
    assert_eq!(lrange(&mut c, "l"), ["b", "c", "d"]);
    assert_eq!(q::<String>(&mut c, &["LTRIM", "l", "-100", "100"]), "OK");
    assert_eq!(lrange(&mut c, "l"), ["b", "c", "d"]);
    assert_eq!(q::<String>(&mut c, &["LTRIM", "l", "2", "1"]), "OK");
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "l"]), 0);
    assert_eq!(q::<String>(&mut c, &["LTRIM", "nokey", "0", "1"]), "OK");
    assert_eq!(
        q_err(&mut c, &["LTRIM", "nokey", "x", "1"]),
        "ERR value is not an integer or out of range"
    );
    // Trimming a long list from both ends.
    let items: Vec<String> = (0..5000).map(|i| format!("item-{i}")).collect();
    let mut cmd = redis::cmd("RPUSH");
    cmd.arg("big").arg(&items);
    let _: i64 = cmd.query(&mut c).unwrap();
    assert_eq!(
        q::<String>(&mut c, &["LTRIM", "big", "1234", "-1235"]),
        "OK"
    );
    assert_eq!(lrange(&mut c, "big"), items[1234..3766].to_vec());
}

#[test]
fn lrem_from_head_tail_and_all() {
    let (_s, mut c) = server();
    let fill = |c: &mut redis::Connection| {
        q::<i64>(c, &["DEL", "l"]);
        q::<i64>(c, &["RPUSH", "l", "a", "x", "b", "x", "c", "x"]);
    };
    fill(&mut c);
    assert_eq!(q::<i64>(&mut c, &["LREM", "l", "2", "x"]), 2);
    assert_eq!(lrange(&mut c, "l"), ["a", "b", "c", "x"]);
    fill(&mut c);
    assert_eq!(q::<i64>(&mut c, &["LREM", "l", "-2", "x"]), 2);
    assert_eq!(lrange(&mut c, "l"), ["a", "x", "b", "c"]);
    fill(&mut c);
    assert_eq!(q::<i64>(&mut c, &["LREM", "l", "0", "x"]), 3);
    assert_eq!(lrange(&mut c, "l"), ["a", "b", "c"]);
    assert_eq!(q::<i64>(&mut c, &["LREM", "l", "0", "nope"]), 0);
    assert_eq!(
        q::<i64>(&mut c, &["LREM", "l", "-9223372036854775808", "a"]),
        1
    );
    q::<i64>(&mut c, &["LREM", "l", "0", "b"]);
    assert_eq!(q::<i64>(&mut c, &["LREM", "l", "1", "c"]), 1);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "l"]), 0);
    assert_eq!(q::<i64>(&mut c, &["LREM", "nokey", "0", "a"]), 0);
    // Many matches spread over a long list.
    let items: Vec<String> = (0..4000).map(|i| (i % 7).to_string()).collect();
    let mut cmd = redis::cmd("RPUSH");
    cmd.arg("big").arg(&items);
    let _: i64 = cmd.query(&mut c).unwrap();
    assert_eq!(q::<i64>(&mut c, &["LREM", "big", "0", "3"]), 571);
    assert_eq!(q::<i64>(&mut c, &["LREM", "big", "-100", "5"]), 100);
    let want: Vec<String> = {
        let mut v: Vec<String> = items.into_iter().filter(|x| x != "3").collect();
        let mut left = 100;
        for i in (0..v.len()).rev() {
            if left > 0 && v[i] == "5" {
                v.remove(i);
                left -= 1;
            }
        }
        v
    };
    assert_eq!(lrange(&mut c, "big"), want);
}

#[test]
fn linsert_before_and_after() {
    let (_s, mut c) = server();
    q::<i64>(&mut c, &["RPUSH", "l", "a", "b", "a"]);
    assert_eq!(q::<i64>(&mut c, &["LINSERT", "l", "BEFORE", "a", "x"]), 4);
    assert_eq!(q::<i64>(&mut c, &["LINSERT", "l", "after", "b", "y"]), 5);
    assert_eq!(q::<i64>(&mut c, &["LINSERT", "l", "AFTER", "zz", "y"]), -1);
    assert_eq!(lrange(&mut c, "l"), ["x", "a", "b", "y", "a"]);
    assert_eq!(
        q::<i64>(&mut c, &["LINSERT", "nokey", "BEFORE", "a", "x"]),
        0
    );
    assert_eq!(
        q_err(&mut c, &["LINSERT", "nokey", "MIDDLE", "a", "x"]),
        "ERR syntax error"
    );
    // Many insertions in the middle of a long list.
    let items: Vec<String> = (0..2000).map(|i| i.to_string()).collect();
    let mut cmd = redis::cmd("RPUSH");
    cmd.arg("big").arg(&items);
    let _: i64 = cmd.query(&mut c).unwrap();
    let mut model = items.clone();
    for i in (0..2000).step_by(7) {
        let pivot = i.to_string();
        let v = format!("ins-{i}-{}", "p".repeat(i % 300));
        q::<i64>(&mut c, &["LINSERT", "big", "AFTER", &pivot, &v]);
        let at = model.iter().position(|e| *e == pivot).unwrap();
        model.insert(at + 1, v);
    }
    assert_eq!(lrange(&mut c, "big"), model);
    for i in (0..model.len()).step_by(37) {
        assert_eq!(
            q::<String>(&mut c, &["LINDEX", "big", &i.to_string()]),
            model[i]
        );
    }
}

#[test]
fn lpos_options_and_errors() {
    let (_s, mut c) = server();
    q::<i64>(&mut c, &["RPUSH", "l", "a", "x", "a", "b", "a"]);
    assert_eq!(q::<i64>(&mut c, &["LPOS", "l", "a"]), 0);
    assert_eq!(q::<i64>(&mut c, &["LPOS", "l", "a", "RANK", "2"]), 2);
    assert_eq!(q::<i64>(&mut c, &["LPOS", "l", "a", "RANK", "-1"]), 4);
    assert_eq!(
        q::<Value>(&mut c, &["LPOS", "l", "a", "RANK", "4"]),
        Value::Nil
    );
    assert_eq!(
        q::<Vec<i64>>(&mut c, &["LPOS", "l", "a", "COUNT", "0"]),
        [0, 2, 4]
    );
    assert_eq!(
        q::<Vec<i64>>(&mut c, &["LPOS", "l", "a", "COUNT", "2"]),
        [0, 2]
    );
    assert_eq!(
        q::<Vec<i64>>(&mut c, &["LPOS", "l", "a", "RANK", "-2", "COUNT", "5"]),
        [2, 0]
    );
    assert_eq!(
        q::<Vec<i64>>(&mut c, &["LPOS", "l", "a", "COUNT", "0", "MAXLEN", "3"]),
        [0, 2]
    );
    assert_eq!(
        q::<Value>(&mut c, &["LPOS", "l", "b", "MAXLEN", "3"]),
        Value::Nil
    );
    // The most negative rank behaves as in Redis: from the tail, never stopping early.
    assert_eq!(
        q::<Vec<i64>>(
            &mut c,
            &[
                "LPOS",
                "l",
                "a",
                "RANK",
                "-9223372036854775808",
                "COUNT",
                "1"
            ]
        ),
        [4, 2, 0]
    );
    assert!(q::<Vec<i64>>(&mut c, &["LPOS", "nokey", "a", "COUNT", "1"]).is_empty());
    assert_eq!(q::<Value>(&mut c, &["LPOS", "nokey", "a"]), Value::Nil);
    assert_eq!(
        q_err(&mut c, &["LPOS", "l", "a", "RANK", "0"]),
        "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"
    );
    assert_eq!(
        q_err(&mut c, &["LPOS", "l", "a", "COUNT", "-1"]),
        "ERR COUNT can't be negative"
    );
    assert_eq!(
        q_err(&mut c, &["LPOS", "l", "a", "MAXLEN", "x"]),
        "ERR MAXLEN can't be negative"
    );
    assert_eq!(
        q_err(&mut c, &["LPOS", "l", "a", "RANK", "x"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        q_err(&mut c, &["LPOS", "l", "a", "RANK"]),
        "ERR syntax error"
    );
    assert_eq!(
        q_err(&mut c, &["LPOS", "l", "a", "FOO", "1"]),
        "ERR syntax error"
    );
}

#[test]
fn lmove_and_rpoplpush() {
    let (_s, mut c) = server();
    q::<i64>(&mut c, &["RPUSH", "src", "a", "b", "c"]);
    assert_eq!(
        q::<String>(&mut c, &["LMOVE", "src", "dst", "LEFT", "RIGHT"]),
        "a"
    );
    assert_eq!(
        q::<String>(&mut c, &["LMOVE", "src", "dst", "right", "left"]),
        "c"
    );
    assert_eq!(lrange(&mut c, "dst"), ["c", "a"]);
    assert_eq!(q::<String>(&mut c, &["RPOPLPUSH", "src", "dst"]), "b");
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "src"]), 0);
    assert_eq!(lrange(&mut c, "dst"), ["b", "c", "a"]);
    // Rotation within one list.
    assert_eq!(
        q::<String>(&mut c, &["LMOVE", "dst", "dst", "LEFT", "RIGHT"]),
        "b"
    );
    assert_eq!(lrange(&mut c, "dst"), ["c", "a", "b"]);
    assert_eq!(q::<String>(&mut c, &["RPOPLPUSH", "dst", "dst"]), "b");
    assert_eq!(lrange(&mut c, "dst"), ["b", "c", "a"]);
    // Missing source: nil, even when the destination has the wrong type.
    q::<()>(&mut c, &["SET", "s", "v"]);
    assert_eq!(
        q::<Value>(&mut c, &["LMOVE", "nokey", "s", "LEFT", "LEFT"]),
        Value::Nil
    );
    // A wrong-typed destination leaves the source alone.
    assert_eq!(
        q_err(&mut c, &["LMOVE", "dst", "s", "LEFT", "LEFT"]),
        WRONGTYPE
    );
    assert_eq!(q_err(&mut c, &["RPOPLPUSH", "s", "dst"]), WRONGTYPE);
    assert_eq!(lrange(&mut c, "dst"), ["b", "c", "a"]);
    assert_eq!(
        q_err(&mut c, &["LMOVE", "dst", "x", "UP", "LEFT"]),
        "ERR syntax error"
    );
}

#[test]
fn lmpop_pops_from_the_first_non_empty_list() {
    let (_s, mut c) = server();
    q::<i64>(&mut c, &["RPUSH", "b", "1", "2", "3"]);
    q::<i64>(&mut c, &["RPUSH", "c", "x"]);
    let v: (String, Vec<String>) = q(&mut c, &["LMPOP", "3", "a", "b", "c", "LEFT"]);
    assert_eq!(v, ("b".to_string(), vec!["1".to_string()]));
    let v: (String, Vec<String>) = q(&mut c, &["LMPOP", "2", "b", "c", "RIGHT", "COUNT", "10"]);
    assert_eq!(v, ("b".to_string(), vec!["3".to_string(), "2".to_string()]));
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "b"]), 0);
    assert_eq!(q::<Value>(&mut c, &["LMPOP", "1", "b", "LEFT"]), Value::Nil);
    q::<()>(&mut c, &["SET", "s", "v"]);
    assert_eq!(q_err(&mut c, &["LMPOP", "2", "s", "c", "LEFT"]), WRONGTYPE);
    for (args, err) in [
        (
            vec!["LMPOP", "0", "a", "LEFT"],
            "ERR numkeys should be greater than 0",
        ),
        (
            vec!["LMPOP", "x", "a", "LEFT"],
            "ERR numkeys should be greater than 0",
        ),
        (vec!["LMPOP", "2", "a", "LEFT"], "ERR syntax error"),
        (
            vec!["LMPOP", "9223372036854775807", "a", "LEFT"],
            "ERR syntax error",
        ),
        (vec!["LMPOP", "1", "a", "UP"], "ERR syntax error"),
        (
            vec!["LMPOP", "1", "a", "LEFT", "COUNT", "0"],
            "ERR count should be greater than 0",
        ),
        (vec!["LMPOP", "1", "a", "LEFT", "COUNT"], "ERR syntax error"),
        (
            vec!["LMPOP", "1", "a", "LEFT", "COUNT", "1", "COUNT", "2"],
            "ERR syntax error",
        ),
        (
            vec!["BLMPOP", "0", "0", "a", "LEFT"],
            "ERR numkeys should be greater than 0",
        ),
        (
            vec!["BLMPOP", "x", "1", "a", "LEFT"],
            "ERR timeout is not a float or out of range",
        ),
        (vec!["BLMPOP", "-1", "1", "a", "UP"], "ERR syntax error"),
        (
            vec!["BLMPOP", "-1", "1", "a", "LEFT"],
            "ERR timeout is negative",
        ),
        (
            vec!["BLPOP", "a", "x"],
            "ERR timeout is not a float or out of range",
        ),
        (vec!["BRPOP", "a", "-0.5"], "ERR timeout is negative"),
        (
            vec!["BLMOVE", "a", "b", "UP", "LEFT", "x"],
            "ERR syntax error",
        ),
        (
            vec!["BLMOVE", "a", "b", "LEFT", "LEFT", "x"],
            "ERR timeout is not a float or out of range",
        ),
        (
            vec!["BRPOPLPUSH", "a", "b", "-1"],
            "ERR timeout is negative",
        ),
        // Redis reads the seconds as a long double: past a double's range
        // is still a number (beyond any i64 of milliseconds: negative),
        // past a long double's is not.
        (vec!["BRPOP", "a", "1e400"], "ERR timeout is negative"),
        (vec!["BLPOP", "a", "-1e400"], "ERR timeout is negative"),
        (vec!["BZPOPMIN", "a", "1.1e4932"], "ERR timeout is negative"),
        (
            vec!["BLPOP", "a", "1.2e4932"],
            "ERR timeout is not a float or out of range",
        ),
        (
            vec!["BLPOP", "a", "1e-5000"],
            "ERR timeout is not a float or out of range",
        ),
    ] {
        assert_eq!(q_err(&mut c, &args), err, "{args:?}");
    }
    // A timeout too small for a double is a tiny positive long double:
    // rounded up to one millisecond, not an error.
    let got: redis::Value = q(&mut c, &["BLPOP", "a", "1e-400"]);
    assert!(
        matches!(got, redis::Value::Nil | redis::Value::Array(_)),
        "{got:?}"
    );
}

#[test]
fn every_list_command_checks_the_type() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "s", "v"]);
    for args in [
        vec!["LPUSH", "s", "a"],
        vec!["RPUSH", "s", "a"],
        vec!["LPOP", "s"],
        vec!["RPOP", "s", "2"],
        vec!["LLEN", "s"],
        vec!["LRANGE", "s", "0", "-1"],
        vec!["LTRIM", "s", "0", "1"],
        vec!["LREM", "s", "0", "a"],
        vec!["LINSERT", "s", "BEFORE", "a", "b"],
        vec!["LPOS", "s", "a"],
        vec!["LMOVE", "s", "d", "LEFT", "LEFT"],
        vec!["BLPOP", "s", "0"],
        vec!["BRPOP", "nokey", "s", "0"],
        vec!["BLMPOP", "0", "1", "s", "LEFT"],
        vec!["BLMOVE", "s", "d", "LEFT", "LEFT", "0"],
        vec!["BRPOPLPUSH", "s", "d", "0"],
    ] {
        assert_eq!(q_err(&mut c, &args), WRONGTYPE, "{args:?}");
    }
    assert_eq!(q::<String>(&mut c, &["GET", "s"]), "v");
}

#[test]
fn encoding_is_quicklist_at_every_size() {
    let (_s, mut c) = server();
    q::<i64>(&mut c, &["RPUSH", "small", "a"]);
    assert_eq!(
        q::<String>(&mut c, &["OBJECT", "ENCODING", "small"]),
        "quicklist"
    );
    assert_eq!(q::<String>(&mut c, &["TYPE", "small"]), "list");
    let items: Vec<String> = (0..1000).map(|i| format!("{i:0>70}")).collect();
    let mut cmd = redis::cmd("RPUSH");
    cmd.arg("large").arg(&items);
    let _: i64 = cmd.query(&mut c).unwrap();
    assert_eq!(
        q::<String>(&mut c, &["OBJECT", "ENCODING", "large"]),
        "quicklist"
    );
    q::<()>(&mut c, &["CONFIG", "SET", "list-max-listpack-size", "4"]);
    q::<i64>(&mut c, &["RPUSH", "other", "a", "b", "c", "d", "e", "f"]);
    assert_eq!(
        q::<String>(&mut c, &["OBJECT", "ENCODING", "other"]),
        "quicklist"
    );
}

#[test]
fn lists_survive_copy_rename_and_expire() {
    let (_s, mut c) = server();
    q::<i64>(&mut c, &["RPUSH", "l", "a", "b", "c"]);
    assert_eq!(q::<i64>(&mut c, &["COPY", "l", "l2"]), 1);
    q::<String>(&mut c, &["LPOP", "l"]);
    assert_eq!(lrange(&mut c, "l2"), ["a", "b", "c"]);
    q::<()>(&mut c, &["RENAME", "l2", "l3"]);
    assert_eq!(lrange(&mut c, "l3"), ["a", "b", "c"]);
    q::<i64>(&mut c, &["PEXPIRE", "l3", "50"]);
    assert!(wait_until(Duration::from_secs(5), || {
        q::<i64>(&mut c, &["EXISTS", "l3"]) == 0
    }));
    assert_eq!(q::<i64>(&mut c, &["LLEN", "l3"]), 0);
}

// ---- blocking ----------------------------------------------------------------------------

fn client_id(r: &mut RawClient) -> i64 {
    match r.call(&["CLIENT", "ID"]) {
        Frame::Integer(id) => id,
        other => panic!("CLIENT ID answered {}", fmt_frame(&other)),
    }
}

/// Waits until client `id` has run `cmd` (it is then blocked: the reply has not come).
fn wait_for_cmd(admin: &mut RawClient, id: i64, cmd: &str) {
    let ok = wait_until(Duration::from_secs(10), || {
        match admin.call(&["CLIENT", "LIST", "ID", &id.to_string()]) {
            // Blocked (flag b), not merely started: only then can it be unblocked or served.
            Frame::Bulk(b) => {
                let line = String::from_utf8_lossy(&b);
                line.contains(&format!("cmd={cmd} "))
                    && line
                        .split_whitespace()
                        .any(|f| f.strip_prefix("flags=").is_some_and(|v| v.contains('b')))
            }
            _ => false,
        }
    });
    assert!(ok, "client {id} never ran {cmd}");
}

/// A server with several worker threads whatever the machine (`io-threads` is Tessera's alias
/// of `--threads`, and a valid redis.conf directive), so that the clients of a blocking test,
/// connected one after another, land on different threads.
fn threaded_server() -> TestServer {
    TestServer::start_with(&["--io-threads", "4"])
}

/// A connection with its id, sending a blocking command and waiting until the server runs it.
fn block(s: &TestServer, admin: &mut RawClient, args: &[&str]) -> RawClient {
    let mut r = s.raw();
    let id = client_id(&mut r);
    r.send(args);
    wait_for_cmd(admin, id, &args[0].to_ascii_lowercase());
    r
}

#[test]
fn blpop_serves_at_once_in_key_order() {
    let s = threaded_server();
    let mut r = s.raw();
    r.call(&["RPUSH", "b", "1"]);
    r.call(&["RPUSH", "c", "2"]);
    assert_eq!(r.call(&["BLPOP", "a", "c", "b", "0"]), bulks(&["c", "2"]));
    assert_eq!(r.call(&["BRPOP", "a", "c", "b", "0"]), bulks(&["b", "1"]));
    assert_eq!(r.call(&["EXISTS", "b", "c"]), Frame::Integer(0));
}

#[test]
fn blocking_timeouts_are_fractional() {
    let s = threaded_server();
    let mut r = s.raw();
    let t = Instant::now();
    assert_eq!(r.call(&["BLPOP", "k", "0.3"]), Frame::NullArray);
    let e = t.elapsed();
    assert!(e >= Duration::from_millis(250), "returned after {e:?}");
    assert!(e < Duration::from_secs(10), "returned after {e:?}");
    let t = Instant::now();
    assert_eq!(
        r.call(&["BLMOVE", "k", "d", "LEFT", "LEFT", "0.2"]),
        Frame::NullArray
    );
    assert!(t.elapsed() >= Duration::from_millis(150));
    assert_eq!(
        r.call(&["BLMPOP", "0.1", "2", "k", "k2", "RIGHT"]),
        Frame::NullArray
    );
    // The connection still works after a timeout.
    assert_eq!(r.call(&["PING"]), Frame::Simple(b"PONG".to_vec()));
}

#[test]
fn timeout_zero_waits_until_a_push() {
    let s = threaded_server();
    let mut admin = s.raw();
    let mut w = block(&s, &mut admin, &["BRPOP", "k", "0"]);
    std::thread::sleep(Duration::from_millis(400));
    w.set_timeout(Duration::from_millis(100));
    assert!(
        w.try_read_frame().is_err(),
        "BRPOP with timeout 0 answered early"
    );
    w.set_timeout(common::IO_TIMEOUT);
    admin.call(&["RPUSH", "k", "a", "b"]);
    assert_eq!(w.read_frame(), bulks(&["k", "b"]));
    assert_eq!(admin.call(&["LRANGE", "k", "0", "-1"]), bulks(&["a"]));
}

#[test]
fn waiters_are_served_first_come_first_served() {
    let s = threaded_server();
    let mut admin = s.raw();
    let mut waiters: Vec<RawClient> = (0..4)
        .map(|_| block(&s, &mut admin, &["BLPOP", "q", "30"]))
        .collect();
    // One element at a time: the longest-waiting client gets it.
    for (i, w) in waiters.iter_mut().enumerate().take(2) {
        let v = format!("v{i}");
        assert_eq!(admin.call(&["RPUSH", "q", &v]), Frame::Integer(1));
        assert_eq!(w.read_frame(), bulks(&["q", &v]));
    }
    // A push of two elements serves the next two, in order.
    admin.call(&["RPUSH", "q", "v2", "v3"]);
    assert_eq!(waiters[2].read_frame(), bulks(&["q", "v2"]));
    assert_eq!(waiters[3].read_frame(), bulks(&["q", "v3"]));
    assert_eq!(admin.call(&["EXISTS", "q"]), Frame::Integer(0));
}

#[test]
fn a_client_blocked_on_several_keys_is_served_by_any() {
    let s = threaded_server();
    let mut admin = s.raw();
    let mut w = block(&s, &mut admin, &["BLPOP", "k1", "k2", "k3", "30"]);
    admin.call(&["LPUSH", "k3", "x"]);
    assert_eq!(w.read_frame(), bulks(&["k3", "x"]));
    let mut w = block(
        &s,
        &mut admin,
        &["BLMPOP", "30", "2", "m1", "m2", "LEFT", "COUNT", "2"],
    );
    admin.call(&["RPUSH", "m2", "a", "b", "c"]);
    assert_eq!(
        w.read_frame(),
        Frame::Array(vec![bulk("m2"), bulks(&["a", "b"])])
    );
    assert_eq!(admin.call(&["LRANGE", "m2", "0", "-1"]), bulks(&["c"]));
}

#[test]
fn blmove_chain_signals_the_destination() {
    let s = threaded_server();
    let mut admin = s.raw();
    let mut mover = block(
        &s,
        &mut admin,
        &["BLMOVE", "src", "mid", "RIGHT", "LEFT", "30"],
    );
    let mut popper = block(&s, &mut admin, &["BRPOP", "mid", "30"]);
    let mut legacy = block(&s, &mut admin, &["BRPOPLPUSH", "src2", "src", "30"]);
    admin.call(&["RPUSH", "src2", "hello"]);
    // src2 → src (BRPOPLPUSH) → mid (BLMOVE) → popped by BRPOP.
    assert_eq!(legacy.read_frame(), bulk("hello"));
    assert_eq!(mover.read_frame(), bulk("hello"));
    assert_eq!(popper.read_frame(), bulks(&["mid", "hello"]));
    assert_eq!(
        admin.call(&["EXISTS", "src", "src2", "mid"]),
        Frame::Integer(0)
    );
}

#[test]
fn disconnect_while_blocked_leaves_the_element_for_others() {
    let s = threaded_server();
    let mut admin = s.raw();
    let gone = block(&s, &mut admin, &["BLPOP", "k", "0"]);
    let mut stays = block(&s, &mut admin, &["BLPOP", "k", "0"]);
    drop(gone);
    std::thread::sleep(Duration::from_millis(200));
    admin.call(&["RPUSH", "k", "only"]);
    assert_eq!(stays.read_frame(), bulks(&["k", "only"]));
    assert_eq!(admin.call(&["LLEN", "k"]), Frame::Integer(0));
    // Nobody is left waiting: a later push stays in the list.
    admin.call(&["RPUSH", "k", "later"]);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(admin.call(&["LLEN", "k"]), Frame::Integer(1));
}

#[test]
fn pipelined_commands_run_after_the_blocked_one_is_served() {
    let s = threaded_server();
    let mut admin = s.raw();
    let mut w = s.raw();
    let id = client_id(&mut w);
    w.send_many(&[
        vec!["BLPOP", "k", "0"],
        vec!["SET", "after", "1"],
        vec!["LLEN", "k"],
        vec!["GET", "after"],
    ]);
    wait_for_cmd(&mut admin, id, "blpop");
    std::thread::sleep(Duration::from_millis(200));
    // The commands behind BLPOP have not run yet.
    assert_eq!(admin.call(&["EXISTS", "after"]), Frame::Integer(0));
    admin.call(&["RPUSH", "k", "a", "b"]);
    assert_eq!(w.read_frame(), bulks(&["k", "a"]));
    assert_eq!(w.read_frame(), Frame::Simple(b"OK".to_vec()));
    assert_eq!(w.read_frame(), Frame::Integer(1));
    assert_eq!(w.read_frame(), bulk("1"));
}

#[test]
fn client_unblock_timeout_and_error() {
    let s = threaded_server();
    let mut admin = s.raw();
    let mut w = s.raw();
    let id = client_id(&mut w);
    w.send(&["BLPOP", "k", "0"]);
    wait_for_cmd(&mut admin, id, "blpop");
    assert_eq!(
        admin.call(&["CLIENT", "UNBLOCK", &id.to_string()]),
        Frame::Integer(1)
    );
    assert_eq!(w.read_frame(), Frame::NullArray);
    w.send(&["BLMOVE", "k", "d", "LEFT", "LEFT", "0"]);
    wait_for_cmd(&mut admin, id, "blmove");
    assert_eq!(
        admin.call(&["CLIENT", "UNBLOCK", &id.to_string(), "ERROR"]),
        Frame::Integer(1)
    );
    assert_eq!(
        w.read_frame(),
        error("UNBLOCKED client unblocked via CLIENT UNBLOCK")
    );
    // The UNBLOCKED reply counts in errorstats, as any error reply.
    match admin.call(&["INFO", "errorstats"]) {
        Frame::Bulk(info) => assert!(
            String::from_utf8_lossy(&info).contains("errorstat_UNBLOCKED:count=1"),
            "{}",
            String::from_utf8_lossy(&info)
        ),
        other => panic!("INFO answered {}", fmt_frame(&other)),
    }
    w.send(&["BRPOPLPUSH", "k", "d", "0"]);
    wait_for_cmd(&mut admin, id, "brpoplpush");
    assert_eq!(
        admin.call(&["CLIENT", "UNBLOCK", &id.to_string(), "TIMEOUT"]),
        Frame::Integer(1)
    );
    assert_eq!(w.read_frame(), Frame::NullArray);
    assert_eq!(w.call(&["PING"]), Frame::Simple(b"PONG".to_vec()));
    assert_eq!(
        admin.call(&["CLIENT", "UNBLOCK", &id.to_string()]),
        Frame::Integer(0)
    );
}

#[test]
fn many_blocked_clients_each_get_one_element() {
    let s = threaded_server();
    let mut admin = s.raw();
    let n = 20;
    let mut waiters: Vec<RawClient> = (0..n)
        .map(|i| {
            let cmd = if i % 2 == 0 { "BLPOP" } else { "BRPOP" };
            block(&s, &mut admin, &[cmd, "jobs", "30"])
        })
        .collect();
    let items: Vec<String> = (0..n).map(|i| format!("job{i}")).collect();
    let mut push = vec!["RPUSH".to_string(), "jobs".to_string()];
    push.extend(items.iter().cloned());
    admin.call(&push);
    let mut got: Vec<String> = waiters
        .iter_mut()
        .map(|w| match w.read_frame() {
            Frame::Array(v) if v.len() == 2 => match &v[1] {
                Frame::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
                other => panic!("element {}", fmt_frame(other)),
            },
            other => panic!("reply {}", fmt_frame(&other)),
        })
        .collect();
    got.sort();
    let mut want = items;
    want.sort();
    assert_eq!(got, want);
    assert_eq!(admin.call(&["EXISTS", "jobs"]), Frame::Integer(0));
}

/// A woken BLPOP/BLMPOP is served from the key that became ready even if an earlier key of
/// the same call has meanwhile become another type (redis-server 7.0 never checks it).
#[test]
fn woken_pop_serves_the_ready_key_despite_other_key_types() {
    let s = TestServer::start();
    let mut b = s.raw();
    for cmd in [
        vec!["BLPOP", "wk1", "wk2", "0"],
        vec!["BLMPOP", "0", "2", "wk1", "wk2", "LEFT"],
    ] {
        b.call(&["DEL", "wk1", "wk2"]);
        let mut a = s.raw();
        a.send(&cmd);
        common::wait_until(
            std::time::Duration::from_secs(10),
            || matches!(b.call(&["CLIENT", "LIST"]), common::Frame::Bulk(l) if String::from_utf8_lossy(&l).contains("flags=b")),
        );
        b.call(&["MULTI"]);
        b.call(&["RPUSH", "wk2", "x"]);
        b.call(&["SET", "wk1", "str"]);
        b.call(&["EXEC"]);
        let got = a.read_frame();
        let expected = if cmd[0] == "BLPOP" {
            common::Frame::Array(vec![common::bulk("wk2"), common::bulk("x")])
        } else {
            common::Frame::Array(vec![
                common::bulk("wk2"),
                common::Frame::Array(vec![common::bulk("x")]),
            ])
        };
        assert_eq!(got, expected, "{cmd:?}");
    }
}

/// Inside MULTI a blocking pop on nothing answers at once: BLPOP with the
/// timed-out null array, BLMOVE and BRPOPLPUSH with the empty source's
/// null bulk, as Redis does.
#[test]
fn blocking_commands_in_multi_answer_with_their_empty_replies() {
    let s = TestServer::start();
    let mut c = s.raw();
    c.call(&["MULTI"]);
    c.call(&["BLMOVE", "a", "b", "LEFT", "LEFT", "0"]);
    c.call(&["BRPOPLPUSH", "a", "b", "0"]);
    c.call(&["BLPOP", "a", "0"]);
    assert_eq!(
        c.call(&["EXEC"]),
        Frame::Array(vec![Frame::NullBulk, Frame::NullBulk, Frame::NullArray])
    );
}

/// A timeout too large to add to the clock waits forever, as in Redis
/// (whose deadline wraps and is then read as unsigned).
#[test]
fn huge_blocking_timeout_waits_until_served() {
    let s = TestServer::start();
    let mut waiter = s.raw();
    let mut pusher = s.raw();
    waiter.send(&["BLPOP", "q", "9223372036854775.807"]);
    assert!(wait_until(
        std::time::Duration::from_secs(20),
        || matches!(pusher.call(&["CLIENT", "LIST"]), Frame::Bulk(b) if String::from_utf8_lossy(&b).contains("cmd=blpop")),
    ));
    pusher.call(&["LPUSH", "q", "x"]);
    assert_eq!(
        waiter.read_frame(),
        Frame::Array(vec![bulk("q"), bulk("x")])
    );
}

/// A waiter whose key comes to hold another type stays blocked, and the
/// waiters behind it that the new value can serve are served, as in Redis
/// (which serves list waiters only from lists, sorted-set waiters only from
/// sorted sets).
#[test]
fn waiters_of_another_type_stay_blocked_and_do_not_hold_up_others() {
    let s = TestServer::start();
    let mut admin = s.raw();
    let blocked = |admin: &mut RawClient, cmd: &str, n: usize| {
        assert!(
            wait_until(std::time::Duration::from_secs(20), || {
                match admin.call(&["CLIENT", "LIST"]) {
                    Frame::Bulk(b) => {
                        String::from_utf8_lossy(&b)
                            .lines()
                            .filter(|l| {
                                l.contains(" flags=b ") && l.contains(&format!(" cmd={cmd} "))
                            })
                            .count()
                            == n
                    }
                    _ => false,
                }
            }),
            "{cmd} not blocked"
        );
    };
    // BLPOP first in line, BZPOPMIN behind it, the key becomes a zset.
    let mut list_waiter = s.raw();
    let mut zset_waiter = s.raw();
    let mut move_waiter = s.raw();
    list_waiter.send(&["BLPOP", "k", "0"]);
    blocked(&mut admin, "blpop", 1);
    move_waiter.send(&["BLMOVE", "k", "d", "LEFT", "LEFT", "0"]);
    blocked(&mut admin, "blmove", 1);
    zset_waiter.send(&["BZPOPMIN", "k", "0"]);
    blocked(&mut admin, "bzpopmin", 1);
    admin.call(&["ZADD", "k", "1", "m"]);
    assert_eq!(
        zset_waiter.read_frame(),
        Frame::Array(vec![bulk("k"), bulk("m"), bulk("1")])
    );
    // The list waiters are still waiting, and a list serves them in turn.
    blocked(&mut admin, "blpop", 1);
    blocked(&mut admin, "blmove", 1);
    admin.call(&["RPUSH", "k", "a", "b"]);
    assert_eq!(
        list_waiter.read_frame(),
        Frame::Array(vec![bulk("k"), bulk("a")])
    );
    assert_eq!(move_waiter.read_frame(), bulk("b"));

    // Filled and then overwritten in one transaction: still blocked.
    list_waiter.send(&["BLPOP", "t", "0"]);
    blocked(&mut admin, "blpop", 1);
    admin.call(&["MULTI"]);
    admin.call(&["LPUSH", "t", "a"]);
    admin.call(&["SET", "t", "s"]);
    admin.call(&["EXEC"]);
    admin.call(&["DEL", "t"]);
    blocked(&mut admin, "blpop", 1);
    admin.call(&["LPUSH", "t", "z"]);
    assert_eq!(
        list_waiter.read_frame(),
        Frame::Array(vec![bulk("t"), bulk("z")])
    );
}

/// A blocked command counts once in commandstats and once in
/// total_commands_processed, however many wake-ups it sees: served, timed
/// out or unblocked. As in Redis 7.0 it counts when it blocks; CLIENT
/// UNBLOCK makes it a failed call (with either reason).
#[test]
fn blocked_commands_count_once() {
    let s = TestServer::start();
    let mut admin = s.raw();
    let mut a = s.raw();
    let mut b = s.raw();
    let blpop_stats = |admin: &mut RawClient| {
        let Frame::Bulk(info) = admin.call(&["INFO", "commandstats"]) else {
            panic!("INFO")
        };
        let info = String::from_utf8_lossy(&info).into_owned();
        info.lines()
            .find(|l| l.starts_with("cmdstat_blpop:"))
            .map(|l| {
                l.split([':', ','])
                    .filter(|kv| kv.starts_with("calls=") || kv.starts_with("failed_calls="))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default()
    };
    admin.call(&["CONFIG", "RESETSTAT"]);
    a.send(&["BLPOP", "q", "0"]);
    assert!(wait_until(std::time::Duration::from_secs(20), || {
        matches!(admin.call(&["INFO", "clients"]), Frame::Bulk(i) if String::from_utf8_lossy(&i).contains("blocked_clients:1"))
    }));
    assert_eq!(blpop_stats(&mut admin), "calls=1,failed_calls=0");
    b.send(&["BLPOP", "q", "0"]);
    assert!(wait_until(std::time::Duration::from_secs(20), || {
        matches!(admin.call(&["INFO", "clients"]), Frame::Bulk(i) if String::from_utf8_lossy(&i).contains("blocked_clients:2"))
    }));
    // The first push serves a and wakes b, which finds nothing and waits on.
    admin.call(&["RPUSH", "q", "x"]);
    assert_eq!(a.read_frame(), Frame::Array(vec![bulk("q"), bulk("x")]));
    admin.call(&["RPUSH", "q", "y"]);
    assert_eq!(b.read_frame(), Frame::Array(vec![bulk("q"), bulk("y")]));
    assert_eq!(a.call(&["BLPOP", "q2", "0.01"]), Frame::NullArray);
    let Frame::Bulk(info) = admin.call(&["INFO", "commandstats"]) else {
        panic!("INFO")
    };
    let info = String::from_utf8_lossy(&info).into_owned();
    assert!(info.contains("cmdstat_blpop:calls=3,"), "{info}");

    for reason in ["TIMEOUT", "ERROR"] {
        admin.call(&["CONFIG", "RESETSTAT"]);
        let id = client_id(&mut a);
        a.send(&["BLPOP", "q", "0"]);
        assert!(wait_until(std::time::Duration::from_secs(20), || {
            matches!(admin.call(&["INFO", "clients"]), Frame::Bulk(i) if String::from_utf8_lossy(&i).contains("blocked_clients:1"))
        }));
        assert_eq!(
            admin.call(&["CLIENT", "UNBLOCK", &id.to_string(), reason]),
            Frame::Integer(1)
        );
        a.read_frame();
        assert_eq!(
            blpop_stats(&mut admin),
            "calls=1,failed_calls=1",
            "{reason}"
        );
    }
}

/// Redis serves blocked clients right after the command that fed their keys, before the
/// feeding client's next command: commands pipelined behind a push see the list after the
/// waiters took their share, whichever threads the clients are on.
#[test]
fn waiters_are_served_before_the_pushers_next_command() {
    let s = threaded_server();
    let mut admin = s.raw();
    let mut first = block(&s, &mut admin, &["BLPOP", "k", "0"]);
    let mut second = block(&s, &mut admin, &["BRPOP", "k", "0"]);
    let mut pusher = s.raw();
    let replies = pusher.pipeline(&[
        vec!["RPUSH", "k", "a", "b", "c"],
        vec!["LRANGE", "k", "0", "-1"],
        vec!["LPOP", "k"],
        vec!["LPOP", "k"],
    ]);
    assert_eq!(
        replies,
        vec![Frame::Integer(3), bulks(&["b"]), bulk("b"), Frame::NullBulk]
    );
    assert_eq!(first.read_frame(), bulks(&["k", "a"]));
    assert_eq!(second.read_frame(), bulks(&["k", "c"]));

    // A chain: the element moves through BLMOVE's destination to the next waiter before
    // the pusher's LRANGE runs.
    let mut mover = block(
        &s,
        &mut admin,
        &["BLMOVE", "src", "dst", "LEFT", "RIGHT", "0"],
    );
    let mut popper = block(&s, &mut admin, &["BLPOP", "dst", "0"]);
    let replies = pusher.pipeline(&[
        vec!["RPUSH", "src", "x", "y"],
        vec!["LRANGE", "src", "0", "-1"],
        vec!["LRANGE", "dst", "0", "-1"],
    ]);
    assert_eq!(
        replies,
        vec![Frame::Integer(2), bulks(&["y"]), Frame::Array(vec![])]
    );
    assert_eq!(mover.read_frame(), bulk("x"));
    assert_eq!(popper.read_frame(), bulks(&["dst", "x"]));

    // Sorted sets too; after EXEC, not inside it.
    let mut zwaiter = block(&s, &mut admin, &["BZPOPMIN", "z", "0"]);
    let replies = pusher.pipeline(&[
        vec!["MULTI"],
        vec!["ZADD", "z", "1", "m1", "2", "m2"],
        vec!["ZCARD", "z"],
        vec!["EXEC"],
        vec!["ZRANGE", "z", "0", "-1"],
    ]);
    assert_eq!(
        replies[3],
        Frame::Array(vec![Frame::Integer(2), Frame::Integer(2)])
    );
    assert_eq!(replies[4], bulks(&["m2"]));
    assert_eq!(zwaiter.read_frame(), bulks(&["z", "m1", "1"]));
}

/// One command that makes several keys ready at once: a client blocked on
/// several of them is served from the first that still has something for
/// it (here `a`, after `b`'s element went to the client blocked on `b`
/// alone), as Redis serves it, instead of waiting on with data left.
#[test]
fn a_waiter_on_several_keys_is_served_from_any_key_made_ready() {
    let s = threaded_server();
    let mut admin = s.raw();
    for feed in [
        vec![
            vec!["MULTI"],
            vec!["RPUSH", "b", "1"],
            vec!["RPUSH", "a", "2"],
            vec!["RPUSH", "a", "3"],
            vec!["EXEC"],
        ],
        vec![vec![
            "EVAL",
            "redis.call('RPUSH','b','1'); redis.call('RPUSH','a','2','3')",
            "2",
            "a",
            "b",
        ]],
    ] {
        let mut on_a = block(&s, &mut admin, &["BLPOP", "a", "0"]);
        let mut on_b = block(&s, &mut admin, &["BLPOP", "b", "0"]);
        let mut on_both = block(&s, &mut admin, &["BLPOP", "a", "b", "0"]);
        admin.pipeline(&feed);
        assert_eq!(on_a.read_frame(), bulks(&["a", "2"]));
        assert_eq!(on_b.read_frame(), bulks(&["b", "1"]));
        assert_eq!(on_both.read_frame(), bulks(&["a", "3"]));
        assert_eq!(admin.call(&["EXISTS", "a", "b"]), Frame::Integer(0));
    }
}

/// FLUSHDB and SWAPDB make waiters look again, but a key of another type
/// keeps them waiting (no WRONGTYPE), and a swapped-in list serves them.
#[test]
fn swapdb_and_flushdb_serve_waiters_only_from_their_type() {
    let s = threaded_server();
    let mut admin = s.raw();
    let mut w = block(&s, &mut admin, &["BLPOP", "a", "0"]);
    admin.call(&["SET", "a", "x"]);
    admin.call(&["SELECT", "1"]);
    admin.call(&["FLUSHDB"]);
    admin.call(&["SET", "a", "1"]);
    admin.call(&["SWAPDB", "0", "1"]);
    admin.call(&["SELECT", "0"]);
    admin.call(&["DEL", "a"]);
    admin.call(&["RPUSH", "a", "served"]);
    assert_eq!(w.read_frame(), bulks(&["a", "served"]));

    let mut w = block(&s, &mut admin, &["BLPOP", "a", "b", "0"]);
    admin.call(&["SELECT", "1"]);
    admin.call(&["FLUSHDB"]);
    admin.call(&["SET", "a", "x"]);
    admin.call(&["RPUSH", "b", "1"]);
    admin.call(&["SWAPDB", "0", "1"]);
    assert_eq!(w.read_frame(), bulks(&["b", "1"]));
}
