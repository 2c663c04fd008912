//! Bitmap commands (SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD, BITFIELD_RO) through the
//! `redis` crate. Expected values are what redis-server 7.0 replies (run with
//! `TESSERA_TEST_TARGET=redis` to check them against it).

mod common;

use common::{q, q_err, Frame, TestServer};
use redis::Value;

fn server() -> (TestServer, redis::Connection) {
    let s = TestServer::start();
    let c = s.client();
    (s, c)
}

fn set_bytes(c: &mut redis::Connection, key: &str, v: &[u8]) {
    let _: () = redis::cmd("SET").arg(key).arg(v).query(c).unwrap();
}

fn get_bytes(c: &mut redis::Connection, key: &str) -> Vec<u8> {
    redis::cmd("GET").arg(key).query(c).unwrap()
}

const OFFSET_ERR: &str = "ERR bit offset is not an integer or out of range";
const TYPE_ERR: &str =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";
const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

#[test]
fn setbit_getbit_roundtrip_and_growth() {
    let (_s, mut c) = server();
    assert_eq!(q::<i64>(&mut c, &["SETBIT", "k", "7", "1"]), 0);
    assert_eq!(get_bytes(&mut c, "k"), b"\x01");
    assert_eq!(q::<i64>(&mut c, &["SETBIT", "k", "7", "0"]), 1);
    assert_eq!(q::<i64>(&mut c, &["SETBIT", "k", "0", "1"]), 0);
    assert_eq!(get_bytes(&mut c, "k"), b"\x80");
    // Growing pads with zero bytes.
    assert_eq!(q::<i64>(&mut c, &["SETBIT", "k", "23", "1"]), 0);
    assert_eq!(get_bytes(&mut c, "k"), b"\x80\x00\x01");
    assert_eq!(q::<i64>(&mut c, &["SETBIT", "k", "100", "0"]), 0);
    assert_eq!(q::<i64>(&mut c, &["STRLEN", "k"]), 13);
    assert_eq!(q::<i64>(&mut c, &["GETBIT", "k", "0"]), 1);
    assert_eq!(q::<i64>(&mut c, &["GETBIT", "k", "1"]), 0);
    assert_eq!(q::<i64>(&mut c, &["GETBIT", "k", "23"]), 1);
    assert_eq!(q::<i64>(&mut c, &["GETBIT", "k", "10000"]), 0);
    assert_eq!(q::<i64>(&mut c, &["GETBIT", "missing", "3"]), 0);
    assert_eq!(q::<String>(&mut c, &["OBJECT", "ENCODING", "k"]), "raw");
}

#[test]
fn setbit_errors() {
    let (_s, mut c) = server();
    for off in ["-1", "abc", "4294967296", "1.5", ""] {
        assert_eq!(
            q_err(&mut c, &["SETBIT", "k", off, "1"]),
            OFFSET_ERR,
            "{off}"
        );
        assert_eq!(q_err(&mut c, &["GETBIT", "k", off]), OFFSET_ERR, "{off}");
    }
    for v in ["2", "-1", "x", "10"] {
        assert_eq!(
            q_err(&mut c, &["SETBIT", "k", "1", v]),
            "ERR bit is not an integer or out of range"
        );
    }
    // The offset is checked before the key's type.
    q::<i64>(&mut c, &["LPUSH", "l", "a"]);
    assert_eq!(q_err(&mut c, &["SETBIT", "l", "-1", "1"]), OFFSET_ERR);
    assert_eq!(q_err(&mut c, &["SETBIT", "l", "1", "1"]), WRONGTYPE);
    assert_eq!(q_err(&mut c, &["GETBIT", "l", "1"]), WRONGTYPE);
    assert_eq!(
        q_err(&mut c, &["SETBIT", "k", "1"]),
        "ERR wrong number of arguments for 'setbit' command"
    );
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "k"]), 0);
}

#[test]
fn setbit_respects_proto_max_bulk_len() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["CONFIG", "SET", "proto-max-bulk-len", "1mb"]);
    assert_eq!(q_err(&mut c, &["SETBIT", "k", "8388608", "1"]), OFFSET_ERR);
    assert_eq!(q::<i64>(&mut c, &["SETBIT", "k", "8388607", "1"]), 0);
    assert_eq!(q::<i64>(&mut c, &["STRLEN", "k"]), 1 << 20);
    assert_eq!(
        q_err(&mut c, &["BITFIELD", "k", "GET", "u8", "8388608"]),
        OFFSET_ERR
    );
}

#[test]
fn bit_commands_read_integer_strings_as_text() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "n", "12"]);
    // "12" = 0x31 0x32.
    assert_eq!(q::<i64>(&mut c, &["BITCOUNT", "n"]), 6);
    assert_eq!(q::<i64>(&mut c, &["GETBIT", "n", "2"]), 1);
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "n", "1"]), 2);
    assert_eq!(
        q::<Vec<i64>>(&mut c, &["BITFIELD", "n", "GET", "u16", "0"]),
        vec![0x3132]
    );
    assert_eq!(q::<i64>(&mut c, &["SETBIT", "n", "15", "1"]), 0);
    assert_eq!(q::<String>(&mut c, &["GET", "n"]), "13");
    assert_eq!(q::<String>(&mut c, &["OBJECT", "ENCODING", "n"]), "raw");
}

#[test]
fn bitcount_ranges_and_units() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "k", "foobar"]);
    assert_eq!(q::<i64>(&mut c, &["BITCOUNT", "k"]), 26);
    assert_eq!(q::<i64>(&mut c, &["BITCOUNT", "k", "0", "0"]), 4);
    assert_eq!(q::<i64>(&mut c, &["BITCOUNT", "k", "1", "1"]), 6);
    assert_eq!(q::<i64>(&mut c, &["BITCOUNT", "k", "1", "1", "BYTE"]), 6);
    assert_eq!(q::<i64>(&mut c, &["BITCOUNT", "k", "5", "30", "BIT"]), 17);
    assert_eq!(q::<i64>(&mut c, &["BITCOUNT", "k", "5", "30", "bit"]), 17);
    assert_eq!(q::<i64>(&mut c, &["BITCOUNT", "k", "-2", "-1"]), 7);
    assert_eq!(q::<i64>(&mut c, &["BITCOUNT", "k", "-100", "100"]), 26);
    assert_eq!(q::<i64>(&mut c, &["BITCOUNT", "k", "3", "1"]), 0);
    assert_eq!(q::<i64>(&mut c, &["BITCOUNT", "k", "0", "-1", "BIT"]), 26);
    assert_eq!(q::<i64>(&mut c, &["BITCOUNT", "k", "-3", "-1", "BIT"]), 1);
    // Both negative and reversed: 0 before the unit is even looked at.
    assert_eq!(q::<i64>(&mut c, &["BITCOUNT", "k", "-1", "-2", "FOO"]), 0);
    assert_eq!(q::<i64>(&mut c, &["BITCOUNT", "missing"]), 0);
    // A missing key answers 0 whatever the arguments.
    assert_eq!(q::<i64>(&mut c, &["BITCOUNT", "missing", "x"]), 0);
    set_bytes(&mut c, "e", b"");
    assert_eq!(q::<i64>(&mut c, &["BITCOUNT", "e"]), 0);
    assert_eq!(q::<i64>(&mut c, &["BITCOUNT", "e", "0", "-1"]), 0);
}

#[test]
fn bitcount_errors() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "k", "foobar"]);
    assert_eq!(q_err(&mut c, &["BITCOUNT", "k", "0"]), "ERR syntax error");
    assert_eq!(
        q_err(&mut c, &["BITCOUNT", "k", "0", "1", "BIT", "x"]),
        "ERR syntax error"
    );
    assert_eq!(
        q_err(&mut c, &["BITCOUNT", "k", "0", "1", "BITS"]),
        "ERR syntax error"
    );
    assert_eq!(
        q_err(&mut c, &["BITCOUNT", "k", "a", "1"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        q_err(&mut c, &["BITCOUNT", "k", "0", "abc", "FOO"]),
        "ERR value is not an integer or out of range"
    );
    q::<i64>(&mut c, &["SADD", "s", "a"]);
    assert_eq!(q_err(&mut c, &["BITCOUNT", "s", "0"]), WRONGTYPE);
}

#[test]
fn bitpos_finds_bits() {
    let (_s, mut c) = server();
    set_bytes(&mut c, "k", b"\xff\xf0\x00");
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "k", "0"]), 12);
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "k", "1"]), 0);
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "k", "1", "2"]), -1);
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "k", "0", "2"]), 16);
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "k", "1", "1", "-1"]), 8);
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "k", "1", "7", "15", "BIT"]), 7);
    assert_eq!(
        q::<i64>(&mut c, &["BITPOS", "k", "0", "7", "15", "BIT"]),
        12
    );
    assert_eq!(
        q::<i64>(&mut c, &["BITPOS", "k", "1", "13", "23", "bit"]),
        -1
    );
    set_bytes(&mut c, "f", b"\xff\xff");
    // All ones: with no end the string is followed by zeros; with an end it is not.
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "f", "0"]), 16);
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "f", "0", "0"]), 16);
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "f", "0", "0", "-1"]), -1);
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "f", "0", "3", "9", "BIT"]), -1);
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "f", "1", "5", "1"]), -1);
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "missing", "0"]), 0);
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "missing", "1"]), -1);
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "missing", "0", "x"]), 0);
    set_bytes(&mut c, "e", b"");
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "e", "0"]), -1);
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "e", "1"]), -1);
}

#[test]
fn bitpos_errors() {
    let (_s, mut c) = server();
    q::<()>(&mut c, &["SET", "k", "foobar"]);
    assert_eq!(
        q_err(&mut c, &["BITPOS", "k", "2"]),
        "ERR The bit argument must be 1 or 0."
    );
    assert_eq!(
        q_err(&mut c, &["BITPOS", "k", "x"]),
        "ERR value is not an integer or out of range"
    );
    // The unit is checked before the end.
    assert_eq!(
        q_err(&mut c, &["BITPOS", "k", "1", "0", "abc", "FOO"]),
        "ERR syntax error"
    );
    assert_eq!(
        q_err(&mut c, &["BITPOS", "k", "1", "abc", "1", "FOO"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        q_err(&mut c, &["BITPOS", "k", "0", "1", "2", "BIT", "4"]),
        "ERR syntax error"
    );
    q::<i64>(&mut c, &["HSET", "h", "a", "1"]);
    assert_eq!(q_err(&mut c, &["BITPOS", "h", "1"]), WRONGTYPE);
    assert_eq!(
        q_err(&mut c, &["BITPOS", "h", "3"]),
        "ERR The bit argument must be 1 or 0."
    );
}

#[test]
fn bitop_operations() {
    let (_s, mut c) = server();
    set_bytes(&mut c, "a", b"\xf0\x0f\xff");
    set_bytes(&mut c, "b", b"\x3c\x3c");
    assert_eq!(q::<i64>(&mut c, &["BITOP", "AND", "d", "a", "b"]), 3);
    assert_eq!(get_bytes(&mut c, "d"), b"\x30\x0c\x00");
    assert_eq!(q::<i64>(&mut c, &["BITOP", "or", "d", "a", "b"]), 3);
    assert_eq!(get_bytes(&mut c, "d"), b"\xfc\x3f\xff");
    assert_eq!(q::<i64>(&mut c, &["BITOP", "Xor", "d", "a", "b", "b"]), 3);
    assert_eq!(get_bytes(&mut c, "d"), b"\xf0\x0f\xff");
    assert_eq!(q::<i64>(&mut c, &["BITOP", "NOT", "d", "b"]), 2);
    assert_eq!(get_bytes(&mut c, "d"), b"\xc3\xc3");
    // Missing keys are empty strings.
    assert_eq!(q::<i64>(&mut c, &["BITOP", "AND", "d", "a", "nokey"]), 3);
    assert_eq!(get_bytes(&mut c, "d"), b"\x00\x00\x00");
    assert_eq!(q::<String>(&mut c, &["OBJECT", "ENCODING", "d"]), "raw");
    // An empty result deletes the destination, whatever it held.
    q::<i64>(&mut c, &["EXPIRE", "d", "100"]);
    assert_eq!(q::<i64>(&mut c, &["BITOP", "OR", "d", "nokey"]), 0);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "d"]), 0);
    q::<i64>(&mut c, &["LPUSH", "l", "x"]);
    assert_eq!(q::<i64>(&mut c, &["BITOP", "OR", "l", "a"]), 3);
    assert_eq!(q::<String>(&mut c, &["TYPE", "l"]), "string");
    // The destination loses its TTL.
    q::<i64>(&mut c, &["EXPIRE", "l", "100"]);
    q::<i64>(&mut c, &["BITOP", "OR", "l", "a"]);
    assert_eq!(q::<i64>(&mut c, &["TTL", "l"]), -1);
    // Integer strings are read as text.
    q::<()>(&mut c, &["SET", "n", "1"]);
    assert_eq!(q::<i64>(&mut c, &["BITOP", "NOT", "d", "n"]), 1);
    assert_eq!(get_bytes(&mut c, "d"), vec![!b'1']);
}

#[test]
fn bitop_errors() {
    let (_s, mut c) = server();
    set_bytes(&mut c, "a", b"x");
    q::<i64>(&mut c, &["SADD", "s", "m"]);
    assert_eq!(
        q_err(&mut c, &["BITOP", "NOT", "d", "a", "a"]),
        "ERR BITOP NOT must be called with a single source key."
    );
    assert_eq!(
        q_err(&mut c, &["BITOP", "NAND", "d", "a"]),
        "ERR syntax error"
    );
    assert_eq!(q_err(&mut c, &["BITOP", "AND", "d", "a", "s"]), WRONGTYPE);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "d"]), 0);
    assert_eq!(
        q_err(&mut c, &["BITOP", "AND", "d"]),
        "ERR wrong number of arguments for 'bitop' command"
    );
}

#[test]
fn bitop_across_shards() {
    let (_s, mut c) = server();
    let keys: Vec<String> = (0..20).map(|i| format!("src{i}")).collect();
    for (i, k) in keys.iter().enumerate() {
        q::<i64>(&mut c, &["SETBIT", k, &i.to_string(), "1"]);
    }
    let mut args = vec!["BITOP", "OR", "dst"];
    args.extend(keys.iter().map(|s| s.as_str()));
    assert_eq!(q::<i64>(&mut c, &args), 3);
    assert_eq!(get_bytes(&mut c, "dst"), b"\xff\xff\xf0");
    args[1] = "AND";
    assert_eq!(q::<i64>(&mut c, &args), 3);
    assert_eq!(get_bytes(&mut c, "dst"), b"\x00\x00\x00");
}

#[test]
fn bitfield_get_set_incrby() {
    let (_s, mut c) = server();
    assert_eq!(
        q::<Vec<i64>>(
            &mut c,
            &["BITFIELD", "k", "SET", "u8", "0", "255", "GET", "u8", "0"]
        ),
        vec![0, 255]
    );
    assert_eq!(
        q::<Vec<i64>>(
            &mut c,
            &["BITFIELD", "k", "GET", "i8", "0", "GET", "u4", "4", "GET", "i64", "0"]
        ),
        vec![-1, 15, -72057594037927936]
    );
    assert_eq!(
        q::<Vec<i64>>(
            &mut c,
            &["BITFIELD", "k", "INCRBY", "u8", "0", "1", "INCRBY", "i5", "100", "-3"]
        ),
        vec![0, -3]
    );
    assert_eq!(
        q::<Vec<i64>>(
            &mut c,
            &["bitfield", "k", "set", "i16", "#1", "-2", "get", "u16", "#1"]
        ),
        vec![0, 65534]
    );
    assert_eq!(
        q::<Vec<i64>>(
            &mut c,
            &[
                "BITFIELD",
                "k2",
                "SET",
                "i64",
                "0",
                "-9223372036854775808",
                "GET",
                "i64",
                "0"
            ]
        ),
        vec![0, i64::MIN]
    );
    assert_eq!(
        q::<Vec<i64>>(
            &mut c,
            &[
                "BITFIELD",
                "k3",
                "SET",
                "u63",
                "1",
                "9223372036854775807",
                "GET",
                "u63",
                "1"
            ]
        ),
        vec![0, i64::MAX]
    );
    // No operations: an empty reply.
    assert_eq!(q::<Vec<i64>>(&mut c, &["BITFIELD", "k"]), Vec::<i64>::new());
    assert_eq!(
        q::<Vec<i64>>(&mut c, &["BITFIELD", "missing"]),
        Vec::<i64>::new()
    );
    assert_eq!(
        q::<Vec<i64>>(&mut c, &["BITFIELD", "missing", "GET", "i8", "100"]),
        vec![0]
    );
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "missing"]), 0);
    assert_eq!(q::<String>(&mut c, &["OBJECT", "ENCODING", "k"]), "raw");
}

#[test]
fn bitfield_overflow_modes() {
    let (_s, mut c) = server();
    let r: Vec<Value> = q(
        &mut c,
        &[
            "BITFIELD", "k", "SET", "u8", "0", "250", "INCRBY", "u8", "0", "10", "OVERFLOW", "SAT",
            "INCRBY", "u8", "0", "300", "OVERFLOW", "FAIL", "INCRBY", "u8", "0", "1", "GET", "u8",
            "0",
        ],
    );
    assert_eq!(
        r,
        vec![
            Value::Int(0),
            Value::Int(4),
            Value::Int(255),
            Value::Nil,
            Value::Int(255)
        ]
    );
    let r: Vec<Value> = q(
        &mut c,
        &[
            "BITFIELD", "s", "SET", "i8", "0", "127", "INCRBY", "i8", "0", "1", "OVERFLOW", "sat",
            "INCRBY", "i8", "0", "-1000", "OVERFLOW", "wrap", "SET", "i8", "0", "200", "OVERFLOW",
            "FAIL", "SET", "i8", "0", "128", "GET", "i8", "0",
        ],
    );
    assert_eq!(
        r,
        vec![
            Value::Int(0),
            Value::Int(-128),
            Value::Int(-128),
            Value::Int(-128),
            Value::Nil,
            Value::Int(-56)
        ]
    );
    // Unsigned SET of a negative value overflows upwards.
    assert_eq!(
        q::<Vec<i64>>(
            &mut c,
            &["BITFIELD", "u", "OVERFLOW", "SAT", "SET", "u8", "0", "-1", "GET", "u8", "0"]
        ),
        vec![0, 255]
    );
    assert_eq!(
        q::<Vec<i64>>(
            &mut c,
            &["BITFIELD", "u", "OVERFLOW", "SAT", "INCRBY", "u8", "0", "-1000"]
        ),
        vec![0]
    );
    assert_eq!(
        q::<Vec<i64>>(
            &mut c,
            &[
                "BITFIELD",
                "u",
                "INCRBY",
                "i64",
                "0",
                "-1",
                "INCRBY",
                "i64",
                "0",
                "-9223372036854775808"
            ]
        ),
        vec![-1, 9223372036854775807]
    );
    // A FAIL on a new key still creates it (zero-filled).
    assert_eq!(
        q::<Vec<Value>>(
            &mut c,
            &["BITFIELD", "f", "OVERFLOW", "FAIL", "SET", "u8", "100", "300"]
        ),
        vec![Value::Nil]
    );
    assert_eq!(q::<i64>(&mut c, &["STRLEN", "f"]), 14);
}

#[test]
fn bitfield_errors() {
    let (_s, mut c) = server();
    for t in ["u64", "i65", "i0", "u0", "I8", "x8", "i", "i-1", "i08"] {
        assert_eq!(
            q_err(&mut c, &["BITFIELD", "k", "GET", t, "0"]),
            TYPE_ERR,
            "{t}"
        );
    }
    for off in ["-1", "x", "#-1", "#x", "##1", "4294967296"] {
        assert_eq!(
            q_err(&mut c, &["BITFIELD", "k", "GET", "u8", off]),
            OFFSET_ERR,
            "{off}"
        );
    }
    assert_eq!(
        q_err(&mut c, &["BITFIELD", "k", "SET", "u8", "0", "x"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        q_err(
            &mut c,
            &["BITFIELD", "k", "OVERFLOW", "foo", "GET", "u8", "0"]
        ),
        "ERR Invalid OVERFLOW type specified"
    );
    for args in [
        &["BITFIELD", "k", "GET", "i8"][..],
        &["BITFIELD", "k", "SET", "i8", "0"],
        &["BITFIELD", "k", "INCRBY", "i8", "0"],
        &["BITFIELD", "k", "OVERFLOW"],
        &["BITFIELD", "k", "FOO"],
        &["BITFIELD", "k", "GET", "i8", "0", "BAR"],
    ] {
        assert_eq!(q_err(&mut c, args), "ERR syntax error", "{args:?}");
    }
    // Errors come before anything is written or replied.
    assert_eq!(
        q_err(
            &mut c,
            &["BITFIELD", "k", "SET", "u8", "0", "1", "GET", "u64", "0"]
        ),
        TYPE_ERR
    );
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "k"]), 0);
    q::<i64>(&mut c, &["RPUSH", "l", "a"]);
    assert_eq!(
        q_err(&mut c, &["BITFIELD", "l", "GET", "u8", "0"]),
        WRONGTYPE
    );
    assert_eq!(q_err(&mut c, &["BITFIELD", "l"]), WRONGTYPE);
    assert_eq!(
        q_err(&mut c, &["BITFIELD", "l", "SET", "u8", "0", "1"]),
        WRONGTYPE
    );
    assert_eq!(
        q_err(&mut c, &["BITFIELD", "l", "GET", "u8", "x"]),
        OFFSET_ERR
    );
}

#[test]
fn bitfield_ro_only_reads() {
    let (_s, mut c) = server();
    set_bytes(&mut c, "k", b"\x81");
    assert_eq!(
        q::<Vec<i64>>(
            &mut c,
            &["BITFIELD_RO", "k", "GET", "u1", "0", "GET", "i8", "0"]
        ),
        vec![1, -127]
    );
    assert_eq!(
        q::<Vec<i64>>(&mut c, &["BITFIELD_RO", "k"]),
        Vec::<i64>::new()
    );
    assert_eq!(
        q_err(&mut c, &["BITFIELD_RO", "k", "SET", "u8", "0", "1"]),
        "ERR BITFIELD_RO only supports the GET subcommand"
    );
    assert_eq!(
        q_err(&mut c, &["BITFIELD_RO", "k", "INCRBY", "u8", "0", "1"]),
        "ERR BITFIELD_RO only supports the GET subcommand"
    );
    // OVERFLOW is accepted; only writes are refused.
    assert_eq!(
        q::<Vec<i64>>(
            &mut c,
            &["BITFIELD_RO", "k", "OVERFLOW", "SAT", "GET", "u8", "0"]
        ),
        vec![129]
    );
    assert_eq!(
        q_err(&mut c, &["BITFIELD_RO", "k", "FOO"]),
        "ERR syntax error"
    );
    assert_eq!(get_bytes(&mut c, "k"), b"\x81");
}

#[test]
fn bit_writes_notify_only_on_change() {
    let (s, mut c) = server();
    q::<()>(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
    let mut sub = s.raw();
    sub.call(&["PSUBSCRIBE", "__keyevent@0__:*"]);
    q::<i64>(&mut c, &["SETBIT", "b", "7", "1"]);
    q::<i64>(&mut c, &["SETBIT", "b", "7", "1"]); // unchanged: no event
    q::<i64>(&mut c, &["SETBIT", "b", "100", "0"]); // grew: event
    q::<Vec<i64>>(&mut c, &["BITFIELD", "b", "SET", "u8", "0", "1"]); // same value
    q::<Vec<i64>>(&mut c, &["BITFIELD", "b", "INCRBY", "u8", "0", "1"]);
    q::<i64>(&mut c, &["BITOP", "NOT", "d", "b"]);
    q::<i64>(&mut c, &["BITOP", "AND", "d", "nokey"]);
    q::<i64>(&mut c, &["BITOP", "AND", "d", "nokey"]); // nothing to delete
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
    assert_eq!(got, ["setbit b", "setbit b", "setbit b", "set d", "del d"]);
}
