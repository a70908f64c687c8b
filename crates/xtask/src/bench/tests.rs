//! `bench-tests`: the overhead of `once test --rerun` over running the test runner
//! directly (issue 16's numbers), on two generated suites of 200 passing cases:
//!
//! - `p/BigTest`, a `pytest_test` of one file with 200 test functions, next to
//!   `python3 -m pytest` run by hand with the flags the kind passes;
//! - `r/BigTest`, a `rust_test` of a Cargo package whose library has 200 `#[test]`s
//!   (`crate_under_test`), next to `cargo test --lib` in the package (what a user types)
//!   and, a harsher baseline, the test executable the target runs, alone.
//!
//! The runs alternate (direct, then through `once`, each a fresh process), `--runs` of
//! each; every answer is checked (200 passed, the runner's summary line, `once test`'s
//! record with 200 passed cases run again rather than restored), and the load average is
//! noted before and after.
//!
//! [`cached_demo`] (`bench-cached-tests`) is the other number of issue 16: `once test
//! --all` on a copy of the demo workspace with every result cached, a fresh process each
//! run with the human output a user sees, every answer checked to say all hits.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, ensure};
use serde_json::{Value, json};

use super::harness::timed;

/// The cases of each suite.
const CASES: usize = 200;

/// Writes the workspace: `p/` (the pytest suite) and `r/` (the Cargo package).
fn write_workspace(root: &Path) -> anyhow::Result<()> {
    super::recreate_dir(root)?;
    std::fs::write(
        root.join("once.toml"),
        "[workspace]\ninclude = [\"p\", \"r\"]\n",
    )?;
    std::fs::create_dir_all(root.join("p/tests"))?;
    std::fs::write(
        root.join("p/once.toml"),
        "[[target]]\nname = \"BigTest\"\nkind = \"pytest_test\"\nsrcs = [\"tests/test_big.py\"]\n",
    )?;
    let mut python = String::new();
    for i in 0..CASES {
        python.push_str(&format!(
            "def test_{i:03}():\n    assert {i} + 1 > {i}\n\n\n"
        ));
    }
    std::fs::write(
        root.join("p/tests/test_big.py"),
        python.trim_end().to_owned() + "\n",
    )?;
    std::fs::create_dir_all(root.join("r/src"))?;
    std::fs::write(
        root.join("r/Cargo.toml"),
        "[package]\nname = \"big\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
         # A standalone package: not part of any enclosing Cargo workspace.\n[workspace]\n",
    )?;
    let mut rust =
        String::from("pub fn next(i: u32) -> u32 {\n    i + 1\n}\n\n#[cfg(test)]\nmod tests {\n");
    for i in 0..CASES {
        rust.push_str(&format!(
            "    #[test]\n    fn t{i:03}() {{\n        assert_eq!(super::next({i}), {});\n    }}\n",
            i + 1
        ));
    }
    rust.push_str("}\n");
    std::fs::write(root.join("r/src/lib.rs"), rust)?;
    std::fs::write(
        root.join("r/once.toml"),
        "[[target]]\nname = \"Big\"\nkind = \"rust_library\"\nsrcs = [\"Cargo.toml\", \"src/**/*.rs\"]\n\n\
         [target.attrs]\ncrate_name = \"big\"\n\n\
         [[target]]\nname = \"BigTest\"\nkind = \"rust_test\"\nsrcs = [\"Cargo.toml\", \"src/**/*.rs\"]\n\
         dependencies = { crate_under_test = [\"./Big\"] }\n",
    )?;
    Ok(())
}

/// `once test --rerun <target> --format json`: checked to have run the target again with
/// every one of its cases passing.
fn once_test(once: &Path, root: &Path, target: &str) -> anyhow::Result<Duration> {
    let (elapsed, output) = timed(
        Command::new(once)
            .args(["test", "--rerun", target, "--format", "json", "-C"])
            .arg(root)
            .env_remove("ONCE_WORKSPACE"),
    )?;
    let answer: Value = serde_json::from_slice(&output.stdout).with_context(|| {
        format!(
            "`once test {target}` answered no JSON: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    })?;
    let run = &answer["runs"][0];
    let summary = &run["results"]["summary"];
    ensure!(
        output.status.success()
            && answer["success"] == json!(true)
            && answer["runs"].as_array().map(Vec::len) == Some(1)
            && run["target"] == json!(target)
            && run["cache"] == json!("bypass")
            && summary["total"] == json!(CASES)
            && summary["passed"] == json!(CASES),
        "`once test --rerun {target}` did not run {CASES} passing cases: {run}"
    );
    Ok(elapsed)
}

/// Runs `command`, checked to succeed with `expected` in its standard output or error.
fn direct(command: &mut Command, expected: &str) -> anyhow::Result<Duration> {
    let (elapsed, output) = timed(command)?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    ensure!(
        output.status.success() && text.contains(expected),
        "{command:?} did not report `{expected}`: {text}"
    );
    Ok(elapsed)
}

/// One compared pair: the direct runs and the runs through `once`.
struct Pair {
    suite: &'static str,
    direct: &'static str,
    direct_samples: Vec<Duration>,
    once_samples: Vec<Duration>,
}

fn median(samples: &[Duration]) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    sorted[sorted.len() / 2]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".into())
}

/// Measures with the binary `once` in a workspace at `dir` (rewritten first): the
/// Markdown table and the JSON rows.
pub fn run(once: &Path, runs: usize, dir: &Path) -> anyhow::Result<(String, Value)> {
    let once: PathBuf = std::fs::canonicalize(once).with_context(|| {
        format!(
            "no `once` binary at {} (build it with `cargo build --release -p once_cli`, or pass --once)",
            once.display()
        )
    })?;
    write_workspace(dir)?;
    let root = dir.canonicalize()?;
    let runs = runs.max(1);
    // Untimed: the builds (byte-compiling, `cargo test --no-run` into `.once`, and the
    // package's own `target/` for `cargo test`), then one of each run.
    once_test(&once, &root, "p/BigTest")?;
    once_test(&once, &root, "r/BigTest")?;
    let passed = format!("{CASES} passed");
    let junit = root.join("p/direct-junit.xml");
    let pytest = || {
        let mut command = Command::new("python3");
        command
            .args([
                "-m",
                "pytest",
                "-p",
                "no:cacheprovider",
                "-o",
                "junit_family=xunit1",
            ])
            .arg(format!("--junitxml={}", junit.display()))
            .arg("tests/test_big.py")
            .current_dir(root.join("p"))
            .env("PYTHONDONTWRITEBYTECODE", "1");
        command
    };
    let cargo = || {
        let mut command = Command::new("cargo");
        command.args(["test", "--lib"]).current_dir(root.join("r"));
        command
    };
    let tests_dir = root.join(".once/out/r/BigTest/tests");
    let executable = std::fs::read_dir(&tests_dir)
        .with_context(|| format!("no `{}`", tests_dir.display()))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .next()
        .with_context(|| format!("no test executable in `{}`", tests_dir.display()))?;
    let bare = || {
        let mut command = Command::new(&executable);
        command.current_dir(root.join("r"));
        command
    };
    let libtest_passed = format!("test result: ok. {CASES} passed");
    direct(&mut pytest(), &passed)?;
    direct(&mut cargo(), &libtest_passed)?;
    let mut pairs = [
        Pair {
            suite: "pytest, 200 cases",
            direct: "`python3 -m pytest` with the kind's flags",
            direct_samples: Vec::new(),
            once_samples: Vec::new(),
        },
        Pair {
            suite: "Rust, 200 `#[test]`s",
            direct: "`cargo test --lib` in the package",
            direct_samples: Vec::new(),
            once_samples: Vec::new(),
        },
        Pair {
            suite: "Rust, 200 `#[test]`s",
            direct: "the test executable alone",
            direct_samples: Vec::new(),
            once_samples: Vec::new(),
        },
    ];
    let load_before = load_average();
    for _ in 0..runs {
        pairs[0]
            .direct_samples
            .push(direct(&mut pytest(), &passed)?);
        pairs[0]
            .once_samples
            .push(once_test(&once, &root, "p/BigTest")?);
        pairs[1]
            .direct_samples
            .push(direct(&mut cargo(), &libtest_passed)?);
        let through_once = once_test(&once, &root, "r/BigTest")?;
        pairs[1].once_samples.push(through_once);
        pairs[2]
            .direct_samples
            .push(direct(&mut bare(), &libtest_passed)?);
        pairs[2].once_samples.push(through_once);
    }
    let load_after = load_average();
    let mut table = format!(
        "`once test --rerun` against the runner run directly, medians of {runs} alternated runs \
         (load average before {load_before}, after {load_after}; binary {})\n\n\
         | suite | run directly | median (least) | `once test --rerun`, median (least) | overhead of the medians | median of the paired differences |\n\
         |---|---|---:|---:|---:|---:|\n",
        once.display()
    );
    let mut rows = Vec::new();
    for pair in &pairs {
        let (plain, through) = (median(&pair.direct_samples), median(&pair.once_samples));
        let least = |samples: &[Duration]| samples.iter().copied().min().map_or(0.0, ms);
        let overhead = ms(through) - ms(plain);
        let percent = 100.0 * overhead / ms(plain);
        // Each round's run through `once` minus its direct run: less sensitive to a load
        // that changes between rounds than the difference of the medians.
        let mut paired: Vec<f64> = pair
            .once_samples
            .iter()
            .zip(&pair.direct_samples)
            .map(|(through, plain)| ms(*through) - ms(*plain))
            .collect();
        paired.sort_by(f64::total_cmp);
        let paired = paired[paired.len() / 2];
        table.push_str(&format!(
            "| {} | {} | {:.1} ms ({:.1} ms) | {:.1} ms ({:.1} ms) | {overhead:.1} ms ({percent:.1} %) | {paired:.1} ms ({:.1} %) |\n",
            pair.suite,
            pair.direct,
            ms(plain),
            least(&pair.direct_samples),
            ms(through),
            least(&pair.once_samples),
            100.0 * paired / ms(plain)
        ));
        rows.push(json!({
            "suite": pair.suite,
            "direct": pair.direct,
            "direct_median_ms": ms(plain),
            "once_median_ms": ms(through),
            "overhead_ms": overhead,
            "overhead_percent": percent,
            "paired_difference_median_ms": paired,
            "direct_samples_ms": pair.direct_samples.iter().copied().map(ms).collect::<Vec<_>>(),
            "once_samples_ms": pair.once_samples.iter().copied().map(ms).collect::<Vec<_>>(),
        }));
    }
    let json = json!({
        "runs": runs,
        "load_before": load_before,
        "load_after": load_after,
        "once": once.display().to_string(),
        "rows": rows,
    });
    Ok((table, json))
}

/// Copies the directory tree `from` to `to` (regular files and directories; the demo
/// holds nothing else), skipping `.once`.
fn copy_tree(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        if name == ".once" {
            continue;
        }
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_tree(&entry.path(), &to.join(&name))?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), to.join(&name))?;
        }
    }
    Ok(())
}

/// `once test --all` in `root` as a user types it (the human output), checked to pass
/// with every test target a cache hit (`expected` of them), by its summary line.
fn cached_test_all(once: &Path, root: &Path, expected: usize) -> anyhow::Result<Duration> {
    let (elapsed, output) = timed(Command::new(once).args(["test", "--all", "-C"]).arg(root))?;
    let text = String::from_utf8_lossy(&output.stdout);
    let summary =
        format!("{expected} test targets: {expected} passed, 0 failed ({expected} cached) in ");
    ensure!(
        output.status.success()
            && text
                .lines()
                .last()
                .is_some_and(|line| line.starts_with(&summary)),
        "`once test --all` did not answer `{summary}`: {text}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(elapsed)
}

/// `once test --all` on a copy of `demo` (at `dir`, rewritten) with every result cached:
/// two untimed runs (the first runs the tests, the second settles the digest index), then
/// `runs` timed ones. The Markdown table and the JSON samples.
pub fn cached_demo(
    once: &Path,
    runs: usize,
    demo: &Path,
    dir: &Path,
) -> anyhow::Result<(String, Value)> {
    let once: PathBuf = std::fs::canonicalize(once)
        .with_context(|| format!("no `once` binary at {}", once.display()))?;
    super::recreate_dir(dir)?;
    copy_tree(demo, dir)?;
    super::settle_for_digest_index();
    let root = dir.canonicalize()?;
    let (_, first) = timed(
        Command::new(&once)
            .args(["test", "--all", "--format", "json", "-C"])
            .arg(&root),
    )?;
    let first: Value = serde_json::from_slice(&first.stdout)
        .context("the first `once test --all` answered no JSON")?;
    let expected = first["runs"].as_array().map_or(0, Vec::len);
    ensure!(
        first["success"] == json!(true) && expected > 0,
        "the demo's tests do not pass (is pytest on PATH?): {first}"
    );
    cached_test_all(&once, &root, expected)?;
    let load_before = load_average();
    let mut samples = Vec::with_capacity(runs.max(1));
    for _ in 0..runs.max(1) {
        samples.push(cached_test_all(&once, &root, expected)?);
    }
    let load_after = load_average();
    let least = samples.iter().copied().min().map_or(0.0, ms);
    let table = format!(
        "| measure | target | median (least) | note |\n|---|---|---:|---|\n\
         | `once test --all` on the demo, every result cached ({expected} hits), new process | ≤ 15 ms | {:.2} ms ({least:.2} ms) | {} runs; load {load_before} before, {load_after} after |\n",
        ms(median(&samples)),
        samples.len()
    );
    let json = json!({
        "runs": samples.len(),
        "test_targets": expected,
        "load_before": load_before,
        "load_after": load_after,
        "once": once.display().to_string(),
        "median_ms": ms(median(&samples)),
        "samples_ms": samples.iter().copied().map(ms).collect::<Vec<_>>(),
    });
    Ok((table, json))
}
