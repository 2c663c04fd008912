//! Bitmap and bitfield commands: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD.

use super::CommandSpec;

pub static COMMANDS: &[CommandSpec] = &[];
