//! Differential tests: the same seeded, randomly generated command streams go to redis-server
//! and to Tessera, and every reply must match (see `differential/harness.rs` for the knobs:
//! DIFF_SEED, DIFF_COMMANDS, DIFF_RESP3, DIFF_COLLECTIONS, DIFF_BATCH).
//!
//! To add a family: write `differential/<family>.rs` with a `FAMILY` whose generator returns one
//! `Cmd` (arguments + compare mode) per call, declare it below, and add a test.

mod common;

#[path = "differential/acl.rs"]
mod acl;
#[path = "differential/bitmaps.rs"]
mod bitmaps;
#[path = "differential/expire.rs"]
mod expire;
#[path = "differential/functions.rs"]
mod functions;
#[path = "differential/gen.rs"]
mod gen;
#[path = "differential/geo.rs"]
mod geo;
#[path = "differential/harness.rs"]
mod harness;
#[path = "differential/hashes.rs"]
mod hashes;
#[path = "differential/hll.rs"]
mod hll;
#[path = "differential/keyspace.rs"]
mod keyspace;
#[path = "differential/lists.rs"]
mod lists;
#[path = "differential/notifications.rs"]
mod notifications;
#[path = "differential/pubsub.rs"]
mod pubsub;
#[path = "differential/scripts.rs"]
mod scripts;
#[path = "differential/sets.rs"]
mod sets;
#[path = "differential/streams.rs"]
mod streams;
#[path = "differential/strings.rs"]
mod strings;
#[path = "differential/tracking.rs"]
mod tracking;
#[path = "differential/transactions.rs"]
mod transactions;
#[path = "differential/zsets.rs"]
mod zsets;

#[test]
fn strings() {
    harness::run_family(&strings::FAMILY);
}

#[test]
fn keyspace() {
    harness::run_family(&keyspace::FAMILY);
}

#[test]
fn expire() {
    harness::run_family(&expire::FAMILY);
}

#[test]
fn lists() {
    harness::run_family(&lists::FAMILY);
}

#[test]
fn sort() {
    harness::run_family(&lists::SORT_FAMILY);
}

#[test]
fn zsets() {
    harness::run_family(&zsets::FAMILY);
}

#[test]
fn hashes() {
    harness::run_family(&hashes::FAMILY);
}

#[test]
fn sets() {
    harness::run_family(&sets::FAMILY);
}

#[test]
fn geo() {
    harness::run_family(&geo::FAMILY);
}

#[test]
fn bitmaps() {
    harness::run_family(&bitmaps::FAMILY);
}

#[test]
fn hll() {
    harness::run_family(&hll::FAMILY);
}

#[test]
fn streams() {
    harness::run_family(&streams::FAMILY);
}

#[test]
fn scripts() {
    harness::run_family(&scripts::FAMILY);
}

#[test]
fn functions() {
    harness::run_family(&functions::FAMILY);
}

#[test]
fn transactions() {
    harness::run_family(&transactions::FAMILY);
}

#[test]
fn pubsub() {
    harness::run_family(&pubsub::FAMILY);
}

#[test]
fn notifications() {
    harness::run_family(&notifications::FAMILY);
}

#[test]
fn tracking() {
    harness::run_family(&tracking::FAMILY);
}

#[test]
fn acl() {
    harness::run_family(&acl::FAMILY);
}
