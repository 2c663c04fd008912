//! TLS through real clients: redis-cli and redis-benchmark with `--tls`, the `redis` crate
//! over rustls, and openssl's s_client; client certificates required, optional and not asked
//! for; certificates rotated by CONFIG SET; protocol and cipher choices; start-up errors; and
//! handshakes that go wrong (plain text on the TLS port, garbage, a stalled handshake, TLS on
//! the plain port). Certificates are made by the tests (`common/tls.rs`). Every test passes
//! against redis-server too (`TESSERA_TEST_TARGET=redis`) except where it says otherwise.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::dataset::info_field;
use common::tls::{path, redis_cli, start_tls, Certs, KEY_PASSWORD};
use common::{bulk, error, free_port, refused_start, simple, target_is_redis, TestServer};

const UPDATE_FAILED: &str = "Unable to update TLS configuration. Check server logs.";

fn config_set_error(name: &str) -> common::Frame {
    error(&format!(
        "ERR CONFIG SET failed (possibly related to argument '{name}') - {UPDATE_FAILED}"
    ))
}

fn pong(port: u16, tls_args: &[String]) -> bool {
    redis_cli(port, tls_args, &["PING"]).1 == "PONG"
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn redis_cli_speaks_tls_with_a_client_certificate() {
    let s = start_tls(&[]);
    let (one, two) = (Certs::get().one(), Certs::get().two());
    let port = s.extra_port();
    assert_eq!(redis_cli(port, &one.cli_args(), &["SET", "k", "v"]).1, "OK");
    assert_eq!(redis_cli(port, &one.cli_args(), &["GET", "k"]).1, "v");
    assert_eq!(
        redis_cli(port, &one.cli_args(), &["CONFIG", "GET", "tls-port"]).1,
        format!("tls-port\n{port}")
    );
    // tls-auth-clients yes, the default: without a certificate there is no connection, and
    // one signed by another CA is refused too.
    assert!(!pong(port, &one.cli_args_without_cert()));
    let foreign = vec![
        "--tls".into(),
        "--cacert".into(),
        path(&one.ca),
        "--cert".into(),
        path(&two.client_cert),
        "--key".into(),
        path(&two.client_key),
    ];
    assert!(!pong(port, &foreign));
    // A plain client on the TLS port gets nothing it could take for a reply.
    assert!(!pong(port, &[]));
    // The plain port serves as before.
    assert_eq!(s.raw().call(&["GET", "k"]), bulk("v"));
}

#[test]
fn client_certificates_optional_or_not_asked_for() {
    let s = start_tls(&["--tls-auth-clients", "optional"]);
    let (one, two) = (Certs::get().one(), Certs::get().two());
    let port = s.extra_port();
    assert!(pong(port, &one.cli_args_without_cert()));
    assert!(pong(port, &one.cli_args()));
    // Optional still checks a certificate that is presented.
    let mut foreign = one.cli_args_without_cert();
    foreign.extend([
        "--cert".into(),
        path(&two.client_cert),
        "--key".into(),
        path(&two.client_key),
    ]);
    assert!(!pong(port, &foreign));
    let mut c = s.raw();
    assert_eq!(
        c.call(&["CONFIG", "SET", "tls-auth-clients", "no"]),
        simple("OK")
    );
    assert!(pong(port, &one.cli_args_without_cert()));
    assert!(pong(port, &foreign), "no certificate is asked for");
    assert_eq!(
        c.call(&["CONFIG", "SET", "tls-auth-clients", "yes"]),
        simple("OK")
    );
    assert!(!pong(port, &one.cli_args_without_cert()));
    assert!(pong(port, &one.cli_args()));
}

#[test]
fn the_redis_crate_over_tls() {
    let s = start_tls(&[]);
    let one = Certs::get().one();
    let port = s.extra_port();
    let mut con = one
        .client(port, true)
        .get_connection_with_timeout(Duration::from_secs(20))
        .expect("a TLS connection");
    // Big values cross many TLS records and partial socket writes both ways.
    let big: Vec<u8> = (0..3 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    let () = redis::cmd("SET")
        .arg("big")
        .arg(&big)
        .query(&mut con)
        .unwrap();
    let back: Vec<u8> = redis::cmd("GET").arg("big").query(&mut con).unwrap();
    assert!(back == big, "the value came back changed");
    let mut pipe = redis::pipe();
    for _ in 0..1000 {
        pipe.cmd("INCR").arg("n");
    }
    let counts: Vec<i64> = pipe.query(&mut con).unwrap();
    assert_eq!(counts.last(), Some(&1000));
    let hello: redis::Value = redis::cmd("HELLO").arg(3).query(&mut con).unwrap();
    assert!(format!("{hello:?}").contains("7.0.15"), "{hello:?}");
    // Without a client certificate the default (tls-auth-clients yes) refuses.
    let refused = one
        .client(port, false)
        .get_connection_with_timeout(Duration::from_secs(20))
        .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c));
    assert!(refused.is_err(), "{refused:?}");
}

#[test]
fn redis_benchmark_runs_over_tls() {
    let s = start_tls(&[]);
    let one = Certs::get().one();
    let port = s.extra_port().to_string();
    for pipeline in ["1", "16"] {
        let out = Command::new("redis-benchmark")
            .args(["-p", &port, "-n", "2000", "-c", "8", "-P", pipeline])
            .args(["-t", "set,get,lpush,incr", "-q"])
            .args(one.cli_args())
            .output()
            .expect("run redis-benchmark (apt-get install redis-tools)");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        for test in ["SET", "GET", "LPUSH", "INCR"] {
            assert!(
                text.contains(&format!("{test}: ")) && text.contains("requests per second"),
                "-P {pipeline}: {text}"
            );
        }
    }
    let mut c = s.raw();
    assert_eq!(
        info_field(&mut c, "commandstats", "cmdstat_set")
            .split(',')
            .next(),
        Some("calls=4000")
    );
}

#[test]
fn certificates_rotate_by_config_set_for_new_connections() {
    let s = start_tls(&[]);
    let (one, two) = (Certs::get().one(), Certs::get().two());
    let port = s.extra_port();
    let mut kept = one
        .client(port, true)
        .get_connection_with_timeout(Duration::from_secs(20))
        .unwrap();
    let () = redis::cmd("SET").arg("x").arg(1).query(&mut kept).unwrap();
    let mut c = s.raw();
    // A file that cannot be used is refused, and the old one stays.
    assert_eq!(
        c.call(&["CONFIG", "SET", "tls-cert-file", "/nonexistent/cert.pem"]),
        config_set_error("tls-cert-file")
    );
    // redis-server (OpenSSL 3) takes a key that does not match the
    // certificate and then fails every handshake; Tessera refuses it.
    let two_key = path(&two.server_key);
    if !target_is_redis() {
        assert_eq!(
            c.call(&["CONFIG", "SET", "tls-key-file", &two_key]),
            config_set_error("tls-key-file"),
            "a key that is not the certificate's"
        );
        assert_eq!(
            c.call(&["CONFIG", "GET", "tls-key-file"]),
            common::bulks(&["tls-key-file", &path(&one.server_key)])
        );
    }
    assert_eq!(
        c.call(&["CONFIG", "SET", "tls-protocols", "TLSv1.9"]),
        config_set_error("tls-protocols")
    );
    assert!(pong(port, &one.cli_args()));
    // The whole set at once: certificate, key and the CA clients must chain to.
    let (cert, ca) = (path(&two.server_cert), path(&two.ca));
    assert_eq!(
        c.call(&[
            "CONFIG",
            "SET",
            "tls-cert-file",
            &cert,
            "tls-key-file",
            &two_key,
            "tls-ca-cert-file",
            &ca
        ]),
        simple("OK")
    );
    assert!(
        !pong(port, &one.cli_args()),
        "the old CA is no longer trusted"
    );
    assert!(pong(port, &two.cli_args()));
    let mut fresh = two
        .client(port, true)
        .get_connection_with_timeout(Duration::from_secs(20))
        .unwrap();
    let v: i64 = redis::cmd("INCR").arg("x").query(&mut fresh).unwrap();
    assert_eq!(v, 2);
    // A connection made before the change keeps its session.
    let v: i64 = redis::cmd("INCR").arg("x").query(&mut kept).unwrap();
    assert_eq!(v, 3);
}

/// The first bytes of a TLS 1.2 ClientHello record header and body: enough to start a
/// handshake, never enough to finish one.
const PARTIAL_CLIENT_HELLO: &[u8] = &[0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03];

#[test]
fn bad_handshakes_end_cleanly_and_hold_up_nobody() {
    let s = start_tls(&[]);
    let one = Certs::get().one();
    let port = s.extra_port();
    let mut c = s.raw();
    // Plain RESP on the TLS port: closed, with no reply.
    let mut plain = TcpStream::connect(("127.0.0.1", port)).unwrap();
    plain.write_all(b"*1\r\n$4\r\nPING\r\n").unwrap();
    let (got, closed) = common::read_to_close(&mut plain, Duration::from_secs(20));
    assert!(closed, "a plain client on the TLS port is closed");
    assert!(!got.windows(5).any(|w| w == b"+PONG"), "{got:?}");
    // Garbage: the same.
    let mut garbage = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let noise: Vec<u8> = (0..4096u32).map(|i| (i * 7919 % 256) as u8).collect();
    let _ = garbage.write_all(&noise);
    assert!(common::read_to_close(&mut garbage, Duration::from_secs(20)).1);
    // A handshake that stalls halfway holds up no one, on any worker.
    let stalled: Vec<TcpStream> = (0..8)
        .map(|_| {
            let mut t = TcpStream::connect(("127.0.0.1", port)).unwrap();
            t.write_all(PARTIAL_CLIENT_HELLO).unwrap();
            t
        })
        .collect();
    for _ in 0..4 {
        assert!(pong(port, &one.cli_args()));
    }
    assert_eq!(c.call(&["PING"]), simple("PONG"));
    // A TLS client on the plain port: its hello is just bytes there (an inline request that
    // never ends), and the port keeps serving.
    let mut wrong_port = TcpStream::connect(("127.0.0.1", s.port())).unwrap();
    wrong_port.write_all(PARTIAL_CLIENT_HELLO).unwrap();
    assert_eq!(c.call(&["PING"]), simple("PONG"));
    drop(wrong_port);
    if !target_is_redis() {
        // Tessera gives up a handshake after 10 seconds; redis-server waits for ever.
        for mut t in stalled {
            let (_, closed) = common::read_to_close(&mut t, Duration::from_secs(40));
            assert!(closed, "a stalled handshake is given up");
        }
    } else {
        drop(stalled);
    }
    // Nothing leaked: only this client is left.
    let deadline = Instant::now() + Duration::from_secs(20);
    while info_field(&mut c, "clients", "connected_clients") != "1" {
        assert!(Instant::now() < deadline, "clients left behind");
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut s = s;
    s.assert_healthy();
}

/// Runs s_client against `port` and returns what it printed.
fn s_client(port: u16, args: &[&str]) -> String {
    let one = Certs::get().one();
    let mut child = Command::new("openssl")
        .args(["s_client", "-connect", &format!("127.0.0.1:{port}")])
        .args(["-CAfile", &path(&one.ca)])
        .args([
            "-cert",
            &path(&one.client_cert),
            "-key",
            &path(&one.client_key),
        ])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run openssl s_client");
    // One PING, then end of input: s_client sends it and leaves.
    let mut stdin = child.stdin.take().unwrap();
    let _ = stdin.write_all(b"PING\r\n");
    std::thread::sleep(Duration::from_millis(300));
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

#[test]
fn protocols_and_ciphers_are_the_configured_ones() {
    let s = start_tls(&["--tls-protocols", "TLSv1.2"]);
    let port = s.extra_port();
    let out = s_client(port, &["-tls1_3"]);
    assert!(!out.contains("+PONG"), "TLSv1.3 is not offered: {out}");
    let out = s_client(port, &["-tls1_2"]);
    assert!(out.contains("+PONG"), "{out}");
    let mut c = s.raw();
    assert_eq!(
        c.call(&[
            "CONFIG",
            "SET",
            "tls-protocols",
            "TLSv1.2 TLSv1.3",
            "tls-ciphersuites",
            "TLS_CHACHA20_POLY1305_SHA256",
            "tls-ciphers",
            "ECDHE-ECDSA-AES128-GCM-SHA256"
        ]),
        simple("OK")
    );
    let out = s_client(port, &["-tls1_3"]);
    assert!(
        out.contains("TLS_CHACHA20_POLY1305_SHA256") && out.contains("+PONG"),
        "{out}"
    );
    let out = s_client(port, &["-tls1_2"]);
    assert!(
        out.contains("ECDHE-ECDSA-AES128-GCM-SHA256") && out.contains("+PONG"),
        "{out}"
    );
    // A TLS 1.2 client that offers only other ciphers gets no connection.
    let out = s_client(
        port,
        &["-tls1_2", "-cipher", "ECDHE-ECDSA-AES256-GCM-SHA384"],
    );
    assert!(!out.contains("+PONG"), "{out}");
}

#[test]
fn sessions_resume_from_the_cache() {
    let s = start_tls(&[]);
    let port = s.extra_port();
    let dir = s.scratch().join("session.pem");
    let file = path(&dir);
    let first = s_client(port, &["-sess_out", &file]);
    assert!(first.contains("+PONG"), "{first}");
    let again = s_client(port, &["-sess_in", &file]);
    assert!(again.contains("Reused, TLSv1.3"), "{again}");
}

#[test]
fn start_up_errors_say_what_is_wrong() {
    let one = Certs::get().one();
    let tls_port = || vec!["--tls-port".to_string(), free_port().to_string()];
    let with = |extra: &[&str]| {
        let mut a = tls_port();
        a.extend(one.server_args());
        a.extend(strs(extra));
        a
    };
    let cert_only = {
        let mut a = tls_port();
        a.extend(strs(&["--tls-cert-file", &path(&one.server_cert)]));
        a
    };
    let no_ca = {
        let mut a = tls_port();
        a.extend(strs(&[
            "--tls-cert-file",
            &path(&one.server_cert),
            "--tls-key-file",
            &path(&one.server_key),
        ]));
        a
    };
    let cases: Vec<(Vec<String>, &str)> = vec![
        (tls_port(), "No tls-cert-file configured!"),
        (cert_only, "No tls-key-file configured!"),
        (no_ca, "Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, tls-replication or tls-auth-clients are enabled!"),
        (with(&["--tls-protocols", "TLSv1.4"]), "Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'."),
        (with(&["--tls-ciphers", "FOO"]), "Failed to configure ciphers: FOO"),
        (with(&["--tls-ciphersuites", "FOO"]), "Failed to configure ciphersuites: FOO"),
        (with(&["--tls-ca-cert-file", "/nonexistent/ca.pem"]), "Failed to configure CA certificate(s) file/directory: "),
        (with(&["--tls-dh-params-file", "/nonexistent/dh.pem"]), "Failed to load /nonexistent/dh.pem: "),
    ];
    for (args, reason) in cases {
        let text = refused_start(None, &args);
        assert!(text.contains(reason), "{args:?}: {text}");
        assert!(
            text.contains("Failed to configure TLS. Check logs for more info."),
            "{args:?}: {text}"
        );
    }
    if !target_is_redis() {
        // What rustls cannot do stops the start, naming it.
        for (extra, named) in [
            (
                ["--tls-protocols", "TLSv1.1 TLSv1.2"],
                "TLSv1.1 is not supported",
            ),
            (
                ["--tls-ciphers", "DHE-RSA-AES256-SHA"],
                "DHE-RSA-AES256-SHA names no TLS 1.2 cipher",
            ),
            (
                ["--tls-ciphersuites", "TLS_AES_128_CCM_SHA256"],
                "TLS_AES_128_CCM_SHA256 is not a TLS 1.3 cipher suite",
            ),
            (
                ["--tls-key-file", &path(&Certs::get().two().server_key)],
                "Failed to load private key: ",
            ),
        ] {
            let text = refused_start(None, &with(&extra));
            assert!(text.contains(named), "{extra:?}: {text}");
        }
    }
}

#[test]
fn an_encrypted_key_loads_with_its_password() {
    let certs = Certs::get();
    let one = certs.one();
    let key = path(&certs.encrypted_key());
    let s = start_tls(&["--tls-key-file", &key, "--tls-key-file-pass", KEY_PASSWORD]);
    assert!(pong(s.extra_port(), &one.cli_args()));
    let mut wrong = vec!["--tls-port".to_string(), free_port().to_string()];
    wrong.extend(one.server_args());
    wrong.extend(strs(&[
        "--tls-key-file",
        &key,
        "--tls-key-file-pass",
        "wrong",
    ]));
    let text = refused_start(None, &wrong);
    assert!(text.contains("Failed to load private key: "), "{text}");
}

#[test]
fn tls_alone_and_tls_port_changes() {
    let one = Certs::get().one();
    let s = start_tls(&[]);
    let mut c = s.raw();
    let old = s.extra_port();
    let new = free_port();
    assert_eq!(
        c.call(&["CONFIG", "SET", "tls-port", &new.to_string()]),
        simple("OK")
    );
    assert!(pong(new, &one.cli_args()));
    assert!(!pong(old, &one.cli_args()), "the old TLS port is closed");
    // With the plain port closed, TLS still serves.
    assert_eq!(c.call(&["CONFIG", "SET", "port", "0"]), simple("OK"));
    assert!(pong(new, &one.cli_args()));
    assert_eq!(
        redis_cli(new, &one.cli_args(), &["CONFIG", "SET", "tls-port", "0"]).1,
        "OK"
    );
    // (Nothing listens now; the test's client still holds its connection.)
    assert_eq!(c.call(&["PING"]), simple("PONG"));
}

#[test]
fn tls_links_need_certificates() {
    let s = TestServer::start();
    let mut c = s.raw();
    for name in ["tls-replication", "tls-cluster"] {
        assert_eq!(
            c.call(&["CONFIG", "SET", name, "yes"]),
            config_set_error(name)
        );
        assert_eq!(
            c.call(&["CONFIG", "GET", name]),
            common::bulks(&[name, "no"])
        );
    }
    // With certificates (and the CA links need), they can be switched on.
    let one = Certs::get().one();
    let args = one.server_args();
    let mut set = vec!["CONFIG", "SET"];
    for pair in args.chunks(2) {
        set.push(pair[0].trim_start_matches("--"));
        set.push(&pair[1]);
    }
    assert_eq!(c.call(&set), simple("OK"));
    assert_eq!(
        c.call(&["CONFIG", "SET", "tls-replication", "yes"]),
        simple("OK")
    );
}

#[test]
fn a_busy_script_answers_busy_to_tls_clients_on_its_thread() {
    let one = Certs::get().one();
    // redis-server has one command thread already; Tessera is given one so
    // both clients share the thread the script holds.
    let mut args = vec!["--busy-reply-threshold", "100"];
    if !target_is_redis() {
        args.extend(["--threads", "1"]);
    }
    let s = start_tls(&args);
    let port = s.extra_port();
    let connect = || {
        one.client(port, true)
            .get_connection_with_timeout(Duration::from_secs(20))
            .unwrap()
    };
    let mut runner = connect();
    let mut other = connect();
    let script = std::thread::spawn(move || {
        redis::cmd("EVAL")
            .arg("local t = redis.call('TIME') while true do local n = redis.call('TIME') if n[1] - t[1] >= 2 then break end end return 1")
            .arg(0)
            .query::<i64>(&mut runner)
    });
    std::thread::sleep(Duration::from_millis(600));
    let busy = redis::cmd("PING").query::<String>(&mut other);
    let text = format!("{busy:?}");
    assert!(text.contains("BUSY"), "{text}");
    assert_eq!(script.join().unwrap().unwrap(), 1);
    let pong: String = redis::cmd("PING").query(&mut other).unwrap();
    assert_eq!(pong, "PONG");
}

/// The TLS arguments of a server that serves `tls-port` with `a`'s certificates and, with
/// `tls-replication yes`, opens its link to its master over TLS showing `a`'s client
/// certificate.
fn tls_replication_args(a: &common::tls::Authority) -> Vec<String> {
    let mut args: Vec<String> = vec!["--tls-port".into(), common::FREE_PORT.into()];
    args.extend(a.server_args());
    args.extend([
        "--tls-replication".into(),
        "yes".into(),
        "--tls-client-cert-file".into(),
        path(&a.client_cert),
        "--tls-client-key-file".into(),
        path(&a.client_key),
    ]);
    args
}

fn replication_link_up(s: &TestServer) -> bool {
    info_field(&mut s.raw(), "replication", "master_link_status") == "up"
}

/// `tls-replication yes`: a replica's link to its master's tls-port is TLS, with a client
/// certificate the master requires, in every pairing with redis-server; a master whose
/// certificate another CA signed is refused at the handshake and the link stays down.
#[test]
fn replication_over_tls_in_every_pairing() {
    use common::ServerKind::{Redis, Tessera};
    let one = Certs::get().one();
    for (master_kind, replica_kind) in [(Tessera, Tessera), (Redis, Tessera), (Tessera, Redis)] {
        let margs = tls_replication_args(&one);
        let margs: Vec<&str> = margs.iter().map(String::as_str).collect();
        let master = TestServer::start_kind(master_kind, &margs);
        let mut m = master.raw();
        assert_eq!(m.call(&["SET", "before", "1"]), simple("OK"));
        let master_tls = master.extra_port().to_string();
        let mut rargs = tls_replication_args(&one);
        rargs.extend(["--replicaof".into(), "127.0.0.1".into(), master_tls.clone()]);
        let rargs: Vec<&str> = rargs.iter().map(String::as_str).collect();
        let replica = TestServer::start_kind(replica_kind, &rargs);
        let what = format!("{master_kind:?} master, {replica_kind:?} replica");
        assert!(
            common::wait_until(Duration::from_secs(30), || replication_link_up(&replica)),
            "{what}: the link did not come up:\n{}",
            replica.log_tail(20)
        );
        assert_eq!(m.call(&["SET", "after", "2"]), simple("OK"));
        assert_eq!(
            common::dataset::int(&m.call(&["WAIT", "1", "5000"])),
            1,
            "{what}"
        );
        let mut r = replica.raw();
        assert_eq!(r.call(&["GET", "before"]), bulk("1"), "{what}");
        assert_eq!(r.call(&["GET", "after"]), bulk("2"), "{what}");
    }
    // A master with another CA's certificate: no link.
    if !target_is_redis() {
        let two = Certs::get().two();
        let margs = tls_replication_args(&two);
        let margs: Vec<&str> = margs.iter().map(String::as_str).collect();
        let master = TestServer::start_kind(Tessera, &margs);
        let mut rargs = tls_replication_args(&one);
        let port = master.extra_port().to_string();
        rargs.extend(["--replicaof".into(), "127.0.0.1".into(), port]);
        let rargs: Vec<&str> = rargs.iter().map(String::as_str).collect();
        let mut replica = TestServer::start_kind(Tessera, &rargs);
        assert!(common::wait_until(Duration::from_secs(30), || {
            replica
                .log_tail(40)
                .contains("TLS handshake with MASTER failed")
        }));
        assert!(!replication_link_up(&replica));
        replica.assert_healthy();
    }
}
