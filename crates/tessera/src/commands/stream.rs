//! Stream commands: XADD, XRANGE/XREVRANGE, XLEN, XDEL, XTRIM, XREAD and
//! XREADGROUP (blocking or not), consumer groups (XGROUP, XACK, XPENDING,
//! XCLAIM, XAUTOCLAIM), XINFO and XSETID.
//!
//! Blocking reads follow the server's model (`server/blocking.rs`): a read
//! that finds nothing calls [`Ctx::block_with_args`] with its arguments
//! rewritten so that a re-run means the same thing (`$` becomes the stream's
//! last ID at blocking time, and a missing COUNT becomes Redis's 1000).
//! XADD signals the key; XGROUP DESTROY and key deletion signal it too, and
//! a blocked XREADGROUP re-run that finds its key or group gone answers
//! with the errors Redis 7.0 sends to blocked clients.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use super::args::{c_bytes, eq_ic, int};
use super::flags::*;
use super::meta::{arg as a, ks, ksflags::*, BeginSearch, FindKeys, KeySpecDef};
use super::{acl, CmdError, CmdResult, CommandSpec, Ctx, Handler};
use crate::keyspace::events::Class;
use crate::keyspace::{Db, Entry};
use crate::server::blocking::{self, BlockingRegistry};
use crate::types::stream::{
    EntryRef, Group, NodeLimits, StreamId, StreamValue, Trim, ENTRIES_READ_INVALID,
    LISTPACK_MAX_SIZE,
};
use crate::types::Value;
use crate::util::numbers::parse_u64_lenient;
use tessera_resp::encode::ReplyBuf;

/// A stream command: group `stream`, ACL category `@stream`.
const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u64,
    since: &'static str,
    summary: &'static str,
    handler: Handler,
) -> CommandSpec {
    CommandSpec::new(name, arity, flags, "stream", since, summary, handler).acl(acl::STREAM)
}

pub static COMMANDS: &[CommandSpec] = &[
    cmd("xadd", -5, WRITE | DENYOOM | FAST | REWRITES_EFFECTS, "5.0.0", "Appends a new entry to a stream, creating the stream if needed.", xadd)
        .complexity(
            "O(1) when adding a new entry, O(N) when trimming where N being the number of entries evicted.",
        )
        .key_specs(&[
            ks(RW | UPDATE, 1, 0, 1)
                .notes("UPDATE instead of INSERT because of the optional trimming feature"),
        ])
        .tips(&["nondeterministic_output"])
        .history(&[
            (
                "6.2.0",
                "Added the `NOMKSTREAM` option, `MINID` trimming strategy and the `LIMIT` option.",
            ),
            ("7.0.0", "Added support for the `<ms>-*` explicit ID form."),
        ])
        .args(&[
            a::key("key", 0),
            a::pure("nomkstream", "NOMKSTREAM").since("6.2.0").optional(),
            a::block(
                "trim",
                &[
                    a::oneof(
                        "strategy",
                        &[a::pure("maxlen", "MAXLEN"), a::pure("minid", "MINID").since("6.2.0")],
                    ),
                    a::oneof("operator", &[a::pure("equal", "="), a::pure("approximately", "~")])
                        .optional(),
                    a::string("threshold"),
                    a::integer("count").token("LIMIT").since("6.2.0").optional(),
                ],
            )
            .optional(),
            a::oneof("id_or_auto", &[a::pure("auto_id", "*"), a::string("id")]),
            a::block("field_value", &[a::string("field"), a::string("value")]).multiple(),
        ]),
    cmd("xrange", -4, READONLY, "5.0.0", "Returns the entries of a stream within a range of IDs.", xrange)
        .complexity(
            "O(N) with N being the number of elements being returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).",
        )
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .history(&[("6.2.0", "Added exclusive ranges.")])
        .args(&[
            a::key("key", 0),
            a::string("start"),
            a::string("end"),
            a::integer("count").token("COUNT").optional(),
        ]),
    cmd("xrevrange", -4, READONLY, "5.0.0", "Returns the entries of a stream within a range of IDs, in reverse order.", xrevrange)
        .complexity(
            "O(N) with N being the number of elements returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).",
        )
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .history(&[("6.2.0", "Added exclusive ranges.")])
        .args(&[
            a::key("key", 0),
            a::string("end"),
            a::string("start"),
            a::integer("count").token("COUNT").optional(),
        ]),
    cmd("xlen", 2, READONLY | FAST, "5.0.0", "Returns the number of entries in a stream.", xlen)
        .key_specs(&[ks(RO, 1, 0, 1)])
        .args(&[a::key("key", 0)]),
    cmd("xdel", -3, WRITE | FAST, "5.0.0", "Removes entries from a stream and returns how many were removed.", xdel)
        .complexity(
            "O(1) for each single item to delete in the stream, regardless of the stream size.",
        )
        .key_specs(&[ks(RW | DELETE, 1, 0, 1)])
        .args(&[a::key("key", 0), a::string("id").multiple()]),
    cmd("xtrim", -4, WRITE | REWRITES_EFFECTS, "5.0.0", "Deletes the oldest entries of a stream.", xtrim)
        .complexity(
            "O(N), with N being the number of evicted entries. Constant times are very small however, since entries are organized in macro nodes containing multiple entries that can be released with a single deallocation.",
        )
        .key_specs(&[ks(RW | DELETE, 1, 0, 1)])
        .tips(&["nondeterministic_output"])
        .history(&[("6.2.0", "Added the `MINID` trimming strategy and the `LIMIT` option.")])
        .args(&[
            a::key("key", 0),
            a::block(
                "trim",
                &[
                    a::oneof(
                        "strategy",
                        &[a::pure("maxlen", "MAXLEN"), a::pure("minid", "MINID").since("6.2.0")],
                    ),
                    a::oneof("operator", &[a::pure("equal", "="), a::pure("approximately", "~")])
                        .optional(),
                    a::string("threshold"),
                    a::integer("count").token("LIMIT").since("6.2.0").optional(),
                ],
            ),
        ]),
    cmd("xread", -4, READONLY | BLOCKING, "5.0.0", "Returns entries from streams with IDs above the given ones, optionally blocking until there are some.", xread)
    .getkeys(xread_keys)
        .complexity(
            "For each stream mentioned: O(N) with N being the number of elements being returned, it means that XREAD-ing with a fixed COUNT is O(1). Note that when the BLOCK option is used, XADD will pay O(M) time in order to serve the M clients blocked on the stream getting new data.",
        )
        .key_specs(&[
            KeySpecDef::new(
                RO | ACCESS,
                BeginSearch::Keyword { keyword: "STREAMS", startfrom: 1 },
                FindKeys::Range { lastkey: -1, keystep: 1, limit: 2 },
            ),
        ])
        .args(&[
            a::integer("count").token("COUNT").optional(),
            a::integer("milliseconds").token("BLOCK").optional(),
            a::block("streams", &[a::key("key", 0).multiple(), a::string("id").multiple()])
                .token("STREAMS"),
        ]),
    cmd("xreadgroup", -7, WRITE | BLOCKING | REWRITES_EFFECTS, "5.0.0", "Returns new or pending entries of streams for a consumer of a group, optionally blocking.", xreadgroup)
    .getkeys(xread_keys)
        .complexity(
            "For each stream mentioned: O(M) with M being the number of elements returned. If M is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1). On the other side when XREADGROUP blocks, XADD will pay the O(N) time in order to serve the N clients blocked on the stream getting new data.",
        )
        .key_specs(&[
            KeySpecDef::new(
                RO | ACCESS,
                BeginSearch::Keyword { keyword: "STREAMS", startfrom: 4 },
                FindKeys::Range { lastkey: -1, keystep: 1, limit: 2 },
            ),
        ])
        .args(&[
            a::block("group_consumer", &[a::string("group"), a::string("consumer")]).token("GROUP"),
            a::integer("count").token("COUNT").optional(),
            a::integer("milliseconds").token("BLOCK").optional(),
            a::pure("noack", "NOACK").optional(),
            a::block("streams", &[a::key("key", 0).multiple(), a::string("id").multiple()])
                .token("STREAMS"),
        ]),
    cmd("xgroup", -2, 0, "5.0.0", "Container for consumer group commands.", super::generic::container)
        .acl(0)
        .complexity("Depends on subcommand.")
        .subcommands(XGROUP_SUBS),
    cmd("xack", -4, WRITE | FAST, "5.0.0", "Acknowledges messages of a consumer group, removing them from its pending list.", xack)
        .complexity("O(1) for each message ID processed.")
        .key_specs(&[ks(RW | UPDATE, 1, 0, 1)])
        .args(&[a::key("key", 0), a::string("group"), a::string("id").multiple()]),
    cmd("xpending", -3, READONLY, "5.0.0", "Returns information about the pending entries list of a consumer group.", xpending)
        .complexity(
            "O(N) with N being the number of elements returned, so asking for a small fixed number of entries per call is O(1). O(M), where M is the total number of entries scanned when used with the IDLE filter. When the command returns just the summary and the list of consumers is small, it runs in O(1) time; otherwise, an additional O(N) time for iterating every consumer.",
        )
        .key_specs(&[ks(RO | ACCESS, 1, 0, 1)])
        .tips(&["nondeterministic_output"])
        .history(&[("6.2.0", "Added the `IDLE` option and exclusive range intervals.")])
        .args(&[
            a::key("key", 0),
            a::string("group"),
            a::block(
                "filters",
                &[
                    a::integer("min-idle-time").token("IDLE").since("6.2.0").optional(),
                    a::string("start"),
                    a::string("end"),
                    a::integer("count"),
                    a::string("consumer").optional(),
                ],
            )
            .optional(),
        ]),
    cmd("xclaim", -6, WRITE | FAST | REWRITES_EFFECTS, "5.0.0", "Transfers ownership of pending messages to another consumer of the group.", xclaim)
        .complexity(
            "O(log N) with N being the number of messages in the PEL of the consumer group.",
        )
        .key_specs(&[ks(RW | UPDATE, 1, 0, 1)])
        .tips(&["nondeterministic_output"])
        .args(&[
            a::key("key", 0),
            a::string("group"),
            a::string("consumer"),
            a::string("min-idle-time"),
            a::string("id").multiple(),
            a::integer("ms").token("IDLE").optional(),
            a::unix_time("unix-time-milliseconds").token("TIME").optional(),
            a::integer("count").token("RETRYCOUNT").optional(),
            a::pure("force", "FORCE").optional(),
            a::pure("justid", "JUSTID").optional(),
            a::string("id").token("LASTID").optional(),
        ]),
    cmd("xautoclaim", -6, WRITE | FAST | REWRITES_EFFECTS, "6.2.0", "Transfers ownership of pending messages matching criteria to another consumer.", xautoclaim)
        .complexity("O(1) if COUNT is small.")
        .key_specs(&[ks(RW | DELETE, 1, 0, 1)])
        .tips(&["nondeterministic_output"])
        .history(&[
            (
                "7.0.0",
                "Added an element to the reply array, containing deleted entries the command cleared from the PEL",
            ),
        ])
        .args(&[
            a::key("key", 0),
            a::string("group"),
            a::string("consumer"),
            a::string("min-idle-time"),
            a::string("start"),
            a::integer("count").token("COUNT").optional(),
            a::pure("justid", "JUSTID").optional(),
        ]),
    cmd("xinfo", -2, 0, "5.0.0", "Container for stream introspection commands.", super::generic::container)
        .acl(0)
        .complexity("Depends on subcommand.")
        .subcommands(XINFO_SUBS),
    cmd("xsetid", -3, WRITE | DENYOOM | FAST, "5.0.0", "Sets a stream's last ID and other metadata (internal use).", xsetid)
        .key_specs(&[ks(RW | UPDATE, 1, 0, 1)])
        .history(&[("7.0.0", "Added the `entries_added` and `max_deleted_entry_id` arguments.")])
        .args(&[
            a::key("key", 0),
            a::string("last-id"),
            a::integer("entries_added").token("ENTRIESADDED").since("7.0.0").optional(),
            a::string("max_deleted_entry_id").token("MAXDELETEDID").since("7.0.0").optional(),
        ]),
];

static XGROUP_SUBS: &[CommandSpec] = &[
    cmd(
        "create",
        -5,
        WRITE | DENYOOM,
        "5.0.0",
        "Creates a consumer group.",
        xgroup_create,
    )
    .key_specs(&[ks(RW | INSERT, 2, 0, 1)])
    .history(&[("7.0.0", "Added the `entries_read` named argument.")])
    .args(&[
        a::key("key", 0),
        a::string("groupname"),
        a::oneof("id", &[a::string("id"), a::pure("new_id", "$")]),
        a::pure("mkstream", "MKSTREAM").optional(),
        a::integer("entries_read").token("ENTRIESREAD").optional(),
    ]),
    cmd(
        "createconsumer",
        5,
        WRITE | DENYOOM,
        "6.2.0",
        "Creates a consumer in a consumer group.",
        xgroup_createconsumer,
    )
    .key_specs(&[ks(RW | INSERT, 2, 0, 1)])
    .args(&[
        a::key("key", 0),
        a::string("groupname"),
        a::string("consumername"),
    ]),
    cmd(
        "delconsumer",
        5,
        WRITE,
        "5.0.0",
        "Deletes a consumer from a consumer group.",
        xgroup_delconsumer,
    )
    .key_specs(&[ks(RW | DELETE, 2, 0, 1)])
    .args(&[
        a::key("key", 0),
        a::string("groupname"),
        a::string("consumername"),
    ]),
    cmd(
        "destroy",
        4,
        WRITE,
        "5.0.0",
        "Destroys a consumer group.",
        xgroup_destroy,
    )
    .complexity("O(N) where N is the number of entries in the group's pending entries list (PEL).")
    .key_specs(&[ks(RW | DELETE, 2, 0, 1)])
    .args(&[a::key("key", 0), a::string("groupname")]),
    cmd(
        "setid",
        -5,
        WRITE,
        "5.0.0",
        "Sets the last delivered ID of a consumer group.",
        xgroup_setid,
    )
    .key_specs(&[ks(RW | UPDATE, 2, 0, 1)])
    .history(&[("7.0.0", "Added the optional `entries_read` argument.")])
    .args(&[
        a::key("key", 0),
        a::string("groupname"),
        a::oneof("id", &[a::string("id"), a::pure("new_id", "$")]),
        a::integer("entries_read").token("ENTRIESREAD").optional(),
    ]),
    cmd(
        "help",
        2,
        LOADING | STALE,
        "5.0.0",
        "Returns helpful text about the different subcommands.",
        xgroup_help,
    ),
];

static XINFO_SUBS: &[CommandSpec] = &[
    cmd("stream", -3, READONLY, "5.0.0", "Returns information about a stream.", xinfo_stream)
        .key_specs(&[ks(RO | ACCESS, 2, 0, 1)])
        .history(&[
            ("6.0.0", "Added the `FULL` modifier."),
            (
                "7.0.0",
                "Added the `max-deleted-entry-id`, `entries-added`, `recorded-first-entry-id`, `entries-read` and `lag` fields",
            ),
        ])
        .args(&[
            a::key("key", 0),
            a::block("full", &[a::integer("count").token("COUNT").optional()])
                .token("FULL")
                .optional(),
        ]),
    cmd("groups", 3, READONLY, "5.0.0", "Returns the consumer groups of a stream.", xinfo_groups)
        .key_specs(&[ks(RO | ACCESS, 2, 0, 1)])
        .history(&[("7.0.0", "Added the `entries-read` and `lag` fields")])
        .args(&[a::key("key", 0)]),
    cmd("consumers", 4, READONLY, "5.0.0", "Returns the consumers of a consumer group.", xinfo_consumers)
        .key_specs(&[ks(RO | ACCESS, 2, 0, 1)])
        .tips(&["nondeterministic_output"])
        .args(&[a::key("key", 0), a::string("groupname")]),
    cmd("help", 2, LOADING | STALE, "5.0.0", "Returns helpful text about the different subcommands.", xinfo_help),
];

// ---- helpers ------------------------------------------------------------------------------

const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";
/// XREAD's COUNT when it blocks without one (Redis's XREAD_BLOCKED_DEFAULT_COUNT).
const BLOCKED_DEFAULT_COUNT: i64 = 1000;

fn invalid_id() -> CmdError {
    CmdError::msg(INVALID_ID)
}

/// The stream at a key, WRONGTYPE if it holds something else.
#[inline]
fn as_stream(e: Option<&mut Entry>) -> Result<Option<&mut StreamValue>, CmdError> {
    match e {
        None => Ok(None),
        Some(Entry {
            value: Value::Stream(s),
            ..
        }) => Ok(Some(s)),
        Some(_) => Err(CmdError::WrongType),
    }
}

fn node_limits(ctx: &Ctx) -> NodeLimits {
    let c = &ctx.srv.config;
    NodeLimits {
        max_bytes: c.stream_node_max_bytes() as usize,
        max_entries: c.stream_node_max_entries() as usize,
    }
}

/// Redis's stream ID parser: `-`/`+` (unless `strict`), `<ms>` (with
/// `missing_seq`), `<ms>-<seq>`, and `<ms>-*` when `auto_seq` (then the
/// second value is false: the sequence is to be generated).
fn parse_id_full(
    arg: &[u8],
    missing_seq: u64,
    strict: bool,
    auto_seq: bool,
) -> Result<(StreamId, bool), CmdError> {
    if arg.len() > 127 {
        return Err(invalid_id());
    }
    // Redis reads the argument as a C string.
    let s = crate::util::c_str(arg);
    if strict && (s == b"-" || s == b"+") {
        return Err(invalid_id());
    }
    if s == b"-" {
        return Ok((StreamId::MIN, true));
    }
    if s == b"+" {
        return Ok((StreamId::MAX, true));
    }
    let (ms_part, seq_part) = match memchr::memchr(b'-', s) {
        Some(d) => (&s[..d], Some(&s[d + 1..])),
        None => (s, None),
    };
    let ms = parse_u64_lenient(ms_part).ok_or_else(invalid_id)?;
    match seq_part {
        Some(b"*") if auto_seq => Ok((StreamId::new(ms, 0), false)),
        Some(p) => Ok((
            StreamId::new(ms, parse_u64_lenient(p).ok_or_else(invalid_id)?),
            true,
        )),
        None => Ok((StreamId::new(ms, missing_seq), true)),
    }
}

/// An ID where `-` and `+` are not allowed.
fn strict_id(arg: &[u8]) -> Result<StreamId, CmdError> {
    Ok(parse_id_full(arg, 0, true, false)?.0)
}

/// A range bound: an ID, `-`/`+`, or `(ID` for an exclusive bound.
fn interval_id(arg: &[u8], missing_seq: u64) -> Result<(StreamId, bool), CmdError> {
    if arg.len() > 1 && arg[0] == b'(' {
        Ok((parse_id_full(&arg[1..], missing_seq, true, false)?.0, true))
    } else {
        Ok((parse_id_full(arg, missing_seq, false, false)?.0, false))
    }
}

/// The start bound of a range (inclusive after the exclusive adjustment).
fn range_start(arg: &[u8]) -> Result<StreamId, CmdError> {
    let (id, ex) = interval_id(arg, 0)?;
    if ex {
        id.incr()
            .ok_or_else(|| CmdError::msg("ERR invalid start ID for the interval"))
    } else {
        Ok(id)
    }
}

fn range_end(arg: &[u8]) -> Result<StreamId, CmdError> {
    let (id, ex) = interval_id(arg, u64::MAX)?;
    if ex {
        id.decr()
            .ok_or_else(|| CmdError::msg("ERR invalid end ID for the interval"))
    } else {
        Ok(id)
    }
}

fn reply_id(out: &mut ReplyBuf, id: StreamId) {
    let mut buf = [0u8; 41];
    let mut n = 0;
    let mut b = itoa::Buffer::new();
    for part in [
        b.format(id.ms).as_bytes(),
        b"-",
        itoa::Buffer::new().format(id.seq).as_bytes(),
    ] {
        buf[n..n + part.len()].copy_from_slice(part);
        n += part.len();
    }
    out.bulk(&buf[..n]);
}

/// `[id, [field, value, ...]]`.
fn reply_entry(out: &mut ReplyBuf, e: &EntryRef) {
    out.array(2);
    reply_id(out, e.id);
    out.array(e.len() * 2);
    for (f, v) in e.fields() {
        out.bulk(f);
        out.bulk(v);
    }
}

/// A buffer for a reply whose length is known only afterwards.
fn scratch(out: &ReplyBuf) -> ReplyBuf {
    ReplyBuf::new(out.protocol)
}

fn nogroup_for_key(key: &[u8], group: &[u8]) -> CmdError {
    CmdError::bytes(&[
        b"NOGROUP No such key '",
        c_bytes(key),
        b"' or consumer group '",
        c_bytes(group),
        b"'",
    ])
}

/// XGROUP's and XINFO CONSUMERS' wording of a missing group.
fn nogroup_named(key: &[u8], group: &[u8]) -> CmdError {
    CmdError::bytes(&[
        b"NOGROUP No such consumer group '",
        c_bytes(group),
        b"' for key name '",
        c_bytes(key),
        b"'",
    ])
}

/// `ERR unknown subcommand or wrong number of arguments for '<sub>'. Try <CMD> HELP.`
fn subcommand_syntax(args: &[&[u8]]) -> CmdError {
    super::subcommand_syntax_error(args)
}

// ---- XADD / XTRIM -------------------------------------------------------------------------

struct TrimArgs {
    trim: Option<Trim>,
    approx: bool,
    limit: u64,
    /// Index of the MAXLEN/MINID threshold argument (a `~` is just before
    /// it when `approx`).
    threshold_at: usize,
}

struct AddArgs {
    trim: TrimArgs,
    nomkstream: bool,
    /// The explicit ID and whether its sequence was given.
    id: Option<(StreamId, bool)>,
    /// Index of the ID argument (`*` or explicit).
    idpos: usize,
}

/// Redis's streamParseAddOrTrimArgsOrReply. `obey`: the command comes
/// from the AOF or the master, whose threshold was already rewritten to
/// the exact one, so LIMIT is ignored (and accepted without `~`).
fn parse_add_trim(
    args: &[&[u8]],
    xadd: bool,
    node_max_entries: u64,
    obey: bool,
) -> Result<AddArgs, CmdError> {
    let mut trim: Option<Trim> = None;
    let mut approx = false;
    let mut limit: Option<i64> = None;
    let mut threshold_at = 0;
    let mut nomkstream = false;
    let mut id = None;
    let argc = args.len();
    let mut i = 2;
    const BOTH: &str =
        "ERR syntax error, MAXLEN and MINID options at the same time are not compatible";
    while i < argc {
        let more = argc - 1 - i;
        let opt = args[i];
        if xadd && opt == b"*" {
            break;
        } else if eq_ic(opt, "maxlen") && more > 0 {
            if trim.is_some() {
                return Err(CmdError::msg(BOTH));
            }
            approx = false;
            let next = args[i + 1];
            if more >= 2 && next == b"~" {
                approx = true;
                i += 1;
            } else if more >= 2 && next == b"=" {
                i += 1;
            }
            let n = int(args[i + 1])?;
            if n < 0 {
                return Err(CmdError::msg("ERR The MAXLEN argument must be >= 0."));
            }
            i += 1;
            threshold_at = i;
            trim = Some(Trim::MaxLen(n as u64));
        } else if eq_ic(opt, "minid") && more > 0 {
            if trim.is_some() {
                return Err(CmdError::msg(BOTH));
            }
            approx = false;
            let next = args[i + 1];
            if more >= 2 && next == b"~" {
                approx = true;
                i += 1;
            } else if more >= 2 && next == b"=" {
                i += 1;
            }
            let m = strict_id(args[i + 1])?;
            i += 1;
            threshold_at = i;
            trim = Some(Trim::MinId(m));
        } else if eq_ic(opt, "limit") && more > 0 {
            let n = int(args[i + 1])?;
            if n < 0 {
                return Err(CmdError::msg("ERR The LIMIT argument must be >= 0."));
            }
            limit = Some(n);
            i += 1;
        } else if xadd && eq_ic(opt, "nomkstream") {
            nomkstream = true;
        } else if xadd {
            id = Some(parse_id_full(opt, 0, true, true)?);
            break;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    if limit.is_some_and(|l| l != 0) && trim.is_none() {
        return Err(CmdError::msg(
            "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy",
        ));
    }
    if !xadd && trim.is_none() {
        return Err(CmdError::msg(
            "ERR syntax error, XTRIM must be called with a trimming strategy",
        ));
    }
    let limit = match limit {
        _ if obey => 0,
        Some(l) => {
            if !approx {
                return Err(CmdError::msg(
                    "ERR syntax error, LIMIT cannot be used without the special ~ option",
                ));
            }
            l as u64
        }
        // Redis caps the default work per trim at 10000 entries (and uses
        // that when nodes are unbounded).
        None if approx => match 100u64.saturating_mul(node_max_entries) {
            0 => 10_000,
            l => l.min(10_000),
        },
        None => 0,
    };
    Ok(AddArgs {
        trim: TrimArgs {
            trim,
            approx,
            limit,
            threshold_at,
        },
        nomkstream,
        id,
        idpos: i,
    })
}

/// Redis rewrites an approximate trim for replicas and the AOF as the
/// exact one it came to: `~` becomes `=`, the threshold the stream's
/// length (MAXLEN) or its first entry (MINID) after trimming.
fn rewrite_approx_trim(v: &mut [Vec<u8>], t: &TrimArgs, s: &StreamValue) {
    if !t.approx || t.threshold_at == 0 || t.threshold_at >= v.len() {
        return;
    }
    v[t.threshold_at - 1] = b"=".to_vec();
    v[t.threshold_at] = match t.trim {
        Some(Trim::MaxLen(_)) => itoa::Buffer::new().format(s.len()).as_bytes().to_vec(),
        _ => s.first_stored_id().unwrap_or(StreamId::MAX).to_bytes(),
    };
}

fn xadd(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let limits = node_limits(ctx);
    let p = parse_add_trim(
        args,
        true,
        limits.max_entries as u64,
        ctx.client.must_obey(),
    )?;
    let field_pos = p.idpos + 1;
    if field_pos > args.len() || args.len() - field_pos < 2 || (args.len() - field_pos) % 2 == 1 {
        return Err(CmdError::WrongArity("xadd".into()));
    }
    if let Some((id, true)) = p.id {
        if id.is_zero() {
            return Err(CmdError::msg(
                "ERR The ID specified in XADD must be greater than 0-0",
            ));
        }
    }
    let pairs = &args[field_pos..];
    let now = ctx.now_ms;
    let propagating = ctx.propagating();
    let mut rewritten: Option<Vec<Vec<u8>>> = None;
    let (ka, out) = ctx.split();
    let added = ka.with_key(key, |db| -> Result<bool, CmdError> {
        if as_stream(db.get_write(key))?.is_none() {
            if p.nomkstream {
                out.null();
                return Ok(false);
            }
            db.set(key, Value::Stream(Box::default()));
        }
        let s = as_stream(db.get_write(key))?.expect("stream");
        if s.last_id == StreamId::MAX {
            return Err(CmdError::msg(
                "ERR The stream has exhausted the last possible ID, unable to add more items",
            ));
        }
        let last = s.last_id;
        let id = match p.id {
            Some((id, true)) => id,
            Some((id, false)) => {
                if last.ms == id.ms {
                    if last.seq == u64::MAX {
                        return Err(CmdError::msg("ERR The ID specified in XADD is equal or smaller than the target stream top item"));
                    }
                    StreamId::new(id.ms, last.seq + 1)
                } else {
                    id
                }
            }
            None => {
                let ms = now.max(0) as u64;
                if last.ms >= ms {
                    last.incr().unwrap_or(last)
                } else {
                    StreamId::new(ms, 0)
                }
            }
        };
        if id <= last {
            return Err(CmdError::msg(
                "ERR The ID specified in XADD is equal or smaller than the target stream top item",
            ));
        }
        let total: usize = pairs.iter().map(|p| p.len()).sum();
        if total > LISTPACK_MAX_SIZE {
            return Err(CmdError::msg("ERR Elements are too large to be stored"));
        }
        s.append(id, pairs, limits);
        reply_id(out, id);
        let trimmed = match p.trim.trim {
            Some(t) => s.trim(t, p.trim.approx, p.trim.limit),
            None => 0,
        };
        if propagating {
            // As Redis: the ID it chose for `*` and `ms-*`, and an exact
            // trim for an approximate one.
            let mut v: Vec<Vec<u8>> = args.iter().map(|a| a.to_vec()).collect();
            if !matches!(p.id, Some((_, true))) {
                v[p.idpos] = id.to_bytes();
            }
            rewrite_approx_trim(&mut v, &p.trim, s);
            rewritten = Some(v);
        }
        db.changed(key, Class::STREAM, "xadd");
        if trimmed > 0 {
            db.notify(Class::STREAM, "xtrim", key);
        }
        Ok(true)
    })?;
    if let Some(v) = rewritten {
        ctx.propagate_as(v);
    }
    if added {
        ctx.signal_ready(key);
    }
    Ok(())
}

fn xtrim(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let limits = node_limits(ctx);
    let p = parse_add_trim(
        args,
        false,
        limits.max_entries as u64,
        ctx.client.must_obey(),
    )?;
    let propagating = ctx.propagating();
    let mut rewritten: Option<Vec<Vec<u8>>> = None;
    let n = ctx.with_key(key, |db| -> Result<u64, CmdError> {
        let Some(s) = as_stream(db.get_write(key))? else {
            return Ok(0);
        };
        let Some(trim) = p.trim.trim else {
            return Ok(0);
        };
        let n = s.trim(trim, p.trim.approx, p.trim.limit);
        if n > 0 {
            if propagating && p.trim.approx {
                let mut v: Vec<Vec<u8>> = args.iter().map(|a| a.to_vec()).collect();
                rewrite_approx_trim(&mut v, &p.trim, s);
                rewritten = Some(v);
            }
            db.changed(key, Class::STREAM, "xtrim");
        }
        Ok(n)
    })?;
    if let Some(v) = rewritten {
        ctx.propagate_as(v);
    }
    ctx.out.int(n as i64);
    Ok(())
}

// ---- XRANGE / XREVRANGE / XLEN / XDEL -----------------------------------------------------

fn xrange_generic(ctx: &mut Ctx, args: &[&[u8]], rev: bool) -> CmdResult {
    let key = args[1];
    let (start_arg, end_arg) = if rev {
        (args[3], args[2])
    } else {
        (args[2], args[3])
    };
    let start = range_start(start_arg)?;
    let end = range_end(end_arg)?;
    let mut count: i64 = -1;
    let mut j = 4;
    while j < args.len() {
        if eq_ic(args[j], "count") && j + 1 < args.len() {
            count = int(args[j + 1])?.max(0);
            j += 2;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        let Some(s) = as_stream(db.get_read(key))? else {
            out.array(0);
            return Ok(());
        };
        if count == 0 {
            out.null_array();
            return Ok(());
        }
        let limit = if count < 0 {
            usize::MAX
        } else {
            count as usize
        };
        let mut tmp = scratch(out);
        let mut n = 0;
        s.range(start, end, rev, |e| {
            reply_entry(&mut tmp, &e);
            n += 1;
            n < limit
        });
        out.array(n);
        out.raw(&tmp.buf);
        Ok(())
    })
}

fn xrange(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    xrange_generic(ctx, args, false)
}

fn xrevrange(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    xrange_generic(ctx, args, true)
}

fn xlen(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let n = ctx.with_key(key, |db| -> Result<u64, CmdError> {
        Ok(as_stream(db.get_read(key))?.map_or(0, |s| s.len()))
    })?;
    ctx.out.int(n as i64);
    Ok(())
}

fn xdel(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let n = ctx.with_key(key, |db| -> Result<i64, CmdError> {
        let Some(s) = as_stream(db.get_write(key))? else {
            return Ok(0);
        };
        let ids = args[2..]
            .iter()
            .map(|a| strict_id(a))
            .collect::<Result<Vec<_>, _>>()?;
        let mut deleted = 0;
        let mut first = false;
        for id in ids {
            if s.delete(id) {
                if id == s.first_id {
                    first = true;
                }
                if id > s.max_deleted_id {
                    s.max_deleted_id = id;
                }
                deleted += 1;
            }
        }
        if deleted > 0 {
            if s.is_empty() {
                s.first_id = StreamId::MIN;
            } else if first {
                s.first_id = s.edge_id(false).unwrap_or_default();
            }
            db.changed(key, Class::STREAM, "xdel");
        }
        Ok(deleted)
    })?;
    ctx.out.int(n);
    Ok(())
}

// ---- XREAD / XREADGROUP -------------------------------------------------------------------

/// What one XREAD/XREADGROUP asks for.
struct ReadArgs<'a> {
    xreadgroup: bool,
    block_ms: Option<i64>,
    block_arg: &'a [u8],
    count: i64,
    group: Option<(&'a [u8], &'a [u8])>,
    noack: bool,
    /// The keys after STREAMS, then their IDs.
    keys: &'a [&'a [u8]],
    ids: &'a [&'a [u8]],
}

fn parse_read<'a>(
    args: &'a [&'a [u8]],
    xreadgroup: bool,
    now_ms: i64,
) -> Result<ReadArgs<'a>, CmdError> {
    let mut r = ReadArgs {
        xreadgroup,
        block_ms: None,
        block_arg: b"0",
        count: 0,
        group: None,
        noack: false,
        keys: &[],
        ids: &[],
    };
    let mut streams_at = 0;
    let mut i = 1;
    while i < args.len() {
        let more = args.len() - i - 1;
        let o = args[i];
        if eq_ic(o, "block") && more > 0 {
            if crate::scripting::bridge::in_script() {
                return Err(CmdError::bytes(&[
                    b"ERR ",
                    c_bytes(args[0]),
                    b" command is not allowed with BLOCK option from scripts",
                ]));
            }
            i += 1;
            let t = int(args[i])
                .map_err(|_| CmdError::msg("ERR timeout is not an integer or out of range"))?;
            if t < 0 {
                return Err(CmdError::msg("ERR timeout is negative"));
            }
            // (A deadline past i64::MAX waits forever, as Redis's wrapped one.)
            let deadline = if t > 0 {
                t.checked_add(now_ms).unwrap_or(i64::MAX)
            } else {
                0
            };
            r.block_ms = Some(deadline);
            r.block_arg = args[i];
        } else if eq_ic(o, "count") && more > 0 {
            i += 1;
            r.count = int(args[i])?.max(0);
        } else if eq_ic(o, "streams") && more > 0 {
            streams_at = i + 1;
            let n = args.len() - streams_at;
            if !n.is_multiple_of(2) {
                return Err(CmdError::msg("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."));
            }
            (r.keys, r.ids) = args[streams_at..].split_at(n / 2);
            break;
        } else if eq_ic(o, "group") && more >= 2 {
            if !xreadgroup {
                return Err(CmdError::msg(
                    "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            r.group = Some((args[i + 1], args[i + 2]));
            i += 2;
        } else if eq_ic(o, "noack") {
            if !xreadgroup {
                return Err(CmdError::msg(
                    "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            r.noack = true;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    if streams_at == 0 {
        return Err(CmdError::Syntax);
    }
    if xreadgroup && r.group.is_none() {
        return Err(CmdError::msg("ERR Missing GROUP option for XREADGROUP"));
    }
    Ok(r)
}

impl ReadArgs<'_> {
    /// The arguments a blocked read re-runs with (`args`, the command's):
    /// `$` resolved and Redis's default COUNT for blocked reads.
    fn rerun_args(&self, args: &[&[u8]], resolved: &[StreamId]) -> Vec<Vec<u8>> {
        let mut rerun_args: Vec<Vec<u8>> = Vec::with_capacity(args.len() + 2);
        rerun_args.push(args[0].to_vec());
        if let Some((g, c)) = self.group {
            rerun_args.extend([b"GROUP".to_vec(), g.to_vec(), c.to_vec()]);
        }
        let count = if self.count == 0 {
            BLOCKED_DEFAULT_COUNT
        } else {
            self.count
        };
        rerun_args.extend([b"COUNT".to_vec(), count.to_string().into_bytes()]);
        rerun_args.extend([b"BLOCK".to_vec(), self.block_arg.to_vec()]);
        if self.noack {
            rerun_args.push(b"NOACK".to_vec());
        }
        rerun_args.push(b"STREAMS".to_vec());
        rerun_args.extend(self.keys.iter().map(|k| k.to_vec()));
        for (i, a) in self.ids.iter().enumerate() {
            if *a == b"$" {
                rerun_args.push(resolved[i].to_bytes());
            } else {
                rerun_args.push(a.to_vec());
            }
        }
        rerun_args
    }
}

/// How many entries a read with COUNT `count` takes (0: all of them).
fn read_limit(count: i64) -> usize {
    if count == 0 {
        usize::MAX
    } else {
        count as usize
    }
}

/// The stream at `key`, if it holds one.
fn stream_at<'d>(db: &'d mut Db, key: &[u8]) -> Option<&'d mut StreamValue> {
    as_stream(db.get_write(key)).ok().flatten()
}

/// Serves one stream of an XREADGROUP that reads new entries (`>`):
/// replies the entries after the group's last ID, advancing it and
/// recording them as pending for `consumer` unless `noack`.
fn read_group_new(
    s: &mut StreamValue,
    group: &[u8],
    consumer: &Arc<[u8]>,
    (count, noack): (i64, bool),
    now: i64,
    out: &mut ReplyBuf,
    effects: Option<GroupEffects>,
) {
    let last = s.groups.get(group).map_or(StreamId::MIN, |g| g.last_id);
    let Some(start) = last.incr() else {
        out.array(0);
        return;
    };
    let limit = read_limit(count);
    let mut tmp = scratch(out);
    let mut ids = Vec::new();
    s.range(start, StreamId::MAX, false, |e| {
        reply_entry(&mut tmp, &e);
        ids.push(e.id);
        ids.len() < limit
    });
    out.array(ids.len());
    out.raw(&tmp.buf);
    for &id in &ids {
        s.advance_group(group, id);
        if !noack {
            if let Some(g) = s.groups.get_mut(group) {
                g.assign(id, consumer, now, 1);
            }
            if let Some(fx) = &effects {
                fx.claimed(group, consumer, &id.to_bytes(), now, 1, id);
            }
        }
    }
    if let (Some(fx), true, Some(g)) = (&effects, noack, s.groups.get(group)) {
        if !ids.is_empty() {
            // Nothing became pending: replicas learn where the group stands.
            fx.group_position(group, g);
        }
    }
}

/// Where a consumer group read or claim propagates what it changed (the
/// stream's database and key), as Redis does: one XCLAIM per entry that
/// became pending for its consumer, or for NOACK reads the group's new
/// last ID.
struct GroupEffects<'k> {
    db: usize,
    key: &'k [u8],
}

impl GroupEffects<'_> {
    /// A pending entry whose message is gone leaves the PEL: its claim as
    /// it stood tells replicas to drop it too (as Redis propagates it).
    /// False when `id` was not pending. `id_arg` is the ID as it is
    /// propagated: XCLAIM passes its argument verbatim, as Redis does.
    fn dropped(&self, group: &[u8], g: &Group, id: StreamId, id_arg: &[u8]) -> bool {
        let Some(nk) = g.pel.get(&id) else {
            return false;
        };
        let (time, count) = (nk.delivery_time, nk.delivery_count);
        self.claimed(group, &nk.consumer, id_arg, time, count, g.last_id);
        true
    }

    /// `XGROUP SETID key group last ENTRIESREAD n`.
    fn group_position(&self, group: &[u8], g: &Group) {
        let entries_read = itoa::Buffer::new()
            .format(g.entries_read)
            .as_bytes()
            .to_vec();
        self.push(&[
            b"XGROUP",
            b"SETID",
            self.key,
            group,
            &g.last_id.to_bytes(),
            b"ENTRIESREAD",
            &entries_read,
        ]);
    }

    fn push(&self, parts: &[&[u8]]) {
        crate::keyspace::effects::push(
            self.db,
            super::argv(parts),
            crate::keyspace::effects::target::ALL,
        );
    }

    /// `XCLAIM key group consumer 0 id TIME ms RETRYCOUNT n FORCE JUSTID
    /// LASTID last`: the pending entry as it now stands.
    fn claimed(
        &self,
        group: &[u8],
        consumer: &[u8],
        id: &[u8],
        time: i64,
        count: u64,
        last: StreamId,
    ) {
        let mut b = itoa::Buffer::new();
        let time = b.format(time).as_bytes().to_vec();
        let count = itoa::Buffer::new().format(count).as_bytes().to_vec();
        self.push(&[
            b"XCLAIM",
            self.key,
            group,
            consumer,
            b"0",
            id,
            b"TIME",
            &time,
            b"RETRYCOUNT",
            &count,
            b"FORCE",
            b"JUSTID",
            b"LASTID",
            &last.to_bytes(),
        ]);
    }
}

/// Serves an XREADGROUP history read: the consumer's own pending entries
/// from `start` on.
fn read_group_history(
    s: &mut StreamValue,
    group: &[u8],
    consumer: &Arc<[u8]>,
    start: StreamId,
    count: i64,
    now: i64,
    out: &mut ReplyBuf,
) {
    let limit = read_limit(count);
    let ids: Vec<StreamId> = s
        .groups
        .get(group)
        .and_then(|g| {
            g.consumers
                .get(consumer)
                .map(|c| c.pel.range(start.., &g.pel, consumer).take(limit).collect())
        })
        .unwrap_or_default();
    out.array(ids.len());
    for id in ids {
        match s.get(id) {
            Some(e) => {
                reply_entry(out, &e);
                if let Some(n) = s.groups.get_mut(group).and_then(|g| g.pel.get_mut(&id)) {
                    n.delivery_time = now;
                    n.delivery_count += 1;
                }
            }
            None => {
                out.array(2);
                reply_id(out, id);
                out.null_array();
            }
        }
    }
}

/// Whether a reader past `gt` is served from stream `s`. A new read needs
/// an entry after `gt`; a reader woken by a signal for this stream is
/// served (possibly with no entries) once the stream's last ID moved past
/// `gt`, even if what was added is already deleted or trimmed away, as
/// Redis serves it.
fn has_new(s: &StreamValue, gt: StreamId, woken: bool) -> bool {
    if woken {
        s.last_id > gt
    } else {
        !s.is_empty() && s.last_valid_id() > gt
    }
}

/// Who reads, as serving the streams needs it.
struct Reader<'a> {
    id: u64,
    db: usize,
    now: i64,
    /// A re-run after a wake-up.
    rerun: bool,
    /// For a woken reader, the stream that became ready first.
    woken_by: Option<crate::keyspace::Key>,
    /// XREADGROUP propagates what it changed (GroupEffects), never itself.
    propagating: bool,
    blocking: &'a BlockingRegistry,
}

/// XREAD and XREADGROUP: parse, check every stream and resolve its ID,
/// serve those with something to read, then reply or block.
fn xread_generic(ctx: &mut Ctx, args: &[&[u8]], xreadgroup: bool) -> CmdResult {
    let r = parse_read(args, xreadgroup, ctx.now_ms)?;
    // A re-run after a wake-up: Redis answers blocked readers whose key or
    // group went away with errors of its own.
    let rerun = ctx.client.info.blocked.load(Relaxed);
    let woken_by = if rerun {
        ctx.client.woken_by.clone()
    } else {
        None
    };
    if rerun && xreadgroup && ctx.client.woken_stream_gone {
        return Err(CmdError::msg("UNBLOCKED the stream key no longer exists"));
    }
    let propagating = xreadgroup && ctx.propagating();
    if xreadgroup {
        ctx.no_propagate();
    }
    let reader = Reader {
        id: ctx.client.id,
        db: ctx.client.db,
        now: ctx.now_ms,
        rerun,
        woken_by,
        propagating,
        blocking: &ctx.srv.blocking,
    };
    let (ka, out) = ctx.split();
    let mut resolved: Vec<StreamId> = Vec::new();
    let served = ka.with_keys(r.keys.iter().copied(), |db| -> Result<usize, CmdError> {
        resolved = resolve_ids(db, &r, rerun)?;
        let mut tmp = scratch(out);
        let served = serve_streams(db, &r, &resolved, &reader, &mut tmp);
        if served == 0 && r.block_ms.is_some() {
            queue_for_new_entries(db, &r, &resolved, reader.id);
        }
        reply_read(out, served, &tmp);
        Ok(served)
    })?;
    if served > 0 {
        return Ok(());
    }
    match r.block_ms {
        Some(deadline) => {
            let rerun_args = r.rerun_args(args, &resolved);
            let deadline = if deadline == 0 { None } else { Some(deadline) };
            ctx.block_with_args(r.keys, deadline, |out| out.null_array(), rerun_args);
        }
        None => ctx.out.null_array(),
    }
    Ok(())
}

/// Checks every stream and its ID (or group) first, key by key, as Redis
/// does, resolving the IDs (`$` to the stream's last, `>` to the greatest).
fn resolve_ids(db: &mut Db, r: &ReadArgs, rerun: bool) -> Result<Vec<StreamId>, CmdError> {
    let xreadgroup = r.xreadgroup;
    let mut resolved: Vec<StreamId> = Vec::with_capacity(r.keys.len());
    let mut found: smallvec::SmallVec<[bool; 4]> = smallvec::SmallVec::new();
    for (i, &key) in r.keys.iter().enumerate() {
        // Redis looks each key up here (to check it and its ID or
        // group), and once more to read it if all are valid
        // (serve_streams).
        // It serves a woken reader without counting again.
        let entry = if rerun {
            db.get_write(key)
        } else {
            db.get_read(key)
        };
        found.push(entry.is_some());
        let s = match as_stream(entry) {
            Ok(s) => s,
            Err(_) if rerun && xreadgroup => {
                return Err(CmdError::msg("UNBLOCKED the stream key no longer exists"))
            }
            Err(_) if rerun => None,
            Err(e) => return Err(e),
        };
        if let Some((group, _)) = r.group {
            match s.as_ref().map(|s| s.groups.contains_key(group)) {
                Some(true) => {}
                None if rerun => {
                    return Err(CmdError::msg("UNBLOCKED the stream key no longer exists"))
                }
                Some(false) if rerun => {
                    return Err(CmdError::msg(
                        "NOGROUP the consumer group this client was blocked on no longer exists",
                    ))
                }
                _ => {
                    return Err(CmdError::bytes(&[
                        b"NOGROUP No such key '",
                        c_bytes(key),
                        b"' or consumer group '",
                        c_bytes(group),
                        b"' in XREADGROUP with GROUP option",
                    ]))
                }
            }
        }
        let a = r.ids[i];
        let id = if a == b"$" {
            if xreadgroup {
                return Err(CmdError::msg("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set."));
            }
            s.map_or(StreamId::MIN, |s| s.last_id)
        } else if a == b">" {
            if !xreadgroup {
                return Err(CmdError::msg("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option."));
            }
            StreamId::MAX
        } else {
            strict_id(a)?
        };
        resolved.push(id);
    }
    if !rerun {
        for (&key, &was_found) in r.keys.iter().zip(&found) {
            db.count_read_again(key, was_found);
        }
    }
    Ok(resolved)
}

/// Serves, into `tmp`, the streams that have something for the reader;
/// returns how many did.
fn serve_streams(
    db: &mut Db,
    r: &ReadArgs,
    resolved: &[StreamId],
    reader: &Reader,
    tmp: &mut ReplyBuf,
) -> usize {
    let mut served = 0;
    // A woken reader is served from the stream that became ready first
    // only, as Redis does; from any stream if that one has nothing.
    for pass in 0..2 {
        let only: Option<&[u8]> = if pass == 0 {
            reader.woken_by.as_deref()
        } else {
            None
        };
        if pass == 1 && (reader.woken_by.is_none() || served > 0) {
            break;
        }
        for (i, &key) in r.keys.iter().enumerate() {
            if only.is_some_and(|o| o != key) {
                continue;
            }
            let read = (key, resolved[i]);
            let hit = match r.group {
                Some(group) => serve_group_stream(db, r, reader, read, group, only.is_some(), tmp),
                None => serve_stream(db, read, r.count, only.is_some(), tmp),
            };
            if hit {
                served += 1;
            }
        }
    }
    served
}

/// One stream of the reply, before its entries: `[key, entries]` in RESP2,
/// `key => entries` in RESP3's map.
fn reply_stream_key(tmp: &mut ReplyBuf, key: &[u8]) {
    if !tmp.resp3() {
        tmp.array(2);
    }
    tmp.bulk(key);
}

/// XREAD of stream `key` past `gt`: its entries into `tmp`, if it has
/// any for this reader (see [`has_new`]).
fn serve_stream(
    db: &mut Db,
    (key, gt): (&[u8], StreamId),
    count: i64,
    woken: bool,
    tmp: &mut ReplyBuf,
) -> bool {
    let Some(s) = stream_at(db, key) else {
        return false;
    };
    if !has_new(s, gt, woken) {
        return false;
    }
    reply_stream_key(tmp, key);
    let mut entries = scratch(tmp);
    let mut n = 0;
    for e in s.read_after(gt, read_limit(count)) {
        reply_entry(&mut entries, &e);
        n += 1;
    }
    tmp.array(n);
    tmp.raw(&entries.buf);
    true
}

/// XREADGROUP of stream `key`: the consumer's history from `gt` on, or
/// (`gt` the greatest ID, for `>`) the group's new entries when it is the
/// reader's turn; into `tmp`, creating the consumer if missing.
fn serve_group_stream(
    db: &mut Db,
    r: &ReadArgs,
    reader: &Reader,
    (key, gt): (&[u8], StreamId),
    (group, consumer): (&[u8], &[u8]),
    woken: bool,
    tmp: &mut ReplyBuf,
) -> bool {
    let Some(s) = stream_at(db, key) else {
        return false;
    };
    let (now, db_index) = (reader.now, reader.db);
    let history = gt != StreamId::MAX;
    // (resolve_ids checked the group under the same locks.)
    let Some(g_last) = s.groups.get(group).map(|g| g.last_id) else {
        return false;
    };
    if !history && !has_new(s, g_last, woken) {
        return false;
    }
    let Some(g) = s.groups.get_mut(group) else {
        return false;
    };
    // First come, first served among blocked consumers.
    if !history
        && !reader
            .blocking
            .take_group_turn(g, reader.id, db_index, key, reader.rerun)
    {
        return false;
    }
    let (name, created) = g.consumer_or_create(consumer, now);
    if let Some(c) = g.consumers.get_mut(&name) {
        c.seen_time = now;
    }
    // As Redis: a consumer a NOACK read creates is created on
    // replicas too (no XCLAIM will name it).
    if reader.propagating && created && r.noack {
        crate::keyspace::effects::push(
            db_index,
            super::argv(&[
                b"XGROUP".as_slice(),
                b"CREATECONSUMER",
                key,
                group,
                consumer,
            ]),
            crate::keyspace::effects::target::ALL,
        );
    }
    reply_stream_key(tmp, key);
    if history {
        let start = gt.incr().unwrap_or(StreamId::MIN);
        read_group_history(s, group, &name, start, r.count, now, tmp);
    } else {
        let effects = reader
            .propagating
            .then_some(GroupEffects { db: db_index, key });
        read_group_new(s, group, &name, (r.count, r.noack), now, tmp, effects);
    }
    if created {
        db.notify(Class::STREAM, "xgroup-createconsumer", key);
    }
    true
}

/// A group read about to block takes its place in line for the new
/// entries of each stream it reads with `>`.
fn queue_for_new_entries(db: &mut Db, r: &ReadArgs, resolved: &[StreamId], me: u64) {
    let Some((group, _)) = r.group else {
        return;
    };
    for (i, &key) in r.keys.iter().enumerate() {
        if resolved[i] != StreamId::MAX {
            continue;
        }
        if let Some(s) = stream_at(db, key) {
            if let Some(g) = s.groups.get_mut(group) {
                blocking::queue_group_reader(g, me);
            }
        }
    }
}

/// The reply of a read that served `served` streams (written in `streams`):
/// a map in RESP3, an array in RESP2. Nothing when none was served.
fn reply_read(out: &mut ReplyBuf, served: usize, streams: &ReplyBuf) {
    if served > 0 {
        if out.resp3() {
            out.map(served);
        } else {
            out.array(served);
        }
        out.raw(&streams.buf);
    }
}

fn xread(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    xread_generic(ctx, args, false)
}

fn xreadgroup(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    xread_generic(ctx, args, true)
}

// ---- XGROUP -------------------------------------------------------------------------------

/// The checks every XGROUP subcommand with a key shares, in Redis's order.
fn xgroup_precheck(
    db: &mut Db,
    args: &[&[u8]],
    needs_group: bool,
    mkstream: bool,
) -> Result<(), CmdError> {
    let key = args[2];
    let group = args[3];
    let s = as_stream(db.get_write(key))?;
    if s.is_none() && !mkstream {
        return Err(CmdError::msg("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically."));
    }
    let has_group = s.as_ref().is_some_and(|s| s.groups.contains_key(group));
    if needs_group && !has_group {
        return Err(nogroup_named(key, group));
    }
    Ok(())
}

fn entries_read_arg(a: &[u8]) -> Result<i64, CmdError> {
    let n = int(a)?;
    if n < 0 && n != ENTRIES_READ_INVALID {
        return Err(CmdError::msg(
            "ERR value for ENTRIESREAD must be positive or -1",
        ));
    }
    Ok(n)
}

/// The options after the ID of XGROUP CREATE and SETID, read (and their
/// values checked) before anything else: MKSTREAM and ENTRIESREAD.
fn xgroup_options(args: &[&[u8]]) -> Result<(bool, i64), CmdError> {
    let mut mkstream = false;
    let mut entries_read = ENTRIES_READ_INVALID;
    let mut i = 5;
    while i < args.len() {
        if eq_ic(args[i], "mkstream") {
            mkstream = true;
            i += 1;
        } else if eq_ic(args[i], "entriesread") && i + 1 < args.len() {
            entries_read = entries_read_arg(args[i + 1])?;
            i += 2;
        } else {
            return Err(subcommand_syntax(args));
        }
    }
    Ok((mkstream, entries_read))
}

fn xgroup_create(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[2];
    let (mkstream, entries_read) = xgroup_options(args)?;
    if args.len() > 8 {
        return Err(subcommand_syntax(args));
    }
    ctx.with_key(key, |db| -> CmdResult {
        xgroup_precheck(db, args, false, mkstream)?;
        let exists = as_stream(db.get_write(key))?.is_some();
        let id = if args[4] == b"$" {
            as_stream(db.get_write(key))?.map_or(StreamId::MIN, |s| s.last_id)
        } else {
            strict_id(args[4])?
        };
        if !exists {
            db.set(key, Value::Stream(Box::default()));
            db.signal_modified(key);
        }
        let s = as_stream(db.get_write(key))?.expect("stream");
        if s.groups.contains_key(args[3]) {
            return Err(CmdError::msg(
                "BUSYGROUP Consumer Group name already exists",
            ));
        }
        s.groups
            .insert(args[3].into(), Group::new(id, entries_read));
        // Group and ID changes (XGROUP, XSETID) notify but are not
        // modifications of the key in Redis's sense: WATCH and client-side
        // caching are left alone, as redis-server 7.0 does.
        db.note_change();
        db.notify(Class::STREAM, "xgroup-create", key);
        Ok(())
    })?;
    ctx.out.ok();
    Ok(())
}

fn xgroup_setid(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[2];
    // The options are checked before the key and the group.
    let (_, entries_read) = xgroup_options(args)?;
    if args.len() != 5 && args.len() != 7 {
        return Err(subcommand_syntax(args));
    }
    ctx.with_key(key, |db| -> CmdResult {
        xgroup_precheck(db, args, true, false)?;
        let s = as_stream(db.get_write(key))?.expect("stream");
        let id = if args[4] == b"$" {
            s.last_id
        } else {
            parse_id_full(args[4], 0, false, false)?.0
        };
        let g = s.groups.get_mut(args[3]).expect("group");
        g.last_id = id;
        g.entries_read = entries_read;
        db.note_change();
        db.notify(Class::STREAM, "xgroup-setid", key);
        Ok(())
    })?;
    ctx.out.ok();
    Ok(())
}

fn xgroup_destroy(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[2];
    let n = ctx.with_key(key, |db| -> Result<i64, CmdError> {
        xgroup_precheck(db, args, false, false)?;
        let s = as_stream(db.get_write(key))?.expect("stream");
        if s.groups.remove(args[3]).is_some() {
            db.note_change();
            db.notify(Class::STREAM, "xgroup-destroy", key);
            Ok(1)
        } else {
            Ok(0)
        }
    })?;
    ctx.out.int(n);
    if n > 0 {
        // Blocked XREADGROUP clients of the group get an error.
        ctx.signal_ready(key);
    }
    Ok(())
}

fn xgroup_createconsumer(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[2];
    let now = ctx.now_ms;
    let n = ctx.with_key(key, |db| -> Result<i64, CmdError> {
        xgroup_precheck(db, args, true, false)?;
        let s = as_stream(db.get_write(key))?.expect("stream");
        let g = s.groups.get_mut(args[3]).expect("group");
        let (_, created) = g.consumer_or_create(args[4], now);
        if created {
            db.note_change();
            db.notify(Class::STREAM, "xgroup-createconsumer", key);
        }
        Ok(created as i64)
    })?;
    ctx.out.int(n);
    Ok(())
}

fn xgroup_delconsumer(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[2];
    let n = ctx.with_key(key, |db| -> Result<i64, CmdError> {
        xgroup_precheck(db, args, true, false)?;
        let s = as_stream(db.get_write(key))?.expect("stream");
        let g = s.groups.get_mut(args[3]).expect("group");
        let Some(pending) = g.delete_consumer(args[4]) else {
            return Ok(0);
        };
        db.note_change();
        db.notify(Class::STREAM, "xgroup-delconsumer", key);
        Ok(pending as i64)
    })?;
    ctx.out.int(n);
    Ok(())
}

fn help_lines(ctx: &mut Ctx, name: &str, lines: &[&str]) -> CmdResult {
    ctx.out.array(lines.len() + 3);
    ctx.out.simple(
        format!("{name} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:").as_bytes(),
    );
    for l in lines {
        ctx.out.simple(l.as_bytes());
    }
    ctx.out.simple(b"HELP");
    ctx.out.simple(b"    Prints this help.");
    Ok(())
}

fn xgroup_help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    help_lines(
        ctx,
        "XGROUP",
        &[
            "CREATE <key> <groupname> <id|$> [option]",
            "    Create a new consumer group. Options are:",
            "    * MKSTREAM",
            "      Create the empty stream if it does not exist.",
            "    * ENTRIESREAD entries_read",
            "      Set the group's entries_read counter (internal use).",
            "CREATECONSUMER <key> <groupname> <consumer>",
            "    Create a new consumer in the specified group.",
            "DELCONSUMER <key> <groupname> <consumer>",
            "    Remove the specified consumer.",
            "DESTROY <key> <groupname>",
            "    Remove the specified group.",
            "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
            "    Set the current group ID and entries_read counter.",
        ],
    )
}

// ---- XACK / XPENDING / XCLAIM / XAUTOCLAIM ------------------------------------------------

fn xack(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let n = ctx.with_key(key, |db| -> Result<i64, CmdError> {
        let Some(s) = as_stream(db.get_read(key))? else {
            return Ok(0);
        };
        let Some(g) = s.groups.get_mut(args[2]) else {
            return Ok(0);
        };
        let ids = args[3..]
            .iter()
            .map(|a| strict_id(a))
            .collect::<Result<Vec<_>, _>>()?;
        let acked = ids.into_iter().filter(|id| g.remove_nack(*id)).count() as i64;
        if acked > 0 {
            db.note_change();
        }
        Ok(acked)
    })?;
    ctx.out.int(n);
    Ok(())
}

fn xpending(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let group = args[2];
    let argc = args.len();
    if argc != 3 && !(6..=9).contains(&argc) {
        return Err(CmdError::Syntax);
    }
    let mut range = None;
    if argc >= 6 {
        let mut at = 3;
        let mut minidle = 0;
        if eq_ic(args[3], "idle") {
            minidle = int(args[4])?;
            if argc < 8 {
                return Err(CmdError::Syntax);
            }
            at += 2;
        }
        let count = int(args[at + 2])?.max(0);
        let start = range_start(args[at])?;
        let end = range_end(args[at + 1])?;
        let consumer = args.get(at + 3).copied();
        range = Some((minidle, start, end, count, consumer));
    }
    let now = ctx.now_ms;
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        let s = as_stream(db.get_read(key))?;
        let Some(g) = s.and_then(|s| s.groups.get(group)) else {
            return Err(nogroup_for_key(key, group));
        };
        let Some((minidle, start, end, mut count, consumer)) = range else {
            out.array(4);
            out.int(g.pel.len() as i64);
            let (Some(first), Some(last)) = (g.pel.first(), g.pel.last()) else {
                out.null();
                out.null();
                out.null_array();
                return Ok(());
            };
            reply_id(out, first);
            reply_id(out, last);
            let with: Vec<_> = g
                .consumers
                .iter()
                .filter(|(_, c)| !c.pel.is_empty())
                .collect();
            out.array(with.len());
            for (name, c) in with {
                out.array(2);
                out.bulk(name);
                out.bulk_int(c.pel.len() as i64);
            }
            return Ok(());
        };
        let ids: Box<dyn Iterator<Item = StreamId>> = match consumer {
            Some(name) => match g.consumers.get(name) {
                Some(c) if start <= end => Box::new(c.pel.range(start..=end, &g.pel, name)),
                Some(_) => Box::new(std::iter::empty()),
                None => {
                    out.array(0);
                    return Ok(());
                }
            },
            None if start <= end => Box::new(g.pel.range(start..=end).map(|(id, _)| id)),
            None => Box::new(std::iter::empty()),
        };
        let mut tmp = scratch(out);
        let mut n = 0;
        for id in ids {
            if count == 0 {
                break;
            }
            let nack = &g.pel[&id];
            if minidle != 0 && now - nack.delivery_time < minidle {
                continue;
            }
            n += 1;
            count -= 1;
            tmp.array(4);
            reply_id(&mut tmp, id);
            tmp.bulk(&nack.consumer);
            tmp.int((now - nack.delivery_time).max(0));
            tmp.int(nack.delivery_count as i64);
        }
        out.array(n);
        out.raw(&tmp.buf);
        Ok(())
    })
}

/// One claimed entry of XCLAIM/XAUTOCLAIM: its ID (JUSTID), or the entry
/// (nil if it was deleted).
fn reply_claimed(out: &mut ReplyBuf, s: &StreamValue, id: StreamId, justid: bool) {
    if justid {
        reply_id(out, id);
    } else {
        match s.get(id) {
            Some(e) => reply_entry(out, &e),
            None => out.null(),
        }
    }
}

fn xclaim(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let now = ctx.now_ms;
    // XCLAIM propagates each claim in a fixed form (GroupEffects), never
    // itself.
    let effects = ctx.propagating().then_some(GroupEffects {
        db: ctx.client.db,
        key,
    });
    ctx.no_propagate();
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        let s = as_stream(db.get_read(key))?;
        let Some(s) = s.filter(|s| s.groups.contains_key(args[2])) else {
            return Err(nogroup_for_key(key, args[2]));
        };
        let minidle = int(args[4])
            .map_err(|_| CmdError::msg("ERR Invalid min-idle-time argument for XCLAIM"))?
            .max(0);
        let mut j = 5;
        let mut ids = Vec::new();
        while j < args.len() {
            match strict_id(args[j]) {
                // The argument as typed is what propagates (`785`, not
                // `785-0`), as in Redis.
                Ok(id) => ids.push((id, args[j])),
                Err(_) => break,
            }
            j += 1;
        }
        let mut force = false;
        let mut justid = false;
        let mut retrycount: i64 = -1;
        let mut deliverytime: i64 = -1;
        let mut last_id = StreamId::MIN;
        while j < args.len() {
            let more = args.len() - 1 - j;
            let opt = args[j];
            if eq_ic(opt, "force") {
                force = true;
            } else if eq_ic(opt, "justid") {
                justid = true;
            } else if eq_ic(opt, "idle") && more > 0 {
                j += 1;
                let v = int(args[j])
                    .map_err(|_| CmdError::msg("ERR Invalid IDLE option argument for XCLAIM"))?;
                deliverytime = now.wrapping_sub(v);
            } else if eq_ic(opt, "time") && more > 0 {
                j += 1;
                deliverytime = int(args[j])
                    .map_err(|_| CmdError::msg("ERR Invalid TIME option argument for XCLAIM"))?;
            } else if eq_ic(opt, "retrycount") && more > 0 {
                j += 1;
                retrycount = int(args[j]).map_err(|_| {
                    CmdError::msg("ERR Invalid RETRYCOUNT option argument for XCLAIM")
                })?;
            } else if eq_ic(opt, "lastid") && more > 0 {
                j += 1;
                last_id = strict_id(args[j])?;
            } else {
                return Err(CmdError::bytes(&[
                    b"ERR Unrecognized XCLAIM option '",
                    c_bytes(opt),
                    b"'",
                ]));
            }
            j += 1;
        }
        let group = args[2];
        let mut propagate_last_id = false;
        {
            let g = s.groups.get_mut(group).expect("group");
            if last_id > g.last_id {
                g.last_id = last_id;
                propagate_last_id = true;
            }
        }
        if deliverytime < 0 || deliverytime > now {
            deliverytime = now;
        }
        let mut consumer: Option<Arc<[u8]>> = None;
        let mut created = false;
        let mut tmp = scratch(out);
        let mut n = 0;
        for (id, id_arg) in ids {
            let exists = s.exists(id);
            let g = s.groups.get_mut(group).expect("group");
            if !exists {
                // A pending entry whose message is gone leaves the PEL; its
                // claim as it stood tells replicas to drop it too.
                if effects
                    .as_ref()
                    .is_some_and(|fx| fx.dropped(group, g, id, id_arg))
                {
                    propagate_last_id = false;
                }
                g.remove_nack(id);
                continue;
            }
            let (had, count, owner) = match g.pel.get(&id) {
                Some(nk) => (true, nk.delivery_count, Some(nk.delivery_time)),
                None if force => (false, 1, None),
                None => continue,
            };
            if let Some(t) = owner {
                if minidle != 0 && now - t < minidle {
                    continue;
                }
            }
            let name = match &consumer {
                Some(c) => c.clone(),
                None => {
                    let (c, made) = g.consumer_or_create(args[3], now);
                    created |= made;
                    consumer = Some(c.clone());
                    c
                }
            };
            let count = if retrycount >= 0 {
                retrycount as u64
            } else if !justid {
                count + 1
            } else {
                count
            };
            let _ = had;
            g.assign(id, &name, deliverytime, count);
            if let Some(c) = g.consumers.get_mut(&name) {
                c.seen_time = now;
            }
            if let Some(fx) = &effects {
                fx.claimed(group, &name, id_arg, deliverytime, count, g.last_id);
                propagate_last_id = false;
            }
            reply_claimed(&mut tmp, s, id, justid);
            n += 1;
        }
        if let (Some(fx), true) = (&effects, propagate_last_id) {
            if let Some(g) = s.groups.get(group) {
                fx.group_position(group, g);
            }
        }
        out.array(n);
        out.raw(&tmp.buf);
        if created {
            db.notify(Class::STREAM, "xgroup-createconsumer", key);
        }
        Ok(())
    })
}

fn xautoclaim(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let now = ctx.now_ms;
    // Redis looks the key up before it reads the arguments: a bad argument
    // still counts a hit or a miss (and notifies "keymiss").
    let options = xautoclaim_options(args);
    let effects = ctx.propagating().then_some(GroupEffects {
        db: ctx.client.db,
        key,
    });
    ctx.no_propagate();
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        let looked_up = as_stream(db.get_read(key)).map(|s| s.is_some());
        let (minidle, start, count, justid) = options?;
        looked_up?;
        let options = (minidle, start, count, justid);
        xautoclaim_in(db, key, args, now, options, out, effects)
    })
}

/// XAUTOCLAIM's min-idle-time, start, COUNT and JUSTID.
fn xautoclaim_options(args: &[&[u8]]) -> Result<(i64, StreamId, i64, bool), CmdError> {
    let minidle = int(args[4])
        .map_err(|_| CmdError::msg("ERR Invalid min-idle-time argument for XAUTOCLAIM"))?
        .max(0);
    let start = range_start(args[5])?;
    let mut count: i64 = 100;
    let mut justid = false;
    let mut j = 6;
    while j < args.len() {
        let more = args.len() - 1 - j;
        if eq_ic(args[j], "count") && more > 0 {
            let max = i64::MAX / 16;
            count = match int(args[j + 1]) {
                Ok(c) if (1..=max).contains(&c) => c,
                _ => return Err(CmdError::msg("ERR COUNT must be > 0")),
            };
            j += 1;
        } else if eq_ic(args[j], "justid") {
            justid = true;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    Ok((minidle, start, count, justid))
}

/// XAUTOCLAIM on a key already looked up (and counted).
fn xautoclaim_in(
    db: &mut Db,
    key: &[u8],
    args: &[&[u8]],
    now: i64,
    (minidle, start, mut count, justid): (i64, StreamId, i64, bool),
    out: &mut ReplyBuf,
    effects: Option<GroupEffects>,
) -> CmdResult {
    let s = as_stream(db.get_write(key))?;
    let Some(s) = s.filter(|s| s.groups.contains_key(args[2])) else {
        return Err(nogroup_for_key(key, args[2]));
    };
    let group = args[2];
    // Redis allocates room for COUNT deleted IDs up front and refuses a
    // COUNT whose array could not be mapped; nothing is allocated here, but
    // the same COUNT gets the same refusal (the limit is where a 64 TiB
    // allocation fails on x86-64's 128 TiB of user address space).
    if count.saturating_mul(16) > 1 << 46 {
        return Err(CmdError::msg(
            "ERR Insufficient memory, failed allocating transient memory, COUNT too high.",
        ));
    }
    let mut attempts = count * 10;
    let mut consumer: Option<Arc<[u8]>> = None;
    let mut created = false;
    let mut tmp = scratch(out);
    let mut n = 0;
    let mut deleted = Vec::new();
    let mut cursor = start;
    let mut next: Option<StreamId> = None;
    loop {
        if attempts == 0 || count == 0 {
            // The cursor is the next pending ID, if any.
            next = s
                .groups
                .get(group)
                .and_then(|g| g.pel.range(cursor..).next().map(|(id, _)| id));
            break;
        }
        attempts -= 1;
        let Some((id, t)) = s.groups.get(group).and_then(|g| {
            g.pel
                .range(cursor..)
                .next()
                .map(|(id, nk)| (id, nk.delivery_time))
        }) else {
            break;
        };
        cursor = match id.incr() {
            Some(c) => c,
            None => StreamId::MAX,
        };
        let exists = s.exists(id);
        let g = s.groups.get_mut(group).expect("group");
        if !exists {
            if let Some(fx) = &effects {
                fx.dropped(group, g, id, &id.to_bytes());
            }
            g.remove_nack(id);
            deleted.push(id);
            count -= 1;
            if id == StreamId::MAX {
                break;
            }
            continue;
        }
        if minidle != 0 && now - t < minidle {
            if id == StreamId::MAX {
                break;
            }
            continue;
        }
        let name = match &consumer {
            Some(c) => c.clone(),
            None => {
                let (c, made) = g.consumer_or_create(args[3], now);
                created |= made;
                if let Some(cc) = g.consumers.get_mut(&c) {
                    cc.seen_time = now;
                }
                consumer = Some(c.clone());
                c
            }
        };
        let dc = g.pel[&id].delivery_count;
        let dc = if justid { dc } else { dc + 1 };
        g.assign(id, &name, now, dc);
        if let Some(fx) = &effects {
            fx.claimed(group, &name, &id.to_bytes(), now, dc, g.last_id);
        }
        reply_claimed(&mut tmp, s, id, justid);
        n += 1;
        count -= 1;
        if id == StreamId::MAX {
            break;
        }
    }
    out.array(3);
    reply_id(out, next.unwrap_or(StreamId::MIN));
    out.array(n);
    out.raw(&tmp.buf);
    out.array(deleted.len());
    for id in deleted {
        reply_id(out, id);
    }
    if created {
        db.notify(Class::STREAM, "xgroup-createconsumer", key);
    }
    Ok(())
}

// ---- XINFO --------------------------------------------------------------------------------

fn xinfo_lookup<'d>(db: &'d mut Db, key: &[u8]) -> Result<&'d mut StreamValue, CmdError> {
    as_stream(db.get_read(key))?.ok_or(CmdError::NoSuchKey)
}

fn reply_entries_read(out: &mut ReplyBuf, g: &Group) {
    if g.entries_read != ENTRIES_READ_INVALID {
        out.int(g.entries_read);
    } else {
        out.null();
    }
}

fn reply_lag(out: &mut ReplyBuf, s: &StreamValue, g: &Group) {
    match s.group_lag(g) {
        Some(l) => out.int(l),
        None => out.null(),
    }
}

/// An estimate of the radix tree's node count (XINFO radix-tree-nodes):
/// the nodes of a compressed trie over the node keys' 16-byte encodings.
fn rax_nodes(s: &StreamValue) -> usize {
    s.node_count() + 1
}

fn xinfo_stream_opts(args: &[&[u8]]) -> Result<(bool, i64), CmdError> {
    let rest = &args[3..];
    let mut full = false;
    let mut count: i64 = 10;
    if !rest.is_empty() {
        if !eq_ic(rest[0], "full") {
            return Err(subcommand_syntax(args));
        }
        if rest.len() != 1 && rest.len() != 3 {
            return Err(subcommand_syntax(args));
        }
        full = true;
        if rest.len() == 3 {
            if !eq_ic(rest[1], "count") {
                return Err(subcommand_syntax(args));
            }
            count = int(rest[2])?;
            if count < 0 {
                count = 10;
            }
        }
    }
    Ok((full, count))
}

fn xinfo_stream(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    // The key is looked up before the options are read.
    let opts = xinfo_stream_opts(args);
    let key = args[2];
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        let s = xinfo_lookup(db, key)?;
        let (full, count) = opts?;
        out.map(if full { 9 } else { 10 });
        out.bulk(b"length");
        out.int(s.len() as i64);
        out.bulk(b"radix-tree-keys");
        out.int(s.node_count() as i64);
        out.bulk(b"radix-tree-nodes");
        out.int(rax_nodes(s) as i64);
        out.bulk(b"last-generated-id");
        reply_id(out, s.last_id);
        out.bulk(b"max-deleted-entry-id");
        reply_id(out, s.max_deleted_id);
        out.bulk(b"entries-added");
        out.int(s.entries_added as i64);
        out.bulk(b"recorded-first-entry-id");
        reply_id(out, s.first_id);
        if !full {
            out.bulk(b"groups");
            out.int(s.groups.len() as i64);
            for last in [false, true] {
                out.bulk(if last { b"last-entry" } else { b"first-entry" });
                let mut done = false;
                s.range(StreamId::MIN, StreamId::MAX, last, |e| {
                    reply_entry(out, &e);
                    done = true;
                    false
                });
                if !done {
                    out.null();
                }
            }
            return Ok(());
        }
        let limit = if count == 0 {
            usize::MAX
        } else {
            count as usize
        };
        out.bulk(b"entries");
        let mut tmp = scratch(out);
        let mut n = 0;
        s.range(StreamId::MIN, StreamId::MAX, false, |e| {
            reply_entry(&mut tmp, &e);
            n += 1;
            n < limit
        });
        out.array(n);
        out.raw(&tmp.buf);
        out.bulk(b"groups");
        out.array(s.groups.len());
        for (name, g) in &s.groups {
            out.map(7);
            out.bulk(b"name");
            out.bulk(name);
            out.bulk(b"last-delivered-id");
            reply_id(out, g.last_id);
            out.bulk(b"entries-read");
            reply_entries_read(out, g);
            out.bulk(b"lag");
            reply_lag(out, s, g);
            out.bulk(b"pel-count");
            out.int(g.pel.len() as i64);
            out.bulk(b"pending");
            let pn = g.pel.len().min(limit);
            out.array(pn);
            for (id, nk) in g.pel.iter().take(pn) {
                out.array(4);
                reply_id(out, id);
                out.bulk(&nk.consumer);
                out.int(nk.delivery_time);
                out.int(nk.delivery_count as i64);
            }
            out.bulk(b"consumers");
            out.array(g.consumers.len());
            for (cname, c) in &g.consumers {
                out.map(4);
                out.bulk(b"name");
                out.bulk(cname);
                out.bulk(b"seen-time");
                out.int(c.seen_time);
                out.bulk(b"pel-count");
                out.int(c.pel.len() as i64);
                out.bulk(b"pending");
                let cn = c.pel.len().min(limit);
                out.array(cn);
                for id in c.pel.range(.., &g.pel, cname).take(cn) {
                    let nk = &g.pel[&id];
                    out.array(3);
                    reply_id(out, id);
                    out.int(nk.delivery_time);
                    out.int(nk.delivery_count as i64);
                }
            }
        }
        Ok(())
    })
}

fn xinfo_groups(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[2];
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        let s = xinfo_lookup(db, key)?;
        out.array(s.groups.len());
        for (name, g) in &s.groups {
            out.map(6);
            out.bulk(b"name");
            out.bulk(name);
            out.bulk(b"consumers");
            out.int(g.consumers.len() as i64);
            out.bulk(b"pending");
            out.int(g.pel.len() as i64);
            out.bulk(b"last-delivered-id");
            reply_id(out, g.last_id);
            out.bulk(b"entries-read");
            reply_entries_read(out, g);
            out.bulk(b"lag");
            reply_lag(out, s, g);
        }
        Ok(())
    })
}

fn xinfo_consumers(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[2];
    let group = args[3];
    let now = ctx.now_ms;
    let (ka, out) = ctx.split();
    ka.with_key(key, |db| {
        let s = xinfo_lookup(db, key)?;
        let Some(g) = s.groups.get(group) else {
            return Err(nogroup_named(key, group));
        };
        out.array(g.consumers.len());
        for (name, c) in &g.consumers {
            out.map(3);
            out.bulk(b"name");
            out.bulk(name);
            out.bulk(b"pending");
            out.int(c.pel.len() as i64);
            out.bulk(b"idle");
            out.int((now - c.seen_time).max(0));
        }
        Ok(())
    })
}

fn xinfo_help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    help_lines(
        ctx,
        "XINFO",
        &[
            "CONSUMERS <key> <groupname>",
            "    Show consumers of <groupname>.",
            "GROUPS <key>",
            "    Show the stream consumer groups.",
            "STREAM <key> [FULL [COUNT <count>]",
            "    Show information about the stream.",
        ],
    )
}

// ---- XSETID -------------------------------------------------------------------------------

fn xsetid(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let id = strict_id(args[2])?;
    let mut entries_added: i64 = -1;
    let mut max_del = StreamId::MIN;
    let mut i = 3;
    while i < args.len() {
        let more = args.len() - 1 - i;
        if eq_ic(args[i], "entriesadded") && more > 0 {
            entries_added = int(args[i + 1])?;
            if entries_added < 0 {
                return Err(CmdError::msg("ERR entries_added must be positive"));
            }
            i += 2;
        } else if eq_ic(args[i], "maxdeletedid") && more > 0 {
            max_del = strict_id(args[i + 1])?;
            if id < max_del {
                return Err(CmdError::msg("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id"));
            }
            i += 2;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    ctx.with_key(key, |db| -> CmdResult {
        let s = as_stream(db.get_write(key))?.ok_or(CmdError::NoSuchKey)?;
        if !s.is_empty() {
            if id < s.last_valid_id() {
                return Err(CmdError::msg(
                    "ERR The ID specified in XSETID is smaller than the target stream top item",
                ));
            }
            if entries_added != -1 && s.len() > entries_added as u64 {
                return Err(CmdError::msg("ERR The entries_added specified in XSETID is smaller than the target stream length"));
            }
        }
        s.last_id = id;
        if entries_added != -1 {
            s.entries_added = entries_added as u64;
        }
        if !max_del.is_zero() {
            s.max_deleted_id = max_del;
        }
        db.note_change();
        db.notify(Class::STREAM, "xsetid", key);
        Ok(())
    })?;
    ctx.out.ok();
    Ok(())
}

/// XREAD/XREADGROUP keys: the first half of what follows the STREAMS
/// option (Redis's xreadGetKeys, which skips the other options first).
fn xread_keys(args: &[&[u8]]) -> Result<Vec<usize>, super::meta::InvalidKeyArgs> {
    let mut streams = None;
    let mut i = 1;
    while i < args.len() {
        let a = args[i];
        if eq_ic(a, "block") || eq_ic(a, "count") {
            i += 1;
        } else if eq_ic(a, "group") {
            i += 2;
        } else if eq_ic(a, "noack") {
        } else if eq_ic(a, "streams") {
            streams = Some(i);
            break;
        } else {
            break;
        }
        i += 1;
    }
    let Some(at) = streams else {
        return Err(super::meta::InvalidKeyArgs);
    };
    let num = args.len() - at - 1;
    if num == 0 || !num.is_multiple_of(2) {
        return Err(super::meta::InvalidKeyArgs);
    }
    Ok((at + 1..at + 1 + num / 2).collect())
}
