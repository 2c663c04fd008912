//! Stream commands: XADD, XRANGE, XREAD, consumer groups and the rest.

use super::CommandSpec;

pub static COMMANDS: &[CommandSpec] = &[];
