//! The digest benchmark (`bench digests`): walking and stat-ing a generated tree, the
//! in-process digest pass, and `once` hashing the same files cold and warm, against
//! `sha256sum` as the floor.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::Value;

use super::harness::{
    Options, Row, cpu_delta, cpu_time, fmt_ms, mean_cpu, own_cpu, preset, timed, write_back,
};
use super::synth::{self};

/// Walks the tree and stats every file, in this process: what any tool that checks a
/// tree for changes pays at least. The time, the number of files and their bytes.
fn walk_and_stat(root: &Path) -> anyhow::Result<(Duration, usize, u64)> {
    let started = Instant::now();
    let (mut files, mut bytes) = (0, 0);
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            if entry.file_name() == ".once" {
                continue;
            }
            let metadata = std::fs::symlink_metadata(entry.path())?;
            if metadata.is_dir() {
                stack.push(entry.path());
            } else {
                files += 1;
                bytes += metadata.len();
            }
        }
    }
    Ok((started.elapsed(), files, bytes))
}

/// The digests alone, in this process: loads the workspace and resolves every target
/// (what `query targets` does), then times only [`Analysis::every_target_inputs`] on one
/// thread per core: the `stat`s, index lookups, hashing and per-target digests, without
/// the process start, the manifests' evaluation or the JSON. The time and the bytes hashed.
///
/// [`Analysis::every_target_inputs`]: once_analysis::Analysis::every_target_inputs
fn digest_pass(workspace: &Path) -> anyhow::Result<(Duration, Option<Duration>, u64, usize)> {
    let host = once_analysis::AnalysisHost::load(
        std::sync::Arc::new(once_analysis::OsSystem),
        workspace.to_path_buf(),
    );
    let analysis = host.analysis();
    let threads = once_analysis::default_prime_threads();
    let cancelled = |_| anyhow::anyhow!("cancelled");
    analysis.prime(threads).map_err(cancelled)?;
    analysis.targets(None).map_err(cancelled)?;
    let cpu_before = own_cpu();
    let started = Instant::now();
    let answers = analysis.every_target_inputs(threads).map_err(cancelled)?;
    let elapsed = started.elapsed();
    let cpu = cpu_delta(cpu_before, own_cpu());
    let answered = answers.len();
    let bytes = analysis.bytes_hashed();
    // Freed after the measure, so that the next run reuses the memory instead of growing
    // this process by a database per run.
    drop(answers);
    drop(analysis);
    drop(host);
    Ok((elapsed, cpu, bytes, answered))
}

/// `once query inputs --format json` (the digests of every target's inputs) in a new
/// process with the digest index warm and with none, `query targets` beside it (the
/// manifests' evaluation both do), the digest pass alone in this process with the index
/// warm and with none, `sha256sum` over the same files, and the walk that stats every
/// file; round-robin.
pub(super) fn digests(
    once: &Path,
    workspace: &Path,
    scratch: &Path,
    runs: usize,
) -> anyhow::Result<Vec<Row>> {
    let row = |name: &str| Row::empty("digests", name);
    let mut walk = row("walk + stat every file (in-process)");
    let mut targets_row = row("`query targets --format json` (the same run)");
    let mut warm = row("`query inputs --format json`, warm digest index");
    let mut warm_part = row("digests alone, warm index (`query inputs` − `query targets`)");
    let mut warm_pass = row("digests alone, warm index (in-process pass)");
    let mut cold = row("`query inputs --format json`, no digest index");
    let mut cold_pass = row("digests alone, no index (in-process pass)");
    let mut sha256sum = row("`sha256sum` over the same files (one process)");
    let arguments = |query: &str| -> Vec<String> {
        ["query", query, "--format", "json", "-C"]
            .map(String::from)
            .into_iter()
            .chain([workspace.to_string_lossy().into_owned()])
            .collect()
    };
    let args = arguments("inputs");
    let targets_args = arguments("targets");
    let index = workspace.join(".once/digests");
    // The first answer lists the files; it also writes the index (of settled files).
    let _ = std::fs::remove_file(&index);
    super::settle_for_digest_index();
    let (_, output) = timed(Command::new(once).args(&args))?;
    anyhow::ensure!(
        output.status.success(),
        "`query inputs` failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let answer: Value = serde_json::from_slice(&output.stdout).context("`query inputs` JSON")?;
    let targets = answer.as_array().map_or(0, Vec::len);
    let mut files: Vec<String> = answer
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|t| t["inputs"].as_array().cloned().unwrap_or_default())
        .filter_map(|i| i["path"].as_str().map(str::to_owned))
        .collect();
    files.sort_unstable();
    files.dedup();
    let bytes: u64 = files
        .iter()
        .filter_map(|f| std::fs::metadata(workspace.join(f)).ok())
        .map(|m| m.len())
        .sum();
    anyhow::ensure!(index.exists(), "`query inputs` wrote no digest index");
    let mut warm_cpu = Vec::new();
    let mut targets_cpu = Vec::new();
    let mut cold_cpu = Vec::new();
    let mut cold_pass_bytes = 0;
    let mut warm_pass_hashed = 0;
    let (mut walk_cpu, mut warm_pass_cpu, mut cold_pass_cpu) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        let cpu_before = own_cpu();
        let (elapsed, files_seen, tree_bytes) = walk_and_stat(workspace)?;
        walk_cpu.extend(cpu_delta(cpu_before, own_cpu()));
        walk.samples.push(elapsed);
        walk.note = format!("{files_seen} files, {:.1} MB", tree_bytes as f64 / 1e6);

        let (elapsed, output) = timed(Command::new(once).args(&targets_args))?;
        anyhow::ensure!(output.status.success(), "`query targets` failed");
        targets_row.samples.push(elapsed);
        targets_cpu.extend(cpu_time(once, &targets_args, scratch));

        let (elapsed, output) = timed(Command::new(once).args(&args))?;
        anyhow::ensure!(output.status.success(), "`query inputs` failed");
        warm.samples.push(elapsed);
        warm_cpu.extend(cpu_time(once, &args, scratch));

        let (elapsed, cpu, hashed, answered) = digest_pass(workspace)?;
        warm_pass_cpu.extend(cpu);
        anyhow::ensure!(
            answered == targets,
            "the warm pass answered {answered} targets, expected {targets}"
        );
        // Files written in the index's own timestamp tick are hashed again (the racy rule);
        // on a file system with coarse timestamps that can be some of a fresh workspace.
        warm_pass_hashed = warm_pass_hashed.max(hashed);
        warm_pass.samples.push(elapsed);

        let _ = std::fs::remove_file(&index);
        let (elapsed, cpu, hashed, _) = digest_pass(workspace)?;
        cold_pass_cpu.extend(cpu);
        cold_pass.samples.push(elapsed);
        cold_pass_bytes = hashed;

        let (elapsed, output) = timed(Command::new(once).args(&args))?;
        anyhow::ensure!(output.status.success(), "`query inputs` failed");
        cold.samples.push(elapsed);
        let _ = std::fs::remove_file(&index);
        cold_cpu.extend(cpu_time(once, &args, scratch));

        let (elapsed, output) = timed(
            Command::new("sha256sum")
                .current_dir(workspace)
                .args(&files),
        )?;
        anyhow::ensure!(output.status.success(), "`sha256sum` failed");
        sha256sum.samples.push(elapsed);
    }
    let megabytes = bytes as f64 / 1e6;
    let throughput = |megabytes: f64, time: Option<Duration>| {
        time.map_or(0.0, |t| megabytes / t.as_secs_f64().max(1e-9))
    };
    walk.note = format!("{}; mean CPU {}", walk.note, fmt_ms(mean_cpu(&walk_cpu)));
    let walk_ratio = |time: Option<Duration>| match (time, walk.median()) {
        (Some(w), Some(t)) if t > Duration::ZERO => w.as_secs_f64() / t.as_secs_f64(),
        _ => 0.0,
    };
    // The digest part of the new process: each run's `query inputs` minus the `query
    // targets` run just before it.
    warm_part.samples = warm
        .samples
        .iter()
        .zip(&targets_row.samples)
        .map(|(inputs, targets)| inputs.saturating_sub(*targets))
        .collect();
    let cpu_part: Vec<Duration> = warm_cpu
        .iter()
        .zip(&targets_cpu)
        .map(|(inputs, targets)| inputs.saturating_sub(*targets))
        .collect();
    targets_row.note = format!("CPU {}", fmt_ms(Row::median_of(&targets_cpu)));
    warm.note = format!(
        "{targets} targets, {:.2}× the walk; CPU {}",
        walk_ratio(warm.median()),
        fmt_ms(Row::median_of(&warm_cpu))
    );
    warm_part.note = format!(
        "{:.2}× the walk; CPU {}",
        walk_ratio(warm_part.median()),
        fmt_ms(Row::median_of(&cpu_part))
    );
    warm_pass.note = format!(
        "{:.2}× the walk; {} threads; mean CPU {}{}",
        walk_ratio(warm_pass.median()),
        once_analysis::default_prime_threads(),
        fmt_ms(mean_cpu(&warm_pass_cpu)),
        if warm_pass_hashed == 0 {
            String::new()
        } else {
            format!("; up to {warm_pass_hashed} bytes hashed again (racy rule)")
        }
    );
    // The hashing alone is what the run without an index costs beyond the warm run.
    let hashing = match (cold.median(), warm.median()) {
        (Some(c), Some(w)) if c > w => Some(c - w),
        _ => None,
    };
    cold.note = format!(
        "{} files, {megabytes:.1} MB: {:.0} MB/s overall, {:.0} MB/s beyond the warm run; CPU {}",
        files.len(),
        throughput(megabytes, cold.median()),
        throughput(megabytes, hashing),
        fmt_ms(Row::median_of(&cold_cpu))
    );
    cold_pass.note = format!(
        "{:.1} MB hashed: {:.0} MB/s; mean CPU {}",
        cold_pass_bytes as f64 / 1e6,
        throughput(cold_pass_bytes as f64 / 1e6, cold_pass.median()),
        fmt_ms(mean_cpu(&cold_pass_cpu))
    );
    sha256sum.note = format!("{:.0} MB/s", throughput(megabytes, sha256sum.median()));
    Ok(vec![
        walk,
        targets_row,
        warm,
        warm_part,
        warm_pass,
        cold,
        cold_pass,
        sha256sum,
    ])
}

/// Only the digest measures of `bench` on a generated workspace (`bench-digests`).
pub fn run_digests(options: &Options) -> anyhow::Result<String> {
    let (packages, per_package) = preset(&options.size)?;
    anyhow::ensure!(
        options.once.exists(),
        "no `{}`: build it first (cargo build --release)",
        options.once.display()
    );
    let scratch = options.out_dir.join("scratch");
    std::fs::create_dir_all(&scratch)?;
    let workspace = scratch.join(format!("ws-{}", options.size));
    let generated = synth::generate(&workspace, packages, per_package, options.seed)?;
    let workspace = std::fs::canonicalize(&workspace)
        .with_context(|| format!("cannot resolve `{}`", workspace.display()))?;
    write_back()?;
    let runs = options.runs.max(1);
    let rows = digests(&options.once, &workspace, &scratch, runs)?;
    let mut table = format!(
        "{} targets in {packages} packages, {} ({}), medians of {runs} runs\n\n| measure | median | note |\n|---|---|---|\n",
        generated.targets,
        options.size,
        options.once.display()
    );
    for row in rows {
        table.push_str(&format!(
            "| {} | {} | {} |\n",
            row.name,
            fmt_ms(row.median()),
            row.note
        ));
    }
    Ok(table)
}
