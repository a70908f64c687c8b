//! Scratch directories on disk for the targets whose code under test opens real files (the
//! MCP server's workspace, the store, the evidence journal).
//!
//! One directory per process, purpose and thread, `once-fuzz-<pid>-<purpose>-<thread>` in the system's
//! temporary directory, emptied by each use. libFuzzer ends its process without running
//! destructors, so a directory cannot remove itself: the first use in a process removes
//! the directories of processes that no longer exist instead.

#![allow(
    clippy::disallowed_methods,
    reason = "fuzz harness set-up: the directories the code under test reads"
)]

use std::path::{Path, PathBuf};
use std::sync::Once;

const PREFIX: &str = "once-fuzz-";

/// The emptied scratch directory `purpose` of this process, made if missing.
pub(crate) fn fresh(purpose: &str) -> PathBuf {
    static SWEEP: Once = Once::new();
    let temp = std::env::temp_dir();
    SWEEP.call_once(|| remove_dead(&temp));
    // Tests run targets on several threads of one process: one directory per thread.
    let thread: String = format!("{:?}", std::thread::current().id())
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    let dir = temp.join(format!("{PREFIX}{}-{purpose}-{thread}", std::process::id()));
    if dir.exists() {
        remove_all(&dir);
    }
    std::fs::create_dir_all(&dir).expect("cannot make a scratch directory");
    // The canonical path: what the workspace root and the store compare paths against.
    dir.canonicalize().unwrap_or(dir)
}

/// Writes `contents` at `relative` below `root`, making its directories.
pub(crate) fn write(root: &Path, relative: &str, contents: &[u8]) {
    let path = root.join(relative);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("cannot make a scratch directory");
    }
    std::fs::write(path, contents).expect("cannot write a scratch file");
}

/// Removes `dir` even when the code under test left read-only directories in it.
fn remove_all(dir: &Path) {
    if std::fs::remove_dir_all(dir).is_ok() {
        return;
    }
    make_writable(dir);
    let _ = std::fs::remove_dir_all(dir);
}

fn make_writable(dir: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755));
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                make_writable(&entry.path());
            }
        }
    }
}

/// Removes the scratch directories of processes that no longer exist.
fn remove_dead(temp: &Path) {
    let Ok(entries) = std::fs::read_dir(temp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| name.strip_prefix(PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let alive = Path::new("/proc").join(pid.to_string()).exists();
        if !alive && entry.file_type().is_ok_and(|t| t.is_dir()) {
            remove_all(&entry.path());
        }
    }
}
