//! The execution layer's side of a script run: what EVAL, EVALSHA and
//! FCALL hold while a script runs (the script lock, the declared keys'
//! shards, the client's state), and the [`Host`] that runs each
//! `redis.call` through the one admission pipeline and `call()`.
//! `scripting::bridge` owns the Lua side and calls back into this.

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use smallvec::SmallVec;
use tessera_resp::encode::ReplyBuf;

use super::client::{Client, ReplyMode};
use super::dispatch::{self, Caller, ScriptRules};
use super::state::ServerState;
use crate::commands::{flags, CmdError, CmdResult, Ctx};
use crate::keyspace::{shard_of, AbortableWaits};
use crate::scripting::bridge::{self, Host, RunRequest};
use crate::scripting::{convert, ScriptFlags, Vm};

/// What kind of script is run, and how.
pub struct RunSpec<'a> {
    pub flags: ScriptFlags,
    pub read_only: bool,
    pub is_function: bool,
    /// The script's SHA (or function name) for error texts.
    pub sha: &'a str,
}

/// The error a command gets while a script runs past busy-reply-threshold.
pub fn busy_error(srv: &ServerState) -> CmdError {
    CmdError::Busy {
        function: srv.scripts.running_function.load(Relaxed),
    }
}

/// Serialises scripts (and transactions containing them): the one party
/// allowed to wait for a shard while holding others.
pub fn lock_scripts(srv: &ServerState) -> parking_lot::MutexGuard<'_, ()> {
    srv.script_lock.lock()
}

/// [`lock_scripts`], giving up with BUSY while another script is busy.
fn lock_scripts_or_busy(srv: &ServerState) -> Result<parking_lot::MutexGuard<'_, ()>, CmdError> {
    loop {
        if let Some(g) = srv.script_lock.try_lock_for(Duration::from_millis(5)) {
            return Ok(g);
        }
        if srv.keyspace.busy.load(Relaxed) {
            return Err(busy_error(srv));
        }
    }
}

/// Serves one script's `redis.call`s and its timeout hook.
struct ScriptHost<'s, 'c> {
    srv: &'s ServerState,
    client: &'c mut Client,
    rules: ScriptRules,
    now_ms: i64,
    started: quanta::Instant,
    threshold_ms: u64,
    worker_index: usize,
}

impl Host for ScriptHost<'_, '_> {
    fn call(&mut self, args: &[&[u8]], out: &mut ReplyBuf) -> Result<(), String> {
        let caller = Caller::Script(self.rules);
        let admitted = dispatch::resolve(args, caller).and_then(|found| {
            dispatch::admit(
                self.srv,
                self.client,
                found.id,
                found.spec,
                args,
                caller,
                false,
            )
            .map(|()| (found.id, found.spec))
            .map_err(|e| (Some(found.id), e))
        });
        let (id, spec) = match admitted {
            Ok(target) => target,
            // A command refused from the script: counted at once in
            // errorstats, and as a rejected call of the command when it is
            // known, as Redis counts it.
            Err((id, e)) => {
                let text = e.to_string();
                let worker = &self.client.worker;
                worker.count_error(crate::util::error_code(&text));
                worker.errors_since_last_look();
                if let Some(id) = id {
                    worker.commands[id].rejected.add(1);
                }
                return Err(text);
            }
        };
        if spec.has(flags::WRITE) {
            self.srv.scripts.wrote.store(true, Relaxed);
        }
        dispatch::call(self.srv, self.client, out, id, spec, args, self.now_ms);
        Ok(())
    }

    /// Every existing command (a container's subcommand when one is
    /// given): Tessera's only user is Redis's default user, with every
    /// permission.
    fn may_call(&self, argv: &[&[u8]]) -> Option<bool> {
        let name = argv.first()?;
        let (id, cmd) = crate::commands::lookup(name).and_then(|(id, cmd)| match argv.get(1) {
            Some(sub) if !cmd.subcommands.is_empty() => crate::commands::lookup_sub(cmd, sub),
            _ => Some((id, cmd)),
        })?;
        // (Asking is not a denial: nothing goes to the ACL LOG.)
        Some(dispatch::acl_check(self.srv, self.client, id, cmd, argv, None).is_ok())
    }

    /// Marks the script busy past the threshold, serves this thread's
    /// parked clients while it is, and reports a kill.
    fn tick(&mut self) -> bool {
        let srv = self.srv;
        if self.threshold_ms > 0
            && self.started.elapsed() >= Duration::from_millis(self.threshold_ms)
            && !srv.keyspace.busy.load(Relaxed)
        {
            srv.keyspace.busy.store(true, Relaxed);
            srv.scripts.busy_worker.store(self.worker_index, Relaxed);
        }
        if srv.keyspace.busy.load(Relaxed) {
            // Redis serves other clients during a busy script; those
            // parked on this thread can only be served from here.
            super::parked::pump(srv);
        }
        // (Redis names SCRIPT KILL for functions too.)
        srv.scripts.kill.load(Relaxed)
    }
}

/// The client's state a script changes while it runs (SELECT inside it,
/// replies always on, commands not blocking), put back when dropped.
struct ClientDuringScript {
    db: usize,
    reply_mode: ReplyMode,
    in_exec: bool,
}

impl ClientDuringScript {
    fn enter(client: &mut Client) -> ClientDuringScript {
        let saved = ClientDuringScript {
            db: client.db,
            reply_mode: client.reply_mode,
            in_exec: client.multi.in_exec,
        };
        client.reply_mode = ReplyMode::On;
        client.multi.in_exec = true;
        saved
    }

    fn restore(self, client: &mut Client) {
        client.db = self.db;
        client.info.db.store(self.db, Relaxed);
        client.reply_mode = self.reply_mode;
        client.multi.in_exec = self.in_exec;
    }
}

/// What Redis's scriptPrepareForRun refuses, in its order and words. (A
/// client's command met most of these already, judged by the flags its
/// script declares; these catch a script queued in a transaction before
/// the server's state changed.)
fn refuse_before_run(ctx: &Ctx, spec: &RunSpec, over_maxmemory: bool) -> Result<(), CmdError> {
    let srv = ctx.srv;
    let stale =
        srv.repl.is_replica() && !srv.config.replica_serve_stale_data() && !srv.repl.link_up();
    if !spec.flags.shebang {
        return if stale {
            Err(CmdError::msg(
                "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
            ))
        } else {
            Ok(())
        };
    }
    if stale && !spec.flags.allow_stale {
        return Err(CmdError::msg(
            "MASTERDOWN Link with MASTER is down, replica-serve-stale-data is set to 'no' and 'allow-stale' flag is not set on the script.",
        ));
    }
    let obeys = ctx.client.must_obey();
    if !spec.flags.no_writes {
        if srv.repl.is_replica() && srv.config.replica_read_only() && !obeys {
            return Err(CmdError::msg(
                "READONLY Can not run script with write flag on readonly replica",
            ));
        }
        if let Some(denied) = super::persist::writes_denied(srv).filter(|_| !obeys) {
            return Err(script_misconf(denied));
        }
        if spec.read_only {
            return Err(CmdError::msg(
                "ERR Can not execute a script with write flag using *_ro command.",
            ));
        }
        if super::dispatch::lacks_good_replicas(srv) {
            return Err(CmdError::NoReplicas);
        }
    }
    if over_maxmemory && !spec.flags.allow_oom && !spec.flags.no_writes {
        return Err(CmdError::msg(
            "OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'",
        ));
    }
    Ok(())
}

/// A MISCONF refusal in the words Redis uses for a writing script.
fn script_misconf(denied: CmdError) -> CmdError {
    match denied {
        CmdError::Misconf => CmdError::msg(
            "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Writable scripts are blocked. Use 'no-writes' flag for read only scripts.",
        ),
        other => other,
    }
}

/// Runs a Lua function (an EVAL body or an FCALL target) atomically with
/// `keys`/`argv` and writes its reply.
pub fn run_script(
    ctx: &mut Ctx,
    keys: &[&[u8]],
    argv: &[&[u8]],
    spec: RunSpec,
    get_fn: impl FnOnce(&mut Vm) -> Result<std::ffi::c_int, String>,
) -> CmdResult {
    let srv = ctx.srv;
    let over_maxmemory = srv.config.maxmemory() > 0 && srv.used_memory() > srv.config.maxmemory();
    refuse_before_run(ctx, &spec, over_maxmemory)?;
    // Scripts run one at a time; a transaction running this script already
    // holds the lock (and its shards).
    let in_exec = ctx.client.multi.in_exec;
    let _script_guard = if in_exec {
        None
    } else {
        Some(lock_scripts_or_busy(srv)?)
    };
    let _held = (!in_exec).then(|| {
        let shards: SmallVec<[usize; 4]> = keys.iter().map(|k| shard_of(k)).collect();
        let mut idxs = shards.clone();
        idxs.sort_unstable();
        idxs.dedup();
        let held = srv.keyspace.hold(&idxs);
        let declared = keys.iter().copied().zip(shards.iter().copied());
        srv.keyspace.prefetch_held(ctx.client.db, declared.take(8));
        held
    });
    // The script itself must wait for what it touches, never give up.
    let _not_abortable = AbortableWaits::new(false);

    let client_state = ClientDuringScript::enter(ctx.client);
    let scripts = &srv.scripts;
    scripts.kill.store(false, Relaxed);
    scripts.wrote.store(false, Relaxed);
    // (A clock of 0 would read as "none runs".)
    scripts.clock_ms.store(ctx.now_ms.max(1), Relaxed);
    scripts.running_function.store(spec.is_function, Relaxed);

    let worker_index = srv
        .workers
        .iter()
        .position(|w| std::sync::Arc::ptr_eq(w, &ctx.client.worker))
        .unwrap_or(usize::MAX);
    let mut host = ScriptHost {
        srv,
        client: ctx.client,
        rules: ScriptRules {
            read_only: spec.read_only,
            allow_oom: spec.flags.allow_oom,
            oom_at_start: over_maxmemory,
        },
        now_ms: ctx.now_ms,
        started: quanta::Instant::now(),
        threshold_ms: srv.config.busy_reply_threshold(),
        worker_index,
    };
    let request = RunRequest {
        keys,
        argv,
        is_function: spec.is_function,
        now_ms: ctx.now_ms,
    };
    let outcome = bridge::run(scripts, &mut host, request, ctx.out, get_fn);
    // (Still holding the declared keys' shards: no write can slip between
    // the script's reads and this.)
    if outcome.read_keys && ctx.client.tracking.on {
        super::tracking::remember_keys(srv, ctx.client, keys);
    }
    client_state.restore(ctx.client);
    scripts.clock_ms.store(0, Relaxed);
    scripts.running_function.store(false, Relaxed);
    if srv.keyspace.busy.load(Relaxed) {
        srv.keyspace.busy.store(false, Relaxed);
        scripts.busy_worker.store(usize::MAX, Relaxed);
    }
    scripts.kill.store(false, Relaxed);

    // Error replies in what the script returned count now, as Redis counts
    // them when it writes them (those from redis.call already did).
    for code in &outcome.uncounted_errors {
        ctx.client.worker.count_error(code);
    }
    match outcome.result {
        Err(e) => Err(CmdError::msg(e)),
        Ok(None) => Ok(()),
        Ok(Some((msg, src, counted))) => {
            // Redis's "-%s script: ..., on ...": the message's bytes as
            // the script gave them.
            let mut text = convert::error_text(&msg);
            if let Some((source, line)) = src {
                text.extend_from_slice(
                    format!(" script: {}, on {}:{}.", spec.sha, source, line).as_bytes(),
                );
            }
            Err(if counted {
                CmdError::Counted(text)
            } else {
                CmdError::Bytes(text)
            })
        }
    }
}
