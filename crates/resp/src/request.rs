//! Client request parsing, byte-for-byte compatible with redis-server 7.0.
//!
//! Clients send either multibulk requests (`*<n>\r\n` followed by `n` bulk
//! strings) or "inline" requests (a line of space separated words, as typed in
//! telnet). Real clients depend on the exact edge cases of Redis's parser
//! (what is accepted, what waits for more input, which error comes first), so
//! this module reproduces them deliberately, including the odd ones:
//!
//! * line searches behave like C's `strchr` on a NUL-terminated buffer: a NUL
//!   byte before the terminator means "no terminator yet", and the request
//!   then waits until the 64 KiB limit turns it into an error;
//! * the byte after the `\r` of a multibulk header and the two bytes after bulk
//!   data are skipped without being checked;
//! * the "too big" limits apply to everything buffered after the current
//!   position, so whether a long line is accepted depends on how the input was
//!   chunked, just as it does in Redis.
//!
//! The parser is resumable: the caller keeps one buffer per connection,
//! appends what it reads, and calls [`RequestParser::parse`] again. Progress
//! (arguments already located, how far a line was searched) is kept, so a
//! request is never rescanned and huge requests parse in linear time.

use std::fmt;

/// Longest header or inline line Redis buffers before giving up
/// (`PROTO_INLINE_MAX_SIZE`).
pub const PROTO_INLINE_MAX_SIZE: usize = 64 * 1024;

/// Redis's default `proto-max-bulk-len`.
pub const DEFAULT_PROTO_MAX_BULK_LEN: u64 = 512 * 1024 * 1024;

/// Unauthenticated clients may not make the server buffer big requests, so
/// that a port scan or a stray HTTP client cannot cost memory.
const UNAUTH_MAX_MULTIBULK: i64 = 10;
const UNAUTH_MAX_BULK: i64 = 16384;

/// Keeps a connection that once sent a giant request from pinning that much
/// argument bookkeeping for the rest of its life.
const RETAINED_ARG_CAPACITY: usize = 1024;

/// Server settings that affect parsing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `proto-max-bulk-len`: bulk strings longer than this are rejected.
    pub proto_max_bulk_len: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            proto_max_bulk_len: DEFAULT_PROTO_MAX_BULK_LEN,
        }
    }
}

/// A protocol error. Redis replies with it and closes the connection.
///
/// The message is the full error reply without the leading `-` or trailing
/// CRLF, e.g. `ERR Protocol error: invalid bulk length`. It is bytes rather
/// than a `String` because Redis echoes the offending byte verbatim in
/// `expected '$', got 'X'`, and that byte need not be valid UTF-8.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError(pub Vec<u8>);

impl ProtocolError {
    fn new(msg: &str) -> Self {
        ProtocolError(msg.as_bytes().to_vec())
    }

    /// The message bytes, ready to be sent as an error reply.
    pub fn message(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.0))
    }
}

impl std::error::Error for ProtocolError {}

/// What a complete request turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// Arguments are in [`RequestParser::arg_ranges`].
    Multibulk,
    /// Arguments are in [`RequestParser::inline_args`].
    Inline,
    /// A blank inline line, or a multibulk count `<= 0`: nothing to run, but
    /// the bytes are consumed.
    Empty,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Nothing of the current request has been parsed yet.
    Start,
    /// Waiting for the end of an inline line.
    Inline,
    /// The count line is parsed; reading bulk strings.
    Multibulk,
    /// The last call returned a request or an error; the next call starts a
    /// new request.
    Finished,
}

/// Outcome of searching a line terminator the way `strchr` would.
enum Line {
    Found(usize),
    /// No terminator before the end of the buffer or before a NUL byte.
    Missing,
}

/// Resumable parser for one connection's requests.
///
/// Usage: call [`parse`](Self::parse) with the connection's unconsumed input.
/// On `Ok(Some((kind, consumed)))` read the arguments (from
/// [`arg_ranges`](Self::arg_ranges) or [`inline_args`](Self::inline_args)),
/// then drop `consumed` bytes from the front of the buffer and call `parse`
/// again for the next request. On `Ok(None)` append more input and call again.
/// On `Err` reply with the error and close the connection.
///
/// Forgetting a completed request is implicit: the results stay readable until
/// the next `parse` call, which starts a new request (use
/// [`reset`](Self::reset) to drop them earlier, or to reuse the parser after
/// the buffer was replaced).
#[derive(Debug, Clone)]
pub struct RequestParser {
    phase: Phase,
    /// Multibulk: offset of the next header or bulk not yet consumed.
    pos: usize,
    /// Multibulk: bulk strings still to read.
    remaining: usize,
    /// Multibulk: length of the bulk whose data starts at `pos`, once its
    /// header has been read.
    bulk_len: Option<usize>,
    /// The current line search has established that `[line start, scanned)`
    /// holds neither the terminator nor a NUL.
    scanned: usize,
    /// The current line search hit a NUL: `strchr` can never get past it, so
    /// only the length limit can end the wait.
    nul_blocked: bool,
    /// Buffer length at the previous call, to notice a caller that shrank the
    /// buffer instead of appending (which would otherwise leave stale offsets).
    seen_len: usize,
    wanted: usize,
    args: Vec<(usize, usize)>,
    inline: Vec<Vec<u8>>,
    /// Bytes examined, to let tests prove that resuming never rescans.
    #[cfg(test)]
    work: usize,
}

impl Default for RequestParser {
    fn default() -> Self {
        Self::new()
    }
}

impl RequestParser {
    pub fn new() -> Self {
        RequestParser {
            phase: Phase::Start,
            pos: 0,
            remaining: 0,
            bulk_len: None,
            scanned: 0,
            nul_blocked: false,
            seen_len: 0,
            wanted: 0,
            args: Vec::new(),
            inline: Vec::new(),
            #[cfg(test)]
            work: 0,
        }
    }

    /// Drops any partial or completed request and starts afresh.
    pub fn reset(&mut self) {
        self.phase = Phase::Start;
        self.pos = 0;
        self.remaining = 0;
        self.bulk_len = None;
        self.scanned = 0;
        self.nul_blocked = false;
        self.seen_len = 0;
        self.wanted = 0;
        if self.args.capacity() > RETAINED_ARG_CAPACITY {
            self.args = Vec::new();
        } else {
            self.args.clear();
        }
        if self.inline.capacity() > RETAINED_ARG_CAPACITY {
            self.inline = Vec::new();
        } else {
            self.inline.clear();
        }
    }

    /// Parses the request at the start of `buf`.
    ///
    /// `buf` holds the unconsumed input, starting at the first byte of the
    /// current request; between calls that return `Ok(None)` the caller may
    /// only append to it. Returns `Ok(Some((kind, consumed)))` once a whole
    /// request is present, `Ok(None)` when more bytes are needed.
    ///
    /// `auth_required` is true while the client has not authenticated and the
    /// server requires it; it caps the sizes such a client may send.
    pub fn parse(
        &mut self,
        buf: &[u8],
        limits: &Limits,
        auth_required: bool,
    ) -> Result<Option<(Request, usize)>, ProtocolError> {
        if self.phase == Phase::Finished || buf.len() < self.seen_len {
            self.reset();
        }
        self.seen_len = buf.len();
        self.wanted = 0;
        let result = match self.phase {
            Phase::Start | Phase::Finished => match buf.first() {
                None => return Ok(None),
                Some(b'*') => self.parse_multibulk(buf, limits, auth_required),
                Some(_) => {
                    self.phase = Phase::Inline;
                    self.parse_inline(buf)
                }
            },
            Phase::Inline => self.parse_inline(buf),
            Phase::Multibulk => self.parse_multibulk(buf, limits, auth_required),
        };
        match &result {
            Ok(None) => {}
            Ok(Some(_)) | Err(_) => {
                self.phase = Phase::Finished;
                self.wanted = 0;
            }
        }
        result
    }

    /// For [`Request::Multibulk`]: the `(start, end)` byte range of each
    /// argument within the `buf` given to the last [`parse`](Self::parse).
    pub fn arg_ranges(&self) -> &[(usize, usize)] {
        &self.args
    }

    /// For [`Request::Inline`]: the arguments, with quotes and escapes
    /// processed.
    pub fn inline_args(&self) -> &[Vec<u8>] {
        &self.inline
    }

    /// The least number of further bytes the current partial request needs,
    /// or 0 when that is unknown (e.g. while waiting for a header line).
    ///
    /// Inside a bulk string this is the rest of the bulk plus its CRLF, i.e.
    /// a length the client merely claimed: use it to grow the read buffer as
    /// data arrives, capped by what is sensible, not to allocate up front.
    pub fn bytes_wanted(&self) -> usize {
        self.wanted
    }

    /// Searches `needle` from `start` like `strchr` on a NUL-terminated copy
    /// of `buf`, resuming where the previous search of the same line stopped.
    fn find_line_end(&mut self, buf: &[u8], start: usize, needle: u8) -> Line {
        if self.nul_blocked {
            return Line::Missing;
        }
        let from = self.scanned.max(start);
        let Some(rest) = buf.get(from..) else {
            return Line::Missing;
        };
        match memchr::memchr2(needle, 0, rest) {
            Some(i) => {
                #[cfg(test)]
                {
                    self.work += i + 1;
                }
                self.scanned = from + i;
                if rest[i] == needle {
                    Line::Found(from + i)
                } else {
                    self.nul_blocked = true;
                    Line::Missing
                }
            }
            None => {
                #[cfg(test)]
                {
                    self.work += rest.len();
                }
                self.scanned = buf.len();
                Line::Missing
            }
        }
    }

    fn start_new_line(&mut self, start: usize) {
        self.scanned = start;
        self.nul_blocked = false;
    }

    fn parse_inline(&mut self, buf: &[u8]) -> Result<Option<(Request, usize)>, ProtocolError> {
        let newline = match self.find_line_end(buf, 0, b'\n') {
            Line::Found(i) => i,
            Line::Missing => {
                if buf.len() > PROTO_INLINE_MAX_SIZE {
                    return Err(ProtocolError::new(
                        "ERR Protocol error: too big inline request",
                    ));
                }
                return Ok(None);
            }
        };
        let line_end = if newline > 0 && buf[newline - 1] == b'\r' {
            newline - 1
        } else {
            newline
        };
        match split_args(&buf[..line_end]) {
            Some(args) => self.inline = args,
            None => {
                return Err(ProtocolError::new(
                    "ERR Protocol error: unbalanced quotes in request",
                ))
            }
        }
        let kind = if self.inline.is_empty() {
            Request::Empty
        } else {
            Request::Inline
        };
        Ok(Some((kind, newline + 1)))
    }

    fn parse_multibulk(
        &mut self,
        buf: &[u8],
        limits: &Limits,
        auth_required: bool,
    ) -> Result<Option<(Request, usize)>, ProtocolError> {
        if self.phase != Phase::Multibulk {
            let cr = match self.find_line_end(buf, 0, b'\r') {
                Line::Found(i) => i,
                Line::Missing => {
                    if buf.len() > PROTO_INLINE_MAX_SIZE {
                        return Err(ProtocolError::new(
                            "ERR Protocol error: too big mbulk count string",
                        ));
                    }
                    return Ok(None);
                }
            };
            // Redis wants one byte after the '\r' (meant to be '\n', never
            // checked) before it looks at the line.
            if cr + 1 >= buf.len() {
                return Ok(None);
            }
            let count = match string2ll(&buf[1..cr]) {
                Some(n) if n <= i64::from(i32::MAX) => n,
                _ => {
                    return Err(ProtocolError::new(
                        "ERR Protocol error: invalid multibulk length",
                    ))
                }
            };
            if count > UNAUTH_MAX_MULTIBULK && auth_required {
                return Err(ProtocolError::new(
                    "ERR Protocol error: unauthenticated multibulk length",
                ));
            }
            let after = cr + 2;
            if count <= 0 {
                return Ok(Some((Request::Empty, after)));
            }
            // `count` is at most i32::MAX, so it fits any usize we build for.
            let count = usize::try_from(count).unwrap_or(usize::MAX);
            self.phase = Phase::Multibulk;
            self.remaining = count;
            self.pos = after;
            self.bulk_len = None;
            self.start_new_line(after);
            // Only a bounded head start: the count is merely claimed, and each
            // argument's entry is pushed once its bytes are really here.
            self.args.reserve(count.min(RETAINED_ARG_CAPACITY));
        }

        while self.remaining > 0 {
            let len = match self.bulk_len {
                Some(len) => len,
                None => {
                    let pos = self.pos;
                    let cr = match self.find_line_end(buf, pos, b'\r') {
                        Line::Found(i) => i,
                        Line::Missing => {
                            if buf.len() - pos > PROTO_INLINE_MAX_SIZE {
                                return Err(ProtocolError::new(
                                    "ERR Protocol error: too big bulk count string",
                                ));
                            }
                            return Ok(None);
                        }
                    };
                    if cr + 1 >= buf.len() {
                        return Ok(None);
                    }
                    // A NUL would have stopped the search, so the first byte
                    // here is never NUL, but it may be '\r' itself.
                    let first = buf[pos];
                    if first != b'$' {
                        return Err(expected_dollar(first));
                    }
                    let len = match string2ll(&buf[pos + 1..cr]) {
                        Some(n) if n >= 0 && n.unsigned_abs() <= limits.proto_max_bulk_len => n,
                        _ => {
                            return Err(ProtocolError::new(
                                "ERR Protocol error: invalid bulk length",
                            ))
                        }
                    };
                    if len > UNAUTH_MAX_BULK && auth_required {
                        return Err(ProtocolError::new(
                            "ERR Protocol error: unauthenticated bulk length",
                        ));
                    }
                    let Ok(len) = usize::try_from(len) else {
                        // Only reachable where usize is narrower than the
                        // configured limit; such a bulk could never be held.
                        return Err(ProtocolError::new(
                            "ERR Protocol error: invalid bulk length",
                        ));
                    };
                    self.pos = cr + 2;
                    self.bulk_len = Some(len);
                    len
                }
            };
            // Data plus the two bytes Redis skips unchecked after it.
            let needed = len.saturating_add(2);
            let available = buf.len() - self.pos;
            if available < needed {
                self.wanted = needed - available;
                return Ok(None);
            }
            let start = self.pos;
            self.args.push((start, start + len));
            #[cfg(test)]
            {
                self.work += 1;
            }
            self.pos = start + needed;
            self.bulk_len = None;
            self.remaining -= 1;
            self.start_new_line(self.pos);
        }
        Ok(Some((Request::Multibulk, self.pos)))
    }
}

/// Redis formats the byte with `%c` and then maps CR and LF to spaces so the
/// error reply stays a single line.
fn expected_dollar(got: u8) -> ProtocolError {
    let shown = match got {
        b'\r' | b'\n' => b' ',
        b => b,
    };
    let mut msg = b"ERR Protocol error: expected '$', got '".to_vec();
    msg.push(shown);
    msg.push(b'\'');
    ProtocolError(msg)
}

/// Parses a decimal `i64` with Redis's `string2ll` rules: optional `-`, no
/// `+`, no spaces, no leading zeros (so `-0` is rejected), at most 20 bytes.
pub fn string2ll(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (negative, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    let mut v: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    if negative {
        // -(2^63) is representable even though 2^63 is not.
        if v > i64::MAX.unsigned_abs() + 1 {
            None
        } else {
            Some(0i64.wrapping_sub_unsigned(v))
        }
    } else {
        i64::try_from(v).ok()
    }
}

/// C's `isspace` in the C locale.
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Splits a line into arguments exactly like Redis's `sdssplitargs`, which
/// parses inline requests (and redis.conf lines).
///
/// Words are separated by whitespace. `"..."` understands `\n \r \t \b \a`,
/// `\xHH` and `\<any>` (that character itself); `'...'` only understands `\'`.
/// A closing quote must be followed by whitespace or the end of the line.
/// Quotes may start in the middle of a word (`ab"cd"` is `abcd`). Returns
/// `None` for unbalanced quotes. As in C, the line ends at its first NUL.
///
/// Quirks kept on purpose: a word ends only at space, tab, CR or LF, while
/// leading blanks and the character after a closing quote may be any C
/// whitespace, including vertical tab and form feed.
pub fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let line = match memchr::memchr(0, line) {
        Some(nul) => &line[..nul],
        None => line,
    };
    let at = |i: usize| line.get(i).copied();
    let mut args = Vec::new();
    let mut i = 0;
    loop {
        while at(i).is_some_and(is_c_space) {
            i += 1;
        }
        if i >= line.len() {
            return Some(args);
        }
        let mut word = Vec::new();
        let mut in_double = false;
        let mut in_single = false;
        loop {
            let c = at(i);
            if in_double {
                match c {
                    None => return None,
                    Some(b'\\') => {
                        let hex = match (
                            at(i + 1),
                            at(i + 2).and_then(hex_value),
                            at(i + 3).and_then(hex_value),
                        ) {
                            (Some(b'x'), Some(hi), Some(lo)) => Some(hi * 16 + lo),
                            _ => None,
                        };
                        if let Some(byte) = hex {
                            word.push(byte);
                            i += 4;
                        } else if let Some(next) = at(i + 1) {
                            word.push(match next {
                                b'n' => b'\n',
                                b'r' => b'\r',
                                b't' => b'\t',
                                b'b' => 0x08,
                                b'a' => 0x07,
                                other => other,
                            });
                            i += 2;
                        } else {
                            // A backslash ending the line is kept literally,
                            // and the quote is then unterminated.
                            word.push(b'\\');
                            i += 1;
                        }
                    }
                    Some(b'"') => {
                        if at(i + 1).is_some_and(|n| !is_c_space(n)) {
                            return None;
                        }
                        i += 1;
                        break;
                    }
                    Some(other) => {
                        word.push(other);
                        i += 1;
                    }
                }
            } else if in_single {
                match c {
                    None => return None,
                    Some(b'\\') if at(i + 1) == Some(b'\'') => {
                        word.push(b'\'');
                        i += 2;
                    }
                    Some(b'\'') => {
                        if at(i + 1).is_some_and(|n| !is_c_space(n)) {
                            return None;
                        }
                        i += 1;
                        break;
                    }
                    Some(other) => {
                        word.push(other);
                        i += 1;
                    }
                }
            } else {
                match c {
                    None | Some(b' ' | b'\n' | b'\r' | b'\t') => break,
                    Some(b'"') => {
                        in_double = true;
                        i += 1;
                    }
                    Some(b'\'') => {
                        in_single = true;
                        i += 1;
                    }
                    Some(other) => {
                        word.push(other);
                        i += 1;
                    }
                }
            }
        }
        args.push(word);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Eq)]
    enum Out {
        More,
        Err(String),
        Req(Request, usize, Vec<Vec<u8>>),
    }

    fn run(p: &mut RequestParser, buf: &[u8], limits: &Limits, auth: bool) -> Out {
        match p.parse(buf, limits, auth) {
            Ok(None) => Out::More,
            Err(e) => Out::Err(e.to_string()),
            Ok(Some((kind, used))) => {
                let args = match kind {
                    Request::Multibulk => p
                        .arg_ranges()
                        .iter()
                        .map(|&(s, e)| buf[s..e].to_vec())
                        .collect(),
                    Request::Inline => p.inline_args().to_vec(),
                    Request::Empty => Vec::new(),
                };
                Out::Req(kind, used, args)
            }
        }
    }

    fn one(buf: &[u8]) -> Out {
        run(&mut RequestParser::new(), buf, &Limits::default(), false)
    }

    fn one_auth(buf: &[u8]) -> Out {
        run(&mut RequestParser::new(), buf, &Limits::default(), true)
    }

    fn err(msg: &str) -> Out {
        Out::Err(format!("ERR Protocol error: {msg}"))
    }

    fn req(kind: Request, used: usize, args: &[&[u8]]) -> Out {
        Out::Req(kind, used, args.iter().map(|a| a.to_vec()).collect())
    }

    fn mb(used: usize, args: &[&[u8]]) -> Out {
        req(Request::Multibulk, used, args)
    }

    fn inline(used: usize, args: &[&[u8]]) -> Out {
        req(Request::Inline, used, args)
    }

    #[test]
    fn multibulk_basic() {
        assert_eq!(one(b"*1\r\n$4\r\nPING\r\n"), mb(14, &[b"PING"]));
        assert_eq!(
            one(b"*2\r\n$3\r\nGET\r\n$0\r\n\r\n*1\r\n"),
            mb(19, &[b"GET", b""])
        );
        assert_eq!(one(b""), Out::More);
        assert_eq!(one(b"*"), Out::More);
        assert_eq!(one(b"*1\r"), Out::More);
        assert_eq!(one(b"*1\r\n$4\r"), Out::More);
        assert_eq!(one(b"*1\r\n$4\r\nPING\r"), Out::More);
    }

    #[test]
    fn multibulk_skips_unchecked_bytes() {
        // Redis never looks at the byte after a header's CR, nor at the two
        // bytes after bulk data.
        assert_eq!(one(b"*1\rX$4\r\nPINGxy"), mb(14, &[b"PING"]));
        assert_eq!(one(b"*2\r\r$1\r\raAB$1\rzbCD"), mb(18, &[b"a", b"b"]));
    }

    #[test]
    fn multibulk_count_validation() {
        for bad in [
            &b"*+1\r\n"[..],
            b"*01\r\n",
            b"* 1\r\n",
            b"*1 \r\n",
            b"*\r\n",
            b"*-0\r\n",
            b"*-\r\n",
            b"*abc\r\n",
            b"*2147483648\r\n",
            b"*9223372036854775808\r\n",
            b"*000000000000000000001\r\n",
        ] {
            assert_eq!(one(bad), err("invalid multibulk length"), "{bad:?}");
        }
        assert_eq!(one(b"*2147483647\r\n"), Out::More);
        assert_eq!(one(b"*1048577\r\n"), Out::More);
    }

    #[test]
    fn multibulk_empty_counts() {
        assert_eq!(one(b"*0\r\nPING\r\n"), req(Request::Empty, 4, &[]));
        assert_eq!(one(b"*-1\r\n"), req(Request::Empty, 5, &[]));
        assert_eq!(
            one(b"*-9223372036854775808\r\n"),
            req(Request::Empty, 23, &[])
        );
        assert_eq!(
            one(b"*-9223372036854775809\r\n"),
            err("invalid multibulk length")
        );
        // Empty counts are allowed before authentication, big ones are not.
        assert_eq!(one_auth(b"*-11\r\n"), req(Request::Empty, 6, &[]));
    }

    #[test]
    fn unauthenticated_limits() {
        assert_eq!(
            one_auth(b"*11\r\n"),
            err("unauthenticated multibulk length")
        );
        assert_eq!(one_auth(b"*10\r\n"), Out::More);
        assert_eq!(one(b"*11\r\n"), Out::More);
        assert_eq!(
            one_auth(b"*1\r\n$16385\r\n"),
            err("unauthenticated bulk length")
        );
        assert_eq!(one_auth(b"*1\r\n$16384\r\n"), Out::More);
        assert_eq!(one(b"*1\r\n$16385\r\n"), Out::More);
        // Validity is judged before authentication.
        assert_eq!(one_auth(b"*x\r\n"), err("invalid multibulk length"));
        assert_eq!(one_auth(b"*1\r\n$-1\r\n"), err("invalid bulk length"));
    }

    #[test]
    fn bulk_length_validation() {
        for bad in [
            &b"*1\r\n$-1\r\n"[..],
            b"*1\r\n$04\r\nPING\r\n",
            b"*1\r\n$+4\r\nPING\r\n",
            b"*1\r\n$\r\n",
            b"*1\r\n$4 \r\n",
            b"*1\r\n$536870913\r\n",
        ] {
            assert_eq!(one(bad), err("invalid bulk length"), "{bad:?}");
        }
        assert_eq!(one(b"*1\r\n$536870912\r\n"), Out::More);
        let small = Limits {
            proto_max_bulk_len: 3,
        };
        let mut p = RequestParser::new();
        assert_eq!(
            run(&mut p, b"*1\r\n$4\r\n", &small, false),
            err("invalid bulk length")
        );
        assert_eq!(
            run(&mut p, b"*1\r\n$3\r\nabc\r\n", &small, false),
            mb(13, &[b"abc"])
        );
        let huge = Limits {
            proto_max_bulk_len: u64::MAX,
        };
        let mut p = RequestParser::new();
        assert_eq!(
            run(&mut p, b"*1\r\n$9223372036854775807\r\nab", &huge, false),
            Out::More
        );
        assert_eq!(p.bytes_wanted(), 9_223_372_036_854_775_807);
    }

    #[test]
    fn expected_dollar() {
        assert_eq!(one(b"*1\r\nX\r\n"), err("expected '$', got 'X'"));
        assert_eq!(one(b"*1\r\n\r\r\n"), err("expected '$', got ' '"));
        assert_eq!(one(b"*1\r\n\n\r\n"), err("expected '$', got ' '"));
        let mut p = RequestParser::new();
        assert_eq!(
            p.parse(b"*1\r\n\xff\r\n", &Limits::default(), false),
            Err(ProtocolError(
                b"ERR Protocol error: expected '$', got '\xff'".to_vec()
            ))
        );
        // The header must be complete before its first byte is judged.
        assert_eq!(one(b"*1\r\nX"), Out::More);
        assert_eq!(one(b"*1\r\nX\r"), Out::More);
    }

    #[test]
    fn too_big_count_strings() {
        let mut buf = b"*1".to_vec();
        buf.resize(PROTO_INLINE_MAX_SIZE, b'1');
        assert_eq!(one(&buf), Out::More);
        buf.push(b'1');
        assert_eq!(one(&buf), err("too big mbulk count string"));

        let mut buf = b"*1\r\n$1".to_vec();
        buf.resize(4 + PROTO_INLINE_MAX_SIZE, b'1');
        assert_eq!(one(&buf), Out::More);
        buf.push(b'1');
        assert_eq!(one(&buf), err("too big bulk count string"));

        // The size check wins over the '$' check: the line is not complete.
        let mut buf = b"*1\r\nX".to_vec();
        buf.resize(4 + PROTO_INLINE_MAX_SIZE + 1, b'x');
        assert_eq!(one(&buf), err("too big bulk count string"));
    }

    #[test]
    fn nul_hides_line_end() {
        // strchr stops at NUL, so Redis waits until the size limit trips.
        assert_eq!(one(b"*1\0\r\n$4\r\nPING\r\n"), Out::More);
        assert_eq!(one(b"*1\r\n$4\0\r\nPING\r\n"), Out::More);
        assert_eq!(one(b"PING\0\r\n"), Out::More);
        let mut p = RequestParser::new();
        let mut buf = b"*1\r\n$4\0\r\nPING\r\n".to_vec();
        assert_eq!(run(&mut p, &buf, &Limits::default(), false), Out::More);
        buf.resize(4 + PROTO_INLINE_MAX_SIZE + 1, b'\r');
        assert_eq!(
            run(&mut p, &buf, &Limits::default(), false),
            err("too big bulk count string")
        );
        // NULs inside bulk data are just data.
        assert_eq!(one(b"*1\r\n$3\r\n\0\r\0\r\n"), mb(13, &[b"\0\r\0"]));
    }

    #[test]
    fn inline_basic() {
        assert_eq!(one(b"PING\r\n"), inline(6, &[b"PING"]));
        assert_eq!(one(b"PING\n"), inline(5, &[b"PING"]));
        assert_eq!(
            one(b"SET a  b\r\nGET a\r\n"),
            inline(10, &[b"SET", b"a", b"b"])
        );
        assert_eq!(one(b"\r\n"), req(Request::Empty, 2, &[]));
        assert_eq!(one(b"\n"), req(Request::Empty, 1, &[]));
        assert_eq!(one(b" \t \r\n"), req(Request::Empty, 5, &[]));
        assert_eq!(one(b"PING"), Out::More);
        assert_eq!(one(b"PING\r"), Out::More);
        // Only one CR before the LF is stripped; others are separators.
        assert_eq!(one(b"ECHO a\rb\r\n"), inline(10, &[b"ECHO", b"a", b"b"]));
        assert_eq!(one(b"ECHO \"a\"\r\r\n"), inline(11, &[b"ECHO", b"a"]));
    }

    #[test]
    fn too_big_inline() {
        let mut buf = vec![b'x'; PROTO_INLINE_MAX_SIZE];
        assert_eq!(one(&buf), Out::More);
        buf.push(b'x');
        assert_eq!(one(&buf), err("too big inline request"));
        // A line ending already in the buffer is accepted whatever its length.
        buf.extend_from_slice(b"yz\n");
        let Out::Req(Request::Inline, used, args) = one(&buf) else {
            panic!("long inline line rejected");
        };
        assert_eq!(used, buf.len());
        assert_eq!(args.len(), 1);
    }

    #[test]
    fn inline_quoting() {
        type Case = (&'static [u8], Option<&'static [&'static [u8]]>);
        let cases: &[Case] = &[
            (b"a \"b c\" d", Some(&[b"a", b"b c", b"d"])),
            (b"\"a\\x41\\xZZ\\q\"", Some(&[b"aAxZZq"])),
            (b"\"\\x4\"", Some(&[b"x4"])),
            (b"\"\\xff\\x0a\"", Some(&[b"\xff\n"])),
            (
                b"\"\\n\\r\\t\\b\\a\\\\\\\"\"",
                Some(&[b"\n\r\t\x08\x07\\\""]),
            ),
            (b"'a\\'b\\n'", Some(&[b"a'b\\n"])),
            (b"'a\\\\b'", Some(&[b"a\\\\b"])),
            (b"'\"'", Some(&[b"\""])),
            (b"\"'\"", Some(&[b"'"])),
            (b"\"\"", Some(&[b""])),
            (b"'' ''", Some(&[b"", b""])),
            (b"ab\"cd\"", Some(&[b"abcd"])),
            (b"ab'c d'", Some(&[b"abc d"])),
            (b"\"ab\"\x0bc", Some(&[b"ab", b"c"])),
            (b"a\x0bb", Some(&[b"a\x0bb"])),
            (b"\x0bECHO\x0c x", Some(&[b"ECHO\x0c", b"x"])),
            (b"\\x41", Some(&[b"\\x41"])),
            (b"\"ab\"c", None),
            (b"'ab'c", None),
            (b"\"ab", None),
            (b"'ab", None),
            (b"''x", None),
            (b"\"a\\\"", None),
            (b"\"a\\", None),
            (b"ab\"cd\"ef", None),
        ];
        for &(line, want) in cases {
            let got = split_args(line);
            let want: Option<Vec<Vec<u8>>> = want.map(|w| w.iter().map(|a| a.to_vec()).collect());
            assert_eq!(got, want, "{:?}", String::from_utf8_lossy(line));

            let mut input = line.to_vec();
            input.extend_from_slice(b"\r\n");
            let expected = match want {
                None => err("unbalanced quotes in request"),
                Some(args) => Out::Req(Request::Inline, input.len(), args),
            };
            assert_eq!(one(&input), expected);
        }
        assert_eq!(split_args(b"a \0 b"), Some(vec![b"a".to_vec()]));
        assert_eq!(split_args(b""), Some(vec![]));
    }

    #[test]
    fn string2ll_rules() {
        assert_eq!(string2ll(b"0"), Some(0));
        assert_eq!(string2ll(b"-1"), Some(-1));
        assert_eq!(string2ll(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(string2ll(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-",
            b"-0",
            b"00",
            b"01",
            b"+1",
            b" 1",
            b"1 ",
            b"1a",
            b"9223372036854775808",
            b"-9223372036854775809",
            b"18446744073709551616",
            b"99999999999999999999",
        ] {
            assert_eq!(string2ll(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn bytes_wanted_tracks_bulk() {
        let mut p = RequestParser::new();
        let l = Limits::default();
        assert_eq!(p.parse(b"*2\r\n$10\r\nabc", &l, false), Ok(None));
        assert_eq!(p.bytes_wanted(), 9);
        assert_eq!(p.parse(b"*2\r\n$10\r\nabcdefghij\r", &l, false), Ok(None));
        assert_eq!(p.bytes_wanted(), 1);
        assert_eq!(
            p.parse(b"*2\r\n$10\r\nabcdefghij\r\n$", &l, false),
            Ok(None)
        );
        assert_eq!(p.bytes_wanted(), 0);
    }

    #[test]
    fn byte_by_byte_pipeline() {
        let input = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n*0\r\n\"a b\" c\n*1\r\n$0\r\n\r\n";
        let want = [
            mb(20, &[b"GET", b"k"]),
            inline(6, &[b"PING"]),
            req(Request::Empty, 4, &[]),
            inline(8, &[b"a b", b"c"]),
            mb(10, &[b""]),
        ];
        let mut p = RequestParser::new();
        let l = Limits::default();
        let mut buf = Vec::new();
        let mut got = Vec::new();
        for &b in input.iter() {
            buf.push(b);
            match run(&mut p, &buf, &l, false) {
                Out::More => {}
                Out::Err(e) => panic!("{e}"),
                out @ Out::Req(_, used, _) => {
                    buf.drain(..used);
                    got.push(out);
                }
            }
        }
        assert_eq!(got, want);
        assert!(buf.is_empty());
    }

    #[test]
    fn resuming_is_linear() {
        const ARGS: usize = 1_000_000;
        let mut input = format!("*{ARGS}\r\n").into_bytes();
        for i in 0..ARGS {
            input.extend_from_slice(b"$1\r\n");
            input.push(b'a' + (i % 26) as u8);
            input.extend_from_slice(b"\r\n");
        }
        let mut p = RequestParser::new();
        let l = Limits::default();
        let step = input.len() / 1000 + 1;
        let mut end = 0;
        let mut result = None;
        while end < input.len() {
            end = (end + step).min(input.len());
            result = p.parse(&input[..end], &l, false).expect("valid input");
            assert!(result.is_none() || end == input.len());
        }
        assert_eq!(result, Some((Request::Multibulk, input.len())));
        assert_eq!(p.arg_ranges().len(), ARGS);
        assert_eq!(
            p.arg_ranges()[27],
            (
                input.len() - 7 * (ARGS - 27) + 4,
                input.len() - 7 * (ARGS - 27) + 5
            )
        );
        // Every byte is looked at a bounded number of times, however the
        // input was chunked.
        assert!(
            p.work < 2 * input.len(),
            "work {} for {} bytes",
            p.work,
            input.len()
        );
    }

    #[test]
    fn finished_request_is_forgotten_on_next_parse() {
        let mut p = RequestParser::new();
        let l = Limits::default();
        assert_eq!(
            p.parse(b"*1\r\n$1\r\na\r\n", &l, false),
            Ok(Some((Request::Multibulk, 11)))
        );
        assert_eq!(p.arg_ranges(), &[(8, 9)]);
        assert_eq!(p.parse(b"", &l, false), Ok(None));
        assert!(p.arg_ranges().is_empty());
        // After an error the parser starts over too.
        assert!(p.parse(b"*x\r\n", &l, false).is_err());
        assert_eq!(
            p.parse(b"PING\n", &l, false),
            Ok(Some((Request::Inline, 5)))
        );
        assert!(p.arg_ranges().is_empty());
        p.reset();
        assert!(p.inline_args().is_empty());
    }

    #[test]
    fn shrinking_buffer_restarts_instead_of_panicking() {
        let mut p = RequestParser::new();
        let l = Limits::default();
        assert_eq!(p.parse(b"*2\r\n$3\r\nfoo\r\n$3\r\nb", &l, false), Ok(None));
        assert_eq!(
            p.parse(b"*1\r\n$1\r\nx\r\n", &l, false),
            Ok(Some((Request::Multibulk, 11)))
        );
        assert_eq!(p.arg_ranges(), &[(8, 9)]);
    }
}
