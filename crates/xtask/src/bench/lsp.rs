//! `bench-lsp`: time from `didChange` to `publishDiagnostics` in `once lsp` on a generated
//! 10,000-target workspace, for an edit of the open manifest and for an edit whose effect
//! is published in another open manifest (a dependent).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use super::{median, ms};

/// A language server driven over its stdio with `Content-Length` framing; a reader thread
/// parses its messages so that a silent server times out instead of hanging the bench.
pub(crate) struct Lsp {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    messages: std::sync::mpsc::Receiver<Value>,
}

/// Reads one framed message.
fn read_message(stdout: &mut BufReader<std::process::ChildStdout>) -> anyhow::Result<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if stdout.read_line(&mut line)? == 0 {
            bail!("the language server closed its output");
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(value) = line.strip_prefix("Content-Length:") {
            length = Some(value.trim().parse::<usize>()?);
        }
    }
    let mut body = vec![0; length.context("no Content-Length")?];
    stdout.read_exact(&mut body)?;
    Ok(serde_json::from_slice(&body)?)
}

impl Lsp {
    pub(crate) fn start(once: &Path, workspace: &Path) -> anyhow::Result<Lsp> {
        let mut child = Command::new(once)
            .arg("lsp")
            .arg("-C")
            .arg(workspace)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let stdin = child.stdin.take().context("no stdin")?;
        let mut stdout = BufReader::new(child.stdout.take().context("no stdout")?);
        let (sender, messages) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            while let Ok(message) = read_message(&mut stdout) {
                if sender.send(message).is_err() {
                    break;
                }
            }
        });
        Ok(Lsp {
            child,
            stdin,
            messages,
        })
    }

    pub(crate) fn send(&mut self, message: &Value) -> anyhow::Result<()> {
        let body = message.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len())?;
        self.stdin.flush()?;
        Ok(())
    }

    pub(crate) fn receive(&mut self) -> anyhow::Result<Value> {
        self.messages
            .recv_timeout(Duration::from_secs(60))
            .context("no message from the language server within 60 s")
    }

    /// Waits for `publishDiagnostics` of `uri` (of that document `version`, when given);
    /// returns the diagnostics.
    pub(crate) fn diagnostics(
        &mut self,
        uri: &str,
        version: Option<i64>,
    ) -> anyhow::Result<Vec<Value>> {
        loop {
            let message = self.receive()?;
            if message["method"] == "textDocument/publishDiagnostics"
                && message["params"]["uri"] == uri
                && version.is_none_or(|v| message["params"]["version"] == json!(v))
            {
                return Ok(message["params"]["diagnostics"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default());
            }
        }
    }
}

impl Drop for Lsp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs the benchmark and returns a markdown table row with its header.
pub fn bench_lsp(
    once: &Path,
    scratch: &Path,
    packages: usize,
    per_package: usize,
    runs: usize,
) -> anyhow::Result<String> {
    if !once.exists() {
        bail!(
            "`{}` does not exist; build it with `cargo build --release`",
            once.display()
        );
    }
    let root = scratch.join("lsp-workspace");
    super::generate_workspace(&root, packages, per_package)?;
    let root = root.canonicalize()?;
    let mut lsp = Lsp::start(once, &root)?;
    let root_uri = format!("file://{}", root.display());
    lsp.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}, "rootUri": root_uri}}))?;
    let start = Instant::now();
    while lsp.receive()?["id"] != 1 {}
    lsp.send(&json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}))?;
    let load = start.elapsed();

    // The edited manifest is in the middle of the chain; the next package depends on its
    // last target.
    let middle = packages / 2;
    let edited = format!("pkgs/p{middle}/once.toml");
    let dependent = format!("pkgs/p{}/once.toml", middle + 1);
    let edited_uri = format!("{root_uri}/{edited}");
    let dependent_uri = format!("{root_uri}/{dependent}");
    let edited_text = std::fs::read_to_string(root.join(&edited))?;
    let dependent_text = std::fs::read_to_string(root.join(&dependent))?;
    let start = Instant::now();
    for (uri, text) in [
        (&edited_uri, &edited_text),
        (&dependent_uri, &dependent_text),
    ] {
        lsp.send(
            &json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
            "textDocument": {"uri": uri, "languageId": "toml", "version": 1, "text": text}}}),
        )?;
        lsp.diagnostics(uri, None)?;
    }
    let open = start.elapsed();

    // Same file: insert and remove an unknown key on line 1 (incremental edits).
    let mut local = Vec::new();
    let mut version = 1;
    for run in 0..runs * 2 {
        version += 1;
        let change = if run % 2 == 0 {
            json!({"range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 0}}, "text": "bogus = 1\n"})
        } else {
            json!({"range": {"start": {"line": 1, "character": 0}, "end": {"line": 2, "character": 0}}, "text": ""})
        };
        let start = Instant::now();
        lsp.send(
            &json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": edited_uri, "version": version}, "contentChanges": [change]}}),
        )?;
        let diagnostics = lsp.diagnostics(&edited_uri, None)?;
        local.push(start.elapsed());
        if diagnostics.is_empty() != (run % 2 == 1) {
            bail!("unexpected diagnostics after edit {run}: {diagnostics:?}");
        }
    }

    // Cross-file: rename the last target (the dependent's dependency) and back.
    let last = per_package - 1;
    let name_line = edited_text
        .lines()
        .position(|l| l == format!("name = \"T{last}\""))
        .context("the last target's name line")? as u64;
    let mut cross = Vec::new();
    for run in 0..runs * 2 {
        version += 1;
        let name = if run % 2 == 0 {
            format!("T{last}x")
        } else {
            format!("T{last}")
        };
        let written = format!("name = \"T{last}\"").len() as u64;
        let old_len = if run % 2 == 0 { written } else { written + 1 };
        let change = json!({"range": {"start": {"line": name_line, "character": 0}, "end": {"line": name_line, "character": old_len}},
                            "text": format!("name = \"{name}\"")});
        let start = Instant::now();
        lsp.send(
            &json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": edited_uri, "version": version}, "contentChanges": [change]}}),
        )?;
        let diagnostics = lsp.diagnostics(&dependent_uri, None)?;
        cross.push(start.elapsed());
        if diagnostics.is_empty() != (run % 2 == 1) {
            bail!("unexpected dependent diagnostics after rename {run}: {diagnostics:?}");
        }
    }
    lsp.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": null}))?;
    while lsp.receive()?["id"] != 2 {}
    lsp.send(&json!({"jsonrpc": "2.0", "method": "exit", "params": null}))?;
    lsp.child.wait()?;
    let targets = packages * per_package;
    Ok(format!(
        "| workspace | initialize | load + open two manifests | didChange → publishDiagnostics (same file) | didChange → publishDiagnostics (dependent file) |\n\
         |---|---|---|---|---|\n\
         | {targets} targets, {packages} manifests | {} | {} | {} | {} |\n\n\
         Medians of {} edits each.",
        ms(load),
        ms(open),
        ms(median(local)),
        ms(median(cross)),
        runs * 2
    ))
}
