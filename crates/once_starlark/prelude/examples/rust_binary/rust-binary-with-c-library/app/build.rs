//! Compiles the C library with the system C compiler so that plain `cargo build` works.
//! Under once, the `c_deps` library is built by its `c_library` target instead and this
//! script is overridden (Cargo's `links` build-script override).

use std::env;
use std::path::PathBuf;
use std::process::Command;

/// The flags of the `c_library` target (`copts`), plus position-independent code.
const C_FLAGS: &[&str] = &["-std=c11", "-Wall", "-Wextra", "-O2", "-fPIC"];

fn run(command: &mut Command) {
    let status = command
        .status()
        .unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
    assert!(status.success(), "{command:?} failed with {status}");
}

fn main() {
    let source = PathBuf::from("../native/clamp/clamp.c");
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let object = out_dir.join("clamp.o");
    let cc = env::var_os("CC").unwrap_or_else(|| "cc".into());
    let ar = env::var_os("AR").unwrap_or_else(|| "ar".into());

    run(Command::new(cc)
        .args(C_FLAGS)
        .args(["-I", "../native/clamp", "-c", "-o"])
        .arg(&object)
        .arg(&source));
    run(Command::new(ar)
        .arg("crs")
        .arg(out_dir.join("libclamp.a"))
        .arg(&object));

    println!("cargo:rerun-if-changed=../native/clamp/clamp.c");
    println!("cargo:rerun-if-changed=../native/clamp/clamp.h");
    println!("cargo:rustc-link-search=native={}", out_dir.display());
    println!("cargo:rustc-link-lib=static=clamp");
}
