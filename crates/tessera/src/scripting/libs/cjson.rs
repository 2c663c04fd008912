//! `cjson`: lua-cjson 2.1.0 as built into redis-server 7.0.
//!
//! Each module table (the global one and every `cjson.new()`) owns a
//! configuration userdata shared as upvalue 1 by all its functions, so
//! settings persist for the life of the Lua state, as in Redis.

use std::ffi::c_int;

use super::{
    check_integer, check_lstring, ffi, fmt_g, lua_fn, push_bytes, set_fn, set_str, strtod,
    type_name, LErr, LRes, State,
};

#[repr(C)]
#[derive(Clone, Copy)]
struct Config {
    encode_sparse_convert: c_int,
    encode_sparse_ratio: c_int,
    encode_sparse_safe: c_int,
    encode_max_depth: c_int,
    encode_invalid_numbers: c_int, // 0 off, 1 on, 2 null
    encode_number_precision: c_int,
    encode_keep_buffer: c_int,
    decode_invalid_numbers: c_int,
    decode_max_depth: c_int,
}

const DEFAULT: Config = Config {
    encode_sparse_convert: 0,
    encode_sparse_ratio: 2,
    encode_sparse_safe: 10,
    encode_max_depth: 1000,
    encode_invalid_numbers: 0,
    encode_number_precision: 14,
    encode_keep_buffer: 1,
    decode_invalid_numbers: 1,
    decode_max_depth: 1000,
};

unsafe fn fetch_config<'a>(l: State) -> LRes<&'a mut Config> {
    let p = ffi::lua_touserdata(l, ffi::lua_upvalueindex(1)) as *mut Config;
    if p.is_null() {
        return Err(LErr::Msg("BUG: Unable to fetch CJSON configuration".into()));
    }
    Ok(&mut *p)
}

// ---------------------------------------------------------------------------
// Configuration functions
// ---------------------------------------------------------------------------

unsafe fn arg_init<'a>(l: State, args: c_int) -> LRes<&'a mut Config> {
    if ffi::lua_gettop(l) > args {
        return Err(LErr::Arg(args + 1, "found too many arguments".into()));
    }
    while ffi::lua_gettop(l) < args {
        ffi::lua_pushnil(l);
    }
    fetch_config(l)
}

unsafe fn integer_option(
    l: State,
    idx: c_int,
    setting: &mut c_int,
    min: c_int,
    max: c_int,
) -> LRes<()> {
    if ffi::lua_type(l, idx) != ffi::LUA_TNIL {
        let value = check_integer(l, idx)? as c_int;
        if !(min <= value && value <= max) {
            return Err(LErr::Arg(
                1,
                format!("expected integer between {min} and {max}"),
            ));
        }
        *setting = value;
    }
    ffi::lua_pushinteger(l, *setting as ffi::lua_Integer);
    Ok(())
}

const BOOL_OPTIONS: &[&str] = &["off", "on"];

unsafe fn enum_option(
    l: State,
    idx: c_int,
    setting: &mut c_int,
    options: Option<&[&str]>,
) -> LRes<()> {
    let options = options.unwrap_or(BOOL_OPTIONS);
    let bool_true = 1;
    if ffi::lua_type(l, idx) != ffi::LUA_TNIL {
        if ffi::lua_type(l, idx) == ffi::LUA_TBOOLEAN {
            *setting = ffi::lua_toboolean(l, idx) * bool_true;
        } else {
            // luaL_checkoption(l, idx, NULL, options)
            let s = check_lstring(l, idx)?;
            let s = match s.iter().position(|&c| c == 0) {
                Some(n) => &s[..n],
                None => s,
            };
            match options.iter().position(|o| o.as_bytes() == s) {
                Some(i) => *setting = i as c_int,
                None => {
                    return Err(LErr::Arg(
                        idx,
                        format!("invalid option '{}'", String::from_utf8_lossy(s)),
                    ))
                }
            }
        }
    }
    if *setting == 0 || *setting == bool_true {
        ffi::lua_pushboolean(l, *setting);
    } else {
        push_bytes(l, options[*setting as usize].as_bytes());
    }
    Ok(())
}

unsafe fn cfg_encode_sparse_array(l: State) -> LRes<c_int> {
    let cfg = arg_init(l, 3)?;
    enum_option(l, 1, &mut cfg.encode_sparse_convert, None)?;
    integer_option(l, 2, &mut cfg.encode_sparse_ratio, 0, c_int::MAX)?;
    integer_option(l, 3, &mut cfg.encode_sparse_safe, 0, c_int::MAX)?;
    Ok(3)
}

unsafe fn cfg_encode_max_depth(l: State) -> LRes<c_int> {
    let cfg = arg_init(l, 1)?;
    integer_option(l, 1, &mut cfg.encode_max_depth, 1, c_int::MAX)?;
    Ok(1)
}

unsafe fn cfg_decode_max_depth(l: State) -> LRes<c_int> {
    let cfg = arg_init(l, 1)?;
    integer_option(l, 1, &mut cfg.decode_max_depth, 1, c_int::MAX)?;
    Ok(1)
}

unsafe fn cfg_encode_number_precision(l: State) -> LRes<c_int> {
    let cfg = arg_init(l, 1)?;
    integer_option(l, 1, &mut cfg.encode_number_precision, 1, 14)?;
    Ok(1)
}

unsafe fn cfg_encode_keep_buffer(l: State) -> LRes<c_int> {
    let cfg = arg_init(l, 1)?;
    enum_option(l, 1, &mut cfg.encode_keep_buffer, None)?;
    Ok(1)
}

unsafe fn cfg_encode_invalid_numbers(l: State) -> LRes<c_int> {
    let cfg = arg_init(l, 1)?;
    enum_option(
        l,
        1,
        &mut cfg.encode_invalid_numbers,
        Some(&["off", "on", "null"]),
    )?;
    Ok(1)
}

unsafe fn cfg_decode_invalid_numbers(l: State) -> LRes<c_int> {
    let cfg = arg_init(l, 1)?;
    enum_option(l, 1, &mut cfg.decode_invalid_numbers, None)?;
    Ok(1)
}

// ---------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------

unsafe fn encode_exception(l: State, idx: c_int, reason: &str) -> LErr {
    LErr::Msg(format!(
        "Cannot serialise {}: {}",
        type_name(ffi::lua_type(l, idx)),
        reason
    ))
}

fn append_string(out: &mut Vec<u8>, s: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(s.len() + 2);
    out.push(b'"');
    for &c in s {
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            8 => out.extend_from_slice(b"\\b"),
            9 => out.extend_from_slice(b"\\t"),
            10 => out.extend_from_slice(b"\\n"),
            12 => out.extend_from_slice(b"\\f"),
            13 => out.extend_from_slice(b"\\r"),
            0..=31 | 127 => {
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(c >> 4) as usize]);
                out.push(HEX[(c & 15) as usize]);
            }
            _ => out.push(c),
        }
    }
    out.push(b'"');
}

unsafe fn append_number(l: State, cfg: &Config, out: &mut Vec<u8>, idx: c_int) -> LRes<()> {
    let num = ffi::lua_tonumber(l, idx);
    if !num.is_finite() {
        match cfg.encode_invalid_numbers {
            0 => return Err(encode_exception(l, idx, "must not be NaN or Inf")),
            1 => {}
            _ => {
                out.extend_from_slice(b"null");
                return Ok(());
            }
        }
    }
    fmt_g(out, num, cfg.encode_number_precision as usize);
    Ok(())
}

/// `(int)k` for a double as x86-64 computes it (out of range: INT_MIN).
fn c_int_cast(k: f64) -> c_int {
    if (-2_147_483_648.0..2_147_483_648.0).contains(&k) {
        k as c_int
    } else {
        c_int::MIN
    }
}

/// The array length of the table at the top of the stack: > 0 to encode as
/// an array, <= 0 (or -1) to encode as an object.
unsafe fn array_length(l: State, cfg: &Config) -> LRes<c_int> {
    let mut max: c_int = 0;
    let mut items: c_int = 0;
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, -2) != 0 {
        if ffi::lua_type(l, -2) == ffi::LUA_TNUMBER {
            let k = ffi::lua_tonumber(l, -2);
            if k != 0.0 && k.floor() == k && k >= 1.0 {
                if k > max as f64 {
                    max = c_int_cast(k);
                }
                items = items.wrapping_add(1);
                ffi::lua_pop(l, 1);
                continue;
            }
        }
        ffi::lua_pop(l, 2);
        return Ok(-1);
    }
    if cfg.encode_sparse_ratio > 0
        && max > items.wrapping_mul(cfg.encode_sparse_ratio)
        && max > cfg.encode_sparse_safe
    {
        if cfg.encode_sparse_convert == 0 {
            return Err(encode_exception(l, -1, "excessively sparse array"));
        }
        return Ok(-1);
    }
    Ok(max)
}

/// An open container while encoding: an array with its length and next
/// index, or an object being traversed with `lua_next`.
enum EncFrame {
    Arr { len: c_int, next: c_int },
    Obj { comma: bool },
}

/// Encodes the value at the top of the stack, popping it. Iterative, with
/// the same Lua stack use per level as lua-cjson's recursion (the nesting
/// limit and `lua_checkstack` decide how deep it may go, not the C stack).
unsafe fn append_data(l: State, cfg: &Config, out: &mut Vec<u8>) -> LRes<()> {
    let mut frames: Vec<EncFrame> = Vec::new();
    let mut depth: c_int = 0;
    'value: loop {
        match ffi::lua_type(l, -1) {
            ffi::LUA_TSTRING => {
                let mut len = 0usize;
                let p = ffi::lua_tolstring(l, -1, &mut len) as *const u8;
                append_string(out, std::slice::from_raw_parts(p, len));
                ffi::lua_pop(l, 1);
            }
            ffi::LUA_TNUMBER => {
                append_number(l, cfg, out, -1)?;
                ffi::lua_pop(l, 1);
            }
            ffi::LUA_TBOOLEAN => {
                out.extend_from_slice(if ffi::lua_toboolean(l, -1) != 0 {
                    b"true"
                } else {
                    b"false"
                });
                ffi::lua_pop(l, 1);
            }
            ffi::LUA_TTABLE => {
                depth += 1;
                if !(depth <= cfg.encode_max_depth && ffi::lua_checkstack(l, 3) != 0) {
                    return Err(LErr::Msg(format!(
                        "Cannot serialise, excessive nesting ({depth})"
                    )));
                }
                let len = array_length(l, cfg)?;
                if len > 0 {
                    out.push(b'[');
                    frames.push(EncFrame::Arr { len, next: 1 });
                } else {
                    out.push(b'{');
                    ffi::lua_pushnil(l);
                    frames.push(EncFrame::Obj { comma: false });
                }
            }
            ffi::LUA_TNIL => {
                out.extend_from_slice(b"null");
                ffi::lua_pop(l, 1);
            }
            ffi::LUA_TLIGHTUSERDATA if ffi::lua_touserdata(l, -1).is_null() => {
                out.extend_from_slice(b"null");
                ffi::lua_pop(l, 1);
            }
            _ => return Err(encode_exception(l, -1, "type not supported")),
        }
        // Move on to the next value of the innermost open container.
        loop {
            match frames.last_mut() {
                None => return Ok(()),
                Some(EncFrame::Arr { len, next }) => {
                    if *next > *len {
                        out.push(b']');
                    } else {
                        if *next > 1 {
                            out.push(b',');
                        }
                        ffi::lua_rawgeti_(l, -1, *next);
                        *next += 1;
                        continue 'value;
                    }
                }
                Some(EncFrame::Obj { comma }) => {
                    // stack: table, previous key (or nil)
                    if ffi::lua_next(l, -2) != 0 {
                        if *comma {
                            out.push(b',');
                        }
                        *comma = true;
                        match ffi::lua_type(l, -2) {
                            ffi::LUA_TNUMBER => {
                                out.push(b'"');
                                append_number(l, cfg, out, -2)?;
                                out.extend_from_slice(b"\":");
                            }
                            ffi::LUA_TSTRING => {
                                let mut len = 0usize;
                                let p = ffi::lua_tolstring(l, -2, &mut len) as *const u8;
                                append_string(out, std::slice::from_raw_parts(p, len));
                                out.push(b':');
                            }
                            _ => {
                                return Err(encode_exception(
                                    l,
                                    -2,
                                    "table key must be a number or string",
                                ))
                            }
                        }
                        continue 'value;
                    }
                    out.push(b'}');
                }
            }
            // The container is complete: pop it.
            frames.pop();
            depth -= 1;
            ffi::lua_pop(l, 1);
        }
    }
}

unsafe fn encode(l: State) -> LRes<c_int> {
    let cfg = *fetch_config(l)?;
    if ffi::lua_gettop(l) != 1 {
        return Err(LErr::Arg(1, "expected 1 argument".into()));
    }
    let mut out = Vec::new();
    append_data(l, &cfg, &mut out)?;
    push_bytes(l, &out);
    Ok(1)
}

// ---------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq)]
enum Tok {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    Str,
    Num(f64),
    Bool(bool),
    Null,
    Colon,
    Comma,
    End,
    Error(&'static str),
}

impl Tok {
    fn name(self) -> &'static str {
        match self {
            Tok::ObjBegin => "T_OBJ_BEGIN",
            Tok::ObjEnd => "T_OBJ_END",
            Tok::ArrBegin => "T_ARR_BEGIN",
            Tok::ArrEnd => "T_ARR_END",
            Tok::Str => "T_STRING",
            Tok::Num(_) => "T_NUMBER",
            Tok::Bool(_) => "T_BOOLEAN",
            Tok::Null => "T_NULL",
            Tok::Colon => "T_COLON",
            Tok::Comma => "T_COMMA",
            Tok::End => "T_END",
            Tok::Error(e) => e,
        }
    }
}

#[derive(Clone, Copy)]
struct Token {
    tok: Tok,
    index: usize,
}

struct Parser<'a> {
    data: &'a [u8],
    ptr: usize,
    depth: c_int,
    cfg: Config,
    /// The decoded bytes of the last string token.
    tmp: Vec<u8>,
}

fn hex4(b: &[u8]) -> Option<u32> {
    let mut v = 0u32;
    for k in 0..4 {
        v = (v << 4) | (*b.get(k)? as char).to_digit(16)?;
    }
    Some(v)
}

impl Parser<'_> {
    /// The byte at `i`; 0 past the end, like the C string's terminator.
    #[inline]
    fn at(&self, i: usize) -> u8 {
        self.data.get(i).copied().unwrap_or(0)
    }

    fn starts_with(&self, w: &[u8]) -> bool {
        self.data.get(self.ptr..).is_some_and(|s| s.starts_with(w))
    }

    fn is_invalid_number(&self) -> bool {
        let mut p = self.ptr;
        if self.at(p) == b'+' {
            return true;
        }
        if self.at(p) == b'-' {
            p += 1;
        }
        let c = self.at(p);
        if c == b'0' {
            let c2 = self.at(p + 1);
            return (c2 | 0x20) == b'x' || c2.is_ascii_digit();
        } else if (c as i8) <= b'9' as i8 {
            return false;
        }
        let ci = |w: &[u8]| (0..3).all(|k| self.at(p + k).to_ascii_lowercase() == w[k]);
        ci(b"inf") || ci(b"nan")
    }

    fn number_token(&mut self, index: usize) -> Token {
        match strtod(self.data.get(self.ptr..).unwrap_or(&[])) {
            Some((v, n)) if n > 0 => {
                self.ptr += n;
                Token {
                    tok: Tok::Num(v),
                    index,
                }
            }
            _ => Token {
                tok: Tok::Error("invalid number"),
                index: self.ptr,
            },
        }
    }

    fn error_here(&self, e: &'static str) -> Token {
        Token {
            tok: Tok::Error(e),
            index: self.ptr,
        }
    }

    fn string_token(&mut self, index: usize) -> Token {
        self.ptr += 1;
        self.tmp.clear();
        loop {
            let mut c = self.at(self.ptr);
            if c == b'"' {
                break;
            }
            if c == 0 {
                return self.error_here("unexpected end of string");
            }
            if c == b'\\' {
                c = match self.at(self.ptr + 1) {
                    b'"' => b'"',
                    b'\\' => b'\\',
                    b'/' => b'/',
                    b'b' => 8,
                    b'f' => 12,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'u' => {
                        if self.unicode_escape() {
                            continue;
                        }
                        return self.error_here("invalid unicode escape code");
                    }
                    _ => return self.error_here("invalid escape code"),
                };
                self.ptr += 1;
            }
            self.tmp.push(c);
            self.ptr += 1;
        }
        self.ptr += 1;
        Token {
            tok: Tok::Str,
            index,
        }
    }

    /// Decodes `\uXXXX` (or a surrogate pair) at `ptr` into `tmp`.
    fn unicode_escape(&mut self) -> bool {
        let rest = self.data.get(self.ptr..).unwrap_or(&[]);
        let Some(mut cp) = rest.get(2..).and_then(hex4) else {
            return false;
        };
        let mut len = 6;
        if cp & 0xF800 == 0xD800 {
            if cp & 0x400 != 0 {
                return false;
            }
            if rest.get(6) != Some(&b'\\') || rest.get(7) != Some(&b'u') {
                return false;
            }
            let Some(low) = rest.get(8..).and_then(hex4) else {
                return false;
            };
            if low & 0xFC00 != 0xDC00 {
                return false;
            }
            cp = (((cp & 0x3FF) << 10) | (low & 0x3FF)) + 0x10000;
            len = 12;
        }
        let mut buf = [0u8; 4];
        let n = if cp <= 0x7F {
            buf[0] = cp as u8;
            1
        } else if cp <= 0x7FF {
            buf[0] = 0xC0 | (cp >> 6) as u8;
            buf[1] = 0x80 | (cp & 0x3F) as u8;
            2
        } else if cp <= 0xFFFF {
            buf[0] = 0xE0 | (cp >> 12) as u8;
            buf[1] = 0x80 | ((cp >> 6) & 0x3F) as u8;
            buf[2] = 0x80 | (cp & 0x3F) as u8;
            3
        } else {
            buf[0] = 0xF0 | (cp >> 18) as u8;
            buf[1] = 0x80 | ((cp >> 12) & 0x3F) as u8;
            buf[2] = 0x80 | ((cp >> 6) & 0x3F) as u8;
            buf[3] = 0x80 | (cp & 0x3F) as u8;
            4
        };
        self.tmp.extend_from_slice(&buf[..n]);
        self.ptr += len;
        true
    }

    fn next_token(&mut self) -> Token {
        while matches!(self.at(self.ptr), b' ' | b'\t' | b'\n' | b'\r') {
            self.ptr += 1;
        }
        let index = self.ptr;
        let c = self.at(index);
        let single = match c {
            b'{' => Some(Tok::ObjBegin),
            b'}' => Some(Tok::ObjEnd),
            b'[' => Some(Tok::ArrBegin),
            b']' => Some(Tok::ArrEnd),
            b',' => Some(Tok::Comma),
            b':' => Some(Tok::Colon),
            _ => None,
        };
        if let Some(tok) = single {
            self.ptr += 1;
            return Token { tok, index };
        }
        match c {
            0 => Token {
                tok: Tok::End,
                index,
            },
            b'"' => self.string_token(index),
            b'-' | b'0'..=b'9' => {
                if self.cfg.decode_invalid_numbers == 0 && self.is_invalid_number() {
                    return self.error_here("invalid number");
                }
                self.number_token(index)
            }
            b'f' | b'i' | b'I' | b'n' | b'N' | b't' | b'+' => {
                if self.starts_with(b"true") {
                    self.ptr += 4;
                    Token {
                        tok: Tok::Bool(true),
                        index,
                    }
                } else if self.starts_with(b"false") {
                    self.ptr += 5;
                    Token {
                        tok: Tok::Bool(false),
                        index,
                    }
                } else if self.starts_with(b"null") {
                    self.ptr += 4;
                    Token {
                        tok: Tok::Null,
                        index,
                    }
                } else if self.cfg.decode_invalid_numbers != 0 && self.is_invalid_number() {
                    self.number_token(index)
                } else {
                    self.error_here("invalid token")
                }
            }
            _ => self.error_here("invalid token"),
        }
    }

    fn parse_error(&self, expected: &str, t: Token) -> LErr {
        LErr::Msg(format!(
            "Expected {} but found {} at character {}",
            expected,
            t.tok.name(),
            t.index + 1
        ))
    }

    unsafe fn descend(&mut self, l: State, slots: c_int) -> LRes<()> {
        self.depth += 1;
        if self.depth <= self.cfg.decode_max_depth && ffi::lua_checkstack(l, slots) != 0 {
            return Ok(());
        }
        Err(LErr::Msg(format!(
            "Found too many nested data structures ({}) at character {}",
            self.depth, self.ptr
        )))
    }

    /// Parses the value starting with token `t` and pushes it. Iterative:
    /// the nesting limit and `lua_checkstack` bound the depth, exactly as
    /// in lua-cjson, without consuming the C stack.
    unsafe fn parse_value(&mut self, l: State, mut t: Token) -> LRes<()> {
        // Open containers: Some(next array index) or None for an object.
        let mut frames: Vec<Option<c_int>> = Vec::new();
        'value: loop {
            match t.tok {
                Tok::Str => push_bytes(l, &self.tmp),
                Tok::Num(n) => ffi::lua_pushnumber(l, n),
                Tok::Bool(b) => ffi::lua_pushboolean(l, b as c_int),
                Tok::Null => ffi::lua_pushlightuserdata(l, std::ptr::null_mut()),
                Tok::ObjBegin => {
                    self.descend(l, 3)?;
                    ffi::lua_newtable(l);
                    t = self.next_token();
                    if t.tok != Tok::ObjEnd {
                        frames.push(None);
                        t = self.object_key(l, t)?;
                        continue 'value;
                    }
                    self.depth -= 1;
                }
                Tok::ArrBegin => {
                    self.descend(l, 2)?;
                    ffi::lua_newtable(l);
                    t = self.next_token();
                    if t.tok != Tok::ArrEnd {
                        frames.push(Some(1));
                        continue 'value;
                    }
                    self.depth -= 1;
                }
                _ => return Err(self.parse_error("value", t)),
            }
            // A value is complete on the stack: store it in its container.
            loop {
                match frames.last_mut() {
                    None => return Ok(()),
                    Some(Some(i)) => {
                        ffi::lua_rawseti_(l, -2, *i);
                        *i = i.wrapping_add(1);
                        t = self.next_token();
                        if t.tok != Tok::ArrEnd {
                            if t.tok != Tok::Comma {
                                return Err(self.parse_error("comma or array end", t));
                            }
                            t = self.next_token();
                            continue 'value;
                        }
                    }
                    Some(None) => {
                        ffi::lua_rawset(l, -3);
                        t = self.next_token();
                        if t.tok != Tok::ObjEnd {
                            if t.tok != Tok::Comma {
                                return Err(self.parse_error("comma or object end", t));
                            }
                            t = self.next_token();
                            t = self.object_key(l, t)?;
                            continue 'value;
                        }
                    }
                }
                frames.pop();
                self.depth -= 1;
            }
        }
    }

    /// Pushes the object key in token `t`, checks the colon and returns the
    /// first token of the value.
    unsafe fn object_key(&mut self, l: State, t: Token) -> LRes<Token> {
        if t.tok != Tok::Str {
            return Err(self.parse_error("object key string", t));
        }
        push_bytes(l, &self.tmp);
        let t = self.next_token();
        if t.tok != Tok::Colon {
            return Err(self.parse_error("colon", t));
        }
        Ok(self.next_token())
    }
}

unsafe fn decode(l: State) -> LRes<c_int> {
    if ffi::lua_gettop(l) != 1 {
        return Err(LErr::Arg(1, "expected 1 argument".into()));
    }
    let cfg = *fetch_config(l)?;
    let data = check_lstring(l, 1)?;
    if data.len() >= 2 && (data[0] == 0 || data[1] == 0) {
        return Err(LErr::Msg(
            "JSON parser does not support UTF-16 or UTF-32".into(),
        ));
    }
    let mut p = Parser {
        data,
        ptr: 0,
        depth: 0,
        cfg,
        tmp: Vec::new(),
    };
    let t = p.next_token();
    p.parse_value(l, t)?;
    let t = p.next_token();
    if t.tok != Tok::End {
        return Err(p.parse_error("the end", t));
    }
    Ok(1)
}

unsafe fn new(l: State) -> LRes<c_int> {
    open(l);
    Ok(1)
}

lua_fn!(c_encode, encode);
lua_fn!(c_decode, decode);
lua_fn!(c_encode_sparse_array, cfg_encode_sparse_array);
lua_fn!(c_decode_max_depth, cfg_decode_max_depth);
lua_fn!(c_encode_max_depth, cfg_encode_max_depth);
lua_fn!(c_encode_number_precision, cfg_encode_number_precision);
lua_fn!(c_encode_keep_buffer, cfg_encode_keep_buffer);
lua_fn!(c_encode_invalid_numbers, cfg_encode_invalid_numbers);
lua_fn!(c_decode_invalid_numbers, cfg_decode_invalid_numbers);
lua_fn!(c_new, new);

/// Pushes a fresh `cjson` module table with default settings.
pub(super) unsafe fn open(l: State) {
    ffi::lua_newtable(l);
    let cfg = ffi::lua_newuserdata(l, std::mem::size_of::<Config>()) as *mut Config;
    cfg.write(DEFAULT);
    // table, cfg
    ffi::lua_insert(l, -2);
    // cfg, table
    let up = ffi::lua_gettop(l) - 1;
    set_fn(l, c"encode", c_encode, up);
    set_fn(l, c"decode", c_decode, up);
    set_fn(l, c"encode_sparse_array", c_encode_sparse_array, up);
    set_fn(l, c"decode_max_depth", c_decode_max_depth, up);
    set_fn(l, c"encode_max_depth", c_encode_max_depth, up);
    set_fn(l, c"encode_number_precision", c_encode_number_precision, up);
    set_fn(l, c"encode_keep_buffer", c_encode_keep_buffer, up);
    set_fn(l, c"encode_invalid_numbers", c_encode_invalid_numbers, up);
    set_fn(l, c"decode_invalid_numbers", c_decode_invalid_numbers, up);
    set_fn(l, c"new", c_new, up);
    ffi::lua_pushlightuserdata(l, std::ptr::null_mut());
    ffi::lua_setfield(l, -2, c"null".as_ptr());
    set_str(l, c"_NAME", "cjson");
    set_str(l, c"_VERSION", "2.1.0");
    ffi::lua_remove(l, -2);
}
