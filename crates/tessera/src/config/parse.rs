//! Byte-level helpers that reproduce how redis-server 7.0 reads configuration
//! text: line splitting with quotes and escapes, its strict and lenient integer
//! readers, memory sizes with units, quoting for output, and the keyspace
//! event flag letters.

/// `isspace()` of the C locale.
pub(crate) fn is_c_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Splits one configuration line into arguments.
///
/// Words are separated by whitespace. A word may contain double-quoted parts
/// (with `\n \r \t \b \a \\ \"` and `\xHH` escapes) or single-quoted parts
/// (where only `\'` is special). A closing quote must be followed by
/// whitespace or the end of the line. Returns `None` for unbalanced quotes.
pub(crate) fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut args = Vec::new();
    let n = line.len();
    let at = |i: usize| -> Option<u8> { line.get(i).copied() };
    let mut i = 0;
    loop {
        while i < n && is_c_space(line[i]) {
            i += 1;
        }
        if i >= n {
            return Some(args);
        }
        let mut cur = Vec::new();
        let mut in_dq = false;
        let mut in_sq = false;
        loop {
            let c = match at(i) {
                Some(c) => c,
                None => {
                    if in_dq || in_sq {
                        return None;
                    }
                    break;
                }
            };
            if in_dq {
                if c == b'\\' && at(i + 1) == Some(b'x') {
                    if let (Some(h), Some(l)) =
                        (at(i + 2).and_then(hex_val), at(i + 3).and_then(hex_val))
                    {
                        cur.push(h * 16 + l);
                        i += 4;
                        continue;
                    }
                }
                if c == b'\\' && i + 1 < n {
                    i += 1;
                    cur.push(match line[i] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                } else if c == b'"' {
                    if let Some(next) = at(i + 1) {
                        if !is_c_space(next) {
                            return None;
                        }
                    }
                    i += 1;
                    break;
                } else {
                    cur.push(c);
                }
            } else if in_sq {
                if c == b'\\' && at(i + 1) == Some(b'\'') {
                    i += 1;
                    cur.push(b'\'');
                } else if c == b'\'' {
                    if let Some(next) = at(i + 1) {
                        if !is_c_space(next) {
                            return None;
                        }
                    }
                    i += 1;
                    break;
                } else {
                    cur.push(c);
                }
            } else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => {
                        i += 1;
                        break;
                    }
                    b'"' => in_dq = true,
                    b'\'' => in_sq = true,
                    _ => cur.push(c),
                }
            }
            i += 1;
        }
        args.push(cur);
    }
}

/// Splits on every single space, keeping empty pieces; an empty input gives
/// no pieces. This is how CONFIG SET breaks up the value of a multi-argument
/// directive such as `save`.
pub(crate) fn split_spaces(value: &[u8]) -> Vec<&[u8]> {
    if value.is_empty() {
        return Vec::new();
    }
    value.split(|&c| c == b' ').collect()
}

/// Trims the given characters from both ends.
pub(crate) fn trim_set<'a>(s: &'a [u8], set: &[u8]) -> &'a [u8] {
    let start = s.iter().position(|c| !set.contains(c)).unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|c| !set.contains(c))
        .map_or(start, |p| p + 1);
    &s[start..end.max(start)]
}

/// Strict integer reader: an optional `-`, then `0` alone or a digit string
/// without leading zeros, nothing else, within the i64 range.
pub(crate) fn strict_i64(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s.split_first() {
        None => return None,
        Some((b'-', rest)) => (true, rest),
        Some(_) => (false, s),
    };
    match digits {
        [b'0'] if !neg => return Some(0),
        [b'1'..=b'9', ..] => {}
        _ => return None,
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    if neg {
        if v > (i64::MAX as u64) + 1 {
            None
        } else {
            Some((v as i64).wrapping_neg())
        }
    } else {
        i64::try_from(v).ok()
    }
}

/// Lenient reader in the manner of C `strtoll(s, &end, base)`: leading
/// whitespace and a sign are allowed; returns the value (saturated on
/// overflow), whether it overflowed, and whether the whole input was used.
/// As in C, an input with no digits "ends" at its first byte, so only the
/// empty string counts as fully used in that case.
pub(crate) fn c_strtoll(s: &[u8], base: u32) -> (i64, bool, bool) {
    let mut i = 0;
    while i < s.len() && is_c_space(s[i]) {
        i += 1;
    }
    let mut neg = false;
    if let Some(&c) = s.get(i) {
        if c == b'+' || c == b'-' {
            neg = c == b'-';
            i += 1;
        }
    }
    let start = i;
    let mut v: u128 = 0;
    let mut overflow = false;
    while let Some(d) = s.get(i).and_then(|&c| char::from(c).to_digit(base)) {
        v = v * u128::from(base) + u128::from(d);
        if v > u128::from(u64::MAX) {
            v = u128::from(u64::MAX);
            overflow = true;
        }
        i += 1;
    }
    if i == start {
        return (0, false, s.is_empty());
    }
    let value = if neg {
        if v > (i64::MAX as u128) + 1 {
            overflow = true;
            i64::MIN
        } else {
            (v as i64).wrapping_neg()
        }
    } else if v > i64::MAX as u128 {
        overflow = true;
        i64::MAX
    } else {
        v as i64
    };
    (value, overflow, i == s.len())
}

/// Memory value: digits with an optional unit (`b`, `k`=1000, `kb`=1024,
/// `m`, `mb`, `g`, `gb`; any case). Like redis-server 7.0 it saturates on a
/// digit overflow and wraps when the unit multiplication overflows.
pub(crate) fn mem_to_u64(s: &[u8]) -> Option<u64> {
    if s.first() == Some(&b'-') {
        return None;
    }
    let u = s
        .iter()
        .position(|c| !c.is_ascii_digit())
        .unwrap_or(s.len());
    let unit = s[u..].to_ascii_lowercase();
    let mul: u64 = match unit.as_slice() {
        b"" | b"b" => 1,
        b"k" => 1000,
        b"kb" => 1024,
        b"m" => 1000 * 1000,
        b"mb" => 1024 * 1024,
        b"g" => 1000 * 1000 * 1000,
        b"gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    let digits = &s[..u];
    if digits.len() >= 128 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in digits {
        v = v.saturating_mul(10).saturating_add(u64::from(c - b'0'));
    }
    Some(v.wrapping_mul(mul))
}

/// Memory amount as CONFIG REWRITE writes it: the largest of gb/mb/kb that
/// divides it exactly, else plain bytes.
pub(crate) fn format_memory(bytes: i64) -> String {
    const KB: i64 = 1024;
    const MB: i64 = 1024 * 1024;
    const GB: i64 = 1024 * 1024 * 1024;
    if bytes != 0 && bytes % GB == 0 {
        format!("{}gb", bytes / GB)
    } else if bytes != 0 && bytes % MB == 0 {
        format!("{}mb", bytes / MB)
    } else if bytes != 0 && bytes % KB == 0 {
        format!("{}kb", bytes / KB)
    } else {
        bytes.to_string()
    }
}

/// Double-quoted, escaped form of a byte string, readable back by
/// [`split_args`].
pub(crate) fn repr(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() + 2);
    out.push(b'"');
    for &c in s {
        match c {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'"' => out.extend_from_slice(b"\\\""),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x07 => out.extend_from_slice(b"\\a"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x20..=0x7e => out.push(c),
            _ => out.extend_from_slice(format!("\\x{c:02x}").as_bytes()),
        }
    }
    out.push(b'"');
    out
}

/// A float as Redis's `string2d` reads it (hex floats included; no
/// leading space, NaN or overflow).
pub(crate) fn strict_f64(s: &[u8]) -> Option<f64> {
    crate::util::numbers::parse_f64(s)
}

/// `%f` then trailing zeros (and a trailing dot) removed.
pub(crate) fn format_percentile(v: f64) -> String {
    let s = format!("{v:.6}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Message text of an I/O error the way `strerror()` words it.
pub(crate) fn strerror(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error ") {
        Some(p) => s[..p].to_string(),
        None => s,
    }
}

/// Keyspace notification classes, as set by `notify-keyspace-events`.
/// The bit values are Tessera's own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct KeyspaceEvents(pub u32);

impl KeyspaceEvents {
    /// `K`: publish on `__keyspace@<db>__:<key>`.
    pub const KEYSPACE: u32 = 1 << 0;
    /// `E`: publish on `__keyevent@<db>__:<event>`.
    pub const KEYEVENT: u32 = 1 << 1;
    /// `g`: generic commands (DEL, EXPIRE, RENAME, ...).
    pub const GENERIC: u32 = 1 << 2;
    /// `$`: string commands.
    pub const STRING: u32 = 1 << 3;
    /// `l`: list commands.
    pub const LIST: u32 = 1 << 4;
    /// `s`: set commands.
    pub const SET: u32 = 1 << 5;
    /// `h`: hash commands.
    pub const HASH: u32 = 1 << 6;
    /// `z`: sorted set commands.
    pub const ZSET: u32 = 1 << 7;
    /// `x`: expired events.
    pub const EXPIRED: u32 = 1 << 8;
    /// `e`: evicted events.
    pub const EVICTED: u32 = 1 << 9;
    /// `t`: stream commands.
    pub const STREAM: u32 = 1 << 10;
    /// `m`: key-miss events (not part of `A`).
    pub const KEY_MISS: u32 = 1 << 11;
    /// `d`: module key type events.
    pub const MODULE: u32 = 1 << 12;
    /// `n`: new key events (not part of `A`).
    pub const NEW: u32 = 1 << 13;
    /// `A`: alias for `g$lshzxetd`.
    pub const ALL: u32 = Self::GENERIC
        | Self::STRING
        | Self::LIST
        | Self::SET
        | Self::HASH
        | Self::ZSET
        | Self::EXPIRED
        | Self::EVICTED
        | Self::STREAM
        | Self::MODULE;

    /// True when any of `bits` is set.
    pub fn has(self, bits: u32) -> bool {
        self.0 & bits != 0
    }

    /// True when nothing at all is published (neither K nor E set).
    pub fn is_off(self) -> bool {
        self.0 & (Self::KEYSPACE | Self::KEYEVENT) == 0
    }

    /// Parses the flag letters; `None` on an unknown letter.
    pub fn parse(s: &[u8]) -> Option<KeyspaceEvents> {
        let mut f = 0;
        for &c in s {
            f |= match c {
                b'A' => Self::ALL,
                b'g' => Self::GENERIC,
                b'$' => Self::STRING,
                b'l' => Self::LIST,
                b's' => Self::SET,
                b'h' => Self::HASH,
                b'z' => Self::ZSET,
                b'x' => Self::EXPIRED,
                b'e' => Self::EVICTED,
                b'K' => Self::KEYSPACE,
                b'E' => Self::KEYEVENT,
                b't' => Self::STREAM,
                b'm' => Self::KEY_MISS,
                b'd' => Self::MODULE,
                b'n' => Self::NEW,
                _ => return None,
            };
        }
        Some(KeyspaceEvents(f))
    }

    /// The letters as CONFIG GET prints them.
    pub fn to_letters(self) -> String {
        let f = self.0;
        let mut s = String::new();
        if f & Self::ALL == Self::ALL {
            s.push('A');
        } else {
            for (bit, c) in [
                (Self::GENERIC, 'g'),
                (Self::STRING, '$'),
                (Self::LIST, 'l'),
                (Self::SET, 's'),
                (Self::HASH, 'h'),
                (Self::ZSET, 'z'),
                (Self::EXPIRED, 'x'),
                (Self::EVICTED, 'e'),
                (Self::STREAM, 't'),
                (Self::MODULE, 'd'),
                (Self::NEW, 'n'),
            ] {
                if f & bit != 0 {
                    s.push(c);
                }
            }
        }
        for (bit, c) in [
            (Self::KEYSPACE, 'K'),
            (Self::KEYEVENT, 'E'),
            (Self::KEY_MISS, 'm'),
        ] {
            if f & bit != 0 {
                s.push(c);
            }
        }
        s
    }
}
