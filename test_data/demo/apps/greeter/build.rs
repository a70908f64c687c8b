//! Compiles the `libs/shout` C library with the system C compiler, so that plain
//! `cargo build` works. Under once, the `c_deps` target `libs/shout/Shout` is built by
//! the graph and this script is replaced by Cargo's `links` build-script override.

use std::env;
use std::path::PathBuf;
use std::process::Command;

/// The `copts` of the `Shout` target, plus position-independent code.
const C_FLAGS: &[&str] = &["-std=c11", "-Wall", "-Wextra", "-fPIC"];
const SOURCE: &str = "../../libs/shout/shout.c";

fn run(command: &mut Command) {
    let status = command
        .status()
        .unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
    assert!(status.success(), "{command:?} failed with {status}");
}

fn main() {
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let object = out_dir.join("shout.o");
    let cc = env::var_os("CC").unwrap_or_else(|| "cc".into());
    let ar = env::var_os("AR").unwrap_or_else(|| "ar".into());

    run(Command::new(cc).args(C_FLAGS).arg("-c").arg("-o").arg(&object).arg(SOURCE));
    run(Command::new(ar).arg("crs").arg(out_dir.join("libshout.a")).arg(&object));

    println!("cargo:rerun-if-changed={SOURCE}");
    println!("cargo:rerun-if-changed=../../libs/shout/shout.h");
    println!("cargo:rustc-link-search=native={}", out_dir.display());
    println!("cargo:rustc-link-lib=static=shout");
}
