//! Replication: full and partial synchronization with redis-server 7.0 in every pairing
//! (Tessera master with a redis-server replica, redis-server master with a Tessera replica,
//! Tessera with Tessera, and chains of them), disk-based and diskless transfers, the backlog
//! and replication IDs across a promotion, WAIT, min-replicas, read-only replicas and their
//! expiry, ROLE and INFO replication, Tessera's semi-synchronous mode, and masters that drop
//! the link or answer garbage.

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::dataset::{
    assert_same_data, describe, int, populate, text, without_read_counters,
    without_string_encodings,
};
use common::{bulk, error, simple, wait_until, Frame, RawClient, ServerKind, TestServer};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const SYNC_TIMEOUT: Duration = Duration::from_secs(60);

fn info(c: &mut RawClient, section: &str) -> BTreeMap<String, String> {
    text(&c.call(&["INFO", section]))
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn field(c: &mut RawClient, section: &str, name: &str) -> String {
    info(c, section)
        .remove(name)
        .unwrap_or_else(|| panic!("INFO {section} has no {name}"))
}

fn start(kind: ServerKind, extra: &[&str]) -> TestServer {
    let mut args = vec![
        "--repl-diskless-sync-delay",
        "0",
        "--enable-debug-command",
        "yes",
    ];
    args.extend_from_slice(extra);
    TestServer::start_kind(kind, &args)
}

fn replica_of(kind: ServerKind, master: &TestServer, extra: &[&str]) -> TestServer {
    let port = master.port().to_string();
    let mut args = vec!["--replicaof", "127.0.0.1", port.as_str()];
    args.extend_from_slice(extra);
    start(kind, &args)
}

/// Waits until the replica's link is up and it has applied everything the master wrote.
fn wait_synced(master: &TestServer, replica: &TestServer) {
    let mut m = master.raw();
    let mut r = replica.raw();
    let ok = wait_until(SYNC_TIMEOUT, || {
        let mi = info(&mut m, "replication");
        let ri = info(&mut r, "replication");
        ri.get("master_link_status").map(String::as_str) == Some("up")
            && ri.get("slave_repl_offset") == mi.get("master_repl_offset")
    });
    assert!(
        ok,
        "replica did not catch up:\nmaster {:?}\nreplica {:?}\nreplica log:\n{}",
        info(&mut m, "replication"),
        info(&mut r, "replication"),
        replica.log_tail(30)
    );
}

fn digest(s: &TestServer) -> Frame {
    s.raw().call(&["DEBUG", "DIGEST"])
}

fn assert_same_dataset(master: &TestServer, replica: &TestServer, what: &str) {
    let want = without_read_counters(&describe(&mut master.raw()));
    let got = without_read_counters(&describe(&mut replica.raw()));
    assert_same_data(&got, &want, what);
}

/// Scripts, transactions, expiries and every type, from `clients` connections at once.
fn mixed_writes(port: u16, seed: u64, clients: usize, rounds: usize) {
    let threads: Vec<_> = (0..clients)
        .map(|t| {
            std::thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(seed * 100 + t as u64);
                let mut c = RawClient::connect(port);
                for i in 0..rounds {
                    let k = format!("mw:{t}:{}", rng.gen_range(0..50));
                    let cmds: Vec<Vec<String>> = match i % 6 {
                        0 => vec![vec!["INCRBY".into(), k.clone(), rng.gen_range(1..9).to_string()]],
                        1 => vec![
                            vec!["MULTI".into()],
                            vec!["RPUSH".into(), format!("{k}:l"), i.to_string()],
                            vec!["HSET".into(), format!("{k}:h"), "f".into(), i.to_string()],
                            vec!["EXEC".into()],
                        ],
                        2 => vec![vec![
                            "EVAL".into(),
                            "redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2]) return redis.call('ZCARD', KEYS[1])".into(),
                            "1".into(),
                            format!("{k}:z"),
                            rng.gen_range(0..100).to_string(),
                            format!("m{}", rng.gen_range(0..20)),
                        ]],
                        3 => vec![vec!["SET".into(), format!("{k}:t"), "v".into(), "EX".into(), "1000".into()]],
                        4 => vec![
                            vec!["SELECT".into(), "2".into()],
                            vec!["SADD".into(), format!("{k}:s"), i.to_string()],
                            vec!["SELECT".into(), "0".into()],
                        ],
                        _ => vec![vec!["XADD".into(), format!("{k}:x"), "*".into(), "f".into(), i.to_string()]],
                    };
                    for reply in c.pipeline(&cmds) {
                        assert!(!matches!(reply, Frame::Error(_)), "{reply:?}");
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("writer thread");
    }
}

/// A whole data set through a full sync, with writes from several clients before and during
/// it and after it, compared key by key and by DEBUG DIGEST.
fn full_sync_case(master_kind: ServerKind, replica_kind: ServerKind, diskless: bool) {
    full_sync_case_loading(master_kind, replica_kind, diskless, "disabled");
}

fn full_sync_case_loading(
    master_kind: ServerKind,
    replica_kind: ServerKind,
    diskless: bool,
    load: &str,
) {
    let mode = if diskless { "yes" } else { "no" };
    let master = start(master_kind, &["--repl-diskless-sync", mode]);
    populate(&mut master.raw(), 1);
    let port = master.port();
    let during = std::thread::spawn(move || mixed_writes(port, 2, 3, 150));
    let replica = replica_of(replica_kind, &master, &["--repl-diskless-load", load]);
    during.join().expect("writers");
    mixed_writes(port, 3, 2, 60);
    wait_synced(&master, &replica);
    let what = format!(
        "{} replica of {} master (diskless {mode}, loading {load})",
        replica_kind.name(),
        master_kind.name()
    );
    assert_same_dataset(&master, &replica, &what);
    // Digests cover the function libraries and every database.
    assert_eq!(digest(&replica), digest(&master), "{what}: DEBUG DIGEST");
    let mut m = master.raw();
    assert!(int(&m.call(&["WAIT", "1", "5000"])) == 1, "{what}: WAIT");
    let stats = info(&mut m, "stats");
    assert_eq!(stats["sync_full"], "1", "{what}");
}

#[test]
fn full_sync_tessera_master_redis_replica() {
    full_sync_case(ServerKind::Tessera, ServerKind::Redis, true);
    full_sync_case(ServerKind::Tessera, ServerKind::Redis, false);
}

#[test]
fn full_sync_redis_master_tessera_replica() {
    full_sync_case(ServerKind::Redis, ServerKind::Tessera, true);
    full_sync_case(ServerKind::Redis, ServerKind::Tessera, false);
}

#[test]
fn full_sync_tessera_master_tessera_replica() {
    full_sync_case(ServerKind::Tessera, ServerKind::Tessera, true);
    full_sync_case(ServerKind::Tessera, ServerKind::Tessera, false);
    // Loaded from memory, not from the file.
    full_sync_case_loading(ServerKind::Tessera, ServerKind::Tessera, true, "swapdb");
    full_sync_case_loading(
        ServerKind::Tessera,
        ServerKind::Tessera,
        true,
        "on-empty-db",
    );
}

/// A replica of a replica gets the same stream: the same replication ID and offsets all along
/// the chain, whatever server each link is.
#[test]
fn chained_replicas_share_ids_and_offsets() {
    for kinds in [
        [ServerKind::Redis, ServerKind::Tessera, ServerKind::Redis],
        [ServerKind::Tessera, ServerKind::Redis, ServerKind::Tessera],
        [
            ServerKind::Tessera,
            ServerKind::Tessera,
            ServerKind::Tessera,
        ],
    ] {
        let top = start(kinds[0], &[]);
        populate(&mut top.raw(), 4);
        let middle = replica_of(kinds[1], &top, &[]);
        let bottom = replica_of(kinds[2], &middle, &[]);
        mixed_writes(top.port(), 5, 2, 80);
        wait_synced(&top, &middle);
        wait_synced(&middle, &bottom);
        let what = format!("{kinds:?}");
        assert_same_dataset(&top, &bottom, &what);
        let ids: Vec<String> = [&top, &middle, &bottom]
            .iter()
            .map(|s| field(&mut s.raw(), "replication", "master_replid"))
            .collect();
        assert!(ids.iter().all(|i| *i == ids[0]), "{what}: {ids:?}");
    }
}

/// A link killed on the master's side resumes from the backlog: sync_partial_ok grows,
/// sync_full does not, and what was written meanwhile arrives.
#[test]
fn partial_resync_after_the_link_drops() {
    for (mk, rk) in [
        (ServerKind::Tessera, ServerKind::Tessera),
        (ServerKind::Tessera, ServerKind::Redis),
        (ServerKind::Redis, ServerKind::Tessera),
    ] {
        let master = start(mk, &[]);
        let replica = replica_of(rk, &master, &[]);
        populate(&mut master.raw(), 6);
        wait_synced(&master, &replica);
        let mut m = master.raw();
        for round in 0..3 {
            assert_eq!(
                m.call(&["CLIENT", "KILL", "TYPE", "replica"]),
                Frame::Integer(1),
                "{mk:?}->{rk:?} round {round}"
            );
            mixed_writes(master.port(), 10 + round, 2, 40);
            wait_synced(&master, &replica);
        }
        let stats = info(&mut m, "stats");
        assert_eq!(stats["sync_full"], "1", "{mk:?}->{rk:?}");
        assert_eq!(stats["sync_partial_ok"], "3", "{mk:?}->{rk:?}");
        assert_same_dataset(&master, &replica, &format!("{mk:?}->{rk:?}"));
    }
}

/// A replica that asks for history the backlog no longer holds, or for an unknown ID, gets a
/// full sync (counted as a failed partial one).
/// A replica shut down with SAVE records in its RDB file the stream it follows (repl-id,
/// repl-offset and the stream's database); restarted, it continues that stream with a partial
/// resync, as Redis replicas do. The master keeps writing in the database its stream was in,
/// so nothing names it again: the file must. Every pairing with redis-server.
#[test]
fn a_restarted_replica_continues_the_stream_from_its_rdb_file() {
    for (mk, rk) in [
        (ServerKind::Tessera, ServerKind::Tessera),
        (ServerKind::Redis, ServerKind::Tessera),
        (ServerKind::Tessera, ServerKind::Redis),
    ] {
        let what = format!("{mk:?}->{rk:?}");
        let dir = common::dataset::DataDir::new("restarted-replica");
        let d = dir.arg();
        let replica_args = ["--dir", d.as_str()];
        let master = start(mk, &[]);
        let mut replica = replica_of(rk, &master, &replica_args);
        populate(&mut master.raw(), 6);
        let mut m = master.raw();
        assert_eq!(m.call(&["SELECT", "3"]), simple("OK"));
        assert_eq!(m.call(&["SET", "in3", "before"]), simple("OK"));
        wait_synced(&master, &replica);
        replica.raw().send(&["SHUTDOWN", "SAVE"]);
        assert!(
            replica.wait_exit(Duration::from_secs(60)).is_some(),
            "{what}: the replica did not shut down"
        );
        drop(replica);
        for i in 0..50 {
            assert_eq!(m.call(&["SET", &format!("in3:{i}"), "after"]), simple("OK"));
        }
        assert_eq!(m.call(&["INCR", "in3:counter"]), Frame::Integer(1));
        let replica = replica_of(rk, &master, &replica_args);
        wait_synced(&master, &replica);
        let stats = info(&mut m, "stats");
        assert_eq!(stats["sync_full"], "1", "{what}");
        assert_eq!(stats["sync_partial_ok"], "1", "{what}");
        let mut r = replica.raw();
        assert_eq!(r.call(&["SELECT", "3"]), simple("OK"));
        assert_eq!(r.call(&["GET", "in3:49"]), bulk("after"), "{what}");
        assert_eq!(r.call(&["EXISTS", "in3:0"]), Frame::Integer(1), "{what}");
        drop(r);
        assert_same_dataset(&master, &replica, &what);
    }
}

/// A master shut down with a save records its stream in the RDB file (repl-id, repl-offset),
/// as Redis 7 masters with a backlog do; restarted, it takes a new replication ID, keeps the old
/// one as its previous history up to the saved offset, and its replicas continue with a partial
/// resync. Every pairing with redis-server, and each loads the other's file.
#[test]
fn a_restarted_master_keeps_its_history_for_its_replicas() {
    for (mk, rk, file_from) in [
        (
            ServerKind::Tessera,
            ServerKind::Tessera,
            ServerKind::Tessera,
        ),
        (ServerKind::Tessera, ServerKind::Redis, ServerKind::Tessera),
        (ServerKind::Redis, ServerKind::Tessera, ServerKind::Redis),
        (ServerKind::Tessera, ServerKind::Redis, ServerKind::Redis),
        (ServerKind::Redis, ServerKind::Tessera, ServerKind::Tessera),
    ] {
        let what = format!("{mk:?} master (its file written by {file_from:?}) -> {rk:?} replica");
        let dir = common::dataset::DataDir::new("restarted-master");
        let d = dir.arg();
        // (No PING may slip in between the replica's last acknowledgment and the shutdown.)
        let master_args = ["--dir", d.as_str(), "--repl-ping-replica-period", "3600"];
        let mut writer = start(file_from, &master_args);
        let replica = replica_of(rk, &writer, &[]);
        populate(&mut writer.raw(), 8);
        let mut w = writer.raw();
        assert_eq!(w.call(&["SELECT", "2"]), simple("OK"));
        assert_eq!(w.call(&["SET", "in2", "before"]), simple("OK"));
        wait_synced(&writer, &replica);
        let before = info(&mut w, "replication");
        drop(w);
        writer.raw().send(&["SHUTDOWN", "SAVE"]);
        assert!(
            writer.wait_exit(Duration::from_secs(60)).is_some(),
            "{what}: the master did not shut down"
        );
        // Restarted as itself, or as the other server on the same port and files.
        let mut master = writer;
        master.restart_as(mk);
        let mut m = master.raw();
        let after = info(&mut m, "replication");
        // (Shutting down, redis-server may first ask its replicas for an ACK in the stream.)
        let saved: i64 = after["master_repl_offset"].parse().unwrap();
        let offset: i64 = before["master_repl_offset"].parse().unwrap();
        assert!(
            (offset..=offset + 37).contains(&saved),
            "{what}: {saved} after {offset}"
        );
        let offset = saved;
        assert_ne!(after["master_replid"], before["master_replid"], "{what}");
        assert_eq!(after["master_replid2"], before["master_replid"], "{what}");
        assert_eq!(
            after["second_repl_offset"],
            (offset + 1).to_string(),
            "{what}"
        );
        assert_eq!(after["repl_backlog_active"], "1", "{what}");
        assert_eq!(
            after["repl_backlog_first_byte_offset"],
            (offset + 1).to_string(),
            "{what}"
        );
        assert_eq!(m.call(&["SET", "in0", "after"]), simple("OK"));
        wait_synced(&master, &replica);
        let stats = info(&mut m, "stats");
        assert_eq!(stats["sync_full"], "0", "{what}");
        assert_eq!(stats["sync_partial_ok"], "1", "{what}");
        assert_eq!(replica.raw().call(&["GET", "in0"]), bulk("after"), "{what}");
        drop(m);
        assert_same_dataset(&master, &replica, &what);
        master.stop();
    }
}

#[test]
fn psync_outside_the_backlog_is_a_full_resync() {
    let master = start(ServerKind::Tessera, &["--repl-backlog-size", "16kb"]);
    let replica = replica_of(ServerKind::Tessera, &master, &[]);
    wait_synced(&master, &replica);
    let mut r = replica.raw();
    assert_eq!(r.call(&["REPLICAOF", "NO", "ONE"]), simple("OK"));
    // More than the backlog holds, while the replica is away.
    let mut m = master.raw();
    let big = "x".repeat(1000);
    for i in 0..100 {
        assert_eq!(m.call(&["SET", &format!("big{i}"), &big]), simple("OK"));
    }
    let port = master.port().to_string();
    assert_eq!(r.call(&["REPLICAOF", "127.0.0.1", &port]), simple("OK"));
    wait_synced(&master, &replica);
    let stats = info(&mut m, "stats");
    assert_eq!(stats["sync_full"], "2");
    assert_eq!(stats["sync_partial_err"], "1");
    assert_eq!(digest(&replica), digest(&master));

    // A made-up ID, by hand.
    let mut c = master.raw();
    c.send(&["PSYNC", "0123456789012345678901234567890123456789", "1"]);
    let Frame::Simple(line) = c.read_frame() else {
        panic!("PSYNC reply")
    };
    assert!(
        String::from_utf8_lossy(&line).starts_with("FULLRESYNC "),
        "{line:?}"
    );
}

/// REPLICAOF NO ONE on a replica in the middle of a chain: its own replica continues with a
/// partial resync under the new ID (replid2 is the old one), and the old master, pointed at the
/// new one, continues partially too.
#[test]
fn promotion_keeps_partial_resync_for_the_others() {
    let kinds = [
        ServerKind::Tessera,
        ServerKind::Tessera,
        ServerKind::Tessera,
    ];
    let old = start(kinds[0], &[]);
    let promoted = replica_of(kinds[1], &old, &[]);
    let other = replica_of(kinds[2], &promoted, &[]);
    populate(&mut old.raw(), 7);
    wait_synced(&old, &promoted);
    wait_synced(&promoted, &other);
    let old_id = field(&mut old.raw(), "replication", "master_replid");

    let mut p = promoted.raw();
    assert_eq!(p.call(&["REPLICAOF", "NO", "ONE"]), simple("OK"));
    let pinfo = info(&mut p, "replication");
    assert_eq!(pinfo["role"], "master");
    assert_eq!(pinfo["master_replid2"], old_id);
    assert_ne!(pinfo["master_replid"], old_id);
    assert_eq!(p.call(&["SET", "after-promotion", "1"]), simple("OK"));
    wait_synced(&promoted, &other);
    assert_eq!(other.raw().call(&["GET", "after-promotion"]), bulk("1"));

    // The old master follows the new one and continues where it was.
    let port = promoted.port().to_string();
    assert_eq!(
        old.raw().call(&["REPLICAOF", "127.0.0.1", &port]),
        simple("OK")
    );
    wait_synced(&promoted, &old);
    assert_eq!(old.raw().call(&["GET", "after-promotion"]), bulk("1"));
    // (Its one full sync is the one it served `other` as a replica.)
    let stats = info(&mut p, "stats");
    assert_eq!(stats["sync_full"], "1", "{stats:?}");
    assert_eq!(stats["sync_partial_ok"], "2", "{stats:?}");
    assert_eq!(digest(&old), digest(&other));
}

#[test]
fn wait_counts_real_acknowledgments() {
    let master = start(ServerKind::target(), &[]);
    let mut m = master.raw();
    assert_eq!(m.call(&["SET", "k", "v"]), simple("OK"));
    assert_eq!(m.call(&["WAIT", "0", "0"]), Frame::Integer(0));
    let began = Instant::now();
    assert_eq!(m.call(&["WAIT", "1", "300"]), Frame::Integer(0));
    assert!(
        began.elapsed() >= Duration::from_millis(250),
        "WAIT returned early"
    );
    let r1 = replica_of(ServerKind::target(), &master, &[]);
    let r2 = replica_of(ServerKind::target(), &master, &[]);
    wait_synced(&master, &r1);
    wait_synced(&master, &r2);
    assert_eq!(m.call(&["INCR", "n"]), Frame::Integer(1));
    assert_eq!(m.call(&["WAIT", "2", "10000"]), Frame::Integer(2));
    assert_eq!(m.call(&["WAIT", "3", "200"]), Frame::Integer(2));
    // A pipeline: the replies before WAIT come first, the one after it last.
    let replies = m.pipeline(&[
        vec!["SET", "a", "1"],
        vec!["WAIT", "2", "10000"],
        vec!["GET", "a"],
    ]);
    assert_eq!(replies, vec![simple("OK"), Frame::Integer(2), bulk("1")]);
    assert_eq!(
        m.call(&["WAIT", "1", "-1"]),
        error("ERR timeout is negative")
    );
    let mut r = r1.raw();
    assert_eq!(
        r.call(&["WAIT", "1", "10"]),
        error("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.")
    );
}

/// A write, a transaction queuing one, and a script declared as writing (a shebang without
/// no-writes, refused before it runs) all get `refusal`.
fn assert_writes_refused(c: &mut RawClient, refusal: &str) {
    assert_eq!(c.call(&["SET", "k", "v"]), error(refusal));
    c.call(&["MULTI"]);
    assert_eq!(c.call(&["SET", "k", "v"]), error(refusal));
    assert_eq!(
        c.call(&["EXEC"]),
        error("EXECABORT Transaction discarded because of previous errors.")
    );
    assert_eq!(
        c.call(&["EVAL", "#!lua\nreturn redis.call('SET', 'k', '1')", "0"]),
        error(refusal)
    );
}

/// Sends a signal to a server (SIGSTOP to make it stop reading, SIGCONT to resume it).
fn signal(server: &TestServer, sig: &str) {
    let ok = std::process::Command::new("kill")
        .args([sig, &server.pid().to_string()])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill {sig}");
}

#[test]
fn min_replicas_to_write_refuses_writes_without_good_replicas() {
    let master = start(
        ServerKind::target(),
        &[
            "--min-replicas-to-write",
            "1",
            "--min-replicas-max-lag",
            "10",
        ],
    );
    let mut m = master.raw();
    assert_writes_refused(&mut m, "NOREPLICAS Not enough good replicas to write.");
    assert_eq!(m.call(&["GET", "k"]), Frame::NullBulk);
    assert_eq!(
        m.call(&["EVAL", "#!lua flags=no-writes\nreturn 1", "0"]),
        Frame::Integer(1)
    );
    let replica = replica_of(ServerKind::target(), &master, &[]);
    wait_synced(&master, &replica);
    assert!(wait_until(SYNC_TIMEOUT, || m.call(&["SET", "k", "v"]) == simple("OK")));
    assert_eq!(field(&mut m, "replication", "min_slaves_good_slaves"), "1");
}

/// Replicas refuse writes, keep serving reads, and hide keys past their TTL until the master's
/// DEL arrives.
#[test]
fn replicas_are_read_only_and_expire_by_the_master() {
    for (mk, rk) in [
        (ServerKind::Tessera, ServerKind::Tessera),
        (ServerKind::Redis, ServerKind::Tessera),
    ] {
        let master = start(mk, &[]);
        let replica = replica_of(rk, &master, &[]);
        let mut m = master.raw();
        assert_eq!(m.call(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]), simple("OK"));
        assert_eq!(m.call(&["SET", "short", "v", "PX", "200"]), simple("OK"));
        assert_eq!(m.call(&["SET", "long", "v"]), simple("OK"));
        wait_synced(&master, &replica);
        let mut r = replica.raw();
        assert_writes_refused(
            &mut r,
            "READONLY You can't write against a read only replica.",
        );
        assert_eq!(
            r.call(&["EVAL", "return redis.call('SET', 'x', '1')", "0"]),
            error("READONLY You can't write against a read only replica. script: 8d2da2533bbf4d10590876b5c755f716f5ffa077, on @user_script:1.")
        );
        std::thread::sleep(Duration::from_millis(300));
        // Logically expired: hidden, but still there until the master deletes it.
        assert_eq!(r.call(&["GET", "short"]), Frame::NullBulk, "{mk:?}->{rk:?}");
        assert_eq!(r.call(&["DBSIZE"]), Frame::Integer(2), "{mk:?}->{rk:?}");
        assert_eq!(r.call(&["GET", "long"]), bulk("v"));
        // The master's lookup deletes it and propagates the DEL.
        assert_eq!(m.call(&["GET", "short"]), Frame::NullBulk);
        wait_synced(&master, &replica);
        assert_eq!(r.call(&["DBSIZE"]), Frame::Integer(1), "{mk:?}->{rk:?}");
        // replica-read-only no: local writes are allowed (and not propagated).
        assert_eq!(
            r.call(&["CONFIG", "SET", "replica-read-only", "no"]),
            simple("OK")
        );
        assert_eq!(r.call(&["SET", "local", "1"]), simple("OK"));
    }
}

#[test]
fn role_and_info_replication_as_redis_shows_them() {
    let master = start(ServerKind::target(), &[]);
    let replica = replica_of(ServerKind::target(), &master, &[]);
    let mut m = master.raw();
    assert_eq!(m.call(&["SET", "k", "v"]), simple("OK"));
    wait_synced(&master, &replica);
    let offset = field(&mut m, "replication", "master_repl_offset");
    let rport = replica.port().to_string();
    // (The master learns the replica's offset from its once-a-second ACK.)
    assert!(wait_until(SYNC_TIMEOUT, || {
        format!("{:?}", m.call(&["ROLE"])).contains(&format!("{:?}", bulk(&offset)))
    }));
    let Frame::Array(role) = m.call(&["ROLE"]) else {
        panic!("ROLE")
    };
    assert_eq!(role[0], bulk("master"));
    assert_eq!(role[1], Frame::Integer(offset.parse().unwrap()));
    assert_eq!(
        role[2],
        Frame::Array(vec![Frame::Array(vec![
            bulk("127.0.0.1"),
            bulk(&rport),
            bulk(&offset)
        ])])
    );
    let Frame::Array(role) = replica.raw().call(&["ROLE"]) else {
        panic!("ROLE")
    };
    assert_eq!(
        role,
        vec![
            bulk("slave"),
            bulk("127.0.0.1"),
            Frame::Integer(i64::from(master.port())),
            bulk("connected"),
            Frame::Integer(offset.parse().unwrap())
        ]
    );
    let mi = info(&mut m, "replication");
    assert_eq!(mi["connected_slaves"], "1");
    let slave0 = &mi["slave0"];
    let (head, lag) = slave0.rsplit_once(",lag=").expect("lag");
    assert_eq!(
        head,
        format!("ip=127.0.0.1,port={rport},state=online,offset={offset}")
    );
    assert!(lag.parse::<u32>().is_ok(), "{slave0}");
    assert_eq!(mi["repl_backlog_active"], "1");
    assert_eq!(mi["repl_backlog_first_byte_offset"], "1");
    assert_eq!(mi["repl_backlog_histlen"], offset);
    let ri = info(&mut replica.raw(), "replication");
    for name in [
        "role",
        "master_host",
        "master_port",
        "master_link_status",
        "master_last_io_seconds_ago",
        "master_sync_in_progress",
        "slave_read_repl_offset",
        "slave_repl_offset",
        "slave_priority",
        "slave_read_only",
        "replica_announced",
        "connected_slaves",
        "master_failover_state",
        "master_replid",
        "master_replid2",
        "master_repl_offset",
        "second_repl_offset",
        "repl_backlog_active",
        "repl_backlog_size",
        "repl_backlog_first_byte_offset",
        "repl_backlog_histlen",
    ] {
        assert!(ri.contains_key(name), "replica INFO lacks {name}: {ri:?}");
    }
    assert_eq!(ri["role"], "slave");
    assert_eq!(ri["master_link_status"], "up");
    assert_eq!(ri["master_replid"], mi["master_replid"]);
    // The replica connection as CLIENT LIST shows it, and CLIENT KILL TYPE.
    let list = text(&m.call(&["CLIENT", "LIST", "TYPE", "replica"]));
    assert_eq!(list.lines().count(), 1, "{list}");
    assert!(list.contains(" flags=S "), "{list}");
    assert!(list.contains(" cmd=replconf "), "{list}");
    let hello = replica.raw().call(&["HELLO", "3"]);
    let hello = common::fmt_frame(&hello);
    assert!(hello.contains("\"replica\""), "{hello}");
}

/// Replication traffic is counted as redis-server 7.0 counts it: the replica's
/// total_net_repl_input_bytes and the master's total_net_repl_output_bytes take the snapshot
/// and the stream, as parts of total_net_input_bytes and total_net_output_bytes. Checked for
/// redis-server pairs too.
#[test]
fn replication_traffic_is_counted_as_a_part_of_the_totals() {
    let stat = |c: &mut RawClient, name: &str| -> u64 {
        field(c, "stats", name).parse().expect("a byte count")
    };
    for kind in [ServerKind::Tessera, ServerKind::Redis] {
        let master = start(kind, &["--rdbcompression", "no"]);
        let mut m = master.raw();
        let value = "v".repeat(1000);
        for i in 0..500 {
            m.call(&["SET", &format!("before:{i}"), &value]);
        }
        let replica = replica_of(kind, &master, &[]);
        wait_synced(&master, &replica);
        let mut r = replica.raw();
        // The snapshot (500 KB) crossed the link.
        let snapshot_in = stat(&mut r, "total_net_repl_input_bytes");
        let snapshot_out = stat(&mut m, "total_net_repl_output_bytes");
        assert!(
            snapshot_in >= 500_000,
            "{kind:?}: replica read {snapshot_in}"
        );
        assert!(
            snapshot_out >= 500_000,
            "{kind:?}: master wrote {snapshot_out}"
        );
        let out_before = stat(&mut m, "total_net_output_bytes");
        for i in 0..500 {
            m.call(&["SET", &format!("after:{i}"), &value]);
        }
        // Waiting on the replica alone, so the master writes no INFO texts meanwhile.
        let target = field(&mut m, "replication", "master_repl_offset");
        assert!(wait_until(SYNC_TIMEOUT, || field(
            &mut r,
            "replication",
            "slave_repl_offset"
        ) == target));
        let stream_in = stat(&mut r, "total_net_repl_input_bytes") - snapshot_in;
        let stream_out = stat(&mut m, "total_net_repl_output_bytes") - snapshot_out;
        let total_out = stat(&mut m, "total_net_output_bytes") - out_before;
        // The stream (500 KB) too, in the master's total output beside 500 +OK replies and an
        // INFO text.
        assert!(stream_in >= 500_000, "{kind:?}: replica read {stream_in}");
        assert!(stream_out >= 500_000, "{kind:?}: master wrote {stream_out}");
        assert!(
            total_out >= stream_out && total_out - stream_out < 50_000,
            "{kind:?}: master output {total_out}, of which {stream_out} to the replica"
        );
        assert!(stat(&mut r, "total_net_input_bytes") >= snapshot_in + stream_in);
        assert_eq!(stat(&mut r, "total_net_repl_output_bytes"), 0);
        assert_eq!(m.call(&["CONFIG", "RESETSTAT"]), simple("OK"));
        assert_eq!(r.call(&["CONFIG", "RESETSTAT"]), simple("OK"));
        // (Only a PING of the master's might have crossed since.)
        assert!(stat(&mut r, "total_net_repl_input_bytes") < 1000);
        assert!(stat(&mut m, "total_net_repl_output_bytes") < 1000);
    }
}

#[test]
fn replicaof_arguments_and_errors() {
    let s = start(ServerKind::target(), &[]);
    let mut c = s.raw();
    assert_eq!(
        c.call(&["REPLICAOF", "127.0.0.1", "70000"]),
        error("ERR Invalid master port")
    );
    assert_eq!(
        c.call(&["REPLICAOF", "127.0.0.1", "x"]),
        error("ERR Invalid master port")
    );
    assert_eq!(c.call(&["REPLICAOF", "NO", "ONE"]), simple("OK"));
    assert_eq!(
        c.call(&["REPLCONF", "listening-port"]),
        error("ERR syntax error")
    );
    assert_eq!(
        c.call(&["REPLCONF", "bogus", "1"]),
        error("ERR Unrecognized REPLCONF option: bogus")
    );
    assert_eq!(
        c.call(&["REPLCONF", "listening-port", "1234", "capa", "eof"]),
        simple("OK")
    );
    // A master nobody listens on: the link stays down and says so.
    let dead = common::free_port().to_string();
    assert_eq!(c.call(&["REPLICAOF", "127.0.0.1", &dead]), simple("OK"));
    assert_eq!(
        c.call(&["REPLICAOF", "127.0.0.1", &dead]),
        simple("OK Already connected to specified master")
    );
    let ri = info(&mut c, "replication");
    assert_eq!(ri["role"], "slave");
    assert_eq!(ri["master_link_status"], "down");
    assert_eq!(
        c.call(&["CONFIG", "GET", "replicaof"]),
        common::bulks(&["replicaof", &format!("127.0.0.1 {dead}")])
    );
    // replica-serve-stale-data no: MASTERDOWN for what needs fresh data.
    assert_eq!(
        c.call(&["CONFIG", "SET", "replica-serve-stale-data", "no"]),
        simple("OK")
    );
    assert_eq!(
        c.call(&["GET", "k"]),
        error("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.")
    );
    assert_eq!(
        c.call(&["PING"]),
        error("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.")
    );
    assert_eq!(c.call(&["ECHO", "stale"]), bulk("stale"));
    let Frame::Array(role) = c.call(&["ROLE"]) else {
        panic!("ROLE")
    };
    assert_eq!(role[4], Frame::Integer(-1));
    assert_eq!(c.call(&["REPLICAOF", "NO", "ONE"]), simple("OK"));
    assert_eq!(c.call(&["GET", "k"]), Frame::NullBulk);
    assert_eq!(field(&mut c, "replication", "role"), "master");
}

/// Tessera's semi-synchronous mode: a write's reply waits until a replica has it; reads and
/// other clients are not held.
#[test]
fn semi_sync_holds_write_replies_until_a_replica_acknowledges() {
    if common::target_is_redis() {
        return; // Tessera's own directive.
    }
    let master = start(ServerKind::Tessera, &[]);
    let mut admin = master.raw();
    assert_eq!(
        admin.call(&["CONFIG", "SET", "repl-semi-sync-replicas", "1"]),
        simple("OK")
    );
    let mut writer = master.raw();
    writer.send(&["SET", "held", "1"]);
    writer.set_timeout(Duration::from_millis(500));
    assert!(
        writer.try_read_frame().is_err(),
        "the reply came with no replica"
    );
    // Another client is not held.
    assert_eq!(admin.call(&["GET", "held"]), bulk("1"));
    let replica = replica_of(ServerKind::Tessera, &master, &[]);
    writer.set_timeout(SYNC_TIMEOUT);
    assert_eq!(writer.read_frame(), simple("OK"));
    wait_synced(&master, &replica);
    assert_eq!(writer.call(&["INCR", "n"]), Frame::Integer(1));
    assert_eq!(replica.raw().call(&["GET", "n"]), bulk("1"));
    // With a timeout the reply is released anyway.
    drop(replica);
    admin.call(&["CONFIG", "SET", "repl-semi-sync-timeout", "200"]);
    assert!(wait_until(SYNC_TIMEOUT, || field(
        &mut admin,
        "replication",
        "connected_slaves"
    ) == "0"));
    assert_eq!(writer.call(&["SET", "released", "1"]), simple("OK"));
}

/// A replica whose output buffer passes the replica class's hard limit is disconnected, and
/// comes back with a (full) resync.
#[test]
fn a_replica_over_its_output_limit_is_dropped_and_resyncs() {
    // The hard limit at once; the soft one once over it for longer than its second.
    for (hard, soft, seconds) in [("256kb", "0", "0"), ("0", "256kb", "1")] {
        let master = start(
            ServerKind::target(),
            &[
                "--client-output-buffer-limit",
                "replica",
                hard,
                soft,
                seconds,
            ],
        );
        let replica = replica_of(ServerKind::target(), &master, &[]);
        wait_synced(&master, &replica);
        // The replica stops reading: its process is stopped while the master writes.
        signal(&replica, "-STOP");
        let mut m = master.raw();
        let big = "y".repeat(64 * 1024);
        // (More than the kernel's socket buffers on both sides can absorb.)
        for i in 0..320 {
            assert_eq!(m.call(&["SET", &format!("b{i}"), &big]), simple("OK"));
        }
        let mut i = 0;
        let dropped = wait_until(SYNC_TIMEOUT, || {
            // (A soft limit is judged as the stream grows.)
            i += 1;
            m.call(&["SET", &format!("late{i}"), "1"]);
            std::thread::sleep(Duration::from_millis(100));
            field(&mut m, "replication", "connected_slaves") == "0"
        });
        signal(&replica, "-CONT");
        assert!(
            dropped,
            "the replica over its limit ({hard} {soft} {seconds}) was not dropped"
        );
        wait_synced(&master, &replica);
        assert_eq!(digest(&replica), digest(&master));
    }
}

// ---------------------------------------------------------------- bad masters

/// A fake master: answers the handshake, then plays `script` for PSYNC.
fn fake_master(script: Vec<u8>, stop: Arc<AtomicBool>) -> (u16, std::thread::JoinHandle<usize>) {
    fake_master_sessions(vec![script], stop)
}

/// A fake master that plays `scripts[i]` to the i-th session's PSYNC (the last one to later
/// sessions), then holds the session a moment and closes it.
fn fake_master_sessions(
    scripts: Vec<Vec<u8>>,
    stop: Arc<AtomicBool>,
) -> (u16, std::thread::JoinHandle<usize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    listener.set_nonblocking(true).expect("nonblocking");
    let handle = std::thread::spawn(move || {
        let mut sessions = 0;
        while !stop.load(Ordering::Relaxed) {
            let Ok((mut sock, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            };
            sessions += 1;
            let script = scripts[(sessions - 1).min(scripts.len() - 1)].clone();
            sock.set_nonblocking(false).ok();
            sock.set_read_timeout(Some(Duration::from_secs(5))).ok();
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            // Answers PING with PONG, REPLCONF with OK, and PSYNC with the script.
            let mut answered = 0;
            'session: while let Ok(n) = sock.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
                let names = command_names(&buf);
                while answered < names.len() {
                    let name = names[answered].to_ascii_uppercase();
                    let reply: &[u8] = match name.as_str() {
                        "PING" => b"+PONG\r\n",
                        "PSYNC" | "SYNC" => &script,
                        _ => b"+OK\r\n",
                    };
                    answered += 1;
                    if sock.write_all(reply).is_err() || name.ends_with("SYNC") {
                        break 'session;
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(300));
        }
        sessions
    });
    (port, handle)
}

/// The names of the complete commands in `buf` (arrays of bulk strings).
fn command_names(buf: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(buf);
    let lines: Vec<&str> = text.split("\r\n").collect();
    let mut names = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if let Some(n) = lines[i]
            .strip_prefix('*')
            .and_then(|n| n.parse::<usize>().ok())
        {
            if i + 2 * n < lines.len() {
                names.push(lines[i + 2].to_string());
                i += 2 * n + 1;
                continue;
            }
            break;
        }
        i += 1;
    }
    names
}

#[test]
fn a_master_that_sends_garbage_or_a_torn_snapshot_never_breaks_the_replica() {
    if common::target_is_redis() {
        return;
    }
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("garbage reply", b"+WHATEVER\r\n".to_vec()),
        (
            "bad bulk header",
            b"+FULLRESYNC 0123456789012345678901234567890123456789 0\r\nnot a bulk\r\n".to_vec(),
        ),
        (
            "torn snapshot",
            b"+FULLRESYNC 0123456789012345678901234567890123456789 0\r\n$100000\r\nREDIS0010"
                .to_vec(),
        ),
        ("corrupt snapshot", {
            let mut v =
                b"+FULLRESYNC 0123456789012345678901234567890123456789 0\r\n$19\r\n".to_vec();
            v.extend_from_slice(b"REDIS0010\xfa\x05hello\xff\x00\x01");
            v
        }),
        (
            "huge claimed length",
            b"+FULLRESYNC 0123456789012345678901234567890123456789 0\r\n$999999999999\r\nREDIS"
                .to_vec(),
        ),
        ("not an RDB payload", {
            let mut v =
                b"+FULLRESYNC 0123456789012345678901234567890123456789 0\r\n$999999999999\r\n"
                    .to_vec();
            v.extend(std::iter::repeat_n(b'x', 1 << 20));
            v
        }),
    ];
    for (what, script) in cases {
        let stop = Arc::new(AtomicBool::new(false));
        let (port, handle) = fake_master(script, stop.clone());
        let mut replica = start(ServerKind::Tessera, &[]);
        let mut c = replica.raw();
        assert_eq!(c.call(&["SET", "mine", "1"]), simple("OK"));
        assert_eq!(
            c.call(&["REPLICAOF", "127.0.0.1", &port.to_string()]),
            simple("OK")
        );
        // It retries (a new session each second) and never serves a half-loaded set as up.
        std::thread::sleep(Duration::from_millis(2500));
        let ri = info(&mut c, "replication");
        assert_eq!(ri["master_link_status"], "down", "{what}");
        replica.assert_healthy();
        assert_eq!(c.call(&["PING"]), simple("PONG"), "{what}");
        if what == "not an RDB payload" {
            // Dropped at its first bytes, not after the claimed length.
            assert!(replica.log_tail(40).contains("wrong signature"), "{what}");
        }
        assert_eq!(c.call(&["REPLICAOF", "NO", "ONE"]), simple("OK"));
        stop.store(true, Ordering::Relaxed);
        let sessions = handle.join().expect("fake master");
        assert!(
            sessions >= 2,
            "{what}: the replica did not retry ({sessions})"
        );
    }
}

/// SYNC (the pre-PSYNC protocol) still works: the snapshot as a bulk, then the stream.
#[test]
fn legacy_sync_gets_a_snapshot_then_the_stream() {
    let master = start(ServerKind::target(), &["--repl-diskless-sync", "no"]);
    let mut m = master.raw();
    assert_eq!(m.call(&["SET", "a", "1"]), simple("OK"));
    let mut s = std::net::TcpStream::connect(("127.0.0.1", master.port())).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).ok();
    s.write_all(b"SYNC\r\n").expect("write");
    let mut got = Vec::new();
    let mut chunk = [0u8; 65536];
    let deadline = Instant::now() + SYNC_TIMEOUT;
    // The bulk header, then the RDB (REDIS...).
    while !(got.windows(5).any(|w| w == b"REDIS") && got.contains(&b'$')) {
        assert!(Instant::now() < deadline, "no snapshot");
        let n = s.read(&mut chunk).expect("read");
        assert!(n > 0, "closed");
        got.extend_from_slice(&chunk[..n]);
    }
    assert_eq!(m.call(&["SET", "after", "2"]), simple("OK"));
    while !got.windows(5).any(|w| w == b"after") {
        assert!(Instant::now() < deadline, "no stream after the snapshot");
        let n = s.read(&mut chunk).expect("read");
        assert!(n > 0, "closed");
        got.extend_from_slice(&chunk[..n]);
    }
}

/// The RDB inside a full sync's transfer: `$<len>\r\n<rdb>` from disk, or `$EOF:<mark>\r\n<rdb><mark>`
/// from a socket (after the newlines a master sends while it prepares).
fn rdb_of_transfer(transfer: &[u8]) -> Vec<u8> {
    let start = transfer
        .iter()
        .position(|&b| b != b'\n')
        .expect("a transfer");
    let body = &transfer[start..];
    assert_eq!(
        body[0],
        b'$',
        "a bulk: {}",
        common::printable(&body[..body.len().min(80)])
    );
    let eol = body
        .windows(2)
        .position(|w| w == b"\r\n")
        .expect("a header");
    let header = &body[1..eol];
    let rest = &body[eol + 2..];
    if let Some(mark) = header.strip_prefix(b"EOF:") {
        assert_eq!(mark.len(), 40);
        assert!(rest.ends_with(mark), "the transfer ends with its mark");
        rest[..rest.len() - mark.len()].to_vec()
    } else {
        let len: usize = std::str::from_utf8(header).unwrap().parse().unwrap();
        assert_eq!(rest.len(), len, "nothing follows an rdb-only transfer");
        rest.to_vec()
    }
}

/// Starts a server of `kind` on the RDB and says what it holds: its keys and its libraries.
fn loaded(kind: ServerKind, rdb: &[u8], scratch: &std::path::Path, name: &str) -> (Frame, Frame) {
    let path = scratch.join(name);
    std::fs::write(&path, rdb).unwrap();
    common::dataset::check_rdb(&path);
    let dir = scratch.display().to_string();
    let server = TestServer::start_kind(kind, &["--dir", &dir, "--dbfilename", name]);
    let mut c = server.raw();
    (c.call(&["KEYS", "*"]), c.call(&["FUNCTION", "LIST"]))
}

#[test]
fn rdb_only_and_filtered_transfers_as_redis_sends_them() {
    let kind = ServerKind::target();
    let mut master = start(kind, &[]);
    let mut m = master.raw();
    let code = "#!lua name=lib\nredis.register_function('f', function() return 1 end)";
    assert_eq!(m.call(&["FUNCTION", "LOAD", code]), bulk("lib"));
    assert_eq!(m.call(&["SET", "k", "v"]), simple("OK"));
    let libs = m.call(&["FUNCTION", "LIST"]);

    for (args, reply) in [
        (
            vec!["rdb-only", "2"],
            "ERR value is out of range, value must between 0 and 1",
        ),
        (
            vec!["rdb-only", "-1"],
            "ERR value is out of range, value must between 0 and 1",
        ),
        (
            vec!["rdb-only", "x"],
            "ERR value is not an integer or out of range",
        ),
        (
            vec!["rdb-filter-only", "foo"],
            "ERR Unsupported rdb-filter-only option: foo",
        ),
        (
            vec!["rdb-filter-only", "functions foo"],
            "ERR Unsupported rdb-filter-only option: foo",
        ),
        (
            vec!["rdb-filter-only", "\"fun"],
            "ERR Missing rdb-filter-only values",
        ),
        (
            vec!["listening-port", "1", "bogus", "x"],
            "ERR Unrecognized REPLCONF option: bogus",
        ),
    ] {
        let mut c = master.raw();
        let mut cmd = vec!["REPLCONF"];
        cmd.extend(args.iter());
        assert_eq!(c.call(&cmd), error(reply), "{args:?}");
    }
    for filters in ["functions", "FUNCTIONS", " \"functions\" ", ""] {
        assert_eq!(
            m.call(&["REPLCONF", "rdb-filter-only", filters]),
            simple("OK"),
            "{filters:?}"
        );
    }

    // A filtered snapshot goes to a socket only; replies still unwritten refuse a sync.
    let mut c = master.raw();
    assert_eq!(
        c.call(&["REPLCONF", "rdb-filter-only", "functions"]),
        simple("OK")
    );
    for sync in [vec!["SYNC"], vec!["PSYNC", "?", "-1"]] {
        assert_eq!(
            c.call(&sync),
            error("ERR Filtered replica requires EOF capability")
        );
    }
    let mut c = master.raw();
    let replies = c.pipeline(&[vec!["PING"], vec!["SYNC"]]);
    assert_eq!(
        replies[1],
        error("ERR SYNC and PSYNC are invalid with pending output")
    );
    let replies = c.pipeline(&[vec!["PING"], vec!["PSYNC", "?", "-1"]]);
    assert_eq!(
        replies[1],
        error("ERR SYNC and PSYNC are invalid with pending output")
    );
    assert_eq!(
        c.call(&["PING"]),
        simple("PONG"),
        "the connection stays a client"
    );

    // rdb-only: the snapshot (filtered or not, from disk or a socket), then the connection closes.
    let mut found = Vec::new();
    for (capa_eof, filter) in [
        (true, Some("functions")),
        (true, Some("")),
        (false, None),
        (true, None),
    ] {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", master.port())).unwrap();
        let mut hello = Vec::new();
        if capa_eof {
            common::encode_command(&["REPLCONF", "capa", "eof"], &mut hello);
        }
        common::encode_command(&["REPLCONF", "rdb-only", "1"], &mut hello);
        if let Some(f) = filter {
            common::encode_command(&["REPLCONF", "rdb-filter-only", f], &mut hello);
        }
        s.write_all(&hello).unwrap();
        let oks = hello.iter().filter(|&&b| b == b'*').count();
        let mut seen = Vec::new();
        while seen.iter().filter(|&&b| b == b'\n').count() < oks {
            let mut byte = [0u8; 1];
            s.read_exact(&mut byte).unwrap();
            seen.push(byte[0]);
        }
        assert_eq!(seen, b"+OK\r\n".repeat(oks));
        s.write_all(b"*1\r\n$4\r\nSYNC\r\n").unwrap();
        let (transfer, closed) = common::read_to_close(&mut s, SYNC_TIMEOUT);
        assert!(
            closed,
            "an rdb-only replica is disconnected after its snapshot"
        );
        let rdb = rdb_of_transfer(&transfer);
        // A master with a backlog names its stream in the snapshot, as in its RDB files.
        assert!(rdb.windows(11).any(|w| w == b"repl-offset"), "{filter:?}");
        let name = format!("only-{}-{}.rdb", capa_eof, filter.unwrap_or("all").len());
        found.push(loaded(kind, &rdb, master.scratch(), &name));
    }
    let none = Frame::Array(Vec::new());
    let keys = Frame::Array(vec![bulk("k")]);
    assert_eq!(found[0], (none.clone(), libs.clone()), "functions only");
    assert_eq!(found[1], (none.clone(), none.clone()), "an empty RDB");
    assert_eq!(found[2], (keys.clone(), libs.clone()), "from disk");
    assert_eq!(found[3], (keys, libs.clone()), "from a socket");
    assert_eq!(field(&mut m, "replication", "connected_slaves"), "0");

    // redis-cli --functions-rdb asks for exactly this.
    let out = master.scratch().join("cli-functions.rdb");
    let status = std::process::Command::new("redis-cli")
        .args(["-p", &master.port().to_string(), "--functions-rdb"])
        .arg(&out)
        .output()
        .expect("run redis-cli");
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let rdb = std::fs::read(&out).unwrap();
    assert_eq!(
        loaded(kind, &rdb, master.scratch(), "cli-functions-copy.rdb"),
        (none, libs)
    );
    master.assert_healthy();
}

/// A replica connection under the test's control: it synchronizes, then acknowledges only what
/// it is told to.
struct FakeReplica {
    stream: std::net::TcpStream,
    got: Vec<u8>,
}

impl FakeReplica {
    fn attach(master: &TestServer) -> FakeReplica {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", master.port())).unwrap();
        let mut hello = Vec::new();
        common::encode_command(&["REPLCONF", "listening-port", "7777"], &mut hello);
        common::encode_command(&["REPLCONF", "capa", "eof"], &mut hello);
        stream.write_all(&hello).unwrap();
        let mut replica = FakeReplica {
            stream,
            got: Vec::new(),
        };
        replica.read_until(b"+OK\r\n+OK\r\n");
        replica.got.clear();
        replica
            .stream
            .write_all(b"*3\r\n$5\r\nPSYNC\r\n$1\r\n?\r\n$2\r\n-1\r\n")
            .unwrap();
        // The snapshot goes to the socket (both servers' default): `$EOF:<mark>`, RDB, mark.
        replica.read_until(b"$EOF:");
        let at = replica.got.windows(5).position(|w| w == b"$EOF:").unwrap() + 5;
        while replica.got.len() < at + 40 {
            replica.read_more();
        }
        let mark = replica.got[at..at + 40].to_vec();
        while replica
            .got
            .windows(40)
            .filter(|w| *w == mark.as_slice())
            .count()
            < 2
        {
            replica.read_more();
        }
        replica.got.clear();
        // (A master takes the first ACK only once it has seen the transfer end.)
        let mut m = master.raw();
        let online = wait_until(SYNC_TIMEOUT, || {
            replica.ack(0);
            std::thread::sleep(Duration::from_millis(50));
            info(&mut m, "replication")
                .get("slave0")
                .is_some_and(|s| s.contains("state=online"))
        });
        assert!(online, "the fake replica never came online");
        replica
    }

    fn read_more(&mut self) {
        self.stream.set_read_timeout(Some(SYNC_TIMEOUT)).ok();
        let mut chunk = [0u8; 65536];
        let n = self.stream.read(&mut chunk).expect("the snapshot");
        assert!(n > 0, "the master closed the replica's connection");
        self.got.extend_from_slice(&chunk[..n]);
    }

    fn read_until(&mut self, what: &[u8]) {
        self.stream
            .set_read_timeout(Some(Duration::from_millis(200)))
            .ok();
        let deadline = Instant::now() + SYNC_TIMEOUT;
        let mut chunk = [0u8; 65536];
        while !self.got.windows(what.len()).any(|w| w == what) {
            assert!(Instant::now() < deadline, "no {}", common::printable(what));
            if let Ok(n) = self.stream.read(&mut chunk) {
                assert!(n > 0, "the master closed the replica's connection");
                self.got.extend_from_slice(&chunk[..n]);
            }
        }
    }

    fn ack(&mut self, offset: i64) {
        let mut ack = Vec::new();
        common::encode_command(&["REPLCONF", "ACK", &offset.to_string()], &mut ack);
        self.stream.write_all(&ack).unwrap();
    }
}

fn assert_no_reply_yet(c: &mut RawClient, what: &str) {
    c.set_timeout(Duration::from_millis(300));
    assert!(c.try_read_frame().is_err(), "{what} was answered");
    c.set_timeout(Duration::from_secs(30));
}

/// SHUTDOWN waits for replicas that have not acknowledged the whole stream, as Redis 7.0 does:
/// it holds writes (reads go on), asks the replicas for an ACK, and exits as soon as they have
/// it all, or at shutdown-timeout with a line per lagging replica; SHUTDOWN ABORT ends the wait,
/// NOW skips it.
#[test]
fn shutdown_waits_for_lagging_replicas() {
    let kind = ServerKind::target();
    let mut master = start(kind, &["--shutdown-timeout", "60"]);
    let mut replica = FakeReplica::attach(&master);
    let mut m = master.raw();
    assert_eq!(m.call(&["SET", "a", "1"]), simple("OK"));
    assert_eq!(
        m.call(&["SHUTDOWN", "ABORT"]),
        error("ERR No shutdown in progress.")
    );

    let mut first = master.raw();
    first.send(&["SHUTDOWN", "NOSAVE"]);
    replica.read_until(b"GETACK");
    assert_no_reply_yet(&mut first, "a SHUTDOWN waiting for its replica");
    let mut writer = master.raw();
    writer.send(&["SET", "b", "1"]);
    assert_no_reply_yet(&mut writer, "a write while SHUTDOWN waits");
    assert_eq!(m.call(&["GET", "a"]), bulk("1"), "reads go on");
    assert_eq!(m.call(&["SHUTDOWN", "ABORT"]), simple("OK"));
    assert_eq!(
        first.read_frame(),
        error("ERR Errors trying to SHUTDOWN. Check logs.")
    );
    assert_eq!(writer.read_frame(), simple("OK"), "writes resume");
    assert_eq!(
        m.call(&["SHUTDOWN", "ABORT"]),
        error("ERR No shutdown in progress.")
    );
    assert!(master.log_tail(50).contains("Shutdown manually aborted."));

    // Once the replica has acknowledged everything, the server exits, long before the timeout.
    let mut second = master.raw();
    second.send(&["SHUTDOWN", "NOSAVE"]);
    let started = Instant::now();
    wait_until(SYNC_TIMEOUT, || {
        master
            .log_tail(50)
            .matches("Waiting for replicas before shutting down.")
            .count()
            == 2
    });
    let offset: i64 = field(&mut m, "replication", "master_repl_offset")
        .parse()
        .unwrap();
    replica.ack(offset);
    assert!(
        master.wait_exit(Duration::from_secs(30)).is_some(),
        "the server did not exit once its replica had acknowledged it all"
    );
    assert!(started.elapsed() < Duration::from_secs(60));
    assert!(
        master
            .log_tail(10)
            .contains("1 of 1 replicas are in sync when shutting down."),
        "{}",
        master.log_tail(10)
    );

    // At the timeout, the lagging replica is named.
    let mut master = start(kind, &["--shutdown-timeout", "1"]);
    let _replica = FakeReplica::attach(&master);
    let mut m = master.raw();
    assert_eq!(m.call(&["SET", "a", "1"]), simple("OK"));
    m.send(&["SHUTDOWN", "NOSAVE"]);
    assert!(master.wait_exit(Duration::from_secs(30)).is_some());
    let log = master.log_tail(10);
    assert!(
        log.contains("# Lagging replica 127.0.0.1:7777 reported offset ")
            && log.contains(" behind master, lag=")
            && log.contains("state=online.")
            && log.contains("0 of 1 replicas are in sync when shutting down."),
        "{log}"
    );

    // A signal's shutdown waits too; a SIGINT meanwhile exits at once (with an error).
    let mut master = start(kind, &["--shutdown-timeout", "60"]);
    let _replica = FakeReplica::attach(&master);
    let mut m = master.raw();
    assert_eq!(m.call(&["SET", "a", "1"]), simple("OK"));
    signal(&master, "-TERM");
    assert!(wait_until(SYNC_TIMEOUT, || master
        .log_tail(10)
        .contains("Waiting for replicas before shutting down.")));
    signal(&master, "-INT");
    let status = master
        .wait_exit(Duration::from_secs(30))
        .expect("exit on SIGINT");
    assert_eq!(status.code(), Some(1));
    assert!(master.log_tail(10).contains("You insist... exiting now."));

    // NOW does not wait.
    let mut master = start(kind, &["--shutdown-timeout", "60"]);
    let _replica = FakeReplica::attach(&master);
    let mut m = master.raw();
    assert_eq!(m.call(&["SET", "a", "1"]), simple("OK"));
    m.send(&["SHUTDOWN", "NOW", "NOSAVE"]);
    assert!(master.wait_exit(Duration::from_secs(30)).is_some());
    assert!(!master.log_tail(10).contains("Waiting for replicas"));
}

// ---------------------------------------------------------------- FAILOVER

#[test]
fn failover_arguments_and_errors() {
    let s = start(ServerKind::target(), &[]);
    let mut c = s.raw();
    for (args, want) in [
        (
            vec!["FAILOVER"],
            "ERR FAILOVER requires connected replicas.",
        ),
        (vec!["FAILOVER", "ABORT"], "ERR No failover in progress."),
        (vec!["FAILOVER", "TO"], "ERR syntax error"),
        (vec!["FAILOVER", "TO", "h"], "ERR syntax error"),
        (
            vec!["FAILOVER", "TO", "h", "x"],
            "ERR value is not an integer or out of range",
        ),
        (
            vec!["FAILOVER", "TIMEOUT", "0"],
            "ERR FAILOVER timeout must be greater than 0",
        ),
        (
            vec!["FAILOVER", "TIMEOUT", "x"],
            "ERR value is not an integer or out of range",
        ),
        (
            vec!["FAILOVER", "FORCE"],
            "ERR FAILOVER requires connected replicas.",
        ),
        (
            vec!["FAILOVER", "ABORT", "TIMEOUT", "5"],
            "ERR syntax error",
        ),
        (vec!["FAILOVER", "ABORT", "ABORT"], "ERR syntax error"),
    ] {
        assert_eq!(c.call(&args), error(want), "{args:?}");
    }
    let replica = replica_of(ServerKind::target(), &s, &[]);
    wait_synced(&s, &replica);
    assert_eq!(
        c.call(&["FAILOVER", "FORCE"]),
        error("ERR FAILOVER with force option requires both a timeout and target HOST and IP.")
    );
    assert_eq!(
        c.call(&["FAILOVER", "TO", "127.0.0.1", "1"]),
        error("ERR FAILOVER target HOST and PORT is not a replica.")
    );
    assert_eq!(
        replica.raw().call(&["FAILOVER"]),
        error("ERR FAILOVER is not valid when server is a replica.")
    );
}

/// FAILOVER hands the master role to a replica with nothing lost: the old master ends as a
/// replica of the new one, through a partial resync, in every pairing with redis-server.
#[test]
fn failover_switches_roles_without_a_full_resync() {
    for (mk, rk, to) in [
        (ServerKind::Tessera, ServerKind::Tessera, false),
        (ServerKind::Tessera, ServerKind::Redis, true),
        (ServerKind::Redis, ServerKind::Tessera, true),
    ] {
        let what = format!("{mk:?} master, {rk:?} replica");
        let master = start(mk, &[]);
        let replica = replica_of(rk, &master, &[]);
        populate(&mut master.raw(), 20);
        wait_synced(&master, &replica);
        let mut m = master.raw();
        let reply = if to {
            let port = replica.port().to_string();
            m.call(&["FAILOVER", "TO", "127.0.0.1", &port, "TIMEOUT", "30000"])
        } else {
            m.call(&["FAILOVER"])
        };
        assert_eq!(reply, simple("OK"), "{what}");
        let mut r = replica.raw();
        assert!(
            wait_until(SYNC_TIMEOUT, || field(&mut r, "replication", "role")
                == "master"
                && field(&mut m, "replication", "role") == "slave"
                && field(&mut m, "replication", "master_link_status") == "up"),
            "{what}: roles did not switch:\n{:?}\n{:?}",
            info(&mut m, "replication"),
            info(&mut r, "replication")
        );
        assert!(
            wait_until(SYNC_TIMEOUT, || field(
                &mut m,
                "replication",
                "master_failover_state"
            ) == "no-failover"),
            "{what}"
        );
        assert_eq!(r.call(&["SET", "after", "1"]), simple("OK"), "{what}");
        wait_synced(&replica, &master);
        assert_eq!(m.call(&["GET", "after"]), bulk("1"), "{what}");
        assert_eq!(
            m.call(&["SET", "x", "1"]),
            error("READONLY You can't write against a read only replica."),
            "{what}"
        );
        let stats = info(&mut r, "stats");
        assert_eq!(stats["sync_full"], "0", "{what}: {stats:?}");
        assert_eq!(stats["sync_partial_ok"], "1", "{what}: {stats:?}");
        assert_eq!(digest(&master), digest(&replica), "{what}");
    }
}

/// Writes sent while a failover waits for the replica are held, not refused, and a failover
/// whose replica never catches up ends by itself at its timeout (the master stays one).
#[test]
fn failover_holds_writes_and_times_out_without_force() {
    let master = start(ServerKind::target(), &[]);
    let replica = replica_of(ServerKind::target(), &master, &[]);
    wait_synced(&master, &replica);
    let mut m = master.raw();
    // A stopped replica cannot acknowledge what comes next.
    signal(&replica, "-STOP");
    assert_eq!(m.call(&["SET", "k", "1"]), simple("OK"));
    assert_eq!(m.call(&["FAILOVER", "TIMEOUT", "1500"]), simple("OK"));
    assert_eq!(
        field(&mut m, "replication", "master_failover_state"),
        "waiting-for-sync"
    );
    let mut writer = master.raw();
    writer.send(&["SET", "held", "1"]);
    writer.set_timeout(Duration::from_millis(400));
    assert!(
        writer.try_read_frame().is_err(),
        "a write ran during the failover"
    );
    // Reads go on.
    assert_eq!(m.call(&["GET", "k"]), bulk("1"));
    writer.set_timeout(SYNC_TIMEOUT);
    assert_eq!(writer.read_frame(), simple("OK"));
    signal(&replica, "-CONT");
    assert_eq!(field(&mut m, "replication", "role"), "master");
    assert_eq!(
        field(&mut m, "replication", "master_failover_state"),
        "no-failover"
    );
    // ABORT ends one at once.
    signal(&replica, "-STOP");
    assert_eq!(m.call(&["SET", "k", "2"]), simple("OK"));
    assert_eq!(m.call(&["FAILOVER"]), simple("OK"));
    assert_eq!(
        m.call(&["FAILOVER"]),
        error("ERR FAILOVER already in progress.")
    );
    assert_eq!(m.call(&["FAILOVER", "ABORT"]), simple("OK"));
    signal(&replica, "-CONT");
    assert_eq!(m.call(&["SET", "k", "3"]), simple("OK"));
    wait_synced(&master, &replica);
}

/// A link cut between a transaction's MULTI and its EXEC: the replica's offset stopped before
/// the MULTI, the master resends the transaction whole, and it is applied once.
#[test]
fn a_transaction_cut_by_a_dropped_link_is_applied_once() {
    if common::target_is_redis() {
        return;
    }
    // An empty snapshot, as Tessera writes it.
    let source = start(ServerKind::Tessera, &[]);
    assert_eq!(source.raw().call(&["SAVE"]), simple("OK"));
    let rdb = std::fs::read(source.scratch().join("dump.rdb")).expect("dump.rdb");
    let id = "0123456789012345678901234567890123456789";
    let tx = b"*1\r\n$5\r\nMULTI\r\n*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n".to_vec();
    let mut first = format!("+FULLRESYNC {id} 100\r\n${}\r\n", rdb.len()).into_bytes();
    first.extend_from_slice(&rdb);
    first.extend_from_slice(&tx);
    let mut second = format!("+CONTINUE {id}\r\n").into_bytes();
    second.extend_from_slice(&tx);
    second.extend_from_slice(b"*1\r\n$4\r\nEXEC\r\n");
    let stop = Arc::new(AtomicBool::new(false));
    let (port, handle) = fake_master_sessions(vec![first, second], stop.clone());
    let replica = start(ServerKind::Tessera, &[]);
    let mut c = replica.raw();
    assert_eq!(
        c.call(&["REPLICAOF", "127.0.0.1", &port.to_string()]),
        simple("OK")
    );
    assert!(
        wait_until(SYNC_TIMEOUT, || c.call(&["GET", "n"]) == bulk("1")),
        "the resent transaction did not apply: {:?}\n{}",
        c.call(&["GET", "n"]),
        replica.log_tail(20)
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(c.call(&["GET", "n"]), bulk("1"), "applied twice");
    // The offset counts the transaction once: 100 + MULTI + INCR + EXEC.
    let want = 100 + 15 + 21 + 14;
    assert!(
        wait_until(SYNC_TIMEOUT, || field(
            &mut c,
            "replication",
            "slave_repl_offset"
        ) == want.to_string()),
        "{:?}",
        info(&mut c, "replication")
    );
    assert_eq!(c.call(&["REPLICAOF", "NO", "ONE"]), simple("OK"));
    stop.store(true, Ordering::Relaxed);
    handle.join().expect("fake master");
}

/// Order-sensitive writes to keys that every client shares, spread over many shards, mixed
/// with the commands a replica must run alone (several shards at once, SELECT, SWAPDB,
/// FLUSHDB, transactions, scripts, SORT ... BY, PUBLISH): a replica applying them on four
/// threads ends with the master's data, and so does a redis-server replica of it that
/// attaches while they flow (its snapshot is taken at an applied offset).
#[test]
fn a_replica_applying_on_many_threads_keeps_the_masters_order() {
    let master = start(ServerKind::Tessera, &[]);
    let middle = replica_of(ServerKind::Tessera, &master, &["--threads", "4"]);
    wait_synced(&master, &middle);
    let port = master.port();
    let writers: Vec<_> = (0..4u64)
        .map(|t| {
            std::thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(700 + t);
                let mut c = RawClient::connect(port);
                for i in 0..400 {
                    let a = format!("shared:{}", rng.gen_range(0..64));
                    let b = format!("shared:{}", rng.gen_range(0..64));
                    let cmds: Vec<Vec<String>> = match rng.gen_range(0..14) {
                        0..=3 => vec![vec!["APPEND".into(), a, format!("{t}.{i},")]],
                        4 | 5 => vec![vec!["RPUSH".into(), format!("{a}:l"), format!("{t}.{i}")]],
                        6 => vec![vec!["HINCRBYFLOAT".into(), format!("{a}:f"), "n".into(), "1.5".into()]],
                        7 => vec![vec!["MSET".into(), a, format!("m{t}.{i}"), b, format!("n{t}.{i}")]],
                        8 => vec![vec!["LMOVE".into(), format!("{a}:l"), format!("{b}:l"), "LEFT".into(), "RIGHT".into()]],
                        9 => vec![
                            vec!["MULTI".into()],
                            vec!["APPEND".into(), a.clone(), "x".into()],
                            vec!["COPY".into(), a, b, "REPLACE".into()],
                            vec!["EXEC".into()],
                        ],
                        10 => vec![vec![
                            "EVAL".into(),
                            "redis.call('APPEND', KEYS[1], ARGV[1]) return redis.call('RPUSH', KEYS[2], ARGV[1])".into(),
                            "2".into(),
                            a,
                            format!("{b}:l"),
                            format!("e{t}.{i}"),
                        ]],
                        11 => vec![
                            vec!["SELECT".into(), "2".into()],
                            vec!["APPEND".into(), a, format!("{t}.{i}")],
                            vec!["SELECT".into(), "0".into()],
                        ],
                        12 => vec![
                            vec!["SADD".into(), "ids".into(), rng.gen_range(0..9).to_string()],
                            vec!["SET".into(), format!("w_{}", rng.gen_range(0..9)), i.to_string()],
                            vec!["SORT".into(), "ids".into(), "BY".into(), "w_*".into(), "STORE".into(), format!("{a}:sorted")],
                            vec!["PUBLISH".into(), "ch".into(), i.to_string()],
                        ],
                        _ => match i % 100 {
                            50 if t == 0 => vec![vec!["SWAPDB".into(), "0".into(), "2".into()]],
                            99 if t == 1 => vec![vec!["FLUSHDB".into()]],
                            _ => vec![vec!["SET".into(), a, format!("s{t}.{i}"), "PX".into(), "100000".into()]],
                        },
                    };
                    for reply in c.pipeline(&cmds) {
                        assert!(!matches!(reply, Frame::Error(_)), "{cmds:?}: {reply:?}");
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let bottom = replica_of(ServerKind::Redis, &middle, &[]);
    for w in writers {
        w.join().expect("writer thread");
    }
    wait_synced(&master, &middle);
    wait_synced(&middle, &bottom);
    assert_same_dataset(&master, &middle, "a replica on four threads");
    // (Strings a snapshot carried are embstr there, as redis-server loads them.)
    assert_same_data(
        &without_string_encodings(&without_read_counters(&describe(&mut bottom.raw()))),
        &without_string_encodings(&without_read_counters(&describe(&mut master.raw()))),
        "redis-server below it",
    );
    assert_eq!(digest(&bottom), digest(&master), "DEBUG DIGEST below");
    assert_eq!(digest(&middle), digest(&master), "DEBUG DIGEST");
    // What it acknowledges is applied: WAIT, then read on the replica.
    let mut m = master.raw();
    let mut r = middle.raw();
    for i in 0..50 {
        let key = format!("shared:{}", i % 64);
        m.call(&["APPEND", key.as_str(), "!"]);
        assert_eq!(int(&m.call(&["WAIT", "1", "5000"])), 1);
        assert_eq!(
            r.call(&["GET", key.as_str()]),
            m.call(&["GET", key.as_str()])
        );
    }
}

/// The master link is a client as Redis lists it (flag M, the master's address), and CLIENT
/// KILL TYPE master drops it: the replica reconnects and continues partially.
#[test]
fn the_master_link_is_listed_and_killable() {
    let master = start(ServerKind::Tessera, &[]);
    let replica = replica_of(ServerKind::target(), &master, &[]);
    populate(&mut master.raw(), 9);
    wait_synced(&master, &replica);
    let mut r = replica.raw();
    let Frame::Bulk(list) = r.call(&["CLIENT", "LIST", "TYPE", "master"]) else {
        panic!("CLIENT LIST")
    };
    let list = String::from_utf8_lossy(&list).to_string();
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 1, "{list}");
    assert!(lines[0].contains(" flags=M "), "{list}");
    assert!(
        lines[0].contains(&format!(" addr=127.0.0.1:{} ", master.port())),
        "{list}"
    );
    let Frame::Bulk(normal) = r.call(&["CLIENT", "LIST", "TYPE", "normal"]) else {
        panic!("CLIENT LIST")
    };
    assert!(!String::from_utf8_lossy(&normal).contains("flags=M"));
    assert_eq!(
        r.call(&["CLIENT", "KILL", "TYPE", "master"]),
        Frame::Integer(1)
    );
    mixed_writes(master.port(), 21, 2, 30);
    wait_synced(&master, &replica);
    let stats = info(&mut master.raw(), "stats");
    assert_eq!(stats["sync_full"], "1");
    assert_eq!(stats["sync_partial_ok"], "1");
    assert_same_dataset(&master, &replica, "after CLIENT KILL TYPE master");
}

/// `replica-lazy-flush yes`: the data a replica held before its full sync is freed in the
/// background (INFO lazyfreed_objects grows) and the synced data is the master's.
#[test]
fn replica_lazy_flush_frees_the_old_data_in_the_background() {
    let master = start(ServerKind::Tessera, &[]);
    populate(&mut master.raw(), 31);
    let replica = start(ServerKind::target(), &["--replica-lazy-flush", "yes"]);
    let mut r = replica.raw();
    populate(&mut r, 32);
    assert_eq!(field(&mut r, "memory", "lazyfreed_objects"), "0");
    let port = master.port().to_string();
    assert_eq!(r.call(&["REPLICAOF", "127.0.0.1", &port]), simple("OK"));
    wait_synced(&master, &replica);
    assert_same_dataset(&master, &replica, "after a lazily flushed sync");
    assert!(wait_until(SYNC_TIMEOUT, || {
        field(&mut r, "memory", "lazyfreed_objects") != "0"
    }));
}

/// `repl-diskless-load swapdb` and a full sync from the history the replica already follows
/// (it fell behind the master's backlog): the replica loads the snapshot beside its data and
/// keeps serving reads from it meanwhile (INFO `async_loading:1`, `loading:0`; REPLICAOF, a
/// no-async-loading command, gets -LOADING), then swaps the new data in at once. The same
/// run against redis-server 7.0 in both roles.
#[test]
fn a_swapdb_replica_serves_its_old_data_while_it_loads_the_same_history() {
    for kind in [ServerKind::Tessera, ServerKind::Redis] {
        let master = start(kind, &["--repl-backlog-size", "16kb"]);
        let mut m = master.raw();
        let old: Vec<Vec<String>> = (0..3000)
            .map(|i| vec!["SET".into(), format!("old:{i}"), "before".into()])
            .collect();
        for reply in m.pipeline(&old) {
            assert_eq!(reply, simple("OK"), "{kind:?}");
        }
        let mut replica = replica_of(kind, &master, &["--repl-diskless-load", "swapdb"]);
        wait_synced(&master, &replica);
        let mut r = replica.raw();
        // A millisecond a key: the load below takes seconds (and redis-server answers
        // between the load's small steps, not only every 2 MB).
        assert_eq!(
            r.call(&[
                "CONFIG",
                "SET",
                "key-load-delay",
                "1000",
                "loading-process-events-interval-bytes",
                "1024"
            ]),
            simple("OK")
        );
        let full_before = field(&mut m, "stats", "sync_full");
        // The replica stops reading, the master writes past its backlog and drops the link.
        signal(&replica, "-STOP");
        // (More than the sockets' kernel buffers hold, so the dropped link loses some.)
        let filler = "x".repeat(10_000);
        let new: Vec<Vec<String>> = (0..4000)
            .map(|i| vec!["SET".into(), format!("new:{i}"), filler.clone()])
            .chain([vec!["SET".into(), "old:0".into(), "after".into()]])
            .collect();
        for reply in m.pipeline(&new) {
            assert_eq!(reply, simple("OK"), "{kind:?}");
        }
        assert_eq!(
            m.call(&["CLIENT", "KILL", "TYPE", "replica"]),
            Frame::Integer(1),
            "{kind:?}"
        );
        signal(&replica, "-CONT");
        assert!(
            wait_until(SYNC_TIMEOUT, || field(
                &mut r,
                "persistence",
                "async_loading"
            ) == "1"),
            "{kind:?}: no async loading:\n{}",
            replica.log_tail(20)
        );
        let during = info(&mut r, "persistence");
        assert_eq!(during["loading"], "0", "{kind:?}: {during:?}");
        assert!(
            during.contains_key("loading_start_time"),
            "{kind:?}: {during:?}"
        );
        assert_eq!(r.call(&["GET", "old:0"]), bulk("before"), "{kind:?}");
        // (What the replica read before the link dropped it has; the rest it lacks.)
        assert_eq!(
            r.call(&["EXISTS", "new:3999"]),
            Frame::Integer(0),
            "{kind:?}"
        );
        let Frame::Integer(keys) = r.call(&["DBSIZE"]) else {
            panic!("DBSIZE")
        };
        assert!((3000..7000).contains(&keys), "{kind:?}: {keys} keys");
        let port = master.port().to_string();
        assert_eq!(
            r.call(&["REPLICAOF", "127.0.0.1", &port]),
            error("LOADING Redis is loading the dataset in memory"),
            "{kind:?}"
        );
        wait_synced(&master, &replica);
        assert_eq!(field(&mut r, "persistence", "async_loading"), "0");
        assert_eq!(r.call(&["GET", "old:0"]), bulk("after"), "{kind:?}");
        assert_eq!(
            r.call(&["STRLEN", "new:3999"]),
            Frame::Integer(10_000),
            "{kind:?}"
        );
        assert_eq!(r.call(&["DBSIZE"]), Frame::Integer(7000), "{kind:?}");
        let full_after: u64 = field(&mut m, "stats", "sync_full").parse().expect("count");
        assert_eq!(
            full_after,
            full_before.parse::<u64>().expect("count") + 1,
            "{kind:?}"
        );
        assert_eq!(digest(&master), digest(&replica), "{kind:?}");
        replica.assert_healthy();
    }
}

/// A snapshot that arrives whole but does not load: `repl-diskless-load swapdb` keeps the data
/// the replica had; `disabled` and `on-empty-db` (which goes to disk when the data is not
/// empty) have emptied it, as redis-server does (which then exits, where Tessera retries:
/// so this runs against Tessera only).
#[test]
fn a_failed_load_keeps_the_old_data_only_with_swapdb() {
    let mut corrupt = b"+FULLRESYNC 0123456789012345678901234567890123456789 0\r\n$19\r\n".to_vec();
    corrupt.extend_from_slice(b"REDIS0010\xfa\x05hello\xff\x00\x01");
    for (mode, kept) in [
        ("swapdb", true),
        ("disabled", false),
        ("on-empty-db", false),
    ] {
        let stop = Arc::new(AtomicBool::new(false));
        let (port, handle) = fake_master(corrupt.clone(), stop.clone());
        let mut replica = start(ServerKind::Tessera, &["--repl-diskless-load", mode]);
        let mut c = replica.raw();
        assert_eq!(c.call(&["SET", "mine", "1"]), simple("OK"));
        assert_eq!(
            c.call(&["REPLICAOF", "127.0.0.1", &port.to_string()]),
            simple("OK")
        );
        std::thread::sleep(Duration::from_millis(1500));
        assert_eq!(c.call(&["REPLICAOF", "NO", "ONE"]), simple("OK"));
        stop.store(true, Ordering::Relaxed);
        handle.join().expect("fake master");
        replica.assert_healthy();
        let want = if kept { bulk("1") } else { Frame::NullBulk };
        assert_eq!(c.call(&["GET", "mine"]), want, "{mode}");
    }
    // A swapdb snapshot of the replica's own history loads aside: failing, it leaves the
    // data untouched.
    let mut replica = start(ServerKind::Tessera, &["--repl-diskless-load", "swapdb"]);
    let mut c = replica.raw();
    assert_eq!(c.call(&["SET", "mine", "1"]), simple("OK"));
    let replid = field(&mut c, "replication", "master_replid");
    let mut same = format!("+FULLRESYNC {replid} 0\r\n$19\r\n").into_bytes();
    same.extend_from_slice(b"REDIS0010\xfa\x05hello\xff\x00\x01");
    let stop = Arc::new(AtomicBool::new(false));
    let (port, handle) = fake_master(same, stop.clone());
    assert_eq!(
        c.call(&["REPLICAOF", "127.0.0.1", &port.to_string()]),
        simple("OK")
    );
    assert!(wait_until(SYNC_TIMEOUT, || replica
        .log_tail(50)
        .contains("Discarding the half-loaded data")));
    assert_eq!(c.call(&["GET", "mine"]), bulk("1"));
    assert_eq!(c.call(&["REPLICAOF", "NO", "ONE"]), simple("OK"));
    stop.store(true, Ordering::Relaxed);
    handle.join().expect("fake master");
    replica.assert_healthy();
    assert_eq!(c.call(&["GET", "mine"]), bulk("1"));
}

/// bind-source-addr: the replica connects to its master from that address; one this host does
/// not have is dropped (best effort, as in Redis) and the link still comes up.
#[test]
fn the_replica_link_binds_to_bind_source_addr() {
    let kind = ServerKind::target();
    // (127.0.0.2 is not the loopback address protected mode lets in.)
    let master = start(kind, &["--protected-mode", "no"]);
    let replica = replica_of(kind, &master, &["--bind-source-addr", "127.0.0.2"]);
    wait_synced(&master, &replica);
    let slave0 = field(&mut master.raw(), "replication", "slave0");
    assert!(slave0.starts_with("ip=127.0.0.2,"), "{slave0}");
    drop(replica);
    let unbindable = replica_of(kind, &master, &["--bind-source-addr", "192.0.2.1"]);
    wait_synced(&master, &unbindable);
    let mut m = master.raw();
    let ok = wait_until(SYNC_TIMEOUT, || {
        info(&mut m, "replication")
            .get("slave0")
            .is_some_and(|s| s.starts_with("ip=127.0.0.1,"))
    });
    assert!(ok, "{:?}", info(&mut m, "replication"));
}

/// A writable replica expires the keys its own clients gave a TTL (the master never heard of
/// them), in every database, by any command that sets one; keys the master gave a TTL stay
/// until the master's DEL arrives (hidden once past it).
#[test]
fn a_writable_replica_expires_the_ttls_its_clients_set() {
    let kind = ServerKind::target();
    let master = start(kind, &[]);
    let replica = replica_of(kind, &master, &[]);
    let mut m = master.raw();
    assert_eq!(m.call(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]), simple("OK"));
    assert_eq!(m.call(&["SELECT", "6"]), simple("OK"));
    assert_eq!(
        m.call(&["SET", "from-master", "v", "PX", "10"]),
        simple("OK")
    );
    wait_synced(&master, &replica);
    let mut r = replica.raw();
    assert_eq!(
        r.call(&["CONFIG", "SET", "replica-read-only", "no"]),
        simple("OK")
    );
    let expired_before: i64 = field(&mut r, "stats", "expired_keys").parse().unwrap();
    assert_eq!(r.call(&["SELECT", "5"]), simple("OK"));
    assert_eq!(r.call(&["SET", "k1", "1", "PX", "100"]), simple("OK"));
    assert_eq!(r.call(&["SET", "k2", "2"]), simple("OK"));
    assert_eq!(r.call(&["PEXPIRE", "k2", "100"]), Frame::Integer(1));
    assert_eq!(r.call(&["SETEX", "k3", "1", "3"]), simple("OK"));
    assert_eq!(r.call(&["SET", "k4", "4"]), simple("OK"));
    assert_eq!(r.call(&["GETEX", "k4", "PX", "100"]), bulk("4"));
    assert_eq!(r.call(&["SET", "kept", "v", "EX", "1000"]), simple("OK"));
    assert_eq!(r.call(&["SELECT", "7"]), simple("OK"));
    assert_eq!(
        r.call(&[
            "EVAL",
            "return redis.call('SET', 'k5', '5', 'PX', '100')",
            "0"
        ]),
        simple("OK")
    );
    assert_eq!(r.call(&["SELECT", "5"]), simple("OK"));
    let ok = wait_until(SYNC_TIMEOUT, || {
        r.call(&["DBSIZE"]) == Frame::Integer(1)
            && r.call(&["SELECT", "7"]) == simple("OK")
            && r.call(&["DBSIZE"]) == Frame::Integer(0)
            && r.call(&["SELECT", "5"]) == simple("OK")
    });
    assert!(ok, "{:?}", r.call(&["KEYS", "*"]));
    assert_eq!(r.call(&["SELECT", "5"]), simple("OK"));
    assert_eq!(r.call(&["EXISTS", "kept"]), Frame::Integer(1));
    let expired: i64 = field(&mut r, "stats", "expired_keys").parse().unwrap();
    assert_eq!(expired - expired_before, 5);
    // The master's key is past its TTL: hidden, not deleted by the replica.
    assert_eq!(r.call(&["SELECT", "6"]), simple("OK"));
    assert_eq!(r.call(&["EXISTS", "from-master"]), Frame::Integer(0));
    assert_eq!(r.call(&["DBSIZE"]), Frame::Integer(1));
}
