//! The editing tools: target edits applied to one manifest, and starter examples
//! written into the workspace, through the host (which applies the written paths at
//! once, so the next call sees them). Listed only with `--allow-run`.

use once_analysis::AnalysisHost;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{EDIT, Edit, MATERIALIZE, Tool, ToolError, ToolOutput, page_none};
use crate::schema::output_schema;

/// The arguments of `once_apply_edit`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApplyEdit {
    /// Package directory relative to the workspace root, such as `packages/core`. Use `""` for the root manifest.
    package: String,
    /// Ordered list of operations. Each is `{ op: "create", target: {...}, comment?: "..." }` (the comment, one or more lines, is written above the new `[[target]]`), `{ op: "update", target_name: "...", set: {...} }`, or `{ op: "delete", target_name: "..." }`.
    operations: Vec<Map<String, Value>>,
}

impl Edit for ApplyEdit {
    fn apply(self, host: &mut AnalysisHost) -> Result<ToolOutput, ToolError> {
        let request = once_json::edit_request(
            &json!({ "package": self.package, "operations": self.operations }),
        )?;
        let outcome = host.apply_edit(&request)?;
        Ok(page_none(once_json::to_value(&once_json::edit_result(
            &outcome,
        ))))
    }
}

/// The arguments of `once_materialize_example`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MaterializeExample {
    /// Target kind that owns the example.
    kind: String,
    /// Example slug from the target kind schema.
    slug: String,
    /// Workspace-relative directory to write into; `""` (the default) is the workspace root.
    #[serde(default)]
    destination: String,
}

impl Edit for MaterializeExample {
    fn apply(self, host: &mut AnalysisHost) -> Result<ToolOutput, ToolError> {
        let done = host.materialize_example(&self.kind, &self.slug, &self.destination)?;
        Ok(page_none(once_json::to_value(&once_json::materialize(
            &done.plan,
            &done.targets,
            done.validation.as_ref(),
        ))))
    }
}

/// `once_apply_edit`.
pub(super) fn apply_edit() -> Tool {
    Tool::edit::<ApplyEdit>(
        "once_apply_edit",
        "Apply target edits",
        "Apply a batch of create / update / delete operations to one package's `once.toml`, all or nothing.\n\n\
                Reads `<workspace>/<package>/once.toml` (a missing file is empty and is created), applies the operations in order, and checks each result with the same local checks as `once_validate_target` (kinds, attributes, names, duplicates). \
                Only when every operation passes is the file written, atomically; comments, blank lines, key order and formatting of everything not touched are kept. \
                `update` sets the given fields of a target (`null` removes a field; `attrs` and `dependencies` are replaced as whole tables, unchanged entries keep their text). \
                Returns `{applied: true, changed, path}`, or `{applied: false, path, failed_operation, diagnostics}` with the file byte-for-byte unchanged. \
                Dependencies are not resolved here: call `once_validate_workspace` afterwards. The matching command-line operation is `once edit apply --file <json>`."
                .into(),
        output_schema::<once_json::EditResultDto>(),
        EDIT,
    )
}

/// `once_materialize_example`.
pub(super) fn materialize_example() -> Tool {
    Tool::edit::<MaterializeExample>(
        "once_materialize_example",
        "Materialize a starter example",
        "Write a kind's starter example (manifests and sources) under a workspace-relative destination, without passing the files through the conversation.\n\n\
                Idempotent: files that already exist with identical bytes count as unchanged. If any destination file exists with different content, or a path component is a symbolic link or a file where a directory is needed, nothing at all is written and every conflict is listed. \
                Under a non-empty destination, references between the starter's own targets are prefixed with the destination and its root-only `[workspace]` table is left out. \
                Returns created and unchanged files, conflicts, the targets of the starter's packages, warnings (such as a destination that `[workspace] include` leaves out: its files are written but its targets are not part of the workspace) and the workspace validation after the write. \
                Find kinds and slugs with `once_list_target_kinds`. The matching command-line operation is `once edit materialize-example <kind> <slug> --destination <dir>`."
                .into(),
        output_schema::<once_json::MaterializeDto>(),
        MATERIALIZE,
    )
}
