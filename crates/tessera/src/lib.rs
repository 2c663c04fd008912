//! Tessera's core: everything between the socket and the data.
//!
//! `keyspace` owns databases, shards, entries and expiry; `types` the value
//! encodings; `commands` the one declarative command table and a module per
//! command family (parse → operate → reply); `server` the listeners, event
//! loops, connections and client registry; `config` the redis.conf
//! directives. RESP framing lives in the separate `tessera-resp` crate so it
//! can be fuzzed without any of this.

pub mod acl;
pub mod commands;
pub mod config;
pub mod journal;
pub mod keyspace;
pub mod persistence;
pub mod scripting;
pub mod server;
pub mod types;
pub mod util;

/// The Redis release whose behaviour Tessera reproduces; clients gate
/// features on it, so INFO and HELLO report it as `redis_version`/`version`.
pub const REDIS_COMPAT_VERSION: &str = "7.0.15";
/// Tessera's own version, reported separately as `tessera_version`.
pub const TESSERA_VERSION: &str = env!("CARGO_PKG_VERSION");
