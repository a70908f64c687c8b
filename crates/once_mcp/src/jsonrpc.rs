//! JSON-RPC 2.0 framing: classifying incoming messages and building replies.

use serde_json::{Map, Value, json};

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
/// MCP 2026-07-28: the request's protocol version is not supported.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// One incoming message, classified.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Request {
        id: Value,
        method: String,
        params: Map<String, Value>,
    },
    Notification {
        method: String,
        params: Map<String, Value>,
    },
    /// Not a valid request; answer with this error (`id` may be null).
    Invalid {
        id: Value,
        code: i64,
        message: String,
    },
}

/// Classifies one JSON value (an element of a batch, or a whole line).
pub fn classify(value: Value) -> Message {
    let Value::Object(mut object) = value else {
        return Message::Invalid {
            id: Value::Null,
            code: INVALID_REQUEST,
            message: "a JSON-RPC message must be an object".into(),
        };
    };
    let id = object.remove("id");
    let id_for_error = match &id {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Message::Invalid {
            id: id_for_error,
            code: INVALID_REQUEST,
            message: "`jsonrpc` must be \"2.0\"".into(),
        };
    }
    let Some(method) = object
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_owned)
    else {
        return Message::Invalid {
            id: id_for_error,
            code: INVALID_REQUEST,
            message: "a request needs a string `method`".into(),
        };
    };
    let params = match object.remove("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(params)) => params,
        Some(_) => {
            return Message::Invalid {
                id: id_for_error,
                code: INVALID_PARAMS,
                message: "`params` must be an object".into(),
            };
        }
    };
    match id {
        None => Message::Notification { method, params },
        Some(id @ (Value::String(_) | Value::Number(_))) => Message::Request { id, method, params },
        Some(_) => Message::Invalid {
            id: Value::Null,
            code: INVALID_REQUEST,
            message: "a request `id` must be a string or a number (MCP forbids null)".into(),
        },
    }
}

pub fn result(id: &Value, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

pub fn error(id: &Value, code: i64, message: impl Into<String>) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message.into() } })
}

pub fn error_with_data(id: &Value, code: i64, message: impl Into<String>, data: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message.into(), "data": data } })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expected: &str) {
        let value: Value = serde_json::from_str(text).unwrap();
        let actual = match classify(value) {
            Message::Request { id, method, params } => {
                format!("request {id} {method} {}", Value::Object(params))
            }
            Message::Notification { method, .. } => format!("notification {method}"),
            Message::Invalid { id, code, message } => format!("invalid {id} {code} {message}"),
        };
        assert_eq!(actual, expected);
    }

    #[test]
    fn classification() {
        check(
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            "request 1 ping {}",
        );
        check(
            r#"{"jsonrpc":"2.0","id":"a","method":"x","params":{"k":1}}"#,
            r#"request "a" x {"k":1}"#,
        );
        check(
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "notification notifications/initialized",
        );
        check(
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            "invalid null -32600 a request `id` must be a string or a number (MCP forbids null)",
        );
        check(
            r#"{"id":1,"method":"ping"}"#,
            "invalid 1 -32600 `jsonrpc` must be \"2.0\"",
        );
        check(
            r#"{"jsonrpc":"2.0","id":1}"#,
            "invalid 1 -32600 a request needs a string `method`",
        );
        check(
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}"#,
            "invalid 1 -32602 `params` must be an object",
        );
        check(
            r#"[1]"#,
            "invalid null -32600 a JSON-RPC message must be an object",
        );
    }
}
