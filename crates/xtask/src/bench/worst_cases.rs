//! The worst cases (`bench-worst-cases`, and a section of `bench`): small hostile inputs
//! that once made an answer quadratic or unbounded, generated at the sizes that took
//! seconds to minutes, each measured and its answer checked, so that they cannot come back.
//!
//! - **LSP, 40,000 lines of `=`** (80 KB): `didChange` → `publishDiagnostics`;
//! - **one 6 MB line of `a a a …`**: parser recovery, `query validate-workspace`;
//! - **400,000 missing sources on one line**: line/column conversion;
//! - **`once_validate_target` with 200,000 bad deps** over MCP;
//! - **100,000 targets in one manifest**: duplicate-name checks;
//! - **a 4 MB file of `=` lines**: the diagnostic cap (2 million syntax errors);
//! - **a no-op build of a directory output of 100,000 files**: the in-place check of a
//!   hit (a search of the record per file made it 15–21 s).
//!
//! The goal is an answer in under 1 s (release build) for each.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{Value, json};

use super::Mcp;
use super::harness::{mib, peak_rss_kib, timed};
use super::lsp::Lsp;

/// What the table reports for one case.
struct Measured {
    case: &'static str,
    samples: Vec<Duration>,
    rss_kib: Option<u64>,
    note: String,
}

impl Measured {
    fn median(&self) -> Duration {
        super::median(self.samples.clone())
    }
}

/// A workspace at `dir` whose only package `app` has `manifest` as its `once.toml`.
fn workspace(dir: &Path, manifest: &str) -> anyhow::Result<()> {
    super::recreate_dir(dir)?;
    std::fs::write(dir.join("once.toml"), "[workspace]\n")?;
    std::fs::create_dir_all(dir.join("app"))?;
    std::fs::write(dir.join("app/once.toml"), manifest)?;
    Ok(())
}

/// Cold `once query validate-workspace --format json` on a generated workspace, checked:
/// invalid (or valid with warnings), with a bounded number of diagnostics.
fn cold_validation(
    once: &Path,
    dir: &Path,
    scratch: &Path,
    case: &'static str,
    runs: usize,
) -> anyhow::Result<Measured> {
    let args: Vec<String> = ["query", "validate-workspace", "--format", "json", "-C"]
        .map(String::from)
        .into_iter()
        .chain([dir.to_string_lossy().into_owned()])
        .collect();
    let mut samples = Vec::new();
    let mut note = String::new();
    for run in 0..runs {
        let (elapsed, output) = timed(Command::new(once).args(&args))?;
        samples.push(elapsed);
        if run == 0 {
            let answer: Value = serde_json::from_slice(&output.stdout)
                .with_context(|| format!("{case}: the answer is not JSON"))?;
            let diagnostics = answer["diagnostics"].as_array().map_or(0, Vec::len);
            anyhow::ensure!(diagnostics > 0, "{case}: no diagnostics: {answer}");
            note = format!(
                "{diagnostics} diagnostics, {} KiB of JSON",
                output.stdout.len() / 1024
            );
        }
    }
    Ok(Measured {
        case,
        samples,
        rss_kib: peak_rss_kib(once, &args, scratch),
        note,
    })
}

/// Every case, measured `runs` times; the Markdown section and its JSON rows.
pub fn run(once: &Path, scratch: &Path, runs: usize) -> anyhow::Result<(String, Value)> {
    let runs = runs.max(1);
    let root = scratch.join("worst-cases");
    let mut measured = Vec::new();

    let dir = root.join("long-line");
    workspace(&dir, &"a ".repeat(3_000_000))?;
    measured.push(cold_validation(
        once,
        &dir,
        scratch,
        "one 6 MB line of `a a a …` (parser recovery)",
        runs,
    )?);

    let dir = root.join("missing-sources");
    let srcs: Vec<String> = (0..400_000).map(|i| format!("\"m{i}.sh\"")).collect();
    workspace(
        &dir,
        &format!(
            "[[target]]\nname = \"App\"\nkind = \"sh_binary\"\nsrcs = [{}]\n",
            srcs.join(", ")
        ),
    )?;
    measured.push(cold_validation(
        once,
        &dir,
        scratch,
        "400,000 missing sources on one line (columns)",
        runs,
    )?);

    let dir = root.join("many-targets");
    let mut manifest = String::new();
    // The last name repeats the first, so that the answer has a diagnostic to check.
    for t in (0..100_000).chain([0]) {
        manifest.push_str(&format!(
            "[[target]]\nname = \"T{t}\"\nkind = \"sh_binary\"\nsrcs = [\"run.sh\"]\n"
        ));
    }
    workspace(&dir, &manifest)?;
    std::fs::write(dir.join("app/run.sh"), "#!/bin/sh\n")?;
    measured.push(cold_validation(
        once,
        &dir,
        scratch,
        "100,000 targets in one manifest (duplicate names)",
        runs,
    )?);

    let dir = root.join("broken-lines");
    workspace(&dir, &"=\n".repeat(2_000_000))?;
    measured.push(cold_validation(
        once,
        &dir,
        scratch,
        "a 4 MB file of `=` lines (diagnostic cap)",
        runs,
    )?);

    measured.push(noop_directory_build(
        once,
        &root.join("directory-output"),
        runs,
    )?);
    measured.push(validate_target(once, &root.join("empty"), runs)?);
    measured.push(lsp_broken_lines(once, &root.join("lsp"), runs)?);

    let mut table = format!(
        "Worst cases ({}), medians of {runs} runs; the goal is under 1 s each\n\n\
         | case | median | peak RSS | answer |\n|---|---|---|---|\n",
        once.display()
    );
    let mut rows = Vec::new();
    for m in &measured {
        table.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            m.case,
            super::ms(m.median()),
            mib(m.rss_kib),
            m.note
        ));
        rows.push(json!({
            "case": m.case,
            "median_ms": m.median().as_secs_f64() * 1000.0,
            "samples_ms": m.samples.iter().map(|s| s.as_secs_f64() * 1000.0).collect::<Vec<_>>(),
            "peak_rss_kib": m.rss_kib,
            "answer": m.note,
        }));
    }
    Ok((table, Value::Array(rows)))
}

/// A no-op `once build` of a `command` whose output is a directory of 100,000 files
/// (built once first, not measured), checked: a hit.
fn noop_directory_build(once: &Path, dir: &Path, runs: usize) -> anyhow::Result<Measured> {
    let case = "no-op build of a directory output of 100,000 files (in-place check)";
    workspace(
        dir,
        r#"[[target]]
name = "Big"
kind = "command"

[target.attrs]
cmd = "mkdir -p \"$OUT/d\" && cd \"$OUT/d\" && i=0; while [ $i -lt 100000 ]; do echo $i > f$i; i=$((i+1)); done"
outputs = ["d"]
"#,
    )?;
    let args = [
        "-C",
        &dir.to_string_lossy(),
        "build",
        "--format",
        "json",
        "app/Big",
    ];
    let first = Command::new(once).args(args).output()?;
    anyhow::ensure!(
        first.status.success(),
        "{case}: the first build failed: {}",
        String::from_utf8_lossy(&first.stderr)
    );
    let mut samples = Vec::new();
    let mut note = String::new();
    for run in 0..runs {
        let (elapsed, output) = timed(Command::new(once).args(args))?;
        samples.push(elapsed);
        if run == 0 {
            let answer: Value = serde_json::from_slice(&output.stdout)
                .with_context(|| format!("{case}: the answer is not JSON"))?;
            let cache = answer["targets"][0]["cache"].as_str().unwrap_or_default();
            anyhow::ensure!(cache == "hit", "{case}: not a hit: {answer}");
            note = "a hit".to_owned();
        }
    }
    Ok(Measured {
        case,
        samples,
        rss_kib: None,
        note,
    })
}

/// `once_validate_target` over MCP with 200,000 dependencies in Bazel label syntax.
fn validate_target(once: &Path, dir: &Path, runs: usize) -> anyhow::Result<Measured> {
    super::recreate_dir(dir)?;
    std::fs::write(dir.join("once.toml"), "[workspace]\n")?;
    let mut mcp = Mcp::start(once, dir)?;
    let deps: Vec<String> = (0..200_000).map(|i| format!("//pkg:t{i}")).collect();
    let arguments = json!({ "target": { "name": "App", "kind": "sh_binary", "srcs": ["run.sh"], "deps": deps } });
    let mut samples = Vec::new();
    let mut note = String::new();
    for run in 0..runs {
        let started = Instant::now();
        let answer = mcp.call_tool("once_validate_target", arguments.clone())?;
        samples.push(started.elapsed());
        if run == 0 {
            let diagnostics = answer["result"]["diagnostics"]
                .as_array()
                .map_or(0, Vec::len);
            anyhow::ensure!(
                answer["result"]["valid"] == json!(false) && diagnostics > 0,
                "once_validate_target accepted 200,000 bad deps: {answer}"
            );
            note = format!("{diagnostics} diagnostics");
        }
    }
    Ok(Measured {
        case: "`once_validate_target` with 200,000 bad deps (MCP)",
        samples,
        rss_kib: None,
        note,
    })
}

/// `once lsp`: a manifest of 40,000 lines of `=`, changed in full and back.
fn lsp_broken_lines(once: &Path, dir: &Path, runs: usize) -> anyhow::Result<Measured> {
    let text = "=\n".repeat(40_000);
    workspace(dir, &text)?;
    let dir = dir.canonicalize()?;
    let mut lsp = Lsp::start(once, &dir)?;
    let root_uri = format!("file://{}", dir.display());
    lsp.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}, "rootUri": root_uri}}))?;
    while lsp.receive()?["id"] != 1 {}
    lsp.send(&json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}))?;
    let uri = format!("{root_uri}/app/once.toml");
    lsp.send(
        &json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
        "textDocument": {"uri": uri, "languageId": "toml", "version": 1, "text": text}}}),
    )?;
    lsp.diagnostics(&uri, Some(1))?;
    let mut samples = Vec::new();
    let mut note = String::new();
    for run in 0..runs {
        // Alternately one broken line more and back: a new text every time.
        let changed = if run % 2 == 0 {
            format!("{text}=\n")
        } else {
            text.clone()
        };
        let version = run as i64 + 2;
        let started = Instant::now();
        lsp.send(&json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": changed}]}}))?;
        let diagnostics = lsp.diagnostics(&uri, Some(version))?;
        samples.push(started.elapsed());
        anyhow::ensure!(
            !diagnostics.is_empty(),
            "no diagnostics for 40,000 broken lines"
        );
        note = format!("{} diagnostics published", diagnostics.len());
    }
    Ok(Measured {
        case: "LSP: 40,000 lines of `=`, `didChange` → `publishDiagnostics`",
        samples,
        rss_kib: None,
        note,
    })
}
