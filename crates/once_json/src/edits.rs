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
