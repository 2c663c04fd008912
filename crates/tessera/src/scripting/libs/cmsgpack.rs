//! `cmsgpack`: lua-cmsgpack 0.4.0 as built into redis-server 7.0.

use std::ffi::c_int;

use super::{
    check_integer, check_lstring, check_stack, ffi, lua_fn, opt_integer, push_bytes, set_str, LErr,
    LRes, State,
};

/// Tables nested deeper than this encode as nil (protects against cycles).
const MAX_NESTING: c_int = 16;

// ---------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------

fn encode_bytes(out: &mut Vec<u8>, s: &[u8]) {
    let len = s.len();
    if len < 32 {
        out.push(0xa0 | len as u8);
    } else if len <= 0xff {
        out.extend_from_slice(&[0xd9, len as u8]);
    } else if len <= 0xffff {
        out.push(0xda);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
    out.extend_from_slice(s);
}

fn encode_double(out: &mut Vec<u8>, d: f64) {
    let f = d as f32;
    if d == f as f64 {
        out.push(0xca);
        out.extend_from_slice(&f.to_be_bytes());
    } else {
        out.push(0xcb);
        out.extend_from_slice(&d.to_be_bytes());
    }
}

fn encode_int(out: &mut Vec<u8>, n: i64) {
    if n >= 0 {
        if n <= 127 {
            out.push(n as u8);
        } else if n <= 0xff {
            out.extend_from_slice(&[0xcc, n as u8]);
        } else if n <= 0xffff {
            out.push(0xcd);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        } else if n <= 0xffff_ffff {
            out.push(0xce);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        } else {
            out.push(0xcf);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    } else if n >= -32 {
        out.push(n as i8 as u8);
    } else if n >= -128 {
        out.extend_from_slice(&[0xd0, n as i8 as u8]);
    } else if n >= -32768 {
        out.push(0xd1);
        out.extend_from_slice(&(n as i16).to_be_bytes());
    } else if n >= -2_147_483_648 {
        out.push(0xd2);
        out.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn encode_header(out: &mut Vec<u8>, n: usize, fix: u8, b16: u8, b32: u8) {
    if n <= 15 {
        out.push(fix | n as u8);
    } else if n <= 0xffff {
        out.push(b16);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(b32);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

fn encode_number(out: &mut Vec<u8>, n: f64) {
    // IS_INT64_EQUIVALENT: !isinf(n) && (int64_t)n == n
    if !n.is_infinite()
        && (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&n)
        && (n as i64) as f64 == n
    {
        encode_int(out, n as i64);
    } else {
        encode_double(out, n);
    }
}

/// Whether the table at the top of the stack has exactly the keys 1..n.
unsafe fn table_is_an_array(l: State) -> bool {
    let top = ffi::lua_gettop(l);
    let mut count: i64 = 0;
    let mut max: i64 = 0;
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, -2) != 0 {
        ffi::lua_pop(l, 1);
        let n = ffi::lua_tonumber(l, -1);
        // IS_INT_EQUIVALENT: !isinf(n) && (int)n == n
        let int_equiv = (-2_147_483_648.0..2_147_483_648.0).contains(&n) && (n as i32) as f64 == n;
        if ffi::lua_type(l, -1) != ffi::LUA_TNUMBER || n <= 0.0 || !int_equiv {
            ffi::lua_settop(l, top);
            return false;
        }
        max = max.max(n as i64);
        count += 1;
    }
    ffi::lua_settop(l, top);
    max == count
}

/// Encodes the value at the top of the stack and pops it.
unsafe fn encode_value(l: State, out: &mut Vec<u8>, level: c_int) -> LRes<()> {
    let mut t = ffi::lua_type(l, -1);
    if t == ffi::LUA_TTABLE && level == MAX_NESTING {
        t = ffi::LUA_TNIL;
    }
    match t {
        ffi::LUA_TSTRING => {
            let mut len = 0usize;
            let p = ffi::lua_tolstring(l, -1, &mut len) as *const u8;
            encode_bytes(out, std::slice::from_raw_parts(p, len));
        }
        ffi::LUA_TBOOLEAN => out.push(if ffi::lua_toboolean(l, -1) != 0 {
            0xc3
        } else {
            0xc2
        }),
        ffi::LUA_TNUMBER => encode_number(out, ffi::lua_tonumber(l, -1)),
        ffi::LUA_TTABLE => {
            // Traversing the table takes two more slots, which the C library
            // takes unchecked (from Lua's EXTRA_STACK reserve); only a
            // stack already within 2 slots of Lua's limit can fail here.
            check_stack(l, 2, "in function mp_encode_lua_table_as_map")?;
            if table_is_an_array(l) {
                let len = ffi::lua_objlen(l, -1);
                encode_header(out, len, 0x90, 0xdc, 0xdd);
                check_stack(l, 1, "in function mp_encode_lua_table_as_array")?;
                for j in 1..=len {
                    ffi::lua_rawgeti_(l, -1, j as c_int);
                    encode_value(l, out, level + 1)?;
                }
            } else {
                check_stack(l, 3, "in function mp_encode_lua_table_as_map")?;
                let mut len = 0usize;
                ffi::lua_pushnil(l);
                while ffi::lua_next(l, -2) != 0 {
                    ffi::lua_pop(l, 1);
                    len += 1;
                }
                encode_header(out, len, 0x80, 0xde, 0xdf);
                ffi::lua_pushnil(l);
                while ffi::lua_next(l, -2) != 0 {
                    ffi::lua_pushvalue(l, -2);
                    encode_value(l, out, level + 1)?;
                    encode_value(l, out, level + 1)?;
                }
            }
        }
        _ => out.push(0xc0),
    }
    ffi::lua_pop(l, 1);
    Ok(())
}

unsafe fn pack(l: State) -> LRes<c_int> {
    let nargs = ffi::lua_gettop(l);
    if nargs == 0 {
        return Err(LErr::Arg(0, "MessagePack pack needs input.".into()));
    }
    if ffi::lua_checkstack(l, nargs) == 0 {
        return Err(LErr::Arg(
            0,
            "Too many arguments for MessagePack pack.".into(),
        ));
    }
    let mut buf = Vec::new();
    for i in 1..=nargs {
        check_stack(l, 1, "in function mp_check")?;
        ffi::lua_pushvalue(l, i);
        buf.clear();
        encode_value(l, &mut buf, 0)?;
        push_bytes(l, &buf);
    }
    ffi::lua_concat(l, nargs);
    Ok(1)
}

// ---------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------

#[derive(PartialEq)]
enum CurErr {
    None,
    Eof,
    BadFmt,
}

struct Cur<'a> {
    p: &'a [u8],
    err: CurErr,
}

impl Cur<'_> {
    /// `mp_cur_need`: flags EOF when fewer than `n` bytes are left.
    #[inline]
    fn need(&mut self, n: usize) -> bool {
        if self.p.len() < n {
            self.err = CurErr::Eof;
            false
        } else {
            true
        }
    }
    #[inline]
    fn consume(&mut self, n: usize) {
        self.p = &self.p[n..];
    }
    fn be(&self, from: usize, n: usize) -> u64 {
        self.p[from..from + n]
            .iter()
            .fold(0u64, |a, &b| (a << 8) | b as u64)
    }
}

/// An open container while decoding: elements still to read, and for an
/// array the next index, for a map whether its key is on the stack.
enum DecFrame {
    Arr { left: usize, index: c_int },
    Map { left: usize, have_key: bool },
}

/// Decodes one value from `c` onto the stack, or flags `c.err` (leaving
/// partial results on the stack, as the C library does). Iterative, with
/// the C library's Lua stack use and checks per element.
unsafe fn decode_value(l: State, c: &mut Cur) -> LRes<()> {
    let mut frames: Vec<DecFrame> = Vec::new();
    macro_rules! need {
        ($n:expr) => {
            if !c.need($n) {
                return Ok(());
            }
        };
    }
    'value: loop {
        check_stack(
            l,
            1,
            "too many return values at once; use unpack_one or unpack_limit instead.",
        )?;
        need!(1);
        let b = c.p[0];
        // Some((is_map, len)) when a container starts.
        let mut open: Option<(bool, usize)> = None;
        match b {
            0xcc => {
                need!(2);
                ffi::lua_pushnumber(l, c.p[1] as f64);
                c.consume(2);
            }
            0xd0 => {
                need!(2);
                ffi::lua_pushnumber(l, c.p[1] as i8 as f64);
                c.consume(2);
            }
            0xcd => {
                need!(3);
                ffi::lua_pushnumber(l, c.be(1, 2) as f64);
                c.consume(3);
            }
            0xd1 => {
                need!(3);
                ffi::lua_pushnumber(l, c.be(1, 2) as u16 as i16 as f64);
                c.consume(3);
            }
            0xce => {
                need!(5);
                ffi::lua_pushnumber(l, c.be(1, 4) as f64);
                c.consume(5);
            }
            0xd2 => {
                need!(5);
                ffi::lua_pushnumber(l, c.be(1, 4) as u32 as i32 as f64);
                c.consume(5);
            }
            0xcf | 0xd3 => {
                // Both land in lua_pushinteger as a signed 64-bit value.
                need!(9);
                ffi::lua_pushnumber(l, c.be(1, 8) as i64 as f64);
                c.consume(9);
            }
            0xc0 => {
                ffi::lua_pushnil(l);
                c.consume(1);
            }
            0xc2 | 0xc3 => {
                ffi::lua_pushboolean(l, (b == 0xc3) as c_int);
                c.consume(1);
            }
            0xca => {
                need!(5);
                ffi::lua_pushnumber(l, f32::from_bits(c.be(1, 4) as u32) as f64);
                c.consume(5);
            }
            0xcb => {
                need!(9);
                ffi::lua_pushnumber(l, f64::from_bits(c.be(1, 8)));
                c.consume(9);
            }
            0xd9..=0xdb => {
                let h = match b {
                    0xd9 => 1,
                    0xda => 2,
                    _ => 4,
                };
                need!(1 + h);
                let len = c.be(1, h) as usize;
                need!(1 + h + len);
                push_bytes(l, &c.p[1 + h..1 + h + len]);
                c.consume(1 + h + len);
            }
            0xdc..=0xdf => {
                let h = if b == 0xdc || b == 0xde { 2 } else { 4 };
                need!(1 + h);
                let len = c.be(1, h) as usize;
                c.consume(1 + h);
                open = Some((b >= 0xde, len));
            }
            _ if b & 0x80 == 0 => {
                ffi::lua_pushnumber(l, b as f64);
                c.consume(1);
            }
            _ if b & 0xe0 == 0xe0 => {
                ffi::lua_pushnumber(l, b as i8 as f64);
                c.consume(1);
            }
            _ if b & 0xe0 == 0xa0 => {
                let len = (b & 0x1f) as usize;
                need!(1 + len);
                push_bytes(l, &c.p[1..1 + len]);
                c.consume(1 + len);
            }
            _ if b & 0xf0 == 0x90 => {
                c.consume(1);
                open = Some((false, (b & 0xf) as usize));
            }
            _ if b & 0xf0 == 0x80 => {
                c.consume(1);
                open = Some((true, (b & 0xf) as usize));
            }
            _ => {
                c.err = CurErr::BadFmt;
                return Ok(());
            }
        }
        // `completed`: a value was just pushed and belongs to the innermost
        // container; otherwise a container was just opened.
        let mut completed = true;
        if let Some((is_map, len)) = open {
            ffi::lua_newtable(l);
            if is_map {
                frames.push(DecFrame::Map {
                    left: len,
                    have_key: false,
                });
            } else {
                check_stack(l, 1, "in function mp_decode_to_lua_array")?;
                frames.push(DecFrame::Arr {
                    left: len,
                    index: 1,
                });
            }
            completed = false;
        }
        loop {
            match frames.last_mut() {
                None => return Ok(()),
                Some(DecFrame::Arr { left, index }) => {
                    if completed {
                        ffi::lua_rawset(l, -3);
                    }
                    if *left > 0 {
                        *left -= 1;
                        ffi::lua_pushnumber(l, *index as f64);
                        *index = index.wrapping_add(1);
                        continue 'value;
                    }
                }
                Some(DecFrame::Map { left, have_key }) => {
                    if completed {
                        if !*have_key {
                            *have_key = true;
                            continue 'value;
                        }
                        *have_key = false;
                        // lua_settable on a fresh table: only the key checks
                        // can fail.
                        match ffi::lua_type(l, -2) {
                            ffi::LUA_TNIL => return Err(LErr::Raw("table index is nil".into())),
                            ffi::LUA_TNUMBER if ffi::lua_tonumber(l, -2).is_nan() => {
                                return Err(LErr::Raw("table index is NaN".into()))
                            }
                            _ => {}
                        }
                        ffi::lua_rawset(l, -3);
                    }
                    if *left > 0 {
                        *left -= 1;
                        continue 'value;
                    }
                }
            }
            // The container is complete and is itself a completed value.
            frames.pop();
            completed = true;
        }
    }
}

/// `limit` and `offset` are 64-bit (lua_Integer) as in Redis's copy; the
/// error messages print them through `%d`, i.e. truncated to 32 bits.
unsafe fn unpack_full(l: State, limit: i64, offset: i64) -> LRes<c_int> {
    let s = check_lstring(l, 1)?;
    let len = s.len();
    let decode_all = limit == 0 && offset == 0;
    if offset < 0 || limit < 0 {
        return Err(LErr::Msg(format!(
            "Invalid request to unpack with offset of {} and limit of {}.",
            offset as c_int, len as c_int
        )));
    } else if offset as u64 > len as u64 {
        return Err(LErr::Msg(format!(
            "Start offset {} greater than input length {}.",
            offset as c_int, len as c_int
        )));
    }
    let limit = if decode_all { c_int::MAX as i64 } else { limit };
    let mut c = Cur {
        p: &s[offset as usize..],
        err: CurErr::None,
    };
    let mut cnt: c_int = 0;
    while !c.p.is_empty() && (cnt as i64) < limit {
        decode_value(l, &mut c)?;
        match c.err {
            CurErr::Eof => return Err(LErr::Msg("Missing bytes in input.".into())),
            CurErr::BadFmt => return Err(LErr::Msg("Bad data format in input.".into())),
            CurErr::None => {}
        }
        cnt += 1;
    }
    if !decode_all {
        let next = (len - c.p.len()) as c_int;
        check_stack(l, 1, "in function mp_unpack_full")?;
        ffi::lua_pushinteger(
            l,
            if c.p.is_empty() {
                -1
            } else {
                next as ffi::lua_Integer
            },
        );
        ffi::lua_insert(l, 2);
        cnt += 1;
    }
    Ok(cnt)
}

unsafe fn unpack(l: State) -> LRes<c_int> {
    unpack_full(l, 0, 0)
}

unsafe fn unpack_one(l: State) -> LRes<c_int> {
    let offset = opt_integer(l, 2, 0)?;
    ffi::lua_pop(l, ffi::lua_gettop(l) - 1);
    unpack_full(l, 1, offset)
}

unsafe fn unpack_limit(l: State) -> LRes<c_int> {
    let limit = check_integer(l, 2)?;
    let offset = opt_integer(l, 3, 0)?;
    ffi::lua_pop(l, ffi::lua_gettop(l) - 1);
    unpack_full(l, limit, offset)
}

lua_fn!(c_pack, pack);
lua_fn!(c_unpack, unpack);
lua_fn!(c_unpack_one, unpack_one);
lua_fn!(c_unpack_limit, unpack_limit);

/// Pushes the `cmsgpack` module table.
pub(super) unsafe fn open(l: State) {
    use super::set_fn;
    ffi::lua_newtable(l);
    set_fn(l, c"pack", c_pack, 0);
    set_fn(l, c"unpack", c_unpack, 0);
    set_fn(l, c"unpack_one", c_unpack_one, 0);
    set_fn(l, c"unpack_limit", c_unpack_limit, 0);
    set_str(l, c"_NAME", "cmsgpack");
    set_str(l, c"_VERSION", "lua-cmsgpack 0.4.0");
    set_str(l, c"_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo");
    set_str(l, c"_DESCRIPTION", "MessagePack C implementation for Lua");
}
