//! The shared-database promise: `once lsp` publishes exactly the diagnostics
//! `once query validate-workspace` reports (same codes, same ranges) for every fixture
//! workspace, because both answer from the same `Analysis`.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

const ONCE: &str = env!("CARGO_BIN_EXE_once");

fn send(stdin: &mut impl Write, message: &Value) {
    let body = message.to_string();
    write!(stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
    stdin.flush().unwrap();
}

fn read_messages(stdout: impl Read + Send + 'static) -> mpsc::Receiver<Value> {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        loop {
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                if let Some(value) = line.strip_prefix("Content-Length: ") {
                    length = value.parse().unwrap();
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            if sender.send(serde_json::from_slice(&body).unwrap()).is_err() {
                return;
            }
        }
    });
    receiver
}

/// (file, code, start line, start UTF-16 character, end line, end character), 0-based.
type Key = (String, String, u64, u64, u64, u64);

fn utf16_column(text: &str, line: u64, column: u64) -> u64 {
    let line_text = text.split('\n').nth(line as usize).unwrap_or("");
    line_text
        .chars()
        .take(column as usize)
        .map(|c| c.len_utf16() as u64)
        .sum()
}

fn cli_diagnostics(root: &Path) -> BTreeSet<Key> {
    let output = Command::new(ONCE)
        .args(["--format", "json", "query", "validate-workspace"])
        .arg("-C")
        .arg(root)
        .output()
        .unwrap();
    let record: Value = serde_json::from_slice(&output.stdout).unwrap();
    record["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["file"].is_string())
        .map(|d| {
            let file = d["file"].as_str().unwrap().to_owned();
            let text = std::fs::read_to_string(root.join(&file)).unwrap_or_default();
            let at = |p: &Value| {
                let line = p["line"].as_u64().unwrap() - 1;
                (
                    line,
                    utf16_column(&text, line, p["column"].as_u64().unwrap() - 1),
                )
            };
            let (start, end) = match d.get("range").filter(|r| !r.is_null()) {
                Some(range) => (at(&range["start"]), at(&range["end"])),
                None => ((0, 0), (0, 0)),
            };
            (
                file,
                d["code"].as_str().unwrap().to_owned(),
                start.0,
                start.1,
                end.0,
                end.1,
            )
        })
        .collect()
}

fn lsp_diagnostics(root: &Path, manifests: &[String]) -> BTreeSet<Key> {
    let mut child = Command::new(ONCE)
        .arg("-C")
        .arg(root)
        .arg("lsp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let messages = read_messages(child.stdout.take().unwrap());
    let uri = |file: &str| format!("file://{}/{file}", root.display());
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}),
    );
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}),
    );
    for file in manifests {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        send(
            &mut stdin,
            &json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
            "textDocument": {"uri": uri(file), "languageId": "toml", "version": 1, "text": text}}}),
        );
    }
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": null}),
    );
    let mut latest = std::collections::BTreeMap::new();
    loop {
        let message = messages.recv_timeout(Duration::from_secs(60)).unwrap();
        if message["id"] == 2 {
            break;
        }
        if message["method"] == "textDocument/publishDiagnostics" {
            latest.insert(
                message["params"]["uri"].as_str().unwrap().to_owned(),
                message["params"]["diagnostics"].clone(),
            );
        }
    }
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "method": "exit", "params": null}),
    );
    assert!(child.wait().unwrap().success());
    let mut out = BTreeSet::new();
    for file in manifests {
        let Some(diagnostics) = latest.get(&uri(file)) else {
            continue;
        };
        for d in diagnostics.as_array().unwrap() {
            let r = &d["range"];
            out.insert((
                file.clone(),
                d["code"].as_str().unwrap().to_owned(),
                r["start"]["line"].as_u64().unwrap(),
                r["start"]["character"].as_u64().unwrap(),
                r["end"]["line"].as_u64().unwrap(),
                r["end"]["character"].as_u64().unwrap(),
            ));
        }
    }
    out
}

fn manifests(root: &Path, dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            manifests(root, &path, out);
        } else if path.file_name().is_some_and(|n| n == "once.toml") {
            let relative = path.strip_prefix(root).unwrap();
            out.push(relative.to_str().unwrap().replace('\\', "/"));
        }
    }
}

#[test]
fn lsp_diagnostics_equal_validate_workspace() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test_data/workspaces");
    let mut checked = 0;
    let mut entries: Vec<_> = std::fs::read_dir(&fixtures)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for fixture in entries {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().canonicalize().unwrap();
        copy_dir(&fixture, &root);
        let mut files = Vec::new();
        manifests(&root, &root, &mut files);
        // An editor cannot open a manifest that is not UTF-8.
        files.retain(|f| std::fs::read_to_string(root.join(f)).is_ok());
        files.sort();
        let cli = cli_diagnostics(&root);
        // Diagnostics of files that are not manifests (modules) are not published by
        // `once lsp` unless open; compare on manifests.
        let cli: BTreeSet<Key> = cli.into_iter().filter(|k| files.contains(&k.0)).collect();
        let lsp = lsp_diagnostics(&root, &files);
        assert_eq!(lsp, cli, "fixture {}", fixture.display());
        checked += 1;
    }
    assert!(checked > 10);
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        let file_type = entry.file_type().unwrap();
        if file_type.is_dir() {
            copy_dir(&entry.path(), &target);
        } else if file_type.is_symlink() {
            // A link stays a link (fixtures hold links once does not follow).
            std::os::unix::fs::symlink(std::fs::read_link(entry.path()).unwrap(), &target).unwrap();
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A client that watches no files (no dynamic registration) still sees disk changes: the
/// server's own watcher picks them up and republishes.
#[test]
fn the_server_watches_the_disk_when_the_client_does_not() {
    let temp = tempfile::tempdir().unwrap();
    let root = temp.path().canonicalize().unwrap();
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test_data/workspaces/valid"),
        &root,
    );
    let mut child = Command::new(ONCE)
        .arg("-C")
        .arg(&root)
        .arg("lsp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let messages = read_messages(child.stdout.take().unwrap());
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}),
    );
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}),
    );
    let app = std::fs::read_to_string(root.join("app/once.toml")).unwrap();
    let app_uri = format!("file://{}/app/once.toml", root.display());
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
        "textDocument": {"uri": app_uri, "languageId": "toml", "version": 1, "text": app}}}),
    );
    let next_publish = || loop {
        let message = messages.recv_timeout(Duration::from_secs(20)).unwrap();
        if message["method"] == "textDocument/publishDiagnostics" {
            return message["params"]["diagnostics"].as_array().unwrap().clone();
        }
    };
    assert!(next_publish().is_empty());
    // Another program rewrites the library's manifest without its target.
    std::fs::write(root.join("lib/once.toml"), "# emptied\n").unwrap();
    let diagnostics = next_publish();
    assert!(
        diagnostics
            .iter()
            .any(|d| d["code"] == "missing_dependency"),
        "{diagnostics:?}"
    );
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": null}),
    );
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "method": "exit", "params": null}),
    );
    assert!(child.wait().unwrap().success());
}
