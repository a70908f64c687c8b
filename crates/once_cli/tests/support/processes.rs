//! Looking for the processes a test's actions started, as `ps` and `/proc` see them
//! (Linux), shared by the real-binary tests of `once build` and of the MCP build tools.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// The processes whose working directory is `dir`.
pub fn processes_in(dir: &Path) -> Vec<u32> {
    let dir = dir.canonicalize().unwrap();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let cwd = std::fs::read_link(entry.path().join("cwd")).ok()?;
            (cwd == dir).then_some(pid)
        })
        .collect()
}

/// Whether `ps` still lists `pid` (a zombie counts as gone).
pub fn ps_lists(pid: u32) -> bool {
    let output = Command::new("ps")
        .args(["-o", "stat=", "-p", &pid.to_string()])
        .output()
        .unwrap();
    let stat = String::from_utf8_lossy(&output.stdout);
    output.status.success() && !stat.trim().is_empty() && !stat.trim().starts_with('Z')
}

/// The live processes working in `dir` once its `sleep` has started (short-lived helpers
/// the action's shell runs before it, such as `mkdir`, may come and go meanwhile).
pub fn wait_for_processes(dir: &Path) -> Vec<u32> {
    let is_sleep = |pid: &u32| {
        std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "sleep")
    };
    for _ in 0..500 {
        let pids = processes_in(dir);
        if pids.iter().any(is_sleep) {
            return pids.into_iter().filter(|&pid| ps_lists(pid)).collect();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("no process started in {}", dir.display());
}
