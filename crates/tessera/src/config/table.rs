//! The declarative directive table: every directive redis-server 7.0 knows,
//! plus Tessera's own, with alias, type, bounds, default and flags.

/// CONFIG SET refuses it ("can't set immutable config").
pub(crate) const IMMUTABLE: u16 = 1 << 0;
/// Left out of glob matches of CONFIG GET; an exact name still finds it.
pub(crate) const HIDDEN: u16 = 1 << 1;
/// CONFIG SET needs `enable-protected-configs` to allow it.
pub(crate) const PROTECTED: u16 = 1 << 2;
/// CONFIG SET is refused while a dataset is loading.
pub(crate) const DENY_LOADING: u16 = 1 << 3;
/// The value is a secret: callers should redact it in logs and MONITOR.
pub(crate) const SENSITIVE: u16 = 1 << 4;
/// Takes any number of arguments (CONFIG SET splits its value on spaces).
pub(crate) const MULTI_ARG: u16 = 1 << 5;

const INT_MAX: i64 = i32::MAX as i64;
const INT_MIN: i64 = i32::MIN as i64;
const UINT_MAX: i64 = u32::MAX as i64;
const LONG_MAX: i64 = i64::MAX;
/// u64::MAX, kept in an i64 slot; compared as unsigned.
const ULLONG_MAX: i64 = -1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ty {
    Bool,
    Num,
    Enum,
    Str,
    Special(Special),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Special {
    Dir,
    Save,
    ClientOutputBufferLimit,
    OomScoreAdjValues,
    NotifyKeyspaceEvents,
    Bind,
    ReplicaOf,
    LatencyTrackingInfoPercentiles,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NumFmt {
    Int,
    Memory,
    MemoryOrPercent,
    Octal,
}

/// Extra validation run after the type's own parsing and bounds.
#[derive(Clone, Copy)]
pub(crate) enum Check {
    None,
    Int(fn(i64) -> Result<(), String>),
    Str(fn(&[u8]) -> Result<(), String>),
}

#[derive(Clone, Copy)]
pub(crate) struct Def {
    pub name: &'static str,
    pub alias: Option<&'static str>,
    /// A Tessera name accepted only where the server is configured at
    /// start-up (command line, config file): CONFIG GET/SET know only
    /// Redis's names.
    pub startup_alias: Option<&'static str>,
    pub flags: u16,
    pub ty: Ty,
    /// Numeric bounds (inclusive), as i64 bit patterns; see `unsigned`.
    pub min: i64,
    pub max: i64,
    /// Default of Bool (0/1), Num and Enum entries.
    pub default: i64,
    pub fmt: NumFmt,
    /// Bounds are compared as u64 (Redis's unsigned int / size_t / unsigned long long).
    pub unsigned: bool,
    /// After a successful set the value is clamped into this range (`hz`).
    pub clamp: Option<(i64, i64)>,
    /// CONFIG SET raises a smaller value to this one, as the apply step of
    /// Redis's directive does (a config file's value stays as given).
    pub set_floor: Option<i64>,
    pub enum_vals: &'static [(&'static str, i64)],
    /// Enum whose value is a set of flags given as several words.
    pub bitflags: bool,
    /// Default of Str entries; `None` is "unset" (printed as "").
    pub str_default: Option<&'static str>,
    /// For Str entries: an empty value means unset.
    pub empty_is_null: bool,
    pub check: Check,
}

const BASE: Def = Def {
    name: "",
    alias: None,
    startup_alias: None,
    flags: 0,
    ty: Ty::Bool,
    min: 0,
    max: 0,
    default: 0,
    fmt: NumFmt::Int,
    unsigned: false,
    clamp: None,
    set_floor: None,
    enum_vals: &[],
    bitflags: false,
    str_default: None,
    empty_is_null: false,
    check: Check::None,
};

const fn b(name: &'static str, flags: u16, default: bool) -> Def {
    Def {
        name,
        flags,
        ty: Ty::Bool,
        default: default as i64,
        ..BASE
    }
}

/// Signed integer.
const fn i(name: &'static str, flags: u16, min: i64, max: i64, default: i64) -> Def {
    Def {
        name,
        flags,
        ty: Ty::Num,
        min,
        max,
        default,
        ..BASE
    }
}

/// Unsigned integer (bounds compared as u64).
const fn u(name: &'static str, flags: u16, min: i64, max: i64, default: i64) -> Def {
    Def {
        name,
        flags,
        ty: Ty::Num,
        min,
        max,
        default,
        unsigned: true,
        ..BASE
    }
}

/// Signed memory amount.
const fn m(name: &'static str, flags: u16, min: i64, max: i64, default: i64) -> Def {
    Def {
        name,
        flags,
        ty: Ty::Num,
        min,
        max,
        default,
        fmt: NumFmt::Memory,
        ..BASE
    }
}

/// Unsigned memory amount.
const fn um(name: &'static str, flags: u16, min: i64, max: i64, default: i64) -> Def {
    Def {
        name,
        flags,
        ty: Ty::Num,
        min,
        max,
        default,
        fmt: NumFmt::Memory,
        unsigned: true,
        ..BASE
    }
}

/// String; `None` default = unset. `null` = an empty value unsets it.
const fn s(name: &'static str, flags: u16, null: bool, default: Option<&'static str>) -> Def {
    Def {
        name,
        flags,
        ty: Ty::Str,
        str_default: default,
        empty_is_null: null,
        ..BASE
    }
}

const fn e(
    name: &'static str,
    flags: u16,
    vals: &'static [(&'static str, i64)],
    default: i64,
) -> Def {
    Def {
        name,
        flags,
        ty: Ty::Enum,
        enum_vals: vals,
        default,
        ..BASE
    }
}

const fn sp(name: &'static str, flags: u16, special: Special) -> Def {
    Def {
        name,
        flags,
        ty: Ty::Special(special),
        ..BASE
    }
}

impl Def {
    const fn alias(mut self, alias: &'static str) -> Def {
        self.alias = Some(alias);
        self
    }
    const fn startup_alias(mut self, alias: &'static str) -> Def {
        self.startup_alias = Some(alias);
        self
    }
    const fn check(mut self, check: Check) -> Def {
        self.check = check;
        self
    }
    const fn fmt(mut self, fmt: NumFmt) -> Def {
        self.fmt = fmt;
        self
    }
    const fn clamp(mut self, lo: i64, hi: i64) -> Def {
        self.clamp = Some((lo, hi));
        self
    }
    const fn set_floor(mut self, floor: i64) -> Def {
        self.set_floor = Some(floor);
        self
    }
    const fn bitflags(mut self) -> Def {
        self.bitflags = true;
        self.flags |= MULTI_ARG;
        self
    }

    pub(crate) fn has(&self, flag: u16) -> bool {
        self.flags & flag != 0
    }
}

// ---------------------------------------------------------------------------
// Enumerations. Names are listed in the order error messages list them; the
// numbers are Tessera's own.

pub(crate) const LOGLEVEL: &[(&str, i64)] =
    &[("debug", 0), ("verbose", 1), ("notice", 2), ("warning", 3)];
pub(crate) const MAXMEMORY_POLICY: &[(&str, i64)] = &[
    ("volatile-lru", 0),
    ("volatile-lfu", 1),
    ("volatile-random", 2),
    ("volatile-ttl", 3),
    ("allkeys-lru", 4),
    ("allkeys-lfu", 5),
    ("allkeys-random", 6),
    ("noeviction", 7),
];
const SYSLOG_FACILITY: &[(&str, i64)] = &[
    ("user", 0),
    ("local0", 1),
    ("local1", 2),
    ("local2", 3),
    ("local3", 4),
    ("local4", 5),
    ("local5", 6),
    ("local6", 7),
    ("local7", 8),
];
const SUPERVISED: &[(&str, i64)] = &[("upstart", 1), ("systemd", 2), ("auto", 3), ("no", 0)];
pub(crate) const APPENDFSYNC: &[(&str, i64)] = &[("everysec", 0), ("always", 1), ("no", 2)];
const REPL_DISKLESS_LOAD: &[(&str, i64)] = &[("disabled", 0), ("on-empty-db", 1), ("swapdb", 2)];
const TLS_AUTH_CLIENTS: &[(&str, i64)] = &[("no", 0), ("yes", 1), ("optional", 2)];
const OOM_SCORE_ADJ: &[(&str, i64)] = &[("no", 0), ("yes", 1), ("relative", 1), ("absolute", 2)];
const ACL_PUBSUB_DEFAULT: &[(&str, i64)] = &[("allchannels", 1), ("resetchannels", 0)];
const SANITIZE_DUMP_PAYLOAD: &[(&str, i64)] = &[("no", 0), ("yes", 1), ("clients", 2)];
/// Values of `enable-protected-configs`, `enable-debug-command`, `enable-module-command`.
pub(crate) const PROTECTED_ACTION: &[(&str, i64)] = &[("no", 0), ("yes", 1), ("local", 2)];
const CLUSTER_ENDPOINT_TYPE: &[(&str, i64)] =
    &[("ip", 0), ("hostname", 1), ("unknown-endpoint", 2)];
const PROPAGATION_ERROR_BEHAVIOR: &[(&str, i64)] =
    &[("ignore", 0), ("panic", 1), ("panic-on-replicas", 2)];
/// Flags of `shutdown-on-sigint` / `shutdown-on-sigterm`.
pub(crate) const SHUTDOWN_FLAGS: &[(&str, i64)] = &[
    ("default", 0),
    ("save", 1),
    ("nosave", 2),
    ("now", 4),
    ("force", 8),
];

// ---------------------------------------------------------------------------
// Validators. Those marked "Tessera" refuse values Tessera cannot honour yet.

fn not_yet(what: &str) -> String {
    format!("{what} is not supported by Tessera yet")
}

fn check_daemonize(v: i64) -> Result<(), String> {
    if v != 0 {
        return Err(not_yet("daemonize yes"));
    }
    Ok(())
}

fn check_cluster_enabled(v: i64) -> Result<(), String> {
    if v != 0 {
        return Err(not_yet("cluster-enabled yes (cluster mode)"));
    }
    Ok(())
}

fn check_activedefrag(v: i64) -> Result<(), String> {
    if v != 0 {
        return Err(not_yet("Active defragmentation"));
    }
    Ok(())
}

fn check_shutdown_flags(v: i64) -> Result<(), String> {
    if v & 1 != 0 && v & 2 != 0 {
        return Err("shutdown options SAVE and NOSAVE can't be used simultaneously".into());
    }
    Ok(())
}

fn is_base_name(v: &[u8]) -> bool {
    !v.contains(&b'/') && !v.contains(&b'\\')
}

fn check_dbfilename(v: &[u8]) -> Result<(), String> {
    if !is_base_name(v) {
        return Err("dbfilename can't be a path, just a filename".into());
    }
    Ok(())
}

fn check_appendfilename(v: &[u8]) -> Result<(), String> {
    if v.is_empty() {
        return Err("appendfilename can't be empty".into());
    }
    if !is_base_name(v) {
        return Err("appendfilename can't be a path, just a filename".into());
    }
    Ok(())
}

fn check_appenddirname(v: &[u8]) -> Result<(), String> {
    if v.is_empty() {
        return Err("appenddirname can't be empty".into());
    }
    if !is_base_name(v) {
        return Err("appenddirname can't be a path, just a dirname".into());
    }
    Ok(())
}

fn check_hostname(v: &[u8]) -> Result<(), String> {
    if v.len() >= 256 {
        return Err("Hostnames must be less than 256 characters".into());
    }
    if !v
        .iter()
        .all(|c| c.is_ascii_alphanumeric() || *c == b'-' || *c == b'.')
    {
        return Err("Hostnames may only contain alphanumeric characters, hyphens or dots".into());
    }
    Ok(())
}

/// `proc-title-template`: `{name}` variables from a fixed set, `{{`/`}}`
/// for literal braces, and it must not expand to blanks only. As in Redis,
/// the check expands `{title}`, `{server-mode}` and `{unixsocket}` as empty
/// (their values while validating a standalone server without a socket).
fn check_proc_title(v: &[u8]) -> Result<(), String> {
    const VARS: &[(&[u8], bool)] = &[
        (b"title", false),
        (b"listen-addr", true),
        (b"server-mode", false),
        (b"port", true),
        (b"tls-port", true),
        (b"unixsocket", false),
        (b"config-file", true),
    ];
    let bad = || Err("template format is invalid or contains unknown variables".to_string());
    let mut expanded = Vec::with_capacity(v.len());
    let mut i = 0;
    while i < v.len() {
        match v[i] {
            b'{' if v.get(i + 1) == Some(&b'{') => {
                expanded.push(b'{');
                i += 2;
            }
            b'{' => {
                let Some(len) = v[i + 1..].iter().position(|&c| c == b'}') else {
                    return bad();
                };
                let var = &v[i + 1..i + 1 + len];
                let Some((_, non_empty)) = VARS.iter().find(|(name, _)| *name == var) else {
                    return bad();
                };
                if *non_empty {
                    expanded.push(b'x');
                }
                i += len + 2;
            }
            b'}' if v.get(i + 1) == Some(&b'}') => {
                expanded.push(b'}');
                i += 2;
            }
            c => {
                expanded.push(c);
                i += 1;
            }
        }
    }
    if expanded.iter().all(|&c| c == b' ') {
        return bad();
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// The table. Order is the order CONFIG REWRITE appends new lines in.

const MOD: u16 = 0;
const IMM: u16 = IMMUTABLE;

pub(crate) const TABLE: &[Def] = &[
    // Tessera's worker threads (0 = one per core), under Redis's name for its
    // I/O threads; `--threads` is Tessera's own spelling of it.
    i("io-threads", IMM, 0, 1024, 0).startup_alias("threads"),
    // Booleans.
    b("rdbchecksum", IMM, true),
    b("daemonize", IMM, false).check(Check::Int(check_daemonize)),
    b("io-threads-do-reads", IMM, false),
    b("always-show-logo", IMM, false),
    b("protected-mode", MOD, true),
    b("rdbcompression", MOD, true),
    b("rdb-del-sync-files", MOD, false),
    b("activerehashing", MOD, true),
    b("stop-writes-on-bgsave-error", MOD, true),
    b("set-proc-title", IMM, true),
    b("dynamic-hz", MOD, true),
    b("lazyfree-lazy-eviction", MOD, false),
    b("lazyfree-lazy-expire", MOD, false),
    b("lazyfree-lazy-server-del", MOD, false),
    b("lazyfree-lazy-user-del", MOD, false),
    b("lazyfree-lazy-user-flush", MOD, false),
    b("repl-disable-tcp-nodelay", MOD, false),
    b("repl-diskless-sync", MOD, true),
    b("aof-rewrite-incremental-fsync", MOD, true),
    b("no-appendfsync-on-rewrite", MOD, false),
    b("cluster-require-full-coverage", MOD, true),
    b("rdb-save-incremental-fsync", MOD, true),
    b("aof-load-truncated", MOD, true),
    b("aof-use-rdb-preamble", MOD, true),
    b("aof-timestamp-enabled", MOD, false),
    b("cluster-replica-no-failover", MOD, false).alias("cluster-slave-no-failover"),
    b("replica-lazy-flush", MOD, false).alias("slave-lazy-flush"),
    b("replica-serve-stale-data", MOD, true).alias("slave-serve-stale-data"),
    b("replica-read-only", MOD, true).alias("slave-read-only"),
    b("replica-ignore-maxmemory", MOD, true).alias("slave-ignore-maxmemory"),
    b("jemalloc-bg-thread", MOD, true),
    b("activedefrag", MOD, false).check(Check::Int(check_activedefrag)),
    b("syslog-enabled", IMM, false),
    b("cluster-enabled", IMM, false).check(Check::Int(check_cluster_enabled)),
    b("appendonly", MOD | DENY_LOADING, false),
    b("cluster-allow-reads-when-down", MOD, false),
    b("cluster-allow-pubsubshard-when-down", MOD, true),
    b("crash-log-enabled", MOD, true),
    b("crash-memcheck-enabled", MOD, true),
    b("use-exit-on-panic", MOD | HIDDEN, false),
    b("disable-thp", IMM, true),
    b("cluster-allow-replica-migration", MOD, true),
    b("replica-announced", MOD, true),
    b("latency-tracking", MOD, true),
    b("aof-disable-auto-gc", MOD, false),
    b("replica-ignore-disk-write-errors", MOD, false),
    b("lua-enable-deprecated-api", IMM | HIDDEN, false),
    // Strings.
    s("aclfile", IMM, false, Some("")),
    s("unixsocket", IMM, true, None),
    s("pidfile", IMM, true, None),
    s("replica-announce-ip", MOD, true, None).alias("slave-announce-ip"),
    s("masteruser", MOD | SENSITIVE, true, None),
    s("cluster-announce-ip", MOD, true, None),
    s("cluster-config-file", IMM, false, Some("nodes.conf")),
    s("cluster-announce-hostname", MOD, true, None).check(Check::Str(check_hostname)),
    s("syslog-ident", IMM, false, Some("redis")),
    s("dbfilename", MOD | PROTECTED, false, Some("dump.rdb")).check(Check::Str(check_dbfilename)),
    s("appendfilename", IMM, false, Some("appendonly.aof")).check(Check::Str(check_appendfilename)),
    s("appenddirname", IMM, false, Some("appendonlydir")).check(Check::Str(check_appenddirname)),
    s("server_cpulist", IMM, true, None),
    s("bio_cpulist", IMM, true, None),
    s("aof_rewrite_cpulist", IMM, true, None),
    s("bgsave_cpulist", IMM, true, None),
    s("ignore-warnings", MOD, false, Some("")),
    s(
        "proc-title-template",
        MOD,
        false,
        Some("{title} {listen-addr} {server-mode}"),
    )
    .check(Check::Str(check_proc_title)),
    s("bind-source-addr", MOD, true, None),
    s("logfile", IMM, false, Some("")),
    s("masterauth", MOD | SENSITIVE, true, None),
    s("requirepass", MOD | SENSITIVE, true, None),
    // Enumerations.
    e("supervised", IMM, SUPERVISED, 0),
    e("syslog-facility", IMM, SYSLOG_FACILITY, 1),
    e(
        "repl-diskless-load",
        MOD | DENY_LOADING,
        REPL_DISKLESS_LOAD,
        0,
    ),
    e("loglevel", MOD, LOGLEVEL, 2),
    e("maxmemory-policy", MOD, MAXMEMORY_POLICY, 7),
    e("appendfsync", MOD, APPENDFSYNC, 0),
    e("oom-score-adj", MOD, OOM_SCORE_ADJ, 0),
    e("acl-pubsub-default", MOD, ACL_PUBSUB_DEFAULT, 0),
    e("sanitize-dump-payload", MOD, SANITIZE_DUMP_PAYLOAD, 0),
    e("enable-protected-configs", IMM, PROTECTED_ACTION, 0),
    e("enable-debug-command", IMM, PROTECTED_ACTION, 0),
    e("enable-module-command", IMM, PROTECTED_ACTION, 0),
    e(
        "cluster-preferred-endpoint-type",
        MOD,
        CLUSTER_ENDPOINT_TYPE,
        0,
    ),
    e(
        "propagation-error-behavior",
        MOD,
        PROPAGATION_ERROR_BEHAVIOR,
        0,
    ),
    e("shutdown-on-sigint", MOD, SHUTDOWN_FLAGS, 0)
        .bitflags()
        .check(Check::Int(check_shutdown_flags)),
    e("shutdown-on-sigterm", MOD, SHUTDOWN_FLAGS, 0)
        .bitflags()
        .check(Check::Int(check_shutdown_flags)),
    // Integers.
    i("databases", IMM, 1, INT_MAX, 16),
    i("port", MOD, 0, 65535, 6379),
    i("auto-aof-rewrite-percentage", MOD, 0, INT_MAX, 100),
    i("cluster-replica-validity-factor", MOD, 0, INT_MAX, 10)
        .alias("cluster-slave-validity-factor"),
    i("list-max-listpack-size", MOD, INT_MIN, INT_MAX, -2).alias("list-max-ziplist-size"),
    i("tcp-keepalive", MOD, 0, INT_MAX, 300),
    i("cluster-migration-barrier", MOD, 0, INT_MAX, 1),
    i("active-defrag-cycle-min", MOD, 1, 99, 1),
    i("active-defrag-cycle-max", MOD, 1, 99, 25),
    i("active-defrag-threshold-lower", MOD, 0, 1000, 10),
    i("active-defrag-threshold-upper", MOD, 0, 1000, 100),
    i("lfu-log-factor", MOD, 0, INT_MAX, 10),
    i("lfu-decay-time", MOD, 0, INT_MAX, 1),
    i("replica-priority", MOD, 0, INT_MAX, 100).alias("slave-priority"),
    i("repl-diskless-sync-delay", MOD, 0, INT_MAX, 5),
    i("maxmemory-samples", MOD, 1, INT_MAX, 5),
    i("maxmemory-eviction-tenacity", MOD, 0, 100, 10),
    i("timeout", MOD, 0, INT_MAX, 0),
    i("replica-announce-port", MOD, 0, 65535, 0).alias("slave-announce-port"),
    i("tcp-backlog", IMM, 0, INT_MAX, 511),
    i("cluster-port", IMM, 0, 65535, 0),
    i("cluster-announce-bus-port", MOD, 0, 65535, 0),
    i("cluster-announce-port", MOD, 0, 65535, 0),
    i("cluster-announce-tls-port", MOD, 0, 65535, 0),
    i("repl-timeout", MOD, 1, INT_MAX, 60),
    i("repl-ping-replica-period", MOD, 1, INT_MAX, 10).alias("repl-ping-slave-period"),
    i("list-compress-depth", MOD, 0, INT_MAX, 0),
    i("rdb-key-save-delay", MOD | HIDDEN, INT_MIN, INT_MAX, 0),
    i("key-load-delay", MOD | HIDDEN, INT_MIN, INT_MAX, 0),
    // Tessera's own: semi-synchronous replication (README). Hidden from
    // CONFIG GET patterns, as they are not Redis's.
    i("repl-semi-sync-replicas", MOD | HIDDEN, 0, INT_MAX, 0),
    i("repl-semi-sync-timeout", MOD | HIDDEN, 0, INT_MAX, 0),
    i("active-expire-effort", MOD, 1, 10, 1),
    i("hz", MOD, 0, INT_MAX, 10).clamp(1, 500),
    i("min-replicas-to-write", MOD, 0, INT_MAX, 0).alias("min-slaves-to-write"),
    i("min-replicas-max-lag", MOD, 0, INT_MAX, 10).alias("min-slaves-max-lag"),
    i("watchdog-period", MOD | HIDDEN, 0, INT_MAX, 0),
    i("shutdown-timeout", MOD, 0, INT_MAX, 10),
    i("repl-diskless-sync-max-replicas", MOD, 0, INT_MAX, 0),
    u("maxclients", MOD, 1, UINT_MAX, 10000),
    u("unixsocketperm", IMM, 0, 0o777, 0).fmt(NumFmt::Octal),
    u("socket-mark-id", IMM, 0, UINT_MAX, 0),
    i("active-defrag-max-scan-fields", MOD, 1, LONG_MAX, 1000),
    i("slowlog-max-len", MOD, 0, LONG_MAX, 128),
    i("acllog-max-len", MOD, 0, LONG_MAX, 128),
    i("busy-reply-threshold", MOD, 0, LONG_MAX, 5000).alias("lua-time-limit"),
    i("cluster-node-timeout", MOD, 0, LONG_MAX, 15000),
    i("slowlog-log-slower-than", MOD, -1, LONG_MAX, 10000),
    i("latency-monitor-threshold", MOD, 0, LONG_MAX, 0),
    m(
        "proto-max-bulk-len",
        MOD,
        1024 * 1024,
        LONG_MAX,
        512 * 1024 * 1024,
    ),
    i("stream-node-max-entries", MOD, 0, LONG_MAX, 100),
    // (Resizing the backlog raises it to its 16 KB minimum.)
    m("repl-backlog-size", MOD, 1, LONG_MAX, 1024 * 1024).set_floor(16 * 1024),
    um("maxmemory", MOD, 0, ULLONG_MAX, 0),
    um("cluster-link-sendbuf-limit", MOD, 0, ULLONG_MAX, 0),
    u("hash-max-listpack-entries", MOD, 0, LONG_MAX, 512).alias("hash-max-ziplist-entries"),
    u("set-max-intset-entries", MOD, 0, LONG_MAX, 512),
    u("zset-max-listpack-entries", MOD, 0, LONG_MAX, 128).alias("zset-max-ziplist-entries"),
    um("active-defrag-ignore-bytes", MOD, 1, LONG_MAX, 100 << 20),
    um("hash-max-listpack-value", MOD, 0, LONG_MAX, 64).alias("hash-max-ziplist-value"),
    um("stream-node-max-bytes", MOD, 0, LONG_MAX, 4096),
    um("zset-max-listpack-value", MOD, 0, LONG_MAX, 64).alias("zset-max-ziplist-value"),
    um("hll-sparse-max-bytes", MOD, 0, LONG_MAX, 3000),
    u("tracking-table-max-keys", MOD, 0, LONG_MAX, 1_000_000),
    um(
        "client-query-buffer-limit",
        MOD,
        1024 * 1024,
        LONG_MAX,
        1024 * 1024 * 1024,
    ),
    m("maxmemory-clients", MOD, -100, LONG_MAX, 0).fmt(NumFmt::MemoryOrPercent),
    i("repl-backlog-ttl", MOD, 0, LONG_MAX, 3600),
    m(
        "auto-aof-rewrite-min-size",
        MOD,
        0,
        LONG_MAX,
        64 * 1024 * 1024,
    ),
    i(
        "loading-process-events-interval-bytes",
        MOD | HIDDEN,
        1024,
        INT_MAX,
        2 * 1024 * 1024,
    ),
    // Tessera: Redis 7.2's small-set listpack encoding limits. Hidden so that
    // `CONFIG GET *` lists exactly what 7.0 lists; exact names still work.
    u("set-max-listpack-entries", MOD | HIDDEN, 0, LONG_MAX, 128),
    um("set-max-listpack-value", MOD | HIDDEN, 0, LONG_MAX, 64),
    // TLS (server/tls.rs builds the rustls configuration from these).
    i("tls-port", MOD, 0, 65535, 0),
    i("tls-session-cache-size", MOD, 0, INT_MAX, 20 * 1024),
    i("tls-session-cache-timeout", MOD, 0, INT_MAX, 300),
    b("tls-cluster", MOD, false),
    b("tls-replication", MOD, false),
    e("tls-auth-clients", MOD, TLS_AUTH_CLIENTS, 1),
    b("tls-prefer-server-ciphers", MOD, false),
    b("tls-session-caching", MOD, true),
    s("tls-cert-file", MOD, true, None),
    s("tls-key-file", MOD, true, None),
    s("tls-key-file-pass", MOD, true, None),
    s("tls-client-cert-file", MOD, true, None),
    s("tls-client-key-file", MOD, true, None),
    s("tls-client-key-file-pass", MOD, true, None),
    s("tls-dh-params-file", MOD, true, None),
    s("tls-ca-cert-file", MOD, true, None),
    s("tls-ca-cert-dir", MOD, true, None),
    s("tls-protocols", MOD, true, None),
    s("tls-ciphers", MOD, true, None),
    s("tls-ciphersuites", MOD, true, None),
    // Special ones.
    sp("dir", MOD | PROTECTED | DENY_LOADING, Special::Dir),
    // `save` is stored and reported; nothing acts on it until persistence lands.
    sp("save", MOD | MULTI_ARG, Special::Save),
    sp(
        "client-output-buffer-limit",
        MOD | MULTI_ARG,
        Special::ClientOutputBufferLimit,
    ),
    sp(
        "oom-score-adj-values",
        MOD | MULTI_ARG,
        Special::OomScoreAdjValues,
    ),
    sp("notify-keyspace-events", MOD, Special::NotifyKeyspaceEvents),
    sp("bind", MOD | MULTI_ARG, Special::Bind),
    sp("replicaof", IMM | MULTI_ARG, Special::ReplicaOf).alias("slaveof"),
    sp(
        "latency-tracking-info-percentiles",
        MOD | MULTI_ARG,
        Special::LatencyTrackingInfoPercentiles,
    ),
];

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Index of a primary name in [`TABLE`], resolved at compile time.
pub(crate) const fn idx(name: &str) -> usize {
    let mut i = 0;
    while i < TABLE.len() {
        if str_eq(TABLE[i].name, name) {
            return i;
        }
        i += 1;
    }
    panic!("config table has no such directive")
}
