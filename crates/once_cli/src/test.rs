//! `once test [TARGET…] [--changed PATH…] [--all]`: selects test targets, plans their
//! `test` capability from an analysis snapshot (dropped before anything runs), runs it
//! through `once_build::testing` and prints one line per target with its failing cases.
//! Exit codes: 0 every test passed, 1 one failed, 2 usage or I/O errors.

use std::io::{IsTerminal as _, Write as _};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context as _, anyhow, bail};
use once_analysis::{AnalysisHost, OsSystem};
use once_build::testing::{Request, Selection, TestOptions, TestProgress, TestRun};
use once_exec::{CancelHandle, PlanMemoFile, Store};
use serde_json::json;

use crate::Outcome;
use crate::args::{Args, Format};
use crate::build::{
    Interruptible, answer, decode_kind_catalog_in_background, set_interruptible, terminal_width,
};
use crate::human::printable;
use crate::query::{listing_hint, print_json, workspace_root};

/// The command line of `once test`.
pub struct TestArgs<'a> {
    pub targets: &'a [String],
    pub changed: &'a [String],
    pub all: bool,
    pub jobs: Option<usize>,
    pub rerun: bool,
    pub attempts: Option<u32>,
    pub store: Option<&'a Path>,
}

/// How many lines of a failing case's message the human output shows.
const MESSAGE_LINES: usize = 6;

pub fn test(args: &Args, test: &TestArgs<'_>) -> anyhow::Result<Outcome> {
    let request = if !test.targets.is_empty() {
        Request::Targets(test.targets)
    } else if !test.changed.is_empty() {
        Request::Changed(test.changed)
    } else if test.all {
        Request::All
    } else {
        bail!("name the tests to run: TARGET…, --changed PATH… or --all");
    };
    decode_kind_catalog_in_background();
    let root = workspace_root(args)?;
    let store_path = match test.store {
        Some(path) => path.to_path_buf(),
        None => Store::default_path(&root),
    };
    let store = Store::open(&store_path)
        .with_context(|| format!("cannot open the store `{}`", store_path.display()))?;
    // Plans an earlier process made from the same inputs come from the store's memo.
    let memo = PlanMemoFile::load(&store).map(Arc::new);
    let (selection, plan) = {
        let mut host = AnalysisHost::load(Arc::new(OsSystem), root.clone());
        if let Some(memo) = &memo {
            host.set_plan_memo(memo.clone());
        }
        let analysis = host.analysis();
        let selection = answer(once_build::testing::select(
            &analysis,
            &request,
            listing_hint,
        ))?
        .map_err(|e| anyhow!(e))?;
        let ids: Vec<String> = selection.tests.iter().map(|t| t.id.clone()).collect();
        let plan = answer(once_build::plan(&analysis, &ids, "test"))?.map_err(|e| anyhow!(e))?;
        let _ = analysis.save_digest_index();
        (selection, plan)
    };
    if let Some(memo) = memo {
        let _ = memo.save(&store);
    }
    if !plan.problems.is_empty() {
        if args.format == Format::Json {
            print_json(&json!({
                "success": false,
                "selection": selection,
                "runs": [],
                "problems": plan.problems,
                "warnings": [],
            }))?;
        } else {
            eprintln!("once: cannot test what was asked; nothing ran:");
            for problem in &plan.problems {
                eprintln!("  {}", printable(problem));
            }
        }
        return Ok(Outcome::Invalid);
    }
    if args.format == Format::Human {
        print_selection(&selection);
    }
    let options = TestOptions {
        jobs: test.jobs,
        rerun: test.rerun,
        attempts: test.attempts,
    };
    let cancel = CancelHandle::new();
    set_interruptible(Interruptible::Execution(cancel.clone()));
    let live = args.format == Format::Human && std::io::stderr().is_terminal();
    let progress = |p: &TestProgress<'_>| {
        if live {
            let line = format!("[{}/{}] {} {}", p.done, p.total, p.status, p.target);
            let line: String = printable(&line)
                .chars()
                .take(terminal_width().saturating_sub(1))
                .collect();
            let mut stderr = std::io::stderr().lock();
            let _ = write!(stderr, "\r\x1b[K{line}");
            let _ = stderr.flush();
        }
    };
    let started = Instant::now();
    let outcome = once_build::testing::run(&root, &store, &plan, &options, &cancel, &progress);
    set_interruptible(Interruptible::Nothing);
    if live {
        let _ = write!(std::io::stderr().lock(), "\r\x1b[K");
    }
    let (runs, warnings) = outcome.map_err(|e| anyhow!(e))?;
    for warning in &warnings {
        eprintln!("once: warning: {}", printable(warning));
    }
    let success = runs.iter().all(TestRun::passed);
    if args.format == Format::Json {
        print_json(&json!({
            "success": success,
            "selection": selection,
            "runs": runs,
            "problems": [],
            "warnings": warnings,
        }))?;
    } else {
        print_runs(&runs, started.elapsed());
    }
    Ok(if success {
        Outcome::Success
    } else {
        Outcome::Invalid
    })
}

/// The tests `--changed` selected and why (named targets need no explanation).
fn print_selection(selection: &Selection) {
    for warning in &selection.warnings {
        eprintln!("once: warning: {}", printable(warning));
    }
    if selection.mode == "affected" {
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
            ("passed", Some("hit")) => "CACHED",
            ("passed", _) => "PASS",
            ("flaky", _) => "FLAKY",
            ("timed_out", _) => "TIMEOUT",
            ("cancelled", _) => "CANCELLED",
            ("error", _) => "ERROR",
            _ => "FAIL",
        };
        if run.success {
            passed += 1;
        }
        if run.cache == Some("hit") {
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
