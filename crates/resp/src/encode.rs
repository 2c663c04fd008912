//! Reply encoding for RESP2 and RESP3.
//!
//! Handlers describe a reply once ("a map of n pairs", "a double", "a null")
//! and [`ReplyBuf`] renders it in the protocol the client negotiated with
//! HELLO, so no command has to know which protocol it is speaking. Replies are
//! appended straight into the connection's output buffer: nothing is boxed or
//! allocated per reply beyond the buffer's own growth.

/// The protocol a client speaks, chosen with `HELLO`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Protocol {
    #[default]
    Resp2,
    Resp3,
}

/// An output buffer that renders replies in the client's protocol.
#[derive(Debug, Default)]
pub struct ReplyBuf {
    pub buf: Vec<u8>,
    pub protocol: Protocol,
}

impl ReplyBuf {
    pub fn new(protocol: Protocol) -> Self {
        ReplyBuf {
            buf: Vec::with_capacity(256),
            protocol,
        }
    }

    #[inline]
    pub fn resp3(&self) -> bool {
        self.protocol == Protocol::Resp3
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    #[inline]
    fn header(&mut self, tag: u8, n: i64) {
        self.buf.push(tag);
        let mut b = itoa::Buffer::new();
        self.buf.extend_from_slice(b.format(n).as_bytes());
        self.buf.extend_from_slice(b"\r\n");
    }

    /// `+OK`.
    #[inline]
    pub fn ok(&mut self) {
        self.buf.extend_from_slice(b"+OK\r\n");
    }

    /// A status reply. Redis never lets a newline into one, so neither do we.
    pub fn simple(&mut self, s: &[u8]) {
        self.buf.push(b'+');
        push_sanitized(&mut self.buf, s);
        self.buf.extend_from_slice(b"\r\n");
    }

    /// An error reply; `msg` carries its prefix (`ERR ...`, `WRONGTYPE ...`).
    /// A message without a leading code gets `ERR`, and newlines become
    /// spaces, as Redis does, so the reply stays one protocol line. Redis
    /// builds error texts as C strings, so one ends at a NUL byte (an
    /// argument quoted in it, say).
    pub fn error(&mut self, msg: &[u8]) {
        self.buf.push(b'-');
        let msg = match msg.iter().position(|&c| c == 0) {
            Some(n) => &msg[..n],
            None => msg,
        };
        let msg = msg.strip_prefix(b"-").unwrap_or(msg);
        // Like Redis: CR/LF trimmed from both ends, the rest become spaces.
        let start = msg
            .iter()
            .position(|c| !matches!(c, b'\r' | b'\n'))
            .unwrap_or(msg.len());
        let end = msg
            .iter()
            .rposition(|c| !matches!(c, b'\r' | b'\n'))
            .map_or(start, |e| e + 1);
        push_sanitized(&mut self.buf, &msg[start..end]);
        self.buf.extend_from_slice(b"\r\n");
    }

    #[inline]
    pub fn int(&mut self, n: i64) {
        self.header(b':', n);
    }

    #[inline]
    pub fn bulk(&mut self, data: &[u8]) {
        self.header(b'$', data.len() as i64);
        self.buf.extend_from_slice(data);
        self.buf.extend_from_slice(b"\r\n");
    }

    /// A bulk string holding the decimal form of `n` (how Redis returns
    /// integer-encoded string values).
    pub fn bulk_int(&mut self, n: i64) {
        let mut b = itoa::Buffer::new();
        self.bulk(b.format(n).as_bytes());
    }

    /// The null bulk string (`$-1` in RESP2, `_` in RESP3).
    #[inline]
    pub fn null(&mut self) {
        if self.resp3() {
            self.buf.extend_from_slice(b"_\r\n");
        } else {
            self.buf.extend_from_slice(b"$-1\r\n");
        }
    }

    /// The null array (`*-1` in RESP2, `_` in RESP3).
    #[inline]
    pub fn null_array(&mut self) {
        if self.resp3() {
            self.buf.extend_from_slice(b"_\r\n");
        } else {
            self.buf.extend_from_slice(b"*-1\r\n");
        }
    }

    #[inline]
    pub fn array(&mut self, n: usize) {
        self.header(b'*', n as i64);
    }

    /// A map of `pairs` key/value pairs: RESP3 `%`, a flat array in RESP2.
    pub fn map(&mut self, pairs: usize) {
        if self.resp3() {
            self.header(b'%', pairs as i64);
        } else {
            self.header(b'*', 2 * pairs as i64);
        }
    }

    /// A set: RESP3 `~`, an array in RESP2.
    pub fn set(&mut self, n: usize) {
        if self.resp3() {
            self.header(b'~', n as i64);
        } else {
            self.header(b'*', n as i64);
        }
    }

    /// An out-of-band push: RESP3 `>`, an array in RESP2 (pub/sub messages).
    pub fn push(&mut self, n: usize) {
        if self.resp3() {
            self.header(b'>', n as i64);
        } else {
            self.header(b'*', n as i64);
        }
    }

    /// A boolean: RESP3 `#t`/`#f`, integer 1/0 in RESP2.
    pub fn boolean(&mut self, b: bool) {
        if self.resp3() {
            self.buf
                .extend_from_slice(if b { b"#t\r\n" } else { b"#f\r\n" });
        } else {
            self.int(b as i64);
        }
    }

    /// A double already formatted the way Redis prints it: RESP3 `,`, a
    /// bulk string in RESP2.
    pub fn double_text(&mut self, text: &[u8]) {
        if self.resp3() {
            self.buf.push(b',');
            self.buf.extend_from_slice(text);
            self.buf.extend_from_slice(b"\r\n");
        } else {
            self.bulk(text);
        }
    }

    /// Verbatim text (`=len\r\ntxt:...` in RESP3, a bulk string in RESP2),
    /// used by INFO, CLIENT LIST and friends.
    pub fn verbatim(&mut self, format: &[u8; 3], text: &[u8]) {
        if self.resp3() {
            self.header(b'=', text.len() as i64 + 4);
            self.buf.extend_from_slice(format);
            self.buf.push(b':');
            self.buf.extend_from_slice(text);
            self.buf.extend_from_slice(b"\r\n");
        } else {
            self.bulk(text);
        }
    }

    /// Appends bytes that are already valid RESP (e.g. a cached reply).
    #[inline]
    pub fn raw(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }
}

fn push_sanitized(out: &mut Vec<u8>, s: &[u8]) {
    if memchr::memchr2(b'\r', b'\n', s).is_none() {
        out.extend_from_slice(s);
    } else {
        out.extend(
            s.iter()
                .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c }),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resp2_and_resp3_nulls_differ() {
        let mut r2 = ReplyBuf::new(Protocol::Resp2);
        r2.null();
        r2.null_array();
        assert_eq!(r2.buf, b"$-1\r\n*-1\r\n");
        let mut r3 = ReplyBuf::new(Protocol::Resp3);
        r3.null();
        r3.null_array();
        assert_eq!(r3.buf, b"_\r\n_\r\n");
    }

    #[test]
    fn maps_flatten_in_resp2() {
        let mut r2 = ReplyBuf::new(Protocol::Resp2);
        r2.map(2);
        assert_eq!(r2.buf, b"*4\r\n");
        let mut r3 = ReplyBuf::new(Protocol::Resp3);
        r3.map(2);
        assert_eq!(r3.buf, b"%2\r\n");
    }

    #[test]
    fn errors_stay_on_one_line() {
        let mut r = ReplyBuf::new(Protocol::Resp2);
        r.error(b"ERR bad\r\nthing\r\n");
        assert_eq!(r.buf, b"-ERR bad  thing\r\n");
    }

    #[test]
    fn errors_end_at_a_nul_byte() {
        let mut r = ReplyBuf::new(Protocol::Resp2);
        r.error(b"ERR Unknown option given: \0x");
        assert_eq!(r.buf, b"-ERR Unknown option given: \r\n");
    }

    #[test]
    fn verbatim_is_bulk_in_resp2() {
        let mut r = ReplyBuf::new(Protocol::Resp3);
        r.verbatim(b"txt", b"hi");
        assert_eq!(r.buf, b"=6\r\ntxt:hi\r\n");
        let mut r = ReplyBuf::new(Protocol::Resp2);
        r.verbatim(b"txt", b"hi");
        assert_eq!(r.buf, b"$2\r\nhi\r\n");
    }
}
