//! Scripting: EVAL, EVALSHA, SCRIPT, FUNCTION, FCALL.

use super::CommandSpec;

pub static COMMANDS: &[CommandSpec] = &[];
