//! HyperLogLog commands (PFADD, PFCOUNT, PFMERGE, PFDEBUG, PFSELFTEST) through the `redis`
//! crate. Expected values, including the exact bytes of the sketches, are what redis-server 7.0
//! replies (run with `TESSERA_TEST_TARGET=redis` to check them against it).

mod common;

use common::{q, q_err, Frame, TestServer};

fn server() -> (TestServer, redis::Connection) {
    let s = TestServer::start();
    let c = s.client();
    (s, c)
}

fn get_bytes(c: &mut redis::Connection, key: &str) -> Vec<u8> {
    redis::cmd("GET").arg(key).query(c).unwrap()
}

fn set_bytes(c: &mut redis::Connection, key: &str, v: &[u8]) {
    let _: () = redis::cmd("SET").arg(key).arg(v).query(c).unwrap();
}

fn pfadd_many(c: &mut redis::Connection, key: &str, elements: impl Iterator<Item = String>) {
    let mut pipe = redis::pipe();
    for e in elements {
        pipe.cmd("PFADD").arg(key).arg(e).ignore();
    }
    let _: () = pipe.query(c).unwrap();
}

const NOT_HLL: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";
const CORRUPT: &str = "INVALIDOBJ Corrupted HLL object detected";
const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// `PFADD h a b c` on redis-server 7.0, before and after PFCOUNT cached the cardinality.
const ABC_UNCACHED: &[u8] =
    b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80`\xf3\x80P\xb1\x84K\xfb\x80BZ";
const ABC_CACHED: &[u8] =
    b"HYLL\x01\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00`\xf3\x80P\xb1\x84K\xfb\x80BZ";

#[test]
fn pfadd_builds_redis_identical_sparse_sketch() {
    let (_s, mut c) = server();
    assert_eq!(q::<i64>(&mut c, &["PFADD", "h", "a", "b", "c"]), 1);
    assert_eq!(get_bytes(&mut c, "h"), ABC_UNCACHED);
    assert_eq!(q::<i64>(&mut c, &["PFCOUNT", "h"]), 3);
    assert_eq!(get_bytes(&mut c, "h"), ABC_CACHED);
    assert_eq!(q::<i64>(&mut c, &["PFADD", "h", "a", "c"]), 0);
    assert_eq!(get_bytes(&mut c, "h"), ABC_CACHED);
    assert_eq!(
        q::<String>(&mut c, &["PFDEBUG", "DECODE", "h"]),
        "Z:8436 v:1,1 Z:4274 v:2,1 Z:3068 v:1,1 Z:603"
    );
    assert_eq!(q::<String>(&mut c, &["PFDEBUG", "ENCODING", "h"]), "sparse");
    assert_eq!(q::<String>(&mut c, &["TYPE", "h"]), "string");
    assert_eq!(q::<String>(&mut c, &["OBJECT", "ENCODING", "h"]), "raw");
}

#[test]
fn pfadd_without_elements() {
    let (_s, mut c) = server();
    assert_eq!(q::<i64>(&mut c, &["PFADD", "h"]), 1);
    assert_eq!(
        get_bytes(&mut c, "h"),
        b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xff"
    );
    assert_eq!(q::<i64>(&mut c, &["PFADD", "h"]), 0);
    assert_eq!(q::<i64>(&mut c, &["PFCOUNT", "h"]), 0);
    assert_eq!(
        get_bytes(&mut c, "h"),
        b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff"
    );
    assert_eq!(q::<i64>(&mut c, &["PFCOUNT", "nokey"]), 0);
}

#[test]
fn pfcount_matches_redis_and_promotes_to_dense() {
    let (_s, mut c) = server();
    q::<i64>(
        &mut c,
        &[
            "PFADD", "h2", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10",
        ],
    );
    assert_eq!(
        q::<String>(&mut c, &["PFDEBUG", "DECODE", "h2"]),
        "Z:495 v:2,1 Z:2084 v:1,1 Z:4946 v:1,1 Z:3297 v:1,1 Z:147 v:1,1 Z:3136 v:1,1 Z:728 \
         v:1,1 Z:531 v:4,1 Z:185 v:1,1 z:22 v:2,1 Z:803"
    );
    assert_eq!(q::<i64>(&mut c, &["PFCOUNT", "h2"]), 10);
    pfadd_many(&mut c, "big", (1..=1000).map(|i| format!("e{i}")));
    assert_eq!(q::<i64>(&mut c, &["PFCOUNT", "big"]), 1008);
    assert_eq!(
        q::<String>(&mut c, &["PFDEBUG", "ENCODING", "big"]),
        "sparse"
    );
    assert_eq!(q::<i64>(&mut c, &["STRLEN", "big"]), 1906);
    pfadd_many(&mut c, "big2", (1..=5000).map(|i| format!("e{i}")));
    assert_eq!(q::<i64>(&mut c, &["PFCOUNT", "big2"]), 4968);
    assert_eq!(
        q::<String>(&mut c, &["PFDEBUG", "ENCODING", "big2"]),
        "dense"
    );
    assert_eq!(q::<i64>(&mut c, &["STRLEN", "big2"]), 12304);
    q::<i64>(&mut c, &["PFADD", "h", "a", "b", "c"]);
    assert_eq!(q::<i64>(&mut c, &["PFCOUNT", "big", "big2", "h"]), 4972);
    assert_eq!(q::<i64>(&mut c, &["PFCOUNT", "big", "nokey"]), 1008);
}

#[test]
fn sparse_limit_is_configurable() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["CONFIG", "SET", "hll-sparse-max-bytes", "30"]);
    q::<i64>(&mut c, &["PFADD", "h", "a", "b", "c"]);
    assert_eq!(q::<String>(&mut c, &["PFDEBUG", "ENCODING", "h"]), "sparse");
    q::<i64>(&mut c, &["PFADD", "h", "d", "e", "f"]);
    assert_eq!(q::<String>(&mut c, &["PFDEBUG", "ENCODING", "h"]), "dense");
    assert_eq!(q::<i64>(&mut c, &["PFCOUNT", "h"]), 6);
}

#[test]
fn pfcount_many_keys_is_union_without_writing() {
    let (_s, mut c) = server();
    q::<i64>(&mut c, &["PFADD", "a", "x", "y", "z"]);
    q::<i64>(&mut c, &["PFADD", "b", "z", "w"]);
    let before = get_bytes(&mut c, "a");
    assert_eq!(q::<i64>(&mut c, &["PFCOUNT", "a", "b"]), 4);
    assert_eq!(q::<i64>(&mut c, &["PFCOUNT", "a", "a"]), 3);
    // The multi-key form leaves the cache alone.
    assert_eq!(get_bytes(&mut c, "a"), before);
}

#[test]
fn pfmerge_unions_into_destination() {
    let (_s, mut c) = server();
    q::<i64>(&mut c, &["PFADD", "h", "a", "b", "c"]);
    q::<i64>(
        &mut c,
        &[
            "PFADD", "h2", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10",
        ],
    );
    assert_eq!(q::<String>(&mut c, &["PFMERGE", "m", "h", "h2"]), "OK");
    assert_eq!(q::<i64>(&mut c, &["PFCOUNT", "m"]), 13);
    assert_eq!(
        q::<String>(&mut c, &["PFDEBUG", "DECODE", "m"]),
        "Z:495 v:2,1 Z:2084 v:1,1 Z:4946 v:1,1 Z:908 v:1,1 Z:2388 v:1,1 Z:147 v:1,1 Z:1737 \
         v:2,1 Z:1398 v:1,1 Z:728 v:1,1 Z:531 v:4,1 Z:185 v:1,1 z:22 v:2,1 Z:199 v:1,1 Z:603"
    );
    // The destination takes part in the union.
    q::<i64>(&mut c, &["PFADD", "d", "q"]);
    assert_eq!(q::<String>(&mut c, &["PFMERGE", "d", "h"]), "OK");
    assert_eq!(q::<i64>(&mut c, &["PFCOUNT", "d"]), 4);
    // No sources: the destination is created empty.
    assert_eq!(q::<String>(&mut c, &["PFMERGE", "e"]), "OK");
    assert_eq!(
        get_bytes(&mut c, "e"),
        b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xff"
    );
    // A dense source makes the destination dense.
    assert_eq!(q::<i64>(&mut c, &["PFDEBUG", "TODENSE", "h"]), 1);
    assert_eq!(q::<String>(&mut c, &["PFMERGE", "m2", "h", "nokey"]), "OK");
    assert_eq!(q::<String>(&mut c, &["PFDEBUG", "ENCODING", "m2"]), "dense");
    assert_eq!(q::<i64>(&mut c, &["PFCOUNT", "m2"]), 3);
}

#[test]
fn pfdebug_subcommands() {
    let (_s, mut c) = server();
    q::<i64>(&mut c, &["PFADD", "h", "a", "b", "c"]);
    let regs: Vec<i64> = q(&mut c, &["PFDEBUG", "GETREG", "h"]);
    assert_eq!(regs.len(), 16384);
    let set: Vec<(usize, i64)> = regs
        .iter()
        .enumerate()
        .filter(|(_, r)| **r != 0)
        .map(|(i, r)| (i, *r))
        .collect();
    assert_eq!(set, vec![(8436, 1), (12711, 2), (15780, 1)]);
    // GETREG left it dense.
    assert_eq!(q::<String>(&mut c, &["PFDEBUG", "ENCODING", "h"]), "dense");
    assert_eq!(q::<i64>(&mut c, &["PFDEBUG", "TODENSE", "h"]), 0);
    assert_eq!(
        q_err(&mut c, &["PFDEBUG", "DECODE", "h"]),
        "ERR HLL encoding is not sparse"
    );
    assert_eq!(q::<i64>(&mut c, &["PFCOUNT", "h"]), 3);
    q::<i64>(&mut c, &["PFADD", "s", "a"]);
    assert_eq!(q::<i64>(&mut c, &["pfdebug", "todense", "s"]), 1);
    assert_eq!(q::<i64>(&mut c, &["STRLEN", "s"]), 12304);
    assert_eq!(
        q_err(&mut c, &["PFDEBUG", "FOO", "s"]),
        "ERR Unknown PFDEBUG subcommand 'FOO'"
    );
    assert_eq!(
        q_err(&mut c, &["PFDEBUG", "GETREG", "nokey"]),
        "ERR The specified key does not exist"
    );
    assert_eq!(
        q_err(&mut c, &["PFDEBUG", "FOO", "nokey"]),
        "ERR The specified key does not exist"
    );
    assert_eq!(
        q_err(&mut c, &["PFDEBUG", "GETREG"]),
        "ERR wrong number of arguments for 'pfdebug' command"
    );
}

#[test]
fn invalid_values_are_rejected() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "str", "hello"]);
    q::<()>(&mut c, &["SET", "int", "12345"]);
    q::<i64>(&mut c, &["LPUSH", "list", "a"]);
    // A dense header with the wrong length.
    set_bytes(
        &mut c,
        "short",
        b"HYLL\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00",
    );
    // An unknown encoding.
    set_bytes(
        &mut c,
        "enc",
        b"HYLL\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff",
    );
    for k in ["str", "int", "short", "enc"] {
        assert_eq!(q_err(&mut c, &["PFADD", k, "a"]), NOT_HLL, "{k}");
        assert_eq!(q_err(&mut c, &["PFCOUNT", k]), NOT_HLL, "{k}");
        assert_eq!(q_err(&mut c, &["PFCOUNT", "nokey", k]), NOT_HLL, "{k}");
        assert_eq!(q_err(&mut c, &["PFMERGE", "dst", k]), NOT_HLL, "{k}");
        assert_eq!(q_err(&mut c, &["PFDEBUG", "ENCODING", k]), NOT_HLL, "{k}");
    }
    for args in [
        &["PFADD", "list", "a"][..],
        &["PFCOUNT", "list"],
        &["PFCOUNT", "list", "nokey"],
        &["PFMERGE", "list"],
        &["PFMERGE", "dst", "list"],
        &["PFDEBUG", "GETREG", "list"],
    ] {
        assert_eq!(q_err(&mut c, args), WRONGTYPE, "{args:?}");
    }
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "dst"]), 0);
}

#[test]
fn corrupted_sparse_sketches_are_detected() {
    let (_s, mut c) = server();
    // Runs covering fewer than 16384 registers; the cache is marked invalid.
    let bad = b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\x00";
    set_bytes(&mut c, "bad", bad);
    assert_eq!(q_err(&mut c, &["PFCOUNT", "bad"]), CORRUPT);
    assert_eq!(q_err(&mut c, &["PFCOUNT", "bad", "bad"]), CORRUPT);
    assert_eq!(q_err(&mut c, &["PFMERGE", "dst", "bad"]), CORRUPT);
    assert_eq!(q_err(&mut c, &["PFDEBUG", "GETREG", "bad"]), CORRUPT);
    assert_eq!(q_err(&mut c, &["PFDEBUG", "TODENSE", "bad"]), CORRUPT);
    assert_eq!(
        q::<String>(&mut c, &["PFDEBUG", "DECODE", "bad"]),
        "Z:16129"
    );
    // An element landing past the covered registers cannot be placed.
    set_bytes(
        &mut c,
        "one",
        b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x40\x00",
    );
    assert_eq!(q_err(&mut c, &["PFADD", "one", "a"]), CORRUPT);
    assert_eq!(q::<i64>(&mut c, &["PFADD", "one"]), 0);
    // A valid cache is trusted without looking at the registers.
    set_bytes(
        &mut c,
        "cached",
        b"HYLL\x01\x00\x00\x00\x07\x00\x00\x00\x00\x00\x00\x00\x7f\x00",
    );
    assert_eq!(q::<i64>(&mut c, &["PFCOUNT", "cached"]), 7);
    // Only the header is needed for an empty, corrupt sparse body.
    set_bytes(
        &mut c,
        "hdr",
        b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80",
    );
    assert_eq!(q_err(&mut c, &["PFADD", "hdr", "a"]), CORRUPT);
    assert_eq!(q::<String>(&mut c, &["PFDEBUG", "DECODE", "hdr"]), "");
}

#[test]
fn sketches_survive_set_and_copy() {
    let (_s, mut c) = server();
    q::<i64>(&mut c, &["PFADD", "h", "a", "b", "c"]);
    let bytes = get_bytes(&mut c, "h");
    set_bytes(&mut c, "copy", &bytes);
    assert_eq!(
        q::<String>(&mut c, &["OBJECT", "ENCODING", "copy"]),
        "embstr"
    );
    assert_eq!(q::<i64>(&mut c, &["PFCOUNT", "copy"]), 3);
    // Counting unshares (and caches into) the value.
    assert_eq!(q::<String>(&mut c, &["OBJECT", "ENCODING", "copy"]), "raw");
    assert_eq!(q::<i64>(&mut c, &["PFADD", "copy", "d"]), 1);
    assert_eq!(q::<i64>(&mut c, &["PFCOUNT", "copy"]), 4);
}

#[test]
fn pf_writes_notify_pfadd() {
    let (s, mut c) = server();
    q::<()>(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
    let mut sub = s.raw();
    sub.call(&["PSUBSCRIBE", "__keyevent@0__:*"]);
    q::<i64>(&mut c, &["PFADD", "h"]);
    q::<i64>(&mut c, &["PFADD", "h"]); // nothing changed
    q::<i64>(&mut c, &["PFADD", "h", "a"]);
    q::<i64>(&mut c, &["PFADD", "h", "a"]); // nothing changed
    q::<i64>(&mut c, &["PFCOUNT", "h"]); // no event
    q::<()>(&mut c, &["PFMERGE", "h"]);
    q::<i64>(&mut c, &["PFDEBUG", "TODENSE", "h"]); // no event
    q::<()>(&mut c, &["PFMERGE", "h2", "nokey"]);
    q::<()>(&mut c, &["SET", "end", "1"]);
    let mut got = Vec::new();
    loop {
        let Frame::Array(items) = sub.read_frame() else {
            panic!("expected a pmessage")
        };
        let (Some(Frame::Bulk(chan)), Some(Frame::Bulk(key))) = (items.get(2), items.get(3)) else {
            panic!("bad pmessage {items:?}")
        };
        let ev = String::from_utf8_lossy(chan)
            .rsplit(':')
            .next()
            .unwrap()
            .to_string();
        let key = String::from_utf8_lossy(key).to_string();
        if key == "end" {
            break;
        }
        got.push(format!("{ev} {key}"));
    }
    assert_eq!(got, ["pfadd h", "pfadd h", "pfadd h", "pfadd h2"]);
}

#[test]
fn pfselftest_passes() {
    let (_s, mut c) = server();
    assert_eq!(q::<String>(&mut c, &["PFSELFTEST"]), "OK");
    assert_eq!(
        q_err(&mut c, &["PFSELFTEST", "x"]),
        "ERR wrong number of arguments for 'pfselftest' command"
    );
}
