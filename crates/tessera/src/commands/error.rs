//! Command errors, each rendering to the exact text redis-server 7.0 sends.
//! The first word is the error code that INFO errorstats counts.

use std::borrow::Cow;

#[derive(Debug, thiserror::Error)]
pub enum CmdError {
    #[error("WRONGTYPE Operation against a key holding the wrong kind of value")]
    WrongType,
    #[error("ERR syntax error")]
    Syntax,
    #[error("ERR value is not an integer or out of range")]
    NotInteger,
    #[error("ERR value is not a valid float")]
    NotFloat,
    #[error("ERR increment or decrement would overflow")]
    Overflow,
    #[error("ERR no such key")]
    NoSuchKey,
    #[error("ERR DB index is out of range")]
    DbIndexOutOfRange,
    #[error("ERR index out of range")]
    IndexOutOfRange,
    #[error("ERR wrong number of arguments for '{0}' command")]
    WrongArity(String),
    #[error("ERR invalid expire time in '{0}' command")]
    InvalidExpire(String),
    #[error("OOM command not allowed when used memory > 'maxmemory'.")]
    Oom,
    #[error("NOAUTH Authentication required.")]
    NoAuth,
    // The codes that callers (clients, the cluster proxy, failover) branch
    // on, each with Redis 7.0's exact text; the checks that raise the ones
    // not used yet plug into `dispatch::admit` (see ARCHITECTURE).
    #[error("NOSCRIPT No matching script. Please use EVAL.")]
    NoScript,
    /// A script past busy-reply-threshold; `function`: it is an FCALL.
    #[error(
        "BUSY Redis is busy running a script. You can only call {} or SHUTDOWN NOSAVE.",
        if *function { "FUNCTION KILL" } else { "SCRIPT KILL" }
    )]
    Busy { function: bool },
    #[error("LOADING Redis is loading the dataset in memory")]
    Loading,
    #[error("READONLY You can't write against a read only replica.")]
    ReadOnly,
    #[error("NOREPLICAS Not enough good replicas to write.")]
    NoReplicas,
    #[error("MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error.")]
    Misconf,
    /// The rest of the NOPERM text (it names the command, key or channel).
    #[error("NOPERM {0}")]
    NoPerm(Cow<'static, str>),
    #[error("MOVED {slot} {addr}")]
    Moved { slot: u16, addr: String },
    #[error("ASK {slot} {addr}")]
    Ask { slot: u16, addr: String },
    #[error("CROSSSLOT Keys in request don't hash to the same slot")]
    CrossSlot,
    /// Any other message, already carrying its code (`ERR ...`).
    #[error("{0}")]
    Msg(Cow<'static, str>),
    /// A message that shows a client's bytes as they came: Redis formats
    /// them into its errors with `%s`, so they reach the client unchanged
    /// (up to a NUL), not as UTF-8.
    #[error("{}", String::from_utf8_lossy(.0))]
    Bytes(Vec<u8>),
    /// A message already counted in the error statistics where it arose (a
    /// script's error raised by `redis.call`): replied, not counted again.
    #[error("{}", String::from_utf8_lossy(.0))]
    Counted(Vec<u8>),
}

impl CmdError {
    pub fn msg(s: impl Into<Cow<'static, str>>) -> CmdError {
        CmdError::Msg(s.into())
    }

    /// A message of `parts` joined, text and client bytes alike.
    pub fn bytes(parts: &[&[u8]]) -> CmdError {
        CmdError::Bytes(parts.concat())
    }

    /// The text replied, client bytes in it as they came.
    pub fn text(&self) -> Cow<'_, [u8]> {
        match self {
            CmdError::Bytes(b) | CmdError::Counted(b) => Cow::Borrowed(b),
            CmdError::Msg(s) => Cow::Borrowed(s.as_bytes()),
            other => Cow::Owned(other.to_string().into_bytes()),
        }
    }

    /// The code INFO errorstats files this error under.
    pub fn code(&self) -> String {
        let text = self.to_string();
        text.split(' ').next().unwrap_or("ERR").to_string()
    }
}

pub type CmdResult = Result<(), CmdError>;

#[cfg(test)]
mod tests {
    use super::CmdError;

    #[test]
    fn typed_codes_render_as_redis_does() {
        assert_eq!(
            CmdError::Busy { function: true }.to_string(),
            "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
        );
        assert_eq!(CmdError::NoScript.code(), "NOSCRIPT");
        let moved = CmdError::Moved {
            slot: 3999,
            addr: "127.0.0.1:6381".into(),
        };
        assert_eq!(moved.to_string(), "MOVED 3999 127.0.0.1:6381");
        assert_eq!(CmdError::CrossSlot.code(), "CROSSSLOT");
    }
}
