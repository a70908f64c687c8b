//! `once runtime` through the real binary with real processes: a shell service that
//! leaves a grandchild (`sleep 600 &`) and prints a line on each stream every 200 ms is
//! started, followed (status, logs with cursors and source filters), and stopped, and
//! `/proc` and `ps` must show nothing of it afterwards; a program ignoring `SIGTERM` is
//! killed after the grace period, with a descendant that left its session (two stops
//! asked at once answer the same end); a `kill -9` of the supervisor is noticed by the next
//! status read; programs that exit by themselves end `exited` or `failed`.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

#[path = "support/processes.rs"]
#[allow(
    dead_code,
    reason = "the sessions' processes are found by session and group here"
)]
mod processes;
use processes::ps_lists;

use serde_json::Value;

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A workspace whose `svc/Svc` is a `script` target running `script` with `sh`.
fn workspace(script: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "once.toml", "[workspace]\n");
    write(
        root,
        "svc/once.toml",
        "[[target]]\nname = \"Svc\"\nkind = \"script\"\n\n[target.attrs]\nscript_path = \"svc.sh\"\nscript_runtime = \"sh\"\n",
    );
    write(root, "svc/svc.sh", script);
    dir
}

/// The service of the acceptance test: a background grandchild, then a line on stdout
/// and, 100 ms later (so their order of arrival is known), one on stderr, every 200 ms.
const SERVICE: &str = "sleep 600 &\ni=0\nwhile true; do\n  i=$((i+1))\n  echo \"out $i\"\n  sleep 0.1\n  echo \"err $i\" >&2\n  sleep 0.1\ndone\n";

fn once(root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_once"))
        .arg("-C")
        .arg(root)
        .args(["--format", "json", "runtime"])
        .args(args)
        .output()
        .unwrap()
}

/// Runs `once --format json runtime ARGS…`, checks its exit code, answers its JSON.
fn check(root: &Path, args: &[&str], code: i32) -> Value {
    let output = once(root, args);
    assert_eq!(
        output.status.code(),
        Some(code),
        "{args:?}\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or(Value::Null)
}

/// Stops every session of a workspace when a test ends, failed assertions included, so
/// no test leaves a service running (declared after the workspace, dropped before it).
struct StopAll<'a>(&'a Path);

impl Drop for StopAll<'_> {
    fn drop(&mut self) {
        let _ = once(self.0, &["stop", "--all", "--timeout", "0"]);
    }
}

fn start(root: &Path) -> String {
    let record = check(root, &["start", "svc/Svc"], 0);
    assert_eq!(record["status"], "starting", "{record}");
    assert_eq!(record["target"], "svc/Svc");
    let id = record["session_id"].as_str().unwrap().to_owned();
    assert_eq!(record["session_dir"], format!(".once/runtime/{id}"));
    assert!(
        root.join(format!(".once/runtime/{id}/session.json"))
            .is_file()
    );
    id
}

/// Polls the status until `done` holds (at most 10 s).
fn wait_for(root: &Path, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    let began = Instant::now();
    loop {
        let record = check(root, &["status", id], 0);
        if done(&record) {
            return record;
        }
        assert!(began.elapsed() < Duration::from_secs(10), "{record}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The live processes of the supervisor's process session and of the program's group.
fn session_processes(record: &Value) -> Vec<u32> {
    let session = record["supervisor_pid"].as_u64().unwrap();
    let group = record["pid"].as_u64().unwrap();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
            let (state, pgrp, sid) = (
                fields[0],
                fields[2].parse::<u64>().ok()?,
                fields[3].parse::<u64>().ok()?,
            );
            (state != "Z" && (sid == session || pgrp == group)).then_some(pid)
        })
        .collect()
}

fn messages(page: &Value) -> Vec<String> {
    page["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{}:{}",
                r["source"].as_str().unwrap(),
                r["message"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn a_session_runs_logs_and_stops_leaving_no_process() {
    let dir = workspace(SERVICE);
    let root = dir.path();
    let _stop = StopAll(root);
    let id = start(root);
    let running = wait_for(root, &id, |r| r["status"] == "running");
    // The supervisor, the shell, its `sleep 600` (and the loop's `sleep 0.2`).
    let began = Instant::now();
    let mut pids = session_processes(&running);
    while pids.len() < 3 && began.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
        pids = session_processes(&running);
    }
    assert!(pids.len() >= 3, "{pids:?}");
    let grandchild = pids
        .iter()
        .copied()
        .find(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.contains("600"))
        })
        .expect("the grandchild `sleep 600`");
    // Wait for 3 lines on each stream.
    let began = Instant::now();
    let all = loop {
        let page = check(root, &["logs", &id], 0);
        if page["records"].as_array().unwrap().len() >= 6 {
            break page;
        }
        assert!(began.elapsed() < Duration::from_secs(10), "{page}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let all_messages = messages(&all);
    assert_eq!(&all_messages[..2], ["stdout:out 1", "stderr:err 1"]);
    let records = all["records"].as_array().unwrap();
    let level = |i: usize| records[i]["level"].as_str().unwrap();
    assert_eq!((level(0), level(1)), ("info", "error"));
    // Pages of 2 resume exactly where the previous one ended.
    let first = check(root, &["logs", &id, "--limit", "2"], 0);
    let cursor = first["next_cursor"].as_str().unwrap();
    let second = check(root, &["logs", &id, "--limit", "2", "--cursor", cursor], 0);
    assert_eq!(
        [messages(&first), messages(&second)].concat(),
        all_messages[..4]
    );
    // A stdout reader's cursor, given to a stderr reader, skips no unread stderr record.
    let out = check(
        root,
        &["logs", &id, "--source", "stdout", "--limit", "1"],
        0,
    );
    assert_eq!(messages(&out), ["stdout:out 1"]);
    let cursor = out["next_cursor"].as_str().unwrap();
    let err = check(
        root,
        &["logs", &id, "--source", "stderr", "--cursor", cursor],
        0,
    );
    let err_messages = messages(&err);
    assert!(err_messages.len() >= 3, "{err_messages:?}");
    assert!(err_messages.iter().all(|m| m.starts_with("stderr:")));
    assert_eq!(
        &err_messages[..3],
        ["stderr:err 1", "stderr:err 2", "stderr:err 3"]
    );
    // Stop: SIGTERM ends the shell and its grandchild within the grace period.
    let asked = Instant::now();
    let stopped = check(root, &["stop", &id, "--timeout", "5"], 0);
    assert!(asked.elapsed() < Duration::from_secs(5));
    assert_eq!(stopped["status"], "stopped", "{stopped}");
    assert_eq!(stopped["stopped_by"], "SIGTERM", "{stopped}");
    assert!(stopped["finished_at_unix_ms"].is_u64());
    for pid in &pids {
        assert!(
            !ps_lists(*pid),
            "process {pid} of the session survived the stop"
        );
    }
    assert!(!ps_lists(grandchild));
    assert!(session_processes(&stopped).is_empty());
    // Stopping again answers the same record.
    assert_eq!(check(root, &["stop", &id], 0), stopped);
    // Listed, then pruned (its supervisor has ended).
    let list = check(root, &["list"], 0);
    assert_eq!(list["sessions"][0]["status"], "stopped");
    let pruned = check(root, &["prune", "--older-than", "0"], 0);
    assert_eq!(pruned["removed"][0], id.as_str());
    assert!(!root.join(".once/runtime").join(&id).exists());
    let output = once(root, &["status", &id]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn a_program_ignoring_sigterm_is_killed_after_the_grace_period_with_what_left_its_session() {
    // A grandchild in the group, and one that left the group and the session (`setsid`):
    // only SIGKILL to every descendant (and the end of the program's PID namespace)
    // reaches it. It is found by its unique command line: the program's own `$!` is a
    // number of its PID namespace.
    let marker = format!("6{}", std::process::id());
    let dir = workspace(&format!(
        "trap '' TERM\nsleep 600 &\nsetsid sleep {marker} &\nwhile true; do sleep 0.1; done\n"
    ));
    let root = dir.path();
    let _stop = StopAll(root);
    let id = start(root);
    let running = wait_for(root, &id, |r| r["status"] == "running");
    std::thread::sleep(Duration::from_millis(300));
    let pids = session_processes(&running);
    assert!(pids.len() >= 3, "{pids:?}");
    let escaped: u32 = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .find_map(|entry| {
            let pid = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let line = std::fs::read(entry.path().join("cmdline")).ok()?;
            (String::from_utf8_lossy(&line).replace('\0', " ").trim() == format!("sleep {marker}"))
                .then_some(pid)
        })
        .expect("the process that left the session runs");
    assert!(
        !pids.contains(&escaped),
        "the setsid process left the session"
    );
    assert!(ps_lists(escaped));
    let asked = Instant::now();
    let stops: Vec<_> = (0..2)
        .map(|_| {
            let (root, id) = (root.to_path_buf(), id.clone());
            std::thread::spawn(move || check(&root, &["stop", &id, "--timeout", "0.5"], 0))
        })
        .collect();
    let records: Vec<Value> = stops.into_iter().map(|s| s.join().unwrap()).collect();
    assert!(asked.elapsed() >= Duration::from_millis(500));
    assert!(asked.elapsed() < Duration::from_secs(5));
    for record in &records {
        assert_eq!(record["status"], "stopped", "{record}");
        assert_eq!(record["stopped_by"], "SIGKILL", "{record}");
    }
    assert_eq!(records[0], records[1]);
    for pid in &pids {
        assert!(!ps_lists(*pid), "process {pid} survived");
    }
    assert!(
        !ps_lists(escaped),
        "the process that left the session survived"
    );
}

/// The supervisor killed with SIGKILL: the program keeps running until something
/// notices; the next status read does (the life lock is free), kills what is left of the
/// session and records `failed` with the reason.
#[test]
fn a_killed_supervisor_is_noticed_by_the_next_status_read() {
    let dir = workspace(SERVICE);
    let root = dir.path();
    let _stop = StopAll(root);
    let id = start(root);
    let running = wait_for(root, &id, |r| r["status"] == "running");
    std::thread::sleep(Duration::from_millis(300));
    let supervisor = running["supervisor_pid"].as_u64().unwrap();
    let pids = session_processes(&running);
    let status = Command::new("kill")
        .args(["-9", &supervisor.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let began = Instant::now();
    while ps_lists(u32::try_from(supervisor).unwrap()) {
        assert!(began.elapsed() < Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(20));
    }
    let record = check(root, &["status", &id], 0);
    assert_eq!(record["status"], "failed", "{record}");
    let reason = record["reason"].as_str().unwrap();
    assert!(
        reason.starts_with(&format!(
            "the supervisor (pid {supervisor}) ended while the program was running"
        )),
        "{reason}"
    );
    assert!(reason.contains("remaining process"), "{reason}");
    for pid in &pids {
        assert!(!ps_lists(*pid), "process {pid} survived its supervisor");
    }
    // Stopping it now is a no-op answering the same record.
    assert_eq!(check(root, &["stop", &id], 0), record);
}

#[test]
fn programs_that_exit_by_themselves_end_exited_or_failed() {
    for (script, status, code) in [
        ("echo done\nprintf '\\377bin\\n'\nexit 0\n", "exited", 0),
        ("echo broken >&2\nexit 3\n", "failed", 3),
    ] {
        let dir = workspace(script);
        let root = dir.path();
        let _stop = StopAll(root);
        let id = start(root);
        let record = wait_for(root, &id, |r| {
            ["exited", "failed"].contains(&r["status"].as_str().unwrap())
        });
        assert_eq!(record["status"], status, "{record}");
        assert_eq!(record["exit_code"], code, "{record}");
        let logs = check(root, &["logs", &id], 0);
        if code == 0 {
            assert_eq!(messages(&logs), ["stdout:done", "stdout:\u{fffd}bin"]);
        } else {
            assert_eq!(record["reason"], "the program exited with code 3");
            assert_eq!(messages(&logs), ["stderr:broken"]);
        }
    }
}
