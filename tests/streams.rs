//! Stream commands through a real client: XADD (explicit, `ms-*` and automatic IDs, NOMKSTREAM,
//! trimming), ranges, XDEL/XTRIM (exact and approximate, LIMIT), XREAD (`$`, COUNT, several
//! streams, RESP3 maps), consumer groups (XGROUP, XREADGROUP new and history reads, NOACK,
//! XACK, XPENDING, XCLAIM, XAUTOCLAIM), XINFO, XSETID, lag and entries-read, keyspace events,
//! and blocking reads with several clients on different worker threads: wake-ups by XADD,
//! first-come first-served consumers, and deletion of a stream or group under blocked readers.
//! Expected values are what redis-server 7.0 replies (run with `TESSERA_TEST_TARGET=redis`).

mod common;

use common::{bulk, bulks, error, fmt_frame, wait_until, Frame, RawClient, TestServer};
use std::time::Duration;

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";

fn int(n: i64) -> Frame {
    Frame::Integer(n)
}

fn ok() -> Frame {
    Frame::Simple(b"OK".to_vec())
}

/// `[id, [f1, v1, ...]]`.
fn entry(id: &str, fields: &[&str]) -> Frame {
    Frame::Array(vec![bulk(id), bulks(fields)])
}

fn entries(list: &[(&str, &[&str])]) -> Frame {
    Frame::Array(list.iter().map(|(id, f)| entry(id, f)).collect())
}

/// The IDs of an XRANGE-style reply.
fn ids(f: &Frame) -> Vec<String> {
    match f {
        Frame::Array(items) => items
            .iter()
            .map(|e| match e {
                Frame::Array(p) => match &p[0] {
                    Frame::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
                    o => panic!("not an id: {}", fmt_frame(o)),
                },
                o => panic!("not an entry: {}", fmt_frame(o)),
            })
            .collect(),
        o => panic!("not an array: {}", fmt_frame(o)),
    }
}

/// A flat RESP2 map reply (`XINFO ...`) as (name, value) pairs.
fn fields(f: &Frame) -> Vec<(String, Frame)> {
    match f {
        Frame::Array(items) => items
            .chunks(2)
            .map(|p| match &p[0] {
                Frame::Bulk(b) => (String::from_utf8_lossy(b).into_owned(), p[1].clone()),
                o => panic!("not a field name: {}", fmt_frame(o)),
            })
            .collect(),
        Frame::Map(pairs) => pairs
            .iter()
            .map(|(k, v)| match k {
                Frame::Bulk(b) => (String::from_utf8_lossy(b).into_owned(), v.clone()),
                o => panic!("not a field name: {}", fmt_frame(o)),
            })
            .collect(),
        o => panic!("not a map: {}", fmt_frame(o)),
    }
}

fn field(f: &Frame, name: &str) -> Frame {
    fields(f)
        .into_iter()
        .find(|(k, _)| k == name)
        .unwrap_or_else(|| panic!("no field {name} in {}", fmt_frame(f)))
        .1
}

fn add(r: &mut RawClient, key: &str, id: &str, f: &[&str]) -> Frame {
    let mut args = vec!["XADD", key, id];
    args.extend_from_slice(f);
    r.call(&args)
}

fn fill(r: &mut RawClient, key: &str, n: u64) {
    let cmds: Vec<Vec<String>> = (1..=n)
        .map(|i| {
            vec![
                "XADD".into(),
                key.into(),
                format!("{i}-1"),
                "f".into(),
                i.to_string(),
            ]
        })
        .collect();
    for (i, f) in r.pipeline(&cmds).into_iter().enumerate() {
        assert_eq!(f, bulk(format!("{}-1", i + 1)));
    }
}

// ---- XADD ---------------------------------------------------------------------------------

/// After XSETID moves the last ID back below a deleted entry's, new
/// entries follow the tombstone in its node: XDEL (like XRANGE) must look
/// past it. (Found by the differential harness.)
#[test]
fn xdel_finds_entries_added_after_a_bigger_deleted_id() {
    let s = TestServer::start();
    let mut r = s.raw();
    add(&mut r, "s", "966-2", &["a", "1"]);
    add(
        &mut r,
        "s",
        "18446744073709551615-18446744073709551615",
        &["f", "1"],
    );
    assert_eq!(
        r.call(&["XDEL", "s", "18446744073709551615-18446744073709551615"]),
        int(1)
    );
    assert_eq!(r.call(&["XSETID", "s", "1244-2"]), ok());
    assert_eq!(add(&mut r, "s", "2648-*", &["f", "1"]), bulk("2648-0"));
    add(&mut r, "s", "2700-1", &["g", "2"]);
    assert_eq!(
        r.call(&["XRANGE", "s", "2000", "3000"]),
        entries(&[("2648-0", &["f", "1"]), ("2700-1", &["g", "2"])])
    );
    assert_eq!(r.call(&["XDEL", "s", "1607-2", "2648-0"]), int(1));
    assert_eq!(r.call(&["XDEL", "s", "2648-0"]), int(0));
    assert_eq!(r.call(&["XLEN", "s"]), int(2));
    assert_eq!(
        r.call(&["XRANGE", "s", "-", "+"]),
        entries(&[("966-2", &["a", "1"]), ("2700-1", &["g", "2"])])
    );
}

#[test]
fn xadd_explicit_and_partial_ids() {
    let s = TestServer::start();
    let mut r = s.raw();
    assert_eq!(add(&mut r, "s", "1-1", &["a", "1"]), bulk("1-1"));
    assert_eq!(add(&mut r, "s", "1-*", &["a", "2"]), bulk("1-2"));
    assert_eq!(add(&mut r, "s", "5", &["a", "3"]), bulk("5-0"));
    assert_eq!(add(&mut r, "s", "7-*", &["a", "4"]), bulk("7-0"));
    assert_eq!(
        add(&mut r, "s", "7-0", &["a", "5"]),
        error("ERR The ID specified in XADD is equal or smaller than the target stream top item")
    );
    assert_eq!(
        add(&mut r, "s", "6-*", &["a", "5"]),
        error("ERR The ID specified in XADD is equal or smaller than the target stream top item")
    );
    assert_eq!(
        add(&mut r, "s", "0-0", &["a", "5"]),
        error("ERR The ID specified in XADD must be greater than 0-0")
    );
    assert_eq!(
        add(&mut r, "n", "0", &["a", "5"]),
        error("ERR The ID specified in XADD must be greater than 0-0")
    );
    assert_eq!(add(&mut r, "z", "0-*", &["a", "5"]), bulk("0-1"));
    for bad in ["abc", "1-x", "-1", "1--1", "+", "-", "1-2-3"] {
        assert_eq!(
            add(&mut r, "s", bad, &["a", "1"]),
            error(INVALID_ID),
            "{bad}"
        );
    }
    assert_eq!(r.call(&["XLEN", "s"]), int(4));
    assert_eq!(
        r.call(&["XRANGE", "s", "-", "+"]),
        entries(&[
            ("1-1", &["a", "1"]),
            ("1-2", &["a", "2"]),
            ("5-0", &["a", "3"]),
            ("7-0", &["a", "4"]),
        ])
    );
    // Automatic IDs increase past explicit ones in the future.
    assert_eq!(
        add(&mut r, "f", "99999999999999-5", &["a", "1"]),
        bulk("99999999999999-5")
    );
    assert_eq!(add(&mut r, "f", "*", &["a", "1"]), bulk("99999999999999-6"));
    let auto = add(&mut r, "g", "*", &["a", "1"]);
    let Frame::Bulk(id) = auto else {
        panic!("XADD * answered {}", fmt_frame(&auto))
    };
    assert!(String::from_utf8_lossy(&id).ends_with("-0"));
    // The largest ID exhausts the stream.
    assert_eq!(
        add(
            &mut r,
            "m",
            "18446744073709551615-18446744073709551615",
            &["a", "1"]
        ),
        bulk("18446744073709551615-18446744073709551615")
    );
    assert_eq!(
        add(&mut r, "m", "*", &["a", "1"]),
        error("ERR The stream has exhausted the last possible ID, unable to add more items")
    );
}

#[test]
fn xadd_arguments_and_errors() {
    let s = TestServer::start();
    let mut r = s.raw();
    let arity = error("ERR wrong number of arguments for 'xadd' command");
    assert_eq!(r.call(&["XADD", "s", "*", "f"]), arity);
    assert_eq!(r.call(&["XADD", "s", "*", "f", "v", "g"]), arity);
    assert_eq!(r.call(&["XADD", "s", "MAXLEN", "5"]), arity);
    assert_eq!(
        r.call(&["XADD", "s", "NOMKSTREAM", "*", "f", "v"]),
        Frame::NullBulk
    );
    assert_eq!(r.call(&["EXISTS", "s"]), int(0));
    assert_eq!(
        r.call(&["XADD", "s", "LIMIT", "5", "*", "f", "v"]),
        error("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy")
    );
    assert_eq!(
        r.call(&["XADD", "s", "MAXLEN", "5", "LIMIT", "5", "*", "f", "v"]),
        error("ERR syntax error, LIMIT cannot be used without the special ~ option")
    );
    assert_eq!(
        r.call(&["XADD", "s", "MAXLEN", "-1", "*", "f", "v"]),
        error("ERR The MAXLEN argument must be >= 0.")
    );
    assert_eq!(
        r.call(&["XADD", "s", "MAXLEN", "~", "1", "LIMIT", "-1", "*", "f", "v"]),
        error("ERR The LIMIT argument must be >= 0.")
    );
    assert_eq!(
        r.call(&["XADD", "s", "MAXLEN", "1", "MINID", "5", "*", "f", "v"]),
        error("ERR syntax error, MAXLEN and MINID options at the same time are not compatible")
    );
    assert_eq!(
        r.call(&["XADD", "s", "MINID", "-", "*", "f", "v"]),
        error(INVALID_ID)
    );
    assert_eq!(
        r.call(&["XADD", "s", "MAXLEN", "x", "*", "f", "v"]),
        error("ERR value is not an integer or out of range")
    );
    assert_eq!(r.call(&["EXISTS", "s"]), int(0));
    r.call(&["SET", "str", "x"]);
    assert_eq!(r.call(&["XADD", "str", "*", "f", "v"]), error(WRONGTYPE));
    for (i, trim) in [
        vec!["MAXLEN", "2"],
        vec!["MAXLEN", "=", "2"],
        vec!["MAXLEN", "~", "2", "LIMIT", "0"],
    ]
    .into_iter()
    .enumerate()
    {
        let key = format!("t{i}");
        for id in 1..=5 {
            let id = id.to_string();
            let mut args = vec!["XADD", &key];
            args.extend_from_slice(&trim);
            args.extend_from_slice(&[&id, "f", "v"]);
            assert_eq!(r.call(&args), bulk(format!("{id}-0")));
        }
        let want = if i == 2 { 5 } else { 2 };
        assert_eq!(r.call(&["XLEN", &key]), int(want), "{trim:?}");
    }
    assert_eq!(r.call(&["TYPE", "t0"]), Frame::Simple(b"stream".to_vec()));
    assert_eq!(r.call(&["OBJECT", "ENCODING", "t0"]), bulk("stream"));
}

// ---- ranges, XLEN, XDEL, XTRIM ------------------------------------------------------------

#[test]
fn xrange_bounds_counts_and_errors() {
    let s = TestServer::start();
    let mut r = s.raw();
    fill(&mut r, "s", 10);
    let all: Vec<String> = (1..=10).map(|i| format!("{i}-1")).collect();
    assert_eq!(ids(&r.call(&["XRANGE", "s", "-", "+"])), all);
    let mut rev = all.clone();
    rev.reverse();
    assert_eq!(ids(&r.call(&["XREVRANGE", "s", "+", "-"])), rev);
    assert_eq!(
        ids(&r.call(&["XRANGE", "s", "3", "5"])),
        ["3-1", "4-1", "5-1"]
    );
    assert_eq!(ids(&r.call(&["XRANGE", "s", "(3-1", "(5-1"])), ["4-1"]);
    assert_eq!(ids(&r.call(&["XRANGE", "s", "3-2", "5-0"])), ["4-1"]);
    assert_eq!(
        ids(&r.call(&["XREVRANGE", "s", "(5-1", "(2-1"])),
        ["4-1", "3-1"]
    );
    assert_eq!(
        ids(&r.call(&["XRANGE", "s", "-", "+", "COUNT", "2"])),
        ["1-1", "2-1"]
    );
    assert_eq!(
        ids(&r.call(&["XREVRANGE", "s", "+", "-", "count", "3"])),
        ["10-1", "9-1", "8-1"]
    );
    assert_eq!(
        r.call(&["XRANGE", "s", "-", "+", "COUNT", "0"]),
        Frame::NullArray
    );
    assert_eq!(
        r.call(&["XRANGE", "s", "-", "+", "COUNT", "-5"]),
        Frame::NullArray
    );
    assert_eq!(r.call(&["XRANGE", "s", "5", "3"]), Frame::Array(vec![]));
    assert_eq!(r.call(&["XRANGE", "nokey", "-", "+"]), Frame::Array(vec![]));
    assert_eq!(
        r.call(&["XRANGE", "s", "-", "+", "COUNT"]),
        error("ERR syntax error")
    );
    assert_eq!(
        r.call(&["XRANGE", "s", "-", "+", "COUNT", "x"]),
        error("ERR value is not an integer or out of range")
    );
    assert_eq!(r.call(&["XRANGE", "s", "(-", "+"]), error(INVALID_ID));
    assert_eq!(r.call(&["XRANGE", "s", "x", "+"]), error(INVALID_ID));
    assert_eq!(
        r.call(&[
            "XRANGE",
            "s",
            "(18446744073709551615-18446744073709551615",
            "+"
        ]),
        error("ERR invalid start ID for the interval")
    );
    assert_eq!(
        r.call(&["XRANGE", "s", "-", "(0-0"]),
        error("ERR invalid end ID for the interval")
    );
    r.call(&["SET", "str", "x"]);
    assert_eq!(r.call(&["XRANGE", "str", "-", "+"]), error(WRONGTYPE));
    assert_eq!(r.call(&["XLEN", "str"]), error(WRONGTYPE));
    assert_eq!(r.call(&["XLEN", "nokey"]), int(0));
}

#[test]
fn xdel_updates_first_and_max_deleted_ids() {
    let s = TestServer::start();
    let mut r = s.raw();
    fill(&mut r, "s", 5);
    assert_eq!(r.call(&["XDEL", "s", "1-1", "3-1", "9-9", "3-1"]), int(2));
    assert_eq!(
        ids(&r.call(&["XRANGE", "s", "-", "+"])),
        ["2-1", "4-1", "5-1"]
    );
    assert_eq!(r.call(&["XLEN", "s"]), int(3));
    let info = r.call(&["XINFO", "STREAM", "s"]);
    assert_eq!(field(&info, "recorded-first-entry-id"), bulk("2-1"));
    assert_eq!(field(&info, "max-deleted-entry-id"), bulk("3-1"));
    assert_eq!(field(&info, "entries-added"), int(5));
    assert_eq!(field(&info, "first-entry"), entry("2-1", &["f", "2"]));
    assert_eq!(field(&info, "last-entry"), entry("5-1", &["f", "5"]));
    assert_eq!(r.call(&["XDEL", "s", "bad"]), error(INVALID_ID));
    assert_eq!(r.call(&["XDEL", "nokey", "bad"]), int(0));
    assert_eq!(r.call(&["XDEL", "s", "2-1", "4-1", "5-1"]), int(3));
    // An emptied stream stays, with its last ID.
    assert_eq!(r.call(&["XLEN", "s"]), int(0));
    assert_eq!(r.call(&["EXISTS", "s"]), int(1));
    let info = r.call(&["XINFO", "STREAM", "s"]);
    assert_eq!(field(&info, "recorded-first-entry-id"), bulk("0-0"));
    assert_eq!(field(&info, "last-generated-id"), bulk("5-1"));
    assert_eq!(field(&info, "first-entry"), Frame::NullBulk);
    assert_eq!(
        add(&mut r, "s", "5-1", &["a", "b"]),
        error("ERR The ID specified in XADD is equal or smaller than the target stream top item")
    );
}

#[test]
fn xtrim_exact_approximate_and_limit() {
    let s = TestServer::start();
    let mut r = s.raw();
    fill(&mut r, "s", 250);
    // Nodes hold 100 entries: `~` removes only whole nodes.
    assert_eq!(r.call(&["XTRIM", "s", "MAXLEN", "~", "120"]), int(100));
    assert_eq!(r.call(&["XLEN", "s"]), int(150));
    assert_eq!(r.call(&["XTRIM", "s", "MAXLEN", "~", "120"]), int(0));
    assert_eq!(r.call(&["XTRIM", "s", "MAXLEN", "120"]), int(30));
    assert_eq!(
        ids(&r.call(&["XRANGE", "s", "-", "+", "COUNT", "1"])),
        ["131-1"]
    );
    assert_eq!(r.call(&["XTRIM", "s", "MINID", "141"]), int(10));
    assert_eq!(r.call(&["XTRIM", "s", "MINID", "=", "141"]), int(0));
    // The node 101..200 (now 141..200) goes whole when all of it is below MINID.
    assert_eq!(r.call(&["XTRIM", "s", "MINID", "~", "201"]), int(60));
    assert_eq!(r.call(&["XLEN", "s"]), int(50));
    assert_eq!(
        r.call(&["XTRIM", "s", "MAXLEN", "~", "0", "LIMIT", "10"]),
        int(0)
    );
    assert_eq!(
        r.call(&["XTRIM", "s", "MAXLEN", "~", "0", "LIMIT", "50"]),
        int(50)
    );
    assert_eq!(r.call(&["XLEN", "s"]), int(0));
    assert_eq!(r.call(&["XTRIM", "nokey", "MAXLEN", "0"]), int(0));
    assert_eq!(
        r.call(&["XTRIM", "s", "MAXLEN"]),
        error("ERR wrong number of arguments for 'xtrim' command")
    );
    assert_eq!(
        r.call(&["XTRIM", "s", "FOO", "1", "2"]),
        error("ERR syntax error")
    );
    assert_eq!(
        r.call(&["XTRIM", "s", "LIMIT", "1", "MAXLEN", "1"]),
        error("ERR syntax error, LIMIT cannot be used without the special ~ option")
    );
    assert_eq!(
        r.call(&["XTRIM", "s", "MAXLEN", "1", "MINID", "1"]),
        error("ERR syntax error, MAXLEN and MINID options at the same time are not compatible")
    );
    assert_eq!(
        r.call(&["XTRIM", "s", "FOO", "1"]),
        error("ERR syntax error")
    );
    assert_eq!(
        r.call(&["XTRIM", "s", "MAXLEN", "1", "extra"]),
        error("ERR syntax error")
    );
}

// ---- XREAD --------------------------------------------------------------------------------

#[test]
fn xread_streams_ids_and_counts() {
    let s = TestServer::start();
    let mut r = s.raw();
    fill(&mut r, "a", 3);
    add(&mut r, "b", "5-0", &["x", "y"]);
    assert_eq!(
        r.call(&["XREAD", "COUNT", "2", "STREAMS", "a", "b", "nokey", "0", "0", "0"]),
        Frame::Array(vec![
            Frame::Array(vec![
                bulk("a"),
                entries(&[("1-1", &["f", "1"]), ("2-1", &["f", "2"])])
            ]),
            Frame::Array(vec![bulk("b"), entries(&[("5-0", &["x", "y"])])]),
        ])
    );
    assert_eq!(
        r.call(&["XREAD", "STREAMS", "a", "2-1"]),
        Frame::Array(vec![Frame::Array(vec![
            bulk("a"),
            entries(&[("3-1", &["f", "3"])])
        ])])
    );
    assert_eq!(r.call(&["XREAD", "STREAMS", "a", "$"]), Frame::NullArray);
    assert_eq!(r.call(&["XREAD", "STREAMS", "a", "3-1"]), Frame::NullArray);
    assert_eq!(
        r.call(&["XREAD", "STREAMS", "a"]),
        error("ERR wrong number of arguments for 'xread' command")
    );
    assert_eq!(
        r.call(&["XREAD", "STREAMS", "a", "b", "0"]),
        error("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.")
    );
    assert_eq!(
        r.call(&["XREAD", "STREAMS", "a", ">"]),
        error("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.")
    );
    assert_eq!(
        r.call(&["XREAD", "GROUP", "g", "c", "STREAMS", "a", "0"]),
        error("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.")
    );
    assert_eq!(
        r.call(&["XREAD", "NOACK", "STREAMS", "a", "0"]),
        error("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.")
    );
    assert_eq!(
        r.call(&["XREAD", "FOO", "STREAMS", "a", "0"]),
        error("ERR syntax error")
    );
    assert_eq!(
        r.call(&["XREAD", "COUNT", "1", "BLOCK", "10"]),
        error("ERR syntax error")
    );
    assert_eq!(
        r.call(&["XREAD", "BLOCK", "-1", "STREAMS", "a", "0"]),
        error("ERR timeout is negative")
    );
    assert_eq!(
        r.call(&["XREAD", "BLOCK", "1.5", "STREAMS", "a", "0"]),
        error("ERR timeout is not an integer or out of range")
    );
    assert_eq!(r.call(&["XREAD", "STREAMS", "a", "bad"]), error(INVALID_ID));
    r.call(&["SET", "str", "x"]);
    assert_eq!(
        r.call(&["XREAD", "STREAMS", "a", "str", "0", "0"]),
        error(WRONGTYPE)
    );
    // RESP3: a map of stream name to entries.
    r.call(&["HELLO", "3"]);
    assert_eq!(
        r.call(&["XREAD", "COUNT", "1", "STREAMS", "a", "b", "0", "0"]),
        Frame::Map(vec![
            (bulk("a"), entries(&[("1-1", &["f", "1"])])),
            (bulk("b"), entries(&[("5-0", &["x", "y"])])),
        ])
    );
    assert_eq!(r.call(&["XREAD", "STREAMS", "a", "$"]), Frame::Null);
}

// ---- consumer groups ----------------------------------------------------------------------

#[test]
fn xgroup_create_setid_destroy_and_errors() {
    let s = TestServer::start();
    let mut r = s.raw();
    let nokey = error("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.");
    assert_eq!(r.call(&["XGROUP", "CREATE", "s", "g", "$"]), nokey);
    assert_eq!(r.call(&["XGROUP", "SETID", "s", "g", "0"]), nokey);
    assert_eq!(r.call(&["XGROUP", "DESTROY", "s", "g"]), nokey);
    assert_eq!(r.call(&["XGROUP", "CREATECONSUMER", "s", "g", "c"]), nokey);
    assert_eq!(
        r.call(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]),
        ok()
    );
    assert_eq!(r.call(&["XLEN", "s"]), int(0));
    assert_eq!(
        r.call(&["XGROUP", "CREATE", "s", "g", "$"]),
        error("BUSYGROUP Consumer Group name already exists")
    );
    assert_eq!(
        r.call(&["XGROUP", "CREATE", "s", "g2", "bad"]),
        error(INVALID_ID)
    );
    assert_eq!(
        r.call(&["XGROUP", "CREATE", "s", "g2", "0", "FOO"]),
        error("ERR unknown subcommand or wrong number of arguments for 'CREATE'. Try XGROUP HELP.")
    );
    assert_eq!(
        r.call(&["XGROUP", "CREATE", "s", "g2", "0", "ENTRIESREAD", "-5"]),
        error("ERR value for ENTRIESREAD must be positive or -1")
    );
    assert_eq!(
        r.call(&["XGROUP", "SETID", "s", "nog", "0"]),
        error("NOGROUP No such consumer group 'nog' for key name 's'")
    );
    assert_eq!(
        r.call(&["XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD"]),
        error("ERR unknown subcommand or wrong number of arguments for 'SETID'. Try XGROUP HELP.")
    );
    assert_eq!(
        r.call(&["XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD", "x"]),
        error("ERR value is not an integer or out of range")
    );
    assert_eq!(
        r.call(&["XGROUP", "FOO"]),
        error("ERR unknown subcommand 'FOO'. Try XGROUP HELP.")
    );
    assert_eq!(
        r.call(&["XGROUP", "CREATE", "s"]),
        error("ERR wrong number of arguments for 'xgroup|create' command")
    );
    fill(&mut r, "s", 3);
    assert_eq!(
        r.call(&["XGROUP", "SETID", "s", "g", "1-1", "ENTRIESREAD", "1"]),
        ok()
    );
    let groups = r.call(&["XINFO", "GROUPS", "s"]);
    let Frame::Array(gs) = &groups else {
        panic!("{}", fmt_frame(&groups))
    };
    assert_eq!(field(&gs[0], "last-delivered-id"), bulk("1-1"));
    assert_eq!(field(&gs[0], "entries-read"), int(1));
    assert_eq!(field(&gs[0], "lag"), int(2));
    assert_eq!(r.call(&["XGROUP", "SETID", "s", "g", "$"]), ok());
    let groups = r.call(&["XINFO", "GROUPS", "s"]);
    let Frame::Array(gs) = &groups else {
        panic!("{}", fmt_frame(&groups))
    };
    assert_eq!(field(&gs[0], "last-delivered-id"), bulk("3-1"));
    assert_eq!(field(&gs[0], "entries-read"), Frame::NullBulk);
    assert_eq!(field(&gs[0], "lag"), int(0));
    assert_eq!(r.call(&["XGROUP", "CREATECONSUMER", "s", "g", "c"]), int(1));
    assert_eq!(r.call(&["XGROUP", "CREATECONSUMER", "s", "g", "c"]), int(0));
    assert_eq!(r.call(&["XGROUP", "DELCONSUMER", "s", "g", "c"]), int(0));
    assert_eq!(r.call(&["XGROUP", "DELCONSUMER", "s", "g", "c"]), int(0));
    assert_eq!(r.call(&["XGROUP", "DESTROY", "s", "g"]), int(1));
    assert_eq!(r.call(&["XGROUP", "DESTROY", "s", "g"]), int(0));
    assert_eq!(r.call(&["XINFO", "GROUPS", "s"]), Frame::Array(vec![]));
    let help = r.call(&["XGROUP", "HELP"]);
    let Frame::Array(lines) = help else {
        panic!("XGROUP HELP")
    };
    assert_eq!(lines.len(), 17);
    r.call(&["SET", "str", "x"]);
    assert_eq!(
        r.call(&["XGROUP", "CREATE", "str", "g", "$"]),
        error(WRONGTYPE)
    );
}

#[test]
fn xreadgroup_new_history_ack_and_pending() {
    let s = TestServer::start();
    let mut r = s.raw();
    fill(&mut r, "s", 4);
    assert_eq!(r.call(&["XGROUP", "CREATE", "s", "g", "0"]), ok());
    assert_eq!(
        r.call(&[
            "XREADGROUP",
            "GROUP",
            "g",
            "alice",
            "COUNT",
            "2",
            "STREAMS",
            "s",
            ">"
        ]),
        Frame::Array(vec![Frame::Array(vec![
            bulk("s"),
            entries(&[("1-1", &["f", "1"]), ("2-1", &["f", "2"])])
        ])])
    );
    assert_eq!(
        r.call(&[
            "XREADGROUP",
            "GROUP",
            "g",
            "bob",
            "COUNT",
            "1",
            "STREAMS",
            "s",
            ">"
        ]),
        Frame::Array(vec![Frame::Array(vec![
            bulk("s"),
            entries(&[("3-1", &["f", "3"])])
        ])])
    );
    // History: only the consumer's own pending entries, from the ID on.
    assert_eq!(
        r.call(&["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0"]),
        Frame::Array(vec![Frame::Array(vec![
            bulk("s"),
            entries(&[("1-1", &["f", "1"]), ("2-1", &["f", "2"])])
        ])])
    );
    assert_eq!(
        r.call(&["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "1-1"]),
        Frame::Array(vec![Frame::Array(vec![
            bulk("s"),
            entries(&[("2-1", &["f", "2"])])
        ])])
    );
    // A deleted pending entry shows with a null body.
    r.call(&["XDEL", "s", "2-1"]);
    assert_eq!(
        r.call(&["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "1-1"]),
        Frame::Array(vec![Frame::Array(vec![
            bulk("s"),
            Frame::Array(vec![Frame::Array(vec![bulk("2-1"), Frame::NullArray])])
        ])])
    );
    // Summary form.
    assert_eq!(
        r.call(&["XPENDING", "s", "g"]),
        Frame::Array(vec![
            int(3),
            bulk("1-1"),
            bulk("3-1"),
            Frame::Array(vec![bulks(&["alice", "2"]), bulks(&["bob", "1"])]),
        ])
    );
    // Extended form: (id, consumer, idle, deliveries); idle is time-dependent.
    let ext = r.call(&["XPENDING", "s", "g", "-", "+", "10"]);
    let Frame::Array(rows) = &ext else {
        panic!("{}", fmt_frame(&ext))
    };
    let summary: Vec<(Frame, Frame, Frame)> = rows
        .iter()
        .map(|row| match row {
            Frame::Array(v) => (v[0].clone(), v[1].clone(), v[3].clone()),
            o => panic!("{}", fmt_frame(o)),
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (bulk("1-1"), bulk("alice"), int(2)),
            (bulk("2-1"), bulk("alice"), int(3)),
            (bulk("3-1"), bulk("bob"), int(1)),
        ]
    );
    assert_eq!(
        ids(&r.call(&["XPENDING", "s", "g", "-", "+", "10", "bob"])),
        ["3-1"]
    );
    assert_eq!(
        r.call(&["XPENDING", "s", "g", "-", "+", "10", "nobody"]),
        Frame::Array(vec![])
    );
    assert_eq!(
        ids(&r.call(&["XPENDING", "s", "g", "(1-1", "+", "1"])),
        ["2-1"]
    );
    assert_eq!(
        r.call(&["XPENDING", "s", "g", "IDLE", "1000000", "-", "+", "10"]),
        Frame::Array(vec![])
    );
    assert_eq!(
        r.call(&["XPENDING", "s", "g", "1", "2"]),
        error("ERR syntax error")
    );
    assert_eq!(
        r.call(&["XPENDING", "s", "nog"]),
        error("NOGROUP No such key 's' or consumer group 'nog'")
    );
    assert_eq!(r.call(&["XACK", "s", "g", "1-1", "2-1", "9-9"]), int(2));
    assert_eq!(r.call(&["XACK", "s", "g", "1-1"]), int(0));
    assert_eq!(r.call(&["XACK", "s", "g", "bad"]), error(INVALID_ID));
    assert_eq!(r.call(&["XACK", "nokey", "g", "bad"]), int(0));
    assert_eq!(r.call(&["XACK", "s", "nog", "1-1"]), int(0));
    // NOACK reads do not enter the PEL.
    assert_eq!(
        ids(&field_stream(&r.call(&[
            "XREADGROUP",
            "GROUP",
            "g",
            "carol",
            "NOACK",
            "STREAMS",
            "s",
            ">"
        ]))),
        ["4-1"]
    );
    assert_eq!(
        r.call(&["XPENDING", "s", "g"]),
        Frame::Array(vec![
            int(1),
            bulk("3-1"),
            bulk("3-1"),
            Frame::Array(vec![bulks(&["bob", "1"])]),
        ])
    );
    // Nothing new: a null reply.
    assert_eq!(
        r.call(&["XREADGROUP", "GROUP", "g", "dave", "STREAMS", "s", ">"]),
        Frame::NullArray
    );
    assert_eq!(
        r.call(&["XREADGROUP", "GROUP", "nog", "c", "STREAMS", "s", ">"]),
        error("NOGROUP No such key 's' or consumer group 'nog' in XREADGROUP with GROUP option")
    );
    assert_eq!(
        r.call(&["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "$"]),
        error("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.")
    );
    assert_eq!(
        r.call(&["XREADGROUP", "COUNT", "1", "NOACK", "STREAMS", "s", ">"]),
        error("ERR Missing GROUP option for XREADGROUP")
    );
    // Consumers: carol exists though she has nothing pending; dave was never served.
    let cons = r.call(&["XINFO", "CONSUMERS", "s", "g"]);
    let Frame::Array(cs) = &cons else {
        panic!("{}", fmt_frame(&cons))
    };
    let names: Vec<(Frame, Frame)> = cs
        .iter()
        .map(|c| (field(c, "name"), field(c, "pending")))
        .collect();
    assert_eq!(
        names,
        vec![
            (bulk("alice"), int(0)),
            (bulk("bob"), int(1)),
            (bulk("carol"), int(0)),
        ]
    );
    assert_eq!(r.call(&["XGROUP", "DELCONSUMER", "s", "g", "bob"]), int(1));
    assert_eq!(
        r.call(&["XPENDING", "s", "g"]).clone(),
        Frame::Array(vec![
            int(0),
            Frame::NullBulk,
            Frame::NullBulk,
            Frame::NullArray,
        ])
    );
}

/// The entries of the single stream of an XREAD(GROUP) reply.
fn field_stream(f: &Frame) -> Frame {
    match f {
        Frame::Array(streams) => match &streams[0] {
            Frame::Array(p) => p[1].clone(),
            o => panic!("{}", fmt_frame(o)),
        },
        o => panic!("{}", fmt_frame(o)),
    }
}

#[test]
fn lag_and_entries_read_follow_redis() {
    let s = TestServer::start();
    let mut r = s.raw();
    fill(&mut r, "s", 5);
    r.call(&["XGROUP", "CREATE", "s", "g", "0"]);
    let group = |r: &mut RawClient| {
        let f = r.call(&["XINFO", "GROUPS", "s"]);
        match f {
            Frame::Array(mut v) => v.remove(0),
            o => panic!("{}", fmt_frame(&o)),
        }
    };
    let g = group(&mut r);
    assert_eq!(field(&g, "entries-read"), Frame::NullBulk);
    assert_eq!(field(&g, "lag"), int(5));
    r.call(&[
        "XREADGROUP",
        "GROUP",
        "g",
        "c",
        "COUNT",
        "2",
        "STREAMS",
        "s",
        ">",
    ]);
    let g = group(&mut r);
    assert_eq!(field(&g, "entries-read"), int(2));
    assert_eq!(field(&g, "lag"), int(3));
    // A deletion ahead of the group makes the lag unknown.
    r.call(&["XDEL", "s", "4-1"]);
    let g = group(&mut r);
    assert_eq!(field(&g, "lag"), Frame::NullBulk);
    r.call(&["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"]);
    let g = group(&mut r);
    assert_eq!(field(&g, "entries-read"), int(5));
    assert_eq!(field(&g, "lag"), int(0));
    r.call(&["XADD", "s", "9-0", "f", "v"]);
    let g = group(&mut r);
    assert_eq!(field(&g, "lag"), int(1));
}

#[test]
fn xclaim_options() {
    let s = TestServer::start();
    let mut r = s.raw();
    fill(&mut r, "s", 5);
    r.call(&["XGROUP", "CREATE", "s", "g", "0"]);
    r.call(&[
        "XREADGROUP",
        "GROUP",
        "g",
        "alice",
        "COUNT",
        "3",
        "STREAMS",
        "s",
        ">",
    ]);
    // Not idle long enough: nothing claimed.
    assert_eq!(
        r.call(&["XCLAIM", "s", "g", "bob", "3600000", "1-1"]),
        Frame::Array(vec![])
    );
    assert_eq!(
        r.call(&["XCLAIM", "s", "g", "bob", "0", "1-1", "2-1"]),
        entries(&[("1-1", &["f", "1"]), ("2-1", &["f", "2"])])
    );
    assert_eq!(
        r.call(&["XCLAIM", "s", "g", "bob", "0", "1-1", "JUSTID"]),
        bulks(&["1-1"])
    );
    assert_eq!(
        r.call(&[
            "XCLAIM",
            "s",
            "g",
            "bob",
            "0",
            "2-1",
            "RETRYCOUNT",
            "7",
            "JUSTID"
        ]),
        bulks(&["2-1"])
    );
    // Not pending: only FORCE creates it.
    assert_eq!(
        r.call(&["XCLAIM", "s", "g", "bob", "0", "5-1"]),
        Frame::Array(vec![])
    );
    assert_eq!(
        r.call(&["XCLAIM", "s", "g", "bob", "0", "5-1", "FORCE", "JUSTID"]),
        bulks(&["5-1"])
    );
    let rows = r.call(&["XPENDING", "s", "g", "-", "+", "10"]);
    let Frame::Array(rows) = rows else { panic!() };
    let counts: Vec<(Frame, Frame, Frame)> = rows
        .iter()
        .map(|row| match row {
            Frame::Array(v) => (v[0].clone(), v[1].clone(), v[3].clone()),
            o => panic!("{}", fmt_frame(o)),
        })
        .collect();
    assert_eq!(
        counts,
        vec![
            (bulk("1-1"), bulk("bob"), int(2)),
            (bulk("2-1"), bulk("bob"), int(7)),
            (bulk("3-1"), bulk("alice"), int(1)),
            (bulk("5-1"), bulk("bob"), int(1)),
        ]
    );
    // LASTID moves the group forward.
    r.call(&[
        "XCLAIM", "s", "g", "bob", "0", "3-1", "LASTID", "4-1", "IDLE", "500",
    ]);
    let g = r.call(&["XINFO", "GROUPS", "s"]);
    let Frame::Array(g) = g else { panic!() };
    assert_eq!(field(&g[0], "last-delivered-id"), bulk("4-1"));
    // A claimed entry that was deleted leaves the PEL.
    r.call(&["XDEL", "s", "3-1"]);
    assert_eq!(
        r.call(&["XCLAIM", "s", "g", "carol", "0", "3-1"]),
        Frame::Array(vec![])
    );
    assert_eq!(
        ids(&r.call(&["XPENDING", "s", "g", "-", "+", "10"])),
        ["1-1", "2-1", "5-1"]
    );
    assert_eq!(
        r.call(&["XCLAIM", "s", "g", "c", "x", "1-1"]),
        error("ERR Invalid min-idle-time argument for XCLAIM")
    );
    assert_eq!(
        r.call(&["XCLAIM", "s", "g", "c", "0", "1-1", "FOO"]),
        error("ERR Unrecognized XCLAIM option 'FOO'")
    );
    assert_eq!(
        r.call(&["XCLAIM", "s", "g", "c", "0", "1-1", "IDLE", "x"]),
        error("ERR Invalid IDLE option argument for XCLAIM")
    );
    assert_eq!(
        r.call(&["XCLAIM", "s", "nog", "c", "0", "1-1"]),
        error("NOGROUP No such key 's' or consumer group 'nog'")
    );
}

#[test]
fn xautoclaim_cursor_count_and_deleted() {
    let s = TestServer::start();
    let mut r = s.raw();
    fill(&mut r, "s", 6);
    r.call(&["XGROUP", "CREATE", "s", "g", "0"]);
    r.call(&["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">"]);
    r.call(&["XDEL", "s", "2-1"]);
    assert_eq!(
        r.call(&["XAUTOCLAIM", "s", "g", "bob", "0", "0", "COUNT", "2"]),
        Frame::Array(vec![
            bulk("3-1"),
            entries(&[("1-1", &["f", "1"])]),
            bulks(&["2-1"]),
        ])
    );
    assert_eq!(
        r.call(&[
            "XAUTOCLAIM",
            "s",
            "g",
            "bob",
            "0",
            "3-1",
            "COUNT",
            "3",
            "JUSTID"
        ]),
        Frame::Array(vec![
            bulk("6-1"),
            bulks(&["3-1", "4-1", "5-1"]),
            Frame::Array(vec![])
        ])
    );
    assert_eq!(
        r.call(&["XAUTOCLAIM", "s", "g", "bob", "0", "(5-1"]),
        Frame::Array(vec![
            bulk("0-0"),
            entries(&[("6-1", &["f", "6"])]),
            Frame::Array(vec![])
        ])
    );
    assert_eq!(
        r.call(&["XAUTOCLAIM", "s", "g", "carol", "3600000", "0"]),
        Frame::Array(vec![
            bulk("0-0"),
            Frame::Array(vec![]),
            Frame::Array(vec![])
        ])
    );
    assert_eq!(
        r.call(&["XAUTOCLAIM", "s", "g", "bob", "0", "0", "COUNT", "0"]),
        error("ERR COUNT must be > 0")
    );
    assert_eq!(
        r.call(&["XAUTOCLAIM", "s", "g", "bob", "x", "0"]),
        error("ERR Invalid min-idle-time argument for XAUTOCLAIM")
    );
    assert_eq!(
        r.call(&["XAUTOCLAIM", "s", "g", "bob", "0", "0", "FOO"]),
        error("ERR syntax error")
    );
    assert_eq!(
        r.call(&["XAUTOCLAIM", "s", "nog", "bob", "0", "0"]),
        error("NOGROUP No such key 's' or consumer group 'nog'")
    ); // A COUNT whose transient array could never be allocated (Redis
       // allocates it after finding the group; a real COUNT just caps).
    let huge = "500000000000000000";
    assert_eq!(
        r.call(&["XAUTOCLAIM", "s", "g", "bob", "0", "0", "COUNT", huge]),
        error("ERR Insufficient memory, failed allocating transient memory, COUNT too high.")
    );
    assert_eq!(
        r.call(&["XAUTOCLAIM", "s", "nog", "bob", "0", "0", "COUNT", huge]),
        error("NOGROUP No such key 's' or consumer group 'nog'")
    );
    assert!(matches!(
        r.call(&[
            "XAUTOCLAIM",
            "s",
            "g",
            "bob",
            "0",
            "0",
            "COUNT",
            "1000000000"
        ]),
        Frame::Array(_)
    ));
}

#[test]
fn xinfo_stream_full_and_errors() {
    let s = TestServer::start();
    let mut r = s.raw();
    fill(&mut r, "s", 3);
    r.call(&["XGROUP", "CREATE", "s", "g", "0"]);
    r.call(&[
        "XREADGROUP",
        "GROUP",
        "g",
        "alice",
        "COUNT",
        "1",
        "STREAMS",
        "s",
        ">",
    ]);
    let info = r.call(&["XINFO", "STREAM", "s"]);
    let names: Vec<String> = fields(&info).into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        names,
        [
            "length",
            "radix-tree-keys",
            "radix-tree-nodes",
            "last-generated-id",
            "max-deleted-entry-id",
            "entries-added",
            "recorded-first-entry-id",
            "groups",
            "first-entry",
            "last-entry"
        ]
    );
    assert_eq!(field(&info, "length"), int(3));
    assert_eq!(field(&info, "radix-tree-keys"), int(1));
    assert_eq!(field(&info, "groups"), int(1));
    let full = r.call(&["XINFO", "STREAM", "s", "FULL", "COUNT", "2"]);
    let names: Vec<String> = fields(&full).into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        names,
        [
            "length",
            "radix-tree-keys",
            "radix-tree-nodes",
            "last-generated-id",
            "max-deleted-entry-id",
            "entries-added",
            "recorded-first-entry-id",
            "entries",
            "groups"
        ]
    );
    assert_eq!(ids(&field(&full, "entries")), ["1-1", "2-1"]);
    let Frame::Array(groups) = field(&full, "groups") else {
        panic!()
    };
    let g = &groups[0];
    let names: Vec<String> = fields(g).into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        names,
        [
            "name",
            "last-delivered-id",
            "entries-read",
            "lag",
            "pel-count",
            "pending",
            "consumers"
        ]
    );
    assert_eq!(field(g, "entries-read"), int(1));
    assert_eq!(field(g, "lag"), int(2));
    assert_eq!(field(g, "pel-count"), int(1));
    let Frame::Array(cons) = field(g, "consumers") else {
        panic!()
    };
    let names: Vec<String> = fields(&cons[0]).into_iter().map(|(k, _)| k).collect();
    assert_eq!(names, ["name", "seen-time", "pel-count", "pending"]);
    assert_eq!(
        r.call(&["XINFO", "STREAM", "nokey"]),
        error("ERR no such key")
    );
    assert_eq!(
        r.call(&["XINFO", "GROUPS", "nokey"]),
        error("ERR no such key")
    );
    assert_eq!(
        r.call(&["XINFO", "CONSUMERS", "s", "nog"]),
        error("NOGROUP No such consumer group 'nog' for key name 's'")
    );
    assert_eq!(
        r.call(&["XINFO", "STREAM", "s", "foo"]),
        error("ERR unknown subcommand or wrong number of arguments for 'STREAM'. Try XINFO HELP.")
    );
    assert_eq!(
        r.call(&["XINFO", "STREAM", "s", "FULL", "COUNT"]),
        error("ERR unknown subcommand or wrong number of arguments for 'STREAM'. Try XINFO HELP.")
    );
    assert_eq!(
        r.call(&["XINFO", "FOO", "s"]),
        error("ERR unknown subcommand 'FOO'. Try XINFO HELP.")
    );
    r.call(&["SET", "str", "x"]);
    assert_eq!(r.call(&["XINFO", "STREAM", "str"]), error(WRONGTYPE));
    // RESP3 maps.
    r.call(&["HELLO", "3"]);
    assert!(matches!(r.call(&["XINFO", "STREAM", "s"]), Frame::Map(_)));
}

#[test]
fn xsetid_checks_and_effects() {
    let s = TestServer::start();
    let mut r = s.raw();
    fill(&mut r, "s", 3);
    assert_eq!(r.call(&["XSETID", "nokey", "5"]), error("ERR no such key"));
    assert_eq!(
        r.call(&["XSETID", "s", "2-0"]),
        error("ERR The ID specified in XSETID is smaller than the target stream top item")
    );
    assert_eq!(
        r.call(&["XSETID", "s", "9", "MAXDELETEDID", "10"]),
        error("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id")
    );
    assert_eq!(
        r.call(&["XSETID", "s", "9", "ENTRIESADDED", "-1"]),
        error("ERR entries_added must be positive")
    );
    assert_eq!(
        r.call(&["XSETID", "s", "9", "ENTRIESADDED", "1"]),
        error("ERR The entries_added specified in XSETID is smaller than the target stream length")
    );
    assert_eq!(
        r.call(&["XSETID", "s", "9", "FOO", "1"]),
        error("ERR syntax error")
    );
    assert_eq!(
        r.call(&[
            "XSETID",
            "s",
            "9",
            "ENTRIESADDED",
            "10",
            "MAXDELETEDID",
            "8"
        ]),
        ok()
    );
    let info = r.call(&["XINFO", "STREAM", "s"]);
    assert_eq!(field(&info, "last-generated-id"), bulk("9-0"));
    assert_eq!(field(&info, "entries-added"), int(10));
    assert_eq!(field(&info, "max-deleted-entry-id"), bulk("8-0"));
    // 7.0 does not hold the last ID above the max deleted one.
    assert_eq!(r.call(&["XSETID", "s", "7"]), ok());
    assert_eq!(r.call(&["XSETID", "s", "9"]), ok());
    assert_eq!(
        add(&mut r, "s", "9-0", &["a", "b"]),
        error("ERR The ID specified in XADD is equal or smaller than the target stream top item")
    );
    assert_eq!(add(&mut r, "s", "*", &["a", "b"]).clone(), {
        let f = r.call(&["XINFO", "STREAM", "s"]);
        field(&f, "last-generated-id")
    });
}

#[test]
fn copy_rename_and_keyspace_events() {
    let s = TestServer::start();
    let mut r = s.raw();
    fill(&mut r, "s", 2);
    r.call(&["XGROUP", "CREATE", "s", "g", "0"]);
    assert_eq!(r.call(&["COPY", "s", "c"]), int(1));
    assert_eq!(r.call(&["XADD", "c", "3-1", "f", "3"]), bulk("3-1"));
    assert_eq!(r.call(&["XLEN", "s"]), int(2));
    assert_eq!(r.call(&["XLEN", "c"]), int(3));
    assert_eq!(r.call(&["RENAME", "c", "d"]), ok());
    let g = r.call(&["XINFO", "GROUPS", "d"]);
    let Frame::Array(g) = g else { panic!() };
    assert_eq!(field(&g[0], "name"), bulk("g"));
    r.call(&["SET", "str", "x"]);
    let Frame::Array(scan) = r.call(&["SCAN", "0", "TYPE", "stream", "COUNT", "1000"]) else {
        panic!("SCAN")
    };
    let Frame::Array(mut keys) = scan[1].clone() else {
        panic!("SCAN keys")
    };
    keys.sort_by_key(fmt_frame);
    assert_eq!(keys, vec![bulk("d"), bulk("s")]);

    r.call(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
    let mut sub = s.raw();
    sub.call(&["PSUBSCRIBE", "__keyevent@0__:*"]);
    let cmds: &[&[&str]] = &[
        &["XADD", "e", "1-1", "f", "v"],
        &["XADD", "e", "MAXLEN", "0", "2-1", "f", "v"],
        &["XGROUP", "CREATE", "e", "g", "0"],
        &["XGROUP", "CREATECONSUMER", "e", "g", "c1"],
        &["XADD", "e", "3-1", "f", "v"],
        &["XREADGROUP", "GROUP", "g", "c2", "STREAMS", "e", ">"],
        &["XCLAIM", "e", "g", "c3", "0", "3-1"],
        &["XGROUP", "SETID", "e", "g", "0"],
        &["XGROUP", "DELCONSUMER", "e", "g", "c1"],
        &["XGROUP", "DESTROY", "e", "g"],
        &["XSETID", "e", "5-5"],
        &["XDEL", "e", "3-1"],
        &["XADD", "e", "6-1", "f", "v"],
        &["XTRIM", "e", "MAXLEN", "0"],
    ];
    for c in cmds {
        r.call(c);
    }
    let want = [
        "xadd",
        "xadd",
        "xtrim",
        "xgroup-create",
        "xgroup-createconsumer",
        "xadd",
        "xgroup-createconsumer",
        "xgroup-createconsumer",
        "xgroup-setid",
        "xgroup-delconsumer",
        "xgroup-destroy",
        "xsetid",
        "xdel",
        "xadd",
        "xtrim",
    ];
    for w in want {
        match sub.read_frame() {
            Frame::Array(v) | Frame::Push(v) => {
                assert_eq!(v[2], bulk(format!("__keyevent@0__:{w}")));
                assert_eq!(v[3], bulk("e"));
            }
            o => panic!("{}", fmt_frame(&o)),
        }
    }
}

// ---- blocking -----------------------------------------------------------------------------

fn threaded_server() -> TestServer {
    TestServer::start_with(&["--io-threads", "4"])
}

fn client_id(r: &mut RawClient) -> i64 {
    match r.call(&["CLIENT", "ID"]) {
        Frame::Integer(id) => id,
        other => panic!("CLIENT ID answered {}", fmt_frame(&other)),
    }
}

/// A connection that sent a blocking command the server is now running.
fn block(s: &TestServer, admin: &mut RawClient, args: &[&str]) -> RawClient {
    let mut r = s.raw();
    let id = client_id(&mut r);
    r.send(args);
    let cmd = args[0].to_ascii_lowercase();
    let ok = wait_until(Duration::from_secs(10), || {
        match admin.call(&["CLIENT", "LIST", "ID", &id.to_string()]) {
            Frame::Bulk(b) => {
                let line = String::from_utf8_lossy(&b).into_owned();
                line.contains(&format!("cmd={cmd} ")) && line.contains("flags=b")
            }
            _ => false,
        }
    });
    assert!(ok, "client {id} never blocked in {cmd}");
    r
}

#[test]
fn xread_block_times_out_and_is_woken_by_xadd() {
    let s = threaded_server();
    let mut admin = s.raw();
    let mut r = s.raw();
    assert_eq!(
        r.call(&["XREAD", "BLOCK", "100", "STREAMS", "s", "$"]),
        Frame::NullArray
    );
    add(&mut admin, "s", "1-1", &["a", "1"]);
    // `$` means entries after the last one at the time of blocking.
    let mut readers: Vec<RawClient> = (0..3)
        .map(|_| {
            block(
                &s,
                &mut admin,
                &["XREAD", "BLOCK", "0", "STREAMS", "other", "s", "0", "$"],
            )
        })
        .collect();
    add(&mut admin, "s", "2-1", &["a", "2"]);
    for w in readers.iter_mut() {
        assert_eq!(
            w.read_frame(),
            Frame::Array(vec![Frame::Array(vec![
                bulk("s"),
                entries(&[("2-1", &["a", "2"])])
            ])])
        );
    }
    // An explicit ID in the future waits for an entry above it.
    let mut w = block(
        &s,
        &mut admin,
        &["XREAD", "BLOCK", "30000", "STREAMS", "s", "5-0"],
    );
    let mut w2 = block(
        &s,
        &mut admin,
        &["XREAD", "BLOCK", "30000", "STREAMS", "s", "$"],
    );
    add(&mut admin, "s", "3-1", &["a", "3"]);
    assert_eq!(
        w2.read_frame(),
        Frame::Array(vec![Frame::Array(vec![
            bulk("s"),
            entries(&[("3-1", &["a", "3"])])
        ])])
    );
    add(&mut admin, "s", "6-1", &["a", "6"]);
    assert_eq!(
        w.read_frame(),
        Frame::Array(vec![Frame::Array(vec![
            bulk("s"),
            entries(&[("6-1", &["a", "6"])])
        ])])
    );
}

#[test]
fn blocked_xreadgroup_consumers_are_served_in_order() {
    let s = threaded_server();
    let mut admin = s.raw();
    admin.call(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
    let mut waiters: Vec<RawClient> = (0..3)
        .map(|i| {
            let c = format!("c{i}");
            block(
                &s,
                &mut admin,
                &[
                    "XREADGROUP",
                    "GROUP",
                    "g",
                    &c,
                    "BLOCK",
                    "0",
                    "STREAMS",
                    "s",
                    ">",
                ],
            )
        })
        .collect();
    for (i, w) in waiters.iter_mut().enumerate() {
        let id = format!("{}-1", i + 1);
        add(&mut admin, "s", &id, &["n", &i.to_string()]);
        assert_eq!(
            w.read_frame(),
            Frame::Array(vec![Frame::Array(vec![
                bulk("s"),
                entries(&[(&id, &["n", &i.to_string()])])
            ])])
        );
    }
    let p = admin.call(&["XPENDING", "s", "g"]);
    assert_eq!(
        p,
        Frame::Array(vec![
            int(3),
            bulk("1-1"),
            bulk("3-1"),
            Frame::Array(vec![
                bulks(&["c0", "1"]),
                bulks(&["c1", "1"]),
                bulks(&["c2", "1"])
            ]),
        ])
    );
    // Timeouts answer a null array and create no consumer.
    let mut r = s.raw();
    assert_eq!(
        r.call(&[
            "XREADGROUP",
            "GROUP",
            "g",
            "late",
            "BLOCK",
            "50",
            "STREAMS",
            "s",
            ">"
        ]),
        Frame::NullArray
    );
    let cons = admin.call(&["XINFO", "CONSUMERS", "s", "g"]);
    let Frame::Array(cons) = cons else { panic!() };
    assert_eq!(cons.len(), 3);
}

/// Consumer c of group g waits for new entries of stream s.
const READ_S_BLOCKING: [&str; 9] = [
    "XREADGROUP",
    "GROUP",
    "g",
    "c",
    "BLOCK",
    "0",
    "STREAMS",
    "s",
    ">",
];

#[test]
fn deleting_a_stream_or_group_unblocks_xreadgroup() {
    let s = threaded_server();
    let mut admin = s.raw();
    add(&mut admin, "s", "1-1", &["f", "v"]);
    admin.call(&["XGROUP", "CREATE", "s", "g", "$"]);
    let mut w = block(&s, &mut admin, &READ_S_BLOCKING);
    let mut reader = block(
        &s,
        &mut admin,
        &["XREAD", "BLOCK", "0", "STREAMS", "s", "$"],
    );
    assert_eq!(admin.call(&["DEL", "s"]), int(1));
    assert_eq!(
        w.read_frame(),
        error("UNBLOCKED the stream key no longer exists")
    );
    // A plain XREAD keeps waiting and is served by the next XADD.
    add(&mut admin, "s", "5-1", &["a", "b"]);
    assert_eq!(
        reader.read_frame(),
        Frame::Array(vec![Frame::Array(vec![
            bulk("s"),
            entries(&[("5-1", &["a", "b"])])
        ])])
    );
    admin.call(&["XGROUP", "CREATE", "s", "g", "$"]);
    let mut w = block(&s, &mut admin, &READ_S_BLOCKING);
    assert_eq!(admin.call(&["XGROUP", "DESTROY", "s", "g"]), int(1));
    assert_eq!(
        w.read_frame(),
        error("NOGROUP the consumer group this client was blocked on no longer exists")
    );
    assert_eq!(w.call(&["PING"]), Frame::Simple(b"PONG".to_vec()));
}

/// A stream that goes away by being overwritten or by expiring answers its blocked
/// XREADGROUP readers, as Redis 7.0 does; a reader blocked on several streams is served from
/// the one that became ready first.
#[test]
fn overwritten_or_expired_streams_unblock_readers_and_first_ready_key_wins() {
    let s = TestServer::start();
    let mut b = s.raw();
    assert_eq!(
        b.call(&["XGROUP", "CREATE", "ow", "g", "$", "MKSTREAM"]),
        ok()
    );
    let mut a = s.raw();
    a.send(&[
        "XREADGROUP",
        "GROUP",
        "g",
        "c",
        "BLOCK",
        "0",
        "STREAMS",
        "ow",
        ">",
    ]);
    wait_until(
        Duration::from_secs(10),
        || matches!(b.call(&["CLIENT", "LIST"]), Frame::Bulk(l) if String::from_utf8_lossy(&l).contains("flags=b")),
    );
    assert_eq!(b.call(&["SET", "ow", "foo"]), Frame::Simple(b"OK".to_vec()));
    assert_eq!(
        a.read_frame(),
        error("UNBLOCKED the stream key no longer exists")
    );

    assert_eq!(
        b.call(&["XGROUP", "CREATE", "ex", "g", "$", "MKSTREAM"]),
        ok()
    );
    assert_eq!(b.call(&["PEXPIRE", "ex", "300"]), int(1));
    a.send(&[
        "XREADGROUP",
        "GROUP",
        "g",
        "c",
        "BLOCK",
        "0",
        "STREAMS",
        "ex",
        ">",
    ]);
    assert_eq!(
        a.read_frame(),
        error("UNBLOCKED the stream key no longer exists")
    );

    a.send(&["XREAD", "BLOCK", "0", "STREAMS", "k1", "k2", "$", "$"]);
    wait_until(
        Duration::from_secs(10),
        || matches!(b.call(&["CLIENT", "LIST"]), Frame::Bulk(l) if String::from_utf8_lossy(&l).contains("flags=b")),
    );
    b.call(&["MULTI"]);
    b.call(&["XADD", "k1", "1-1", "f", "v"]);
    b.call(&["XADD", "k2", "1-1", "f", "v"]);
    assert!(matches!(b.call(&["EXEC"]), Frame::Array(_)));
    match a.read_frame() {
        Frame::Array(streams) => {
            assert_eq!(
                streams.len(),
                1,
                "served from one stream only: {}",
                fmt_frame(&Frame::Array(streams.clone()))
            );
            assert_eq!(
                streams[0],
                Frame::Array(vec![bulk("k1"), entries(&[("1-1", &["f", "v"])])])
            );
        }
        other => panic!("XREAD answered {}", fmt_frame(&other)),
    }
}

/// A blocked XREADGROUP whose stream is deleted answers UNBLOCKED even when
/// another command re-creates the stream and its group before the reader
/// runs again (Redis answers it as soon as the deleting command ends); when
/// the deletion and re-creation are one transaction, the reader is served
/// from the new stream, as in Redis.
#[test]
fn deleted_and_recreated_stream_unblocks_xreadgroup_like_redis() {
    let s = threaded_server();
    let mut admin = s.raw();
    let recreate: [&[&str]; 3] = [
        &["DEL", "s"],
        &["XADD", "s", "1-1", "f", "v"],
        &["XGROUP", "CREATE", "s", "g", "0"],
    ];

    // Separate commands (one pipeline): UNBLOCKED.
    admin.call(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
    let mut w = block(&s, &mut admin, &READ_S_BLOCKING);
    assert_eq!(admin.pipeline(&recreate), vec![int(1), bulk("1-1"), ok()]);
    assert_eq!(
        w.read_frame(),
        error("UNBLOCKED the stream key no longer exists")
    );

    // One transaction: served from the new stream.
    admin.call(&["DEL", "s"]);
    admin.call(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
    let mut w = block(&s, &mut admin, &READ_S_BLOCKING);
    assert_eq!(admin.call(&["MULTI"]), ok());
    for c in recreate {
        assert_eq!(admin.call(c), Frame::Simple(b"QUEUED".to_vec()));
    }
    assert_eq!(
        admin.call(&["EXEC"]),
        Frame::Array(vec![int(1), bulk("1-1"), ok()])
    );
    assert_eq!(
        w.read_frame(),
        Frame::Array(vec![Frame::Array(vec![
            bulk("s"),
            entries(&[("1-1", &["f", "v"])])
        ])])
    );
}

/// An exact MINID trim can leave a node holding only tombstones; after
/// XSETID lowers the emptied stream's last ID, new entries below that
/// node's first ID join it, as in Redis (whose node deltas are signed; a
/// debug build overflowed here, found by a differential seed).
#[test]
fn trim_to_tombstones_then_lower_ids() {
    let s = TestServer::start();
    let mut r = s.raw();
    add(&mut r, "s", "1-1", &["f", "v"]);
    add(&mut r, "s", "2-1", &["f", "v"]);
    assert_eq!(r.call(&["XDEL", "s", "2-1"]), int(1));
    assert_eq!(r.call(&["XTRIM", "s", "MINID", "2-0"]), int(1));
    assert_eq!(r.call(&["XLEN", "s"]), int(0));
    assert_eq!(r.call(&["XSETID", "s", "0-5"]), ok());
    assert_eq!(add(&mut r, "s", "0-6", &["f", "v"]), bulk("0-6"));
    assert_eq!(add(&mut r, "s", "0-7", &["g", "w"]), bulk("0-7"));
    assert_eq!(
        r.call(&["XRANGE", "s", "-", "+"]),
        entries(&[("0-6", &["f", "v"]), ("0-7", &["g", "w"])])
    );
    let info = r.call(&["XINFO", "STREAM", "s"]);
    assert_eq!(field(&info, "radix-tree-keys"), int(1));
    assert_eq!(field(&info, "length"), int(2));
}

/// A consumer whose XREADGROUP BLOCK timed out and that then blocks on
/// something else (here BLPOP) holds no place in the group's queue: another
/// consumer reads a new entry at once instead of waiting behind it.
#[test]
fn group_reader_blocked_elsewhere_does_not_hold_up_other_consumers() {
    let s = threaded_server();
    let mut admin = s.raw();
    assert_eq!(
        admin.call(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]),
        Frame::Simple(b"OK".to_vec())
    );
    let mut a = s.raw();
    let a_id = client_id(&mut a);
    let timed_out = a.call(&[
        "XREADGROUP",
        "GROUP",
        "g",
        "a",
        "BLOCK",
        "50",
        "STREAMS",
        "s",
        ">",
    ]);
    assert!(
        matches!(timed_out, Frame::NullArray | Frame::Null),
        "{}",
        fmt_frame(&timed_out)
    );
    a.send(&["BLPOP", "list", "0"]);
    let blocked = wait_until(Duration::from_secs(10), || {
        match admin.call(&["CLIENT", "LIST", "ID", &a_id.to_string()]) {
            Frame::Bulk(b) => String::from_utf8_lossy(&b).contains("cmd=blpop "),
            _ => false,
        }
    });
    assert!(blocked, "the BLPOP never blocked");
    add(&mut admin, "s", "1-1", &["f", "v"]);
    let got = admin.call(&["XREADGROUP", "GROUP", "g", "b", "STREAMS", "s", ">"]);
    assert!(
        fmt_frame(&got).contains("1-1"),
        "consumer b got {}",
        fmt_frame(&got)
    );
    assert_eq!(admin.call(&["LPUSH", "list", "x"]), Frame::Integer(1));
    assert_eq!(a.read_frame(), Frame::Array(vec![bulk("list"), bulk("x")]));
}

/// XREAD and XREADGROUP with BLOCK are refused inside scripts (even when
/// data is there), named as the script spelled them; a BLOCK too large to
/// add to the clock waits until served.
#[test]
fn xread_block_in_scripts_and_huge_block() {
    let s = TestServer::start();
    let mut c = s.raw();
    c.call(&["XADD", "s", "1-1", "f", "v"]);
    assert_eq!(
        c.call(&[
            "EVAL",
            "return redis.pcall('xread','block',0,'streams','s','0')",
            "0"
        ]),
        error("ERR xread command is not allowed with BLOCK option from scripts")
    );
    assert_eq!(
        c.call(&[
            "EVAL",
            "return redis.pcall('XREAD','COUNT',1,'BLOCK',10,'STREAMS','s','0')",
            "0"
        ]),
        error("ERR XREAD command is not allowed with BLOCK option from scripts")
    );
    let mut waiter = s.raw();
    waiter.send(&["XREAD", "BLOCK", "9223372036854775807", "STREAMS", "s", "$"]);
    assert!(wait_until(
        std::time::Duration::from_secs(20),
        || matches!(c.call(&["CLIENT", "LIST"]), Frame::Bulk(b) if String::from_utf8_lossy(&b).contains("cmd=xread")),
    ));
    c.call(&["XADD", "s", "2-1", "f", "w"]);
    let Frame::Array(reply) = waiter.read_frame() else {
        panic!("XREAD reply")
    };
    assert_eq!(reply.len(), 1);
}

/// A consumer blocked in XREADGROUP takes the entry before the adding client's next command
/// runs, as Redis serves blocked clients right after the command that fed them.
#[test]
fn blocked_group_reader_is_served_before_the_adders_next_command() {
    let s = threaded_server();
    let mut admin = s.raw();
    admin.call(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
    let mut reader = block(
        &s,
        &mut admin,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "c",
            "BLOCK",
            "0",
            "STREAMS",
            "s",
            ">",
        ],
    );
    let mut adder = s.raw();
    let replies = adder.pipeline(&[
        vec!["XADD", "s", "1-1", "f", "v"],
        vec!["XPENDING", "s", "g"],
    ]);
    assert_eq!(replies[0], bulk("1-1"));
    assert_eq!(
        replies[1],
        Frame::Array(vec![
            Frame::Integer(1),
            bulk("1-1"),
            bulk("1-1"),
            Frame::Array(vec![Frame::Array(vec![bulk("c"), bulk("1")])]),
        ])
    );
    assert_eq!(
        reader.read_frame(),
        Frame::Array(vec![Frame::Array(vec![
            bulk("s"),
            Frame::Array(vec![Frame::Array(vec![bulk("1-1"), bulks(&["f", "v"])])]),
        ])])
    );
}

fn keyspace_hits_and_misses(admin: &mut RawClient) -> (u64, u64) {
    let Frame::Bulk(info) = admin.call(&["INFO", "stats"]) else {
        panic!("INFO stats is a bulk string")
    };
    let info = String::from_utf8_lossy(&info).into_owned();
    let field = |name: &str| -> u64 {
        info.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {info}"))
    };
    (field("keyspace_hits:"), field("keyspace_misses:"))
}

/// Redis looks each key of XREAD and XREADGROUP up twice, and serves a woken reader without
/// counting the key again.
#[test]
fn stream_reads_count_keyspace_hits_as_redis_does() {
    let s = threaded_server();
    let mut admin = s.raw();
    admin.call(&["XADD", "s", "1-1", "f", "v"]);
    admin.call(&["XGROUP", "CREATE", "s", "g", "0"]);
    admin.call(&["CONFIG", "RESETSTAT"]);
    admin.call(&["XREAD", "STREAMS", "s", "0"]);
    assert_eq!(keyspace_hits_and_misses(&mut admin), (2, 0));
    admin.call(&["XREAD", "STREAMS", "s", "missing", "$", "0"]);
    assert_eq!(keyspace_hits_and_misses(&mut admin), (4, 2));
    admin.call(&["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0"]);
    assert_eq!(keyspace_hits_and_misses(&mut admin), (6, 2));
    let mut reader = block(
        &s,
        &mut admin,
        &["XREAD", "BLOCK", "0", "STREAMS", "s", "$"],
    );
    assert_eq!(keyspace_hits_and_misses(&mut admin), (8, 2));
    admin.call(&["XADD", "s", "2-1", "f", "v"]);
    assert!(matches!(reader.read_frame(), Frame::Array(_)));
    assert_eq!(keyspace_hits_and_misses(&mut admin), (8, 2));
}

/// A woken reader whose stream moved past its ID is served even if what
/// was added is gone again (trimmed by the adding XADD, or deleted in the
/// same transaction): an empty entry list for that key, as Redis sends,
/// rather than staying blocked; with several keys, from the key that
/// became ready first.
#[test]
fn woken_reader_is_served_even_when_the_new_entries_are_gone() {
    let s = threaded_server();
    let mut admin = s.raw();
    add(&mut admin, "s", "1-1", &["a", "1"]);
    let empty_for =
        |key: &str| Frame::Array(vec![Frame::Array(vec![bulk(key), Frame::Array(vec![])])]);

    let mut r = block(
        &s,
        &mut admin,
        &["XREAD", "BLOCK", "0", "STREAMS", "s", "$"],
    );
    admin.call(&["XADD", "s", "MAXLEN", "0", "2-1", "a", "1"]);
    assert_eq!(r.read_frame(), empty_for("s"));

    admin.call(&["XGROUP", "CREATE", "s", "g", "$"]);
    let mut r = block(
        &s,
        &mut admin,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "c",
            "BLOCK",
            "0",
            "STREAMS",
            "s",
            ">",
        ],
    );
    admin.pipeline(&[
        vec!["MULTI"],
        vec!["XADD", "s", "3-1", "a", "1"],
        vec!["XDEL", "s", "3-1"],
        vec!["EXEC"],
    ]);
    assert_eq!(r.read_frame(), empty_for("s"));

    add(&mut admin, "t", "1-1", &["a", "1"]);
    let mut r = block(
        &s,
        &mut admin,
        &["XREAD", "BLOCK", "0", "STREAMS", "s", "t", "$", "$"],
    );
    admin.pipeline(&[
        vec!["MULTI"],
        vec!["XADD", "s", "MAXLEN", "0", "4-1", "a", "1"],
        vec!["XADD", "t", "4-1", "a", "1"],
        vec!["EXEC"],
    ]);
    assert_eq!(r.read_frame(), empty_for("s"));
}

/// A consumer blocked on a group holds back only readers that come after
/// it has been woken: a plain XREADGROUP still reads new entries at once
/// while it waits (after XGROUP SETID, which wakes nobody), and one inside
/// the transaction that adds them reads first, the blocked consumer getting
/// the rest when the transaction ends, as in Redis.
#[test]
fn blocked_group_consumer_does_not_hold_back_plain_readers() {
    let s = threaded_server();
    let mut admin = s.raw();
    add(&mut admin, "s", "1-1", &["a", "1"]);
    admin.call(&["XGROUP", "CREATE", "s", "g", "$"]);
    let mut a = block(
        &s,
        &mut admin,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "a",
            "BLOCK",
            "0",
            "STREAMS",
            "s",
            ">",
        ],
    );
    admin.call(&["XGROUP", "SETID", "s", "g", "0"]);
    let got = admin.call(&["XREADGROUP", "GROUP", "g", "b", "STREAMS", "s", ">"]);
    assert_eq!(
        got,
        Frame::Array(vec![Frame::Array(vec![
            bulk("s"),
            entries(&[("1-1", &["a", "1"])])
        ])])
    );

    let replies = admin.pipeline(&[
        vec!["MULTI"],
        vec!["XADD", "s", "2-1", "a", "2"],
        vec!["XADD", "s", "3-1", "a", "3"],
        vec![
            "XREADGROUP",
            "GROUP",
            "g",
            "b",
            "COUNT",
            "1",
            "STREAMS",
            "s",
            ">",
        ],
        vec!["EXEC"],
    ]);
    assert_eq!(
        replies[4],
        Frame::Array(vec![
            bulk("2-1"),
            bulk("3-1"),
            Frame::Array(vec![Frame::Array(vec![
                bulk("s"),
                entries(&[("2-1", &["a", "2"])])
            ])])
        ])
    );
    assert_eq!(
        a.read_frame(),
        Frame::Array(vec![Frame::Array(vec![
            bulk("s"),
            entries(&[("3-1", &["a", "3"])])
        ])])
    );
}
