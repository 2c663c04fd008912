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
    /// Any other message, already carrying its code (`ERR ...`).
    #[error("{0}")]
    Msg(Cow<'static, str>),
    /// A message already counted in the error statistics where it arose (a
    /// script's error raised by `redis.call`): replied, not counted again.
    #[error("{0}")]
    Counted(String),
}

impl CmdError {
    pub fn msg(s: impl Into<Cow<'static, str>>) -> CmdError {
        CmdError::Msg(s.into())
    }

    /// The code INFO errorstats files this error under.
    pub fn code(&self) -> String {
        let text = self.to_string();
        text.split(' ').next().unwrap_or("ERR").to_string()
    }
}

pub type CmdResult = Result<(), CmdError>;
