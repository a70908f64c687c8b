//! Starting a session: what the supervisor will run ([`ProgramSpec`]) and the detached
//! supervisor itself ([`start_session`]).
//!
//! The starter creates the session directory, takes the session's life lock, writes
//! `program.json` and a `starting` record, and starts `once __supervise DIR` with the
//! locked file as its standard input: the lock belongs to the open file, which the
//! supervisor inherits, so the lock is held without a gap from before the record exists
//! until the supervisor ends, whatever happens to the starter. The supervisor's output
//! goes to `supervisor.log`, never to the starter's pipes, so a caller reading the
//! starter's output to its end is not kept waiting.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use once_exec::HostEnvironment;
use serde::{Deserialize, Serialize};

use crate::session::{
    self, LOG_FILE, PROGRAM_FILE, STDERR_FILE, STDOUT_FILE, SUPERVISOR_LOG_FILE, SessionRecord,
    SessionStatus, now_unix_ms,
};

/// One command the supervisor runs, resolved: the program, its complete (scrubbed)
/// environment and working directory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProgramSpec {
    /// The action it comes from (`<target>#run/<name>`).
    pub action: String,
    /// The program, absolute.
    pub program: PathBuf,
    /// The command line; `argv[0]` is passed as the program's name.
    pub argv: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub cwd: PathBuf,
    pub success_exit_codes: Vec<i32>,
    /// Whether the program runs in a PID namespace of its own (the sandbox is on):
    /// nothing it starts then outlives it, however it leaves its process group.
    #[serde(default)]
    pub contained: bool,
}

impl ProgramSpec {
    /// The spec of a `run` action's command in the workspace at `root`, with `extra`
    /// arguments appended, in the environment `once run` gives it (the allowlist and the
    /// declared variables).
    pub fn for_command(
        root: &Path,
        action: &str,
        command: &once_model::action::Command,
        host: &HostEnvironment,
        extra: &[String],
    ) -> Result<ProgramSpec, String> {
        let env = host.action_environment(&command.env, root);
        let cwd = if command.cwd.is_empty() {
            root.to_path_buf()
        } else {
            root.join(&command.cwd)
        };
        let first = command.argv.first().map_or("", String::as_str);
        let path = env.get("PATH").map_or("", String::as_str);
        let program = once_exec::tools::resolve_program(first, path, &cwd)
            .map_err(|e| format!("cannot run `{action}`: {e}"))?;
        let mut argv = command.argv.clone();
        argv.extend(extra.iter().cloned());
        Ok(ProgramSpec {
            action: action.to_owned(),
            program,
            argv,
            env,
            cwd,
            success_exit_codes: command.success_exit_codes.clone(),
            contained: false,
        })
    }
}

/// The specs of a run plan's program commands (`once_build::Plan::split_program`), in
/// order, with `extra` arguments appended to the last one.
pub fn program_specs(
    root: &Path,
    programs: &[once_exec::PlannedAction],
    host: &HostEnvironment,
    extra: &[String],
) -> Result<Vec<ProgramSpec>, String> {
    let last = programs.len().saturating_sub(1);
    programs
        .iter()
        .enumerate()
        .filter_map(|(index, planned)| match &planned.action.step {
            once_model::action::ActionStep::Run(command) => Some(ProgramSpec::for_command(
                root,
                &planned.action.id,
                command,
                host,
                if index == last { extra } else { &[] },
            )),
            _ => None,
        })
        .collect()
}

/// Reads `program.json`.
pub fn read_programs(dir: &Path) -> io::Result<Vec<ProgramSpec>> {
    let text = std::fs::read(dir.join(PROGRAM_FILE))?;
    serde_json::from_slice(&text).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Starts a session running `programs` (in order; the last is the long-running one)
/// for `target`, supervised by `supervisor` (the `once` executable), and answers its
/// `starting` record at once.
pub fn start_session(
    root: &Path,
    target: &str,
    programs: &[ProgramSpec],
    supervisor: &Path,
) -> io::Result<SessionRecord> {
    let runtime = session::runtime_dir(root, true)?
        .ok_or_else(|| io::Error::other("cannot make the runtime directory"))?;
    let started = now_unix_ms();
    let base = session::session_id(target, std::process::id(), started);
    let (id, dir) = (0..1000)
        .map(|n| {
            if n == 0 {
                base.clone()
            } else {
                format!("{base}-{n}")
            }
        })
        .find_map(|id| match session::create_child_dir(&runtime, &id) {
            Ok(dir) => Some(Ok((id, dir))),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => None,
            Err(e) => Some(Err(e)),
        })
        .unwrap_or_else(|| Err(io::Error::other("cannot find a free session id")))?;
    let life = session::take_life_lock(&dir)?;
    let spec = serde_json::to_vec_pretty(programs).map_err(io::Error::other)?;
    std::fs::write(dir.join(PROGRAM_FILE), spec)?;
    std::fs::write(dir.join(LOG_FILE), b"")?;
    let relative = format!("{}/{id}", session::RUNTIME_DIR);
    let record = SessionRecord {
        session_id: id.clone(),
        target: target.to_owned(),
        status: SessionStatus::Starting,
        log: format!("{relative}/{LOG_FILE}"),
        stdout: format!("{relative}/{STDOUT_FILE}"),
        stderr: format!("{relative}/{STDERR_FILE}"),
        session_dir: relative,
        argv: programs.last().map(|p| p.argv.clone()).unwrap_or_default(),
        supervisor_pid: None,
        pid: None,
        started_at_unix_ms: started,
        finished_at_unix_ms: None,
        exit_code: None,
        signal: None,
        stop_requested_at_unix_ms: None,
        stopped_by: None,
        reason: None,
        boot_id: None,
    };
    {
        let _state = session::lock_state(&dir)?;
        session::write_record(&dir, &record)?;
    }
    let log = std::fs::File::create(dir.join(SUPERVISOR_LOG_FILE))?;
    let session_dir = root.join(session::RUNTIME_DIR).join(&id);
    // The supervisor leaves this process's session at once; whoever outlives whom, it
    // never stays a zombie of a long-running starter (the MCP server).
    let spawned = once_exec::launch::start_detached(
        supervisor,
        &["__supervise".as_ref(), session_dir.as_os_str()],
        root,
        Stdio::from(life),
        Stdio::from(log.try_clone()?),
        Stdio::from(log),
    );
    match spawned {
        Ok(()) => session::read_record(&dir),
        Err(e) => session::update_record(&dir, |record| {
            record.status = SessionStatus::Failed;
            record.reason = Some(format!(
                "cannot start the supervisor `{}`: {e}",
                supervisor.display()
            ));
            record.finished_at_unix_ms = Some(now_unix_ms());
        }),
    }
}
