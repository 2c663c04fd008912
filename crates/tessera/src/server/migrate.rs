//! MIGRATE's connections to other servers, kept open between calls as
//! Redis keeps them (`migrate_cached_sockets` in INFO): at most 64, each
//! closed after 10 seconds unused.
//!
//! The I/O is blocking with the command's timeout, as in Redis, where
//! MIGRATE stops the whole server until the target answers. Here it stops
//! only the worker thread of the client that sent it. A socket in use is
//! out of the cache, so two threads migrating to the same target at once
//! each get a connection of their own.

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// The most sockets kept (Redis's MIGRATE_SOCKET_CACHE_ITEMS).
const MAX_CACHED: usize = 64;
/// How long an unused socket is kept (MIGRATE_SOCKET_CACHE_TTL).
const IDLE_TTL: Duration = Duration::from_secs(10);
/// Writes go out in pieces of this size, each with the full timeout.
const WRITE_CHUNK: usize = 64 * 1024;
/// A reply line longer than this is cut (Redis reads into 1 KiB buffers).
const MAX_LINE: usize = 1024;

/// An open connection to a target and what the target remembers of it.
pub struct Link {
    stream: TcpStream,
    name: String,
    /// The database the target has selected on this connection, if known.
    pub selected_db: Option<i64>,
    /// Bytes read past the last reply line.
    pending: Vec<u8>,
    last_use: Instant,
}

/// Why no link could be opened. Redis connects without blocking and sees
/// a refusal only when it first writes, so a refused connection reads as
/// a failed write there; only a name that does not resolve or a connect
/// that times out is a failure to connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unreachable {
    /// No address for the name, or no answer within the timeout.
    Connecting,
    /// Refused (or a port outside 1..65535): Redis's "writing" error.
    Refused,
}

/// Why an exchange with the target failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkError {
    /// The timeout passed (no retry then, as Redis's ETIMEDOUT).
    TimedOut,
    /// Any other failure: closed, reset, refused.
    Failed,
}

impl From<std::io::Error> for LinkError {
    fn from(e: std::io::Error) -> LinkError {
        match e.kind() {
            ErrorKind::TimedOut | ErrorKind::WouldBlock => LinkError::TimedOut,
            _ => LinkError::Failed,
        }
    }
}

impl Link {
    /// Sends all of `bytes` in 64 KiB pieces, each within `timeout`.
    pub fn send(&mut self, bytes: &[u8], timeout: Duration) -> Result<(), LinkError> {
        self.stream.set_write_timeout(Some(timeout))?;
        for piece in bytes.chunks(WRITE_CHUNK) {
            self.stream.write_all(piece)?;
        }
        Ok(())
    }

    /// Reads one reply line (without its CRLF) within `timeout`; a line
    /// longer than 1 KiB is cut there, the rest discarded.
    pub fn read_line(&mut self, timeout: Duration) -> Result<Vec<u8>, LinkError> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
                let mut line: Vec<u8> = self.pending.drain(..=end).collect();
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                line.truncate(MAX_LINE - 1);
                return Ok(line);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(LinkError::TimedOut);
            }
            self.stream.set_read_timeout(Some(left))?;
            let mut buf = [0u8; 4096];
            let n = self.stream.read(&mut buf)?;
            if n == 0 {
                return Err(LinkError::Failed);
            }
            self.pending.extend_from_slice(&buf[..n]);
            // Of an over-long line only its first 1 KiB is kept (what is
            // returned); what follows is read on to its end, not stored.
            if self.pending.len() > MAX_LINE && !buf[..n].contains(&b'\n') {
                self.pending.truncate(MAX_LINE);
            }
        }
    }
}

/// The cache of idle links, by "host:port".
#[derive(Default)]
pub struct MigrateSockets {
    idle: Mutex<HashMap<String, Link>>,
}

impl MigrateSockets {
    /// An idle cached link to `host:port`, or a new one connected within
    /// `timeout`. The link is the caller's until it gives it back.
    pub fn take(&self, host: &[u8], port: &[u8], timeout: Duration) -> Result<Link, Unreachable> {
        let name = format!(
            "{}:{}",
            String::from_utf8_lossy(host),
            String::from_utf8_lossy(port)
        );
        if let Some(mut link) = self.idle.lock().remove(&name) {
            link.last_use = Instant::now();
            return Ok(link);
        }
        let stream = connect(
            &String::from_utf8_lossy(host),
            leading_number(port),
            timeout,
        )?;
        let _ = stream.set_nodelay(true);
        Ok(Link {
            stream,
            name,
            selected_db: None,
            pending: Vec::new(),
            last_use: Instant::now(),
        })
    }

    /// Returns a link that is still good to the cache. When the cache is
    /// full, a link at random makes room (as Redis does); when another
    /// link to the same target came back meanwhile, this one is closed.
    pub fn give_back(&self, mut link: Link) {
        link.last_use = Instant::now();
        link.pending.clear();
        let mut idle = self.idle.lock();
        if idle.contains_key(&link.name) {
            return;
        }
        if idle.len() >= MAX_CACHED {
            let victim = rand::random::<usize>() % idle.len();
            if let Some(name) = idle.keys().nth(victim).cloned() {
                idle.remove(&name);
            }
        }
        idle.insert(link.name.clone(), link);
    }

    /// Closes the links unused for 10 seconds (serverCron's
    /// migrateCloseTimedoutSockets).
    pub fn close_idle(&self) {
        self.idle
            .lock()
            .retain(|_, link| link.last_use.elapsed() <= IDLE_TTL);
    }

    /// INFO `migrate_cached_sockets`.
    pub fn cached(&self) -> usize {
        self.idle.lock().len()
    }
}

/// Closes unused MIGRATE links once a second.
pub async fn close_idle_cron(srv: std::sync::Arc<super::state::ServerState>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        srv.migrate_sockets.close_idle();
    }
}

/// The port as C's atoi reads it: leading digits, 0 when there are none.
fn leading_number(port: &[u8]) -> u32 {
    port.iter()
        .take_while(|b| b.is_ascii_digit())
        .fold(0u32, |n, d| {
            n.saturating_mul(10).saturating_add((d - b'0') as u32)
        })
}

/// Connects to the first address of `host` that answers within `timeout`.
fn connect(host: &str, port: u32, timeout: Duration) -> Result<TcpStream, Unreachable> {
    let port = match u16::try_from(port) {
        Ok(p) if p != 0 => p,
        _ => return Err(Unreachable::Refused),
    };
    let deadline = Instant::now() + timeout;
    let addrs = (host, port)
        .to_socket_addrs()
        .map_err(|_| Unreachable::Connecting)?;
    let mut failure = Unreachable::Connecting;
    for addr in addrs {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Unreachable::Connecting);
        }
        match TcpStream::connect_timeout(&addr, left) {
            Ok(s) => return Ok(s),
            Err(e) if e.kind() == ErrorKind::TimedOut => return Err(Unreachable::Connecting),
            Err(_) => failure = Unreachable::Refused,
        }
    }
    Err(failure)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_read_as_atoi() {
        assert_eq!(leading_number(b"6379"), 6379);
        assert_eq!(leading_number(b"12ab"), 12);
        assert_eq!(leading_number(b"abc"), 0);
        assert_eq!(leading_number(b"99999"), 99999);
    }

    #[test]
    fn an_over_long_reply_line_is_cut_and_the_next_one_read() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port().to_string();
        let target = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let long = vec![b'x'; 100_000];
            s.write_all(&long).unwrap();
            s.write_all(b"\r\n+OK\r\n").unwrap();
        });
        let cache = MigrateSockets::default();
        let t = Duration::from_secs(10);
        let mut link = cache.take(b"127.0.0.1", port.as_bytes(), t).unwrap();
        let first = link.read_line(t).unwrap();
        assert_eq!(first, vec![b'x'; MAX_LINE - 1]);
        assert!(link.pending.len() <= MAX_LINE + 4096);
        assert_eq!(link.read_line(t).unwrap(), b"+OK");
        target.join().unwrap();
    }

    #[test]
    fn links_are_cached_by_target_and_expire() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port().to_string();
        let cache = MigrateSockets::default();
        let t = Duration::from_secs(5);
        let a = cache.take(b"127.0.0.1", port.as_bytes(), t).unwrap();
        drop(listener.accept());
        let b = cache.take(b"127.0.0.1", port.as_bytes(), t).unwrap();
        cache.give_back(a);
        cache.give_back(b);
        assert_eq!(cache.cached(), 1);
        let mut c = cache.take(b"127.0.0.1", port.as_bytes(), t).unwrap();
        assert_eq!(cache.cached(), 0);
        c.last_use = Instant::now() - IDLE_TTL - Duration::from_secs(1);
        cache.idle.lock().insert(c.name.clone(), c);
        cache.close_idle();
        assert_eq!(cache.cached(), 0);
        assert_eq!(
            cache.take(b"127.0.0.1", b"notaport", t).err(),
            Some(Unreachable::Refused)
        );
        assert_eq!(
            cache.take(b"", b"6379", t).err(),
            Some(Unreachable::Connecting)
        );
    }
}
