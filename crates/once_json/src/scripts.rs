//! The record of `once query script` and `once_validate_script`.

use once_analysis::ScriptValidation;
use once_model::script::ScriptContract;
use schemars::JsonSchema;
use serde::Serialize;

use crate::{DiagnosticDto, diagnostic};

/// An annotated script's contract.
#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct ScriptContractDto {
    pub path: String,
    pub runtime: String,
    pub runtime_args: Vec<String>,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    pub needs: Vec<String>,
    pub fingerprints: Vec<String>,
    pub env_vars: Vec<String>,
    /// The working directory, workspace-relative (`.` for the root); the script's
    /// directory when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// `materialize-external` or `preserve`.
    #[schemars(extend("enum" = ["materialize-external", "preserve"]))]
    pub output_symlinks: String,
}

/// `{valid, path, contract?, diagnostics}`: the contract only when valid.
#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct ScriptValidationDto {
    pub valid: bool,
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contract: Option<ScriptContractDto>,
    pub diagnostics: Vec<DiagnosticDto>,
}

pub fn script_contract(contract: &ScriptContract) -> ScriptContractDto {
    ScriptContractDto {
        path: contract.path.clone(),
        runtime: contract.runtime.clone(),
        runtime_args: contract.runtime_args.clone(),
        inputs: contract.inputs.clone(),
        outputs: contract.outputs.clone(),
        needs: contract.needs.clone(),
        fingerprints: contract.fingerprints.clone(),
        env_vars: contract.env.clone(),
        cwd: contract.cwd.clone(),
        output_symlinks: contract.output_symlinks.as_str().to_owned(),
    }
}

pub fn script_validation(validation: &ScriptValidation) -> ScriptValidationDto {
    ScriptValidationDto {
        valid: validation.valid,
        path: validation.path.clone(),
        contract: validation
            .valid
            .then(|| script_contract(&validation.contract)),
        diagnostics: validation.diagnostics.iter().map(diagnostic).collect(),
    }
}
