//! Client-side caching (CLIENT TRACKING): which clients may cache which
//! keys, and the invalidation messages sent when those keys change.

/// One client's tracking settings.
#[derive(Default)]
pub struct TrackingState {
    pub on: bool,
}

/// Turns tracking off for a client (CLIENT TRACKING OFF, RESET, disconnect).
pub fn disable(_srv: &super::state::ServerState, client: &mut super::client::Client) {
    client.tracking.on = false;
}

/// Sends invalidations for `keys` (modified by `client`'s command) to the
/// clients tracking them.
pub fn invalidate_keys(
    _srv: &super::state::ServerState,
    _client: &mut super::client::Client,
    _own: &mut tessera_resp::encode::ReplyBuf,
    _keys: &[Vec<u8>],
) {
}

/// Sends invalidations for keys the server itself changed (expiry).
pub fn invalidate_from_server(_srv: &super::state::ServerState, _keys: &[Vec<u8>]) {}
