//! SORT and SORT_RO through a real client: numeric and ALPHA sorting of lists, sets and sorted
//! sets, BY patterns (string keys, hash fields, `nosort`), GET patterns (`#`, keys, hash
//! fields), LIMIT, ASC/DESC, STORE, the conversion error, and their syntax errors. Expected
//! values are what redis-server 7.0 replies (run with `TESSERA_TEST_TARGET=redis` to check).

mod common;

use common::{q, q_err, TestServer};
use redis::Value;

fn server() -> (TestServer, redis::Connection) {
    let s = TestServer::start();
    let c = s.client();
    (s, c)
}

fn sort(c: &mut redis::Connection, args: &[&str]) -> Vec<String> {
    let mut full = vec!["SORT"];
    full.extend_from_slice(args);
    q(c, &full)
}

const NOT_DOUBLE: &str = "ERR One or more scores can't be converted into double";

#[test]
fn numeric_and_alpha_sorting_of_a_list() {
    let (_s, mut c) = server();
    q::<i64>(
        &mut c,
        &[
            "RPUSH", "l", "3", "10", "1", "2.5", "-4", "0x10", " 7", "1e1",
        ],
    );
    assert_eq!(
        sort(&mut c, &["l"]),
        ["-4", "1", "2.5", "3", " 7", "10", "1e1", "0x10"]
    );
    assert_eq!(
        sort(&mut c, &["l", "DESC"]),
        ["0x10", "1e1", "10", " 7", "3", "2.5", "1", "-4"]
    );
    assert_eq!(
        sort(&mut c, &["l", "ALPHA"]),
        [" 7", "-4", "0x10", "1", "10", "1e1", "2.5", "3"]
    );
    q::<i64>(&mut c, &["RPUSH", "l", "abc"]);
    assert_eq!(q_err(&mut c, &["SORT", "l"]), NOT_DOUBLE);
    assert_eq!(
        q_err(&mut c, &["SORT_RO", "l", "LIMIT", "0", "1"]),
        NOT_DOUBLE
    );
    assert_eq!(
        sort(&mut c, &["l", "ALPHA", "DESC", "LIMIT", "0", "2"]),
        ["abc", "3"]
    );
}

#[test]
fn limit_clamps_like_redis() {
    let (_s, mut c) = server();
    q::<i64>(&mut c, &["RPUSH", "l", "5", "4", "3", "2", "1"]);
    assert_eq!(sort(&mut c, &["l", "LIMIT", "1", "2"]), ["2", "3"]);
    assert_eq!(sort(&mut c, &["l", "LIMIT", "-5", "2"]), ["1", "2"]);
    assert_eq!(sort(&mut c, &["l", "LIMIT", "3", "-1"]), ["4", "5"]);
    assert_eq!(sort(&mut c, &["l", "LIMIT", "3", "100"]), ["4", "5"]);
    assert!(sort(&mut c, &["l", "LIMIT", "10", "2"]).is_empty());
    assert!(sort(&mut c, &["l", "LIMIT", "0", "0"]).is_empty());
    assert_eq!(
        sort(&mut c, &["l", "LIMIT", "0", "1", "LIMIT", "4", "1"]),
        ["5"]
    );
}

#[test]
fn by_patterns_and_nosort() {
    let (_s, mut c) = server();
    q::<i64>(&mut c, &["RPUSH", "l", "a", "b", "c", "d"]);
    for (k, w) in [("w_a", "3"), ("w_b", "1"), ("w_c", "2")] {
        q::<()>(&mut c, &["SET", k, w]);
    }
    // d has no weight: it sorts as 0.
    assert_eq!(sort(&mut c, &["l", "BY", "w_*"]), ["d", "b", "c", "a"]);
    assert_eq!(
        sort(&mut c, &["l", "BY", "w_*", "DESC", "LIMIT", "0", "2"]),
        ["a", "c"]
    );
    // BY a hash field.
    for (k, v) in [("h_a", "z"), ("h_b", "y"), ("h_d", "x")] {
        q::<i64>(&mut c, &["HSET", k, "f", v]);
    }
    assert_eq!(
        sort(&mut c, &["l", "BY", "h_*->f", "ALPHA"]),
        ["c", "d", "b", "a"]
    );
    // A pattern without `*` does not sort: the list keeps its order, DESC reverses it.
    assert_eq!(sort(&mut c, &["l", "BY", "nosort"]), ["a", "b", "c", "d"]);
    assert_eq!(
        sort(&mut c, &["l", "BY", "nosort", "DESC"]),
        ["d", "c", "b", "a"]
    );
    assert_eq!(
        sort(&mut c, &["l", "BY", "nosort", "LIMIT", "1", "2"]),
        ["b", "c"]
    );
    assert_eq!(
        sort(&mut c, &["l", "BY", "nosort", "DESC", "LIMIT", "1", "2"]),
        ["c", "b"]
    );
    // ... and once given, a later BY pattern does not bring sorting back.
    assert_eq!(
        sort(&mut c, &["l", "BY", "nosort", "BY", "w_*"]),
        ["a", "b", "c", "d"]
    );
    // A weight that is not a number.
    q::<()>(&mut c, &["SET", "w_d", "heavy"]);
    assert_eq!(q_err(&mut c, &["SORT", "l", "BY", "w_*"]), NOT_DOUBLE);
}

#[test]
fn get_patterns() {
    let (_s, mut c) = server();
    q::<i64>(&mut c, &["RPUSH", "l", "2", "1", "3"]);
    q::<()>(&mut c, &["SET", "name_1", "one"]);
    q::<()>(&mut c, &["SET", "name_3", "three"]);
    q::<i64>(&mut c, &["HSET", "obj_2", "f", "two"]);
    q::<i64>(&mut c, &["SADD", "name_2", "not-a-string"]);
    let v: Vec<Option<String>> = q(
        &mut c,
        &[
            "SORT", "l", "GET", "#", "GET", "name_*", "GET", "obj_*->f", "GET", "const",
        ],
    );
    let s = |x: &str| Some(x.to_string());
    assert_eq!(
        v,
        [
            s("1"),
            s("one"),
            None,
            None,
            s("2"),
            None,
            s("two"),
            None,
            s("3"),
            s("three"),
            None,
            None
        ]
    );
    // `->` at the very end is part of the key name, not a field.
    let v: Vec<Option<String>> = q(&mut c, &["SORT", "l", "GET", "obj_*->"]);
    assert_eq!(v, [None, None, None]);
}

#[test]
fn store_writes_a_list() {
    let (_s, mut c) = server();
    q::<i64>(&mut c, &["RPUSH", "l", "3", "1", "2"]);
    q::<()>(&mut c, &["SET", "dst", "old"]);
    q::<i64>(&mut c, &["EXPIRE", "dst", "100"]);
    assert_eq!(q::<i64>(&mut c, &["SORT", "l", "STORE", "dst"]), 3);
    assert_eq!(
        q::<Vec<String>>(&mut c, &["LRANGE", "dst", "0", "-1"]),
        ["1", "2", "3"]
    );
    assert_eq!(q::<i64>(&mut c, &["TTL", "dst"]), -1);
    assert_eq!(
        q::<String>(&mut c, &["OBJECT", "ENCODING", "dst"]),
        "quicklist"
    );
    // GET with STORE: missing values are stored as empty strings.
    q::<()>(&mut c, &["SET", "v_1", "x"]);
    assert_eq!(
        q::<i64>(
            &mut c,
            &["SORT", "l", "GET", "v_*", "GET", "#", "STORE", "dst"]
        ),
        6
    );
    assert_eq!(
        q::<Vec<String>>(&mut c, &["LRANGE", "dst", "0", "-1"]),
        ["x", "1", "", "2", "", "3"]
    );
    // An empty result deletes the destination.
    assert_eq!(q::<i64>(&mut c, &["SORT", "nokey", "STORE", "dst"]), 0);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "dst"]), 0);
    // Sorting a list into itself.
    assert_eq!(q::<i64>(&mut c, &["SORT", "l", "DESC", "STORE", "l"]), 3);
    assert_eq!(
        q::<Vec<String>>(&mut c, &["LRANGE", "l", "0", "-1"]),
        ["3", "2", "1"]
    );
}

#[test]
fn sets_and_sorted_sets() {
    let (_s, mut c) = server();
    q::<i64>(&mut c, &["SADD", "ints", "30", "10", "20"]);
    assert_eq!(sort(&mut c, &["ints"]), ["10", "20", "30"]);
    assert_eq!(
        sort(&mut c, &["ints", "DESC", "LIMIT", "0", "2"]),
        ["30", "20"]
    );
    // An intset's own order is ascending.
    assert_eq!(sort(&mut c, &["ints", "BY", "nosort"]), ["10", "20", "30"]);
    q::<i64>(&mut c, &["SADD", "words", "pear", "apple", "fig"]);
    assert_eq!(sort(&mut c, &["words", "ALPHA"]), ["apple", "fig", "pear"]);
    assert_eq!(q_err(&mut c, &["SORT", "words"]), NOT_DOUBLE);
    // With STORE a set is sorted ALPHA even under BY nosort, so the result is deterministic.
    assert_eq!(
        q::<i64>(&mut c, &["SORT", "words", "BY", "nosort", "STORE", "d"]),
        3
    );
    assert_eq!(
        q::<Vec<String>>(&mut c, &["LRANGE", "d", "0", "-1"]),
        ["apple", "fig", "pear"]
    );
    q::<i64>(&mut c, &["ZADD", "z", "1", "c", "2", "a", "3", "b"]);
    assert_eq!(
        q::<String>(&mut c, &["OBJECT", "ENCODING", "z"]),
        "listpack"
    );
    assert_eq!(sort(&mut c, &["z", "ALPHA"]), ["a", "b", "c"]);
    // Sorting converted the sorted set to a skiplist, for good.
    assert_eq!(
        q::<String>(&mut c, &["OBJECT", "ENCODING", "z"]),
        "skiplist"
    );
    assert_eq!(sort(&mut c, &["z", "BY", "nosort"]), ["c", "a", "b"]);
    assert_eq!(
        sort(&mut c, &["z", "BY", "nosort", "DESC"]),
        ["b", "a", "c"]
    );
    assert_eq!(
        sort(&mut c, &["z", "BY", "nosort", "LIMIT", "1", "5"]),
        ["a", "b"]
    );
    assert_eq!(
        sort(&mut c, &["z", "BY", "nosort", "DESC", "LIMIT", "1", "1"]),
        ["a"]
    );
    q::<i64>(&mut c, &["ZADD", "z2", "5", "x"]);
    assert_eq!(
        q::<Vec<String>>(&mut c, &["SORT_RO", "z2", "BY", "nosort"]),
        ["x"]
    );
    assert_eq!(
        q::<String>(&mut c, &["OBJECT", "ENCODING", "z2"]),
        "skiplist"
    );
}

#[test]
fn sort_ro_and_errors() {
    let (_s, mut c) = server();
    q::<i64>(&mut c, &["RPUSH", "l", "2", "1"]);
    assert_eq!(q::<Vec<String>>(&mut c, &["SORT_RO", "l"]), ["1", "2"]);
    assert_eq!(
        q_err(&mut c, &["SORT_RO", "l", "STORE", "d"]),
        "ERR syntax error"
    );
    for args in [
        vec!["SORT", "l", "LIMIT", "0"],
        vec!["SORT", "l", "STORE"],
        vec!["SORT", "l", "BY"],
        vec!["SORT", "l", "GET"],
        vec!["SORT", "l", "FOO"],
    ] {
        assert_eq!(q_err(&mut c, &args), "ERR syntax error", "{args:?}");
    }
    assert_eq!(
        q_err(&mut c, &["SORT", "l", "LIMIT", "x", "1"]),
        "ERR value is not an integer or out of range"
    );
    q::<()>(&mut c, &["SET", "s", "v"]);
    assert_eq!(
        q_err(&mut c, &["SORT", "s"]),
        "WRONGTYPE Operation against a key holding the wrong kind of value"
    );
    q::<i64>(&mut c, &["HSET", "h", "f", "v"]);
    assert_eq!(
        q_err(&mut c, &["SORT_RO", "h"]),
        "WRONGTYPE Operation against a key holding the wrong kind of value"
    );
    assert!(q::<Vec<String>>(&mut c, &["SORT", "nokey"]).is_empty());
    assert_eq!(
        q::<Value>(&mut c, &["SORT", "nokey", "BY", "x_*", "GET", "#"]),
        Value::Array(vec![])
    );
}

#[test]
fn sorting_a_large_list_by_weights() {
    let (_s, mut c) = server();
    let n = 2000;
    let items: Vec<String> = (0..n).map(|i| format!("item{i}")).collect();
    let mut cmd = redis::cmd("RPUSH");
    cmd.arg("l").arg(&items);
    let _: i64 = cmd.query(&mut c).unwrap();
    let mut mset = redis::cmd("MSET");
    for i in 0..n {
        mset.arg(format!("w_item{i}")).arg((i * 7919) % n);
    }
    let _: () = mset.query(&mut c).unwrap();
    let got: Vec<String> = sort(&mut c, &["l", "BY", "w_*", "LIMIT", "0", "5"]);
    let mut want: Vec<(usize, String)> = (0..n)
        .map(|i| ((i * 7919) % n, format!("item{i}")))
        .collect();
    want.sort();
    let want: Vec<String> = want.into_iter().take(5).map(|(_, s)| s).collect();
    assert_eq!(got, want);
}

#[test]
fn a_script_sorts_a_set_under_a_constant_by() {
    let (_s, mut c) = server();
    // A hashtable-encoded set (its own order is arbitrary) of numbers and
    // words.
    q::<i64>(
        &mut c,
        &["SADD", "s", "5", "3", "9", "1", "c", "b", "a", "10", "2"],
    );
    let eval = |c: &mut redis::Connection, script: &str, key: &str| -> Vec<String> {
        q(c, &["EVAL", script, "1", key])
    };
    // BY without '*' means "don't sort", but a script gets the set sorted
    // ALPHA (by C string, not numerically), so its result is deterministic;
    // DESC and LIMIT apply to that order.
    let asc = ["1", "10", "2", "3", "5", "9", "a", "b", "c"];
    assert_eq!(
        eval(
            &mut c,
            "return redis.call('sort', KEYS[1], 'by', 'nosort')",
            "s"
        ),
        asc
    );
    assert_eq!(
        eval(
            &mut c,
            "return redis.call('sort_ro', KEYS[1], 'by', 'constant')",
            "s"
        ),
        asc
    );
    assert_eq!(
        eval(
            &mut c,
            "return redis.call('sort', KEYS[1], 'by', 'nosort', 'desc')",
            "s"
        ),
        ["c", "b", "a", "9", "5", "3", "2", "10", "1"]
    );
    assert_eq!(
        eval(
            &mut c,
            "return redis.call('sort', KEYS[1], 'by', 'nosort', 'limit', '1', '3')",
            "s"
        ),
        ["10", "2", "3"]
    );
    // Functions run as scripts too.
    q::<String>(
        &mut c,
        &["FUNCTION", "LOAD", "#!lua name=sorter\nredis.register_function('srt', function(keys) return redis.call('sort', keys[1], 'by', 'nosort') end)"],
    );
    assert_eq!(q::<Vec<String>>(&mut c, &["FCALL", "srt", "1", "s"]), asc);
    // Only sets, and only BY without '*': a list keeps its order, and a
    // BY pattern sorts as usual (missing weights are 0, ties by element).
    q::<i64>(&mut c, &["RPUSH", "l", "5", "3", "9", "1"]);
    assert_eq!(
        eval(
            &mut c,
            "return redis.call('sort', KEYS[1], 'by', 'nosort')",
            "l"
        ),
        ["5", "3", "9", "1"]
    );
    assert_eq!(
        eval(
            &mut c,
            "return redis.call('sort', KEYS[1], 'by', 'w_*')",
            "s"
        ),
        asc
    );
}
