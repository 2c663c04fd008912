//! Sorted-set commands through a real client, on both encodings (listpack and skiplist) and
//! across the conversion between them. Expected values are what redis-server 7.0 replies (run
//! with `TESSERA_TEST_TARGET=redis` to check them against it).

mod common;

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use common::{bulk, bulks, error, fmt_frame, wait_until, Frame, RawClient, TestServer};

fn int(n: i64) -> Frame {
    Frame::Integer(n)
}

fn ok() -> Frame {
    Frame::Simple(b"OK".to_vec())
}

fn arr(items: Vec<Frame>) -> Frame {
    Frame::Array(items)
}

fn dbl(s: &str) -> Frame {
    Frame::Double(s.as_bytes().to_vec())
}

/// A RESP2 connection and a RESP3 one to a fresh server.
fn server() -> (TestServer, RawClient) {
    let s = TestServer::start();
    let r = s.raw();
    (s, r)
}

fn resp3(s: &TestServer) -> RawClient {
    let mut r = s.raw();
    match r.call(&["HELLO", "3"]) {
        Frame::Map(_) => r,
        other => panic!("HELLO 3 answered {}", fmt_frame(&other)),
    }
}

/// Runs `f` once with the default thresholds (small sets are listpacks) and once with
/// `zset-max-listpack-entries 0` (every set is a skiplist), passing the encoding to expect.
fn on_both_encodings(f: impl Fn(&mut RawClient, &str)) {
    for (entries, enc) in [("128", "listpack"), ("0", "skiplist")] {
        let (_s, mut r) = server();
        assert_eq!(
            r.call(&["CONFIG", "SET", "zset-max-listpack-entries", entries]),
            ok()
        );
        f(&mut r, enc);
        r.call(&["FLUSHALL"]);
    }
}

fn encoding(r: &mut RawClient, key: &str) -> String {
    match r.call(&["OBJECT", "ENCODING", key]) {
        Frame::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
        other => fmt_frame(&other),
    }
}

fn all(r: &mut RawClient, key: &str) -> Frame {
    r.call(&["ZRANGE", key, "0", "-1", "WITHSCORES"])
}

// ---- ZADD and ZINCRBY --------------------------------------------------------------------------

#[test]
fn zadd_adds_and_updates_in_both_encodings() {
    on_both_encodings(|r, enc| {
        assert_eq!(r.call(&["ZADD", "z", "1", "a", "2", "b", "3", "c"]), int(3));
        assert_eq!(encoding(r, "z"), enc);
        assert_eq!(r.call(&["ZADD", "z", "10", "a", "4", "d"]), int(1));
        assert_eq!(
            all(r, "z"),
            bulks(&["b", "2", "c", "3", "d", "4", "a", "10"])
        );
        // The same member twice in one call: the last score wins, it counts once.
        assert_eq!(r.call(&["ZADD", "z", "5", "e", "6", "e"]), int(1));
        assert_eq!(r.call(&["ZSCORE", "z", "e"]), bulk("6"));
        assert_eq!(r.call(&["ZCARD", "z"]), int(5));
    });
}

#[test]
fn zadd_nx_xx_gt_lt_ch() {
    on_both_encodings(|r, _| {
        r.call(&["ZADD", "z", "10", "a"]);
        assert_eq!(r.call(&["ZADD", "z", "NX", "20", "a", "1", "b"]), int(1));
        assert_eq!(r.call(&["ZSCORE", "z", "a"]), bulk("10"));
        assert_eq!(r.call(&["ZADD", "z", "XX", "20", "a", "1", "c"]), int(0));
        assert_eq!(r.call(&["ZSCORE", "z", "a"]), bulk("20"));
        assert_eq!(r.call(&["ZSCORE", "z", "c"]), Frame::NullBulk);
        assert_eq!(
            r.call(&["ZADD", "z", "XX", "CH", "21", "a", "1", "b"]),
            int(1)
        );
        // GT only raises, LT only lowers; new members are added either way.
        assert_eq!(
            r.call(&["ZADD", "z", "GT", "CH", "5", "a", "7", "b", "1", "n"]),
            int(2)
        );
        assert_eq!(all(r, "z"), bulks(&["n", "1", "b", "7", "a", "21"]));
        assert_eq!(
            r.call(&["ZADD", "z", "LT", "CH", "30", "a", "2", "b"]),
            int(1)
        );
        assert_eq!(
            r.call(&["ZADD", "z", "XX", "GT", "CH", "3", "b", "0", "n"]),
            int(1)
        );
        assert_eq!(all(r, "z"), bulks(&["n", "1", "b", "3", "a", "21"]));
        // Options are case-insensitive and may repeat.
        assert_eq!(r.call(&["ZADD", "z", "ch", "Ch", "1", "a"]), int(1));
        // XX on a missing key creates nothing.
        assert_eq!(r.call(&["ZADD", "none", "XX", "1", "a"]), int(0));
        assert_eq!(r.call(&["EXISTS", "none"]), int(0));
    });
}

#[test]
fn zadd_incr_replies_the_new_score_or_nil() {
    on_both_encodings(|r, _| {
        assert_eq!(r.call(&["ZADD", "z", "INCR", "1.5", "a"]), bulk("1.5"));
        assert_eq!(r.call(&["ZADD", "z", "INCR", "2", "a"]), bulk("3.5"));
        assert_eq!(
            r.call(&["ZADD", "z", "NX", "INCR", "2", "a"]),
            Frame::NullBulk
        );
        assert_eq!(
            r.call(&["ZADD", "z", "XX", "INCR", "2", "b"]),
            Frame::NullBulk
        );
        assert_eq!(
            r.call(&["ZADD", "z", "GT", "INCR", "-1", "a"]),
            Frame::NullBulk
        );
        assert_eq!(r.call(&["ZADD", "z", "LT", "INCR", "-1", "a"]), bulk("2.5"));
        assert_eq!(r.call(&["ZADD", "z", "INCR", "0", "a"]), bulk("2.5"));
        assert_eq!(r.call(&["ZINCRBY", "z", "10", "a"]), bulk("12.5"));
        assert_eq!(r.call(&["ZINCRBY", "z", "-1", "new"]), bulk("-1"));
        assert_eq!(r.call(&["ZINCRBY", "z", "+inf", "new"]), bulk("inf"));
        assert_eq!(
            r.call(&["ZINCRBY", "z", "-inf", "new"]),
            error("ERR resulting score is not a number (NaN)")
        );
        assert_eq!(r.call(&["ZSCORE", "z", "new"]), bulk("inf"));
        assert_eq!(
            r.call(&["ZADD", "z", "INCR", "-inf", "new"]),
            error("ERR resulting score is not a number (NaN)")
        );
    });
}

#[test]
fn zadd_errors_in_redis_order() {
    let (_s, mut r) = server();
    let cases: &[(&[&str], &str)] = &[
        (
            &["ZADD", "z", "1"],
            "ERR wrong number of arguments for 'zadd' command",
        ),
        (&["ZADD", "z", "1", "a", "2"], "ERR syntax error"),
        (&["ZADD", "z", "NX", "CH"], "ERR syntax error"),
        (&["ZADD", "z", "NX", "CH", "1"], "ERR syntax error"),
        (
            &["ZADD", "z", "NX", "XX", "1", "a"],
            "ERR XX and NX options at the same time are not compatible",
        ),
        (
            &["ZADD", "z", "GT", "LT", "1", "a"],
            "ERR GT, LT, and/or NX options at the same time are not compatible",
        ),
        (
            &["ZADD", "z", "NX", "GT", "1", "a"],
            "ERR GT, LT, and/or NX options at the same time are not compatible",
        ),
        (
            &["ZADD", "z", "LT", "NX", "1", "a"],
            "ERR GT, LT, and/or NX options at the same time are not compatible",
        ),
        (
            &["ZADD", "z", "INCR", "1", "a", "2", "b"],
            "ERR INCR option supports a single increment-element pair",
        ),
        (&["ZADD", "z", "abc", "a"], "ERR value is not a valid float"),
        (&["ZADD", "z", "nan", "a"], "ERR value is not a valid float"),
        (
            &["ZADD", "z", "1", "a", "1x", "b"],
            "ERR value is not a valid float",
        ),
        (&["ZADD", "z", " 1", "a"], "ERR value is not a valid float"),
        (
            &["ZINCRBY", "z", "x", "a"],
            "ERR value is not a valid float",
        ),
        (&["ZINCRBY", "z", "NX", "a"], "ERR syntax error"),
    ];
    for (args, want) in cases {
        assert_eq!(r.call(args), error(want), "{args:?}");
    }
    // Nothing was created by any of them: scores are checked before anything changes.
    assert_eq!(r.call(&["EXISTS", "z"]), int(0));
    r.call(&["SET", "s", "x"]);
    // A bad score is reported before the type of the key.
    assert_eq!(
        r.call(&["ZADD", "s", "x", "a"]),
        error("ERR value is not a valid float")
    );
    assert_eq!(
        r.call(&["ZADD", "s", "1", "a"]),
        error("WRONGTYPE Operation against a key holding the wrong kind of value")
    );
}

// ---- scores --------------------------------------------------------------------------------------

#[test]
fn scores_print_like_redis() {
    let s = TestServer::start();
    let mut r = s.raw();
    let mut r3 = resp3(&s);
    r.call(&[
        "ZADD",
        "z",
        "1.1",
        "a",
        "3.0",
        "b",
        "1e17",
        "c",
        "-inf",
        "d",
        "+inf",
        "e",
        "0.1",
        "f",
        "1e-5",
        "g",
        "123456789012345678",
        "h",
        "0x10",
        "i",
        ".5",
        "j",
    ]);
    let want = [
        ("a", "1.1000000000000001"),
        ("b", "3"),
        ("c", "1e+17"),
        ("d", "-inf"),
        ("e", "inf"),
        ("f", "0.10000000000000001"),
        ("g", "1.0000000000000001e-05"),
        ("h", "1.2345678901234568e+17"),
        ("i", "16"),
        ("j", "0.5"),
    ];
    for (m, text) in want {
        assert_eq!(r.call(&["ZSCORE", "z", m]), bulk(text), "{m}");
        assert_eq!(r3.call(&["ZSCORE", "z", m]), dbl(text), "{m}");
    }
    assert_eq!(
        r3.call(&["ZMSCORE", "z", "b", "nope"]),
        arr(vec![dbl("3"), Frame::Null])
    );
    assert_eq!(
        r.call(&["ZMSCORE", "z", "b", "nope"]),
        arr(vec![bulk("3"), Frame::NullBulk])
    );
    assert_eq!(
        r.call(&["ZMSCORE", "none", "b"]),
        arr(vec![Frame::NullBulk])
    );
    assert_eq!(r.call(&["ZSCORE", "none", "b"]), Frame::NullBulk);
    assert_eq!(r3.call(&["ZSCORE", "none", "b"]), Frame::Null);
}

#[test]
fn negative_zero_survives_only_the_skiplist() {
    // A listpack stores integral scores as integers, so -0 comes back as 0; the skiplist keeps
    // the double as it is. ZINCRBY replies the computed score either way.
    let (_s, mut r) = server();
    assert_eq!(r.call(&["ZADD", "small", "-0", "a"]), int(1));
    assert_eq!(r.call(&["ZSCORE", "small", "a"]), bulk("0"));
    assert_eq!(r.call(&["ZINCRBY", "small", "-0", "b"]), bulk("-0"));
    assert_eq!(r.call(&["ZSCORE", "small", "b"]), bulk("0"));
    r.call(&["CONFIG", "SET", "zset-max-listpack-entries", "0"]);
    assert_eq!(r.call(&["ZADD", "big", "-0", "a"]), int(1));
    assert_eq!(encoding(&mut r, "big"), "skiplist");
    assert_eq!(r.call(&["ZSCORE", "big", "a"]), bulk("-0"));
    // Equal to 0, so no update either way.
    assert_eq!(r.call(&["ZADD", "big", "CH", "0", "a"]), int(0));
    assert_eq!(r.call(&["ZSCORE", "big", "a"]), bulk("-0"));
    // A stored union goes through a listpack when small enough.
    r.call(&["CONFIG", "SET", "zset-max-listpack-entries", "128"]);
    assert_eq!(r.call(&["ZUNIONSTORE", "u", "1", "big"]), int(1));
    assert_eq!(r.call(&["ZSCORE", "u", "a"]), bulk("0"));
    assert_eq!(
        r.call(&["ZUNION", "1", "big", "WITHSCORES"]),
        bulks(&["a", "-0"])
    );
}

#[test]
fn zscan_prints_listpack_scores_as_stored() {
    let (_s, mut r) = server();
    r.call(&["ZADD", "z", "1e18", "a", "0.5", "b", "1e19", "c"]);
    assert_eq!(
        r.call(&["ZSCAN", "z", "0"]),
        arr(vec![
            bulk("0"),
            bulks(&["b", "0.5", "a", "1000000000000000000", "c", "1e+19"])
        ])
    );
    assert_eq!(
        r.call(&["ZRANGE", "z", "0", "-1", "WITHSCORES"]),
        bulks(&["b", "0.5", "a", "1e+18", "c", "1e+19"])
    );
}

// ---- reads ----------------------------------------------------------------------------------------

#[test]
fn rank_count_and_card() {
    on_both_encodings(|r, _| {
        r.call(&[
            "ZADD", "z", "1", "a", "2", "b", "2", "c", "3", "d", "-inf", "m", "inf", "x",
        ]);
        assert_eq!(r.call(&["ZCARD", "z"]), int(6));
        assert_eq!(r.call(&["ZCARD", "none"]), int(0));
        assert_eq!(r.call(&["ZRANK", "z", "m"]), int(0));
        assert_eq!(r.call(&["ZRANK", "z", "c"]), int(3));
        assert_eq!(r.call(&["ZREVRANK", "z", "c"]), int(2));
        assert_eq!(r.call(&["ZREVRANK", "z", "x"]), int(0));
        assert_eq!(r.call(&["ZRANK", "z", "nope"]), Frame::NullBulk);
        assert_eq!(r.call(&["ZRANK", "none", "a"]), Frame::NullBulk);
        assert_eq!(r.call(&["ZCOUNT", "z", "-inf", "+inf"]), int(6));
        assert_eq!(r.call(&["ZCOUNT", "z", "(1", "3"]), int(3));
        assert_eq!(r.call(&["ZCOUNT", "z", "(2", "(3"]), int(0));
        assert_eq!(r.call(&["ZCOUNT", "z", "2", "2"]), int(2));
        assert_eq!(r.call(&["ZCOUNT", "z", "3", "1"]), int(0));
        assert_eq!(r.call(&["ZCOUNT", "z", "(inf", "inf"]), int(0));
        assert_eq!(r.call(&["ZCOUNT", "z", "inf", "inf"]), int(1));
        // Bounds are read by strtod: "" is 0, "1e400" is inf; NaN and trailing junk are not.
        assert_eq!(r.call(&["ZCOUNT", "z", "", "1e400"]), int(5));
        assert_eq!(r.call(&["ZCOUNT", "z", "(", "2"]), int(3));
        for bad in ["nan", "1x", "1 ", "[1", "((1"] {
            assert_eq!(
                r.call(&["ZCOUNT", "z", bad, "1"]),
                error("ERR min or max is not a float"),
                "{bad}"
            );
        }
        assert_eq!(
            r.call(&["ZCOUNT", "none", "x", "1"]),
            error("ERR min or max is not a float")
        );
    });
}

#[test]
fn range_by_rank_with_negative_indexes() {
    on_both_encodings(|r, _| {
        r.call(&["ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d"]);
        assert_eq!(
            r.call(&["ZRANGE", "z", "0", "-1"]),
            bulks(&["a", "b", "c", "d"])
        );
        assert_eq!(r.call(&["ZRANGE", "z", "-2", "100"]), bulks(&["c", "d"]));
        assert_eq!(r.call(&["ZRANGE", "z", "-100", "1"]), bulks(&["a", "b"]));
        assert_eq!(r.call(&["ZRANGE", "z", "2", "1"]), bulks::<&str>(&[]));
        assert_eq!(r.call(&["ZRANGE", "z", "4", "10"]), bulks::<&str>(&[]));
        assert_eq!(
            r.call(&["ZRANGE", "z", "0", "1", "REV", "WITHSCORES"]),
            bulks(&["d", "4", "c", "3"])
        );
        assert_eq!(
            r.call(&["ZREVRANGE", "z", "1", "-1", "WITHSCORES"]),
            bulks(&["c", "3", "b", "2", "a", "1"])
        );
        assert_eq!(
            r.call(&["ZRANGE", "z", "-9223372036854775808", "9223372036854775807"]),
            bulks(&["a", "b", "c", "d"])
        );
        assert_eq!(r.call(&["ZRANGE", "none", "0", "-1"]), arr(vec![]));
        assert_eq!(
            r.call(&["ZRANGE", "z", "a", "1"]),
            error("ERR value is not an integer or out of range")
        );
    });
}

#[test]
fn range_by_score_with_limit_and_rev() {
    on_both_encodings(|r, _| {
        r.call(&[
            "ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e",
        ]);
        assert_eq!(
            r.call(&["ZRANGE", "z", "(1", "4", "BYSCORE"]),
            bulks(&["b", "c", "d"])
        );
        assert_eq!(
            r.call(&[
                "ZRANGE",
                "z",
                "4",
                "(1",
                "BYSCORE",
                "REV",
                "LIMIT",
                "1",
                "2",
                "WITHSCORES"
            ]),
            bulks(&["c", "3", "b", "2"])
        );
        assert_eq!(
            r.call(&["ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "3", "-1"]),
            bulks(&["d", "e"])
        );
        assert_eq!(
            r.call(&["ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "1", "0"]),
            bulks::<&str>(&[])
        );
        // A negative offset skips everything.
        assert_eq!(
            r.call(&["ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "-1", "2"]),
            bulks::<&str>(&[])
        );
        assert_eq!(
            r.call(&[
                "ZRANGEBYSCORE",
                "z",
                "-inf",
                "+inf",
                "LIMIT",
                "9223372036854775807",
                "2"
            ]),
            bulks::<&str>(&[])
        );
        assert_eq!(
            r.call(&[
                "ZREVRANGEBYSCORE",
                "z",
                "+inf",
                "3",
                "WITHSCORES",
                "LIMIT",
                "0",
                "2"
            ]),
            bulks(&["e", "5", "d", "4"])
        );
        assert_eq!(
            r.call(&["ZRANGEBYSCORE", "z", "3", "1"]),
            bulks::<&str>(&[])
        );
    });
}

#[test]
fn range_by_lex() {
    on_both_encodings(|r, _| {
        r.call(&[
            "ZADD", "z", "0", "a", "0", "b", "0", "c", "0", "d", "0", "e", "0", "ee",
        ]);
        assert_eq!(r.call(&["ZRANGEBYLEX", "z", "-", "+"]).len_of(), 6);
        assert_eq!(
            r.call(&["ZRANGEBYLEX", "z", "[b", "(d"]),
            bulks(&["b", "c"])
        );
        assert_eq!(
            r.call(&["ZRANGEBYLEX", "z", "(b", "[e"]),
            bulks(&["c", "d", "e"])
        );
        assert_eq!(
            r.call(&["ZREVRANGEBYLEX", "z", "+", "[d", "LIMIT", "1", "5"]),
            bulks(&["e", "d"])
        );
        assert_eq!(
            r.call(&["ZRANGE", "z", "[e", "-", "BYLEX", "REV"]),
            bulks(&["e", "d", "c", "b", "a"])
        );
        assert_eq!(r.call(&["ZRANGEBYLEX", "z", "+", "-"]), bulks::<&str>(&[]));
        assert_eq!(r.call(&["ZRANGEBYLEX", "z", "[c", "[c"]), bulks(&["c"]));
        assert_eq!(
            r.call(&["ZRANGEBYLEX", "z", "(c", "[c"]),
            bulks::<&str>(&[])
        );
        assert_eq!(r.call(&["ZLEXCOUNT", "z", "[b", "+"]), int(5));
        assert_eq!(r.call(&["ZLEXCOUNT", "z", "-", "(a"]), int(0));
        assert_eq!(r.call(&["ZLEXCOUNT", "none", "-", "+"]), int(0));
        for bad in ["a", "", "+a", "-x"] {
            assert_eq!(
                r.call(&["ZRANGEBYLEX", "z", bad, "+"]),
                error("ERR min or max not valid string range item"),
                "{bad}"
            );
        }
        assert_eq!(
            r.call(&["ZLEXCOUNT", "z", "[a", "b"]),
            error("ERR min or max not valid string range item")
        );
    });
}

/// Over unequal scores the members are not in lex order; Redis leaves the result unspecified,
/// but for a listpack it is its linear walk (first member past the min bound, then members
/// while they pass the max bound), which Tessera reproduces.
#[test]
fn lex_ranges_over_unequal_scores_in_a_listpack() {
    let (_s, mut r) = server();
    r.call(&[
        "ZADD", "z", "1", "b", "2", "a", "3", "d", "4", "c", "5", "e", "6", "aa",
    ]);
    let cases: &[(&[&str], Frame)] = &[
        (&["ZRANGEBYLEX", "z", "[a", "[c"], bulks(&["b", "a"])),
        (&["ZRANGEBYLEX", "z", "[b", "+"], bulks::<&str>(&[])),
        (
            &["ZRANGEBYLEX", "z", "(a", "[d"],
            bulks(&["b", "a", "d", "c"]),
        ),
        (
            &["ZRANGEBYLEX", "z", "(a", "+"],
            bulks(&["b", "a", "d", "c", "e", "aa"]),
        ),
        (
            &["ZRANGEBYLEX", "z", "[a", "+", "LIMIT", "1", "3"],
            bulks(&["a", "d", "c"]),
        ),
        (
            &["ZREVRANGEBYLEX", "z", "[c", "[a"],
            bulks(&["aa", "e", "c", "d", "a", "b"]),
        ),
        (&["ZREVRANGEBYLEX", "z", "+", "[b"], bulks::<&str>(&[])),
        (
            &["ZREVRANGEBYLEX", "z", "[e", "-"],
            bulks(&["aa", "e", "c", "d", "a", "b"]),
        ),
        (&["ZREVRANGEBYLEX", "z", "[aa", "-"], bulks::<&str>(&[])),
        (&["ZREVRANGEBYLEX", "z", "[d", "[b"], bulks::<&str>(&[])),
        (&["ZLEXCOUNT", "z", "[a", "[c"], int(2)),
        (&["ZLEXCOUNT", "z", "[c", "+"], int(0)),
        (&["ZLEXCOUNT", "z", "(a", "(d"], int(2)),
        (&["ZREMRANGEBYLEX", "z", "[c", "[e"], int(0)),
    ];
    for (args, want) in cases {
        assert_eq!(&r.call(args), want, "{args:?}");
    }
    assert_eq!(encoding(&mut r, "z"), "listpack");
    assert_eq!(r.call(&["ZCARD", "z"]), int(6));
}

trait LenOf {
    fn len_of(&self) -> usize;
}

impl LenOf for Frame {
    fn len_of(&self) -> usize {
        match self {
            Frame::Array(v) => v.len(),
            other => panic!("not an array: {}", fmt_frame(other)),
        }
    }
}

#[test]
fn zrange_option_errors() {
    let (_s, mut r) = server();
    r.call(&["ZADD", "z", "1", "a"]);
    let cases: &[(&[&str], &str)] = &[
        (
            &["ZRANGE", "z", "0", "1", "LIMIT", "0", "1"],
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ),
        (
            &["ZRANGE", "z", "[a", "[b", "BYLEX", "WITHSCORES"],
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
        ),
        (
            &["ZRANGEBYLEX", "z", "[a", "[b", "WITHSCORES"],
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
        ),
        (
            &["ZRANGE", "z", "0", "1", "BYSCORE", "BYLEX"],
            "ERR syntax error",
        ),
        (&["ZRANGE", "z", "0", "1", "REV", "REV"], "ERR syntax error"),
        (&["ZRANGEBYSCORE", "z", "0", "1", "REV"], "ERR syntax error"),
        (
            &["ZRANGEBYSCORE", "z", "0", "1", "BYSCORE"],
            "ERR syntax error",
        ),
        (&["ZREVRANGE", "z", "0", "1", "REV"], "ERR syntax error"),
        (&["ZRANGE", "z", "0", "1", "LIMIT", "0"], "ERR syntax error"),
        (
            &["ZRANGE", "z", "0", "1", "BYSCORE", "LIMIT", "x", "1"],
            "ERR value is not an integer or out of range",
        ),
        (
            &["ZRANGESTORE", "d", "z", "0", "1", "WITHSCORES"],
            "ERR syntax error",
        ),
        (
            &["ZRANGE", "z", "x", "1", "BYSCORE"],
            "ERR min or max is not a float",
        ),
        (
            &["ZRANGE", "z", "a", "1", "BYLEX"],
            "ERR min or max not valid string range item",
        ),
    ];
    for (args, want) in cases {
        assert_eq!(r.call(args), error(want), "{args:?}");
    }
    // LIMIT 0 -1 means no limit, so it is accepted even for a rank range.
    assert_eq!(
        r.call(&["ZRANGE", "z", "0", "1", "LIMIT", "0", "-1"]),
        bulks(&["a"])
    );
}

#[test]
fn withscores_are_pairs_in_resp3() {
    let s = TestServer::start();
    let mut r3 = resp3(&s);
    r3.call(&["ZADD", "z", "1", "a", "2.5", "b"]);
    let pairs = arr(vec![
        arr(vec![bulk("a"), dbl("1")]),
        arr(vec![bulk("b"), dbl("2.5")]),
    ]);
    assert_eq!(r3.call(&["ZRANGE", "z", "0", "-1", "WITHSCORES"]), pairs);
    assert_eq!(
        r3.call(&["ZRANGEBYSCORE", "z", "-inf", "inf", "WITHSCORES"]),
        pairs
    );
    assert_eq!(r3.call(&["ZUNION", "1", "z", "WITHSCORES"]), pairs);
    assert_eq!(r3.call(&["ZRANGE", "z", "0", "-1"]), bulks(&["a", "b"]));
    // ZPOPMIN without a count is flat, with a count it is pairs.
    assert_eq!(r3.call(&["ZPOPMIN", "z"]), arr(vec![bulk("a"), dbl("1")]));
    assert_eq!(
        r3.call(&["ZPOPMAX", "z", "5"]),
        arr(vec![arr(vec![bulk("b"), dbl("2.5")])])
    );
    r3.call(&["ZADD", "z", "1", "a"]);
    assert_eq!(
        r3.call(&["BZPOPMIN", "z", "0"]),
        arr(vec![bulk("z"), bulk("a"), dbl("1")])
    );
    assert_eq!(r3.call(&["BZPOPMIN", "z", "0.01"]), Frame::Null);
    assert_eq!(r3.call(&["ZMPOP", "1", "z", "MIN"]), Frame::Null);
}

// ---- removal ---------------------------------------------------------------------------------------

#[test]
fn zrem_and_ranges_delete_the_key_when_empty() {
    on_both_encodings(|r, _| {
        r.call(&[
            "ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e", "6", "f",
        ]);
        assert_eq!(r.call(&["ZREM", "z", "a", "nope", "a"]), int(1));
        assert_eq!(r.call(&["ZREMRANGEBYRANK", "z", "-2", "-1"]), int(2));
        assert_eq!(r.call(&["ZREMRANGEBYRANK", "z", "5", "10"]), int(0));
        assert_eq!(r.call(&["ZREMRANGEBYSCORE", "z", "(2", "3"]), int(1));
        assert_eq!(all(r, "z"), bulks(&["b", "2", "d", "4"]));
        assert_eq!(r.call(&["ZREMRANGEBYSCORE", "z", "-inf", "+inf"]), int(2));
        assert_eq!(r.call(&["EXISTS", "z"]), int(0));
        r.call(&["ZADD", "l", "0", "a", "0", "b", "0", "c"]);
        assert_eq!(r.call(&["ZREMRANGEBYLEX", "l", "(a", "+"]), int(2));
        assert_eq!(r.call(&["ZREM", "l", "a", "b"]), int(1));
        assert_eq!(r.call(&["EXISTS", "l"]), int(0));
        assert_eq!(r.call(&["ZREM", "none", "a"]), int(0));
        assert_eq!(r.call(&["ZREMRANGEBYRANK", "none", "0", "-1"]), int(0));
        assert_eq!(
            r.call(&["ZREMRANGEBYRANK", "z", "x", "1"]),
            error("ERR value is not an integer or out of range")
        );
        assert_eq!(
            r.call(&["ZREMRANGEBYSCORE", "z", "x", "1"]),
            error("ERR min or max is not a float")
        );
        assert_eq!(
            r.call(&["ZREMRANGEBYLEX", "z", "x", "+"]),
            error("ERR min or max not valid string range item")
        );
    });
}

#[test]
fn zpop_and_zmpop() {
    on_both_encodings(|r, _| {
        r.call(&["ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d"]);
        assert_eq!(r.call(&["ZPOPMIN", "z"]), bulks(&["a", "1"]));
        assert_eq!(r.call(&["ZPOPMAX", "z", "2"]), bulks(&["d", "4", "c", "3"]));
        assert_eq!(r.call(&["ZPOPMAX", "z", "0"]), arr(vec![]));
        assert_eq!(r.call(&["ZPOPMIN", "z", "10"]), bulks(&["b", "2"]));
        assert_eq!(r.call(&["EXISTS", "z"]), int(0));
        assert_eq!(r.call(&["ZPOPMIN", "z"]), arr(vec![]));
        assert_eq!(
            r.call(&["ZPOPMIN", "z", "-1"]),
            error("ERR value is out of range, must be positive")
        );
        assert_eq!(
            r.call(&["ZPOPMIN", "z", "1", "2"]),
            error("ERR syntax error")
        );
        r.call(&["ZADD", "y", "1", "a", "2", "b", "3", "c"]);
        assert_eq!(
            r.call(&["ZMPOP", "2", "none", "y", "MAX", "COUNT", "2"]),
            arr(vec![
                bulk("y"),
                arr(vec![bulks(&["c", "3"]), bulks(&["b", "2"])])
            ])
        );
        assert_eq!(
            r.call(&["ZMPOP", "1", "y", "min", "count", "10"]),
            arr(vec![bulk("y"), arr(vec![bulks(&["a", "1"])])])
        );
        assert_eq!(r.call(&["ZMPOP", "1", "y", "MIN"]), Frame::NullArray);
        let errs: &[(&[&str], &str)] = &[
            (
                &["ZMPOP", "0", "y", "MIN"],
                "ERR numkeys should be greater than 0",
            ),
            (
                &["ZMPOP", "x", "y", "MIN"],
                "ERR numkeys should be greater than 0",
            ),
            (&["ZMPOP", "2", "y", "MIN"], "ERR syntax error"),
            (&["ZMPOP", "1", "y", "LEFT"], "ERR syntax error"),
            (
                &["ZMPOP", "1", "y", "MIN", "COUNT", "0"],
                "ERR count should be greater than 0",
            ),
            (
                &["ZMPOP", "1", "y", "MIN", "COUNT", "1", "COUNT", "1"],
                "ERR syntax error",
            ),
            (&["ZMPOP", "1", "y", "MIN", "COUNT"], "ERR syntax error"),
        ];
        for (args, want) in errs {
            assert_eq!(r.call(args), error(want), "{args:?}");
        }
    });
}

// ---- ZRANDMEMBER ------------------------------------------------------------------------------------

#[test]
fn zrandmember_counts() {
    on_both_encodings(|r, _| {
        let members: Vec<String> = (0..20).map(|i| format!("m{i}")).collect();
        let mut args = vec!["ZADD".to_string(), "z".to_string()];
        for (i, m) in members.iter().enumerate() {
            args.push(i.to_string());
            args.push(m.clone());
        }
        r.call(&args);
        let set: HashSet<Vec<u8>> = members.iter().map(|m| m.as_bytes().to_vec()).collect();
        let names = |f: Frame| -> Vec<Vec<u8>> {
            match f {
                Frame::Array(v) => v
                    .into_iter()
                    .map(|x| match x {
                        Frame::Bulk(b) => b,
                        o => panic!("{}", fmt_frame(&o)),
                    })
                    .collect(),
                o => panic!("{}", fmt_frame(&o)),
            }
        };
        // One member.
        match r.call(&["ZRANDMEMBER", "z"]) {
            Frame::Bulk(b) => assert!(set.contains(&b)),
            o => panic!("{}", fmt_frame(&o)),
        }
        // Distinct members for a positive count.
        for n in [1, 5, 19] {
            let got = names(r.call(&["ZRANDMEMBER", "z", &n.to_string()]));
            assert_eq!(got.len(), n);
            assert_eq!(got.iter().collect::<HashSet<_>>().len(), n);
            assert!(got.iter().all(|m| set.contains(m)));
        }
        // The whole set when asking for more: highest score first.
        let got = names(r.call(&["ZRANDMEMBER", "z", "100"]));
        let mut want: Vec<Vec<u8>> = members.iter().map(|m| m.as_bytes().to_vec()).collect();
        want.reverse();
        assert_eq!(got, want);
        // Repeats allowed for a negative count.
        let got = names(r.call(&["ZRANDMEMBER", "z", "-50"]));
        assert_eq!(got.len(), 50);
        assert!(got.iter().all(|m| set.contains(m)));
        // With scores: each member with its own score.
        let got = names(r.call(&["ZRANDMEMBER", "z", "-30", "WITHSCORES"]));
        assert_eq!(got.len(), 60);
        for p in got.chunks(2) {
            let m = String::from_utf8(p[0].clone()).unwrap();
            let i: usize = m[1..].parse().unwrap();
            assert_eq!(p[1], i.to_string().into_bytes());
        }
        assert_eq!(r.call(&["ZRANDMEMBER", "z", "0"]), arr(vec![]));
        assert_eq!(r.call(&["ZRANDMEMBER", "none"]), Frame::NullBulk);
        assert_eq!(r.call(&["ZRANDMEMBER", "none", "5"]), arr(vec![]));
        let errs: &[(&[&str], &str)] = &[
            (&["ZRANDMEMBER", "z", "x"], "ERR value is not an integer or out of range"),
            (&["ZRANDMEMBER", "z", "-9223372036854775808"], "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"),
            (&["ZRANDMEMBER", "z", "9223372036854775807", "WITHSCORES"], "ERR value is out of range"),
            (&["ZRANDMEMBER", "z", "1", "WITHSCORE"], "ERR syntax error"),
            (&["ZRANDMEMBER", "z", "1", "WITHSCORES", "x"], "ERR syntax error"),
        ];
        for (args, want) in errs {
            assert_eq!(r.call(args), error(want), "{args:?}");
        }
    });
}

// ---- set operations -----------------------------------------------------------------------------------

#[test]
fn union_inter_diff_with_weights_and_aggregates() {
    on_both_encodings(|r, _| {
        r.call(&["ZADD", "a", "1", "x", "2", "y", "3", "z"]);
        r.call(&["ZADD", "b", "10", "y", "20", "z", "30", "w"]);
        assert_eq!(
            r.call(&["ZUNION", "2", "a", "b", "WITHSCORES"]),
            bulks(&["x", "1", "y", "12", "z", "23", "w", "30"])
        );
        assert_eq!(
            r.call(&[
                "ZUNION",
                "2",
                "a",
                "b",
                "WEIGHTS",
                "2",
                "0.5",
                "AGGREGATE",
                "MAX",
                "WITHSCORES"
            ]),
            bulks(&["x", "2", "y", "5", "z", "10", "w", "15"])
        );
        assert_eq!(
            r.call(&["ZINTER", "2", "a", "b", "AGGREGATE", "MIN", "WITHSCORES"]),
            bulks(&["y", "2", "z", "3"])
        );
        assert_eq!(r.call(&["ZINTER", "3", "a", "b", "none"]), arr(vec![]));
        assert_eq!(
            r.call(&["ZDIFF", "2", "a", "b", "WITHSCORES"]),
            bulks(&["x", "1"])
        );
        assert_eq!(r.call(&["ZDIFF", "2", "none", "b"]), arr(vec![]));
        assert_eq!(r.call(&["ZUNIONSTORE", "d", "2", "a", "b"]), int(4));
        assert_eq!(
            all(r, "d"),
            bulks(&["x", "1", "y", "12", "z", "23", "w", "30"])
        );
        assert_eq!(
            r.call(&["ZINTERSTORE", "d", "2", "a", "b", "WEIGHTS", "1", "-1"]),
            int(2)
        );
        assert_eq!(all(r, "d"), bulks(&["z", "-17", "y", "-8"]));
        assert_eq!(r.call(&["ZDIFFSTORE", "d", "2", "a", "a"]), int(0));
        assert_eq!(r.call(&["EXISTS", "d"]), int(0));
        // The destination may be an input; its TTL goes.
        r.call(&["EXPIRE", "a", "1000"]);
        assert_eq!(r.call(&["ZUNIONSTORE", "a", "2", "a", "a"]), int(3));
        assert_eq!(all(r, "a"), bulks(&["x", "2", "y", "4", "z", "6"]));
        assert_eq!(r.call(&["TTL", "a"]), int(-1));
        assert_eq!(r.call(&["ZINTERCARD", "2", "a", "b"]), int(2));
        assert_eq!(r.call(&["ZINTERCARD", "2", "a", "b", "LIMIT", "1"]), int(1));
        assert_eq!(r.call(&["ZINTERCARD", "2", "a", "b", "LIMIT", "0"]), int(2));
    });
}

#[test]
fn infinities_times_zero_are_zero() {
    let (_s, mut r) = server();
    r.call(&["ZADD", "i", "inf", "p", "-inf", "n", "1", "one"]);
    assert_eq!(
        r.call(&["ZUNION", "1", "i", "WEIGHTS", "0", "WITHSCORES"]),
        bulks(&["n", "0", "one", "0", "p", "0"])
    );
    // inf + -inf is 0 too.
    assert_eq!(
        r.call(&["ZUNION", "2", "i", "i", "WEIGHTS", "1", "-1", "WITHSCORES"]),
        bulks(&["n", "0", "one", "0", "p", "0"])
    );
    assert_eq!(
        r.call(&[
            "ZINTER",
            "2",
            "i",
            "i",
            "WEIGHTS",
            "1",
            "0",
            "AGGREGATE",
            "MAX",
            "WITHSCORES"
        ]),
        bulks(&["n", "-inf", "one", "1", "p", "inf"])
    );
    assert_eq!(
        r.call(&["ZINTER", "2", "i", "i", "WEIGHTS", "1", "0", "WITHSCORES"]),
        bulks(&["n", "0", "p", "0", "one", "1"])
    );
}

#[test]
fn set_operation_errors() {
    let (_s, mut r) = server();
    r.call(&["ZADD", "z", "1", "a"]);
    r.call(&["SET", "s", "x"]);
    let errs: &[(&[&str], &str)] = &[
        (
            &["ZUNION", "0", "z"],
            "ERR at least 1 input key is needed for 'zunion' command",
        ),
        (
            &["ZINTERSTORE", "d", "0", "z"],
            "ERR at least 1 input key is needed for 'zinterstore' command",
        ),
        (
            &["ZINTERCARD", "0", "z"],
            "ERR at least 1 input key is needed for 'zintercard' command",
        ),
        (
            &["ZUNION", "x", "z"],
            "ERR value is not an integer or out of range",
        ),
        (&["ZUNION", "2", "z"], "ERR syntax error"),
        (&["ZUNION", "1", "z", "WEIGHTS"], "ERR syntax error"),
        (
            &["ZUNION", "1", "z", "WEIGHTS", "x"],
            "ERR weight value is not a float",
        ),
        (
            &["ZUNION", "1", "z", "AGGREGATE", "AVG"],
            "ERR syntax error",
        ),
        (
            &["ZUNIONSTORE", "d", "1", "z", "WITHSCORES"],
            "ERR syntax error",
        ),
        (&["ZDIFF", "1", "z", "WEIGHTS", "1"], "ERR syntax error"),
        (&["ZINTERCARD", "1", "z", "WITHSCORES"], "ERR syntax error"),
        (
            &["ZINTERCARD", "1", "z", "LIMIT", "-1"],
            "ERR LIMIT can't be negative",
        ),
        (
            &["ZINTERCARD", "1", "z", "LIMIT", "x"],
            "ERR LIMIT can't be negative",
        ),
        // The inputs' types are checked before the options.
        (
            &["ZUNION", "2", "z", "s", "WEIGHTS", "x"],
            "WRONGTYPE Operation against a key holding the wrong kind of value",
        ),
    ];
    for (args, want) in errs {
        assert_eq!(r.call(args), error(want), "{args:?}");
    }
}

// ---- ZRANGESTORE and encodings -----------------------------------------------------------------------

#[test]
fn zrangestore_stores_or_deletes() {
    on_both_encodings(|r, _| {
        r.call(&["ZADD", "z", "1", "a", "2", "b", "3", "c"]);
        assert_eq!(r.call(&["ZRANGESTORE", "d", "z", "0", "1"]), int(2));
        assert_eq!(all(r, "d"), bulks(&["a", "1", "b", "2"]));
        assert_eq!(
            r.call(&[
                "ZRANGESTORE",
                "d",
                "z",
                "+inf",
                "(1",
                "BYSCORE",
                "REV",
                "LIMIT",
                "0",
                "1"
            ]),
            int(1)
        );
        assert_eq!(all(r, "d"), bulks(&["c", "3"]));
        assert_eq!(r.call(&["ZRANGESTORE", "d", "z", "5", "10"]), int(0));
        assert_eq!(r.call(&["EXISTS", "d"]), int(0));
        r.call(&["SET", "d", "x"]);
        assert_eq!(r.call(&["ZRANGESTORE", "d", "none", "0", "-1"]), int(0));
        assert_eq!(r.call(&["EXISTS", "d"]), int(0));
    });
}

#[test]
fn encodings_convert_at_the_configured_thresholds() {
    let (_s, mut r) = server();
    r.call(&["CONFIG", "SET", "zset-max-listpack-entries", "4"]);
    r.call(&["CONFIG", "SET", "zset-max-listpack-value", "8"]);
    r.call(&["ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d"]);
    assert_eq!(encoding(&mut r, "z"), "listpack");
    r.call(&["ZADD", "z", "5", "e"]);
    assert_eq!(encoding(&mut r, "z"), "skiplist");
    // Removing members never converts back.
    r.call(&["ZREM", "z", "a", "b", "c"]);
    assert_eq!(encoding(&mut r, "z"), "skiplist");
    assert_eq!(all(&mut r, "z"), bulks(&["d", "4", "e", "5"]));
    // A long member converts too; ZADD on a new key looks at the first member only to start.
    r.call(&["ZADD", "l", "1", "123456789"]);
    assert_eq!(encoding(&mut r, "l"), "skiplist");
    r.call(&["ZADD", "l2", "1", "a", "2", "123456789"]);
    assert_eq!(encoding(&mut r, "l2"), "skiplist");
    r.call(&[
        "ZADD", "l3", "1", "a", "1", "a", "1", "a", "1", "a", "1", "a",
    ]);
    assert_eq!(encoding(&mut r, "l3"), "listpack");
    // Stored results are compact again when small enough.
    assert_eq!(r.call(&["ZRANGESTORE", "s", "z", "0", "-1"]), int(2));
    assert_eq!(encoding(&mut r, "s"), "listpack");
    assert_eq!(r.call(&["ZUNIONSTORE", "u", "1", "z"]), int(2));
    assert_eq!(encoding(&mut r, "u"), "listpack");
    r.call(&["ZADD", "z", "6", "f", "7", "g", "8", "h"]);
    assert_eq!(r.call(&["ZINTERSTORE", "u", "1", "z"]), int(5));
    assert_eq!(encoding(&mut r, "u"), "skiplist");
    // entries 0: everything is a skiplist.
    r.call(&["CONFIG", "SET", "zset-max-listpack-entries", "0"]);
    r.call(&["ZADD", "zero", "1", "a"]);
    assert_eq!(encoding(&mut r, "zero"), "skiplist");
    assert_eq!(r.call(&["ZDIFFSTORE", "dz", "1", "zero"]), int(1));
    assert_eq!(encoding(&mut r, "dz"), "skiplist");
    // 128 entries by default: the 129th converts.
    r.call(&["CONFIG", "SET", "zset-max-listpack-entries", "128"]);
    r.call(&["CONFIG", "SET", "zset-max-listpack-value", "64"]);
    for i in 0..128 {
        r.call(&["ZADD", "big", &i.to_string(), &format!("m{i}")]);
    }
    assert_eq!(encoding(&mut r, "big"), "listpack");
    r.call(&["ZADD", "big", "1000", "last"]);
    assert_eq!(encoding(&mut r, "big"), "skiplist");
    assert_eq!(r.call(&["ZCARD", "big"]), int(129));
    assert_eq!(r.call(&["ZRANK", "big", "last"]), int(128));
    assert_eq!(r.call(&["ZSCORE", "big", "m77"]), bulk("77"));
}

#[test]
fn wrong_type_everywhere() {
    let (_s, mut r) = server();
    r.call(&["SET", "s", "x"]);
    let wt = error("WRONGTYPE Operation against a key holding the wrong kind of value");
    let cmds: &[&[&str]] = &[
        &["ZADD", "s", "1", "a"],
        &["ZINCRBY", "s", "1", "a"],
        &["ZSCORE", "s", "a"],
        &["ZMSCORE", "s", "a"],
        &["ZCARD", "s"],
        &["ZCOUNT", "s", "0", "1"],
        &["ZLEXCOUNT", "s", "-", "+"],
        &["ZRANK", "s", "a"],
        &["ZREVRANK", "s", "a"],
        &["ZRANGE", "s", "0", "1"],
        &["ZRANGESTORE", "d", "s", "0", "1"],
        &["ZRANGEBYSCORE", "s", "0", "1"],
        &["ZREVRANGEBYSCORE", "s", "1", "0"],
        &["ZRANGEBYLEX", "s", "-", "+"],
        &["ZREVRANGEBYLEX", "s", "+", "-"],
        &["ZREVRANGE", "s", "0", "1"],
        &["ZREM", "s", "a"],
        &["ZREMRANGEBYRANK", "s", "0", "1"],
        &["ZREMRANGEBYSCORE", "s", "0", "1"],
        &["ZREMRANGEBYLEX", "s", "-", "+"],
        &["ZPOPMIN", "s"],
        &["ZPOPMAX", "s", "0"],
        &["BZPOPMIN", "s", "0"],
        &["BZPOPMAX", "none", "s", "0"],
        &["ZMPOP", "1", "s", "MIN"],
        &["BZMPOP", "0", "1", "s", "MAX"],
        &["ZRANDMEMBER", "s"],
        &["ZRANDMEMBER", "s", "0"],
        &["ZUNION", "1", "s"],
        &["ZINTER", "1", "s"],
        &["ZDIFF", "1", "s"],
        &["ZUNIONSTORE", "d", "1", "s"],
        &["ZINTERSTORE", "d", "1", "s"],
        &["ZDIFFSTORE", "d", "1", "s"],
        &["ZINTERCARD", "1", "s"],
        &["ZSCAN", "s", "0"],
    ];
    for c in cmds {
        assert_eq!(r.call(c), wt, "{c:?}");
    }
    assert_eq!(r.call(&["GET", "s"]), bulk("x"));
    assert_eq!(r.call(&["EXISTS", "d"]), int(0));
}

#[test]
fn keyspace_commands_see_sorted_sets() {
    on_both_encodings(|r, enc| {
        r.call(&["ZADD", "z", "1", "a", "2", "b"]);
        assert_eq!(r.call(&["TYPE", "z"]), Frame::Simple(b"zset".to_vec()));
        assert_eq!(r.call(&["COPY", "z", "c"]), int(1));
        assert_eq!(encoding(r, "c"), enc);
        r.call(&["ZADD", "c", "3", "c"]);
        assert_eq!(r.call(&["ZCARD", "z"]), int(2));
        assert_eq!(r.call(&["RENAME", "c", "d"]), ok());
        assert_eq!(all(r, "d"), bulks(&["a", "1", "b", "2", "c", "3"]));
        assert_eq!(
            r.call(&["SCAN", "0", "TYPE", "zset", "COUNT", "1000"])
                .len_of(),
            2
        );
        assert_eq!(r.call(&["DEL", "z", "d"]), int(2));
    });
}

// ---- ZSCAN ------------------------------------------------------------------------------------------------

/// Scans a key to the end, returning member → score and the number of calls.
fn scan_all(r: &mut RawClient, key: &str, extra: &[&str]) -> (BTreeMap<Vec<u8>, Vec<u8>>, usize) {
    let mut cursor = "0".to_string();
    let mut seen = BTreeMap::new();
    let mut calls = 0;
    loop {
        let mut args = vec!["ZSCAN", key, &cursor];
        args.extend_from_slice(extra);
        let reply = r.call(&args);
        calls += 1;
        let Frame::Array(parts) = reply else {
            panic!("{}", fmt_frame(&reply))
        };
        let (Frame::Bulk(next), Frame::Array(items)) = (&parts[0], &parts[1]) else {
            panic!("malformed")
        };
        for p in items.chunks(2) {
            if let (Frame::Bulk(m), Frame::Bulk(s)) = (&p[0], &p[1]) {
                seen.insert(m.clone(), s.clone());
            }
        }
        cursor = String::from_utf8(next.clone()).unwrap();
        if cursor == "0" {
            return (seen, calls);
        }
        assert!(calls < 100_000, "scan does not end");
    }
}

#[test]
fn zscan_iterates_everything_in_both_encodings() {
    let (_s, mut r) = server();
    r.call(&["ZADD", "small", "1", "a", "2", "b"]);
    let (seen, calls) = scan_all(&mut r, "small", &["COUNT", "1"]);
    assert_eq!(calls, 1);
    assert_eq!(seen.len(), 2);
    let mut args = vec!["ZADD".to_string(), "big".to_string()];
    for i in 0..1000 {
        args.push(format!("{}.5", i));
        args.push(format!("m{i}"));
    }
    r.call(&args);
    let (seen, calls) = scan_all(&mut r, "big", &[]);
    assert_eq!(seen.len(), 1000);
    assert!(calls > 1);
    assert_eq!(seen.get(&b"m7"[..]), Some(&b"7.5".to_vec()));
    let (seen, _) = scan_all(&mut r, "big", &["MATCH", "m1*", "COUNT", "50"]);
    assert_eq!(seen.len(), 111);
    assert_eq!(
        r.call(&["ZSCAN", "none", "0"]),
        arr(vec![bulk("0"), arr(vec![])])
    );
    assert_eq!(r.call(&["ZSCAN", "big", "x"]), error("ERR invalid cursor"));
    assert_eq!(
        r.call(&["ZSCAN", "big", "0", "COUNT", "0"]),
        error("ERR syntax error")
    );
    assert_eq!(
        r.call(&["ZSCAN", "big", "0", "TYPE", "zset"]),
        error("ERR syntax error")
    );
    // A missing key answers before its options are looked at.
    assert_eq!(
        r.call(&["ZSCAN", "none", "0", "COUNT", "0"]),
        arr(vec![bulk("0"), arr(vec![])])
    );
}

#[test]
fn zscan_returns_members_present_throughout_despite_changes() {
    let (_s, mut r) = server();
    let mut args = vec!["ZADD".to_string(), "z".to_string()];
    for i in 0..2000 {
        args.push(i.to_string());
        args.push(format!("keep{i}"));
    }
    r.call(&args);
    let mut cursor = "0".to_string();
    let mut seen = HashSet::new();
    let mut round = 0;
    loop {
        let reply = r.call(&["ZSCAN", "z", &cursor, "COUNT", "20"]);
        let Frame::Array(parts) = reply else { panic!() };
        if let Frame::Array(items) = &parts[1] {
            for p in items.chunks(2) {
                if let Frame::Bulk(m) = &p[0] {
                    seen.insert(m.clone());
                }
            }
        }
        // Grow and shrink the set while scanning (forcing hash table resizes).
        round += 1;
        if round % 3 == 0 {
            let mut add = vec!["ZADD".to_string(), "z".to_string()];
            for j in 0..300 {
                add.push("1".into());
                add.push(format!("tmp{round}_{j}"));
            }
            r.call(&add);
        } else if round % 3 == 1 {
            r.call(&["ZREMRANGEBYSCORE", "z", "1", "1"]);
        }
        let Frame::Bulk(next) = &parts[0] else {
            panic!()
        };
        cursor = String::from_utf8(next.clone()).unwrap();
        if cursor == "0" {
            break;
        }
    }
    for i in 0..2000 {
        if i == 1 {
            continue; // removed along with the temporary members
        }
        assert!(
            seen.contains(format!("keep{i}").as_bytes()),
            "keep{i} missing"
        );
    }
}

// ---- a large set against a model ---------------------------------------------------------------------

#[test]
fn large_set_matches_a_model() {
    let (_s, mut r) = server();
    // A deterministic pseudo-random walk: adds, updates, removals, range removals.
    let mut model: BTreeMap<String, i64> = BTreeMap::new();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for round in 0..40 {
        let mut add = vec!["ZADD".to_string(), "z".to_string()];
        for _ in 0..250 {
            let m = format!("m{}", next() % 5000);
            let s = (next() % 1000) as i64 - 500;
            add.push(s.to_string());
            add.push(m.clone());
            model.insert(m, s);
        }
        r.call(&add);
        let mut rem = vec!["ZREM".to_string(), "z".to_string()];
        for _ in 0..60 {
            let m = format!("m{}", next() % 5000);
            model.remove(&m);
            rem.push(m);
        }
        r.call(&rem);
        if round % 10 == 9 {
            let lo = (next() % 400) as i64 - 500;
            r.call(&[
                "ZREMRANGEBYSCORE",
                "z",
                &lo.to_string(),
                &(lo + 20).to_string(),
            ]);
            model.retain(|_, s| *s < lo || *s > lo + 20);
        }
    }
    let mut sorted: Vec<(&String, &i64)> = model.iter().collect();
    sorted.sort_by(|a, b| a.1.cmp(b.1).then(a.0.cmp(b.0)));
    assert_eq!(r.call(&["ZCARD", "z"]), int(sorted.len() as i64));
    assert_eq!(encoding(&mut r, "z"), "skiplist");
    let mut want = Vec::new();
    for (m, s) in &sorted {
        want.push(bulk(m.as_bytes()));
        want.push(bulk(s.to_string()));
    }
    assert_eq!(all(&mut r, "z"), arr(want));
    for (i, (m, _)) in sorted.iter().enumerate().step_by(97) {
        assert_eq!(r.call(&["ZRANK", "z", m]), int(i as i64));
        assert_eq!(
            r.call(&["ZRANGE", "z", &i.to_string(), &i.to_string()]),
            bulks(&[m.as_bytes()])
        );
    }
    let in_range = sorted
        .iter()
        .filter(|(_, s)| (-100..=100).contains(*s))
        .count();
    assert_eq!(
        r.call(&["ZCOUNT", "z", "-100", "100"]),
        int(in_range as i64)
    );
    let n = sorted.len() as i64;
    assert_eq!(r.call(&["ZREMRANGEBYRANK", "z", "10", "-11"]), int(n - 20));
    assert_eq!(r.call(&["ZCARD", "z"]), int(20));
}

// ---- blocking ------------------------------------------------------------------------------------------

fn client_id(r: &mut RawClient) -> i64 {
    match r.call(&["CLIENT", "ID"]) {
        Frame::Integer(id) => id,
        other => panic!("CLIENT ID answered {}", fmt_frame(&other)),
    }
}

/// A new connection that sent a blocking command, once the server has run it.
fn block(s: &TestServer, admin: &mut RawClient, args: &[&str]) -> RawClient {
    let mut r = s.raw();
    let id = client_id(&mut r);
    r.send(args);
    let name = args[0].to_ascii_lowercase();
    let ok = wait_until(Duration::from_secs(10), || {
        match admin.call(&["CLIENT", "LIST", "ID", &id.to_string()]) {
            Frame::Bulk(b) => String::from_utf8_lossy(&b).contains(&format!("cmd={name} ")),
            _ => false,
        }
    });
    assert!(ok, "client {id} never ran {name}");
    r
}

#[test]
fn bzpop_serves_at_once_from_the_first_non_empty_key() {
    let (_s, mut r) = server();
    r.call(&["ZADD", "b", "1", "x", "2", "y"]);
    r.call(&["ZADD", "c", "5", "z"]);
    assert_eq!(
        r.call(&["BZPOPMIN", "a", "c", "b", "0"]),
        bulks(&["c", "z", "5"])
    );
    assert_eq!(
        r.call(&["BZPOPMAX", "a", "c", "b", "0"]),
        bulks(&["b", "y", "2"])
    );
    assert_eq!(
        r.call(&["BZMPOP", "0", "2", "a", "b", "MIN", "COUNT", "5"]),
        arr(vec![bulk("b"), arr(vec![bulks(&["x", "1"])])])
    );
    assert_eq!(r.call(&["EXISTS", "b", "c"]), int(0));
    let errs: &[(&[&str], &str)] = &[
        (&["BZPOPMIN", "a", "-1"], "ERR timeout is negative"),
        (
            &["BZPOPMIN", "a", "x"],
            "ERR timeout is not a float or out of range",
        ),
        (
            &["BZMPOP", "x", "0", "a", "MIN"],
            "ERR numkeys should be greater than 0",
        ),
        (
            &["BZMPOP", "-1", "1", "a", "MIN"],
            "ERR timeout is negative",
        ),
        (&["BZMPOP", "0", "1", "a", "UP"], "ERR syntax error"),
    ];
    for (args, want) in errs {
        assert_eq!(r.call(args), error(want), "{args:?}");
    }
}

#[test]
fn bzpop_times_out_with_a_null_array() {
    let s = TestServer::start();
    let mut r = s.raw();
    let t = Instant::now();
    assert_eq!(r.call(&["BZPOPMIN", "k", "0.3"]), Frame::NullArray);
    let e = t.elapsed();
    assert!(e >= Duration::from_millis(250), "returned after {e:?}");
    assert!(e < Duration::from_secs(10), "returned after {e:?}");
    assert_eq!(
        r.call(&["BZMPOP", "0.1", "2", "k", "k2", "MAX"]),
        Frame::NullArray
    );
    let mut r3 = resp3(&s);
    assert_eq!(r3.call(&["BZPOPMAX", "k", "0.1"]), Frame::Null);
    assert_eq!(r.call(&["PING"]), Frame::Simple(b"PONG".to_vec()));
}

#[test]
fn zadd_wakes_blocked_clients_in_arrival_order() {
    let s = TestServer::start();
    let mut admin = s.raw();
    let mut waiters: Vec<RawClient> = (0..3)
        .map(|_| block(&s, &mut admin, &["BZPOPMIN", "q", "30"]))
        .collect();
    assert_eq!(admin.call(&["ZADD", "q", "5", "first"]), int(1));
    assert_eq!(waiters[0].read_frame(), bulks(&["q", "first", "5"]));
    // Two members: the next two waiters get one each, lowest score first.
    assert_eq!(admin.call(&["ZADD", "q", "2", "b", "1", "a"]), int(2));
    assert_eq!(waiters[1].read_frame(), bulks(&["q", "a", "1"]));
    assert_eq!(waiters[2].read_frame(), bulks(&["q", "b", "2"]));
    assert_eq!(admin.call(&["EXISTS", "q"]), int(0));
}

#[test]
fn blocked_clients_on_several_keys_and_stores() {
    let s = TestServer::start();
    let mut admin = s.raw();
    let mut w = block(&s, &mut admin, &["BZPOPMAX", "k1", "k2", "k3", "30"]);
    admin.call(&["ZINCRBY", "k2", "7", "m"]);
    assert_eq!(w.read_frame(), bulks(&["k2", "m", "7"]));
    let mut w = block(
        &s,
        &mut admin,
        &["BZMPOP", "30", "2", "m1", "m2", "MAX", "COUNT", "2"],
    );
    admin.call(&["ZADD", "src", "1", "a", "2", "b", "3", "c"]);
    // A store into a key someone waits on serves them.
    assert_eq!(admin.call(&["ZUNIONSTORE", "m2", "1", "src"]), int(3));
    assert_eq!(
        w.read_frame(),
        arr(vec![
            bulk("m2"),
            arr(vec![bulks(&["c", "3"]), bulks(&["b", "2"])])
        ])
    );
    assert_eq!(all(&mut admin, "m2"), bulks(&["a", "1"]));
    let mut w = block(&s, &mut admin, &["BZPOPMIN", "r", "30"]);
    assert_eq!(admin.call(&["ZRANGESTORE", "r", "src", "0", "0"]), int(1));
    assert_eq!(w.read_frame(), bulks(&["r", "a", "1"]));
}

#[test]
fn a_blocked_client_that_disconnects_is_skipped() {
    let s = TestServer::start();
    let mut admin = s.raw();
    let mut gone = block(&s, &mut admin, &["BZPOPMIN", "k", "0"]);
    let gone_id = client_id_of_blocked(&mut admin, &mut gone);
    let mut stays = block(&s, &mut admin, &["BZPOPMIN", "k", "0"]);
    drop(gone);
    let ok = wait_until(Duration::from_secs(10), || {
        match admin.call(&["CLIENT", "LIST", "ID", &gone_id.to_string()]) {
            Frame::Bulk(b) => b.is_empty(),
            _ => false,
        }
    });
    assert!(ok, "the disconnected client is still listed");
    admin.call(&["ZADD", "k", "1", "only"]);
    assert_eq!(stays.read_frame(), bulks(&["k", "only", "1"]));
    assert_eq!(admin.call(&["EXISTS", "k"]), int(0));
    // Nobody waits any more: the next member stays.
    admin.call(&["ZADD", "k", "2", "later"]);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(admin.call(&["ZCARD", "k"]), int(1));
}

/// The id of a client blocked by [`block`]: the newest client running a blocking pop.
fn client_id_of_blocked(admin: &mut RawClient, _c: &mut RawClient) -> i64 {
    let Frame::Bulk(list) = admin.call(&["CLIENT", "LIST"]) else {
        panic!("CLIENT LIST")
    };
    String::from_utf8_lossy(&list)
        .lines()
        .filter(|l| l.contains("cmd=bzpopmin "))
        .filter_map(|l| l.strip_prefix("id=")?.split(' ').next()?.parse().ok())
        .max()
        .expect("a blocked client")
}

#[test]
fn blocked_clients_on_many_connections_are_served_in_order() {
    let s = TestServer::start();
    let mut admin = s.raw();
    let n = 8;
    let waiters: Vec<RawClient> = (0..n)
        .map(|_| block(&s, &mut admin, &["BZPOPMIN", "many", "30"]))
        .collect();
    let mut add = vec!["ZADD".to_string(), "many".to_string()];
    for i in (0..n).rev() {
        add.push(i.to_string());
        add.push(format!("m{i}"));
    }
    admin.call(&add);
    // Each connection is read on its own thread; the i-th to block gets the i-th lowest.
    let handles: Vec<_> = waiters
        .into_iter()
        .map(|mut w| std::thread::spawn(move || w.read_frame()))
        .collect();
    for (i, h) in handles.into_iter().enumerate() {
        let got = h.join().expect("reader thread");
        assert_eq!(got, bulks(&["many", &format!("m{i}"), &i.to_string()]));
    }
    assert_eq!(admin.call(&["EXISTS", "many"]), int(0));
}

/// A huge negative count is refused (as HRANDFIELD/SRANDMEMBER) instead of
/// building a reply of ~2^63 elements. Redis 7.0 exhausts its memory here,
/// so this is Tessera-only.
#[test]
fn zrandmember_huge_negative_count_is_refused() {
    if common::target_is_redis() {
        return;
    }
    let s = common::TestServer::start();
    let mut raw = s.raw();
    raw.call(&["ZADD", "z", "1", "a"]);
    assert_eq!(
        raw.call(&["ZRANDMEMBER", "z", "-4611686018427387903"]),
        common::error("ERR value is out of range")
    );
    assert_eq!(
        raw.call(&["ZRANDMEMBER", "nokey", "-4611686018427387903"]),
        common::Frame::Array(vec![])
    );
    assert_eq!(raw.call(&["PING"]), common::simple("PONG"));
}

/// A sorted set grown to 60,000 members resizes its member table over many
/// writes (and shrinks it again after mass removal): ZSCAN started before
/// the growth returns every member present throughout, and scores, ranks
/// and ranges stay right.
#[test]
fn large_zset_resizes_while_scanned() {
    let s = TestServer::start();
    let mut c = s.client();
    let name = |i: usize| format!("member:{i}");
    let zadd = |c: &mut redis::Connection, range: std::ops::Range<usize>| {
        let mut cmd = redis::cmd("ZADD");
        cmd.arg("big");
        for i in range {
            cmd.arg(i % 1000).arg(name(i));
        }
        let _: i64 = cmd.query(c).expect("ZADD");
    };
    zadd(&mut c, 0..1000);
    let mut scanned = HashSet::new();
    let mut cursor = 0u64;
    let mut scanning = true;
    let mut next = 1000;
    while scanning || next < 60_000 {
        if scanning {
            let (cur, batch): (u64, Vec<String>) = redis::cmd("ZSCAN")
                .arg("big")
                .arg(cursor)
                .arg("COUNT")
                .arg(20)
                .query(&mut c)
                .expect("ZSCAN");
            for pair in batch.chunks(2) {
                scanned.insert(pair[0].clone());
            }
            cursor = cur;
            scanning = cursor != 0;
        }
        if next < 60_000 {
            zadd(&mut c, next..next + 1000);
            next += 1000;
        }
    }
    for i in 0..1000 {
        assert!(scanned.contains(&name(i)), "ZSCAN missed {}", name(i));
    }
    let card: i64 = redis::cmd("ZCARD").arg("big").query(&mut c).expect("ZCARD");
    assert_eq!(card, 60_000);
    for i in (0..60_000).step_by(1009) {
        let score: f64 = redis::cmd("ZSCORE")
            .arg("big")
            .arg(name(i))
            .query(&mut c)
            .expect("ZSCORE");
        assert_eq!(score, (i % 1000) as f64);
    }
    // Score 0 holds member:0, member:1000, ... in lexicographic order.
    let first: Vec<String> = redis::cmd("ZRANGE")
        .arg("big")
        .arg(0)
        .arg(2)
        .query(&mut c)
        .expect("ZRANGE");
    assert_eq!(first, ["member:0", "member:1000", "member:10000"]);
    for chunk in (100..60_000).collect::<Vec<_>>().chunks(1000) {
        let mut cmd = redis::cmd("ZREM");
        cmd.arg("big");
        for &i in chunk {
            cmd.arg(name(i));
        }
        let _: i64 = cmd.query(&mut c).expect("ZREM");
    }
    let mut rest = HashSet::new();
    let mut cursor = 0u64;
    loop {
        let (cur, batch): (u64, Vec<String>) = redis::cmd("ZSCAN")
            .arg("big")
            .arg(cursor)
            .query(&mut c)
            .expect("ZSCAN");
        for pair in batch.chunks(2) {
            rest.insert(pair[0].clone());
        }
        cursor = cur;
        if cursor == 0 {
            break;
        }
    }
    assert_eq!(rest, (0..100).map(name).collect::<HashSet<_>>());
    let rank: i64 = redis::cmd("ZRANK")
        .arg("big")
        .arg("member:99")
        .query(&mut c)
        .expect("ZRANK");
    assert_eq!(rank, 99);
}
