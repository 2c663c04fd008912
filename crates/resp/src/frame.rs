//! Decoding of RESP2 and RESP3 replies into values, and writing them back.
//!
//! This is the client side of the protocol: tests, the differential harness
//! against a real Redis and scripting use it to look at replies. It favours
//! being strict and obviously right over speed: every frame is re-parsed from
//! its first byte until it is complete, and anything Redis would never send
//! (bad line endings, leading zeros, unknown type bytes) is an error rather
//! than being guessed at, so that a sloppy reply from Tessera is noticed.
//!
//! Values that have several spellings on the wire are kept as their raw text
//! (doubles, big numbers) so comparisons between servers are exact.

use std::fmt;

use crate::request::string2ll;

/// Deep enough for any reply Redis builds, shallow enough that a hostile
/// nesting cannot overflow the stack of the recursive parser.
pub const MAX_DEPTH: usize = 512;

/// A decoded reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// `+text`
    Simple(Vec<u8>),
    /// `-text` (without the `-`).
    Error(Vec<u8>),
    /// `:n`
    Integer(i64),
    /// `$n` followed by the data.
    Bulk(Vec<u8>),
    /// RESP2 null bulk string, `$-1`.
    NullBulk,
    /// RESP2 null array, `*-1`.
    NullArray,
    /// RESP3 null, `_`.
    Null,
    /// `*n`
    Array(Vec<Frame>),
    /// RESP3 `%n`: n key/value pairs.
    Map(Vec<(Frame, Frame)>),
    /// RESP3 `~n`
    Set(Vec<Frame>),
    /// RESP3 `>n` out-of-band data (pub/sub messages, invalidations).
    Push(Vec<Frame>),
    /// RESP3 `,text`: the text as sent (`1.5`, `inf`, `-inf`, `nan`, ...).
    Double(Vec<u8>),
    /// RESP3 `#t` / `#f`.
    Boolean(bool),
    /// RESP3 `(digits`, kept as text.
    BigNumber(Vec<u8>),
    /// RESP3 `!n` blob error (without framing).
    BulkError(Vec<u8>),
    /// RESP3 `=n` verbatim string: a three byte format (`txt`, `mkd`) and
    /// the text.
    Verbatim { format: [u8; 3], text: Vec<u8> },
    /// RESP3 `|n` attributes followed by the frame they annotate.
    Attribute {
        attrs: Vec<(Frame, Frame)>,
        frame: Box<Frame>,
    },
}

/// A reply that is not valid RESP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameError(pub String);

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FrameError {}

/// Why parsing stopped before a whole frame was read.
enum Stop {
    Incomplete,
    Invalid(String),
}

fn invalid<T>(msg: impl Into<String>) -> Result<T, Stop> {
    Err(Stop::Invalid(msg.into()))
}

/// Decodes the frame at the start of `buf`.
///
/// Returns `Ok(Some((frame, consumed)))` for a complete frame, `Ok(None)` if
/// `buf` holds only a prefix of one.
pub fn parse_frame(buf: &[u8]) -> Result<Option<(Frame, usize)>, FrameError> {
    let mut cursor = Cursor { buf, pos: 0 };
    match cursor.frame(0) {
        Ok(frame) => Ok(Some((frame, cursor.pos))),
        Err(Stop::Incomplete) => Ok(None),
        Err(Stop::Invalid(msg)) => Err(FrameError(msg)),
    }
}

struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn byte(&mut self) -> Result<u8, Stop> {
        let b = *self.buf.get(self.pos).ok_or(Stop::Incomplete)?;
        self.pos += 1;
        Ok(b)
    }

    /// The rest of the line, which must end in CRLF and contain no other CR
    /// or LF.
    fn line(&mut self) -> Result<&[u8], Stop> {
        let rest = &self.buf[self.pos..];
        let Some(end) = memchr::memchr2(b'\r', b'\n', rest) else {
            return Err(Stop::Incomplete);
        };
        if rest[end] == b'\n' {
            return invalid("bare LF in line");
        }
        match rest.get(end + 1) {
            None => return Err(Stop::Incomplete),
            Some(b'\n') => {}
            Some(_) => return invalid("CR not followed by LF"),
        }
        self.pos += end + 2;
        Ok(&rest[..end])
    }

    fn integer_line(&mut self) -> Result<i64, Stop> {
        let line = self.line()?;
        match string2ll(line) {
            Some(n) => Ok(n),
            None => invalid(format!(
                "invalid integer {:?}",
                String::from_utf8_lossy(line)
            )),
        }
    }

    /// A length line: `None` for `-1` where the type allows it.
    fn length(&mut self, nullable: bool) -> Result<Option<usize>, Stop> {
        let n = self.integer_line()?;
        if n == -1 && nullable {
            return Ok(None);
        }
        match usize::try_from(n) {
            Ok(n) => Ok(Some(n)),
            Err(_) => invalid(format!("invalid length {n}")),
        }
    }

    fn length_required(&mut self) -> Result<usize, Stop> {
        match self.length(false)? {
            Some(n) => Ok(n),
            None => invalid("negative length"),
        }
    }

    /// `len` bytes of data followed by CRLF.
    fn blob(&mut self, len: usize) -> Result<Vec<u8>, Stop> {
        let rest = &self.buf[self.pos..];
        let Some(with_crlf) = len.checked_add(2) else {
            return invalid("length overflow");
        };
        if rest.len() < with_crlf {
            return Err(Stop::Incomplete);
        }
        if &rest[len..with_crlf] != b"\r\n" {
            return invalid("blob not followed by CRLF");
        }
        self.pos += with_crlf;
        Ok(rest[..len].to_vec())
    }

    fn frames(&mut self, n: usize, depth: usize) -> Result<Vec<Frame>, Stop> {
        // Every frame takes at least three bytes, so a claimed count larger
        // than that cannot be satisfied by the bytes present.
        let mut items = Vec::with_capacity(n.min((self.buf.len() - self.pos) / 3));
        for _ in 0..n {
            items.push(self.frame(depth + 1)?);
        }
        Ok(items)
    }

    fn pairs(&mut self, n: usize, depth: usize) -> Result<Vec<(Frame, Frame)>, Stop> {
        let mut items = Vec::with_capacity(n.min((self.buf.len() - self.pos) / 6));
        for _ in 0..n {
            let key = self.frame(depth + 1)?;
            let value = self.frame(depth + 1)?;
            items.push((key, value));
        }
        Ok(items)
    }

    fn frame(&mut self, depth: usize) -> Result<Frame, Stop> {
        if depth > MAX_DEPTH {
            return invalid("frames nested too deeply");
        }
        let tag = self.byte()?;
        Ok(match tag {
            b'+' => Frame::Simple(self.line()?.to_vec()),
            b'-' => Frame::Error(self.line()?.to_vec()),
            b':' => Frame::Integer(self.integer_line()?),
            b'$' => match self.length(true)? {
                None => Frame::NullBulk,
                Some(n) => Frame::Bulk(self.blob(n)?),
            },
            b'*' => match self.length(true)? {
                None => Frame::NullArray,
                Some(n) => Frame::Array(self.frames(n, depth)?),
            },
            b'_' => {
                if !self.line()?.is_empty() {
                    return invalid("null with payload");
                }
                Frame::Null
            }
            b'#' => match self.line()? {
                b"t" => Frame::Boolean(true),
                b"f" => Frame::Boolean(false),
                _ => return invalid("invalid boolean"),
            },
            b',' => {
                let text = self.line()?;
                let parses = std::str::from_utf8(text)
                    .ok()
                    .is_some_and(|s| s.parse::<f64>().is_ok());
                if !parses {
                    return invalid("invalid double");
                }
                Frame::Double(text.to_vec())
            }
            b'(' => {
                let text = self.line()?;
                let digits = text.strip_prefix(b"-").unwrap_or(text);
                if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                    return invalid("invalid big number");
                }
                Frame::BigNumber(text.to_vec())
            }
            b'!' => {
                let n = self.length_required()?;
                Frame::BulkError(self.blob(n)?)
            }
            b'=' => {
                let n = self.length_required()?;
                let data = self.blob(n)?;
                match data.get(..4) {
                    Some(&[a, b, c, b':']) => Frame::Verbatim {
                        format: [a, b, c],
                        text: data[4..].to_vec(),
                    },
                    _ => return invalid("verbatim string without format"),
                }
            }
            b'%' => {
                let n = self.length_required()?;
                Frame::Map(self.pairs(n, depth)?)
            }
            b'~' => {
                let n = self.length_required()?;
                Frame::Set(self.frames(n, depth)?)
            }
            b'>' => {
                let n = self.length_required()?;
                Frame::Push(self.frames(n, depth)?)
            }
            b'|' => {
                let n = self.length_required()?;
                let attrs = self.pairs(n, depth)?;
                let frame = Box::new(self.frame(depth + 1)?);
                Frame::Attribute { attrs, frame }
            }
            other => return invalid(format!("unknown frame type byte 0x{other:02x}")),
        })
    }
}

impl Frame {
    /// Appends the wire form of this frame to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        match self {
            Frame::Simple(s) => line(out, b'+', s),
            Frame::Error(s) => line(out, b'-', s),
            Frame::Integer(n) => header(out, b':', *n),
            Frame::Bulk(data) => blob(out, b'$', data),
            Frame::NullBulk => out.extend_from_slice(b"$-1\r\n"),
            Frame::NullArray => out.extend_from_slice(b"*-1\r\n"),
            Frame::Null => out.extend_from_slice(b"_\r\n"),
            Frame::Array(items) => aggregate(out, b'*', items),
            Frame::Map(pairs) => pair_aggregate(out, b'%', pairs),
            Frame::Set(items) => aggregate(out, b'~', items),
            Frame::Push(items) => aggregate(out, b'>', items),
            Frame::Double(text) => line(out, b',', text),
            Frame::Boolean(b) => out.extend_from_slice(if *b { b"#t\r\n" } else { b"#f\r\n" }),
            Frame::BigNumber(text) => line(out, b'(', text),
            Frame::BulkError(data) => blob(out, b'!', data),
            Frame::Verbatim { format, text } => {
                header_len(out, b'=', text.len() + 4);
                out.extend_from_slice(format);
                out.push(b':');
                out.extend_from_slice(text);
                out.extend_from_slice(b"\r\n");
            }
            Frame::Attribute { attrs, frame } => {
                pair_aggregate(out, b'|', attrs);
                frame.write_to(out);
            }
        }
    }

    /// The wire form of this frame.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_to(&mut out);
        out
    }
}

fn line(out: &mut Vec<u8>, tag: u8, text: &[u8]) {
    out.push(tag);
    out.extend_from_slice(text);
    out.extend_from_slice(b"\r\n");
}

fn header(out: &mut Vec<u8>, tag: u8, n: i64) {
    out.push(tag);
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    out.extend_from_slice(b"\r\n");
}

fn header_len(out: &mut Vec<u8>, tag: u8, n: usize) {
    out.push(tag);
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    out.extend_from_slice(b"\r\n");
}

fn blob(out: &mut Vec<u8>, tag: u8, data: &[u8]) {
    header_len(out, tag, data.len());
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

fn aggregate(out: &mut Vec<u8>, tag: u8, items: &[Frame]) {
    header_len(out, tag, items.len());
    for item in items {
        item.write_to(out);
    }
}

fn pair_aggregate(out: &mut Vec<u8>, tag: u8, pairs: &[(Frame, Frame)]) {
    header_len(out, tag, pairs.len());
    for (key, value) in pairs {
        key.write_to(out);
        value.write_to(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(buf: &[u8]) -> Result<Option<(Frame, usize)>, FrameError> {
        parse_frame(buf)
    }

    fn ok(buf: &[u8]) -> Frame {
        match parse(buf) {
            Ok(Some((f, used))) => {
                assert_eq!(used, buf.len(), "{buf:?}");
                assert_eq!(f.to_bytes(), buf, "write_to must reproduce {buf:?}");
                f
            }
            other => panic!("{buf:?}: {other:?}"),
        }
    }

    #[test]
    fn decodes_every_type() {
        assert_eq!(ok(b"+OK\r\n"), Frame::Simple(b"OK".to_vec()));
        assert_eq!(ok(b"-ERR x\r\n"), Frame::Error(b"ERR x".to_vec()));
        assert_eq!(ok(b":-42\r\n"), Frame::Integer(-42));
        assert_eq!(ok(b"$3\r\na\r\n\r\n"), Frame::Bulk(b"a\r\n".to_vec()));
        assert_eq!(ok(b"$-1\r\n"), Frame::NullBulk);
        assert_eq!(ok(b"*-1\r\n"), Frame::NullArray);
        assert_eq!(ok(b"_\r\n"), Frame::Null);
        assert_eq!(
            ok(b"*2\r\n:1\r\n$0\r\n\r\n"),
            Frame::Array(vec![Frame::Integer(1), Frame::Bulk(vec![])])
        );
        assert_eq!(
            ok(b"%1\r\n+a\r\n#t\r\n"),
            Frame::Map(vec![(Frame::Simple(b"a".to_vec()), Frame::Boolean(true))])
        );
        assert_eq!(ok(b"~1\r\n#f\r\n"), Frame::Set(vec![Frame::Boolean(false)]));
        assert_eq!(ok(b">1\r\n_\r\n"), Frame::Push(vec![Frame::Null]));
        assert_eq!(ok(b",-inf\r\n"), Frame::Double(b"-inf".to_vec()));
        assert_eq!(ok(b",1.5e10\r\n"), Frame::Double(b"1.5e10".to_vec()));
        assert_eq!(ok(b"(-123\r\n"), Frame::BigNumber(b"-123".to_vec()));
        assert_eq!(ok(b"!3\r\nERR\r\n"), Frame::BulkError(b"ERR".to_vec()));
        assert_eq!(
            ok(b"=7\r\ntxt:abc\r\n"),
            Frame::Verbatim {
                format: *b"txt",
                text: b"abc".to_vec()
            }
        );
        assert_eq!(
            ok(b"|1\r\n+k\r\n:1\r\n+v\r\n"),
            Frame::Attribute {
                attrs: vec![(Frame::Simple(b"k".to_vec()), Frame::Integer(1))],
                frame: Box::new(Frame::Simple(b"v".to_vec())),
            }
        );
    }

    #[test]
    fn prefixes_are_incomplete() {
        let full = b"*3\r\n$3\r\nabc\r\n%1\r\n:1\r\n,2\r\n=5\r\ntxt:a\r\n";
        for end in 0..full.len() {
            assert_eq!(parse(&full[..end]), Ok(None), "prefix {end}");
        }
        assert!(matches!(parse(full), Ok(Some((_, n))) if n == full.len()));
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            &b"?\r\n"[..],
            b"+a\rb\r\n",
            b"+a\n",
            b":01\r\n",
            b":+1\r\n",
            b":\r\n",
            b"$-2\r\n",
            b"*-2\r\n",
            b"%-1\r\n",
            b"$1\r\nabc\r\n",
            b"#x\r\n",
            b",abc\r\n",
            b"(1.5\r\n",
            b"(\r\n",
            b"=2\r\nab\r\n",
            b"=4\r\ntxt-\r\n",
            b"_x\r\n",
            b"$?\r\n",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = b"*1\r\n".repeat(100_000);
        assert!(parse(&deep).is_err());
        let ok_depth = b"*1\r\n".repeat(MAX_DEPTH);
        assert_eq!(parse(&ok_depth), Ok(None));
    }

    #[test]
    fn huge_claimed_counts_do_not_allocate() {
        assert_eq!(parse(b"*2147483647\r\n:1\r\n"), Ok(None));
        assert_eq!(parse(b"$9223372036854775807\r\nab"), Ok(None));
        assert_eq!(parse(b"%9223372036854775807\r\n"), Ok(None));
    }
}
