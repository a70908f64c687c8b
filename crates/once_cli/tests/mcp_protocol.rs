//! Tests of `once mcp` through the real binary's stdin/stdout: what needs the process
//! (its exit status at EOF, a startup error, its resident memory under hostile input,
//! the gated tools with real builds, a warm server following edits on disk). The
//! protocol itself (framing, the seed's error codes, versions, batches, limits,
//! cancellation) is tested in-process in `crates/once_mcp/tests/protocol.rs`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

#[path = "support/processes.rs"]
mod processes;
use processes::{ps_lists, wait_for_processes};

use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(30);

/// A running server with line-level access to its streams.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    _workspace: tempfile::TempDir,
}

impl Server {
    fn start(args: &[&str]) -> Server {
        let workspace = tempfile::tempdir().unwrap();
        copy_dir(&demo(), workspace.path());
        Server::start_in(workspace, args)
    }

    fn start_in(workspace: tempfile::TempDir, args: &[&str]) -> Server {
        Server::start_configured(workspace, args, |_| {})
    }

    /// A server in `workspace` whose command `configure` adjusts first (its environment).
    fn start_configured(
        workspace: tempfile::TempDir,
        args: &[&str],
        configure: impl FnOnce(&mut Command),
    ) -> Server {
        let mut command = Command::new(env!("CARGO_BIN_EXE_once"));
        command
            .arg("mcp")
            .arg("--workspace")
            .arg(workspace.path())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        configure(&mut command);
        let mut child = command.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Server {
            child,
            stdin,
            lines,
            _workspace: workspace,
        }
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
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
            .unwrap_or_else(|e| panic!("stdout carried a non-JSON line {line:?}: {e}"))
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

    /// Closes stdin and waits for the exit status.
    fn finish(mut self) -> i32 {
        drop(self.stdin.take());
        for _ in 0..300 {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code().unwrap_or(-1);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        panic!("the server did not exit after EOF");
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
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn a_cancellation_before_its_request_is_ignored_and_nothing_is_kept() {
    let mut server = Server::start(&[]);
    server.initialize("2025-11-25");
    // The client cancels an id it has not used yet, then sends a request with that id:
    // the cancellation named no pending request, so the request is answered.
    server.send(json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 7 } }));
    let reply = server.call(7, "once_query_workspace", json!({}));
    assert_eq!(reply["isError"], false, "{reply}");
    // Cancellations of unknown requests with huge ids are not kept.
    let before = resident_bytes(&server);
    let huge = "x".repeat(1 << 20);
    for i in 0..200 {
        server.send(json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": format!("{i}{huge}") } }));
    }
    let reply = server.request(8, "ping", json!({}));
    assert_eq!(reply["result"], json!({}));
    let grown = resident_bytes(&server).saturating_sub(before);
    assert!(
        grown < 100 << 20,
        "200 cancellations of unknown 1 MiB ids grew the server by {} MiB",
        grown >> 20
    );
    assert_eq!(server.finish(), 0);
}

#[test]
fn a_directory_swapped_with_a_link_thousands_of_times_leaves_calls_prompt() {
    // `libs/pkg` trades places with a link to a large tree outside the workspace, with no call
    // in between; the next call then answers promptly and the server stays small.
    let base = tempfile::tempdir().unwrap();
    let outside = base.path().join("outside");
    for i in 0..2000 {
        std::fs::create_dir_all(outside.join(format!("d{i}"))).unwrap();
    }
    let workspace = tempfile::tempdir().unwrap();
    copy_dir(&demo(), workspace.path());
    let root = workspace.path().to_path_buf();
    std::fs::create_dir_all(root.join("libs/pkg/src")).unwrap();
    std::fs::write(root.join("libs/pkg/src/a.txt"), "a").unwrap();
    std::fs::write(
        root.join("libs/pkg/once.toml"),
        "[[target]]\nname = \"P\"\nkind = \"filegroup\"\nsrcs = [\"src/a.txt\"]\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(&outside, root.join("libs/link")).unwrap();
    let mut server = Server::start_in(workspace, &[]);
    server.initialize("2025-11-25");
    let reply = server.call(1, "once_query_targets", json!({}));
    assert!(reply.to_string().contains("libs/pkg/P"), "{reply}");
    let before = resident_bytes(&server);

    let libs = root.join("libs");
    let (pkg, link, swap) = (libs.join("pkg"), libs.join("link"), libs.join("swap"));
    let until = std::time::Instant::now() + Duration::from_secs(3);
    let mut swaps = 0;
    while std::time::Instant::now() < until {
        for (from, to) in [(&pkg, &swap), (&link, &pkg), (&swap, &link)] {
            std::fs::rename(from, to).unwrap();
        }
        swaps += 1;
    }
    // Back to `pkg` being the directory (an even number of swaps).
    if swaps % 2 == 1 {
        for (from, to) in [(&pkg, &swap), (&link, &pkg), (&swap, &link)] {
            std::fs::rename(from, to).unwrap();
        }
    }
    let started = std::time::Instant::now();
    let reply = server.call(2, "once_query_targets", json!({}));
    let took = started.elapsed();
    assert_eq!(reply["isError"], false, "{reply}");
    assert!(
        reply.to_string().contains("libs/pkg/P"),
        "the package is back: {reply}"
    );
    assert!(
        took < Duration::from_secs(10),
        "the call after {swaps} swaps took {took:?}"
    );
    let grown = resident_bytes(&server).saturating_sub(before);
    assert!(
        grown < 200 << 20,
        "{swaps} swaps grew the server by {} MiB",
        grown >> 20
    );
    assert_eq!(server.finish(), 0);
}

/// The server's resident set size, from `/proc`.
fn resident_bytes(server: &Server) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.child.id()))
        .expect("the test runs on Linux");
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().strip_suffix("kB"))
        .and_then(|n| n.trim().parse().ok())
        .expect("VmRSS in /proc/PID/status");
    kib * 1024
}

#[test]
fn a_missing_workspace_is_a_startup_error() {
    let output = Command::new(env!("CARGO_BIN_EXE_once"))
        .args(["mcp", "--workspace", "/nonexistent/once-mcp-workspace"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("/nonexistent/once-mcp-workspace` (from --workspace)"),
        "{stderr}"
    );
}

#[test]
fn eof_exits_zero() {
    let server = Server::start(&[]);
    assert_eq!(server.finish(), 0);
}

#[test]
fn answers_stay_bounded_on_a_10k_target_workspace() {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("once.toml"), "[workspace]\n").unwrap();
    for p in 0..1000 {
        let dir = workspace.path().join(format!("pkgs/p{p}"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut manifest = String::new();
        for t in 0..10 {
            let kind = if t % 2 == 0 { "filegroup" } else { "sh_test" };
            let srcs = if kind == "sh_test" {
                "\"t.sh\""
            } else {
                "\"data.txt\""
            };
            manifest.push_str(&format!("[[target]]\nname = \"T{t}\"\nkind = \"{kind}\"\nsrcs = [{srcs}]\ndeps = [\"nowhere/Missing{t}\"]\n\n"));
        }
        std::fs::write(dir.join("once.toml"), manifest).unwrap();
        std::fs::write(dir.join("data.txt"), "x\n").unwrap();
        std::fs::write(dir.join("t.sh"), "true\n").unwrap();
    }
    let mut server = Server::start_in(workspace, &[]);
    server.initialize("2025-11-25");
    // Claude Code refuses results over 25,000 tokens (~100,000 characters).
    let limit = 100_000;
    for (id, tool) in [
        "once_query_targets",
        "once_query_tests",
        "once_query_affected_tests",
        "once_validate_workspace",
        "once_list_target_kinds",
    ]
    .iter()
    .enumerate()
    {
        let result = server.call(id as i64 + 1, tool, json!({}));
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(
            text.len() < limit,
            "{tool} answered {} characters",
            text.len()
        );
        if *tool != "once_list_target_kinds" {
            assert!(
                result["structuredContent"]["next_cursor"].is_string(),
                "{tool} should have been paged"
            );
        }
    }
    let validation = server.call(10, "once_validate_workspace", json!({}));
    assert_eq!(
        validation["structuredContent"]["result"]["target_count"],
        10_000
    );
    assert_eq!(validation["structuredContent"]["result"]["valid"], false);
    assert_eq!(server.finish(), 0);
}

const GATED: [&str; 5] = [
    "once_apply_edit",
    "once_materialize_example",
    "once_build_target",
    "once_run_target",
    "once_exec_script",
];

fn tool_names(server: &mut Server, id: i64) -> Vec<String> {
    server.request(id, "tools/list", json!({}))["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_gated_tool_without_allow_run_is_a_tool_error_saying_how_to_enable_it_and_is_not_listed() {
    let mut server = Server::start(&[]);
    server.initialize("2025-11-25");
    let names = tool_names(&mut server, 1);
    for gated in GATED {
        assert!(!names.iter().any(|n| n == gated), "{gated} is listed");
    }
    let result = server.call(
        2,
        "once_materialize_example",
        json!({ "kind": "filegroup", "slug": "filegroup-minimal", "destination": "x" }),
    );
    assert_eq!(result["isError"], json!(true), "{result}");
    let message = result["content"][0]["text"].as_str().unwrap();
    assert!(message.contains("once mcp --allow-run"), "{message}");
    let result = server.call(
        3,
        "once_apply_edit",
        json!({ "package": "", "operations": [] }),
    );
    assert_eq!(result["isError"], json!(true), "{result}");
    assert_eq!(server.finish(), 0);
}

#[test]
fn with_allow_run_gated_tools_are_listed_and_write_what_the_next_call_sees() {
    let mut server = Server::start(&["--allow-run"]);
    server.initialize("2025-11-25");
    let tools = server.request(1, "tools/list", json!({}))["result"]["tools"].clone();
    for gated in GATED {
        let tool = tools
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == gated)
            .expect(gated);
        assert_eq!(tool["annotations"]["readOnlyHint"], json!(false));
    }
    let edit = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "once_apply_edit")
        .unwrap();
    assert_eq!(edit["annotations"]["destructiveHint"], json!(true));
    assert_eq!(edit["annotations"]["idempotentHint"], json!(false));
    let result = server.call(2, "once_apply_edit", json!({
        "package": "data",
        "operations": [{ "op": "create", "target": { "name": "Extra", "kind": "filegroup", "srcs": ["messages/*.txt"] } }],
    }));
    assert_eq!(result["isError"], json!(false), "{result}");
    assert_eq!(
        result["structuredContent"]["result"],
        json!({ "applied": true, "changed": true, "path": "data/once.toml" })
    );
    let target = server.call(3, "once_get_target", json!({ "target": "data/Extra" }));
    assert_eq!(
        target["isError"],
        json!(false),
        "the next call sees the edit: {target}"
    );
    let rejected = server.call(
        4,
        "once_apply_edit",
        json!({
            "package": "data",
            "operations": [{ "op": "delete", "target_name": "Nope" }],
        }),
    );
    assert_eq!(
        rejected["structuredContent"]["result"]["applied"],
        json!(false)
    );
    assert_eq!(
        rejected["structuredContent"]["result"]["failed_operation"],
        json!(0)
    );
    let outside = server.call(
        5,
        "once_apply_edit",
        json!({ "package": "../x", "operations": [] }),
    );
    assert_eq!(outside["isError"], json!(true));
    assert_eq!(server.finish(), 0);
}

/// A warm server follows module edits: break a loaded module, see the located error and
/// the targets missing its kinds; fix it, valid again. `once_validate_module` agrees.
#[test]
fn a_warm_server_follows_project_module_edits() {
    let workspace = tempfile::tempdir().unwrap();
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test_data/workspaces/project_modules");
    copy_dir(&fixture, workspace.path());
    let base_path = workspace.path().join("modules/base.star");
    let base = std::fs::read_to_string(&base_path).unwrap();
    let mut server = Server::start_in(workspace, &[]);
    server.initialize("2025-11-25");
    let valid = server.call(1, "once_validate_workspace", json!({}));
    assert_eq!(
        valid["structuredContent"]["result"]["valid"],
        json!(true),
        "{valid}"
    );

    std::fs::write(
        &base_path,
        base.replace("attr.string_list(", "attr.string_lst("),
    )
    .unwrap();
    let broken = server.call(2, "once_validate_workspace", json!({}));
    let result = &broken["structuredContent"]["result"];
    assert_eq!(result["valid"], json!(false), "{broken}");
    let diagnostics = result["diagnostics"].as_array().unwrap();
    let located = diagnostics
        .iter()
        .find(|d| d["code"] == "invalid_module" && d["file"] == "modules/base.star")
        .expect("the module error");
    assert_eq!(located["range"]["start"]["line"], json!(4));
    assert!(
        diagnostics
            .iter()
            .any(|d| d["code"] == "unknown_target_kind" && d["target"] == "app/Greeting"),
        "{broken}"
    );
    let module = server.call(
        3,
        "once_validate_module",
        json!({ "path": "modules/app.star" }),
    );
    assert_eq!(
        module["structuredContent"]["result"]["valid"],
        json!(false),
        "{module}"
    );

    std::fs::write(&base_path, &base).unwrap();
    let fixed = server.call(4, "once_validate_workspace", json!({}));
    assert_eq!(
        fixed["structuredContent"]["result"]["valid"],
        json!(true),
        "{fixed}"
    );
    let module = server.call(
        5,
        "once_validate_module",
        json!({ "path": "modules/app.star" }),
    );
    assert_eq!(
        module["structuredContent"]["result"]["valid"],
        json!(true),
        "{module}"
    );
    let contract = server.call(6, "once_query_module_contract", json!({}));
    assert_eq!(
        contract["structuredContent"]["result"]["language"],
        json!("Starlark")
    );
    assert_eq!(server.finish(), 0);
}

#[test]
fn materializing_outside_the_workspace_include_says_so() {
    let mut server = Server::start(&["--allow-run"]);
    server.initialize("2025-11-25");
    let result = server.call(
        1,
        "once_materialize_example",
        json!({ "kind": "filegroup", "slug": "filegroup-minimal", "destination": "extra" }),
    );
    let answer = &result["structuredContent"]["result"];
    assert_eq!(answer["materialized"], json!(true), "{result}");
    assert_eq!(answer["targets"], json!([]));
    assert_eq!(
        answer["warnings"],
        json!([
            "the package `extra/fixtures` is outside `[workspace] include` (`apps/*`, `libs/*`, `data`, `tools`, `tools/*`), so its files are written but its targets are not part of the workspace; change `[workspace]` in the root `once.toml` to add it"
        ])
    );
    let inside = server.call(
        2,
        "once_materialize_example",
        json!({ "kind": "filegroup", "slug": "filegroup-minimal", "destination": "libs" }),
    );
    assert_eq!(inside["structuredContent"]["result"]["warnings"], json!([]));
    assert_eq!(server.finish(), 0);
}

/// Changed paths are normalised (`./`, `//`, `x/..`, absolute inside the workspace); the
/// ones outside the workspace are `warnings` beside `result` instead of a silent "none".
#[test]
fn affected_tests_normalise_paths_and_warn_about_the_rest() {
    let mut server = Server::start(&[]);
    server.initialize("2025-11-25");
    let absolute = server._workspace.path().join("libs/text/src/lib.rs");
    let spellings = [
        "libs/text/src/lib.rs".to_owned(),
        "libs/text/./src/lib.rs".to_owned(),
        "libs//text/src/lib.rs".to_owned(),
        "libs/x/../text/src/lib.rs".to_owned(),
        absolute.to_string_lossy().into_owned(),
    ];
    let mut answers = Vec::new();
    for (id, path) in spellings.iter().enumerate() {
        let result = server.call(
            id as i64 + 1,
            "once_query_affected_tests",
            json!({ "changed_paths": [path] }),
        );
        assert_eq!(result["isError"], false, "{path}: {result}");
        assert_eq!(result["structuredContent"]["warnings"], json!([]), "{path}");
        answers.push(result["structuredContent"]["result"].clone());
    }
    assert_eq!(answers[0].as_array().map(Vec::len), Some(4));
    assert!(answers.iter().all(|a| *a == answers[0]), "{answers:?}");

    let result = server.call(
        10,
        "once_query_affected_tests",
        json!({ "changed_paths": ["/etc/passwd", "../elsewhere/lib.rs"] }),
    );
    let content = &result["structuredContent"];
    assert_eq!(content["result"], json!([]));
    let warnings = content["warnings"].as_array().expect("warnings are a list");
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0]
            .as_str()
            .is_some_and(|w| w.starts_with("`/etc/passwd` is outside the workspace")),
        "{warnings:?}"
    );
    assert!(
        warnings[1]
            .as_str()
            .is_some_and(|w| w.starts_with("`../elsewhere/lib.rs` is outside the workspace")),
        "{warnings:?}"
    );
    assert_eq!(server.finish(), 0);
}

/// A diagnostic that knows its fix carries it in `fixes` (line/column edits of its file,
/// one preferred), and the answer still matches the tool's output schema.
#[test]
fn validate_workspace_diagnostics_carry_fixes() {
    let workspace = tempfile::tempdir().unwrap();
    copy_dir(
        &demo().join("../workspaces/unknown_target_kind"),
        workspace.path(),
    );
    let mut server = Server::start_in(workspace, &[]);
    server.initialize("2025-06-18");
    let tools = server.request(1, "tools/list", json!({}));
    let tool = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "once_validate_workspace")
        .unwrap()
        .clone();
    let result = server.call(2, "once_validate_workspace", json!({}));
    let structured = &result["structuredContent"];
    assert_eq!(
        once_mcp::schema::validate(&tool["outputSchema"], structured),
        Vec::<String>::new()
    );
    let diagnostic = &structured["result"]["diagnostics"][0];
    assert_eq!(diagnostic["code"], "unknown_target_kind");
    assert_eq!(
        diagnostic["fixes"],
        json!([{
            "title": "Use kind `rust_binary`",
            "preferred": true,
            "edits": [{
                "range": { "start": { "line": 3, "column": 8 }, "end": { "line": 3, "column": 21 } },
                "new_text": "\"rust_binary\"",
            }],
        }])
    );
    assert_eq!(server.finish(), 0);
}

/// A module that never finishes, one that exhausts memory inside one statement and a FIFO
/// named as a module: each validation is answered (invalid), and so is the next request.
#[cfg(unix)]
#[test]
fn runaway_modules_and_fifos_do_not_stop_the_server() {
    let workspace = tempfile::tempdir().unwrap();
    let root = workspace.path();
    std::fs::create_dir_all(root.join("modules")).unwrap();
    std::fs::create_dir_all(root.join("app")).unwrap();
    std::fs::write(
        root.join("once.toml"),
        "[workspace]\n\n[modules]\npaths = [\"modules/*.star\"]\n",
    )
    .unwrap();
    std::fs::write(
        root.join("app/once.toml"),
        "[[target]]\nname = \"Files\"\nkind = \"filegroup\"\nsrcs = []\n",
    )
    .unwrap();
    std::fs::write(
        root.join("modules/compare.star"),
        "x = []\ny = []\nfor i in range(40):\n    x = [x, x]\n    y = [y, y]\nz = (x == y)\n",
    )
    .unwrap();
    std::fs::write(
        root.join("modules/repeat.star"),
        "n = 2000000000\nl = [0] * n\n",
    )
    .unwrap();
    let made = Command::new("mkfifo")
        .arg(root.join("modules/fifo.star"))
        .status()
        .unwrap();
    assert!(made.success());
    let mut server = Server::start_in(workspace, &[]);
    server.initialize("2025-11-25");
    for (id, path) in [
        (1, "modules/compare.star"),
        (2, "modules/repeat.star"),
        (3, "modules/fifo.star"),
    ] {
        let reply = server.call(id, "once_validate_module", json!({ "path": path }));
        assert_eq!(
            reply["structuredContent"]["result"]["valid"],
            json!(false),
            "{reply}"
        );
    }
    let targets = server.call(4, "once_query_targets", json!({}));
    assert!(targets.to_string().contains("app/Files"), "{targets}");
    assert_eq!(server.finish(), 0);
}

/// `once_query_evidence`: always listed, read-only, the seed's arguments; no database is
/// an empty list; records written by the execution layer come back newest first, filtered,
/// in the advertised output schema; a limit outside 1 to 100 is a tool error.
#[test]
fn evidence_is_listed_read_only_and_answers_newest_first() {
    use once_evidence::{
        ActionEvidence, CacheOutcome, EvidenceRecord, EvidenceStatus, EvidenceStore, Sha256Digest,
        Subject,
    };
    let mut server = Server::start(&[]);
    server.initialize("2025-06-18");
    let tools = server.request(1, "tools/list", json!({}));
    let tool = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "once_query_evidence")
        .expect("once_query_evidence is listed without --allow-run")
        .clone();
    assert_eq!(tool["annotations"]["readOnlyHint"], true);
    assert_eq!(
        tool["inputSchema"]["properties"],
        json!({
            "limit": {
                "default": 5,
                "description": "Maximum number of newest matching records to return.",
                "maximum": 100,
                "minimum": 1,
                "type": "integer"
            },
            "subject": {
                "description": "Optional subject id or subject-capability pair, such as `cli` or `cli:test`.",
                "type": "string"
            }
        })
    );
    assert_eq!(tool["inputSchema"]["required"], json!([]));

    let empty = server.call(2, "once_query_evidence", json!({}));
    assert_eq!(empty["isError"], false, "{empty}");
    assert_eq!(empty["structuredContent"]["result"], json!([]));

    let record = |capability: &str, n: u64| {
        EvidenceRecord::new(
            ActionEvidence {
                subject: Subject::Target {
                    id: "cli".into(),
                    capability: capability.into(),
                },
                action: Some(format!("cli#{capability}/{n}")),
                status: EvidenceStatus::Passed,
                action_digest: Sha256Digest::of(&n.to_le_bytes()),
                input_digest: None,
                cache: CacheOutcome::Hit,
                exit_code: Some(0),
                stdout: None,
                stderr: None,
            },
            1_000 + n,
        )
    };
    let records: Vec<EvidenceRecord> = (0..8)
        .map(|n| record(if n % 2 == 0 { "build" } else { "test" }, n))
        .collect();
    EvidenceStore::open(server._workspace.path())
        .unwrap()
        .record_all(&records)
        .unwrap();

    let newest = server.call(3, "once_query_evidence", json!({}));
    let structured = &newest["structuredContent"];
    assert_eq!(
        once_mcp::schema::validate(&tool["outputSchema"], structured),
        Vec::<String>::new()
    );
    let actions = |result: &Value| -> Vec<String> {
        result["structuredContent"]["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["action"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        actions(&newest),
        [
            "cli#test/7",
            "cli#build/6",
            "cli#test/5",
            "cli#build/4",
            "cli#test/3"
        ]
    );
    assert_eq!(
        structured["result"][0],
        json!({
            "schema": "once.evidence.v1",
            "id": records[7].id.to_hex(),
            "kind": "action_result",
            "subject": { "kind": "target", "id": "cli", "capability": "test" },
            "action": "cli#test/7",
            "status": "passed",
            "action_digest": records[7].evidence.action_digest.to_hex(),
            "cache": "hit",
            "exit_code": 0,
            "created_at_unix_ms": 1007,
        })
    );
    let filtered = server.call(
        4,
        "once_query_evidence",
        json!({ "subject": "cli:build", "limit": 2 }),
    );
    assert_eq!(actions(&filtered), ["cli#build/6", "cli#build/4"]);
    let all = server.call(
        5,
        "once_query_evidence",
        json!({ "subject": "cli", "limit": 100 }),
    );
    assert_eq!(actions(&all).len(), 8);

    for (id, limit) in [(6, 0), (7, 101)] {
        let refused = server.call(id, "once_query_evidence", json!({ "limit": limit }));
        assert_eq!(refused["isError"], true, "{refused}");
        let message = refused["content"][0]["text"].as_str().unwrap();
        assert!(message.starts_with("Input validation error"), "{message}");
    }

    // A database that cannot be read is a tool error (the request itself was valid). A
    // write-ahead log left by a connection still open would hold the last commits: it
    // goes too.
    let state = server._workspace.path().join(".once");
    for log in ["once.sqlite-wal", "once.sqlite-shm"] {
        let _ = std::fs::remove_file(state.join(log));
    }
    std::fs::write(
        state.join("once.sqlite"),
        "not a database, just text long enough to be read",
    )
    .unwrap();
    let unreadable = server.request(
        8,
        "tools/call",
        json!({ "name": "once_query_evidence", "arguments": {} }),
    );
    assert!(unreadable.get("error").is_none(), "{unreadable}");
    assert_eq!(unreadable["result"]["isError"], true, "{unreadable}");
    let message = unreadable["result"]["content"][0]["text"].as_str().unwrap();
    assert!(message.contains("file is not a database"), "{message}");
    assert_eq!(server.finish(), 0);
}

// ---------------------------------------------------------------------------------------
// Executing tools: once_build_target, once_run_target

/// A workspace with a quick generator, a `sleep 600` command, a script and a failure.
fn execution_workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        (
            "once.toml",
            "[workspace]\ninclude = [\"gen\", \"slow\", \"tools\", \"broken\"]\n",
        ),
        (
            "gen/once.toml",
            "[[target]]\nname = \"Gen\"\nkind = \"command\"\nsrcs = [\"in.txt\"]\n\n[target.attrs]\ncmd = \"cp in.txt \\\"$OUT/out.txt\\\"\"\noutputs = [\"out.txt\"]\n",
        ),
        ("gen/in.txt", "hello\n"),
        (
            "slow/once.toml",
            "[[target]]\nname = \"Slow\"\nkind = \"command\"\n\n[target.attrs]\ncmd = \"sleep 600\"\noutputs = [\"never.txt\"]\n",
        ),
        (
            "tools/once.toml",
            "[[target]]\nname = \"Hello\"\nkind = \"script\"\nsrcs = [\"hello.sh\"]\n\n[target.attrs]\nscript_path = \"hello.sh\"\nscript_runtime = \"sh\"\nargs = [\"agent\"]\n",
        ),
        ("tools/hello.sh", "echo \"hello $1\"\necho warned >&2\n"),
        (
            "broken/once.toml",
            "[[target]]\nname = \"Broken\"\nkind = \"command\"\n\n[target.attrs]\ncmd = \"echo no >&2; exit 4\"\noutputs = [\"x\"]\n",
        ),
    ];
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

/// Messages until the reply with `id`: the notifications before it, and the reply.
fn until_reply(server: &Server, id: i64) -> (Vec<Value>, Value) {
    let mut before = Vec::new();
    loop {
        let message = server.recv();
        if message["id"] == json!(id) {
            return (before, message);
        }
        before.push(message);
    }
}

#[test]
fn builds_report_progress_hit_the_cache_and_fail_as_normal_results() {
    let mut server = Server::start_in(execution_workspace(), &["--allow-run"]);
    server.initialize("2025-11-25");
    let tools = server.request(1, "tools/list", json!({}))["result"]["tools"].clone();
    let build = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "once_build_target")
        .unwrap()
        .clone();
    assert_eq!(build["annotations"]["readOnlyHint"], json!(false));
    let schema = &build["outputSchema"]["properties"]["result"];
    assert_eq!(schema["required"].as_array().unwrap().len(), 9, "{schema}");

    server.send(
        json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "once_build_target", "arguments": { "target": "gen/Gen" },
        "_meta": { "progressToken": "p-2" } } }),
    );
    let (notes, reply) = until_reply(&server, 2);
    let progress: Vec<&Value> = notes
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 1, "{notes:?}");
    assert_eq!(progress[0]["params"]["progressToken"], "p-2");
    assert_eq!(progress[0]["params"]["progress"], 1);
    assert_eq!(progress[0]["params"]["total"], 1);
    assert_eq!(progress[0]["params"]["message"], "miss gen/Gen#build/cmd");
    let result = &reply["result"]["structuredContent"]["result"];
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    assert_eq!(result["success"], true, "{result}");
    assert_eq!(result["exit_code"], 0);
    assert_eq!(result["record"]["cache"], "miss");
    assert_eq!(
        result["record"]["outputs"],
        json!([".once/out/gen/Gen/out/out.txt"])
    );
    let again = server.call(3, "once_build_target", json!({ "target": "gen/Gen" }));
    assert_eq!(
        again["structuredContent"]["result"]["record"]["cache"],
        "hit"
    );

    let failed = server.call(4, "once_build_target", json!({ "target": "broken/Broken" }));
    assert_eq!(failed["isError"], false, "{failed}");
    let result = &failed["structuredContent"]["result"];
    assert_eq!(result["success"], false);
    assert_eq!(result["exit_code"], 1);
    assert_eq!(result["record"]["status"], "failed");
    assert_eq!(result["record"]["failure"]["exit_code"], 4);
    assert_eq!(result["stderr"], "no\n");

    let unknown = server.call(5, "once_build_target", json!({ "target": "gen/Gne" }));
    assert_eq!(unknown["isError"], true);
    assert!(
        unknown["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("gen/Gen"),
        "{unknown}"
    );

    let ran = server.call(6, "once_run_target", json!({ "target": "tools/Hello" }));
    // Every answer matches the advertised output schema (the same for both tools).
    for answer in [&reply["result"], &again, &failed, &ran] {
        assert_eq!(
            once_mcp::schema::validate(&build["outputSchema"], &answer["structuredContent"]),
            Vec::<String>::new(),
            "{answer}"
        );
    }
    let result = &ran["structuredContent"]["result"];
    assert_eq!(result["success"], true, "{ran}");
    assert_eq!(result["capability"], "run");
    assert_eq!(result["record"]["cache"], "bypass");
    assert_eq!(result["stdout"], "hello agent\n");
    assert_eq!(result["stderr"], "warned\n");
    assert_eq!(server.finish(), 0);
}

/// A server with `--allow-run` whose request `id` builds `slow/Slow` (a `sleep 600`),
/// and the live processes of that build once it runs.
fn start_slow_build(id: i64) -> (Server, Vec<u32>) {
    let workspace = execution_workspace();
    let slow = workspace.path().join("slow");
    let mut server = Server::start_in(workspace, &["--allow-run"]);
    server.initialize("2025-11-25");
    server.send(
        json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "once_build_target", "arguments": { "target": "slow/Slow" },
        "_meta": { "progressToken": format!("slow-{id}") } } }),
    );
    let pids = wait_for_processes(&slow);
    (server, pids)
}

#[test]
fn a_running_build_leaves_the_server_answering_and_cancelling_it_kills_its_processes() {
    let (mut server, pids) = start_slow_build(10);
    assert!(pids.iter().all(|&pid| ps_lists(pid)), "{pids:?}");
    // The worker is free: ping, a read-only tool and another build answer meanwhile.
    assert_eq!(server.request(11, "ping", json!({}))["result"], json!({}));
    let targets = server.call(12, "once_query_targets", json!({}));
    assert_eq!(
        targets["structuredContent"]["result"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
    let quick = server.call(13, "once_build_target", json!({ "target": "gen/Gen" }));
    assert_eq!(quick["structuredContent"]["result"]["success"], true);

    let cancelled_at = std::time::Instant::now();
    server.send(
        json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": { "requestId": 10, "reason": "test" } }),
    );
    while pids.iter().any(|&pid| ps_lists(pid)) {
        assert!(
            cancelled_at.elapsed() < Duration::from_secs(1),
            "the build's processes outlived its cancellation by a second"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // No reply for the cancelled request: the next reply is the ping's.
    std::thread::sleep(Duration::from_millis(300));
    server.send(json!({ "jsonrpc": "2.0", "id": 15, "method": "ping" }));
    let (before, _) = until_reply(&server, 15);
    assert!(
        before.iter().all(|m| m["id"] != json!(10)),
        "the cancelled build was answered: {before:?}"
    );
    // Nor is its progress reported after the cancellation (its killed action ended then).
    assert!(
        before
            .iter()
            .all(|m| m["params"]["progressToken"] != json!("slow-10")),
        "progress of the cancelled build was sent after its cancellation: {before:?}"
    );
    assert_eq!(server.finish(), 0);
}

#[test]
fn no_build_process_outlives_the_server() {
    let (server, pids) = start_slow_build(20);
    let closed_at = std::time::Instant::now();
    assert_eq!(server.finish(), 0);
    assert!(closed_at.elapsed() < Duration::from_secs(2));
    assert!(
        pids.iter().all(|&pid| !ps_lists(pid)),
        "a build process survived the server: {pids:?}"
    );
}

/// A server stopped by SIGTERM (as clients stop servers) kills its builds' processes first.
#[test]
fn a_terminated_server_kills_its_builds_processes() {
    let (mut server, pids) = start_slow_build(30);
    let status = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let sent = std::time::Instant::now();
    while server.child.try_wait().unwrap().is_none() {
        assert!(
            sent.elapsed() < Duration::from_secs(3),
            "the server did not exit"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        pids.iter().all(|&pid| !ps_lists(pid)),
        "a build process survived the server: {pids:?}"
    );
    // Nor does the watcher's private directory, although the handler exits without
    // destructors.
    let prefix = format!("once-watch-{}-", server.child.id());
    let left: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with(&prefix))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Every tool's real answer on the demo workspace (with `--allow-run`: the editing and
/// executing tools too) validates against the output schema `tools/list` declares, field
/// for field; the schemas are derived from the record types, so this is what keeps the
/// two from drifting. `once_fetch_external_source` needs a public HTTPS server: its schema
/// is checked in tests/external_source.rs.
#[test]
fn every_tools_answer_on_the_demo_validates_against_its_output_schema() {
    let workspace = tempfile::tempdir().unwrap();
    copy_dir(&demo(), workspace.path());
    // Results of a test run, as `once test` leaves them, for `once_query_test_results`.
    let results = once_test_results::assemble(
        "libs/text/TextTest",
        once_test_results::Runner::named("libtest"),
        once_test_results::NativeFormat::Libtest.parse(
            "test a::passes ... ok\ntest a::skipped ... ignored, slow\ntest a::fails ... FAILED\n",
        ),
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
    // An annotated script for `once_exec_script`: one input, one output.
    std::fs::write(
        workspace.path().join("tools/stamp.sh"),
        "#!/usr/bin/env bash\n# once input \"banner.txt.in\"\n# once output \"stamp.txt\"\nwc -c < banner.txt.in > stamp.txt\necho stamped\n",
    )
    .unwrap();
    let mut server = Server::start_in(workspace, &["--allow-run"]);
    server.initialize("2025-06-18");
    let tools = server.request(1, "tools/list", json!({}))["result"]["tools"].clone();
    let calls = [
        ("once_query_workspace", json!({})),
        ("once_query_targets", json!({})),
        (
            "once_get_target",
            json!({ "target": "apps/greeter/Greeter" }),
        ),
        (
            "once_query_capabilities",
            json!({ "target": "tools/Banner" }),
        ),
        ("once_query_schema", json!({ "kind": "rust_binary" })),
        (
            "once_query_example",
            json!({ "kind": "command", "slug": "command-generate-file" }),
        ),
        ("once_list_target_kinds", json!({ "query": "rust" })),
        ("once_query_tests", json!({})),
        (
            "once_query_affected_tests",
            json!({ "changed_paths": ["libs", "/elsewhere"] }),
        ),
        ("once_validate_workspace", json!({})),
        ("once_plan_init", json!({})),
        (
            "once_validate_target",
            json!({ "target": { "name": "x", "kind": "rust_binary", "attrs": { "edition": 1 } } }),
        ),
        (
            "once_apply_edit",
            json!({ "package": "scratch", "operations": [{ "op": "create", "target": { "name": "Files", "kind": "filegroup", "srcs": [] } }] }),
        ),
        (
            "once_apply_edit",
            json!({ "package": "scratch", "operations": [{ "op": "create", "target": { "name": "Files", "kind": "filegroup", "srcs": [] } }] }),
        ),
        (
            "once_materialize_example",
            json!({ "kind": "command", "slug": "command-generate-file", "destination": "starter" }),
        ),
        ("once_build_target", json!({ "target": "tools/Banner" })),
        ("once_build_target", json!({ "target": "tools/Banner" })),
        ("once_run_target", json!({ "target": "tools/Release" })),
        ("once_validate_actions", json!({ "target": "tools/Banner" })),
        (
            "once_run_tests",
            json!({ "targets": ["tools/msgcheck/MsgCheckTest", "libs/greeting-js/GreetingJsTest"] }),
        ),
        ("once_query_evidence", json!({ "limit": 100 })),
        ("once_query_module_contract", json!({})),
        (
            "once_validate_module",
            json!({ "path": "modules/missing.star" }),
        ),
        (
            "once_validate_script",
            json!({ "path": "tools/release.sh" }),
        ),
        (
            "once_query_test_results",
            json!({ "target": "libs/text/TextTest" }),
        ),
        (
            "once_query_test_results",
            json!({ "target": "libs/text/TextTest", "summary_only": true }),
        ),
        ("once_exec_script", json!({ "path": "tools/stamp.sh" })),
        ("once_exec_script", json!({ "path": "tools/stamp.sh" })),
    ];
    let mut covered = std::collections::BTreeSet::new();
    let mut exec_caches = Vec::new();
    for (index, (name, arguments)) in calls.iter().enumerate() {
        let tool = tools
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == *name)
            .unwrap_or_else(|| panic!("{name} is not listed"));
        let reply = server.call(100 + index as i64, name, arguments.clone());
        assert_eq!(reply["isError"], false, "{name}: {reply}");
        let structured = &reply["structuredContent"];
        assert_eq!(
            once_mcp::schema::validate(&tool["outputSchema"], structured),
            Vec::<String>::new(),
            "{name}: {structured}"
        );
        if *name == "once_validate_actions" {
            assert_eq!(structured["result"]["valid"], true, "{structured}");
        }
        if *name == "once_exec_script" {
            assert_eq!(structured["result"]["success"], true, "{structured}");
            assert_eq!(structured["result"]["stdout"], "stamped\n", "{structured}");
            exec_caches.push(structured["result"]["record"]["cache"].clone());
        }
        covered.insert(*name);
    }
    assert_eq!(exec_caches, [json!("miss"), json!("hit")]);
    // The runtime tools, on a session of `tools/Release` (a script that ends by itself).
    let mut session_id = String::new();
    for (index, name) in [
        "once_start_target",
        "once_runtime_status",
        "once_runtime_logs",
        "once_stop_runtime",
    ]
    .into_iter()
    .enumerate()
    {
        let tool = tools
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} is not listed"));
        let arguments = if name == "once_start_target" {
            json!({ "target": "tools/Release" })
        } else {
            json!({ "session_id": session_id })
        };
        let reply = server.call(200 + index as i64, name, arguments);
        assert_eq!(reply["isError"], false, "{name}: {reply}");
        let structured = &reply["structuredContent"];
        assert_eq!(
            once_mcp::schema::validate(&tool["outputSchema"], structured),
            Vec::<String>::new(),
            "{name}: {structured}"
        );
        if name == "once_start_target" {
            session_id = structured["result"]["session_id"]
                .as_str()
                .unwrap()
                .to_owned();
        }
        covered.insert(name);
    }
    let listed: std::collections::BTreeSet<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .filter(|name| *name != "once_fetch_external_source")
        .collect();
    assert_eq!(covered, listed);
    assert_eq!(server.finish(), 0);
}

/// One exit-code table for `once exec --script` and MCP `once_exec_script`: a program's
/// own code, 128 + N for a signal, and 1 when the program exited 0 but its action failed
/// (a declared output it did not write), where MCP said 0.
#[test]
fn exec_script_exits_as_once_exec_does() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("once.toml"), "[workspace]\n").unwrap();
    let cases: [(&str, &str, i64); 4] = [
        ("ok.sh", "# once output \"ok.txt\"\necho ok > ok.txt\n", 0),
        ("three.sh", "echo failing\nexit 3\n", 3),
        (
            "missing.sh",
            "# once output \"never.txt\"\necho exited 0\n",
            1,
        ),
        ("signal.sh", "kill -TERM $$\n", 143),
    ];
    for (name, body, _) in &cases {
        std::fs::write(root.join(name), format!("#!/bin/sh\n{body}")).unwrap();
    }
    let workspace = tempfile::tempdir().unwrap();
    for (name, _, _) in &cases {
        std::fs::copy(root.join(name), workspace.path().join(name)).unwrap();
    }
    std::fs::copy(root.join("once.toml"), workspace.path().join("once.toml")).unwrap();
    let mut server = Server::start_in(workspace, &["--allow-run"]);
    server.initialize("2025-11-25");
    for (id, (name, _, expected)) in cases.iter().enumerate() {
        let cli = Command::new(env!("CARGO_BIN_EXE_once"))
            .current_dir(root)
            .args(["exec", "--format", "json", "--script", name])
            .output()
            .unwrap();
        assert_eq!(
            cli.status.code(),
            Some(*expected as i32),
            "{name}: once exec"
        );
        let trailer: Value = serde_json::from_str(
            String::from_utf8_lossy(&cli.stderr)
                .lines()
                .last()
                .unwrap_or_default(),
        )
        .unwrap();
        let reply = server.call(id as i64 + 1, "once_exec_script", json!({ "path": name }));
        let result = &reply["structuredContent"]["result"];
        assert_eq!(result["exit_code"], json!(expected), "{name}: {reply}");
        assert_eq!(result["success"], json!(*expected == 0), "{name}: {reply}");
        assert_eq!(
            result["record"]["exit_code"], trailer["exit_code"],
            "{name}: the record's exit code differs from once exec's: {reply}"
        );
    }
    assert_eq!(server.finish(), 0);
}

/// The CLI and the MCP tools are two renderings of one driver: the same exit-code table
/// (`once run`'s program code, a failed build, a failed test, a refused plan), the same
/// test selection when nothing is named (every test), and the store `--store` names.
/// Each front end works on its own copy of the workspace.
#[test]
fn the_cli_and_the_tools_share_one_driver() {
    let files = [
        (
            "once.toml",
            "[workspace]\ninclude = [\"tools\", \"checks\", \"broken\", \"bad\"]\n",
        ),
        (
            "tools/once.toml",
            "[[target]]\nname = \"Seven\"\nkind = \"script\"\nsrcs = [\"seven.sh\"]\n\n[target.attrs]\nscript_path = \"seven.sh\"\nscript_runtime = \"sh\"\n",
        ),
        ("tools/seven.sh", "echo seven\nexit 7\n"),
        (
            "checks/once.toml",
            "[[target]]\nname = \"Passes\"\nkind = \"sh_test\"\nsrcs = [\"passes.sh\"]\n\n[target.attrs]\nmain = \"passes.sh\"\n\n\
             [[target]]\nname = \"Fails\"\nkind = \"sh_test\"\nsrcs = [\"fails.sh\"]\n\n[target.attrs]\nmain = \"fails.sh\"\n",
        ),
        ("checks/passes.sh", "true\n"),
        ("checks/fails.sh", "exit 1\n"),
        (
            "broken/once.toml",
            "[[target]]\nname = \"Broken\"\nkind = \"command\"\n\n[target.attrs]\ncmd = \"exit 4\"\noutputs = [\"x\"]\n",
        ),
        (
            "bad/once.toml",
            "[[target]]\nname = \"Bad\"\nkind = \"command\"\n\n[target.attrs]\ncmd = \"echo ok > $OUT/o.txt\" garbage\noutputs = [\"o.txt\"]\n",
        ),
    ];
    let copy = || {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    };
    let cli_workspace = copy();
    let cli = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_once"))
            .arg("-C")
            .arg(cli_workspace.path())
            .args(args)
            .output()
            .unwrap()
    };
    let store = tempfile::tempdir().unwrap();
    let store_dir = store.path().join("shared-store");
    let mcp_workspace = copy();
    let mcp_root = mcp_workspace.path().to_path_buf();
    let mut server = Server::start_in(
        mcp_workspace,
        &["--allow-run", "--store", store_dir.to_str().unwrap()],
    );
    server.initialize("2025-11-25");
    let mut id = 0;
    let mut call = |tool: &str, arguments: Value| {
        id += 1;
        server.send(json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": tool, "arguments": arguments } }));
        let (_, reply) = until_reply(&server, id);
        reply["result"]["structuredContent"]["result"].clone()
    };

    // `once run` exits with the program's code; `once_run_target` reports it.
    let run = cli(&["run", "tools/Seven"]);
    assert_eq!(run.status.code(), Some(7), "{run:?}");
    let result = call("once_run_target", json!({ "target": "tools/Seven" }));
    assert_eq!(result["exit_code"], 7, "{result}");
    assert_eq!(result["stdout"], "seven\n", "{result}");

    // A failed build: 1 for both.
    let build = cli(&["build", "broken/Broken"]);
    assert_eq!(build.status.code(), Some(1));
    let result = call("once_build_target", json!({ "target": "broken/Broken" }));
    assert_eq!(result["exit_code"], 1, "{result}");
    assert_eq!(result["record"]["status"], "failed", "{result}");

    // A manifest with a syntax error is refused: nothing of it runs, 1 for both.
    let refused = cli(&["build", "bad/Bad"]);
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    let reply = call("once_build_target", json!({ "target": "bad/Bad" }));
    assert_eq!(reply["exit_code"], 1, "{reply}");
    assert_eq!(
        reply["problems"],
        json!(["bad/once.toml:6: expected a line end, found `garbage` [syntax_error]"]),
        "{reply}"
    );
    assert!(!cli_workspace.path().join(".once/out/bad").exists());
    // Located, for both: the code, the file and the range of the error.
    let refused = cli(&["build", "bad/Bad", "--format", "json"]);
    let refused: Value = serde_json::from_slice(&refused.stdout).unwrap();
    assert_eq!(refused["problems"], reply["problems"], "{refused}");
    assert_eq!(refused["diagnostics"], reply["diagnostics"], "{refused}");
    let located = &reply["diagnostics"][0];
    assert_eq!(located["code"], "syntax_error", "{reply}");
    assert_eq!(located["file"], "bad/once.toml", "{reply}");
    assert_eq!(located["range"]["start"]["line"], 6, "{reply}");
    assert!(
        located["range"]["start"]["column"].as_u64().unwrap() > 1,
        "{reply}"
    );

    // Nothing named: every test, for both, with the same selection and code.
    let tests = cli(&["test", "--format", "json"]);
    assert_eq!(tests.status.code(), Some(1), "{tests:?}");
    let tests: Value = serde_json::from_slice(&tests.stdout).unwrap();
    let result = call("once_run_tests", json!({}));
    assert_eq!(result["selection"], tests["selection"], "{result}\n{tests}");
    assert_eq!(result["selection"]["mode"], "full");
    let ids: Vec<&str> = result["selection"]["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["checks/Fails", "checks/Passes"]);
    assert_eq!(result["exit_code"], 1, "{result}");
    assert_eq!(tests["exit_code"], 1, "{tests}");

    // The server's store is the one `--store` named; the workspace has none.
    assert!(
        store_dir.read_dir().unwrap().next().is_some(),
        "nothing in the store `--store` named"
    );
    assert!(
        !mcp_root.join(".once/cache").exists(),
        "the server used the workspace's store despite --store"
    );
    assert!(cli_workspace.path().join(".once/cache").is_dir());
    assert_eq!(server.finish(), 0);
}

/// An MCP client that drops `LANG` (the official SDK passes only a few variables) and a
/// CLI started from a German shell share results: the locale an action sees is its
/// declaration or the fixed default, never the caller's.
#[test]
fn a_cli_and_a_server_started_with_other_locales_share_results() {
    let workspace = tempfile::tempdir().unwrap();
    let root = workspace.path().to_path_buf();
    std::fs::write(root.join("once.toml"), "[workspace]\n").unwrap();
    std::fs::create_dir_all(root.join("pkg")).unwrap();
    std::fs::write(
        root.join("pkg/once.toml"),
        "[[target]]\nname = \"T\"\nkind = \"command\"\n\n[target.attrs]\n\
         cmd = \"echo \\\"$LANG $TZ\\\" > $OUT/o\"\noutputs = [\"o\"]\n",
    )
    .unwrap();
    let cli = Command::new(env!("CARGO_BIN_EXE_once"))
        .args(["--format", "json", "build", "pkg/T"])
        .current_dir(&root)
        .env("LANG", "de_DE.UTF-8")
        .env("LC_ALL", "de_DE.UTF-8")
        .env("TZ", "Europe/Berlin")
        .output()
        .unwrap();
    let answer: Value = serde_json::from_slice(&cli.stdout).unwrap();
    assert_eq!(answer["targets"][0]["cache"], "miss", "{answer}");
    assert_eq!(
        std::fs::read_to_string(root.join(".once/out/pkg/T/out/o")).unwrap(),
        "C.UTF-8 UTC\n"
    );
    let path = std::env::var("PATH").unwrap_or_default();
    let mut server = Server::start_configured(workspace, &["--allow-run"], |command| {
        command.env_clear().env("PATH", &path);
    });
    server.initialize("2025-06-18");
    let reply = server.call(1, "once_build_target", json!({ "target": "pkg/T" }));
    assert_eq!(reply["isError"], false, "{reply}");
    assert_eq!(
        reply["structuredContent"]["result"]["record"]["cache"], "hit",
        "{reply}"
    );
    assert_eq!(server.finish(), 0);
}
