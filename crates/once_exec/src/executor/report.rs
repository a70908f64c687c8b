//! What an execution reports: each action's result (its status, where it came from, its
//! streams and outputs), the report of a whole execution, and the progress a front end
//! is told of.

use super::*;

/// Where an action's result came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CacheState {
    /// Reused from the action cache.
    Hit,
    /// Run, and its result stored.
    Miss,
    /// Run because it is not cacheable; nothing stored but its streams.
    Bypass,
}

impl CacheState {
    pub fn as_str(self) -> &'static str {
        match self {
            CacheState::Hit => "hit",
            CacheState::Miss => "miss",
            CacheState::Bypass => "bypass",
        }
    }
}

/// How an action ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ActionStatus {
    Succeeded,
    Failed,
    /// Not run: an action it depends on failed, or (without `keep_going`) another one did.
    Skipped,
    Cancelled,
}

/// A captured stream: its digest in the store, its size, and its last bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CapturedStream {
    /// `None` when the action did not run.
    pub digest: Option<Sha256Digest>,
    pub size: u64,
    /// The end of the stream, at most [`ExecOptions::stream_memory_limit`] bytes.
    pub tail: Vec<u8>,
}

/// A declared output and the digest dependents see of it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DeclaredOutput {
    pub path: String,
    pub digest: Sha256Digest,
}

/// The result of one action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionResult {
    pub id: String,
    pub status: ActionStatus,
    /// `None` when the action did not get as far as looking.
    pub cache: Option<CacheState>,
    pub key: Option<Sha256Digest>,
    pub exit_code: Option<i32>,
    /// Time spent on the action in this execution (a hit's restore time).
    pub duration: Duration,
    pub outputs: Vec<DeclaredOutput>,
    /// Every output entry (files under declared directories included).
    pub entries: Vec<OutputEntry>,
    pub stdout: CapturedStream,
    pub stderr: CapturedStream,
    /// Why it failed or was skipped.
    pub message: Option<String>,
    /// For a skipped action, the id of the failed action that kept it from running (a
    /// dependency, or without `keep_going` the first action that failed).
    pub cause: Option<String>,
    /// Problems met on the way that did not fail it (a corrupt blob, rebuilt).
    pub warnings: Vec<String>,
    /// Its program was killed at its time limit (`timeout_seconds`).
    pub timed_out: bool,
    /// The signal that killed its program, when one did.
    pub signal: Option<i32>,
    /// What the sandbox denied its program, as traced ([`ExecOptions::validate`]).
    pub findings: Vec<crate::sandbox::Finding>,
    /// A hit found in the remote cache (`cache` is `Hit`), not in the local store.
    pub remote_hit: bool,
}

impl ActionResult {
    /// A result with nothing but its id and status (no cache state, streams or outputs).
    pub fn new(id: &str, status: ActionStatus) -> ActionResult {
        ActionResult {
            id: id.to_owned(),
            status,
            cache: None,
            key: None,
            exit_code: None,
            duration: Duration::ZERO,
            outputs: Vec::new(),
            entries: Vec::new(),
            stdout: CapturedStream::default(),
            stderr: CapturedStream::default(),
            message: None,
            cause: None,
            warnings: Vec::new(),
            timed_out: false,
            signal: None,
            findings: Vec::new(),
            remote_hit: false,
        }
    }
}

/// Every action's result, in plan order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutionReport {
    pub results: Vec<ActionResult>,
    /// Damaged files of the store or the workspace met on the way (ignored, removed or
    /// rewritten; see [`Store::take_warnings`]), for the front end to show.
    pub warnings: Vec<String>,
}

impl ExecutionReport {
    /// Whether every action succeeded.
    pub fn succeeded(&self) -> bool {
        self.results
            .iter()
            .all(|result| result.status == ActionStatus::Succeeded)
    }

    pub fn result(&self, id: &str) -> Option<&ActionResult> {
        self.results.iter().find(|result| result.id == id)
    }
}

/// Reported after each action ends.
pub struct Progress<'a> {
    pub done: usize,
    pub total: usize,
    /// One line: `hit <id>`, `miss <id>`, `failed <id>: <why>`, …
    pub message: String,
    pub result: &'a ActionResult,
}
