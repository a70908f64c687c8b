//! The warm servers' measurements of the benchmark driver: `once mcp` and `once lsp`
//! kept running over stdio while the driver edits the workspace between requests.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::json;

use super::Mcp;
use super::harness::{Row, cpu_delta, edited, fmt_ms};
use super::lsp::Lsp;
use super::synth::Generated;

pub(super) fn warm_mcp(
    once: &Path,
    workspace: &Path,
    generated: &Generated,
    paths: &[String],
    runs: usize,
) -> anyhow::Result<Vec<Row>> {
    let row = |name: &str| Row::empty("warm MCP", name);
    let mut load = row("server start + first `once_validate_workspace` (load)");
    let mut after_edit = row("`once_validate_workspace` after editing one manifest");
    let mut unchanged = row("`once_validate_workspace`, nothing changed");
    let mut affected = row("`once_query_affected_tests` (100 paths)");
    let mut page = row("`once_query_targets` (first page of 200)");
    let mut new_target = row("`once_validate_workspace` after appending a new target");
    let mut comment = row("`once_validate_workspace` after adding a comment");
    // The server's CPU time per measured call, beside the wall time (the machine may be
    // shared).
    let mut edit_cpu = Vec::new();
    let mut new_target_cpu = Vec::new();
    let mut comment_cpu = Vec::new();

    let started = Instant::now();
    let mut mcp = Mcp::start(once, workspace)?;
    let first = mcp.validate()?;
    load.samples.push(started.elapsed());
    if first["target_count"] != json!(generated.targets) || first["valid"] != json!(true) {
        bail!("the server's first answer is wrong: {first}");
    }
    let manifest = workspace.join(&generated.edited_manifest);
    let original = std::fs::read_to_string(&manifest)?;
    let affected_args = json!({ "changed_paths": paths, "limit": 1000 });
    for run in 0..runs {
        let (text, broken) = edited(&original, run);
        std::fs::write(&manifest, text)?;
        let cpu = mcp.cpu_time();
        let started = Instant::now();
        let answer = mcp.validate()?;
        after_edit.samples.push(started.elapsed());
        edit_cpu.extend(cpu_delta(cpu, mcp.cpu_time()));
        if answer["valid"] != json!(!broken) {
            bail!("the warm answer missed the edit of run {run}: {answer}");
        }
        let started = Instant::now();
        mcp.validate()?;
        unchanged.samples.push(started.elapsed());

        let started = Instant::now();
        let reply = mcp.call_tool("once_query_affected_tests", affected_args.clone())?;
        affected.samples.push(started.elapsed());
        let tests = reply["result"].as_array().map_or(0, Vec::len);
        anyhow::ensure!(tests > 0, "no affected tests over MCP: {reply}");
        affected.note = format!("{tests} tests");

        let started = Instant::now();
        let reply = mcp.call_tool("once_query_targets", json!({}))?;
        page.samples.push(started.elapsed());
        let listed = reply["result"].as_array().map_or(0, Vec::len);
        anyhow::ensure!(listed > 0, "no targets over MCP: {reply}");
        page.note = format!("{listed} targets");
    }
    // A new target changes the package's set of targets (its name table), not just one
    // target's attributes.
    let appended = format!(
        "{original}\n[[target]]\nname = \"AppendedByBench\"\nkind = \"filegroup\"\nsrcs = [\"once.toml\"]\n"
    );
    for run in 0..runs {
        // Both edit kinds in one run, one after the other, each from the original text.
        std::fs::write(&manifest, format!("{original}# a comment of run {run}\n"))?;
        let cpu = mcp.cpu_time();
        let started = Instant::now();
        let answer = mcp.validate()?;
        comment.samples.push(started.elapsed());
        comment_cpu.extend(cpu_delta(cpu, mcp.cpu_time()));
        anyhow::ensure!(
            answer["valid"] == json!(true),
            "a comment made the workspace invalid: {answer}"
        );
        std::fs::write(&manifest, &original)?;
        mcp.validate()?;

        std::fs::write(&manifest, &appended)?;
        let cpu = mcp.cpu_time();
        let started = Instant::now();
        let answer = mcp.validate()?;
        new_target.samples.push(started.elapsed());
        new_target_cpu.extend(cpu_delta(cpu, mcp.cpu_time()));
        if answer["target_count"] != json!(generated.targets + 1) || answer["valid"] != json!(true)
        {
            bail!("the warm answer missed the new target of run {run}: {answer}");
        }
        std::fs::write(&manifest, &original)?;
        let answer = mcp.validate()?;
        anyhow::ensure!(
            answer["target_count"] == json!(generated.targets),
            "the warm answer missed the target's removal: {answer}"
        );
    }
    std::fs::write(&manifest, original)?;
    let cpu_note = |samples: &[Duration]| match Row::median_of(samples) {
        Some(median) => format!("; server CPU {}", fmt_ms(Some(median))),
        None => String::new(),
    };
    after_edit.note = format!("edit seen (valid flips every run){}", cpu_note(&edit_cpu));
    new_target.note = format!("target count seen (+1){}", cpu_note(&new_target_cpu));
    comment.note = format!("still valid{}", cpu_note(&comment_cpu));
    Ok(vec![
        load, after_edit, unchanged, affected, page, comment, new_target,
    ])
}

fn lsp_available(once: &Path) -> bool {
    Command::new(once)
        .arg("--help")
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .any(|l| l.trim_start().starts_with("lsp "))
        })
        .unwrap_or(false)
}

pub(super) fn warm_lsp(
    once: &Path,
    workspace: &Path,
    generated: &Generated,
    runs: usize,
) -> anyhow::Result<Row> {
    let mut row = Row::empty(
        "warm LSP",
        "`didChange` → `publishDiagnostics` (one manifest)",
    );
    if !lsp_available(once) {
        row.note = "n/a: no `once lsp` in this binary".into();
        return Ok(row);
    }
    // A binary with a language server that cannot be measured is a failure, not a gap
    // in the table: the smoke run in CI is there to catch it.
    row.samples =
        lsp_samples(once, workspace, generated, runs).context("the warm LSP measure failed")?;
    row.note = "full-text change; diagnostics flip every run".into();
    Ok(row)
}

fn lsp_samples(
    once: &Path,
    workspace: &Path,
    generated: &Generated,
    runs: usize,
) -> anyhow::Result<Vec<Duration>> {
    let mut lsp = Lsp::start(once, workspace)?;
    let root_uri = format!("file://{}", workspace.display());
    lsp.send(
        &json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "processId": null, "rootUri": root_uri, "capabilities": {} } }),
    )?;
    loop {
        if lsp.receive()?["id"] == json!(1) {
            break;
        }
    }
    lsp.send(&json!({ "jsonrpc": "2.0", "method": "initialized", "params": {} }))?;
    let manifest = workspace.join(&generated.edited_manifest);
    let uri = format!("file://{}", manifest.display());
    let original = std::fs::read_to_string(&manifest)?;
    lsp.send(
        &json!({ "jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
        "textDocument": { "uri": uri, "languageId": "toml", "version": 0, "text": original } } }),
    )?;
    let first = lsp.diagnostics(&uri, Some(0))?;
    anyhow::ensure!(
        first.is_empty(),
        "diagnostics on the generated manifest: {first:?}"
    );
    let mut samples = Vec::new();
    for run in 0..runs {
        // The server publishes only when a document's diagnostics change, so every edit
        // flips between broken (first) and valid.
        let (text, broken) = edited(&original, run + 1);
        let version = run as i64 + 1;
        let started = Instant::now();
        lsp.send(
            &json!({ "jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": { "uri": uri, "version": version },
            "contentChanges": [{ "text": text }] } }),
        )?;
        let diagnostics = lsp.diagnostics(&uri, Some(version))?;
        samples.push(started.elapsed());
        let count = diagnostics.len();
        anyhow::ensure!(
            (count > 0) == broken,
            "run {run}: {count} diagnostics after an edit that is {}",
            if broken { "broken" } else { "valid" }
        );
    }
    let _ = lsp.send(&json!({ "jsonrpc": "2.0", "id": 2, "method": "shutdown" }));
    Ok(samples)
}

// --- Nx ------------------------------------------------------------------------------------
