//! The records of `module-contract` and `validate-module`.

use once_analysis::{ContractEntry, ModuleContract, ModuleValidation};
use schemars::JsonSchema;
use serde::Serialize;

use crate::{DiagnosticDto, KindSchemaDto, diagnostic, kind_schema};

/// `{signature, purpose}`.
#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct ContractEntryDto {
    pub signature: String,
    pub purpose: String,
}

fn entries(list: &[ContractEntry]) -> Vec<ContractEntryDto> {
    list.iter()
        .map(|e| ContractEntryDto {
            signature: e.signature.clone(),
            purpose: e.purpose.clone(),
        })
        .collect()
}

/// `module-contract`.
#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct ModuleContractDto {
    pub language: String,
    pub registration: String,
    pub declaration_source: String,
    pub helpers: Vec<ContractEntryDto>,
    pub attribute_types: Vec<ContractEntryDto>,
    pub schema_invariants: Vec<String>,
    pub load_contract: Vec<String>,
    pub context_fields: Vec<ContractEntryDto>,
    pub action_primitives: Vec<ContractEntryDto>,
    pub maintenance_loop: Vec<String>,
    pub starter_path: String,
    pub starter: String,
    pub starter_target: String,
}

pub fn module_contract(contract: &ModuleContract) -> ModuleContractDto {
    ModuleContractDto {
        language: contract.language.clone(),
        registration: contract.registration.clone(),
        declaration_source: contract.declaration_source.clone(),
        helpers: entries(&contract.helpers),
        attribute_types: entries(&contract.attribute_types),
        schema_invariants: contract.schema_invariants.clone(),
        load_contract: contract.load_contract.clone(),
        context_fields: entries(&contract.context_fields),
        action_primitives: entries(&contract.action_primitives),
        maintenance_loop: contract.maintenance_loop.clone(),
        starter_path: contract.starter_path.clone(),
        starter: contract.starter.clone(),
        starter_target: contract.starter_target.clone(),
    }
}

/// `validate-module`: `{valid, path, target_kinds, diagnostics}`.
#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct ModuleValidationDto {
    pub valid: bool,
    pub path: String,
    pub target_kinds: Vec<KindSchemaDto>,
    pub diagnostics: Vec<DiagnosticDto>,
}

pub fn module_validation(validation: &ModuleValidation) -> ModuleValidationDto {
    ModuleValidationDto {
        valid: validation.valid,
        path: validation.path.clone(),
        target_kinds: validation.target_kinds.iter().map(kind_schema).collect(),
        diagnostics: validation.diagnostics.iter().map(diagnostic).collect(),
    }
}
