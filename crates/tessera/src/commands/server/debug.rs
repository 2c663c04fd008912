//! DEBUG and its subcommands (Redis's `debug.c`).

use crate::keyspace::digest;
use std::sync::atomic::Ordering::Relaxed;

use crate::commands::args::{eq_ic, int};
use crate::commands::generic::help_reply;
use crate::commands::{CmdError, CmdResult, Ctx};

/// The number a C `strtod` reads at the start of `arg` (0 if none).
fn leading_float(arg: &[u8]) -> f64 {
    let text = String::from_utf8_lossy(arg);
    let text = text.trim_start();
    // The longest prefix that parses; arguments are short, and only the
    // first 64 bytes can matter for a sleep.
    let limit = text.len().min(64);
    (1..=limit)
        .rev()
        .filter(|&n| text.is_char_boundary(n))
        .find_map(|n| text[..n].parse::<f64>().ok())
        .filter(|v| v.is_finite())
        .unwrap_or(0.0)
}

/// The number a C `atoi` reads at the start of `arg` (0 if none): glibc's
/// `(int) strtol`, so it saturates at the i64 limits, then wraps to 32 bits.
fn leading_int(arg: &[u8]) -> i32 {
    let mut rest = arg.trim_ascii_start();
    let negative = rest.first() == Some(&b'-');
    if matches!(rest.first(), Some(b'-' | b'+')) {
        rest = &rest[1..];
    }
    let mut n: i64 = 0;
    for &c in rest.iter().take_while(|c| c.is_ascii_digit()) {
        n = n.saturating_mul(10).saturating_add(i64::from(c - b'0'));
    }
    (if negative { -n } else { n }) as i32
}

/// DEBUG POPULATE count [prefix] [size]: `count` string keys
/// `<prefix>:<n>` (prefix `key`) holding `value:<n>`, cut or padded with
/// zero bytes to `size` when one is given; keys that exist are left alone.
/// As in Redis, these writes raise no keyspace events, though WATCH and
/// tracking see them. (Unlike Redis, a size over proto-max-bulk-len is
/// refused rather than allocated.)
fn debug_populate(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let positive = |a: &[u8]| -> Result<u64, CmdError> {
        match int(a) {
            Ok(n) if n >= 0 => Ok(n as u64),
            _ => Err(CmdError::msg("ERR value is out of range, must be positive")),
        }
    };
    let count = positive(args[2])?;
    // As Redis: the keys it makes are not propagated.
    ctx.no_propagate();
    let prefix: &[u8] = args.get(3).copied().unwrap_or(b"key");
    let size = match args.get(4) {
        Some(a) => Some(positive(a)? as usize),
        None => None,
    };
    if let Some(size) = size {
        let limit = ctx.srv.config.proto_max_bulk_len();
        if size as u64 > limit {
            return Err(CmdError::msg("ERR value is out of range, must be positive"));
        }
    }
    // Redis formats the key as a C string into a 128-byte buffer: the
    // prefix ends at a NUL, and the key at 127 bytes.
    let prefix = crate::util::c_str(prefix);
    let mut key = Vec::with_capacity(prefix.len() + 21);
    for n in 0..count {
        key.clear();
        key.extend_from_slice(prefix);
        key.push(b':');
        key.extend_from_slice(n.to_string().as_bytes());
        key.truncate(127);
        let mut value = format!("value:{n}").into_bytes();
        if let Some(size) = size.filter(|&s| s > 0) {
            value.resize(size, 0);
        }
        ctx.with_key(&key, |db| {
            if !db.exists(&key) {
                db.set(
                    &key,
                    crate::types::Value::Str(crate::types::StrValue::from_bytes(&value)),
                );
                db.signal_modified(&key);
            }
        });
    }
    ctx.out.ok();
    Ok(())
}

/// DEBUG PROTOCOL: one sample reply of each RESP3 type (and its RESP2
/// downgrade), the values Redis sends, for client libraries to test against.
fn debug_protocol(ctx: &mut Ctx, kind: &[u8]) -> CmdResult {
    let out = &mut *ctx.out;
    let name = kind.to_ascii_lowercase();
    match name.as_slice() {
        b"string" => out.bulk(b"Hello World"),
        b"integer" => out.int(12345),
        b"double" => out.double_text(b"3.141"),
        b"bignum" => {
            const BIG: &[u8] = b"1234567999999999999999999999999999999";
            if out.resp3() {
                out.raw(b"(");
                out.raw(BIG);
                out.raw(b"\r\n");
            } else {
                out.bulk(BIG);
            }
        }
        b"null" => out.null(),
        b"array" | b"set" => {
            if name == b"set" {
                out.set(3);
            } else {
                out.array(3);
            }
            for i in 0..3 {
                out.int(i);
            }
        }
        b"map" => {
            out.map(3);
            for i in 0..3 {
                out.int(i);
                out.boolean(i == 1);
            }
        }
        b"attrib" => {
            // RESP2 has no attributes: only the reply they annotate is sent.
            if out.resp3() {
                out.raw(b"|1\r\n");
                out.bulk(b"key-popularity");
                out.array(2);
                out.bulk(b"key:123");
                out.int(90);
            }
            out.bulk(b"Some real reply following the attribute");
        }
        b"push" => {
            if !out.resp3() {
                return Err(CmdError::msg("ERR RESP2 is not supported by this command"));
            }
            out.push(2);
            out.bulk(b"server-cpu-usage");
            out.int(42);
            // As Redis: a normal reply follows, so a client that discards
            // push messages still gets an answer.
            out.bulk(b"Some real reply following the push reply");
        }
        b"verbatim" => out.verbatim(b"txt", b"This is a verbatim\nstring"),
        b"true" => out.boolean(true),
        b"false" => out.boolean(false),
        _ => {
            return Err(CmdError::msg(
                "ERR Wrong protocol type name. Please use one of the following: \
                 string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false",
            ))
        }
    }
    Ok(())
}

/// DEBUG EFFECTS: the test consumer of the effects stream.
fn debug_effects(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let journal = &ctx.srv.journal;
    match (args[0], args.get(1)) {
        (sub, limit) if eq_ic(sub, "start") => {
            let limit = match limit {
                Some(a) => match int(a) {
                    // (At most 1 GB: the capture is memory.)
                    Ok(n) if n > 0 => (n as usize).min(1 << 30),
                    _ => return Err(CmdError::msg("ERR value is out of range, must be positive")),
                },
                None => 64 << 20,
            };
            journal.start_capture(limit);
            ctx.out.ok();
        }
        (sub, None) if eq_ic(sub, "read") => match journal.read_capture() {
            Some((bytes, false)) => ctx.out.bulk(&bytes),
            Some((_, true)) => return Err(CmdError::msg("ERR effects capture overflowed")),
            None => return Err(CmdError::msg("ERR effects capture not started")),
        },
        (sub, None) if eq_ic(sub, "stop") => {
            journal.stop_capture();
            ctx.out.ok();
        }
        _ => return Err(CmdError::msg(
            "ERR unknown subcommand or wrong number of arguments for 'effects'. Try DEBUG HELP.",
        )),
    }
    Ok(())
}

pub(super) fn debug(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let sub = args[1];
    if eq_ic(sub, "sleep") && args.len() == 3 {
        // As Redis (strtod): the number the argument starts with, else 0.
        let secs = leading_float(args[2]);
        if secs > 0.0 {
            let duration = std::time::Duration::from_secs_f64(secs.min(3600.0));
            ctx.srv.stall.sleep(duration);
        }
        ctx.out.ok();
    } else if eq_ic(sub, "change-repl-id") && args.len() == 2 {
        // A new history with no previous one: replicas can no longer
        // continue partially.
        let mut st = ctx.srv.repl.stream.lock();
        st.shift_replid();
        st.replid2 = crate::server::replication::NO_REPLID.to_string();
        st.second_offset = -1;
        crate::util::log::notice("Changing replication IDs after receiving DEBUG change-repl-id");
        drop(st);
        ctx.out.ok();
    } else if eq_ic(sub, "set-disable-deny-scripts") && args.len() == 3 {
        // (Redis's atoi: anything but a number reads as 0.)
        let on = leading_int(args[2]) != 0;
        ctx.srv.scripts.deny_scripts_disabled.store(on, Relaxed);
        ctx.out.ok();
    } else if eq_ic(sub, "set-active-expire") && args.len() == 3 {
        // As Redis (atoi): the integer the argument starts with, else 0.
        ctx.srv
            .active_expire
            .store(leading_int(args[2]) != 0, Relaxed);
        ctx.out.ok();
    } else if eq_ic(sub, "populate") && (3..=5).contains(&args.len()) {
        return debug_populate(ctx, args);
    } else if eq_ic(sub, "object") && args.len() == 3 {
        let key = args[2];
        let (dbi, now) = (ctx.client.db, ctx.now_ms);
        let desc = {
            let mut locks = ctx.srv.keyspace.lock_key(key);
            let mut db = locks.db(dbi, now, crate::keyspace::Touch::None);
            db.get_write(key).map(|e| {
                let idle = ((now / 1000) as u32).wrapping_sub(e.access);
                format!(
                    "Value at:0x{:x} refcount:{} encoding:{} serializedlength:{} lru:{} lru_seconds_idle:{}",
                    e as *const _ as usize,
                    crate::commands::generic::reported_refcount(ctx.srv, &e.value),
                    e.value.encoding_name(),
                    e.value.heap_size().max(1),
                    e.access & 0xff_ffff,
                    idle
                )
            })
        };
        match desc {
            Some(d) => ctx.out.simple(d.as_bytes()),
            None => return Err(CmdError::NoSuchKey),
        }
    } else if eq_ic(sub, "protocol") && args.len() == 3 {
        return debug_protocol(ctx, args[2]);
    } else if eq_ic(sub, "effects") && (3..=4).contains(&args.len()) {
        return debug_effects(ctx, &args[2..]);
    } else if eq_ic(sub, "digest") && args.len() == 2 {
        let digest = dataset_digest(ctx);
        ctx.out.simple(digest.as_bytes());
    } else if eq_ic(sub, "digest-value") && args.len() >= 2 {
        let db = ctx.client.db;
        let mut digests = Vec::with_capacity(args.len() - 2);
        for key in &args[2..] {
            let mut locks = ctx.srv.keyspace.lock_key(key);
            let table = &locks.shard_for(key).dbs[db];
            let mut d = [0u8; 20];
            if let Some(e) = table.peek(key) {
                digest::value_digest(&mut d, &e.value, e.has_ttl());
            }
            digests.push(digest::hex(&d));
        }
        ctx.out.array(digests.len());
        for d in digests {
            ctx.out.simple(d.as_bytes());
        }
    } else if eq_ic(sub, "reload") {
        let (mut merge, mut flush, mut save) = (false, true, true);
        for opt in &args[2..] {
            if eq_ic(opt, "merge") {
                merge = true;
            } else if eq_ic(opt, "noflush") {
                flush = false;
            } else if eq_ic(opt, "nosave") {
                save = false;
            } else {
                return Err(CmdError::msg(
                    "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.",
                ));
            }
        }
        crate::server::persist::debug_reload(ctx.srv, save, flush, merge).map_err(CmdError::msg)?;
        ctx.out.ok();
    } else if eq_ic(sub, "loadaof") {
        // Nothing else runs meanwhile, as in Redis (inside EXEC the
        // transaction's scope already keeps what it locks).
        let all: Vec<usize> = (0..crate::keyspace::NUM_SHARDS).collect();
        let _hold = (!ctx.client.multi.in_exec).then(|| ctx.srv.keyspace.hold(&all));
        crate::server::persist::debug_loadaof(ctx.srv);
        // The replayed commands changed data; the reload itself is not a
        // write to propagate (Redis resets its dirty counter here).
        ctx.no_propagate();
        ctx.out.ok();
    } else if eq_ic(sub, "help") {
        return help_reply(
            ctx,
            "DEBUG",
            &[
                "CHANGE-REPL-ID",
                "    Change the replication IDs of the instance.",
                "    Dangerous: should be used only for testing the replication subsystem.",
                "DIGEST",
                "    Output a hex signature representing the current DB content.",
                "DIGEST-VALUE <key> [<key> ...]",
                "    Output a hex signature of the values of all the specified keys.",
                "LOADAOF",
                "    Flush the AOF buffers on disk and reload the AOF in memory.",
                "OBJECT <key>",
                "    Show low level info about the key and associated value.",
                "POPULATE <count> [<prefix>] [<size>]",
                "    Create <count> string keys named key:<num>. If <prefix> is specified then",
                "    it is used instead of the 'key' prefix. These are not propagated to",
                "    replicas. Cluster slots are not respected so keys not belonging to the",
                "    current node can be created in cluster mode.",
                "PROTOCOL <type>",
                "    Reply with a test value of the specified type. <type> can be: string,",
                "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
                "    true, false.",
                "EFFECTS START [<limit-bytes>] | READ | STOP",
                "    Tessera: capture the effects stream (what replicas would be sent), read",
                "    and empty the capture (RESP bytes), or stop capturing.",
                "RELOAD [option ...]",
                "    Save the RDB on disk and reload it back to memory. Valid <option> values:",
                "    * MERGE: Merge the content of the RDB with the current dataset.",
                "    * NOFLUSH: Do not empty the dataset before loading the RDB.",
                "    * NOSAVE: Do not save the RDB before loading it back.",
                "SET-ACTIVE-EXPIRE <0|1>",
                "    Setting it to 0 disables expiring keys in background when they are not accessed.",
                "SLEEP <seconds>",
                "    Stop the server for <seconds>. Decimals allowed.",
            ],
        );
    } else {
        return Err(crate::commands::subcommand_syntax_error(args));
    }
    Ok(())
}

/// DEBUG DIGEST: per database (in order, those with keys), its number
/// mixed into the running digest, then the SHA-1 of every key's digest
/// XORed in (the
/// keys' order does not matter, so shards are visited as they come).
fn dataset_digest(ctx: &Ctx) -> String {
    let ndbs = ctx.srv.keyspace.num_dbs();
    let mut per_db = vec![([0u8; 20], 0usize); ndbs];
    {
        let mut all = ctx.srv.keyspace.lock_all();
        for shard in all.shards_mut() {
            for (db, table) in shard.dbs.iter().enumerate() {
                for (key, e) in table.iter() {
                    let kd = digest::key_digest(key, &e.value, e.has_ttl());
                    let acc = &mut per_db[db];
                    // (Folded in as its own SHA-1, as Redis's xorDigest does.)
                    digest::xor(&mut acc.0, &kd);
                    acc.1 += 1;
                }
            }
        }
    }
    let mut fin = [0u8; 20];
    for (db, (acc, keys)) in per_db.iter().enumerate() {
        if *keys == 0 {
            continue;
        }
        digest::mix(&mut fin, &(db as u32).to_be_bytes());
        for (a, b) in fin.iter_mut().zip(acc) {
            *a ^= b;
        }
    }
    digest::hex(&fin)
}
