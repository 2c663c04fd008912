//! Multi-threaded behaviour: commands from many connections (spread over
//! the worker threads) on overlapping keys stay atomic and lose nothing.

mod common;

use common::{q, TestServer};
use std::thread;

#[test]
fn concurrent_incr_loses_no_update() {
    let s = TestServer::start_with(&["--threads", "4"]);
    let port = s.port();
    let workers: Vec<_> = (0..8)
        .map(|w| {
            thread::spawn(move || {
                let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap();
                let mut con = client.get_connection().unwrap();
                for i in 0..1000 {
                    let key = format!("counter:{}", (i + w) % 10);
                    let _: i64 = redis::cmd("INCR").arg(&key).query(&mut con).unwrap();
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let mut con = s.client();
    let total: i64 = (0..10)
        .map(|k| q::<i64>(&mut con, &["GET", &format!("counter:{k}")]))
        .sum();
    assert_eq!(total, 8 * 1000);
}

/// MSET writes keys living on different shards; MGET must never observe
/// half of one MSET.
#[test]
fn mset_is_atomic_across_shards() {
    let s = TestServer::start_with(&["--threads", "4"]);
    let port = s.port();
    // Keys chosen to hash to different slots (and so different shards).
    let keys = ["alpha", "beta", "gamma", "delta"];
    let writer = thread::spawn(move || {
        let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap();
        let mut con = client.get_connection().unwrap();
        for i in 0..3000 {
            let v = i.to_string();
            let _: () = redis::cmd("MSET")
                .arg(keys[0])
                .arg(&v)
                .arg(keys[1])
                .arg(&v)
                .arg(keys[2])
                .arg(&v)
                .arg(keys[3])
                .arg(&v)
                .query(&mut con)
                .unwrap();
        }
    });
    let readers: Vec<_> = (0..3)
        .map(|_| {
            thread::spawn(move || {
                let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap();
                let mut con = client.get_connection().unwrap();
                for _ in 0..3000 {
                    let vals: Vec<Option<String>> =
                        redis::cmd("MGET").arg(&keys[..]).query(&mut con).unwrap();
                    let first = &vals[0];
                    assert!(vals.iter().all(|v| v == first), "torn MSET seen: {vals:?}");
                }
            })
        })
        .collect();
    writer.join().unwrap();
    for r in readers {
        r.join().unwrap();
    }
}

/// RENAME back and forth between two shards while readers count keys: the
/// value is always under exactly one of the two names.
#[test]
fn rename_is_atomic_across_shards() {
    let s = TestServer::start_with(&["--threads", "4"]);
    let port = s.port();
    let mut con = s.client();
    let _: () = redis::cmd("SET")
        .arg("left")
        .arg("v")
        .query(&mut con)
        .unwrap();
    let mover = thread::spawn(move || {
        let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap();
        let mut con = client.get_connection().unwrap();
        for i in 0..2000 {
            let (a, b) = if i % 2 == 0 {
                ("left", "right")
            } else {
                ("right", "left")
            };
            let _: () = redis::cmd("RENAME").arg(a).arg(b).query(&mut con).unwrap();
        }
    });
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap();
    let mut reader = client.get_connection().unwrap();
    for _ in 0..2000 {
        let n: i64 = redis::cmd("EXISTS")
            .arg("left")
            .arg("right")
            .query(&mut reader)
            .unwrap();
        assert_eq!(n, 1, "the renamed key must exist under exactly one name");
    }
    mover.join().unwrap();
}

/// Whole-keyspace operations running alongside writers on every thread
/// neither deadlock nor crash.
#[test]
fn flushall_and_swapdb_alongside_writers() {
    let s = TestServer::start_with(&["--threads", "4"]);
    let port = s.port();
    let writers: Vec<_> = (0..4)
        .map(|w| {
            thread::spawn(move || {
                let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap();
                let mut con = client.get_connection().unwrap();
                for i in 0..1500 {
                    let k = format!("k{w}:{}", i % 50);
                    let _: () = redis::cmd("MSET")
                        .arg(&k)
                        .arg(i)
                        .arg(format!("{k}x"))
                        .arg(i)
                        .query(&mut con)
                        .unwrap();
                }
            })
        })
        .collect();
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap();
    let mut admin = client.get_connection().unwrap();
    for i in 0..100 {
        if i % 2 == 0 {
            let _: () = redis::cmd("FLUSHALL").query(&mut admin).unwrap();
        } else {
            let _: () = redis::cmd("SWAPDB")
                .arg(0)
                .arg(1)
                .query(&mut admin)
                .unwrap();
        }
    }
    for w in writers {
        w.join().unwrap();
    }
    let pong: String = redis::cmd("PING").query(&mut admin).unwrap();
    assert_eq!(pong, "PONG");
}
