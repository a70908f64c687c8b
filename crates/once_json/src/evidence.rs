//! The `once.evidence.v1` record of `once query evidence` and the MCP tool
//! `once_query_evidence`. Optional fields (`action`, `input_digest`, `exit_code`,
//! `stdout`, `stderr`, a subject's `capability`) are omitted when absent.

use once_evidence::{EVIDENCE_SCHEMA, EvidenceRecord, RECORD_KIND, Subject};
use schemars::JsonSchema;
use serde::Serialize;

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct EvidenceRecordDto {
    /// Always `once.evidence.v1`.
    #[schemars(extend("enum" = ["once.evidence.v1"]))]
    pub schema: &'static str,
    /// SHA-256 of the record's content and time, lowercase hex.
    pub id: String,
    /// Always `action_result`.
    #[schemars(extend("enum" = ["action_result"]))]
    pub kind: &'static str,
    pub subject: EvidenceSubjectDto,
    /// The action's id within its capability, such as `cli#test/run`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// `passed` or `failed`.
    #[schemars(extend("enum" = ["passed", "failed"]))]
    pub status: &'static str,
    /// The action's complete key.
    pub action_digest: String,
    /// The action's static key: its declaration and source inputs, before execution.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_digest: Option<String>,
    /// `hit`, `miss` or `bypass`.
    #[schemars(extend("enum" = ["hit", "miss", "bypass"]))]
    pub cache: &'static str,
    /// Absent when the process did not exit with a code: a signal killed it, or once could not run it or keep its result (a full disk while capturing its output).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Digests of the captured streams in the local store.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stdout: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stderr: Option<String>,
    pub created_at_unix_ms: u64,
}

/// `{kind: "target", id, capability}` or `{kind: "command", id: <action digest>}`.
#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct EvidenceSubjectDto {
    /// `target` (`capability` set) or `command` (`id` is the action digest).
    #[schemars(extend("enum" = ["target", "command"]))]
    pub kind: &'static str,
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capability: Option<String>,
}

pub fn evidence_record(record: &EvidenceRecord) -> EvidenceRecordDto {
    let evidence = &record.evidence;
    let subject = &evidence.subject;
    EvidenceRecordDto {
        schema: EVIDENCE_SCHEMA,
        id: record.id.to_hex(),
        kind: RECORD_KIND,
        subject: EvidenceSubjectDto {
            kind: subject.kind(),
            id: subject.id(),
            capability: match subject {
                Subject::Target { capability, .. } => Some(capability.clone()),
                Subject::Command { .. } => None,
            },
        },
        action: evidence.action.clone(),
        status: evidence.status.as_str(),
        action_digest: evidence.action_digest.to_hex(),
        input_digest: evidence.input_digest.map(|digest| digest.to_hex()),
        cache: evidence.cache.as_str(),
        exit_code: evidence.exit_code,
        stdout: evidence.stdout.map(|digest| digest.to_hex()),
        stderr: evidence.stderr.map(|digest| digest.to_hex()),
        created_at_unix_ms: record.created_at_unix_ms,
    }
}
