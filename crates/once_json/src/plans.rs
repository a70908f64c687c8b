//! Action plans: each capability's actions as `once query action-plan` shows them.

use super::*;

/// The plan of a target's capability (`once query actions`).
#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct ActionPlanDto {
    pub target: String,
    pub capability: String,
    /// Dependencies' `build` first, the asked capability last.
    pub steps: Vec<PlannedCapabilityDto>,
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct PlannedCapabilityDto {
    pub target: String,
    pub kind: String,
    pub capability: String,
    pub implemented: bool,
    pub actions: Vec<ActionDto>,
    pub default_outputs: Vec<String>,
    pub diagnostics: Vec<DiagnosticDto>,
}

/// One planned action. `step` is `run`, `write`, `copy`, `symlink` or `mkdir`; the
/// fields of that step follow.
#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct ActionDto {
    pub id: String,
    pub static_key: String,
    pub step: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env: Option<std::collections::BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub success_exit_codes: Option<Vec<i32>>,
    /// Toolchain probes whose output joins the key (`run` steps that declare some).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probes: Option<Vec<Vec<String>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub executable: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    pub cacheable: bool,
}

pub fn action_plan(plan: &once_analysis::ActionPlan) -> ActionPlanDto {
    ActionPlanDto {
        target: plan.target.clone(),
        capability: plan.capability.clone(),
        steps: plan
            .steps
            .iter()
            .map(|step| PlannedCapabilityDto {
                target: step.target.clone(),
                kind: step.kind.clone(),
                capability: step.capability.clone(),
                implemented: step.implemented,
                actions: step.actions.iter().map(action).collect(),
                default_outputs: step.default_outputs.clone(),
                diagnostics: step.diagnostics.iter().map(diagnostic).collect(),
            })
            .collect(),
    }
}

pub(crate) fn action(planned: &once_analysis::PlannedAction) -> ActionDto {
    use once_model::action::ActionStep;
    let a = &planned.action;
    let mut dto = ActionDto {
        id: a.id.clone(),
        static_key: planned.static_key.to_hex(),
        step: "run",
        argv: None,
        env: None,
        cwd: None,
        success_exit_codes: None,
        probes: None,
        path: None,
        content: None,
        executable: None,
        from: None,
        to: None,
        link: None,
        inputs: a.inputs.clone(),
        outputs: a.outputs.clone(),
        cacheable: a.cacheable,
    };
    match &a.step {
        ActionStep::Run(command) => {
            dto.argv = Some(command.argv.clone());
            dto.env = Some(command.env.clone());
            dto.cwd = Some(command.cwd.clone());
            dto.success_exit_codes = Some(command.success_exit_codes.clone());
            dto.probes = (!command.probes.is_empty()).then(|| command.probes.clone());
        }
        ActionStep::WriteFile {
            path,
            content,
            executable,
        } => {
            dto.step = "write";
            dto.path = Some(path.clone());
            dto.content = Some(content.clone());
            dto.executable = Some(*executable);
        }
        ActionStep::Copy { from, to } => {
            dto.step = "copy";
            dto.from = Some(from.clone());
            dto.to = Some(to.clone());
        }
        ActionStep::MaterializeHostFile { source, to } => {
            dto.step = "materialize_host_file";
            dto.from = Some(source.clone());
            dto.to = Some(to.clone());
        }
        ActionStep::Symlink { to, link } => {
            dto.step = "symlink";
            dto.link = Some(link.clone());
            dto.to = Some(to.clone());
        }
        ActionStep::MakeDir { path } => {
            dto.step = "mkdir";
            dto.path = Some(path.clone());
        }
    }
    dto
}
