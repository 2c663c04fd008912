//! High availability under the real Redis Sentinel 7.0: three `redis-sentinel` processes watch
//! a Tessera master and two Tessera replicas, the master is killed with SIGKILL under write
//! load, a replica is promoted, the other follows it, every write acknowledged by WAIT (and in
//! Tessera's semi-synchronous mode every acknowledged write) is on the new master, and the old
//! master, restarted, is turned into a replica of the new one. Also what clients of Sentinel
//! (redis-py's `Sentinel`) rely on: the master's address and its replicas, by name.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{free_port, simple, wait_until, Frame, RawClient, ServerKind};

const LONG: Duration = Duration::from_secs(90);

/// A process of the test's own (a node or a sentinel), killed on drop.
struct Proc {
    child: Option<Child>,
    port: u16,
    conf: PathBuf,
    log: PathBuf,
    program: PathBuf,
}

impl Proc {
    fn spawn(program: &Path, conf: &Path, port: u16, log: &Path) -> Proc {
        let mut p = Proc {
            child: None,
            port,
            conf: conf.to_path_buf(),
            log: log.to_path_buf(),
            program: program.to_path_buf(),
        };
        p.start();
        p
    }

    fn start(&mut self) {
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("log");
        let child = Command::new(&self.program)
            .arg(&self.conf)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot run {}: {e} (apt-get install -y redis-sentinel)",
                    self.program.display()
                )
            });
        self.child = Some(child);
        let port = self.port;
        assert!(
            wait_until(LONG, || ping(port)),
            "{} did not start on {port}:\n{}",
            self.program.display(),
            self.log_tail()
        );
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn raw(&self) -> RawClient {
        RawClient::connect(self.port)
    }

    fn log_tail(&self) -> String {
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "--- {} on {}:\n{}",
                self.program.display(),
                self.port,
                self.log_tail()
            );
        }
        self.kill();
    }
}

fn ping(port: u16) -> bool {
    let Ok(s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let mut s = s;
    use std::io::{Read, Write};
    if s.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut buf = [0u8; 64];
    matches!(s.read(&mut buf), Ok(n) if n > 0 && buf[..n].starts_with(b"+PONG"))
}

/// INFO as a map; empty when the connection is closed under the call, which Sentinel does on
/// purpose (`CLIENT KILL TYPE normal` in the transaction that repoints or promotes a node).
fn info(c: &mut RawClient, section: &str) -> BTreeMap<String, String> {
    let Some(Frame::Bulk(b)) = c.try_call(&["INFO", section]) else {
        return BTreeMap::new();
    };
    String::from_utf8_lossy(&b)
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn try_info(port: u16, section: &str) -> BTreeMap<String, String> {
    match std::net::TcpStream::connect(("127.0.0.1", port)) {
        Ok(_) => info(&mut RawClient::connect(port), section),
        Err(_) => BTreeMap::new(),
    }
}

struct Cluster {
    dir: PathBuf,
    nodes: Vec<Proc>,
    sentinels: Vec<Proc>,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.sentinels.clear();
        self.nodes.clear();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

fn node_conf(dir: &Path, port: u16, master: Option<u16>, extra: &str) -> PathBuf {
    let d = dir.join(format!("node-{port}"));
    fs::create_dir_all(&d).expect("node dir");
    let mut text = format!(
        "port {port}\nbind 127.0.0.1\ndir {}\nsave \"\"\nrepl-diskless-sync-delay 0\n{extra}\n",
        d.display()
    );
    if let Some(m) = master {
        text.push_str(&format!("replicaof 127.0.0.1 {m}\n"));
    }
    let conf = d.join("tessera.conf");
    fs::write(&conf, text).expect("write conf");
    conf
}

fn start_cluster(tag: &str, extra: &str) -> Cluster {
    let dir = std::env::temp_dir()
        .join("tessera-tests")
        .join(format!("sentinel-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("dir");
    let bin = ServerKind::Tessera.binary();
    let master_port = free_port();
    let mut nodes = vec![Proc::spawn(
        &bin,
        &node_conf(&dir, master_port, None, extra),
        master_port,
        &dir.join(format!("node-{master_port}.log")),
    )];
    for _ in 0..2 {
        let port = free_port();
        nodes.push(Proc::spawn(
            &bin,
            &node_conf(&dir, port, Some(master_port), extra),
            port,
            &dir.join(format!("node-{port}.log")),
        ));
    }
    let sentinel = PathBuf::from("redis-sentinel");
    let mut sentinels = Vec::new();
    for i in 0..3 {
        let port = free_port();
        let d = dir.join(format!("sentinel-{i}"));
        fs::create_dir_all(&d).expect("sentinel dir");
        let conf = d.join("sentinel.conf");
        fs::write(
            &conf,
            format!(
                "port {port}\nbind 127.0.0.1\ndir {}\nsentinel monitor mymaster 127.0.0.1 {master_port} 2\nsentinel down-after-milliseconds mymaster 1000\nsentinel failover-timeout mymaster 10000\nsentinel parallel-syncs mymaster 2\n",
                d.display()
            ),
        )
        .expect("sentinel conf");
        sentinels.push(Proc::spawn(
            &sentinel,
            &conf,
            port,
            &dir.join(format!("sentinel-{i}.log")),
        ));
    }
    Cluster {
        dir,
        nodes,
        sentinels,
    }
}

fn master_addr(s: &Proc) -> Option<u16> {
    let mut c = s.raw();
    match c.call(&["SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster"]) {
        Frame::Array(a) if a.len() == 2 => match &a[1] {
            Frame::Bulk(p) => String::from_utf8_lossy(p).parse().ok(),
            _ => None,
        },
        _ => None,
    }
}

/// Sentinel's view: how many replicas and other sentinels it knows.
fn known(s: &Proc) -> (usize, usize) {
    let mut c = s.raw();
    let count = |f: Frame| match f {
        Frame::Array(a) => a.len(),
        _ => 0,
    };
    (
        count(c.call(&["SENTINEL", "REPLICAS", "mymaster"])),
        count(c.call(&["SENTINEL", "SENTINELS", "mymaster"])),
    )
}

/// Writes until the master dies; returns the keys whose writes were acknowledged.
fn write_until_killed(
    port: u16,
    prefix: &'static str,
    wait: bool,
    stop: Arc<AtomicBool>,
) -> Vec<String> {
    let mut acked = Vec::new();
    let mut c = RawClient::connect(port);
    c.set_timeout(Duration::from_secs(5));
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let key = format!("{prefix}{i}");
        i += 1;
        let Some(reply) = c.try_call(&["SET", key.as_str(), "v"]) else {
            break;
        };
        if reply != simple("OK") {
            break;
        }
        if wait {
            match c.try_call(&["WAIT", "2", "1000"]) {
                Some(Frame::Integer(n)) if n >= 2 => acked.push(key),
                Some(Frame::Integer(_)) => {}
                _ => break,
            }
        } else {
            acked.push(key);
        }
    }
    acked
}

fn failover_case(tag: &str, extra: &str, semi_sync: bool) {
    let mut cl = start_cluster(tag, extra);
    let master_port = cl.nodes[0].port;
    // The sentinels find the replicas (from the master's INFO) and each other (hello messages).
    assert!(
        wait_until(LONG, || cl.sentinels.iter().all(|s| known(s) == (2, 2))),
        "sentinels did not discover the set: {:?}",
        cl.sentinels.iter().map(known).collect::<Vec<_>>()
    );
    let mut m = cl.nodes[0].raw();
    assert_eq!(m.call(&["SET", "before", "1"]), simple("OK"));

    let stop = Arc::new(AtomicBool::new(false));
    let waited = {
        let stop = stop.clone();
        std::thread::spawn(move || write_until_killed(master_port, "w:", true, stop))
    };
    let plain = {
        let stop = stop.clone();
        std::thread::spawn(move || write_until_killed(master_port, "s:", false, stop))
    };
    std::thread::sleep(Duration::from_millis(1500));
    let killed_at = Instant::now();
    cl.nodes[0].kill();
    let waited = waited.join().expect("writer");
    let plain = plain.join().expect("writer");
    stop.store(true, Ordering::Relaxed);
    assert!(!waited.is_empty(), "no write was acknowledged by WAIT");

    // A replica is promoted and the sentinels agree on it.
    let mut new_port = 0;
    assert!(
        wait_until(LONG, || {
            let addrs: Vec<Option<u16>> = cl.sentinels.iter().map(master_addr).collect();
            match addrs[0] {
                Some(p) if p != master_port && addrs.iter().all(|a| *a == Some(p)) => {
                    new_port = p;
                    true
                }
                _ => false,
            }
        }),
        "no promotion"
    );
    let mut first_write = None;
    assert!(wait_until(LONG, || {
        let ok =
            RawClient::connect(new_port).try_call(&["SET", "after", "1"]) == Some(simple("OK"));
        if ok && first_write.is_none() {
            first_write = Some(killed_at.elapsed());
        }
        ok
    }));
    eprintln!(
        "[sentinel] {tag}: first write accepted on the new master {:.2} s after the kill",
        first_write.unwrap_or_default().as_secs_f64()
    );
    let new_index = cl
        .nodes
        .iter()
        .position(|n| n.port == new_port)
        .expect("the new master is one of ours");
    let new_master = &cl.nodes[new_index];
    let mut nm = new_master.raw();
    assert_eq!(info(&mut nm, "replication")["role"], "master");
    // Every acknowledged write survived the failover.
    let lost: Vec<&String> = waited
        .iter()
        .chain(if semi_sync { plain.iter() } else { [].iter() })
        .filter(|k| {
            // (A connection Sentinel kills while repointing nodes is retried.)
            let mut reply = None;
            for _ in 0..5 {
                reply = nm.try_call(&["EXISTS", k.as_str()]);
                if reply.is_some() {
                    break;
                }
                nm = new_master.raw();
            }
            reply != Some(Frame::Integer(1))
        })
        .collect();
    assert!(
        lost.is_empty(),
        "{} of {} acknowledged writes lost, e.g. {:?}",
        lost.len(),
        waited.len() + if semi_sync { plain.len() } else { 0 },
        &lost[..lost.len().min(5)]
    );
    // Sentinel rewrote the promoted node's configuration (CONFIG REWRITE keeps the rest).
    let conf = fs::read_to_string(&new_master.conf).expect("conf");
    assert!(
        !conf.contains("replicaof"),
        "promoted node's config still names a master:\n{conf}"
    );
    assert!(conf.contains("repl-diskless-sync-delay 0"), "{conf}");

    // The other replica follows the new master, and the old master comes back
    // and is turned into a replica. (On a loaded machine the sentinels may
    // fail over a second time, from the new master to the other replica, when
    // a PING reply is late by a second: that is Sentinel doing its job, so the
    // set is checked against whichever master the sentinels now agree on.)
    let agreed_master = |cl: &Cluster| -> Option<u16> {
        let addrs: Vec<Option<u16>> = cl.sentinels.iter().map(master_addr).collect();
        addrs[0].filter(|p| *p != master_port && addrs.iter().all(|a| *a == Some(*p)))
    };
    let follows = |port: u16, master: u16| {
        let i = try_info(port, "replication");
        i.get("role").map(String::as_str) == Some("slave")
            && i.get("master_port").map(String::as_str) == Some(master.to_string().as_str())
            && i.get("master_link_status").map(String::as_str) == Some("up")
    };
    let other_port = cl
        .nodes
        .iter()
        .find(|n| n.port != new_port && n.port != master_port)
        .expect("other replica")
        .port;
    assert!(
        wait_until(LONG, || {
            agreed_master(&cl).is_some_and(|m| {
                let replica = if m == other_port {
                    new_port
                } else {
                    other_port
                };
                follows(replica, m)
            })
        }),
        "the other replica does not follow the new master: {:?}",
        try_info(other_port, "replication")
    );
    cl.nodes[0].start();
    let mut current = new_port;
    assert!(
        wait_until(LONG, || {
            match agreed_master(&cl) {
                Some(m) => {
                    current = m;
                    follows(master_port, m)
                }
                None => false,
            }
        }),
        "the old master did not rejoin as a replica: {:?}",
        try_info(master_port, "replication")
    );
    if current != new_port {
        eprintln!(
            "[sentinel] {tag}: the sentinels failed over again, to {current}; the first new master's log:\n{}",
            cl.nodes[new_index].log_tail()
        );
    }
    let mut cm = RawClient::connect(current);
    let digest_new = cm.call(&["DBSIZE"]);
    assert!(wait_until(LONG, || {
        cl.nodes[0].raw().try_call(&["DBSIZE"]).as_ref() == Some(&digest_new)
    }));
    let old_conf = fs::read_to_string(&cl.nodes[0].conf).expect("conf");
    assert!(
        old_conf.contains(&format!("replicaof 127.0.0.1 {current}")),
        "{old_conf}"
    );
}

#[test]
fn sentinel_promotes_a_replica_and_no_waited_write_is_lost() {
    failover_case("wait", "", false);
}

#[test]
fn sentinel_failover_in_semi_sync_mode_loses_no_acknowledged_write() {
    // One acknowledgment suffices: Sentinel promotes the replica with the
    // highest offset, which holds whatever any replica acknowledged.
    failover_case("semisync", "repl-semi-sync-replicas 1", true);
}

/// What Sentinel's clients ask: the master by name, its replicas, and that reads on a replica
/// see the master's writes (read/write splitting for a master/replica set).
#[test]
fn sentinel_clients_find_the_master_and_its_replicas() {
    let cl = start_cluster("clients", "");
    let s = &cl.sentinels[0];
    assert!(wait_until(LONG, || known(s).0 == 2));
    // (Sentinel reads each replica's own INFO every ten seconds.)
    assert!(wait_until(LONG, || {
        let Frame::Array(replicas) = s.raw().call(&["SENTINEL", "REPLICAS", "mymaster"]) else {
            return false;
        };
        replicas
            .iter()
            .all(|r| common::fmt_frame(r).contains("\"master-link-status\", \"ok\""))
    }));
    assert_eq!(master_addr(s), Some(cl.nodes[0].port));
    let mut m = cl.nodes[0].raw();
    assert_eq!(m.call(&["SET", "split", "1"]), simple("OK"));
    assert_eq!(m.call(&["WAIT", "2", "10000"]), Frame::Integer(2));
    let Frame::Array(replicas) = s.raw().call(&["SENTINEL", "REPLICAS", "mymaster"]) else {
        panic!("SENTINEL REPLICAS")
    };
    for r in replicas {
        let Frame::Array(fields) = r else {
            panic!("replica entry")
        };
        let map: BTreeMap<String, String> = fields
            .chunks(2)
            .map(|p| (common::fmt_frame(&p[0]), common::fmt_frame(&p[1])))
            .collect();
        let port: u16 = map["\"port\""].trim_matches('"').parse().expect("port");
        assert!(cl.nodes.iter().any(|n| n.port == port));
        assert_eq!(map["\"master-link-status\""], "\"ok\"");
        assert_eq!(
            RawClient::connect(port).call(&["GET", "split"]),
            common::bulk("1")
        );
    }
}

/// redis-py's Sentinel client (installed by scripts/test.sh with RQ's requirements) finds the
/// master for writes and a replica for reads.
#[test]
fn redis_py_sentinel_client_splits_reads_and_writes() {
    let cl = start_cluster("redispy", "");
    let s = &cl.sentinels[0];
    assert!(wait_until(LONG, || known(s).0 == 2));
    let ports: Vec<String> = cl.sentinels.iter().map(|s| s.port.to_string()).collect();
    let script = format!(
        r#"
import sys, time
from redis.sentinel import Sentinel
sentinel = Sentinel([("127.0.0.1", p) for p in ({ports},)], socket_timeout=5)
master = sentinel.master_for("mymaster", socket_timeout=5)
assert master.execute_command("ROLE")[0] == b"master"
replica = sentinel.slave_for("mymaster", socket_timeout=5)
master.set("py", "1")
assert master.execute_command("WAIT", 2, 10000) == 2
assert replica.get("py") == b"1", replica.get("py")
role = replica.execute_command("ROLE")[0]
assert role == b"slave", role
try:
    replica.set("py", "2")
    sys.exit("a write on the replica was accepted")
except Exception as e:
    assert "read only replica" in str(e), e
print("ok", sentinel.discover_master("mymaster"))
"#,
        ports = ports.join(", ")
    );
    let out = Command::new("python3")
        .args(["-c", &script])
        .output()
        .expect("python3 (scripts/test.sh installs redis-py)");
    assert!(
        out.status.success(),
        "redis-py Sentinel client failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&cl.nodes[0].port.to_string()),
        "discovered another master: {text}"
    );
}
