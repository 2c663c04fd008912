//! Conversions between RESP replies and Lua values, as redis-server 7.0
//! does them, and the `redis` table's helper functions.

use std::ffi::c_int;

use crate::util::c_str;
use mlua::{ffi, Lua, MultiValue, Table, Value};
use tessera_resp::encode::ReplyBuf;

/// The error text of a command reply that is an error (`-ERR ...` or a
/// RESP3 bulk error), without its marker and CRLF.
pub fn reply_error_text(reply: &[u8]) -> Option<&[u8]> {
    match reply.first()? {
        b'-' => {
            let end = memchr::memchr(b'\r', reply).unwrap_or(reply.len());
            Some(&reply[1..end])
        }
        b'!' => {
            let mut pos = 1;
            let len = resp_line(reply, &mut pos);
            let len = crate::util::numbers::parse_u64(len).unwrap_or(0) as usize;
            reply.get(pos..pos.saturating_add(len))
        }
        _ => None,
    }
}

/// The rest of the line at `pos` (without CRLF); moves past it.
fn resp_line<'a>(buf: &'a [u8], pos: &mut usize) -> &'a [u8] {
    let rest = buf.get(*pos..).unwrap_or_default();
    let end = memchr::memchr(b'\r', rest).unwrap_or(rest.len());
    *pos += (end + 2).min(rest.len());
    &rest[..end]
}

/// Pushes `{<key> = text}`, the shape of status and error replies.
///
/// # Safety
/// `state` must be a valid Lua state with three free stack slots.
pub unsafe fn push_tagged(state: *mut ffi::lua_State, key: &[u8], text: &[u8]) {
    // SAFETY: valid state (caller contract); the table is new, so the raw
    // set cannot meet a metamethod.
    unsafe {
        ffi::lua_createtable(state, 0, 1);
        ffi::lua_pushlstring(state, key.as_ptr().cast(), key.len());
        ffi::lua_pushlstring(state, text.as_ptr().cast(), text.len());
        ffi::lua_rawset(state, -3);
    }
}

/// Pushes the {err=...} table of a failed `redis.call`. `counted`: the
/// error is already in the error statistics, which the table says as
/// Redis's does (`ignore_error_stats_update`), so that a script replying
/// with it or raising it does not count it again.
///
/// # Safety
/// Valid state with three free stack slots.
pub unsafe fn push_error_table(state: *mut ffi::lua_State, text: &[u8], counted: bool) {
    // SAFETY: valid state (caller contract); the table is new, so the raw
    // sets cannot meet a metamethod.
    unsafe {
        push_tagged(state, b"err", text);
        if counted {
            ffi::lua_pushstring(state, c"ignore_error_stats_update".as_ptr());
            ffi::lua_pushboolean(state, 1);
            ffi::lua_rawset(state, -3);
        }
    }
}

/// Pushes a command reply (as this server's encoder wrote it) as the Lua
/// value Redis 7.0 gives scripts. RESP2: integers → numbers, bulk →
/// strings, nulls → false, arrays → tables, status → {ok=}, error →
/// {err=}. RESP3 adds maps {map=}, sets {set=}, null → nil, booleans,
/// doubles {double=}, big numbers {big_number=}, verbatim strings
/// {verbatim_string={format=, string=}}.
///
/// Only borrowed data is live while it pushes, so a Lua memory error (a
/// longjmp) skips no destructor.
///
/// # Safety
/// `state` must be a valid Lua state.
pub unsafe fn push_reply(state: *mut ffi::lua_State, reply: &[u8]) {
    let mut pos = 0;
    // SAFETY: caller contract.
    unsafe { push_value(state, reply, &mut pos) }
}

/// # Safety
/// `state` must be a valid Lua state.
unsafe fn push_value(state: *mut ffi::lua_State, buf: &[u8], pos: &mut usize) {
    use crate::util::numbers::{parse_i64, parse_u64};
    // SAFETY (every FFI call below): valid state (caller contract), a stack
    // slot checked for each level, and tables created here carry no
    // metatable, so raw sets run no Lua code.
    unsafe {
        // Exactly one value is pushed, whatever happens: the caller stores
        // it. (The slot for a nil is the one the caller's check reserved.)
        if ffi::lua_checkstack(state, 5) == 0 {
            ffi::lua_pushnil(state);
            return;
        }
        let Some(&tag) = buf.get(*pos) else {
            ffi::lua_pushnil(state);
            return;
        };
        *pos += 1;
        let line = resp_line(buf, pos);
        let count = || parse_u64(line).map(|n| n as usize);
        let blob = |pos: &mut usize| -> &[u8] {
            let len = parse_u64(line).unwrap_or(0) as usize;
            let data = buf.get(*pos..pos.saturating_add(len)).unwrap_or_default();
            *pos = pos.saturating_add(len.saturating_add(2));
            data
        };
        match tag {
            b'+' => push_tagged(state, b"ok", line),
            b'-' => push_tagged(state, b"err", line),
            b':' => ffi::lua_pushnumber(state, parse_i64(line).unwrap_or(0) as f64),
            b'$' if line == b"-1" => ffi::lua_pushboolean(state, 0),
            b'$' => {
                let data = blob(pos);
                ffi::lua_pushlstring(state, data.as_ptr().cast(), data.len());
            }
            b'!' => push_tagged(state, b"err", blob(pos)),
            b'*' | b'>' => match count() {
                None => ffi::lua_pushboolean(state, 0),
                Some(n) => {
                    ffi::lua_createtable(state, c_int::try_from(n).unwrap_or(0), 0);
                    for i in 1..=n {
                        push_value(state, buf, pos);
                        ffi::lua_rawseti_(state, -2, c_int::try_from(i).unwrap_or(c_int::MAX));
                    }
                }
            },
            b'%' | b'~' => {
                let n = count().unwrap_or(0);
                let is_map = tag == b'%';
                let key: &[u8] = if is_map { b"map" } else { b"set" };
                ffi::lua_createtable(state, 0, 1);
                ffi::lua_pushlstring(state, key.as_ptr().cast(), key.len());
                // Not pre-sized: Redis grows the table key by key, and a
                // script iterating it with pairs() sees the order that
                // growth leaves.
                ffi::lua_createtable(state, 0, 0);
                for _ in 0..n {
                    push_value(state, buf, pos);
                    if is_map {
                        push_value(state, buf, pos);
                    } else {
                        ffi::lua_pushboolean(state, 1);
                    }
                    // A nil key cannot be stored (Lua would raise).
                    if ffi::lua_type(state, -2) == ffi::LUA_TNIL {
                        ffi::lua_settop(state, -3);
                    } else {
                        ffi::lua_rawset(state, -3);
                    }
                }
                ffi::lua_rawset(state, -3);
            }
            b'_' => ffi::lua_pushnil(state),
            b'#' => ffi::lua_pushboolean(state, c_int::from(line == b"t")),
            b',' => {
                let n: f64 = std::str::from_utf8(line)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0.0);
                ffi::lua_createtable(state, 0, 1);
                ffi::lua_pushlstring(state, b"double".as_ptr().cast(), 6);
                ffi::lua_pushnumber(state, n);
                ffi::lua_rawset(state, -3);
            }
            b'(' => push_tagged(state, b"big_number", line),
            b'=' => {
                let data = blob(pos);
                let (format, text) = match data.get(3) {
                    Some(b':') => (&data[..3], &data[4..]),
                    _ => (&b"txt"[..], data),
                };
                ffi::lua_createtable(state, 0, 1);
                ffi::lua_pushlstring(state, b"verbatim_string".as_ptr().cast(), 15);
                ffi::lua_createtable(state, 0, 2);
                ffi::lua_pushlstring(state, b"format".as_ptr().cast(), 6);
                ffi::lua_pushlstring(state, format.as_ptr().cast(), format.len());
                ffi::lua_rawset(state, -3);
                ffi::lua_pushlstring(state, b"string".as_ptr().cast(), 6);
                ffi::lua_pushlstring(state, text.as_ptr().cast(), text.len());
                ffi::lua_rawset(state, -3);
                ffi::lua_rawset(state, -3);
            }
            b'|' => {
                // Attributes are dropped; the value after them is the reply.
                for _ in 0..count().unwrap_or(0) * 2 {
                    push_value(state, buf, pos);
                    ffi::lua_settop(state, -2);
                }
                push_value(state, buf, pos);
            }
            _ => ffi::lua_pushnil(state),
        }
    }
}

/// A script's error: its text, where it was raised, and whether it is
/// already in the error statistics (raised by `redis.call`).
pub type ScriptError = (Vec<u8>, Option<(String, i64)>, bool);

/// Deeper than Lua's stack allows (LUAI_MAXCSTACK is 8000 slots, and each
/// level takes at least one).
const MAX_REPLY_DEPTH: usize = 8192;

/// Writes the Lua value at stack index `idx` (absolute) as a reply, as
/// Redis 7.0 converts a script's return value.
///
/// Reads only (raw gets, `lua_next` over tables it does not change), so
/// no Lua code runs and nothing can raise but a memory error.
///
/// # Safety
/// `state` must be a valid Lua state and `idx` a valid absolute index.
pub unsafe fn write_reply(
    state: *mut ffi::lua_State,
    idx: c_int,
    out: &mut ReplyBuf,
    depth: usize,
) {
    // Lua's own stack limit (lua_checkstack below, LUAI_MAXCSTACK) ends
    // the nesting where Redis's does, near 8000 levels; worker threads have
    // the native stack for that (server::WORKER_STACK_BYTES). This cap only
    // guards the native stack should that limit ever be raised.
    if depth > MAX_REPLY_DEPTH {
        out.error(b"ERR reached lua stack limit");
        return;
    }
    // SAFETY (every FFI call below): valid state and index (caller
    // contract); stack room is checked before each nested level.
    unsafe {
        // Checked for every value, as Redis does, so the level where the
        // stack runs out answers errors in the same places.
        if ffi::lua_checkstack(state, 4) == 0 {
            out.error(b"ERR reached lua stack limit");
            return;
        }
        match ffi::lua_type(state, idx) {
            ffi::LUA_TNIL => out.null(),
            // Booleans follow the script's protocol (redis.setresp).
            ffi::LUA_TBOOLEAN => {
                let b = ffi::lua_toboolean(state, idx) != 0;
                if super::bridge::reply_resp() == 3 {
                    out.boolean(b)
                } else if b {
                    out.int(1)
                } else {
                    out.null()
                }
            }
            ffi::LUA_TNUMBER => out.int(number_to_int(ffi::lua_tonumber(state, idx))),
            ffi::LUA_TSTRING => out.bulk(stack_bytes(state, idx)),
            ffi::LUA_TTABLE => write_table(state, idx, out, depth),
            _ => out.null(),
        }
    }
}

/// The bytes of the string at `idx`.
///
/// # Safety
/// `idx` must hold a string; the slice is valid while it stays on the
/// stack.
pub(crate) unsafe fn stack_bytes<'a>(state: *mut ffi::lua_State, idx: c_int) -> &'a [u8] {
    let mut len = 0usize;
    // SAFETY: a string value: lua_tolstring neither converts nor raises.
    unsafe {
        let p = ffi::lua_tolstring(state, idx, &mut len);
        if p.is_null() {
            return &[];
        }
        std::slice::from_raw_parts(p.cast::<u8>(), len)
    }
}

/// Pushes `t[key]` (raw) and returns its type.
///
/// # Safety
/// Valid state, `t` an absolute index of a table, one free stack slot.
unsafe fn raw_field(state: *mut ffi::lua_State, t: c_int, key: &[u8]) -> c_int {
    // SAFETY: caller contract; a raw get runs no metamethod.
    unsafe {
        ffi::lua_pushlstring(state, key.as_ptr().cast(), key.len());
        ffi::lua_rawget_(state, t);
        ffi::lua_type(state, -1)
    }
}

/// # Safety
/// As [`write_reply`], with `t` a table and four free stack slots.
unsafe fn write_table(state: *mut ffi::lua_State, t: c_int, out: &mut ReplyBuf, depth: usize) {
    // SAFETY (all): caller contract; every push below is popped before the
    // next, so the four checked slots suffice at this level.
    unsafe {
        let top = ffi::lua_gettop(state);
        let restore = |state| ffi::lua_settop(state, top);
        if raw_field(state, t, b"err") == ffi::LUA_TSTRING {
            let text = returned_error_text(stack_bytes(state, -1));
            out.error(&text);
            restore(state);
            if error_already_counted(state, t) {
                super::bridge::note_reply_error(None);
            } else {
                let text = String::from_utf8_lossy(&text);
                super::bridge::note_reply_error(Some(crate::util::error_code(&text)));
            }
            return;
        }
        ffi::lua_settop(state, top);
        if raw_field(state, t, b"ok") == ffi::LUA_TSTRING {
            out.simple(&sanitize(c_str(stack_bytes(state, -1))));
            return restore(state);
        }
        ffi::lua_settop(state, top);
        if raw_field(state, t, b"double") == ffi::LUA_TNUMBER {
            let mut text = Vec::new();
            crate::util::numbers::format_f64(ffi::lua_tonumber(state, -1), &mut text);
            out.double_text(&text);
            return restore(state);
        }
        ffi::lua_settop(state, top);
        if raw_field(state, t, b"big_number") == ffi::LUA_TSTRING {
            let s = stack_bytes(state, -1);
            if out.resp3() {
                out.raw(b"(");
                out.raw(&sanitize(s));
                out.raw(b"\r\n");
            } else {
                out.bulk(&sanitize(s));
            }
            return restore(state);
        }
        ffi::lua_settop(state, top);
        // Both fields must be strings, or the table is read as what follows
        // (as Redis does); the format is its first three bytes, read as a C
        // string and padded with spaces.
        if raw_field(state, t, b"verbatim_string") == ffi::LUA_TTABLE
            && raw_field(state, top + 1, b"format") == ffi::LUA_TSTRING
            && raw_field(state, top + 1, b"string") == ffi::LUA_TSTRING
        {
            let mut fmt = [b' '; 3];
            let given = c_str(stack_bytes(state, top + 2));
            for (d, s) in fmt.iter_mut().zip(given) {
                *d = *s;
            }
            out.verbatim(&fmt, stack_bytes(state, top + 3));
            return restore(state);
        }
        // {map={k=v}} and {set={k=true}}: a map writes keys and values, a
        // set its keys.
        for (field, is_map) in [(&b"map"[..], true), (&b"set"[..], false)] {
            ffi::lua_settop(state, top);
            if raw_field(state, t, field) != ffi::LUA_TTABLE {
                continue;
            }
            let m = top + 1;
            let n = count_pairs(state, m);
            if is_map {
                out.map(n);
            } else {
                out.set(n);
            }
            ffi::lua_pushnil(state);
            while ffi::lua_next(state, m) != 0 {
                let v = ffi::lua_gettop(state);
                write_reply(state, v - 1, out, depth + 1);
                if is_map {
                    write_reply(state, v, out, depth + 1);
                }
                ffi::lua_settop(state, v - 1);
            }
            return restore(state);
        }
        ffi::lua_settop(state, top);
        // An array: elements 1..n up to the first nil.
        let mut n: c_int = 0;
        loop {
            ffi::lua_rawgeti_(state, t, n + 1);
            let nil = ffi::lua_type(state, -1) == ffi::LUA_TNIL;
            ffi::lua_settop(state, top);
            if nil || n == c_int::MAX {
                break;
            }
            n += 1;
        }
        out.array(n as usize);
        for i in 1..=n {
            ffi::lua_rawgeti_(state, t, i);
            write_reply(state, top + 1, out, depth + 1);
            ffi::lua_settop(state, top);
        }
    }
}

/// Number of pairs in the table at `t`.
///
/// # Safety
/// Valid state, `t` an absolute table index, two free stack slots.
unsafe fn count_pairs(state: *mut ffi::lua_State, t: c_int) -> usize {
    let mut n = 0;
    // SAFETY: caller contract; keys are not touched while traversing.
    unsafe {
        ffi::lua_pushnil(state);
        while ffi::lua_next(state, t) != 0 {
            n += 1;
            ffi::lua_settop(state, -2);
        }
    }
    n
}

/// The text and source line of a script's error table at `t`.
///
/// # Safety
/// Valid state, `t` an absolute index, two free stack slots.
pub unsafe fn script_error(state: *mut ffi::lua_State, t: c_int) -> ScriptError {
    // SAFETY: caller contract; raw gets only, stack restored.
    unsafe {
        if ffi::lua_type(state, t) != ffi::LUA_TTABLE {
            let text = if ffi::lua_type(state, t) == ffi::LUA_TSTRING {
                stack_bytes(state, t).to_vec()
            } else {
                b"unknown error".to_vec()
            };
            let mut msg = b"ERR ".to_vec();
            msg.extend_from_slice(&text);
            return (msg, None, false);
        }
        let counted = error_already_counted(state, t);
        // The three fields are pushed before anything is copied out, so no
        // Rust value is alive while a push could raise.
        let top = ffi::lua_gettop(state);
        ffi::lua_checkstack(state, 3);
        let err_type = raw_field(state, t, b"err");
        let source_type = raw_field(state, t, b"source");
        let line_type = raw_field(state, t, b"line");
        let msg = if err_type == ffi::LUA_TSTRING {
            stack_bytes(state, top + 1).to_vec()
        } else {
            b"ERR unknown error".to_vec()
        };
        let src = (source_type == ffi::LUA_TSTRING).then(|| {
            let source = String::from_utf8_lossy(stack_bytes(state, top + 2)).into_owned();
            let line = if line_type == ffi::LUA_TNUMBER {
                ffi::lua_tonumber(state, top + 3) as i64
            } else {
                0
            };
            (source, line)
        });
        ffi::lua_settop(state, top);
        (msg, src, counted)
    }
}

/// Lua number → integer reply, truncating like C's (long long) cast.
fn number_to_int(n: f64) -> i64 {
    // x86-64's conversion gives i64::MIN for NaN and out-of-range values;
    // Rust's `as` would saturate instead.
    if n.is_nan() || !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&n) {
        i64::MIN
    } else {
        n as i64
    }
}

/// Status and error texts cannot contain newlines in RESP.
fn sanitize(s: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if !s.iter().any(|&c| c == b'\r' || c == b'\n') {
        return std::borrow::Cow::Borrowed(s);
    }
    std::borrow::Cow::Owned(
        s.iter()
            .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c })
            .collect(),
    )
}

/// An error table's text as Redis replies it when the script raised it:
/// "-%s" of the message (so one that starts with `-` shows two), CR and LF
/// as spaces. The leading `-` makes it the whole reply for
/// [`ReplyBuf::error`](tessera_resp::encode::ReplyBuf::error).
pub fn error_text(e: &[u8]) -> Vec<u8> {
    let mut out = b"-".to_vec();
    out.extend_from_slice(&sanitize(c_str(e)));
    out
}

/// An error table's text as Redis replies it when the script returned it:
/// as [`error_text`], with CR and LF first trimmed from the end (Redis
/// formats this one with addReplyErrorFormat).
pub fn returned_error_text(e: &[u8]) -> Vec<u8> {
    let e = c_str(e);
    let end = e
        .iter()
        .rposition(|&c| c != b'\r' && c != b'\n')
        .map_or(0, |i| i + 1);
    error_text(&e[..end])
}

/// An error text as Redis 7.0 stores it in an error table: "CODE message",
/// the code taken from a leading "-CODE " or "ERR" when there is none (so
/// `redis.error_reply('x')` replies "-ERR x"), CR/LF trimmed from the ends
/// of the message.
pub fn error_code_text(msg: &[u8]) -> Vec<u8> {
    let msg = c_str(msg);
    let with_dash;
    let msg = if msg.starts_with(b"-") {
        msg
    } else {
        with_dash = [b"-", msg].concat();
        &with_dash[..]
    };
    let rest = &msg[1..];
    let (code, text): (&[u8], &[u8]) = match rest.iter().position(|&c| c == b' ') {
        Some(sp) => (&rest[..sp], &rest[sp + 1..]),
        None => (b"ERR", rest),
    };
    let trim = |c: &u8| *c == b'\r' || *c == b'\n';
    let start = text.iter().position(|c| !trim(c)).unwrap_or(text.len());
    let end = text.iter().rposition(|c| !trim(c)).map_or(start, |e| e + 1);
    let mut out = code.to_vec();
    out.push(b' ');
    out.extend_from_slice(&text[start..end.max(start)]);
    out
}

/// A string argument's bytes, or a number's as Lua prints it; None for
/// any other type.
fn string_or_number_bytes(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        Value::Integer(i) => Some(i.to_string().into_bytes()),
        Value::Number(n) => Some(lua_number_text(*n).into_bytes()),
        _ => None,
    }
}

/// Lua 5.1's number-to-string conversion (`%.14g`).
pub fn lua_number_text(n: f64) -> String {
    if n.is_finite() && n == n.trunc() && n.abs() < 1e15 {
        return format!("{}", n as i64);
    }
    let s = format!("{n:.13e}");
    // Fallback rendering for non-integers: shortest round-trip text, which
    // matches %.14g for the common cases (logs and sha1hex arguments only).
    let short = format!("{n}");
    if short.len() <= 16 {
        short
    } else {
        s
    }
}

/// An error raised by a `redis.*` helper, reported as Redis reports it
/// (see the prelude's error handler).
fn lua_err(msg: &str) -> mlua::Error {
    mlua::Error::runtime(format!("\u{1}tessera:ERR {msg}"))
}

/// Lua's lua_tonumber: a number, or a string that reads as one.
fn lua_tonumber(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(i) => Some(*i as f64),
        Value::Number(n) => Some(*n),
        Value::String(s) => s.to_str().ok().and_then(|s| s.trim().parse::<f64>().ok()),
        _ => None,
    }
}

/// What error_reply/status_reply return for bad arguments (Redis returns
/// the error table rather than raising it).
fn bad_reply_args(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("err", "ERR wrong number or type of arguments")?;
    Ok(t)
}

/// The `redis` table: everything but call/pcall (installed separately).
pub fn build_redis_table(lua: &Lua) -> mlua::Result<Table> {
    let redis = lua.create_table()?;
    redis.raw_set(
        "sha1hex",
        lua.create_function(|_, args: MultiValue| {
            if args.len() != 1 {
                return Err(lua_err("wrong number of arguments"));
            }
            let data = string_or_number_bytes(&args[0]).unwrap_or_default();
            Ok(super::sha1_hex(&data))
        })?,
    )?;
    redis.raw_set(
        "error_reply",
        lua.create_function(|lua, args: MultiValue| {
            let msg = match args.front() {
                Some(Value::String(s)) if args.len() == 1 => s.as_bytes().to_vec(),
                // Returned, not raised, as Redis does.
                _ => return bad_reply_args(lua),
            };
            let t = lua.create_table()?;
            t.raw_set("err", lua.create_string(error_code_text(&msg))?)?;
            Ok(t)
        })?,
    )?;
    redis.raw_set(
        "status_reply",
        lua.create_function(|lua, args: MultiValue| {
            let msg = match args.front() {
                Some(Value::String(s)) if args.len() == 1 => s.as_bytes().to_vec(),
                // Returned, not raised, as Redis does.
                _ => return bad_reply_args(lua),
            };
            let t = lua.create_table()?;
            t.raw_set("ok", lua.create_string(&msg)?)?;
            Ok(t)
        })?,
    )?;
    redis.raw_set(
        "log",
        lua.create_function(|_, args: MultiValue| {
            if args.len() < 2 {
                return Err(lua_err("redis.log() requires two arguments or more."));
            }
            let level = match lua_tonumber(&args[0]) {
                Some(n) => n as i64,
                None => return Err(lua_err("First argument must be a number (log level).")),
            };
            if !(0..=3).contains(&level) {
                return Err(lua_err("Invalid debug level."));
            }
            let mut msg = String::new();
            for (i, a) in args.iter().skip(1).enumerate() {
                if i > 0 {
                    msg.push(' ');
                }
                match a {
                    Value::String(s) => msg.push_str(&String::from_utf8_lossy(&s.as_bytes())),
                    Value::Integer(n) => msg.push_str(&n.to_string()),
                    Value::Number(n) => msg.push_str(&lua_number_text(*n)),
                    _ => {}
                }
            }
            use crate::util::log::{log, Level};
            let lvl = match level {
                0 => Level::Debug,
                1 => Level::Verbose,
                2 => Level::Notice,
                _ => Level::Warning,
            };
            log(lvl, &msg);
            Ok(())
        })?,
    )?;
    redis.raw_set(
        "setresp",
        lua.create_function(|_, args: MultiValue| {
            if args.len() != 1 {
                return Err(lua_err("redis.setresp() requires one argument."));
            }
            // (lua_tonumber: anything else counts as 0.)
            let v = args.front().and_then(lua_tonumber).unwrap_or(0.0) as i64;
            if v != 2 && v != 3 {
                return Err(lua_err("RESP version must be 2 or 3."));
            }
            super::bridge::set_reply_resp(v as u8);
            Ok(())
        })?,
    )?;
    redis.raw_set(
        "set_repl",
        lua.create_function(|_, args: MultiValue| {
            if args.len() != 1 {
                return Err(lua_err("redis.set_repl() requires two arguments."));
            }
            let v = args.front().and_then(lua_tonumber).unwrap_or(0.0) as i64;
            if !(0..=3).contains(&v) {
                return Err(lua_err(
                    "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
                ));
            }
            Ok(())
        })?,
    )?;
    redis.raw_set("replicate_commands", lua.create_function(|_, ()| Ok(true))?)?;
    redis.raw_set("breakpoint", lua.create_function(|_, ()| Ok(false))?)?;
    // Whether the running user may run a command (the host decides).
    // Arguments are read as Redis reads them.
    redis.raw_set(
        "acl_check_cmd",
        lua.create_function(|_, args: MultiValue| {
            let argv = args
                .iter()
                .map(string_or_number_bytes)
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    lua_err("Lua redis lib command arguments must be strings or integers")
                })?;
            if argv.is_empty() {
                return Err(lua_err(
                    "Please specify at least one argument for this redis lib call",
                ));
            }
            let argv: Vec<&[u8]> = argv.iter().map(|a| a.as_ref()).collect();
            match super::bridge::may_call(&argv) {
                Some(Some(allowed)) => Ok(allowed),
                Some(None) => Err(lua_err("Invalid command passed to redis.acl_check_cmd()")),
                None => Err(lua_err(
                    "redis.acl_check_cmd can only be used while a script runs",
                )),
            }
        })?,
    )?;
    redis.raw_set("debug", lua.create_function(|_, _: MultiValue| Ok(()))?)?;
    for (name, v) in [
        ("LOG_DEBUG", 0),
        ("LOG_VERBOSE", 1),
        ("LOG_NOTICE", 2),
        ("LOG_WARNING", 3),
        ("REPL_NONE", 0),
        ("REPL_AOF", 1),
        ("REPL_SLAVE", 2),
        ("REPL_REPLICA", 2),
        ("REPL_ALL", 3),
    ] {
        redis.raw_set(name, v)?;
    }
    redis.raw_set("REDIS_VERSION", "7.0.15")?;
    redis.raw_set("REDIS_VERSION_NUM", 0x07000f)?;
    Ok(redis)
}

/// Whether the table at `t` says its error is already counted.
///
/// # Safety
/// Valid state, `t` an absolute index of a table, one free stack slot.
unsafe fn error_already_counted(state: *mut ffi::lua_State, t: c_int) -> bool {
    // SAFETY: caller contract; a raw get, stack restored.
    unsafe {
        let top = ffi::lua_gettop(state);
        let counted = raw_field(state, t, b"ignore_error_stats_update") == ffi::LUA_TBOOLEAN
            && ffi::lua_toboolean(state, -1) != 0;
        ffi::lua_settop(state, top);
        counted
    }
}
