//! The benchmark driver (`bench --size 1k|10k|100k`): generates the workspace, then
//! measures, round-robin so that ratios stay stable on a noisy machine, the process start,
//! the cold CLI (wall time and peak RSS), the in-process floor, the warm MCP server over
//! stdio, the warm LSP server when `once lsp` exists, and Nx on the same graph. It prints
//! one Markdown table and writes `results-<size>.json`. The warm servers' measurements
//! are in `warm`, Nx in `nx`, the digest benchmark in `digests`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use super::digests::digests;
use super::nx::{nx_side_by_side, nx_table};
use super::synth::{self, Generated};
use super::warm::{warm_lsp, warm_mcp};

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
pub(super) struct Row {
    pub(super) group: &'static str,
    pub(super) name: String,
    pub(super) samples: Vec<Duration>,
    pub(super) rss_kib: Option<u64>,
    pub(super) note: String,
}

impl Row {
    /// A row of `group` with no samples yet.
    pub(super) fn empty(group: &'static str, name: &str) -> Row {
        Row {
            group,
            name: name.into(),
            samples: Vec::new(),
            rss_kib: None,
            note: String::new(),
        }
    }

    pub(super) fn median(&self) -> Option<Duration> {
        Row::median_of(&self.samples)
    }

    pub(super) fn median_of(samples: &[Duration]) -> Option<Duration> {
        if samples.is_empty() {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort();
        Some(sorted[sorted.len() / 2])
    }
}

pub(super) fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

pub(super) fn fmt_ms(duration: Option<Duration>) -> String {
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

/// Writes what the kernel holds of earlier writes to the disk now (`sync`), so that its
/// write-back does not fall into the next measure.
pub(super) fn write_back() -> anyhow::Result<()> {
    let status = Command::new("sync").status().context("cannot run `sync`")?;
    anyhow::ensure!(status.success(), "`sync` failed");
    Ok(())
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
pub(super) fn floor(root: &Path) -> anyhow::Result<(Duration, usize, usize)> {
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
pub(super) fn cpu_time(once: &Path, args: &[String], scratch: &Path) -> Option<Duration> {
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
pub(super) fn own_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name, which is in parentheses and may hold spaces.
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let user: u64 = fields.nth(11)?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(Duration::from_millis((user + system) * 10))
}

/// The mean of CPU times measured around each of several runs.
pub(super) fn mean_cpu(samples: &[Duration]) -> Option<Duration> {
    let count = u32::try_from(samples.len()).ok().filter(|&n| n > 0)?;
    Some(samples.iter().sum::<Duration>() / count)
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
pub(super) fn changed_paths(generated: &Generated) -> Vec<String> {
    let files = &generated.source_files;
    let step = (files.len() / 100).max(1);
    files.iter().step_by(step).take(100).cloned().collect()
}

/// Edits one manifest: a valid change, or (odd runs) an unknown key that is an error.
pub(super) fn edited(original: &str, run: usize) -> (String, bool) {
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
    write_back()?;
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

/// The CPU time between two readings, when both were taken.
pub(super) fn cpu_delta(before: Option<Duration>, after: Option<Duration>) -> Option<Duration> {
    Some(after?.saturating_sub(before?))
}
