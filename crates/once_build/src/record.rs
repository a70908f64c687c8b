//! The record of how each requested target ended (`TargetRecord`: what `once build
//! --format json` prints and the MCP executing tools return), made from a plan and its
//! execution report by [`records`].
//!
//! States are enums, matched as such by every front end, and serialised in snake case;
//! their schemas list the same names (a test keeps the two in step).

use std::time::Duration;

use once_exec::{ActionResult, ActionStatus, CacheState, ExecutionReport};
use once_model::action::ActionStep;
use schemars::JsonSchema;
use serde::Serialize;

use crate::Plan;

/// A problem that refuses a plan: an error diagnostic of a step (a manifest's syntax
/// error, an implementation that failed, a dependency cycle), with where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanProblem {
    /// The line every front end prints: `TARGET CAPABILITY: FILE:LINE: MESSAGE [CODE]`
    /// (`TARGET: …` for another target's problem, no prefix for a whole manifest's).
    pub line: String,
    pub diagnostic: once_analysis::LocatedDiagnostic,
}

impl PlanProblem {
    /// The problem `located` gives the step of `capability` of `target`.
    pub fn new(
        target: &str,
        capability: &str,
        located: &once_analysis::LocatedDiagnostic,
    ) -> PlanProblem {
        let d = &located.diagnostic;
        let line = located
            .range
            .as_ref()
            .map(|r| format!(":{}", r.start.line))
            .unwrap_or_default();
        // An error of a whole manifest (a syntax error) names no target: it refuses every
        // target of its package, and is said once.
        let prefix = match &d.target {
            Some(named) if named == target => format!("{named} {capability}: "),
            Some(named) => format!("{named}: "),
            None => String::new(),
        };
        PlanProblem {
            line: format!(
                "{prefix}{}{}: {} [{}]",
                d.file.as_deref().unwrap_or("?"),
                line,
                d.message,
                d.code
            ),
            diagnostic: located.clone(),
        }
    }

    /// The problem as the JSON answers carry it.
    pub fn located(&self) -> PlanDiagnostic {
        let d = &self.diagnostic.diagnostic;
        let position = |p: once_model::LineCol| ProblemPosition {
            line: p.line,
            column: p.column,
        };
        PlanDiagnostic {
            code: d.code.as_str().to_owned(),
            message: d.message.clone(),
            file: d.file.clone(),
            range: self.diagnostic.range.map(|r| ProblemRange {
                start: position(r.start),
                end: position(r.end),
            }),
            target: d.target.clone(),
        }
    }
}

/// A plan problem where it is, in `once build --format json`'s and the MCP executing
/// tools' `diagnostics` (beside `problems`, the same problems as lines).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct PlanDiagnostic {
    /// The diagnostic code (`syntax_error`, `implementation_error`, `dependency_cycle`, …).
    pub code: String,
    pub message: String,
    /// The workspace-relative file it is in; `null` when it has none.
    pub file: Option<String>,
    /// Where in the file (1-based lines and columns, end exclusive); `null` for the whole
    /// file.
    pub range: Option<ProblemRange>,
    /// The target it is about; `null` for a whole manifest's error.
    pub target: Option<String>,
}

/// A start/end pair of positions in a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ProblemRange {
    pub start: ProblemPosition,
    pub end: ProblemPosition,
}

/// A 1-based line and column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ProblemPosition {
    pub line: u32,
    pub column: u32,
}

/// How a requested target ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetStatus {
    /// Every action of its capability succeeded (or there was none).
    Completed,
    /// One of its actions failed, or the plan was refused.
    Failed,
    /// An action it needs failed first.
    Skipped,
    Cancelled,
}

/// How one action ended, as a record says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionState {
    Succeeded,
    Failed,
    Skipped,
    Cancelled,
}

impl From<ActionStatus> for ActionState {
    fn from(status: ActionStatus) -> ActionState {
        match status {
            ActionStatus::Succeeded => ActionState::Succeeded,
            ActionStatus::Failed => ActionState::Failed,
            ActionStatus::Skipped => ActionState::Skipped,
            ActionStatus::Cancelled => ActionState::Cancelled,
        }
    }
}

/// Where a result came from, as a record says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheResult {
    /// Reused from the action cache.
    Hit,
    /// Run, and stored.
    Miss,
    /// Run uncached.
    Bypass,
}

impl From<CacheState> for CacheResult {
    fn from(state: CacheState) -> CacheResult {
        match state {
            CacheState::Hit => CacheResult::Hit,
            CacheState::Miss => CacheResult::Miss,
            CacheState::Bypass => CacheResult::Bypass,
        }
    }
}

impl CacheResult {
    pub fn as_str(self) -> &'static str {
        match self {
            CacheResult::Hit => "hit",
            CacheResult::Miss => "miss",
            CacheResult::Bypass => "bypass",
        }
    }
}

/// How one requested target ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct TargetRecord {
    pub target: String,
    pub kind: String,
    pub capability: String,
    /// Whether the kind implements the capability; one that does not plans nothing, and
    /// its target completes with nothing to run.
    pub implemented: bool,
    /// `completed`, `failed` (one of its actions failed, or the plan was refused),
    /// `skipped` (an action it needs failed first) or `cancelled`.
    #[schemars(with = "String", extend("enum" = ["completed", "failed", "skipped", "cancelled"]))]
    pub status: TargetStatus,
    /// `hit` when every action of the target's capability was reused, `miss` when one
    /// ran and was stored, `bypass` when one ran uncached (and none was a miss); `null`
    /// when the capability declares no action or none ran.
    #[schemars(with = "Option<String>", extend("enum" = ["hit", "miss", "bypass", null]))]
    pub cache: Option<CacheResult>,
    /// The key of the capability's last action (`null` without actions).
    pub action_digest: Option<String>,
    pub output_groups: Vec<String>,
    pub required_outputs: Vec<String>,
    /// The files the capability hands to dependents (its default outputs).
    pub outputs: Vec<String>,
    /// Each action of the target's capability.
    pub actions: Vec<ActionSummary>,
    /// Why the target did not complete: the first failed action (its own, or the one of
    /// a dependency that stopped it).
    pub failure: Option<Failure>,
}

/// One action of a target's capability.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ActionSummary {
    pub id: String,
    /// `succeeded`, `failed`, `skipped` or `cancelled`.
    #[schemars(with = "String", extend("enum" = ["succeeded", "failed", "skipped", "cancelled"]))]
    pub status: ActionState,
    /// `hit`, `miss` or `bypass`; `null` when it neither ran nor was reused (skipped, cancelled).
    #[schemars(with = "Option<String>", extend("enum" = ["hit", "miss", "bypass", null]))]
    pub cache: Option<CacheResult>,
    pub key: Option<String>,
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
}

/// A failed action: what it ran, how it ended and the end of its output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Failure {
    pub action: String,
    /// The command line (`argv` joined, shell-quoted), or what the step does.
    pub command: String,
    pub exit_code: Option<i32>,
    pub message: String,
    /// The last lines of its stdout and stderr.
    pub stdout_tail: String,
    pub stderr_tail: String,
}

/// How many lines of a failed action's streams a record keeps.
pub const TAIL_LINES: usize = 20;

/// The last `lines` lines of `bytes`, as text.
pub fn tail(bytes: &[u8], lines: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let all: Vec<&str> = text.lines().collect();
    let start = all.len().saturating_sub(lines);
    let mut out = all[start..].join("\n");
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

/// A shell-quoted command line.
pub fn shell_words(argv: &[String]) -> String {
    argv.iter()
        .map(|word| {
            if !word.is_empty()
                && word
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
            {
                word.clone()
            } else {
                format!("'{}'", word.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn failure(plan: &Plan, result: &ActionResult) -> Failure {
    let action = plan.actions.iter().find(|a| a.action.id == result.id);
    let command = match action.map(|a| &a.action.step) {
        Some(ActionStep::Run(command)) => {
            let words = shell_words(&command.argv);
            if command.cwd.is_empty() {
                words
            } else {
                format!(
                    "(cd {} && {words})",
                    shell_words(std::slice::from_ref(&command.cwd))
                )
            }
        }
        Some(ActionStep::WriteFile { path, .. }) => format!("write {path}"),
        Some(ActionStep::Copy { from, to }) => format!("copy {from} {to}"),
        Some(ActionStep::Symlink { link, .. }) => format!("symlink {link}"),
        Some(ActionStep::MakeDir { path }) => format!("mkdir {path}"),
        Some(ActionStep::MaterializeHostFile { source, to }) => {
            format!("materialize_host_file {source} {to}")
        }
        None => String::new(),
    };
    Failure {
        action: result.id.clone(),
        command,
        exit_code: result.exit_code,
        message: result
            .message
            .clone()
            .unwrap_or_else(|| format!("action `{}` failed", result.id)),
        stdout_tail: tail(&result.stdout.tail, TAIL_LINES),
        stderr_tail: tail(&result.stderr.tail, TAIL_LINES),
    }
}

fn duration_ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// One record per requested target, in the plan's order.
pub fn records(plan: &Plan, report: &ExecutionReport) -> Vec<TargetRecord> {
    let first_failure = report
        .results
        .iter()
        .find(|r| r.status == ActionStatus::Failed);
    // By id, once: looking each one up in the list would be quadratic in the plan.
    let by_id: std::collections::HashMap<&str, &ActionResult> = report
        .results
        .iter()
        .map(|result| (result.id.as_str(), result))
        .collect();
    plan.targets
        .iter()
        .map(|target| {
            let results: Vec<&ActionResult> = target
                .actions
                .iter()
                .filter_map(|id| by_id.get(id.as_str()).copied())
                .collect();
            let has = |status| results.iter().any(|r| r.status == status);
            let has_cache = |state| results.iter().any(|r| r.cache == Some(state));
            let (status, failed) = if let Some(own) =
                results.iter().find(|r| r.status == ActionStatus::Failed)
            {
                (TargetStatus::Failed, Some(failure(plan, own)))
            } else if has(ActionStatus::Cancelled) {
                (TargetStatus::Cancelled, None)
            } else if let Some(skipped) = results.iter().find(|r| r.status == ActionStatus::Skipped)
            {
                // The report of the failure that kept it from running, not just its id.
                let cause = skipped
                    .cause
                    .as_deref()
                    .and_then(|id| by_id.get(id).copied())
                    .or(first_failure);
                (TargetStatus::Skipped, cause.map(|f| failure(plan, f)))
            } else {
                (TargetStatus::Completed, None)
            };
            let cache = if has_cache(CacheState::Miss) {
                Some(CacheResult::Miss)
            } else if has_cache(CacheState::Bypass) {
                Some(CacheResult::Bypass)
            } else if !results.is_empty()
                && results.iter().all(|r| r.cache == Some(CacheState::Hit))
            {
                Some(CacheResult::Hit)
            } else {
                None
            };
            TargetRecord {
                target: target.id.clone(),
                kind: target.kind.clone(),
                capability: plan.capability.clone(),
                implemented: target.implemented,
                status,
                cache,
                action_digest: results.last().and_then(|r| r.key).map(|k| k.to_hex()),
                output_groups: target.output_groups.clone(),
                required_outputs: target.required_outputs.clone(),
                outputs: target.default_outputs.clone(),
                actions: results
                    .iter()
                    .map(|r| ActionSummary {
                        id: r.id.clone(),
                        status: r.status.into(),
                        cache: r.cache.map(CacheResult::from),
                        key: r.key.map(|k| k.to_hex()),
                        exit_code: r.exit_code,
                        duration_ms: duration_ms(r.duration),
                    })
                    .collect(),
                failure: failed,
            }
        })
        .collect()
}

/// The records of a plan refused for its problems: every target `failed`, nothing run.
pub fn refused_records(plan: &Plan) -> Vec<TargetRecord> {
    records(
        plan,
        &ExecutionReport {
            results: Vec::new(),
            warnings: Vec::new(),
        },
    )
    .into_iter()
    .map(|mut record| {
        record.status = TargetStatus::Failed;
        record.failure = Some(Failure {
            action: String::new(),
            command: String::new(),
            exit_code: None,
            message: format!("not planned: {}", plan.problem_lines().join("; ")),
            stdout_tail: String::new(),
            stderr_tail: String::new(),
        });
        record
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names each schema lists are the names serde writes, every variant's.
    #[test]
    fn the_schemas_list_every_state_by_its_serialised_name() {
        fn names<T: Serialize>(values: &[T]) -> Vec<serde_json::Value> {
            values
                .iter()
                .map(|v| serde_json::to_value(v).unwrap())
                .collect()
        }
        let schema = serde_json::to_value(schemars::schema_for!(TargetRecord)).unwrap();
        let listed = |path: &[&str]| {
            let mut value = &schema;
            for key in path {
                value = &value[*key];
            }
            value["enum"].as_array().cloned().unwrap_or_default()
        };
        use TargetStatus as T;
        assert_eq!(
            listed(&["properties", "status"]),
            names(&[T::Completed, T::Failed, T::Skipped, T::Cancelled])
        );
        let mut caches = names(&[CacheResult::Hit, CacheResult::Miss, CacheResult::Bypass]);
        caches.push(serde_json::Value::Null);
        assert_eq!(listed(&["properties", "cache"]), caches);
        use ActionState as A;
        let action = &schema["$defs"]["ActionSummary"];
        assert_eq!(
            action["properties"]["status"]["enum"].as_array().unwrap(),
            &names(&[A::Succeeded, A::Failed, A::Skipped, A::Cancelled])
        );
        assert_eq!(
            action["properties"]["cache"]["enum"].as_array().unwrap(),
            &caches
        );
        for state in [CacheResult::Hit, CacheResult::Miss, CacheResult::Bypass] {
            assert_eq!(serde_json::to_value(state).unwrap(), state.as_str());
        }
    }
}
