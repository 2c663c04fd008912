//! The Lua libraries redis-server 7.0 embeds in its scripting environment:
//! `cjson` (lua-cjson 2.1.0), `cmsgpack` (lua-cmsgpack 0.4.0), `bit`
//! (LuaBitOp 1.0.2) and `struct` (Roberto Ierusalimschy's struct 0.2).
//!
//! They are written against the raw Lua C API (`mlua::ffi`) rather than
//! mlua's high-level types, for three reasons that all come down to
//! byte-for-byte fidelity with Redis:
//!
//! * errors must be plain Lua strings carrying the caller's position
//!   (`user_script:1: ...`), exactly as `luaL_error`/`luaL_argerror` build
//!   them, and a script that `pcall`s a library function must get the string,
//!   not an mlua error userdata;
//! * stack limits (`lua_checkstack`) decide some error messages (nesting,
//!   "too many return values"), so the functions must run as real C functions
//!   with their own stack frame;
//! * mlua turns a Lua 5.1 number holding `-0.0` into `Value::Integer(0)`,
//!   which would lose the sign `cjson.encode(-0.0)` has to print.
//!
//! Error discipline: a Lua error unwinds with `longjmp`, so no Rust value
//! with a destructor may be live in a frame it jumps over. Every library
//! function is therefore an `extern "C-unwind"` shim (see [`lua_fn!`]) around
//! a body returning [`LRes`]; errors travel back as `Err`, everything the
//! body owns is dropped, and only then does the shim raise the Lua error.
//! The remaining API calls that can raise on their own are allocation
//! failures, which would merely leak the body's scratch buffers.

use std::ffi::{c_char, c_int};

pub use mlua::ffi;

mod bit;
mod cjson;
mod cmsgpack;
mod structlib;

#[cfg(test)]
mod tests;

pub(crate) type State = *mut ffi::lua_State;

/// A Lua error a library body wants raised once it has returned.
pub(crate) enum LErr {
    /// `luaL_error`: the caller's position (`chunk:line: `) is prefixed.
    Msg(String),
    /// `luaL_argerror(narg, extramsg)`: "bad argument #n to 'f' (extramsg)".
    Arg(c_int, String),
    /// An error raised by the Lua core itself, without position
    /// (e.g. "table index is nil").
    Raw(String),
}

pub(crate) type LRes<T> = Result<T, LErr>;

/// Defines `extern "C-unwind" fn $name` running `$body(L) -> LRes<c_int>`
/// and raising its error, if any, after the body's frame is gone.
macro_rules! lua_fn {
    ($name:ident, $body:path) => {
        pub(crate) unsafe extern "C-unwind" fn $name(
            l: *mut $crate::scripting::libs::ffi::lua_State,
        ) -> std::ffi::c_int {
            match $body(l) {
                Ok(n) => n,
                Err(e) => $crate::scripting::libs::raise(l, e),
            }
        }
    };
}
pub(crate) use lua_fn;

/// Pushes the message for `e` and raises it. Nothing owned by Rust is live
/// in this frame when `lua_error`/`luaL_argerror` jumps.
#[inline(never)]
pub(crate) unsafe fn raise(l: State, e: LErr) -> ! {
    // The stack may be full (e.g. after a "stack overflow" error); its
    // contents are discarded by the error anyway, and an empty frame always
    // has LUA_MINSTACK free slots for the message.
    ffi::lua_settop(l, 0);
    let arg = push_error_message(l, e);
    if arg != c_int::MIN {
        let msg = ffi::lua_tolstring(l, -1, std::ptr::null_mut());
        ffi::luaL_argerror(l, arg, msg);
    }
    ffi::lua_error(l)
}

/// Pushes the final message of `e` (or, for `Arg`, its extra message) and
/// returns the argument number for `Arg`, `c_int::MIN` otherwise.
#[inline(never)]
unsafe fn push_error_message(l: State, e: LErr) -> c_int {
    match e {
        LErr::Msg(s) => {
            ffi::luaL_where(l, 1);
            push_bytes(l, s.as_bytes());
            ffi::lua_concat(l, 2);
            c_int::MIN
        }
        LErr::Arg(n, s) => {
            push_bytes(l, s.as_bytes());
            n
        }
        LErr::Raw(s) => {
            push_bytes(l, s.as_bytes());
            c_int::MIN
        }
    }
}

#[inline]
pub(crate) unsafe fn push_bytes(l: State, b: &[u8]) {
    ffi::lua_pushlstring_(l, b.as_ptr() as *const c_char, b.len());
}

/// `lua_typename` for a type tag (`luaL_typename` when given `lua_type`).
pub(crate) fn type_name(t: c_int) -> &'static str {
    match t {
        ffi::LUA_TNONE => "no value",
        ffi::LUA_TNIL => "nil",
        ffi::LUA_TBOOLEAN => "boolean",
        ffi::LUA_TLIGHTUSERDATA | ffi::LUA_TUSERDATA => "userdata",
        ffi::LUA_TNUMBER => "number",
        ffi::LUA_TSTRING => "string",
        ffi::LUA_TTABLE => "table",
        ffi::LUA_TFUNCTION => "function",
        ffi::LUA_TTHREAD => "thread",
        _ => "?",
    }
}

/// `luaL_typerror`.
pub(crate) unsafe fn type_error(l: State, narg: c_int, expected: &str) -> LErr {
    LErr::Arg(
        narg,
        format!(
            "{} expected, got {}",
            expected,
            type_name(ffi::lua_type(l, narg))
        ),
    )
}

/// `luaL_checknumber`.
pub(crate) unsafe fn check_number(l: State, narg: c_int) -> LRes<f64> {
    let n = ffi::lua_tonumber(l, narg);
    if n == 0.0 && ffi::lua_isnumber(l, narg) == 0 {
        return Err(type_error(l, narg, "number"));
    }
    Ok(n)
}

/// `luaL_checkinteger`.
pub(crate) unsafe fn check_integer(l: State, narg: c_int) -> LRes<i64> {
    let n = ffi::lua_tointeger_(l, narg) as i64;
    if n == 0 && ffi::lua_isnumber(l, narg) == 0 {
        return Err(type_error(l, narg, "number"));
    }
    Ok(n)
}

/// `luaL_optinteger`.
pub(crate) unsafe fn opt_integer(l: State, narg: c_int, def: i64) -> LRes<i64> {
    if ffi::lua_type(l, narg) <= ffi::LUA_TNIL {
        Ok(def)
    } else {
        check_integer(l, narg)
    }
}

/// `luaL_checklstring` (converts a number argument to a string in place).
/// The slice borrows the Lua string, which stays anchored at `narg` for as
/// long as the caller leaves that stack slot alone.
pub(crate) unsafe fn check_lstring<'a>(l: State, narg: c_int) -> LRes<&'a [u8]> {
    let mut len = 0usize;
    let p = ffi::lua_tolstring(l, narg, &mut len);
    if p.is_null() {
        return Err(type_error(l, narg, "string"));
    }
    Ok(std::slice::from_raw_parts(p as *const u8, len))
}

/// `luaL_checkstack`.
pub(crate) unsafe fn check_stack(l: State, space: c_int, msg: &str) -> LRes<()> {
    if ffi::lua_checkstack(l, space) == 0 {
        return Err(LErr::Msg(format!("stack overflow ({msg})")));
    }
    Ok(())
}

/// Sets `t[name] = f` for the table at the top of the stack, giving `f`
/// `nup` upvalues copied from the stack slot `up` (0 for none).
pub(crate) unsafe fn set_fn(l: State, name: &std::ffi::CStr, f: ffi::lua_CFunction, up: c_int) {
    if up != 0 {
        ffi::lua_pushvalue(l, up);
        ffi::lua_pushcclosure(l, f, 1);
    } else {
        ffi::lua_pushcclosure(l, f, 0);
    }
    ffi::lua_setfield(l, -2, name.as_ptr());
}

/// Sets `t[name] = s` for the table at the top of the stack.
pub(crate) unsafe fn set_str(l: State, name: &std::ffi::CStr, s: &str) {
    push_bytes(l, s.as_bytes());
    ffi::lua_setfield(l, -2, name.as_ptr());
}

/// Formats `x` like C's `printf("%.{prec}g")` (glibc: exact binary value,
/// ties to even), except that NaN of either sign prints as `nan`, which is
/// what lua-cjson as built into Redis produces.
pub(crate) fn fmt_g(out: &mut Vec<u8>, x: f64, prec: usize) {
    use std::io::Write;
    let p = prec.max(1);
    if x.is_nan() {
        out.extend_from_slice(b"nan");
        return;
    }
    if x.is_infinite() {
        out.extend_from_slice(if x < 0.0 { b"-inf" } else { b"inf" });
        return;
    }
    if x == 0.0 {
        out.extend_from_slice(if x.is_sign_negative() { b"-0" } else { b"0" });
        return;
    }
    let e = format!("{:.*e}", p - 1, x);
    let epos = e.rfind('e').unwrap_or(e.len());
    let exp: i32 = e[epos + 1..].parse().unwrap_or(0);
    if exp < -4 || exp >= p as i32 {
        let mant = strip_zeros(&e[..epos]);
        out.extend_from_slice(mant.as_bytes());
        let _ = write!(
            out,
            "e{}{:02}",
            if exp < 0 { '-' } else { '+' },
            exp.unsigned_abs()
        );
    } else {
        let f = format!("{:.*}", (p as i32 - 1 - exp) as usize, x);
        out.extend_from_slice(strip_zeros(&f).as_bytes());
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// A glibc-compatible `strtod` over `s` (which ends at the first NUL, as a
/// C string would): decimal and hexadecimal floats, `inf`/`infinity`,
/// `nan`/`nan(...)`, leading whitespace and sign. Returns the value and the
/// number of bytes consumed, or `None` when no conversion is possible.
pub(crate) fn strtod(s: &[u8]) -> Option<(f64, usize)> {
    let at = |i: usize| -> u8 { s.get(i).copied().unwrap_or(0) };
    let mut i = 0;
    while matches!(at(i), b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
        i += 1;
    }
    let neg = match at(i) {
        b'-' => {
            i += 1;
            true
        }
        b'+' => {
            i += 1;
            false
        }
        _ => false,
    };
    let sign = |v: f64| if neg { -v } else { v };
    let lower = |i: usize, w: &[u8]| {
        w.iter()
            .enumerate()
            .all(|(k, c)| at(i + k).to_ascii_lowercase() == *c)
    };
    if lower(i, b"inf") {
        let n = if lower(i + 3, b"inity") { i + 8 } else { i + 3 };
        return Some((sign(f64::INFINITY), n));
    }
    if lower(i, b"nan") {
        let mut n = i + 3;
        let mut payload = 0u64;
        if at(n) == b'(' {
            let mut k = n + 1;
            while at(k).is_ascii_alphanumeric() || at(k) == b'_' {
                k += 1;
            }
            if at(k) == b')' {
                payload = nan_payload(&s[n + 1..k]);
                n = k + 1;
            }
        }
        let bits = 0x7ff8_0000_0000_0000u64
            | (payload & 0x0007_ffff_ffff_ffff)
            | if neg { 1 << 63 } else { 0 };
        return Some((f64::from_bits(bits), n));
    }
    if at(i) == b'0' && (at(i + 1) | 0x20) == b'x' {
        if let Some((v, n)) = hex_float(s, i + 2) {
            return Some((sign(v), n));
        }
        // "0x" without hex digits: only the "0" converts.
        return Some((sign(0.0), i + 1));
    }
    let start = i;
    let mut digits = 0;
    while at(i).is_ascii_digit() {
        i += 1;
        digits += 1;
    }
    if at(i) == b'.' {
        i += 1;
        while at(i).is_ascii_digit() {
            i += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return None;
    }
    if (at(i) | 0x20) == b'e' {
        let mut k = i + 1;
        if matches!(at(k), b'+' | b'-') {
            k += 1;
        }
        if at(k).is_ascii_digit() {
            while at(k).is_ascii_digit() {
                k += 1;
            }
            i = k;
        }
    }
    let text = std::str::from_utf8(&s[start..i]).ok()?;
    let v: f64 = if text.starts_with('.') {
        format!("0{text}").parse().ok()?
    } else {
        text.parse().ok()?
    };
    Some((sign(v), i))
}

/// glibc parses the n-char-sequence of `nan(...)` with `strtoull(.., 0)`.
fn nan_payload(seq: &[u8]) -> u64 {
    let s = std::str::from_utf8(seq).unwrap_or("");
    let r = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16)
    } else if s.len() > 1 && s.starts_with('0') {
        u64::from_str_radix(&s[1..], 8)
    } else {
        s.parse::<u64>()
    };
    r.unwrap_or(0)
}

/// Parses the hexadecimal float whose digits start at `s[i]` (after "0x"),
/// correctly rounded (ties to even). `None` when there is no hex digit.
fn hex_float(s: &[u8], mut i: usize) -> Option<(f64, usize)> {
    let at = |i: usize| -> u8 { s.get(i).copied().unwrap_or(0) };
    let hexval = |c: u8| (c as char).to_digit(16);
    let mut mant: u64 = 0;
    let mut exp: i64 = 0; // value = mant * 2^exp (+ sticky)
    let mut sticky = false;
    let mut any = false;
    let push = |d: u32, frac: bool, mant: &mut u64, exp: &mut i64, sticky: &mut bool| {
        if *mant >> 56 == 0 {
            *mant = (*mant << 4) | d as u64;
            if frac {
                *exp -= 4;
            }
        } else {
            *sticky |= d != 0;
            if !frac {
                *exp += 4;
            }
        }
    };
    while let Some(d) = hexval(at(i)) {
        push(d, false, &mut mant, &mut exp, &mut sticky);
        any = true;
        i += 1;
    }
    if at(i) == b'.' {
        let mut k = i + 1;
        let mut fany = false;
        while let Some(d) = hexval(at(k)) {
            push(d, true, &mut mant, &mut exp, &mut sticky);
            fany = true;
            k += 1;
        }
        if any || fany {
            i = k;
            any = true;
        }
    }
    if !any {
        return None;
    }
    if (at(i) | 0x20) == b'p' {
        let mut k = i + 1;
        let eneg = match at(k) {
            b'-' => {
                k += 1;
                true
            }
            b'+' => {
                k += 1;
                false
            }
            _ => false,
        };
        if at(k).is_ascii_digit() {
            let mut e: i64 = 0;
            while at(k).is_ascii_digit() {
                e = (e * 10 + (at(k) - b'0') as i64).min(1 << 40);
                k += 1;
            }
            exp += if eneg { -e } else { e };
            i = k;
        }
    }
    Some((compose(mant, exp, sticky), i))
}

/// `mant * 2^exp`, where `sticky` says nonzero bits were dropped below
/// `mant`, rounded to the nearest double (ties to even).
fn compose(mant: u64, exp: i64, sticky: bool) -> f64 {
    if mant == 0 {
        return 0.0;
    }
    let top = 63 - mant.leading_zeros() as i64; // value in [2^(top+exp), 2^(top+exp+1))
    let e = top + exp; // unbiased exponent of the leading bit
    if e > 1023 {
        return f64::INFINITY;
    }
    // Number of mantissa bits kept: 53 for normals, fewer for subnormals.
    let keep = if e >= -1022 { 53 } else { 53 - (-1022 - e) };
    if keep <= 0 {
        // Below half the smallest subnormal (or exactly half: ties to 0).
        let half = keep == 0 && (mant.is_power_of_two() && !sticky);
        return if keep == 0 && !half {
            f64::from_bits(1)
        } else {
            0.0
        };
    }
    let shift = top + 1 - keep; // bits to drop from mant
    let (mut m, mut e2) = if shift > 0 {
        let dropped = mant & ((1u64 << shift) - 1);
        let halfway = 1u64 << (shift - 1);
        let mut m = mant >> shift;
        if dropped > halfway || (dropped == halfway && (sticky || m & 1 == 1)) {
            m += 1;
        }
        (m, exp + shift)
    } else {
        (mant << (-shift), exp + shift)
    };
    if m >> keep != 0 {
        m >>= 1;
        e2 += 1;
    }
    // m * 2^e2 is exactly representable now.
    let lead = 63 - m.leading_zeros() as i64 + e2;
    if lead > 1023 {
        return f64::INFINITY;
    }
    if lead >= -1022 {
        let frac = (m << (52 - (63 - m.leading_zeros() as i64))) & ((1u64 << 52) - 1);
        f64::from_bits((((lead + 1023) as u64) << 52) | frac)
    } else {
        // Subnormal: value = m * 2^e2 = bits * 2^-1074.
        f64::from_bits(m << (e2 + 1074))
    }
}

/// Installs the globals `cjson`, `cmsgpack`, `bit` and `struct` into `lua`,
/// as redis-server 7.0 does for its scripting environment. `bit` and
/// `struct` are also recorded in the registry's `_LOADED` table (what
/// `package.loaded` aliases when the package library is present), as
/// `luaL_register` does; Redis does not expose `package` to scripts.
pub fn register(lua: &mlua::Lua) -> mlua::Result<()> {
    unsafe {
        lua.exec_raw::<()>((), |l| {
            cjson::open(l);
            ffi::lua_setfield(l, ffi::LUA_GLOBALSINDEX, c"cjson".as_ptr());
            cmsgpack::open(l);
            ffi::lua_setfield(l, ffi::LUA_GLOBALSINDEX, c"cmsgpack".as_ptr());
            structlib::open(l);
            set_loaded(l, c"struct");
            ffi::lua_setfield(l, ffi::LUA_GLOBALSINDEX, c"struct".as_ptr());
            bit::open(l);
            set_loaded(l, c"bit");
            ffi::lua_setfield(l, ffi::LUA_GLOBALSINDEX, c"bit".as_ptr());
        })
    }
}

/// `_LOADED[name] = <table at top>` (creating `_LOADED` if needed).
unsafe fn set_loaded(l: State, name: &std::ffi::CStr) {
    ffi::lua_getfield_(l, ffi::LUA_REGISTRYINDEX, c"_LOADED".as_ptr());
    if ffi::lua_type(l, -1) != ffi::LUA_TTABLE {
        ffi::lua_pop(l, 1);
        ffi::lua_newtable(l);
        ffi::lua_pushvalue(l, -1);
        ffi::lua_setfield(l, ffi::LUA_REGISTRYINDEX, c"_LOADED".as_ptr());
    }
    ffi::lua_pushvalue(l, -2);
    ffi::lua_setfield(l, -2, name.as_ptr());
    ffi::lua_pop(l, 1);
}
