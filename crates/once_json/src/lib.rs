//! The JSON records `once query … --format json` prints and MCP tools return.
//!
//! One DTO per record, converted from `once_analysis` answers. The CLI and the MCP server
//! both use these, so a record has the same keys on every surface. Core types do not
//! derive `Serialize`; this crate is the only place their JSON shape is decided.

mod diagnostics;
mod edits;
mod evidence;
mod external_source;
mod kinds;
mod modules;
mod plans;
mod runtime;
mod scripts;

pub use diagnostics::*;
pub use edits::*;
pub use kinds::*;
pub use plans::*;
pub use runtime::{SessionRecordDto, session_record};

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
