//! Scripting: EVAL, EVALSHA, SCRIPT, FUNCTION, FCALL.

use super::{CmdError, CommandSpec};
use crate::server::state::ServerState;

pub static COMMANDS: &[CommandSpec] = &[];

/// The error a command gets while a script runs past busy-reply-threshold.
pub fn busy_error(_srv: &ServerState) -> CmdError {
    CmdError::msg(
        "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
    )
}

/// Whether a command runs scripts (and so must hold the script lock).
pub fn runs_scripts(spec: &CommandSpec) -> bool {
    matches!(
        spec.name,
        "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro"
    )
}

/// Serialises scripts (and transactions containing them): the one party
/// allowed to wait for a shard while holding others.
pub fn lock_scripts(srv: &ServerState) -> parking_lot::MutexGuard<'_, ()> {
    srv.script_lock.lock()
}
