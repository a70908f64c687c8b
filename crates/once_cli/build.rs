//! Build script of the `once` binary: a link option that makes every start cheaper.
//!
//! On GNU/Linux the binary's relative relocations are packed (`DT_RELR`, glibc 2.36+):
//! the dynamic loader then reads a few KiB of relocation data at start instead of 1.5 MiB,
//! which took `once --version` from 3.2 to 2.8 ms (docs/benchmarks.md). Linkers that do
//! not know the option ignore it with a warning.
//!
//! The binary is also linked as a fixed-address executable (`-no-pie`): the loader then
//! has no relocations to apply at all, and a start touches about 210 pages instead of
//! 416 (`once --version` 5.5 → 3.7 ms, a cache-hit `once exec` 7.8 → 5.9 ms;
//! docs/benchmarks.md). The price is that the executable's own code and data are not
//! randomised by ASLR (shared libraries, heap and stack still are), as with Go's default
//! binaries. `ONCE_BUILD_PIE=1` at build time keeps a position-independent executable.

#![allow(
    clippy::print_stdout,
    reason = "cargo reads a build script's instructions from its stdout"
)]

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=ONCE_BUILD_PIE");
    let keep_pie = std::env::var_os("ONCE_BUILD_PIE").is_some_and(|v| v != "0" && !v.is_empty());
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
        if !keep_pie {
            println!("cargo:rustc-link-arg-bins=-no-pie");
        }
    }
}
