//! Build script of the `once` binary: a link option that makes every start cheaper.
//!
//! On GNU/Linux the binary's relative relocations are packed (`DT_RELR`, glibc 2.36+):
//! the dynamic loader then reads a few KiB of relocation data at start instead of 1.5 MiB,
//! which took `once --version` from 3.2 to 2.8 ms (docs/benchmarks.md). Linkers that do
//! not know the option ignore it with a warning.

#![allow(
    clippy::print_stdout,
    reason = "cargo reads a build script's instructions from its stdout"
)]

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
