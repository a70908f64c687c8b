//! Evidence of an execution: one `once.evidence.v1` record (`once_evidence`) for each
//! action that ran or was reused, with its target and capability as the subject.
//!
//! An action gets a record when it got as far as a cache state (`hit`, `miss`, `bypass`)
//! and ended `succeeded` (`passed`) or `failed` (`failed`). Skipped and cancelled actions,
//! and failures before the cache was consulted (a program not found, an unreadable tool),
//! have no result to vouch for and get none. A front end records a whole report in one
//! line:
//!
//! ```no_run
//! # fn run(root: &std::path::Path, plan: &[once_exec::PlannedAction], report: &once_exec::ExecutionReport) -> Result<(), once_evidence::EvidenceError> {
//! once_exec::evidence::record_evidence(root, plan, report)?;
//! # Ok(()) }
//! ```

use std::collections::HashMap;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use once_evidence::{
    ActionEvidence, CacheOutcome, EvidenceError, EvidenceRecord, EvidenceStatus, Subject,
};

use crate::executor::{ActionResult, ActionStatus, CacheState, ExecutionReport, PlannedAction};

/// The evidence of `report`'s results (in report order), made at `created_at_unix_ms`;
/// `plan` is the plan the report came from (it knows each action's target and capability
/// and its static key, the record's `input_digest`).
pub fn evidence_records(
    plan: &[PlannedAction],
    report: &ExecutionReport,
    created_at_unix_ms: u64,
) -> Vec<EvidenceRecord> {
    let planned: HashMap<&str, &PlannedAction> = plan
        .iter()
        .map(|planned| (planned.action.id.as_str(), planned))
        .collect();
    report
        .results
        .iter()
        .filter_map(|result| {
            let planned = planned.get(result.id.as_str())?;
            let evidence = action_evidence(planned, result)?;
            Some(EvidenceRecord::new(evidence, created_at_unix_ms))
        })
        .collect()
}

/// What `result` of `planned` says, when it says anything (see the module documentation).
pub fn action_evidence(planned: &PlannedAction, result: &ActionResult) -> Option<ActionEvidence> {
    let status = match result.status {
        ActionStatus::Succeeded => EvidenceStatus::Passed,
        ActionStatus::Failed => EvidenceStatus::Failed,
        ActionStatus::Skipped | ActionStatus::Cancelled => return None,
    };
    let cache = match result.cache? {
        CacheState::Hit => CacheOutcome::Hit,
        CacheState::Miss => CacheOutcome::Miss,
        CacheState::Bypass => CacheOutcome::Bypass,
    };
    let action = &planned.action;
    Some(ActionEvidence {
        subject: Subject::Target {
            id: action.target.clone(),
            capability: action.capability.clone(),
        },
        action: Some(action.id.clone()),
        status,
        // A program `once run` starts itself (attached to the terminal) has no key of
        // its own: its static key stands for it.
        action_digest: result.key.unwrap_or(planned.static_key),
        input_digest: Some(planned.static_key),
        cache,
        exit_code: result.exit_code,
        stdout: result.stdout.digest,
        stderr: result.stderr.digest,
    })
}

/// Milliseconds since the Unix epoch (0 for a clock before it).
pub fn now_unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
        })
}

/// Records the evidence of `report` (run from `plan`) for the workspace at `root`: one
/// append to its evidence journal, which the database ingests when it is next opened
/// (`once_evidence::append_to_journal`); returns how many records were written. The outcome of the
/// execution does not depend on it: a front end reports a failure here as a warning.
pub fn record_evidence(
    root: &Path,
    plan: &[PlannedAction],
    report: &ExecutionReport,
) -> Result<usize, EvidenceError> {
    let records = evidence_records(plan, report, now_unix_ms());
    if records.is_empty() {
        return Ok(0);
    }
    once_evidence::append_to_journal(root, &records)
}
