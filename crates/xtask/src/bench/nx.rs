//! Nx on the same generated graph, side by side with `once` in the benchmark driver:
//! the pinned Nx release installed with npm, the workspace written as Nx projects, and
//! the same cold and warm questions timed.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::{Value, json};

use super::harness::{Options, Row, ms, timed};
use super::synth::Generated;

/// The Nx release the side by side installs (pinned so that numbers are comparable).
pub const NX_VERSION: &str = "22.0.2";

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

pub(super) fn nx_side_by_side(
    options: &Options,
    generated: &Generated,
    runs: usize,
    rows: &[Row],
) -> Value {
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

pub(super) fn nx_table(nx: &Value) -> String {
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
