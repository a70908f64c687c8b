//! `once query external-source` and the MCP tool `once_fetch_external_source` through the
//! real binary: every refusal happens before any connection, so no test touches the
//! network. (Successful fetches are tested in `once_fetch` against a local HTTPS server.)

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

/// Runs `once ARGS` in an empty directory; returns (exit code, stdout, stderr).
fn once(args: &[&str]) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_once"))
        .args(args)
        .current_dir(dir.path())
        .env_remove("ONCE_WORKSPACE")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

/// The refusals the CLI and the MCP tool must both give: (url, expected message part).
const REFUSALS: &[(&str, &str)] = &[
    (
        "http://example.com/rule.star",
        "`http://example.com/rule.star` uses the `http` scheme: only public `https://` addresses are fetched",
    ),
    (
        "file:///etc/passwd",
        "`file:///etc/passwd` uses the `file` scheme: only public `https://` addresses are fetched",
    ),
    (
        "https://127.0.0.1/",
        "external source address must be public: `127.0.0.1` is loopback",
    ),
    (
        "https://[::1]/",
        "external source address must be public: `::1` is loopback",
    ),
    (
        "https://10.0.0.1/",
        "external source address must be public: `10.0.0.1` is private (10.0.0.0/8)",
    ),
    (
        "https://169.254.169.254/latest/meta-data/",
        "external source address must be public: `169.254.169.254` is link-local (169.254.0.0/16)",
    ),
    (
        "https://[::ffff:127.0.0.1]/",
        "external source address must be public: `::ffff:127.0.0.1` is the IPv4-mapped form of 127.0.0.1, which is loopback",
    ),
    (
        "https://localhost/",
        "external source address must be public: `localhost` is a loopback name",
    ),
];

#[test]
fn cli_refusals_exit_2_with_the_cause_chain() {
    for (url, expected) in REFUSALS {
        let (code, stdout, stderr) = once(&["query", "external-source", url]);
        assert_eq!(code, 2, "{url}: {stderr}");
        assert_eq!(stdout, "", "{url}");
        assert_eq!(
            stderr.trim_end(),
            format!("once: error: cannot fetch external source `{url}`: {expected}"),
            "{url}"
        );
    }
}

#[test]
fn cli_json_refusals_carry_every_cause() {
    let url = "https://10.0.0.1/";
    let (code, stdout, stderr) = once(&["query", "external-source", url, "--format", "json"]);
    assert_eq!(code, 2);
    assert_eq!(stdout, "");
    let error: Value = serde_json::from_str(stderr.trim()).unwrap();
    assert_eq!(
        error["error"]["causes"],
        json!([
            format!("cannot fetch external source `{url}`"),
            "external source address must be public: `10.0.0.1` is private (10.0.0.0/8)",
        ])
    );
}

#[test]
fn cli_max_bytes_is_bounded() {
    for (bytes, message) in [
        ("0", "max_bytes must be between 1 and 1048576, got 0"),
        (
            "1048577",
            "max_bytes must be between 1 and 1048576, got 1048577",
        ),
    ] {
        let (code, _, stderr) = once(&[
            "query",
            "external-source",
            "https://example.com/",
            "--max-bytes",
            bytes,
        ]);
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.contains(message), "{stderr}");
    }
    let (code, _, stderr) = once(&[
        "query",
        "external-source",
        "https://example.com/",
        "--max-bytes",
        "lots",
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--max-bytes"), "{stderr}");
}

/// Sends each request to one `once mcp` server and returns the replies, in order.
fn mcp_session(requests: &[Value]) -> Vec<Value> {
    let workspace = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_once"))
        .arg("mcp")
        .arg("--workspace")
        .arg(workspace.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut replies = Vec::new();
    for request in requests {
        writeln!(stdin, "{request}").unwrap();
        stdin.flush().unwrap();
        if request.get("id").is_none() {
            continue;
        }
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let reply: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(reply["id"], request["id"], "{reply}");
        replies.push(reply);
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    replies
}

fn call(id: i64, arguments: Value) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": { "name": "once_fetch_external_source", "arguments": arguments },
    })
}

#[test]
fn mcp_lists_the_tool_as_read_only_and_open_world_and_refusals_are_tool_errors() {
    let mut requests = vec![
        json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": { "name": "test", "version": "1" } } }),
        json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
        json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {} }),
    ];
    for (i, (url, _)) in REFUSALS.iter().enumerate() {
        requests.push(call(10 + i as i64, json!({ "url": url })));
    }
    requests.push(call(
        100,
        json!({ "url": "https://example.com/", "max_bytes": 0 }),
    ));
    requests.push(call(
        101,
        json!({ "url": "https://example.com/", "max_bytes": 1_048_577 }),
    ));
    let replies = mcp_session(&requests);

    let tools = replies[1]["result"]["tools"].as_array().unwrap();
    let tool = tools
        .iter()
        .find(|t| t["name"] == "once_fetch_external_source")
        .expect("the tool is listed without --allow-run");
    let hints = &tool["annotations"];
    assert_eq!(hints["readOnlyHint"], true);
    assert_eq!(hints["openWorldHint"], true);
    assert_eq!(hints["destructiveHint"], false);
    let input = &tool["inputSchema"];
    assert_eq!(input["required"], json!(["url"]));
    assert_eq!(input["properties"]["url"]["type"], "string");
    assert_eq!(
        input["properties"]["max_bytes"],
        json!({
            "type": "integer",
            "minimum": 1,
            "maximum": 1_048_576,
            "default": 262_144,
            "description": "Maximum response bytes to return.",
        })
    );
    let result_schema = &tool["outputSchema"]["properties"]["result"];
    assert_eq!(
        result_schema["required"],
        json!([
            "url",
            "content_type",
            "content_digest",
            "byte_count",
            "truncated",
            "content"
        ])
    );

    for (reply, (url, expected)) in replies[2..].iter().zip(REFUSALS) {
        let result = &reply["result"];
        assert_eq!(result["isError"], true, "{url}: {reply}");
        let text = result["content"][0]["text"].as_str().unwrap();
        assert_eq!(
            text,
            format!("cannot fetch external source `{url}`: {expected}"),
            "{url}"
        );
    }
    for reply in &replies[2 + REFUSALS.len()..] {
        assert_eq!(reply["result"]["isError"], true, "{reply}");
        let text = reply["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("max_bytes"), "{text}");
    }
}
