//! Tessera's configuration, taken the way redis-server 7.0 takes it.
//!
//! This module owns:
//! - the directive registry ([`table`]): every directive redis-server 7.0
//!   knows (names, aliases, types, bounds, defaults, mutability), with
//!   `io-threads` as Tessera's worker count (`threads` at start-up);
//! - start-up parsing: `redis-server`-style argv, redis.conf syntax and
//!   quoting, `include`, and the exact FATAL error text ([`load`]);
//! - `CONFIG GET` / `CONFIG SET` semantics and error strings;
//! - `CONFIG REWRITE` ([`rewrite`]);
//! - cheap typed accessors for hot paths (atomics, no locks, no lookups).
//!
//! Values Tessera cannot honour yet are refused, at start-up and by CONFIG
//! SET, with a clear message instead of being silently ignored:
//! `daemonize yes`, `cluster-enabled yes`, `activedefrag yes`, and the
//! `loadmodule`, `sentinel` and module-config directives.
//! `rename-command` lines are collected for the command table to
//! apply ([`Config::renamed_commands`]).

mod load;
pub(crate) mod parse;
/// sdssplitargs, for the other places Redis splits a line with it.
pub(crate) use parse::{split_args, strerror};
mod rewrite;
mod table;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::{Mutex, RwLock};

pub use load::CommandExists;
pub use parse::KeyspaceEvents;
use parse::{c_strtoll, format_percentile, mem_to_u64, split_spaces, strict_f64, strict_i64};
use table::{idx, Check, Def, NumFmt, Special, Ty, TABLE};
use table::{DENY_LOADING, HIDDEN, IMMUTABLE, MULTI_ARG, PROTECTED, SENSITIVE};

/// The Redis version whose configuration behaviour this module follows; it
/// appears in the FATAL CONFIG FILE ERROR banner.
pub const REDIS_VERSION: &str = crate::REDIS_COMPAT_VERSION;

/// `maxmemory-policy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MaxmemoryPolicy {
    NoEviction,
    AllkeysLru,
    AllkeysLfu,
    AllkeysRandom,
    VolatileLru,
    VolatileLfu,
    VolatileRandom,
    VolatileTtl,
}

impl MaxmemoryPolicy {
    /// The name as CONFIG GET and INFO print it.
    pub fn as_str(self) -> &'static str {
        match self {
            MaxmemoryPolicy::NoEviction => "noeviction",
            MaxmemoryPolicy::AllkeysLru => "allkeys-lru",
            MaxmemoryPolicy::AllkeysLfu => "allkeys-lfu",
            MaxmemoryPolicy::AllkeysRandom => "allkeys-random",
            MaxmemoryPolicy::VolatileLru => "volatile-lru",
            MaxmemoryPolicy::VolatileLfu => "volatile-lfu",
            MaxmemoryPolicy::VolatileRandom => "volatile-random",
            MaxmemoryPolicy::VolatileTtl => "volatile-ttl",
        }
    }

    /// Only keys with a TTL are candidates.
    pub fn is_volatile(self) -> bool {
        matches!(
            self,
            MaxmemoryPolicy::VolatileLru
                | MaxmemoryPolicy::VolatileLfu
                | MaxmemoryPolicy::VolatileRandom
                | MaxmemoryPolicy::VolatileTtl
        )
    }

    /// The policy keeps LFU counters instead of LRU clocks.
    pub fn is_lfu(self) -> bool {
        matches!(
            self,
            MaxmemoryPolicy::AllkeysLfu | MaxmemoryPolicy::VolatileLfu
        )
    }
}

/// `tls-auth-clients`: whether a TLS client must present a certificate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsAuthClients {
    No,
    Yes,
    Optional,
}

/// `loglevel`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    Debug,
    Verbose,
    Notice,
    Warning,
}

impl LogLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Verbose => "verbose",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
        }
    }
}

/// Client classes of `client-output-buffer-limit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClientClass {
    Normal = 0,
    Replica = 1,
    Pubsub = 2,
}

/// One class's output buffer limits; 0 means no limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ObufLimit {
    pub hard_bytes: u64,
    pub soft_bytes: u64,
    pub soft_seconds: u64,
}

const OBUF_DEFAULTS: [ObufLimit; 3] = [
    ObufLimit {
        hard_bytes: 0,
        soft_bytes: 0,
        soft_seconds: 0,
    },
    ObufLimit {
        hard_bytes: 256 << 20,
        soft_bytes: 64 << 20,
        soft_seconds: 60,
    },
    ObufLimit {
        hard_bytes: 32 << 20,
        soft_bytes: 8 << 20,
        soft_seconds: 60,
    },
];
const OOM_DEFAULTS: [i32; 3] = [0, 200, 800];
const SAVE_DEFAULTS: [(i64, i64); 3] = [(3600, 1), (300, 100), (60, 10000)];
const BIND_DEFAULTS: [&str; 2] = ["*", "-::*"];
const PERCENTILE_DEFAULTS: [f64; 3] = [50.0, 99.0, 99.9];
const BIND_MAX: usize = 16;

/// Who is asking for a CONFIG SET, for the checks that depend on it.
#[derive(Clone, Copy, Debug, Default)]
pub struct SetContext {
    /// The client is connected over loopback or a Unix socket (matters when
    /// `enable-protected-configs` is `local`).
    pub local_client: bool,
    /// A dataset is being loaded (refuses `appendonly`, `dir`, `repl-diskless-load`).
    pub loading: bool,
}

/// Called by [`Config::set`] after new values are stored, once per changed
/// directive (by its primary name, e.g. "port", "bind", "maxclients"), so the
/// server can act on it. An error rolls the whole CONFIG SET back; its text
/// becomes the reason in "ERR CONFIG SET failed (possibly related to argument
/// '<name>') - <reason>".
pub type ApplyHook = Box<dyn Fn(&Config, &str) -> Result<(), String> + Send + Sync>;

/// What CONFIG REWRITE writes as `user` lines (each without `user `): the
/// users live above the configuration, which only asks for them.
pub type UserLinesHook = Box<dyn Fn() -> Vec<String> + Send + Sync>;

/// Values of the directives that do not fit in one integer.
#[derive(Clone, Debug)]
struct Specials {
    dir: String,
    save: Vec<(i64, i64)>,
    obuf: [ObufLimit; 3],
    oom: [i32; 3],
    bind: Vec<Vec<u8>>,
    replicaof: Option<(Vec<u8>, i64)>,
    percentiles: Vec<f64>,
}

/// A parsed, validated value for one directive, ready to be stored.
#[derive(Clone, Debug, PartialEq)]
enum Value {
    Num(i64),
    Str(Option<Vec<u8>>),
    Dir(String),
    Save(Vec<(i64, i64)>),
    /// Only the classes named are changed.
    Obuf([Option<ObufLimit>; 3]),
    Oom([i32; 3]),
    Bind(Vec<Vec<u8>>),
    ReplicaOf(Option<(Vec<u8>, i64)>),
    Percentiles(Vec<f64>),
}

/// Tessera's configuration. Share it as `Arc<Config>`; every method takes
/// `&self` and is safe from any thread.
pub struct Config {
    /// One slot per table entry: Bool (0/1), Num, Enum and notify-keyspace-events.
    nums: Box<[AtomicI64]>,
    /// One slot per table entry, used by Str entries.
    strs: RwLock<Vec<Option<Vec<u8>>>>,
    special: RwLock<Specials>,
    /// Not a directive: DEBUG SET-ACTIVE-EXPIRE.
    active_expire: AtomicBool,
    config_file: Option<PathBuf>,
    renames: Vec<(Vec<u8>, Vec<u8>)>,
    /// `user` directives, in order, each without the `user` word.
    pub(crate) user_lines: Vec<Vec<Vec<u8>>>,
    /// Serialises CONFIG SET and CONFIG REWRITE.
    set_lock: Mutex<()>,
    hook: RwLock<Option<Arc<ApplyHook>>>,
    user_lines_hook: RwLock<Option<UserLinesHook>>,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("config_file", &self.config_file)
            .finish_non_exhaustive()
    }
}

impl Default for Config {
    fn default() -> Self {
        Config::new()
    }
}

/// Why CONFIG SET refused: a name it does not know (shown as given), or
/// any other reply.
enum SetError<'a> {
    Unknown(&'a [u8]),
    Text(String),
}

/// Lower-cased name (primary or alias) -> (table index, is the alias).
fn registry() -> &'static HashMap<Vec<u8>, (usize, bool)> {
    static REG: OnceLock<HashMap<Vec<u8>, (usize, bool)>> = OnceLock::new();
    REG.get_or_init(|| {
        let mut m = HashMap::new();
        for (i, d) in TABLE.iter().enumerate() {
            m.insert(d.name.as_bytes().to_vec(), (i, false));
            if let Some(a) = d.alias {
                m.insert(a.as_bytes().to_vec(), (i, true));
            }
        }
        m
    })
}

/// Finds a directive by any name, case-insensitively.
fn lookup(name: &[u8]) -> Option<(usize, bool)> {
    registry().get(&name.to_ascii_lowercase()).copied()
}

/// Finds a directive as a config file or the command line may name it:
/// Redis's names, and Tessera's start-up aliases.
fn lookup_startup(name: &[u8]) -> Option<(usize, bool)> {
    lookup(name).or_else(|| {
        let name = name.to_ascii_lowercase();
        TABLE
            .iter()
            .position(|d| d.startup_alias.is_some_and(|a| a.as_bytes() == name))
            .map(|i| (i, false))
    })
}

/// The name a message should use: the alias when it was addressed by alias.
fn display_name(i: usize, alias: bool) -> &'static str {
    let d = &TABLE[i];
    match (alias, d.alias) {
        (true, Some(a)) => a,
        _ => d.name,
    }
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn current_dir_string() -> String {
    std::env::current_dir()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default()
}

// Compile-time indexes of the directives read on hot paths.
const THREADS: usize = idx("io-threads");
const PORT: usize = idx("port");
const DATABASES: usize = idx("databases");
const MAXCLIENTS: usize = idx("maxclients");
const TIMEOUT: usize = idx("timeout");
const TCP_KEEPALIVE: usize = idx("tcp-keepalive");
const TCP_BACKLOG: usize = idx("tcp-backlog");
const LOGLEVEL: usize = idx("loglevel");
const LOGFILE: usize = idx("logfile");
const PIDFILE: usize = idx("pidfile");
const DAEMONIZE: usize = idx("daemonize");
const APPENDONLY: usize = idx("appendonly");
const REQUIREPASS: usize = idx("requirepass");
const MAXMEMORY: usize = idx("maxmemory");
const MAXMEMORY_POLICY: usize = idx("maxmemory-policy");
const MAXMEMORY_SAMPLES: usize = idx("maxmemory-samples");
const MAXMEMORY_TENACITY: usize = idx("maxmemory-eviction-tenacity");
const HZ: usize = idx("hz");
const DYNAMIC_HZ: usize = idx("dynamic-hz");
const PROTO_MAX_BULK_LEN: usize = idx("proto-max-bulk-len");
const CLIENT_QUERY_BUFFER_LIMIT: usize = idx("client-query-buffer-limit");
const SLOWLOG_SLOWER_THAN: usize = idx("slowlog-log-slower-than");
const SLOWLOG_MAX_LEN: usize = idx("slowlog-max-len");
const LATENCY_MONITOR_THRESHOLD: usize = idx("latency-monitor-threshold");
const LATENCY_TRACKING: usize = idx("latency-tracking");
const LAZY_EVICTION: usize = idx("lazyfree-lazy-eviction");
const LAZY_EXPIRE: usize = idx("lazyfree-lazy-expire");
const LAZY_SERVER_DEL: usize = idx("lazyfree-lazy-server-del");
const LAZY_USER_DEL: usize = idx("lazyfree-lazy-user-del");
const LAZY_USER_FLUSH: usize = idx("lazyfree-lazy-user-flush");
const NOTIFY: usize = idx("notify-keyspace-events");
const HASH_LP_ENTRIES: usize = idx("hash-max-listpack-entries");
const HASH_LP_VALUE: usize = idx("hash-max-listpack-value");
const SET_INTSET_ENTRIES: usize = idx("set-max-intset-entries");
const SET_LP_ENTRIES: usize = idx("set-max-listpack-entries");
const SET_LP_VALUE: usize = idx("set-max-listpack-value");
const ZSET_LP_ENTRIES: usize = idx("zset-max-listpack-entries");
const ZSET_LP_VALUE: usize = idx("zset-max-listpack-value");
const LIST_LP_SIZE: usize = idx("list-max-listpack-size");
const LIST_COMPRESS_DEPTH: usize = idx("list-compress-depth");
const STREAM_NODE_MAX_BYTES: usize = idx("stream-node-max-bytes");
const STREAM_NODE_MAX_ENTRIES: usize = idx("stream-node-max-entries");
const HLL_SPARSE_MAX_BYTES: usize = idx("hll-sparse-max-bytes");
const BUSY_REPLY_THRESHOLD: usize = idx("busy-reply-threshold");
const ACTIVE_EXPIRE_EFFORT: usize = idx("active-expire-effort");
const ACTIVEREHASHING: usize = idx("activerehashing");
const LFU_LOG_FACTOR: usize = idx("lfu-log-factor");
const LFU_DECAY_TIME: usize = idx("lfu-decay-time");
const TRACKING_TABLE_MAX_KEYS: usize = idx("tracking-table-max-keys");
const ACLLOG_MAX_LEN: usize = idx("acllog-max-len");
const PROTECTED_MODE: usize = idx("protected-mode");
const TLS_PORT: usize = idx("tls-port");
const TLS_REPLICATION: usize = idx("tls-replication");
const TLS_CLUSTER: usize = idx("tls-cluster");
const TLS_AUTH_CLIENTS: usize = idx("tls-auth-clients");
const TLS_PREFER_SERVER_CIPHERS: usize = idx("tls-prefer-server-ciphers");
const TLS_SESSION_CACHING: usize = idx("tls-session-caching");
const TLS_SESSION_CACHE_SIZE: usize = idx("tls-session-cache-size");
const TLS_SESSION_CACHE_TIMEOUT: usize = idx("tls-session-cache-timeout");
const ENABLE_PROTECTED: usize = idx("enable-protected-configs");
const ENABLE_DEBUG: usize = idx("enable-debug-command");
const ENABLE_MODULE: usize = idx("enable-module-command");
const UNIXSOCKET: usize = idx("unixsocket");
const UNIXSOCKETPERM: usize = idx("unixsocketperm");
const DBFILENAME: usize = idx("dbfilename");
const ACLFILE: usize = idx("aclfile");
const RDBCOMPRESSION: usize = idx("rdbcompression");
const RDBCHECKSUM: usize = idx("rdbchecksum");
const STOP_WRITES_ON_BGSAVE_ERROR: usize = idx("stop-writes-on-bgsave-error");
const REPL_BACKLOG_SIZE: usize = idx("repl-backlog-size");
const REPL_BACKLOG_TTL: usize = idx("repl-backlog-ttl");
const REPL_DISKLESS_SYNC: usize = idx("repl-diskless-sync");
const REPL_DISKLESS_SYNC_DELAY: usize = idx("repl-diskless-sync-delay");
const REPL_DISKLESS_SYNC_MAX_REPLICAS: usize = idx("repl-diskless-sync-max-replicas");
const REPL_DISKLESS_LOAD: usize = idx("repl-diskless-load");
const REPL_TIMEOUT: usize = idx("repl-timeout");
const REPL_PING_REPLICA_PERIOD: usize = idx("repl-ping-replica-period");
const REPL_DISABLE_TCP_NODELAY: usize = idx("repl-disable-tcp-nodelay");
const REPLICA_READ_ONLY: usize = idx("replica-read-only");
const REPLICA_SERVE_STALE_DATA: usize = idx("replica-serve-stale-data");
const REPLICA_PRIORITY: usize = idx("replica-priority");
const REPLICA_ANNOUNCED: usize = idx("replica-announced");
const REPLICA_ANNOUNCE_IP: usize = idx("replica-announce-ip");
const REPLICA_ANNOUNCE_PORT: usize = idx("replica-announce-port");
const REPLICA_LAZY_FLUSH: usize = idx("replica-lazy-flush");
const LUA_ENABLE_DEPRECATED_API: usize = idx("lua-enable-deprecated-api");
const MIN_REPLICAS_TO_WRITE: usize = idx("min-replicas-to-write");
const MIN_REPLICAS_MAX_LAG: usize = idx("min-replicas-max-lag");
const MASTERAUTH: usize = idx("masterauth");
const BIND_SOURCE_ADDR: usize = idx("bind-source-addr");
const MASTERUSER: usize = idx("masteruser");
const REPL_SEMI_SYNC_REPLICAS: usize = idx("repl-semi-sync-replicas");
const REPL_SEMI_SYNC_TIMEOUT: usize = idx("repl-semi-sync-timeout");
const RDB_KEY_SAVE_DELAY: usize = idx("rdb-key-save-delay");
const APPENDFILENAME: usize = idx("appendfilename");
const APPENDDIRNAME: usize = idx("appenddirname");
const APPENDFSYNC: usize = idx("appendfsync");
const AOF_LOAD_TRUNCATED: usize = idx("aof-load-truncated");
const AOF_USE_RDB_PREAMBLE: usize = idx("aof-use-rdb-preamble");
const NO_APPENDFSYNC_ON_REWRITE: usize = idx("no-appendfsync-on-rewrite");
const AOF_TIMESTAMP_ENABLED: usize = idx("aof-timestamp-enabled");
const AUTO_AOF_REWRITE_PERCENTAGE: usize = idx("auto-aof-rewrite-percentage");
const AUTO_AOF_REWRITE_MIN_SIZE: usize = idx("auto-aof-rewrite-min-size");
const AOF_REWRITE_INCREMENTAL_FSYNC: usize = idx("aof-rewrite-incremental-fsync");
const KEY_LOAD_DELAY: usize = idx("key-load-delay");
const RDB_DEL_SYNC_FILES: usize = idx("rdb-del-sync-files");
const RDB_SAVE_INCREMENTAL_FSYNC: usize = idx("rdb-save-incremental-fsync");
const SHUTDOWN_TIMEOUT: usize = idx("shutdown-timeout");
const SHUTDOWN_ON_SIGINT: usize = idx("shutdown-on-sigint");
const SHUTDOWN_ON_SIGTERM: usize = idx("shutdown-on-sigterm");
const ALWAYS_SHOW_LOGO: usize = idx("always-show-logo");
const SET_PROC_TITLE: usize = idx("set-proc-title");
const PROC_TITLE_TEMPLATE: usize = idx("proc-title-template");
const SUPERVISED: usize = idx("supervised");
const SYSLOG_ENABLED: usize = idx("syslog-enabled");
const MAXMEMORY_CLIENTS: usize = idx("maxmemory-clients");
const CRASH_LOG_ENABLED: usize = idx("crash-log-enabled");
const ACL_PUBSUB_DEFAULT: usize = idx("acl-pubsub-default");
const SANITIZE_DUMP_PAYLOAD: usize = idx("sanitize-dump-payload");

impl Config {
    /// A configuration holding every default, as redis-server 7.0 starts
    /// without arguments (`dir` is the current directory).
    pub fn new() -> Config {
        let nums: Box<[AtomicI64]> = TABLE.iter().map(|d| AtomicI64::new(d.default)).collect();
        let strs = TABLE
            .iter()
            .map(|d| match d.ty {
                Ty::Str => d.str_default.map(|s| s.as_bytes().to_vec()),
                _ => None,
            })
            .collect();
        Config {
            nums,
            strs: RwLock::new(strs),
            special: RwLock::new(Specials {
                dir: current_dir_string(),
                save: SAVE_DEFAULTS.to_vec(),
                obuf: OBUF_DEFAULTS,
                oom: OOM_DEFAULTS,
                bind: BIND_DEFAULTS
                    .iter()
                    .map(|s| s.as_bytes().to_vec())
                    .collect(),
                replicaof: None,
                percentiles: PERCENTILE_DEFAULTS.to_vec(),
            }),
            active_expire: AtomicBool::new(true),
            config_file: None,
            renames: Vec::new(),
            user_lines: Vec::new(),
            set_lock: Mutex::new(()),
            hook: RwLock::new(None),
            user_lines_hook: RwLock::new(None),
        }
    }

    // -----------------------------------------------------------------------
    // CONFIG GET

    /// CONFIG GET: `(name, value)` pairs for all directives matching any
    /// pattern, without duplicates (compared case-insensitively).
    ///
    /// As in Redis 7.0: a pattern without `*`, `?` or `[` is an exact,
    /// case-insensitive lookup of any name (aliases and hidden directives
    /// included) and the reply uses the name as the client wrote it; a glob
    /// matches, case-insensitively, every non-hidden primary name and alias
    /// (so `*` lists `slaveof` as well as `replicaof`).
    pub fn get(&self, patterns: &[&[u8]]) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        let mut seen: HashSet<Vec<u8>> = HashSet::new();
        for pat in patterns {
            if !pat.iter().any(|c| matches!(c, b'[' | b'*' | b'?')) {
                let key = pat.to_ascii_lowercase();
                if seen.contains(&key) {
                    continue;
                }
                if let Some((i, _)) = lookup(pat) {
                    seen.insert(key);
                    out.push((lossy(pat), self.render(i)));
                }
                continue;
            }
            for (i, d) in TABLE.iter().enumerate() {
                if d.has(HIDDEN) {
                    continue;
                }
                for name in std::iter::once(d.name).chain(d.alias) {
                    if seen.contains(name.as_bytes()) {
                        continue;
                    }
                    if crate::util::glob::glob_match(pat, name.as_bytes(), true) {
                        seen.insert(name.as_bytes().to_vec());
                        out.push((name.to_string(), self.render(i)));
                    }
                }
            }
        }
        out
    }

    /// The value of one directive by exact name (any case, aliases too).
    pub fn get_one(&self, name: &str) -> Option<Vec<u8>> {
        lookup(name.as_bytes()).map(|(i, _)| self.render(i))
    }

    /// Whether the directive's value is secret (`requirepass`, `masterauth`,
    /// `masteruser`): CONFIG SET arguments for it should be redacted from
    /// SLOWLOG / MONITOR.
    pub fn is_sensitive(name: &[u8]) -> bool {
        lookup(name).is_some_and(|(i, _)| TABLE[i].has(SENSITIVE))
    }

    /// Every known name (primaries and aliases, hidden ones included).
    pub fn directive_names() -> Vec<&'static str> {
        TABLE
            .iter()
            .flat_map(|d| std::iter::once(d.name).chain(d.alias))
            .collect()
    }

    fn num(&self, i: usize) -> i64 {
        self.nums[i].load(Ordering::Relaxed)
    }

    fn str_val(&self, i: usize) -> Option<Vec<u8>> {
        self.strs.read().get(i).cloned().flatten()
    }

    /// The value as CONFIG GET prints it.
    fn render(&self, i: usize) -> Vec<u8> {
        let d = &TABLE[i];
        match d.ty {
            Ty::Bool => {
                if self.num(i) != 0 {
                    b"yes".to_vec()
                } else {
                    b"no".to_vec()
                }
            }
            Ty::Num => render_num(d, self.num(i)).into_bytes(),
            Ty::Enum => render_enum(d, self.num(i)).into_bytes(),
            Ty::Str => self.str_val(i).unwrap_or_default(),
            Ty::Special(sp) => self.render_special(sp),
        }
    }

    fn render_special(&self, sp: Special) -> Vec<u8> {
        if sp == Special::NotifyKeyspaceEvents {
            return KeyspaceEvents(self.num(NOTIFY) as u32)
                .to_letters()
                .into_bytes();
        }
        let s = self.special.read();
        match sp {
            Special::Dir => s.dir.clone().into_bytes(),
            Special::Save => {
                let parts: Vec<String> = s.save.iter().map(|(a, b)| format!("{a} {b}")).collect();
                parts.join(" ").into_bytes()
            }
            Special::ClientOutputBufferLimit => {
                let parts: Vec<String> = ["normal", "slave", "pubsub"]
                    .iter()
                    .zip(s.obuf.iter())
                    .map(|(n, l)| {
                        format!("{n} {} {} {}", l.hard_bytes, l.soft_bytes, l.soft_seconds)
                    })
                    .collect();
                parts.join(" ").into_bytes()
            }
            Special::OomScoreAdjValues => {
                format!("{} {} {}", s.oom[0], s.oom[1], s.oom[2]).into_bytes()
            }
            Special::Bind => s.bind.join(&b' '),
            Special::ReplicaOf => match &s.replicaof {
                Some((host, port)) => {
                    let mut v = host.clone();
                    v.extend_from_slice(format!(" {port}").as_bytes());
                    v
                }
                None => Vec::new(),
            },
            Special::LatencyTrackingInfoPercentiles => {
                let parts: Vec<String> = s
                    .percentiles
                    .iter()
                    .map(|p| format_percentile(*p))
                    .collect();
                parts.join(" ").into_bytes()
            }
            Special::NotifyKeyspaceEvents => Vec::new(),
        }
    }

    // -----------------------------------------------------------------------
    // CONFIG SET

    /// CONFIG SET from a client that is not local and outside loading; see
    /// [`Config::set_with`].
    pub fn set(&self, pairs: &[(&[u8], &[u8])]) -> Result<(), String> {
        self.set_with(pairs, SetContext::default())
    }

    /// CONFIG SET name value [name value ...], all or nothing, with Redis
    /// 7.0's error replies (the returned text starts with "ERR " or
    /// "LOADING "). The caller checks the argument count (odd count:
    /// "ERR syntax error"; none: the arity error).
    pub fn set_with(&self, pairs: &[(&[u8], &[u8])], ctx: SetContext) -> Result<(), String> {
        self.set_for_client(pairs, ctx)
            .map_err(|e| String::from_utf8_lossy(&e).into_owned())
    }

    /// [`Config::set_with`] with the error as the reply's bytes: an unknown
    /// name is shown as the client sent it (Redis's `%s`), not as UTF-8.
    pub fn set_for_client(&self, pairs: &[(&[u8], &[u8])], ctx: SetContext) -> Result<(), Vec<u8>> {
        self.set_checked(pairs, ctx).map_err(|e| match e {
            SetError::Unknown(name) => [
                b"ERR Unknown option or number of arguments for CONFIG SET - '".as_slice(),
                crate::util::c_str(name),
                b"'",
            ]
            .concat(),
            SetError::Text(t) => t.into_bytes(),
        })
    }

    fn set_checked<'a>(
        &self,
        pairs: &[(&'a [u8], &[u8])],
        ctx: SetContext,
    ) -> Result<(), SetError<'a>> {
        let _guard = self.set_lock.lock();

        // Resolve names; the first problem found is the one reported.
        let mut targets: Vec<(usize, bool, &'static str)> = Vec::with_capacity(pairs.len());
        let mut unknown: Option<&[u8]> = None;
        let mut failure: Option<(String, &'static str)> = None;
        let mut deny_loading = false;
        let mut invalid = false;
        for (name, _) in pairs {
            let Some((i, alias)) = lookup(name) else {
                if !invalid {
                    unknown = Some(name);
                    invalid = true;
                }
                continue;
            };
            if invalid {
                continue;
            }
            let d = &TABLE[i];
            if d.has(IMMUTABLE) {
                failure = Some((lossy(name), "can't set immutable config"));
                invalid = true;
            } else if d.has(PROTECTED) && !self.protected_allowed(ctx.local_client) {
                failure = Some((lossy(name), "can't set protected config"));
                invalid = true;
            } else if ctx.loading && d.has(DENY_LOADING) {
                deny_loading = true;
                invalid = true;
            } else if targets.iter().any(|(j, a, _)| *j == i && *a == alias) {
                // Like Redis 7.0, a directive and its alias are different
                // entries here: `slave-priority 1 replica-priority 2` is
                // accepted and the last one wins.
                failure = Some((lossy(name), "duplicate parameter"));
                invalid = true;
            } else {
                targets.push((i, alias, display_name(i, alias)));
            }
        }
        if invalid {
            return Err(if deny_loading {
                SetError::Text("LOADING Redis is loading the dataset in memory".to_string())
            } else if let Some(name) = unknown {
                SetError::Unknown(name)
            } else {
                let (name, why) = failure.unwrap_or_default();
                SetError::Text(format!(
                    "ERR CONFIG SET failed (possibly related to argument '{name}') - {why}"
                ))
            });
        }

        // Parse and validate every value before touching anything.
        let base_dir = self.special.read().dir.clone();
        let mut values = Vec::with_capacity(targets.len());
        for ((i, _, dname), (_, raw)) in targets.iter().zip(pairs) {
            let args: Vec<&[u8]> = if TABLE[*i].has(MULTI_ARG) {
                split_spaces(raw)
            } else {
                vec![*raw]
            };
            let mut v = self.parse_value(*i, &args, &base_dir).map_err(|e| {
                SetError::Text(format!(
                    "ERR CONFIG SET failed (possibly related to argument '{dname}') - {e}"
                ))
            })?;
            if let (Some(floor), Value::Num(n)) = (TABLE[*i].set_floor, &mut v) {
                *n = (*n).max(floor);
            }
            values.push(v);
        }

        // Store, remembering what was there.
        let mut old = Vec::with_capacity(targets.len());
        let mut changed = Vec::new();
        for ((i, _, dname), v) in targets.iter().zip(values) {
            let before = self.render(*i);
            let before_num = self.nums[*i].load(Ordering::Relaxed);
            old.push(self.snapshot(*i));
            self.store(*i, v);
            // (Some values show less than they hold: notify-keyspace-events
            // renders "EAn" as "AE", as Redis 7.0 does, yet the `n` class is
            // set and must reach the server.)
            if self.render(*i) != before || self.nums[*i].load(Ordering::Relaxed) != before_num {
                changed.push((*i, *dname));
            }
        }

        // Let the server act on the changes; roll everything back on failure.
        let hook = self.hook.read().clone();
        if let Some(hook) = hook {
            for (n, (i, dname)) in changed.iter().enumerate() {
                if let Err(e) = hook(self, TABLE[*i].name) {
                    // Newest first, so a directive set twice ends at its first old value.
                    for ((j, _, _), v) in targets.iter().zip(old).rev() {
                        self.store(*j, v);
                    }
                    for (j, _) in &changed[..n] {
                        // Best effort: the old values were in effect before.
                        let _ = hook(self, TABLE[*j].name);
                    }
                    return Err(SetError::Text(format!(
                        "ERR CONFIG SET failed (possibly related to argument '{dname}') - {e}"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Installs what CONFIG REWRITE asks for the current users.
    pub fn set_user_lines_hook(&self, hook: UserLinesHook) {
        *self.user_lines_hook.write() = Some(hook);
    }

    pub(crate) fn current_user_lines(&self) -> Option<Vec<String>> {
        self.user_lines_hook.read().as_ref().map(|h| h())
    }

    /// Installs the hook CONFIG SET calls for each changed directive.
    pub fn set_apply_hook(&self, hook: ApplyHook) {
        *self.hook.write() = Some(Arc::new(hook));
    }

    fn protected_allowed(&self, local: bool) -> bool {
        protected_action_allowed(self.num(ENABLE_PROTECTED), local)
    }

    /// Parses and validates arguments for entry `i`. `base_dir` resolves a
    /// relative `dir`. Errors are the bare reason text.
    fn parse_value(&self, i: usize, args: &[&[u8]], base_dir: &str) -> Result<Value, String> {
        let d = &TABLE[i];
        let one = || -> Result<&[u8], String> {
            match args {
                [a] => Ok(*a),
                _ => Err("wrong number of arguments".to_string()),
            }
        };
        let v = match d.ty {
            Ty::Bool => {
                let a = one()?;
                let v = if a.eq_ignore_ascii_case(b"yes") {
                    1
                } else if a.eq_ignore_ascii_case(b"no") {
                    0
                } else {
                    return Err("argument must be 'yes' or 'no'".into());
                };
                Value::Num(v)
            }
            Ty::Num => Value::Num(parse_num(d, one()?)?),
            Ty::Enum => Value::Num(parse_enum(d, args)?),
            Ty::Str => {
                let a = one()?;
                if let Check::Str(f) = d.check {
                    f(a)?;
                }
                Value::Str(if d.empty_is_null && a.is_empty() {
                    None
                } else {
                    Some(a.to_vec())
                })
            }
            Ty::Special(sp) => parse_special(sp, args, base_dir)?,
        };
        if let (Value::Num(n), Check::Int(f)) = (&v, d.check) {
            f(*n)?;
        }
        Ok(v)
    }

    /// The current value of entry `i`, in a form [`Config::store`] takes back.
    fn snapshot(&self, i: usize) -> Value {
        match TABLE[i].ty {
            Ty::Bool | Ty::Num | Ty::Enum => Value::Num(self.num(i)),
            Ty::Str => Value::Str(self.str_val(i)),
            Ty::Special(sp) => {
                if sp == Special::NotifyKeyspaceEvents {
                    return Value::Num(self.num(NOTIFY));
                }
                let s = self.special.read();
                match sp {
                    Special::Dir => Value::Dir(s.dir.clone()),
                    Special::Save => Value::Save(s.save.clone()),
                    Special::ClientOutputBufferLimit => Value::Obuf(s.obuf.map(Some)),
                    Special::OomScoreAdjValues => Value::Oom(s.oom),
                    Special::Bind => Value::Bind(s.bind.clone()),
                    Special::ReplicaOf => Value::ReplicaOf(s.replicaof.clone()),
                    Special::LatencyTrackingInfoPercentiles => {
                        Value::Percentiles(s.percentiles.clone())
                    }
                    Special::NotifyKeyspaceEvents => Value::Num(0),
                }
            }
        }
    }

    fn store(&self, i: usize, v: Value) {
        match v {
            Value::Num(n) => self.nums[i].store(n, Ordering::Relaxed),
            Value::Str(s) => {
                if let Some(slot) = self.strs.write().get_mut(i) {
                    *slot = s;
                }
            }
            Value::Dir(d) => self.special.write().dir = d,
            Value::Save(p) => self.special.write().save = p,
            Value::Obuf(l) => {
                let mut s = self.special.write();
                for (slot, new) in s.obuf.iter_mut().zip(l) {
                    if let Some(new) = new {
                        *slot = new;
                    }
                }
            }
            Value::Oom(o) => self.special.write().oom = o,
            Value::Bind(b) => self.special.write().bind = b,
            Value::ReplicaOf(r) => self.special.write().replicaof = r,
            Value::Percentiles(p) => self.special.write().percentiles = p,
        }
    }

    // -----------------------------------------------------------------------
    // Typed accessors.

    /// Path of the configuration file given at start-up (absolute), if any.
    pub fn config_file(&self) -> Option<&std::path::Path> {
        self.config_file.as_deref()
    }
    /// `rename-command old new` pairs in file order (`new` empty = remove the
    /// command). The command table must apply them, or refuse to start.
    pub fn renamed_commands(&self) -> &[(Vec<u8>, Vec<u8>)] {
        &self.renames
    }
    /// Worker threads; 0 means one per core.
    pub fn threads(&self) -> usize {
        self.num(THREADS).max(0) as usize
    }
    pub fn port(&self) -> u16 {
        u16::try_from(self.num(PORT)).unwrap_or(0)
    }
    /// Addresses to listen on (`*` = all IPv4, `::*` = all IPv6; a leading
    /// `-` means "skip if unavailable"). Empty = no TCP listener.
    pub fn bind(&self) -> Vec<String> {
        self.special.read().bind.iter().map(|b| lossy(b)).collect()
    }
    pub fn tcp_backlog(&self) -> u32 {
        self.num(TCP_BACKLOG).max(0) as u32
    }
    /// The Unix socket's path; an empty one means none, as in Redis.
    pub fn unixsocket(&self) -> Option<String> {
        self.str_val(UNIXSOCKET)
            .filter(|v| !v.is_empty())
            .map(|v| lossy(&v))
    }
    pub fn unixsocketperm(&self) -> u32 {
        self.num(UNIXSOCKETPERM) as u32
    }
    pub fn protected_mode(&self) -> bool {
        self.num(PROTECTED_MODE) != 0
    }
    pub fn requirepass(&self) -> Option<Vec<u8>> {
        self.str_val(REQUIREPASS)
    }
    /// The ACL file, if one is configured.
    pub fn aclfile(&self) -> Option<String> {
        self.str_val(ACLFILE)
            .map(|v| lossy(&v))
            .filter(|v| !v.is_empty())
    }
    /// `user` lines of the configuration files, each without `user`.
    pub fn user_lines(&self) -> &[Vec<Vec<u8>>] {
        &self.user_lines
    }
    pub fn tls_port(&self) -> u16 {
        u16::try_from(self.num(TLS_PORT)).unwrap_or(0)
    }
    /// Whether anything uses TLS (Redis then configures it at start-up and
    /// after each change of a TLS directive).
    pub fn tls_in_use(&self) -> bool {
        self.tls_port() != 0 || self.num(TLS_REPLICATION) != 0 || self.num(TLS_CLUSTER) != 0
    }
    pub fn tls_links(&self) -> bool {
        self.num(TLS_REPLICATION) != 0 || self.num(TLS_CLUSTER) != 0
    }
    pub fn tls_auth_clients(&self) -> TlsAuthClients {
        match self.num(TLS_AUTH_CLIENTS) {
            0 => TlsAuthClients::No,
            2 => TlsAuthClients::Optional,
            _ => TlsAuthClients::Yes,
        }
    }
    pub fn tls_prefer_server_ciphers(&self) -> bool {
        self.num(TLS_PREFER_SERVER_CIPHERS) != 0
    }
    pub fn tls_session_caching(&self) -> bool {
        self.num(TLS_SESSION_CACHING) != 0
    }
    pub fn tls_session_cache_size(&self) -> usize {
        self.num(TLS_SESSION_CACHE_SIZE).max(0) as usize
    }
    pub fn tls_session_cache_timeout_secs(&self) -> u64 {
        self.num(TLS_SESSION_CACHE_TIMEOUT).max(0) as u64
    }
    /// A string TLS directive (`tls-cert-file`, `tls-ciphers`, ...); None
    /// when unset or empty.
    pub fn tls_text(&self, name: &str) -> Option<String> {
        let i = TABLE.iter().position(|d| d.name == name)?;
        self.str_val(i).filter(|v| !v.is_empty()).map(|v| lossy(&v))
    }
    pub fn databases(&self) -> usize {
        self.num(DATABASES).max(1) as usize
    }
    pub fn maxclients(&self) -> u64 {
        self.num(MAXCLIENTS) as u64
    }
    /// Idle client timeout in seconds; 0 = never.
    pub fn timeout_secs(&self) -> u64 {
        self.num(TIMEOUT).max(0) as u64
    }
    pub fn tcp_keepalive(&self) -> u64 {
        self.num(TCP_KEEPALIVE).max(0) as u64
    }
    pub fn loglevel(&self) -> LogLevel {
        match self.num(LOGLEVEL) {
            0 => LogLevel::Debug,
            1 => LogLevel::Verbose,
            3 => LogLevel::Warning,
            _ => LogLevel::Notice,
        }
    }
    /// "" = standard output.
    pub fn logfile(&self) -> String {
        self.str_val(LOGFILE).map(|v| lossy(&v)).unwrap_or_default()
    }
    pub fn syslog_enabled(&self) -> bool {
        self.num(SYSLOG_ENABLED) != 0
    }
    /// The working directory (absolute). Redis chdir()s into it; call
    /// `std::env::set_current_dir(config.dir())` once after loading to match.
    pub fn dir(&self) -> String {
        self.special.read().dir.clone()
    }
    pub fn pidfile(&self) -> Option<String> {
        self.str_val(PIDFILE).map(|v| lossy(&v))
    }
    /// Always false for now (`daemonize yes` is refused).
    pub fn daemonize(&self) -> bool {
        self.num(DAEMONIZE) != 0
    }
    pub fn supervised(&self) -> String {
        render_enum(&TABLE[SUPERVISED], self.num(SUPERVISED))
    }
    pub fn always_show_logo(&self) -> bool {
        self.num(ALWAYS_SHOW_LOGO) != 0
    }
    pub fn set_proc_title(&self) -> bool {
        self.num(SET_PROC_TITLE) != 0
    }
    pub fn proc_title_template(&self) -> String {
        self.str_val(PROC_TITLE_TEMPLATE)
            .map(|v| lossy(&v))
            .unwrap_or_default()
    }
    pub fn crash_log_enabled(&self) -> bool {
        self.num(CRASH_LOG_ENABLED) != 0
    }
    pub fn maxmemory(&self) -> u64 {
        self.num(MAXMEMORY) as u64
    }
    pub fn maxmemory_policy(&self) -> MaxmemoryPolicy {
        match self.num(MAXMEMORY_POLICY) {
            0 => MaxmemoryPolicy::VolatileLru,
            1 => MaxmemoryPolicy::VolatileLfu,
            2 => MaxmemoryPolicy::VolatileRandom,
            3 => MaxmemoryPolicy::VolatileTtl,
            4 => MaxmemoryPolicy::AllkeysLru,
            5 => MaxmemoryPolicy::AllkeysLfu,
            6 => MaxmemoryPolicy::AllkeysRandom,
            _ => MaxmemoryPolicy::NoEviction,
        }
    }
    pub fn maxmemory_samples(&self) -> u32 {
        self.num(MAXMEMORY_SAMPLES).clamp(1, i64::from(u32::MAX)) as u32
    }
    pub fn maxmemory_eviction_tenacity(&self) -> u32 {
        self.num(MAXMEMORY_TENACITY).clamp(0, 100) as u32
    }
    /// `maxmemory-clients`: `Err(percent)` when given as a percentage of
    /// maxmemory, `Ok(bytes)` otherwise (0 = no limit).
    pub fn maxmemory_clients(&self) -> Result<u64, u32> {
        let v = self.num(MAXMEMORY_CLIENTS);
        if v < 0 {
            Err(v.unsigned_abs() as u32)
        } else {
            Ok(v as u64)
        }
    }
    pub fn lfu_log_factor(&self) -> u32 {
        self.num(LFU_LOG_FACTOR).max(0) as u32
    }
    pub fn lfu_decay_time(&self) -> u32 {
        self.num(LFU_DECAY_TIME).max(0) as u32
    }
    /// Server cron frequency, already clamped to 1..=500.
    pub fn hz(&self) -> u32 {
        self.num(HZ).clamp(1, 500) as u32
    }
    pub fn dynamic_hz(&self) -> bool {
        self.num(DYNAMIC_HZ) != 0
    }
    pub fn proto_max_bulk_len(&self) -> u64 {
        self.num(PROTO_MAX_BULK_LEN) as u64
    }
    pub fn client_query_buffer_limit(&self) -> u64 {
        self.num(CLIENT_QUERY_BUFFER_LIMIT) as u64
    }
    pub fn client_output_buffer_limit(&self, class: ClientClass) -> ObufLimit {
        self.special.read().obuf[class as usize]
    }
    /// Microseconds; negative disables the slow log, 0 logs everything.
    pub fn slowlog_log_slower_than(&self) -> i64 {
        self.num(SLOWLOG_SLOWER_THAN)
    }
    pub fn slowlog_max_len(&self) -> u64 {
        self.num(SLOWLOG_MAX_LEN).max(0) as u64
    }
    /// Milliseconds; 0 = latency monitor off.
    pub fn latency_monitor_threshold(&self) -> u64 {
        self.num(LATENCY_MONITOR_THRESHOLD).max(0) as u64
    }
    pub fn latency_tracking(&self) -> bool {
        self.num(LATENCY_TRACKING) != 0
    }
    pub fn latency_tracking_info_percentiles(&self) -> Vec<f64> {
        self.special.read().percentiles.clone()
    }
    /// Active expiry cycle on/off (DEBUG SET-ACTIVE-EXPIRE; not a directive).
    pub fn active_expire_enabled(&self) -> bool {
        self.active_expire.load(Ordering::Relaxed)
    }
    pub fn set_active_expire_enabled(&self, on: bool) {
        self.active_expire.store(on, Ordering::Relaxed);
    }
    /// 1..=10.
    pub fn active_expire_effort(&self) -> u32 {
        self.num(ACTIVE_EXPIRE_EFFORT).clamp(1, 10) as u32
    }
    pub fn activerehashing(&self) -> bool {
        self.num(ACTIVEREHASHING) != 0
    }
    pub fn lazyfree_lazy_eviction(&self) -> bool {
        self.num(LAZY_EVICTION) != 0
    }
    pub fn lazyfree_lazy_expire(&self) -> bool {
        self.num(LAZY_EXPIRE) != 0
    }
    pub fn lazyfree_lazy_server_del(&self) -> bool {
        self.num(LAZY_SERVER_DEL) != 0
    }
    pub fn lazyfree_lazy_user_del(&self) -> bool {
        self.num(LAZY_USER_DEL) != 0
    }
    pub fn lazyfree_lazy_user_flush(&self) -> bool {
        self.num(LAZY_USER_FLUSH) != 0
    }
    pub fn notify_keyspace_events(&self) -> KeyspaceEvents {
        KeyspaceEvents(self.num(NOTIFY) as u32)
    }
    pub fn hash_max_listpack_entries(&self) -> u64 {
        self.num(HASH_LP_ENTRIES) as u64
    }
    pub fn hash_max_listpack_value(&self) -> u64 {
        self.num(HASH_LP_VALUE) as u64
    }
    pub fn set_max_intset_entries(&self) -> u64 {
        self.num(SET_INTSET_ENTRIES) as u64
    }
    /// Tessera extension (Redis 7.2 directive, hidden from `CONFIG GET *`).
    pub fn set_max_listpack_entries(&self) -> u64 {
        self.num(SET_LP_ENTRIES) as u64
    }
    /// Tessera extension (Redis 7.2 directive, hidden from `CONFIG GET *`).
    pub fn set_max_listpack_value(&self) -> u64 {
        self.num(SET_LP_VALUE) as u64
    }
    pub fn zset_max_listpack_entries(&self) -> u64 {
        self.num(ZSET_LP_ENTRIES) as u64
    }
    pub fn zset_max_listpack_value(&self) -> u64 {
        self.num(ZSET_LP_VALUE) as u64
    }
    /// Positive: max entries per list node; -1..-5: max node size 4/8/16/32/64 KiB.
    pub fn list_max_listpack_size(&self) -> i64 {
        self.num(LIST_LP_SIZE)
    }
    pub fn list_compress_depth(&self) -> u64 {
        self.num(LIST_COMPRESS_DEPTH).max(0) as u64
    }
    pub fn stream_node_max_bytes(&self) -> u64 {
        self.num(STREAM_NODE_MAX_BYTES) as u64
    }
    pub fn stream_node_max_entries(&self) -> u64 {
        self.num(STREAM_NODE_MAX_ENTRIES).max(0) as u64
    }
    pub fn hll_sparse_max_bytes(&self) -> u64 {
        self.num(HLL_SPARSE_MAX_BYTES) as u64
    }
    /// Milliseconds a script/function may run before BUSY replies.
    pub fn busy_reply_threshold(&self) -> u64 {
        self.num(BUSY_REPLY_THRESHOLD).max(0) as u64
    }
    pub fn tracking_table_max_keys(&self) -> u64 {
        self.num(TRACKING_TABLE_MAX_KEYS) as u64
    }
    pub fn acllog_max_len(&self) -> u64 {
        self.num(ACLLOG_MAX_LEN).max(0) as u64
    }
    pub fn acl_pubsub_default_allchannels(&self) -> bool {
        self.num(ACL_PUBSUB_DEFAULT) == 1
    }
    /// `sanitize-dump-payload`: "no", "yes" or "clients".
    pub fn sanitize_dump_payload(&self) -> String {
        render_enum(
            &TABLE[SANITIZE_DUMP_PAYLOAD],
            self.num(SANITIZE_DUMP_PAYLOAD),
        )
    }
    /// `save` points as (seconds, changes).
    pub fn save_params(&self) -> Vec<(u64, u64)> {
        self.special
            .read()
            .save
            .iter()
            .map(|&(s, c)| (s.max(0) as u64, c.max(0) as u64))
            .collect()
    }
    pub fn dbfilename(&self) -> String {
        self.str_val(DBFILENAME)
            .map(|v| lossy(&v))
            .unwrap_or_default()
    }
    pub fn rdbcompression(&self) -> bool {
        self.num(RDBCOMPRESSION) != 0
    }
    pub fn rdbchecksum(&self) -> bool {
        self.num(RDBCHECKSUM) != 0
    }
    pub fn appendfilename(&self) -> String {
        self.str_val(APPENDFILENAME)
            .map(|v| lossy(&v))
            .unwrap_or_default()
    }
    pub fn appenddirname(&self) -> String {
        self.str_val(APPENDDIRNAME)
            .map(|v| lossy(&v))
            .unwrap_or_default()
    }
    /// `appendfsync`: "always", "everysec" or "no".
    pub fn appendfsync(&self) -> String {
        render_enum(&TABLE[APPENDFSYNC], self.num(APPENDFSYNC))
    }
    pub fn aof_load_truncated(&self) -> bool {
        self.num(AOF_LOAD_TRUNCATED) != 0
    }
    pub fn no_appendfsync_on_rewrite(&self) -> bool {
        self.num(NO_APPENDFSYNC_ON_REWRITE) != 0
    }
    pub fn aof_use_rdb_preamble(&self) -> bool {
        self.num(AOF_USE_RDB_PREAMBLE) != 0
    }
    pub fn aof_timestamp_enabled(&self) -> bool {
        self.num(AOF_TIMESTAMP_ENABLED) != 0
    }
    pub fn auto_aof_rewrite_percentage(&self) -> i64 {
        self.num(AUTO_AOF_REWRITE_PERCENTAGE)
    }
    pub fn aof_rewrite_incremental_fsync(&self) -> bool {
        self.num(AOF_REWRITE_INCREMENTAL_FSYNC) != 0
    }
    pub fn auto_aof_rewrite_min_size(&self) -> i64 {
        self.num(AUTO_AOF_REWRITE_MIN_SIZE)
    }
    // Replication.
    pub fn replicaof(&self) -> Option<(Vec<u8>, i64)> {
        self.special.read().replicaof.clone()
    }
    /// REPLICAOF: what CONFIG GET and CONFIG REWRITE show.
    pub fn set_replicaof(&self, v: Option<(Vec<u8>, i64)>) {
        self.special.write().replicaof = v;
    }
    pub fn repl_backlog_size(&self) -> i64 {
        self.num(REPL_BACKLOG_SIZE)
    }
    pub fn repl_backlog_ttl(&self) -> i64 {
        self.num(REPL_BACKLOG_TTL)
    }
    pub fn repl_diskless_sync(&self) -> bool {
        self.num(REPL_DISKLESS_SYNC) != 0
    }
    pub fn repl_diskless_sync_delay(&self) -> i64 {
        self.num(REPL_DISKLESS_SYNC_DELAY)
    }
    pub fn repl_diskless_sync_max_replicas(&self) -> i64 {
        self.num(REPL_DISKLESS_SYNC_MAX_REPLICAS)
    }
    pub fn repl_diskless_load(&self) -> String {
        render_enum(&TABLE[REPL_DISKLESS_LOAD], self.num(REPL_DISKLESS_LOAD))
    }
    pub fn repl_timeout(&self) -> i64 {
        self.num(REPL_TIMEOUT)
    }
    pub fn repl_ping_replica_period(&self) -> i64 {
        self.num(REPL_PING_REPLICA_PERIOD)
    }
    pub fn repl_disable_tcp_nodelay(&self) -> bool {
        self.num(REPL_DISABLE_TCP_NODELAY) != 0
    }
    pub fn replica_read_only(&self) -> bool {
        self.num(REPLICA_READ_ONLY) != 0
    }
    pub fn replica_serve_stale_data(&self) -> bool {
        self.num(REPLICA_SERVE_STALE_DATA) != 0
    }
    pub fn replica_priority(&self) -> i64 {
        self.num(REPLICA_PRIORITY)
    }
    pub fn replica_announced(&self) -> bool {
        self.num(REPLICA_ANNOUNCED) != 0
    }
    pub fn replica_announce_ip(&self) -> Option<Vec<u8>> {
        self.str_val(REPLICA_ANNOUNCE_IP).filter(|v| !v.is_empty())
    }
    pub fn replica_announce_port(&self) -> i64 {
        self.num(REPLICA_ANNOUNCE_PORT)
    }
    /// Scripts may use setfenv, getfenv and newproxy (off by default since
    /// the CVE-2025-46818 fix).
    pub fn lua_enable_deprecated_api(&self) -> bool {
        self.num(LUA_ENABLE_DEPRECATED_API) != 0
    }
    pub fn replica_lazy_flush(&self) -> bool {
        self.num(REPLICA_LAZY_FLUSH) != 0
    }
    pub fn min_replicas_to_write(&self) -> i64 {
        self.num(MIN_REPLICAS_TO_WRITE)
    }
    pub fn min_replicas_max_lag(&self) -> i64 {
        self.num(MIN_REPLICAS_MAX_LAG)
    }
    pub fn masterauth(&self) -> Option<Vec<u8>> {
        self.str_val(MASTERAUTH).filter(|v| !v.is_empty())
    }
    /// The address outgoing links (to a master) bind to, when set.
    pub fn bind_source_addr(&self) -> Option<String> {
        self.str_val(BIND_SOURCE_ADDR)
            .filter(|v| !v.is_empty())
            .map(|v| String::from_utf8_lossy(&v).into_owned())
    }
    pub fn masteruser(&self) -> Option<Vec<u8>> {
        self.str_val(MASTERUSER).filter(|v| !v.is_empty())
    }
    pub fn tls_replication(&self) -> bool {
        self.num(TLS_REPLICATION) != 0
    }
    /// Tessera's semi-synchronous replication: a write's reply waits for
    /// this many replicas to acknowledge it (0: off).
    pub fn repl_semi_sync_replicas(&self) -> i64 {
        self.num(REPL_SEMI_SYNC_REPLICAS)
    }
    /// How long a semi-synchronous reply waits, in ms (0: as long as it
    /// takes).
    pub fn repl_semi_sync_timeout(&self) -> i64 {
        self.num(REPL_SEMI_SYNC_TIMEOUT)
    }
    /// Test-only: microseconds a save sleeps per key written.
    pub fn rdb_key_save_delay(&self) -> i64 {
        self.num(RDB_KEY_SAVE_DELAY)
    }
    /// Test-only: microseconds loading sleeps per key read.
    pub fn key_load_delay(&self) -> i64 {
        self.num(KEY_LOAD_DELAY)
    }
    pub fn rdb_del_sync_files(&self) -> bool {
        self.num(RDB_DEL_SYNC_FILES) != 0
    }
    pub fn rdb_save_incremental_fsync(&self) -> bool {
        self.num(RDB_SAVE_INCREMENTAL_FSYNC) != 0
    }
    pub fn stop_writes_on_bgsave_error(&self) -> bool {
        self.num(STOP_WRITES_ON_BGSAVE_ERROR) != 0
    }
    pub fn appendonly(&self) -> bool {
        self.num(APPENDONLY) != 0
    }
    pub fn shutdown_timeout(&self) -> u64 {
        self.num(SHUTDOWN_TIMEOUT).max(0) as u64
    }
    /// `shutdown-on-sigint` words ("default", or some of "save nosave now force").
    pub fn shutdown_on_sigint(&self) -> String {
        render_enum(&TABLE[SHUTDOWN_ON_SIGINT], self.num(SHUTDOWN_ON_SIGINT))
    }
    pub fn shutdown_on_sigterm(&self) -> String {
        render_enum(&TABLE[SHUTDOWN_ON_SIGTERM], self.num(SHUTDOWN_ON_SIGTERM))
    }
    /// `enable-debug-command` allows this client to run DEBUG.
    pub fn debug_command_allowed(&self, local_client: bool) -> bool {
        protected_action_allowed(self.num(ENABLE_DEBUG), local_client)
    }
    /// `enable-module-command` allows this client to run MODULE.
    pub fn module_command_allowed(&self, local_client: bool) -> bool {
        protected_action_allowed(self.num(ENABLE_MODULE), local_client)
    }
}

fn protected_action_allowed(v: i64, local: bool) -> bool {
    v == 1 || (v == 2 && local)
}

fn render_num(d: &Def, v: i64) -> String {
    match d.fmt {
        NumFmt::MemoryOrPercent if v < 0 => format!("{}%", v.unsigned_abs()),
        NumFmt::Memory | NumFmt::MemoryOrPercent => (v as u64).to_string(),
        NumFmt::Octal => format!("{:o}", v as u64),
        NumFmt::Int => v.to_string(),
    }
}

fn render_enum(d: &Def, v: i64) -> String {
    if let Some((name, _)) = d.enum_vals.iter().find(|(_, x)| *x == v) {
        return (*name).to_string();
    }
    if d.bitflags {
        let mut left = v;
        let mut names = Vec::new();
        for (name, x) in d.enum_vals {
            if *x != 0 && left & x == *x {
                names.push(*name);
                left &= !x;
            }
        }
        if left == 0 && !names.is_empty() {
            return names.join(" ");
        }
    }
    "unknown".to_string()
}

fn parse_num(d: &Def, a: &[u8]) -> Result<i64, String> {
    let mut v = None;
    if matches!(d.fmt, NumFmt::Memory | NumFmt::MemoryOrPercent) {
        v = mem_to_u64(a).map(|x| x as i64);
    }
    if v.is_none() && d.fmt == NumFmt::MemoryOrPercent {
        if let Some(num) = a.strip_suffix(b"%").filter(|n| !n.is_empty()) {
            v = strict_i64(num).filter(|n| *n >= 0).map(|n| -n);
        }
    }
    if v.is_none() && d.fmt == NumFmt::Octal {
        let (x, overflow, full) = c_strtoll(a, 8);
        if !overflow && full {
            v = Some(x);
        }
    }
    if v.is_none() && d.fmt == NumFmt::Int {
        v = strict_i64(a);
    }
    let Some(v) = v else {
        return Err(match d.fmt {
            NumFmt::MemoryOrPercent => "argument must be a memory or percent value",
            NumFmt::Memory => "argument must be a memory value",
            NumFmt::Octal => "argument couldn't be parsed as an octal number",
            NumFmt::Int => "argument couldn't be parsed into an integer",
        }
        .to_string());
    };
    if d.unsigned {
        let (uv, lo, hi) = (v as u64, d.min as u64, d.max as u64);
        if uv < lo || uv > hi {
            return Err(if d.fmt == NumFmt::Octal {
                format!("argument must be between {lo:o} and {hi:o} inclusive")
            } else {
                format!("argument must be between {lo} and {hi} inclusive")
            });
        }
    } else if d.fmt == NumFmt::MemoryOrPercent && v < 0 {
        if v < d.min {
            return Err(format!(
                "percentage argument must be less or equal to {}",
                d.min.unsigned_abs()
            ));
        }
    } else if v < d.min || v > d.max {
        return Err(format!(
            "argument must be between {} and {} inclusive",
            d.min, d.max
        ));
    }
    Ok(match d.clamp {
        Some((lo, hi)) => v.clamp(lo, hi),
        None => v,
    })
}

fn parse_enum(d: &Def, args: &[&[u8]]) -> Result<i64, String> {
    let find = |a: &[u8]| {
        d.enum_vals
            .iter()
            .find(|(n, _)| n.as_bytes().eq_ignore_ascii_case(a))
            .map(|(_, v)| *v)
    };
    let bad = || {
        let names: Vec<&str> = d.enum_vals.iter().map(|(n, _)| *n).collect();
        let mut msg = format!(
            "argument(s) must be one of the following: {}",
            names.join(", ")
        );
        msg.truncate(255);
        msg
    };
    if d.bitflags {
        if args.is_empty() {
            return Err(bad());
        }
        let mut v = 0;
        for a in args {
            v |= find(a).ok_or_else(bad)?;
        }
        Ok(v)
    } else {
        match args {
            [a] => find(a).ok_or_else(bad),
            _ => Err("wrong number of arguments".into()),
        }
    }
}

fn parse_special(sp: Special, args: &[&[u8]], base_dir: &str) -> Result<Value, String> {
    // A single empty argument stands for "no arguments" where lists are taken.
    let list: &[&[u8]] = match args {
        [[]] => &[],
        _ => args,
    };
    match sp {
        Special::Dir => {
            let [a] = args else {
                return Err("wrong number of arguments".into());
            };
            let p = PathBuf::from(lossy(a));
            let full = if p.is_absolute() {
                p
            } else {
                PathBuf::from(base_dir).join(p)
            };
            let canon = std::fs::canonicalize(&full).map_err(|e| strerror(&e))?;
            if !canon.is_dir() {
                return Err("Not a directory".into());
            }
            Ok(Value::Dir(canon.to_string_lossy().into_owned()))
        }
        Special::Save => {
            // As any multi-argument directive in Redis, one argument holding
            // spaces is its words (`--save "3600 1"`).
            let split: Vec<&[u8]>;
            let list: &[&[u8]] = match list {
                [one] if one.contains(&b' ') => {
                    split = one
                        .split(|&b| b == b' ')
                        .filter(|w| !w.is_empty())
                        .collect();
                    &split
                }
                _ => list,
            };
            if !list.len().is_multiple_of(2) {
                return Err("Invalid save parameters".into());
            }
            let mut pairs = Vec::with_capacity(list.len() / 2);
            for pair in list.chunks(2) {
                let (secs, _, full_s) = c_strtoll(pair[0], 10);
                let (changes, _, full_c) = c_strtoll(pair[1], 10);
                if !full_s || !full_c || secs < 1 || changes < 0 {
                    return Err("Invalid save parameters".into());
                }
                // Redis keeps the change count in an int.
                pairs.push((secs, i64::from(changes as i32)));
            }
            Ok(Value::Save(pairs))
        }
        Special::ClientOutputBufferLimit => {
            if !args.len().is_multiple_of(4) {
                return Err("Wrong number of arguments in buffer limit configuration.".into());
            }
            let mut out = [None; 3];
            for g in args.chunks(4) {
                let class = match g[0].to_ascii_lowercase().as_slice() {
                    b"normal" => 0,
                    b"slave" | b"replica" => 1,
                    b"pubsub" => 2,
                    _ => {
                        return Err(
                            "Invalid client class specified in buffer limit configuration.".into(),
                        )
                    }
                };
                let hard = mem_to_u64(g[1]);
                let soft = mem_to_u64(g[2]);
                let (secs, _, full) = c_strtoll(g[3], 10);
                // Redis keeps the seconds in an int.
                let secs = secs as i32;
                match (hard, soft) {
                    (Some(hard_bytes), Some(soft_bytes)) if full && secs >= 0 => {
                        out[class] = Some(ObufLimit { hard_bytes, soft_bytes, soft_seconds: secs as u64 });
                    }
                    _ => {
                        return Err(
                            "Error in hard, soft or soft_seconds setting in buffer limit configuration.".into()
                        )
                    }
                }
            }
            Ok(Value::Obuf(out))
        }
        Special::OomScoreAdjValues => {
            if args.len() != 3 {
                return Err("wrong number of arguments".into());
            }
            let mut v = [0i32; 3];
            for (slot, a) in v.iter_mut().zip(args) {
                let (x, _, full) = c_strtoll(a, 10);
                if !full || !(-2000..=2000).contains(&x) {
                    return Err(
                        "Invalid oom-score-adj-values, elements must be between -2000 and 2000."
                            .into(),
                    );
                }
                *slot = x as i32;
            }
            Ok(Value::Oom(v))
        }
        Special::NotifyKeyspaceEvents => {
            let [a] = args else {
                return Err("wrong number of arguments".into());
            };
            // (Redis reads the classes as a C string: a NUL ends them.)
            let a = crate::util::c_str(a);
            let f = KeyspaceEvents::parse(a).ok_or_else(|| {
                "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".to_string()
            })?;
            Ok(Value::Num(i64::from(f.0)))
        }
        Special::Bind => {
            if args.len() > BIND_MAX {
                return Err("Too many bind addresses specified.".into());
            }
            Ok(Value::Bind(list.iter().map(|a| a.to_vec()).collect()))
        }
        Special::ReplicaOf => {
            let [host, port] = args else {
                return Err("wrong number of arguments".into());
            };
            if host.eq_ignore_ascii_case(b"no") && port.eq_ignore_ascii_case(b"one") {
                return Ok(Value::ReplicaOf(None));
            }
            let (p, _, full) = c_strtoll(port, 10);
            if !full || !(0..=65535).contains(&p) {
                return Err("Invalid master port".into());
            }
            Ok(Value::ReplicaOf(Some((host.to_vec(), p))))
        }
        Special::LatencyTrackingInfoPercentiles => {
            let mut v = Vec::with_capacity(list.len());
            for a in list {
                let p = strict_f64(a).ok_or_else(|| {
                    "Invalid latency-tracking-info-percentiles parameters".to_string()
                })?;
                if !(0.0..=100.0).contains(&p) {
                    return Err("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]".into());
                }
                v.push(p);
            }
            Ok(Value::Percentiles(v))
        }
    }
}
