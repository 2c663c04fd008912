//! Conversions between RESP replies and Lua values, as redis-server 7.0
//! does them, and the `redis` table's helper functions.

use mlua::{Lua, MultiValue, Table, Value};
use tessera_resp::encode::ReplyBuf;
use tessera_resp::frame::Frame;

/// A command reply as a Lua value. RESP2: integers → numbers, bulk →
/// strings, nulls → false, arrays → tables, status → {ok=}, error →
/// {err=}. RESP3 adds maps {map=}, sets {set=}, null → nil, booleans,
/// doubles {double=}, big numbers {big_number=}, verbatim strings
/// {verbatim_string={format=, string=}}.
pub fn frame_to_lua(lua: &Lua, f: Frame) -> mlua::Result<Value> {
    Ok(match f {
        Frame::Simple(s) => {
            let t = lua.create_table()?;
            t.raw_set("ok", bstr::BStr::new(&s))?;
            Value::Table(t)
        }
        Frame::Error(e) | Frame::BulkError(e) => {
            let t = lua.create_table()?;
            t.raw_set("err", bstr::BStr::new(&e))?;
            Value::Table(t)
        }
        Frame::Integer(n) => Value::Number(n as f64),
        Frame::Bulk(b) => Value::String(lua.create_string(&b)?),
        Frame::NullBulk | Frame::NullArray => Value::Boolean(false),
        Frame::Null => Value::Nil,
        Frame::Array(items) | Frame::Push(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, it) in items.into_iter().enumerate() {
                t.raw_set(i + 1, frame_to_lua(lua, it)?)?;
            }
            Value::Table(t)
        }
        Frame::Map(pairs) => {
            let inner = lua.create_table()?;
            for (k, v) in pairs {
                inner.raw_set(frame_to_lua(lua, k)?, frame_to_lua(lua, v)?)?;
            }
            let t = lua.create_table()?;
            t.raw_set("map", inner)?;
            Value::Table(t)
        }
        Frame::Set(items) => {
            let inner = lua.create_table()?;
            for it in items {
                inner.raw_set(frame_to_lua(lua, it)?, true)?;
            }
            let t = lua.create_table()?;
            t.raw_set("set", inner)?;
            Value::Table(t)
        }
        Frame::Double(text) => {
            let n: f64 = std::str::from_utf8(&text)
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0.0);
            let t = lua.create_table()?;
            t.raw_set("double", n)?;
            Value::Table(t)
        }
        Frame::Boolean(b) => Value::Boolean(b),
        Frame::BigNumber(s) => {
            let t = lua.create_table()?;
            t.raw_set("big_number", lua.create_string(&s)?)?;
            Value::Table(t)
        }
        Frame::Verbatim { format, text } => {
            let inner = lua.create_table()?;
            inner.raw_set("format", lua.create_string(format)?)?;
            inner.raw_set("string", lua.create_string(&text)?)?;
            let t = lua.create_table()?;
            t.raw_set("verbatim_string", inner)?;
            Value::Table(t)
        }
        Frame::Attribute { frame, .. } => frame_to_lua(lua, *frame)?,
    })
}

/// Writes a script's return value as a reply, as Redis 7.0 converts it.
pub fn lua_to_reply(v: &Value, out: &mut ReplyBuf, depth: usize) {
    if depth > 1000 {
        out.error(b"ERR reached lua stack limit");
        return;
    }
    match v {
        Value::Nil => out.null(),
        // Booleans follow the script's protocol (redis.setresp).
        Value::Boolean(b) => {
            if SCRIPT_RESP.with(|r| r.get()) == 3 {
                out.boolean(*b)
            } else if *b {
                out.int(1)
            } else {
                out.null()
            }
        }
        Value::Integer(i) => out.int(*i),
        Value::Number(n) => out.int(number_to_int(*n)),
        Value::String(s) => out.bulk(&s.as_bytes()),
        Value::Table(t) => table_to_reply(t, out, depth),
        _ => out.null(),
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

fn table_to_reply(t: &Table, out: &mut ReplyBuf, depth: usize) {
    if let Ok(Value::String(e)) = t.raw_get::<Value>("err") {
        out.error(&error_text(&e.as_bytes()));
        return;
    }
    if let Ok(Value::String(s)) = t.raw_get::<Value>("ok") {
        out.simple(&sanitize(&s.as_bytes()));
        return;
    }
    // Read as f64, not through Value: mlua turns an integral number such
    // as -0.0 into Integer(0), and Redis prints "-0".
    let double = match t.raw_get::<Value>("double") {
        Ok(Value::Number(_) | Value::Integer(_)) => t.raw_get::<f64>("double").ok(),
        _ => None,
    };
    if let Some(n) = double {
        let mut text = Vec::new();
        crate::util::numbers::format_f64(n, &mut text);
        out.double_text(&text);
        return;
    }
    if let Ok(Value::String(s)) = t.raw_get::<Value>("big_number") {
        if out.resp3() {
            out.raw(b"(");
            out.raw(&sanitize(&s.as_bytes()));
            out.raw(b"\r\n");
        } else {
            out.bulk(&s.as_bytes());
        }
        return;
    }
    if let Ok(Value::Table(vs)) = t.raw_get::<Value>("verbatim_string") {
        let format: Vec<u8> = match vs.raw_get::<Value>("format") {
            Ok(Value::String(f)) => f.as_bytes().to_vec(),
            _ => b"txt".to_vec(),
        };
        let text: Vec<u8> = match vs.raw_get::<Value>("string") {
            Ok(Value::String(s)) => s.as_bytes().to_vec(),
            _ => Vec::new(),
        };
        let mut fmt = [b't', b'x', b't'];
        if format.len() == 3 {
            fmt.copy_from_slice(&format);
        }
        out.verbatim(&fmt, &text);
        return;
    }
    if let Ok(Value::Table(m)) = t.raw_get::<Value>("map") {
        let pairs: Vec<(Value, Value)> = m.pairs::<Value, Value>().filter_map(|p| p.ok()).collect();
        out.map(pairs.len());
        for (k, v) in &pairs {
            lua_to_reply(k, out, depth + 1);
            lua_to_reply(v, out, depth + 1);
        }
        return;
    }
    if let Ok(Value::Table(s)) = t.raw_get::<Value>("set") {
        let members: Vec<Value> = s
            .pairs::<Value, Value>()
            .filter_map(|p| p.ok().map(|(k, _)| k))
            .collect();
        out.set(members.len());
        for k in &members {
            lua_to_reply(k, out, depth + 1);
        }
        return;
    }
    // An array: elements 1..n up to the first nil.
    let mut items = Vec::new();
    let mut i = 1;
    loop {
        match t.raw_get::<Value>(i) {
            Ok(Value::Nil) | Err(_) => break,
            Ok(v) => items.push(v),
        }
        i += 1;
    }
    out.array(items.len());
    for v in &items {
        lua_to_reply(v, out, depth + 1);
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

/// An error table's text as sent: a leading `-` is dropped (error_reply
/// adds one), an empty text becomes a generic error.
pub fn error_text(e: &[u8]) -> Vec<u8> {
    let e = e.strip_prefix(b"-").unwrap_or(e);
    sanitize(e).into_owned()
}

/// Arguments of `redis.call` as byte strings: strings and numbers only
/// (numbers as Lua prints them).
pub fn call_args(lua: &Lua, args: &MultiValue) -> Result<Vec<Vec<u8>>, &'static str> {
    const BAD: &str = "ERR Lua redis lib command arguments must be strings or integers";
    let mut out = Vec::with_capacity(args.len());
    for a in args.iter() {
        match a {
            Value::String(s) => out.push(s.as_bytes().to_vec()),
            Value::Integer(_) | Value::Number(_) => match lua.coerce_string(a.clone()) {
                Ok(Some(s)) => out.push(s.as_bytes().to_vec()),
                _ => return Err(BAD),
            },
            _ => return Err(BAD),
        }
    }
    Ok(out)
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

/// The `redis` table: everything but call/pcall (installed separately).
pub fn build_redis_table(lua: &Lua) -> mlua::Result<Table> {
    let redis = lua.create_table()?;
    redis.raw_set(
        "sha1hex",
        lua.create_function(|_, args: MultiValue| {
            if args.len() != 1 {
                return Err(lua_err("wrong number of arguments"));
            }
            let data: Vec<u8> = match &args[0] {
                Value::String(s) => s.as_bytes().to_vec(),
                Value::Integer(i) => i.to_string().into_bytes(),
                Value::Number(n) => lua_number_text(*n).into_bytes(),
                _ => Vec::new(),
            };
            Ok(super::sha1_hex(&data))
        })?,
    )?;
    redis.raw_set(
        "error_reply",
        lua.create_function(|lua, args: MultiValue| {
            let msg = match args.front() {
                Some(Value::String(s)) if args.len() == 1 => s.as_bytes().to_vec(),
                _ => return Err(lua_err("wrong number or type of arguments")),
            };
            let t = lua.create_table()?;
            let mut text = msg;
            if !text.starts_with(b"-") {
                text.insert(0, b'-');
            }
            t.raw_set("err", lua.create_string(&text)?)?;
            Ok(t)
        })?,
    )?;
    redis.raw_set(
        "status_reply",
        lua.create_function(|lua, args: MultiValue| {
            let msg = match args.front() {
                Some(Value::String(s)) if args.len() == 1 => s.as_bytes().to_vec(),
                _ => return Err(lua_err("wrong number or type of arguments")),
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
                return Err(mlua::Error::runtime(
                    "redis.log() requires two arguments or more.",
                ));
            }
            let level = match &args[0] {
                Value::Integer(i) => *i,
                Value::Number(n) => *n as i64,
                _ => {
                    return Err(mlua::Error::runtime(
                        "First argument must be a number (log level).",
                    ))
                }
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
            use crate::server::log::{log, Level};
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
            let v = match args.front() {
                Some(Value::Integer(i)) if args.len() == 1 => *i,
                Some(Value::Number(n)) if args.len() == 1 => *n as i64,
                _ => {
                    return Err(mlua::Error::runtime(
                        "redis.setresp() requires one argument.",
                    ))
                }
            };
            if v != 2 && v != 3 {
                return Err(lua_err("RESP version must be 2 or 3."));
            }
            SCRIPT_RESP.with(|r| r.set(v as u8));
            Ok(())
        })?,
    )?;
    redis.raw_set(
        "set_repl",
        lua.create_function(|_, args: MultiValue| {
            let v = match args.front() {
                Some(Value::Integer(i)) if args.len() == 1 => *i,
                Some(Value::Number(n)) if args.len() == 1 => *n as i64,
                _ => {
                    return Err(mlua::Error::runtime(
                        "redis.set_repl() requires one argument.",
                    ))
                }
            };
            if !(0..=3).contains(&v) {
                return Err(mlua::Error::runtime(
                    "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
                ));
            }
            Ok(())
        })?,
    )?;
    redis.raw_set("replicate_commands", lua.create_function(|_, ()| Ok(true))?)?;
    redis.raw_set("breakpoint", lua.create_function(|_, ()| Ok(false))?)?;
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

thread_local! {
    /// The protocol `redis.call` replies are parsed in (redis.setresp).
    pub static SCRIPT_RESP: std::cell::Cell<u8> = const { std::cell::Cell::new(2) };
}
