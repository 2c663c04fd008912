//! The cheapest server a RESP benchmark can talk to: one `recv` and one
//! `send` per readable socket, no parsing beyond counting requests, no
//! keyspace. `scripts/bench.py --section floor` runs it where Tessera would
//! run, so its CPU time per request is what the kernel's TCP path alone
//! costs on the machine: the least any server can spend per request, and so
//! the most any server can gain per core on redis-server there.
//!
//! Replies: `+PONG` to an inline `PING` (bench.py's readiness probe), and
//! for every other request, counted by the `*` that opens each multibulk
//! request (resp-benchmark's arguments never contain one), a nil (`$-1`, 5
//! bytes) or, with `--reply-bytes N`, a bulk string of N bytes, so a row whose
//! real reply is a 64-byte value copies as much as the real server would.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};

const LISTENER: u64 = u64::MAX;

fn main() {
    if let Err(e) = run() {
        eprintln!("noop-server: {e}");
        std::process::exit(1);
    }
}

fn option(args: &[String], name: &str) -> Option<String> {
    let i = args.iter().position(|a| a == name)?;
    args.get(i + 1).cloned()
}

fn run() -> io::Result<()> {
    // The same flags as tessera-server's, so bench.py can start either;
    // anything else it passes (--threads) is ignored.
    let args: Vec<String> = std::env::args().collect();
    let port: u16 = option(&args, "--port")
        .and_then(|p| p.parse().ok())
        .unwrap_or(6379);
    let bind = option(&args, "--bind").unwrap_or_else(|| "127.0.0.1".to_string());
    let reply = match option(&args, "--reply-bytes").and_then(|n| n.parse::<usize>().ok()) {
        Some(n) => {
            let mut r = format!("${n}\r\n").into_bytes();
            r.resize(r.len() + n, b'x');
            r.extend_from_slice(b"\r\n");
            r
        }
        None => b"$-1\r\n".to_vec(),
    };
    let listener = TcpListener::bind((bind.as_str(), port))?;
    listener.set_nonblocking(true)?;
    let epoll = Epoll::new()?;
    epoll.add(listener.as_raw_fd(), LISTENER)?;

    let mut conns: HashMap<u64, TcpStream> = HashMap::new();
    let mut input = vec![0u8; 64 * 1024];
    let mut output = Vec::with_capacity(64 * 1024);
    let mut ready = Vec::new();
    loop {
        epoll.wait(&mut ready)?;
        for &token in &ready {
            if token == LISTENER {
                accept_all(&listener, &epoll, &mut conns)?;
                continue;
            }
            let Some(stream) = conns.get_mut(&token) else {
                continue;
            };
            let keep = match stream.read(&mut input) {
                Ok(0) => false,
                Ok(n) => {
                    output.clear();
                    replies(&input[..n], &reply, &mut output);
                    stream.write_all(&output).is_ok()
                }
                Err(e) => {
                    e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::Interrupted
                }
            };
            if !keep {
                // Dropping the stream closes it, which also removes it from
                // the epoll set.
                conns.remove(&token);
            }
        }
    }
}

fn accept_all(
    listener: &TcpListener,
    epoll: &Epoll,
    conns: &mut HashMap<u64, TcpStream>,
) -> io::Result<()> {
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                stream.set_nodelay(true)?;
                // Non-blocking, so a spurious readiness report cannot stall
                // the loop; a reply is a few bytes, so a write never finds the
                // send buffer full (one that did would close the connection).
                stream.set_nonblocking(true)?;
                let token = stream.as_raw_fd() as u64;
                epoll.add(stream.as_raw_fd(), token)?;
                conns.insert(token, stream);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// What a server would answer to `data`, as cheaply as possible.
fn replies(data: &[u8], reply: &[u8], out: &mut Vec<u8>) {
    if data.starts_with(b"PING") {
        out.extend_from_slice(b"+PONG\r\n");
        return;
    }
    for _ in data.iter().filter(|&&b| b == b'*') {
        out.extend_from_slice(reply);
    }
}

/// A level-triggered epoll set: a readable socket is reported until it has
/// been read, so one `recv` per report is enough.
struct Epoll(RawFd);

impl Epoll {
    fn new() -> io::Result<Self> {
        // SAFETY: epoll_create1 takes no pointers; the result is checked.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Epoll(fd))
    }

    fn add(&self, fd: RawFd, token: u64) -> io::Result<()> {
        let mut event = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: token,
        };
        // SAFETY: `event` is a valid epoll_event for the duration of the call.
        if unsafe { libc::epoll_ctl(self.0, libc::EPOLL_CTL_ADD, fd, &mut event) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    fn wait(&self, ready: &mut Vec<u64>) -> io::Result<()> {
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; 1024];
        // SAFETY: `events` has room for the 1024 entries the kernel may fill.
        let n = unsafe { libc::epoll_wait(self.0, events.as_mut_ptr(), events.len() as i32, -1) };
        ready.clear();
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(())
            } else {
                Err(e)
            };
        }
        ready.extend(events[..n as usize].iter().map(|e| e.u64));
        Ok(())
    }
}
