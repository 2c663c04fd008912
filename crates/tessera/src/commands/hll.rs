//! HyperLogLog commands: PFADD, PFCOUNT, PFMERGE, PFDEBUG, PFSELFTEST.

use super::CommandSpec;

pub static COMMANDS: &[CommandSpec] = &[];
