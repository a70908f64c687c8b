//! Two `once build` processes on one workspace, and a `once build` killed with SIGKILL:
//! the acceptance cases of the action cache that only separate processes can show.
//!
//! Each action appends a line to a log outside the workspace when it runs, so the tests
//! count executions instead of trusting the reports.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

#[path = "support/processes.rs"]
#[allow(dead_code)]
mod processes;
use processes::{processes_in, ps_lists};

use serde_json::Value;

const TARGETS: usize = 6;

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A workspace of `TARGETS` independent `command` targets `p/T0`… (each takes a moment,
/// logs its run to `log`, writes `out.txt`) and `p/Last`, which depends on all of them.
/// `p/Slow` sleeps while the file `block` (outside the workspace) exists. The log and the
/// block file are the test's instruments outside the workspace, which the sandbox would
/// deny: the workspace runs its actions unconfined (this is about concurrency).
fn workspace(log: &Path, block: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "once.toml", "[workspace]\nsandbox = \"off\"\n");
    let log = log.display();
    let mut manifest = String::new();
    let mut deps = Vec::new();
    for i in 0..TARGETS {
        manifest.push_str(&format!(
            "[[target]]\nname = \"T{i}\"\nkind = \"command\"\n\n[target.attrs]\n\
             cmd = \"sleep 0.2; echo T{i} >> '{log}'; echo result-{i} > \\\"$OUT/out.txt\\\"\"\n\
             outputs = [\"out.txt\"]\n\n"
        ));
        deps.push(format!("\"./T{i}\""));
    }
    manifest.push_str(&format!(
        "[[target]]\nname = \"Last\"\nkind = \"command\"\ndeps = [{}]\n\n[target.attrs]\n\
         cmd = \"echo Last >> '{log}'; cat ../.once/out/p/T*/out/out.txt > \\\"$OUT/all.txt\\\"\"\n\
         outputs = [\"all.txt\"]\n\n",
        deps.join(", ")
    ));
    manifest.push_str(&format!(
        "[[target]]\nname = \"Slow\"\nkind = \"command\"\n\n[target.attrs]\n\
         cmd = \"echo partial > \\\"$OUT/slow.txt\\\"; while [ -e '{}' ]; do sleep 600; done; \
         echo Slow >> '{log}'; echo done > \\\"$OUT/slow.txt\\\"\"\n\
         outputs = [\"slow.txt\"]\n",
        block.display()
    ));
    write(root, "p/once.toml", &manifest);
    dir
}

fn once(root: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_once"));
    command.arg("-C").arg(root).env_remove("ONCE_WORKSPACE");
    command
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            text(&output.stdout),
            text(&output.stderr)
        )
    })
}

/// How many times each action ran, by the log lines, sorted by name.
fn runs(log: &Path) -> Vec<(String, usize)> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    for line in text.lines() {
        *counts.entry(line.to_owned()).or_default() += 1;
    }
    counts.into_iter().collect()
}

/// The processes of `Slow`'s action (its shell and its `sleep 600`), once it sleeps.
fn slow_processes(dir: &Path) -> Vec<u32> {
    let sleeps_long = |pid: &u32| {
        std::fs::read(format!("/proc/{pid}/cmdline"))
            .is_ok_and(|c| c.split(|&b| b == 0).any(|arg| arg == b"600"))
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let pids = processes_in(dir);
        if pids.iter().any(sleeps_long) {
            return pids.into_iter().filter(|&pid| ps_lists(pid)).collect();
        }
        assert!(Instant::now() < deadline, "Slow never started sleeping");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn each_once(names: &[&str]) -> Vec<(String, usize)> {
    let mut names: Vec<(String, usize)> = names.iter().map(|n| ((*n).to_owned(), 1)).collect();
    names.sort();
    names
}

fn every_t_and_last() -> Vec<String> {
    let mut names: Vec<String> = (0..TARGETS).map(|i| format!("T{i}")).collect();
    names.push("Last".to_owned());
    names
}

fn expected_all() -> String {
    (0..TARGETS).map(|i| format!("result-{i}\n")).collect()
}

#[test]
fn two_builds_at_once_both_succeed_and_run_each_action_once() {
    let scratch = tempfile::tempdir().unwrap();
    let log = scratch.path().join("ran.log");
    let dir = workspace(&log, &scratch.path().join("no-block"));
    let root = dir.path();
    let spawn = || {
        once(root)
            .args(["build", "--format", "json", "-j", "3", "p/Last"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (first, second) = (spawn(), spawn());
    let outputs = [
        first.wait_with_output().unwrap(),
        second.wait_with_output().unwrap(),
    ];
    for output in &outputs {
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
        let record = json(output);
        let last = &record["targets"][0];
        assert_eq!(last["target"], "p/Last", "{record}");
        assert!(
            matches!(last["cache"].as_str(), Some("hit" | "miss")),
            "{record}"
        );
    }
    let names = every_t_and_last();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    assert_eq!(runs(&log), each_once(&names), "an action ran twice");
    assert_eq!(
        std::fs::read_to_string(root.join(".once/out/p/Last/out/all.txt")).unwrap(),
        expected_all()
    );
    // The store both wrote into serves a third process: everything is a hit.
    let third = once(root)
        .args(["build", "--format", "json", "p/Last"])
        .output()
        .unwrap();
    assert_eq!(third.status.code(), Some(0), "{}", text(&third.stderr));
    assert_eq!(json(&third)["targets"][0]["cache"], "hit");
    assert_eq!(runs(&log).len(), names.len());
}

#[test]
fn a_build_killed_with_sigkill_leaves_a_store_the_next_build_uses() {
    let scratch = tempfile::tempdir().unwrap();
    let log = scratch.path().join("ran.log");
    let block = scratch.path().join("block");
    std::fs::write(&block, "").unwrap();
    let dir = workspace(&log, &block);
    let root = dir.path();

    // The T targets finish; Slow is still running when `once` is killed.
    let mut child = once(root)
        .args(["build", "-j", "8", "p/Last", "p/Slow"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while runs(&log).len() < TARGETS + 1 {
        assert!(Instant::now() < deadline, "the fast actions never finished");
        std::thread::sleep(Duration::from_millis(20));
    }
    let action_pids = slow_processes(&root.join("p"));
    child.kill().unwrap();
    child.wait().unwrap();

    // Whatever the platform does with orphans, release the blocked action so no process
    // of this test outlives it, and wait until it is gone.
    std::fs::remove_file(&block).unwrap();
    for pid in &action_pids {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while action_pids.iter().any(|&pid| ps_lists(pid)) {
        assert!(
            Instant::now() < deadline,
            "the killed build's action survived"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    let next = once(root)
        .args(["build", "--format", "json", "p/Last", "p/Slow"])
        .output()
        .unwrap();
    assert_eq!(next.status.code(), Some(0), "{}", text(&next.stderr));
    assert!(
        text(&next.stderr).trim().is_empty(),
        "the next build complained: {}",
        text(&next.stderr)
    );
    let record = json(&next);
    let states: Vec<(String, String)> = record["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["target"].as_str().unwrap().to_owned(),
                t["cache"].as_str().unwrap_or("none").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        states,
        vec![
            ("p/Last".to_owned(), "hit".to_owned()),
            ("p/Slow".to_owned(), "miss".to_owned())
        ],
        "{record}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join(".once/out/p/Slow/out/slow.txt")).unwrap(),
        "done\n"
    );
    let mut names = every_t_and_last();
    names.push("Slow".to_owned());
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    assert_eq!(runs(&log), each_once(&names));
}
