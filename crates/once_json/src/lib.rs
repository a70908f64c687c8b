//! The JSON records `once query … --format json` prints and MCP tools return.
//!
//! One DTO per record, converted from `once_analysis` answers. The CLI and the MCP server
//! both use these, so a record has the same keys on every surface. Core types do not
//! derive `Serialize`; this crate is the only place their JSON shape is decided.

mod evidence;
mod external_source;
mod modules;
mod scripts;

pub use evidence::{EvidenceRecordDto, EvidenceSubjectDto, evidence_record};

pub use external_source::{ExternalSourceDto, external_source};
pub use modules::{
    ContractEntryDto, ModuleContractDto, ModuleValidationDto, module_contract, module_validation,
};
pub use scripts::{ScriptContractDto, ScriptValidationDto, script_contract, script_validation};

use base64::Engine;
use once_analysis::{
    AffectedTest, LocatedDiagnostic, TargetDetails, TargetSummaryInfo, TestTarget, Validation,
    WorkspaceInfo,
};
use once_model::{AttrValue, Capability, Example, KindSchema, SourceReference};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// Serialises a DTO to a JSON value (DTOs cannot fail to serialise).
pub fn to_value(dto: &impl Serialize) -> Value {
    serde_json::to_value(dto).unwrap_or(Value::Null)
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct Position {
    pub line: u32,
    pub column: u32,
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct Range {
    pub start: Position,
    pub end: Position,
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct DiagnosticDto {
    pub code: String,
    #[schemars(extend("enum" = ["error", "warning", "info"]))]
    pub severity: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range: Option<Range>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribute: Option<String>,
    pub repairs: Vec<String>,
    /// Machine-applicable fixes, best first; edits are in `file`.
    pub fixes: Vec<FixDto>,
}

/// A machine-applicable fix: `preferred` marks the one to apply unattended.
#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct FixDto {
    pub title: String,
    pub preferred: bool,
    pub edits: Vec<TextEditDto>,
}

/// Replace `range` (1-based lines and columns) with `new_text`.
#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct TextEditDto {
    pub range: Range,
    pub new_text: String,
}

fn range(r: once_model::LineColRange) -> Range {
    Range {
        start: Position {
            line: r.start.line,
            column: r.start.column,
        },
        end: Position {
            line: r.end.line,
            column: r.end.column,
        },
    }
}

pub fn diagnostic(located: &LocatedDiagnostic) -> DiagnosticDto {
    let d = &located.diagnostic;
    DiagnosticDto {
        code: d.code.as_str().to_owned(),
        severity: d.severity.as_str().to_owned(),
        message: d.message.clone(),
        file: d.file.clone(),
        range: located.range.map(range),
        target: d.target.clone(),
        attribute: d.attribute.clone(),
        repairs: d.repairs.clone(),
        fixes: located
            .fixes
            .iter()
            .map(|fix| FixDto {
                title: fix.title.clone(),
                preferred: fix.preferred,
                edits: fix
                    .edits
                    .iter()
                    .map(|edit| TextEditDto {
                        range: range(edit.range),
                        new_text: edit.new_text.clone(),
                    })
                    .collect(),
            })
            .collect(),
    }
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct ValidationDto {
    pub valid: bool,
    pub target_count: usize,
    pub diagnostics: Vec<DiagnosticDto>,
}

pub fn validation(validation: &Validation) -> ValidationDto {
    ValidationDto {
        valid: validation.valid,
        target_count: validation.target_count,
        diagnostics: validation.diagnostics.iter().map(diagnostic).collect(),
    }
}

/// One fix `validate-workspace --fix` wrote; `range` is where the diagnostic was.
#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct AppliedFixDto {
    pub file: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range: Option<Range>,
    pub code: String,
    pub title: String,
}

/// `validate-workspace --fix`: the fixes written, then the validation after them.
#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct FixedValidationDto {
    pub fixed: Vec<AppliedFixDto>,
    #[serde(flatten)]
    pub validation: ValidationDto,
}

pub fn fixed_validation(
    fixed: &[once_analysis::AppliedFix],
    after: &Validation,
) -> FixedValidationDto {
    FixedValidationDto {
        fixed: fixed
            .iter()
            .map(|fix| AppliedFixDto {
                file: fix.file.clone(),
                range: fix.range.map(range),
                code: fix.code.as_str().to_owned(),
                title: fix.title.clone(),
            })
            .collect(),
        validation: validation(after),
    }
}

/// `validate-target`: `{valid, diagnostics}`.
#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct TargetValidationDto {
    pub valid: bool,
    pub diagnostics: Vec<DiagnosticDto>,
}

pub fn target_validation(validation: &Validation) -> TargetValidationDto {
    TargetValidationDto {
        valid: validation.valid,
        diagnostics: validation.diagnostics.iter().map(diagnostic).collect(),
    }
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct ConfigurationDto {
    pub os: String,
    pub arch: String,
    pub tokens: Vec<String>,
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct RootManifestDto {
    pub path: String,
    pub exists: bool,
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct DiagnosticCountsDto {
    pub errors: usize,
    pub warnings: usize,
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct WorkspaceDto {
    pub root: String,
    pub configuration: ConfigurationDto,
    pub root_manifest: RootManifestDto,
    pub target_count: usize,
    pub packages: Vec<String>,
    pub empty: bool,
    pub module_paths: Vec<String>,
    pub diagnostics: DiagnosticCountsDto,
}

pub fn workspace(info: &WorkspaceInfo) -> WorkspaceDto {
    WorkspaceDto {
        root: info.root.display().to_string(),
        configuration: ConfigurationDto {
            os: info.os.clone(),
            arch: info.arch.clone(),
            tokens: info.tokens.clone(),
        },
        root_manifest: RootManifestDto {
            path: "once.toml".into(),
            exists: info.root_manifest,
        },
        target_count: info.target_count,
        packages: info.packages.clone(),
        empty: info.target_count == 0,
        module_paths: info.module_paths.clone(),
        diagnostics: DiagnosticCountsDto {
            errors: info.error_count,
            warnings: info.warning_count,
        },
    }
}

fn is_empty_edges(edges: &serde_json::Map<String, Value>) -> bool {
    edges.is_empty()
}

fn edges(edges: &[(String, Vec<String>)]) -> serde_json::Map<String, Value> {
    edges
        .iter()
        .map(|(role, ids)| (role.clone(), Value::from(ids.clone())))
        .collect()
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct TargetDto {
    pub id: String,
    pub package: String,
    pub name: String,
    pub kind: String,
    pub deps: Vec<String>,
    /// Dependency role → the ids of the targets in that role.
    #[serde(skip_serializing_if = "is_empty_edges")]
    #[schemars(with = "std::collections::BTreeMap<String, Vec<String>>")]
    pub dependency_edges: serde_json::Map<String, Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub visibility: Vec<String>,
    pub capabilities: Vec<String>,
}

pub fn target_summary(target: &TargetSummaryInfo) -> TargetDto {
    TargetDto {
        id: target.id.clone(),
        package: target.package.clone(),
        name: target.name.clone(),
        kind: target.kind.clone(),
        deps: target.deps.clone(),
        dependency_edges: edges(&target.dependency_edges),
        visibility: target.visibility.clone(),
        capabilities: target.capabilities.clone(),
    }
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct LabelDto {
    pub package: String,
    pub name: String,
    pub id: String,
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct CapabilityDto {
    pub name: String,
    pub output_groups: Vec<String>,
    pub requires_outputs: Vec<String>,
}

pub fn capability(capability: &Capability) -> CapabilityDto {
    CapabilityDto {
        name: capability.name.clone(),
        output_groups: capability.output_groups.clone(),
        requires_outputs: capability.requires_outputs.clone(),
    }
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct ToolDto {
    pub name: String,
    pub docs: String,
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct GraphTargetDto {
    pub label: LabelDto,
    pub kind: String,
    pub srcs: Vec<String>,
    pub deps: Vec<String>,
    /// Dependency role → the ids of the targets in that role.
    #[serde(skip_serializing_if = "is_empty_edges")]
    #[schemars(with = "std::collections::BTreeMap<String, Vec<String>>")]
    pub dependency_edges: serde_json::Map<String, Value>,
    pub visibility: Vec<String>,
    pub labels: Vec<String>,
    pub attrs: serde_json::Map<String, Value>,
    pub capabilities: Vec<CapabilityDto>,
    pub providers: Vec<String>,
    pub tools: Vec<ToolDto>,
    pub diagnostics: Vec<DiagnosticDto>,
    /// One SHA-256 over the target's sorted input paths and their digests (the CLI's
    /// `query target` sets it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_digest: Option<String>,
}

pub fn graph_target(target: &TargetDetails) -> GraphTargetDto {
    GraphTargetDto {
        label: LabelDto {
            package: target.label.package.clone(),
            name: target.label.name.clone(),
            id: target.label.id(),
        },
        kind: target.kind.clone(),
        srcs: target.srcs.clone(),
        deps: target.deps.clone(),
        dependency_edges: edges(&target.dependency_edges),
        visibility: target.visibility.clone(),
        labels: target.labels.clone(),
        attrs: target
            .attrs
            .iter()
            .map(|(k, v)| (k.clone(), attr_value(v)))
            .collect(),
        capabilities: target.capabilities.iter().map(capability).collect(),
        providers: target.providers.clone(),
        tools: target
            .tools
            .iter()
            .map(|t| ToolDto {
                name: t.name.clone(),
                docs: t.docs.clone(),
            })
            .collect(),
        diagnostics: target.diagnostics.iter().map(diagnostic).collect(),
        input_digest: None,
    }
}

/// One target's inputs (`once query inputs`), borrowed from the answer: a workspace lists
/// tens of thousands of inputs, so they are written out without copying.
#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct TargetInputsDto<'a> {
    pub id: &'a str,
    /// One SHA-256 over the sorted input paths and their digests.
    pub input_digest: &'a str,
    pub inputs: Vec<InputDigestDto<'a>>,
}

/// One input file: its SHA-256 (hex), or why it has none.
#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct InputDigestDto<'a> {
    pub path: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub digest: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<&'a str>,
}

pub fn target_inputs<'a>(
    id: &'a str,
    inputs: &'a once_analysis::TargetInputs,
) -> TargetInputsDto<'a> {
    TargetInputsDto {
        id,
        input_digest: &inputs.input_digest,
        inputs: inputs
            .inputs
            .iter()
            .map(|input| InputDigestDto {
                path: &input.path,
                digest: input.digest.as_ref().ok().map(String::as_str),
                error: input.digest.as_ref().err().map(String::as_str),
            })
            .collect(),
    }
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct CapabilitiesDto {
    pub id: String,
    pub kind: String,
    pub capabilities: Vec<CapabilityDto>,
}

pub fn capabilities(target: &TargetDetails) -> CapabilitiesDto {
    CapabilitiesDto {
        id: target.label.id(),
        kind: target.kind.clone(),
        capabilities: target.capabilities.iter().map(capability).collect(),
    }
}

/// An attribute value as JSON: TOML types map to JSON types; datetimes and non-finite
/// floats become strings.
pub fn attr_value(value: &AttrValue) -> Value {
    match value {
        AttrValue::String(s) => Value::from(s.clone()),
        AttrValue::Int(i) => Value::from(*i),
        AttrValue::Float(f) => serde_json::Number::from_f64(f.0)
            .map_or_else(|| Value::from(value.to_string()), Value::Number),
        AttrValue::Bool(b) => Value::from(*b),
        AttrValue::Datetime(d) => Value::from(d.clone()),
        AttrValue::List(items) => Value::Array(items.iter().map(attr_value).collect()),
        AttrValue::Dict(entries) => Value::Object(
            entries
                .iter()
                .map(|(k, v)| (k.clone(), attr_value(v)))
                .collect(),
        ),
    }
}

/// Reads a JSON value as an attribute value; `null` has no TOML form.
pub fn json_to_attr_value(value: &Value) -> Result<AttrValue, String> {
    Ok(match value {
        Value::Null => return Err("`null` has no TOML form; leave the key out instead".into()),
        Value::Bool(b) => AttrValue::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => AttrValue::Int(i),
            None => AttrValue::Float(once_model::Float(n.as_f64().unwrap_or(f64::NAN))),
        },
        Value::String(s) => AttrValue::String(s.clone()),
        Value::Array(items) => AttrValue::List(
            items
                .iter()
                .map(json_to_attr_value)
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => AttrValue::Dict(
            map.iter()
                .map(|(k, v)| {
                    json_to_attr_value(v)
                        .map(|v| (k.clone(), v))
                        .map_err(|e| format!("`{k}`: {e}"))
                })
                .collect::<Result<_, _>>()?,
        ),
    })
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct AttrSchemaDto {
    pub name: String,
    pub ty: String,
    pub required: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    pub docs: String,
    pub configurable: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_values: Vec<String>,
    /// For an `int`: the smallest value allowed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub minimum: Option<i64>,
    /// For an `int`: the largest value allowed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maximum: Option<i64>,
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct DepSchemaDto {
    pub name: String,
    pub expected_providers: Vec<String>,
    pub docs: String,
    pub min_count: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_count: Option<u32>,
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct SchemaCapabilityDto {
    pub name: String,
    pub docs: String,
    pub output_groups: Vec<String>,
    pub requires_outputs: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runner: Option<String>,
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct SourceReferenceDto {
    pub system: String,
    pub symbol: String,
    pub url: String,
    pub use_when: String,
    pub content_digest: String,
}

pub fn source_reference(r: &SourceReference) -> SourceReferenceDto {
    SourceReferenceDto {
        system: r.system.clone(),
        symbol: r.symbol.clone(),
        url: r.url.clone(),
        use_when: r.use_when.clone(),
        content_digest: r.content_digest.clone(),
    }
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct ExampleSummaryDto {
    pub slug: String,
    pub name: String,
    pub use_when: String,
}

pub fn example_summary(e: &Example) -> ExampleSummaryDto {
    ExampleSummaryDto {
        slug: e.slug.clone(),
        name: e.name.clone(),
        use_when: e.use_when.clone(),
    }
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct KindSchemaDto {
    pub kind: String,
    pub docs: String,
    pub attrs: Vec<AttrSchemaDto>,
    pub deps: Vec<DepSchemaDto>,
    pub providers: Vec<String>,
    pub capabilities: Vec<SchemaCapabilityDto>,
    pub tools: Vec<ToolDto>,
    pub source_references: Vec<SourceReferenceDto>,
    pub examples: Vec<ExampleSummaryDto>,
}

pub fn kind_schema(kind: &KindSchema) -> KindSchemaDto {
    KindSchemaDto {
        kind: kind.name.clone(),
        docs: kind.docs.clone(),
        attrs: kind
            .attrs
            .iter()
            .map(|a| AttrSchemaDto {
                name: a.name.clone(),
                ty: a.ty.to_string(),
                required: a.required,
                default: a.default.as_ref().map(attr_value),
                docs: a.docs.clone(),
                configurable: a.configurable,
                allowed_values: a.allowed_values.clone(),
                minimum: a.range.map(|(minimum, _)| minimum),
                maximum: a.range.map(|(_, maximum)| maximum),
            })
            .collect(),
        deps: kind
            .dependencies
            .iter()
            .map(|d| DepSchemaDto {
                name: d.name.clone(),
                expected_providers: d.providers.clone(),
                docs: d.docs.clone(),
                min_count: d.min,
                max_count: d.max,
            })
            .collect(),
        providers: kind.providers.clone(),
        capabilities: kind
            .capabilities
            .iter()
            .map(|c| SchemaCapabilityDto {
                name: c.name.clone(),
                docs: c.docs.clone(),
                output_groups: c.output_groups.clone(),
                requires_outputs: c.requires_outputs.clone(),
                runner: c.runner.clone(),
            })
            .collect(),
        tools: kind
            .tools
            .iter()
            .map(|t| ToolDto {
                name: t.name.clone(),
                docs: t.docs.clone(),
            })
            .collect(),
        source_references: kind
            .source_references
            .iter()
            .map(source_reference)
            .collect(),
        examples: kind.examples.iter().map(example_summary).collect(),
    }
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct KindListEntryDto {
    pub kind: String,
    pub docs: String,
    pub source_references: Vec<SourceReferenceDto>,
    pub examples: Vec<ExampleSummaryDto>,
}

pub fn kind_list_entry(kind: &KindSchema) -> KindListEntryDto {
    KindListEntryDto {
        kind: kind.name.clone(),
        docs: kind.docs.clone(),
        source_references: kind
            .source_references
            .iter()
            .map(source_reference)
            .collect(),
        examples: kind.examples.iter().map(example_summary).collect(),
    }
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct ExampleFileDto {
    pub path: String,
    pub contents: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contents_base64: Option<String>,
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct ExampleDto {
    pub slug: String,
    pub name: String,
    pub use_when: String,
    pub files: Vec<ExampleFileDto>,
}

/// An example with its files sorted by path; non-UTF-8 files travel as base64.
pub fn example(example: &Example) -> ExampleDto {
    let mut files: Vec<ExampleFileDto> = example
        .files
        .iter()
        .map(|f| match std::str::from_utf8(&f.contents) {
            Ok(text) => ExampleFileDto {
                path: f.path.clone(),
                contents: text.to_owned(),
                contents_base64: None,
            },
            Err(_) => ExampleFileDto {
                path: f.path.clone(),
                contents: String::new(),
                contents_base64: Some(
                    base64::engine::general_purpose::STANDARD.encode(&f.contents),
                ),
            },
        })
        .collect();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    ExampleDto {
        slug: example.slug.clone(),
        name: example.name.clone(),
        use_when: example.use_when.clone(),
        files,
    }
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct TestDto {
    pub id: String,
    pub kind: String,
    pub deps: Vec<String>,
    pub runner: Option<String>,
    pub labels: Vec<String>,
    pub results_path: String,
}

pub fn test_target(t: &TestTarget) -> TestDto {
    TestDto {
        id: t.id.clone(),
        kind: t.kind.clone(),
        deps: t.deps.clone(),
        runner: t.runner.clone(),
        labels: t.labels.clone(),
        results_path: t.results_path.clone(),
    }
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct AffectedTestDto {
    pub id: String,
    pub kind: String,
    pub reasons: Vec<String>,
}

pub fn affected_test(t: &AffectedTest) -> AffectedTestDto {
    AffectedTestDto {
        id: t.id.clone(),
        kind: t.kind.clone(),
        reasons: t.reasons.clone(),
    }
}

/// `once query affected-tests --format json`: the tests, and the changed paths that could
/// select none (outside the workspace, or in no package). Over MCP the tests are the
/// tool's `result` and `warnings` sits beside it.
#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct AffectedTestsDto {
    pub tests: Vec<AffectedTestDto>,
    pub warnings: Vec<String>,
}

pub fn affected_tests(answer: &once_analysis::AffectedTests) -> AffectedTestsDto {
    AffectedTestsDto {
        tests: answer.tests.iter().map(affected_test).collect(),
        warnings: answer.warnings.clone(),
    }
}

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
                EditOperation::Create {
                    target: json_to_attr_value(target)
                        .map_err(|e| format!("invalid `operations[{index}].target`: {e}"))?,
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

fn action(planned: &once_analysis::PlannedAction) -> ActionDto {
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
