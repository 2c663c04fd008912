//! Reading AOF command files: RESP arrays of bulk strings, with the
//! `#TS:` annotations aof-timestamp-enabled writes. The end is classified
//! as complete, torn (the file stops inside a command, or in a tail of
//! zero bytes a power cut leaves behind a grown file) or corrupt, and a
//! transaction left open at the end is reported with its start, so the
//! caller can cut the file back to the last whole command.

/// How a file ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// Every byte was a whole command.
    Complete,
    /// The file stops (or turns into zero bytes) inside a command, or
    /// inside a MULTI that has no EXEC: what comes after `valid_len` must
    /// be cut off.
    Torn { valid_len: usize, open_multi: bool },
    /// Bytes that are not a command, at `at`.
    Corrupt { at: usize },
}

/// One command parsed from `data` at `*pos` (advanced past it), None when
/// the data ends first, Err(offset) when it is malformed.
fn parse_command(data: &[u8], pos: &mut usize) -> Result<Option<Vec<Vec<u8>>>, usize> {
    let start = *pos;
    let line = |p: usize| -> Result<Option<(i64, usize)>, usize> {
        let Some(rel) = memchr::memchr(b'\n', &data[p..]) else {
            return Ok(None);
        };
        let end = p + rel;
        if end == p || data[end - 1] != b'\r' {
            return Err(p);
        }
        let text = std::str::from_utf8(&data[p + 1..end - 1]).map_err(|_| p)?;
        let n: i64 = text.parse().map_err(|_| p)?;
        Ok(Some((n, end + 1)))
    };
    if data[start] != b'*' {
        return Err(start);
    }
    let Some((argc, mut p)) = line(start)? else {
        return Ok(None);
    };
    if !(1..=1 << 20).contains(&argc) {
        return Err(start);
    }
    let mut args = Vec::with_capacity(argc as usize);
    for _ in 0..argc {
        if p >= data.len() {
            return Ok(None);
        }
        if data[p] != b'$' {
            return Err(p);
        }
        let Some((len, q)) = line(p)? else {
            return Ok(None);
        };
        if len < 0 {
            return Err(p);
        }
        let len = len as usize;
        let Some(end) = q.checked_add(len).and_then(|e| e.checked_add(2)) else {
            return Err(p);
        };
        if end > data.len() {
            return Ok(None);
        }
        if &data[q + len..end] != b"\r\n" {
            return Err(q + len);
        }
        args.push(data[q..q + len].to_vec());
        p = end;
    }
    *pos = p;
    Ok(Some(args))
}

/// Where a command stands in a transaction, as the command table says
/// (the caller's classifier: this layer knows no command names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxMark {
    Opens,
    Closes,
    Neither,
}

/// Feeds every command of `data` to `f` in order; stops at the first
/// error `f` returns. `mark` tells MULTI and EXEC apart.
pub fn read_commands(
    data: &[u8],
    mark: &dyn Fn(&[u8]) -> TxMark,
    f: &mut dyn FnMut(Vec<Vec<u8>>) -> Result<(), String>,
) -> Result<End, String> {
    let mut pos = 0;
    let mut multi_at: Option<usize> = None;
    let zeros_from = |p: usize| data[p..].iter().all(|&b| b == 0);
    while pos < data.len() {
        if data[pos] == b'#' {
            match memchr::memchr(b'\n', &data[pos..]) {
                Some(rel) => {
                    pos += rel + 1;
                    continue;
                }
                None => {
                    return Ok(End::Torn {
                        valid_len: multi_at.unwrap_or(pos),
                        open_multi: multi_at.is_some(),
                    })
                }
            }
        }
        let start = pos;
        match parse_command(data, &mut pos) {
            Ok(Some(args)) => {
                match mark(&args[0]) {
                    TxMark::Opens => multi_at = Some(start),
                    TxMark::Closes => multi_at = None,
                    TxMark::Neither => {}
                }
                f(args)?;
            }
            Ok(None) => {
                return Ok(End::Torn {
                    valid_len: multi_at.unwrap_or(start),
                    open_multi: multi_at.is_some(),
                })
            }
            Err(at) => {
                if zeros_from(start) {
                    return Ok(End::Torn {
                        valid_len: multi_at.unwrap_or(start),
                        open_multi: multi_at.is_some(),
                    });
                }
                return Ok(End::Corrupt { at });
            }
        }
    }
    Ok(match multi_at {
        Some(at) => End::Torn {
            valid_len: at,
            open_multi: true,
        },
        None => End::Complete,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(data: &[u8]) -> (Vec<Vec<Vec<u8>>>, End) {
        let mut cmds = Vec::new();
        let mark = |name: &[u8]| match name {
            b"MULTI" => TxMark::Opens,
            b"EXEC" => TxMark::Closes,
            _ => TxMark::Neither,
        };
        let end = read_commands(data, &mark, &mut |c| {
            cmds.push(c);
            Ok(())
        })
        .expect("no callback error");
        (cmds, end)
    }

    #[test]
    fn ends_are_classified() {
        let one = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
        assert_eq!(
            all(one),
            (vec![vec![b"GET".to_vec(), b"k".to_vec()]], End::Complete)
        );
        let torn = [&one[..], b"*3\r\n$3\r\nSET"].concat();
        assert_eq!(
            all(&torn).1,
            End::Torn {
                valid_len: one.len(),
                open_multi: false
            }
        );
        let zeros = [&one[..], &[0u8; 64][..]].concat();
        assert_eq!(
            all(&zeros).1,
            End::Torn {
                valid_len: one.len(),
                open_multi: false
            }
        );
        let open = [&one[..], b"*1\r\n$5\r\nMULTI\r\n", &one[..]].concat();
        assert_eq!(
            all(&open).1,
            End::Torn {
                valid_len: one.len(),
                open_multi: true
            }
        );
        let bad = [&one[..], b"hello world"].concat();
        assert_eq!(all(&bad).1, End::Corrupt { at: one.len() });
        let ts = [b"#TS:1700000000\r\n".as_slice(), &one[..]].concat();
        assert_eq!(all(&ts).1, End::Complete);
        for cut in 0..one.len() {
            let (_, end) = all(&one[..cut]);
            assert!(matches!(end, End::Torn { .. } | End::Complete), "{cut}");
        }
    }
}
