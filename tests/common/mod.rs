//! Test support shared by every integration test file.
//!
//! * [`TestServer`] starts a server on a free port and kills it on drop: Tessera by default, or
//!   real redis-server when `TESSERA_TEST_TARGET=redis`, so that every family test can be checked
//!   against the reference implementation. [`TestServer::redis`] always starts redis-server (the
//!   differential harness needs both).
//! * [`RawClient`] speaks RESP over a plain `TcpStream` and returns replies as
//!   `tessera_resp::frame::Frame`, for tests that need the exact bytes (protocol errors, pipelines,
//!   RESP3 types) rather than what the `redis` crate makes of them.
//!
//! Environment:
//! * `TESSERA_TEST_TARGET=redis` — `TestServer::start*` start redis-server instead of Tessera.
//! * `TESSERA_TEST_BIN=/path` — use this Tessera binary instead of the one cargo built.
//! * `REDIS_SERVER_BIN=/path` — use this redis-server instead of `/usr/bin/redis-server`/`$PATH`.
#![allow(dead_code)]

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub mod dataset;
pub mod effects;
pub mod tls;

use tessera_resp::frame::parse_frame;
pub use tessera_resp::frame::Frame;

/// How long a server gets to answer its first PING.
const START_TIMEOUT: Duration = Duration::from_secs(20);
/// How many times a start is retried (a fresh port each time) before the test fails.
const START_ATTEMPTS: usize = 5;
/// Default read/write timeout of clients: generous, the box may be loaded.
pub const IO_TIMEOUT: Duration = Duration::from_secs(30);

extern "C" {
    // libc's kill(2); std links libc on every unix target, so no extra dependency is needed.
    fn kill(pid: i32, sig: i32) -> i32;
}
const SIGTERM: i32 = 15;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerKind {
    Tessera,
    Redis,
}

impl ServerKind {
    /// The server that `TestServer::start*` launch: Tessera unless `TESSERA_TEST_TARGET=redis`.
    pub fn target() -> ServerKind {
        match std::env::var("TESSERA_TEST_TARGET") {
            Ok(v) if v.eq_ignore_ascii_case("redis") => ServerKind::Redis,
            Ok(v) if v.is_empty() || v.eq_ignore_ascii_case("tessera") => ServerKind::Tessera,
            Ok(v) => panic!("TESSERA_TEST_TARGET={v:?}: expected `redis` or `tessera`"),
            Err(_) => ServerKind::Tessera,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ServerKind::Tessera => "tessera",
            ServerKind::Redis => "redis",
        }
    }

    /// The server's executable.
    pub fn binary(self) -> PathBuf {
        match self {
            ServerKind::Tessera => tessera_bin(),
            ServerKind::Redis => redis_bin(),
        }
    }
}

/// True when the tests run against real redis-server (`TESSERA_TEST_TARGET=redis`).
pub fn target_is_redis() -> bool {
    ServerKind::target() == ServerKind::Redis
}

/// A server process owned by a test; killed (SIGTERM, then SIGKILL) when dropped.
/// An argument replaced by a port that was free a moment ago, picked anew at each start
/// attempt (for a second listener such as `--tls-port`); [`TestServer::extra_port`] says which.
pub const FREE_PORT: &str = "{free-port}";

pub struct TestServer {
    child: Child,
    port: u16,
    /// What [`FREE_PORT`] stood for (0 if unused).
    extra_port: u16,
    kind: ServerKind,
    dir: PathBuf,
    args: Vec<String>,
    /// Set once `stop` ran: an exited process is then no crash.
    stopped: bool,
}

impl TestServer {
    /// Starts the target server (see [`ServerKind::target`]) with default settings.
    pub fn start() -> TestServer {
        Self::start_with(&[])
    }

    /// Starts the target server with extra command-line arguments (e.g. `["--requirepass", "pw"]`).
    pub fn start_with(args: &[&str]) -> TestServer {
        Self::start_kind(ServerKind::target(), args)
    }

    /// Always starts real redis-server (the reference side of the differential harness).
    pub fn redis() -> TestServer {
        Self::start_kind(ServerKind::Redis, &[])
    }

    pub fn redis_with(args: &[&str]) -> TestServer {
        Self::start_kind(ServerKind::Redis, args)
    }

    pub fn start_kind(kind: ServerKind, args: &[&str]) -> TestServer {
        Self::start_kind_with_config(kind, None, args)
    }

    /// Starts the target server with a configuration file (passed first, as redis-server
    /// requires) followed by the usual `--port ...` flags and `args`.
    pub fn start_with_config(config: &Path, args: &[&str]) -> TestServer {
        Self::start_kind_with_config(ServerKind::target(), Some(config), args)
    }

    pub fn start_kind_with_config(
        kind: ServerKind,
        config: Option<&Path>,
        args: &[&str],
    ) -> TestServer {
        let mut last_err = String::new();
        for attempt in 1..=START_ATTEMPTS {
            let port = free_port();
            match Self::try_start(kind, port, config, args) {
                Ok(server) => return server,
                Err(e) => {
                    last_err = e;
                    eprintln!(
                        "[test-support] {} failed to start on port {port} (attempt {attempt}/{START_ATTEMPTS}): {last_err}",
                        kind.name()
                    );
                    std::thread::sleep(Duration::from_millis(100 * attempt as u64));
                }
            }
        }
        panic!(
            "could not start {} after {START_ATTEMPTS} attempts; last error: {last_err}",
            kind.name()
        );
    }

    fn try_start(
        kind: ServerKind,
        port: u16,
        config: Option<&Path>,
        extra: &[&str],
    ) -> Result<TestServer, String> {
        let dir = scratch_dir(kind, port);
        let log_path = dir.join("server.log");
        let log =
            File::create(&log_path).map_err(|e| format!("create {}: {e}", log_path.display()))?;
        let log2 = log.try_clone().map_err(|e| e.to_string())?;

        let port_s = port.to_string();
        let (program, mut args): (PathBuf, Vec<String>) = match kind {
            // Like the reference below: no save rules unless a test gives some, so stopping a
            // server never writes a snapshot nobody asked for.
            ServerKind::Tessera => (
                tessera_bin(),
                vec![
                    "--port".into(),
                    port_s,
                    "--bind".into(),
                    "127.0.0.1".into(),
                    "--save".into(),
                    String::new(),
                ],
            ),
            ServerKind::Redis => (
                redis_bin(),
                vec![
                    "--port".into(),
                    port_s,
                    "--bind".into(),
                    "127.0.0.1".into(),
                    "--save".into(),
                    String::new(),
                    "--appendonly".into(),
                    "no".into(),
                    "--daemonize".into(),
                    "no".into(),
                    "--dir".into(),
                    dir.display().to_string(),
                ],
            ),
        };
        if let Some(config) = config {
            args.insert(0, config.display().to_string());
        }
        let extra_port = if extra.contains(&FREE_PORT) {
            free_port()
        } else {
            0
        };
        args.extend(extra.iter().map(|s| {
            if *s == FREE_PORT {
                extra_port.to_string()
            } else {
                s.to_string()
            }
        }));

        let child = Command::new(&program)
            .args(&args)
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log2))
            .spawn();
        let child = match child {
            Ok(child) => child,
            Err(e) => {
                let _ = fs::remove_dir_all(&dir);
                // A missing or unusable binary will not get better by retrying.
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied
                ) {
                    let hint = match kind {
                        ServerKind::Redis => {
                            "install redis-server with `apt-get install -y redis-server`"
                        }
                        ServerKind::Tessera => {
                            "build it with `cargo build` (or set TESSERA_TEST_BIN)"
                        }
                    };
                    panic!("cannot run {}: {e}; {hint}", program.display());
                }
                return Err(format!("spawn {}: {e}", program.display()));
            }
        };

        let mut server = TestServer {
            child,
            port,
            extra_port,
            kind,
            dir,
            args,
            stopped: false,
        };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(status) = server.child.try_wait().map_err(|e| e.to_string())? {
                server.stopped = true; // reported here, not again on drop
                return Err(format!(
                    "{} exited during start-up ({status}); log:\n{}",
                    program.display(),
                    server.log_tail(40)
                ));
            }
            // The PING must be answered by our child: with tests starting servers in parallel,
            // a port picked here may have been taken by another test's server in between.
            if ping_answers(port) && listens_on(server.child.id(), port) {
                return Ok(server);
            }
            if Instant::now() > deadline {
                // `server` is dropped here, which kills the child.
                return Err(format!(
                    "{} did not answer PING on port {port} within {START_TIMEOUT:?}; log:\n{}",
                    program.display(),
                    server.log_tail(40)
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The port given for [`FREE_PORT`].
    pub fn extra_port(&self) -> u16 {
        self.extra_port
    }

    /// The server's scratch directory (its working directory).
    pub fn scratch(&self) -> &Path {
        &self.dir
    }

    pub fn kind(&self) -> ServerKind {
        self.kind
    }

    pub fn is_redis(&self) -> bool {
        self.kind == ServerKind::Redis
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The command line arguments the server was started with (port etc. included).
    pub fn args(&self) -> &[String] {
        &self.args
    }

    /// `redis://127.0.0.1:PORT/`
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// A `redis` crate connection (RESP2) with generous timeouts.
    pub fn client(&self) -> redis::Connection {
        connect_url(&self.url())
    }

    /// A `redis` crate connection that speaks RESP3 (the crate sends `HELLO 3`).
    pub fn client_resp3(&self) -> redis::Connection {
        connect_url(&format!("redis://127.0.0.1:{}/?protocol=resp3", self.port))
    }

    /// A raw RESP connection.
    pub fn raw(&self) -> RawClient {
        RawClient::connect(self.port)
    }

    /// Whether the process is still running.
    pub fn is_alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Panics unless the process is running and answers PING on a fresh connection.
    pub fn assert_healthy(&mut self) {
        assert!(
            self.is_alive(),
            "{} server died; log:\n{}",
            self.kind.name(),
            self.log_tail(40)
        );
        assert!(
            ping_answers(self.port),
            "{} server no longer answers PING; log:\n{}",
            self.kind.name(),
            self.log_tail(40)
        );
    }

    /// The last `lines` lines of the server's stdout/stderr.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = fs::read(self.dir.join("server.log")).unwrap_or_default();
        let text = String::from_utf8_lossy(&text);
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// What is worth showing of the log after a failure: every Rust panic message (a backtrace
    /// would otherwise push it out of the tail), then the last lines.
    pub fn log_excerpt(&self) -> String {
        let text = fs::read(self.dir.join("server.log")).unwrap_or_default();
        let text = String::from_utf8_lossy(&text);
        let all: Vec<&str> = text.lines().collect();
        let mut out = Vec::new();
        for (i, line) in all.iter().enumerate() {
            if line.contains("panicked at") && out.len() < 40 {
                out.extend(all[i..(i + 4).min(all.len())].iter().copied());
                out.push("  ...");
            }
        }
        if !out.is_empty() {
            out.push("last lines:");
        }
        out.extend(all[all.len().saturating_sub(15)..].iter().copied());
        out.join("\n")
    }

    /// Kills the server with SIGKILL at once (a crash, for durability tests) and reaps it.
    /// Starts the server again once it has stopped (after SHUTDOWN or a kill; stopped now
    /// otherwise): the same program, arguments, port and directory, so its replicas reconnect
    /// and its files are found.
    pub fn restart(&mut self) {
        self.restart_as(self.kind);
    }

    /// [`TestServer::restart`], as the other server when `kind` is not this one's (the
    /// arguments of either suit both).
    pub fn restart_as(&mut self, kind: ServerKind) {
        self.stop();
        self.kind = kind;
        let log_path = self.dir.join("server.log");
        let log = fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&log_path)
            .unwrap_or_else(|e| panic!("open {}: {e}", log_path.display()));
        let log2 = log.try_clone().expect("clone the log");
        self.child = Command::new(self.kind.binary())
            .args(&self.args)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log2))
            .spawn()
            .unwrap_or_else(|e| panic!("restart {}: {e}", self.kind.name()));
        self.stopped = false;
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                self.stopped = true;
                panic!(
                    "{} exited while restarting ({status}); log:\n{}",
                    self.kind.name(),
                    self.log_tail(40)
                );
            }
            if ping_answers(self.port) && listens_on(self.child.id(), self.port) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{} did not answer PING on port {} again within {START_TIMEOUT:?}; log:\n{}",
                self.kind.name(),
                self.port,
                self.log_tail(40)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn kill_hard(&mut self) {
        self.stopped = true;
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits for the server to exit by itself (after SHUTDOWN); its exit status.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                self.stopped = true;
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }

    /// Stops the server now (SIGTERM, then SIGKILL after 5 s); also done on drop.
    pub fn stop(&mut self) {
        self.stopped = true;
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        let pid = self.child.id() as i32;
        unsafe {
            kill(pid, SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let crashed = !self.stopped && matches!(self.child.try_wait(), Ok(Some(_)));
        self.stop();
        // The reference server's log is only interesting if it died; the target's whenever the
        // test failed.
        if crashed || (std::thread::panicking() && self.kind == ServerKind::Tessera) {
            eprintln!(
                "[test-support] {} server on port {} ({}); last log lines:\n{}",
                self.kind.name(),
                self.port,
                if crashed {
                    "had exited before the test ended"
                } else {
                    "test panicked"
                },
                self.log_excerpt()
            );
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}

fn connect_url(url: &str) -> redis::Connection {
    let client = redis::Client::open(url).unwrap_or_else(|e| panic!("bad url {url}: {e}"));
    let con = client
        .get_connection_with_timeout(IO_TIMEOUT)
        .unwrap_or_else(|e| panic!("connect {url}: {e}"));
    con.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    con.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
    con
}

/// A port that was free a moment ago (bind to port 0, read it back, close).
/// Starts the target server with `args` (a configuration file, if any, first), on a free port
/// and without saving, expecting it to refuse to start: what it printed.
#[allow(dead_code)]
pub fn refused_start<A: AsRef<std::ffi::OsStr> + std::fmt::Debug>(
    config: Option<&str>,
    args: &[A],
) -> String {
    let mut cmd = Command::new(ServerKind::target().binary());
    cmd.args(config)
        .args(["--port", &free_port().to_string(), "--save", ""])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("run the server");
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the server started with {config:?} {args:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().unwrap().port()
}

fn scratch_dir(kind: ServerKind, port: u16) -> PathBuf {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join("tessera-tests").join(format!(
        "{}-{}-{}-{}",
        kind.name(),
        std::process::id(),
        port,
        n
    ));
    fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
    dir
}

fn tessera_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("TESSERA_TEST_BIN") {
        return PathBuf::from(p);
    }
    PathBuf::from(env!("CARGO_BIN_EXE_tessera-server"))
}

fn redis_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("REDIS_SERVER_BIN") {
        return PathBuf::from(p);
    }
    let default = Path::new("/usr/bin/redis-server");
    if default.is_file() {
        return default.to_path_buf();
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join("redis-server");
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    panic!(
        "redis-server not found (looked at /usr/bin/redis-server and $PATH). \
         The reference server is needed: install it with `apt-get install -y redis-server` \
         (or point REDIS_SERVER_BIN at one)."
    );
}

/// Whether process `pid` holds a listening TCP socket on `port` (from /proc; true where /proc
/// cannot tell).
fn listens_on(pid: u32, port: u16) -> bool {
    let mut inodes = Vec::new();
    let mut readable = false;
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = fs::read_to_string(table) else {
            continue;
        };
        readable = true;
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
            if cols.len() < 10 || cols[3] != "0A" {
                continue;
            }
            let local_port = cols[1]
                .rsplit(':')
                .next()
                .and_then(|p| u16::from_str_radix(p, 16).ok());
            if local_port == Some(port) {
                inodes.push(format!("socket:[{}]", cols[9]));
            }
        }
    }
    if !readable {
        return true;
    }
    let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten().any(|fd| {
        fs::read_link(fd.path())
            .map(|target| inodes.iter().any(|i| target.as_os_str() == i.as_str()))
            .unwrap_or(false)
    })
}

/// True if something on `port` answers a PING with any RESP reply (an error such as NOAUTH
/// counts: the server is up).
fn ping_answers(port: u16) -> bool {
    let Ok(mut stream) =
        TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_millis(500))
    else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(2)));
    if stream.write_all(b"*1\r\n$4\r\nPING\r\n").is_err() {
        return false;
    }
    let mut buf = Vec::new();
    let mut chunk = [0u8; 512];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return false,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                match parse_frame(&buf) {
                    Ok(Some(_)) => return true,
                    Ok(None) => continue,
                    Err(_) => return false,
                }
            }
        }
    }
}

/// Encodes one command as a RESP multibulk.
pub fn encode_command<A: AsRef<[u8]>>(args: &[A], out: &mut Vec<u8>) {
    out.push(b'*');
    out.extend_from_slice(args.len().to_string().as_bytes());
    out.extend_from_slice(b"\r\n");
    for a in args {
        let a = a.as_ref();
        out.push(b'$');
        out.extend_from_slice(a.len().to_string().as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// A RESP client over a plain TCP stream, returning replies as [`Frame`]s.
pub struct RawClient {
    stream: TcpStream,
    buf: Vec<u8>,
    /// Start of unparsed data in `buf`.
    pos: usize,
    timeout: Duration,
}

impl RawClient {
    pub fn connect(port: u16) -> RawClient {
        let stream = TcpStream::connect(("127.0.0.1", port))
            .unwrap_or_else(|e| panic!("connect 127.0.0.1:{port}: {e}"));
        stream.set_nodelay(true).unwrap();
        let mut c = RawClient {
            stream,
            buf: Vec::with_capacity(64 * 1024),
            pos: 0,
            timeout: IO_TIMEOUT,
        };
        c.set_timeout(IO_TIMEOUT);
        c
    }

    /// Read and write timeout for this connection.
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
        self.stream.set_read_timeout(Some(timeout)).unwrap();
        self.stream.set_write_timeout(Some(timeout)).unwrap();
    }

    pub fn stream(&self) -> &TcpStream {
        &self.stream
    }

    /// Sends one command as a multibulk; does not wait for the reply.
    pub fn send<A: AsRef<[u8]>>(&mut self, args: &[A]) {
        let mut out = Vec::new();
        encode_command(args, &mut out);
        self.send_raw(&out);
    }

    /// Sends many commands in one write (a pipeline); read the replies with `read_frame`.
    pub fn send_many<C: AsRef<[A]>, A: AsRef<[u8]>>(&mut self, cmds: &[C]) {
        let mut out = Vec::new();
        for c in cmds {
            encode_command(c.as_ref(), &mut out);
        }
        self.send_raw(&out);
    }

    /// Sends a command and reads its reply; None when the connection fails (a server that was
    /// killed on purpose).
    pub fn try_call<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Option<Frame> {
        let mut out = Vec::new();
        encode_command(args, &mut out);
        self.try_send_raw(&out).ok()?;
        self.try_read_frame().ok().flatten()
    }

    /// Writes bytes as they are.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.try_send_raw(bytes)
            .unwrap_or_else(|e| panic!("write of {} bytes failed: {e}", bytes.len()));
    }

    pub fn try_send_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes)?;
        self.stream.flush()
    }

    /// Reads one reply; panics on timeout, on a closed connection, or on unparsable bytes.
    pub fn read_frame(&mut self) -> Frame {
        match self.try_read_frame() {
            Ok(Some(f)) => f,
            Ok(None) => panic!("connection closed by the server while a reply was expected"),
            Err(e) => panic!("reading a reply failed (timeout {:?}): {e}", self.timeout),
        }
    }

    /// Reads one reply: `Ok(None)` if the server closed the connection cleanly before a whole
    /// reply arrived; `Err` on timeout, reset or a reply that does not parse.
    pub fn try_read_frame(&mut self) -> io::Result<Option<Frame>> {
        loop {
            if self.pos < self.buf.len() {
                match parse_frame(&self.buf[self.pos..]) {
                    Ok(Some((frame, used))) => {
                        self.pos += used;
                        if self.pos == self.buf.len() {
                            self.buf.clear();
                            self.pos = 0;
                        }
                        return Ok(Some(frame));
                    }
                    Ok(None) => {}
                    Err(e) => {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!(
                                "unparsable reply ({e:?}): {}",
                                printable(&self.buf[self.pos..self.buf.len().min(self.pos + 200)])
                            ),
                        ))
                    }
                }
            }
            if self.fill()? == 0 {
                return Ok(None);
            }
        }
    }

    /// Reads more bytes into the buffer; returns how many (0 at EOF).
    fn fill(&mut self) -> io::Result<usize> {
        if self.pos > 0 && self.pos * 2 > self.buf.len() {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        let len = self.buf.len();
        let want = (len / 2).clamp(64 * 1024, 16 * 1024 * 1024);
        self.buf.resize(len + want, 0);
        let r = loop {
            match self.stream.read(&mut self.buf[len..]) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other,
            }
        };
        let n = *r.as_ref().unwrap_or(&0);
        self.buf.truncate(len + n);
        r
    }

    /// Sends a command and reads its reply.
    pub fn call<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Frame {
        self.send(args);
        self.read_frame()
    }

    /// Sends all commands in one write, then reads one reply per command.
    pub fn pipeline<C: AsRef<[A]>, A: AsRef<[u8]>>(&mut self, cmds: &[C]) -> Vec<Frame> {
        self.send_many(cmds);
        (0..cmds.len()).map(|_| self.read_frame()).collect()
    }

    /// Waits until the server closes the connection. Panics if a reply arrives instead, or if
    /// the connection is still open after the timeout.
    pub fn expect_closed(&mut self) {
        match self.try_read_frame() {
            Ok(None) => {}
            Ok(Some(f)) => panic!(
                "expected the server to close the connection, got a reply: {}",
                fmt_frame(&f)
            ),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::ConnectionReset
                        | io::ErrorKind::ConnectionAborted
                        | io::ErrorKind::BrokenPipe
                ) => {}
            Err(e) => panic!("expected the server to close the connection, but: {e}"),
        }
    }

    /// True if bytes that have arrived are still unread.
    pub fn has_buffered(&self) -> bool {
        self.pos < self.buf.len()
    }

    /// Half-closes (no more writes) or fully closes the socket.
    pub fn shutdown(&self, how: Shutdown) {
        let _ = self.stream.shutdown(how);
    }
}

/// Bytes as a readable, escaped string (like redis-cli's quoting).
pub fn printable(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() + 2);
    for &c in b {
        match c {
            b'"' => s.push_str("\\\""),
            b'\\' => s.push_str("\\\\"),
            b'\n' => s.push_str("\\n"),
            b'\r' => s.push_str("\\r"),
            b'\t' => s.push_str("\\t"),
            0x20..=0x7e => s.push(c as char),
            _ => s.push_str(&format!("\\x{c:02x}")),
        }
    }
    s
}

/// A command as a readable line: arguments quoted when they need it, long ones shortened.
pub fn fmt_command<A: AsRef<[u8]>>(args: &[A]) -> String {
    args.iter()
        .map(|a| {
            let a = a.as_ref();
            let mut p = if !a.is_empty()
                && a.iter()
                    .all(|&c| c.is_ascii_graphic() && c != b'"' && c != b'\\' && c != b'\'')
            {
                String::from_utf8_lossy(a).into_owned()
            } else {
                format!("\"{}\"", printable(a))
            };
            if p.len() > 300 {
                let mut cut = 300;
                while !p.is_char_boundary(cut) {
                    cut -= 1;
                }
                p.truncate(cut);
                p.push_str(&format!("...({} bytes)", a.len()));
            }
            p
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A reply as a one-line readable string.
pub fn fmt_frame(f: &Frame) -> String {
    fn list(items: &[Frame]) -> String {
        items.iter().map(fmt_frame).collect::<Vec<_>>().join(", ")
    }
    fn bulk(b: &[u8]) -> String {
        if b.len() > 300 {
            format!("\"{}\"...({} bytes)", printable(&b[..300]), b.len())
        } else {
            format!("\"{}\"", printable(b))
        }
    }
    match f {
        Frame::Simple(s) => format!("+{}", printable(s)),
        Frame::Error(s) => format!("-{}", printable(s)),
        Frame::Integer(i) => format!(":{i}"),
        Frame::Bulk(b) => bulk(b),
        Frame::NullBulk => "(nil)".to_string(),
        Frame::NullArray => "(nil array)".to_string(),
        Frame::Null => "(null)".to_string(),
        Frame::Double(d) => format!(",{}", printable(d)),
        Frame::BigNumber(n) => format!("({}", printable(n)),
        Frame::BulkError(e) => format!("!{}", printable(e)),
        Frame::Verbatim { format, text } => format!("={}:{}", printable(format), bulk(text)),
        Frame::Attribute { attrs, frame } => format!(
            "|{{{}}} {}",
            attrs
                .iter()
                .map(|(k, v)| format!("{}: {}", fmt_frame(k), fmt_frame(v)))
                .collect::<Vec<_>>()
                .join(", "),
            fmt_frame(frame)
        ),
        Frame::Array(items) => format!("[{}]", list(items)),
        Frame::Set(items) => format!("~{{{}}}", list(items)),
        Frame::Push(items) => format!(">[{}]", list(items)),
        Frame::Map(pairs) => format!(
            "%{{{}}}",
            pairs
                .iter()
                .map(|(k, v)| format!("{}: {}", fmt_frame(k), fmt_frame(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Frame::Boolean(b) => format!("#{}", if *b { 't' } else { 'f' }),
    }
}

/// `Frame::Bulk` from anything byte-like.
pub fn bulk(b: impl AsRef<[u8]>) -> Frame {
    Frame::Bulk(b.as_ref().to_vec())
}

/// `Frame::Simple` from a str.
pub fn simple(s: &str) -> Frame {
    Frame::Simple(s.as_bytes().to_vec())
}

/// `Frame::Error` from a str (the full line, e.g. `"ERR syntax error"`).
pub fn error(s: &str) -> Frame {
    Frame::Error(s.as_bytes().to_vec())
}

/// `Frame::Array` of bulks.
pub fn bulks<B: AsRef<[u8]>>(items: &[B]) -> Frame {
    Frame::Array(items.iter().map(bulk).collect())
}

/// The full text of a server error from the `redis` crate, e.g. `"ERR syntax error"` or
/// `"WRONGTYPE Operation against a key holding the wrong kind of value"`.
pub fn err_text(e: &redis::RedisError) -> String {
    match (e.code(), e.detail()) {
        (Some(code), Some(detail)) => format!("{code} {detail}"),
        (Some(code), None) => code.to_string(),
        _ => e.to_string(),
    }
}

/// Runs a command through the `redis` crate and returns the server's error text; panics if the
/// command succeeded.
pub fn query_err(con: &mut redis::Connection, cmd: &redis::Cmd) -> String {
    match cmd.query::<redis::Value>(con) {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => err_text(&e),
    }
}

/// Reads until the server closes the connection (or `limit` passes): what arrived, and
/// whether it was closed.
pub fn read_to_close(stream: &mut TcpStream, limit: Duration) -> (Vec<u8>, bool) {
    let deadline = Instant::now() + limit;
    let mut got = Vec::new();
    let mut chunk = [0u8; 65536];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return (got, false);
        }
        stream.set_read_timeout(Some(left)).unwrap();
        match stream.read(&mut chunk) {
            Ok(0) => return (got, true),
            Ok(n) => got.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return (got, false)
            }
            // A reset is a close too.
            Err(_) => return (got, true),
        }
    }
}

/// Polls `f` until it returns true or `timeout` passes; returns the last result. For waiting on
/// asynchronous effects (expiry, a killed client) without sleep-exact timing.
pub fn wait_until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if f() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Builds a `redis::Cmd` from string arguments.
pub fn cmd(args: &[&str]) -> redis::Cmd {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c
}

/// Runs a command through the `redis` crate and converts the reply; panics (naming the
/// command) on an error reply.
pub fn q<T: redis::FromRedisValue>(con: &mut redis::Connection, args: &[&str]) -> T {
    cmd(args)
        .query(con)
        .unwrap_or_else(|e| panic!("{}: {e}", args.join(" ")))
}

/// Runs a command that must fail and returns the error text (`"ERR syntax error"`).
pub fn q_err(con: &mut redis::Connection, args: &[&str]) -> String {
    match cmd(args).query::<redis::Value>(con) {
        Ok(v) => panic!("{}: expected an error, got {v:?}", args.join(" ")),
        Err(e) => err_text(&e),
    }
}
