//! The record of `once query external-source` and the MCP tool `once_fetch_external_source`.

use schemars::JsonSchema;
use serde::Serialize;

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct ExternalSourceDto {
    pub url: String,
    /// The `Content-Type` header, `null` when the server sent none.
    pub content_type: Option<String>,
    /// SHA-256 of the returned bytes, lowercase hex.
    pub content_digest: String,
    pub byte_count: usize,
    pub truncated: bool,
    pub content: String,
}

pub fn external_source(fetched: &once_fetch::FetchedSource) -> ExternalSourceDto {
    ExternalSourceDto {
        url: fetched.url.clone(),
        content_type: fetched.content_type.clone(),
        content_digest: fetched.content_digest.clone(),
        byte_count: fetched.byte_count,
        truncated: fetched.truncated,
        content: fetched.content.clone(),
    }
}
