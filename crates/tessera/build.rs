//! Compiles the C numeric shim (`csrc/longdouble.c`): glibc strtod/strtold
//! and printf plus x87 `long double`, which Redis' number handling relies on
//! and Rust cannot reproduce (see `src/util/numbers.rs`).

fn main() {
    println!("cargo:rerun-if-changed=csrc/longdouble.c");
    cc::Build::new()
        .file("csrc/longdouble.c")
        .flag_if_supported("-std=c99")
        .warnings(true)
        .compile("tessera_numeric");
}
