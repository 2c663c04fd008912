//! The command table and the command families.
//!
//! Every command is declared once, in its family's `COMMANDS` array, as a
//! [`CommandSpec`]: name, arity, flags, ACL categories, key specs, tips,
//! documentation ([`meta`]) and handler. That one declaration drives
//! dispatch, the arity check, COMMAND INFO/COUNT/LIST/DOCS/GETKEYS (which
//! report exactly what redis-server 7.0 reports), key extraction for shard
//! locking, and (later) ACL checks, cluster slot checks and propagation.
//!
//! A handler is parse → operate → reply: it reads its arguments (the first
//! error wins, worded as Redis words it), operates on the keyspace through a
//! [`Ctx`] that knows nothing of sockets, and writes its reply into the
//! client's [`ReplyBuf`], which renders RESP2 or RESP3.

pub mod args;
pub mod bitmap;
pub mod cluster;
pub mod connection;
pub mod error;
pub mod expire;
pub mod functions;
pub mod generic;
pub mod geo;
pub mod hash;
pub mod hll;
pub mod list;
pub mod lolwut;
pub mod meta;
pub mod multi;
pub mod persistence;
pub mod pubsub;
pub mod replication;
pub mod scripting;
pub mod server;
pub mod set;
pub mod sort;
pub mod stream;
pub mod string;
pub mod zset;

use std::collections::HashMap;
use std::sync::OnceLock;

pub use error::{CmdError, CmdResult};
pub use meta::KeySpecDef;
use tessera_resp::encode::ReplyBuf;

use crate::keyspace::{Db, LockSet, Touch};
use crate::server::client::Client;
use crate::server::state::ServerState;

/// Command flags. COMMAND INFO prints those in [`flags::NAMES`], in that
/// order; the others (`may_replicate`, `sentinel`, `protected`) are internal,
/// as in Redis.
pub mod flags {
    pub const WRITE: u64 = 1 << 0;
    pub const READONLY: u64 = 1 << 1;
    pub const DENYOOM: u64 = 1 << 2;
    pub const ADMIN: u64 = 1 << 3;
    pub const PUBSUB: u64 = 1 << 4;
    pub const NOSCRIPT: u64 = 1 << 5;
    pub const BLOCKING: u64 = 1 << 6;
    pub const LOADING: u64 = 1 << 7;
    pub const STALE: u64 = 1 << 8;
    pub const SKIP_MONITOR: u64 = 1 << 9;
    pub const SKIP_SLOWLOG: u64 = 1 << 10;
    pub const FAST: u64 = 1 << 11;
    pub const NO_AUTH: u64 = 1 << 12;
    pub const MAY_REPLICATE: u64 = 1 << 13;
    pub const SENTINEL: u64 = 1 << 14;
    pub const NO_MANDATORY_KEYS: u64 = 1 << 15;
    pub const NO_MULTI: u64 = 1 << 16;
    pub const MOVABLE_KEYS: u64 = 1 << 17;
    pub const ALLOW_BUSY: u64 = 1 << 18;
    pub const NO_ASYNC_LOADING: u64 = 1 << 19;
    pub const PROTECTED: u64 = 1 << 20;
    pub const ASKING: u64 = 1 << 21;
    /// Internal: the handler may propagate something other than its own
    /// arguments (`Ctx::propagate_as`, `no_propagate`, `force_propagate`).
    pub const REWRITES_EFFECTS: u64 = 1 << 22;
    /// Internal: never propagates its own arguments; the commands it runs
    /// propagate themselves (EXEC, EVAL, FCALL).
    pub const NO_AUTO_PROPAGATE: u64 = 1 << 23;
    /// Internal: runs at once inside MULTI instead of being queued
    /// (MULTI, EXEC, DISCARD, WATCH, QUIT, RESET).
    pub const NOT_QUEUED: u64 = 1 << 24;
    /// Internal: ends the transaction, so it is not refused inside MULTI
    /// when out of memory (EXEC, DISCARD, QUIT, RESET).
    pub const LEAVES_MULTI: u64 = 1 << 25;
    /// Internal: runs the queued transaction (EXEC): a refusal discards it.
    pub const RUNS_QUEUED: u64 = 1 << 26;
    /// Internal: (P|S)SUBSCRIBE and (P|S)UNSUBSCRIBE, whose whole reply is
    /// pushes that CLIENT REPLY OFF/SKIP do not silence.
    pub const SUBSCRIPTION: u64 = 1 << 27;
    /// Internal: allowed in a RESP2 subscriber's context (the
    /// subscription commands, PING, QUIT, RESET).
    pub const PUBSUB_CONTEXT: u64 = 1 << 28;
    /// Internal: runs a script or function (EVAL*, EVALSHA*, FCALL*).
    pub const RUNS_SCRIPT: u64 = 1 << 29;
    /// Internal: CLIENT CACHING's "yes/no" survives it and applies to the
    /// command after (MULTI, and every CLIENT subcommand).
    pub const KEEPS_CACHING: u64 = 1 << 30;
    /// Internal: touches its keys' access time even under CLIENT NO-TOUCH.
    pub const ALWAYS_TOUCHES: u64 = 1 << 31;
    /// Internal: may delete expired keys anywhere (SCAN, RANDOMKEY): run
    /// directly, its deletions propagate one by one, not as a transaction.
    pub const TOUCHES_ARBITRARY_KEYS: u64 = 1 << 32;
    /// Internal: refused like a write while persistence is failing
    /// (MISCONF), though it writes nothing: PING, so that health checks
    /// see the failure (as Redis does).
    pub const PING_LIKE: u64 = 1 << 33;
    /// Internal: opens a transaction (MULTI); an AOF that ends after it
    /// without the EXEC is cut back to before it.
    pub const OPENS_MULTI: u64 = 1 << 34;

    /// The flags COMMAND INFO shows, in its order.
    pub const NAMES: &[(u64, &str)] = &[
        (WRITE, "write"),
        (READONLY, "readonly"),
        (DENYOOM, "denyoom"),
        (ADMIN, "admin"),
        (PUBSUB, "pubsub"),
        (NOSCRIPT, "noscript"),
        (BLOCKING, "blocking"),
        (LOADING, "loading"),
        (STALE, "stale"),
        (SKIP_MONITOR, "skip_monitor"),
        (SKIP_SLOWLOG, "skip_slowlog"),
        (ASKING, "asking"),
        (FAST, "fast"),
        (NO_AUTH, "no_auth"),
        (NO_MANDATORY_KEYS, "no_mandatory_keys"),
        (NO_ASYNC_LOADING, "no_async_loading"),
        (NO_MULTI, "no_multi"),
        (MOVABLE_KEYS, "movablekeys"),
        (ALLOW_BUSY, "allow_busy"),
    ];
}

/// ACL categories: a command declares those its flags do not imply (see
/// [`CommandSpec::acl_categories`]).
pub mod acl {
    pub const KEYSPACE: u32 = 1 << 0;
    pub const READ: u32 = 1 << 1;
    pub const WRITE: u32 = 1 << 2;
    pub const SET: u32 = 1 << 3;
    pub const SORTEDSET: u32 = 1 << 4;
    pub const LIST: u32 = 1 << 5;
    pub const HASH: u32 = 1 << 6;
    pub const STRING: u32 = 1 << 7;
    pub const BITMAP: u32 = 1 << 8;
    pub const HYPERLOGLOG: u32 = 1 << 9;
    pub const GEO: u32 = 1 << 10;
    pub const STREAM: u32 = 1 << 11;
    pub const PUBSUB: u32 = 1 << 12;
    pub const ADMIN: u32 = 1 << 13;
    pub const FAST: u32 = 1 << 14;
    pub const SLOW: u32 = 1 << 15;
    pub const BLOCKING: u32 = 1 << 16;
    pub const DANGEROUS: u32 = 1 << 17;
    pub const CONNECTION: u32 = 1 << 18;
    pub const TRANSACTION: u32 = 1 << 19;
    pub const SCRIPTING: u32 = 1 << 20;

    pub const NAMES: &[(u32, &str)] = &[
        (KEYSPACE, "keyspace"),
        (READ, "read"),
        (WRITE, "write"),
        (SET, "set"),
        (SORTEDSET, "sortedset"),
        (LIST, "list"),
        (HASH, "hash"),
        (STRING, "string"),
        (BITMAP, "bitmap"),
        (HYPERLOGLOG, "hyperloglog"),
        (GEO, "geo"),
        (STREAM, "stream"),
        (PUBSUB, "pubsub"),
        (ADMIN, "admin"),
        (FAST, "fast"),
        (SLOW, "slow"),
        (BLOCKING, "blocking"),
        (DANGEROUS, "dangerous"),
        (CONNECTION, "connection"),
        (TRANSACTION, "transaction"),
        (SCRIPTING, "scripting"),
    ];
}

pub type Handler = fn(&mut Ctx, &[&[u8]]) -> CmdResult;

/// One command (or subcommand) of the table: everything dispatch needs and
/// everything COMMAND INFO / COMMAND DOCS report about it. Declared with
/// [`CommandSpec::new`] and the `const` builder methods below.
pub struct CommandSpec {
    /// Lower-case name; for a subcommand just the subcommand part.
    pub name: &'static str,
    /// Redis arity: exact when positive, a minimum when negative; counts
    /// the command name itself.
    pub arity: i32,
    pub flags: u64,
    /// ACL categories declared explicitly (the data-type and keyspace ones);
    /// those implied by flags are added by [`CommandSpec::acl_categories`].
    pub acl: u32,
    /// Where the keys are ([`meta::KeySpecDef`]); the legacy first/last/step
    /// triple and `movablekeys` are derived from these.
    pub key_specs: &'static [KeySpecDef],
    /// Command tips (`nondeterministic_output`, `request_policy:...`).
    pub tips: &'static [&'static str],
    /// Family, as COMMAND DOCS `group` prints it.
    pub group: &'static str,
    pub since: &'static str,
    pub summary: &'static str,
    /// Empty when the command documents none.
    pub complexity: &'static str,
    /// [`meta::docflags`].
    pub doc_flags: u8,
    /// Both empty unless deprecated.
    pub deprecated_since: &'static str,
    pub replaced_by: &'static str,
    /// (version, change) pairs.
    pub history: &'static [(&'static str, &'static str)],
    /// The documented syntax tree.
    pub args: &'static [meta::arg::Arg],
    pub handler: Handler,
    pub subcommands: &'static [CommandSpec],
    /// Key extraction for commands whose key specs cannot find all keys
    /// (Redis's getkeys_proc: SORT ... STORE dst).
    pub getkeys: Option<GetKeys>,
    /// How the key at an index is used, for commands whose key specs cannot
    /// say it alone (flags that depend on other arguments, keys no spec
    /// finds).
    pub key_flags_of: Option<KeyFlagsOf>,
    /// Whether the command, about to run for a client, should first let
    /// other clients' commands already in flight run (PUBLISH, for its
    /// receivers'): see `dispatch::execute`.
    pub waits_for_others: Option<WaitsForOthers>,
    /// Which arguments are pub/sub channels, for ACL's channel rules.
    pub channel_args: ChannelArgs,
}

/// The pub/sub channels among a command's arguments (Redis's
/// getChannelsFromCommand), which ACL `&pattern` rules govern.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChannelArgs {
    None,
    /// The first argument is a channel published to.
    Publish,
    /// Every argument is a channel subscribed to.
    Subscribe,
    /// Every argument is a pattern subscribed to (matched literally).
    PatternSubscribe,
}

impl ChannelArgs {
    /// (argument index, is a pattern) of each channel in `args`.
    pub fn positions(self, args: &[&[u8]]) -> Vec<(usize, bool)> {
        match self {
            ChannelArgs::None => Vec::new(),
            ChannelArgs::Publish => (args.len() > 1).then_some((1, false)).into_iter().collect(),
            ChannelArgs::Subscribe => (1..args.len()).map(|i| (i, false)).collect(),
            ChannelArgs::PatternSubscribe => (1..args.len()).map(|i| (i, true)).collect(),
        }
    }
}

/// See [`CommandSpec::waits_for_others`].
pub type WaitsForOthers = fn(&ServerState, &mut Client, &[&[u8]]) -> bool;

/// Positions of a command's keys in its arguments, or invalid arguments.
pub type GetKeys = fn(&[&[u8]]) -> Result<Vec<usize>, meta::InvalidKeyArgs>;

/// The key-spec flags ([`meta::ksflags`]) of the key at an index of the
/// arguments.
pub type KeyFlagsOf = fn(args: &[&[u8]], index: usize) -> u16;

/// One key argument of a command and how the command uses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyUse {
    /// Index in the arguments (the command name at 0).
    pub index: usize,
    /// Key-spec flags ([`meta::ksflags`]).
    pub flags: u16,
}

impl KeyUse {
    /// The command reads or returns the key's data.
    pub fn reads(&self) -> bool {
        self.flags & meta::ksflags::ACCESS != 0
    }
    /// The command changes the key: updates, inserts into or deletes it.
    pub fn writes(&self) -> bool {
        use meta::ksflags::{DELETE, INSERT, UPDATE};
        self.flags & (UPDATE | INSERT | DELETE) != 0
    }
    pub fn inserts(&self) -> bool {
        self.flags & meta::ksflags::INSERT != 0
    }
    pub fn deletes(&self) -> bool {
        self.flags & meta::ksflags::DELETE != 0
    }
}

impl CommandSpec {
    /// A command with no keys, ACL categories beyond its flags', tips,
    /// arguments or subcommands, and complexity O(1).
    pub const fn new(
        name: &'static str,
        arity: i32,
        flags: u64,
        group: &'static str,
        since: &'static str,
        summary: &'static str,
        handler: Handler,
    ) -> CommandSpec {
        CommandSpec {
            name,
            arity,
            flags,
            acl: 0,
            key_specs: &[],
            tips: &[],
            group,
            since,
            summary,
            complexity: "O(1)",
            doc_flags: 0,
            deprecated_since: "",
            replaced_by: "",
            history: &[],
            args: &[],
            handler,
            subcommands: &[],
            getkeys: None,
            key_flags_of: None,
            waits_for_others: None,
            channel_args: ChannelArgs::None,
        }
    }

    pub const fn channels(mut self, channels: ChannelArgs) -> Self {
        self.channel_args = channels;
        self
    }

    pub const fn getkeys(mut self, f: GetKeys) -> Self {
        self.getkeys = Some(f);
        self
    }

    pub const fn waits_for_others(mut self, f: WaitsForOthers) -> Self {
        self.waits_for_others = Some(f);
        self
    }

    pub const fn key_flags_by(mut self, f: KeyFlagsOf) -> Self {
        self.key_flags_of = Some(f);
        self
    }

    pub const fn acl(mut self, acl: u32) -> Self {
        self.acl = acl;
        self
    }
    pub const fn group(mut self, group: &'static str) -> Self {
        self.group = group;
        self
    }
    pub const fn key_specs(mut self, specs: &'static [KeySpecDef]) -> Self {
        self.key_specs = specs;
        self
    }
    pub const fn tips(mut self, tips: &'static [&'static str]) -> Self {
        self.tips = tips;
        self
    }
    /// `""` for a command that documents no complexity.
    pub const fn complexity(mut self, complexity: &'static str) -> Self {
        self.complexity = complexity;
        self
    }
    pub const fn doc_flags(mut self, doc_flags: u8) -> Self {
        self.doc_flags |= doc_flags;
        self
    }
    /// Marks the command deprecated since `since`, in favour of `replaced_by`.
    pub const fn deprecated(mut self, since: &'static str, replaced_by: &'static str) -> Self {
        self.doc_flags |= meta::docflags::DEPRECATED;
        self.deprecated_since = since;
        self.replaced_by = replaced_by;
        self
    }
    pub const fn history(mut self, history: &'static [(&'static str, &'static str)]) -> Self {
        self.history = history;
        self
    }
    pub const fn args(mut self, args: &'static [meta::arg::Arg]) -> Self {
        self.args = args;
        self
    }
    pub const fn subcommands(mut self, subcommands: &'static [CommandSpec]) -> Self {
        self.subcommands = subcommands;
        self
    }

    pub fn has(&self, flag: u64) -> bool {
        self.flags & flag != 0
    }

    /// All ACL categories, with the ones Redis derives from flags.
    pub fn acl_categories(&self) -> u32 {
        let mut c = self.acl;
        if self.has(flags::WRITE) {
            c |= acl::WRITE;
        }
        if self.has(flags::READONLY) && c & acl::SCRIPTING == 0 {
            c |= acl::READ;
        }
        if self.has(flags::ADMIN) {
            c |= acl::ADMIN | acl::DANGEROUS;
        }
        if self.has(flags::PUBSUB) {
            c |= acl::PUBSUB;
        }
        if self.has(flags::FAST) {
            c |= acl::FAST;
        }
        if self.has(flags::BLOCKING) {
            c |= acl::BLOCKING;
        }
        if c & acl::FAST == 0 {
            c |= acl::SLOW;
        }
        c
    }

    /// The legacy (first, last, step) key triple COMMAND INFO prints,
    /// derived from the key specs.
    pub fn legacy_keys(&self) -> (i32, i32, i32) {
        let (f, l, s, _) = meta::legacy_range(self.key_specs);
        (f, l, s)
    }

    /// The flags COMMAND INFO prints: the declared ones plus `movablekeys`
    /// when the key specs cannot be expressed as the legacy triple.
    pub fn reported_flags(&self) -> u64 {
        let mut f = self.flags;
        if meta::legacy_range(self.key_specs).3 {
            f |= flags::MOVABLE_KEYS;
        }
        f
    }

    /// Checks the argument count against the arity.
    #[inline]
    pub fn arity_ok(&self, argc: usize) -> bool {
        let argc = argc as i64;
        let a = self.arity as i64;
        if a > 0 {
            argc == a
        } else {
            argc >= -a
        }
    }

    /// Indices of the key arguments in `args` (command name at 0; for a
    /// subcommand, the container's name at 0 and the subcommand's at 1) by
    /// the declared key specs.
    pub fn key_indices(&self, args: &[&[u8]]) -> Result<Vec<usize>, meta::InvalidKeyArgs> {
        if let Some(f) = self.getkeys {
            return f(args);
        }
        meta::key_positions(self.key_specs, args)
    }

    /// The key arguments of `args` (as [`key_indices`](Self::key_indices)
    /// finds them) with how the command uses each: what ACL's key
    /// permissions and COMMAND GETKEYSANDFLAGS need.
    pub fn key_uses(&self, args: &[&[u8]]) -> Result<Vec<KeyUse>, meta::InvalidKeyArgs> {
        let positions = self.key_indices(args)?;
        Ok(self.uses_at(args, &positions))
    }

    /// How the command uses the keys at `positions`: by its own rule where
    /// it has one, otherwise by the first key spec that finds the key
    /// (each spec is run once, so a command with many keys stays linear),
    /// and the first spec's flags for a key no spec finds.
    pub fn uses_at(&self, args: &[&[u8]], positions: &[usize]) -> Vec<KeyUse> {
        if let Some(f) = self.key_flags_of {
            return positions
                .iter()
                .map(|&index| KeyUse {
                    index,
                    flags: f(args, index),
                })
                .collect();
        }
        if let [only] = self.key_specs {
            // (Most commands: every key is the one spec's.)
            return positions
                .iter()
                .map(|&index| KeyUse {
                    index,
                    flags: only.flags,
                })
                .collect();
        }
        let mut by_position = std::collections::HashMap::new();
        for spec in self.key_specs {
            let found = meta::key_positions(std::slice::from_ref(spec), args).unwrap_or_default();
            for p in found {
                by_position.entry(p).or_insert(spec.flags);
            }
        }
        let fallback = self.key_specs.first().map_or(0, |spec| spec.flags);
        positions
            .iter()
            .map(|&index| KeyUse {
                index,
                flags: by_position.get(&index).copied().unwrap_or(fallback),
            })
            .collect()
    }
}

/// All families' tables, in COMMAND LIST order.
fn families() -> impl Iterator<Item = &'static CommandSpec> {
    string::COMMANDS
        .iter()
        .chain(generic::COMMANDS)
        .chain(expire::COMMANDS)
        .chain(hash::COMMANDS)
        .chain(list::COMMANDS)
        .chain(set::COMMANDS)
        .chain(zset::COMMANDS)
        .chain(sort::COMMANDS)
        .chain(bitmap::COMMANDS)
        .chain(hll::COMMANDS)
        .chain(geo::COMMANDS)
        .chain(stream::COMMANDS)
        .chain(multi::COMMANDS)
        .chain(pubsub::COMMANDS)
        .chain(scripting::COMMANDS)
        .chain(functions::COMMANDS)
        .chain(connection::COMMANDS)
        .chain(server::COMMANDS)
        .chain(persistence::COMMANDS)
        .chain(replication::COMMANDS)
        .chain(lolwut::COMMANDS)
        .chain(cluster::COMMANDS)
}

/// `rename-command` lines (lowercase name, new name; an empty new name
/// removes the command), set once at start-up before the first lookup.
static RENAMES: OnceLock<Vec<(Vec<u8>, Vec<u8>)>> = OnceLock::new();

/// Applies the configuration's `rename-command` lines to the command
/// table. Must run before any command is looked up (the table is built
/// once); returns false if it was built already.
pub fn set_renames(renames: &[(Vec<u8>, Vec<u8>)]) -> bool {
    RENAMES.set(renames.to_vec()).is_ok()
}

/// Whether `name` is a top-level command of the built-in table (before any
/// rename): for checking `rename-command` lines while the configuration
/// is read.
pub fn is_builtin_command(name: &[u8]) -> bool {
    families().any(|c| name.eq_ignore_ascii_case(c.name.as_bytes()))
}

struct Registry {
    /// Top-level name → id, after `rename-command`.
    by_name: HashMap<&'static str, usize, foldhash::fast::FixedState>,
    /// Length of the longest name in `by_name`.
    longest_name: usize,
    /// Every command and subcommand; the index is the command id that
    /// per-thread statistics are kept under.
    flat: Vec<(String, &'static CommandSpec)>,
    top: Vec<&'static CommandSpec>,
    /// Id of each top-level command's first subcommand.
    sub_base: HashMap<&'static str, usize>,
}

fn registry() -> &'static Registry {
    static REG: OnceLock<Registry> = OnceLock::new();
    REG.get_or_init(|| {
        let top: Vec<&'static CommandSpec> = families().collect();
        let mut flat = Vec::new();
        let mut by_name = HashMap::with_hasher(foldhash::fast::FixedState::default());
        let mut sub_base = HashMap::new();
        for c in &top {
            by_name.insert(c.name, flat.len());
            flat.push((c.name.to_string(), *c));
        }
        // As redis-server applies them to its command dictionary: the old
        // name goes, the new one (if any) points at the same command,
        // whose own name (COMMAND INFO, errors, commandstats) is unchanged.
        // The lines were checked when the configuration was read.
        for (name, target) in RENAMES.get().map(|r| r.as_slice()).unwrap_or_default() {
            let Some(id) = std::str::from_utf8(name)
                .ok()
                .and_then(|n| by_name.remove(n))
            else {
                continue;
            };
            if let Ok(t) = std::str::from_utf8(target) {
                if !t.is_empty() && !by_name.contains_key(t) {
                    // Start-up only, once per rename: the table lives for
                    // the whole process.
                    by_name.insert(Box::leak(t.to_string().into_boxed_str()), id);
                }
            }
        }
        let top: Vec<&'static CommandSpec> = top
            .into_iter()
            .enumerate()
            .filter(|(id, _)| by_name.values().any(|v| v == id))
            .map(|(_, c)| c)
            .collect();
        for c in &top {
            if !c.subcommands.is_empty() {
                sub_base.insert(c.name, flat.len());
                for s in c.subcommands {
                    flat.push((format!("{}|{}", c.name, s.name), s));
                }
            }
        }
        Registry {
            longest_name: by_name.keys().map(|n| n.len()).max().unwrap_or(0),
            by_name,
            flat,
            top,
            sub_base,
        }
    })
}

/// Every top-level command.
pub fn all_commands() -> &'static [&'static CommandSpec] {
    &registry().top
}

/// Number of command ids (commands plus subcommands).
pub fn command_count_with_subs() -> usize {
    registry().flat.len()
}

/// The full name (`get`, `config|get`) and spec of a command id.
pub fn by_id(id: usize) -> Option<(&'static str, &'static CommandSpec)> {
    registry().flat.get(id).map(|(n, c)| (n.as_str(), *c))
}

/// Finds a command by name, case-insensitively: its id and spec.
#[inline]
pub fn lookup(name: &[u8]) -> Option<(usize, &'static CommandSpec)> {
    let mut buf = [0u8; 32];
    if name.len() > buf.len() {
        // Only a rename-command target can be this long: anything longer
        // than every name is unknown without copying it.
        if name.len() > registry().longest_name {
            return None;
        }
        return lookup_lowercase(&name.to_ascii_lowercase());
    }
    let lower = &mut buf[..name.len()];
    lower.copy_from_slice(name);
    lower.make_ascii_lowercase();
    lookup_lowercase(lower)
}

fn lookup_lowercase(lower: &[u8]) -> Option<(usize, &'static CommandSpec)> {
    let s = std::str::from_utf8(lower).ok()?;
    let reg = registry();
    let id = *reg.by_name.get(s)?;
    Some((id, reg.flat[id].1))
}

/// Finds a subcommand of a container command: its id and spec.
pub fn lookup_sub(
    parent: &'static CommandSpec,
    name: &[u8],
) -> Option<(usize, &'static CommandSpec)> {
    let pos = parent
        .subcommands
        .iter()
        .position(|c| name.eq_ignore_ascii_case(c.name.as_bytes()))?;
    let base = *registry().sub_base.get(parent.name)?;
    Some((base + pos, &parent.subcommands[pos]))
}

/// The full name Redis uses in messages: `get`, `config|get`.
pub fn full_name(parent: Option<&CommandSpec>, cmd: &CommandSpec) -> String {
    match parent {
        Some(p) => format!("{}|{}", p.name, cmd.name),
        None => cmd.name.to_string(),
    }
}

/// What a handler sees: the server, its client, its reply buffer and the
/// time the command started (one clock read per command, as Redis does).
pub struct Ctx<'a> {
    pub srv: &'a ServerState,
    pub client: &'a mut Client,
    pub out: &'a mut ReplyBuf,
    pub now_ms: i64,
    pub touch: Touch,
    /// What the command propagates of itself (see [`Propagation`]).
    pub propagation: Propagation,
}

/// What a command propagates of itself to the effects stream (the AOF and
/// replicas), once it has run. Only commands flagged
/// [`flags::REWRITES_EFFECTS`] may ask for anything but the default.
#[derive(Debug, Default)]
pub enum Propagation {
    /// Its own arguments, if it changed data.
    #[default]
    Own,
    /// These arguments instead, if it changed data (SET EX as SET PXAT).
    As(Vec<Vec<u8>>),
    /// Nothing of itself (what it recorded with `also_propagate` stays).
    Nothing,
    /// Its own arguments to these targets whether or not it changed data
    /// (PUBLISH to replicas, FLUSHALL of an empty keyspace).
    Forced(u8),
}

/// What a handler needs to reach the keyspace, split from the reply buffer
/// so both can be borrowed at once.
#[derive(Clone, Copy)]
pub struct Access<'a> {
    pub srv: &'a ServerState,
    pub db: usize,
    pub now_ms: i64,
    pub touch: Touch,
}

impl<'a> Access<'a> {
    /// Runs `f` on the client's database with the shard of `key` locked.
    #[inline]
    pub fn with_key<R>(self, key: &[u8], f: impl FnOnce(&mut Db) -> R) -> R {
        let mut locks = self.srv.keyspace.lock_key(key);
        let mut db = locks.db(self.db, self.now_ms, self.touch);
        f(&mut db)
    }

    /// Runs `f` with the shards of all `keys` locked, atomically.
    pub fn with_keys<'k, R>(
        self,
        keys: impl IntoIterator<Item = &'k [u8]>,
        f: impl FnOnce(&mut Db) -> R,
    ) -> R {
        let mut locks = self.srv.keyspace.lock_keys(keys);
        let mut db = locks.db(self.db, self.now_ms, self.touch);
        f(&mut db)
    }

    /// Runs `f` with every shard locked (whole-keyspace atomic operations).
    pub fn with_all<R>(self, f: impl FnOnce(&mut LockSet) -> R) -> R {
        let mut locks = self.srv.keyspace.lock_all();
        f(&mut locks)
    }
}

impl<'a> Ctx<'a> {
    #[inline]
    pub fn access(&self) -> Access<'a> {
        Access {
            srv: self.srv,
            db: self.client.db,
            now_ms: self.now_ms,
            touch: self.touch,
        }
    }

    /// The keyspace access and the reply buffer, borrowed together.
    #[inline]
    pub fn split(&mut self) -> (Access<'a>, &mut ReplyBuf) {
        (self.access(), &mut *self.out)
    }

    #[inline]
    pub fn with_key<R>(&self, key: &[u8], f: impl FnOnce(&mut Db) -> R) -> R {
        self.access().with_key(key, f)
    }

    pub fn with_keys<'k, R>(
        &self,
        keys: impl IntoIterator<Item = &'k [u8]>,
        f: impl FnOnce(&mut Db) -> R,
    ) -> R {
        self.access().with_keys(keys, f)
    }

    pub fn with_all<R>(&self, f: impl FnOnce(&mut LockSet) -> R) -> R {
        self.access().with_all(f)
    }

    /// Encoding thresholds in force for this command.
    pub fn limits(&self) -> crate::types::Limits {
        crate::types::Limits::from_config(&self.srv.config)
    }

    /// Blocks the client on `keys` until one of them may have data, the
    /// deadline (Unix ms; None = forever) passes, or CLIENT UNBLOCK. The
    /// handler writes no reply; the connection re-runs the command when
    /// woken and sends `on_timeout`'s reply if the deadline passes first.
    pub fn block(
        &mut self,
        keys: &[&[u8]],
        deadline_ms: Option<i64>,
        on_timeout: fn(&mut ReplyBuf),
    ) {
        if self.client.multi.in_exec {
            // Inside EXEC or a script nothing can arrive while we wait:
            // Redis answers as if the timeout had passed.
            on_timeout(self.out);
            return;
        }
        let deadline = deadline_ms.map(|d| {
            let wait = (d - crate::server::state::unix_ms()).max(0) as u64;
            std::time::Instant::now() + std::time::Duration::from_millis(wait)
        });
        self.client.block = Some(crate::server::blocking::BlockRequest {
            db: self.client.db,
            keys: keys
                .iter()
                .map(|k| crate::keyspace::Key::from_slice(k))
                .collect(),
            deadline,
            on_timeout,
            rerun_args: None,
            pass_wakeups: std::mem::take(&mut self.client.woken_wrong_type),
            silent: self.client.reply_mode != crate::server::client::ReplyMode::On,
        });
    }

    /// Like [`Ctx::block`], but re-runs `rerun_args` instead of the
    /// original arguments when woken.
    pub fn block_with_args(
        &mut self,
        keys: &[&[u8]],
        deadline_ms: Option<i64>,
        on_timeout: fn(&mut ReplyBuf),
        rerun_args: Vec<Vec<u8>>,
    ) {
        self.block(keys, deadline_ms, on_timeout);
        if let Some(b) = self.client.block.as_mut() {
            b.rerun_args = Some(rerun_args);
            b.pass_wakeups = true;
        }
    }

    /// Propagates `argv` instead of the command's own arguments (if the
    /// command changed data), as Redis's rewriteClientCommandVector.
    pub fn propagate_as(&mut self, argv: Vec<Vec<u8>>) {
        self.propagation = Propagation::As(argv);
    }

    /// Propagates nothing of the command itself.
    pub fn no_propagate(&mut self) {
        self.propagation = Propagation::Nothing;
    }

    /// Propagates the command's own arguments to `targets` even though it
    /// changed no data (Redis's forceCommandPropagation).
    pub fn force_propagate(&mut self, targets: u8) {
        self.propagation = Propagation::Forced(targets);
    }

    /// Records `argv` in the effects stream now, in this client's
    /// database, after whatever the command recorded so far (Redis's
    /// alsoPropagate). Call it under the lock of the keys it changes.
    pub fn also_propagate(&self, argv: Vec<Vec<u8>>) {
        crate::keyspace::effects::push(self.client.db, argv, crate::keyspace::effects::target::ALL);
    }

    /// Whether anything consumes the effects stream: a handler builds the
    /// arguments it would propagate only then.
    #[inline]
    pub fn propagating(&self) -> bool {
        crate::keyspace::effects::enabled()
    }

    /// Tells clients blocked on `key` (in this client's database) that it
    /// may have data. Call after the data is in place.
    #[inline]
    pub fn signal_ready(&self, key: &[u8]) {
        // Nobody blocked: one relaxed load, no queueing (a client that
        // blocks later re-checks its keys once registered).
        if self.srv.blocking.blocked_clients() == 0 {
            return;
        }
        // Woken clients run after this command has finished and published
        // its events (and after a whole EXEC or script), as in Redis.
        crate::keyspace::events::ready(self.client.db, key);
    }
}

/// An argument vector to propagate, from its parts.
pub fn argv<A: AsRef<[u8]>>(parts: &[A]) -> Vec<Vec<u8>> {
    parts.iter().map(|p| p.as_ref().to_vec()).collect()
}

/// An integer (a time in ms, a count) as a propagated argument.
pub fn int_arg(n: i64) -> Vec<u8> {
    itoa::Buffer::new().format(n).as_bytes().to_vec()
}

pub use crate::keyspace::effects::deletion_argv;

/// Replies `+OK`.
pub fn ok(ctx: &mut Ctx) -> CmdResult {
    ctx.out.ok();
    Ok(())
}

/// The `... Try X HELP.` error for unknown subcommands (the subcommand as
/// the client sent it).
pub fn unknown_subcommand(container: &str, sub: &[u8]) -> CmdError {
    CmdError::bytes(&[
        b"ERR unknown subcommand '",
        args::c_bytes_prefix(sub, 128),
        b"'. Try ",
        container.to_ascii_uppercase().as_bytes(),
        b" HELP.",
    ])
}

/// Redis's addReplySubcommandSyntaxError: `args[1]` (at most 128 bytes)
/// and the command as typed, upper-cased, both as the client sent them.
pub fn subcommand_syntax_error(args: &[&[u8]]) -> CmdError {
    let sub = args.get(1).copied().unwrap_or_default();
    CmdError::bytes(&[
        b"ERR unknown subcommand or wrong number of arguments for '",
        args::c_bytes_prefix(sub, 128),
        b"'. Try ",
        &args::c_bytes(args[0]).to_ascii_uppercase(),
        b" HELP.",
    ])
}
