//! The replica's side: the link to the master, on a thread of its own.
//!
//! It connects, does the handshake (PING, AUTH, REPLCONF listening-port /
//! ip-address / capa, PSYNC), loads the snapshot of a full sync (`$<len>`
//! or EOF-marked), and then applies the master's stream command by
//! command as the master client (no admission checks, no replies but the
//! ACKs), forwarding each applied command's bytes to its own stream (its
//! backlog and its replicas). A transaction is applied and forwarded at
//! its EXEC, so the offset never points inside one. The link is retried
//! every second until REPLICAOF changes the master (a new generation).

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::Ordering::*;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Link, LinkState};
use crate::server::client::{Client, ClientInfo, PeerAddr};
use crate::server::state::{unix_ms, ServerState};
use crate::util::log;

/// Starts following `host:port` (the caller bumped the generation).
pub fn start(srv: &ServerState, host: String, port: u16) {
    let generation = srv.repl.generation.load(SeqCst);
    *srv.repl.link.lock() = Some(Link {
        host: host.clone(),
        port,
        state: LinkState::Connect,
        down_since_ms: 0,
        last_io_ms: 0,
        transfer_size: 0,
        transfer_read: 0,
        transfer_last_io_ms: 0,
        read_offset: 0,
    });
    let srv = srv.me();
    let spawned = std::thread::Builder::new()
        .name("tessera-replica".into())
        .spawn(move || link_thread(&srv, generation, &host, port));
    if let Err(e) = spawned {
        log::warning(&format!("Can't start the replication link: {e}"));
    }
}

fn set_state(srv: &ServerState, state: LinkState) {
    if let Some(l) = srv.repl.link.lock().as_mut() {
        if l.state == LinkState::Connected && state != LinkState::Connected {
            l.down_since_ms = unix_ms();
        }
        l.state = state;
    }
}

fn link_thread(srv: &ServerState, generation: u64, host: &str, port: u16) {
    crate::keyspace::table::set_master_view(true);
    let current = || srv.repl.generation.load(SeqCst) == generation;
    log::notice(&format!("Connecting to MASTER {host}:{port}"));
    let mut master: Option<MasterClient> = None;
    while current() {
        set_state(srv, LinkState::Connecting);
        match session(srv, generation, host, port, &mut master) {
            Ok(()) => {}
            Err(e) => {
                log::warning(&e);
                // A handover that never reached the target is undone.
                super::failover::psync_answered(srv, false);
            }
        }
        set_state(srv, LinkState::Connect);
        if !current() {
            break;
        }
        // Redis retries from its once-a-second cron.
        for _ in 0..10 {
            if !current() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        log::notice(&format!("Connecting to MASTER {host}:{port}"));
    }
}

/// The client the master's commands run as.
struct MasterClient {
    client: Client,
    out: tessera_resp::encode::ReplyBuf,
}

impl MasterClient {
    fn new(srv: &ServerState, addr: PeerAddr) -> MasterClient {
        MasterClient {
            client: super::apply::master_client(srv, addr, srv.acceptor.clone()),
            out: tessera_resp::encode::ReplyBuf::new(tessera_resp::encode::Protocol::Resp2),
        }
    }
}

/// A blocking connection with a read buffer.
struct Conn {
    sock: LinkIo,
    /// The server's replication state, where the link's traffic counts.
    repl: Arc<super::Replication>,
    /// The TCP socket under `sock` (its descriptor and local address).
    tcp: TcpStream,
    buf: Vec<u8>,
    timeout: Duration,
}

/// The link's byte stream: plain TCP, or TLS over it (`tls-replication`).
enum LinkIo {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Read for LinkIo {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            LinkIo::Plain(s) => s.read(buf),
            LinkIo::Tls(s) => s.read(buf),
        }
    }
}

impl Write for LinkIo {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            LinkIo::Plain(s) => s.write(buf),
            LinkIo::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            LinkIo::Plain(s) => s.flush(),
            LinkIo::Tls(s) => s.flush(),
        }
    }
}

/// The TLS handshake with the master (the socket reads with a short
/// timeout, so a generation change or `repl-timeout` is noticed).
fn tls_handshake(
    srv: &ServerState,
    generation: u64,
    host: &str,
    tcp: &TcpStream,
    timeout: Duration,
) -> Result<LinkIo, String> {
    let config = crate::server::tls::link_config(&srv.config)
        .map_err(|e| format!("Unable to connect to MASTER over TLS: {e}"))?;
    let name = rustls::pki_types::ServerName::try_from(host.to_string())
        .map_err(|e| format!("Unable to connect to MASTER over TLS: {e}"))?;
    let mut tls = rustls::ClientConnection::new(config, name)
        .map_err(|e| format!("Unable to connect to MASTER over TLS: {e}"))?;
    let mut sock = tcp
        .try_clone()
        .map_err(|e| format!("Unable to connect to MASTER: {e}"))?;
    let began = Instant::now();
    while tls.is_handshaking() {
        if srv.repl.generation.load(SeqCst) != generation {
            return Err("Replication link replaced".into());
        }
        match tls.complete_io(&mut sock) {
            Ok(_) => {}
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut
                    || e.kind() == std::io::ErrorKind::Interrupted =>
            {
                if began.elapsed() > timeout {
                    return Err("Timeout in the TLS handshake with MASTER".into());
                }
            }
            Err(e) => return Err(format!("TLS handshake with MASTER failed: {e}")),
        }
    }
    Ok(LinkIo::Tls(Box::new(rustls::StreamOwned::new(tls, sock))))
}

impl Conn {
    fn fill(&mut self, srv: &ServerState, generation: u64) -> Result<usize, String> {
        let began = Instant::now();
        let mut chunk = [0u8; 64 * 1024];
        loop {
            if srv.repl.generation.load(SeqCst) != generation {
                return Err("Replication link replaced".into());
            }
            match self.sock.read(&mut chunk) {
                Ok(0) => return Err("Master closed the connection".into()),
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    srv.repl.link_input_bytes.fetch_add(n as u64, Relaxed);
                    if let Some(l) = srv.repl.link.lock().as_mut() {
                        l.last_io_ms = unix_ms();
                    }
                    return Ok(n);
                }
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut =>
                {
                    if began.elapsed() > self.timeout {
                        return Err("Timeout receiving from MASTER".into());
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("Error reading from MASTER: {e}")),
            }
        }
    }

    /// One line (without CRLF); the master's lone newlines (keepalives
    /// while it prepares a snapshot) are skipped.
    fn line(&mut self, srv: &ServerState, generation: u64) -> Result<String, String> {
        loop {
            if let Some(p) = self.buf.iter().position(|&b| b == b'\n') {
                let mut line: Vec<u8> = self.buf.drain(..=p).collect();
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                if line.is_empty() {
                    continue;
                }
                return Ok(String::from_utf8_lossy(&line).into_owned());
            }
            if self.buf.len() > 64 * 1024 {
                return Err("Protocol error: too long a line from MASTER".into());
            }
            self.fill(srv, generation)?;
        }
    }

    fn send(&mut self, argv: &[&[u8]]) -> Result<(), String> {
        send_command(&mut self.sock, &self.repl, argv)
    }

    fn call(
        &mut self,
        srv: &ServerState,
        generation: u64,
        argv: &[&[u8]],
    ) -> Result<String, String> {
        self.send(argv)?;
        self.line(srv, generation)
    }
}

/// Connects to the master, from `source` (bind-source-addr) when set. As
/// Redis, the binding is best effort: a source address that cannot be
/// bound (not this host's, say) is dropped and the link connects from
/// wherever the system chooses.
fn connect_from(
    source: Option<&str>,
    addr: &std::net::SocketAddr,
    timeout: Duration,
) -> std::io::Result<TcpStream> {
    let Some(source) = source else {
        return TcpStream::connect_timeout(addr, timeout);
    };
    let bound = (source, 0)
        .to_socket_addrs()
        .ok()
        .and_then(|mut found| found.find(|a| a.is_ipv4() == addr.is_ipv4()))
        .and_then(|local| {
            let domain = socket2::Domain::for_address(*addr);
            let sock = socket2::Socket::new(domain, socket2::Type::STREAM, None).ok()?;
            sock.bind(&local.into()).ok()?;
            Some(sock)
        });
    match bound {
        Some(sock) => match sock.connect_timeout(&(*addr).into(), timeout) {
            Ok(()) => Ok(sock.into()),
            Err(_) => TcpStream::connect_timeout(addr, timeout),
        },
        None => {
            log::warning(&format!(
                "Unable to bind to {source} for the link to the master: connecting without it"
            ));
            TcpStream::connect_timeout(addr, timeout)
        }
    }
}

fn session(
    srv: &ServerState,
    generation: u64,
    host: &str,
    port: u16,
    master: &mut Option<MasterClient>,
) -> Result<(), String> {
    let timeout = Duration::from_secs(srv.config.repl_timeout().max(1) as u64);
    let addr = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("Unable to connect to MASTER: {e}"))?
        .next()
        .ok_or_else(|| "Unable to connect to MASTER: no address".to_string())?;
    let sock = connect_from(srv.config.bind_source_addr().as_deref(), &addr, timeout)
        .map_err(|e| format!("Error condition on socket for SYNC: {e}"))?;
    let _ = sock.set_nodelay(!srv.config.repl_disable_tcp_nodelay());
    sock.set_read_timeout(Some(Duration::from_millis(100)))
        .map_err(|e| format!("Unable to connect to MASTER: {e}"))?;
    let io = if srv.config.tls_replication() {
        tls_handshake(srv, generation, host, &sock, timeout)?
    } else {
        LinkIo::Plain(
            sock.try_clone()
                .map_err(|e| format!("Unable to connect to MASTER: {e}"))?,
        )
    };
    let mut conn = Conn {
        sock: io,
        repl: srv.repl.clone(),
        tcp: sock,
        buf: Vec::new(),
        timeout,
    };
    log::notice("MASTER <-> REPLICA sync started");
    set_state(srv, LinkState::Handshake);

    let pong = conn.call(srv, generation, &[b"PING"])?;
    if !pong.starts_with('+')
        && !pong.starts_with("-NOAUTH")
        && !pong.starts_with("-NOPERM")
        && !pong.starts_with("-ERR operation not permitted")
    {
        return Err(format!("Error reply to PING from master: '{pong}'"));
    }
    log::notice("Master replied to PING, replication can continue...");
    if let Some(pass) = srv.config.masterauth() {
        let user = srv.config.masteruser();
        let reply = match &user {
            Some(u) => conn.call(srv, generation, &[b"AUTH", u, &pass])?,
            None => conn.call(srv, generation, &[b"AUTH", &pass])?,
        };
        if reply.starts_with('-') {
            return Err(format!("Unable to AUTH to MASTER: {reply}"));
        }
    }
    let announce = match srv.config.replica_announce_port() {
        0 => srv.port.load(Relaxed) as i64,
        p => p,
    };
    let port_arg = announce.to_string();
    let reply = conn.call(
        srv,
        generation,
        &[b"REPLCONF", b"listening-port", port_arg.as_bytes()],
    )?;
    if reply.starts_with('-') {
        log::notice(&format!(
            "(Non critical) Master does not understand REPLCONF listening-port: {reply}"
        ));
    }
    if let Some(ip) = srv.config.replica_announce_ip() {
        let reply = conn.call(srv, generation, &[b"REPLCONF", b"ip-address", &ip])?;
        if reply.starts_with('-') {
            log::notice(&format!(
                "(Non critical) Master does not understand REPLCONF ip-address: {reply}"
            ));
        }
    }
    let reply = conn.call(
        srv,
        generation,
        &[b"REPLCONF", b"capa", b"eof", b"capa", b"psync2"],
    )?;
    if reply.starts_with('-') {
        log::notice(&format!(
            "(Non critical) Master does not understand REPLCONF capa: {reply}"
        ));
    }

    // PSYNC with what we hold (our own history after REPLICAOF on a
    // master, or the last master's), or ask for a full sync.
    let (replid, from) = {
        let st = srv.repl.stream.lock();
        (st.replid.clone(), st.offset + 1)
    };
    let has_history = srv.repl.has_history.load(SeqCst);
    let handover = srv.repl.failover_psync.load(SeqCst);
    let reply = if handover {
        let from = from.to_string();
        let reply = conn.call(
            srv,
            generation,
            &[b"PSYNC", replid.as_bytes(), from.as_bytes(), b"FAILOVER"],
        )?;
        super::failover::psync_answered(srv, reply.starts_with("+CONTINUE"));
        if !reply.starts_with("+CONTINUE") {
            return Err(format!("Failover target rejected PSYNC FAILOVER: {reply}"));
        }
        reply
    } else if has_history {
        let from = from.to_string();
        conn.call(
            srv,
            generation,
            &[b"PSYNC", replid.as_bytes(), from.as_bytes()],
        )?
    } else {
        log::notice("Partial resynchronization not possible (no cached master)");
        conn.call(srv, generation, &[b"PSYNC", b"?", b"-1"])?
    };
    if let Some(rest) = reply.strip_prefix("+FULLRESYNC") {
        let mut parts = rest.split_whitespace();
        let id = parts.next().unwrap_or_default().to_string();
        let offset: u64 = parts
            .next()
            .and_then(|o| o.parse().ok())
            .ok_or_else(|| format!("Bad FULLRESYNC reply from master: '{reply}'"))?;
        if id.len() != 40 {
            return Err(format!("Bad FULLRESYNC reply from master: '{reply}'"));
        }
        log::notice(&format!("Full resync from master: {id}:{offset}"));
        full_sync(srv, generation, &mut conn, &id, offset)?;
        *master = Some(MasterClient::new(srv, PeerAddr::Tcp(addr)));
    } else if let Some(rest) = reply.strip_prefix("+CONTINUE") {
        log::notice("Successful partial resynchronization with master.");
        let new_id = rest.trim();
        let mut st = srv.repl.stream.lock();
        if new_id.len() == 40 && new_id != st.replid {
            st.replid2 = std::mem::replace(&mut st.replid, new_id.to_string());
            st.second_offset = st.offset as i64 + 1;
            log::notice(&format!("Master replication ID changed to {new_id}"));
            // Our replicas must learn the new ID.
            st.disconnect_replicas();
        }
        drop(st);
        super::ensure_backlog(&srv.repl, srv.config.repl_backlog_size() as usize);
        log::notice("MASTER <-> REPLICA sync: Master accepted a Partial Resynchronization.");
        if master.is_none() {
            // The first link since a restart: the stream continues in the
            // database the saved file named.
            let mut mc = MasterClient::new(srv, PeerAddr::Tcp(addr));
            let db = srv.repl.restored_stream_db.swap(-1, SeqCst);
            if db >= 0 && (db as usize) < srv.keyspace.num_dbs() {
                mc.client.db = db as usize;
            }
            *master = Some(mc);
        }
    } else if reply.starts_with("-NOMASTERLINK") || reply.starts_with("-LOADING") {
        return Err(format!(
            "Master is currently unable to PSYNC but should be in the future: {reply}"
        ));
    } else {
        return Err(format!("Unexpected reply to PSYNC from master: {reply}"));
    }
    srv.repl.has_history.store(true, SeqCst);
    let Some(mc) = master.as_mut() else {
        return Err("no master client".into());
    };
    set_state(srv, LinkState::Connected);
    if let Some(l) = srv.repl.link.lock().as_mut() {
        l.down_since_ms = 0;
    }
    let listed = ListedMaster::register(srv, mc, &conn.tcp, addr);
    let streamed = stream(srv, generation, &mut conn, mc);
    drop(listed);
    streamed
}

/// The master link as CLIENT LIST shows it (flag `M`, a new id per link,
/// as Redis creates its master client per link). CLIENT KILL reaches it by
/// shutting the socket down, which ends the link; it is retried.
struct ListedMaster<'a> {
    srv: &'a ServerState,
    info: Arc<ClientInfo>,
}

impl<'a> ListedMaster<'a> {
    fn register(
        srv: &'a ServerState,
        mc: &mut MasterClient,
        sock: &TcpStream,
        addr: std::net::SocketAddr,
    ) -> ListedMaster<'a> {
        use std::os::fd::AsRawFd;
        let id = srv.clients.next_id();
        let laddr = sock.local_addr().unwrap_or(addr);
        let info = Arc::new(ClientInfo::new(
            id,
            PeerAddr::Tcp(addr),
            PeerAddr::Tcp(laddr),
            sock.as_raw_fd(),
            unix_ms(),
        ));
        info.is_master.store(true, Relaxed);
        info.db.store(mc.client.db, Relaxed);
        mc.client.id = id;
        mc.client.info = info.clone();
        srv.clients.register(info.clone());
        ListedMaster { srv, info }
    }
}

impl Drop for ListedMaster<'_> {
    fn drop(&mut self) {
        // (Before the socket closes: CLIENT KILL must not shut down a
        // descriptor that another socket may reuse.)
        self.info.mark_closed();
        self.srv.clients.unregister(self.info.id);
    }
}

/// Receives the snapshot and loads it in place of the data.
fn full_sync(
    srv: &ServerState,
    generation: u64,
    conn: &mut Conn,
    replid: &str,
    offset: u64,
) -> Result<(), String> {
    set_state(srv, LinkState::Transfer);
    let head = conn.line(srv, generation)?;
    let Some(head) = head.strip_prefix('$') else {
        return Err(format!(
            "Bad protocol from MASTER, the first byte is not '$' (we received '{head}'), are you sure the host and port are right?"
        ));
    };
    let mark = head.strip_prefix("EOF:").map(|m| m.as_bytes().to_vec());
    let size: i64 = match &mark {
        Some(m) if m.len() == 40 => -1,
        Some(_) => return Err("Bad EOF mark from MASTER".into()),
        None => head
            .parse()
            .map_err(|_| format!("Bad bulk length from MASTER: {head}"))?,
    };
    if let Some(l) = srv.repl.link.lock().as_mut() {
        l.transfer_size = size;
        l.transfer_read = 0;
    }
    log::notice(&match size {
        -1 => "MASTER <-> REPLICA sync: receiving streamed RDB from master with EOF to disk"
            .to_string(),
        n => format!("MASTER <-> REPLICA sync: receiving {n} bytes from master to disk"),
    });
    // With `repl-diskless-load disabled` (the default) the payload goes to
    // a temporary file as it arrives, as Redis writes it, so a transfer
    // that never ends fills the disk rather than memory; otherwise it is
    // gathered in memory.
    // `on-empty-db` loads from the socket only into an empty data set;
    // `swapdb` keeps the old data aside until the new one has loaded.
    let mode = srv.config.repl_diskless_load();
    let to_disk = mode == "disabled"
        || (mode == "on-empty-db" && !crate::server::persist::data_is_empty(srv));
    let swap = mode == "swapdb";
    let path = crate::server::persist::rdb_path(srv);
    let tmp = path.with_file_name(format!(
        "temp-{}.{}.rdb",
        unix_ms() / 1000,
        std::process::id()
    ));
    let mut file = if to_disk {
        Some(std::fs::File::create(&tmp).map_err(|e| {
            format!("Opening the temp file needed for MASTER <-> REPLICA synchronization: {e}")
        })?)
    } else {
        None
    };
    let received = receive_payload(srv, generation, conn, mark.as_deref(), size, &mut file);
    let rdb = match (received, file) {
        (Err(e), _) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        (Ok(rdb), None) => rdb,
        (Ok(_), Some(f)) => {
            // As Redis, the received file becomes the dump file.
            let written = f
                .sync_all()
                .and_then(|_| std::fs::rename(&tmp, &path))
                .and_then(|_| std::fs::read(&path));
            match written {
                Ok(rdb) => rdb,
                Err(e) => {
                    let _ = std::fs::remove_file(&tmp);
                    return Err(format!(
                        "Failed trying to rename the temp DB into {} in MASTER <-> REPLICA synchronization: {e}",
                        path.display()
                    ));
                }
            }
        }
    };
    // A swapdb load of the history the replica already follows (its master
    // ran past its backlog, say) goes beside the old data, which keeps
    // serving reads meanwhile, as Redis 7's async loading; one from a new
    // history does not, as the old data then stands for another data set.
    // (`swapdb` always receives into memory.)
    let same_history = swap && srv.repl.stream.lock().replid == replid;
    if same_history {
        let _applying = srv.repl.quiesce();
        return load_aside(srv, &rdb, replid, offset);
    }
    if !swap {
        log::notice("MASTER <-> REPLICA sync: Flushing old data");
    }
    let _applying = srv.repl.quiesce();
    {
        // Our replicas resynchronize with the new history.
        let mut st = srv.repl.stream.lock();
        st.disconnect_replicas();
    }
    let status = &srv.persistence;
    status.loading.store(true, SeqCst);
    status.loading_started_s.store(unix_ms() / 1000, Relaxed);
    let kept = if swap {
        log::notice("MASTER <-> REPLICA sync: Setting the current data aside (swapdb)");
        Some(crate::server::persist::set_aside_data(srv))
    } else {
        crate::server::persist::empty_data_then(srv, srv.config.replica_lazy_flush());
        None
    };
    log::notice("MASTER <-> REPLICA sync: Loading DB in memory");
    let loaded = crate::server::persist::load_image(srv, &rdb, false);
    status.loading.store(false, SeqCst);
    match loaded {
        Ok(report) => {
            log::notice(&format!(
                "Done loading RDB, keys loaded: {}, keys expired: {}.",
                report.keys_loaded, report.keys_expired
            ));
            if let Some(old) = kept {
                log::notice("MASTER <-> REPLICA sync: Discarding the data set aside");
                crate::server::lazyfree::free_later(old);
            }
        }
        Err(e) => {
            match kept {
                Some(old) => {
                    log::warning(
                        "MASTER <-> REPLICA sync: Restoring the data set aside after a failed load",
                    );
                    crate::server::persist::restore_data(srv, old);
                }
                None => crate::server::persist::empty_data(srv),
            }
            return Err(format!(
                "Failed trying to load the MASTER synchronization DB from socket: {e}"
            ));
        }
    }
    follow_new_history(srv, replid, offset);
    Ok(())
}

/// After a full sync: the replica's position is the snapshot's.
fn follow_new_history(srv: &ServerState, replid: &str, offset: u64) {
    let mut st = srv.repl.stream.lock();
    st.replid = replid.to_string();
    st.replid2 = super::NO_REPLID.to_string();
    st.second_offset = -1;
    st.offset = offset;
    st.backlog = Some(super::Backlog::new(srv.config.repl_backlog_size() as usize));
    drop(st);
    // (The master's stream names its database before its first command.)
    srv.repl.master_stream_db.store(0, SeqCst);
    srv.repl.restored_stream_db.store(-1, SeqCst);
    log::notice("MASTER <-> REPLICA sync: Finished with success");
}

/// Loads the snapshot beside the live data, which clients keep reading
/// (INFO shows `async_loading:1`; commands flagged no-async-loading get
/// -LOADING), then swaps it in at once. A load that fails leaves the old
/// data as it was.
fn load_aside(srv: &ServerState, rdb: &[u8], replid: &str, offset: u64) -> Result<(), String> {
    let status = &srv.persistence;
    status.loading_started_s.store(unix_ms() / 1000, Relaxed);
    status.async_loading.store(true, SeqCst);
    log::notice("MASTER <-> REPLICA sync: Loading DB in memory beside the current data (async loading, swapdb)");
    let loaded = crate::server::persist::load_image_aside(srv, rdb);
    status.async_loading.store(false, SeqCst);
    let swapped = loaded
        .map_err(|e| e.to_string())
        .and_then(|(staged, report)| {
            log::notice(&format!(
                "Done loading RDB, keys loaded: {}, keys expired: {}.",
                report.keys_loaded, report.keys_expired
            ));
            // Our replicas resynchronize with the new data.
            srv.repl.stream.lock().disconnect_replicas();
            log::notice("MASTER <-> REPLICA sync: Swapping the current data with the loaded data");
            crate::server::persist::swap_in(srv, staged)
        });
    if let Err(e) = swapped {
        log::warning(
            "MASTER <-> REPLICA sync: Discarding the half-loaded data, keeping the current data",
        );
        return Err(format!(
            "Failed trying to load the MASTER synchronization DB from socket: {e}"
        ));
    }
    follow_new_history(srv, replid, offset);
    Ok(())
}

/// Reads a snapshot payload of `size` bytes, or up to the EOF `mark`, into
/// `file` when there is one (the returned bytes are then empty) or into
/// memory. The first bytes must be an RDB signature: a master that answers
/// something else is dropped at once, not after it has sent gigabytes.
fn receive_payload(
    srv: &ServerState,
    generation: u64,
    conn: &mut Conn,
    mark: Option<&[u8]>,
    size: i64,
    file: &mut Option<std::fs::File>,
) -> Result<Vec<u8>, String> {
    const SIGNATURE: usize = 9;
    let mut rdb = Vec::new();
    let mut head: Vec<u8> = Vec::with_capacity(SIGNATURE);
    // The last bytes received, where the EOF mark is looked for.
    let mut tail: Vec<u8> = Vec::new();
    let mut received: u64 = 0;
    loop {
        let done = match mark {
            Some(m) => tail.len() >= m.len() && tail[tail.len() - m.len()..] == m[..],
            None => received as i64 >= size,
        };
        if done {
            break;
        }
        if conn.buf.is_empty() {
            conn.fill(srv, generation)?;
        }
        let take = match mark {
            Some(_) => conn.buf.len(),
            None => conn.buf.len().min((size - received as i64) as usize),
        };
        // (With an EOF mark the stream after it waits for our first ACK,
        // so nothing past the mark arrives in the same read.)
        let chunk = &conn.buf[..take];
        if head.len() < SIGNATURE {
            let want = (SIGNATURE - head.len()).min(chunk.len());
            head.extend_from_slice(&chunk[..want]);
            let ok = head.len() < 5 && b"REDIS".starts_with(&head)
                || head.starts_with(b"REDIS") && head[5..].iter().all(u8::is_ascii_digit);
            if !ok {
                return Err(
                    "MASTER <-> REPLICA sync: the payload is not an RDB file (wrong signature)"
                        .into(),
                );
            }
        }
        match file.as_mut() {
            Some(f) => f.write_all(chunk).map_err(|e| {
                format!("Write error or short write writing to the DB dump file needed for MASTER <-> REPLICA synchronization: {e}")
            })?,
            None => rdb.extend_from_slice(chunk),
        }
        if let Some(m) = mark {
            tail.extend_from_slice(chunk);
            if tail.len() > m.len() {
                tail.drain(..tail.len() - m.len());
            }
        }
        received += take as u64;
        srv.repl
            .net_repl_input_bytes
            .fetch_add(take as u64, Relaxed);
        conn.buf.drain(..take);
        if let Some(l) = srv.repl.link.lock().as_mut() {
            l.transfer_read = received;
            l.transfer_last_io_ms = unix_ms();
        }
    }
    if let Some(m) = mark {
        let keep = received.saturating_sub(m.len() as u64);
        match file.as_mut() {
            Some(f) => f.set_len(keep).map_err(|e| {
                format!("Failed trying to truncate the DB dump file needed for MASTER <-> REPLICA synchronization: {e}")
            })?,
            None => rdb.truncate(keep as usize),
        }
    }
    Ok(rdb)
}

/// Applies the master's stream until the link drops or is replaced.
fn stream(
    srv: &ServerState,
    generation: u64,
    conn: &mut Conn,
    mc: &mut MasterClient,
) -> Result<(), String> {
    let lanes = srv.repl.lanes(srv);
    let result = route_stream(srv, generation, conn, mc, lanes);
    // What was routed is applied before the link counts as ended (a
    // promotion, a new sync or the next link starts from applied data).
    lanes.drain();
    result
}

/// Reads the master's commands and routes them to the apply lanes (or runs
/// them on this thread: the barriers of [`super::apply`]), forwarding each
/// one's bytes to this server's stream as it is routed.
fn route_stream(
    srv: &ServerState,
    generation: u64,
    conn: &mut Conn,
    mc: &mut MasterClient,
    lanes: &super::apply::Lanes,
) -> Result<(), String> {
    use tessera_resp::request::{Limits, RequestParser};
    let mut parser = RequestParser::new();
    let limits = Limits {
        proto_max_bulk_len: u64::MAX,
    };
    // A transaction the link was cut in the middle of is resent whole
    // (the offset stopped before its MULTI): forget what was queued.
    if mc.client.multi.active {
        crate::commands::multi::discard_transaction(srv, &mut mc.client);
    }
    let mut batches: Vec<super::apply::Batch> =
        (0..lanes.count()).map(|_| Default::default()).collect();
    // Bytes of a transaction applied at its EXEC.
    let mut in_multi: Vec<u8> = Vec::new();
    let mut last_ack = Instant::now() - Duration::from_secs(2);
    let mut last_io = Instant::now();
    let timeout = conn.timeout;
    loop {
        if last_ack.elapsed() >= Duration::from_secs(1) {
            // (An acknowledged offset is applied, not merely routed.)
            lanes.drain();
            let offset = srv.repl.stream.lock().offset.to_string();
            conn.send(&[b"REPLCONF", b"ACK", offset.as_bytes()])?;
            last_ack = Instant::now();
        }
        if srv.repl.generation.load(SeqCst) != generation {
            return Ok(());
        }
        let mut pos = 0;
        {
            let _routing = srv.repl.apply_lock.lock();
            if srv.repl.generation.load(SeqCst) != generation {
                return Ok(());
            }
            while pos < conn.buf.len() {
                let found = match parser.parse(&conn.buf[pos..], &limits, false) {
                    Ok(found) => found,
                    Err(e) => {
                        // (What was read before is in the stream: applied.)
                        lanes.submit(&mut batches);
                        return Err(format!(
                            "Protocol error from MASTER: {}",
                            String::from_utf8_lossy(e.message())
                        ));
                    }
                };
                let Some((kind, consumed)) = found else {
                    break;
                };
                let args = crate::server::conn::request_args(kind, &parser, &conn.buf[pos..]);
                let bytes = &conn.buf[pos..pos + consumed];
                let getack = crate::commands::replication::is_getack(&args);
                if getack {
                    lanes.submit(&mut batches);
                    lanes.drain();
                    let offset = srv.repl.stream.lock().offset.to_string();
                    send_command(
                        &mut conn.sock,
                        &conn.repl,
                        &[b"REPLCONF".as_slice(), b"ACK", offset.as_bytes()],
                    )?;
                } else if !args.is_empty() {
                    let lane = if mc.client.multi.active {
                        None
                    } else {
                        lanes.lane_for(&args)
                    };
                    match lane {
                        Some(i) => batches[i].push(mc.client.db, &args),
                        None => {
                            lanes.submit(&mut batches);
                            lanes.drain();
                            crate::server::dispatch::execute_now(
                                srv,
                                &mut mc.client,
                                &mut mc.out,
                                &args,
                            );
                            mc.out.buf.clear();
                        }
                    }
                }
                if mc.client.multi.active {
                    in_multi.extend_from_slice(bytes);
                } else {
                    let mut st = srv.repl.stream.lock();
                    if !in_multi.is_empty() {
                        st.append(&std::mem::take(&mut in_multi));
                    }
                    st.append(bytes);
                }
                pos += consumed;
            }
            // (Handed over before the lock is released: a quiesce then
            // finds every routed command in a lane, and the stream's
            // database as of the offset.)
            lanes.submit(&mut batches);
            srv.repl.master_stream_db.store(mc.client.db as i64, SeqCst);
        }
        if pos > 0 {
            if let Some(l) = srv.repl.link.lock().as_mut() {
                l.read_offset += pos as u64;
            }
        }
        conn.buf.drain(..pos);
        match conn_fill_once(conn, srv, generation) {
            Ok(true) => last_io = Instant::now(),
            Ok(false) => {
                if last_io.elapsed() > timeout {
                    return Err("MASTER timeout: no data nor PING received...".into());
                }
            }
            Err(e) => return Err(format!("Connection with master lost: {e}")),
        }
    }
}

/// Writes a command to the master (a function of the link's parts, so
/// it can be called while the read buffer is borrowed).
fn send_command(
    sock: &mut LinkIo,
    repl: &super::Replication,
    argv: &[&[u8]],
) -> Result<(), String> {
    let mut bytes = Vec::new();
    crate::journal::encode_command(argv, &mut bytes);
    repl.link_output_bytes
        .fetch_add(bytes.len() as u64, Relaxed);
    sock.write_all(&bytes)
        .map_err(|e| format!("Error writing to MASTER: {e}"))
}

/// One read of at most the socket's read timeout: whether bytes arrived.
fn conn_fill_once(conn: &mut Conn, srv: &ServerState, generation: u64) -> Result<bool, String> {
    let mut chunk = [0u8; 64 * 1024];
    if srv.repl.generation.load(SeqCst) != generation {
        return Ok(false);
    }
    match conn.sock.read(&mut chunk) {
        Ok(0) => Err("the master closed the connection".into()),
        Ok(n) => {
            conn.buf.extend_from_slice(&chunk[..n]);
            srv.repl.link_input_bytes.fetch_add(n as u64, Relaxed);
            srv.repl.net_repl_input_bytes.fetch_add(n as u64, Relaxed);
            if let Some(l) = srv.repl.link.lock().as_mut() {
                l.last_io_ms = unix_ms();
            }
            Ok(true)
        }
        Err(e)
            if e.kind() == std::io::ErrorKind::WouldBlock
                || e.kind() == std::io::ErrorKind::TimedOut
                || e.kind() == std::io::ErrorKind::Interrupted =>
        {
            Ok(false)
        }
        Err(e) => Err(e.to_string()),
    }
}
