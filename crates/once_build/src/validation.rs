//! `once query validate-actions`: a target's actions run in the strictest mode (every
//! action runs, sandboxed and traced, nothing reused or recorded), and every access the
//! sandbox denied is listed with what to declare. A sandbox shows no successful read of
//! an undeclared file, so the tracer sees each attempt, failed or swallowed.

use schemars::JsonSchema;
use serde::Serialize;

use once_exec::{ActionStatus, ExecutionReport};

use crate::Plan;
use crate::record::ActionState;

/// What validating a plan's actions found: `once query validate-actions --format json`
/// and the MCP tool `once_validate_actions`.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct ActionsValidation {
    /// The targets asked for.
    pub targets: Vec<String>,
    pub capability: String,
    /// Every action ran and nothing undeclared was attempted.
    pub valid: bool,
    /// Every action of the plan, in plan order.
    pub actions: Vec<ValidatedAction>,
    /// Problems that refused the plan (nothing ran).
    pub problems: Vec<String>,
}

/// One action and the accesses the sandbox denied it.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct ValidatedAction {
    pub id: String,
    pub target: String,
    #[schemars(with = "String", extend("enum" = ["succeeded", "failed", "skipped", "cancelled"]))]
    pub status: ActionState,
    /// Why it failed, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub findings: Vec<ActionFinding>,
}

/// One denied access and its repair.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ActionFinding {
    /// `read`, `write`, `create`, `remove`, `execute` or `list`.
    pub access: String,
    /// Workspace-relative, or absolute outside the workspace.
    pub path: String,
    /// `undeclared`, `modifies_input`, `writes_outside_build_directory` or
    /// `outside_workspace`.
    pub problem: String,
    /// What is wrong and what to do, in words.
    pub repair: String,
}

/// The validation record of `plan` (for `targets`) from its traced execution's
/// `report`.
pub fn validation(targets: &[String], plan: &Plan, report: &ExecutionReport) -> ActionsValidation {
    let actions: Vec<ValidatedAction> = plan
        .actions
        .iter()
        .zip(&report.results)
        .map(|(planned, result)| ValidatedAction {
            id: result.id.clone(),
            target: planned.action.target.clone(),
            status: ActionState::from(result.status),
            message: result.message.clone(),
            findings: result
                .findings
                .iter()
                .map(|finding| ActionFinding {
                    access: finding.access.to_owned(),
                    path: finding.denied.path(),
                    problem: finding.denied.problem().to_owned(),
                    repair: finding.denied.describe(),
                })
                .collect(),
        })
        .collect();
    let valid = report.results.len() == plan.actions.len()
        && report
            .results
            .iter()
            .all(|result| result.status == ActionStatus::Succeeded && result.findings.is_empty());
    ActionsValidation {
        targets: targets.to_vec(),
        capability: plan.capability.clone(),
        valid,
        actions,
        problems: plan.problem_lines(),
    }
}
