//! Threads and sockets.
//!
//! One acceptor thread takes connections and hands each to a worker thread
//! round-robin; the connection then lives on that worker for good. Each
//! worker is a single-threaded tokio runtime (an event loop per core, no
//! work stealing, no cross-thread wake-ups on the request path) that also
//! runs active expiry for its share of the shards. Commands from any worker
//! reach any key through the sharded [`crate::keyspace::Keyspace`].

pub mod blocking;
pub mod client;
pub mod client_evict;
pub mod conn;
pub mod dispatch;
pub mod evict;
pub mod lazyfree;
pub mod memory;
pub mod migrate;
pub mod parked;
pub mod persist;
pub mod pubsub;
pub mod replication;
pub mod script_host;
pub mod shutdown;
pub mod socket;
pub mod state;
pub mod stats;
pub mod tls;
pub mod tracking;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rand::Rng;
use tokio::sync::{mpsc, Notify};

use crate::config::Config;
use crate::keyspace::{Keyspace, NUM_SHARDS};
use crate::util::log;
use client::PeerAddr;
use state::{unix_ms, Pause, ServerState};
use stats::WorkerStats;

impl ServerState {
    /// A server's shared state, with no data and no clients, for `threads`
    /// workers (`workers` holds their statistics, a spare's included).
    pub fn new(
        config: Arc<Config>,
        workers: Vec<Arc<WorkerStats>>,
        threads: usize,
        port: u16,
        executable: String,
    ) -> ServerState {
        let ncmds = crate::commands::command_count_with_subs();
        let run_id: String = {
            let mut rng = rand::thread_rng();
            (0..40)
                .map(|_| format!("{:x}", rng.gen_range(0..16u8)))
                .collect()
        };
        ServerState {
            keyspace: Arc::new(Keyspace::new(config.databases())),
            clients: Default::default(),
            blocking: Default::default(),
            workers,
            worker_threads: threads,
            startup_memory: AtomicU64::new(0),
            acceptor: Arc::new(WorkerStats::new(ncmds)),
            started: Instant::now(),
            started_unix_ms: unix_ms(),
            run_id,
            port: std::sync::atomic::AtomicU16::new(port),
            slowlog: Mutex::new(Default::default()),
            latency: Mutex::new(Default::default()),
            pause: Pause::default(),
            stall: Default::default(),
            shutdown_waits: Default::default(),
            instant: Mutex::new(Default::default()),
            monitors: Mutex::new(Vec::new()),
            monitor_count: AtomicUsize::new(0),
            shutdown: Notify::new(),
            persistence: Default::default(),
            aof: Mutex::new(None),
            active_expire: AtomicBool::new(true),
            eviction_unfinished: AtomicBool::new(false),
            used_memory_cache: AtomicU64::new(0),
            used_memory_refreshed_us: AtomicI64::new(0),
            peak_memory: AtomicU64::new(0),
            executable,
            config_file: config.config_file().map(|p| p.display().to_string()),
            pubsub: pubsub::PubSub::default(),
            script_lock: Mutex::new(()),
            scripts: crate::scripting::Scripts::new(config.lua_enable_deprecated_api()),
            tracking: Default::default(),
            journal: Default::default(),
            repl: Default::default(),
            me: Default::default(),
            migrate_sockets: Default::default(),
            client_eviction: Default::default(),
            config,
        }
    }
}

/// Starts the server and blocks until SHUTDOWN.
pub fn run(config: Config, executable: String) -> Result<(), String> {
    let config = Arc::new(config);
    let threads = match config.threads() {
        0 => std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        n => n,
    };
    let ncmds = crate::commands::command_count_with_subs();
    crate::acl::load_at_startup(&config)?;
    // A worker runs a script to its end before it serves anyone else. With
    // one worker, a script past busy-reply-threshold would leave nobody to
    // answer new clients (-BUSY, SCRIPT KILL, SHUTDOWN NOSAVE), so a spare
    // worker takes the connections accepted meanwhile (and keeps them). With
    // more, the acceptor steers new connections to another regular worker.
    let spare = usize::from(threads == 1);
    let workers: Vec<Arc<WorkerStats>> = (0..threads + spare)
        .map(|_| Arc::new(WorkerStats::new(ncmds)))
        .collect();
    // TCP first: a second server started by mistake fails there, before
    // it would replace the running one's socket file.
    if config.tls_in_use() {
        if let Err(reason) = tls::configure(&config) {
            log::warning(&reason);
            return Err(tls::CONFIGURE_FAILED.into());
        }
    }
    let listeners = bind_all(&config, config.unixsocket().is_some())?;
    let tls_listeners = match config.tls_port() {
        0 => Vec::new(),
        port => bind_addresses(port, &config.bind())?,
    };
    let unix_listener = bind_unix(&config)?;
    let port = listeners
        .first()
        .and_then(|l| l.local_addr().ok())
        .map(|a| a.port())
        .unwrap_or(config.port());

    let srv = Arc::new(ServerState::new(
        config,
        workers.clone(),
        threads,
        port,
        executable,
    ));
    let _ = srv.me.set(Arc::downgrade(&srv));

    log::notice(&format!(
        "Tessera {} (Redis {} compatible) starting, pid={}, port={}, threads={}",
        crate::TESSERA_VERSION,
        crate::REDIS_COMPAT_VERSION,
        std::process::id(),
        port,
        threads
    ));
    show_banner(srv.config.always_show_logo(), port, threads);

    let mut senders = Vec::new();
    let (started_tx, started_rx) = std::sync::mpsc::channel::<()>();
    for (i, w) in workers.into_iter().enumerate() {
        let started = started_tx.clone();
        let (tx, rx) = mpsc::unbounded_channel::<(Accepted, u64)>();
        senders.push(tx);
        let srv = srv.clone();
        std::thread::Builder::new()
            .stack_size(WORKER_STACK_BYTES)
            .name(if i < threads {
                format!("tessera-worker-{i}")
            } else {
                "tessera-spare".to_string()
            })
            .spawn(move || worker_main(srv, w, i, threads, rx, started))
            .map_err(|e| format!("cannot start worker thread: {e}"))?;
    }

    if let Some(pidfile) = srv.config.pidfile() {
        if let Err(e) = std::fs::write(&pidfile, format!("{}\n", std::process::id())) {
            log::warning(&format!("Failed to write PID file {pidfile}: {e}"));
        }
    }
    // used_memory_startup: once every worker has its event loop, before any
    // client or data.
    drop(started_tx);
    while started_rx.recv().is_ok() {}
    srv.startup_memory.store(memory::allocated_bytes(), Relaxed);
    // The dataset loads while clients connect: they get -LOADING until it
    // is in (as from redis-server, which serves events while loading).
    let aof_on = srv.config.appendonly();
    let ready_now = !aof_on && !persist::rdb_path(&srv).exists();
    if srv.config.replicaof().is_some() {
        // A replica from the start: what it loads keeps its expired keys.
        srv.repl.set_replica(true);
    }
    let tcp = !listeners.is_empty() || !tls_listeners.is_empty();
    if ready_now {
        if tcp {
            log::notice("Ready to accept connections");
        }
        replication::follow_configured_master(&srv);
    } else {
        srv.persistence.loading.store(true, Relaxed);
        let loader = srv.clone();
        std::thread::Builder::new()
            .name("tessera-load".into())
            .spawn(move || {
                match if aof_on {
                    persist::open_aof_at_startup(&loader).map(|()| {
                        loader.persistence.loading.store(false, Relaxed);
                    })
                } else {
                    persist::load_at_startup(&loader)
                } {
                    Ok(()) => {
                        if tcp {
                            log::notice("Ready to accept connections");
                        }
                        replication::follow_configured_master(&loader);
                    }
                    Err(e) => {
                        log::warning(&e);
                        std::process::exit(1);
                    }
                }
            })
            .map_err(|e| format!("cannot start the loader thread: {e}"))?;
    }
    if let Some(path) = srv.config.unixsocket().filter(|_| unix_listener.is_some()) {
        log::notice(&format!(
            "The server is now ready to accept connections at {path}"
        ));
    }
    accept_loop(
        srv,
        Listening {
            plain: listeners,
            tls: tls_listeners,
        },
        unix_listener,
        senders,
    );
    Ok(())
}

/// A connection as the acceptor hands it to a worker.
pub enum Accepted {
    Tcp(std::net::TcpStream),
    /// On `tls-port`: the worker runs the handshake first.
    Tls(std::net::TcpStream),
    Unix(std::os::unix::net::UnixStream),
}

fn bind_all(config: &Config, unix: bool) -> Result<Vec<std::net::TcpListener>, String> {
    // Port 0 turns TCP off; with no TLS port and no Unix socket either
    // there is nothing left, and Redis exits.
    if config.port() == 0 {
        if unix || config.tls_port() != 0 {
            return Ok(Vec::new());
        }
        return Err("Configured to not listen anywhere, exiting.".into());
    }
    bind_addresses(config.port(), &config.bind())
}

/// The `unixsocket` listener, if one is configured: a stale socket file
/// left by an earlier run is replaced, and `unixsocketperm` (when not 0)
/// sets the file's mode, as Redis does.
fn bind_unix(config: &Config) -> Result<Option<std::os::unix::net::UnixListener>, String> {
    let Some(path) = config.unixsocket() else {
        return Ok(None);
    };
    let _ = std::fs::remove_file(&path);
    let listener = std::os::unix::net::UnixListener::bind(&path)
        .map_err(|e| format!("Failed opening Unix socket: {e}"))?;
    let perm = config.unixsocketperm();
    if perm != 0 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(perm))
            .map_err(|e| format!("Failed opening Unix socket: {e}"))?;
    }
    Ok(Some(listener))
}

fn bind_addresses(port: u16, bind: &[String]) -> Result<Vec<std::net::TcpListener>, String> {
    let mut out = Vec::new();
    for addr in bind {
        // Redis accepts "-::*"-style optional binds; a leading '-' means
        // "skip if unavailable".
        let (optional, host) = match addr.strip_prefix('-') {
            Some(h) => (true, h.to_string()),
            None => (false, addr.clone()),
        };
        let host = match host.as_str() {
            "*" => "0.0.0.0".to_string(),
            "::*" => "::".to_string(),
            _ => host,
        };
        let sa: SocketAddr = match format!("{host}:{port}")
            .parse()
            .or_else(|_| format!("[{host}]:{port}").parse())
        {
            Ok(sa) => sa,
            Err(_) => return Err(format!("Invalid bind address '{addr}'")),
        };
        match listen(sa) {
            Ok(l) => out.push(l),
            Err(e) if optional => log::warning(&format!("Skipping optional bind {addr}: {e}")),
            Err(e) => {
                return Err(format!(
                    "Could not create server TCP listening socket {host}:{port}: {e}"
                ))
            }
        }
    }
    if out.is_empty() {
        return Err("Failed listening on any address".to_string());
    }
    Ok(out)
}

fn listen(addr: SocketAddr) -> std::io::Result<std::net::TcpListener> {
    use socket2::{Domain, Socket, Type};
    let domain = if addr.is_ipv4() {
        Domain::IPV4
    } else {
        Domain::IPV6
    };
    let sock = Socket::new(domain, Type::STREAM, None)?;
    sock.set_reuse_address(true)?;
    if addr.is_ipv6() {
        sock.set_only_v6(true)?;
    }
    sock.bind(&addr.into())?;
    sock.listen(511)?;
    Ok(sock.into())
}

/// What CONFIG SET changed about where the server listens.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum ListenChange {
    Port,
    TlsPort,
    Bind,
}

/// A request to the acceptor to listen anew (CONFIG SET port / bind).
struct Relisten {
    change: ListenChange,
    port: u16,
    tls_port: u16,
    bind: Vec<String>,
    reply: std::sync::mpsc::SyncSender<Result<(), String>>,
}

/// Native stack for worker threads: a script's reply may nest as deep as
/// Lua's stack allows (about 8000 levels, as in Redis), and converting it
/// recurses once per level. Only the pages a thread touches are committed.
pub const WORKER_STACK_BYTES: usize = 64 * 1024 * 1024;

/// The acceptor's mailbox for [`Relisten`] requests (one server per
/// process).
static RELISTEN: std::sync::OnceLock<mpsc::UnboundedSender<Relisten>> = std::sync::OnceLock::new();

/// Applies CONFIG SET port / bind: the acceptor listens on the new port or
/// addresses and closes the old listeners, as redis-server does (a new port
/// is bound before the old one is closed; new addresses are bound after the
/// old ones are closed, and the old ones are restored if that fails).
/// Existing connections stay. Errors are Redis's texts.
pub fn relisten(cfg: &Config, change: ListenChange) -> Result<(), String> {
    let failure = match change {
        ListenChange::Port | ListenChange::TlsPort => {
            "Unable to listen on this port. Check server logs."
        }
        ListenChange::Bind => "Failed to bind to specified addresses.",
    };
    let Some(tx) = RELISTEN.get() else {
        return Err(failure.into());
    };
    let (reply, answer) = std::sync::mpsc::sync_channel(1);
    let request = Relisten {
        change,
        port: cfg.port(),
        tls_port: cfg.tls_port(),
        bind: cfg.bind(),
        reply,
    };
    if tx.send(request).is_err() {
        return Err(failure.into());
    }
    match answer.recv_timeout(Duration::from_secs(10)) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => {
            log::warning(&e);
            Err(failure.into())
        }
        Err(_) => Err(failure.into()),
    }
}

fn to_tokio(listeners: Vec<std::net::TcpListener>) -> Vec<tokio::net::TcpListener> {
    listeners
        .into_iter()
        .filter_map(|l| {
            l.set_nonblocking(true).ok()?;
            tokio::net::TcpListener::from_std(l).ok()
        })
        .collect()
}

/// The next connection on any of `listeners` (never, if there are none).
async fn accept_any(
    listeners: &[tokio::net::TcpListener],
) -> std::io::Result<tokio::net::TcpStream> {
    std::future::poll_fn(|cx| {
        for l in listeners {
            if let std::task::Poll::Ready(r) = l.poll_accept(cx) {
                return std::task::Poll::Ready(r.map(|(s, _)| s));
            }
        }
        std::task::Poll::Pending
    })
    .await
}

/// Where the acceptor listens: `port` and `tls-port` on the bound addresses.
struct Listening<L> {
    plain: Vec<L>,
    tls: Vec<L>,
}

/// Serves a [`Relisten`] request: returns the listeners to use from now on.
fn serve_relisten(
    srv: &ServerState,
    listening: Listening<tokio::net::TcpListener>,
    req: &Relisten,
) -> (Listening<tokio::net::TcpListener>, Result<(), String>) {
    let old_port = srv.port.load(Relaxed);
    let old_tls_port = listening
        .tls
        .first()
        .and_then(|l| l.local_addr().ok())
        .map_or(0, |a| a.port());
    let old_bind: Vec<String> = listening
        .plain
        .iter()
        .chain(&listening.tls)
        .filter_map(|l| l.local_addr().ok())
        .map(|a| a.ip().to_string())
        .fold(Vec::new(), |mut seen, ip| {
            if !seen.contains(&ip) {
                seen.push(ip);
            }
            seen
        });
    // Port 0: no TCP listening at all, as in Redis.
    let open = |port: u16, bind: &[String]| {
        if port == 0 {
            Ok(Vec::new())
        } else {
            bind_addresses(port, bind).map(to_tokio)
        }
    };
    match req.change {
        ListenChange::Port => match open(req.port, &req.bind) {
            Ok(new) => {
                srv.port.store(req.port, Relaxed);
                log::notice(&format!("Now listening on port {}", req.port));
                (
                    Listening {
                        plain: new,
                        tls: listening.tls,
                    },
                    Ok(()),
                )
            }
            Err(e) => (listening, Err(e)),
        },
        ListenChange::TlsPort => match open(req.tls_port, &req.bind) {
            Ok(new) => (
                Listening {
                    plain: listening.plain,
                    tls: new,
                },
                Ok(()),
            ),
            Err(e) => (listening, Err(e)),
        },
        ListenChange::Bind => {
            drop(listening);
            let both = |bind: &[String]| -> Result<Listening<_>, String> {
                Ok(Listening {
                    plain: open(old_port, bind)?,
                    tls: open(old_tls_port, bind)?,
                })
            };
            match both(&req.bind) {
                Ok(new) => (new, Ok(())),
                Err(e) => {
                    log::warning("Failed to bind, trying to restore old listening sockets.");
                    let restored = both(&old_bind).unwrap_or(Listening {
                        plain: Vec::new(),
                        tls: Vec::new(),
                    });
                    (restored, Err(e))
                }
            }
        }
    }
}

/// The next connection on the Unix socket (never, if there is none).
async fn accept_unix(
    listener: &Option<tokio::net::UnixListener>,
) -> std::io::Result<tokio::net::UnixStream> {
    match listener {
        Some(l) => l.accept().await.map(|(s, _)| s),
        None => std::future::pending().await,
    }
}

fn accept_loop(
    srv: Arc<ServerState>,
    listening: Listening<std::net::TcpListener>,
    unix_listener: Option<std::os::unix::net::UnixListener>,
    senders: Vec<mpsc::UnboundedSender<(Accepted, u64)>>,
) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            log::warning(&format!("cannot start acceptor: {e}"));
            return;
        }
    };
    rt.block_on(async move {
        let mut next = 0usize;
        let mut listening = Listening {
            plain: to_tokio(listening.plain),
            tls: to_tokio(listening.tls),
        };
        let unix_listener = unix_listener.and_then(|l| {
            l.set_nonblocking(true).ok()?;
            tokio::net::UnixListener::from_std(l).ok()
        });
        let (relisten_tx, mut relisten_rx) = mpsc::unbounded_channel::<Relisten>();
        let _ = RELISTEN.set(relisten_tx);
        tokio::spawn(exit_on_signals(srv.clone()));
        tokio::spawn(sample_metrics(srv.clone()));
        tokio::spawn(persist::save_rules_cron(srv.clone()));
        tokio::spawn(migrate::close_idle_cron(srv.clone()));
        tokio::spawn(replication::master::cron(srv.clone()));
        enum Event {
            Accepted(std::io::Result<tokio::net::TcpStream>),
            AcceptedTls(std::io::Result<tokio::net::TcpStream>),
            AcceptedUnix(std::io::Result<tokio::net::UnixStream>),
            Relisten(Relisten),
            Shutdown,
        }
        loop {
            let event = tokio::select! {
                r = accept_any(&listening.plain) => Event::Accepted(r),
                r = accept_any(&listening.tls) => Event::AcceptedTls(r),
                r = accept_unix(&unix_listener) => Event::AcceptedUnix(r),
                Some(req) = relisten_rx.recv() => Event::Relisten(req),
                _ = srv.shutdown.notified() => Event::Shutdown,
            };
            let s = match event {
                Event::Shutdown => return,
                Event::Relisten(req) => {
                    // Connections already waiting in the old listeners'
                    // backlogs were made before the change: serve them
                    // rather than reset them when those listeners close.
                    for s in drain_backlogs(&listening.plain) {
                        next = hand_over(&srv, &senders, Accepted::Tcp(s), next);
                    }
                    for s in drain_backlogs(&listening.tls) {
                        next = hand_over(&srv, &senders, Accepted::Tls(s), next);
                    }
                    let taken = Listening {
                        plain: std::mem::take(&mut listening.plain),
                        tls: std::mem::take(&mut listening.tls),
                    };
                    let (now, result) = serve_relisten(&srv, taken, &req);
                    listening = now;
                    let _ = req.reply.send(result);
                    continue;
                }
                Event::Accepted(Err(_))
                | Event::AcceptedTls(Err(_))
                | Event::AcceptedUnix(Err(_)) => {
                    // Out of descriptors and the like: let it pass.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
                Event::Accepted(Ok(s)) => match s.into_std() {
                    Ok(s) => Accepted::Tcp(s),
                    Err(_) => continue,
                },
                Event::AcceptedTls(Ok(s)) => match s.into_std() {
                    Ok(s) => Accepted::Tls(s),
                    Err(_) => continue,
                },
                Event::AcceptedUnix(Ok(s)) => match s.into_std() {
                    Ok(s) => Accepted::Unix(s),
                    Err(_) => continue,
                },
            };
            next = hand_over(&srv, &senders, s, next);
        }
    });
}

/// Every connection already queued on `listeners`, without waiting. The
/// accept goes to the socket itself: tokio's cached readiness may not have
/// seen the newest arrivals yet.
fn drain_backlogs(listeners: &[tokio::net::TcpListener]) -> Vec<std::net::TcpStream> {
    let mut queued = Vec::new();
    for l in listeners {
        // The listener is non-blocking: this stops at WouldBlock.
        loop {
            match socket2::SockRef::from(l).accept() {
                Ok((s, _)) => queued.push(s.into()),
                // Reset before it was accepted: look at the next one.
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionAborted => {}
                Err(_) => break,
            }
        }
    }
    queued
}

/// Admits an accepted connection (maxclients, protected mode) and gives it
/// to a worker, round robin from `next`; returns the next turn.
fn hand_over(
    srv: &ServerState,
    senders: &[mpsc::UnboundedSender<(Accepted, u64)>],
    s: Accepted,
    next: usize,
) -> usize {
    use std::io::Write;
    srv.acceptor.connections_received.add(1);
    let refuse = |s: Accepted, message: &[u8]| {
        let _ = match s {
            Accepted::Tcp(mut s) => s.write_all(message),
            Accepted::Unix(mut s) => s.write_all(message),
            // Before its handshake a TLS client could not read the
            // message: it is closed.
            Accepted::Tls(_) => Ok(()),
        };
    };
    if srv.clients.connected() as u64 >= srv.config.maxclients() {
        srv.acceptor.rejected_connections.add(1);
        refuse(s, b"-ERR max number of clients reached\r\n");
        return next;
    }
    // (A Unix socket is local by definition.)
    if let Accepted::Tcp(tcp) | Accepted::Tls(tcp) = &s {
        if denied_by_protected_mode(srv, tcp) {
            refuse(s, PROTECTED_MODE_DENIED);
            return next;
        }
        let _ = tcp.set_nodelay(true);
    }
    let id = srv.clients.next_id();
    let mut w = next % srv.worker_threads;
    // A worker stuck in a busy script cannot serve anyone; new clients
    // (SCRIPT KILL!) go to the next worker, the spare one when there is a
    // single regular worker.
    if w == srv.scripts.busy_worker.load(Relaxed) && senders.len() > 1 {
        w = (w + 1) % senders.len();
    }
    let _ = senders[w].send((s, id));
    next.wrapping_add(1)
}

/// SIGTERM and SIGINT shut the server down as SHUTDOWN does, with the
/// flags `shutdown-on-sigterm` / `shutdown-on-sigint` give ("default":
/// save when save rules exist). A failed final save keeps the server
/// running, as in Redis (unless `force`).
async fn exit_on_signals(srv: Arc<ServerState>) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return;
    };
    loop {
        let (name, words) = tokio::select! {
            _ = term.recv() => ("SIGTERM", srv.config.shutdown_on_sigterm()),
            _ = int.recv() => ("SIGINT", srv.config.shutdown_on_sigint()),
        };
        log::warning(&format!("Received {name} scheduling shutdown..."));
        let has = |w: &str| words.split_whitespace().any(|x| x == w);
        let flags = shutdown::ShutdownFlags {
            save: has("save"),
            nosave: has("nosave"),
            now: has("now"),
            force: has("force"),
        };
        let finished = shutdown::wait_then_finish(&srv, flags);
        tokio::pin!(finished);
        let result = loop {
            tokio::select! {
                r = &mut finished => break r,
                // While it waits for replicas, as Redis: a SIGINT exits at
                // once, a SIGTERM changes nothing.
                _ = int.recv() => {
                    log::warning("You insist... exiting now.");
                    std::process::exit(1);
                }
                _ = term.recv() => {}
            }
        };
        if result.is_err() {
            log::warning(
                "Errors trying to shut down the server. Check the logs for more information.",
            );
        }
    }
}

/// Feeds INFO's instantaneous_* metrics every 100 ms.
async fn sample_metrics(srv: Arc<ServerState>) {
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    loop {
        tick.tick().await;
        let totals = [
            srv.stat_total(|w| w.commands_processed.get()),
            srv.stat_total(|w| w.net_input_bytes.get()) + srv.repl.link_input_bytes.load(Relaxed),
            srv.stat_total(|w| w.net_output_bytes.get()) + srv.repl.link_output_bytes.load(Relaxed),
            srv.repl.net_repl_input_bytes.load(Relaxed),
            srv.stat_total(|w| w.net_repl_output_bytes.get()),
        ];
        srv.instant.lock().sample(unix_ms(), totals);
        client_evict::from_cron(&srv);
        pubsub::enforce_soft_limit(&srv);
    }
}

/// Final steps of any shutdown: remove the pid file and exit.
pub fn shutdown_now(srv: &ServerState) -> ! {
    persist::flush_aof_for_shutdown(srv);
    if let Some(pidfile) = srv.config.pidfile() {
        let _ = std::fs::remove_file(pidfile);
    }
    if let Some(path) = srv.config.unixsocket() {
        log::notice("Removing the unix socket file.");
        let _ = std::fs::remove_file(path);
    }
    log::notice("Tessera is now ready to exit, bye bye...");
    std::process::exit(0);
}

/// Redis's protected mode: with no password set, only loopback clients
/// may connect.
fn denied_by_protected_mode(srv: &ServerState, s: &std::net::TcpStream) -> bool {
    if !srv.config.protected_mode() || !crate::acl::acl().default_user().rules().nopass {
        return false;
    }
    // Exactly 127.0.0.1 and ::1 count as local, as in Redis: not the rest
    // of 127.0.0.0/8, nor IPv4-mapped addresses.
    match s.peer_addr().map(|a| a.ip()) {
        Ok(std::net::IpAddr::V4(ip)) => ip != std::net::Ipv4Addr::LOCALHOST,
        Ok(std::net::IpAddr::V6(ip)) => ip != std::net::Ipv6Addr::LOCALHOST,
        Err(_) => false,
    }
}

const PROTECTED_MODE_DENIED: &[u8] = b"-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Set up an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n";

fn worker_main(
    srv: Arc<ServerState>,
    stats: Arc<WorkerStats>,
    index: usize,
    nworkers: usize,
    mut rx: mpsc::UnboundedReceiver<(Accepted, u64)>,
    started: std::sync::mpsc::Sender<()>,
) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            log::warning(&format!("cannot start worker: {e}"));
            return;
        }
    };
    drop(started);
    rt.block_on(async move {
        // The spare worker (index == nworkers) leaves active expiry to the
        // regular ones.
        if index < nworkers {
            tokio::spawn(active_expire_loop(srv.clone(), index, nworkers));
        }
        let sweeping = srv.clone();
        tokio::spawn(async move {
            let mut sweep = tokio::time::interval(Duration::from_secs(1));
            sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                sweep.tick().await;
                parked::release_idle_buffers();
                crate::scripting::drop_stale_vm(&sweeping.scripts);
            }
        });
        // (Immutable: read once.) Redis shows both ends of a Unix
        // connection as the socket's path.
        let unix_path: Arc<str> = srv.config.unixsocket().unwrap_or_default().into();
        while let Some((accepted, id)) = rx.recv().await {
            let tls = matches!(accepted, Accepted::Tls(_));
            match accepted {
                Accepted::Tcp(s) | Accepted::Tls(s) => {
                    if s.set_nonblocking(true).is_err() {
                        continue;
                    }
                    let Ok(stream) = tokio::net::TcpStream::from_std(s) else {
                        continue;
                    };
                    let (Ok(peer), Ok(local)) = (stream.peer_addr(), stream.local_addr()) else {
                        continue;
                    };
                    if srv.config.tcp_keepalive() > 0 {
                        let sock = socket2::SockRef::from(&stream);
                        let ka = socket2::TcpKeepalive::new()
                            .with_time(Duration::from_secs(srv.config.tcp_keepalive()));
                        let _ = sock.set_tcp_keepalive(&ka);
                    }
                    let addrs = (PeerAddr::Tcp(peer), PeerAddr::Tcp(local));
                    if !tls {
                        tokio::spawn(conn::serve(srv.clone(), stats.clone(), stream, addrs, id));
                        continue;
                    }
                    let Some(config) = tls::current() else {
                        continue;
                    };
                    let (srv, stats) = (srv.clone(), stats.clone());
                    tokio::spawn(async move {
                        match tls::accept(stream, config).await {
                            Ok(stream) => conn::serve(srv, stats, stream, addrs, id).await,
                            Err(e) => log::warning(&format!(
                                "Error accepting a client connection: {e} (addr={peer} laddr={local})"
                            )),
                        }
                    });
                }
                Accepted::Unix(s) => {
                    if s.set_nonblocking(true).is_err() {
                        continue;
                    }
                    let Ok(stream) = tokio::net::UnixStream::from_std(s) else {
                        continue;
                    };
                    let addrs = (
                        PeerAddr::Unix(unix_path.clone()),
                        PeerAddr::Unix(unix_path.clone()),
                    );
                    tokio::spawn(conn::serve(srv.clone(), stats.clone(), stream, addrs, id));
                }
            }
        }
    });
}

/// Redis's active expiry, per worker over its share of the shards: each
/// tick samples keys with a TTL, deletes the expired ones, and keeps going
/// on a shard while more than 10% of its samples were expired, within a
/// CPU budget of a quarter of the tick.
async fn active_expire_loop(srv: Arc<ServerState>, index: usize, nworkers: usize) {
    const SAMPLES: usize = 20;
    let mut start_shard = index;
    loop {
        let hz = srv.config.hz().clamp(1, 500) as u64;
        let tick = Duration::from_millis(1000 / hz);
        tokio::time::sleep(tick).await;
        // Numbers a command on this thread drew but could not publish (it
        // panicked) would stall the journal behind them until this thread's
        // next command: the tick publishes them (one relaxed load while
        // nothing consumes).
        srv.journal.publish_pending(false);
        if let Some(worker) = srv.workers.get(index) {
            if evict::background_evict(&srv, worker, tick / 4) {
                dispatch::publish_background_events(&srv);
            }
        }
        if !srv.active_expire.load(Relaxed) || !srv.config.active_expire_enabled() {
            continue;
        }
        // A replica's keys expire when the master's DEL arrives, but for
        // those its own clients gave a TTL (one worker checks them).
        if srv.repl.is_replica() {
            if index == 0 && !srv.keyspace.replica_ttls.is_empty() {
                let now = match srv.scripts.clock_ms.load(Relaxed) {
                    0 => unix_ms(),
                    script_clock => unix_ms().min(script_clock),
                };
                if srv.keyspace.expire_replica_ttls(now) > 0 {
                    dispatch::publish_background_events(&srv);
                }
            }
            continue;
        }
        let budget = tick / 4;
        let began = Instant::now();
        let now = unix_ms();
        let mut shard_idx = start_shard;
        let mut visited = 0;
        while visited < NUM_SHARDS / nworkers.max(1) + 1 && began.elapsed() < budget {
            // A shard without keys with a TTL is skipped without locking it.
            // One held by a command or a (possibly long) script is skipped this
            // round: waiting for it would stall the whole worker.
            let locked = if srv.keyspace.may_have_volatile(shard_idx % NUM_SHARDS) {
                srv.keyspace.try_lock_shard(shard_idx % NUM_SHARDS)
            } else {
                None
            };
            let Some(mut shard) = locked else {
                shard_idx += nworkers.max(1);
                if shard_idx >= NUM_SHARDS {
                    shard_idx = index;
                }
                visited += 1;
                continue;
            };
            // A running script sees the clock stopped at its start, and in
            // Redis no expiry cycle runs until it ends: keys it may still
            // read (declared or not) must not vanish under it.
            let now = match srv.scripts.clock_ms.load(Relaxed) {
                0 => now,
                script_clock => now.min(script_clock),
            };
            let mut expired_here = 0u64;
            for (db, t) in shard.dbs.iter_mut().enumerate() {
                let (mut ttl_sum, mut ttl_samples) = (0i64, 0i64);
                loop {
                    let step = t.expire_step(now, SAMPLES);
                    expired_here += step.expired as u64;
                    ttl_sum = ttl_sum.saturating_add(step.ttl_sum);
                    ttl_samples += step.ttl_samples;
                    if step.examined == 0
                        || step.expired * 10 <= step.examined
                        || began.elapsed() >= budget
                    {
                        break;
                    }
                }
                if ttl_samples > 0 {
                    srv.keyspace.note_sampled_ttl(db, ttl_sum / ttl_samples);
                }
            }
            shard.stats.expired_keys += expired_here;
            if !shard.dbs.iter().any(|t| t.has_volatile()) {
                srv.keyspace.clear_volatile_hint(shard_idx % NUM_SHARDS);
            }
            drop(shard);
            if expired_here > 0 {
                dispatch::publish_background_events(&srv);
            }
            shard_idx += nworkers.max(1);
            if shard_idx >= NUM_SHARDS {
                shard_idx = index;
            }
            visited += 1;
        }
        start_shard = shard_idx;
        // As Redis, each cycle's duration is an `expire-cycle` latency
        // sample (kept when it reaches latency-monitor-threshold).
        srv.record_latency("expire-cycle", began.elapsed().as_millis() as u64);
    }
}

/// The start-up banner where Redis shows its logo (`always-show-logo yes`,
/// or logging to a terminal), else Redis's one-line "Running mode" notice.
/// Tools that start servers read the PID from it, as from Redis's logo.
fn show_banner(always: bool, port: u16, threads: usize) {
    use std::io::IsTerminal;
    let mode = "standalone";
    if always || (log::to_stdout() && std::io::stdout().is_terminal()) {
        log::raw(
            log::Level::Notice,
            &format!(
                "\n    Tessera {} (Redis {} compatible), {} bit\n    \
                 Running in {mode} mode\n    Port: {port}\n    PID: {}\n    \
                 Threads: {threads}\n\n",
                crate::TESSERA_VERSION,
                crate::REDIS_COMPAT_VERSION,
                usize::BITS,
                std::process::id(),
            ),
        );
    } else {
        log::notice(&format!("Running mode={mode}, port={port}."));
    }
}
