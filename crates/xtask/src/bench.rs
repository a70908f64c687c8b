//! Benchmarks on generated workspaces (not timed tests: they measure and print).
//!
//! - `generate-workspace`: a synthetic workspace of `packages × targets` rust_library
//!   targets with real sources and a dependency chain across packages.
//! - `bench-lsp` ([`lsp`]): `didChange` → `publishDiagnostics` in `once lsp`, with the one
//!   language-server client the benchmarks share.
//! - `bench-mcp`: the cold CLI answer to `validate-workspace` next to the warm MCP server's
//!   answer after editing one manifest, measured over stdio.
//! - `gen-workspace` ([`synth`]): the deterministic, realistic generator (several kinds,
//!   hubs, chains, leaves, selects, visibility).
//! - `bench` ([`harness`]): every measure of the benchmark issue in one run, with Nx beside.
//! - `bench-exec` ([`execution`]): full hits, restores, the warm MCP build, executor
//!   overhead and the no-op build of generated `command` workspaces (also a section of
//!   `bench`).
//! - `bench-remote` ([`remote`]): the 15-action graph against BuildGrid on loopback: the
//!   upload overhead of a full miss and clean clients with every result remote (issue 34).
//! - `bench-scripts` ([`scripts`]): `once exec` hits of a no-op script next to running it
//!   directly, and a 15-script `needs` graph of hits (issue 17).
//! - `bench-tests` ([`tests`]): `once test --rerun` on 200-case pytest and Rust suites
//!   next to running their runners directly (issue 16).
//! - `bench-server` ([`server`]): `validate-workspace` and the no-op build through the
//!   warm workspace server next to in-process, and the fallback (issue 35).
//! - `bench-worst-cases` ([`worst_cases`]): hostile inputs that were quadratic or
//!   unbounded, each measured (also a section of `bench`).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

pub mod digests;
pub mod execution;
pub mod harness;
pub mod lsp;
pub mod nx;
pub mod remote;
pub mod scripts;
pub mod server;
pub mod synth;
pub mod tests;
pub mod warm;
pub mod worst_cases;

/// Writes a workspace of `packages` packages with `per_package` targets each.
pub fn generate_workspace(root: &Path, packages: usize, per_package: usize) -> anyhow::Result<()> {
    recreate_dir(root)?;
    std::fs::write(
        root.join("once.toml"),
        "[workspace]\ninclude = [\"pkgs/**\"]\n",
    )?;
    for p in 0..packages {
        let dir = root.join(format!("pkgs/p{p}"));
        std::fs::create_dir_all(dir.join("src"))?;
        std::fs::write(dir.join("src/lib.rs"), "pub fn value() -> u32 { 1 }\n")?;
        std::fs::write(
            dir.join("Cargo.toml"),
            format!("[package]\nname = \"p{p}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n"),
        )?;
        let mut manifest = String::new();
        for t in 0..per_package {
            let dep = match (p, t) {
                (0, 0) => String::new(),
                (_, 0) => format!("\"pkgs/p{}/T{}\"", p - 1, per_package - 1),
                _ => format!("\"./T{}\"", t - 1),
            };
            manifest.push_str(&format!(
                "[[target]]\nname = \"T{t}\"\nkind = \"rust_library\"\nsrcs = [\"src/**/*.rs\", \"Cargo.toml\"]\ndeps = [{dep}]\n\n"
            ));
        }
        std::fs::write(dir.join("once.toml"), manifest)?;
    }
    Ok(())
}

/// Waits until files written a moment ago have settled for the digest index: it keeps no
/// digest of a file changed within two seconds of being read (`once_db::digests`), so a
/// benchmark of a warm index waits that long after writing its workspace.
pub(crate) fn settle_for_digest_index() {
    std::thread::sleep(std::time::Duration::from_millis(2_100));
}

/// Removes `root` if it exists and creates it empty (generators start from nothing).
pub(crate) fn recreate_dir(root: &Path) -> anyhow::Result<()> {
    if root.exists() {
        std::fs::remove_dir_all(root)
            .with_context(|| format!("cannot clear `{}`", root.display()))?;
    }
    std::fs::create_dir_all(root).with_context(|| format!("cannot create `{}`", root.display()))
}

/// The middle sample.
fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// A duration as `12.3 ms`.
fn ms(duration: Duration) -> String {
    format!("{:.1} ms", duration.as_secs_f64() * 1000.0)
}

/// A server driven over its stdio.
struct Mcp {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
    next_id: u64,
}

impl Mcp {
    fn start(once: &Path, workspace: &Path) -> anyhow::Result<Mcp> {
        Mcp::start_with(once, workspace, &[])
    }

    /// Starts `once mcp --workspace WORKSPACE` with `extra` arguments (`--allow-run`).
    fn start_with(once: &Path, workspace: &Path, extra: &[&str]) -> anyhow::Result<Mcp> {
        let mut child = Command::new(once)
            .args(["mcp", "--workspace"])
            .arg(workspace)
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start `{}`", once.display()))?;
        let stdin = child.stdin.take().context("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().context("no stdout")?);
        let mut mcp = Mcp {
            child,
            stdin,
            stdout,
            next_id: 0,
        };
        mcp.request("initialize", json!({ "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "bench", "version": "1" } }))?;
        writeln!(
            mcp.stdin,
            "{}",
            json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })
        )?;
        Ok(mcp)
    }

    fn request(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        self.next_id += 1;
        writeln!(
            self.stdin,
            "{}",
            json!({ "jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params })
        )?;
        self.stdin.flush()?;
        let mut line = String::new();
        loop {
            line.clear();
            if self.stdout.read_line(&mut line)? == 0 {
                bail!("the server closed its output");
            }
            let reply: Value = serde_json::from_str(&line)?;
            if reply["id"] == json!(self.next_id) {
                return Ok(reply);
            }
        }
    }

    /// Calls one tool; its `structuredContent`, or an error naming the tool's error.
    fn call_tool(&mut self, name: &str, arguments: Value) -> anyhow::Result<Value> {
        let reply = self.request(
            "tools/call",
            json!({ "name": name, "arguments": arguments }),
        )?;
        if reply["result"]["isError"] == json!(true) || reply.get("error").is_some() {
            bail!("`{name}` failed: {reply}");
        }
        Ok(reply["result"]["structuredContent"].clone())
    }

    /// The CPU time the server's threads have used so far (Linux `schedstat`, in
    /// nanoseconds); `None` where it cannot be read.
    fn cpu_time(&self) -> Option<Duration> {
        let tasks = std::fs::read_dir(format!("/proc/{}/task", self.child.id())).ok()?;
        let mut nanos = 0u64;
        for task in tasks.flatten() {
            let stat = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
            nanos += stat
                .split_whitespace()
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0);
        }
        (nanos > 0).then(|| Duration::from_nanos(nanos))
    }

    fn validate(&mut self) -> anyhow::Result<Value> {
        let reply = self.request(
            "tools/call",
            json!({ "name": "once_validate_workspace", "arguments": {} }),
        )?;
        Ok(reply["result"]["structuredContent"]["result"].clone())
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Cold CLI vs warm server after a one-manifest edit, on a generated workspace.
pub fn bench_mcp(
    once: &Path,
    scratch: &Path,
    packages: usize,
    per_package: usize,
    runs: usize,
) -> anyhow::Result<String> {
    let workspace = scratch.join(format!("ws-{}", packages * per_package));
    generate_workspace(&workspace, packages, per_package)?;
    let targets = packages * per_package;

    let mut cold = Vec::new();
    let mut cold_answer = Value::Null;
    for _ in 0..runs {
        let started = Instant::now();
        let output = Command::new(once)
            .args(["query", "validate-workspace", "--format", "json", "-C"])
            .arg(&workspace)
            .output()
            .context("cannot run the CLI")?;
        cold.push(started.elapsed());
        cold_answer = serde_json::from_slice(&output.stdout).context("the CLI answered no JSON")?;
    }

    let started = Instant::now();
    let mut mcp = Mcp::start(once, &workspace)?;
    let first = mcp.validate()?;
    let first_answer = started.elapsed();
    if first["target_count"] != cold_answer["target_count"] {
        bail!("the server and the CLI disagree: {first} vs {cold_answer}");
    }

    let manifest = workspace.join(format!("pkgs/p{}/once.toml", packages / 2));
    let original = std::fs::read_to_string(&manifest)?;
    let mut warm = Vec::new();
    let mut unchanged = Vec::new();
    for run in 0..runs {
        // A real edit that alternates between a valid and an invalid manifest, so each
        // answer proves the server saw the edit.
        let broken = run % 2 == 1;
        let line = if broken {
            format!("bogus{run} = 1\n")
        } else {
            format!("labels = [\"run{run}\"]\n")
        };
        let edited = original.replacen("deps = [", &format!("{line}deps = ["), 1);
        std::fs::write(&manifest, edited)?;
        let started = Instant::now();
        let answer = mcp.validate()?;
        warm.push(started.elapsed());
        if answer["valid"] != json!(!broken) || answer["target_count"] != json!(targets) {
            bail!("the warm answer missed the edit of run {run}: {answer}");
        }
        let started = Instant::now();
        mcp.validate()?;
        unchanged.push(started.elapsed());
    }
    std::fs::write(&manifest, original)?;

    Ok(format!(
        "| workspace | cold CLI `query validate-workspace` | server: first call (load) | server: after editing one manifest | server: nothing changed |\n\
         |---|---|---|---|---|\n\
         | {targets} targets, {packages} manifests | {} | {} | {} | {} |\n\
         \n(medians of {runs} runs; the server answers over stdio, including its file-watcher fence)\n",
        ms(median(cold)),
        ms(first_answer),
        ms(median(warm)),
        ms(median(unchanged)),
    ))
}

/// The default scratch directory for generated workspaces.
pub fn scratch_dir() -> PathBuf {
    std::env::temp_dir().join("once-bench")
}
