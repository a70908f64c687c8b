//! Tool arguments as types: each tool takes one `Deserialize + JsonSchema` struct whose
//! fields are its arguments (unknown ones refused), its input schema is derived from it
//! ([`input_schema`]), and a call's arguments are read into it once ([`parse`]), with
//! errors that name the argument. Bounded numbers are types too ([`Bounded`],
//! [`Seconds`]), so a limit cannot be declared in the schema and forgotten in the code.

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

/// An integer from `MIN` to `MAX`, inclusive (a page size, a byte limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounded<const MIN: u64, const MAX: u64>(pub u64);

impl<const MIN: u64, const MAX: u64> Bounded<MIN, MAX> {
    /// The value as a size, or `default` when the argument was not given.
    pub fn or(value: Option<Self>, default: usize) -> usize {
        value.map_or(default, |b| usize::try_from(b.0).unwrap_or(usize::MAX))
    }
}

impl<'de, const MIN: u64, const MAX: u64> Deserialize<'de> for Bounded<MIN, MAX> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value =
            i128::from(i64::deserialize(deserializer).map_err(|_| {
                D::Error::custom(format!("expected an integer from {MIN} to {MAX}"))
            })?);
        if value < i128::from(MIN) || value > i128::from(MAX) {
            return Err(D::Error::custom(format!(
                "{value} is outside {MIN}..={MAX}"
            )));
        }
        Ok(Bounded(value as u64))
    }
}

impl<const MIN: u64, const MAX: u64> JsonSchema for Bounded<MIN, MAX> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("Bounded_{MIN}_{MAX}").into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "integer", "minimum": MIN, "maximum": MAX })
    }
}

/// A number of seconds from 0 to `MAX` (a grace period).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Seconds<const MAX: u64>(pub f64);

impl<'de, const MAX: u64> Deserialize<'de> for Seconds<MAX> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = f64::deserialize(deserializer)?;
        if !value.is_finite() || value < 0.0 || value > MAX as f64 {
            return Err(D::Error::custom(format!("{value} is outside 0..={MAX}")));
        }
        Ok(Seconds(value))
    }
}

impl<const MAX: u64> JsonSchema for Seconds<MAX> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("Seconds_{MAX}").into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "number", "minimum": 0, "maximum": MAX })
    }
}

/// A page size from 1 to 1,000.
pub type PageLimit = Bounded<1, 1000>;

/// Reads a call's arguments into `A`; the error names the argument and what is wrong
/// with it, in the words agents already see from the other tools.
pub fn parse<A: DeserializeOwned>(arguments: &Map<String, Value>) -> Result<A, String> {
    serde_path_to_error::deserialize(Value::Object(arguments.clone())).map_err(
        |error: serde_path_to_error::Error<serde_json::Error>| {
            let path = error.path().to_string();
            let message = reworded(&error.inner().to_string());
            if path == "." || message.contains("argument `") {
                message
            } else {
                format!("`{path}`: {message}")
            }
        },
    )
}

/// Only whether `arguments` read into `A` (the server checks before it dispatches).
pub fn check<A: DeserializeOwned>(arguments: &Map<String, Value>) -> Result<(), String> {
    parse::<A>(arguments).map(drop)
}

/// serde's messages about fields, said of arguments: `missing field `x`` is a missing
/// required argument, `unknown field `x`, expected one of …` an unknown argument.
fn reworded(message: &str) -> String {
    let message = message
        .split(" at line ")
        .next()
        .unwrap_or(message)
        .to_owned();
    if let Some(name) = message.strip_prefix("missing field ") {
        return format!("missing required argument {name}");
    }
    if let Some(rest) = message.strip_prefix("unknown field ") {
        let (name, expected) = rest.split_once(", ").unwrap_or((rest, ""));
        let expected = match expected {
            "there are no fields" => "it takes none".to_owned(),
            other => {
                let list = other
                    .strip_prefix("expected one of ")
                    .or_else(|| other.strip_prefix("expected "))
                    .unwrap_or(other);
                format!("expected {list}")
            }
        };
        return format!("unknown argument {name}; {expected}");
    }
    message
}

/// The input schema of a tool taking `A`: derived as the output schemas are (inline, no
/// titles, only standard formats, optional arguments not nullable), every object closed.
pub fn input_schema<A: JsonSchema>() -> Value {
    let mut schema = crate::schema::derived_schema::<A>(schemars::generate::Contract::Deserialize);
    if let Some(object) = schema.as_object_mut() {
        // The struct's own doc is for the code; the tool's description says it all.
        object.shift_remove("description");
        object
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        object
            .entry("required")
            .or_insert_with(|| Value::Array(Vec::new()));
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::expect;
    use serde_json::json;

    /// A tool that takes no arguments.
    #[derive(Deserialize, JsonSchema, Debug)]
    #[serde(deny_unknown_fields)]
    struct NoArguments {}

    #[derive(Deserialize, JsonSchema, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code, reason = "read only through Debug")]
    struct Example {
        /// The target.
        target: String,
        /// At most this many.
        limit: Option<Bounded<1, 100>>,
        /// Grace.
        grace: Option<Seconds<60>>,
    }

    fn check(arguments: Value) -> String {
        let Value::Object(arguments) = arguments else {
            unreachable!()
        };
        match parse::<Example>(&arguments) {
            Ok(example) => format!("{example:?}"),
            Err(error) => error,
        }
    }

    #[test]
    fn errors_name_the_argument() {
        let answers = [
            check(json!({ "target": "a", "limit": 5, "grace": 1.5 })),
            check(json!({})),
            check(json!({ "target": "a", "extra": 1 })),
            check(json!({ "target": 3 })),
            check(json!({ "target": "a", "limit": 0 })),
            check(json!({ "target": "a", "limit": 101 })),
            check(json!({ "target": "a", "limit": "5" })),
            check(json!({ "target": "a", "grace": -1 })),
            check(json!({ "target": "a", "limit": null })),
        ];
        expect![[r#"
            Example { target: "a", limit: Some(Bounded(5)), grace: Some(Seconds(1.5)) }
            missing required argument `target`
            unknown argument `extra`; expected `target`, `limit`, `grace`
            `target`: invalid type: number, expected a string
            `limit`: 0 is outside 1..=100
            `limit`: 101 is outside 1..=100
            `limit`: expected an integer from 1 to 100
            `grace`: -1 is outside 0..=60
            Example { target: "a", limit: None, grace: None }"#]]
        .assert_eq(&answers.join("\n"));
        let Value::Object(extra) = json!({ "x": 1 }) else {
            unreachable!()
        };
        assert_eq!(
            parse::<NoArguments>(&extra).unwrap_err(),
            "unknown argument `x`; it takes none"
        );
    }

    #[test]
    fn the_schema_says_what_the_type_reads() {
        expect![[r#"
            {
              "type": "object",
              "additionalProperties": false,
              "properties": {
                "target": {
                  "type": "string",
                  "description": "The target."
                },
                "limit": {
                  "type": "integer",
                  "minimum": 1,
                  "maximum": 100,
                  "description": "At most this many."
                },
                "grace": {
                  "type": "number",
                  "minimum": 0,
                  "maximum": 60,
                  "description": "Grace."
                }
              },
              "required": [
                "target"
              ]
            }"#]]
        .assert_eq(&serde_json::to_string_pretty(&input_schema::<Example>()).unwrap());
        expect![[
            r#"{"type":"object","additionalProperties":false,"properties":{},"required":[]}"#
        ]]
        .assert_eq(&input_schema::<NoArguments>().to_string());
    }
}
