//! Project automation, run as `cargo run -p xtask -- <command>`.
//!
//! Commands:
//! - `codegen`: rewrite the generated files (`docs/diagnostics.md`); `--check` only reports.
//! - `tidy`: run the tidy checks and list every problem.
//!
//! The checks live in tests, so `cargo test --workspace` runs them:
//! - [`tidy`]: the crate dependency direction, external-crate placement, module docs and
//!   banned macros.
//! - [`codegen`]: generated files are up to date (`UPDATE_EXPECT=1` rewrites them).

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command-line tool reports on the terminal"
)]

mod bench;
mod codegen;
mod modules_doc;
mod no_io;
mod reference;
mod schema;
mod spawns;
mod tidy;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo run -p xtask -- <command>

commands:
  codegen            rewrite the generated files (docs/diagnostics.md)
  codegen --check    fail when a generated file is out of date, without writing
  tidy               check crate layering, module docs and banned macros
  generate-workspace DIR [PACKAGES [TARGETS_PER_PACKAGE]]
                     write a synthetic workspace (default 1000 × 10 targets)
  bench-mcp [ONCE_BINARY]
                     cold CLI vs warm `once mcp` validate-workspace on 10,000 targets
                     (build first: cargo build --release; default target/release/once)
  bench-lsp [ONCE_BINARY]
                     `once lsp` didChange → publishDiagnostics on 10,000 targets (same file
                     and a dependent file; build first: cargo build --release)
  bench-worst-cases [--once BINARY] [--runs N]
                     hostile inputs that were quadratic or unbounded (a 6 MB line, 400,000
                     missing sources, 100,000 targets in one manifest, 2 million broken
                     lines, 200,000 bad deps over MCP, 40,000 broken lines in the LSP),
                     medians of N runs, default 5 (also a section of `bench`)
  gen-workspace --packages P --targets-per-package T [--seed S] --out DIR
                     write a deterministic, realistic workspace (several kinds, hubs,
                     chains, leaves, selects, visibility); `--size 1k|10k|100k` presets
  bench --size 1k|10k|100k [--runs N] [--once BINARY] [--out DIR] [--seed S] [--no-nx] [--smoke] [--baseline OLD_ONCE]
                     cold CLI, floor, warm MCP and LSP, and Nx on a generated workspace;
                     prints a Markdown table and writes DIR/results-<size>.json
                     (default BINARY target/release/once, DIR target/bench)
  bench-digests --size 1k|10k|100k [--runs N] [--once BINARY] [--out DIR] [--seed S]
                     only the digest measures of `bench`: `query inputs` with a warm
                     index and none, `query targets` beside it, the digest pass alone
                     in-process, `sha256sum` and the walk that stats every file
  bench-scripts [--runs N] [--once BINARY]
                     `once exec` hits: a no-op script next to running it directly,
                     and a 15-script `needs` graph (default 30 runs)
  bench-tests [--runs N] [--once BINARY]
                     `once test --rerun` on a 200-case pytest suite and a 200-test Rust
                     crate next to the runner run directly (pytest, `cargo test`, the test
                     executable); default 15 runs; writes target/bench/tests.json
                     (pytest must be importable by `python3`)
  bench-server [--sizes 10k,100k] [--runs N] [--build-packages P] [--once BINARY]
                     `validate-workspace` in-process, with no server (the fallback),
                     through a warm server (nothing changed, one manifest edited) and
                     its resident memory; the no-op build of P × 10 `command` targets
                     in-process and through the server (default 10 runs, P = 1000)
  bench-cached-tests [--runs N] [--once BINARY]
                     `once test --all` on a copy of test_data/demo with every result
                     cached, a fresh process per run (default 30 runs; pytest must be
                     importable by `python3`); writes target/bench/cached-tests.json
  bench-exec --size 1k|10k [--runs N] [--once BINARY] [--out DIR]
                     only the execution measures of `bench`: full hits of the 15-action
                     84 MiB graph (outputs in place, after `rm -rf .once/out`, warm MCP),
                     executor overhead per action, and the no-op build of every target of
                     a generated `command` workspace of the size next to its cold
                     `validate-workspace`
  bench-remote [--runs N] [--once BINARY] [--out DIR]
                     the remote cache (issue 34) against BuildGrid and nginx started on
                     loopback (`./.ci/remote-cache-servers` installs them): full misses of
                     the 15-action graph without uploads and uploading to each server (the
                     overheads), then clean clients with every result in the remote cache
                     building its `n14` (the original's 1 MiB `distribution.bin`), its
                     `All` and `...` (default 10 runs); writes DIR/results-remote.json
                     (DIR target/bench)
  help       print this message";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["codegen"] => match codegen::write_all(&project_root()) {
            Ok(written) => {
                for file in written {
                    println!("{file}");
                }
                ExitCode::SUCCESS
            }
            Err(err) => {
                eprintln!("xtask: error: {err:#}");
                ExitCode::FAILURE
            }
        },
        ["codegen", "--check"] => report(&codegen::check_all(&project_root())),
        ["tidy"] => {
            let root = project_root();
            let mut problems = tidy::check_repository_manifests(&root);
            problems.extend(tidy::check_repository_sources(&root));
            report(&problems)
        }
        ["generate-workspace", dir, rest @ ..] => {
            let packages = rest.first().and_then(|p| p.parse().ok()).unwrap_or(1000);
            let per_package = rest.get(1).and_then(|p| p.parse().ok()).unwrap_or(10);
            finish(
                bench::generate_workspace(Path::new(dir), packages, per_package).map(|()| {
                    format!(
                        "wrote {} targets in {packages} packages to {dir}",
                        packages * per_package
                    )
                }),
            )
        }
        ["bench-mcp", rest @ ..] => {
            let once = rest
                .first()
                .map_or_else(|| project_root().join("target/release/once"), PathBuf::from);
            finish(bench::bench_mcp(&once, &bench::scratch_dir(), 1000, 10, 15))
        }
        ["bench-lsp", rest @ ..] => {
            let once = rest
                .first()
                .map_or_else(|| project_root().join("target/release/once"), PathBuf::from);
            finish(bench::lsp::bench_lsp(
                &once,
                &bench::scratch_dir(),
                1000,
                10,
                15,
            ))
        }
        ["bench-worst-cases", rest @ ..] => finish(bench_worst_cases(rest)),
        ["gen-workspace", rest @ ..] => finish(gen_workspace(rest)),
        ["bench", rest @ ..] => finish(bench_command(rest)),
        ["bench-digests", rest @ ..] => finish(bench_digests(rest)),
        ["bench-exec", rest @ ..] => finish(bench_exec(rest)),
        ["bench-remote", rest @ ..] => finish(bench_remote(rest)),
        ["bench-scripts", rest @ ..] => finish(bench_scripts(rest)),
        ["bench-tests", rest @ ..] => finish(bench_tests(rest)),
        ["bench-server", rest @ ..] => finish(bench_server(rest)),
        ["bench-cached-tests", rest @ ..] => finish(bench_cached_tests(rest)),
        ["help" | "--help" | "-h"] => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// The value of `--name VALUE` in `args`.
fn flag<'a>(args: &[&'a str], name: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| *a == name)
        .and_then(|i| args.get(i + 1).copied())
}

fn parsed<T: std::str::FromStr>(args: &[&str], name: &str, default: T) -> anyhow::Result<T> {
    match flag(args, name) {
        None => Ok(default),
        Some(value) => value
            .parse()
            .map_err(|_| anyhow::anyhow!("invalid {name} `{value}`")),
    }
}

fn gen_workspace(args: &[&str]) -> anyhow::Result<String> {
    let (default_packages, default_per_package) = match flag(args, "--size") {
        Some(size) => bench::harness::preset(size)?,
        None => (100, 10),
    };
    let packages = parsed(args, "--packages", default_packages)?;
    let per_package = parsed(args, "--targets-per-package", default_per_package)?;
    let seed = parsed(args, "--seed", 1u64)?;
    let out = flag(args, "--out").ok_or_else(|| anyhow::anyhow!("--out DIR is required"))?;
    let generated = bench::synth::generate(Path::new(out), packages, per_package, seed)?;
    Ok(format!(
        "wrote {} targets in {packages} packages to {out} (seed {seed})",
        generated.targets
    ))
}

fn bench_worst_cases(args: &[&str]) -> anyhow::Result<String> {
    let once = flag(args, "--once")
        .map_or_else(|| project_root().join("target/release/once"), PathBuf::from);
    let runs = parsed(args, "--runs", 5)?;
    bench::worst_cases::run(&once, &bench::scratch_dir(), runs).map(|(table, _)| table)
}

fn bench_command(args: &[&str]) -> anyhow::Result<String> {
    bench::harness::run(&bench_options(args)?)
}

fn bench_digests(args: &[&str]) -> anyhow::Result<String> {
    bench::digests::run_digests(&bench_options(args)?)
}

fn bench_exec(args: &[&str]) -> anyhow::Result<String> {
    bench::harness::run_execution(&bench_options(args)?)
}

/// `bench-server [--sizes 10k,100k] [--runs N] [--build-packages P] [--once BINARY]`.
fn bench_server(args: &[&str]) -> anyhow::Result<String> {
    let once = flag(args, "--once")
        .map_or_else(|| project_root().join("target/release/once"), PathBuf::from);
    let sizes: Vec<&str> = flag(args, "--sizes")
        .unwrap_or("10k,100k")
        .split(',')
        .collect();
    let runs = parsed(args, "--runs", 10)?;
    let packages = parsed(args, "--build-packages", 1000)?;
    bench::server::run(&once, &bench::scratch_dir(), &sizes, runs, packages)
}

fn bench_remote(args: &[&str]) -> anyhow::Result<String> {
    let options = bench_options(args)?;
    let (table, rows) = bench::remote::run(
        &options.once,
        &project_root(),
        &options.out_dir.join("scratch"),
        options.runs,
    )?;
    std::fs::create_dir_all(&options.out_dir)?;
    let file = options.out_dir.join("results-remote.json");
    let results = serde_json::json!({ "machine": bench::harness::machine(), "rows": rows });
    std::fs::write(&file, serde_json::to_string_pretty(&results)? + "\n")?;
    Ok(format!("{table}\nresults written to {}", file.display()))
}

fn bench_scripts(args: &[&str]) -> anyhow::Result<String> {
    let root = project_root();
    let once = flag(args, "--once").map_or_else(|| root.join("target/release/once"), PathBuf::from);
    bench::scripts::run(
        &once,
        parsed(args, "--runs", 30)?,
        &root.join("target/bench-scripts"),
    )
}

fn bench_tests(args: &[&str]) -> anyhow::Result<String> {
    let root = project_root();
    let once = flag(args, "--once").map_or_else(|| root.join("target/release/once"), PathBuf::from);
    let (table, json) = bench::tests::run(
        &once,
        parsed(args, "--runs", 15)?,
        &root.join("target/bench-tests"),
    )?;
    let out = root.join("target/bench");
    std::fs::create_dir_all(&out)?;
    std::fs::write(out.join("tests.json"), serde_json::to_vec_pretty(&json)?)?;
    Ok(table)
}

fn bench_cached_tests(args: &[&str]) -> anyhow::Result<String> {
    let root = project_root();
    let once = flag(args, "--once").map_or_else(|| root.join("target/release/once"), PathBuf::from);
    let (table, json) = bench::tests::cached_demo(
        &once,
        parsed(args, "--runs", 30)?,
        &root.join("test_data/demo"),
        &root.join("target/bench-cached-tests"),
    )?;
    let out = root.join("target/bench");
    std::fs::create_dir_all(&out)?;
    std::fs::write(
        out.join("cached-tests.json"),
        serde_json::to_vec_pretty(&json)?,
    )?;
    Ok(table)
}

fn bench_options(args: &[&str]) -> anyhow::Result<bench::harness::Options> {
    let root = project_root();
    Ok(bench::harness::Options {
        size: flag(args, "--size").unwrap_or("10k").to_owned(),
        runs: parsed(args, "--runs", 10)?,
        once: flag(args, "--once").map_or_else(|| root.join("target/release/once"), PathBuf::from),
        out_dir: flag(args, "--out").map_or_else(|| root.join("target/bench"), PathBuf::from),
        seed: parsed(args, "--seed", 1u64)?,
        nx: !args.contains(&"--no-nx"),
        smoke: args.contains(&"--smoke"),
        baseline: flag(args, "--baseline").map(PathBuf::from),
    })
}

/// Prints the outcome of a command.
fn finish(outcome: anyhow::Result<String>) -> ExitCode {
    match outcome {
        Ok(text) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("xtask: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// Prints each problem to stderr; success when there are none.
fn report(problems: &[String]) -> ExitCode {
    for problem in problems {
        eprintln!("{problem}");
    }
    if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The workspace root: two levels above this crate's manifest directory.
pub fn project_root() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    dir.ancestors()
        .nth(2)
        .map_or_else(|| dir.to_path_buf(), Path::to_path_buf)
}
