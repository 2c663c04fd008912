//! `bit`: LuaBitOp 1.0.2 semantics. Every operand is a Lua number (strings
//! coerce) normalised to a 32-bit integer by adding 2^52+2^51 and taking the
//! low word of the double's bit pattern; results are signed 32-bit numbers.

use std::ffi::c_int;

use super::{ffi, lua_fn, push_bytes, type_error, LRes, State};

/// The normalised 32-bit value of argument `idx`.
unsafe fn barg(l: State, idx: c_int) -> LRes<u32> {
    let n = ffi::lua_tonumber(l, idx);
    let b = (n + 6_755_399_441_055_744.0).to_bits() as u32;
    if b == 0 && ffi::lua_isnumber(l, idx) == 0 {
        return Err(type_error(l, idx, "number"));
    }
    Ok(b)
}

#[inline]
unsafe fn ret(l: State, b: u32) -> LRes<c_int> {
    ffi::lua_pushnumber(l, b as i32 as f64);
    Ok(1)
}

unsafe fn tobit(l: State) -> LRes<c_int> {
    ret(l, barg(l, 1)?)
}

unsafe fn bnot(l: State) -> LRes<c_int> {
    ret(l, !barg(l, 1)?)
}

unsafe fn fold(l: State, op: fn(u32, u32) -> u32) -> LRes<c_int> {
    let mut b = barg(l, 1)?;
    let mut i = ffi::lua_gettop(l);
    while i > 1 {
        b = op(b, barg(l, i)?);
        i -= 1;
    }
    ret(l, b)
}

unsafe fn band(l: State) -> LRes<c_int> {
    fold(l, |a, b| a & b)
}
unsafe fn bor(l: State) -> LRes<c_int> {
    fold(l, |a, b| a | b)
}
unsafe fn bxor(l: State) -> LRes<c_int> {
    fold(l, |a, b| a ^ b)
}

unsafe fn shift(l: State, op: fn(u32, u32) -> u32) -> LRes<c_int> {
    let b = barg(l, 1)?;
    let n = barg(l, 2)? & 31;
    ret(l, op(b, n))
}

unsafe fn lshift(l: State) -> LRes<c_int> {
    shift(l, |b, n| b << n)
}
unsafe fn rshift(l: State) -> LRes<c_int> {
    shift(l, |b, n| b >> n)
}
unsafe fn arshift(l: State) -> LRes<c_int> {
    shift(l, |b, n| ((b as i32) >> n) as u32)
}
unsafe fn rol(l: State) -> LRes<c_int> {
    shift(l, |b, n| b.rotate_left(n))
}
unsafe fn ror(l: State) -> LRes<c_int> {
    shift(l, |b, n| b.rotate_right(n))
}

unsafe fn bswap(l: State) -> LRes<c_int> {
    ret(l, barg(l, 1)?.swap_bytes())
}

unsafe fn tohex(l: State) -> LRes<c_int> {
    let mut b = barg(l, 1)?;
    let n: i32 = if ffi::lua_type(l, 2) == ffi::LUA_TNONE {
        8
    } else {
        barg(l, 2)? as i32
    };
    let digits: &[u8; 16] = if n < 0 {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let n = n.unsigned_abs().min(8) as usize;
    let mut buf = [0u8; 8];
    for i in (0..n).rev() {
        buf[i] = digits[(b & 15) as usize];
        b >>= 4;
    }
    push_bytes(l, &buf[..n]);
    Ok(1)
}

lua_fn!(c_tobit, tobit);
lua_fn!(c_bnot, bnot);
lua_fn!(c_band, band);
lua_fn!(c_bor, bor);
lua_fn!(c_bxor, bxor);
lua_fn!(c_lshift, lshift);
lua_fn!(c_rshift, rshift);
lua_fn!(c_arshift, arshift);
lua_fn!(c_rol, rol);
lua_fn!(c_ror, ror);
lua_fn!(c_bswap, bswap);
lua_fn!(c_tohex, tohex);

/// Pushes the `bit` module table.
pub(super) unsafe fn open(l: State) {
    use super::set_fn;
    ffi::lua_createtable(l, 0, 12);
    set_fn(l, c"tobit", c_tobit, 0);
    set_fn(l, c"bnot", c_bnot, 0);
    set_fn(l, c"band", c_band, 0);
    set_fn(l, c"bor", c_bor, 0);
    set_fn(l, c"bxor", c_bxor, 0);
    set_fn(l, c"lshift", c_lshift, 0);
    set_fn(l, c"rshift", c_rshift, 0);
    set_fn(l, c"arshift", c_arshift, 0);
    set_fn(l, c"rol", c_rol, 0);
    set_fn(l, c"ror", c_ror, 0);
    set_fn(l, c"bswap", c_bswap, 0);
    set_fn(l, c"tohex", c_tohex, 0);
}
