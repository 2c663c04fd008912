//! `struct`: Roberto Ierusalimschy's struct library 0.2 as shipped with
//! Redis (x86-64 / LP64 sizes: short 2, int 4, long and size_t 8, native
//! little-endian, maximum alignment 8), including Redis's overflow checks.

use std::ffi::c_int;

use super::{check_lstring, check_number, ffi, lua_fn, opt_integer, push_bytes, LErr, LRes, State};

const MAXINTSIZE: usize = 32;
const MAXALIGN: i32 = 8;
const BIG: bool = false;
const LITTLE: bool = true;

struct Header {
    little: bool,
    align: i32,
}

impl Header {
    fn new() -> Self {
        Header {
            little: LITTLE,
            align: 1,
        }
    }
}

/// Reads an optional decimal count at `fmt[*i]`.
fn getnum(fmt: &[u8], i: &mut usize, df: i32) -> LRes<i32> {
    if !fmt.get(*i).is_some_and(u8::is_ascii_digit) {
        return Ok(df);
    }
    let mut a: i32 = 0;
    while let Some(&c) = fmt.get(*i).filter(|c| c.is_ascii_digit()) {
        let d = (c - b'0') as i32;
        if a > i32::MAX / 10 || a * 10 > i32::MAX - d {
            return Err(LErr::Msg("integral size overflow".into()));
        }
        a = a * 10 + d;
        *i += 1;
    }
    Ok(a)
}

fn optsize(opt: u8, fmt: &[u8], i: &mut usize) -> LRes<usize> {
    Ok(match opt {
        b'B' | b'b' => 1,
        b'H' | b'h' => 2,
        b'L' | b'l' | b'T' | b'd' => 8,
        b'f' => 4,
        b'x' => 1,
        b'c' => getnum(fmt, i, 1)? as usize,
        b'i' | b'I' => {
            let sz = getnum(fmt, i, 4)?;
            if sz as usize > MAXINTSIZE {
                return Err(LErr::Msg(format!(
                    "integral size {sz} is larger than limit of {MAXINTSIZE}"
                )));
            }
            sz as usize
        }
        _ => 0,
    })
}

/// Padding needed to align an item of `size` bytes at offset `len`.
fn gettoalign(len: usize, h: &Header, opt: u8, size: usize) -> usize {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = size.min(h.align as usize);
    (size.wrapping_sub(len & size.wrapping_sub(1))) & size.wrapping_sub(1)
}

fn controloptions(opt: u8, fmt: &[u8], i: &mut usize, h: &mut Header) -> LRes<()> {
    match opt {
        b' ' => Ok(()),
        b'>' => {
            h.little = BIG;
            Ok(())
        }
        b'<' => {
            h.little = LITTLE;
            Ok(())
        }
        b'!' => {
            let a = getnum(fmt, i, MAXALIGN)?;
            if !(a > 0 && a & (a - 1) == 0) {
                return Err(LErr::Msg(format!("alignment {a} is not a power of 2")));
            }
            h.align = a;
            Ok(())
        }
        _ => Err(LErr::Arg(
            1,
            format!("invalid format option '{}'", opt as char),
        )),
    }
}

/// The format string up to its first NUL, as the C code sees it.
unsafe fn check_fmt<'a>(l: State) -> LRes<&'a [u8]> {
    let f = check_lstring(l, 1)?;
    Ok(match f.iter().position(|&c| c == 0) {
        Some(n) => &f[..n],
        None => f,
    })
}

/// The C double -> integer conversions of `putinteger` on x86-64.
fn to_uint(n: f64) -> u64 {
    if n < 0.0 {
        // (unsigned long)(long)n: out of range gives LONG_MIN.
        if n >= -9_223_372_036_854_775_808.0 {
            n as i64 as u64
        } else {
            1 << 63
        }
    } else if n < 9_223_372_036_854_775_808.0 {
        n as u64
    } else if n < 18_446_744_073_709_551_616.0 {
        // gcc: cvttsd2si(n - 2^63) ^ 2^63
        ((n - 9_223_372_036_854_775_808.0) as i64 as u64) ^ (1 << 63)
    } else if n.is_nan() {
        1 << 63
    } else {
        0
    }
}

unsafe fn pack(l: State) -> LRes<c_int> {
    let fmt = check_fmt(l)?;
    let mut h = Header::new();
    let mut arg: c_int = 2;
    // The C library pushes a nil "mark" above the arguments, so the first
    // missing argument reads as nil rather than "no value".
    ffi::lua_pushnil(l);
    let mut out: Vec<u8> = Vec::new();
    let mut i = 0;
    while i < fmt.len() {
        let opt = fmt[i];
        i += 1;
        let mut size = optsize(opt, fmt, &mut i)?;
        let toalign = gettoalign(out.len(), &h, opt, size);
        out.resize(out.len() + toalign, 0);
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let n = check_number(l, arg)?;
                arg += 1;
                let mut v = to_uint(n);
                let mut buf = [0u8; MAXINTSIZE];
                for k in 0..size {
                    let idx = if h.little { k } else { size - 1 - k };
                    buf[idx] = v as u8;
                    v >>= 8;
                }
                out.extend_from_slice(&buf[..size]);
            }
            b'x' => out.push(0),
            b'f' => {
                let f = check_number(l, arg)? as f32;
                arg += 1;
                out.extend_from_slice(&if h.little {
                    f.to_le_bytes()
                } else {
                    f.to_be_bytes()
                });
            }
            b'd' => {
                let d = check_number(l, arg)?;
                arg += 1;
                out.extend_from_slice(&if h.little {
                    d.to_le_bytes()
                } else {
                    d.to_be_bytes()
                });
            }
            b'c' | b's' => {
                let s = check_lstring(l, arg)?;
                arg += 1;
                if size == 0 {
                    size = s.len();
                }
                if s.len() < size {
                    return Err(LErr::Arg(arg, "string too short".into()));
                }
                out.extend_from_slice(&s[..size]);
                if opt == b's' {
                    out.push(0);
                }
            }
            _ => controloptions(opt, fmt, &mut i, &mut h)?,
        }
    }
    push_bytes(l, &out);
    Ok(1)
}

fn getinteger(buf: &[u8], little: bool, signed: bool) -> f64 {
    let size = buf.len();
    let mut v: u64 = 0;
    for k in 0..size {
        let b = if little { buf[size - 1 - k] } else { buf[k] };
        v = (v << 8) | b as u64;
    }
    if !signed {
        v as f64
    } else {
        // The C shift count wraps modulo 64 on x86-64.
        let mask = (!0u64).wrapping_shl((size as u32).wrapping_mul(8).wrapping_sub(1));
        if v & mask != 0 {
            v |= mask;
        }
        v as i64 as f64
    }
}

unsafe fn unpack(l: State) -> LRes<c_int> {
    let fmt = check_fmt(l)?;
    let data = check_lstring(l, 2)?;
    let ld = data.len();
    let mut pos = opt_integer(l, 3, 1)? as usize;
    if pos == 0 {
        return Err(LErr::Arg(3, "offset must be 1 or greater".into()));
    }
    pos -= 1;
    let mut n: c_int = 0;
    let mut h = Header::new();
    let too_short = || LErr::Arg(2, "data string too short".into());
    let mut i = 0;
    while i < fmt.len() {
        let opt = fmt[i];
        i += 1;
        let mut size = optsize(opt, fmt, &mut i)?;
        pos = pos.wrapping_add(gettoalign(pos, &h, opt, size));
        if !(size <= ld && pos <= ld - size) {
            return Err(too_short());
        }
        super::check_stack(l, 2, "too many results")?;
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let v = getinteger(&data[pos..pos + size], h.little, opt.is_ascii_lowercase());
                ffi::lua_pushnumber(l, v);
                n += 1;
            }
            b'x' => {}
            b'f' => {
                let b: [u8; 4] = data[pos..pos + 4].try_into().unwrap_or([0; 4]);
                let f = if h.little {
                    f32::from_le_bytes(b)
                } else {
                    f32::from_be_bytes(b)
                };
                ffi::lua_pushnumber(l, f as f64);
                n += 1;
            }
            b'd' => {
                let b: [u8; 8] = data[pos..pos + 8].try_into().unwrap_or([0; 8]);
                let d = if h.little {
                    f64::from_le_bytes(b)
                } else {
                    f64::from_be_bytes(b)
                };
                ffi::lua_pushnumber(l, d);
                n += 1;
            }
            b'c' => {
                if size == 0 {
                    if n == 0 || ffi::lua_isnumber(l, -1) == 0 {
                        return Err(LErr::Msg("format 'c0' needs a previous size".into()));
                    }
                    size = c_size(ffi::lua_tonumber(l, -1));
                    ffi::lua_pop(l, 1);
                    n -= 1;
                    if !(size <= ld && pos <= ld - size) {
                        return Err(too_short());
                    }
                }
                push_bytes(l, &data[pos..pos + size]);
                n += 1;
            }
            b's' => {
                let Some(e) = data[pos..].iter().position(|&c| c == 0) else {
                    return Err(LErr::Msg("unfinished string in data".into()));
                };
                push_bytes(l, &data[pos..pos + e]);
                size = e + 1;
                n += 1;
            }
            _ => controloptions(opt, fmt, &mut i, &mut h)?,
        }
        pos = pos.wrapping_add(size);
    }
    ffi::lua_pushinteger(l, pos.wrapping_add(1) as ffi::lua_Integer);
    Ok(n + 1)
}

/// `(size_t)d` as compiled for x86-64.
fn c_size(d: f64) -> usize {
    to_uint_trunc(d) as usize
}

fn to_uint_trunc(d: f64) -> u64 {
    if d < 9_223_372_036_854_775_808.0 {
        if d >= -9_223_372_036_854_775_808.0 {
            d as i64 as u64
        } else {
            1 << 63
        }
    } else if d < 18_446_744_073_709_551_616.0 {
        ((d - 9_223_372_036_854_775_808.0) as i64 as u64) ^ (1 << 63)
    } else {
        0
    }
}

unsafe fn size(l: State) -> LRes<c_int> {
    let fmt = check_fmt(l)?;
    let mut h = Header::new();
    let mut pos: usize = 0;
    let mut i = 0;
    while i < fmt.len() {
        let opt = fmt[i];
        i += 1;
        let size = optsize(opt, fmt, &mut i)?;
        pos = pos.wrapping_add(gettoalign(pos, &h, opt, size));
        if opt == b's' {
            return Err(LErr::Arg(1, "option 's' has no fixed size".into()));
        } else if opt == b'c' && size == 0 {
            return Err(LErr::Arg(1, "option 'c0' has no fixed size".into()));
        }
        if !opt.is_ascii_alphanumeric() {
            controloptions(opt, fmt, &mut i, &mut h)?;
        }
        pos = pos.wrapping_add(size);
    }
    ffi::lua_pushinteger(l, pos as ffi::lua_Integer);
    Ok(1)
}

lua_fn!(c_pack, pack);
lua_fn!(c_unpack, unpack);
lua_fn!(c_size_fn, size);

/// Pushes the `struct` module table.
pub(super) unsafe fn open(l: State) {
    use super::set_fn;
    ffi::lua_createtable(l, 0, 3);
    set_fn(l, c"pack", c_pack, 0);
    set_fn(l, c"unpack", c_unpack, 0);
    set_fn(l, c"size", c_size_fn, 0);
}
