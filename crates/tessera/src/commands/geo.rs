//! Geo commands: GEOADD, GEODIST, GEOHASH, GEOPOS, GEOSEARCH and the GEORADIUS family.

use super::CommandSpec;

pub static COMMANDS: &[CommandSpec] = &[];
