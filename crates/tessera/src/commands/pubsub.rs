//! Pub/sub: SUBSCRIBE and friends, PUBLISH, PUBSUB.

use super::CommandSpec;

pub static COMMANDS: &[CommandSpec] = &[];
