//! Reading a server's effects stream (what it propagates to replicas and the AOF) in tests.
//!
//! * redis-server: a connection sends `SYNC` (what an old replica sends), skips the RDB payload
//!   and then reads the propagated commands as they come.
//! * Tessera: `DEBUG EFFECTS START` captures the same stream (the server must allow DEBUG from
//!   local connections: start it with [`EFFECTS_ARGS`]), read with `DEBUG EFFECTS READ`.
//!
//! Either way the caller marks where it wants to stop: [`EffectsReader::mark`] publishes on a
//! channel of its own (PUBLISH propagates to replicas), and [`EffectsReader::until_mark`] reads
//! up to that message. The reader keeps the stream's SELECT state, so each op comes with its
//! database, and drops the master's keep-alive PINGs.
#![allow(dead_code)]

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::{Frame, RawClient, ServerKind, TestServer};

/// Extra arguments a server needs for its stream to be read.
pub const EFFECTS_ARGS: &[&str] = &["--enable-debug-command", "local"];
/// Extra arguments for a reference redis-server whose stream is read with SYNC (a disk-based
/// transfer starts at once; keep-alive PINGs rare).
pub const REDIS_SYNC_ARGS: &[&str] = &[
    "--repl-diskless-sync",
    "no",
    "--repl-ping-replica-period",
    "3600",
];
/// The channel of the marks.
pub const MARK_CHANNEL: &str = "__effects_mark__";

/// One propagated command (MULTI, EXEC and SELECT included as they came).
pub type Command = Vec<Vec<u8>>;

enum Source {
    /// A SYNC connection to redis-server: bytes not yet parsed.
    Sync { stream: TcpStream, buf: Vec<u8> },
    /// Tessera's capture, read over this connection.
    Capture { conn: RawClient, buf: Vec<u8> },
}

pub struct EffectsReader {
    source: Source,
    marks: u64,
}

impl EffectsReader {
    /// Starts reading `server`'s stream from now on.
    pub fn attach(server: &TestServer) -> EffectsReader {
        let source = match server.kind() {
            ServerKind::Redis => Source::Sync {
                stream: sync_stream(server.port()),
                buf: Vec::new(),
            },
            ServerKind::Tessera => {
                let mut conn = server.raw();
                let reply = conn.call(&["DEBUG", "EFFECTS", "START"]);
                assert_eq!(
                    reply,
                    Frame::Simple("OK".into()),
                    "DEBUG EFFECTS START (is the server started with EFFECTS_ARGS?)"
                );
                Source::Capture {
                    conn,
                    buf: Vec::new(),
                }
            }
        };
        EffectsReader { source, marks: 0 }
    }

    /// Publishes the next mark through `conn` (a connection to the same server) and returns it;
    /// reads the PUBLISH reply.
    pub fn mark(&mut self, conn: &mut RawClient) -> String {
        self.marks += 1;
        let mark = self.marks.to_string();
        conn.call(&["PUBLISH", MARK_CHANNEL, &mark]);
        mark
    }

    /// The commands propagated before `mark`'s PUBLISH (which is consumed, with any SELECT
    /// right before it). Panics if the mark does not come within a generous timeout.
    pub fn until_mark(&mut self, mark: &str) -> Vec<Command> {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut out = Vec::new();
        loop {
            while let Some(cmd) = self.next_parsed() {
                if is_mark(&cmd, mark) {
                    // A SELECT just before the mark is the mark's own.
                    if out.last().is_some_and(|c: &Command| is_select(c)) {
                        out.pop();
                    }
                    return out;
                }
                if is_keepalive(&cmd) {
                    continue;
                }
                out.push(cmd);
            }
            assert!(
                Instant::now() < deadline,
                "mark {mark} not seen in the effects stream; so far: {}",
                out.iter().map(fmt).collect::<Vec<_>>().join(" | ")
            );
            self.fill();
        }
    }

    fn next_parsed(&mut self) -> Option<Command> {
        let buf = match &mut self.source {
            Source::Sync { buf, .. } | Source::Capture { buf, .. } => buf,
        };
        let (cmd, used) = parse_command(buf)?;
        buf.drain(..used);
        Some(cmd)
    }

    fn fill(&mut self) {
        match &mut self.source {
            Source::Sync { stream, buf } => {
                let mut chunk = [0u8; 64 * 1024];
                match stream.read(&mut chunk) {
                    Ok(0) => panic!("redis-server closed the SYNC connection"),
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => panic!("reading the SYNC stream: {e}"),
                }
            }
            Source::Capture { conn, buf } => match conn.call(&["DEBUG", "EFFECTS", "READ"]) {
                Frame::Bulk(bytes) => {
                    if bytes.is_empty() {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    buf.extend_from_slice(&bytes);
                }
                other => panic!("DEBUG EFFECTS READ answered {}", super::fmt_frame(&other)),
            },
        }
    }
}

fn is_mark(cmd: &Command, mark: &str) -> bool {
    cmd.len() == 3
        && cmd[0].eq_ignore_ascii_case(b"publish")
        && cmd[1] == MARK_CHANNEL.as_bytes()
        && cmd[2] == mark.as_bytes()
}

fn is_select(cmd: &Command) -> bool {
    cmd.len() == 2 && cmd[0].eq_ignore_ascii_case(b"select")
}

/// The master's PING to its replicas (not an effect of any command).
fn is_keepalive(cmd: &Command) -> bool {
    cmd.len() == 1 && cmd[0] == b"ping"
}

/// Connects as an old-style replica: SYNC, then skips the RDB payload (and the newlines a
/// master sends while it prepares it).
fn sync_stream(port: u16) -> TcpStream {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect for SYNC");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    stream.write_all(b"SYNC\r\n").expect("send SYNC");
    let mut header = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        stream.read_exact(&mut byte).expect("SYNC reply");
        if header.is_empty() && byte[0] == b'\n' {
            continue;
        }
        header.push(byte[0]);
        if header.ends_with(b"\r\n") {
            break;
        }
    }
    let text = String::from_utf8_lossy(&header);
    let len: usize = text
        .trim()
        .strip_prefix('$')
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("SYNC answered {text:?}"));
    let mut rdb = vec![0u8; len];
    stream.read_exact(&mut rdb).expect("RDB payload");
    stream
}

/// One RESP array of bulk strings from the front of `buf`: the command and the bytes it took,
/// or None when it is not all there yet.
pub fn parse_command(buf: &[u8]) -> Option<(Command, usize)> {
    fn line(buf: &[u8], at: usize) -> Option<(&[u8], usize)> {
        let end = buf[at..].windows(2).position(|w| w == b"\r\n")? + at;
        Some((&buf[at..end], end + 2))
    }
    fn number(bytes: &[u8]) -> usize {
        std::str::from_utf8(bytes)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad length in the effects stream: {bytes:?}"))
    }
    let (head, mut at) = line(buf, 0)?;
    assert_eq!(
        head.first(),
        Some(&b'*'),
        "effects stream: expected an array, got {head:?}"
    );
    let n = number(&head[1..]);
    let mut cmd = Vec::with_capacity(n);
    for _ in 0..n {
        let (head, next) = line(buf, at)?;
        assert_eq!(
            head.first(),
            Some(&b'$'),
            "effects stream: expected a bulk, got {head:?}"
        );
        let len = number(&head[1..]);
        if buf.len() < next + len + 2 {
            return None;
        }
        cmd.push(buf[next..next + len].to_vec());
        at = next + len + 2;
    }
    Some((cmd, at))
}

/// A command as one readable line.
pub fn fmt(cmd: &Command) -> String {
    super::fmt_command(cmd)
}

/// Compares two streams op by op. Arguments must be equal, except millisecond timestamps
/// (both look like Unix ms, after 2001): those may differ by `tolerance_ms`, since the two
/// servers read their clocks at different moments. Returns the first difference.
pub fn compare(reference: &[Command], target: &[Command], tolerance_ms: i64) -> Result<(), String> {
    // The ops around the first difference, each cut to a readable length.
    let show = |s: &[Command], i: usize| {
        let from = i.saturating_sub(3);
        let to = (i + 4).min(s.len());
        let mut lines: Vec<String> = s
            .get(from..to)
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(k, c)| {
                let mut line = fmt(c);
                if line.len() > 300 {
                    let mut cut = 300;
                    while !line.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    line.truncate(cut);
                    line.push_str("...");
                }
                format!("{}{line}", if from + k == i { ">> " } else { "   " })
            })
            .collect();
        if to <= i {
            lines.push(">> (nothing)".into());
        }
        lines.join("\n    ")
    };
    let differs = |i: usize| {
        Err(format!(
            "first difference at op {i} (of {} and {})\n  redis:\n    {}\n  target:\n    {}",
            reference.len(),
            target.len(),
            show(reference, i),
            show(target, i)
        ))
    };
    for i in 0..reference.len().max(target.len()) {
        let (Some(r), Some(t)) = (reference.get(i), target.get(i)) else {
            return differs(i);
        };
        if r.len() != t.len() || !r.iter().zip(t).all(|(a, b)| same_arg(a, b, tolerance_ms)) {
            return differs(i);
        }
    }
    Ok(())
}

fn same_arg(a: &[u8], b: &[u8], tolerance_ms: i64) -> bool {
    if a == b {
        return true;
    }
    let ms = |x: &[u8]| {
        std::str::from_utf8(x)
            .ok()
            .and_then(|s| s.parse::<i64>().ok())
            .filter(|&v| v > 1_000_000_000_000)
    };
    match (ms(a), ms(b)) {
        (Some(x), Some(y)) => (x - y).abs() <= tolerance_ms,
        _ => false,
    }
}
