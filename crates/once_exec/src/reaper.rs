//! The group reaper: kills the running actions' process groups when `once` dies without
//! doing it itself (`SIGKILL`, a crash, an abort).
//!
//! On the first action it starts, a process starts one small `/bin/sh` script in its own
//! process group with a pipe on its standard input. Every running action's group is
//! announced on the pipe (`+PGID`) and withdrawn when it ended (`-PGID`). However `once`
//! ends, the kernel closes its end of the pipe; the script then reads end-of-file and
//! sends `SIGKILL` to every group still announced, and exits. The pipe's write end is
//! close-on-exec, so no action inherits it and keeps the reaper waiting.
//!
//! Limits: a process that left its action's group (`setsid`, `setpgid`) is not reached
//! (containing those needs cgroups); and killing the reaper first (it has its own group,
//! so a terminal's `^C` or a `kill` of `once`'s group does not reach it) leaves nothing to
//! clean up after a later `SIGKILL` of `once`. A process without `/bin/sh` runs without
//! a reaper.

use std::io::Write as _;
use std::os::unix::process::CommandExt as _;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::Mutex;

use rustix::process::Pid;

/// Keeps the announced groups (space-separated, each surrounded by spaces) and kills
/// them at end-of-file.
const SCRIPT: &str = r#"groups=' '
while IFS= read -r line; do
  case $line in
    +*) groups="$groups${line#+} " ;;
    -*) group=${line#-}
        case $groups in
          *" $group "*) groups="${groups%% $group *} ${groups#* $group }" ;;
        esac ;;
  esac
done
for group in $groups; do kill -s KILL -- "-$group" 2>/dev/null; done
"#;

/// The pipe to the reaper: `None` before the first action, `Some(None)` when the reaper
/// could not start (or died), so nothing is retried on every action.
static REAPER: Mutex<Option<Option<ChildStdin>>> = Mutex::new(None);

fn start() -> Option<ChildStdin> {
    let mut child = Command::new("/bin/sh")
        .arg("-c")
        .arg(SCRIPT)
        .arg("once-reaper")
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .ok()?;
    // Never waited for: it lives as long as this process and is reaped by whoever
    // inherits it (init) once the pipe closes.
    child.stdin.take()
}

fn send(line: &str) {
    let mut reaper = REAPER.lock().unwrap_or_else(|e| e.into_inner());
    let pipe = reaper.get_or_insert_with(start);
    if let Some(stdin) = pipe
        && stdin.write_all(line.as_bytes()).is_err()
    {
        *pipe = None;
    }
}

/// Announces a running process group (an action's, or `once run`'s program's).
pub fn watch(group: Pid) {
    send(&format!("+{}\n", group.as_raw_nonzero()));
}

/// Withdraws a group that was killed and whose leader is not reaped yet (so its id
/// cannot have been reused).
pub fn forget(group: Pid) {
    send(&format!("-{}\n", group.as_raw_nonzero()));
}
