//! The remote-cache section (issue 34): the 15-action, 84 MiB graph of
//! [`super::execution`] against a real BuildGrid started on loopback, through the real
//! `once` binary.
//!
//! - **full miss with uploads**: per round a fresh BuildGrid (empty disk CAS, empty
//!   ActionCache), a fresh nginx (WebDAV `PUT`, the Bazel HTTP cache protocol) and three
//!   clean clients building `...`: one without a remote cache, one uploading every result
//!   to BuildGrid and one to nginx (the command waits for its uploads before it answers,
//!   so its wall time includes them). The order rotates from round to round, and each
//!   build starts after a `sync`. The overhead, per server, is the median of the rounds'
//!   `(with − without) / without`. Both servers share the client's two cores on loopback,
//!   so each overhead includes that server's own work of receiving and storing 84 MiB;
//!   the two side by side tell the client's part from the server's;
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

/// A cache server (BuildGrid or nginx) on loopback, killed when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The server configuration `name` of `test_data/remote-cache` (the one the
/// remote-cache tests start their servers with), without its comment lines, `fills` put
/// in.
fn server_config(name: &str, fills: &[(&str, String)]) -> anyhow::Result<String> {
    let path = crate::project_root()
        .join("test_data/remote-cache")
        .join(name);
    let template = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read `{}`", path.display()))?;
    let mut text = String::new();
    for line in template.lines().filter(|line| !line.starts_with('#')) {
        text.push_str(line);
        text.push('\n');
    }
    for (placeholder, value) in fills {
        text = text.replace(placeholder, value);
    }
    ensure!(!text.contains('@'), "`{name}`: a placeholder is left");
    Ok(text)
}

/// Starts BuildGrid (disk CAS in `directory`, in-memory ActionCache, ByteStream, no
/// auth) on a free loopback port; ready once the port accepts connections.
fn start_buildgrid(bgd: &Path, directory: &Path) -> anyhow::Result<Server> {
    super::recreate_dir(directory)?;
    let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let config = directory.join("buildgrid.yml");
    let text = server_config(
        "buildgrid.yml",
        &[
            ("@PORT@", port.to_string()),
            ("@CHANNEL@", "    insecure-mode: true".to_owned()),
            ("@CAS@", directory.join("cas").display().to_string()),
        ],
    )?;
    std::fs::write(&config, text)?;
    let log = std::fs::File::create(directory.join("buildgrid.log"))?;
    let child = Command::new(bgd)
        .args(["server", "start"])
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .with_context(|| format!("cannot start `{}`", bgd.display()))?;
    let server = Server {
        child,
        url: format!("grpc://127.0.0.1:{port}"),
    };
    wait_for_port(server, port, "BuildGrid", &directory.join("buildgrid.log"))
}

/// Starts nginx (Debian's `nginx-light`: WebDAV `PUT` under `/team/`, one process in the
/// foreground, its own prefix `directory`) on a free loopback port; ready once the port
/// accepts connections.
fn start_nginx(directory: &Path) -> anyhow::Result<Server> {
    let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"]
        .into_iter()
        .map(PathBuf::from)
        .find(|path| path.is_file())
        .context("nginx is not installed: run `./.ci/remote-cache-servers`")?;
    super::recreate_dir(directory)?;
    for sub in ["root/team", "root/readonly", "tmp", "logs"] {
        std::fs::create_dir_all(directory.join(sub))?;
    }
    let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let config = directory.join("nginx.conf");
    let text = server_config(
        "nginx.conf",
        &[
            ("@PREFIX@", directory.display().to_string()),
            ("@LISTEN@", format!("listen 127.0.0.1:{port};")),
        ],
    )?;
    std::fs::write(&config, text)?;
    let log = directory.join("logs/error.log");
    let child = Command::new(&nginx)
        .arg("-p")
        .arg(directory)
        .arg("-c")
        .arg(&config)
        .arg("-e")
        .arg(&log)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("cannot start `{}`", nginx.display()))?;
    let server = Server {
        child,
        url: format!("http://127.0.0.1:{port}/team"),
    };
    wait_for_port(server, port, "nginx", &log)
}

/// `server` once `port` accepts connections; an error with `log` if it exits first or
/// takes over a minute.
fn wait_for_port(mut server: Server, port: u16, name: &str, log: &Path) -> anyhow::Result<Server> {
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Some(status) = server.child.try_wait()? {
            let log = std::fs::read_to_string(log).unwrap_or_default();
            bail!("{name} exited ({status}) before it was ready:\n{log}");
        }
        ensure!(
            started.elapsed() < Duration::from_secs(60),
            "{name} did not listen within 60 s"
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
    server: &Server,
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
        server: &Server,
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

/// The uploading full misses against one server, round by round.
struct Uploading {
    /// The server, as the table names it.
    server: &'static str,
    samples: Vec<Duration>,
    ratios: Vec<f64>,
}

impl Uploading {
    fn new(server: &'static str) -> Uploading {
        Uploading {
            server,
            samples: Vec::new(),
            ratios: Vec::new(),
        }
    }

    /// One timed full miss of `...` in `workspace` uploading to `server`, checked: 15
    /// misses, 15 results uploaded, no failure, every artifact built.
    fn time(&mut self, once: &Path, workspace: &Path, server: &Server) -> anyhow::Result<()> {
        let elapsed = build(once, workspace, "...", Some(&server.url))?.0;
        let stats = usage(once, workspace)?;
        ensure!(
            count(&stats, "misses")? == 15
                && count(&stats, "uploads")? == 15
                && count(&stats, "upload_failures")? == 0,
            "the full miss uploading to {}: expected 15 misses uploaded, got {stats}",
            server.url
        );
        check_artifacts(workspace)?;
        self.samples.push(elapsed);
        Ok(())
    }

    /// Records this round's overhead against the local build `local`.
    fn compare(&mut self, local: Duration) {
        if let Some(uploading) = self.samples.last() {
            self.ratios
                .push(uploading.as_secs_f64() / local.as_secs_f64() - 1.0);
        }
    }

    /// The table row of the full misses.
    fn row(&self) -> (String, Vec<Duration>, &'static str, String) {
        (
            format!(
                "full miss of the 15 actions, uploading every result (84 MiB) to {}",
                self.server
            ),
            self.samples.clone(),
            "",
            format!(
                "the command waits for its uploads; overhead (median of the rounds) {:+.1} %",
                self.overhead().0 * 100.0
            ),
        )
    }

    /// The median of the rounds' overheads, and the rounds sorted.
    fn overhead(&self) -> (f64, Vec<f64>) {
        let mut ratios = self.ratios.clone();
        ratios.sort_by(f64::total_cmp);
        (
            ratios.get(ratios.len() / 2).copied().unwrap_or(f64::NAN),
            ratios,
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

    // Full misses, with and without uploads, on fresh servers per round.
    let local_ws = scratch.join("remote-local");
    let grpc_ws = scratch.join("remote-upload");
    let http_ws = scratch.join("remote-upload-http");
    for workspace in [&local_ws, &grpc_ws, &http_ws] {
        write_graph(workspace)?;
    }
    let (mut without, mut loads) = (Vec::new(), Vec::new());
    let mut grpc = Uploading::new("BuildGrid (gRPC, disk CAS)");
    let mut http = Uploading::new("nginx (HTTP, WebDAV)");
    let mut server = None;
    for round in 0..rounds {
        drop(server.take());
        let grid = start_buildgrid(&bgd, &scratch.join("buildgrid"))?;
        let nginx = start_nginx(&scratch.join("nginx"))?;
        // BuildGrid goes on starting (imports, its thread pool) after its port opens:
        // let it settle, so that the first build of the round does not pay for it.
        std::thread::sleep(Duration::from_secs(1));
        for workspace in [&local_ws, &grpc_ws, &http_ws] {
            reset_client(workspace)?;
        }
        loads.push(load_average());
        let mut local = Duration::ZERO;
        for turn in 0..3 {
            // The round before wrote some 350 MiB (three stores, two servers), and the
            // builds before in this round 84 MiB or more each: written back now, not
            // while a build is timed.
            write_back()?;
            match (round + turn) % 3 {
                0 => local = build(&once, &local_ws, "...", None)?.0,
                1 => grpc.time(&once, &grpc_ws, &grid)?,
                _ => http.time(&once, &http_ws, &nginx)?,
            }
        }
        without.push(local);
        grpc.compare(local);
        http.compare(local);
        server = Some(grid);
    }
    let Some(server) = server else {
        bail!("no round ran");
    };

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
        grpc.row(),
        http.row(),
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
        "Remote cache (issue 34), BuildGrid 0.9.1 and nginx on loopback, medians, {:.0} s in all\n\n\
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
    for uploading in [&grpc, &http] {
        let (overhead, ratios) = uploading.overhead();
        let server = uploading.server;
        table.push_str(&format!(
            "| upload overhead on a full miss, {server} | {:+.1} % | ≤ 10 % | rounds: {} |\n",
            overhead * 100.0,
            ratios
                .iter()
                .map(|r| format!("{:+.1} %", r * 100.0))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        json_rows.push(json!({
            "measure": format!("upload overhead on a full miss, {server}"),
            "median_ratio": overhead,
            "ratios": ratios,
            "target": "≤ 10 %",
        }));
    }
    Ok((table, Value::Array(json_rows)))
}
