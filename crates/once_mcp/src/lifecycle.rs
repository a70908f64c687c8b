//! Protocol versions, the `initialize` handshake, `server/discover`, and the workflow
//! instructions agents receive.

use std::path::Path;

use serde_json::{Value, json};

/// Handshake versions `initialize` echoes, oldest first.
pub const HANDSHAKE_VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// The preferred handshake version, answered to any version we do not know.
pub const LATEST_HANDSHAKE: &str = "2025-11-25";
/// The stateless revision: `server/discover` plus per-request `_meta`.
pub const MODERN_VERSION: &str = "2026-07-28";
/// The only version that accepts JSON-RPC batches.
pub const BATCH_VERSION: &str = "2025-03-26";

pub const PROTOCOL_VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";
pub const SERVER_INFO_META: &str = "io.modelcontextprotocol/serverInfo";
pub const WORKSPACE_ROOT_META: &str = "once/workspaceRoot";

pub const SERVER_NAME: &str = "once-mcp";

/// Every version this server speaks.
pub fn supported_versions() -> Vec<&'static str> {
    let mut all = HANDSHAKE_VERSIONS.to_vec();
    all.push(MODERN_VERSION);
    all
}

/// The version `initialize` answers for the client's request.
pub fn negotiate(requested: Option<&str>) -> &'static str {
    requested
        .and_then(|r| HANDSHAKE_VERSIONS.iter().find(|v| **v == r).copied())
        .unwrap_or(LATEST_HANDSHAKE)
}

/// Whether a version has `title`, `outputSchema` and `structuredContent` (2025-06-18+).
pub fn has_structured_content(version: &str) -> bool {
    version >= "2025-06-18"
}

/// Whether a version has tool annotations (2025-03-26+).
pub fn has_annotations(version: &str) -> bool {
    version >= "2025-03-26"
}

fn server_info() -> Value {
    json!({ "name": SERVER_NAME, "title": "once", "version": env!("CARGO_PKG_VERSION") })
}

/// The workflow agents should follow, with the workspace root.
pub fn instructions(root: &Path, allow_run: bool) -> String {
    let root = root.display();
    let gating = if allow_run {
        "State-changing tools are enabled (`--allow-run`)."
    } else {
        "Read-only mode: tools that change the workspace appear only when the server starts with `once mcp --allow-run`."
    };
    format!(
        "once is a typed, self-describing build graph. This server answers for the workspace at `{root}`.\n\
         Workflow:\n\
         1. `once_query_workspace` first: is the graph empty, healthy or broken?\n\
         2. To add something, `once_list_target_kinds` with a short query naming the ecosystem or intent (\"rust binary\", \"python tests\").\n\
         3. `once_query_schema` for the chosen kind: attributes, dependency roles, capabilities.\n\
         4. `once_query_example` for a runnable starter; adapt its `once.toml` and sources.\n\
         5. Check proposed tables with `once_validate_target`, then the whole graph with `once_validate_workspace` after every edit; diagnostics carry file, line/column and repairs.\n\
         6. `once_query_targets`, `once_get_target` and `once_query_capabilities` to see what can be built, run or tested; `once_query_affected_tests` with the paths you changed to choose tests.\n\
         External rule with no matching kind: `once_query_module_contract` → `once_fetch_external_source` for the authoritative upstream rule → write a project module under the root manifest's `[modules] paths` (starter in the contract) → `once_validate_module` until valid → declare targets of the new kind → `once_validate_workspace`.\n\
         Answers always reflect the files on disk at the time of the call. Long lists come in pages: pass `next_cursor` back as `cursor`.\n\
         {gating}"
    )
}

pub fn initialize_result(version: &str, root: &Path, allow_run: bool) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": { "tools": { "listChanged": false } },
        "serverInfo": server_info(),
        "instructions": instructions(root, allow_run),
        "_meta": { WORKSPACE_ROOT_META: root.display().to_string() },
    })
}

pub fn discover_result(root: &Path, allow_run: bool) -> Value {
    json!({
        "resultType": "complete",
        "supportedVersions": supported_versions(),
        "capabilities": { "tools": { "listChanged": false } },
        "instructions": instructions(root, allow_run),
        "cacheScope": "private",
        "ttlMs": 0,
        "_meta": {
            SERVER_INFO_META: server_info(),
            WORKSPACE_ROOT_META: root.display().to_string(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_echoes_known_versions_and_prefers_the_latest() {
        for version in HANDSHAKE_VERSIONS {
            assert_eq!(negotiate(Some(version)), *version);
        }
        assert_eq!(negotiate(Some("2026-07-28")), LATEST_HANDSHAKE);
        assert_eq!(negotiate(Some("1900-01-01")), LATEST_HANDSHAKE);
        assert_eq!(negotiate(None), LATEST_HANDSHAKE);
    }
}
