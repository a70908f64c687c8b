//! `once test [TARGET…] [--changed PATH…] [--all]`: selects test targets (without any,
//! those of the current directory's package and below it: every test from the root, as
//! `cargo test` or `go test ./...` do), plans their `test` capability cold (reusing the
//! last plan of the same selection), runs it through the driver (`once_build::session`)
//! and prints one line per target with its failing cases. Exit codes: 0 every test
//! passed, 1 one failed, 2 usage or I/O errors.

use std::io::Write as _;
use std::path::Path;
use std::time::Instant;

use anyhow::anyhow;
use once_build::CacheResult;
use once_build::plan_cache::{PlanRequest, TestRequest};
use once_build::session::{Observer, Session};
use once_build::testing::{Selection, TestOptions, TestProgress, TestRun, TestRunStatus};
use once_exec::ExecOptions;
use serde_json::json;

use crate::Outcome;
use crate::args::{Args, Format};
use crate::build::{
    Interruptible, outcome_of, plan_cold, print_warnings, set_interruptible, terminal_width,
};
use crate::human::printable;
use crate::query::{print_json, workspace_root};

/// The command line of `once test`.
pub struct TestArgs<'a> {
    pub targets: &'a [String],
    pub changed: &'a [String],
    /// `--all`: every test, wherever `once` runs.
    pub all: bool,
    pub jobs: Option<usize>,
    pub rerun: bool,
    pub attempts: Option<u32>,
    pub sandbox: Option<once_exec::SandboxMode>,
    pub store: Option<&'a Path>,
}

/// How many lines of a failing case's message the human output shows.
const MESSAGE_LINES: usize = 6;

pub fn test(args: &Args, test: &TestArgs<'_>) -> anyhow::Result<Outcome> {
    // One rule for every front end (`once_build::plan_cache::TestRequest`):
    // named targets, else the tests the changed paths affect, else the tests of the
    // current directory's package and below it, else (at the root, or with `--all`)
    // every test.
    let root = workspace_root(args)?;
    let directory = if test.all {
        String::new()
    } else {
        current_directory_in(args, &root)
    };
    let request = TestRequest::new(test.targets.iter().cloned(), test.changed.to_vec())
        .in_directory(directory);
    let session = Session::open(&root, test.store, ExecOptions::default())
        .map_err(|e| anyhow!(e))?
        .with_sandbox(test.sandbox);
    // Connecting to a remote cache the environment names overlaps the planning.
    session.connect_remote_early();
    let planned = plan_cold(&root, session.store(), &PlanRequest::Tests(&request), true)?;
    let plan = planned.plan;
    let selection = planned
        .selection
        .ok_or_else(|| anyhow!("internal error: a test plan without its selection"))?;
    if !plan.problems.is_empty() {
        if args.format == Format::Json {
            print_json(&json!({
                "success": false,
                "exit_code": once_build::session::exit::REFUSED,
                "selection": selection,
                "runs": [],
                "problems": plan.problem_lines(),
                "diagnostics": plan.problem_diagnostics(),
                "warnings": [],
            }))?;
        } else {
            eprintln!("once: cannot test what was asked; nothing ran:");
            for problem in &plan.problems {
                eprintln!("  {}", printable(&problem.line));
            }
        }
        return Ok(outcome_of(once_build::session::exit::REFUSED));
    }
    if args.format == Format::Human {
        print_selection(&selection);
    }
    let options = TestOptions {
        jobs: test.jobs,
        rerun: test.rerun,
        attempts: test.attempts,
        ..TestOptions::default()
    };
    set_interruptible(Interruptible::Execution(session.cancel_handle()));
    let live = args.format == Format::Human && crate::context::stderr_is_terminal();
    let line = live.then(|| TestLine(crate::context::current()));
    let started = Instant::now();
    let outcome = session.test(&plan, &options, line.as_ref().map(|l| l as &dyn Observer));
    set_interruptible(Interruptible::Nothing);
    if live {
        let _ = write!(crate::output::stderr(), "\r\x1b[K");
    }
    let tested = outcome.map_err(|e| anyhow!(e))?;
    print_warnings(&tested.warnings);
    if args.format == Format::Json {
        print_json(&json!({
            "success": tested.succeeded(),
            "exit_code": tested.exit_code(),
            "selection": selection,
            "runs": tested.runs,
            "problems": [],
            "diagnostics": [],
            "warnings": tested.warnings,
        }))?;
    } else {
        print_runs(&tested.runs, started.elapsed());
    }
    Ok(outcome_of(tested.exit_code()))
}

/// Where `once` runs, relative to the workspace root and `/`-separated: `""` at the root,
/// outside the workspace, and with `-C DIR` (which runs `once` as if started in `DIR`).
fn current_directory_in(args: &Args, root: &Path) -> String {
    if args.directory.is_some() {
        return String::new();
    }
    let real = |path: &Path| path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let Ok(cwd) = crate::context::current_dir() else {
        return String::new();
    };
    let (cwd, root) = (real(&cwd), real(root));
    let Ok(relative) = cwd.strip_prefix(&root) else {
        return String::new();
    };
    let parts: Option<Vec<&str>> = relative
        .components()
        .map(|c| c.as_os_str().to_str())
        .collect();
    parts.map(|parts| parts.join("/")).unwrap_or_default()
}

/// The live progress line of `once test` on a terminal: `[done/total] STATUS TARGET`.
/// Whose stderr the line is on (the executor's workers call the observer).
struct TestLine(Option<std::sync::Arc<crate::context::Context>>);

impl Observer for TestLine {
    fn test_finished(&self, p: &TestProgress<'_>) {
        let _context = crate::context::enter(self.0.clone());
        let line = format!("[{}/{}] {} {}", p.done, p.total, p.status, p.target);
        let line: String = printable(&line)
            .chars()
            .take(terminal_width().saturating_sub(1))
            .collect();
        let mut stderr = crate::output::stderr();
        let _ = write!(stderr, "\r\x1b[K{line}");
        let _ = stderr.flush();
    }
}

/// The tests `--changed` selected and why (named targets need no explanation).
fn print_selection(selection: &Selection) {
    for warning in &selection.warnings {
        eprintln!("once: warning: {}", printable(warning));
    }
    if selection.mode == once_build::testing::SelectionMode::Affected {
        println!(
            "{} affected by {}:",
            count(selection.tests.len(), "test"),
            selection.changed_paths.join(", ")
        );
        for test in &selection.tests {
            println!(
                "  {} ({}): {}",
                printable(&test.id),
                printable(&test.kind),
                printable(&test.reasons.join("; "))
            );
        }
    }
    if selection.mode == once_build::testing::SelectionMode::Directory {
        println!(
            "{} of the current directory's package and below it (`once test --all` runs every test)",
            count(selection.tests.len(), "test")
        );
    }
    if selection.tests.is_empty() {
        println!("no test to run");
    }
}

fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

fn seconds(ms: u64) -> String {
    format!("{:.2}s", ms as f64 / 1000.0)
}

/// One line per target, then its failing cases with their location and message.
fn print_runs(runs: &[TestRun], elapsed: std::time::Duration) {
    let mut passed = 0;
    let mut cached = 0;
    for run in runs {
        let label = match (run.status, run.cache) {
            (TestRunStatus::Passed, Some(CacheResult::Hit)) => "CACHED",
            (TestRunStatus::Passed, _) => "PASS",
            (TestRunStatus::Flaky, _) => "FLAKY",
            (TestRunStatus::TimedOut, _) => "TIMEOUT",
            (TestRunStatus::Cancelled, _) => "CANCELLED",
            (TestRunStatus::Error, _) => "ERROR",
            (TestRunStatus::Failed, _) => "FAIL",
        };
        if run.success {
            passed += 1;
        }
        if run.cache == Some(CacheResult::Hit) {
            cached += 1;
        }
        let mut line = format!(
            "{label:<7} {} ({}) {}",
            printable(&run.target),
            printable(&run.kind),
            seconds(run.duration_ms)
        );
        if let Some(results) = &run.results {
            line.push_str(&format!(" · {}", results.summary));
        }
        if run.attempts > 1 {
            line.push_str(&format!(" · {} runs", run.attempts));
        }
        println!("{line}");
        if let Some(error) = &run.error {
            println!("  {}", printable(error));
            if let Some(failure) = &run.record.failure
                && run.results.is_none()
            {
                for text in [&failure.stdout_tail, &failure.stderr_tail] {
                    let lines: Vec<&str> = text.lines().collect();
                    for text_line in &lines[lines.len().saturating_sub(MESSAGE_LINES)..] {
                        println!("    {}", printable(text_line));
                    }
                }
            }
        }
        let Some(results) = &run.results else {
            continue;
        };
        for case in &results.cases {
            let flaky = case.status == once_test_results::CaseStatus::Flaky;
            if case.status != once_test_results::CaseStatus::Failed && !flaky {
                continue;
            }
            let location = match (&case.file, case.line) {
                (Some(file), Some(line)) => format!(" ({file}:{line})"),
                (Some(file), None) => format!(" ({file})"),
                _ => String::new(),
            };
            println!(
                "  {} {}{}",
                if flaky { "flaky " } else { "failed" },
                printable(&case.id),
                printable(&location)
            );
            let message = case
                .attempts
                .iter()
                .rev()
                .find_map(|a| a.message.as_deref())
                .unwrap_or_default();
            let lines: Vec<&str> = message.lines().collect();
            for text_line in lines.iter().take(MESSAGE_LINES) {
                println!("    {}", printable(text_line));
            }
            if lines.len() > MESSAGE_LINES {
                println!(
                    "    … {} more lines in `once query test-results {}`",
                    lines.len() - MESSAGE_LINES,
                    printable(&run.target)
                );
            }
        }
    }
    let failed = runs.len() - passed;
    println!(
        "{}: {passed} passed, {failed} failed ({cached} cached) in {}",
        count(runs.len(), "test target"),
        seconds(u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
    );
}
