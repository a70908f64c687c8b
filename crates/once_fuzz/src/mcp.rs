//! The `mcp_framing` target: the input as the lines a client sends to `once mcp`, served
//! by the real server (`once_mcp::run`, its reader and worker threads) over in-memory
//! streams, on a small workspace on disk that each run makes afresh (the editing tools
//! may write to it). The server runs without `--allow-run`, so no tool executes anything.
//!
//! Properties, from what each line is (the server's own classification,
//! `once_mcp::jsonrpc::classify`, is checked too: it must not panic):
//! - every line the server writes is one JSON value: a response object (`jsonrpc` "2.0",
//!   an `id` that is a string, a number or null, exactly one of `result` and `error`, an
//!   error with an integer `code` and a string `message`) or a non-empty array of them;
//! - each line gets at most one answer: no id is answered more often than requests with
//!   it were sent, and a request is answered exactly once unless the input cancels it;
//! - a line that is not UTF-8 or not JSON gets exactly one parse error (-32700, id null);
//!   an invalid message gets its error with its id; a notification gets no answer.
//!
//! Lines calling `once_fetch_external_source` are left out of the input: that tool opens
//! network connections, which a fuzzer must not (the tool's own tests serve HTTPS
//! locally).

use std::collections::HashMap;

use crate::output::SharedOutput;

use once_mcp::jsonrpc::{self, Message};
use serde_json::Value;

use crate::scratch;

/// The workspace each run serves.
const WORKSPACE: &[(&str, &str)] = &[
    ("once.toml", "[workspace]\n"),
    (
        "app/once.toml",
        "[[target]]\nname = \"App\"\nkind = \"sh_binary\"\nsrcs = [\"run.sh\"]\n\n\
         [[target]]\nname = \"Check\"\nkind = \"sh_test\"\nsrcs = [\"check.sh\"]\n",
    ),
    ("app/run.sh", "#!/bin/sh\necho run\n"),
    ("app/check.sh", "#!/bin/sh\nexit 0\n"),
];

/// What the input says about the answers, per id (the id's JSON text; `null` for
/// answers without one).
#[derive(Default)]
struct Expected {
    /// The most answers an id may get.
    at_most: HashMap<String, usize>,
    /// The answers an id must get.
    at_least: HashMap<String, usize>,
    /// Lines that must each get one parse error.
    parse_errors: usize,
    /// Lines that are batches: each gets at most one answer line.
    batches: usize,
    batch_elements: usize,
}

impl Expected {
    fn may(&mut self, id: &Value, count: usize) {
        *self.at_most.entry(id.to_string()).or_default() += count;
    }

    fn must(&mut self, id: &Value) {
        self.may(id, 1);
        *self.at_least.entry(id.to_string()).or_default() += 1;
    }
}

pub fn mcp_framing(data: &[u8]) {
    let lines = kept_lines(data);
    let expected = expectations(&lines);
    let input: Vec<u8> = lines.join(&b'\n');
    let root = scratch::fresh("mcp");
    for (path, contents) in WORKSPACE {
        scratch::write(&root, path, contents.as_bytes());
    }
    let output = SharedOutput::default();
    let config = once_mcp::ServerConfig {
        root,
        allow_run: false,
        threads: 1,
        store: None,
    };
    once_mcp::run(
        config,
        std::io::Cursor::new(input),
        Box::new(output.clone()),
    )
    .expect("reading from memory cannot fail");
    let written = output.0.lock().map(|o| o.clone()).unwrap_or_default();
    check_answers(&written, &expected);
}

/// The input's lines (as the server splits them: at `\n`), without the lines that call
/// the network tool.
fn kept_lines(data: &[u8]) -> Vec<&[u8]> {
    data.split(|&b| b == b'\n')
        .filter(|line| !calls_network(line))
        .collect()
}

fn calls_network(line: &[u8]) -> bool {
    // Read as the server reads it: UTF-8, trimmed of any white space.
    let Some(value) = std::str::from_utf8(line)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(text.trim()).ok())
    else {
        return false;
    };
    let calls = |value: &Value| {
        value
            .get("params")
            .and_then(|p| p.get("name"))
            .and_then(Value::as_str)
            .is_some_and(|name| name.contains("fetch"))
    };
    match &value {
        Value::Array(items) => items.iter().any(calls),
        value => calls(value),
    }
}

fn expectations(lines: &[&[u8]]) -> Expected {
    let mut expected = Expected::default();
    let mut cancelled = std::collections::HashSet::new();
    let mut requests = Vec::new();
    for line in lines {
        let Ok(text) = std::str::from_utf8(line) else {
            expected.parse_errors += 1;
            continue;
        };
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let Ok(value) = serde_json::from_str::<Value>(text) else {
            expected.parse_errors += 1;
            continue;
        };
        if let Value::Array(items) = value {
            expected.batches += 1;
            expected.batch_elements += items.len();
            // The batch's elements are answered in one array, or the batch is refused
            // with one error (id null).
            for item in items {
                if let Message::Request { id, .. } | Message::Invalid { id, .. } =
                    jsonrpc::classify(item)
                {
                    expected.may(&id, 1);
                }
            }
            expected.may(&Value::Null, 1);
            continue;
        }
        match jsonrpc::classify(value) {
            Message::Request { id, .. } => requests.push(id),
            Message::Notification { method, params } => {
                if method == "notifications/cancelled"
                    && let Some(id) = params.get("requestId")
                {
                    cancelled.insert(id.to_string());
                }
            }
            Message::Invalid { id, .. } => expected.must(&id),
        }
    }
    for id in requests {
        if cancelled.contains(&id.to_string()) {
            expected.may(&id, 1);
        } else {
            expected.must(&id);
        }
    }
    expected
}

fn check_answers(written: &[u8], expected: &Expected) {
    let text = std::str::from_utf8(written).expect("the server wrote bytes that are not UTF-8");
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "the last answer does not end its line"
    );
    let mut answered: HashMap<String, usize> = HashMap::new();
    let mut parse_errors = 0;
    let mut arrays = 0;
    let mut array_elements = 0;
    for line in text.lines() {
        let value: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("the server wrote a line that is not JSON ({e}): {line}"));
        let responses = match &value {
            Value::Array(items) => {
                assert!(!items.is_empty(), "the server wrote an empty batch answer");
                arrays += 1;
                array_elements += items.len();
                items.iter().collect()
            }
            value => vec![value],
        };
        for response in responses {
            let id = check_response(response, line);
            if response.pointer("/error/code").and_then(Value::as_i64) == Some(jsonrpc::PARSE_ERROR)
            {
                parse_errors += 1;
            }
            *answered.entry(id.to_string()).or_default() += 1;
        }
    }
    assert_eq!(
        parse_errors, expected.parse_errors,
        "lines that are not UTF-8 or not JSON get one parse error each\n{text}"
    );
    assert!(
        arrays <= expected.batches && array_elements <= expected.batch_elements,
        "{arrays} batch answers with {array_elements} elements for {} batches of {}",
        expected.batches,
        expected.batch_elements
    );
    for (id, count) in &answered {
        let most = expected.at_most.get(id).copied().unwrap_or(0)
            + if id == "null" {
                expected.parse_errors
            } else {
                0
            };
        assert!(
            *count <= most,
            "the id {id} was answered {count} times, at most {most} requests carried it\n{text}"
        );
    }
    for (id, least) in &expected.at_least {
        let count = answered.get(id).copied().unwrap_or(0);
        assert!(
            count >= *least,
            "the id {id} was answered {count} times; {least} requests with it needed an answer\n{text}"
        );
    }
}

/// Checks one response's shape; its id.
fn check_response<'v>(response: &'v Value, line: &str) -> &'v Value {
    let Value::Object(object) = response else {
        panic!("the server wrote something that is not a response object: {line}");
    };
    assert_eq!(
        object.get("jsonrpc").and_then(Value::as_str),
        Some("2.0"),
        "a response without `jsonrpc: 2.0`: {line}"
    );
    assert!(
        !object.contains_key("method"),
        "the server sent a request or notification: {line}"
    );
    let id = object
        .get("id")
        .unwrap_or_else(|| panic!("a response without an `id`: {line}"));
    assert!(
        matches!(id, Value::String(_) | Value::Number(_) | Value::Null),
        "a response id that is not a string, a number or null: {line}"
    );
    match (object.get("result"), object.get("error")) {
        (Some(_), None) => {}
        (None, Some(error)) => {
            assert!(
                error.get("code").is_some_and(Value::is_i64),
                "an error without an integer `code`: {line}"
            );
            assert!(
                error.get("message").is_some_and(Value::is_string),
                "an error without a string `message`: {line}"
            );
        }
        _ => panic!("a response needs exactly one of `result` and `error`: {line}"),
    }
    id
}
