//! Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH.

use super::CommandSpec;

pub static COMMANDS: &[CommandSpec] = &[];
