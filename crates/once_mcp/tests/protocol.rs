//! MCP protocol tests in-process: the server (`once_mcp::run`, its reader and worker
//! threads) over an in-memory line pair, on a copy of the demo workspace. Framing, every
//! error code of the seed's table, versions, batches, limits, cancellation, a ping
//! overtaking queued work; and what every tool taking a target answers for one that
//! does not exist. What needs the real process (its exit status at EOF, a
//! startup error, its resident memory, signals) is tested through the binary in
//! `crates/once_cli/tests/mcp_protocol.rs`.

use std::io::{self, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use once_mcp::ServerConfig;
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(30);

/// A server running on threads of the test, with line-level access to its streams.
struct Server {
    input: Option<Sender<Vec<u8>>>,
    lines: Receiver<String>,
    thread: Option<JoinHandle<io::Result<()>>>,
    _workspace: tempfile::TempDir,
}

/// The server's input: the chunks the test sends, in order; the end of input when the
/// test drops its sender.
struct ChunkReader {
    chunks: Receiver<Vec<u8>>,
    chunk: Vec<u8>,
    read: usize,
}

impl Read for ChunkReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.read == self.chunk.len() {
            match self.chunks.recv() {
                Ok(chunk) => {
                    self.chunk = chunk;
                    self.read = 0;
                }
                Err(_) => return Ok(0),
            }
        }
        let n = buf.len().min(self.chunk.len() - self.read);
        buf[..n].copy_from_slice(&self.chunk[self.read..self.read + n]);
        self.read += n;
        Ok(n)
    }
}

/// The server's output, cut into lines for the test.
struct LineWriter {
    lines: Sender<String>,
    partial: Vec<u8>,
}

impl Write for LineWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.partial.extend_from_slice(buf);
        while let Some(end) = self.partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=end).collect();
            let line = String::from_utf8(line[..end].to_vec())
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            // A test that stopped listening is not the server's failure.
            let _ = self.lines.send(line);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Server {
    fn start() -> Server {
        let workspace = tempfile::tempdir().unwrap();
        copy_dir(&demo(), workspace.path());
        Server::start_in(workspace)
    }

    fn start_in(workspace: tempfile::TempDir) -> Server {
        Server::start_with(workspace, false)
    }

    /// A server on `workspace`, with the gated tools when `allow_run`.
    fn start_with(workspace: tempfile::TempDir, allow_run: bool) -> Server {
        let config = ServerConfig {
            root: workspace.path().to_path_buf(),
            allow_run,
            threads: 2,
            store: None,
        };
        let (input, chunks) = channel();
        let (sender, lines) = channel();
        let reader = BufReader::new(ChunkReader {
            chunks,
            chunk: Vec::new(),
            read: 0,
        });
        let writer = LineWriter {
            lines: sender,
            partial: Vec::new(),
        };
        let thread = std::thread::spawn(move || once_mcp::run(config, reader, Box::new(writer)));
        Server {
            input: Some(input),
            lines,
            thread: Some(thread),
            _workspace: workspace,
        }
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        self.input
            .as_ref()
            .unwrap()
            .send(bytes.to_vec())
            .expect("the server reads its input");
    }

    fn send(&mut self, message: Value) {
        self.send_raw(format!("{message}\n").as_bytes());
    }

    fn recv(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(TIMEOUT)
            .expect("the server answered in time");
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("the output carried a non-JSON line {line:?}: {e}"))
    }

    /// Sends a request and returns its reply.
    fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        let reply = self.recv();
        assert_eq!(reply["id"], json!(id), "{reply}");
        reply
    }

    fn initialize(&mut self, version: &str) -> Value {
        let reply = self.request(0, "initialize", json!({ "protocolVersion": version, "capabilities": {}, "clientInfo": { "name": "test", "version": "1" } }));
        self.send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        reply
    }

    fn call(&mut self, id: i64, tool: &str, arguments: Value) -> Value {
        self.request(
            id,
            "tools/call",
            json!({ "name": tool, "arguments": arguments }),
        )["result"]
            .clone()
    }

    /// Ends the input and checks that the server returns, without error and without
    /// writing anything more.
    fn finish(mut self) {
        drop(self.input.take());
        let thread = self.thread.take().unwrap();
        let deadline = Instant::now() + TIMEOUT;
        while !thread.is_finished() {
            assert!(
                Instant::now() < deadline,
                "the server did not end with its input"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        thread
            .join()
            .expect("the server did not panic")
            .expect("the server ends without an I/O error");
        assert_eq!(
            self.lines.try_recv().ok(),
            None,
            "a line after the last reply"
        );
    }
}

fn demo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test_data/demo")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            if entry.file_name() != ".once" {
                copy_dir(&entry.path(), &target);
            }
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn error_code(reply: &Value) -> i64 {
    reply["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("expected an error reply, got {reply}"))
}

#[test]
fn initialize_negotiates_each_version() {
    for (asked, answered) in [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
        ("1900-01-01", "2025-11-25"),
    ] {
        let mut server = Server::start();
        let reply = server.initialize(asked);
        let result = &reply["result"];
        assert_eq!(result["protocolVersion"], answered, "asked {asked}");
        assert_eq!(result["serverInfo"]["name"], "once-mcp");
        assert!(result["capabilities"]["tools"].is_object());
        let root = result["_meta"]["once/workspaceRoot"].as_str().unwrap();
        assert!(result["instructions"].as_str().unwrap().contains(root));
        // Older versions get no structured content; newer ones do.
        let listing = server.request(1, "tools/list", json!({}));
        let first = &listing["result"]["tools"][0];
        assert_eq!(
            first["outputSchema"].is_object(),
            answered >= "2025-06-18",
            "{asked}"
        );
        assert_eq!(
            first["annotations"].is_object(),
            answered >= "2025-03-26",
            "{asked}"
        );
        let call = server.call(2, "once_query_workspace", json!({}));
        assert_eq!(
            call["structuredContent"].is_object(),
            answered >= "2025-06-18"
        );
        server.finish();
    }
}

#[test]
fn only_ping_initialize_and_discover_before_the_session() {
    let mut server = Server::start();
    assert_eq!(server.request(1, "ping", json!({}))["result"], json!({}));
    let discover = server.request(2, "server/discover", json!({}));
    assert!(
        discover["result"]["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28"))
    );
    assert_eq!(
        error_code(&server.request(3, "tools/list", json!({}))),
        -32600
    );
    assert_eq!(
        error_code(&server.request(4, "tools/call", json!({ "name": "once_query_workspace" }))),
        -32600
    );
    assert_eq!(
        error_code(&server.request(5, "no/such/method", json!({}))),
        -32601
    );
    server.initialize("2025-11-25");
    assert_eq!(server.request(6, "ping", json!({}))["result"], json!({}));
    assert!(server.request(7, "tools/list", json!({}))["result"]["tools"].is_array());
    server.finish();
}

#[test]
fn error_codes_of_the_seed_table() {
    let mut server = Server::start();
    server.initialize("2025-11-25");
    // Parse error: id null, and the server keeps serving.
    server.send_raw(b"{not json\n");
    let reply = server.recv();
    assert_eq!(error_code(&reply), -32700);
    assert_eq!(reply["id"], Value::Null);
    // Unknown method.
    assert_eq!(
        error_code(&server.request(1, "logging/setLevel", json!({ "level": "info" }))),
        -32601
    );
    // Malformed tools/call params.
    assert_eq!(
        error_code(&server.request(2, "tools/call", json!({}))),
        -32602
    );
    assert_eq!(
        error_code(&server.request(
            3,
            "tools/call",
            json!({ "name": "once_query_workspace", "arguments": [1] })
        )),
        -32602
    );
    // Unknown tool, missing and extra arguments, no matching target or kind: tool errors.
    let unknown = server.call(4, "once_no_such_tool", json!({}));
    assert_eq!(unknown["isError"], true);
    assert!(
        unknown["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("unknown tool `once_no_such_tool`")
    );
    let missing = server.call(5, "once_get_target", json!({}));
    assert_eq!(missing["isError"], true);
    assert!(
        missing["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("missing required argument `target`")
    );
    let extra = server.call(6, "once_query_workspace", json!({ "verbose": true }));
    assert_eq!(extra["isError"], true);
    assert!(
        extra["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("unknown argument `verbose`")
    );
    let no_target = server.call(7, "once_get_target", json!({ "target": "nope/Nope" }));
    assert_eq!(no_target["isError"], true);
    let no_kind = server.call(8, "once_query_schema", json!({ "kind": "rust_bianry" }));
    assert!(
        no_kind["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("did you mean `rust_binary`")
    );
    // A null id is not a request.
    server.send(json!({ "jsonrpc": "2.0", "id": null, "method": "ping" }));
    assert_eq!(error_code(&server.recv()), -32600);
    server.finish();
}

#[test]
fn notifications_get_no_reply() {
    let mut server = Server::start();
    server.initialize("2025-11-25");
    server.send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
    server.send(json!({ "jsonrpc": "2.0", "method": "notifications/unknown" }));
    server.send(json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 99 } }));
    // The next line on stdout is the ping's reply: nothing answered the notifications.
    assert_eq!(server.request(1, "ping", json!({}))["result"], json!({}));
    server.finish();
}

#[test]
fn batches_only_in_a_2025_03_26_session() {
    let batch = json!([
        { "jsonrpc": "2.0", "id": 1, "method": "ping" },
        { "jsonrpc": "2.0", "id": 2, "method": "tools/list" },
        { "jsonrpc": "2.0", "method": "notifications/initialized" },
    ]);
    let mut old = Server::start();
    old.initialize("2025-03-26");
    old.send(batch.clone());
    let replies = old.recv();
    let replies = replies.as_array().expect("a batch reply is an array");
    assert_eq!(
        replies.iter().map(|r| r["id"].clone()).collect::<Vec<_>>(),
        [json!(1), json!(2)]
    );
    old.send(json!([]));
    assert_eq!(error_code(&old.recv()), -32600);
    old.finish();

    let mut new = Server::start();
    new.initialize("2025-11-25");
    new.send(batch);
    let reply = new.recv();
    assert_eq!(error_code(&reply), -32600);
    assert_eq!(reply["id"], Value::Null);
    new.finish();
}

#[test]
fn oversized_lines_and_invalid_utf8_are_refused_and_the_server_lives_on() {
    let mut server = Server::start();
    server.initialize("2025-11-25");
    let mut huge = Vec::with_capacity(17 * 1024 * 1024 + 64);
    huge.extend_from_slice(br#"{"jsonrpc":"2.0","id":5,"method":"ping","params":{"pad":""#);
    huge.resize(17 * 1024 * 1024, b'x');
    huge.extend_from_slice(b"\"}}\n");
    server.send_raw(&huge);
    let reply = server.recv();
    assert_eq!(error_code(&reply), -32600);
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("16 MiB")
    );
    server.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\",\"x\":\"\xff\xfe\"}\n");
    let reply = server.recv();
    assert_eq!(error_code(&reply), -32700);
    assert_eq!(server.request(7, "ping", json!({}))["result"], json!({}));
    server.finish();
}

#[test]
fn stateless_2026_requests_need_no_handshake() {
    let mut server = Server::start();
    let meta = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientInfo": { "name": "t", "version": "1" }, "io.modelcontextprotocol/clientCapabilities": {} });
    let listing = server.request(1, "tools/list", json!({ "_meta": meta }));
    assert_eq!(listing["result"]["resultType"], "complete");
    assert!(listing["result"]["tools"].as_array().unwrap().len() >= 11);
    let call = server.request(
        2,
        "tools/call",
        json!({ "name": "once_query_workspace", "arguments": {}, "_meta": meta }),
    );
    assert_eq!(call["result"]["resultType"], "complete");
    assert_eq!(
        call["result"]["structuredContent"]["result"]["target_count"],
        17
    );
    let unsupported = server.request(
        3,
        "tools/list",
        json!({ "_meta": { "io.modelcontextprotocol/protocolVersion": "2099-01-01" } }),
    );
    assert_eq!(error_code(&unsupported), -32022);
    server.finish();
}

#[test]
fn empty_catalogs_and_a_stable_tool_order() {
    let mut server = Server::start();
    server.initialize("2025-11-25");
    assert_eq!(
        server.request(1, "resources/list", json!({}))["result"],
        json!({ "resources": [] })
    );
    assert_eq!(
        server.request(2, "resources/templates/list", json!({}))["result"],
        json!({ "resourceTemplates": [] })
    );
    assert_eq!(
        server.request(3, "prompts/list", json!({}))["result"],
        json!({ "prompts": [] })
    );
    let first = server.request(4, "tools/list", json!({}));
    let second = server.request(5, "tools/list", json!({}));
    assert_eq!(first["result"], second["result"]);
    for tool in first["result"]["tools"].as_array().unwrap() {
        let hints = &tool["annotations"];
        for hint in [
            "readOnlyHint",
            "destructiveHint",
            "idempotentHint",
            "openWorldHint",
        ] {
            assert!(hints[hint].is_boolean(), "{} lacks {hint}", tool["name"]);
        }
        assert_eq!(tool["inputSchema"]["additionalProperties"], false);
    }
    server.finish();
}

#[test]
fn a_cancelled_request_gets_no_reply() {
    let mut server = Server::start();
    // All lines arrive while the worker is still loading the workspace, so the
    // cancellation is known before the call runs.
    server.send(json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": { "protocolVersion": "2025-11-25" } }));
    server.send(json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": { "name": "once_validate_workspace" } }));
    server.send(json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 5, "reason": "test" } }));
    server.send(json!({ "jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": { "name": "once_query_workspace" } }));
    let mut ids = Vec::new();
    while !ids.contains(&json!(6)) {
        ids.push(server.recv()["id"].clone());
    }
    assert_eq!(ids, [json!(0), json!(6)]);
    server.finish();
}

#[test]
fn ping_is_answered_while_the_worker_is_busy() {
    // A workspace large enough that loading it takes a while.
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("once.toml"), "[workspace]\n").unwrap();
    for i in 0..1500 {
        let dir = workspace.path().join(format!("p{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("once.toml"), format!("[[target]]\nname = \"T\"\nkind = \"filegroup\"\nsrcs = [\"once.toml\"]\ndeps = [{}]\n", if i > 0 { format!("\"p{}/T\"", i - 1) } else { String::new() })).unwrap();
    }
    let mut server = Server::start_in(workspace);
    server.send(json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": { "protocolVersion": "2025-11-25" } }));
    server.send(json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "once_validate_workspace" } }));
    server.send(json!({ "jsonrpc": "2.0", "id": 2, "method": "ping" }));
    let first = server.recv();
    assert_eq!(first["id"], 2, "ping overtook the queued work: {first}");
    let second = server.recv();
    assert_eq!(second["id"], 0);
    let third = server.recv();
    assert_eq!(third["id"], 1);
    assert_eq!(
        third["result"]["structuredContent"]["result"]["target_count"],
        1500
    );
    server.finish();
}

/// Every tool taking a target answers an unknown one as `once` does on the command line
/// (`once_analysis::closest_targets`): a bare name suggests the id ending in it, a Bazel
/// label the id it spells.
#[test]
fn every_tool_taking_a_target_suggests_the_target_meant() {
    let workspace = tempfile::tempdir().unwrap();
    copy_dir(&demo(), workspace.path());
    let mut server = Server::start_with(workspace, true);
    server.initialize("2025-11-25");
    // Each tool and the argument naming the target (`targets` takes a list).
    let calls = [
        ("once_get_target", "target"),
        ("once_query_capabilities", "target"),
        ("once_query_test_results", "target"),
        ("once_build_target", "target"),
        ("once_validate_actions", "target"),
        ("once_run_target", "target"),
        ("once_run_tests", "target"),
        ("once_run_tests", "targets"),
        ("once_start_target", "target"),
    ];
    let mut id = 1;
    for asked in ["TextTest", "//libs/text:TextTest", "libs/text:TextTest"] {
        for (tool, argument) in calls {
            id += 1;
            let arguments = if argument == "targets" {
                json!({ argument: [asked] })
            } else {
                json!({ argument: asked })
            };
            let reply = server.call(id, tool, arguments);
            assert_eq!(reply["isError"], true, "{tool} {asked}: {reply}");
            let text = reply["content"][0]["text"].as_str().unwrap_or_default();
            assert!(
                text.starts_with(&format!(
                    "no target `{asked}` in the workspace; did you mean `libs/text/TextTest`"
                )),
                "{tool} {asked}: {text}"
            );
        }
    }
    // A short name and a short label: no edit distance would find them.
    for (asked, meant) in [
        ("Text", "libs/text/Text"),
        ("//tools:Banner", "tools/Banner"),
    ] {
        id += 1;
        let reply = server.call(id, "once_get_target", json!({ "target": asked }));
        let text = reply["content"][0]["text"].as_str().unwrap_or_default();
        assert!(
            text.starts_with(&format!(
                "no target `{asked}` in the workspace; did you mean `{meant}`"
            )),
            "{asked}: {text}"
        );
    }
    server.finish();
}

/// `once_query_test_results` with `summary_only`: the record without its cases
/// (`once.test_results_summary.v1`, what `once query test-results --summary-only` prints),
/// each answer valid against the advertised output schema; the input schema keeps the
/// seed's `target` and adds the optional boolean.
#[test]
fn test_results_summary_only_leaves_out_the_cases() {
    let workspace = tempfile::tempdir().unwrap();
    copy_dir(&demo(), workspace.path());
    // A libtest run of 600 cases, one failing, as `once test` leaves it.
    let mut output = String::new();
    for i in 0..600 {
        let verdict = if i == 7 { "FAILED" } else { "ok" };
        output.push_str(&format!("test cases::case_{i:03} ... {verdict}\n"));
    }
    let results = once_test_results::assemble(
        "libs/text/TextTest",
        once_test_results::Runner::named("libtest"),
        once_test_results::NativeFormat::Libtest.parse(&output),
        &once_test_results::Outcome {
            exit_code: Some(101),
            timed_out: false,
            log: ".once/out/libs/text/TextTest/test/log.txt".to_owned(),
            cwd: "libs/text".to_owned(),
            allow_no_cases: false,
        },
        once_test_results::Artifacts::default(),
        "/nowhere",
    );
    let path = workspace
        .path()
        .join(".once/out/libs/text/TextTest/test/test_results.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, serde_json::to_vec(&results).unwrap()).unwrap();

    let mut server = Server::start_in(workspace);
    server.initialize("2025-11-25");
    let tools = server.request(1, "tools/list", json!({}));
    let tool = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "once_query_test_results")
        .expect("once_query_test_results is listed")
        .clone();
    assert_eq!(
        tool["inputSchema"],
        json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "target": {
                    "type": "string",
                    "description": "Canonical target id, such as `tests/unit`."
                },
                "summary_only": {
                    "type": "boolean",
                    "description": "Return only the status, summary counts and artifacts (`once.test_results_summary.v1`), without the per-case results.",
                    "default": false
                }
            },
            "required": ["target"]
        })
    );

    let answer = |server: &mut Server, id: i64, arguments: Value| {
        let reply = server.call(id, "once_query_test_results", arguments);
        assert_eq!(reply["isError"], false, "{reply}");
        let structured = reply["structuredContent"].clone();
        assert_eq!(
            once_mcp::schema::validate(&tool["outputSchema"], &structured),
            Vec::<String>::new(),
            "{structured}"
        );
        assert_eq!(
            serde_json::from_str::<Value>(reply["content"][0]["text"].as_str().unwrap()).unwrap(),
            structured
        );
        structured["result"].clone()
    };
    let full = answer(&mut server, 2, json!({ "target": "libs/text/TextTest" }));
    assert_eq!(full["schema"], "once.test_results.v1");
    assert_eq!(full["cases"].as_array().unwrap().len(), 600);
    assert_eq!(
        answer(
            &mut server,
            3,
            json!({ "target": "libs/text/TextTest", "summary_only": false })
        ),
        full
    );

    let summary = answer(
        &mut server,
        4,
        json!({ "target": "libs/text/TextTest", "summary_only": true }),
    );
    assert_eq!(
        summary,
        json!({
            "schema": "once.test_results_summary.v1",
            "source_schema": "once.test_results.v1",
            "target": "libs/text/TextTest",
            "runner": full["runner"],
            "status": "failed",
            "summary": { "total": 600, "passed": 599, "failed": 1, "skipped": 0, "flaky": 0 },
            "artifacts": full["artifacts"],
        })
    );
    assert!(summary.to_string().len() < 1000, "{summary}");

    // A summary of a target without results is the same tool error as the record's.
    let not_run = server.call(
        5,
        "once_query_test_results",
        json!({ "target": "libs/greeting/GreetingTest", "summary_only": true }),
    );
    assert_eq!(not_run["isError"], true, "{not_run}");
    assert!(
        not_run["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("run `once test libs/greeting/GreetingTest`"),
        "{not_run}"
    );
    let bad = server.call(
        6,
        "once_query_test_results",
        json!({ "target": "libs/text/TextTest", "summary_only": "yes" }),
    );
    assert_eq!(bad["isError"], true, "{bad}");
    server.finish();
}
