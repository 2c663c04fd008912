//! Persistence commands: SAVE and BGSAVE (group `server`), DUMP, RESTORE
//! and MIGRATE (group `generic`). The snapshots themselves are
//! `server::persist`'s; the payload format is `persistence::rdb`'s; the
//! connections MIGRATE keeps are `server::migrate`'s.

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use super::args::{eq_ic, int};
use super::flags::*;
use super::meta::{
    arg as a, docflags, ks, ksflags::*, BeginSearch, FindKeys, InvalidKeyArgs, KeySpecDef,
};
use super::{acl, CmdError, CmdResult, CommandSpec, Ctx};
use crate::journal::encode_command;
use crate::keyspace::events::Class;
use crate::keyspace::table::WatchFlag;
use crate::persistence::rdb;
use crate::server::migrate::{Link, LinkError, Unreachable};
use crate::server::persist;

/// What RESTORE and RESTORE-ASKING both document.
const RESTORE_COMPLEXITY: &str = "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).";
const RESTORE_HISTORY: &[(&str, &str)] = &[
    ("3.0.0", "Added the `REPLACE` modifier."),
    ("5.0.0", "Added the `ABSTTL` modifier."),
    ("5.0.0", "Added the `IDLETIME` and `FREQ` options."),
];
const RESTORE_ARGS: &[a::Arg] = &[
    a::key("key", 0),
    a::integer("ttl"),
    a::string("serialized-value"),
    a::pure("replace", "REPLACE").since("3.0.0").optional(),
    a::pure("absttl", "ABSTTL").since("5.0.0").optional(),
    a::integer("seconds")
        .token("IDLETIME")
        .since("5.0.0")
        .optional(),
    a::integer("frequency")
        .token("FREQ")
        .since("5.0.0")
        .optional(),
];

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
    .complexity(RESTORE_COMPLEXITY)
    .history(RESTORE_HISTORY)
    .key_specs(&[ks(OW | UPDATE, 1, 0, 1)])
    .args(RESTORE_ARGS),
    // What MIGRATE sends a cluster node: RESTORE that the node accepts for
    // a slot it is importing (the same as RESTORE outside cluster mode).
    CommandSpec::new(
        "restore-asking",
        -4,
        WRITE | DENYOOM | ASKING | REWRITES_EFFECTS,
        "server",
        "3.0.0",
        "An internal command for migrating keys in a cluster",
        restore,
    )
    .acl(acl::KEYSPACE | acl::DANGEROUS)
    .doc_flags(docflags::SYSCMD)
    .complexity(RESTORE_COMPLEXITY)
    .history(RESTORE_HISTORY)
    .key_specs(&[ks(OW | UPDATE, 1, 0, 1)])
    .args(RESTORE_ARGS),
    CommandSpec::new(
        "migrate",
        -6,
        WRITE | REWRITES_EFFECTS,
        "generic",
        "2.6.0",
        "Atomically transfer a key from a Redis instance to another one.",
        migrate,
    )
    .acl(acl::KEYSPACE | acl::DANGEROUS)
    .complexity("This command actually executes a DUMP+DEL in the source instance, and a RESTORE in the target instance. See the pages of these commands for time complexity. Also an O(N) data transfer between the two instances is performed.")
    .tips(&["nondeterministic_output"])
    .history(&[
        ("3.0.0", "Added the `COPY` and `REPLACE` options."),
        ("3.0.6", "Added the `KEYS` option."),
        ("4.0.7", "Added the `AUTH` option."),
        ("6.0.0", "Added the `AUTH2` option."),
    ])
    .key_specs(&MIGRATE_KEYS)
    .getkeys(migrate_keys)
    .args(&[
        a::string("host"),
        a::integer("port"),
        a::oneof(
            "key_or_empty_string",
            &[a::key("key", 0), a::pure("empty_string", "")],
        ),
        a::integer("destination-db"),
        a::integer("timeout"),
        a::pure("copy", "COPY").since("3.0.0").optional(),
        a::pure("replace", "REPLACE").since("3.0.0").optional(),
        a::oneof(
            "authentication",
            &[
                a::string("password").token("AUTH").since("4.0.7").optional(),
                a::block(
                    "username_password",
                    &[a::string("username"), a::string("password")],
                )
                .token("AUTH2")
                .since("6.0.0")
                .optional(),
            ],
        )
        .optional(),
        a::key("key", 1)
            .token("KEYS")
            .since("3.0.6")
            .optional()
            .multiple(),
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
];

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
    let st = &ctx.srv.persistence;
    // Counted as Redis counts SAVE: once past the in-progress check, failed
    // or not (its other callers, SHUTDOWN and DEBUG RELOAD, do not count).
    if !st.bgsave_in_progress.load(Relaxed) {
        st.saves_started.fetch_add(1, Relaxed);
    }
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
    let deep = persist::deep_sanitize(ctx.srv, Some(ctx.client));
    let sanitizations = &ctx.srv.persistence.dump_payload_sanitizations;
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
        let mut packed_blobs = 0;
        let value = rdb::read_payload(payload, &limits, &mut packed_blobs);
        if deep {
            sanitizations.fetch_add(packed_blobs, Relaxed);
        }
        let value = match value {
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

/// MIGRATE's keys: the one at 3, or (KEYS) those after the last option,
/// searched from the end.
static MIGRATE_KEYS: [KeySpecDef; 2] = [
    ks(RW | ACCESS | DELETE, 3, 0, 1),
    KeySpecDef::new(
        RW | ACCESS | DELETE | INCOMPLETE,
        BeginSearch::Keyword {
            keyword: "KEYS",
            startfrom: -2,
        },
        FindKeys::Range {
            lastkey: -1,
            keystep: 1,
            limit: 0,
        },
    ),
];

/// The key positions of a MIGRATE, as Redis's migrateGetKeys finds them:
/// the options' own arguments are skipped when looking for KEYS, and KEYS
/// with a key at position 3 finds nothing.
fn migrate_keys(args: &[&[u8]]) -> Result<Vec<usize>, InvalidKeyArgs> {
    let mut i = 6;
    while i < args.len() {
        if eq_ic(args[i], "keys") {
            if !args[3].is_empty() {
                return Err(InvalidKeyArgs);
            }
            return Ok((i + 1..args.len()).collect());
        }
        if eq_ic(args[i], "auth") {
            i += 1;
        } else if eq_ic(args[i], "auth2") {
            i += 2;
        }
        i += 1;
    }
    Ok(vec![3])
}

/// One key on its way to the target.
struct Outgoing<'k> {
    key: &'k [u8],
    /// Milliseconds left to live, 0 for none.
    ttl: i64,
    payload: Vec<u8>,
    /// Set when someone writes the key while it is in flight: it is then
    /// not deleted here (the write counts as made after the MIGRATE).
    written: WatchFlag,
}

/// What the target answered to one attempt.
enum Answer {
    /// The target answered: the positions of the keys it took, and the
    /// first error it sent, if any (`link_ok`: every reply arrived).
    Complete {
        taken: Vec<usize>,
        error: Option<Vec<u8>>,
        link_ok: bool,
    },
    /// The link failed after `taken` keys were acknowledged, before the
    /// other replies came.
    Broken { taken: Vec<usize>, cause: LinkError },
    /// The link failed before any RESTORE reply (`writing`: while sending).
    Failed { writing: bool, cause: LinkError },
}

/// MIGRATE host port key|"" db timeout [COPY] [REPLACE] [AUTH pw]
/// [AUTH2 user pw] [KEYS key...]: DUMP here, RESTORE there, then DEL here
/// (propagated as that DEL) unless COPY.
///
/// The values are serialized with their shards locked, then sent with no
/// lock held, so other threads keep working (and a MIGRATE to this very
/// server does not deadlock on its own locks).
fn migrate(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (mut copy, mut replace) = (false, false);
    let (mut username, mut password): (Option<&[u8]>, Option<&[u8]>) = (None, None);
    let mut keys: &[&[u8]] = &args[3..4];
    let mut j = 6;
    while j < args.len() {
        let more = args.len() - 1 - j;
        if eq_ic(args[j], "copy") {
            copy = true;
        } else if eq_ic(args[j], "replace") {
            replace = true;
        } else if eq_ic(args[j], "auth") {
            if more < 1 {
                return Err(CmdError::Syntax);
            }
            j += 1;
            password = Some(args[j]);
            ctx.client.redacted |= redact_bit(j);
        } else if eq_ic(args[j], "auth2") {
            if more < 2 {
                return Err(CmdError::Syntax);
            }
            username = Some(args[j + 1]);
            password = Some(args[j + 2]);
            ctx.client.redacted |= redact_bit(j + 1) | redact_bit(j + 2);
            j += 2;
        } else if eq_ic(args[j], "keys") {
            if !args[3].is_empty() {
                return Err(CmdError::msg(
                    "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string",
                ));
            }
            keys = &args[j + 1..];
            break;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    let mut timeout = int(args[5])?;
    let db = int(args[4])?;
    if timeout <= 0 {
        timeout = 1000;
    }
    // (A deadline must fit an Instant: beyond about 49 days is forever.)
    let timeout = Duration::from_millis(timeout.min(u32::MAX as i64) as u64);

    let opts = persist::save_options(ctx.srv);
    let now_ms = ctx.now_ms;
    let outgoing = ctx.with_keys(keys.iter().copied(), |db| {
        let mut out = Vec::new();
        for &key in keys {
            let Some(e) = db.get_read(key) else { continue };
            let payload = rdb::dump_payload(&e.value, &opts);
            let ttl = match db.table(key).expire_of(key) {
                0 => 0,
                at => (at - now_ms).max(1),
            };
            let written = WatchFlag::default();
            if !copy {
                db.table(key).watch(key, &written, false);
            }
            out.push(Outgoing {
                key,
                ttl,
                payload,
                written,
            });
        }
        out
    });
    ctx.no_propagate();
    if outgoing.is_empty() {
        ctx.out.simple(b"NOKEY");
        return Ok(());
    }

    let auth = password.map(|p| (username, p));
    let sockets = &ctx.srv.migrate_sockets;
    let mut may_retry = true;
    let (taken, result) = loop {
        let answer = match sockets.take(args[1], args[2], timeout) {
            Err(Unreachable::Connecting) => {
                break (
                    Vec::new(),
                    Err(CmdError::msg(
                        "IOERR error or timeout connecting to the client",
                    )),
                )
            }
            Err(Unreachable::Refused) => (
                None,
                Answer::Failed {
                    writing: true,
                    cause: LinkError::Failed,
                },
            ),
            Ok(mut link) => {
                let select = link.selected_db != Some(db);
                let request = restore_requests(&outgoing, auth, select.then_some(db), replace);
                let answer = exchange(
                    &mut link,
                    &request,
                    auth.is_some(),
                    select,
                    outgoing.len(),
                    timeout,
                );
                (Some(link), answer)
            }
        };
        match answer {
            (
                link,
                Answer::Complete {
                    taken,
                    error,
                    link_ok,
                },
            ) => {
                if let (Some(mut link), true) = (link, link_ok) {
                    // A target that refused something may have another
                    // database selected: SELECT again next time.
                    link.selected_db = if error.is_none() { Some(db) } else { None };
                    sockets.give_back(link);
                }
                let result = match error {
                    None => Ok(()),
                    Some(e) => Err(CmdError::msg(format!(
                        "ERR Target instance replied with error: {}",
                        String::from_utf8_lossy(&e)
                    ))),
                };
                break (taken, result);
            }
            (_, Answer::Broken { taken, cause }) => {
                if taken.is_empty() && may_retry && cause != LinkError::TimedOut {
                    may_retry = false;
                    continue;
                }
                break (taken, Err(io_error(false)));
            }
            (_, Answer::Failed { writing, cause }) => {
                // A cached link the target closed meanwhile is common:
                // one retry on a fresh one before telling the client.
                if may_retry && cause != LinkError::TimedOut {
                    may_retry = false;
                    continue;
                }
                break (Vec::new(), Err(io_error(writing)));
            }
        }
    };
    let deleted = if copy {
        Vec::new()
    } else {
        delete_taken(ctx, &outgoing, &taken)
    };
    if !deleted.is_empty() {
        let mut argv = Vec::with_capacity(deleted.len() + 1);
        argv.push(b"DEL".to_vec());
        argv.extend(deleted.iter().map(|k| k.to_vec()));
        ctx.propagate_as(argv);
        for k in &deleted {
            ctx.signal_ready(k);
        }
    }
    result?;
    ctx.out.ok();
    Ok(())
}

fn redact_bit(i: usize) -> u64 {
    if i < 64 {
        1 << i
    } else {
        0
    }
}

fn io_error(writing: bool) -> CmdError {
    CmdError::msg(format!(
        "IOERR error or timeout {} to target instance",
        if writing { "writing" } else { "reading" }
    ))
}

/// AUTH, SELECT and one RESTORE per key, as one RESP request.
fn restore_requests(
    outgoing: &[Outgoing],
    auth: Option<(Option<&[u8]>, &[u8])>,
    select: Option<i64>,
    replace: bool,
) -> Vec<u8> {
    let mut req = Vec::new();
    if let Some((user, pass)) = auth {
        let mut argv: Vec<&[u8]> = vec![b"AUTH"];
        argv.extend(user);
        argv.push(pass);
        encode_command(&argv, &mut req);
    }
    if let Some(db) = select {
        encode_command(
            &[
                b"SELECT".as_slice(),
                itoa::Buffer::new().format(db).as_bytes(),
            ],
            &mut req,
        );
    }
    for o in outgoing {
        let mut ttl = itoa::Buffer::new();
        let mut argv: Vec<&[u8]> =
            vec![b"RESTORE", o.key, ttl.format(o.ttl).as_bytes(), &o.payload];
        if replace {
            argv.push(b"REPLACE");
        }
        encode_command(&argv, &mut req);
    }
    req
}

/// Sends the request and reads the replies: AUTH's and SELECT's when
/// sent, then one per RESTORE. A key counts as taken when its RESTORE
/// succeeded and neither AUTH nor SELECT failed.
fn exchange(
    link: &mut Link,
    request: &[u8],
    auth: bool,
    select: bool,
    restores: usize,
    timeout: Duration,
) -> Answer {
    if let Err(cause) = link.send(request, timeout) {
        return Answer::Failed {
            writing: true,
            cause,
        };
    }
    let mut preamble_error = None;
    for sent in [auth, select] {
        if !sent {
            continue;
        }
        match link.read_line(timeout) {
            Ok(line) => {
                if line.first() == Some(&b'-') && preamble_error.is_none() {
                    preamble_error = Some(line[1..].to_vec());
                }
            }
            Err(cause) => {
                return Answer::Failed {
                    writing: false,
                    cause,
                }
            }
        }
    }
    let mut taken = Vec::new();
    let mut error = preamble_error.clone();
    for i in 0..restores {
        match link.read_line(timeout) {
            Ok(line) => {
                if line.first() == Some(&b'-') {
                    error.get_or_insert_with(|| line[1..].to_vec());
                } else if preamble_error.is_none() {
                    taken.push(i);
                }
            }
            Err(cause) if error.is_none() => return Answer::Broken { taken, cause },
            // The target's error is what the client hears; the rest of
            // the replies do not matter.
            Err(_) => {
                return Answer::Complete {
                    taken,
                    error,
                    link_ok: false,
                }
            }
        }
    }
    Answer::Complete {
        taken,
        error,
        link_ok: true,
    }
}

/// Deletes the keys the target took (those nobody wrote meanwhile) and
/// stops watching them all; returns the keys deleted.
fn delete_taken<'k>(ctx: &Ctx, outgoing: &[Outgoing<'k>], taken: &[usize]) -> Vec<&'k [u8]> {
    use std::sync::atomic::Ordering::Relaxed;
    let lazy = ctx.srv.config.lazyfree_lazy_server_del();
    let mut was_taken = vec![false; outgoing.len()];
    for &i in taken {
        was_taken[i] = true;
    }
    let mut freed = Vec::new();
    let deleted = ctx.with_keys(outgoing.iter().map(|o| o.key), |db| {
        let mut deleted = Vec::new();
        for (o, &took) in outgoing.iter().zip(&was_taken) {
            db.table(o.key).unwatch(o.key, &o.written);
            if !took || o.written.load(Relaxed) {
                continue;
            }
            if let Some(e) = db.remove(o.key) {
                db.changed(o.key, Class::GENERIC, "del");
                deleted.push(o.key);
                freed.push(e);
            }
        }
        deleted
    });
    for e in freed {
        if lazy && e.value.element_count() > crate::server::lazyfree::LAZYFREE_THRESHOLD {
            crate::server::lazyfree::free_later(e);
        }
    }
    deleted
}
