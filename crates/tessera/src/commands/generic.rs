//! Keyspace commands: existence, deletion, renaming, copying between
//! databases, iteration (KEYS, SCAN, RANDOMKEY), OBJECT, and the
//! whole-database operations (DBSIZE, FLUSHDB, FLUSHALL, SWAPDB).

use rand::Rng;

use super::args::{eq_ic, int, int32, lossy};
use super::flags::*;
use super::meta::{arg as a, ks, ksflags::*};
use super::{acl, unknown_subcommand, CmdError, CmdResult, CommandSpec, Ctx, Handler};
use crate::keyspace::events::{self, Class};
use crate::keyspace::{Entry, NUM_SHARDS};
use crate::types::{StrValue, Value};
use crate::util::glob::glob_match;

/// A keyspace command: group `generic`, ACL category `@keyspace`.
const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u64,
    since: &'static str,
    summary: &'static str,
    handler: Handler,
) -> CommandSpec {
    CommandSpec::new(name, arity, flags, "generic", since, summary, handler).acl(acl::KEYSPACE)
}

const ASYNC: a::Arg = a::oneof(
    "async",
    &[
        a::pure("async", "ASYNC").since("4.0.0"),
        a::pure("sync", "SYNC").since("6.2.0"),
    ],
);

pub static COMMANDS: &[CommandSpec] = &[
    cmd("del", -2, WRITE, "1.0.0", "Deletes one or more keys.", del)
        .complexity(
            "O(N) where N is the number of keys that will be removed. When a key to remove holds a value other than a string, the individual complexity for this key is O(M) where M is the number of elements in the list, set, sorted set or hash. Removing a single key that holds a string value is O(1).",
        )
        .key_specs(&[ks(RM | DELETE, 1, -1, 1)])
        .tips(&["request_policy:multi_shard", "response_policy:agg_sum"])
        .args(&[a::key("key", 0).multiple()]),
    cmd(
        "unlink",
        -2,
        WRITE | FAST,
        "4.0.0",
        "Deletes keys, freeing their memory in the background.",
        del,
    )
    .complexity(
        "O(1) for each key removed regardless of its size. Then the command does O(N) work in a different thread in order to reclaim memory, where N is the number of allocations the deleted objects where composed of.",
    )
    .key_specs(&[ks(RM | DELETE, 1, -1, 1)])
    .tips(&["request_policy:multi_shard", "response_policy:agg_sum"])
    .args(&[a::key("key", 0).multiple()]),
    cmd("exists", -2, READONLY | FAST, "1.0.0", "Counts how many of the given keys exist.", exists)
        .complexity("O(N) where N is the number of keys to check.")
        .key_specs(&[ks(RO, 1, -1, 1)])
        .tips(&["request_policy:multi_shard", "response_policy:agg_sum"])
        .history(&[("3.0.3", "Accepts multiple `key` arguments.")])
        .args(&[a::key("key", 0).multiple()]),
    cmd("type", 2, READONLY | FAST, "1.0.0", "Returns the type of a key's value.", type_cmd)
        .key_specs(&[ks(RO, 1, 0, 1)])
        .args(&[a::key("key", 0)]),
    cmd("rename", 3, WRITE, "1.0.0", "Renames a key, overwriting the destination.", rename)
        .key_specs(&[ks(RW | ACCESS | DELETE, 1, 0, 1), ks(OW | UPDATE, 2, 0, 1)])
        .args(&[a::key("key", 0), a::key("newkey", 1)]),
    cmd(
        "renamenx",
        3,
        WRITE | FAST,
        "1.0.0",
        "Renames a key only if the new name does not exist.",
        renamenx,
    )
    .key_specs(&[ks(RW | ACCESS | DELETE, 1, 0, 1), ks(OW | INSERT, 2, 0, 1)])
    .history(&[
        (
            "3.2.0",
            "The command no longer returns an error when source and destination names are the same.",
        ),
    ])
    .args(&[a::key("key", 0), a::key("newkey", 1)]),
    cmd("copy", -3, WRITE | DENYOOM, "6.2.0", "Copies a key's value to another key.", copy)
        .complexity(
            "O(N) worst case for collections, where N is the number of nested items. O(1) for string values.",
        )
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1), ks(OW | UPDATE, 2, 0, 1)])
        .args(&[
            a::key("source", 0),
            a::key("destination", 1),
            a::integer("destination-db").token("DB").optional(),
            a::pure("replace", "REPLACE").optional(),
        ]),
    cmd("move", 3, WRITE | FAST, "1.0.0", "Moves a key to another database.", move_cmd)
        .key_specs(&[ks(RW | ACCESS | UPDATE, 1, 0, 1)])
        .args(&[a::key("key", 0), a::integer("db")]),
    cmd("keys", 2, READONLY, "1.0.0", "Returns all key names that match a pattern.", keys)
        .acl(acl::KEYSPACE | acl::DANGEROUS)
        .complexity(
            "O(N) with N being the number of keys in the database, under the assumption that the key names in the database and the given pattern have limited length.",
        )
        .tips(&["request_policy:all_shards", "nondeterministic_output_order"])
        .args(&[a::pattern("pattern")]),
    cmd("scan", -2, READONLY | TOUCHES_ARBITRARY_KEYS, "2.8.0", "Iterates over the key names in the database.", scan)
        .complexity(
            "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.",
        )
        .tips(&["nondeterministic_output", "request_policy:special"])
        .history(&[("6.0.0", "Added the `TYPE` subcommand.")])
        .args(&[
            a::integer("cursor"),
            a::pattern("pattern").token("MATCH").optional(),
            a::integer("count").token("COUNT").optional(),
            a::string("type").token("TYPE").since("6.0.0").optional(),
        ]),
    cmd(
        "randomkey",
        1,
        READONLY | TOUCHES_ARBITRARY_KEYS,
        "1.0.0",
        "Returns a random key name from the database.",
        randomkey,
    )
    .tips(&["request_policy:all_shards", "nondeterministic_output"]),
    cmd(
        "touch",
        -2,
        READONLY | FAST | ALWAYS_TOUCHES,
        "3.2.1",
        "Updates the last access time of keys; returns how many exist.",
        touch,
    )
    .complexity("O(N) where N is the number of keys that will be touched.")
    .key_specs(&[ks(RO, 1, -1, 1)])
    .tips(&["request_policy:multi_shard", "response_policy:agg_sum"])
    .args(&[a::key("key", 0).multiple()]),
    cmd("object", -2, 0, "2.2.3", "Container for commands that inspect the value object of a key.", container)
        .acl(0)
        .complexity("Depends on subcommand.")
        .subcommands(OBJECT_SUBS),
    cmd(
        "dbsize",
        1,
        READONLY | FAST,
        "1.0.0",
        "Returns the number of keys in the database.",
        dbsize,
    )
    .group("server")
    .tips(&["request_policy:all_shards", "response_policy:agg_sum"]),
    cmd("flushdb", -1, WRITE | REWRITES_EFFECTS, "1.0.0", "Removes all keys from the current database.", flushdb)
        .acl(acl::KEYSPACE | acl::DANGEROUS)
        .group("server")
        .complexity("O(N) where N is the number of keys in the selected database")
        .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
        .history(&[
            ("4.0.0", "Added the `ASYNC` flushing mode modifier."),
            ("6.2.0", "Added the `SYNC` flushing mode modifier."),
        ])
        .args(&[ASYNC.optional()]),
    cmd("flushall", -1, WRITE | REWRITES_EFFECTS, "1.0.0", "Removes all keys from all databases.", flushall)
        .acl(acl::KEYSPACE | acl::DANGEROUS)
        .group("server")
        .complexity("O(N) where N is the total number of keys in all databases")
        .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
        .history(&[
            ("4.0.0", "Added the `ASYNC` flushing mode modifier."),
            ("6.2.0", "Added the `SYNC` flushing mode modifier."),
        ])
        .args(&[ASYNC.optional()]),
    cmd("swapdb", 3, WRITE | FAST | REWRITES_EFFECTS, "4.0.0", "Exchanges the contents of two databases.", swapdb)
        .acl(acl::KEYSPACE | acl::DANGEROUS)
        .group("server")
        .complexity(
            "O(N) where N is the count of clients watching or blocking on keys from both databases.",
        )
        .args(&[a::integer("index1"), a::integer("index2")]),
];

static OBJECT_SUBS: &[CommandSpec] = &[
    cmd(
        "encoding",
        3,
        READONLY,
        "2.2.3",
        "Returns the internal encoding of a key's value.",
        object_encoding,
    )
    .key_specs(&[ks(RO, 2, 0, 1)])
    .tips(&["nondeterministic_output"])
    .args(&[a::key("key", 0)]),
    cmd(
        "freq",
        3,
        READONLY,
        "4.0.0",
        "Returns the logarithmic access frequency counter of a key.",
        object_freq,
    )
    .key_specs(&[ks(RO, 2, 0, 1)])
    .tips(&["nondeterministic_output"])
    .args(&[a::key("key", 0)]),
    cmd(
        "idletime",
        3,
        READONLY,
        "2.2.3",
        "Returns the seconds since a key was last accessed.",
        object_idletime,
    )
    .key_specs(&[ks(RO, 2, 0, 1)])
    .tips(&["nondeterministic_output"])
    .args(&[a::key("key", 0)]),
    cmd(
        "refcount",
        3,
        READONLY,
        "2.2.3",
        "Returns the reference count of a key's value.",
        object_refcount,
    )
    .key_specs(&[ks(RO, 2, 0, 1)])
    .tips(&["nondeterministic_output"])
    .args(&[a::key("key", 0)]),
    cmd(
        "help",
        2,
        LOADING | STALE,
        "6.2.0",
        "Returns helpful text about the different subcommands.",
        object_help,
    ),
];

/// Container commands are dispatched to their subcommands before the
/// handler runs; this only answers if that somehow did not happen.
pub fn container(_ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    Err(unknown_subcommand(
        &lossy(args[0]),
        args.get(1).copied().unwrap_or(b""),
    ))
}

fn del(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let keys = &args[1..];
    let mut freed = Vec::new();
    let n = ctx.with_keys(keys.iter().copied(), |db| {
        let mut n = 0;
        for k in keys {
            if let Some(e) = db.remove(k) {
                db.changed(k, Class::GENERIC, "del");
                n += 1;
                freed.push(e);
            }
        }
        n
    });
    // Values are dropped after the shard locks are released; big ones on
    // the lazyfree thread for UNLINK (or DEL with lazyfree-lazy-user-del).
    let lazy = eq_ic(args[0], "unlink") || ctx.srv.config.lazyfree_lazy_user_del();
    for e in freed {
        if lazy && e.value.element_count() > crate::server::lazyfree::LAZYFREE_THRESHOLD {
            crate::server::lazyfree::free_later(e);
        }
    }
    if n > 0 {
        // Blocked XREADGROUP clients of a deleted stream are answered.
        for k in keys {
            ctx.signal_ready(k);
        }
    }
    ctx.out.int(n);
    Ok(())
}

fn exists(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let keys = &args[1..];
    let n = ctx.with_keys(keys.iter().copied(), |db| {
        keys.iter()
            .filter(|k| db.get_read_untouched(k).is_some())
            .count()
    });
    ctx.out.int(n as i64);
    Ok(())
}

fn type_cmd(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let t = ctx.with_key(key, |db| {
        db.get_read_untouched(key).map(|e| e.value.type_name())
    });
    ctx.out.simple(t.unwrap_or("none").as_bytes());
    Ok(())
}

fn rename_generic(ctx: &mut Ctx, args: &[&[u8]], nx: bool) -> CmdResult {
    let (src, dst) = (args[1], args[2]);
    let r = ctx.with_keys([src, dst], |db| -> Result<i64, CmdError> {
        if !db.exists(src) {
            return Err(CmdError::NoSuchKey);
        }
        if src == dst {
            return Ok(if nx { 0 } else { 1 });
        }
        if nx && db.exists(dst) {
            return Ok(0);
        }
        let Some((_, entry, at)) = db.table(src).remove_full(src) else {
            return Err(CmdError::NoSuchKey);
        };
        // Redis deletes an overwritten destination before adding the key
        // again (so a "new" event is due either way).
        db.remove(dst);
        db.table(dst).insert_expiring(dst, entry, at);
        db.signal_modified(src);
        db.signal_modified(dst);
        db.notify(Class::GENERIC, "rename_from", src);
        db.notify(Class::GENERIC, "rename_to", dst);
        Ok(1)
    })?;
    if r == 1 {
        ctx.signal_ready(dst);
    }
    if nx {
        ctx.out.int(r);
    } else {
        ctx.out.ok();
    }
    Ok(())
}

fn rename(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    rename_generic(ctx, args, false)
}

fn renamenx(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    rename_generic(ctx, args, true)
}

/// Parses a database index the way SELECT/MOVE/COPY do.
pub fn db_index(ctx: &Ctx, raw: &[u8]) -> Result<usize, CmdError> {
    let n = int32(raw)?;
    if n < 0 || n as usize >= ctx.srv.keyspace.num_dbs() {
        return Err(CmdError::DbIndexOutOfRange);
    }
    Ok(n as usize)
}

fn copy(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (src, dst) = (args[1], args[2]);
    let mut target_db = ctx.client.db;
    let mut replace = false;
    let mut i = 3;
    while i < args.len() {
        if eq_ic(args[i], "replace") {
            replace = true;
        } else if eq_ic(args[i], "db") && i + 1 < args.len() {
            target_db = db_index(ctx, args[i + 1])?;
            i += 1;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    if src == dst && target_db == ctx.client.db {
        return Err(CmdError::msg(
            "ERR source and destination objects are the same",
        ));
    }
    let r = ctx.with_keys([src, dst], |db| {
        let Some(e) = db.get_read(src) else {
            return 0;
        };
        let copied: Entry = e.clone();
        let at = db.table(src).expire_of(src);
        if db.get_in(target_db, dst).is_some() {
            if !replace {
                return 0;
            }
            db.table_in(target_db, dst).remove(dst);
        }
        let fresh = db.new_entry(copied.value);
        db.table_in(target_db, dst).insert_expiring(dst, fresh, at);
        db.table_in(target_db, dst).touch_watched(dst);
        db.note_change();
        events::invalidate(dst);
        events::notify(Class::GENERIC, "copy_to", target_db, dst);
        1
    });
    if r == 1 {
        crate::keyspace::events::ready(target_db, dst);
    }
    ctx.out.int(r);
    Ok(())
}

fn move_cmd(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let target = db_index(ctx, args[2])?;
    if target == ctx.client.db {
        return Err(CmdError::msg(
            "ERR source and destination objects are the same",
        ));
    }
    let r = ctx.with_key(key, |db| {
        if !db.exists(key) {
            return 0;
        }
        if db.get_in(target, key).is_some() {
            return 0;
        }
        let Some((k, e, at)) = db.table(key).remove_full(key) else {
            return 0;
        };
        db.table_in(target, key).insert_expiring(&k, e, at);
        db.signal_modified(key);
        db.table_in(target, key).touch_watched(key);
        db.notify(Class::GENERIC, "move_from", key);
        events::notify(Class::GENERIC, "move_to", target, key);
        1
    });
    if r == 1 {
        crate::keyspace::events::ready(target, key);
    }
    ctx.out.int(r);
    Ok(())
}

fn keys(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let pattern = args[1];
    let all = pattern == b"*";
    let (db, now) = (ctx.client.db, ctx.now_ms);
    let mut found: Vec<crate::keyspace::Key> = Vec::new();
    for i in 0..NUM_SHARDS {
        let shard = ctx.srv.keyspace.lock_shard(i);
        let t = &shard.dbs[db];
        for (k, e) in t.iter() {
            if !t.is_expired(k, e, now) && (all || glob_match(pattern, k, false)) {
                found.push(k.clone());
            }
        }
    }
    ctx.out.array(found.len());
    for k in &found {
        ctx.out.bulk(k);
    }
    Ok(())
}

/// SCAN's cursor is the index of the next shard to visit: each shard is
/// read whole under its lock, so every key present for the entire
/// iteration is returned (at least once), however the keyspace changes.
fn scan(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let cursor = super::args::parse_scan_cursor(args[1])?;
    let mut pattern: Option<&[u8]> = None;
    let mut count: i64 = 10;
    let mut type_filter: Option<&[u8]> = None;
    let mut i = 2;
    while i < args.len() {
        let has_value = i + 1 < args.len();
        if eq_ic(args[i], "count") && has_value {
            count = int(args[i + 1])?;
            if count < 1 {
                return Err(CmdError::Syntax);
            }
        } else if eq_ic(args[i], "match") && has_value {
            pattern = Some(args[i + 1]);
        } else if eq_ic(args[i], "type") && has_value {
            type_filter = Some(args[i + 1]);
        } else {
            return Err(CmdError::Syntax);
        }
        i += 2;
    }
    let (db, now) = (ctx.client.db, ctx.now_ms);
    let mut shard = cursor as usize;
    let mut examined = 0i64;
    let mut found: Vec<crate::keyspace::Key> = Vec::new();
    while shard < NUM_SHARDS && examined < count {
        let mut guard = ctx.srv.keyspace.lock_shard(shard);
        let mut expired: Vec<crate::keyspace::Key> = Vec::new();
        let t = &guard.dbs[db];
        for (k, e) in t.iter() {
            examined += 1;
            if t.is_expired(k, e, now) {
                expired.push(k.clone());
                continue;
            }
            if let Some(p) = pattern.filter(|p| *p != b"*") {
                if !glob_match(p, k, false) {
                    continue;
                }
            }
            if let Some(t) = type_filter {
                if !t.eq_ignore_ascii_case(e.value.type_name().as_bytes()) {
                    continue;
                }
            }
            found.push(k.clone());
        }
        // As Redis, delete the expired keys met on the way ("expired").
        let crate::keyspace::Shard { dbs, stats } = &mut *guard;
        for k in &expired {
            dbs[db].get_live(k, now, stats);
        }
        shard += 1;
    }
    let next = if shard >= NUM_SHARDS { 0 } else { shard };
    ctx.out.array(2);
    ctx.out.bulk(itoa::Buffer::new().format(next).as_bytes());
    ctx.out.array(found.len());
    for k in &found {
        ctx.out.bulk(k);
    }
    Ok(())
}

fn randomkey(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let (db, now) = (ctx.client.db, ctx.now_ms);
    let start = rand::thread_rng().gen_range(0..NUM_SHARDS);
    for step in 0..NUM_SHARDS {
        let idx = (start + step) % NUM_SHARDS;
        let mut shard = ctx.srv.keyspace.lock_shard(idx);
        // Expired keys found on the way are deleted, as Redis does.
        for _ in 0..100 {
            let t = &mut shard.dbs[db];
            let Some(i) = t.random_index() else {
                break;
            };
            let Some((k, e)) = t.get_index(i) else {
                break;
            };
            if t.is_expired(k, e, now) {
                // Deleted (and announced as "expired") by the lookup.
                let k = k.clone();
                let crate::keyspace::Shard { dbs, stats } = &mut *shard;
                dbs[db].get_live(&k, now, stats);
                continue;
            }
            let k = k.clone();
            drop(shard);
            ctx.out.bulk(&k);
            return Ok(());
        }
    }
    ctx.out.null();
    Ok(())
}

fn touch(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let keys = &args[1..];
    let n = ctx.with_keys(keys.iter().copied(), |db| {
        keys.iter().filter(|k| db.get_read(k).is_some()).count()
    });
    ctx.out.int(n as i64);
    Ok(())
}

/// Looks a key up for OBJECT without touching it; nil reply when missing.
fn object_lookup<R>(ctx: &mut Ctx, key: &[u8], f: impl FnOnce(&Entry) -> R) -> Option<R> {
    let (dbi, now) = (ctx.client.db, ctx.now_ms);
    let mut locks = ctx.srv.keyspace.lock_key(key);
    let mut db = locks.db(dbi, now, crate::keyspace::Touch::None);
    db.get_inspected(key).map(|e| f(e))
}

fn object_encoding(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    match object_lookup(ctx, args[2], |e| e.value.encoding_name()) {
        Some(enc) => ctx.out.bulk(enc.as_bytes()),
        None => ctx.out.null(),
    }
    Ok(())
}

fn lfu_policy(ctx: &Ctx) -> bool {
    use crate::config::MaxmemoryPolicy as P;
    matches!(
        ctx.srv.config.maxmemory_policy(),
        P::AllkeysLfu | P::VolatileLfu
    )
}

fn object_freq(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let now_min = (ctx.now_ms / 60_000) as u32;
    let decay = ctx.srv.config.lfu_decay_time();
    let Some(access) = object_lookup(ctx, args[2], |e| e.access) else {
        ctx.out.null();
        return Ok(());
    };
    if !lfu_policy(ctx) {
        return Err(CmdError::msg("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."));
    }
    let f = crate::keyspace::table::lfu_decayed_counter(access, now_min, decay);
    ctx.out.int(f as i64);
    Ok(())
}

fn object_idletime(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let now_s = (ctx.now_ms / 1000) as u32;
    let Some(access) = object_lookup(ctx, args[2], |e| e.access) else {
        ctx.out.null();
        return Ok(());
    };
    if lfu_policy(ctx) {
        return Err(CmdError::msg("ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."));
    }
    ctx.out.int(now_s.wrapping_sub(access) as i64);
    Ok(())
}

/// The refcount Redis reports for a value: the integers 0..9999 are shared
/// between keys (reported with INT_MAX) unless an LRU/LFU policy needs
/// per-key access data.
pub fn reported_refcount(srv: &crate::server::state::ServerState, value: &Value) -> i64 {
    use crate::config::MaxmemoryPolicy as P;
    let sharing = !matches!(
        srv.config.maxmemory_policy(),
        P::AllkeysLru | P::VolatileLru | P::AllkeysLfu | P::VolatileLfu
    ) || srv.config.maxmemory() == 0;
    match value {
        Value::Str(StrValue::Int(n)) if sharing && (0..10_000).contains(n) => i32::MAX as i64,
        _ => 1,
    }
}

fn object_refcount(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let srv = ctx.srv;
    let rc = object_lookup(ctx, args[2], |e| reported_refcount(srv, &e.value));
    match rc {
        Some(n) => ctx.out.int(n),
        None => ctx.out.null(),
    }
    Ok(())
}

fn object_help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    help_reply(
        ctx,
        "OBJECT",
        &[
            "ENCODING <key>",
            "    Return the kind of internal representation used to store the value of a key.",
            "FREQ <key>",
            "    Return the access frequency index of the key (needs an LFU maxmemory policy).",
            "IDLETIME <key>",
            "    Return the idle time of the key, in seconds (needs an LRU maxmemory policy).",
            "REFCOUNT <key>",
            "    Return the number of references of the value associated with the key.",
        ],
    )
}

/// A HELP reply in Redis's shape: a header line, the lines, and HELP.
/// A HELP reply given whole, header and footer included (for families whose
/// wording differs from [`help_reply`]'s, e.g. "Prints this help.").
pub fn help_lines(ctx: &mut Ctx, lines: &[&str]) -> CmdResult {
    ctx.out.array(lines.len());
    for l in lines {
        ctx.out.simple(l.as_bytes());
    }
    Ok(())
}

pub fn help_reply(ctx: &mut Ctx, name: &str, lines: &[&str]) -> CmdResult {
    ctx.out.array(lines.len() + 3);
    ctx.out.simple(
        format!("{name} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:").as_bytes(),
    );
    for l in lines {
        ctx.out.simple(l.as_bytes());
    }
    ctx.out.simple(b"HELP");
    ctx.out.simple(b"    Print this help.");
    Ok(())
}

fn dbsize(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let n = ctx.srv.keyspace.dbsize(ctx.client.db);
    ctx.out.int(n as i64);
    Ok(())
}

/// FLUSHDB/FLUSHALL [ASYNC|SYNC]: the tables are swapped out under the
/// locks (instant and atomic) and freed afterwards, on a background thread
/// for ASYNC.
fn flush_mode(args: &[&[u8]], lazy_default: bool) -> Result<bool, CmdError> {
    match args.len() {
        1 => Ok(lazy_default),
        2 if eq_ic(args[1], "async") => Ok(true),
        2 if eq_ic(args[1], "sync") => Ok(false),
        _ => Err(CmdError::Syntax),
    }
}

fn flushdb(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let lazy = flush_mode(args, ctx.srv.config.lazyfree_lazy_user_flush())?;
    // As Redis: propagated even when there was nothing to flush.
    ctx.force_propagate(crate::keyspace::effects::target::ALL);
    let db = ctx.client.db;
    let now_ms = ctx.now_ms;
    let old: Vec<_> = ctx.with_all(|locks| {
        locks
            .shards_mut()
            .map(|s| {
                s.dbs[db].touch_watched_existing(None, now_ms);
                s.dbs[db].clear()
            })
            .collect()
    });
    // Blocked XREADGROUP clients of a flushed stream are answered.
    ctx.srv.blocking.signal_dbs(Some(&[db]));
    free_tables(old, lazy);
    ctx.out.ok();
    crate::server::tracking::invalidate_all(ctx.srv, ctx.client.id, ctx.out);
    Ok(())
}

fn flushall(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let lazy = flush_mode(args, ctx.srv.config.lazyfree_lazy_user_flush())?;
    // As Redis: propagated even when there was nothing to flush.
    ctx.force_propagate(crate::keyspace::effects::target::ALL);
    let now_ms = ctx.now_ms;
    let old: Vec<_> = ctx.with_all(|locks| {
        locks
            .shards_mut()
            .flat_map(|s| {
                s.dbs
                    .iter_mut()
                    .map(|t| {
                        t.touch_watched_existing(None, now_ms);
                        t.clear()
                    })
                    .collect::<Vec<_>>()
            })
            .collect()
    });
    // Blocked XREADGROUP clients of a flushed stream are answered.
    ctx.srv.blocking.signal_dbs(None);
    free_tables(old, lazy);
    ctx.srv.keyspace.replica_ttls.clear();
    crate::server::persist::save_after_flushall(ctx.srv);
    ctx.out.ok();
    crate::server::tracking::invalidate_all(ctx.srv, ctx.client.id, ctx.out);
    Ok(())
}

fn free_tables<T: Send + 'static>(old: Vec<T>, lazy: bool) {
    if lazy {
        crate::server::lazyfree::free_later(old);
    } else {
        drop(old);
    }
}

fn swapdb(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let a = int32(args[1]).map_err(|_| CmdError::msg("ERR invalid first DB index"))?;
    let b = int32(args[2]).map_err(|_| CmdError::msg("ERR invalid second DB index"))?;
    let n = ctx.srv.keyspace.num_dbs() as i64;
    if a < 0 || a >= n || b < 0 || b >= n {
        return Err(CmdError::DbIndexOutOfRange);
    }
    ctx.force_propagate(crate::keyspace::effects::target::ALL);
    if a != b {
        let now_ms = ctx.now_ms;
        ctx.with_all(|locks| {
            let (lo, hi) = (a.min(b) as usize, a.max(b) as usize);
            for s in locks.shards_mut() {
                let (ta, tb) = s.dbs.pair_mut(lo, hi);
                ta.touch_watched_existing(Some(tb), now_ms);
                tb.touch_watched_existing(Some(ta), now_ms);
                crate::keyspace::Table::swap_contents(ta, tb);
            }
        });
        ctx.srv.keyspace.swap_avg_ttl(a as usize, b as usize);
        ctx.srv.blocking.signal_dbs(Some(&[a as usize, b as usize]));
    }
    ctx.out.ok();
    Ok(())
}
