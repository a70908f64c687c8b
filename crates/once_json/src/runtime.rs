//! Runtime sessions as the CLI's `--format json` and the MCP tools answer them: the
//! wire counterpart of `once_runtime::SessionRecord` (which is `session.json`, the disk
//! format), converted at the edge so that neither changes with the other.

use schemars::JsonSchema;
use serde::Serialize;

/// A runtime session: its id, target, status, files, command line and how it ended.
/// Optional fields are absent until they are known.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SessionRecordDto {
    /// `<target with other characters than [A-Za-z0-9_-] replaced by '-'>-<pid>-<unix ms>`.
    pub session_id: String,
    /// The target whose `run` capability the session runs.
    pub target: String,
    pub status: once_runtime::SessionStatus,
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supervisor_pid: Option<u32>,
    /// The running program's process id, which is also its process group's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    pub started_at_unix_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_at_unix_ms: Option<u64>,
    /// The program's exit code, when it exited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The signal that ended the program, when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_requested_at_unix_ms: Option<u64>,
    /// For a stopped session: `SIGTERM` when everything ended within the grace period,
    /// `SIGKILL` when something was still running after it and was killed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<once_runtime::StopSignal>,
    /// Why a session failed, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The machine's boot id when the supervisor started (`/proc/sys/kernel/random/boot_id`):
    /// process ids mean something only within that boot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
}

/// The wire record of a session's `session.json`.
pub fn session_record(record: &once_runtime::SessionRecord) -> SessionRecordDto {
    SessionRecordDto {
        session_id: record.session_id.clone(),
        target: record.target.clone(),
        status: record.status,
        session_dir: record.session_dir.clone(),
        log: record.log.clone(),
        stdout: record.stdout.clone(),
        stderr: record.stderr.clone(),
        argv: record.argv.clone(),
        supervisor_pid: record.supervisor_pid,
        pid: record.pid,
        started_at_unix_ms: record.started_at_unix_ms,
        finished_at_unix_ms: record.finished_at_unix_ms,
        exit_code: record.exit_code,
        signal: record.signal,
        stop_requested_at_unix_ms: record.stop_requested_at_unix_ms,
        stopped_by: record.stopped_by,
        reason: record.reason.clone(),
        boot_id: record.boot_id.clone(),
    }
}

#[cfg(test)]
mod tests {
    use once_runtime::{SessionRecord, SessionStatus, StopSignal};

    use super::*;

    /// Every field of `session.json` reaches the wire under its name, absent ones absent:
    /// a field added to one format and not the other fails here, so that it is a
    /// decision.
    #[test]
    fn the_wire_record_carries_every_field_of_the_disk_record() {
        let full = SessionRecord {
            session_id: "a-1-2".into(),
            target: "a/A".into(),
            status: SessionStatus::Stopped,
            session_dir: ".once/runtime/a-1-2".into(),
            log: ".once/runtime/a-1-2/log.jsonl".into(),
            stdout: ".once/runtime/a-1-2/stdout.log".into(),
            stderr: ".once/runtime/a-1-2/stderr.log".into(),
            argv: vec!["sh".into(), "-c".into(), "sleep 9".into()],
            supervisor_pid: Some(10),
            pid: Some(11),
            started_at_unix_ms: 1,
            finished_at_unix_ms: Some(2),
            exit_code: Some(0),
            signal: Some(15),
            stop_requested_at_unix_ms: Some(3),
            stopped_by: Some(StopSignal::Term),
            reason: Some("why".into()),
            boot_id: Some("boot".into()),
        };
        let empty = SessionRecord {
            supervisor_pid: None,
            pid: None,
            finished_at_unix_ms: None,
            exit_code: None,
            signal: None,
            stop_requested_at_unix_ms: None,
            stopped_by: None,
            reason: None,
            boot_id: None,
            ..full.clone()
        };
        for record in [full, empty] {
            assert_eq!(
                serde_json::to_value(session_record(&record)).unwrap(),
                serde_json::to_value(&record).unwrap()
            );
        }
    }
}
