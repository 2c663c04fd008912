//! Transactions: MULTI EXEC DISCARD WATCH UNWATCH, through the raw client. Expected values are
//! what redis-server 7.0 replies; the concurrency tests check atomicity across worker threads.

mod common;

use common::{bulk, error, simple, Frame, TestServer};

fn int(n: i64) -> Frame {
    Frame::Integer(n)
}

#[test]
fn exec_runs_queued_commands_in_order() {
    let s = TestServer::start();
    let mut c = s.raw();
    assert_eq!(c.call(&["MULTI"]), simple("OK"));
    assert_eq!(c.call(&["SET", "a", "1"]), simple("QUEUED"));
    assert_eq!(c.call(&["INCR", "a"]), simple("QUEUED"));
    assert_eq!(c.call(&["LPUSH", "a", "x"]), simple("QUEUED"));
    assert_eq!(c.call(&["GET", "a"]), simple("QUEUED"));
    assert_eq!(
        c.call(&["EXEC"]),
        Frame::Array(vec![
            simple("OK"),
            int(2),
            error("WRONGTYPE Operation against a key holding the wrong kind of value"),
            bulk("2"),
        ])
    );
}

#[test]
fn queue_time_errors_abort_exec() {
    let s = TestServer::start();
    let mut c = s.raw();
    c.call(&["MULTI"]);
    assert_eq!(c.call(&["SET", "a", "1"]), simple("QUEUED"));
    assert!(matches!(c.call(&["NOSUCH"]), Frame::Error(_)));
    assert_eq!(
        c.call(&["GET"]),
        error("ERR wrong number of arguments for 'get' command")
    );
    assert_eq!(
        c.call(&["EXEC"]),
        error("EXECABORT Transaction discarded because of previous errors.")
    );
    assert_eq!(c.call(&["EXISTS", "a"]), int(0));
}

#[test]
fn state_errors() {
    let s = TestServer::start();
    let mut c = s.raw();
    assert_eq!(c.call(&["EXEC"]), error("ERR EXEC without MULTI"));
    assert_eq!(c.call(&["DISCARD"]), error("ERR DISCARD without MULTI"));
    c.call(&["MULTI"]);
    assert_eq!(
        c.call(&["MULTI"]),
        error("ERR MULTI calls can not be nested")
    );
    assert_eq!(
        c.call(&["WATCH", "k"]),
        error("ERR WATCH inside MULTI is not allowed")
    );
    assert_eq!(c.call(&["SET", "k", "v"]), simple("QUEUED"));
    assert_eq!(c.call(&["DISCARD"]), simple("OK"));
    assert_eq!(c.call(&["EXISTS", "k"]), int(0));
    assert_eq!(c.call(&["UNWATCH"]), simple("OK"));
}

#[test]
fn blocking_commands_do_not_block_inside_exec() {
    let s = TestServer::start();
    let mut c = s.raw();
    c.call(&["MULTI"]);
    c.call(&["BLPOP", "nolist", "0"]);
    c.call(&["BZPOPMIN", "nozset", "0"]);
    assert_eq!(
        c.call(&["EXEC"]),
        Frame::Array(vec![Frame::NullArray, Frame::NullArray])
    );
}

#[test]
fn watch_fails_exec_after_another_client_writes() {
    let s = TestServer::start();
    let mut a = s.raw();
    let mut b = s.raw();
    a.call(&["WATCH", "k"]);
    a.call(&["MULTI"]);
    a.call(&["SET", "k", "mine"]);
    b.call(&["SET", "k", "theirs"]);
    assert_eq!(a.call(&["EXEC"]), Frame::NullArray);
    assert_eq!(a.call(&["GET", "k"]), bulk("theirs"));
    // Unwatched after EXEC: the next transaction goes through.
    a.call(&["MULTI"]);
    a.call(&["SET", "k", "mine"]);
    assert_eq!(a.call(&["EXEC"]), Frame::Array(vec![simple("OK")]));
}

#[test]
fn watch_is_not_triggered_by_no_op_writes_or_unwatch() {
    let s = TestServer::start();
    let mut a = s.raw();
    let mut b = s.raw();
    a.call(&["WATCH", "missing"]);
    assert_eq!(b.call(&["DEL", "missing"]), int(0));
    a.call(&["MULTI"]);
    a.call(&["PING"]);
    assert_eq!(a.call(&["EXEC"]), Frame::Array(vec![simple("PONG")]));

    a.call(&["WATCH", "k"]);
    a.call(&["UNWATCH"]);
    b.call(&["SET", "k", "x"]);
    a.call(&["MULTI"]);
    a.call(&["PING"]);
    assert_eq!(a.call(&["EXEC"]), Frame::Array(vec![simple("PONG")]));
}

#[test]
fn watch_is_triggered_by_flushdb_swapdb_and_expiry() {
    let s = TestServer::start();
    let mut a = s.raw();
    let mut b = s.raw();
    a.call(&["SET", "k", "1"]);
    a.call(&["WATCH", "k"]);
    b.call(&["FLUSHDB"]);
    a.call(&["MULTI"]);
    a.call(&["PING"]);
    assert_eq!(a.call(&["EXEC"]), Frame::NullArray);

    b.call(&["SELECT", "1"]);
    b.call(&["SET", "k", "db1"]);
    a.call(&["WATCH", "k"]);
    b.call(&["SWAPDB", "0", "1"]);
    a.call(&["MULTI"]);
    a.call(&["PING"]);
    assert_eq!(a.call(&["EXEC"]), Frame::NullArray);

    a.call(&["SET", "t", "1", "PX", "50"]);
    a.call(&["WATCH", "t"]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    a.call(&["MULTI"]);
    a.call(&["PING"]);
    assert_eq!(a.call(&["EXEC"]), Frame::NullArray);
}

#[test]
fn multi_exec_is_atomic_across_threads() {
    if common::target_is_redis() {
        return;
    }
    let s = TestServer::start_with(&["--threads", "4"]);
    let port = s.port();
    // Keys on different shards; each transaction moves one unit from one
    // counter to another, so the sum stays 0 in every consistent state.
    let keys = ["acct:a", "acct:b", "acct:c", "acct:d"];
    let mut handles = Vec::new();
    for t in 0..4 {
        handles.push(std::thread::spawn(move || {
            let mut c = common::RawClient::connect(port);
            for i in 0..300 {
                let from = keys[(t + i) % 4];
                let to = keys[(t + i + 1) % 4];
                c.call(&["MULTI"]);
                c.call(&["DECR", from]);
                c.call(&["INCR", to]);
                match c.call(&["EXEC"]) {
                    Frame::Array(v) => assert_eq!(v.len(), 2),
                    other => panic!("EXEC: {other:?}"),
                }
            }
        }));
    }
    let mut checker = s.raw();
    for _ in 0..200 {
        checker.call(&["MULTI"]);
        for k in keys {
            checker.call(&["GET", k]);
        }
        if let Frame::Array(v) = checker.call(&["EXEC"]) {
            let sum: i64 = v
                .iter()
                .map(|f| match f {
                    Frame::Bulk(b) => String::from_utf8_lossy(b).parse::<i64>().unwrap_or(0),
                    _ => 0,
                })
                .sum();
            assert_eq!(sum, 0, "a transaction was seen half done");
        }
    }
    for h in handles {
        h.join().expect("writer thread");
    }
    let total: i64 = keys
        .iter()
        .map(|k| match checker.call(&["GET", k]) {
            Frame::Bulk(b) => String::from_utf8_lossy(&b).parse::<i64>().unwrap_or(0),
            _ => 0,
        })
        .sum();
    assert_eq!(total, 0);
}

#[test]
fn watch_based_increments_are_exact_across_threads() {
    let s = TestServer::start_with(&["--threads", "4"]);
    let port = s.port();
    let mut handles = Vec::new();
    for _ in 0..4 {
        handles.push(std::thread::spawn(move || {
            let mut c = common::RawClient::connect(port);
            let mut done = 0;
            while done < 100 {
                c.call(&["WATCH", "counter"]);
                let cur = match c.call(&["GET", "counter"]) {
                    Frame::Bulk(b) => String::from_utf8_lossy(&b).parse::<i64>().unwrap_or(0),
                    _ => 0,
                };
                c.call(&["MULTI"]);
                c.call(&["SET", "counter", &(cur + 1).to_string()]);
                if let Frame::Array(_) = c.call(&["EXEC"]) {
                    done += 1;
                }
            }
        }));
    }
    for h in handles {
        h.join().expect("client thread");
    }
    assert_eq!(s.raw().call(&["GET", "counter"]), bulk("400"));
}

/// Commands flagged no-multi (SHUTDOWN) and a refused DEBUG are refused while
/// queueing and doom the transaction, as any other queueing error does.
#[test]
fn refused_commands_doom_the_transaction() {
    let s = TestServer::start();
    let mut c = s.raw();
    c.call(&["MULTI"]);
    assert_eq!(c.call(&["SET", "t1", "1"]), simple("QUEUED"));
    assert_eq!(
        c.call(&["SHUTDOWN", "NOSAVE"]),
        error("ERR Command not allowed inside a transaction")
    );
    assert_eq!(
        c.call(&["EXEC"]),
        error("EXECABORT Transaction discarded because of previous errors.")
    );
    assert_eq!(c.call(&["EXISTS", "t1"]), int(0));

    // DEBUG is refused here (enable-debug-command is off by default).
    c.call(&["MULTI"]);
    assert!(matches!(c.call(&["DEBUG", "SLEEP", "0"]), Frame::Error(_)));
    assert_eq!(c.call(&["SET", "t1", "1"]), simple("QUEUED"));
    assert_eq!(
        c.call(&["EXEC"]),
        error("EXECABORT Transaction discarded because of previous errors.")
    );
    assert_eq!(c.call(&["EXISTS", "t1"]), int(0));
    assert_eq!(c.call(&["PING"]), simple("PONG"));
}

/// Out of memory, nothing but EXEC, DISCARD, QUIT and RESET can be queued,
/// and an EXEC whose queue holds a command refused when out of memory is
/// refused whole, even for a client that set CLIENT NO-EVICT.
#[test]
fn out_of_memory_limits_what_a_transaction_queues_and_runs() {
    const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";
    let s = TestServer::start();
    let mut c = s.raw();
    let mut admin = s.raw();
    c.call(&["MULTI"]);
    assert_eq!(c.call(&["SET", "k", "v"]), simple("QUEUED"));
    assert_eq!(
        admin.call(&["CONFIG", "SET", "maxmemory", "1"]),
        simple("OK")
    );
    assert_eq!(
        c.call(&["EXEC"]),
        error(&format!(
            "EXECABORT Transaction discarded because of: {OOM}"
        ))
    );
    assert_eq!(c.call(&["MULTI"]), simple("OK"));
    assert_eq!(c.call(&["GET", "k"]), error(OOM));
    assert_eq!(c.call(&["DISCARD"]), simple("OK"));
    assert_eq!(c.call(&["CLIENT", "NO-EVICT", "ON"]), simple("OK"));
    assert_eq!(c.call(&["SET", "k", "v"]), error(OOM));
    assert_eq!(c.call(&["GET", "k"]), Frame::NullBulk);
    assert_eq!(
        admin.call(&["CONFIG", "SET", "maxmemory", "0"]),
        simple("OK")
    );
    assert_eq!(c.call(&["EXISTS", "k"]), int(0));
}

/// CLIENT LIST shows `d` once a watched key changed, and a doomed
/// transaction stops counting what it queues (it keeps answering QUEUED).
#[test]
fn client_list_shows_a_doomed_transaction() {
    let s = TestServer::start();
    let mut c = s.raw();
    let mut other = s.raw();
    let Frame::Integer(id) = c.call(&["CLIENT", "ID"]) else {
        panic!("CLIENT ID")
    };
    let id = id.to_string();
    // (Inside MULTI, CLIENT LIST would be queued: the other client looks.)
    let mut info = || match other.call(&["CLIENT", "LIST", "ID", &id]) {
        Frame::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
        f => panic!("CLIENT LIST answered {f:?}"),
    };
    c.call(&["WATCH", "w"]);
    c.call(&["MULTI"]);
    c.call(&["PING"]);
    let line = info();
    assert!(
        line.contains(" flags=x ") && line.contains(" multi=1 "),
        "{line}"
    );
    let mut writer = s.raw();
    writer.call(&["SET", "w", "1"]);
    assert_eq!(c.call(&["PING"]), simple("QUEUED"));
    let line = info();
    assert!(
        line.contains(" flags=xd ") && line.contains(" multi=1 "),
        "{line}"
    );
    assert_eq!(c.call(&["EXEC"]), Frame::NullArray);

    c.call(&["MULTI"]);
    assert!(matches!(c.call(&["NOSUCH"]), Frame::Error(_)));
    assert_eq!(c.call(&["PING"]), simple("QUEUED"));
    let line = info();
    assert!(line.contains(" multi=0 "), "{line}");
    c.call(&["DISCARD"]);
}

/// Stream group and ID changes (XGROUP CREATE/SETID/CREATECONSUMER/
/// DELCONSUMER/DESTROY, XSETID) and group reads and acks do not count as
/// modifications for WATCH, as in redis-server 7.0.
#[test]
fn stream_group_changes_do_not_fail_watch() {
    let s = TestServer::start();
    let mut c = s.raw();
    let mut other = s.raw();
    other.call(&["XADD", "s", "1-1", "f", "v"]);
    other.call(&["XGROUP", "CREATE", "s", "g", "0"]);
    let changes: &[&[&str]] = &[
        &["XSETID", "s", "5-5"],
        &["XGROUP", "SETID", "s", "g", "0"],
        &["XGROUP", "CREATECONSUMER", "s", "g", "c9"],
        &["XGROUP", "DELCONSUMER", "s", "g", "c9"],
        &["XGROUP", "DESTROY", "s", "g"],
        &["XGROUP", "CREATE", "s", "g2", "0"],
        &["XREADGROUP", "GROUP", "g2", "c1", "STREAMS", "s", ">"],
        &["XACK", "s", "g2", "1-1"],
    ];
    for change in changes {
        c.call(&["WATCH", "s"]);
        assert!(!matches!(other.call(change), Frame::Error(_)), "{change:?}");
        c.call(&["MULTI"]);
        c.call(&["PING"]);
        assert_eq!(
            c.call(&["EXEC"]),
            Frame::Array(vec![simple("PONG")]),
            "after {change:?}"
        );
    }
}

/// Subcommands named like transaction commands (SLOWLOG RESET) are queued
/// inside MULTI like any other command.
#[test]
fn subcommands_named_reset_are_queued() {
    let s = TestServer::start();
    let mut c = s.raw();
    c.call(&["MULTI"]);
    assert_eq!(c.call(&["SLOWLOG", "RESET"]), simple("QUEUED"));
    assert_eq!(c.call(&["EXEC"]), Frame::Array(vec![simple("OK")]));
}

/// A transaction may not make its client a shard-channel subscriber or a
/// monitor: Redis refuses both as a "DENY BLOCKING" client, and the client
/// stays a normal one.
#[test]
fn ssubscribe_and_monitor_are_refused_inside_exec() {
    let s = TestServer::start();
    let mut raw = s.raw();
    let replies = raw.pipeline(&[vec!["MULTI"], vec!["SSUBSCRIBE", "c"], vec!["EXEC"]]);
    assert_eq!(
        replies[2],
        Frame::Array(vec![error(
            "ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client"
        )])
    );
    assert_eq!(raw.call(&["PING"]), simple("PONG"));
    let replies = raw.pipeline(&[vec!["MULTI"], vec!["MONITOR"], vec!["EXEC"]]);
    assert_eq!(
        replies[2],
        Frame::Array(vec![error(
            "ERR MONITOR isn't allowed for DENY BLOCKING client"
        )])
    );
    assert_eq!(raw.call(&["PING"]), simple("PONG"));
}

#[test]
fn a_key_already_expired_when_watched_is_watched_as_absent() {
    let s = TestServer::start_with(&["--enable-debug-command", "yes"]);
    let mut a = s.raw();
    let mut b = s.raw();
    // Active expiry off: only the commands below delete expired keys.
    a.call(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    let expired_keys = |c: &mut common::RawClient| match c.call(&["INFO", "stats"]) {
        Frame::Bulk(b) => String::from_utf8_lossy(&b)
            .lines()
            .find_map(|l| {
                l.strip_prefix("expired_keys:")
                    .map(|v| v.trim().to_string())
            })
            .unwrap_or_default(),
        other => panic!("INFO: {other:?}"),
    };
    let pause = || std::thread::sleep(std::time::Duration::from_millis(150));
    let transaction = |c: &mut common::RawClient| {
        c.call(&["MULTI"]);
        c.call(&["PING"]);
        c.call(&["EXEC"])
    };

    // WATCH leaves the expired key where it is.
    a.call(&["SET", "gone", "1", "PX", "20"]);
    pause();
    assert_eq!(a.call(&["WATCH", "gone"]), simple("OK"));
    assert_eq!(a.call(&["DBSIZE"]), int(1));
    assert_eq!(expired_keys(&mut a), "0");
    // Its deletion (here by another client's read) changes nothing.
    assert_eq!(b.call(&["GET", "gone"]), Frame::NullBulk);
    assert_eq!(expired_keys(&mut a), "1");
    assert_eq!(transaction(&mut a), Frame::Array(vec![simple("PONG")]));

    // Created again after its deletion: that is a change.
    a.call(&["SET", "gone", "1", "PX", "20"]);
    pause();
    a.call(&["WATCH", "gone"]);
    b.call(&["SET", "gone", "new"]);
    assert_eq!(transaction(&mut a), Frame::NullArray);

    // Still expired and never deleted at EXEC: not a change either.
    a.call(&["SET", "idle", "1", "PX", "20"]);
    pause();
    a.call(&["WATCH", "idle"]);
    assert_eq!(transaction(&mut a), Frame::Array(vec![simple("PONG")]));

    // A key that expires after WATCH fails EXEC, deleted or not.
    a.call(&["SET", "later", "1", "PX", "100"]);
    a.call(&["WATCH", "later"]);
    pause();
    assert_eq!(transaction(&mut a), Frame::NullArray);

    // FLUSHDB empties an already-expired watched key away: no change.
    a.call(&["SET", "f", "1", "PX", "20"]);
    pause();
    a.call(&["WATCH", "f"]);
    b.call(&["FLUSHDB"]);
    assert_eq!(transaction(&mut a), Frame::Array(vec![simple("PONG")]));

    // SWAPDB bringing in a live key for an already-expired one: a change;
    // bringing in an expired one for a missing one: none.
    a.call(&["SET", "w", "1", "PX", "20"]);
    b.call(&["SELECT", "1"]);
    b.call(&["SET", "w", "live"]);
    pause();
    a.call(&["WATCH", "w"]);
    b.call(&["SWAPDB", "0", "1"]);
    assert_eq!(transaction(&mut a), Frame::NullArray);
    b.call(&["FLUSHALL"]);
    b.call(&["SET", "m", "1", "PX", "20"]);
    pause();
    a.call(&["WATCH", "m"]);
    b.call(&["SWAPDB", "0", "1"]);
    assert_eq!(transaction(&mut a), Frame::Array(vec![simple("PONG")]));
    a.call(&["DEBUG", "SET-ACTIVE-EXPIRE", "1"]);
}
