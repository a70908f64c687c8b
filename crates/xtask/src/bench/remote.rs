//! The remote-cache section (issue 34): the 15-action, 84 MiB graph of
//! [`super::execution`] against a real BuildGrid started on loopback, through the real
//! `once` binary.
//!
//! - **full miss with uploads**: per round a fresh BuildGrid (empty disk CAS, empty
//!   ActionCache) and two clean clients building `...`, one without a remote cache and one
//!   uploading every result to it (the command waits for its uploads before it answers,
//!   so its wall time includes them); which goes first alternates, and each starts after
//!   a `sync`. The overhead is the median of the rounds' `(with − without) / without`;
//! - **clean client, every result in the remote cache**: the last round's server holds
//!   the 15 results; a client whose `.once` (store, outputs, plan memo, records) is
//!   deleted before every run, as the original's `reset-clients.sh` did, builds
//!   `pkgs/graph/n14`, the original's measure (its `distribution.bin`): 15 remote hits,
//!   downloading only the requested target's output (1 MiB) and the captured streams
//!   (after `sync`, so that the write-back of the rounds before stays out of it, and three
//!   untimed runs); then `pkgs/graph/All`, 15 remote hits and the five artifacts of
//!   `n10`–`n14` (22 MiB);
//! - the same client building `...` (every artifact downloaded, 84 MiB), for scale.
//!
//! Every answer is checked: the store's counters (`once cache stats`: remote hits,
//! misses, uploads, failures, bytes down), the artifacts' sizes, and that what only fed a
//! hit stayed in the remote cache.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use serde_json::{Value, json};

use super::execution::{
    ARTIFACT_MIB, DISTRIBUTION, GRAPH_PACKAGE, check_artifacts, fmt_ms, load_average, load_range,
    ms, write_graph,
};
use super::harness::{timed, write_back};

/// The artifacts `All` groups.
const ALL_TOP_LEVEL: std::ops::Range<usize> = 10..15;

/// The artifact of [`DISTRIBUTION`].
const DISTRIBUTION_TOP_LEVEL: std::ops::Range<usize> = 14..15;

/// A BuildGrid server on loopback, killed when dropped.
struct BuildGrid {
    child: Child,
    url: String,
}

impl Drop for BuildGrid {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts BuildGrid (disk CAS in `directory`, in-memory ActionCache, ByteStream, no
/// auth) on a free loopback port; ready once the port accepts connections.
fn start_buildgrid(bgd: &Path, directory: &Path) -> anyhow::Result<BuildGrid> {
    super::recreate_dir(directory)?;
    let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let config = directory.join("buildgrid.yml");
    std::fs::write(
        &config,
        format!(
            "server:\n  - !channel\n    address: \"127.0.0.1:{port}\"\n    insecure-mode: true\n\
             authorization:\n  method: none\n\
             storages:\n  - !disk-storage &cas\n    path: {}\n\
             caches:\n  - !lru-action-cache &ac\n    storage: *cas\n    max-cached-refs: 10000\n    \
             allow-updates: true\n    cache-failed-actions: false\n\
             instances:\n  - name: \"\"\n    services:\n      - !action-cache\n        cache: *ac\n      \
             - !cas\n        storage: *cas\n      - !bytestream\n        storage: *cas\n\
             thread-pool-size: 8\n",
            directory.join("cas").display()
        ),
    )?;
    let log = std::fs::File::create(directory.join("buildgrid.log"))?;
    let child = Command::new(bgd)
        .args(["server", "start"])
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .with_context(|| format!("cannot start `{}`", bgd.display()))?;
    let mut server = BuildGrid {
        child,
        url: format!("grpc://127.0.0.1:{port}"),
    };
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Some(status) = server.child.try_wait()? {
            let log = std::fs::read_to_string(directory.join("buildgrid.log")).unwrap_or_default();
            bail!("BuildGrid exited ({status}) before it was ready:\n{log}");
        }
        ensure!(
            started.elapsed() < Duration::from_secs(60),
            "BuildGrid did not listen within 60 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(server)
}

/// `once build TARGET --format json` in `workspace`, with the remote cache `remote` or
/// none: the wall time, checked to have succeeded, and the answer.
fn build(
    once: &Path,
    workspace: &Path,
    target: &str,
    remote: Option<&str>,
) -> anyhow::Result<(Duration, Value)> {
    let mut command = Command::new(once);
    command
        .args(["build", target, "--format", "json", "-C"])
        .arg(workspace);
    match remote {
        Some(url) => command.args(["--remote-cache", url]),
        None => command.arg("--no-remote-cache"),
    };
    for name in [
        "ONCE_REMOTE_CACHE",
        "ONCE_REMOTE_CACHE_READ_ONLY",
        "ONCE_REMOTE_CACHE_TOKEN",
        "ONCE_REMOTE_CACHE_HEADER",
        "ONCE_REMOTE_CACHE_CREDENTIALS_FILE",
    ] {
        command.env_remove(name);
    }
    let (elapsed, output) = timed(&mut command)?;
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
    Ok((elapsed, answer))
}

/// The store's counters (`once cache stats --format json`'s `usage`).
fn usage(once: &Path, workspace: &Path) -> anyhow::Result<Value> {
    let output = Command::new(once)
        .args(["cache", "stats", "--format", "json", "-C"])
        .arg(workspace)
        .stdin(Stdio::null())
        .output()?;
    ensure!(
        output.status.success(),
        "`once cache stats` failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let answer: Value = serde_json::from_slice(&output.stdout)?;
    Ok(answer["usage"].clone())
}

fn count(usage: &Value, name: &str) -> anyhow::Result<u64> {
    usage[name]
        .as_u64()
        .with_context(|| format!("no `{name}` in {usage}"))
}

/// Deletes the client state of `workspace`: store, outputs, plan memo, records.
fn reset_client(workspace: &Path) -> anyhow::Result<()> {
    let state = workspace.join(".once");
    if state.exists() {
        std::fs::remove_dir_all(&state)
            .with_context(|| format!("cannot clear `{}`", state.display()))?;
    }
    Ok(())
}

fn artifact(workspace: &Path, index: usize) -> PathBuf {
    workspace.join(format!(
        ".once/out/{GRAPH_PACKAGE}/n{index:02}/out/n{index:02}"
    ))
}

/// One clean-client build of `target` with every result in `server`: 15 remote hits,
/// nothing run, no failure; answers the wall time and the bytes downloaded.
fn clean_client_hit(
    once: &Path,
    workspace: &Path,
    target: &str,
    server: &BuildGrid,
) -> anyhow::Result<(Duration, u64)> {
    reset_client(workspace)?;
    let (elapsed, answer) = build(once, workspace, target, Some(&server.url))?;
    let stats = usage(once, workspace)?;
    ensure!(
        count(&stats, "remote_hits")? == 15 && count(&stats, "misses")? == 0,
        "a clean client of `{target}`: expected 15 remote hits, got {stats}"
    );
    ensure!(
        count(&stats, "read_failures")? + count(&stats, "corrupt")? == 0,
        "remote failures: {stats}; warnings: {}",
        answer["warnings"]
    );
    Ok((elapsed, count(&stats, "bytes_down")?))
}

/// Clean clients building one target of the graph with every result in the server:
/// 15 remote hits each, downloading only the target's own outputs.
struct TopLevelHits {
    target: String,
    samples: Vec<Duration>,
    loads: Vec<String>,
    down: u64,
}

impl TopLevelHits {
    /// Three untimed runs, then `runs` timed ones, each checked: exactly the artifacts
    /// `top_level` are in the workspace, with their sizes, and nothing more came down.
    fn measure(
        once: &Path,
        client: &Path,
        server: &BuildGrid,
        name: &str,
        top_level: std::ops::Range<usize>,
        runs: usize,
    ) -> anyhow::Result<TopLevelHits> {
        let target = format!("{GRAPH_PACKAGE}/{name}");
        for _ in 0..3 {
            clean_client_hit(once, client, &target, server)?;
        }
        let (mut samples, mut loads, mut down) = (Vec::new(), Vec::new(), 0);
        for _ in 0..runs.max(1) {
            loads.push(load_average());
            let (elapsed, bytes) = clean_client_hit(once, client, &target, server)?;
            samples.push(elapsed);
            down = bytes;
            for (index, mib) in ARTIFACT_MIB.iter().enumerate() {
                let path = artifact(client, index);
                if top_level.contains(&index) {
                    let size = std::fs::metadata(&path)
                        .with_context(|| format!("`{}` is missing", path.display()))?
                        .len();
                    ensure!(
                        size == u64::from(*mib) << 20,
                        "`{}` has {size} bytes",
                        path.display()
                    );
                } else {
                    ensure!(
                        !path.exists(),
                        "`{}` was downloaded, though it only fed hits",
                        path.display()
                    );
                }
            }
        }
        let top_bytes: u64 = top_level.map(|i| u64::from(ARTIFACT_MIB[i]) << 20).sum();
        ensure!(
            down >= top_bytes && down < top_bytes + (64 << 10),
            "a clean client of `{target}` downloaded {down} bytes, its outputs are {top_bytes}"
        );
        Ok(TopLevelHits {
            target,
            samples,
            loads,
            down,
        })
    }

    /// The table row: `what` says what came down.
    fn row(
        &self,
        target: &'static str,
        what: &str,
    ) -> (String, Vec<Duration>, &'static str, String) {
        (
            format!(
                "clean client, all 15 results in BuildGrid, `{}`",
                self.target
            ),
            self.samples.clone(),
            target,
            format!(
                "load {}; 15 remote hits; {:.1} MiB down: {what}",
                load_range(&self.loads),
                self.down as f64 / f64::from(1 << 20)
            ),
        )
    }
}

/// Runs the section: a Markdown table and the JSON rows.
pub fn run(
    once: &Path,
    repository: &Path,
    scratch: &Path,
    runs: usize,
) -> anyhow::Result<(String, Value)> {
    let once: PathBuf =
        std::fs::canonicalize(once).with_context(|| format!("no `{}`", once.display()))?;
    let bgd = repository.join(".venv-buildgrid/bin/bgd");
    ensure!(
        bgd.is_file(),
        "BuildGrid is not installed (no `{}`): run `./.ci/remote-cache-servers`",
        bgd.display()
    );
    std::fs::create_dir_all(scratch)?;
    let scratch = std::fs::canonicalize(scratch)?;
    let started = Instant::now();
    let rounds = runs.clamp(1, 21);

    // Full misses, with and without uploads, on a fresh server per round.
    let (local_ws, upload_ws) = (scratch.join("remote-local"), scratch.join("remote-upload"));
    write_graph(&local_ws)?;
    write_graph(&upload_ws)?;
    let (mut without, mut with, mut ratios, mut loads) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut server = None;
    for round in 0..rounds {
        drop(server.take());
        let grid = start_buildgrid(&bgd, &scratch.join("buildgrid"))?;
        // BuildGrid goes on starting (imports, its thread pool) after its port opens:
        // let it settle, so that the first build of the round does not pay for it.
        std::thread::sleep(Duration::from_secs(1));
        reset_client(&local_ws)?;
        reset_client(&upload_ws)?;
        loads.push(load_average());
        let mut local = Duration::ZERO;
        let mut uploading = Duration::ZERO;
        for first in [round % 2 == 0, round % 2 != 0] {
            // The round before wrote some 250 MiB (both stores, the server's CAS), and the
            // other build of this round 84 MiB or more: written back now, not while
            // either build is timed.
            write_back()?;
            if first {
                local = build(&once, &local_ws, "...", None)?.0;
            } else {
                uploading = build(&once, &upload_ws, "...", Some(&grid.url))?.0;
            }
        }
        let stats = usage(&once, &upload_ws)?;
        ensure!(
            count(&stats, "misses")? == 15
                && count(&stats, "uploads")? == 15
                && count(&stats, "upload_failures")? == 0,
            "the uploading full miss: expected 15 misses uploaded, got {stats}"
        );
        check_artifacts(&upload_ws)?;
        without.push(local);
        with.push(uploading);
        ratios.push(uploading.as_secs_f64() / local.as_secs_f64() - 1.0);
        server = Some(grid);
    }
    let Some(server) = server else {
        bail!("no round ran");
    };
    ratios.sort_by(f64::total_cmp);
    let overhead = ratios[ratios.len() / 2];

    // Clean clients with every result in the server.
    let client = scratch.join("remote-client");
    write_graph(&client)?;
    super::settle_for_digest_index();
    // The rounds above wrote some 800 MiB: their write-back to the disk would fall into
    // the measures below.
    write_back()?;
    let distribution = TopLevelHits::measure(
        &once,
        &client,
        &server,
        DISTRIBUTION,
        DISTRIBUTION_TOP_LEVEL,
        runs,
    )?;
    let all = TopLevelHits::measure(&once, &client, &server, "All", ALL_TOP_LEVEL, runs)?;
    let (mut everything, mut everything_loads, mut everything_down) = (Vec::new(), Vec::new(), 0);
    for _ in 0..runs.clamp(1, 5) {
        everything_loads.push(load_average());
        let (elapsed, bytes) = clean_client_hit(&once, &client, "...", &server)?;
        check_artifacts(&client)?;
        everything.push(elapsed);
        everything_down = bytes;
    }
    drop(server);

    let median = |samples: &[Duration]| {
        let mut sorted = samples.to_vec();
        sorted.sort();
        sorted.get(sorted.len() / 2).copied()
    };
    let rows = vec![
        (
            "full miss of the 15 actions, no remote cache (`...`)".to_owned(),
            without.clone(),
            "",
            format!("load {}; {rounds} rounds", load_range(&loads)),
        ),
        (
            "full miss of the 15 actions, uploading every result (84 MiB) to BuildGrid".to_owned(),
            with.clone(),
            "",
            format!(
                "the command waits for its uploads; overhead (median of the rounds) {:+.1} %",
                overhead * 100.0
            ),
        ),
        distribution.row(
            "≤ 60 ms",
            "its 1 MiB output and the streams, nothing else (the original's measure)",
        ),
        all.row(
            "",
            "the 5 outputs of `n10`–`n14` and the streams, nothing else",
        ),
        (
            "clean client, all 15 results in BuildGrid, `...` (every output)".to_owned(),
            everything.clone(),
            "",
            format!(
                "load {}; {:.1} MiB down",
                load_range(&everything_loads),
                everything_down as f64 / f64::from(1 << 20)
            ),
        ),
    ];
    let mut table = format!(
        "Remote cache (issue 34), BuildGrid 0.9.1 on loopback, medians, {:.0} s in all\n\n\
         | measure | median | target | note |\n|---|---|---|---|\n",
        started.elapsed().as_secs_f64()
    );
    let mut json_rows = Vec::new();
    for (name, samples, target, note) in &rows {
        table.push_str(&format!(
            "| {name} | {} | {target} | {note} |\n",
            fmt_ms(median(samples))
        ));
        json_rows.push(json!({
            "measure": name,
            "median_ms": median(samples).map(ms),
            "samples_ms": samples.iter().copied().map(ms).collect::<Vec<_>>(),
            "target": target,
            "note": note,
        }));
    }
    table.push_str(&format!(
        "| upload overhead on a full miss | {:+.1} % | ≤ 10 % | rounds: {} |\n",
        overhead * 100.0,
        ratios
            .iter()
            .map(|r| format!("{:+.1} %", r * 100.0))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    json_rows.push(json!({
        "measure": "upload overhead on a full miss",
        "median_ratio": overhead,
        "ratios": ratios,
        "target": "≤ 10 %",
    }));
    Ok((table, Value::Array(json_rows)))
}
