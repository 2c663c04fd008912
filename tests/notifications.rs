//! Keyspace notifications (`notify-keyspace-events`) and modification signals (WATCH) of every
//! command family, as redis-server 7.0 emits them: same event names, same order, same
//! situations (nothing when nothing changed). Run with `TESSERA_TEST_TARGET=redis` to check the
//! expectations against redis-server itself.
//!
//! A subscriber PSUBSCRIBEs `__key*__:*` and SUBSCRIBEs a sync channel. Each step runs commands
//! on another connection, then PUBLISHes a token to the sync channel: the pmessages read before
//! the token are the step's events. Expectations are written `"event key"` (database 0) or
//! `"event key @db"`, and expanded into the keyspace and keyevent messages the flags ask for.

mod common;

use std::time::Duration;

use common::{fmt_frame, wait_until, Frame, RawClient, TestServer};

const SYNC: &str = "__notifications_test_sync__";

/// A server with a command connection and a subscriber, notifications set to `flags`.
struct Fixture {
    server: TestServer,
    cmd: RawClient,
    sub: RawClient,
    /// Whether the flags ask for `__keyspace@` / `__keyevent@` messages.
    keyspace: bool,
    keyevent: bool,
    token: u64,
}

fn text(f: &Frame) -> String {
    match f {
        Frame::Bulk(b) | Frame::Simple(b) => String::from_utf8_lossy(b).into_owned(),
        other => fmt_frame(other),
    }
}

impl Fixture {
    fn new(flags: &str) -> Fixture {
        Self::with_args(flags, &[])
    }

    fn with_args(flags: &str, args: &[&str]) -> Fixture {
        let server = TestServer::start_with(args);
        let cmd = server.raw();
        let mut sub = server.raw();
        sub.send(&["PSUBSCRIBE", "__key*__:*"]);
        let f = sub.read_frame();
        assert_eq!(text(&array(&f)[0]), "psubscribe", "{}", fmt_frame(&f));
        sub.send(&["SUBSCRIBE", SYNC]);
        let f = sub.read_frame();
        assert_eq!(text(&array(&f)[0]), "subscribe", "{}", fmt_frame(&f));
        let mut fx = Fixture {
            server,
            cmd,
            sub,
            keyspace: false,
            keyevent: false,
            token: 0,
        };
        fx.set_flags(flags);
        fx
    }

    /// Changes `notify-keyspace-events` (and what the expectations expand to).
    fn set_flags(&mut self, flags: &str) {
        let r = self
            .cmd
            .call(&["CONFIG", "SET", "notify-keyspace-events", flags]);
        assert_eq!(r, Frame::Simple(b"OK".to_vec()), "CONFIG SET {flags}");
        self.keyspace = flags.contains('K');
        self.keyevent = flags.contains('E');
        // Anything the previous flags produced is not this step's.
        self.sync();
    }

    /// Publishes a token and returns the pmessages received before it, as
    /// `"channel payload"` lines.
    fn sync(&mut self) -> Vec<String> {
        self.token += 1;
        let token = self.token.to_string();
        let r = self.cmd.call(&["PUBLISH", SYNC, &token]);
        assert!(matches!(r, Frame::Integer(1)), "PUBLISH: {}", fmt_frame(&r));
        let mut got = Vec::new();
        loop {
            let f = self.sub.read_frame();
            let items = array(&f);
            match text(&items[0]).as_str() {
                "pmessage" if items.len() == 4 => {
                    got.push(format!("{} {}", text(&items[2]), text(&items[3])));
                }
                "message" if items.len() == 3 && text(&items[1]) == SYNC => {
                    if text(&items[2]) == token {
                        return got;
                    }
                }
                _ => panic!("unexpected message on the subscriber: {}", fmt_frame(&f)),
            }
        }
    }

    /// The messages `expected` (`"event key"` or `"event key @db"`) stands for.
    fn expand(&self, expected: &[&str]) -> Vec<String> {
        let mut out = Vec::new();
        for e in expected {
            let parts: Vec<&str> = e.split(' ').collect();
            let (event, key) = (parts[0], parts[1]);
            let db = parts.get(2).map_or("0", |d| d.trim_start_matches('@'));
            if self.keyspace {
                out.push(format!("__keyspace@{db}__:{key} {event}"));
            }
            if self.keyevent {
                out.push(format!("__keyevent@{db}__:{event} {key}"));
            }
        }
        out
    }

    /// Runs one command and checks the events it caused; returns its reply.
    #[track_caller]
    fn step(&mut self, args: &[&str], expected: &[&str]) -> Frame {
        let reply = self.cmd.call(args);
        let got = self.sync();
        assert_eq!(
            got,
            self.expand(expected),
            "events of `{}` (reply {})",
            args.join(" "),
            fmt_frame(&reply)
        );
        reply
    }

    /// Runs a command whose events are not under test (set-up).
    fn run(&mut self, args: &[&str]) -> Frame {
        let reply = self.cmd.call(args);
        self.sync();
        reply
    }
}

fn array(f: &Frame) -> &[Frame] {
    match f {
        Frame::Array(items) | Frame::Push(items) => items,
        other => panic!("expected an array, got {}", fmt_frame(other)),
    }
}

fn is_error(f: &Frame) -> bool {
    matches!(f, Frame::Error(_))
}

// ---- strings ---------------------------------------------------------------------------------

#[test]
fn string_commands() {
    let mut t = Fixture::new("KEA");
    t.step(&["SET", "k", "v"], &["set k"]);
    t.step(&["SET", "k", "v", "EX", "100"], &["set k", "expire k"]);
    t.step(&["SET", "k", "v", "NX"], &[]);
    t.step(&["SET", "nx", "v", "XX"], &[]);
    t.step(&["SET", "k", "v", "XX", "KEEPTTL"], &["set k"]);
    t.step(&["SET", "k", "v2", "GET"], &["set k"]);
    t.step(
        &["SET", "k2", "v", "PX", "100000", "GET"],
        &["set k2", "expire k2"],
    );
    t.step(
        &["SET", "k3", "v", "PXAT", "99999999999999"],
        &["set k3", "expire k3"],
    );
    t.step(&["SETNX", "k", "v"], &[]);
    t.step(&["SETNX", "n", "v"], &["set n"]);
    t.step(&["MSET", "a", "1", "b", "2"], &["set a", "set b"]);
    t.step(&["MSETNX", "a", "1", "c", "2"], &[]);
    t.step(&["MSETNX", "c", "1", "d", "2"], &["set c", "set d"]);
    t.step(&["SETEX", "e", "100", "v"], &["set e", "expire e"]);
    t.step(&["PSETEX", "f", "100000", "v"], &["set f", "expire f"]);
    t.step(&["SETEX", "e2", "-1", "v"], &[]);
    t.step(&["GETSET", "a", "5"], &["set a"]);
    t.step(&["GETSET", "gs", "5"], &["set gs"]);
    t.step(&["GETDEL", "a"], &["del a"]);
    t.step(&["GETDEL", "a"], &[]);
    t.step(&["GET", "b"], &[]);
    t.step(&["GETEX", "b"], &[]);
    t.step(&["GETEX", "b", "EX", "100"], &["expire b"]);
    t.step(&["GETEX", "b", "PERSIST"], &["persist b"]);
    t.step(&["GETEX", "b", "PERSIST"], &[]);
    t.step(&["GETEX", "b", "PXAT", "1"], &["del b"]);
    t.step(&["GETEX", "nokey", "EX", "10"], &[]);
    t.step(&["APPEND", "g", "x"], &["append g"]);
    t.step(&["APPEND", "g", "y"], &["append g"]);
    t.step(&["INCR", "h"], &["incrby h"]);
    t.step(&["DECR", "h"], &["incrby h"]);
    t.step(&["INCRBY", "h", "5"], &["incrby h"]);
    t.step(&["DECRBY", "h", "2"], &["incrby h"]);
    t.step(&["INCRBYFLOAT", "h", "1.5"], &["incrbyfloat h"]);
    t.step(&["INCRBYFLOAT", "new", "1"], &["incrbyfloat new"]);
    t.step(&["SETRANGE", "i", "0", "abc"], &["setrange i"]);
    t.step(&["SETRANGE", "i", "1", "x"], &["setrange i"]);
    t.step(&["SETRANGE", "i", "0", ""], &[]);
    t.step(&["SETRANGE", "j", "0", ""], &[]);
    assert!(is_error(&t.step(&["INCR", "g"], &[])));
    assert!(is_error(&t.step(&["INCRBYFLOAT", "g", "1"], &[])));
    assert!(is_error(&t.step(&["APPEND", "noexist", "x", "y"], &[])));
    t.step(&["STRLEN", "g"], &[]);
    t.step(&["GETRANGE", "g", "0", "1"], &[]);
    t.step(&["MGET", "g", "zz"], &[]);
}

/// `K` alone: keyspace channel only; `E` alone: keyevent channel only.
#[test]
fn keyspace_or_keyevent_channel_only() {
    let mut t = Fixture::new("K$");
    assert!(t.keyspace && !t.keyevent);
    t.step(&["SET", "a", "1"], &["set a"]);
    t.step(&["DEL", "a"], &[]);
    t.set_flags("E$");
    assert!(!t.keyspace && t.keyevent);
    t.step(&["SET", "a", "1"], &["set a"]);
    t.step(&["DEL", "a"], &[]);
    t.set_flags("Eg");
    t.step(&["SET", "a", "1"], &[]);
    t.step(&["DEL", "a"], &["del a"]);
    // Neither K nor E: nothing at all.
    t.set_flags("A");
    t.step(&["SET", "a", "1"], &[]);
    t.step(&["DEL", "a"], &[]);
}

/// Class flags: only the classes asked for are delivered.
#[test]
fn class_filters() {
    let mut t = Fixture::new("Kl");
    t.step(&["SET", "s", "1"], &[]);
    t.step(&["LPUSH", "l", "a"], &["lpush l"]);
    t.step(&["HSET", "h", "f", "v"], &[]);
    t.step(&["SADD", "st", "m"], &[]);
    t.step(&["ZADD", "z", "1", "m"], &[]);
    t.step(&["RPOP", "l"], &["rpop l"]);
    t.step(&["DEL", "s"], &[]);
    t.set_flags("Eh$");
    t.step(&["HSET", "h", "g", "v"], &["hset h"]);
    t.step(&["HDEL", "h", "f", "g"], &["hdel h"]);
    t.step(&["SET", "x", "1"], &["set x"]);
    t.set_flags("KEsz");
    t.step(&["SADD", "st", "n"], &["sadd st"]);
    t.step(&["ZINCRBY", "z", "2", "m"], &["zincr z"]);
    t.step(&["SREM", "st", "m", "n"], &["srem st"]);
    t.step(&["ZREM", "z", "m"], &["zrem z"]);
    t.set_flags("KEg");
    t.step(&["EXPIRE", "x", "100"], &["expire x"]);
    t.step(&["SET", "y", "1"], &[]);
    t.step(&["RENAME", "y", "y2"], &["rename_from y", "rename_to y2"]);
}

/// `A` leaves out "new" (n) and "keymiss" (m); each must be asked for.
#[test]
fn new_and_keymiss_need_their_own_flags() {
    let mut t = Fixture::new("KEA");
    t.step(&["GET", "missing"], &[]);
    t.step(&["SET", "a", "1"], &["set a"]);
    t.set_flags("KEn");
    t.step(&["SET", "b", "1"], &["new b"]);
    t.step(&["SET", "b", "2"], &[]);
    t.step(&["LPUSH", "l", "x"], &["new l"]);
    t.step(&["RPUSH", "l", "y"], &[]);
    t.step(&["RENAME", "b", "c"], &["new c"]);
    // Renaming over an existing key deletes it first: "new" again.
    t.step(&["RENAME", "c", "l"], &["new l"]);
    t.step(&["COPY", "l", "l2"], &["new l2"]);
    t.step(&["HINCRBY", "h", "f", "1"], &["new h"]);
    t.step(&["SADD", "s", "m"], &["new s"]);
    t.step(&["SMOVE", "s", "s2", "m"], &["new s2"]);
    t.step(&["ZADD", "z", "1", "m"], &["new z"]);
    t.step(&["ZUNIONSTORE", "z2", "1", "z"], &["new z2"]);
    t.step(&["INCR", "i"], &["new i"]);
    t.step(&["APPEND", "ap", "x"], &["new ap"]);
    t.step(&["GET", "missing"], &[]);
    t.run(&["RPUSH", "ml", "a"]);
    t.set_flags("KEAn");
    t.step(
        &["SET", "n1", "v", "EX", "100"],
        &["new n1", "set n1", "expire n1"],
    );
    t.step(
        &["LMOVE", "ml", "l3", "LEFT", "RIGHT"],
        &["new l3", "rpush l3", "lpop ml", "del ml"],
    );
    t.step(&["SUNIONSTORE", "s3", "s2"], &["new s3", "sunionstore s3"]);
    t.step(
        &["MOVE", "n1", "1"],
        &["new n1 @1", "move_from n1", "move_to n1 @1"],
    );
}

/// Redis 7.0 reports "keymiss" (m) for read lookups that miss, not for writes.
#[test]
fn keymiss_on_read_lookups() {
    let mut t = Fixture::new("KEm");
    t.step(&["GET", "a"], &["keymiss a"]);
    t.step(&["MGET", "a", "b"], &["keymiss a", "keymiss b"]);
    t.step(&["GETDEL", "a"], &["keymiss a"]);
    t.step(&["GETEX", "a", "EX", "10"], &["keymiss a"]);
    t.step(&["STRLEN", "a"], &["keymiss a"]);
    t.step(&["GETRANGE", "a", "0", "1"], &["keymiss a"]);
    t.step(&["EXISTS", "a", "b"], &["keymiss a", "keymiss b"]);
    t.step(&["TYPE", "a"], &["keymiss a"]);
    t.step(&["TTL", "a"], &["keymiss a"]);
    t.step(&["PTTL", "a"], &["keymiss a"]);
    t.step(&["TOUCH", "a"], &["keymiss a"]);
    t.step(&["HGET", "h", "f"], &["keymiss h"]);
    t.step(&["HGETALL", "h"], &["keymiss h"]);
    t.step(&["LRANGE", "l", "0", "-1"], &["keymiss l"]);
    t.step(&["LLEN", "l"], &["keymiss l"]);
    t.step(&["SMEMBERS", "s"], &["keymiss s"]);
    t.step(&["SISMEMBER", "s", "m"], &["keymiss s"]);
    t.step(&["ZSCORE", "z", "m"], &["keymiss z"]);
    t.step(&["ZRANGE", "z", "0", "-1"], &["keymiss z"]);
    t.step(
        &["SUNIONSTORE", "d", "s1", "s2"],
        &["keymiss s1", "keymiss s2"],
    );
    t.step(
        &["SINTERSTORE", "d", "s1", "s2"],
        &["keymiss s1", "keymiss s2"],
    );
    t.step(
        &["ZUNIONSTORE", "d", "2", "z1", "z2"],
        &["keymiss z1", "keymiss z2"],
    );
    t.step(&["ZRANGESTORE", "d", "z", "0", "-1"], &["keymiss z"]);
    t.step(&["SORT", "l"], &["keymiss l"]);
    t.step(&["COPY", "a", "b"], &["keymiss a"]);
    t.step(&["SET", "c", "v", "GET"], &["keymiss c"]);
    t.step(&["SET", "c", "v", "GET"], &[]);
    t.step(&["GETSET", "d", "v"], &["keymiss d"]);
    // Writes look their keys up without reporting misses.
    t.step(&["INCR", "i"], &[]);
    t.step(&["APPEND", "ap", "x"], &[]);
    t.step(&["DEL", "zz"], &[]);
    t.step(&["EXPIRE", "zz", "10"], &[]);
    t.step(&["PERSIST", "zz"], &[]);
    t.step(&["LPOP", "l"], &[]);
    t.step(&["RPOPLPUSH", "l", "l2"], &[]);
    t.step(&["SPOP", "s"], &[]);
    t.step(&["SREM", "s", "m"], &[]);
    t.step(&["SMOVE", "s1", "s2", "m"], &[]);
    t.step(&["ZPOPMIN", "z"], &[]);
    t.step(&["HINCRBY", "h", "f", "1"], &[]);
    t.step(&["LPUSHX", "l", "x"], &[]);
    t.step(&["MOVE", "zz", "1"], &[]);
    t.step(&["OBJECT", "ENCODING", "zz"], &[]);
    // A hit reports nothing.
    t.step(&["GET", "c"], &[]);
}

// ---- generic ---------------------------------------------------------------------------------

#[test]
fn generic_commands() {
    let mut t = Fixture::new("KEA");
    t.run(&["MSET", "a", "1", "b", "2", "x", "3"]);
    t.step(&["DEL", "a", "nokey", "b"], &["del a", "del b"]);
    t.step(&["DEL", "a"], &[]);
    t.step(&["UNLINK", "x", "nokey"], &["del x"]);
    t.run(&["SET", "s", "1", "EX", "100"]);
    t.step(&["RENAME", "s", "t"], &["rename_from s", "rename_to t"]);
    t.step(&["RENAME", "t", "t"], &[]);
    assert!(is_error(&t.step(&["RENAME", "nokey", "t2"], &[])));
    t.run(&["SET", "u", "1"]);
    t.step(&["RENAME", "t", "u"], &["rename_from t", "rename_to u"]);
    t.run(&["SET", "u2", "1"]);
    t.step(&["RENAMENX", "u", "u2"], &[]);
    t.step(&["RENAMENX", "u", "v"], &["rename_from u", "rename_to v"]);
    t.step(&["COPY", "v", "w"], &["copy_to w"]);
    t.step(&["COPY", "v", "w"], &[]);
    t.step(&["COPY", "v", "w", "REPLACE"], &["copy_to w"]);
    t.step(&["COPY", "v", "w", "DB", "1"], &["copy_to w @1"]);
    t.step(&["COPY", "nokey", "w2"], &[]);
    t.step(&["MOVE", "w", "1"], &[]);
    t.step(&["MOVE", "v", "1"], &["move_from v", "move_to v @1"]);
    t.step(&["MOVE", "nokey", "1"], &[]);
    t.run(&["SET", "e", "1"]);
    t.step(&["EXPIRE", "e", "100"], &["expire e"]);
    t.step(&["EXPIRE", "e", "100", "NX"], &[]);
    t.step(&["EXPIRE", "e", "200", "XX"], &["expire e"]);
    t.step(&["EXPIRE", "e", "50", "GT"], &[]);
    t.step(&["PEXPIRE", "e", "100000"], &["expire e"]);
    t.step(&["EXPIREAT", "e", "99999999999"], &["expire e"]);
    t.step(&["PEXPIREAT", "e", "99999999999999"], &["expire e"]);
    t.step(&["PERSIST", "e"], &["persist e"]);
    t.step(&["PERSIST", "e"], &[]);
    t.step(&["PERSIST", "nokey"], &[]);
    t.step(&["EXPIRE", "nokey", "10"], &[]);
    t.step(&["EXPIRE", "e", "-1"], &["del e"]);
    t.run(&["SET", "p", "1"]);
    t.step(&["PEXPIREAT", "p", "1"], &["del p"]);
    t.run(&["SET", "q", "1"]);
    t.step(&["EXPIREAT", "q", "0"], &["del q"]);
    t.run(&["SET", "r", "1"]);
    for read in [
        &["EXISTS", "r"][..],
        &["TYPE", "r"],
        &["TTL", "r"],
        &["TOUCH", "r"],
        &["OBJECT", "ENCODING", "r"],
        &["RANDOMKEY"],
        &["KEYS", "*"],
        &["SCAN", "0"],
        &["DBSIZE"],
    ] {
        t.step(read, &[]);
    }
    // SELECT'd databases name their own channels.
    t.run(&["SELECT", "2"]);
    t.step(&["SET", "k", "v"], &["set k @2"]);
    t.step(&["DEL", "k"], &["del k @2"]);
    t.run(&["SELECT", "0"]);
    // FLUSHDB and FLUSHALL report no keyspace events.
    t.step(&["FLUSHDB"], &[]);
    t.run(&["SET", "k", "v"]);
    t.step(&["FLUSHALL"], &[]);
}

/// Keys met expired: "expired" (x), whoever finds them.
#[test]
fn expired_events() {
    let mut t = Fixture::new("Ex");
    t.step(&["SET", "k", "v", "PX", "100"], &[]);
    t.run(&["SET", "k2", "v", "PX", "100"]);
    std::thread::sleep(Duration::from_millis(300));
    // Found by the lookup or by active expiry before it: one "expired" either way.
    t.cmd.call(&["GET", "k"]);
    t.cmd.call(&["EXISTS", "k2"]);
    let mut got = t.sync();
    got.sort();
    assert_eq!(got, t.expand(&["expired k", "expired k2"]));
    t.step(&["GET", "k"], &[]);
}

/// maxmemory eviction: "evicted" (e) for every key it deletes.
#[test]
fn evicted_events() {
    let mut t = Fixture::new("Ee");
    t.run(&["MSET", "a", "1", "b", "2", "c", "3"]);
    t.run(&["CONFIG", "SET", "maxmemory-policy", "allkeys-random"]);
    t.cmd.call(&["CONFIG", "SET", "maxmemory", "1"]);
    // The command that finds memory over the limit evicts everything it can first
    // (and is then refused itself, being a write).
    t.cmd.call(&["SET", "d", "4"]);
    t.cmd.call(&["CONFIG", "SET", "maxmemory", "0"]);
    let mut got = t.sync();
    got.sort();
    assert_eq!(got, t.expand(&["evicted a", "evicted b", "evicted c"]));
    t.step(&["DBSIZE"], &[]);
}

/// Redis's "Keyspace notifications: evicted events": lowering maxmemory under what is in use
/// evicts at once, from CONFIG SET itself, so the events arrive with no further command.
#[test]
fn evicted_events_come_from_config_set_maxmemory() {
    let mut t = Fixture::new("Ee");
    t.run(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]);
    t.run(&["SET", "foo", "bar"]);
    assert_eq!(
        t.cmd.call(&["CONFIG", "SET", "maxmemory", "1"]),
        Frame::Simple(b"OK".to_vec())
    );
    // No command after it: read what arrives.
    let f = t.sub.read_frame();
    let items = array(&f);
    assert_eq!(
        items.iter().map(text).collect::<Vec<_>>(),
        ["pmessage", "__key*__:*", "__keyevent@0__:evicted", "foo"],
        "{}",
        fmt_frame(&f)
    );
    t.cmd.call(&["CONFIG", "SET", "maxmemory", "0"]);
    t.step(&["DBSIZE"], &[]);
}

// ---- hashes ----------------------------------------------------------------------------------

#[test]
fn hash_commands() {
    let mut t = Fixture::new("KEA");
    t.step(&["HSET", "h", "a", "1", "b", "2"], &["hset h"]);
    t.step(&["HSET", "h", "a", "1"], &["hset h"]);
    t.step(&["HMSET", "h", "c", "3"], &["hset h"]);
    t.step(&["HSETNX", "h", "a", "9"], &[]);
    t.step(&["HSETNX", "h", "d", "4"], &["hset h"]);
    t.step(&["HSETNX", "h2", "d", "4"], &["hset h2"]);
    t.step(&["HINCRBY", "h", "n", "5"], &["hincrby h"]);
    t.step(&["HINCRBYFLOAT", "h", "f", "1.5"], &["hincrbyfloat h"]);
    t.step(&["HINCRBYFLOAT", "h3", "f", "1.5"], &["hincrbyfloat h3"]);
    assert!(is_error(&t.step(&["HINCRBY", "h", "f", "1"], &[])));
    assert!(is_error(&t.step(&["HINCRBYFLOAT", "h", "f", "x"], &[])));
    assert!(is_error(&t.step(&["HSET", "h", "a"], &[])));
    t.step(&["HDEL", "h", "nope"], &[]);
    t.step(&["HDEL", "h", "a", "b"], &["hdel h"]);
    t.step(
        &["HDEL", "h", "c", "d", "n", "f", "x"],
        &["hdel h", "del h"],
    );
    t.step(&["HDEL", "h", "c"], &[]);
    for read in [
        &["HGET", "h2", "d"][..],
        &["HMGET", "h2", "d", "e"],
        &["HGETALL", "h2"],
        &["HKEYS", "h2"],
        &["HVALS", "h2"],
        &["HLEN", "h2"],
        &["HEXISTS", "h2", "d"],
        &["HSTRLEN", "h2", "d"],
        &["HRANDFIELD", "h2"],
        &["HSCAN", "h2", "0"],
    ] {
        t.step(read, &[]);
    }
    t.run(&["SET", "str", "v"]);
    assert!(is_error(&t.step(&["HSET", "str", "a", "1"], &[])));
}

// ---- lists -----------------------------------------------------------------------------------

#[test]
fn list_commands() {
    let mut t = Fixture::new("KEA");
    t.step(&["RPUSH", "l", "a", "b", "c"], &["rpush l"]);
    t.step(&["LPUSH", "l", "z"], &["lpush l"]);
    t.step(&["LPUSHX", "l", "y"], &["lpush l"]);
    t.step(&["RPUSHX", "l", "x"], &["rpush l"]);
    t.step(&["RPUSHX", "nol", "x"], &[]);
    t.step(&["LPUSHX", "nol", "x"], &[]);
    t.step(&["LPOP", "l"], &["lpop l"]);
    t.step(&["RPOP", "l", "2"], &["rpop l"]);
    t.step(&["LPOP", "l", "0"], &[]);
    t.step(&["LPOP", "nol"], &[]);
    t.step(&["LPOP", "l", "5"], &["lpop l", "del l"]);
    t.run(&["RPUSH", "l", "a", "b", "c", "d"]);
    t.step(&["LSET", "l", "0", "x"], &["lset l"]);
    assert!(is_error(&t.step(&["LSET", "l", "10", "x"], &[])));
    t.step(&["LTRIM", "l", "0", "-1"], &["ltrim l"]);
    t.step(&["LTRIM", "l", "1", "2"], &["ltrim l"]);
    t.step(&["LTRIM", "nol", "0", "1"], &[]);
    t.step(&["LREM", "l", "0", "nope"], &[]);
    t.step(&["LREM", "l", "0", "b"], &["lrem l"]);
    t.step(&["LINSERT", "l", "BEFORE", "nope", "q"], &[]);
    t.step(&["LINSERT", "l", "BEFORE", "c", "q"], &["linsert l"]);
    t.step(&["LINSERT", "nol", "BEFORE", "c", "q"], &[]);
    t.step(&["LTRIM", "l", "5", "10"], &["ltrim l", "del l"]);
    t.run(&["RPUSH", "t", "a"]);
    t.step(&["LREM", "t", "0", "a"], &["lrem t", "del t"]);
    // Moves: the push on the destination first, then the pop on the source.
    t.run(&["RPUSH", "l", "a", "b"]);
    t.step(
        &["LMOVE", "l", "l", "LEFT", "RIGHT"],
        &["rpush l", "lpop l"],
    );
    t.step(
        &["LMOVE", "l", "m", "LEFT", "RIGHT"],
        &["rpush m", "lpop l"],
    );
    t.step(&["RPOPLPUSH", "l", "m"], &["lpush m", "rpop l", "del l"]);
    t.step(&["RPOPLPUSH", "m", "m"], &["lpush m", "rpop m"]);
    t.step(&["LMOVE", "nol", "m", "LEFT", "LEFT"], &[]);
    t.step(
        &["LMPOP", "2", "nol", "m", "RIGHT", "COUNT", "5"],
        &["rpop m", "del m"],
    );
    t.step(&["LMPOP", "1", "m", "LEFT"], &[]);
    t.run(&["RPUSH", "l", "a", "b"]);
    t.step(&["BLPOP", "nol", "l", "1"], &["lpop l"]);
    t.step(&["BRPOP", "l", "1"], &["rpop l", "del l"]);
    t.run(&["RPUSH", "l", "a", "b"]);
    t.step(
        &["BLMOVE", "l", "l2", "RIGHT", "LEFT", "1"],
        &["lpush l2", "rpop l"],
    );
    t.step(
        &["BRPOPLPUSH", "l", "l2", "1"],
        &["lpush l2", "rpop l", "del l"],
    );
    t.step(
        &["BLMPOP", "1", "1", "l2", "LEFT", "COUNT", "1"],
        &["lpop l2"],
    );
    for read in [
        &["LRANGE", "l2", "0", "-1"][..],
        &["LLEN", "l2"],
        &["LINDEX", "l2", "0"],
        &["LPOS", "l2", "a"],
    ] {
        t.step(read, &[]);
    }
    t.run(&["SET", "str", "v"]);
    assert!(is_error(&t.step(&["LPUSH", "str", "a"], &[])));
    assert!(is_error(
        &t.step(&["LMOVE", "l2", "str", "LEFT", "LEFT"], &[])
    ));
}

/// Waits until client `id` is blocked in `cmd`.
fn wait_blocked(admin: &mut RawClient, id: i64, cmd: &str) {
    let ok = wait_until(Duration::from_secs(20), || {
        match admin.call(&["CLIENT", "LIST", "ID", &id.to_string()]) {
            Frame::Bulk(b) => String::from_utf8_lossy(&b).contains(&format!("cmd={cmd} ")),
            _ => false,
        }
    });
    assert!(ok, "client {id} never blocked in {cmd}");
}

/// Sends a blocking command on a fresh connection and waits until it blocks.
fn blocked(t: &mut Fixture, args: &[&str]) -> RawClient {
    let mut c = t.server.raw();
    let id = match c.call(&["CLIENT", "ID"]) {
        Frame::Integer(n) => n,
        other => panic!("CLIENT ID: {}", fmt_frame(&other)),
    };
    c.send(args);
    wait_blocked(&mut t.cmd, id, &args[0].to_ascii_lowercase());
    c
}

/// A blocked pop served after it wakes reports what a pop at once would, after the push.
#[test]
fn blocked_commands_served_later() {
    let mut t = Fixture::new("KEA");
    let mut w = blocked(&mut t, &["BLPOP", "l", "0"]);
    t.cmd.call(&["RPUSH", "l", "a"]);
    assert_eq!(array(&w.read_frame()).len(), 2);
    assert_eq!(t.sync(), t.expand(&["rpush l", "lpop l", "del l"]));

    let mut w = blocked(&mut t, &["BLMOVE", "src", "dst", "RIGHT", "LEFT", "0"]);
    t.cmd.call(&["LPUSH", "src", "a", "b"]);
    assert_eq!(w.read_frame(), Frame::Bulk(b"a".to_vec()));
    assert_eq!(t.sync(), t.expand(&["lpush src", "lpush dst", "rpop src"]));

    let mut w = blocked(&mut t, &["BLMPOP", "0", "1", "m", "RIGHT", "COUNT", "5"]);
    t.cmd.call(&["RPUSH", "m", "a", "b"]);
    assert_eq!(array(&w.read_frame()).len(), 2);
    assert_eq!(t.sync(), t.expand(&["rpush m", "rpop m", "del m"]));

    let mut w = blocked(&mut t, &["BZPOPMIN", "z", "0"]);
    t.cmd.call(&["ZADD", "z", "1", "a", "2", "b"]);
    assert_eq!(array(&w.read_frame()).len(), 3);
    assert_eq!(t.sync(), t.expand(&["zadd z", "zpopmin z"]));

    let mut w = blocked(&mut t, &["BZMPOP", "0", "1", "z2", "MAX", "COUNT", "3"]);
    t.cmd.call(&["ZADD", "z2", "1", "a", "2", "b"]);
    assert_eq!(array(&w.read_frame()).len(), 2);
    assert_eq!(t.sync(), t.expand(&["zadd z2", "zpopmax z2", "del z2"]));

    // Timing out reports nothing.
    t.step(&["BLPOP", "nothing", "0.01"], &[]);
    t.step(&["BZPOPMAX", "nothing", "0.01"], &[]);
}

// ---- sets ------------------------------------------------------------------------------------

#[test]
fn set_commands() {
    let mut t = Fixture::new("KEA");
    t.step(&["SADD", "s", "a", "b"], &["sadd s"]);
    t.step(&["SADD", "s", "a"], &[]);
    t.step(&["SREM", "s", "x"], &[]);
    t.step(&["SREM", "nos", "x"], &[]);
    t.step(&["SREM", "s", "a", "x"], &["srem s"]);
    t.step(&["SREM", "s", "b"], &["srem s", "del s"]);
    t.run(&["SADD", "s", "a", "b", "c"]);
    t.step(&["SPOP", "s"], &["spop s"]);
    t.step(&["SPOP", "s", "0"], &[]);
    t.step(&["SPOP", "nos"], &[]);
    t.step(&["SPOP", "nos", "2"], &[]);
    t.step(&["SPOP", "s", "10"], &["spop s", "del s"]);
    t.run(&["SADD", "s", "a", "b", "c"]);
    t.step(&["SPOP", "s", "2"], &["spop s"]);
    t.step(&["SPOP", "s"], &["spop s", "del s"]);
    t.run(&["SADD", "s", "1", "2", "3", "4"]);
    t.step(&["SPOP", "s", "3"], &["spop s"]);
    t.step(&["SPOP", "s", "1"], &["spop s", "del s"]);
    t.run(&["SADD", "s1", "a", "b"]);
    t.run(&["SADD", "s2", "b"]);
    t.step(&["SMOVE", "s1", "s2", "a"], &["srem s1", "sadd s2"]);
    t.step(&["SMOVE", "s1", "s2", "b"], &["srem s1", "del s1"]);
    t.step(&["SMOVE", "s2", "s3", "b"], &["srem s2", "sadd s3"]);
    t.step(&["SMOVE", "s2", "s2", "a"], &[]);
    t.step(&["SMOVE", "s2", "s3", "zz"], &[]);
    t.step(&["SMOVE", "nos", "s3", "a"], &[]);
    t.run(&["SADD", "x", "1", "2", "3"]);
    t.run(&["SADD", "y", "2", "3", "4"]);
    t.step(&["SINTERSTORE", "d", "x", "y"], &["sinterstore d"]);
    t.step(&["SUNIONSTORE", "d", "x", "y"], &["sunionstore d"]);
    t.step(&["SDIFFSTORE", "d", "x", "y"], &["sdiffstore d"]);
    t.step(&["SINTERSTORE", "d", "x", "nokey"], &["del d"]);
    t.step(&["SINTERSTORE", "d", "x", "nokey"], &[]);
    t.step(&["SDIFFSTORE", "d", "x", "x"], &[]);
    t.step(&["SUNIONSTORE", "d", "nokey"], &[]);
    t.run(&["SET", "d", "str"]);
    t.step(&["SUNIONSTORE", "d", "x"], &["sunionstore d"]);
    t.step(&["SDIFFSTORE", "d", "nokey", "x"], &["del d"]);
    for read in [
        &["SMEMBERS", "x"][..],
        &["SISMEMBER", "x", "1"],
        &["SMISMEMBER", "x", "1", "9"],
        &["SCARD", "x"],
        &["SRANDMEMBER", "x"],
        &["SRANDMEMBER", "x", "-5"],
        &["SINTER", "x", "y"],
        &["SUNION", "x", "y"],
        &["SDIFF", "x", "y"],
        &["SINTERCARD", "2", "x", "y"],
        &["SSCAN", "x", "0"],
    ] {
        t.step(read, &[]);
    }
}

// ---- sorted sets -----------------------------------------------------------------------------

#[test]
fn zset_commands() {
    let mut t = Fixture::new("KEA");
    t.step(&["ZADD", "z", "1", "a", "2", "b"], &["zadd z"]);
    t.step(&["ZADD", "z", "1", "a"], &[]);
    t.step(&["ZADD", "z", "3", "a"], &["zadd z"]);
    t.step(&["ZADD", "z", "XX", "5", "c"], &[]);
    t.step(&["ZADD", "nz", "XX", "1", "a"], &[]);
    t.step(&["ZADD", "z", "NX", "9", "a"], &[]);
    t.step(&["ZADD", "z", "INCR", "1", "a"], &["zincr z"]);
    t.step(&["ZADD", "z", "NX", "INCR", "1", "a"], &[]);
    t.step(&["ZINCRBY", "z", "1", "b"], &["zincr z"]);
    t.step(&["ZINCRBY", "z", "0", "b"], &[]);
    t.step(&["ZINCRBY", "nz2", "2", "b"], &["zincr nz2"]);
    t.step(&["ZADD", "z", "CH", "4", "a"], &[]);
    t.step(&["ZADD", "z", "CH", "5", "a"], &["zadd z"]);
    t.step(&["ZADD", "z", "GT", "1", "a"], &[]);
    t.step(&["ZADD", "z", "LT", "1", "a", "9", "new"], &["zadd z"]);
    assert!(is_error(&t.step(&["ZADD", "z", "x", "a"], &[])));
    t.step(&["ZREM", "z", "nope"], &[]);
    t.step(&["ZREM", "z", "a"], &["zrem z"]);
    t.step(&["ZREM", "noz", "a"], &[]);
    t.run(&["DEL", "z"]);
    t.run(&["ZADD", "z", "0", "a", "2", "c", "3", "d", "4", "e"]);
    t.step(&["ZREMRANGEBYRANK", "z", "10", "20"], &[]);
    t.step(&["ZREMRANGEBYRANK", "z", "0", "0"], &["zremrangebyrank z"]);
    t.step(&["ZREMRANGEBYSCORE", "z", "10", "20"], &[]);
    t.step(
        &["ZREMRANGEBYSCORE", "z", "2", "2"],
        &["zremrangebyscore z"],
    );
    t.step(&["ZREMRANGEBYLEX", "z", "[x", "+"], &[]);
    t.step(&["ZREMRANGEBYLEX", "z", "-", "[d"], &["zremrangebylex z"]);
    t.step(
        &["ZREMRANGEBYSCORE", "z", "-inf", "+inf"],
        &["zremrangebyscore z", "del z"],
    );
    t.step(&["ZREMRANGEBYRANK", "z", "0", "-1"], &[]);
    t.run(&["ZADD", "z", "1", "a", "2", "b", "3", "c"]);
    t.step(&["ZPOPMIN", "z"], &["zpopmin z"]);
    t.step(&["ZPOPMAX", "z", "0"], &[]);
    t.step(&["ZPOPMAX", "z", "5"], &["zpopmax z", "del z"]);
    t.step(&["ZPOPMIN", "z"], &[]);
    t.run(&["ZADD", "z", "1", "a", "2", "b"]);
    t.step(&["BZPOPMIN", "z", "1"], &["zpopmin z"]);
    t.step(&["BZPOPMAX", "noz", "z", "1"], &["zpopmax z", "del z"]);
    t.run(&["ZADD", "z", "1", "a", "2", "b", "3", "c"]);
    t.step(&["ZMPOP", "1", "z", "MIN", "COUNT", "2"], &["zpopmin z"]);
    t.step(&["ZMPOP", "2", "noz", "z", "MIN"], &["zpopmin z", "del z"]);
    t.step(&["ZMPOP", "1", "z", "MIN"], &[]);
    t.run(&["ZADD", "z", "1", "a", "2", "b"]);
    t.step(&["BZMPOP", "1", "1", "z", "MAX"], &["zpopmax z"]);
    t.run(&["ZADD", "z", "1", "a", "2", "b"]);
    t.step(&["ZRANGESTORE", "d", "z", "0", "-1"], &["zrangestore d"]);
    t.step(&["ZRANGESTORE", "d", "z", "5", "10"], &["del d"]);
    t.step(&["ZRANGESTORE", "d", "z", "5", "10"], &[]);
    t.step(&["ZUNIONSTORE", "u", "2", "z", "noz"], &["zunionstore u"]);
    t.step(&["ZINTERSTORE", "u", "2", "z", "noz"], &["del u"]);
    t.step(&["ZINTERSTORE", "u", "2", "z", "noz"], &[]);
    t.step(&["ZINTERSTORE", "u", "1", "z"], &["zinterstore u"]);
    t.step(&["ZDIFFSTORE", "u", "1", "z"], &["zdiffstore u"]);
    t.step(&["ZDIFFSTORE", "u", "2", "z", "z"], &["del u"]);
    t.run(&["SADD", "set", "m"]);
    t.step(&["ZUNIONSTORE", "u", "2", "z", "set"], &["zunionstore u"]);
    t.run(&["ZADD", "z", "5", "e"]);
    t.step(&["ZREM", "z", "a", "b", "e"], &["zrem z", "del z"]);
    for read in [
        &["ZRANGE", "u", "0", "-1"][..],
        &["ZRANGEBYSCORE", "u", "-inf", "+inf"],
        &["ZREVRANGE", "u", "0", "-1"],
        &["ZSCORE", "u", "a"],
        &["ZMSCORE", "u", "a", "b"],
        &["ZCARD", "u"],
        &["ZCOUNT", "u", "-inf", "+inf"],
        &["ZRANK", "u", "a"],
        &["ZRANDMEMBER", "u"],
        &["ZUNION", "2", "u", "z"],
        &["ZINTER", "1", "u"],
        &["ZDIFF", "1", "u"],
        &["ZINTERCARD", "1", "u"],
        &["ZSCAN", "u", "0"],
    ] {
        t.step(read, &[]);
    }
}

// ---- sort ------------------------------------------------------------------------------------

#[test]
fn sort_store() {
    let mut t = Fixture::new("KEA");
    t.run(&["RPUSH", "l", "3", "1", "2"]);
    t.step(&["SORT", "l"], &[]);
    t.step(&["SORT", "l", "STORE", "d"], &["sortstore d"]);
    t.step(
        &["SORT", "l", "BY", "nosort", "STORE", "d"],
        &["sortstore d"],
    );
    t.step(&["SORT", "l", "STORE", "l"], &["sortstore l"]);
    t.step(&["SORT", "l", "LIMIT", "5", "10", "STORE", "d"], &["del d"]);
    t.step(&["SORT", "nol", "STORE", "d"], &[]);
    t.run(&["SET", "d", "x"]);
    t.step(&["SORT", "nol", "STORE", "d"], &["del d"]);
    t.step(&["SORT_RO", "l"], &[]);
}

// ---- WATCH -----------------------------------------------------------------------------------

/// Whether `cmd`, run by another client between WATCH k and EXEC, makes the EXEC fail: exactly
/// when Redis signals the key as modified.
fn exec_aborted(s: &TestServer, setup: &[&[&str]], cmd: &[&str]) -> bool {
    let mut w = s.raw();
    let mut other = s.raw();
    other.call(&["FLUSHALL"]);
    for c in setup {
        let r = other.call(c);
        assert!(!is_error(&r), "{}: {}", c.join(" "), fmt_frame(&r));
    }
    assert_eq!(w.call(&["WATCH", "k"]), Frame::Simple(b"OK".to_vec()));
    other.call(cmd);
    w.call(&["MULTI"]);
    w.call(&["PING"]);
    match w.call(&["EXEC"]) {
        Frame::NullArray | Frame::Null => true,
        Frame::Array(_) => false,
        other => panic!("EXEC: {}", fmt_frame(&other)),
    }
}

/// Set-up commands, the command another client runs, whether EXEC aborts.
type WatchCase = (
    &'static [&'static [&'static str]],
    &'static [&'static str],
    bool,
);

#[test]
fn watch_sees_exactly_the_modifications() {
    let s = TestServer::start();
    let cases: &[WatchCase] = &[
        (&[], &["SET", "k", "v"], true),
        (&[&["SET", "k", "v"]], &["SET", "k", "v", "NX"], false),
        (&[], &["SET", "k", "v", "XX"], false),
        (&[], &["DEL", "k"], false),
        (&[&["SET", "k", "v"]], &["DEL", "k"], true),
        (&[&["SET", "k", "v"]], &["UNLINK", "k"], true),
        (&[&["SET", "k", "v"]], &["GET", "k"], false),
        (&[&["SET", "k", "v"]], &["APPEND", "k", "x"], true),
        (&[&["SET", "k", "v"]], &["SETRANGE", "k", "0", ""], false),
        (&[&["SET", "k", "1"]], &["INCR", "k"], true),
        (&[&["SET", "k", "1"]], &["INCRBYFLOAT", "k", "1"], true),
        (&[&["SET", "k", "1"]], &["GETEX", "k"], false),
        (&[&["SET", "k", "1"]], &["GETEX", "k", "EX", "100"], true),
        (&[&["SET", "k", "1"]], &["GETDEL", "k"], true),
        (&[&["SET", "k", "1"]], &["EXPIRE", "k", "100"], true),
        (&[&["SET", "k", "1"]], &["EXPIRE", "k", "100", "XX"], false),
        (&[&["SET", "k", "1"]], &["PERSIST", "k"], false),
        (&[&["SET", "k", "1", "EX", "100"]], &["PERSIST", "k"], true),
        (&[&["SET", "j", "1"]], &["RENAME", "j", "k"], true),
        (&[&["SET", "k", "1"]], &["RENAME", "k", "j"], true),
        (&[&["SET", "j", "1"]], &["COPY", "j", "k"], true),
        (&[&["SET", "k", "1"]], &["MOVE", "k", "1"], true),
        (&[&["SET", "k", "1"]], &["SELECT", "0"], false),
        (&[], &["LPUSH", "k", "a"], true),
        (&[], &["LPUSHX", "k", "a"], false),
        (&[&["RPUSH", "k", "a"]], &["LPOP", "k"], true),
        (&[&["RPUSH", "k", "a"]], &["LREM", "k", "0", "b"], false),
        (&[&["RPUSH", "k", "a"]], &["LTRIM", "k", "0", "-1"], true),
        (
            &[&["RPUSH", "j", "a"]],
            &["LMOVE", "j", "k", "LEFT", "LEFT"],
            true,
        ),
        (
            &[&["RPUSH", "k", "a"]],
            &["LMOVE", "k", "j", "LEFT", "LEFT"],
            true,
        ),
        (
            &[&["RPUSH", "k", "a"]],
            &["LINSERT", "k", "BEFORE", "x", "y"],
            false,
        ),
        (&[], &["HSET", "k", "f", "v"], true),
        (
            &[&["HSET", "k", "f", "v"]],
            &["HSETNX", "k", "f", "v"],
            false,
        ),
        (&[&["HSET", "k", "f", "v"]], &["HDEL", "k", "g"], false),
        (&[&["HSET", "k", "f", "v"]], &["HDEL", "k", "f"], true),
        (
            &[&["HSET", "k", "f", "1"]],
            &["HINCRBY", "k", "f", "1"],
            true,
        ),
        (&[], &["SADD", "k", "a"], true),
        (&[&["SADD", "k", "a"]], &["SADD", "k", "a"], false),
        (&[&["SADD", "k", "a"]], &["SREM", "k", "b"], false),
        (&[&["SADD", "k", "a"]], &["SPOP", "k"], true),
        (&[&["SADD", "j", "a"]], &["SMOVE", "j", "k", "a"], true),
        (&[&["SADD", "k", "a"]], &["SMOVE", "k", "j", "a"], true),
        (&[&["SADD", "j", "a"]], &["SINTERSTORE", "k", "j"], true),
        (&[], &["SINTERSTORE", "k", "j"], false),
        (&[&["SET", "k", "v"]], &["SUNIONSTORE", "k", "j"], true),
        (&[], &["ZADD", "k", "1", "a"], true),
        (&[&["ZADD", "k", "1", "a"]], &["ZADD", "k", "1", "a"], false),
        (
            &[&["ZADD", "k", "1", "a"]],
            &["ZINCRBY", "k", "0", "a"],
            false,
        ),
        (&[&["ZADD", "k", "1", "a"]], &["ZREM", "k", "b"], false),
        (&[&["ZADD", "k", "1", "a"]], &["ZPOPMIN", "k"], true),
        (
            &[&["ZADD", "k", "1", "a"]],
            &["ZREMRANGEBYSCORE", "k", "5", "6"],
            false,
        ),
        (
            &[&["ZADD", "j", "1", "a"]],
            &["ZRANGESTORE", "k", "j", "0", "-1"],
            true,
        ),
        (
            &[&["ZADD", "j", "1", "a"]],
            &["ZUNIONSTORE", "k", "1", "j"],
            true,
        ),
        (&[&["RPUSH", "j", "1"]], &["SORT", "j", "STORE", "k"], true),
        (&[], &["SORT", "j", "STORE", "k"], false),
    ];
    let mut wrong = Vec::new();
    for (setup, cmd, aborts) in cases {
        let got = exec_aborted(&s, setup, cmd);
        if got != *aborts {
            wrong.push(format!(
                "{} (setup {:?}): EXEC {} but should {}",
                cmd.join(" "),
                setup,
                if got { "aborted" } else { "ran" },
                if *aborts { "abort" } else { "run" }
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A *STORE whose result is empty deletes its destination without
/// expiring it first, as Redis's dbDelete does: a destination past its TTL
/// (not yet removed: active expiry is off) goes with `del`, not `expired`.
#[test]
fn empty_store_deletes_an_expired_destination_with_del() {
    let mut t = Fixture::with_args("KEA", &["--enable-debug-command", "yes"]);
    t.run(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    for store in [
        &["SUNIONSTORE", "k", "nx"][..],
        &["ZUNIONSTORE", "k", "1", "nx"],
        &["ZRANGESTORE", "k", "nx", "0", "-1"],
        &["BITOP", "AND", "k", "nx"],
        &["SORT", "nx", "STORE", "k"],
        &[
            "GEOSEARCHSTORE",
            "k",
            "nx",
            "FROMLONLAT",
            "0",
            "0",
            "BYRADIUS",
            "1",
            "km",
        ],
    ] {
        t.run(&["SET", "k", "v", "PX", "20"]);
        std::thread::sleep(Duration::from_millis(100));
        t.step(store, &["del k"]);
    }
}

/// Found by the notifications differential family.
#[test]
fn details_the_differential_found() {
    // "EA" and "EAn" read back alike ("AE"), yet the second adds "new".
    let mut t = Fixture::new("EA");
    t.set_flags("EAn");
    t.step(&["SET", "fresh", "1"], &["new fresh", "set fresh"]);
    // XREAD looks every key up, then each again to read it.
    t.set_flags("Em");
    t.step(
        &["XREAD", "STREAMS", "x1", "x2", "0", "0"],
        &["keymiss x1", "keymiss x2", "keymiss x1", "keymiss x2"],
    );
    // XREADGROUP stops at the first key without the group: one lookup.
    t.step(
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "c",
            "STREAMS",
            "x1",
            "x2",
            ">",
            ">",
        ],
        &["keymiss x1"],
    );
    // XCLAIM and XAUTOCLAIM read the key, the latter before its arguments.
    t.step(&["XCLAIM", "x1", "g", "c", "0", "0-1"], &["keymiss x1"]);
    t.step(
        &["XAUTOCLAIM", "x1", "g", "c", "notanumber", "0"],
        &["keymiss x1"],
    );
    // LCS looks both keys up before checking their types.
    t.run(&["SADD", "set", "m"]);
    t.step(&["LCS", "set", "nothere"], &["keymiss nothere"]);
    // PSETEX, SETEX and MSET over a key whose time has passed: it is
    // deleted as expired first, so the key is new.
    t.set_flags("En");
    for (i, cmd) in [["PSETEX", "100000"], ["SETEX", "100"]].iter().enumerate() {
        let key = format!("old{i}");
        t.run(&["SET", &key, "v", "PX", "1"]);
        std::thread::sleep(Duration::from_millis(20));
        t.step(&[cmd[0], &key, cmd[1], "w"], &[&format!("new {key}")]);
    }
    t.run(&["SET", "old2", "v", "PX", "1"]);
    std::thread::sleep(Duration::from_millis(20));
    t.step(&["MSET", "old2", "w"], &["new old2"]);
}
