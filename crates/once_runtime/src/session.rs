//! A session's directory and its `session.json` record.
//!
//! `.once/runtime/<session_id>/` holds:
//!
//! | File | Contents |
//! | --- | --- |
//! | `session.json` | the [`SessionRecord`], replaced atomically (temporary file, rename) |
//! | `program.json` | what the supervisor runs (the [`crate::ProgramSpec`]s) |
//! | `log.ndjson` | the interleaved line records ([`crate::logs`]) |
//! | `supervisor.lock` | locked (`flock`, exclusive) by the supervisor for its whole life |
//! | `state.lock` | locked by every writer of `session.json` while it reads, changes and replaces it |
//! | `stop.request` | written by a stop request: the grace period in milliseconds |
//! | `supervisor.log` | the supervisor's own standard output and error |
//!
//! Every writer (the starting front end, the supervisor, a stop request, a reader that
//! found the supervisor dead) changes the record through [`update_record`], under the
//! state lock, so no change is lost. A reader that finds a live status tries the life
//! lock: when it gets it, the supervisor is gone (killed, crashed, the machine
//! restarted), and the reader kills what is left of the program and records `failed`
//! with the reason ([`read_session`]). A status is therefore never stuck at `running`.

use std::fs::{File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustix::fs::{FlockOperation, flock};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::stop::StopSignal;

/// The directory of every session, relative to the workspace root.
pub const RUNTIME_DIR: &str = ".once/runtime";
pub const RECORD_FILE: &str = "session.json";
pub const PROGRAM_FILE: &str = "program.json";
pub const LOG_FILE: &str = "log.ndjson";

/// The plain text of the program's standard output (for `tail -f`); the records with
/// cursors are in [`LOG_FILE`].
pub const STDOUT_FILE: &str = "stdout.log";

/// The plain text of the program's standard error.
pub const STDERR_FILE: &str = "stderr.log";
pub const LIFE_LOCK_FILE: &str = "supervisor.lock";
pub const STATE_LOCK_FILE: &str = "state.lock";
pub const STOP_FILE: &str = "stop.request";
pub const SUPERVISOR_LOG_FILE: &str = "supervisor.log";

/// Where a session is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SessionStatus {
    /// Created; the supervisor has not started the program yet.
    Starting,
    /// The program runs.
    Running,
    /// A stop was requested; the supervisor is ending the program.
    Stopping,
    /// Ended by a stop request.
    Stopped,
    /// The program ended by itself with a success exit code.
    Exited,
    /// The program ended by itself otherwise (another code, a signal), could not start,
    /// or the supervisor died (`reason` says which).
    Failed,
}

impl SessionStatus {
    /// Whether the session has ended (nothing of it runs any more).
    pub fn is_final(self) -> bool {
        matches!(
            self,
            SessionStatus::Stopped | SessionStatus::Exited | SessionStatus::Failed
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Starting => "starting",
            SessionStatus::Running => "running",
            SessionStatus::Stopping => "stopping",
            SessionStatus::Stopped => "stopped",
            SessionStatus::Exited => "exited",
            SessionStatus::Failed => "failed",
        }
    }
}

/// The `session.json` record, the disk format (the CLI and the MCP tools answer its wire
/// counterpart, `once_json::SessionRecordDto`). Optional fields are absent until they
/// are known.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// `<target with other characters than [A-Za-z0-9_-] replaced by '-'>-<pid>-<unix ms>`.
    pub session_id: String,
    /// The target whose `run` capability the session runs.
    pub target: String,
    pub status: SessionStatus,
    /// The session's directory, relative to the workspace root.
    pub session_dir: String,
    /// The interleaved log of line records, relative to the workspace root.
    pub log: String,
    /// The plain text of the program's standard output, relative to the workspace root.
    pub stdout: String,
    /// The plain text of the program's standard error, relative to the workspace root.
    pub stderr: String,
    /// The command line of the program (the last command of the `run` capability, with
    /// the extra arguments).
    pub argv: Vec<String>,
    /// The supervisor's process id (it leads a process session of its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supervisor_pid: Option<u32>,
    /// The running program's process id, which is also its process group's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    pub started_at_unix_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at_unix_ms: Option<u64>,
    /// The program's exit code, when it exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The signal that ended the program, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_requested_at_unix_ms: Option<u64>,
    /// For a stopped session: `SIGTERM` when everything ended within the grace period,
    /// `SIGKILL` when something was still running after it and was killed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<StopSignal>,
    /// Why a session failed, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The machine's boot id when the supervisor started (`/proc/sys/kernel/random/boot_id`):
    /// process ids mean something only within that boot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
}

/// Milliseconds since the Unix epoch.
pub fn now_unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A directory of the runtime state, held open: its path (`/proc/self/fd/N`) names the
/// directory that was opened, so every file reached through it stays inside it whatever
/// happens to the workspace's path meanwhile (a component swapped for a symbolic link
/// cannot redirect a write). Every runtime directory is opened from the workspace root
/// one component at a time without following links (`once_host::confined`).
#[derive(Debug)]
pub struct DirHandle {
    _fd: std::os::fd::OwnedFd,
    path: PathBuf,
}

impl DirHandle {
    fn new(fd: std::os::fd::OwnedFd) -> DirHandle {
        use std::os::fd::AsRawFd as _;
        let path = PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()));
        DirHandle { _fd: fd, path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl std::ops::Deref for DirHandle {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.path
    }
}

/// The runtime directory of the workspace at `root` (`.once/runtime`), made when
/// `create`; `None` when it does not exist. A `.once` or `.once/runtime` that is a
/// symbolic link is refused.
pub fn runtime_dir(root: &Path, create: bool) -> io::Result<Option<DirHandle>> {
    let root_fd = once_host::confined::open_root(root)?;
    use std::os::fd::AsFd as _;
    let opened = once_host::confined::open_directory_at(root_fd.as_fd(), RUNTIME_DIR, create)
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("the runtime directory `{RUNTIME_DIR}` cannot be used: {e}"),
            )
        })?;
    Ok(opened.map(DirHandle::new))
}

/// The directory `id` inside the runtime directory, not followed if it is a link.
fn child_dir(runtime: &DirHandle, id: &str) -> io::Result<DirHandle> {
    use rustix::fs::{Mode, OFlags, openat};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = openat(&runtime._fd, id, flags, Mode::empty())?;
    Ok(DirHandle::new(fd))
}

/// Makes the directory `id` inside the runtime directory (failing when it exists) and
/// opens it.
pub fn create_child_dir(runtime: &DirHandle, id: &str) -> io::Result<DirHandle> {
    rustix::fs::mkdirat(&runtime._fd, id, rustix::fs::Mode::from_raw_mode(0o755))?;
    child_dir(runtime, id)
}

/// Whether `id` can name a session directory (letters, digits, `_`, `-`, `.`; not
/// starting with `.`): ids come from clients and must never leave the runtime directory.
pub fn is_valid_session_id(id: &str) -> bool {
    !id.is_empty()
        && !id.starts_with('.')
        && id.len() <= 255
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// The directory of session `id`, or an error naming the session when there is none.
pub fn session_dir(root: &Path, id: &str) -> io::Result<DirHandle> {
    let unknown = || {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!("no runtime session `{id}` (see `once runtime list`)"),
        )
    };
    if !is_valid_session_id(id) {
        return Err(unknown());
    }
    let Some(runtime) = runtime_dir(root, false)? else {
        return Err(unknown());
    };
    let Ok(dir) = child_dir(&runtime, id) else {
        return Err(unknown());
    };
    match std::fs::symlink_metadata(dir.join(RECORD_FILE)) {
        Ok(meta) if meta.is_file() => Ok(dir),
        _ => Err(unknown()),
    }
}

/// A held `flock`; released when dropped (the file is closed).
#[derive(Debug)]
pub struct HeldLock {
    #[allow(dead_code, reason = "held for its lock, closed on drop")]
    file: File,
}

fn open_lock_file(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
}

/// Takes the session's state lock, waiting for another writer.
pub fn lock_state(dir: &Path) -> io::Result<HeldLock> {
    let file = open_lock_file(&dir.join(STATE_LOCK_FILE))?;
    flock(&file, FlockOperation::LockExclusive)?;
    Ok(HeldLock { file })
}

/// Opens the life lock file and takes its lock (waiting), for a starter that hands it to
/// the supervisor.
pub fn take_life_lock(dir: &Path) -> io::Result<File> {
    let file = open_lock_file(&dir.join(LIFE_LOCK_FILE))?;
    flock(&file, FlockOperation::LockExclusive)?;
    Ok(file)
}

/// Tries the life lock: `Some` when nobody holds it, so the supervisor is gone.
pub fn try_life_lock(dir: &Path) -> io::Result<Option<HeldLock>> {
    let file = open_lock_file(&dir.join(LIFE_LOCK_FILE))?;
    match flock(&file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(Some(HeldLock { file })),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Reads `session.json` as it is on disk (no liveness check).
pub fn read_record(dir: &Path) -> io::Result<SessionRecord> {
    let text = std::fs::read(dir.join(RECORD_FILE))?;
    serde_json::from_slice(&text).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "`{}` is not a session record: {e}",
                dir.join(RECORD_FILE).display()
            ),
        )
    })
}

/// Writes `session.json` atomically (a temporary file renamed over it). Callers hold the
/// state lock.
pub fn write_record(dir: &Path, record: &SessionRecord) -> io::Result<()> {
    let mut text = serde_json::to_vec_pretty(record).map_err(io::Error::other)?;
    text.push(b'\n');
    let temporary = dir.join(".session.json.tmp");
    let mut file = File::create(&temporary)?;
    file.write_all(&text)?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&temporary, dir.join(RECORD_FILE))
}

/// Reads, changes and replaces the record under the state lock; answers the new record.
pub fn update_record(
    dir: &Path,
    change: impl FnOnce(&mut SessionRecord),
) -> io::Result<SessionRecord> {
    let _state = lock_state(dir)?;
    let mut record = read_record(dir)?;
    change(&mut record);
    write_record(dir, &record)?;
    Ok(record)
}

/// The current record of session `id`. A session that is not finished but whose
/// supervisor is gone (its life lock is free) becomes `failed` here: what is left of its
/// program is killed and the reason recorded.
pub fn read_session(root: &Path, id: &str) -> io::Result<SessionRecord> {
    observe(&session_dir(root, id)?)
}

/// [`read_session`] for a session directory.
pub fn observe(dir: &Path) -> io::Result<SessionRecord> {
    let record = read_record(dir)?;
    if record.status.is_final() {
        return Ok(record);
    }
    let Some(life) = try_life_lock(dir)? else {
        return Ok(record);
    };
    let _state = lock_state(dir)?;
    let mut record = read_record(dir)?;
    if record.status.is_final() {
        return Ok(record);
    }
    let killed = crate::processes::kill_remnants(&record);
    let supervisor = record.supervisor_pid.map_or_else(
        || "the supervisor".to_owned(),
        |pid| format!("the supervisor (pid {pid})"),
    );
    let mut reason = match (record.supervisor_pid, record.status) {
        (None, _) => "the supervisor never started".to_owned(),
        (Some(_), SessionStatus::Starting) => {
            format!("{supervisor} ended before starting the program (see supervisor.log)")
        }
        (Some(_), _) => format!(
            "{supervisor} ended while the program was {} (it was killed, crashed, or the machine restarted)",
            record.status.as_str()
        ),
    };
    match killed {
        crate::processes::Remnants::Killed(0) => {}
        crate::processes::Remnants::Killed(n) => reason.push_str(&format!(
            "; {n} remaining process{} of the session killed",
            if n == 1 { "" } else { "es" }
        )),
        crate::processes::Remnants::OtherBoot => {
            reason.push_str("; the machine restarted since, so nothing of it runs")
        }
    }
    record.status = SessionStatus::Failed;
    record.reason = Some(reason);
    record.finished_at_unix_ms = Some(now_unix_ms());
    write_record(dir, &record)?;
    drop(life);
    Ok(record)
}

/// Every session of the workspace, oldest first (each read as [`read_session`] does).
/// Directories without a readable record are left out.
pub fn list_sessions(root: &Path) -> io::Result<Vec<SessionRecord>> {
    let Some(runtime) = runtime_dir(root, false)? else {
        return Ok(Vec::new());
    };
    let entries = std::fs::read_dir(runtime.path())?;
    let mut records = Vec::new();
    for entry in entries {
        let entry = entry?;
        let Some(id) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        if !is_valid_session_id(&id) || !entry.file_type()?.is_dir() {
            continue;
        }
        if let Ok(record) = child_dir(&runtime, &id).and_then(|dir| observe(&dir)) {
            records.push(record);
        }
    }
    records.sort_by(|a, b| {
        (a.started_at_unix_ms, &a.session_id).cmp(&(b.started_at_unix_ms, &b.session_id))
    });
    Ok(records)
}

/// Removes the finished sessions that finished more than `older_than` ago; answers their
/// ids. A session whose supervisor still holds its life lock is never removed.
pub fn prune_sessions(root: &Path, older_than: Duration) -> io::Result<Vec<String>> {
    let limit = u64::try_from(older_than.as_millis()).unwrap_or(u64::MAX);
    let now = now_unix_ms();
    let mut removed = Vec::new();
    for record in list_sessions(root)? {
        let finished = record
            .finished_at_unix_ms
            .unwrap_or(record.started_at_unix_ms);
        if !record.status.is_final() || now.saturating_sub(finished) < limit {
            continue;
        }
        let Some(runtime) = runtime_dir(root, false)? else {
            break;
        };
        let dir = child_dir(&runtime, &record.session_id)?;
        let Some(life) = try_life_lock(&dir)? else {
            continue;
        };
        // Removed through the runtime directory's handle: the session directory itself
        // is a directory there (opened without following links above).
        std::fs::remove_dir_all(runtime.join(&record.session_id))?;
        drop(life);
        removed.push(record.session_id);
    }
    Ok(removed)
}

/// A session id for `target` started by process `pid` at `unix_ms`.
pub fn session_id(target: &str, pid: u32, unix_ms: u64) -> String {
    let name: String = target
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let name = name.trim_start_matches('-');
    let name: String = name.chars().take(120).collect();
    format!("{name}-{pid}-{unix_ms}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_are_safe_directory_names() {
        let id = session_id("./tools/demo:Launch Service", 12, 34);
        assert_eq!(id, "tools-demo-Launch-Service-12-34");
        assert!(is_valid_session_id(&id));
        for bad in ["", ".", "..", "../x", "a/b", ".hidden", "a b"] {
            assert!(!is_valid_session_id(bad), "{bad}");
        }
    }

    #[test]
    fn final_statuses_are_stopped_exited_and_failed() {
        let finals: Vec<&str> = [
            SessionStatus::Starting,
            SessionStatus::Running,
            SessionStatus::Stopping,
            SessionStatus::Stopped,
            SessionStatus::Exited,
            SessionStatus::Failed,
        ]
        .into_iter()
        .filter(|s| s.is_final())
        .map(SessionStatus::as_str)
        .collect();
        assert_eq!(finals, ["stopped", "exited", "failed"]);
    }

    /// A `.once` or `.once/runtime` that is a link, or a session directory that is one,
    /// is never followed: nothing is made or read outside the workspace.
    #[test]
    fn links_in_the_runtime_path_are_refused() {
        let workspace = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), workspace.path().join(".once")).unwrap();
        assert!(runtime_dir(workspace.path(), true).is_err());
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);

        std::fs::remove_file(workspace.path().join(".once")).unwrap();
        let runtime = runtime_dir(workspace.path(), true).unwrap().unwrap();
        std::fs::create_dir(outside.path().join("s1")).unwrap();
        std::fs::write(outside.path().join("s1").join(RECORD_FILE), "{}").unwrap();
        std::os::unix::fs::symlink(outside.path().join("s1"), runtime.join("s1")).unwrap();
        assert!(session_dir(workspace.path(), "s1").is_err());
        let made = create_child_dir(&runtime, "s2").unwrap();
        std::fs::write(made.join("x"), "y").unwrap();
        assert!(workspace.path().join(".once/runtime/s2/x").is_file());
    }
}
