//! Names the commit `once` is built from, for `once --version`: `ONCE_COMMIT` is the
//! abbreviated hash of `HEAD`, or `unknown commit` outside a git checkout (a crate
//! package). Only a move of `HEAD` rebuilds the crate: uncommitted edits are not named.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
        .filter(|text| !text.is_empty())
}

fn main() {
    let commit = match git(&["rev-parse", "--short=12", "HEAD"]) {
        Some(hash) => hash,
        None => "unknown commit".to_owned(),
    };
    println!("cargo:rustc-env=ONCE_COMMIT={commit}");
    // Rebuilt when HEAD moves (a commit, a checkout).
    for path in ["HEAD", "packed-refs"] {
        if let Some(file) = git(&["rev-parse", "--git-path", path]) {
            println!("cargo:rerun-if-changed={file}");
        }
    }
    if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"])
        && let Some(file) = git(&["rev-parse", "--git-path", &reference])
    {
        println!("cargo:rerun-if-changed={file}");
    }
}
