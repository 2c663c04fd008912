//! list commands (being implemented).

use super::CommandSpec;

pub static COMMANDS: &[CommandSpec] = &[];
