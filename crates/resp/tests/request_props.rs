//! Property tests for the request parser.
//!
//! The parser is checked against `reference`, a deliberately naive
//! transliteration of Redis 7.0's `processMultibulkBuffer`,
//! `processInlineBuffer` and `sdssplitargs`: stateless, re-parses the whole
//! buffer every time, works on a NUL-terminated copy the way the C code does.
//! The real parser is resumable and keeps offsets between calls, so agreeing
//! with the reference at every step of a chunked feed shows that resuming
//! never changes the outcome.

use proptest::prelude::*;
use tessera_resp::request::{Limits, Request, RequestParser};

const INLINE_MAX: usize = 64 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    More,
    Error(Vec<u8>),
    Done(Request, usize, Vec<Vec<u8>>),
}

fn error(msg: &str) -> Outcome {
    Outcome::Error(format!("ERR Protocol error: {msg}").into_bytes())
}

/// C `strchr` on a buffer that is NUL-terminated at its end.
fn strchr(buf: &[u8], from: usize, ch: u8) -> Option<usize> {
    for (i, &b) in buf.iter().enumerate().skip(from) {
        if b == 0 {
            return None;
        }
        if b == ch {
            return Some(i);
        }
    }
    None
}

/// `string2ll` accepts exactly the canonical decimal spelling of an i64.
fn string2ll(s: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(s).ok()?;
    let v: i64 = s.parse().ok()?;
    (v.to_string() == s).then_some(v)
}

fn isspace(c: u8) -> bool {
    c == b' ' || c == b'\t' || c == b'\n' || c == b'\r' || c == 0x0b || c == 0x0c
}

fn ishex(c: u8) -> bool {
    c.is_ascii_hexdigit()
}

fn hexval(c: u8) -> u8 {
    (c as char).to_digit(16).unwrap_or(0) as u8
}

fn sdssplitargs(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut s = line.to_vec();
    s.push(0);
    let mut p = 0;
    let mut vector = Vec::new();
    loop {
        while s[p] != 0 && isspace(s[p]) {
            p += 1;
        }
        if s[p] == 0 {
            return Some(vector);
        }
        let (mut inq, mut insq, mut done) = (false, false, false);
        let mut current = Vec::new();
        while !done {
            if inq {
                if s[p] == b'\\' && s[p + 1] == b'x' && ishex(s[p + 2]) && ishex(s[p + 3]) {
                    current.push(hexval(s[p + 2]) * 16 + hexval(s[p + 3]));
                    p += 3;
                } else if s[p] == b'\\' && s[p + 1] != 0 {
                    p += 1;
                    current.push(match s[p] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        c => c,
                    });
                } else if s[p] == b'"' {
                    if s[p + 1] != 0 && !isspace(s[p + 1]) {
                        return None;
                    }
                    done = true;
                } else if s[p] == 0 {
                    return None;
                } else {
                    current.push(s[p]);
                }
            } else if insq {
                if s[p] == b'\\' && s[p + 1] == b'\'' {
                    p += 1;
                    current.push(b'\'');
                } else if s[p] == b'\'' {
                    if s[p + 1] != 0 && !isspace(s[p + 1]) {
                        return None;
                    }
                    done = true;
                } else if s[p] == 0 {
                    return None;
                } else {
                    current.push(s[p]);
                }
            } else {
                match s[p] {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => done = true,
                    b'"' => inq = true,
                    b'\'' => insq = true,
                    c => current.push(c),
                }
            }
            if s[p] != 0 {
                p += 1;
            }
        }
        vector.push(current);
    }
}

fn reference(buf: &[u8], limits: &Limits, auth: bool) -> Outcome {
    if buf.is_empty() {
        return Outcome::More;
    }
    if buf[0] != b'*' {
        let Some(nl) = strchr(buf, 0, b'\n') else {
            return if buf.len() > INLINE_MAX {
                error("too big inline request")
            } else {
                Outcome::More
            };
        };
        let end = if nl > 0 && buf[nl - 1] == b'\r' {
            nl - 1
        } else {
            nl
        };
        return match sdssplitargs(&buf[..end]) {
            None => error("unbalanced quotes in request"),
            Some(args) if args.is_empty() => Outcome::Done(Request::Empty, nl + 1, args),
            Some(args) => Outcome::Done(Request::Inline, nl + 1, args),
        };
    }

    let Some(cr) = strchr(buf, 0, b'\r') else {
        return if buf.len() > INLINE_MAX {
            error("too big mbulk count string")
        } else {
            Outcome::More
        };
    };
    if cr + 2 > buf.len() {
        return Outcome::More;
    }
    let count = match string2ll(&buf[1..cr]) {
        Some(n) if n <= i32::MAX as i64 => n,
        _ => return error("invalid multibulk length"),
    };
    if count > 10 && auth {
        return error("unauthenticated multibulk length");
    }
    let mut pos = cr + 2;
    if count <= 0 {
        return Outcome::Done(Request::Empty, pos, vec![]);
    }
    let mut args = Vec::new();
    for _ in 0..count {
        let Some(cr) = strchr(buf, pos, b'\r') else {
            return if buf.len() - pos > INLINE_MAX {
                error("too big bulk count string")
            } else {
                Outcome::More
            };
        };
        if cr + 2 > buf.len() {
            return Outcome::More;
        }
        if buf[pos] != b'$' {
            let shown = if buf[pos] == b'\r' || buf[pos] == b'\n' {
                b' '
            } else {
                buf[pos]
            };
            let mut msg = b"ERR Protocol error: expected '$', got '".to_vec();
            msg.push(shown);
            msg.push(b'\'');
            return Outcome::Error(msg);
        }
        let len = match string2ll(&buf[pos + 1..cr]) {
            Some(n) if n >= 0 && n as u64 <= limits.proto_max_bulk_len => n as usize,
            _ => return error("invalid bulk length"),
        };
        if len > 16384 && auth {
            return error("unauthenticated bulk length");
        }
        pos = cr + 2;
        if buf.len() - pos < len + 2 {
            return Outcome::More;
        }
        args.push(buf[pos..pos + len].to_vec());
        pos += len + 2;
    }
    Outcome::Done(Request::Multibulk, pos, args)
}

fn actual(p: &mut RequestParser, buf: &[u8], limits: &Limits, auth: bool) -> Outcome {
    match p.parse(buf, limits, auth) {
        Ok(None) => Outcome::More,
        Err(e) => Outcome::Error(e.0),
        Ok(Some((kind, used))) => {
            let args = match kind {
                Request::Multibulk => p
                    .arg_ranges()
                    .iter()
                    .map(|&(s, e)| buf[s..e].to_vec())
                    .collect(),
                Request::Inline => p.inline_args().to_vec(),
                Request::Empty => vec![],
            };
            Outcome::Done(kind, used, args)
        }
    }
}

/// Feeds `input` in pieces of the given sizes the way a connection would:
/// append, parse until more input is needed, drop consumed requests. Calls
/// `check` with every outcome and the buffer it was computed on; returns all
/// outcomes that ended a request (completions and the final error).
fn feed(
    input: &[u8],
    cuts: &[usize],
    limits: &Limits,
    auth: bool,
    mut check: impl FnMut(&Outcome, &[u8]),
) -> Vec<Outcome> {
    let mut parser = RequestParser::new();
    let mut buf = Vec::new();
    let mut done = Vec::new();
    let mut fed = 0;
    let mut cut = cuts.iter().cycle();
    while fed < input.len() {
        let n = (*cut.next().unwrap_or(&1)).clamp(1, input.len() - fed);
        buf.extend_from_slice(&input[fed..fed + n]);
        fed += n;
        loop {
            let out = actual(&mut parser, &buf, limits, auth);
            check(&out, &buf);
            match out {
                Outcome::More => break,
                Outcome::Error(_) => {
                    done.push(out);
                    return done;
                }
                Outcome::Done(_, used, _) => {
                    buf.drain(..used);
                    done.push(out);
                    if buf.is_empty() {
                        break;
                    }
                }
            }
        }
    }
    done
}

fn encode_multibulk(args: &[Vec<u8>]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Bytes biased towards the protocol's interesting tokens, so random input
/// reaches deep into both grammars instead of failing on the first byte.
fn protocolish() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        3 => any::<u8>().prop_map(|b| vec![b]),
        2 => prop::sample::select(vec![
            &b"*"[..], b"$", b"\r\n", b"\r", b"\n", b"\0", b"-", b"+", b" ", b"\t",
            b"\x0b", b"\"", b"'", b"\\", b"x", b"4f", b"0", b"1", b"2", b"3", b"10",
            b"11", b"16384", b"16385", b"2147483648", b"a", b"PING",
        ])
        .prop_map(|t| t.to_vec()),
        2 => prop::sample::select(vec![
            &b"*1\r\n"[..], b"*2\r\n", b"*3\r\n", b"*0\r\n", b"*-1\r\n", b"$0\r\n\r\n",
            b"$1\r\n", b"$3\r\nabc\r\n", b"$2\r\n", b"*12\r\n", b"$20\r\n",
            b"*10\r\n", b"*11\r\n", b"$16384\r\n", b"$16385\r\n", b"$-1\r\n",
            b"$01\r\n", b"*2147483647\r\n", b"*2147483648\r\n", b"\"a\\x4f\"",
        ])
        .prop_map(|t| t.to_vec()),
    ];
    prop::collection::vec(piece, 0..60).prop_map(|pieces| pieces.concat())
}

/// Multibulk requests that are mostly well formed, with interesting headers
/// mixed in, so size and authentication limits are hit often.
fn near_multibulk() -> impl Strategy<Value = Vec<u8>> {
    let count = prop::sample::select(vec![
        &b"*1\r\n"[..],
        b"*2\r\n",
        b"*3\r\n",
        b"*10\r\n",
        b"*11\r\n",
        b"*0\r\n",
        b"*-1\r\n",
        b"*2147483647\r\n",
        b"*2147483648\r\n",
        b"*01\r\n",
        b"*1\rx",
    ]);
    let element = prop_oneof![
        3 => prop::collection::vec(any::<u8>(), 0..30)
            .prop_map(|d| [format!("${}\r\n", d.len()).as_bytes(), &d, b"\r\n"].concat()),
        2 => prop::sample::select(vec![
            &b"$16384\r\n"[..], b"$16385\r\n", b"$-1\r\n", b"$01\r\n", b"$24\r\n",
            b"$25\r\n", b"$\r\n", b"x\r\n", b"\r\r\n", b"\n\r\n", b"$1\0\r\n", b"$1\ra",
            b"$2\r\nabXY", b"$3",
        ])
        .prop_map(|t| t.to_vec()),
    ];
    (count, prop::collection::vec(element, 0..4))
        .prop_map(|(c, els)| [c.to_vec(), els.concat()].concat())
}

/// Inline lines dense in quoting and escaping characters.
fn near_inline() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop::sample::select(vec![
        &b" "[..],
        b"\t",
        b"\x0b",
        b"\x0c",
        b"\r",
        b"\"",
        b"'",
        b"\\",
        b"x",
        b"4",
        b"f",
        b"G",
        b"n",
        b"a",
        b"\0",
        b"ab",
        br"\\",
        br"\'",
        br#"\""#,
        br"\x4f",
        b"' '",
    ]);
    (
        prop::collection::vec(piece, 0..16),
        prop::sample::select(vec![&b"\r\n"[..], b"\n", b""]),
    )
        .prop_map(|(pieces, end)| [pieces.concat(), end.to_vec()].concat())
}

fn limits() -> impl Strategy<Value = Limits> {
    prop_oneof![
        Just(Limits::default()),
        (0u64..25).prop_map(|n| Limits {
            proto_max_bulk_len: n
        }),
    ]
}

fn cuts() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(1usize..24, 1..8)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn chunked_multibulk_round_trips(
        requests in prop::collection::vec(
            prop::collection::vec(
                prop_oneof![
                    4 => prop::collection::vec(any::<u8>(), 0..24),
                    1 => prop::collection::vec(any::<u8>(), 0..600),
                ],
                1..8,
            ),
            1..4,
        ),
        cuts in cuts(),
    ) {
        let input: Vec<u8> = requests.iter().flat_map(|r| encode_multibulk(r)).collect();
        let got = feed(&input, &cuts, &Limits::default(), false, |_, _| {});
        let want: Vec<Outcome> = requests
            .iter()
            .map(|r| Outcome::Done(Request::Multibulk, encode_multibulk(r).len(), r.clone()))
            .collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn chunked_mixed_pipeline_round_trips(
        requests in prop::collection::vec(
            (any::<bool>(), prop::collection::vec("[a-zA-Z0-9_]{1,12}", 1..6)),
            1..6,
        ),
        cuts in cuts(),
    ) {
        let mut input = Vec::new();
        let mut want = Vec::new();
        for (inline, words) in &requests {
            let args: Vec<Vec<u8>> = words.iter().map(|w| w.as_bytes().to_vec()).collect();
            let bytes = if *inline {
                format!("{}\r\n", words.join(" ")).into_bytes()
            } else {
                encode_multibulk(&args)
            };
            let kind = if *inline { Request::Inline } else { Request::Multibulk };
            want.push(Outcome::Done(kind, bytes.len(), args));
            input.extend_from_slice(&bytes);
        }
        let got = feed(&input, &cuts, &Limits::default(), false, |_, _| {});
        prop_assert_eq!(got, want);
    }

    #[test]
    fn agrees_with_reference_on_arbitrary_bytes(
        input in prop_oneof![
            protocolish(),
            prop::collection::vec(prop_oneof![near_multibulk(), near_inline()], 1..4)
                .prop_map(|parts| parts.concat()),
        ],
        cuts in cuts(),
        limits in limits(),
        auth in any::<bool>(),
    ) {
        let mut mismatch = None;
        feed(&input, &cuts, &limits, auth, |out, buf| {
            let want = reference(buf, &limits, auth);
            if mismatch.is_none() && *out != want {
                mismatch = Some((buf.to_vec(), out.clone(), want));
            }
        });
        prop_assert!(mismatch.is_none(), "{:?}", mismatch);
    }

    #[test]
    fn one_shot_agrees_with_reference(
        input in prop_oneof![
            protocolish(),
            near_multibulk(),
            near_inline(),
            prop::collection::vec(any::<u8>(), 0..200),
        ],
        limits in limits(),
        auth in any::<bool>(),
    ) {
        let mut parser = RequestParser::new();
        prop_assert_eq!(
            actual(&mut parser, &input, &limits, auth),
            reference(&input, &limits, auth)
        );
    }
}

#[test]
fn reference_agrees_on_size_limits() {
    // Too slow for the random tests, so the 64 KiB boundaries are pinned here.
    let l = Limits::default();
    let cases: Vec<Vec<u8>> = vec![
        [&b"*1"[..], &vec![b'1'; INLINE_MAX - 2]].concat(),
        [&b"*1"[..], &vec![b'1'; INLINE_MAX - 1]].concat(),
        [&b"*1\r\n$1"[..], &vec![b'1'; INLINE_MAX - 2]].concat(),
        [&b"*1\r\n$1"[..], &vec![b'1'; INLINE_MAX - 1]].concat(),
        [&b"*1\r\nX"[..], &vec![b'\0'; INLINE_MAX]].concat(),
        vec![b'a'; INLINE_MAX],
        vec![b'a'; INLINE_MAX + 1],
        [&vec![b'a'; INLINE_MAX + 1][..], b"\n"].concat(),
        [&b"a\0"[..], &vec![b'\n'; INLINE_MAX]].concat(),
    ];
    for input in cases {
        for cuts in [vec![input.len()], vec![4096], vec![7, 1, 30000]] {
            feed(&input, &cuts, &l, false, |out, buf| {
                assert_eq!(*out, reference(buf, &l, false), "len {}", buf.len());
            });
        }
    }
}
