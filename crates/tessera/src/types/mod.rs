//! Value types stored in the keyspace, each with its compact and large
//! encodings and the conversion thresholds between them. No RESP and no I/O
//! here: commands turn these into replies.

pub mod hash;
pub mod hll;
pub mod list;
pub mod member_table;
pub mod set;
pub mod stream;
pub mod string;
pub mod zset;

pub use hash::HashValue;
pub use list::ListValue;
pub use set::SetValue;
pub use stream::StreamValue;
pub use string::StrValue;
pub use zset::ZSetValue;

/// A value held by a key.
#[derive(Debug, Clone)]
pub enum Value {
    Str(StrValue),
    // Collections are boxed so that every entry stays small: a string key
    // should not pay for the inline size of the largest collection header.
    Hash(Box<HashValue>),
    List(ListValue),
    Set(Box<SetValue>),
    ZSet(Box<ZSetValue>),
    Stream(Box<StreamValue>),
}

impl Value {
    /// The name `TYPE` reports.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::Hash(_) => "hash",
            Value::List(_) => "list",
            Value::Set(_) => "set",
            Value::ZSet(_) => "zset",
            Value::Stream(_) => "stream",
        }
    }

    /// The name `OBJECT ENCODING` reports.
    pub fn encoding_name(&self) -> &'static str {
        match self {
            Value::Str(s) => s.encoding_name(),
            Value::Hash(h) => h.encoding_name(),
            Value::List(l) => l.encoding_name(),
            Value::Set(s) => s.encoding_name(),
            Value::ZSet(z) => z.encoding_name(),
            Value::Stream(s) => s.encoding_name(),
        }
    }

    /// Approximate heap bytes owned by the value (MEMORY USAGE, eviction).
    pub fn heap_size(&self) -> usize {
        match self {
            Value::Str(s) => s.heap_size(),
            Value::Hash(h) => h.heap_size(),
            Value::List(l) => l.heap_size(),
            Value::Set(s) => s.heap_size(),
            Value::ZSet(z) => z.heap_size(),
            Value::Stream(s) => s.heap_size(),
        }
    }

    /// Number of elements (1 for strings); large values are freed off the
    /// command path (lazyfree), as Redis does above 64 elements.
    pub fn element_count(&self) -> usize {
        match self {
            Value::Str(_) => 1,
            Value::Hash(h) => h.len(),
            Value::List(l) => l.len(),
            Value::Set(s) => s.len(),
            Value::ZSet(z) => z.len(),
            Value::Stream(s) => s.len() as usize,
        }
    }
}

/// Encoding thresholds, read from the configuration once per command so
/// CONFIG SET takes effect for the next write (as in Redis).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub hash_max_listpack_entries: usize,
    pub hash_max_listpack_value: usize,
    pub set_max_intset_entries: usize,
    pub zset_max_listpack_entries: usize,
    pub zset_max_listpack_value: usize,
    pub list_max_listpack_size: i64,
    pub list_compress_depth: usize,
}

impl Limits {
    pub fn from_config(c: &crate::config::Config) -> Limits {
        Limits {
            hash_max_listpack_entries: c.hash_max_listpack_entries() as usize,
            hash_max_listpack_value: c.hash_max_listpack_value() as usize,
            set_max_intset_entries: c.set_max_intset_entries() as usize,
            zset_max_listpack_entries: c.zset_max_listpack_entries() as usize,
            zset_max_listpack_value: c.zset_max_listpack_value() as usize,
            list_max_listpack_size: c.list_max_listpack_size(),
            list_compress_depth: c.list_compress_depth() as usize,
        }
    }
}

impl Default for Limits {
    /// Redis 7.0's defaults.
    fn default() -> Limits {
        Limits {
            hash_max_listpack_entries: 128,
            hash_max_listpack_value: 64,
            set_max_intset_entries: 512,
            zset_max_listpack_entries: 128,
            zset_max_listpack_value: 64,
            list_max_listpack_size: -2,
            list_compress_depth: 0,
        }
    }
}
