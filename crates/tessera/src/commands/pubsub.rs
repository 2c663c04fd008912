//! Pub/sub: SUBSCRIBE and friends, PUBLISH, SPUBLISH, PUBSUB. The registry
//! and cross-thread delivery live in [`crate::server::pubsub`].

use std::sync::atomic::Ordering::Relaxed;

use super::flags::*;
use super::meta::{arg as a, ks, ksflags::*};
use super::{ChannelArgs, CmdError, CmdResult, CommandSpec, Ctx, Handler};
use crate::server::client::Client;
use crate::server::pubsub::{Kind, PubSub};
use crate::server::state::ServerState;
use tessera_resp::encode::ReplyBuf;

/// A pub/sub command: group `pubsub`.
const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u64,
    since: &'static str,
    summary: &'static str,
    handler: Handler,
) -> CommandSpec {
    CommandSpec::new(name, arity, flags, "pubsub", since, summary, handler)
}

/// Shard channels are declared as (not-key) key specs; COMMAND GETKEYS
/// reports no keys for them, as Redis does.
fn no_keys(_args: &[&[u8]]) -> Result<Vec<usize>, super::meta::InvalidKeyArgs> {
    Ok(Vec::new())
}

pub static COMMANDS: &[CommandSpec] = &[
    cmd("subscribe", -2, PUBSUB | NOSCRIPT | LOADING | STALE | SUBSCRIPTION | PUBSUB_CONTEXT, "2.0.0", "Listens for messages published to channels.", subscribe)
        .complexity("O(N) where N is the number of channels to subscribe to.")
        .args(&[a::string("channel").multiple()])
        .channels(ChannelArgs::Subscribe),
    cmd("unsubscribe", -1, PUBSUB | NOSCRIPT | LOADING | STALE | SUBSCRIPTION | PUBSUB_CONTEXT, "2.0.0", "Stops listening to messages posted to channels.", unsubscribe)
        .complexity("O(N) where N is the number of clients already subscribed to a channel.")
        .args(&[a::string("channel").optional().multiple()]),
    cmd("psubscribe", -2, PUBSUB | NOSCRIPT | LOADING | STALE | SUBSCRIPTION | PUBSUB_CONTEXT, "2.0.0", "Listens for messages published to channels that match one or more patterns.", psubscribe)
        .complexity("O(N) where N is the number of patterns the client is already subscribed to.")
        .args(&[a::block("pattern", &[a::pattern("pattern")]).multiple()])
        .channels(ChannelArgs::PatternSubscribe),
    cmd("punsubscribe", -1, PUBSUB | NOSCRIPT | LOADING | STALE | SUBSCRIPTION | PUBSUB_CONTEXT, "2.0.0", "Stops listening to messages published to channels that match one or more patterns.", punsubscribe)
        .complexity(
            "O(N+M) where N is the number of patterns the client is already subscribed and M is the number of total patterns subscribed in the system (by any client).",
        )
        .args(&[a::pattern("pattern").optional().multiple()]),
    cmd("publish", 3, PUBSUB | LOADING | STALE | FAST | MAY_REPLICATE | REWRITES_EFFECTS, "2.0.0", "Posts a message to a channel.", publish)
        .complexity(
            "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client).",
        )
        .args(&[a::string("channel"), a::string("message")])
        .channels(ChannelArgs::Publish)
        .waits_for_others(receivers_busy),
    cmd("ssubscribe", -2, PUBSUB | NOSCRIPT | LOADING | STALE | SUBSCRIPTION | PUBSUB_CONTEXT, "7.0.0", "Listens for messages published to shard channels.", ssubscribe)
        .complexity("O(N) where N is the number of shard channels to subscribe to.")
        .key_specs(&[ks(NOT_KEY, 1, -1, 1)])
        .getkeys(no_keys)
        .args(&[a::string("shardchannel").multiple()])
        .channels(ChannelArgs::Subscribe),
    cmd("sunsubscribe", -1, PUBSUB | NOSCRIPT | LOADING | STALE | SUBSCRIPTION | PUBSUB_CONTEXT, "7.0.0", "Stops listening to messages posted to shard channels.", sunsubscribe)
        .complexity("O(N) where N is the number of clients already subscribed to a shard channel.")
        .key_specs(&[ks(NOT_KEY, 1, -1, 1)])
        .getkeys(no_keys)
        .args(&[a::string("shardchannel").optional().multiple()]),
    cmd("spublish", 3, PUBSUB | LOADING | STALE | FAST | MAY_REPLICATE | REWRITES_EFFECTS, "7.0.0", "Post a message to a shard channel", spublish)
        .complexity(
            "O(N) where N is the number of clients subscribed to the receiving shard channel.",
        )
        .key_specs(&[ks(NOT_KEY, 1, 0, 1)])
        .getkeys(no_keys)
        .args(&[a::string("shardchannel"), a::string("message")])
        .channels(ChannelArgs::Publish)
        .waits_for_others(shard_receivers_busy),
    cmd("pubsub", -2, 0, "2.8.0", "A container for Pub/Sub commands.", super::generic::container)
        .complexity("Depends on subcommand.")
        .subcommands(PUBSUB_SUBS),
];

static PUBSUB_SUBS: &[CommandSpec] = &[
    cmd("channels", -2, PUBSUB | LOADING | STALE, "2.8.0", "Returns the active channels.", pubsub_channels)
        .complexity(
            "O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)",
        )
        .args(&[a::pattern("pattern").optional()]),
    cmd("numsub", -2, PUBSUB | LOADING | STALE, "2.8.0", "Returns a count of subscribers to channels.", pubsub_numsub)
        .complexity("O(N) for the NUMSUB subcommand, where N is the number of requested channels")
        .args(&[a::string("channel").optional().multiple()]),
    cmd("numpat", 2, PUBSUB | LOADING | STALE, "2.8.0", "Returns a count of unique pattern subscriptions.", pubsub_numpat),
    cmd("shardchannels", -2, PUBSUB | LOADING | STALE, "7.0.0", "Returns the active shard channels.", pubsub_shardchannels)
        .complexity(
            "O(N) where N is the number of active shard channels, and assuming constant time pattern matching (relatively short shard channels).",
        )
        .args(&[a::pattern("pattern").optional()]),
    cmd("shardnumsub", -2, PUBSUB | LOADING | STALE, "7.0.0", "Returns the count of subscribers of shard channels.", pubsub_shardnumsub)
        .complexity(
            "O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels",
        )
        .args(&[a::string("shardchannel").optional().multiple()]),
    cmd("help", 2, LOADING | STALE, "6.2.0", "Returns helpful text about the different subcommands.", pubsub_help),
];

fn kind_index(kind: Kind) -> usize {
    match kind {
        Kind::Channel => 0,
        Kind::Pattern => 1,
        Kind::Shard => 2,
    }
}

fn set_of<'c>(ctx: &'c mut Ctx, kind: Kind) -> &'c mut std::collections::HashSet<Vec<u8>> {
    let subs = &mut ctx.client.subs;
    match kind {
        Kind::Channel => &mut subs.channels,
        Kind::Pattern => &mut subs.patterns,
        Kind::Shard => &mut subs.shard_channels,
    }
}

/// The count a (un)subscribe confirmation carries: channels plus patterns,
/// or shard channels alone for the sharded variants.
fn reply_count(ctx: &Ctx, kind: Kind) -> usize {
    match kind {
        Kind::Shard => ctx.client.subs.shard_channels.len(),
        _ => ctx.client.subs.count(),
    }
}

fn confirm(ctx: &mut Ctx, what: &[u8], name: Option<&[u8]>, kind: Kind) {
    let n = reply_count(ctx, kind);
    ctx.out.push(3);
    ctx.out.bulk(what);
    match name {
        Some(c) => ctx.out.bulk(c),
        None => ctx.out.null(),
    }
    ctx.out.int(n as i64);
}

fn publish_counts(ctx: &Ctx) {
    let s = &ctx.client.subs;
    let info = &ctx.client.info;
    info.sub_counts[0].store(s.channels.len(), Relaxed);
    info.sub_counts[1].store(s.patterns.len(), Relaxed);
    info.sub_counts[2].store(s.shard_channels.len(), Relaxed);
}

fn do_subscribe(ctx: &mut Ctx, args: &[&[u8]], kind: Kind, what: &[u8]) -> CmdResult {
    for name in &args[1..] {
        if set_of(ctx, kind).insert(name.to_vec()) {
            ctx.srv.pubsub.subscribe(kind, name, &ctx.client.info);
        }
        confirm(ctx, what, Some(name), kind);
    }
    publish_counts(ctx);
    Ok(())
}

fn do_unsubscribe(ctx: &mut Ctx, args: &[&[u8]], kind: Kind, what: &[u8]) -> CmdResult {
    let names: Vec<Vec<u8>> = if args.len() > 1 {
        args[1..].iter().map(|a| a.to_vec()).collect()
    } else {
        set_of(ctx, kind).iter().cloned().collect()
    };
    if names.is_empty() {
        confirm(ctx, what, None, kind);
    }
    let id = ctx.client.id;
    for name in names {
        if set_of(ctx, kind).remove(&name) {
            ctx.srv.pubsub.unsubscribe(kind, &name, id);
        }
        confirm(ctx, what, Some(&name), kind);
    }
    publish_counts(ctx);
    Ok(())
}

fn subscribe(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    refuse_from_script(b"SUBSCRIBE")?;
    do_subscribe(ctx, args, Kind::Channel, b"subscribe")
}

fn psubscribe(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    refuse_from_script(b"PSUBSCRIBE")?;
    do_subscribe(ctx, args, Kind::Pattern, b"psubscribe")
}

/// A script (which reaches these only with DEBUG SET-DISABLE-DENY-SCRIPTS)
/// may not make its caller a subscriber; a transaction may, for old
/// clients, as in Redis.
fn refuse_from_script(name: &[u8]) -> Result<(), CmdError> {
    if crate::scripting::bridge::in_script() {
        return Err(CmdError::bytes(&[
            b"ERR ",
            name,
            b" isn't allowed for a DENY BLOCKING client",
        ]));
    }
    Ok(())
}

fn ssubscribe(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    // As Redis: a transaction may not turn its client into a subscriber
    // this way (SUBSCRIBE and PSUBSCRIBE are let through for old clients).
    if ctx.client.multi.in_exec {
        return Err(CmdError::msg(
            "ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client",
        ));
    }
    do_subscribe(ctx, args, Kind::Shard, b"ssubscribe")
}

fn unsubscribe(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    do_unsubscribe(ctx, args, Kind::Channel, b"unsubscribe")
}

fn punsubscribe(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    do_unsubscribe(ctx, args, Kind::Pattern, b"punsubscribe")
}

fn sunsubscribe(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    do_unsubscribe(ctx, args, Kind::Shard, b"sunsubscribe")
}

/// Drops every subscription of a client (RESET, disconnect).
pub fn unsubscribe_all(
    srv: &crate::server::state::ServerState,
    client: &mut crate::server::client::Client,
) {
    let id = client.id;
    for (kind, set) in [
        (Kind::Channel, std::mem::take(&mut client.subs.channels)),
        (Kind::Pattern, std::mem::take(&mut client.subs.patterns)),
        (Kind::Shard, std::mem::take(&mut client.subs.shard_channels)),
    ] {
        for name in set {
            srv.pubsub.unsubscribe(kind, &name, id);
        }
        client.info.sub_counts[kind_index(kind)].store(0, Relaxed);
    }
}

/// A receiver of the PUBLISH may have an UNSUBSCRIBE (or another command)
/// in flight, sent before the PUBLISH was.
fn receivers_busy(srv: &ServerState, client: &mut Client, args: &[&[u8]]) -> bool {
    srv.pubsub
        .receivers_may_have_input(false, args[1], client.id, &mut client.others_seen)
}

fn shard_receivers_busy(srv: &ServerState, client: &mut Client, args: &[&[u8]]) -> bool {
    srv.pubsub
        .receivers_may_have_input(true, args[1], client.id, &mut client.others_seen)
}

fn publish(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    publish_as(ctx, args, PubSub::publish)
}

fn spublish(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    publish_as(ctx, args, PubSub::publish_shard)
}

type Publisher = fn(&PubSub, &ServerState, &[u8], &[u8], Option<(u64, &mut ReplyBuf)>) -> usize;

/// Publishes; a message for the publishing client itself goes into its
/// reply buffer, before the reply. From a script the reply buffer is the
/// script's: the message is kept for the client (in its own protocol) and
/// goes out before the script's reply, as Redis writes it while the
/// script runs.
fn publish_as(ctx: &mut Ctx, args: &[&[u8]], publisher: Publisher) -> CmdResult {
    // As Redis (not in cluster mode): replicas get every message, the AOF
    // none.
    ctx.force_propagate(crate::keyspace::effects::target::REPL);
    let id = ctx.client.id;
    let n = if crate::scripting::bridge::in_script() {
        let mut own = ReplyBuf::new(crate::scripting::bridge::caller_protocol());
        let n = publisher(
            &ctx.srv.pubsub,
            ctx.srv,
            args[1],
            args[2],
            Some((id, &mut own)),
        );
        if !own.buf.is_empty() {
            crate::keyspace::events::own_messages(&own.buf);
        }
        n
    } else {
        publisher(
            &ctx.srv.pubsub,
            ctx.srv,
            args[1],
            args[2],
            Some((id, &mut *ctx.out)),
        )
    };
    ctx.out.int(n as i64);
    Ok(())
}

fn list_channels(ctx: &mut Ctx, args: &[&[u8]], kind: Kind) -> CmdResult {
    let names = ctx.srv.pubsub.active(kind, args.get(2).copied());
    ctx.out.array(names.len());
    for n in &names {
        ctx.out.bulk(n);
    }
    Ok(())
}

fn count_subscribers(ctx: &mut Ctx, args: &[&[u8]], kind: Kind) -> CmdResult {
    let names = &args[2..];
    // A flat array even in RESP3, as Redis replies.
    ctx.out.array(names.len() * 2);
    for n in names {
        ctx.out.bulk(n);
        ctx.out.int(ctx.srv.pubsub.subscriber_count(kind, n) as i64);
    }
    Ok(())
}

fn pubsub_channels(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() > 3 {
        return Err(super::subcommand_syntax_error(args));
    }
    list_channels(ctx, args, Kind::Channel)
}

fn pubsub_shardchannels(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() > 3 {
        return Err(super::subcommand_syntax_error(args));
    }
    list_channels(ctx, args, Kind::Shard)
}

fn pubsub_numsub(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    count_subscribers(ctx, args, Kind::Channel)
}

fn pubsub_shardnumsub(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    count_subscribers(ctx, args, Kind::Shard)
}

fn pubsub_numpat(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.out.int(ctx.srv.pubsub.pattern_count() as i64);
    Ok(())
}

fn pubsub_help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    const LINES: &[&str] = &[
        "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CHANNELS [<pattern>]",
        "    Return the currently active channels matching a <pattern> (default: '*').",
        "NUMPAT",
        "    Return number of subscriptions to patterns.",
        "NUMSUB [<channel> ...]",
        "    Return the number of subscribers for the specified channels, excluding",
        "    pattern subscriptions(default: no channels).",
        "SHARDCHANNELS [<pattern>]",
        "    Return the currently active shard level channels matching a <pattern> (default: '*').",
        "SHARDNUMSUB [<shardchannel> ...]",
        "    Return the number of subscribers for the specified shard level channel(s)",
        "HELP",
        "    Prints this help.",
    ];
    super::generic::help_lines(ctx, LINES)
}
