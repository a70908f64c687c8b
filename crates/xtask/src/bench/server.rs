//! `bench-server`: the warm workspace server (issue 35) against the in-process CLI.
//!
//! For each size (10k and 100k targets of the `gen-workspace` generator, seed 1):
//! - in-process `query validate-workspace` (`ONCE_SERVER=off`) and the same with no
//!   server running and the client looking for one (the fallback), one after the other
//!   in each round, so both see the same machine;
//! - through a running server, nothing changed, and right after editing one manifest
//!   (a valid change, or on odd runs an unknown key);
//! - the server's resident memory once every measure ran (`once server status`).
//!
//! Then the no-op `once build ...` of 10,000 `command` targets, in-process and through
//! the server (with how many the server answered from its memory of the last no-op). Every answer is checked (valid, the target count; all hits), and that the
//! server answered (its request count). Wall time of the CLI process, spawned from Rust
//! with its output captured; medians.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context as _, ensure};
use serde_json::{Value, json};

use super::harness::{Row, fmt_ms, timed};

/// A `once` command in `workspace` with a private runtime directory; `served`: the
/// client may ask a server (else `ONCE_SERVER=off`).
fn once(exe: &Path, workspace: &Path, runtime: &Path, served: bool, args: &[&str]) -> Command {
    let mut command = Command::new(exe);
    command
        .arg("-C")
        .arg(workspace)
        .args(args)
        .env("XDG_RUNTIME_DIR", runtime)
        .env_remove("CI")
        .stdin(Stdio::null());
    if served {
        command.env_remove("ONCE_SERVER");
    } else {
        command.env("ONCE_SERVER", "off");
    }
    command
}

fn status(exe: &Path, workspace: &Path, runtime: &Path) -> anyhow::Result<Value> {
    let output = once(
        exe,
        workspace,
        runtime,
        true,
        &["server", "status", "--format", "json"],
    )
    .output()?;
    ensure!(
        output.status.success(),
        "no server runs in {}",
        workspace.display()
    );
    Ok(serde_json::from_slice(&output.stdout)?)
}

fn validate(
    exe: &Path,
    workspace: &Path,
    runtime: &Path,
    served: bool,
    targets: usize,
    valid: bool,
) -> anyhow::Result<Duration> {
    let (elapsed, output) = timed(&mut once(
        exe,
        workspace,
        runtime,
        served,
        &["query", "validate-workspace", "--format", "json"],
    ))?;
    let answer: Value = serde_json::from_slice(&output.stdout)
        .with_context(|| format!("no JSON: {}", String::from_utf8_lossy(&output.stderr)))?;
    ensure!(
        answer["valid"] == json!(valid) && answer["target_count"] == json!(targets),
        "unexpected validation: {}",
        String::from_utf8_lossy(&output.stdout)
            .chars()
            .take(300)
            .collect::<String>()
    );
    Ok(elapsed)
}

fn start(exe: &Path, workspace: &Path, runtime: &Path) -> anyhow::Result<()> {
    let output = once(exe, workspace, runtime, true, &["server", "start"]).output()?;
    ensure!(
        output.status.success(),
        "the server did not start: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(())
}

fn stop(exe: &Path, workspace: &Path, runtime: &Path) {
    let _ = once(exe, workspace, runtime, true, &["server", "stop"]).output();
}

fn requests(exe: &Path, workspace: &Path, runtime: &Path) -> anyhow::Result<u64> {
    status(exe, workspace, runtime)?["requests"]
        .as_u64()
        .context("no request count")
}

/// The rows of one generated size.
fn size_rows(exe: &Path, scratch: &Path, size: &str, runs: usize) -> anyhow::Result<Vec<Row>> {
    let (packages, per_package) = super::harness::preset(size)?;
    let workspace = scratch.join(format!("server-{size}"));
    let generated = super::synth::generate(&workspace, packages, per_package, 1)?;
    let runtime = scratch.join("server-runtime");
    super::recreate_dir(&runtime)?;
    std::fs::set_permissions(
        &runtime,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )?;
    let targets = generated.targets;
    let mut off = Row::empty(
        "server",
        &format!("{size}: in-process `validate-workspace` (`ONCE_SERVER=off`)"),
    );
    let mut fallback = Row::empty(
        "server",
        &format!("{size}: no server running (the client looks, then computes)"),
    );
    // Untimed: the page cache.
    validate(exe, &workspace, &runtime, false, targets, true)?;
    for _ in 0..runs {
        off.samples
            .push(validate(exe, &workspace, &runtime, false, targets, true)?);
        fallback
            .samples
            .push(validate(exe, &workspace, &runtime, true, targets, true)?);
    }
    start(exe, &workspace, &runtime)?;
    let before = requests(exe, &workspace, &runtime)?;
    let mut warm = Row::empty(
        "server",
        &format!("{size}: through the server, nothing changed"),
    );
    validate(exe, &workspace, &runtime, true, targets, true)?;
    for _ in 0..runs {
        warm.samples
            .push(validate(exe, &workspace, &runtime, true, targets, true)?);
    }
    let manifest = workspace.join(&generated.edited_manifest);
    let original = std::fs::read_to_string(&manifest)?;
    let mut edited = Row::empty(
        "server",
        &format!("{size}: through the server, one manifest edited before each"),
    );
    for run in 0..runs {
        let (text, broken) = super::harness::edited(&original, run);
        std::fs::write(&manifest, text)?;
        edited
            .samples
            .push(validate(exe, &workspace, &runtime, true, targets, !broken)?);
    }
    std::fs::write(&manifest, &original)?;
    let answered = requests(exe, &workspace, &runtime)? - before;
    ensure!(
        answered == 1 + 2 * runs as u64,
        "the server answered {answered} of {} requests",
        1 + 2 * runs
    );
    let status = status(exe, &workspace, &runtime)?;
    stop(exe, &workspace, &runtime);
    let resident = status["resident_bytes"].as_u64().unwrap_or(0);
    let database = status["database_bytes"].as_u64().unwrap_or(0);
    warm.rss_kib = Some(resident / 1024);
    warm.note = format!(
        "server resident {:.1} MiB after these runs (salsa's own count of the database: {:.1} MiB)",
        resident as f64 / 1048576.0,
        database as f64 / 1048576.0
    );
    let ratio = match (fallback.median(), off.median()) {
        (Some(f), Some(o)) if o > Duration::ZERO => f.as_secs_f64() / o.as_secs_f64(),
        _ => 0.0,
    };
    fallback.note = format!("{ratio:.2}× in-process, same rounds");
    off.note = format!("{targets} targets");
    Ok(vec![off, fallback, warm, edited])
}

/// The no-op build of 10,000 `command` targets, in-process and through the server.
fn build_rows(
    exe: &Path,
    scratch: &Path,
    runs: usize,
    packages: usize,
) -> anyhow::Result<Vec<Row>> {
    let workspace = scratch.join(format!("server-commands-{packages}"));
    super::recreate_dir(&workspace)?;
    let targets = super::execution::write_commands(&workspace, packages)?;
    let runtime = scratch.join("server-runtime");
    super::recreate_dir(&runtime)?;
    std::fs::set_permissions(
        &runtime,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )?;
    let build = |served: bool, expected: &str| -> anyhow::Result<Duration> {
        let (elapsed, output) = timed(&mut once(
            exe,
            &workspace,
            &runtime,
            served,
            &["build", "...", "--format", "json"],
        ))?;
        let answer: Value = serde_json::from_slice(&output.stdout)
            .with_context(|| format!("no JSON: {}", String::from_utf8_lossy(&output.stderr)))?;
        let states = super::execution::action_states(&answer["targets"]);
        ensure!(
            states.len() == targets && states.iter().all(|s| s == expected),
            "the build is not all {expected}"
        );
        Ok(elapsed)
    };
    build(false, "miss")?;
    super::settle_for_digest_index();
    build(false, "hit")?;
    start(exe, &workspace, &runtime)?;
    build(true, "hit")?;
    let mut off = Row::empty(
        "server",
        "10k `command` targets: no-op `build ...` in-process",
    );
    let mut warm = Row::empty(
        "server",
        "10k `command` targets: no-op `build ...` through the server",
    );
    for _ in 0..runs {
        off.samples.push(build(false, "hit")?);
        warm.samples.push(build(true, "hit")?);
    }
    let status = status(exe, &workspace, &runtime)?;
    stop(exe, &workspace, &runtime);
    warm.note = format!(
        "{targets} actions all hits; {} of {} answered from the server's memory; server resident {:.1} MiB",
        status["replayed_builds"].as_u64().unwrap_or(0),
        runs + 1,
        status["resident_bytes"].as_u64().unwrap_or(0) as f64 / 1048576.0
    );
    Ok(vec![off, warm])
}

/// Runs the benchmark; a Markdown table.
pub fn run(
    exe: &Path,
    scratch: &Path,
    sizes: &[&str],
    runs: usize,
    build_packages: usize,
) -> anyhow::Result<String> {
    ensure!(
        exe.exists(),
        "no `{}`: build it first (cargo build --release)",
        exe.display()
    );
    std::fs::create_dir_all(scratch)?;
    let mut rows = Vec::new();
    for size in sizes {
        rows.extend(size_rows(exe, scratch, size, runs)?);
    }
    if build_packages > 0 {
        rows.extend(build_rows(exe, scratch, runs, build_packages)?);
    }
    let mut table = String::from("| measure | median | note |\n|---|---|---|\n");
    for row in &rows {
        table.push_str(&format!(
            "| {} | {} | {} |\n",
            row.name,
            fmt_ms(row.median()),
            row.note
        ));
    }
    Ok(table)
}
