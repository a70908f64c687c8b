//! The tools' schemas, derived from types: the output schemas from the record types
//! ([`output_schema`]), the input schemas from the argument types
//! (`crate::tools::arguments`), both by [`derived_schema`]; and [`validate`], a validator
//! of a small JSON Schema subset that the tests use as an oracle (real answers checked
//! against the advertised output schemas).
//!
//! The validator's keywords: `type` (a name or a list of names), `properties`, `required`,
//! `additionalProperties` (`false` or a schema), `items`, `enum`, `minimum`, `maximum`,
//! `minLength`, `anyOf`, `description`, `default`; `format` is informative (output schemas carry only
//! the formats JSON Schema defines, so that strict validators compile them).

use schemars::generate::{Contract, SchemaSettings};
use schemars::transform::RecursiveTransform;
use schemars::{JsonSchema, Schema};
use serde::Serialize;
use serde_json::Value;

/// `structuredContent` of a tool: `{"result": …, "warnings"?: […], "next_cursor"?: …}`.
/// `warnings` are inputs the answer could not use (`once_query_affected_tests`: changed
/// paths outside the workspace or in no package).
#[derive(Serialize, JsonSchema, Debug)]
pub struct StructuredContent<T> {
    pub result: T,
    /// Inputs the answer could not use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<String>>,
    /// Set when a list was cut: pass it back as `cursor` for the next page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// The output schema of a tool whose `result` is a `T`, derived from `T`'s serde shape so
/// it cannot drift from what is serialised: every subschema inline (no `$ref`, which the
/// validator here and some clients do not follow), a field required exactly when it is
/// always serialised (`skip_serializing_if` makes it optional), `Option` fields nullable,
/// closed string sets as `enum`, unsigned integers with `minimum: 0`, and every record
/// object closed (`additionalProperties: false`; maps keep their value schema).
pub fn output_schema<T: JsonSchema>() -> Value {
    derived_schema::<StructuredContent<T>>(Contract::Serialize)
}

/// The schema of `T` as it serialises or deserialises (`contract`), made as both the
/// output and the input schemas are: every subschema inline, no titles, only standard
/// formats, record objects closed, optional fields not nullable.
pub fn derived_schema<T: JsonSchema>(contract: Contract) -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    settings.meta_schema = None;
    settings.contract = contract;
    let generator = settings
        .with_transform(RecursiveTransform(close_record_objects))
        .into_generator();
    generator.into_root_schema_for::<T>().to_value()
}

/// The schema of one record type on its own, derived as the output schemas' `result` is
/// (`docs/test_results.schema.json` is generated from it).
pub fn record_schema<T: JsonSchema>() -> Value {
    output_schema::<T>()["properties"]["result"].clone()
}

/// The formats JSON Schema 2020-12 defines; any other is removed from output schemas.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Marks an optional field whose `null` is a value it takes when present (the record type
/// says `#[schemars(extend("x-null-when-present" = true))]`); removed from the output.
const NULL_WHEN_PRESENT: &str = "x-null-when-present";

/// Closes objects that list their properties, drops the type-name titles, and takes
/// `null` out of optional fields: an `Option` field skipped when `None` is absent, never
/// `null` (unless it is marked [`NULL_WHEN_PRESENT`]).
fn close_record_objects(schema: &mut Schema) {
    // A bare `true` (any value: a `serde_json::Value` field) is valid JSON Schema, but
    // portability checks (MCP Inspector) reject it: `{}` says the same.
    if schema.as_bool() == Some(true) {
        *schema = schemars::json_schema!({});
        return;
    }
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    object.remove("title");
    // schemars' `uint`, `uint32`, `int64`, `double`… are no JSON Schema formats: a
    // strict validator (Ajv, as the TypeScript SDKs use it) refuses to compile them. The
    // bounds they imply for unsigned integers are kept as `minimum: 0`.
    if object
        .get("format")
        .and_then(Value::as_str)
        .is_some_and(|format| !STANDARD_FORMATS.contains(&format))
    {
        object.shift_remove("format");
    }
    if !object.contains_key("properties") {
        return;
    }
    if !object.contains_key("additionalProperties") {
        object.insert("additionalProperties".to_owned(), Value::Bool(false));
    }
    let required: Vec<String> = object
        .get("required")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let Some(Value::Object(properties)) = object.get_mut("properties") else {
        return;
    };
    for (name, property) in properties.iter_mut() {
        let Some(property) = property.as_object_mut() else {
            continue;
        };
        if property.remove(NULL_WHEN_PRESENT).is_some() || required.contains(name) {
            continue;
        }
        if let Some(Value::Array(types)) = property.get_mut("type") {
            types.retain(|t| t != "null");
            if let [only] = types.as_slice() {
                let only = only.clone();
                property.insert("type".to_owned(), only);
            }
        }
        if let Some(Value::Array(values)) = property.get_mut("enum") {
            values.retain(|v| !v.is_null());
        }
    }
}

/// Validates `value` against `schema`; returns every problem, each as `path: message`. A
/// test oracle: the tests check real answers against the advertised output schemas (tool
/// arguments are read by their types, `crate::tools::arguments`).
pub fn validate(schema: &Value, value: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    check(schema, value, "", &mut problems);
    problems
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_matches(expected: &str, value: &Value) -> bool {
    let actual = type_name(value);
    actual == expected || (expected == "number" && actual == "integer")
}

fn place(path: &str) -> String {
    if path.is_empty() {
        "the arguments".to_owned()
    } else {
        format!("`{path}`")
    }
}

fn check(schema: &Value, value: &Value, path: &str, problems: &mut Vec<String>) {
    let Some(schema) = schema.as_object() else {
        return;
    };
    // One branch must match: the problems shown are the closest branch's.
    if let Some(Value::Array(branches)) = schema.get("anyOf") {
        let mut closest: Option<Vec<String>> = None;
        for branch in branches {
            let mut found = Vec::new();
            check(branch, value, path, &mut found);
            if found.is_empty() {
                closest = None;
                break;
            }
            if closest.as_ref().is_none_or(|c| found.len() < c.len()) {
                closest = Some(found);
            }
        }
        if let Some(found) = closest {
            problems.push(format!("{}: no schema of `anyOf` matches", place(path)));
            problems.extend(found);
            return;
        }
    }
    if let Some(expected) = schema.get("type") {
        let names: Vec<&str> = match expected {
            Value::String(name) => vec![name.as_str()],
            Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !names.is_empty() && !names.iter().any(|n| type_matches(n, value)) {
            problems.push(format!(
                "{} must be {}, not {}",
                place(path),
                names.join(" or "),
                type_name(value)
            ));
            return;
        }
    }
    if let Some(Value::Array(allowed)) = schema.get("enum")
        && !allowed.contains(value)
    {
        let allowed: Vec<String> = allowed.iter().map(Value::to_string).collect();
        problems.push(format!(
            "{} must be one of {}",
            place(path),
            allowed.join(", ")
        ));
    }
    if let Some(n) = value.as_f64() {
        if let Some(min) = schema.get("minimum").and_then(Value::as_f64)
            && n < min
        {
            problems.push(format!("{} must be at least {min}", place(path)));
        }
        if let Some(max) = schema.get("maximum").and_then(Value::as_f64)
            && n > max
        {
            problems.push(format!("{} must be at most {max}", place(path)));
        }
    }
    if let (Some(min), Some(s)) = (
        schema.get("minLength").and_then(Value::as_u64),
        value.as_str(),
    ) && (s.chars().count() as u64) < min
    {
        problems.push(format!("{} must not be empty", place(path)));
    }
    if let (Some(items), Some(values)) = (schema.get("items"), value.as_array()) {
        for (i, item) in values.iter().enumerate() {
            check(items, item, &format!("{path}[{i}]"), problems);
        }
    }
    if let Some(object) = value.as_object() {
        let properties = schema.get("properties").and_then(Value::as_object);
        if let Some(Value::Array(required)) = schema.get("required") {
            for name in required.iter().filter_map(Value::as_str) {
                if !object.contains_key(name) {
                    let field = if path.is_empty() {
                        name.to_owned()
                    } else {
                        format!("{path}.{name}")
                    };
                    problems.push(format!("missing required argument `{field}`"));
                }
            }
        }
        for (key, item) in object {
            let child = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            match properties.and_then(|p| p.get(key)) {
                Some(property) => check(property, item, &child, problems),
                None => match schema.get("additionalProperties") {
                    Some(Value::Bool(false)) => {
                        let known: Vec<String> = properties
                            .map(|p| p.keys().map(|k| format!("`{k}`")).collect())
                            .unwrap_or_default();
                        let hint = if known.is_empty() {
                            "it takes none".to_owned()
                        } else {
                            format!("expected {}", known.join(", "))
                        };
                        problems.push(format!("unknown argument `{child}`; {hint}"));
                    }
                    Some(additional @ Value::Object(_)) => {
                        check(additional, item, &child, problems)
                    }
                    _ => {}
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, json};

    fn string(description: &str) -> Value {
        json!({ "type": "string", "description": description })
    }

    fn plain_string() -> Value {
        json!({ "type": "string" })
    }

    fn array(items: Value) -> Value {
        json!({ "type": "array", "items": items })
    }

    fn strings() -> Value {
        array(plain_string())
    }

    /// An object with exactly these properties; `required` lists the mandatory ones.
    fn object(properties: &[(&str, Value)], required: &[&str]) -> Value {
        let properties: Map<String, Value> = properties
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect();
        json!({ "type": "object", "properties": properties, "required": required, "additionalProperties": false })
    }

    /// An object with arbitrary keys whose values match `values`.
    fn map_of(values: Value) -> Value {
        json!({ "type": "object", "additionalProperties": values })
    }

    /// A record with each kind of field the derivation handles.
    #[derive(Serialize, JsonSchema)]
    #[allow(dead_code, reason = "only its schema is used")]
    struct Sample {
        /// Always there.
        count: u32,
        /// Always there, sometimes `null`.
        nullable: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        optional: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        #[schemars(extend("x-null-when-present" = true))]
        optional_null: Option<Option<i32>>,
        #[schemars(extend("enum" = ["a", "b"]))]
        closed: &'static str,
        map: std::collections::BTreeMap<String, Vec<String>>,
        items: Vec<Inner>,
    }

    #[derive(Serialize, JsonSchema)]
    #[allow(dead_code, reason = "only its schema is used")]
    struct Inner {
        ok: bool,
    }

    /// The derived output schema: inline, closed objects, a field required exactly when
    /// it is always serialised, `null` only where a present field can be `null`.
    #[test]
    fn output_schemas_are_derived_precisely() {
        let schema = output_schema::<Sample>();
        expect_test::expect![[r#"
            {
              "type": "object",
              "properties": {
                "result": {
                  "type": "object",
                  "properties": {
                    "count": {
                      "type": "integer",
                      "minimum": 0,
                      "description": "Always there."
                    },
                    "nullable": {
                      "type": [
                        "string",
                        "null"
                      ],
                      "description": "Always there, sometimes `null`."
                    },
                    "optional": {
                      "type": "string"
                    },
                    "optional_null": {
                      "type": [
                        "integer",
                        "null"
                      ]
                    },
                    "closed": {
                      "type": "string",
                      "enum": [
                        "a",
                        "b"
                      ]
                    },
                    "map": {
                      "type": "object",
                      "additionalProperties": {
                        "type": "array",
                        "items": {
                          "type": "string"
                        }
                      }
                    },
                    "items": {
                      "type": "array",
                      "items": {
                        "type": "object",
                        "properties": {
                          "ok": {
                            "type": "boolean"
                          }
                        },
                        "required": [
                          "ok"
                        ],
                        "additionalProperties": false
                      }
                    }
                  },
                  "required": [
                    "count",
                    "nullable",
                    "closed",
                    "map",
                    "items"
                  ],
                  "description": "A record with each kind of field the derivation handles.",
                  "additionalProperties": false
                },
                "warnings": {
                  "type": "array",
                  "items": {
                    "type": "string"
                  },
                  "description": "Inputs the answer could not use."
                },
                "next_cursor": {
                  "type": "string",
                  "description": "Set when a list was cut: pass it back as `cursor` for the next page."
                }
              },
              "required": [
                "result"
              ],
              "description": "`structuredContent` of a tool: `{\"result\": …, \"warnings\"?: […], \"next_cursor\"?: …}`.\n`warnings` are inputs the answer could not use (`once_query_affected_tests`: changed\npaths outside the workspace or in no package).",
              "additionalProperties": false
            }"#]]
        .assert_eq(&serde_json::to_string_pretty(&schema).unwrap());
    }

    fn check(schema: Value, value: Value, expected: &[&str]) {
        assert_eq!(validate(&schema, &value), expected, "{value}");
    }

    #[test]
    fn validation() {
        let schema = object(
            &[
                ("target", string("id")),
                (
                    "limit",
                    json!({"type": "integer", "minimum": 1, "maximum": 10}),
                ),
                ("paths", strings()),
            ],
            &["target"],
        );
        check(schema.clone(), json!({"target": "a"}), &[]);
        check(
            schema.clone(),
            json!({}),
            &["missing required argument `target`"],
        );
        check(
            schema.clone(),
            json!({"target": 1}),
            &["`target` must be string, not integer"],
        );
        check(
            schema.clone(),
            json!({"target": "a", "extra": true}),
            &["unknown argument `extra`; expected `target`, `limit`, `paths`"],
        );
        check(
            schema.clone(),
            json!({"target": "a", "limit": 0}),
            &["`limit` must be at least 1"],
        );
        check(
            schema.clone(),
            json!({"target": "a", "paths": ["x", 2]}),
            &["`paths[1]` must be string, not integer"],
        );
        check(json!({"type": ["string", "null"]}), Value::Null, &[]);
        check(
            map_of(strings()),
            json!({"a": ["x"], "b": [1]}),
            &["`b[0]` must be string, not integer"],
        );
        check(
            object(&[], &[]),
            json!({"x": 1}),
            &["unknown argument `x`; it takes none"],
        );
        let either = json!({ "anyOf": [object(&[("a", plain_string())], &["a"]), object(&[("b", strings())], &["b"])] });
        check(either.clone(), json!({"a": "x"}), &[]);
        check(either.clone(), json!({"b": ["x"]}), &[]);
        check(
            either,
            json!({"b": [1]}),
            &[
                "the arguments: no schema of `anyOf` matches",
                "`b[0]` must be string, not integer",
            ],
        );
    }
}
