//! Redis-style glob matching (`KEYS`, `SCAN … MATCH`, `PSUBSCRIBE`, ACL key
//! and channel patterns, `CONFIG GET`, …).
//!
//! [`glob_match`] returns exactly what Redis 7.0's `stringmatchlen` returns,
//! quirks included:
//!
//! * `*` matches any run of bytes (consecutive stars collapse), `?` any one
//!   byte, `\x` the byte `x` literally (a trailing lone `\` matches a `\`).
//! * `[...]` is a byte class: a leading `^` negates it, `\x` inside it is a
//!   literal `x` (compared case-sensitively even when `nocase`), `a-z` is a
//!   range and reversed ranges (`[z-a]`) work. Range bounds are compared as
//!   C `char`, i.e. *signed* on x86-64, so bytes >= 0x80 sort below 0.
//!   An unterminated class runs to the end of the pattern (so `[abc` matches
//!   one of `a`, `b`, `c`; a bare `[` matches nothing and a bare `[^` any
//!   byte). `]` right after `[` (or `[^`) closes an empty class.
//! * The empty string is matched only by the empty pattern (not even by
//!   `*`; Redis' callers special-case a lone `*` themselves).
//! * Redis caps star nesting at 1000: once matching reaches the 1001st
//!   (collapsed) star group, and that star is not the pattern's last byte,
//!   the whole match fails.
//!
//! Unlike Redis' recursive implementation this one is iterative (it only
//! ever needs to resume at the most recent star, which gives the same
//! answers), so it runs in O(pattern × string) time and constant stack.

/// Star groups a match may pass through before Redis gives up (its
/// `nesting > 1000` guard).
const MAX_STAR_NESTING: usize = 1000;

/// Returns whether `string` matches the glob `pattern`, with Redis 7.0's
/// `stringmatchlen` semantics; `nocase` folds ASCII letters (Redis uses C
/// `tolower` in the "C" locale, which only touches `A`-`Z`).
pub fn glob_match(pattern: &[u8], string: &[u8], nocase: bool) -> bool {
    // Redis reads one byte past the pattern's end in a few places; its
    // patterns are always NUL-terminated sds strings, so that byte is 0.
    let pat = |i: usize| -> u8 { pattern.get(i).copied().unwrap_or(0) };
    let fold = |b: u8| -> u8 {
        if nocase {
            b.to_ascii_lowercase()
        } else {
            b
        }
    };

    let plen = pattern.len();
    let slen = string.len();
    let mut pi = 0usize;
    let mut si = 0usize;
    let mut stars = 0usize;
    // Where to resume after a mismatch: the pattern index just past the
    // most recent star group, and the string index that star last tried.
    let mut resume: Option<(usize, usize)> = None;

    loop {
        // One step of Redis' `while (patternLen && stringLen)` loop.
        let step_ok = if pi < plen && si < slen {
            let c = string[si];
            match pattern[pi] {
                b'*' => {
                    while pat(pi + 1) == b'*' {
                        pi += 1;
                    }
                    if pi + 1 == plen {
                        return true;
                    }
                    stars += 1;
                    if stars > MAX_STAR_NESTING {
                        return false;
                    }
                    pi += 1;
                    resume = Some((pi, si));
                    continue;
                }
                b'?' => {
                    pi += 1;
                    true
                }
                b'[' => {
                    let (matched, next) = match_class(pattern, pi, c, nocase);
                    pi = next;
                    matched
                }
                b'\\' => {
                    if plen - pi >= 2 {
                        pi += 1;
                    }
                    let ok = fold(pattern[pi]) == fold(c);
                    pi += 1;
                    ok
                }
                p => {
                    pi += 1;
                    fold(p) == fold(c)
                }
            }
        } else {
            // Loop exit: matched iff both are used up.
            if pi >= plen && si >= slen {
                return true;
            }
            false
        };

        if step_ok {
            si += 1;
            if si == slen {
                // String used up: only trailing stars may remain.
                while pat(pi) == b'*' {
                    pi += 1;
                }
                if pi >= plen {
                    return true;
                }
            } else {
                continue;
            }
        }

        // Mismatch (or string exhausted with pattern left): the most recent
        // star swallows one more byte, if it still can.
        match resume {
            Some((rp, rs)) if rs + 1 < slen => {
                resume = Some((rp, rs + 1));
                pi = rp;
                si = rs + 1;
            }
            _ => return false,
        }
    }
}

/// Matches byte `c` against the class starting at `pattern[start] == b'['`.
/// Returns whether it matched and the pattern index just past the class.
fn match_class(pattern: &[u8], start: usize, c: u8, nocase: bool) -> (bool, usize) {
    let plen = pattern.len();
    let pat = |i: usize| -> u8 { pattern.get(i).copied().unwrap_or(0) };
    let mut pi = start + 1;
    let negate = pat(pi) == b'^';
    if negate {
        pi += 1;
    }
    let mut matched = false;
    loop {
        let rem = plen.saturating_sub(pi);
        let p = pat(pi);
        if p == b'\\' && rem >= 2 {
            pi += 1;
            if pattern[pi] == c {
                matched = true;
            }
        } else if p == b']' {
            break;
        } else if rem == 0 {
            // Unterminated: the class ends with the pattern.
            pi = plen.saturating_sub(1);
            break;
        } else if rem >= 3 && pattern[pi + 1] == b'-' {
            // C `char` is signed on x86-64; Redis compares these as ints.
            let mut lo = i32::from(p as i8);
            let mut hi = i32::from(pattern[pi + 2] as i8);
            let mut ch = i32::from(c as i8);
            if lo > hi {
                std::mem::swap(&mut lo, &mut hi);
            }
            if nocase {
                lo = c_tolower(lo);
                hi = c_tolower(hi);
                ch = c_tolower(ch);
            }
            pi += 2;
            if ch >= lo && ch <= hi {
                matched = true;
            }
        } else if nocase {
            if p.eq_ignore_ascii_case(&c) {
                matched = true;
            }
        } else if p == c {
            matched = true;
        }
        pi += 1;
    }
    if negate {
        matched = !matched;
    }
    // `pi` is at the closing `]` (or the last pattern byte); step past it.
    (matched, pi + 1)
}

/// C `tolower` in the "C" locale on a (possibly negative) `char` value.
fn c_tolower(v: i32) -> i32 {
    if (i32::from(b'A')..=i32::from(b'Z')).contains(&v) {
        v + 32
    } else {
        v
    }
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    fn m(p: &str, s: &str) -> bool {
        glob_match(p.as_bytes(), s.as_bytes(), false)
    }
    fn mi(p: &str, s: &str) -> bool {
        glob_match(p.as_bytes(), s.as_bytes(), true)
    }

    #[test]
    fn literals_and_question_marks() {
        assert!(m("hello", "hello"));
        assert!(!m("hello", "hellO"));
        assert!(!m("hello", "hell"));
        assert!(!m("hell", "hello"));
        assert!(m("h?llo", "hallo"));
        assert!(!m("h?llo", "hllo"));
        assert!(m("???", "abc"));
        assert!(!m("???", "ab"));
        assert!(m("", ""));
        assert!(!m("", "a"));
        assert!(!m("a", ""));
    }

    #[test]
    fn stars() {
        assert!(m("*", "anything"));
        assert!(m("h*o", "hello"));
        assert!(m("h*o", "ho"));
        assert!(m("h***o", "ho"));
        assert!(m("*llo", "hello"));
        assert!(m("he*", "he"));
        assert!(m("he**", "he"));
        assert!(m("*a*b*c*", "xxaxxbxxcxx"));
        assert!(!m("*a*b*c*", "xxaxxcxxbxx"));
        assert!(m("a*a", "aa"));
        assert!(!m("a*a", "a"));
        assert!(m("*.txt", "a.b.txt"));
        assert!(!m("*.txt", "a.txt.bak"));
        assert!(m("a*b?d", "axxxbcd"));
        assert!(m("*?", "a"));
        assert!(!m("*?", ""));
    }

    #[test]
    fn empty_string_only_matches_empty_pattern() {
        // stringmatchlen never enters its loop for an empty string.
        assert!(!m("*", ""));
        assert!(!m("**", ""));
        assert!(!m("[^", ""));
        assert!(m("", ""));
    }

    #[test]
    fn classes() {
        assert!(m("h[ae]llo", "hello"));
        assert!(m("h[ae]llo", "hallo"));
        assert!(!m("h[ae]llo", "hillo"));
        assert!(m("h[^e]llo", "hallo"));
        assert!(!m("h[^e]llo", "hello"));
        assert!(m("h[a-b]llo", "hbllo"));
        assert!(!m("h[a-b]llo", "hcllo"));
        // Reversed range.
        assert!(m("[z-a]", "m"));
        assert!(m("[9-0]x", "5x"));
        // Empty class matches nothing; negated empty class anything.
        assert!(!m("[]", "]"));
        assert!(!m("[]a", "a"));
        assert!(m("[^]", "x"));
        assert!(m("[^]a", "xa"));
        // `-` at the edges.
        assert!(m("[-a]", "-"));
        // `b-]` is a range (`]`..`b` after the swap), so this class is
        // unterminated and also swallows the `x`: {a, ]..b, x}.
        assert!(!m("[ab-]x", "-x"));
        assert!(m("[ab-]x", "x"));
        assert!(m("[ab-]x", "^"));
        assert!(m("[a-z-]", "-"));
        assert!(m("[a-]", "]"));
        assert!(m("[a-]", "_"));
        assert!(!m("[a-]", "-"));
        // Escapes inside classes.
        assert!(m("[\\]]", "]"));
        assert!(m("[\\-]", "-"));
        assert!(m("[a\\-z]", "-"));
        assert!(!m("[a\\-z]", "b"));
        assert!(m("[\\^a]", "^"));
        // `\]` is an escaped `]`, leaving the class unterminated.
        assert!(m("[x\\]", "]"));
        assert!(!m("[x\\]", "\\"));
        // No `!` negation, only `^`.
        assert!(!m("[!a]", "b"));
        assert!(m("[^^]", "a"));
        assert!(!m("[^^]", "^"));
    }

    #[test]
    fn unterminated_classes() {
        assert!(m("[abc", "a"));
        assert!(m("[abc", "c"));
        assert!(!m("[abc", "d"));
        assert!(!m("[abc", "ab"));
        assert!(!m("[", "["));
        assert!(!m("[", "a"));
        assert!(m("[^", "a"));
        assert!(m("[^", "["));
        assert!(!m("[^", "ab"));
        assert!(m("x[a-", "xa"));
        assert!(m("x[a-", "x-"));
        assert!(!m("x[a-", "xb"));
        assert!(m("[\\", "\\"));
        assert!(m("[a-z", "q"));
        assert!(m("*[a-z", "12q"));
    }

    #[test]
    fn escapes_outside_classes() {
        assert!(m("\\*", "*"));
        assert!(!m("\\*", "a"));
        assert!(m("\\?", "?"));
        assert!(!m("\\?", "x"));
        assert!(m("\\[a]", "[a]"));
        assert!(m("a\\\\b", "a\\b"));
        assert!(m("\\a", "a"));
        // Trailing backslash matches a literal backslash.
        assert!(m("a\\", "a\\"));
        assert!(!m("a\\", "a"));
        assert!(m("\\", "\\"));
    }

    #[test]
    fn nocase() {
        assert!(mi("HeLLo", "hello"));
        assert!(mi("h*O", "HELLO"));
        assert!(mi("[A-C]x", "bX"));
        assert!(mi("[abc]", "B"));
        assert!(mi("\\H", "h"));
        // Escaped bytes inside a class stay case-sensitive.
        assert!(!mi("[\\Y]", "y"));
        assert!(mi("[\\y]", "y"));
        // Swap happens before folding: [Z-a] folds to the empty [z-a'].
        assert!(!mi("[Z-a]", "_"));
        assert!(m("[Z-a]", "_"));
        assert!(!m("HeLLo", "hello"));
    }

    #[test]
    fn signed_char_ranges() {
        // Bytes >= 0x80 are negative C chars: [\x00-\xff] is really
        // [-1, 0], matching only 0xff and 0x00.
        assert!(glob_match(b"[\x00-\xff]", b"\xff", false));
        assert!(glob_match(b"[\x00-\xff]", b"\x00", false));
        assert!(!glob_match(b"[\x00-\xff]", b"a", false));
        assert!(!glob_match(b"[\x00-\xff]", b"\x80", false));
        assert!(glob_match(b"[\x80-\xff]", b"\xc0", false));
        assert!(!glob_match(b"[a-\xff]", b"b", false));
        assert!(glob_match(b"[a-\xff]", b"\x00", false));
        assert!(glob_match(b"\xe9*", b"\xe9t\xe9", false));
        assert!(!glob_match(b"\xc9", b"\xe9", true));
    }

    #[test]
    fn star_nesting_limit() {
        let s = "a".repeat(3000);
        let p1000 = "*a".repeat(1000);
        assert!(m(&p1000, &s));
        let p1001 = "*a".repeat(1001);
        assert!(!m(&p1001, &s));
        // A final star is not a nesting level.
        assert!(m(&format!("{p1000}*"), &s));
        assert!(m(&"a*".repeat(1001), &s));
        assert!(!m(&"a*".repeat(1002), &s));
        // Runs of stars collapse into one group.
        assert!(m(&format!("{}a", "*".repeat(5000)), "aaaa"));
    }

    #[test]
    fn no_exponential_blowup() {
        let s = "a".repeat(100_000);
        let p = "a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b";
        let start = std::time::Instant::now();
        assert!(!m(p, &s));
        assert!(!m(&"*a".repeat(500).replace("a*a*a", "a*a*b"), &s));
        assert!(m(&"a*".repeat(20), &s));
        assert!(start.elapsed().as_secs() < 5);
    }

    #[test]
    fn embedded_nul_bytes() {
        assert!(glob_match(b"a\0*", b"a\0b", false));
        assert!(!glob_match(b"a\0", b"a", false));
        assert!(glob_match(b"[\0]", b"\0", false));
    }
}
