//! RESTORE payload bodies and whole RDB files: any bytes decode to a value or an error, never a
//! panic, a hang or an allocation beyond what the input could describe.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tessera::persistence::rdb::{codec::Reader, file, value, LoadLimits};

fuzz_target!(|data: &[u8]| {
    let limits = LoadLimits::default();
    if let Some((&t, body)) = data.split_first() {
        let _ = value::read_value(&mut Reader::new(body), t, &limits);
    }
    let _ = file::load(data, &limits, 16, true, &mut |_| Ok(()));
});
