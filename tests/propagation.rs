//! The effects stream (what a server propagates to replicas and the AOF), compared with
//! redis-server's for the rewrites Redis makes: each case runs step by step on both servers at
//! once, and the commands each propagated for it must be the same (millisecond timestamps within
//! a tolerance). redis-server's stream is read with SYNC, Tessera's with DEBUG EFFECTS (see
//! `common/effects.rs`); the seeded differential families compare the streams of their random
//! command streams too (`differential/harness.rs`).

mod common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::effects::{self, EffectsReader, EFFECTS_ARGS, REDIS_SYNC_ARGS};
use common::{fmt_frame, Frame, RawClient, TestServer};

/// How far apart the two servers' clocks may put one timestamp.
const TOLERANCE_MS: i64 = 2_000;

/// One step of a case, run on both servers.
enum Step {
    /// A command on the main connection (see [`words`] for the syntax).
    C(&'static str),
    /// A command on the second connection, whose reply is read by [`Step::Read2`] (for clients
    /// blocked until another command serves them).
    Send2(&'static str),
    Read2,
    Sleep(u64),
}
use Step::*;

struct Case {
    name: &'static str,
    steps: &'static [Step],
}

/// Splits a step into arguments: on spaces, except inside double quotes; `{s+N}` / `{ms+N}`
/// become the Unix time in seconds / milliseconds plus N (the same value for both servers).
fn words(line: &str, now_ms: i64) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut any = false;
    for ch in line.chars() {
        match ch {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            ' ' if !quoted => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            c => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        out.push(cur);
    }
    out.into_iter()
        .map(|w| {
            let sub = |prefix: &str, base: i64| {
                w.strip_prefix(prefix)
                    .and_then(|r| r.strip_suffix('}'))
                    .and_then(|n| n.parse::<i64>().ok())
                    .map(|n| (base + n).to_string())
            };
            sub("{s+", now_ms / 1000)
                .or_else(|| sub("{ms+", now_ms))
                .unwrap_or(w)
        })
        .collect()
}

struct Side {
    server: TestServer,
    main: RawClient,
    second: RawClient,
    effects: EffectsReader,
}

impl Side {
    fn new(server: TestServer) -> Side {
        let effects = EffectsReader::attach(&server);
        Side {
            main: server.raw(),
            second: server.raw(),
            effects,
            server,
        }
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

fn run_cases(cases: &[Case]) {
    let mut redis_args = REDIS_SYNC_ARGS.to_vec();
    redis_args.extend_from_slice(EFFECTS_ARGS);
    let mut reference = Side::new(TestServer::redis_with(&redis_args));
    let mut target = Side::new(TestServer::start_with(EFFECTS_ARGS));
    let mut failures = Vec::new();
    for case in cases {
        let now = now_ms();
        let mut replies: [Vec<String>; 2] = [Vec::new(), Vec::new()];
        for (i, side) in [&mut reference, &mut target].into_iter().enumerate() {
            side.main.call(&["FLUSHALL"]);
            side.main.call(&["SELECT", "0"]);
            let _ = i;
        }
        for step in case.steps {
            for (i, side) in [&mut reference, &mut target].into_iter().enumerate() {
                match step {
                    C(line) => {
                        let reply = side.main.call(&words(line, now));
                        replies[i].push(fmt_frame(&reply));
                    }
                    Send2(line) => side.second.send(&words(line, now)),
                    Read2 => {
                        let reply = side.second.read_frame();
                        replies[i].push(fmt_frame(&reply));
                    }
                    Sleep(_) => {}
                }
            }
            if let Sleep(ms) = step {
                std::thread::sleep(Duration::from_millis(*ms));
            }
        }
        let mut streams = Vec::new();
        for side in [&mut reference, &mut target] {
            // Undo what the case configured (CONFIG is not propagated).
            for directive in [
                "lazyfree-lazy-user-del",
                "lazyfree-lazy-expire",
                "lazyfree-lazy-server-del",
            ] {
                side.main.call(&["CONFIG", "SET", directive, "no"]);
            }
            side.main.call(&["DEBUG", "SET-ACTIVE-EXPIRE", "1"]);
            side.main.call(&["SELECT", "0"]);
            let mark = side.effects.mark(&mut side.main);
            streams.push(side.effects.until_mark(&mark));
        }
        if replies[0] != replies[1] {
            failures.push(format!(
                "{}: replies differ\n  redis:  {:?}\n  target: {:?}",
                case.name, replies[0], replies[1]
            ));
            continue;
        }
        if let Err(e) = effects::compare(&streams[0], &streams[1], TOLERANCE_MS) {
            failures.push(format!("{}: {e}", case.name));
        }
    }
    reference.server.stop();
    target.server.assert_healthy();
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

#[test]
fn propagation_strings() {
    run_cases(&[
        Case {
            name: "set",
            steps: &[C("set k v")],
        },
        Case {
            name: "set ex",
            steps: &[C("set k v ex 100")],
        },
        Case {
            name: "set px",
            steps: &[C("set k v PX 100000")],
        },
        Case {
            name: "set exat",
            steps: &[C("set k v exat {s+100}")],
        },
        Case {
            name: "set pxat",
            steps: &[C("set k v pxat {ms+100000}")],
        },
        Case {
            name: "set keepttl",
            steps: &[C("set k v ex 100"), C("set k v2 keepttl")],
        },
        Case {
            name: "set nx new and existing",
            steps: &[C("set k v nx"), C("set k v nx")],
        },
        Case {
            name: "set xx get ex",
            steps: &[C("set k v"), C("set k v2 xx get ex 100")],
        },
        Case {
            name: "set get",
            steps: &[C("set k v"), C("set k v1 xx GET")],
        },
        Case {
            // A value (or key) named get is not the GET option.
            name: "set get named get",
            steps: &[C("set k get"), C("set get get GET get"), C("set k get xx")],
        },
        Case {
            name: "set exat past",
            steps: &[C("set k v exat 1"), C("get k")],
        },
        Case {
            name: "setex psetex",
            steps: &[C("setex k 100 v"), C("psetex k2 100000 v")],
        },
        Case {
            name: "setnx",
            steps: &[C("setnx k v"), C("setnx k v")],
        },
        Case {
            name: "getset",
            steps: &[C("getset k v")],
        },
        Case {
            name: "getdel",
            steps: &[C("set k v"), C("getdel k"), C("getdel k")],
        },
        Case {
            name: "getdel lazy",
            steps: &[
                C("config set lazyfree-lazy-user-del yes"),
                C("set k v"),
                C("getdel k"),
            ],
        },
        Case {
            name: "getex",
            steps: &[
                C("set k v"),
                C("getex k ex 100"),
                C("getex k px 100000"),
                C("getex k exat {s+200}"),
                C("getex k pxat {ms+300000}"),
                C("getex k persist"),
                C("getex k persist"),
                C("getex k"),
            ],
        },
        Case {
            name: "getex past",
            steps: &[C("set k v"), C("getex k exat 1")],
        },
        Case {
            name: "getex past lazy",
            steps: &[
                C("config set lazyfree-lazy-expire yes"),
                C("set k v"),
                C("getex k pxat 1"),
            ],
        },
        Case {
            name: "counters",
            steps: &[C("incr n"), C("incrby n 5"), C("decr n"), C("decrby n 2")],
        },
        Case {
            name: "incrbyfloat",
            steps: &[
                C("incrbyfloat f 1.5"),
                C("set g 5000 ex 100"),
                C("incrbyfloat g 2"),
            ],
        },
        Case {
            name: "append setrange",
            steps: &[
                C("append k ab"),
                C("setrange k 1 xyz"),
                C("setrange k 0 \"\""),
            ],
        },
        Case {
            name: "mset msetnx",
            steps: &[C("mset a 1 b 2"), C("msetnx a 1 c 3"), C("msetnx c 3 d 4")],
        },
        Case {
            name: "bits",
            steps: &[
                C("setbit b 7 1"),
                C("setbit b 7 1"),
                C("bitfield b get u4 0"),
                C("bitfield b set u4 0 3"),
                C("bitfield b overflow fail incrby u2 0 10"),
                C("bitop or d b b"),
                C("bitop and e missing1 missing2"),
            ],
        },
        Case {
            name: "hyperloglog",
            steps: &[
                C("pfadd h a b"),
                C("pfadd h a"),
                C("pfcount h"),
                C("pfadd h c"),
                C("pfcount h"),
                C("pfmerge h2 h"),
            ],
        },
    ]);
}

#[test]
fn propagation_keyspace_and_expiry() {
    run_cases(&[
        Case {
            name: "del unlink",
            steps: &[
                C("mset a 1 b 2 c 3"),
                C("del a x"),
                C("del y"),
                C("unlink b c"),
            ],
        },
        Case {
            name: "expire family",
            steps: &[
                C("mset a 1 b 2 c 3 d 4"),
                C("expire a 100"),
                C("pexpire b 100000"),
                C("expireat c {s+100}"),
                C("pexpireat d {ms+100000}"),
                C("expire a 200 gt"),
                C("expire a 50 gt"),
                C("expire missing 100"),
            ],
        },
        Case {
            name: "expire in the past",
            steps: &[
                C("mset a 1 b 2 c 3"),
                C("expire a -1"),
                C("expireat b 1"),
                C("pexpire c 0"),
            ],
        },
        Case {
            name: "expire in the past lazy",
            steps: &[
                C("config set lazyfree-lazy-expire yes"),
                C("set a 1"),
                C("expire a -1"),
            ],
        },
        Case {
            name: "persist",
            steps: &[C("set a 1 ex 100"), C("persist a"), C("persist a")],
        },
        Case {
            name: "rename move copy",
            steps: &[
                C("mset a 1 b 2"),
                C("rename a a2"),
                C("renamenx a2 b"),
                C("renamenx a2 c"),
                C("move c 1"),
                C("copy b b2"),
                C("copy b b3 db 2 replace"),
            ],
        },
        Case {
            name: "databases",
            steps: &[
                C("select 3"),
                C("set a 1"),
                C("select 0"),
                C("set b 1"),
                C("swapdb 0 3"),
                C("flushdb"),
                C("select 5"),
                C("flushdb"),
                C("flushall async"),
            ],
        },
        Case {
            name: "touch and reads",
            steps: &[C("set a 1"), C("touch a"), C("get a"), C("type a")],
        },
        Case {
            name: "sort store",
            steps: &[
                C("rpush l 3 1 2"),
                C("sort l store d"),
                C("sort missing store d"),
                C("sort missing store d2"),
            ],
        },
        Case {
            name: "lazy expiry on read",
            steps: &[
                C("debug set-active-expire 0"),
                C("set k v px 50"),
                Sleep(200),
                C("get k"),
            ],
        },
        Case {
            name: "lazy expiry on write",
            steps: &[
                C("debug set-active-expire 0"),
                C("set k v px 50"),
                Sleep(200),
                C("set k v2"),
            ],
        },
        Case {
            name: "lazy expiry of two keys",
            steps: &[
                C("debug set-active-expire 0"),
                C("set a 1 px 50"),
                C("set b 1 px 50"),
                Sleep(200),
                C("mget a b"),
            ],
        },
        Case {
            name: "lazy expiry of a command's second key",
            steps: &[
                C("debug set-active-expire 0"),
                C("set d v px 50"),
                C("set src x"),
                Sleep(200),
                C("smove src d m"),
            ],
        },
        Case {
            name: "lazy expiry, lazyfree",
            steps: &[
                C("debug set-active-expire 0"),
                C("config set lazyfree-lazy-expire yes"),
                C("set k v px 50"),
                Sleep(200),
                C("exists k"),
            ],
        },
    ]);
}

#[test]
fn propagation_collections() {
    run_cases(&[
        Case {
            name: "hashes",
            steps: &[
                C("hset h f v"),
                C("hset h f v"),
                C("hsetnx h f v"),
                C("hsetnx h g v"),
                C("hdel h missing"),
                C("hincrby h n 3"),
                C("hincrbyfloat h x 1.5"),
                C("hdel h f g n x"),
            ],
        },
        Case {
            name: "lists",
            steps: &[
                C("lpush l a b c d e"),
                C("rpushx missing a"),
                C("lpop l"),
                C("rpop l 2"),
                C("lpop missing"),
                C("rpush m x"),
                C("lmove l m left right"),
                C("rpoplpush m l"),
                C("lset l 0 z"),
                C("linsert l before nothere q"),
                C("linsert l before z q"),
                C("lrem l 0 nothere"),
                C("ltrim l 0 -1"),
                C("ltrim l 0 0"),
                C("rpush a 1 2 3"),
                C("lmpop 2 none a left count 2"),
            ],
        },
        Case {
            name: "blocking pops served at once",
            steps: &[
                C("rpush l 1 2 3 4 5 6 7 8"),
                C("blpop l 1"),
                C("brpop l 1"),
                C("blmove l l2 left right 1"),
                C("brpoplpush l l2 1"),
                C("blmpop 1 2 none l right count 9"),
                C("zadd z 1 a 2 b 3 c 4 d"),
                C("bzpopmin z 1"),
                C("bzpopmax z 1"),
                C("bzmpop 1 1 z min count 5"),
            ],
        },
        Case {
            name: "blocked pop served later",
            steps: &[Send2("blpop l 10"), Sleep(100), C("rpush l a b"), Read2],
        },
        Case {
            name: "blocked lmove served later",
            steps: &[
                Send2("blmove l d right left 10"),
                Sleep(100),
                C("lpush l a"),
                Read2,
            ],
        },
        Case {
            name: "blocked zpop served later",
            steps: &[
                Send2("bzpopmin z 10"),
                Sleep(100),
                C("zadd z 1 a 2 b"),
                Read2,
            ],
        },
        Case {
            name: "blocked lmpop served later",
            steps: &[
                Send2("blmpop 10 1 l left count 5"),
                Sleep(100),
                C("rpush l a b c"),
                Read2,
            ],
        },
        Case {
            name: "sets",
            steps: &[
                C("sadd s a b c"),
                C("sadd s a"),
                C("srem s a x"),
                C("sadd one only"),
                C("spop one"),
                C("sadd whole x"),
                C("spop whole 5"),
                C("sadd s2 a b"),
                C("sadd s3 b c"),
                C("smove s2 s3 a"),
                C("sinterstore d s2 s3"),
                C("sinterstore d2 s2 missing"),
                C("sinterstore d missing s3"),
                C("sdiffstore d3 s3 s2"),
                C("sunionstore d4 s2 s3"),
            ],
        },
        Case {
            name: "sorted sets",
            steps: &[
                C("zadd z 1 a 2 b 3 c 4 d 5 e"),
                C("zadd z 1 a"),
                C("zadd z 10 a"),
                C("zadd z nx 20 a"),
                C("zadd z xx gt 5 b"),
                C("zadd z incr 1 b"),
                C("zincrby z 2 c"),
                C("zrem z nothere"),
                C("zrem z e"),
                C("zpopmin z 2"),
                C("zpopmax z"),
                C("zadd y 1 p 2 q 3 r"),
                C("zmpop 2 none y max count 2"),
                C("zremrangebyscore y 100 200"),
                C("zadd w 1 a 2 b 3 c"),
                C("zremrangebyrank w 0 0"),
                C("zrangestore d w 0 -1"),
                C("zrangestore d w 10 20"),
                C("zunionstore u 2 w y"),
                C("zinterstore i 2 w missing"),
                C("zdiffstore df 1 w"),
                C("geoadd g 13.361389 38.115556 Palermo"),
            ],
        },
    ]);
}

#[test]
fn propagation_streams() {
    run_cases(&[
        Case {
            name: "xadd ids and trimming",
            steps: &[
                C("xadd s 1-1 f v"),
                C("xadd s 5-* f v"),
                C("xadd s 5-* f v"),
                C("xadd s 6 f v"),
                C("xadd s maxlen 2 7-1 f v"),
                C("xadd t nomkstream 1-1 f v"),
                C("xdel s 6-0 99-0"),
                C("xtrim s maxlen 10"),
                C("xtrim s maxlen 1"),
            ],
        },
        Case {
            name: "approximate trimming",
            steps: &[
                C("xadd s 1-1 a 1"),
                C("xadd s 2-1 a 1"),
                C("xadd s 3-1 a 1"),
                C("xadd s maxlen ~ 2 4-1 a 1"),
                C("xtrim s minid ~ 3"),
                C("xtrim s maxlen ~ 1 limit 10"),
            ],
        },
        Case {
            name: "consumer groups",
            steps: &[
                C("xadd s 1-1 a 1"),
                C("xadd s 2-1 a 2"),
                C("xadd s 3-1 a 3"),
                C("xgroup create s g 0"),
                C("xgroup create s g2 $"),
                C("xgroup createconsumer s g c0"),
                C("xreadgroup group g c1 count 2 streams s >"),
                C("xreadgroup group g c1 streams s 0"),
                C("xreadgroup group g c2 streams s >"),
                C("xreadgroup group g c2 streams s >"),
                C("xack s g 1-1 9-9"),
                C("xclaim s g c3 0 2-1"),
                C("xclaim s g c3 0 2-1 justid"),
                C("xautoclaim s g c4 0 0 count 5"),
                C("xgroup setid s g 1-1"),
                C("xgroup delconsumer s g c1"),
                C("xgroup destroy s g2"),
                C("xsetid s 10-1"),
            ],
        },
        Case {
            name: "noack reads",
            steps: &[
                C("xadd s 1-1 a 1"),
                C("xadd s 2-1 a 2"),
                C("xgroup create s g 0"),
                C("xreadgroup group g c1 noack count 1 streams s >"),
                C("xreadgroup group g c1 noack streams s >"),
            ],
        },
        Case {
            name: "blocked xreadgroup served later",
            steps: &[
                C("xgroup create s g $ mkstream"),
                Send2("xreadgroup group g c block 10000 streams s >"),
                Sleep(100),
                C("xadd s 1-1 f v"),
                Read2,
            ],
        },
    ]);
}

#[test]
fn propagation_transactions_and_scripts() {
    run_cases(&[
        Case { name: "multi one write", steps: &[C("multi"), C("set a 1"), C("exec")] },
        Case {
            name: "multi two writes",
            steps: &[C("multi"), C("set a 1"), C("set b 2"), C("get a"), C("exec")],
        },
        Case { name: "multi reads only", steps: &[C("multi"), C("get a"), C("exec")] },
        Case {
            name: "multi with select",
            steps: &[C("multi"), C("set a 1"), C("select 2"), C("set b 2"), C("exec"), C("set c 3")],
        },
        Case {
            name: "multi with a failing command",
            steps: &[C("set s x"), C("multi"), C("lpush s 1"), C("set a 1"), C("exec")],
        },
        Case {
            name: "multi aborted",
            steps: &[C("multi"), C("set a 1"), C("nosuchcommand"), C("exec")],
        },
        Case { name: "multi discarded", steps: &[C("multi"), C("set a 1"), C("discard")] },
        Case {
            name: "eval one write",
            steps: &[C("eval \"return redis.call('set', KEYS[1], 'v')\" 1 k")],
        },
        Case {
            name: "eval two writes",
            steps: &[C(
                "eval \"redis.call('set', KEYS[1], 'v') return redis.call('incr', KEYS[2])\" 2 k n",
            )],
        },
        Case { name: "eval no write", steps: &[C("eval \"return redis.call('get', 'k')\" 0")] },
        Case {
            name: "eval with select",
            steps: &[C(
                "eval \"redis.call('set', 'a', '1') redis.call('select', 2) redis.call('set', 'b', '2')\" 0",
            )],
        },
        Case {
            name: "eval writes then fails",
            steps: &[C("eval \"redis.call('set', 'a', '1') return redis.call('nosuch')\" 0")],
        },
        Case {
            name: "eval rewrites inside",
            steps: &[C(
                "eval \"redis.call('set', 'a', '1', 'EX', '100') redis.call('incrbyfloat', 'f', '1.5') redis.call('sadd', 's', 'm') redis.call('spop', 's')\" 0",
            )],
        },
        Case {
            name: "evalsha",
            steps: &[
                C("script load \"return redis.call('set', KEYS[1], ARGV[1])\""),
                C("evalsha 55b22c0d0cedf3866879ce7c854970626dcef0c3 1 k v"),
                C("script flush"),
            ],
        },
        Case {
            name: "functions",
            steps: &[
                C("function load \"#!lua name=lib\nredis.register_function('w', function(keys, args) return redis.call('set', keys[1], args[1]) end)\""),
                C("fcall w 1 k v"),
                C("fcall_ro w 1 k v"),
                C("function delete lib"),
                C("function delete lib"),
                C("function flush"),
            ],
        },
        Case {
            name: "publish",
            steps: &[C("publish ch m"), C("select 4"), C("publish ch m2"), C("spublish sc m")],
        },
        Case {
            name: "not propagated",
            steps: &[C("ping"), C("config set maxmemory-samples 5"), C("client setname x"), C("echo a")],
        },
    ]);
}

/// The reader itself: a mark with nothing before it reads as an empty stream on both servers,
/// and redis-server's own stream shows a plain SET as sent.
#[test]
fn effects_reader_reads_both_servers() {
    let mut args = REDIS_SYNC_ARGS.to_vec();
    args.extend_from_slice(EFFECTS_ARGS);
    for server in [
        TestServer::redis_with(&args),
        TestServer::start_with(EFFECTS_ARGS),
    ] {
        let mut reader = EffectsReader::attach(&server);
        let mut conn = server.raw();
        let mark = reader.mark(&mut conn);
        assert!(reader.until_mark(&mark).is_empty());
        assert_eq!(conn.call(&["set", "k", "v"]), Frame::Simple("OK".into()));
        let mark = reader.mark(&mut conn);
        let stream = reader.until_mark(&mark);
        let want: Vec<Vec<u8>> = vec![b"set".to_vec(), b"k".to_vec(), b"v".to_vec()];
        assert_eq!(stream.last(), Some(&want), "{:?}", stream);
    }
}
