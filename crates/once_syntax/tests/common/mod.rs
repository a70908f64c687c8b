//! Helpers shared by the integration tests: toml-test's tagged JSON form for
//! our documents and for the `toml` crate's tables, and a comparison of two
//! tagged values that treats numbers and date-times by value.

#![allow(dead_code)]

use once_syntax::value::{Datetime, DatetimeKind, Table, Value, ValueKind};
use serde_json::{Map, Value as Json, json};

/// Our table in toml-test's tagged JSON form.
pub fn table_to_json(table: &Table) -> Json {
    let mut object = Map::new();
    for entry in &table.entries {
        object.insert(entry.key.clone(), value_to_json(&entry.value));
    }
    Json::Object(object)
}

fn value_to_json(value: &Value) -> Json {
    match &value.kind {
        ValueKind::String(text) => tagged("string", text.clone()),
        ValueKind::Integer(integer) => tagged("integer", integer.to_string()),
        ValueKind::Float(float) => tagged("float", float_text(float.0)),
        ValueKind::Boolean(boolean) => tagged("bool", boolean.to_string()),
        ValueKind::Datetime(datetime) => {
            let tag = match datetime.kind {
                DatetimeKind::OffsetDateTime => "datetime",
                DatetimeKind::LocalDateTime => "datetime-local",
                DatetimeKind::LocalDate => "date-local",
                DatetimeKind::LocalTime => "time-local",
            };
            tagged(tag, datetime.normalized())
        }
        ValueKind::Array(items) => Json::Array(items.iter().map(value_to_json).collect()),
        ValueKind::Table(table) => table_to_json(table),
    }
}

/// The `toml` crate's table in the same tagged form.
pub fn toml_table_to_json(table: &toml::Table) -> Json {
    let mut object = Map::new();
    for (key, value) in table {
        object.insert(key.clone(), toml_value_to_json(value));
    }
    Json::Object(object)
}

fn toml_value_to_json(value: &toml::Value) -> Json {
    match value {
        toml::Value::String(text) => tagged("string", text.clone()),
        toml::Value::Integer(integer) => tagged("integer", integer.to_string()),
        toml::Value::Float(float) => tagged("float", float_text(*float)),
        toml::Value::Boolean(boolean) => tagged("bool", boolean.to_string()),
        toml::Value::Datetime(datetime) => {
            let tag = match (&datetime.date, &datetime.time, &datetime.offset) {
                (Some(_), Some(_), Some(_)) => "datetime",
                (Some(_), Some(_), None) => "datetime-local",
                (Some(_), None, _) => "date-local",
                _ => "time-local",
            };
            tagged(tag, datetime.to_string())
        }
        toml::Value::Array(items) => Json::Array(items.iter().map(toml_value_to_json).collect()),
        toml::Value::Table(table) => toml_table_to_json(table),
    }
}

fn tagged(tag: &str, value: String) -> Json {
    json!({ "type": tag, "value": value })
}

fn float_text(float: f64) -> String {
    if float.is_nan() {
        "nan".to_string()
    } else if float.is_infinite() {
        if float > 0.0 { "inf" } else { "-inf" }.to_string()
    } else {
        format!("{float:?}")
    }
}

/// Compares two tagged JSON values, pushing one line per difference.
pub fn compare(expected: &Json, actual: &Json, path: &str, differences: &mut Vec<String>) {
    if let (Some(expected_tag), Some(actual_tag)) = (scalar_tag(expected), scalar_tag(actual)) {
        let expected_value = expected
            .get("value")
            .and_then(Json::as_str)
            .unwrap_or_default();
        let actual_value = actual
            .get("value")
            .and_then(Json::as_str)
            .unwrap_or_default();
        if expected_tag != actual_tag {
            differences.push(format!(
                "{path}: expected type {expected_tag}, found {actual_tag}"
            ));
        } else if !scalars_equal(expected_tag, expected_value, actual_value) {
            differences.push(format!(
                "{path}: expected {expected_tag} {expected_value:?}, found {actual_value:?}"
            ));
        }
        return;
    }
    match (expected, actual) {
        (Json::Object(expected), Json::Object(actual)) => {
            for (key, expected_value) in expected {
                match actual.get(key) {
                    Some(actual_value) => compare(
                        expected_value,
                        actual_value,
                        &format!("{path}.{key}"),
                        differences,
                    ),
                    None => differences.push(format!("{path}: missing key {key:?}")),
                }
            }
            for key in actual.keys().filter(|key| !expected.contains_key(*key)) {
                differences.push(format!("{path}: unexpected key {key:?}"));
            }
        }
        (Json::Array(expected), Json::Array(actual)) => {
            if expected.len() != actual.len() {
                differences.push(format!(
                    "{path}: expected {} array items, found {}",
                    expected.len(),
                    actual.len()
                ));
            }
            for (index, (expected, actual)) in expected.iter().zip(actual).enumerate() {
                compare(expected, actual, &format!("{path}[{index}]"), differences);
            }
        }
        _ => differences.push(format!("{path}: expected {expected}, found {actual}")),
    }
}

/// The tag of a `{"type": ..., "value": ...}` scalar.
fn scalar_tag(json: &Json) -> Option<&str> {
    let object = json.as_object()?;
    if object.len() != 2 || !object.get("value").is_some_and(Json::is_string) {
        return None;
    }
    object.get("type")?.as_str()
}

fn scalars_equal(tag: &str, expected: &str, actual: &str) -> bool {
    match tag {
        "integer" => expected
            .parse::<i64>()
            .ok()
            .is_some_and(|e| actual.parse::<i64>().ok() == Some(e)),
        "float" => match (parse_float(expected), parse_float(actual)) {
            (Some(e), Some(a)) if e.is_nan() => a.is_nan(),
            (Some(e), Some(a)) => e == a,
            _ => false,
        },
        "datetime" | "datetime-local" | "date-local" | "time-local" => {
            normalize_datetime(expected) == normalize_datetime(actual)
        }
        _ => expected == actual,
    }
}

fn parse_float(text: &str) -> Option<f64> {
    match text.trim_start_matches('+') {
        "inf" => Some(f64::INFINITY),
        "-inf" => Some(f64::NEG_INFINITY),
        "nan" | "-nan" => Some(f64::NAN),
        other => other.parse().ok(),
    }
}

fn normalize_datetime(text: &str) -> String {
    // The kind does not matter for normalization: it re-reads the text.
    Datetime {
        kind: DatetimeKind::LocalDate,
        text: text.to_string(),
    }
    .normalized()
}
