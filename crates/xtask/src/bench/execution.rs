//! The execution section of `bench` (issue 15), through the real `once` binary on
//! generated workspaces of `command` targets:
//!
//! - **the cache-comparison graph**: 15 `command` targets, each waiting 40 ms and writing
//!   a 1–16 MiB artifact (84 MiB in all, distinct bytes per target), shaped like the
//!   original's: two layers of five and one of four, each target depending on two of the
//!   layer before, and `n14` (the original's `distribution.bin`: 1 MiB) depending on the
//!   four of the third layer, so that its closure is all 15 actions; a `filegroup` `All`
//!   over `n10`–`n14` (22 MiB). Measured: the cold build (one run), a full
//!   hit in a new process with the outputs in place, a full hit after `rm -rf .once/out`
//!   (every output restored from the store), and a warm `once mcp --allow-run` answering
//!   `once_build_target` for `All` (every action a hit);
//! - **executor overhead**: 200 trivial actions (`echo N > $OUT/o`), built with `-j 1`
//!   from a store without action records or blobs (the plan memo kept; each round's
//!   files moved aside rather than deleted, see [`overhead_row`]), minus the no-op build of the same targets (planning, the
//!   process, the hits) minus a shell loop running the same 200 command lines (`sh -c`
//!   making `$OUT` with `mkdir -p`, then `echo`, as the `command` kind runs them):
//!   what running an action through `once` adds per action (spawn, capture, store,
//!   evidence);
//! - **no-op build of a generated workspace**: `P × 10` `command` targets (one directory
//!   each with a source file the command copies, a chain inside each package), built
//!   once, then `once build ...` in a new process with the digest index and the output
//!   stamps warm, next to the cold `query validate-workspace` of the same workspace.
//!
//! Every answer is checked (the cache state of each action, the outputs' sizes), and the
//! load average is noted with each row: the numbers come from a shared machine.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use serde_json::{Value, json};

use super::Mcp;
use super::harness::timed;

/// The artifact sizes of the 15 actions, in MiB (84 in all); the last, which depends on
/// every other through the layers, is the original's 1 MiB `distribution.bin`.
pub(super) const ARTIFACT_MIB: [u32; 15] = [1, 2, 4, 8, 16, 1, 2, 4, 8, 16, 2, 4, 8, 7, 1];

/// The target whose closure is all 15 actions and whose output is 1 MiB.
pub(super) const DISTRIBUTION: &str = "n14";

/// The package of the cache-comparison graph.
pub(super) const GRAPH_PACKAGE: &str = "pkgs/graph";

/// How many trivial actions the overhead measure runs.
const TRIVIAL_ACTIONS: usize = 200;

/// One measured line of the execution table.
struct Row {
    name: &'static str,
    samples: Vec<Duration>,
    target: &'static str,
    note: String,
}

impl Row {
    fn new(name: &'static str, target: &'static str) -> Row {
        Row {
            name,
            samples: Vec::new(),
            target,
            note: String::new(),
        }
    }

    fn median(&self) -> Option<Duration> {
        let mut sorted = self.samples.clone();
        sorted.sort();
        sorted.get(sorted.len() / 2).copied()
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

/// The one-minute load average (`/proc/loadavg`).
pub(super) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".into())
}

/// The load averages seen during a measure, as `a` or `a–b`.
pub(super) fn load_range(loads: &[String]) -> String {
    let values: Vec<f64> = loads.iter().filter_map(|load| load.parse().ok()).collect();
    let low = values.iter().copied().fold(f64::INFINITY, f64::min);
    let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    match values.len() {
        0 => "?".into(),
        _ if low == high => format!("{low:.2}"),
        _ => format!("{low:.2}–{high:.2}"),
    }
}

/// Writes the root manifest of a workspace whose packages are under `pkgs/`.
fn write_root(root: &Path) -> anyhow::Result<()> {
    super::recreate_dir(root)?;
    std::fs::write(
        root.join("once.toml"),
        "[workspace]\ninclude = [\"pkgs/**\"]\n",
    )?;
    Ok(())
}

/// The cache-comparison graph (see the module documentation).
pub(super) fn write_graph(root: &Path) -> anyhow::Result<()> {
    write_root(root)?;
    let package = root.join(GRAPH_PACKAGE);
    std::fs::create_dir_all(&package)?;
    let mut manifest = String::new();
    for (index, mib) in ARTIFACT_MIB.iter().enumerate() {
        let deps = if index < 5 {
            String::new()
        } else if index == 14 {
            "\"./n10\", \"./n11\", \"./n12\", \"./n13\"".to_owned()
        } else {
            let layer_start = (index / 5 - 1) * 5;
            format!(
                "\"./n{:02}\", \"./n{:02}\"",
                index - 5,
                layer_start + (index + 1) % 5
            )
        };
        // Distinct bytes per artifact, so that the store holds 84 MiB.
        let byte = b'a' + index as u8;
        manifest.push_str(&format!(
            "[[target]]\nname = \"n{index:02}\"\nkind = \"command\"\ndeps = [{deps}]\n\n\
             [target.attrs]\ncmd = \"sleep 0.04; head -c {mib}M /dev/zero | tr '\\\\0' '{}' > $OUT/n{index:02}\"\n\
             outputs = [\"n{index:02}\"]\n\n",
            byte as char
        ));
    }
    manifest.push_str(
        "[[target]]\nname = \"All\"\nkind = \"filegroup\"\n\
         deps = [\"./n10\", \"./n11\", \"./n12\", \"./n13\", \"./n14\"]\n",
    );
    std::fs::write(package.join("once.toml"), manifest)?;
    Ok(())
}

/// `count` trivial `command` targets in one package.
fn write_trivial(root: &Path, count: usize) -> anyhow::Result<()> {
    write_root(root)?;
    let package = root.join("pkgs/trivial");
    std::fs::create_dir_all(&package)?;
    let mut manifest = String::new();
    for index in 0..count {
        manifest.push_str(&format!(
            "[[target]]\nname = \"t{index}\"\nkind = \"command\"\n\n\
             [target.attrs]\ncmd = \"echo {index} > $OUT/o\"\noutputs = [\"o\"]\n\n"
        ));
    }
    std::fs::write(package.join("once.toml"), manifest)?;
    Ok(())
}

/// `packages × 10` `command` targets: each in a directory of its own with a source file
/// it copies, chained inside its package.
pub(super) fn write_commands(root: &Path, packages: usize) -> anyhow::Result<usize> {
    write_root(root)?;
    for p in 0..packages {
        let package = root.join(format!("pkgs/g{}/p{p}", p / 100));
        let mut manifest = String::new();
        for t in 0..10 {
            std::fs::create_dir_all(package.join(format!("t{t}")))?;
            std::fs::write(package.join(format!("t{t}/in.txt")), format!("{p} {t}\n"))?;
            let deps = if t == 0 {
                String::new()
            } else {
                format!("\"./T{}\"", t - 1)
            };
            manifest.push_str(&format!(
                "[[target]]\nname = \"T{t}\"\nkind = \"command\"\nsrcs = [\"t{t}/in.txt\"]\ndeps = [{deps}]\n\n\
                 [target.attrs]\ncmd = \"cp t{t}/in.txt $OUT/out.txt\"\noutputs = [\"out.txt\"]\n\n"
            ));
        }
        std::fs::write(package.join("once.toml"), manifest)?;
    }
    Ok(packages * 10)
}

/// `once build ... --format json` in `workspace` (with `extra` arguments): the wall time
/// and each action's cache state, checked to have succeeded.
fn build(once: &Path, workspace: &Path, extra: &[&str]) -> anyhow::Result<(Duration, Vec<String>)> {
    let (elapsed, output) = timed(
        Command::new(once)
            .args(["build", "...", "--format", "json", "-C"])
            .arg(workspace)
            .args(extra),
    )?;
    let answer: Value = serde_json::from_slice(&output.stdout).with_context(|| {
        format!(
            "`once build` answered no JSON: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    })?;
    ensure!(
        output.status.success() && answer["success"] == json!(true),
        "`once build` failed: {answer}"
    );
    Ok((elapsed, action_states(&answer["targets"])))
}

/// The cache state of every action of the records in `targets`.
pub(super) fn action_states(targets: &Value) -> Vec<String> {
    targets
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|record| record["actions"].as_array().cloned().unwrap_or_default())
        .map(|action| action["cache"].as_str().unwrap_or("none").to_owned())
        .collect()
}

fn ensure_all(states: &[String], expected: &str, count: usize, what: &str) -> anyhow::Result<()> {
    ensure!(
        states.len() == count && states.iter().all(|state| state == expected),
        "{what}: expected {count} actions `{expected}`, got {states:?}"
    );
    Ok(())
}

/// Checks that every artifact of the graph is in place with its size.
pub(super) fn check_artifacts(workspace: &Path) -> anyhow::Result<()> {
    for (index, mib) in ARTIFACT_MIB.iter().enumerate() {
        let path = workspace.join(format!(
            ".once/out/{GRAPH_PACKAGE}/n{index:02}/out/n{index:02}"
        ));
        let size = std::fs::metadata(&path)
            .with_context(|| format!("`{}` is missing", path.display()))?
            .len();
        ensure!(
            size == u64::from(*mib) << 20,
            "`{}` has {size} bytes",
            path.display()
        );
    }
    Ok(())
}

/// The cache-comparison graph: cold build, full hits, restore, warm MCP.
fn graph_rows(once: &Path, scratch: &Path, runs: usize) -> anyhow::Result<Vec<Row>> {
    let workspace = scratch.join("exec-graph");
    write_graph(&workspace)?;
    let mut cold = Row::new("cold build of the 15 actions (one run)", "");
    let load = load_average();
    let (elapsed, states) = build(once, &workspace, &[])?;
    ensure_all(&states, "miss", 15, "the cold build")?;
    check_artifacts(&workspace)?;
    cold.samples.push(elapsed);
    cold.note = format!("load {load}");

    let mut hit = Row::new("full hit, outputs in place, new process", "≤ 10 ms");
    let mut restore = Row::new(
        "full hit after `rm -rf .once/out` (84 MiB restored)",
        "≤ 30 ms",
    );
    // Untimed: the first hit hashes the outputs written in the stamp file's clock tick.
    for _ in 0..2 {
        build(once, &workspace, &[])?;
    }
    let (mut hit_load, mut restore_load) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        hit_load.push(load_average());
        let (elapsed, states) = build(once, &workspace, &[])?;
        ensure_all(&states, "hit", 15, "a full hit")?;
        hit.samples.push(elapsed);

        std::fs::remove_dir_all(workspace.join(".once/out"))?;
        restore_load.push(load_average());
        let (elapsed, states) = build(once, &workspace, &[])?;
        ensure_all(&states, "hit", 15, "a restore")?;
        check_artifacts(&workspace)?;
        restore.samples.push(elapsed);
    }
    hit.note = format!("load {}", load_range(&hit_load));
    restore.note = format!("load {}", load_range(&restore_load));

    let mut warm = Row::new(
        "warm MCP `once_build_target` full hit (`All`, 15 actions)",
        "≤ 2 ms",
    );
    let mut mcp = Mcp::start_with(once, &workspace, &["--allow-run"])?;
    let target = format!("{GRAPH_PACKAGE}/All");
    let call = |mcp: &mut Mcp| -> anyhow::Result<Duration> {
        let started = Instant::now();
        let answer = mcp.call_tool("once_build_target", json!({ "target": target }))?;
        let elapsed = started.elapsed();
        ensure!(
            answer["result"]["success"] == json!(true),
            "`once_build_target` failed: {answer}"
        );
        Ok(elapsed)
    };
    for _ in 0..3 {
        call(&mut mcp)?;
    }
    let before = artifact_times(&workspace)?;
    let load = load_average();
    for _ in 0..runs.max(5) * 4 {
        warm.samples.push(call(&mut mcp)?);
    }
    ensure!(
        artifact_times(&workspace)? == before,
        "the warm MCP builds rewrote an artifact"
    );
    // The server's own record of the last build: every action of the closure a hit.
    let evidence = mcp.call_tool("once_query_evidence", json!({ "limit": 15 }))?;
    let cached: Vec<String> = evidence["result"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|record| record["cache"].as_str().unwrap_or("none").to_owned())
        .collect();
    ensure_all(&cached, "hit", 15, "the warm MCP build's evidence")?;
    warm.note = format!(
        "load {load}; {} calls; the artifacts untouched, the last build's 15 evidence records hits",
        warm.samples.len()
    );
    Ok(vec![cold, hit, restore, warm])
}

/// The inode and modification time of every artifact (a build that rewrote one changes
/// them).
fn artifact_times(workspace: &Path) -> anyhow::Result<Vec<(u64, i64)>> {
    use std::os::unix::fs::MetadataExt as _;
    ARTIFACT_MIB
        .iter()
        .enumerate()
        .map(|(index, _)| {
            let metadata = std::fs::metadata(workspace.join(format!(
                ".once/out/{GRAPH_PACKAGE}/n{index:02}/out/n{index:02}"
            )))?;
            Ok((metadata.ino(), metadata.mtime_nsec()))
        })
        .collect()
}

/// Executor overhead per action over the bare command.
fn overhead_row(once: &Path, scratch: &Path, runs: usize) -> anyhow::Result<Row> {
    let workspace = scratch.join("exec-trivial");
    write_trivial(&workspace, TRIVIAL_ACTIONS)?;
    let loop_dir = scratch.join("exec-trivial-loop");
    // The command line the `command` kind runs for each target (`once query actions`):
    // `sh -c` making `$OUT`, then the target's `cmd`.
    let script = format!(
        "for i in $(seq {TRIVIAL_ACTIONS}); do OUT={}/t$i sh -c 'mkdir -p \"$OUT\" || exit 1
         echo '$i' > $OUT/o'; done",
        loop_dir.display()
    );
    let mut row = Row::new(
        "executor overhead per executed action (200 trivial actions, `-j 1`)",
        "≤ 2 ms",
    );
    build(once, &workspace, &["-j", "1"])?;
    // Each round's results are moved aside, not deleted, until the row is measured: on
    // ext4 without a journal, a file created within a minute or more of mass deletions
    // makes the inode allocator step over every recently freed inode
    // (`recently_deleted`), which then dominates both sides of the comparison.
    let trash = scratch.join("exec-trivial-trash");
    super::recreate_dir(&trash)?;
    let (mut cold, mut noop, mut bare, mut loads) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for round in 0..runs {
        loads.push(load_average());
        // The plan memo and the tool identities stay: planning is not the executor's
        // overhead, and the no-op build subtracted below plans from the memo too.
        let aside = trash.join(round.to_string());
        std::fs::create_dir_all(&aside)?;
        for directory in [".once/cache/actions", ".once/cache/blobs", ".once/out"] {
            let moved = aside.join(directory.replace('/', "-"));
            std::fs::rename(workspace.join(directory), moved)
                .with_context(|| format!("cannot move `{directory}` aside"))?;
        }
        let (elapsed, states) = build(once, &workspace, &["-j", "1"])?;
        ensure_all(&states, "miss", TRIVIAL_ACTIONS, "the trivial build")?;
        cold.push(elapsed);
        let (elapsed, states) = build(once, &workspace, &["-j", "1"])?;
        ensure_all(&states, "hit", TRIVIAL_ACTIONS, "the trivial no-op build")?;
        noop.push(elapsed);
        if loop_dir.exists() {
            std::fs::rename(&loop_dir, aside.join("loop"))?;
        }
        std::fs::create_dir_all(&loop_dir)?;
        let (elapsed, output) = timed(Command::new("sh").args(["-c", &script]))?;
        ensure!(output.status.success(), "the shell loop failed");
        bare.push(elapsed);
    }
    std::fs::remove_dir_all(&trash)?;
    let median = |samples: &[Duration]| {
        let mut sorted = samples.to_vec();
        sorted.sort();
        sorted[sorted.len() / 2]
    };
    for ((cold, noop), bare) in cold.iter().zip(&noop).zip(&bare) {
        let extra = cold.saturating_sub(*noop).saturating_sub(*bare);
        row.samples.push(extra / TRIVIAL_ACTIONS as u32);
    }
    row.note = format!(
        "load {}; medians: build without records or blobs {}, no-op build {}, shell loop {}",
        load_range(&loads),
        fmt_ms(Some(median(&cold))),
        fmt_ms(Some(median(&noop))),
        fmt_ms(Some(median(&bare)))
    );
    Ok(row)
}

/// How many trivial actions the sandbox row builds.
const SANDBOX_ACTIONS: usize = 150;

/// The sandbox's cost per executed action: 150 trivial `command` targets built with `-j 1`
/// from a store without action records or blobs, with `--sandbox on` and `--sandbox off`
/// alternated (which goes first alternates too), the difference divided by 150.
fn sandbox_row(once: &Path, scratch: &Path, runs: usize) -> anyhow::Result<Row> {
    let workspace = scratch.join("exec-sandbox");
    write_trivial(&workspace, SANDBOX_ACTIONS)?;
    let mut row = Row::new(
        "sandbox overhead per executed action (150 trivial actions, `-j 1`, on − off)",
        "≤ 1 ms",
    );
    build(once, &workspace, &["-j", "1", "--sandbox", "on"])?;
    build(once, &workspace, &["-j", "1", "--sandbox", "off"])?;
    let trash = scratch.join("exec-sandbox-trash");
    super::recreate_dir(&trash)?;
    let (mut on, mut off, mut loads) = (Vec::new(), Vec::new(), Vec::new());
    let cold = |mode: &str, round: usize| -> anyhow::Result<Duration> {
        let aside = trash.join(format!("{round}-{mode}"));
        std::fs::create_dir_all(&aside)?;
        for directory in [".once/cache/actions", ".once/cache/blobs", ".once/out"] {
            let moved = aside.join(directory.replace('/', "-"));
            std::fs::rename(workspace.join(directory), moved)
                .with_context(|| format!("cannot move `{directory}` aside"))?;
        }
        let (elapsed, states) = build(once, &workspace, &["-j", "1", "--sandbox", mode])?;
        ensure_all(&states, "miss", SANDBOX_ACTIONS, "the trivial build")?;
        Ok(elapsed)
    };
    for round in 0..runs {
        loads.push(load_average());
        if round % 2 == 0 {
            on.push(cold("on", round)?);
            off.push(cold("off", round)?);
        } else {
            off.push(cold("off", round)?);
            on.push(cold("on", round)?);
        }
    }
    std::fs::remove_dir_all(&trash)?;
    for (on, off) in on.iter().zip(&off) {
        row.samples
            .push(on.saturating_sub(*off) / SANDBOX_ACTIONS as u32);
    }
    let median = |samples: &[Duration]| {
        let mut sorted = samples.to_vec();
        sorted.sort();
        sorted[sorted.len() / 2]
    };
    row.note = format!(
        "load {}; medians: sandboxed build {}, unconfined build {}",
        load_range(&loads),
        fmt_ms(Some(median(&on))),
        fmt_ms(Some(median(&off)))
    );
    Ok(row)
}

/// The no-op build of every target of a generated `command` workspace next to its cold
/// `validate-workspace`.
fn noop_rows(
    once: &Path,
    scratch: &Path,
    packages: usize,
    runs: usize,
) -> anyhow::Result<Vec<Row>> {
    let workspace = scratch.join(format!("exec-commands-{packages}"));
    let targets = write_commands(&workspace, packages)?;
    let load = load_average();
    let (first, states) = build(once, &workspace, &[])?;
    ensure_all(&states, "miss", targets, "the first build")?;
    // Untimed: warms the digest index (with the files settled) and the output stamps'
    // racy entries.
    super::settle_for_digest_index();
    build(once, &workspace, &[])?;
    let mut validate = Row::new("cold `query validate-workspace` (same workspace)", "");
    let mut noop = Row::new(
        "no-op `once build ...`, warm digest index, new process",
        "≤ 2× validate",
    );
    let mut loads = Vec::new();
    for _ in 0..runs {
        loads.push(load_average());
        let (elapsed, output) = timed(
            Command::new(once)
                .args(["query", "validate-workspace", "--format", "json", "-C"])
                .arg(&workspace),
        )?;
        let answer: Value = serde_json::from_slice(&output.stdout)?;
        ensure!(
            answer["valid"] == json!(true) && answer["target_count"] == json!(targets),
            "the workspace does not validate: {answer}"
        );
        validate.samples.push(elapsed);
        let (elapsed, states) = build(once, &workspace, &[])?;
        ensure_all(&states, "hit", targets, "the no-op build")?;
        noop.samples.push(elapsed);
    }
    validate.name = match targets {
        10_000 => "cold `query validate-workspace`, 10k `command` targets",
        _ => "cold `query validate-workspace`, the `command` workspace",
    };
    validate.note = format!("{targets} targets; load {}", load_range(&loads));
    let ratio = match (noop.median(), validate.median()) {
        (Some(n), Some(v)) if v > Duration::ZERO => n.as_secs_f64() / v.as_secs_f64(),
        _ => 0.0,
    };
    noop.note = format!(
        "{ratio:.2}× validate; {targets} actions all hits; the first build took {:.1} s (load {load})",
        first.as_secs_f64()
    );
    Ok(vec![validate, noop])
}

/// Runs the section: a Markdown table and the JSON rows.
pub fn run(
    once: &Path,
    scratch: &Path,
    runs: usize,
    noop_packages: usize,
) -> anyhow::Result<(String, Value)> {
    let once: PathBuf =
        std::fs::canonicalize(once).with_context(|| format!("no `{}`", once.display()))?;
    let scratch = scratch.to_path_buf();
    std::fs::create_dir_all(&scratch)?;
    let started = Instant::now();
    let mut rows = graph_rows(&once, &scratch, runs)?;
    rows.push(overhead_row(&once, &scratch, runs)?);
    rows.push(sandbox_row(&once, &scratch, runs)?);
    rows.extend(noop_rows(&once, &scratch, noop_packages, runs)?);
    if rows.iter().any(|row| row.samples.is_empty()) {
        bail!("an execution measure has no sample");
    }
    let mut table = format!(
        "Execution (issue 15), medians of {runs} runs, {:.0} s in all\n\n\
         | measure | median | target | note |\n|---|---|---|---|\n",
        started.elapsed().as_secs_f64()
    );
    let mut json_rows = Vec::new();
    for row in &rows {
        table.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            row.name,
            fmt_ms(row.median()),
            row.target,
            row.note
        ));
        json_rows.push(json!({
            "measure": row.name,
            "median_ms": row.median().map(ms),
            "samples_ms": row.samples.iter().copied().map(ms).collect::<Vec<_>>(),
            "target": row.target,
            "note": row.note,
        }));
    }
    Ok((table, Value::Array(json_rows)))
}
