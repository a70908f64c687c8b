//! Building and running targets, shared by `once build`/`once run` and the MCP tools
//! `once_build_target`/`once_run_target`:
//!
//! 1. [`resolve_targets`] turns the command line's patterns into target ids (`ID`,
//!    `PKG/...` for every target in a package and below it, `...` for every target);
//! 2. [`plan`] asks an analysis snapshot for each target's plan of one capability
//!    (`Analysis::action_plan`) and merges them: one list of actions, each once, and per
//!    requested target the actions of its own capability. After this the snapshot can be
//!    dropped: execution never touches the database;
//! 3. the caller runs [`Plan::actions`] with a `once_exec::Executor`;
//! 4. [`records`] turns the execution report into one [`TargetRecord`] per requested
//!    target: its status, its cache state, its outputs and, when it failed, the failing
//!    action's command, exit code and the end of its output.
//!
//! After each execution the front end calls [`record_evidence`], which stores the
//! `once.evidence.v1` records of the actions that ran or were reused (`once query
//! evidence`); failing to store them is a warning, never the build's outcome.

pub mod init;
pub mod plan_cache;
pub mod record;
pub mod scripts;
pub mod session;
pub mod test_results;
pub mod testing;
pub mod validation;

pub use record::{
    ActionState, ActionSummary, CacheResult, Failure, PlanDiagnostic, PlanProblem, TAIL_LINES,
    TargetRecord, TargetStatus, records, refused_records, shell_words, tail,
};

use std::collections::HashSet;

use once_analysis::{Analysis, Cancellable, SourceInput};
use once_exec::{ActionStatus, CacheState, ExecutionReport, PlannedAction, SourceStamps};
use once_model::action::ActionStep;

/// The syntax of a pattern naming every target below a package: `PKG/...`.
pub const RECURSIVE_SUFFIX: &str = "...";

/// The target ids `patterns` name, in the order given, each once.
///
/// - `ID` (a canonical id such as `libs/text/Text`): that target;
/// - `PKG/...`: every target whose package is `PKG` or below it that has `capability`;
/// - `...`: every target of the workspace that has `capability`.
///
/// A pattern naming no target, or a target without the capability, is an error;
/// `listing_hint` is the front end's way to list the candidates (see
/// [`once_analysis::NotFound::with_hint`]).
pub fn resolve_targets(
    analysis: &Analysis,
    patterns: &[String],
    capability: &str,
    listing_hint: impl Fn(once_analysis::Listing) -> &'static str,
) -> Cancellable<Result<Vec<String>, String>> {
    let mut ids = Vec::new();
    let mut seen = HashSet::new();
    let mut listing = None;
    for pattern in patterns {
        let pattern = pattern.trim();
        let prefix = if pattern == RECURSIVE_SUFFIX {
            Some("")
        } else {
            pattern.strip_suffix("/...")
        };
        if let Some(prefix) = prefix {
            let prefix = prefix.trim_start_matches("./").trim_matches('/');
            if listing.is_none() {
                listing = Some(analysis.targets(None)?);
            }
            let matching: Vec<_> = listing
                .iter()
                .flatten()
                .filter(|t| {
                    prefix.is_empty()
                        || t.package == prefix
                        || t.package.starts_with(&format!("{prefix}/"))
                })
                .collect();
            if matching.is_empty() {
                return Ok(Err(format!(
                    "`{pattern}` names no target: no package is `{prefix}` or below it"
                )));
            }
            for target in matching {
                if target.capabilities.iter().any(|c| c == capability)
                    && seen.insert(target.id.clone())
                {
                    ids.push(target.id.clone());
                }
            }
        } else {
            let target = match analysis.lookup_target(pattern)? {
                Ok(target) => target,
                Err(not_found) => {
                    return Ok(Err(not_found.with_hint(&listing_hint)));
                }
            };
            let id = target.label.to_string();
            if !target.capabilities.iter().any(|c| c.name == capability) {
                let names: Vec<&str> = target
                    .capabilities
                    .iter()
                    .map(|c| c.name.as_str())
                    .collect();
                return Ok(Err(format!(
                    "`{id}` ({}) has no `{capability}` capability; it has: {}",
                    target.kind,
                    if names.is_empty() {
                        "none".to_owned()
                    } else {
                        names.join(", ")
                    }
                )));
            }
            if seen.insert(id.clone()) {
                ids.push(id);
            }
        }
    }
    Ok(Ok(ids))
}

/// What to execute for a set of targets, planned from one analysis snapshot.
#[derive(Clone, Debug)]
pub struct Plan {
    pub capability: String,
    pub targets: Vec<PlannedTarget>,
    /// Every action of every requested target's plan, each once, dependencies first.
    pub actions: Vec<PlannedAction>,
    /// Planning problems (errors in manifests, implementation errors, dependency
    /// cycles), each located where it is; a plan with problems is not executed.
    pub problems: Vec<PlanProblem>,
    /// The kind of every target the plan has actions of, by id.
    pub kinds: std::collections::HashMap<String, String>,
    /// The stamp each source file the actions read had when its digest entered their
    /// static keys: the executor records no result of an action whose sources changed
    /// since (`Executor::with_source_stamps`).
    pub source_stamps: SourceStamps,
    /// The workspace's `[workspace] sandbox` (`Some(true)`: `"on"`); `--sandbox` on the
    /// command line wins over it.
    pub sandbox: Option<bool>,
    /// The workspace's `[cache]`: the remote cache as declared (the environment and the
    /// command line win over it, see `once_remote::RemoteSettings`).
    pub remote_cache: Option<once_model::remote::RemoteCacheDecl>,
}

impl Plan {
    /// The problems as every front end prints them, one line each.
    pub fn problem_lines(&self) -> Vec<String> {
        self.problems.iter().map(|p| p.line.clone()).collect()
    }

    /// The problems as the JSON answers carry them, located.
    pub fn problem_diagnostics(&self) -> Vec<PlanDiagnostic> {
        self.problems.iter().map(PlanProblem::located).collect()
    }

    /// Splits a `run` plan for a front end that starts the program itself (`once run`
    /// attached to the terminal, `once runtime start` under a supervisor): the actions
    /// the executor runs first (everything but the first target's own uncached `run`
    /// commands), then those commands, in plan order.
    pub fn split_program(&self) -> (Vec<PlannedAction>, Vec<PlannedAction>) {
        let own: &[String] = self.targets.first().map_or(&[], |t| t.actions.as_slice());
        self.actions.iter().cloned().partition(|a| {
            !(own.contains(&a.action.id)
                && !a.action.cacheable
                && matches!(a.action.step, ActionStep::Run(_)))
        })
    }
}

/// A requested target and the actions of its own capability.
#[derive(Clone, Debug)]
pub struct PlannedTarget {
    pub id: String,
    pub kind: String,
    /// The ids of the actions the target's requested capability declares.
    pub actions: Vec<String>,
    pub default_outputs: Vec<String>,
    pub output_groups: Vec<String>,
    pub required_outputs: Vec<String>,
    /// Whether the kind implements the capability (one that does not plans nothing).
    pub implemented: bool,
    /// Runs of a failing test case the target asks for: its `attempts` attribute, else
    /// `[workspace] test_attempts`; `None` when neither is set (`once test --attempts`
    /// wins over both).
    pub test_attempts: Option<u32>,
}

/// Plans `capability` for every id (ids from [`resolve_targets`]).
pub fn plan(
    analysis: &Analysis,
    ids: &[String],
    capability: &str,
) -> Cancellable<Result<Plan, String>> {
    let mut plan = Plan {
        capability: capability.to_owned(),
        targets: Vec::with_capacity(ids.len()),
        actions: Vec::with_capacity(ids.len()),
        problems: Vec::new(),
        kinds: std::collections::HashMap::with_capacity(ids.len()),
        source_stamps: SourceStamps::default(),
        sandbox: analysis.workspace_sandbox()?,
        remote_cache: analysis.workspace_remote_cache()?,
    };
    let mut seen_actions = HashSet::with_capacity(ids.len());
    let mut seen_problems = HashSet::new();
    let workspace_attempts = analysis.workspace_test_attempts()?;
    // A step left out of a later target's plan (an earlier one planned it) adds nothing
    // below: its actions, problems and kind were taken when it was first met.
    let action_plans = analysis.action_plans(ids, capability)?;
    for (id, action_plan) in ids.iter().zip(action_plans) {
        let Some(action_plan) = action_plan else {
            return Ok(Err(format!("no target `{id}`")));
        };
        // The outline is this function's own too: its parts are moved, not copied.
        let (kind, declared, attempts) = match action_plan.outline {
            Some(outline) => {
                let attempts = outline
                    .attrs
                    .iter()
                    .find(|(name, _)| name == "attempts")
                    .and_then(|(_, value)| match value {
                        once_model::AttrValue::Int(n) => u32::try_from(*n).ok(),
                        _ => None,
                    });
                (outline.kind, outline.capability, attempts)
            }
            None => (String::new(), None, None),
        };
        let (output_groups, required_outputs) = declared
            .map(|c| (c.output_groups, c.requires_outputs))
            .unwrap_or_default();
        let mut target = PlannedTarget {
            id: id.clone(),
            kind,
            actions: Vec::new(),
            default_outputs: Vec::new(),
            output_groups,
            required_outputs,
            implemented: true,
            test_attempts: attempts
                .filter(|n| (1..=20).contains(n))
                .or(workspace_attempts),
        };
        // The plans are this function's own: their actions are moved into the plan, not
        // copied (10,000 actions with their command lines, inputs and outputs).
        for step in action_plan.steps {
            for located in &step.diagnostics {
                if located.diagnostic.severity == once_model::Severity::Error {
                    let problem = PlanProblem::new(&step.target, &step.capability, located);
                    if seen_problems.insert(problem.line.clone()) {
                        plan.problems.push(problem);
                    }
                }
            }
            let own = step.target == *id && step.capability == capability;
            if own {
                target.kind.clone_from(&step.kind);
                target.default_outputs = step.default_outputs;
                target.implemented = step.implemented;
            }
            plan.kinds.entry(step.target).or_insert(step.kind);
            for planned in step.actions {
                if own {
                    target.actions.push(planned.action.id.clone());
                }
                if seen_actions.insert(planned.action.id.clone()) {
                    plan.actions.push(PlannedAction {
                        action: planned.action,
                        static_key: planned.static_key,
                    });
                }
            }
        }
        plan.targets.push(target);
    }
    let paths = source_inputs(&plan.actions);
    let inputs = analysis.source_inputs(&paths)?;
    plan.source_stamps = source_stamps(&paths, &inputs);
    Ok(Ok(plan))
}

/// The workspace files `actions` read (not build outputs), sorted, each once: the files
/// whose digests their static keys hold.
pub fn source_inputs(actions: &[PlannedAction]) -> Vec<String> {
    let mut paths: Vec<String> = actions
        .iter()
        .flat_map(|planned| &planned.action.inputs)
        .filter(|path| !once_analysis::is_build_output(path))
        .cloned()
        .collect();
    paths.sort_unstable();
    paths.dedup();
    paths
}

/// The stamps `inputs` (of `paths`, in order) were keyed with, for the executor.
pub fn source_stamps(paths: &[String], inputs: &[SourceInput]) -> SourceStamps {
    SourceStamps::new(
        paths
            .iter()
            .zip(inputs)
            .filter_map(|(path, input)| Some((path.clone(), input.stamp?)))
            .collect(),
    )
}

/// What the execution met that did not fail an action, for the front end to show: first
/// the damaged files of the store or the workspace (ignored, removed or rewritten), then
/// each action's, after its id: a stored result or output that could not be used (a
/// damaged record or a corrupt blob, removed; the action ran again), a program or a
/// source file that changed while it ran (its result not cached).
pub fn execution_warnings(report: &ExecutionReport) -> Vec<String> {
    report
        .warnings
        .iter()
        .cloned()
        .chain(report.results.iter().flat_map(|result| {
            result
                .warnings
                .iter()
                .map(move |warning| format!("{}: {warning}", result.id))
        }))
        .collect()
}

/// Records an execution as evidence in the workspace's `.once/once.sqlite` (`once query
/// evidence`). The build's outcome does not depend on it: a failure comes back as a
/// warning for the front end to show.
pub fn record_evidence(
    root: &std::path::Path,
    plan: &Plan,
    report: &ExecutionReport,
) -> Option<String> {
    once_exec::evidence::record_evidence(root, &plan.actions, report)
        .err()
        .map(|err| format!("the evidence of this execution was not recorded: {err}"))
}

/// Counts of a report's actions by cache state: `(hit, miss, bypass, failed)`.
pub fn action_counts(report: &ExecutionReport) -> (usize, usize, usize, usize) {
    let count = |state| {
        report
            .results
            .iter()
            .filter(|r| r.status == ActionStatus::Succeeded && r.cache == Some(state))
            .count()
    };
    let failed = report
        .results
        .iter()
        .filter(|r| r.status != ActionStatus::Succeeded)
        .count();
    (
        count(CacheState::Hit),
        count(CacheState::Miss),
        count(CacheState::Bypass),
        failed,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails_keep_the_last_lines() {
        assert_eq!(tail(b"a\nb\nc\n", 2), "b\nc\n");
        assert_eq!(tail(b"", 2), "");
        assert_eq!(tail(b"x", 5), "x\n");
    }

    #[test]
    fn words_are_quoted_for_a_shell() {
        let argv = ["sh", "-c", "echo 'hi' > $OUT", "a/b.txt"].map(String::from);
        assert_eq!(
            shell_words(&argv),
            r#"sh -c 'echo '\''hi'\'' > $OUT' a/b.txt"#
        );
    }
}
