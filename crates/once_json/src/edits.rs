//! Edits: a batch request read from JSON, its outcome, and materialized examples.

use super::*;

/// Reads an `apply-edit` request: `{package, operations: [{op, …}]}`.
pub fn edit_request(value: &Value) -> Result<once_analysis::EditRequest, String> {
    use once_analysis::EditOperation;
    let object = value
        .as_object()
        .ok_or("an edit is an object `{package, operations}`")?;
    let package = object
        .get("package")
        .and_then(Value::as_str)
        .ok_or("invalid `package`: a string is required (`\"\"` is the root package)")?
        .to_owned();
    let operations = object
        .get("operations")
        .and_then(Value::as_array)
        .ok_or("invalid `operations`: an array is required")?;
    let name_of = |op: &serde_json::Map<String, Value>, index: usize| {
        op.get("target_name")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| {
                format!("invalid `operations[{index}]`: a string `target_name` is required")
            })
    };
    let mut out = Vec::new();
    for (index, op) in operations.iter().enumerate() {
        let op = op
            .as_object()
            .ok_or_else(|| format!("invalid `operations[{index}]`: an object is required"))?;
        let operation = match op.get("op").and_then(Value::as_str) {
            Some("create") => {
                let target = op.get("target").filter(|t| t.is_object()).ok_or_else(|| {
                    format!("invalid `operations[{index}]`: `create` needs a `target` object")
                })?;
                let comment = match op.get("comment") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(comment)) => Some(comment.clone()),
                    Some(_) => {
                        return Err(format!(
                            "invalid `operations[{index}].comment`: a string is required"
                        ));
                    }
                };
                EditOperation::Create {
                    target: json_to_attr_value(target)
                        .map_err(|e| format!("invalid `operations[{index}].target`: {e}"))?,
                    comment,
                }
            }
            Some("update") => {
                let set = match op.get("set") {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::Object(set)) => set
                        .iter()
                        .map(|(key, value)| match value {
                            Value::Null => Ok((key.clone(), None)),
                            value => json_to_attr_value(value)
                                .map(|v| (key.clone(), Some(v)))
                                .map_err(|e| {
                                    format!("invalid `operations[{index}].set.{key}`: {e}")
                                }),
                        })
                        .collect::<Result<_, _>>()?,
                    Some(_) => {
                        return Err(format!(
                            "invalid `operations[{index}].set`: an object is required"
                        ));
                    }
                };
                EditOperation::Update {
                    target_name: name_of(op, index)?,
                    set,
                }
            }
            Some("delete") => EditOperation::Delete {
                target_name: name_of(op, index)?,
            },
            other => {
                return Err(format!(
                    "invalid `operations[{index}].op`: {}; use `create`, `update` or `delete`",
                    other.map_or("missing".to_owned(), |o| format!("unknown op `{o}`"))
                ));
            }
        };
        out.push(operation);
    }
    Ok(once_analysis::EditRequest {
        package,
        operations: out,
    })
}

/// `apply-edit`: `{applied: true, changed, path}` or
/// `{applied: false, path, failed_operation, diagnostics}`.
#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct EditResultDto {
    pub applied: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed: Option<bool>,
    pub path: String,
    /// The index of the operation that failed; `null` when the manifest itself cannot be
    /// edited. Absent when applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-null-when-present" = true))]
    pub failed_operation: Option<Option<usize>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<Vec<DiagnosticDto>>,
}

pub fn edit_result(outcome: &once_analysis::EditOutcome) -> EditResultDto {
    match outcome {
        once_analysis::EditOutcome::Applied { path, changed, .. } => EditResultDto {
            applied: true,
            changed: Some(*changed),
            path: path.clone(),
            failed_operation: None,
            diagnostics: None,
        },
        once_analysis::EditOutcome::Rejected {
            path,
            failed_operation,
            diagnostics,
        } => EditResultDto {
            applied: false,
            changed: None,
            path: path.clone(),
            failed_operation: Some(*failed_operation),
            diagnostics: Some(diagnostics.iter().map(diagnostic).collect()),
        },
    }
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct ConflictDto {
    pub path: String,
    pub reason: String,
}

/// `materialize-example`: what was written, what conflicts, the added targets and the
/// workspace validation after the write (`null` when nothing was written for conflicts).
#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct MaterializeDto {
    pub materialized: bool,
    pub kind: String,
    pub slug: String,
    pub destination: String,
    pub created_files: Vec<String>,
    pub unchanged_files: Vec<String>,
    pub conflicts: Vec<ConflictDto>,
    pub targets: Vec<TargetDto>,
    /// Such as packages `[workspace] include/exclude` leave out.
    pub warnings: Vec<String>,
    pub workspace_validation: Option<ValidationDto>,
}

pub fn materialize(
    plan: &once_analysis::MaterializePlan,
    targets: &[TargetSummaryInfo],
    after: Option<&Validation>,
) -> MaterializeDto {
    MaterializeDto {
        materialized: plan.conflicts.is_empty(),
        kind: plan.kind.clone(),
        slug: plan.slug.clone(),
        destination: plan.destination.clone(),
        created_files: plan.created.clone(),
        unchanged_files: plan.unchanged.clone(),
        conflicts: plan
            .conflicts
            .iter()
            .map(|(path, reason)| ConflictDto {
                path: path.clone(),
                reason: reason.clone(),
            })
            .collect(),
        targets: targets.iter().map(target_summary).collect(),
        warnings: plan.warnings.clone(),
        workspace_validation: after.map(validation),
    }
}

/// One operation of a batch, in the form `once edit apply` and `once_apply_edit` read.
pub fn edit_operation(operation: &once_analysis::EditOperation) -> Value {
    use once_analysis::EditOperation;
    match operation {
        EditOperation::Create { target, comment } => {
            let mut op = serde_json::json!({ "op": "create", "target": attr_value(target) });
            if let Some(comment) = comment {
                op["comment"] = Value::String(comment.clone());
            }
            op
        }
        EditOperation::Update { target_name, set } => {
            let set: serde_json::Map<String, Value> = set
                .iter()
                .map(|(key, value)| (key.clone(), value.as_ref().map_or(Value::Null, attr_value)))
                .collect();
            serde_json::json!({ "op": "update", "target_name": target_name, "set": set })
        }
        EditOperation::Delete { target_name } => {
            serde_json::json!({ "op": "delete", "target_name": target_name })
        }
    }
}

/// One manifest of `once init`'s plan.
#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct InitManifestDto {
    /// Package directory relative to the workspace root (`""` is the root).
    pub package: String,
    /// Workspace-relative manifest path.
    pub path: String,
    /// `created` (the file does not exist yet), `updated`, `unchanged` or `rejected`
    /// (a check failed: nothing of this batch is written).
    pub status: String,
    /// The batch, as `once_apply_edit` takes it: `{package, operations}`.
    pub edit: Value,
    /// The root manifest does not exist: it starts from the plan's `root_manifest` text
    /// (a `[workspace]` table), which no operation writes (write it before applying the
    /// batch).
    pub create_root: bool,
    /// The unified diff of the change; empty when nothing changes.
    pub diff: String,
    /// Proposed targets left as they are: hand-written ones, and those `# once:keep`
    /// protects.
    pub left_alone: Vec<String>,
    /// Why the batch was rejected.
    pub diagnostics: Vec<DiagnosticDto>,
}

/// `once init`'s plan: whether the manifests are in step with the ecosystem files, and
/// the batch of each manifest.
#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct InitPlanDto {
    /// No manifest would change.
    pub in_step: bool,
    pub manifests: Vec<InitManifestDto>,
    /// What the ecosystem files leave out or what could not be read.
    pub warnings: Vec<String>,
    /// When the root manifest does not exist: the text `once init` creates it with (a
    /// `[workspace]` table, with an `exclude` of the nested workspaces it found), to
    /// write before applying the root's batch. Absent when the root manifest exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root_manifest: Option<String>,
}

pub fn init_plan(plan: &once_analysis::init::InitPlan) -> InitPlanDto {
    InitPlanDto {
        in_step: plan.in_step(),
        manifests: plan
            .manifests
            .iter()
            .map(|m| {
                let status = if m.rejected() {
                    "rejected"
                } else if !m.changed() {
                    "unchanged"
                } else if m.before.is_none() {
                    "created"
                } else {
                    "updated"
                };
                let diagnostics = match &m.outcome {
                    once_analysis::EditOutcome::Rejected { diagnostics, .. } => {
                        diagnostics.iter().map(diagnostic).collect()
                    }
                    once_analysis::EditOutcome::Applied { .. } => Vec::new(),
                };
                InitManifestDto {
                    package: m.package.clone(),
                    path: m.path.clone(),
                    status: status.to_owned(),
                    edit: serde_json::json!({
                        "package": m.request.package,
                        "operations": m.request.operations.iter().map(edit_operation).collect::<Vec<_>>(),
                    }),
                    create_root: m.create_root,
                    diff: m.diff(),
                    left_alone: m.left_alone.clone(),
                    diagnostics,
                }
            })
            .collect(),
        warnings: plan.warnings.clone(),
        root_manifest: plan.root_manifest.clone(),
    }
}

/// `once init`'s answer: the plan, whether it was written, and the workspace validation
/// after the write.
#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct InitDto {
    #[serde(flatten)]
    pub plan: InitPlanDto,
    /// The changed manifests were written (not with `--dry-run` or `--check`).
    pub written: bool,
    pub workspace_validation: Option<ValidationDto>,
}
