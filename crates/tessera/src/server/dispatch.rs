//! From an argument vector to a reply: command lookup, the checks Redis
//! makes before running a command (existence, arity, authentication, memory),
//! the call itself, and its accounting (commandstats, errorstats, slow log,
//! latency monitor, MONITOR).

use std::cell::Cell;
use std::sync::atomic::Ordering::Relaxed;

use tessera_resp::encode::ReplyBuf;

use super::client::{Client, PeerAddr, ReplyMode};
use super::state::{unix_ms, ServerState, SlowlogEntry};
use crate::commands::{self, flags, CmdError, CommandSpec, Ctx, Propagation};
use crate::keyspace::{effects, replica_ttls, Touch};
use crate::scripting::bridge;
use crate::util::error_code;

/// Runs one command and appends its reply to `out`.
#[must_use]
pub fn execute(
    srv: &ServerState,
    client: &mut Client,
    out: &mut ReplyBuf,
    args: &[&[u8]],
) -> Executed {
    // CLIENT LIST's argv-mem: the running command's argument bytes, kept
    // while it is blocked, as Redis keeps a blocked client's argv.
    client
        .info
        .argv_mem
        .store(args.iter().map(|a| a.len()).sum(), Relaxed);
    let executed = execute_command(srv, client, out, args);
    if client.block.is_none() {
        client.info.argv_mem.store(0, Relaxed);
    }
    executed
}

/// Whether [`execute`] ran the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Executed {
    /// It ran, or was refused or queued: its reply (if any) is written.
    Done,
    /// Nothing happened yet: the command should first let other clients'
    /// commands in flight run ([`CommandSpec::waits_for_others`]). The
    /// caller waits a moment without holding its thread, then executes it
    /// again, with `Client::done_waiting` set once it has waited enough.
    WaitForOthers,
}

/// [`execute`] for callers that cannot wait (a client served from a busy
/// script's hook): a command that would wait runs at once.
pub fn execute_now(srv: &ServerState, client: &mut Client, out: &mut ReplyBuf, args: &[&[u8]]) {
    if execute(srv, client, out, args) == Executed::WaitForOthers {
        client.done_waiting = true;
        let _ = execute(srv, client, out, args);
        client.done_waiting = false;
        client.others_seen.clear();
    }
}

fn execute_command(
    srv: &ServerState,
    client: &mut Client,
    out: &mut ReplyBuf,
    args: &[&[u8]],
) -> Executed {
    if args.is_empty() {
        return Executed::Done;
    }
    srv.stall.wait_out();
    let now_ms = unix_ms();
    client.info.last_interaction_ms.store(now_ms, Relaxed);

    let mark = out.buf.len();
    if client.reply_mode == ReplyMode::SkipNext {
        client.reply_mode = ReplyMode::Skipping;
    }

    let resolved = resolve(args, Caller::Client);
    let Resolved {
        id,
        spec: cmd,
        container,
    } = match resolved {
        Ok(found) => found,
        Err((known, e)) => {
            // Redis counts a known command rejected for its arity.
            let runs_queued = known.is_some_and(|id| {
                client.worker.commands[id].rejected.add(1);
                commands::by_id(id).is_some_and(|(_, c)| c.has(flags::RUNS_QUEUED))
            });
            reject(srv, client, out, &e, runs_queued);
            finish_reply_mode(client, out, mark);
            return Executed::Done;
        }
    };
    client.info.last_cmd.store(id, Relaxed);

    let admitted = if client.must_obey() {
        Ok(())
    } else {
        admit(srv, client, id, cmd, args, Caller::Client, out.resp3())
    };
    // What eviction before the command queued (its keys' invalidations and
    // notifications) goes out before the reply, as Redis evicts before it
    // executes the command, and through CLIENT REPLY OFF, as pushes do.
    let mark = if super::parked::pumping() {
        mark
    } else {
        deliver_events(srv, client, out, mark);
        out.buf.len()
    };
    if let Err(e) = admitted {
        client.worker.commands[id].rejected.add(1);
        reject(srv, client, out, &e, cmd.has(flags::RUNS_QUEUED));
        finish_reply_mode(client, out, mark);
        return Executed::Done;
    }

    if client.multi.active && !cmd.has(flags::NOT_QUEUED) {
        commands::multi::queue(srv, client, out, args);
        finish_reply_mode(client, out, mark);
        return Executed::Done;
    }
    if let Some(others_busy) = cmd.waits_for_others {
        if !client.done_waiting && others_busy(srv, client, args) {
            return Executed::WaitForOthers;
        }
    }

    // CLIENT CACHING applies to the one command after it. (MULTI passes it
    // on to the transaction, and CLIENT subcommands leave it, as in Redis.)
    let caching_cmd = container.unwrap_or(cmd).has(flags::KEEPS_CACHING);
    client.tracking.caching_armed = client.tracking.caching.is_some() && !caching_cmd;
    // Semi-synchronous replies wait only for commands that changed data
    // (not a PUBLISH, not an admin command in a transaction).
    let semi_sync = srv.config.repl_semi_sync_replicas() > 0;
    let dirty_before = if semi_sync {
        crate::keyspace::effects::dirty()
    } else {
        0
    };
    // A writable replica remembers the TTLs its own clients set: it
    // expires those keys itself (the master never heard of them).
    let remembering_ttls =
        srv.repl.is_replica() && !srv.config.replica_read_only() && !client.from_master;
    let was_remembering = remembering_ttls.then(|| replica_ttls::remember(true));
    call(srv, client, out, id, cmd, args, now_ms);
    if let Some(was) = was_remembering {
        replica_ttls::remember(was);
        srv.keyspace.replica_ttls.add_noted();
    }
    if !caching_cmd {
        client.tracking.caching = None;
        client.tracking.caching_armed = false;
    }
    // CLIENT REPLY OFF/SKIP drop the command's reply, but not what Redis
    // sends as pushes: subscription confirmations (RESP2 included), and the
    // messages and invalidations this client gets from its own command,
    // delivered below, after the reply is dropped.
    if cmd.has(flags::SUBSCRIPTION) {
        keep_pushes_through_reply_mode(client);
    } else {
        finish_reply_mode(client, out, mark);
    }
    // Events and ready keys queued on this thread while a busy script runs
    // here are the script's, to be delivered when it ends.
    if !super::parked::pumping() {
        if client.replaying {
            // Replayed from the AOF: already there, not propagated again.
            srv.journal.discard_pending();
        } else {
            let unit = srv
                .journal
                .publish_pending(!cmd.has(flags::TOUCHES_ARBITRARY_KEYS));
            client.awaits_durable = client.awaits_durable.max(unit);
            if semi_sync && unit > 0 && crate::keyspace::effects::dirty() != dirty_before {
                client.semi_sync_unit = client.semi_sync_unit.max(unit);
            }
        }
        deliver_events(srv, client, out, mark);
        signal_ready_keys(srv, Some(client));
    }
    if !client.tracking.reads.is_empty() {
        // (A huge MGET's list is not kept for the connection's lifetime.)
        if client.tracking.reads.capacity() > 1024 {
            client.tracking.reads = Vec::new();
        } else {
            client.tracking.reads.clear();
        }
    }
    Executed::Done
}

/// A pushing command still uses up a CLIENT REPLY SKIP.
fn keep_pushes_through_reply_mode(client: &mut Client) {
    if client.reply_mode == ReplyMode::Skipping {
        client.reply_mode = ReplyMode::On;
    }
}

/// Who asks for a command. Redis checks a client's command
/// (`processCommand`) and a script's `redis.call` (`scriptCall`) with
/// different checks, in different orders and words; here both are one
/// pipeline, [`admit`], with the caller as its parameter.
#[derive(Clone, Copy, Debug)]
pub enum Caller {
    Client,
    Script(ScriptRules),
}

/// What a script's `redis.call` is checked against.
#[derive(Clone, Copy, Debug)]
pub struct ScriptRules {
    /// EVAL_RO and friends, or a `no-writes` shebang.
    pub read_only: bool,
    /// An `allow-oom` shebang.
    pub allow_oom: bool,
    /// Memory was over maxmemory when the script started.
    pub oom_at_start: bool,
}

/// One of the checks a command passes before it runs (or is queued).
#[derive(Clone, Copy, Debug)]
enum Check {
    /// DEBUG and the like, by `enable-debug-command`.
    Protected,
    /// NOAUTH before AUTH when a password is set.
    Auth,
    /// NO_MULTI commands inside MULTI.
    NoMulti,
    /// The user's permissions: command, keys, channels (NOPERM).
    Acl,
    /// NOSCRIPT commands from a script.
    NoScript,
    /// Writes from a read-only script.
    ScriptWrite,
    /// A script's command that needs fresh data on a stale replica (one
    /// whose script declared allow-stale, or it would not have started).
    ScriptStale,
    /// maxmemory-clients: disconnect the clients using the most.
    ClientEviction,
    /// maxmemory: evict, then refuse what would grow memory (OOM).
    Memory,
    /// A RESP2 subscriber may only (un)subscribe, PING, QUIT and RESET.
    PubSubContext,
    /// A busy script lets only ALLOW_BUSY commands through (BUSY).
    Busy,
    /// A monitor is a replica to Redis: no keyspace access.
    ReplicaKeyspace,
    /// Writes (and PING) while the last background save failed (MISCONF).
    DiskError,
    /// Only LOADING commands while the dataset loads.
    Loading,
    /// Writes without enough good replicas (min-replicas-to-write).
    NoReplicas,
    /// Writes on a read-only replica.
    ReadOnly,
    /// Commands that need fresh data while a replica's master link is
    /// down and replica-serve-stale-data is off.
    MasterDown,
}

/// A client's command, in `processCommand`'s order. The checks later
/// issues add go where the comments say.
const CLIENT_CHECKS: &[Check] = &[
    Check::Protected,
    Check::Auth,
    Check::NoMulti,
    Check::Acl,
    // The cluster slot check (MOVED/ASK/CROSSSLOT).
    Check::ClientEviction,
    Check::Memory,
    Check::DiskError,
    Check::NoReplicas,
    Check::ReadOnly,
    Check::PubSubContext,
    Check::MasterDown,
    Check::Loading,
    Check::Busy,
    Check::ReplicaKeyspace,
];

/// A script's `redis.call`, in `scriptCall`'s order.
const SCRIPT_CHECKS: &[Check] = &[
    Check::NoScript,
    Check::ScriptStale,
    Check::Acl,
    Check::ScriptWrite,
    Check::ReadOnly,
    Check::DiskError,
    Check::NoReplicas,
    Check::Memory,
    // The cluster slot check.
];

/// Whether Redis lets a resolved command run (or be queued) now: the first
/// refusal, by the caller's checks in the caller's order. Out of memory,
/// a client's command first tries to evict.
#[inline]
pub fn admit(
    srv: &ServerState,
    client: &Client,
    id: usize,
    cmd: &CommandSpec,
    args: &[&[u8]],
    caller: Caller,
    resp3: bool,
) -> Result<(), CmdError> {
    let checks = match caller {
        Caller::Client => CLIENT_CHECKS,
        Caller::Script(_) => SCRIPT_CHECKS,
    };
    let req = Admission {
        id,
        cmd,
        args,
        caller,
        resp3,
        record: true,
        declared: Cell::new(None),
    };
    for &check in checks {
        check_one(srv, client, &req, check)?;
    }
    Ok(())
}

/// What [`check_one`] looks at.
struct Admission<'a> {
    id: usize,
    cmd: &'a CommandSpec,
    args: &'a [&'a [u8]],
    caller: Caller,
    resp3: bool,
    /// Refusals go to the ACL LOG (not when only asking whether a
    /// command would be refused).
    record: bool,
    /// The flags a script or function declares, once looked up.
    declared: Cell<Option<u64>>,
}

impl Admission<'_> {
    /// Whether the command has `flag`, a script-running command by what
    /// its script declares ([`commands::scripting::declared_command_flags`]).
    /// The checks ask only once the server's state makes the flag matter:
    /// the lookup is not free.
    fn has(&self, srv: &ServerState, flag: u64) -> bool {
        if !self.cmd.has(flags::RUNS_SCRIPT) {
            return self.cmd.has(flag);
        }
        let declared = self.declared.get().unwrap_or_else(|| {
            let f = commands::scripting::declared_command_flags(srv, self.cmd, self.args);
            self.declared.set(Some(f));
            f
        });
        declared & flag != 0
    }
}

/// Checks the client's user may run the command, recording a refusal in
/// the ACL LOG under `context` (`toplevel`, `multi`, `lua`).
pub fn acl_check(
    srv: &ServerState,
    client: &Client,
    id: usize,
    cmd: &CommandSpec,
    args: &[&[u8]],
    context: Option<&'static str>,
) -> Result<(), crate::acl::Denied> {
    if client.user.unrestricted() {
        return Ok(());
    }
    let req = crate::acl::Request {
        id,
        spec: cmd,
        args,
        is_subcommand: crate::acl::universe::universe()
            .parent
            .get(id)
            .is_some_and(|p| p.is_some()),
    };
    let denied = client
        .user
        .with_rules(|rules| crate::acl::check(rules, &req));
    if let (Err(d), Some(context)) = (denied, context) {
        let (reason, object) = match d {
            crate::acl::Denied::Command => (
                "command",
                commands::by_id(id)
                    .map_or(cmd.name, |(n, _)| n)
                    .as_bytes()
                    .to_vec(),
            ),
            crate::acl::Denied::Key(i) => ("key", args.get(i).map_or(Vec::new(), |a| a.to_vec())),
            crate::acl::Denied::Channel(i) => {
                ("channel", args.get(i).map_or(Vec::new(), |a| a.to_vec()))
            }
        };
        log_acl_denial(
            srv,
            client,
            reason,
            context,
            object,
            client.user.name.clone(),
        );
    }
    denied
}

/// Adds an entry to the ACL LOG.
pub fn log_acl_denial(
    srv: &ServerState,
    client: &Client,
    reason: &'static str,
    context: &'static str,
    object: Vec<u8>,
    username: Vec<u8>,
) {
    let now = unix_ms();
    let entry = crate::acl::log::Entry {
        count: 1,
        reason,
        context,
        object,
        username,
        created_ms: now,
        client_info: client.info.describe(now),
    };
    let max = usize::try_from(srv.config.acllog_max_len()).unwrap_or(usize::MAX);
    crate::acl::acl().log.lock().add(entry, max);
}

/// Whether a client's command would be refused by a check that has no
/// side effects (all but eviction): CLIENT PAUSE holds only commands that
/// would run.
pub fn refused_before_pause(
    srv: &ServerState,
    client: &Client,
    id: usize,
    cmd: &CommandSpec,
    args: &[&[u8]],
) -> bool {
    let req = Admission {
        id,
        cmd,
        args,
        caller: Caller::Client,
        resp3: client.info.resp.load(Relaxed) == 3,
        record: false,
        declared: Cell::new(None),
    };
    CLIENT_CHECKS
        .iter()
        .filter(|c| !matches!(c, Check::Memory | Check::ClientEviction))
        .any(|&c| check_one(srv, client, &req, c).is_err())
}

#[inline]
fn check_one(
    srv: &ServerState,
    client: &Client,
    req: &Admission,
    check: Check,
) -> Result<(), CmdError> {
    let (id, cmd, caller, resp3) = (req.id, req.cmd, req.caller, req.resp3);
    let refuse = |msg: &'static str| Err(CmdError::msg(msg));
    match check {
        Check::Protected => {
            if cmd.has(flags::PROTECTED)
                && !srv
                    .config
                    .debug_command_allowed(client.info.addr.is_local())
            {
                return Err(CmdError::msg(format!(
                    "ERR {} command not allowed. If the enable-{}-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.",
                    cmd.name.to_ascii_uppercase(),
                    cmd.name
                )));
            }
        }
        Check::Auth => {
            if !client.authenticated
                && !cmd.has(flags::NO_AUTH)
                && crate::acl::acl().login_required()
            {
                return Err(CmdError::NoAuth);
            }
        }
        Check::Acl => {
            let script = matches!(caller, Caller::Script(_));
            let context = req.record.then_some(if script {
                "lua"
            } else if client.multi.active {
                "multi"
            } else {
                "toplevel"
            });
            if let Err(denied) = acl_check(srv, client, id, cmd, req.args, context) {
                return Err(CmdError::msg(acl_refusal(denied, script, id, cmd)));
            }
        }
        Check::ClientEviction => {
            // Evicted itself: the connection is closing, the command does
            // not run (the reply goes nowhere).
            if super::client_evict::before_command(srv, client.id) {
                return refuse("ERR client evicted");
            }
        }
        Check::NoMulti => {
            if client.multi.active && cmd.has(flags::NO_MULTI) {
                return refuse("ERR Command not allowed inside a transaction");
            }
        }
        Check::NoScript => {
            if cmd.has(flags::NOSCRIPT) && !srv.scripts.deny_scripts_disabled.load(Relaxed) {
                return refuse("ERR This Redis command is not allowed from script");
            }
        }
        Check::ScriptStale => {
            if srv.repl.is_replica()
                && !srv.config.replica_serve_stale_data()
                && !srv.repl.link_up()
                && !cmd.has(flags::STALE)
            {
                return refuse("ERR Can not execute the command on a stale replica");
            }
        }
        Check::ScriptWrite => {
            if let Caller::Script(rules) = caller {
                if rules.read_only && cmd.has(flags::WRITE) {
                    return refuse("ERR Write commands are not allowed from read-only scripts.");
                }
            }
        }
        Check::Memory => match caller {
            Caller::Client => {
                // (Eviction would wait for the shards a busy script on this
                // thread holds. A woken blocked command is served as Redis
                // serves it, without the checks made when it first ran.)
                if srv.config.maxmemory() == 0 || super::parked::pumping() || client.rerunning {
                    return Ok(());
                }
                let fits = super::evict::ensure_memory(srv, client);
                // Evictions are the server's own deletions, each in its own
                // place in the stream, not part of the command that caused
                // them.
                srv.journal.publish_pending(false);
                // As Redis: an EXEC whose queue holds a command refused when
                // out of memory is refused too, and nothing but EXEC,
                // DISCARD, QUIT and RESET may be queued then (a queue would
                // grow without bound).
                let refused_when_full = || {
                    req.has(srv, flags::DENYOOM)
                        || (client.multi.active && !cmd.has(flags::LEAVES_MULTI))
                        || (cmd.has(flags::RUNS_QUEUED)
                            && client.multi.active
                            && client.multi.queued_denyoom)
                };
                if !fits && refused_when_full() {
                    return Err(CmdError::Oom);
                }
            }
            Caller::Script(rules) => {
                // As Redis: by the memory state when the script started, and
                // only while it has not written yet (a script that has
                // written must be able to finish).
                if !rules.allow_oom
                    && cmd.has(flags::DENYOOM)
                    && rules.oom_at_start
                    && !srv.scripts.wrote.load(Relaxed)
                {
                    return Err(CmdError::Oom);
                }
            }
        },
        Check::PubSubContext => {
            if client.in_resp2_pubsub_mode(resp3) && !cmd.has(flags::PUBSUB_CONTEXT) {
                return Err(CmdError::msg(format!(
                    "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
                    commands::by_id(id).map_or(cmd.name, |(n, _)| n)
                )));
            }
        }
        Check::Busy => {
            if srv.keyspace.busy.load(Relaxed) && !cmd.has(flags::ALLOW_BUSY) {
                return Err(super::script_host::busy_error(srv));
            }
        }
        Check::DiskError => {
            // (A client's EXEC is refused when its queue holds a write.)
            if let Some(e) = super::persist::writes_denied(srv) {
                let writes = req.has(srv, flags::WRITE)
                    || (matches!(caller, Caller::Client)
                        && (cmd.has(flags::PING_LIKE)
                            || (cmd.has(flags::RUNS_QUEUED) && client.multi.queued_write)));
                if writes {
                    return Err(e);
                }
            }
        }
        Check::Loading => {
            if !cmd.has(flags::LOADING) && srv.persistence.loading() {
                return Err(CmdError::Loading);
            }
            // (While a replica loads aside, reads see the old data; what
            // would change the data set being replaced waits.)
            if cmd.has(flags::NO_ASYNC_LOADING) && srv.persistence.async_loading() {
                return Err(CmdError::Loading);
            }
        }
        Check::NoReplicas => {
            if lacks_good_replicas(srv) && writes_data(srv, client, req) {
                return Err(CmdError::NoReplicas);
            }
        }
        Check::ReadOnly => {
            if read_only_here(srv, client) && writes_data(srv, client, req) {
                return Err(CmdError::ReadOnly);
            }
        }
        Check::MasterDown => {
            let denies_stale = || {
                !req.has(srv, flags::STALE)
                    || (cmd.has(flags::RUNS_QUEUED) && client.multi.queued_denies_stale)
            };
            if srv.repl.is_replica()
                && !srv.config.replica_serve_stale_data()
                && !srv.repl.link_up()
                && denies_stale()
            {
                return refuse(
                    "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
                );
            }
        }
        Check::ReplicaKeyspace => {
            if client.monitoring && cmd.has(flags::READONLY | flags::WRITE | flags::MAY_REPLICATE) {
                return refuse("ERR Replica can't interact with the keyspace");
            }
        }
    }
    Ok(())
}

/// A master with min-replicas-to-write set and fewer good replicas: writes
/// are refused (NOREPLICAS), for a client's command and for a script
/// declared as writing alike.
pub fn lacks_good_replicas(srv: &ServerState) -> bool {
    let min = srv.config.min_replicas_to_write();
    min > 0
        && srv.config.min_replicas_max_lag() > 0
        && !srv.repl.is_replica()
        && (srv.repl.good_replicas() as i64) < min
}

/// A read-only replica, for any client but its master's link (READONLY).
pub fn read_only_here(srv: &ServerState, client: &Client) -> bool {
    srv.repl.is_replica() && srv.config.replica_read_only() && !client.from_master
}

/// A write, or a client's EXEC with a queued write (Redis's
/// `is_write_command`).
fn writes_data(srv: &ServerState, client: &Client, req: &Admission) -> bool {
    req.has(srv, flags::WRITE)
        || (matches!(req.caller, Caller::Client)
            && req.cmd.has(flags::RUNS_QUEUED)
            && client.multi.queued_write)
}

/// The error a command the user may not run gets, from a client or from
/// a script.
fn acl_refusal(denied: crate::acl::Denied, script: bool, id: usize, cmd: &CommandSpec) -> String {
    use crate::acl::Denied;
    match (denied, script) {
        (Denied::Command, false) => format!(
            "NOPERM this user has no permissions to run the '{}' command",
            commands::by_id(id).map_or(cmd.name, |(n, _)| n)
        ),
        (Denied::Key(_), false) => {
            "NOPERM this user has no permissions to access one of the keys used as arguments".into()
        }
        (Denied::Channel(_), false) => {
            "NOPERM this user has no permissions to access one of the channels used as arguments"
                .into()
        }
        (Denied::Command, true) => {
            "ERR The user executing the script can't run this command or subcommand".into()
        }
        (Denied::Key(_), true) => "ERR The user executing the script can't access at least one of the keys mentioned in the command arguments".into(),
        (Denied::Channel(_), true) => {
            "ERR The user executing the script can't publish to the channel mentioned in the command".into()
        }
    }
}

/// Wakes clients blocked on keys the command (or EXEC, or script) filled.
/// The wake-ups a client's command causes are noted in its `fed` batch, and
/// the client waits for them to be served before its next command (see
/// `server::blocking`); a woken client re-running its command adds to the
/// batch it is serving.
fn signal_ready_keys(srv: &ServerState, client: Option<&mut Client>) {
    let ready = crate::keyspace::events::take_ready();
    if ready.is_empty() {
        return;
    }
    // (Without a client, the server's own work fed the keys: nobody waits
    // for the batch.)
    let mut batch = client.as_ref().and_then(|c| c.serving.clone());
    // Gone streams first: a reader woken by a plain signal must already
    // know its stream went away.
    if srv.blocking.blocked_clients() > 0 && ready.iter().any(|r| r.stream_gone) {
        let now = unix_ms();
        for r in ready.iter().filter(|r| r.stream_gone) {
            let is_stream = {
                let shard = srv.keyspace.lock_shard(crate::keyspace::shard_of(&r.key));
                let table = &shard.dbs[r.db];
                table.peek(&r.key).is_some_and(|e| {
                    matches!(e.value, crate::types::Value::Stream(_))
                        && !table.is_expired(&r.key, e, now)
                })
            };
            if !is_stream {
                srv.blocking.signal_stream_gone(r.db, &r.key, &mut batch);
            }
        }
    }
    for r in &ready {
        srv.blocking.signal_in(r.db, &r.key, &mut batch);
    }
    if let (Some(client), Some(batch)) = (client, batch) {
        client.fed = Some(batch);
    }
}

/// Replies to a command refused before running. Inside MULTI the refusal
/// dooms the transaction; a refused EXEC discards it with the reason.
fn reject(srv: &ServerState, client: &mut Client, out: &mut ReplyBuf, e: &CmdError, is_exec: bool) {
    // (Redis words a refused EXEC this way even outside MULTI.)
    if is_exec {
        commands::multi::discard_transaction(srv, client);
        let text = e.to_string();
        let reason = text.strip_prefix("ERR ").unwrap_or(&text);
        let abort = CmdError::msg(format!(
            "EXECABORT Transaction discarded because of: {reason}"
        ));
        reply_error(srv, client, out, &abort);
        client.worker.errors_since_last_look();
        return;
    }
    if client.multi.active {
        client.multi.dirty_queue = true;
    }
    reply_error(srv, client, out, e);
    // (A refusal is the command's end: later failures are not its.)
    client.worker.errors_since_last_look();
}

/// Runs a resolved, admitted command: the handler, then its accounting.
/// EXEC and scripts call this for the commands they run.
pub fn call(
    srv: &ServerState,
    client: &mut Client,
    out: &mut ReplyBuf,
    id: usize,
    cmd: &'static CommandSpec,
    args: &[&[u8]],
    now_ms: i64,
) {
    let touch = if client.no_touch && !cmd.has(flags::ALWAYS_TOUCHES) {
        Touch::None
    } else {
        access_clock(srv, now_ms)
    };
    // A tracking client's read keys are remembered before the read: a write
    // racing with it on another thread then always finds the entry and
    // invalidates (remembering after the read could miss it and leave a
    // stale cached value).
    // As Redis: a read inside a script remembers the keys the script
    // declared (see `scripting::bridge::note_script_read`), and the read-only
    // script commands themselves remember nothing.
    if client.tracking.on && cmd.has(flags::READONLY) && !cmd.has(flags::RUNS_SCRIPT) {
        if bridge::in_script() {
            bridge::note_script_read();
        } else if let Ok(idx) = cmd.key_indices(args) {
            let keys: Vec<&[u8]> = idx.iter().filter_map(|&i| args.get(i).copied()).collect();
            super::tracking::remember_keys(srv, client, &keys);
        }
    }
    // Scripts are shown before the commands they run, as Redis feeds them
    // (they are flagged skip-monitor for the normal feed below).
    if srv.monitor_count.load(Relaxed) > 0 && cmd.has(flags::RUNS_SCRIPT) {
        feed_monitors(srv, client, args);
    }
    // (The TSC, as Redis's monotonic clock reads it: a system clock read
    // costs more than a short command's own work, and this runs twice per
    // command a script calls.)
    let started = quanta::Instant::now();
    // (Read only while something consumes the stream: the hot path
    // otherwise skips it.)
    let dirty_before = effects::enabled().then(effects::dirty);
    let (result, propagation) = {
        let mut ctx = Ctx {
            srv,
            client,
            out,
            now_ms,
            touch,
            propagation: Propagation::Own,
        };
        let _abortable = crate::keyspace::AbortableWaits::new(true);
        let result = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            (cmd.handler)(&mut ctx, args)
        })) {
            Ok(r) => r,
            Err(payload) if payload.is::<crate::keyspace::BusyAbort>() => {
                Err(super::script_host::busy_error(srv))
            }
            Err(payload) => std::panic::resume_unwind(payload),
        };
        (result, ctx.propagation)
    };
    propagate_own(client, cmd, args, dirty_before, propagation);
    let elapsed_ns = started.elapsed().as_nanos() as u64;
    let elapsed_us = elapsed_ns / 1000;
    let stats = &client.worker.commands[id];
    // As Redis 7.0: a command that blocks counts as a call once, when it
    // blocks (not again when a wake-up re-runs it); its time counts when
    // it is served. It counts in total_commands_processed and MONITOR
    // once, when first run.
    let blocked_now = client.block.is_some();
    if !client.rerunning {
        stats.calls.add(1);
    }
    if !blocked_now {
        stats.usec.add(elapsed_us);
        // As Redis: latency-tracking no stops the per-command histograms
        // (LATENCY HISTOGRAM, INFO latencystats) from growing.
        if srv.config.latency_tracking() {
            stats.latency.record(elapsed_ns);
        }
    }
    if !client.rerunning {
        client.worker.commands_processed.add(1);
    }
    // As Redis: a command failed when an error reply was counted since the
    // last command (a script's own commands included) ended, or when it
    // replied with an error counted earlier (one a script's redis.call
    // raised: `errors_since_last_look` does not see it).
    let quiet_failure = matches!(result, Err(CmdError::Counted(_))) || bridge::take_quiet_failure();
    if let Err(e) = result {
        reply_error(srv, client, out, &e);
    }
    if client.worker.errors_since_last_look() || quiet_failure {
        stats.failed.add(1);
    }

    if srv.monitor_count.load(Relaxed) > 0
        && !cmd.has(flags::SKIP_MONITOR | flags::ADMIN)
        && !client.rerunning
    {
        feed_monitors(srv, client, args);
    }
    if !cmd.has(flags::SKIP_SLOWLOG) && !blocked_now {
        record_slow(srv, client, args, id, elapsed_us);
    }
    client.redacted = 0;
    if elapsed_us >= 1000 {
        // Redis files slow O(1)/O(log N) commands under their own event.
        let event = if cmd.has(flags::FAST) {
            "fast-command"
        } else {
            "command"
        };
        srv.record_latency(event, elapsed_us / 1000);
    }
}

/// Records what a command that has run propagates of itself, by its
/// [`Propagation`]: by default its own arguments when it changed data
/// (Redis's rule: `server.dirty` moved during the call).
fn propagate_own(
    client: &Client,
    cmd: &CommandSpec,
    args: &[&[u8]],
    dirty_before: Option<u64>,
    propagation: Propagation,
) {
    // A handler asking for anything else must say so in the table, so
    // the table tells which commands rewrite their propagation.
    debug_assert!(
        matches!(propagation, Propagation::Own) || cmd.has(flags::REWRITES_EFFECTS),
        "{} chose its propagation without the REWRITES_EFFECTS flag",
        cmd.name
    );
    let Some(dirty_before) = dirty_before else {
        return;
    };
    if cmd.has(flags::NO_AUTO_PROPAGATE) {
        return;
    }
    let changed = effects::dirty() != dirty_before;
    let own = || args.iter().map(|a| a.to_vec()).collect::<Vec<_>>();
    match propagation {
        Propagation::Own if changed => effects::push(client.db, own(), effects::target::ALL),
        Propagation::As(argv) if changed => effects::push(client.db, argv, effects::target::ALL),
        Propagation::Forced(targets) => effects::push(client.db, own(), targets),
        _ => {}
    }
}

/// Publishes what the server's own work (active expiry) queued.
pub fn publish_background_events(srv: &ServerState) {
    use crate::keyspace::events;
    srv.journal.publish_pending(false);
    for ev in events::take_events() {
        super::pubsub::publish_keyspace_event(srv, &ev, &mut None);
    }
    let keys = events::take_invalidated();
    if !keys.is_empty() {
        super::tracking::invalidate_from_server(srv, &keys);
    }
    signal_ready_keys(srv, None);
}

/// Publishes the keyspace notifications and sends the invalidations the
/// command queued. Messages for this very client go before its reply, as
/// Redis writes them while the command runs.
pub fn deliver_events(srv: &ServerState, client: &mut Client, out: &mut ReplyBuf, mark: usize) {
    use crate::keyspace::events;
    if !events::pending() {
        return;
    }
    let mut own = ReplyBuf::new(out.protocol);
    // What a script published to its own client, then its notifications.
    own.buf = events::take_own_messages();
    let evs = events::take_events();
    if !evs.is_empty() {
        let mut me = Some((client.id, &mut own));
        for ev in &evs {
            super::pubsub::publish_keyspace_event(srv, ev, &mut me);
        }
    }
    if !own.buf.is_empty() {
        let at = mark.min(out.buf.len());
        out.buf.splice(at..at, own.buf);
    }
    // Invalidations for this client's own cache follow its reply.
    let changed = events::take_invalidated();
    if !changed.is_empty() {
        super::tracking::invalidate_keys(srv, client, out, &changed);
    }
}

/// A command found in the table: its id, its spec, and for a
/// subcommand the container it belongs to.
#[derive(Clone, Copy)]
pub struct Resolved {
    pub id: usize,
    pub spec: &'static CommandSpec,
    pub container: Option<&'static CommandSpec>,
}

/// The error of a failed resolution, with the command's id when the command
/// itself was known (for rejected_calls).
pub(crate) type Unresolved = (Option<usize>, CmdError);

/// Looks up the command (and subcommand) and checks the arity: the first
/// step of every command, worded for its caller.
#[inline(always)]
pub(crate) fn resolve(args: &[&[u8]], caller: Caller) -> Result<Resolved, Unresolved> {
    let script = matches!(caller, Caller::Script(_));
    let unknown = || {
        if script {
            CmdError::msg("ERR Unknown Redis command called from script")
        } else {
            unknown_command(args)
        }
    };
    let wrong_arity = |name: String| {
        if script {
            CmdError::msg("ERR Wrong number of args calling Redis command from script")
        } else {
            CmdError::WrongArity(name)
        }
    };
    let Some((id, cmd)) = args.first().and_then(|name| commands::lookup(name)) else {
        return Err((None, unknown()));
    };
    if cmd.subcommands.is_empty() || args.len() < 2 {
        // A container runs itself without a subcommand only if its arity
        // allows that (plain COMMAND).
        if !cmd.arity_ok(args.len()) {
            return Err((Some(id), wrong_arity(cmd.name.to_string())));
        }
        return Ok(Resolved {
            id,
            spec: cmd,
            container: None,
        });
    }
    match commands::lookup_sub(cmd, args[1]) {
        Some((sid, sub)) => {
            if !sub.arity_ok(args.len()) {
                return Err((Some(sid), wrong_arity(format!("{}|{}", cmd.name, sub.name))));
            }
            Ok(Resolved {
                id: sid,
                spec: sub,
                container: Some(cmd),
            })
        }
        None if script => Err((None, unknown())),
        None => Err((None, commands::unknown_subcommand(cmd.name, args[1]))),
    }
}

/// Redis's "unknown command" text: the name and up to ~128 bytes of args,
/// as the client sent them (Redis's `%s`: no escaping).
fn unknown_command(args: &[&[u8]]) -> CmdError {
    use crate::commands::args::c_bytes_prefix;
    let mut rest = Vec::new();
    for a in &args[1..] {
        if rest.len() >= 128 {
            break;
        }
        let room = 128 - rest.len();
        rest.push(b'\'');
        rest.extend_from_slice(c_bytes_prefix(a, room));
        rest.extend_from_slice(b"' ");
    }
    CmdError::bytes(&[
        b"ERR unknown command '",
        c_bytes_prefix(args[0], 128),
        b"', with args beginning with: ",
        &rest,
    ])
}

fn reply_error(_srv: &ServerState, client: &Client, out: &mut ReplyBuf, e: &CmdError) {
    let text = e.text();
    if !matches!(e, CmdError::Counted(_)) {
        client
            .worker
            .count_error(error_code(&String::from_utf8_lossy(&text)));
    }
    out.error(&text);
}

fn finish_reply_mode(client: &mut Client, out: &mut ReplyBuf, mark: usize) {
    match client.reply_mode {
        ReplyMode::On => {}
        ReplyMode::Off => out.buf.truncate(mark),
        ReplyMode::Skipping => {
            out.buf.truncate(mark);
            client.reply_mode = ReplyMode::On;
        }
        // CLIENT REPLY SKIP itself sets SkipNext and keeps its own (empty)
        // reply; the next command is the one skipped.
        ReplyMode::SkipNext => out.buf.truncate(mark),
    }
}

/// The LRU/LFU clock value for accesses made at `now_ms`.
pub fn access_clock(srv: &ServerState, now_ms: i64) -> Touch {
    use crate::config::MaxmemoryPolicy as P;
    match srv.config.maxmemory_policy() {
        P::AllkeysLfu | P::VolatileLfu => Touch::Lfu {
            minutes: (now_ms / 60_000) as u32,
            log_factor: srv.config.lfu_log_factor(),
            decay_minutes: srv.config.lfu_decay_time(),
        },
        _ => Touch::Lru((now_ms / 1000) as u32),
    }
}

fn record_slow(srv: &ServerState, client: &Client, args: &[&[u8]], id: usize, elapsed_us: u64) {
    let threshold = srv.config.slowlog_log_slower_than();
    if threshold < 0 || (elapsed_us as i64) < threshold {
        return;
    }
    let max_len = srv.config.slowlog_max_len() as usize;
    let mut log = srv.slowlog.lock();
    let entry_id = log.next_id;
    log.next_id += 1;
    // Redis keeps at most 32 arguments and 128 bytes of each.
    let mut kept: Vec<Vec<u8>> = Vec::new();
    for (i, a) in args.iter().enumerate() {
        if is_redacted(client, i) {
            kept.push(b"(redacted)".to_vec());
            continue;
        }
        if i == 31 && args.len() > 32 {
            kept.push(format!("... ({} more arguments)", args.len() - 31).into_bytes());
            break;
        }
        if a.len() > 128 {
            let mut v = a[..128].to_vec();
            v.extend_from_slice(format!("... ({} more bytes)", a.len() - 128).as_bytes());
            kept.push(v);
        } else {
            kept.push(a.to_vec());
        }
    }
    let name = client
        .info
        .name
        .lock()
        .as_ref()
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .unwrap_or_default();
    let _ = id;
    log.entries.push_front(SlowlogEntry {
        id: entry_id,
        time_s: unix_ms() / 1000,
        duration_us: elapsed_us,
        args: kept,
        peer: client.info.addr.to_string(),
        name,
    });
    while log.entries.len() > max_len {
        log.entries.pop_back();
    }
}

/// Whether argument `i` must not be shown (AUTH passwords and the like).
fn is_redacted(client: &Client, i: usize) -> bool {
    i < 64 && client.redacted & (1u64 << i) != 0
}

/// One MONITOR line, fed after the command ran (so SELECT shows the new
/// database, as in Redis), with redacted arguments hidden.
fn feed_monitors(srv: &ServerState, client: &Client, args: &[&[u8]]) {
    use std::io::Write;
    let us = super::state::unix_us();
    let mut line = Vec::with_capacity(64);
    let _ = write!(
        line,
        "+{}.{:06} [{} ",
        us / 1_000_000,
        us % 1_000_000,
        client.db
    );
    // Commands a script runs show "lua" instead of an address, as in Redis.
    if bridge::in_script() {
        line.extend_from_slice(b"lua]");
    } else {
        match &client.info.addr {
            // (Redis names the socket, not the client's `path:0`.)
            PeerAddr::Unix(path) => {
                let _ = write!(line, "unix:{path}]");
            }
            tcp => {
                let _ = write!(line, "{tcp}]");
            }
        }
    }
    for (i, a) in args.iter().enumerate() {
        let a: &[u8] = if is_redacted(client, i) {
            b"(redacted)"
        } else {
            a
        };
        line.extend_from_slice(b" \"");
        for &c in a.iter() {
            match c {
                b'\\' => line.extend_from_slice(b"\\\\"),
                b'"' => line.extend_from_slice(b"\\\""),
                b'\n' => line.extend_from_slice(b"\\n"),
                b'\r' => line.extend_from_slice(b"\\r"),
                b'\t' => line.extend_from_slice(b"\\t"),
                7 => line.extend_from_slice(b"\\a"),
                8 => line.extend_from_slice(b"\\b"),
                0x20..=0x7e => line.push(c),
                _ => line.extend_from_slice(format!("\\x{:02x}", c).as_bytes()),
            }
        }
        line.push(b'"');
    }
    line.extend_from_slice(b"\r\n");
    let limit = srv
        .config
        .client_output_buffer_limit(crate::config::ClientClass::Replica)
        .hard_bytes as usize;
    let mut mons = srv.monitors.lock();
    mons.retain(|m| {
        if m.info.killed.load(Relaxed) {
            return false;
        }
        // A client closing after this reply (QUIT) gets nothing more.
        if m.id == client.id && client.close_after_reply {
            return true;
        }
        let size = {
            let mut outbox = m.info.outbox.lock();
            if limit > 0 && outbox.len() + line.len() > limit {
                drop(outbox);
                // A monitor that does not read is disconnected rather than
                // allowed to grow without bound, as Redis does.
                m.info.kill();
                return false;
            }
            outbox.extend_from_slice(&line);
            outbox.len()
        };
        m.info.omem.store(size, Relaxed);
        m.info.wake.notify_one();
        true
    });
    srv.monitor_count.store(mons.len(), Relaxed);
}
