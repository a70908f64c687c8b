//! Diagnostics and validations: located diagnostics with their fixes, the answers of
//! `validate-workspace`, `validate-target` and the fixes applied.

use super::*;

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

pub(crate) fn range(r: once_model::LineColRange) -> Range {
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
