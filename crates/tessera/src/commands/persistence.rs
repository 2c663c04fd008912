//! Persistence commands: SAVE and BGSAVE (group `server`), DUMP and
//! RESTORE (group `generic`). The snapshots themselves are
//! `server::persist`'s; the payload format is `persistence::rdb`'s.

use super::args::{eq_ic, int};
use super::flags::*;
use super::meta::{arg as a, ks, ksflags::*};
use super::{acl, CmdError, CmdResult, CommandSpec, Ctx};
use crate::keyspace::events::Class;
use crate::persistence::rdb;
use crate::server::persist;

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new(
        "save",
        1,
        ADMIN | NOSCRIPT | NO_ASYNC_LOADING | NO_MULTI,
        "server",
        "1.0.0",
        "Synchronously saves the database(s) to disk.",
        save,
    )
    .acl(acl::ADMIN | acl::DANGEROUS)
    .complexity("O(N) where N is the total number of keys in all databases"),
    CommandSpec::new(
        "bgsave",
        -1,
        ADMIN | NOSCRIPT | NO_ASYNC_LOADING,
        "server",
        "1.0.0",
        "Asynchronously saves the database(s) to disk.",
        bgsave,
    )
    .acl(acl::ADMIN | acl::DANGEROUS)
    .complexity("O(1)")
    .history(&[("3.2.2", "Added the `SCHEDULE` option.")])
    .args(&[a::pure("schedule", "SCHEDULE").since("3.2.2").optional()]),
    CommandSpec::new(
        "dump",
        2,
        READONLY,
        "generic",
        "2.6.0",
        "Returns a serialized representation of the value stored at a key.",
        dump,
    )
    .acl(acl::KEYSPACE)
    .complexity("O(1) to access the key and additional O(N*M) to serialize it, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1).")
    .tips(&["nondeterministic_output"])
    .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
    .args(&[a::key("key", 0)]),
    CommandSpec::new(
        "restore",
        -4,
        WRITE | DENYOOM | REWRITES_EFFECTS,
        "generic",
        "2.6.0",
        "Creates a key from the serialized representation of a value.",
        restore,
    )
    .acl(acl::KEYSPACE | acl::DANGEROUS)
    .complexity("O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).")
    .history(&[
        ("3.0.0", "Added the `REPLACE` modifier."),
        ("5.0.0", "Added the `ABSTTL` modifier."),
        ("5.0.0", "Added the `IDLETIME` and `FREQ` options."),
    ])
    .key_specs(&[ks(OW | UPDATE, 1, 0, 1)])
    .args(&[
        a::key("key", 0),
        a::integer("ttl"),
        a::string("serialized-value"),
        a::pure("replace", "REPLACE").since("3.0.0").optional(),
        a::pure("absttl", "ABSTTL").since("5.0.0").optional(),
        a::integer("seconds").token("IDLETIME").since("5.0.0").optional(),
        a::integer("frequency").token("FREQ").since("5.0.0").optional(),
    ]),
    CommandSpec::new(
        "bgrewriteaof",
        1,
        ADMIN | NOSCRIPT | NO_ASYNC_LOADING,
        "server",
        "1.0.0",
        "Asynchronously rewrites the append-only file to disk.",
        bgrewriteaof,
    )
    .acl(acl::ADMIN | acl::DANGEROUS)
    .complexity("O(1)"),
    CommandSpec::new(
        "sync",
        1,
        ADMIN | NOSCRIPT | NO_ASYNC_LOADING | NO_MULTI,
        "server",
        "1.0.0",
        "Synchronizes a replica the legacy way: a snapshot, then the write stream.",
        sync,
    )
    .acl(acl::ADMIN | acl::DANGEROUS)
    .complexity(""),
];

/// SYNC: no reply; the snapshot and then the effects stream follow on the
/// connection (`server::persist::start_sync`). A second SYNC is ignored.
fn sync(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    if ctx.client.syncing {
        return Ok(());
    }
    persist::start_sync(ctx.srv, ctx.client).map_err(CmdError::msg)
}

fn bgrewriteaof(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let st = &ctx.srv.persistence;
    if st
        .aof_rewrite_in_progress
        .load(std::sync::atomic::Ordering::Relaxed)
    {
        return Err(CmdError::msg(
            "ERR Background append only file rewriting already in progress",
        ));
    }
    // A snapshot is running (a BGSAVE): the rewrite starts after it.
    if st
        .bgsave_in_progress
        .load(std::sync::atomic::Ordering::Relaxed)
        || ctx.client.multi.in_exec
    {
        st.aof_rewrite_scheduled
            .store(true, std::sync::atomic::Ordering::Relaxed);
        ctx.out
            .simple(b"Background append only file rewriting scheduled");
        return Ok(());
    }
    persist::bgrewriteaof(ctx.srv, false).map_err(CmdError::msg)?;
    ctx.out
        .simple(b"Background append only file rewriting started");
    Ok(())
}

fn save(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    persist::save_now(ctx.srv).map_err(CmdError::msg)?;
    ctx.out.ok();
    Ok(())
}

fn bgsave(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let schedule = match args.len() {
        1 => false,
        2 if eq_ic(args[1], "schedule") => true,
        _ => return Err(CmdError::Syntax),
    };
    let st = &ctx.srv.persistence;
    // As Redis: a save already running is an error even with SCHEDULE
    // (only a save that cannot start now is scheduled).
    if st
        .bgsave_in_progress
        .load(std::sync::atomic::Ordering::Relaxed)
    {
        return Err(CmdError::msg("ERR Background save already in progress"));
    }
    // While an AOF rewrite runs (one snapshot at a time), or inside a
    // transaction, the save can only be scheduled.
    let busy = st
        .aof_rewrite_in_progress
        .load(std::sync::atomic::Ordering::Relaxed);
    if busy && !schedule && !ctx.client.multi.in_exec {
        return Err(CmdError::msg("ERR Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible."));
    }
    if busy || ctx.client.multi.in_exec {
        st.bgsave_scheduled
            .store(true, std::sync::atomic::Ordering::Relaxed);
        ctx.out.simple(b"Background saving scheduled");
        return Ok(());
    }
    persist::bgsave(ctx.srv).map_err(CmdError::msg)?;
    ctx.out.simple(b"Background saving started");
    Ok(())
}

fn dump(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let opts = persist::save_options(ctx.srv);
    let payload = ctx.with_key(key, |db| {
        db.get_read(key).map(|e| rdb::dump_payload(&e.value, &opts))
    });
    match payload {
        Some(p) => ctx.out.bulk(&p),
        None => ctx.out.null(),
    }
    Ok(())
}

/// What a RESTORE propagates.
enum Restored {
    /// Nothing changed (the key was already expired and not there).
    Nothing,
    /// Its own arguments.
    Plain,
    As(Vec<Vec<u8>>),
}

fn restore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let (mut replace, mut absttl) = (false, false);
    let (mut idle, mut freq): (Option<i64>, Option<i64>) = (None, None);
    let mut j = 4;
    while j < args.len() {
        let more = args.len() - j - 1;
        if eq_ic(args[j], "replace") {
            replace = true;
        } else if eq_ic(args[j], "absttl") {
            absttl = true;
        } else if eq_ic(args[j], "idletime") && more >= 1 && freq.is_none() {
            let v = int(args[j + 1])?;
            if v < 0 {
                return Err(CmdError::msg("ERR Invalid IDLETIME value, must be >= 0"));
            }
            idle = Some(v);
            j += 1;
        } else if eq_ic(args[j], "freq") && more >= 1 && idle.is_none() {
            let v = int(args[j + 1])?;
            if !(0..=255).contains(&v) {
                return Err(CmdError::msg(
                    "ERR Invalid FREQ value, must be >= 0 and <= 255",
                ));
            }
            freq = Some(v);
            j += 1;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    let limits = persist::load_limits(ctx.srv);
    let now_ms = ctx.now_ms;
    let touch = ctx.touch;
    let payload = args[3];
    let ttl_arg = args[2];
    let lazy_del = ctx.srv.config.lazyfree_lazy_server_del();
    let outcome = ctx.with_key(key, |db| -> Result<Restored, CmdError> {
        if !replace && db.get_write(key).is_some() {
            return Err(CmdError::msg("BUSYKEY Target key name already exists."));
        }
        let mut ttl = int(ttl_arg)?;
        if ttl < 0 {
            return Err(CmdError::msg("ERR Invalid TTL value, must be >= 0"));
        }
        if !rdb::verify_payload(payload) {
            return Err(CmdError::msg(
                "ERR DUMP payload version or checksum are wrong",
            ));
        }
        let value = match rdb::read_payload(payload, &limits) {
            Ok(Some(v)) => v,
            _ => return Err(CmdError::msg("ERR Bad data format")),
        };
        let deleted = replace && db.remove(key).is_some();
        if ttl != 0 && !absttl {
            ttl = ttl.saturating_add(now_ms);
        }
        if ttl != 0 && ttl <= now_ms {
            // Already expired: the key is gone (deleted if it was there).
            if deleted {
                db.signal_modified(key);
                db.notify(Class::GENERIC, "del", key);
                let verb: &[u8] = if lazy_del { b"UNLINK" } else { b"DEL" };
                return Ok(Restored::As(vec![verb.to_vec(), key.to_vec()]));
            }
            return Ok(Restored::Nothing);
        }
        let mut entry = crate::keyspace::Entry::new(value, touch);
        match touch {
            crate::keyspace::Touch::Lfu { minutes, .. } => {
                if let Some(f) = freq {
                    entry.access = ((minutes & 0xffff) << 8) | f as u32;
                }
            }
            crate::keyspace::Touch::Lru(now_s) => {
                if let Some(i) = idle {
                    entry.access = now_s.wrapping_sub(i.min(u32::MAX as i64) as u32);
                }
            }
            crate::keyspace::Touch::None => {}
        }
        db.table(key).insert_expiring(key, entry, ttl);
        db.signal_modified(key);
        db.notify(Class::GENERIC, "restore", key);
        if ttl != 0 && !absttl {
            // Propagated with the absolute time, as Redis rewrites it.
            let mut argv: Vec<Vec<u8>> = args.iter().map(|a| a.to_vec()).collect();
            argv[2] = itoa::Buffer::new().format(ttl).as_bytes().to_vec();
            argv.push(b"ABSTTL".to_vec());
            return Ok(Restored::As(argv));
        }
        Ok(Restored::Plain)
    })?;
    match outcome {
        Restored::Nothing => ctx.no_propagate(),
        Restored::Plain => {}
        Restored::As(argv) => ctx.propagate_as(argv),
    }
    ctx.signal_ready(key);
    ctx.out.ok();
    Ok(())
}
