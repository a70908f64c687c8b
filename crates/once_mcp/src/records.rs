//! Output schemas of the JSON records tools return: one precise schema per record shape
//! of `once_json`, so `structuredContent` validates in every client.

use serde_json::{Value, json};

use crate::schema::{
    any, array, boolean, integer, map_of, nullable_string, object, plain_string, strings,
};

fn position() -> Value {
    object(
        &[("line", integer()), ("column", integer())],
        &["line", "column"],
    )
}

pub fn diagnostic() -> Value {
    object(
        &[
            ("code", plain_string()),
            (
                "severity",
                json!({ "type": "string", "enum": ["error", "warning", "info"] }),
            ),
            ("message", plain_string()),
            ("file", plain_string()),
            ("range", line_col_range()),
            ("target", plain_string()),
            ("attribute", plain_string()),
            ("repairs", strings()),
            ("fixes", array(fix())),
        ],
        &["code", "severity", "message", "repairs", "fixes"],
    )
}

fn line_col_range() -> Value {
    object(
        &[("start", position()), ("end", position())],
        &["start", "end"],
    )
}

/// A machine-applicable fix of a diagnostic: edits of the diagnostic's file.
fn fix() -> Value {
    object(
        &[
            ("title", plain_string()),
            ("preferred", boolean()),
            (
                "edits",
                array(object(
                    &[("range", line_col_range()), ("new_text", plain_string())],
                    &["range", "new_text"],
                )),
            ),
        ],
        &["title", "preferred", "edits"],
    )
}

pub fn validation() -> Value {
    object(
        &[
            ("valid", boolean()),
            ("target_count", integer()),
            ("diagnostics", array(diagnostic())),
        ],
        &["valid", "target_count", "diagnostics"],
    )
}

pub fn target_validation() -> Value {
    object(
        &[("valid", boolean()), ("diagnostics", array(diagnostic()))],
        &["valid", "diagnostics"],
    )
}

pub fn workspace() -> Value {
    object(
        &[
            ("root", plain_string()),
            (
                "configuration",
                object(
                    &[
                        ("os", plain_string()),
                        ("arch", plain_string()),
                        ("tokens", strings()),
                    ],
                    &["os", "arch", "tokens"],
                ),
            ),
            (
                "root_manifest",
                object(
                    &[("path", plain_string()), ("exists", boolean())],
                    &["path", "exists"],
                ),
            ),
            ("target_count", integer()),
            ("packages", strings()),
            ("empty", boolean()),
            ("module_paths", strings()),
            (
                "diagnostics",
                object(
                    &[("errors", integer()), ("warnings", integer())],
                    &["errors", "warnings"],
                ),
            ),
        ],
        &[
            "root",
            "configuration",
            "root_manifest",
            "target_count",
            "packages",
            "empty",
            "module_paths",
            "diagnostics",
        ],
    )
}

pub fn target() -> Value {
    object(
        &[
            ("id", plain_string()),
            ("package", plain_string()),
            ("name", plain_string()),
            ("kind", plain_string()),
            ("deps", strings()),
            ("dependency_edges", map_of(strings())),
            ("visibility", strings()),
            ("capabilities", strings()),
        ],
        &["id", "package", "name", "kind", "deps", "capabilities"],
    )
}

fn capability() -> Value {
    object(
        &[
            ("name", plain_string()),
            ("output_groups", strings()),
            ("requires_outputs", strings()),
        ],
        &["name", "output_groups", "requires_outputs"],
    )
}

fn tool() -> Value {
    object(
        &[("name", plain_string()), ("docs", plain_string())],
        &["name", "docs"],
    )
}

pub fn graph_target() -> Value {
    object(
        &[
            (
                "label",
                object(
                    &[
                        ("package", plain_string()),
                        ("name", plain_string()),
                        ("id", plain_string()),
                    ],
                    &["package", "name", "id"],
                ),
            ),
            ("kind", plain_string()),
            ("srcs", strings()),
            ("deps", strings()),
            ("dependency_edges", map_of(strings())),
            ("visibility", strings()),
            ("labels", strings()),
            ("attrs", map_of(any())),
            ("capabilities", array(capability())),
            ("providers", strings()),
            ("tools", array(tool())),
            ("diagnostics", array(diagnostic())),
        ],
        &[
            "label",
            "kind",
            "srcs",
            "deps",
            "visibility",
            "labels",
            "attrs",
            "capabilities",
            "providers",
            "tools",
            "diagnostics",
        ],
    )
}

pub fn capabilities() -> Value {
    object(
        &[
            ("id", plain_string()),
            ("kind", plain_string()),
            ("capabilities", array(capability())),
        ],
        &["id", "kind", "capabilities"],
    )
}

fn source_reference() -> Value {
    object(
        &[
            ("system", plain_string()),
            ("symbol", plain_string()),
            ("url", plain_string()),
            ("use_when", plain_string()),
            ("content_digest", plain_string()),
        ],
        &["system", "symbol", "url", "use_when", "content_digest"],
    )
}

fn example_summary() -> Value {
    object(
        &[
            ("slug", plain_string()),
            ("name", plain_string()),
            ("use_when", plain_string()),
        ],
        &["slug", "name", "use_when"],
    )
}

pub fn kind_schema() -> Value {
    object(
        &[
            ("kind", plain_string()),
            ("docs", plain_string()),
            (
                "attrs",
                array(object(
                    &[
                        ("name", plain_string()),
                        ("ty", plain_string()),
                        ("required", boolean()),
                        ("default", any()),
                        ("docs", plain_string()),
                        ("configurable", boolean()),
                        ("allowed_values", strings()),
                    ],
                    &["name", "ty", "required", "docs", "configurable"],
                )),
            ),
            (
                "deps",
                array(object(
                    &[
                        ("name", plain_string()),
                        ("expected_providers", strings()),
                        ("docs", plain_string()),
                        ("min_count", integer()),
                        ("max_count", integer()),
                    ],
                    &["name", "expected_providers", "docs", "min_count"],
                )),
            ),
            ("providers", strings()),
            (
                "capabilities",
                array(object(
                    &[
                        ("name", plain_string()),
                        ("docs", plain_string()),
                        ("output_groups", strings()),
                        ("requires_outputs", strings()),
                        ("runner", plain_string()),
                    ],
                    &["name", "docs", "output_groups", "requires_outputs"],
                )),
            ),
            ("tools", array(tool())),
            ("source_references", array(source_reference())),
            ("examples", array(example_summary())),
        ],
        &[
            "kind",
            "docs",
            "attrs",
            "deps",
            "providers",
            "capabilities",
            "tools",
            "source_references",
            "examples",
        ],
    )
}

pub fn kind_list_entry() -> Value {
    object(
        &[
            ("kind", plain_string()),
            ("docs", plain_string()),
            ("source_references", array(source_reference())),
            ("examples", array(example_summary())),
        ],
        &["kind", "docs", "source_references", "examples"],
    )
}

pub fn example() -> Value {
    object(
        &[
            ("slug", plain_string()),
            ("name", plain_string()),
            ("use_when", plain_string()),
            (
                "files",
                array(object(
                    &[
                        ("path", plain_string()),
                        ("contents", plain_string()),
                        ("contents_base64", plain_string()),
                    ],
                    &["path", "contents"],
                )),
            ),
        ],
        &["slug", "name", "use_when", "files"],
    )
}

pub fn test() -> Value {
    object(
        &[
            ("id", plain_string()),
            ("kind", plain_string()),
            ("deps", strings()),
            ("runner", nullable_string()),
            ("labels", strings()),
            ("results_path", plain_string()),
        ],
        &["id", "kind", "deps", "runner", "labels", "results_path"],
    )
}

pub fn affected_test() -> Value {
    object(
        &[
            ("id", plain_string()),
            ("kind", plain_string()),
            ("reasons", strings()),
        ],
        &["id", "kind", "reasons"],
    )
}

pub fn external_source() -> Value {
    object(
        &[
            ("url", plain_string()),
            ("content_type", nullable_string()),
            ("content_digest", plain_string()),
            ("byte_count", integer()),
            ("truncated", boolean()),
            ("content", plain_string()),
        ],
        &[
            "url",
            "content_type",
            "content_digest",
            "byte_count",
            "truncated",
            "content",
        ],
    )
}

fn contract_entries() -> Value {
    array(object(
        &[("signature", plain_string()), ("purpose", plain_string())],
        &["signature", "purpose"],
    ))
}

pub fn module_contract() -> Value {
    let lists = [
        "helpers",
        "attribute_types",
        "context_fields",
        "action_primitives",
    ];
    let texts = [
        "language",
        "registration",
        "declaration_source",
        "starter_path",
        "starter",
        "starter_target",
    ];
    let sentences = ["schema_invariants", "load_contract", "maintenance_loop"];
    let mut properties: Vec<(&str, Value)> = Vec::new();
    properties.extend(texts.iter().map(|&n| (n, plain_string())));
    properties.extend(lists.iter().map(|&n| (n, contract_entries())));
    properties.extend(sentences.iter().map(|&n| (n, strings())));
    let required: Vec<&str> = texts
        .iter()
        .chain(&lists)
        .chain(&sentences)
        .copied()
        .collect();
    object(&properties, &required)
}

pub fn module_validation() -> Value {
    object(
        &[
            ("valid", boolean()),
            ("path", plain_string()),
            ("target_kinds", array(kind_schema())),
            ("diagnostics", array(diagnostic())),
        ],
        &["valid", "path", "target_kinds", "diagnostics"],
    )
}

/// The `structuredContent` envelope: `{"result": …, "warnings"?: […], "next_cursor"?: …}`.
/// `warnings` are inputs the answer could not use (`once_query_affected_tests`: changed
/// paths outside the workspace or in no package).
pub fn envelope(result: Value) -> Value {
    object(
        &[
            ("result", result),
            ("warnings", strings()),
            ("next_cursor", plain_string()),
        ],
        &["result"],
    )
}

/// `once_apply_edit`: `{applied: true, changed, path}` or
/// `{applied: false, path, failed_operation, diagnostics}`.
pub fn edit_result() -> Value {
    object(
        &[
            ("applied", boolean()),
            ("changed", boolean()),
            ("path", plain_string()),
            (
                "failed_operation",
                json!({ "type": ["integer", "null"], "minimum": 0 }),
            ),
            ("diagnostics", array(diagnostic())),
        ],
        &["applied", "path"],
    )
}

/// `once_materialize_example`.
pub fn materialize() -> Value {
    object(
        &[
            ("materialized", boolean()),
            ("kind", plain_string()),
            ("slug", plain_string()),
            ("destination", plain_string()),
            ("created_files", strings()),
            ("unchanged_files", strings()),
            (
                "conflicts",
                array(object(
                    &[("path", plain_string()), ("reason", plain_string())],
                    &["path", "reason"],
                )),
            ),
            ("targets", array(target())),
            ("warnings", strings()),
            ("workspace_validation", {
                let mut nullable = validation();
                nullable["type"] = serde_json::json!(["object", "null"]);
                nullable
            }),
        ],
        &[
            "materialized",
            "kind",
            "slug",
            "destination",
            "created_files",
            "unchanged_files",
            "conflicts",
            "targets",
            "warnings",
            "workspace_validation",
        ],
    )
}

/// A `once.evidence.v1` record (`once_json::EvidenceRecordDto`).
pub fn evidence_record() -> Value {
    let one_of = |values: &[&str]| json!({ "type": "string", "enum": values });
    object(
        &[
            ("schema", one_of(&["once.evidence.v1"])),
            ("id", plain_string()),
            ("kind", one_of(&["action_result"])),
            (
                "subject",
                object(
                    &[
                        ("kind", one_of(&["target", "command"])),
                        ("id", plain_string()),
                        ("capability", plain_string()),
                    ],
                    &["kind", "id"],
                ),
            ),
            ("action", plain_string()),
            ("status", one_of(&["passed", "failed"])),
            ("action_digest", plain_string()),
            ("input_digest", plain_string()),
            ("cache", one_of(&["hit", "miss", "bypass"])),
            ("exit_code", json!({ "type": "integer" })),
            ("stdout", plain_string()),
            ("stderr", plain_string()),
            ("created_at_unix_ms", integer()),
        ],
        &[
            "schema",
            "id",
            "kind",
            "subject",
            "status",
            "action_digest",
            "cache",
            "created_at_unix_ms",
        ],
    )
}
