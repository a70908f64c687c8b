//! The real `once` binary, as the tests that build, run and test targets start it, and
//! the file helpers they set workspaces up with. Each test binary includes this module
//! and uses part of it.

#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

/// `once -C <root> <args…>`, its output captured (`ONCE_WORKSPACE` unset so only `-C`
/// decides).
pub fn once(root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_once"))
        .arg("-C")
        .arg(root)
        .args(args)
        .env_remove("ONCE_WORKSPACE")
        .output()
        .unwrap()
}

/// Captured bytes as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Writes `contents` to `path` below `root`, making its directories.
pub fn write(root: &Path, path: &str, contents: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, contents).unwrap();
}

/// Copies the tree `from` to `to`, leaving out `.once`: files with their modes,
/// symbolic links as links (a workspace's links are part of what a build reads).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name == ".once" {
            continue;
        }
        let (source, target) = (entry.path(), to.join(&name));
        let kind = entry.file_type().unwrap();
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&source).unwrap(), &target).unwrap();
        } else if kind.is_dir() {
            copy_tree(&source, &target);
        } else {
            std::fs::copy(&source, &target).unwrap();
        }
    }
}
