//! Cluster commands on a standalone server (cluster mode is not built yet): CLUSTER and every
//! subcommand, ASKING, READONLY and READWRITE answer as a standalone redis-server 7.0 does, so
//! that clients probing for a cluster are told "not a cluster" and not "unknown command".

mod common;

use common::{error, Frame, TestServer};

const DISABLED: &str = "ERR This instance has cluster support disabled";

#[test]
fn every_cluster_command_says_cluster_support_is_disabled() {
    let s = TestServer::start();
    let mut c = s.raw();
    for args in [
        &["ASKING"][..],
        &["READONLY"],
        &["READWRITE"],
        &["CLUSTER", "INFO"],
        &["CLUSTER", "SLOTS"],
        &["CLUSTER", "SHARDS"],
        &["CLUSTER", "NODES"],
        &["CLUSTER", "MYID"],
        &["CLUSTER", "HELP"],
        &["cluster", "keyslot", "foo"],
        &["CLUSTER", "COUNTKEYSINSLOT", "12182"],
        &["CLUSTER", "GETKEYSINSLOT", "12182", "10"],
        &["CLUSTER", "ADDSLOTS", "1", "2"],
        &["CLUSTER", "SETSLOT", "1", "STABLE"],
        &["CLUSTER", "RESET", "HARD"],
        &["CLUSTER", "FAILOVER"],
        &["CLUSTER", "ADDSLOTSRANGE", "1", "5"],
        &["CLUSTER", "DELSLOTS", "1"],
        &["CLUSTER", "DELSLOTSRANGE", "1", "5"],
        &["CLUSTER", "FLUSHSLOTS"],
        &["CLUSTER", "BUMPEPOCH"],
        &["CLUSTER", "SET-CONFIG-EPOCH", "3"],
        &["CLUSTER", "COUNT-FAILURE-REPORTS", "abc"],
        &["CLUSTER", "FORGET", "abc"],
        &["CLUSTER", "MEET", "127.0.0.1", "7000"],
        &["CLUSTER", "REPLICATE", "abc"],
        &["CLUSTER", "REPLICAS", "abc"],
        &["CLUSTER", "SLAVES", "abc"],
        &["CLUSTER", "LINKS"],
        &["CLUSTER", "SAVECONFIG"],
    ] {
        assert_eq!(c.call(args), error(DISABLED), "{args:?}");
    }
    // Arity and unknown subcommands are checked first, as for any command.
    assert_eq!(
        c.call(&["READONLY", "x"]),
        error("ERR wrong number of arguments for 'readonly' command")
    );
    assert_eq!(
        c.call(&["CLUSTER"]),
        error("ERR wrong number of arguments for 'cluster' command")
    );
    assert_eq!(
        c.call(&["CLUSTER", "MYID", "x"]),
        error("ERR wrong number of arguments for 'cluster|myid' command")
    );
    assert_eq!(
        c.call(&["CLUSTER", "FOO"]),
        error("ERR unknown subcommand 'FOO'. Try CLUSTER HELP.")
    );
    // Nothing changed: the connection still reads and writes.
    assert_eq!(c.call(&["SET", "k", "v"]), Frame::Simple(b"OK".to_vec()));
}

#[test]
fn cluster_commands_are_refused_inside_scripts_and_queued_in_multi_as_redis_does() {
    let s = TestServer::start();
    let mut c = s.raw();
    // READONLY is allowed in scripts in Redis; CLUSTER RESET (noscript) is not.
    assert_eq!(
        c.call(&["EVAL", "return redis.pcall('READONLY')", "0"]),
        error(DISABLED)
    );
    assert_eq!(
        c.call(&["EVAL", "return redis.pcall('CLUSTER', 'RESET')", "0"]),
        error("ERR This Redis command is not allowed from script")
    );
    assert_eq!(c.call(&["MULTI"]), Frame::Simple(b"OK".to_vec()));
    assert_eq!(
        c.call(&["CLUSTER", "INFO"]),
        Frame::Simple(b"QUEUED".to_vec())
    );
    assert_eq!(c.call(&["EXEC"]), Frame::Array(vec![error(DISABLED)]));
}
