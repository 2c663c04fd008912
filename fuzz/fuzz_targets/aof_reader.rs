//! AOF command files: any bytes are whole commands, a torn end or corruption, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tessera::persistence::aof::reader::{read_commands, TxMark};

fuzz_target!(|data: &[u8]| {
    let mark = |name: &[u8]| {
        if name.eq_ignore_ascii_case(b"multi") {
            TxMark::Opens
        } else if name.eq_ignore_ascii_case(b"exec") {
            TxMark::Closes
        } else {
            TxMark::Neither
        }
    };
    let _ = read_commands(data, &mark, &mut |_| Ok(()));
});
