//! RESP framing for Tessera.
//!
//! This crate owns everything about the bytes on the wire: turning a client's
//! input buffer into requests exactly the way redis-server 7.0 does
//! ([`request`]), rendering replies in RESP2 or RESP3 ([`encode`]), and
//! decoding replies back into values for tests, the differential harness and
//! scripting ([`frame`]). It does no I/O and knows nothing about commands or
//! sockets: callers own the buffers and hand slices in.

pub mod encode;
pub mod frame;
pub mod request;
