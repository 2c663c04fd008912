//! Value types stored in the keyspace, each with its encodings. No RESP and
//! no I/O here: commands turn these into replies.

pub mod string;

pub use string::StrValue;

/// A value held by a key.
#[derive(Debug, Clone)]
pub enum Value {
    Str(StrValue),
}

impl Value {
    /// The name `TYPE` reports.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
        }
    }

    /// The name `OBJECT ENCODING` reports.
    pub fn encoding_name(&self) -> &'static str {
        match self {
            Value::Str(s) => s.encoding_name(),
        }
    }

    /// Approximate heap bytes owned by the value (MEMORY USAGE, eviction).
    pub fn heap_size(&self) -> usize {
        match self {
            Value::Str(s) => s.heap_size(),
        }
    }
}
