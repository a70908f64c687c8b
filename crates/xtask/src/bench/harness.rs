//! The benchmark driver (`bench --size 1k|10k|100k`): generates the workspace, then
//! measures, round-robin so that ratios stay stable on a noisy machine, the process start,
//! the cold CLI (wall time and peak RSS), the in-process floor, the warm MCP server over
//! stdio, the warm LSP server when `once lsp` exists, and Nx on the same graph. It prints
//! one Markdown table and writes `results-<size>.json`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use super::Mcp;
use super::lsp::Lsp;
use super::synth::{self, Generated};

/// The Nx release the side by side installs (pinned so that numbers are comparable).
pub const NX_VERSION: &str = "22.0.2";

/// What `bench` was asked to do.
pub struct Options {
    pub size: String,
    pub runs: usize,
    pub once: PathBuf,
    pub out_dir: PathBuf,
    pub seed: u64,
    pub nx: bool,
    pub smoke: bool,
    /// Another `once` (an earlier version) whose cold `validate-workspace` is timed
    /// alternately with `once`'s.
    pub baseline: Option<PathBuf>,
}

/// Packages and targets per package of a preset size.
pub fn preset(size: &str) -> anyhow::Result<(usize, usize)> {
    Ok(match size {
        "1k" => (100, 10),
        "10k" => (1_000, 10),
        "100k" => (10_000, 10),
        other => bail!("unknown size `{other}` (1k, 10k or 100k)"),
    })
}

/// One measured line of the table.
struct Row {
    group: &'static str,
    name: String,
    samples: Vec<Duration>,
    rss_kib: Option<u64>,
    note: String,
}

impl Row {
    /// A row of `group` with no samples yet.
    fn empty(group: &'static str, name: &str) -> Row {
        Row {
            group,
            name: name.into(),
            samples: Vec::new(),
            rss_kib: None,
            note: String::new(),
        }
    }

    fn median(&self) -> Option<Duration> {
        Row::median_of(&self.samples)
    }

    fn median_of(samples: &[Duration]) -> Option<Duration> {
        if samples.is_empty() {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort();
        Some(sorted[sorted.len() / 2])
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn fmt_ms(duration: Option<Duration>) -> String {
    match duration {
        None => "n/a".into(),
        Some(d) if ms(d) < 10.0 => format!("{:.2} ms", ms(d)),
        Some(d) => format!("{:.1} ms", ms(d)),
    }
}

/// Runs a command to completion, its output captured; the wall time and the output.
pub(super) fn timed(command: &mut Command) -> anyhow::Result<(Duration, std::process::Output)> {
    let started = Instant::now();
    let output = command
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {command:?}"))?;
    Ok((started.elapsed(), output))
}

/// A peak RSS for the table (empty when not measured).
pub(super) fn mib(kib: Option<u64>) -> String {
    kib.map(|k| format!("{:.1} MiB", k as f64 / 1024.0))
        .unwrap_or_default()
}

/// The peak resident set of one run of `once args…`, through `/usr/bin/time -f %M`.
pub(super) fn peak_rss_kib(once: &Path, args: &[String], scratch: &Path) -> Option<u64> {
    let report = scratch.join("rss.txt");
    let status = Command::new("/usr/bin/time")
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(&report)
        .arg(once)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?;
    let _ = status;
    std::fs::read_to_string(&report)
        .ok()?
        .lines()
        .last()?
        .trim()
        .parse()
        .ok()
}

/// The floor: walk the tree and read every manifest's bytes once, in this process.
fn floor(root: &Path) -> anyhow::Result<(Duration, usize, usize)> {
    let started = Instant::now();
    let mut manifests = 0;
    let mut bytes = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let file_type = entry.file_type()?;
            if file_type.is_dir() {
                stack.push(entry.path());
            } else if entry.file_name() == "once.toml" {
                bytes += std::fs::read(entry.path())?.len();
                manifests += 1;
            }
        }
    }
    Ok((started.elapsed(), manifests, bytes))
}

/// The user + system CPU time of one run of `once args…`, through `/usr/bin/time`.
fn cpu_time(once: &Path, args: &[String], scratch: &Path) -> Option<Duration> {
    let report = scratch.join("cpu.txt");
    Command::new("/usr/bin/time")
        .args(["-f", "%U %S", "-o"])
        .arg(&report)
        .arg(once)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?;
    let text = std::fs::read_to_string(&report).ok()?;
    let seconds: f64 = text
        .lines()
        .last()?
        .split_whitespace()
        .map(|s| s.parse::<f64>().ok())
        .sum::<Option<f64>>()?;
    Some(Duration::from_secs_f64(seconds))
}

/// The user + system CPU time this process has used so far, its finished threads
/// included (`/proc/self/stat`, in clock ticks of 10 ms: compare sums over several runs).
fn own_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name, which is in parentheses and may hold spaces.
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let user: u64 = fields.nth(11)?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(Duration::from_millis((user + system) * 10))
}

/// The mean of CPU times measured around each of several runs.
fn mean_cpu(samples: &[Duration]) -> Option<Duration> {
    let count = u32::try_from(samples.len()).ok().filter(|&n| n > 0)?;
    Some(samples.iter().sum::<Duration>() / count)
}

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
fn digests(once: &Path, workspace: &Path, scratch: &Path, runs: usize) -> anyhow::Result<Vec<Row>> {
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
    let _ = Command::new("sync").status();
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

/// The machine the numbers were measured on.
pub fn machine() -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|| "unknown".into());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_kib: u64 = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    json!({
        "nproc": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "cpu": cpu,
        "memory_gib": (mem_kib as f64 / 1024.0 / 1024.0 * 10.0).round() / 10.0,
    })
}

/// The 100 changed paths for affected-tests: source files spread over the workspace.
fn changed_paths(generated: &Generated) -> Vec<String> {
    let files = &generated.source_files;
    let step = (files.len() / 100).max(1);
    files.iter().step_by(step).take(100).cloned().collect()
}

/// Edits one manifest: a valid change, or (odd runs) an unknown key that is an error.
fn edited(original: &str, run: usize) -> (String, bool) {
    let broken = run % 2 == 1;
    let line = if broken {
        format!("bogus{run} = 1\n")
    } else {
        format!("labels = [\"run{run}\"]\n")
    };
    (
        original.replacen("srcs = [", &format!("{line}srcs = ["), 1),
        broken,
    )
}

/// Runs every measure and reports; the Markdown table is returned.
/// The packages of the execution section's `command` workspace: the size's, at most
/// 1,000 (10,000 targets; the first build of 100,000 actions would take most of an hour);
/// 10 (100 targets) in a smoke run, whose debug binary builds slowly.
fn execution_packages(packages: usize, smoke: bool) -> usize {
    if smoke { 10 } else { packages.min(1_000) }
}

/// Only the execution section (`bench-exec`).
pub fn run_execution(options: &Options) -> anyhow::Result<String> {
    let (packages, _) = preset(&options.size)?;
    let scratch = options.out_dir.join("scratch");
    let (table, rows) = super::execution::run(
        &options.once,
        &scratch,
        options.runs.max(1),
        execution_packages(packages, options.smoke),
    )?;
    std::fs::create_dir_all(&options.out_dir)?;
    let file = options
        .out_dir
        .join(format!("results-exec-{}.json", options.size));
    let results = json!({ "size": options.size, "machine": machine(), "rows": rows });
    std::fs::write(&file, serde_json::to_string_pretty(&results)? + "\n")?;
    Ok(format!("{table}\nresults written to {}", file.display()))
}

pub fn run(options: &Options) -> anyhow::Result<String> {
    let (packages, per_package) = preset(&options.size)?;
    let runs = options.runs.max(1);
    let once = &options.once;
    anyhow::ensure!(
        once.exists(),
        "no `{}`: build it first (cargo build --release)",
        once.display()
    );
    std::fs::create_dir_all(&options.out_dir)?;
    let scratch = options.out_dir.join("scratch");
    std::fs::create_dir_all(&scratch)?;
    let workspace = scratch.join(format!("ws-{}", options.size));
    let started = Instant::now();
    let generated = synth::generate(&workspace, packages, per_package, options.seed)?;
    // Absolute from here on: the language server is sent `file://` URIs of it.
    let workspace = std::fs::canonicalize(&workspace)
        .with_context(|| format!("cannot resolve `{}`", workspace.display()))?;
    eprintln!(
        "generated {} targets in {packages} packages in {:.1} s",
        generated.targets,
        started.elapsed().as_secs_f64()
    );
    // The generator just wrote tens of thousands of files: let the kernel write them out
    // now, not while the first commands are timed.
    let _ = Command::new("sync").status();
    let ws = workspace.to_string_lossy().into_owned();
    let paths = changed_paths(&generated);

    // --- cold CLI, round-robin ---------------------------------------------------------
    let cold: Vec<(&'static str, String, Vec<String>)> = vec![
        ("start", "`once --version`".into(), vec!["--version".into()]),
        (
            "cold CLI",
            "`query targets --format json`".into(),
            ["query", "targets", "--format", "json", "-C", &ws]
                .map(String::from)
                .to_vec(),
        ),
        (
            "cold CLI",
            "`query validate-workspace --format json`".into(),
            ["query", "validate-workspace", "--format", "json", "-C", &ws]
                .map(String::from)
                .to_vec(),
        ),
        ("cold CLI", "`query affected-tests` (100 paths)".into(), {
            let mut args: Vec<String> = ["query", "affected-tests", "--format", "json", "-C", &ws]
                .map(String::from)
                .to_vec();
            args.extend(paths.iter().cloned());
            args
        }),
    ];
    let validate_args = cold[2].2.clone();
    let mut cold: Vec<(&'static str, String, Vec<String>, PathBuf)> = cold
        .into_iter()
        .map(|(group, name, args)| (group, name, args, once.clone()))
        .collect();
    if let Some(baseline) = &options.baseline {
        cold.push((
            "cold CLI",
            format!(
                "`query validate-workspace --format json`, baseline `{}`",
                baseline.display()
            ),
            validate_args,
            baseline.clone(),
        ));
    }
    let mut rows: Vec<Row> = cold
        .iter()
        .map(|(group, name, _, _)| Row::empty(group, name))
        .collect();
    let mut floor_row = Row::empty("floor", "walk + read every manifest (in-process)");
    // One untimed round first: every measure is of a new process with the page cache warm,
    // so the first timed run must not be the one that reads the tree from disk.
    for (_, _, args, binary) in &cold {
        timed(Command::new(binary).args(args))?;
    }
    floor(&workspace)?;
    let mut cpu: Vec<Vec<Duration>> = vec![Vec::new(); cold.len()];
    for run in 0..runs {
        for (index, (_, _, args, binary)) in cold.iter().enumerate() {
            let (elapsed, output) = timed(Command::new(binary).args(args))?;
            rows[index].samples.push(elapsed);
            if run == 0 {
                // The baseline's row (after the four above) answers `validate-workspace`.
                let kind = if index >= 4 { 2 } else { index };
                check_cold(kind, &output, &generated, &mut rows[index])?;
            }
            if let Some(time) = cpu_time(binary, args, &scratch) {
                cpu[index].push(time);
            }
        }
        let (elapsed, manifests, bytes) = floor(&workspace)?;
        floor_row.samples.push(elapsed);
        floor_row.note = format!("{manifests} manifests, {} KiB", bytes / 1024);
    }
    for (index, (_, _, args, binary)) in cold.iter().enumerate() {
        rows[index].rss_kib = peak_rss_kib(binary, args, &scratch);
        if let Some(median) = Row::median_of(&cpu[index]) {
            let note = &mut rows[index].note;
            let sep = if note.is_empty() { "" } else { "; " };
            *note = format!("{note}{sep}CPU {}", fmt_ms(Some(median)));
        }
    }
    rows.push(floor_row);

    // --- input digests: warm index, no index, sha256sum, the walk -------------------
    rows.extend(digests(once, &workspace, &scratch, runs)?);

    // --- warm MCP over stdio -----------------------------------------------------------
    rows.extend(warm_mcp(once, &workspace, &generated, &paths, runs)?);

    // --- warm LSP ----------------------------------------------------------------------
    rows.push(warm_lsp(once, &workspace, &generated, runs)?);

    // --- execution: hits, restores, warm MCP build, overhead, no-op build -------------
    let (execution, execution_rows) = super::execution::run(
        once,
        &scratch,
        runs,
        execution_packages(packages, options.smoke),
    )?;

    // --- worst cases (hostile inputs, each in a workspace of its own) -------------------
    let (worst_cases, worst_case_rows) = super::worst_cases::run(once, &scratch, runs.min(5))?;

    // --- Nx side by side ---------------------------------------------------------------
    let nx = if options.nx {
        Some(nx_side_by_side(options, &generated, runs, &rows))
    } else {
        None
    };

    // --- report ------------------------------------------------------------------------
    let floor_ms = rows
        .iter()
        .find(|r| r.group == "floor")
        .and_then(Row::median);
    let mut table = format!(
        "{} targets in {packages} packages, {} ({}), medians of {runs} runs{}\n\n\
         | group | measure | median | × floor | peak RSS | note |\n|---|---|---|---|---|---|\n",
        generated.targets,
        options.size,
        once.display(),
        if options.smoke {
            " — SMOKE RUN, not a measurement"
        } else {
            ""
        },
    );
    let mut json_rows = Vec::new();
    for row in &rows {
        let median = row.median();
        let times_floor = match (median, floor_ms) {
            (Some(m), Some(f)) if row.group == "cold CLI" && f > Duration::ZERO => {
                format!("{:.1}×", m.as_secs_f64() / f.as_secs_f64())
            }
            _ => String::new(),
        };
        let rss = mib(row.rss_kib);
        table.push_str(&format!(
            "| {} | {} | {} | {times_floor} | {rss} | {} |\n",
            row.group,
            row.name,
            fmt_ms(median),
            row.note
        ));
        json_rows.push(json!({
            "group": row.group,
            "measure": row.name,
            "median_ms": median.map(ms),
            "samples_ms": row.samples.iter().copied().map(ms).collect::<Vec<_>>(),
            "peak_rss_kib": row.rss_kib,
            "note": row.note,
        }));
    }
    table.push_str(&format!("\n{execution}\n{worst_cases}"));
    if let Some(nx) = &nx {
        table.push_str(&format!("\n{}\n", nx_table(nx)));
    }
    let results = json!({
        "size": options.size,
        "targets": generated.targets,
        "packages": packages,
        "runs": runs,
        "seed": options.seed,
        "smoke": options.smoke,
        "once": once.display().to_string(),
        "machine": machine(),
        "rows": json_rows,
        "execution": execution_rows,
        "worst_cases": worst_case_rows,
        "nx": nx,
    });
    let file = options
        .out_dir
        .join(format!("results-{}.json", options.size));
    std::fs::write(&file, serde_json::to_string_pretty(&results)? + "\n")?;
    table.push_str(&format!("\nresults written to {}\n", file.display()));
    Ok(table)
}

/// Checks the first answer of each cold command, so that the numbers measure real work.
fn check_cold(
    index: usize,
    output: &std::process::Output,
    generated: &Generated,
    row: &mut Row,
) -> anyhow::Result<()> {
    if index == 0 {
        anyhow::ensure!(output.status.success(), "`once --version` failed");
        return Ok(());
    }
    let answer: Value = serde_json::from_slice(&output.stdout).with_context(|| {
        format!(
            "`{}` answered no JSON: {}",
            row.name,
            String::from_utf8_lossy(&output.stderr)
        )
    })?;
    match index {
        1 => {
            let count = answer.as_array().map_or(0, Vec::len);
            anyhow::ensure!(
                count == generated.targets,
                "query targets listed {count} targets, expected {}",
                generated.targets
            );
        }
        2 => {
            let diagnostics = answer["diagnostics"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if answer["valid"] != json!(true) || !diagnostics.is_empty() {
                let first: Vec<&Value> = diagnostics.iter().take(3).collect();
                bail!(
                    "the generated workspace has {} diagnostics, e.g. {first:?}",
                    diagnostics.len()
                );
            }
            row.note = "valid, 0 diagnostics".into();
        }
        _ => {
            // `{"tests": [...]}` (with warnings beside) since affected-tests reports them.
            let tests = answer.get("tests").unwrap_or(&answer);
            let count = tests.as_array().map_or(0, Vec::len);
            anyhow::ensure!(count > 0, "no affected tests for 100 changed paths");
            row.note = format!("{count} affected tests");
        }
    }
    Ok(())
}

fn warm_mcp(
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

/// The CPU time between two readings, when both were taken.
fn cpu_delta(before: Option<Duration>, after: Option<Duration>) -> Option<Duration> {
    Some(after?.saturating_sub(before?))
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

fn warm_lsp(
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

fn nx_env(command: &mut Command) -> &mut Command {
    command
        .env("NX_DAEMON", "false")
        .env("NX_NO_CLOUD", "true")
        .env("NX_TUI", "false")
        .env("NX_SKIP_NX_CACHE", "true")
        .env("CI", "true")
}

/// Installs the pinned Nx into `<out>/nx` unless it is there already.
fn install_nx(dir: &Path) -> anyhow::Result<()> {
    let installed = dir.join("node_modules/nx/package.json");
    if let Ok(text) = std::fs::read_to_string(&installed) {
        let manifest: Value = serde_json::from_str(&text)?;
        if manifest["version"] == NX_VERSION {
            return Ok(());
        }
    }
    std::fs::create_dir_all(dir)?;
    std::fs::write(
        dir.join("package.json"),
        "{ \"name\": \"once-bench-nx\", \"private\": true }\n",
    )?;
    let output = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--silent"])
        .arg(format!("nx@{NX_VERSION}"))
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .context("cannot run npm")?;
    if !output.status.success() {
        bail!(
            "npm install nx@{NX_VERSION} failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

/// Writes the same graph as one `project.json` per package, `implicitDependencies` for
/// the package-level edges.
fn write_nx_workspace(root: &Path, install: &Path, generated: &Generated) -> anyhow::Result<usize> {
    if root.exists() {
        std::fs::remove_dir_all(root)?;
    }
    std::fs::create_dir_all(root)?;
    std::fs::write(root.join("nx.json"), "{}\n")?;
    std::fs::write(
        root.join("package.json"),
        "{ \"name\": \"once-bench-graph\", \"private\": true }\n",
    )?;
    #[cfg(unix)]
    std::os::unix::fs::symlink(install.join("node_modules"), root.join("node_modules"))?;
    let mut edges = 0;
    for (index, path) in generated.package_paths.iter().enumerate() {
        let deps: Vec<String> = generated.package_deps[index]
            .iter()
            .map(|d| format!("p{d}"))
            .collect();
        edges += deps.len();
        let dir = root.join(path);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(
            dir.join("project.json"),
            serde_json::to_string_pretty(&json!({
                "name": format!("p{index}"),
                "root": path,
                "implicitDependencies": deps,
            }))? + "\n",
        )?;
    }
    Ok(edges)
}

fn nx_side_by_side(options: &Options, generated: &Generated, runs: usize, rows: &[Row]) -> Value {
    match nx_measure(options, generated, runs, rows) {
        Ok(value) => value,
        Err(err) => json!({ "version": NX_VERSION, "error": format!("{err:#}") }),
    }
}

fn nx_measure(
    options: &Options,
    generated: &Generated,
    runs: usize,
    rows: &[Row],
) -> anyhow::Result<Value> {
    let install = options.out_dir.join("nx");
    install_nx(&install)?;
    let root = options
        .out_dir
        .join("scratch")
        .join(format!("nx-{}", options.size));
    let edges = write_nx_workspace(&root, &install, generated)?;
    let nx = install.join("node_modules/.bin/nx");
    let runs = runs.clamp(1, 5);
    let mut show = Vec::new();
    let mut graph = Vec::new();
    for run in 0..runs {
        // Cold: no project-graph cache from the previous run.
        let _ = std::fs::remove_dir_all(root.join(".nx"));
        let (elapsed, output) = timed(nx_env(
            Command::new(&nx)
                .args(["show", "projects", "--json"])
                .current_dir(&root),
        ))?;
        if !output.status.success() {
            bail!(
                "`nx show projects --json` failed: {}{}",
                String::from_utf8_lossy(&output.stdout).trim(),
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        show.push(elapsed);
        if run == 0 {
            let projects: Value = serde_json::from_slice(&output.stdout)
                .context("`nx show projects --json` answered no JSON")?;
            let count = projects.as_array().map_or(0, Vec::len);
            anyhow::ensure!(
                count == generated.package_paths.len(),
                "Nx listed {count} projects, expected {}",
                generated.package_paths.len()
            );
        }
        let _ = std::fs::remove_dir_all(root.join(".nx"));
        let out = root.join("graph.json");
        let (elapsed, output) = timed(nx_env(
            Command::new(&nx)
                .arg("graph")
                .arg(format!("--file={}", out.display()))
                .current_dir(&root),
        ))?;
        if !output.status.success() {
            bail!(
                "`nx graph` failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        graph.push(elapsed);
        if run == 0 {
            let written: Value = serde_json::from_slice(&std::fs::read(&out)?)?;
            let nodes = written["graph"]["nodes"].as_object().map_or(0, |n| n.len());
            let dependencies: usize = written["graph"]["dependencies"].as_object().map_or(0, |d| {
                d.values().map(|v| v.as_array().map_or(0, Vec::len)).sum()
            });
            anyhow::ensure!(
                nodes == generated.package_paths.len() && dependencies == edges,
                "Nx's graph has {nodes} nodes and {dependencies} edges, expected {} and {edges}",
                generated.package_paths.len()
            );
        }
    }
    let median = |samples: &mut Vec<Duration>| {
        samples.sort();
        samples[samples.len() / 2]
    };
    let show_ms = ms(median(&mut show));
    let graph_ms = ms(median(&mut graph));
    let once_ms: BTreeMap<&str, f64> = rows
        .iter()
        .filter(|r| r.group == "cold CLI")
        .filter_map(|r| {
            let key = if r.name.contains("targets") {
                "targets"
            } else if r.name.contains("validate") {
                "validate"
            } else {
                return None;
            };
            Some((key, ms(r.median()?)))
        })
        .collect();
    let targets_ms = once_ms.get("targets").copied().unwrap_or(f64::NAN);
    let validate_ms = once_ms.get("validate").copied().unwrap_or(f64::NAN);
    Ok(json!({
        "version": NX_VERSION,
        "projects": generated.package_paths.len(),
        "edges": edges,
        "runs": runs,
        "nx_show_projects_ms": show_ms,
        "nx_graph_file_ms": graph_ms,
        "once_query_targets_ms": targets_ms,
        "once_validate_workspace_ms": validate_ms,
        "ratio_show_vs_targets": show_ms / targets_ms,
        "ratio_graph_vs_validate": graph_ms / validate_ms,
    }))
}

fn nx_table(nx: &Value) -> String {
    if let Some(error) = nx["error"].as_str() {
        return format!("Nx {}: did not run: {error}", nx["version"]);
    }
    let f = |key: &str| nx[key].as_f64().unwrap_or(f64::NAN);
    format!(
        "Nx {} side by side ({} projects, {} edges, daemon off, no cache, medians of {} runs)\n\n\
         | Nx | median | once | median | Nx ÷ once |\n|---|---|---|---|---|\n\
         | `nx show projects --json` | {:.1} ms | `once query targets --format json` | {:.1} ms | {:.1}× |\n\
         | `nx graph --file=graph.json` | {:.1} ms | `once query validate-workspace` | {:.1} ms | {:.1}× |\n",
        nx["version"].as_str().unwrap_or(""),
        nx["projects"],
        nx["edges"],
        nx["runs"],
        f("nx_show_projects_ms"),
        f("once_query_targets_ms"),
        f("ratio_show_vs_targets"),
        f("nx_graph_file_ms"),
        f("once_validate_workspace_ms"),
        f("ratio_graph_vs_validate"),
    )
}
