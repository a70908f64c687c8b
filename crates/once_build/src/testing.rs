//! Running tests, shared by `once test` and the MCP tool `once_run_tests`:
//!
//! 1. [`select`] picks the test targets: named ones (`ID`, `PKG/...`), those affected by
//!    changed paths (the `affected-tests` selection, with its reasons), those of a
//!    directory's package and below it (`once test` in a subdirectory), or all of them;
//! 2. [`crate::plan`] plans their `test` capability (which builds what each needs first);
//! 3. [`run`] executes the plan (every test target in parallel up to `jobs`, a failing
//!    test stopping nothing else), reads each target's `once.test_results.v1` record,
//!    writes a `timed_out` record for a test killed at its time limit, re-runs failing
//!    cases for `attempts` and merges the attempts (fail then pass is `flaky`), and
//!    returns one [`TestRun`] per target.
//!
//! Test actions run `once __test-adapter … -- RUNNER…`: the adapter's arguments say
//! where the record, the log and the native results go and how to read the runner's
//! output ([`AdapterCall`]), which is what a retry and a timed-out run need here.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use once_analysis::{Analysis, Cancellable};
use once_exec::{
    ActionResult, ActionStatus, CacheState, CancelHandle, ExecOptions, ExecutionReport, Executor,
    PlannedAction, Store,
};
use once_model::action::ActionStep;
use once_test_results::{
    Artifacts, CaseStatus, NativeFormat, Outcome, Runner, TargetStatus, TestResults, assemble,
};
use schemars::JsonSchema;
use serde::Serialize;

use crate::record::TargetStatus as RecordStatus;
use crate::{CacheResult, Plan, TargetRecord};

/// How the tests were selected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SelectionMode {
    /// Named targets.
    Explicit,
    /// The tests changed paths affect.
    Affected,
    /// Every test.
    Full,
    /// The tests of the current directory's package and of the packages below the
    /// directory (`once test` without targets, in a subdirectory of the workspace).
    Directory,
}

/// Which tests were selected, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Selection {
    /// `explicit` (named targets), `affected` (changed paths), `directory` (the tests of
    /// the current directory's package and below it) or `full` (every test).
    pub mode: SelectionMode,
    pub changed_paths: Vec<String>,
    pub tests: Vec<SelectedTest>,
    /// Changed paths outside the workspace or in no package (then every test is selected).
    pub warnings: Vec<String>,
}

/// One selected test target.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SelectedTest {
    pub id: String,
    pub kind: String,
    pub reasons: Vec<String>,
}

/// What to select: named targets win, then changed paths, then a directory's tests, then
/// `all`.
pub enum Request<'a> {
    Targets(&'a [String]),
    Changed(&'a [String]),
    /// A workspace-relative directory, not the root.
    Directory(&'a str),
    All,
}

/// Whether `path` is `directory` or below it (`""`, the root, holds everything).
fn is_within(path: &str, directory: &str) -> bool {
    directory.is_empty()
        || path
            .strip_prefix(directory)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// The test targets `request` selects, in a stable order.
pub fn select(
    analysis: &Analysis,
    request: &Request<'_>,
    listing_hint: impl Fn(once_analysis::Listing) -> &'static str,
) -> Cancellable<Result<Selection, String>> {
    let tests = analysis.tests()?;
    let kind_of = |id: &str| {
        tests
            .iter()
            .find(|t| t.id == id)
            .map(|t| t.kind.clone())
            .unwrap_or_default()
    };
    Ok(Ok(match request {
        Request::Targets(patterns) => {
            let ids = match crate::resolve_targets(analysis, patterns, "test", listing_hint)? {
                Ok(ids) => ids,
                Err(message) => return Ok(Err(message)),
            };
            Selection {
                mode: SelectionMode::Explicit,
                changed_paths: Vec::new(),
                tests: ids
                    .into_iter()
                    .map(|id| SelectedTest {
                        kind: kind_of(&id),
                        id,
                        reasons: vec!["requested".to_owned()],
                    })
                    .collect(),
                warnings: Vec::new(),
            }
        }
        Request::Changed(paths) => {
            let affected = analysis.affected_tests(paths)?;
            Selection {
                mode: if paths.is_empty() {
                    SelectionMode::Full
                } else {
                    SelectionMode::Affected
                },
                changed_paths: paths.to_vec(),
                tests: affected
                    .tests
                    .into_iter()
                    .map(|t| SelectedTest {
                        id: t.id,
                        kind: t.kind,
                        reasons: t.reasons,
                    })
                    .collect(),
                warnings: affected.warnings,
            }
        }
        Request::Directory(directory) => {
            // The package the directory belongs to (the root's, at least), then every
            // package below the directory.
            let packages = analysis.packages()?;
            let owner = packages
                .iter()
                .filter(|package| is_within(directory, package))
                .max_by_key(|package| package.len())
                .map_or("", String::as_str);
            let shown = if owner.is_empty() { "." } else { owner };
            Selection {
                mode: SelectionMode::Directory,
                changed_paths: Vec::new(),
                tests: tests
                    .iter()
                    .filter_map(|t| {
                        let package = t.id.rsplit_once('/').map_or("", |(package, _)| package);
                        let reason = if package == owner {
                            format!("in `{shown}`, the package of the current directory")
                        } else if is_within(package, directory) {
                            format!("below the current directory `{directory}`")
                        } else {
                            return None;
                        };
                        Some(SelectedTest {
                            id: t.id.clone(),
                            kind: t.kind.clone(),
                            reasons: vec![reason],
                        })
                    })
                    .collect(),
                warnings: Vec::new(),
            }
        }
        Request::All => Selection {
            mode: SelectionMode::Full,
            changed_paths: Vec::new(),
            tests: tests
                .iter()
                .map(|t| SelectedTest {
                    id: t.id.clone(),
                    kind: t.kind.clone(),
                    reasons: vec!["every test".to_owned()],
                })
                .collect(),
            warnings: Vec::new(),
        },
    }))
}

/// How [`run`] runs the tests.
#[derive(Clone, Debug, Default)]
pub struct TestOptions {
    /// Actions (test targets and what they need) running at once.
    pub jobs: Option<usize>,
    /// Run the test actions even when a cached pass exists.
    pub rerun: bool,
    /// Attempts per failing case, the first run included (1: no retry); `None` leaves it
    /// to each target (its `attempts` attribute, else `[workspace] test_attempts`, else 1).
    pub attempts: Option<u32>,
    /// Whether the tests run sandboxed (the session decides it from `--sandbox` and the
    /// workspace's setting).
    pub sandbox: once_exec::SandboxMode,
}

/// One test target's run: what `once test --format json` prints per target and what
/// `once_run_tests` returns.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct TestRun {
    pub target: String,
    pub kind: String,
    /// `passed`, `flaky` (passed after a retry), `failed`, `timed_out`, `error` (no
    /// results: what the test needs failed to build, or the runner left no record) or
    /// `cancelled`.
    #[schemars(
        with = "String",
        extend("enum" = ["passed", "flaky", "failed", "timed_out", "error", "cancelled"])
    )]
    pub status: TestRunStatus,
    /// Whether the target passed (`passed` or `flaky`).
    pub success: bool,
    /// 0 when it passed, 1 otherwise.
    pub exit_code: i32,
    /// `hit` when the passing results were restored from the cache, `miss` when the test
    /// ran and its pass was stored, `bypass` when it ran uncached (`--rerun`, a failure,
    /// retries); `null` when it did not get to run.
    #[schemars(with = "Option<String>", extend("enum" = ["hit", "miss", "bypass", null]))]
    pub cache: Option<CacheResult>,
    /// Time spent on the test actions of this run (a hit's restore time).
    pub duration_ms: u64,
    /// How many times the test ran (retries of failing cases included).
    pub attempts: u32,
    /// Where the normalized results are, workspace-relative.
    pub results_path: String,
    /// The capability's execution record (actions, cache states, the failing action).
    pub record: TargetRecord,
    /// The normalized `once.test_results.v1` results; `null` when there are none.
    pub results: Option<TestResults>,
    /// Why there are no results, or what went wrong reading them.
    pub error: Option<String>,
    /// The end (64 KiB at most) of the test action's standard error (the runner's, which
    /// the adapter passes through).
    pub stderr: String,
}

impl TestRun {
    pub fn passed(&self) -> bool {
        self.success
    }
}

/// How a test target's run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TestRunStatus {
    Passed,
    /// Passed after a retry.
    Flaky,
    Failed,
    TimedOut,
    /// No results: what the test needs failed to build, or the runner left no record.
    Error,
    Cancelled,
}

/// What the adapter of a test action was told: its format, runner and files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdapterCall {
    pub format: NativeFormat,
    pub runner: String,
    /// Workspace-relative paths.
    pub results: String,
    pub log: String,
    pub native: Option<String>,
    /// The action's working directory, workspace-relative.
    pub cwd: String,
}

impl AdapterCall {
    /// The adapter call of a `once __test-adapter …` command running in `cwd`.
    pub fn of(argv: &[String], cwd: &str) -> Option<AdapterCall> {
        if argv.first().map(String::as_str) != Some(once_exec::ONCE_PROGRAM)
            || argv.get(1).map(String::as_str) != Some("__test-adapter")
        {
            return None;
        }
        let options = &argv[2..argv.iter().position(|a| a == "--").unwrap_or(argv.len())];
        let value = |name: &str| {
            options
                .iter()
                .position(|a| a == name)
                .and_then(|i| options.get(i + 1))
                .cloned()
        };
        let relative = |path: String| join(cwd, &path);
        Some(AdapterCall {
            format: NativeFormat::from_name(&value("--results-format")?)?,
            runner: value("--runner")?,
            results: relative(value("--results")?),
            log: relative(value("--log")?),
            native: value("--native").map(relative),
            cwd: cwd.to_owned(),
        })
    }
}

/// `path` (relative to the workspace directory `cwd`) as a workspace path.
fn join(cwd: &str, path: &str) -> String {
    let mut parts: Vec<&str> = cwd
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    parts.join("/")
}

/// The test actions of a planned target: its `test` capability's commands running the
/// adapter (one, or one per batch when the kind splits the target), with their adapter
/// calls, in plan order.
fn test_actions<'p>(plan: &'p Plan, target: &str) -> Vec<(&'p PlannedAction, AdapterCall)> {
    let Some(planned) = plan.targets.iter().find(|t| t.id == target) else {
        return Vec::new();
    };
    planned
        .actions
        .iter()
        .filter_map(|id| {
            let action = plan.actions.iter().find(|a| a.action.id == *id)?;
            let ActionStep::Run(command) = &action.action.step else {
                return None;
            };
            AdapterCall::of(&command.argv, &command.cwd).map(|call| (action, call))
        })
        .collect()
}

/// Where a target's record goes: `<build_dir>/test/test_results.json` (the
/// `results_path` of `once query tests`). Batches write their own records below it, in
/// `test/batches/<n>/`, which are merged into this one.
fn canonical_results(target: &str) -> String {
    let label = once_model::TargetLabel::from_id(target);
    format!(
        "{}/test/test_results.json",
        once_model::action::build_dir(&label.package, &label.name)
    )
}

/// How bad a finished test action's state is, for a target's progress report: the worst
/// of its batches.
fn severity(status: &str) -> u8 {
    match status {
        "hit" => 0,
        "passed" => 1,
        "failed" => 2,
        "error" => 3,
        "timed_out" => 4,
        _ => 5,
    }
}

/// A progress report: a test target finished (`done` of `total`).
pub struct TestProgress<'a> {
    pub done: usize,
    pub total: usize,
    pub target: &'a str,
    /// `passed`, `failed`, `timed_out`, `error`, `cancelled` or `hit` (a cached pass).
    pub status: &'static str,
}

/// Runs the planned tests in the workspace at `root` with `store`; `progress` is called
/// as each test target's test action ends. Evidence is recorded for every execution;
/// a failure to record it comes back as a warning.
pub fn run(
    root: &Path,
    store: &Store,
    plan: &Plan,
    options: &TestOptions,
    cancel: &CancelHandle,
    progress: &(dyn Fn(&TestProgress<'_>) + Sync),
    remote: Option<&dyn once_exec::RemoteCache>,
) -> Result<(Vec<TestRun>, Vec<String>), String> {
    let mut warnings = Vec::new();
    let mut actions = plan.actions.clone();
    let test_actions: HashMap<String, String> = plan
        .targets
        .iter()
        .flat_map(|t| {
            test_actions(plan, &t.id)
                .into_iter()
                .map(|(a, _)| (a.action.id.clone(), t.id.clone()))
        })
        .collect();
    // Per target: its test actions still running, and the worst state of those done.
    let pending: std::sync::Mutex<HashMap<String, (usize, &'static str)>> = {
        let mut pending: HashMap<String, (usize, &'static str)> = HashMap::new();
        for target in test_actions.values() {
            pending.entry(target.clone()).or_insert((0, "hit")).0 += 1;
        }
        std::sync::Mutex::new(pending)
    };
    if options.rerun {
        for action in &mut actions {
            if test_actions.contains_key(&action.action.id) {
                action.action.cacheable = false;
            }
        }
    }
    let exec_options = exec_options(options);
    let total = plan.targets.len();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let callback = |p: &once_exec::Progress<'_>| {
        if let Some(target) = test_actions.get(&p.result.id) {
            let status = match (p.result.status, p.result.cache) {
                (ActionStatus::Succeeded, Some(CacheState::Hit)) => "hit",
                (ActionStatus::Succeeded, _) => "passed",
                (ActionStatus::Cancelled, _) => "cancelled",
                (_, _) if p.result.timed_out => "timed_out",
                (ActionStatus::Skipped, _) => "error",
                (ActionStatus::Failed, _) => "failed",
            };
            let finished = {
                let mut pending = pending.lock().unwrap_or_else(|e| e.into_inner());
                let Some(entry) = pending.get_mut(target) else {
                    return;
                };
                entry.0 = entry.0.saturating_sub(1);
                if severity(status) > severity(entry.1) {
                    entry.1 = status;
                }
                (entry.0 == 0).then_some(entry.1)
            };
            let Some(status) = finished else {
                return;
            };
            let done = done.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            progress(&TestProgress {
                done,
                total,
                target,
                status,
            });
        }
    };
    let report = Executor::new(root, store)
        .with_options(exec_options.clone())
        .with_cancel(cancel.clone())
        .with_source_stamps(plan.source_stamps.clone())
        .with_remote(remote)
        .on_progress(&callback)
        .run(&actions)
        .map_err(|e| format!("cannot run the plan: {e}"))?;
    // Damaged store files and records, corrupt blobs: shown as `once build` shows them.
    warnings.extend(crate::execution_warnings(&report));
    warnings.extend(crate::record_evidence(root, plan, &report));
    let records = crate::records(plan, &report);
    let mut runs = Vec::with_capacity(records.len());
    for record in records {
        let attempts = options
            .attempts
            .or_else(|| {
                plan.targets
                    .iter()
                    .find(|t| t.id == record.target)
                    .and_then(|t| t.test_attempts)
            })
            .unwrap_or(1);
        let mut run = collect(root, plan, &report, record);
        if attempts > 1 && !cancel.is_cancelled() {
            retry(
                root,
                store,
                plan,
                &exec_options,
                cancel,
                attempts,
                &mut run,
                &mut warnings,
            );
        }
        runs.push(run);
    }
    Ok((runs, warnings))
}

fn exec_options(options: &TestOptions) -> ExecOptions {
    let mut exec = ExecOptions {
        // A failing test stops nothing else.
        keep_going: true,
        sandbox: options.sandbox,
        ..ExecOptions::default()
    };
    if let Some(jobs) = options.jobs {
        exec.jobs = Some(jobs.max(1));
    }
    exec
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// The run of one target from the execution's report.
fn collect(root: &Path, plan: &Plan, report: &ExecutionReport, record: TargetRecord) -> TestRun {
    let mut run = TestRun {
        target: record.target.clone(),
        kind: record.kind.clone(),
        status: TestRunStatus::Error,
        success: false,
        exit_code: 1,
        cache: None,
        duration_ms: record.actions.iter().map(|a| a.duration_ms).sum(),
        attempts: 1,
        results_path: String::new(),
        results: None,
        error: None,
        stderr: String::new(),
        record,
    };
    let parts = test_actions(plan, &run.target);
    let Some((_, first)) = parts.first() else {
        return collect_own_record(root, run);
    };
    run.results_path = if parts.len() == 1 {
        first.results.clone()
    } else {
        canonical_results(&run.target)
    };
    run.cache = run.record.cache;
    let mut records = Vec::with_capacity(parts.len());
    for (action, call) in &parts {
        let Some(result) = report.result(&action.action.id) else {
            run.error = Some("the test action did not run".to_owned());
            return run;
        };
        run.stderr
            .push_str(&String::from_utf8_lossy(&result.stderr.tail));
        match result.status {
            ActionStatus::Cancelled => {
                run.status = TestRunStatus::Cancelled;
                run.error = Some("cancelled".to_owned());
                return run;
            }
            ActionStatus::Skipped => {
                run.error = Some(match &run.record.failure {
                    Some(failure) => {
                        format!("not run: `{}` failed: {}", failure.action, failure.message)
                    }
                    None => "not run: what the test needs failed".to_owned(),
                });
                return run;
            }
            ActionStatus::Succeeded | ActionStatus::Failed => {}
        }
        let results = if result.timed_out {
            timed_out_record(root, &run.target, call, result)
        } else {
            read_results(root, &run.target, &call.results).map_err(|error| {
                // The adapter always writes a record; without one the action failed first.
                match &result.message {
                    Some(message) => format!("{error} ({message})"),
                    None => error,
                }
            })
        };
        match results {
            Ok(results) => records.push(results),
            Err(error) => {
                run.error = Some(error);
                return run;
            }
        }
    }
    match combine(root, &run.target, &run.results_path, records) {
        Ok(results) => set_results(&mut run, results),
        Err(error) => run.error = Some(error),
    }
    run
}

/// One record from the records of a target's test actions: the only one, or the batches
/// merged (`once_test_results::merge::batches`) and written to the target's results path.
fn combine(
    root: &Path,
    target: &str,
    path: &str,
    mut records: Vec<TestResults>,
) -> Result<TestResults, String> {
    if records.len() == 1 {
        return records.pop().ok_or_else(|| "no results".to_owned());
    }
    let merged = once_test_results::merge::batches(target, records)
        .ok_or_else(|| "the test declared no action".to_owned())?;
    write_results(root, path, &merged)?;
    Ok(merged)
}

/// A test whose kind does not run the adapter (a project kind): its actions write the
/// normalized record themselves, at the `results_path` every test has.
fn collect_own_record(root: &Path, mut run: TestRun) -> TestRun {
    let label = once_model::TargetLabel::from_id(&run.target);
    run.results_path = format!(
        "{}/test/test_results.json",
        once_model::action::build_dir(&label.package, &label.name)
    );
    if !run.record.implemented {
        run.error = Some(format!(
            "the kind `{}` does not implement `test`: nothing ran",
            run.kind
        ));
        return run;
    }
    run.cache = run.record.cache;
    match run.record.status {
        RecordStatus::Completed | RecordStatus::Failed => {}
        RecordStatus::Cancelled => {
            run.status = TestRunStatus::Cancelled;
            return run;
        }
        RecordStatus::Skipped => {
            run.error = Some(match &run.record.failure {
                Some(failure) => {
                    format!("not run: `{}` failed: {}", failure.action, failure.message)
                }
                None => "not run: what the test needs failed".to_owned(),
            });
            return run;
        }
    }
    match read_results(root, &run.target, &run.results_path) {
        Ok(results) => {
            let failed_action = run.record.status == RecordStatus::Failed;
            set_results(&mut run, results);
            // A failed action fails the test whatever its record says.
            if failed_action && run.success {
                run.status = TestRunStatus::Failed;
                run.success = false;
                run.exit_code = 1;
            }
        }
        Err(error) => {
            run.error = Some(format!(
                "{error}; a test kind's actions write a `once.test_results.v1` record there \
                 (or run `once __test-adapter`)"
            ));
        }
    }
    run
}

fn set_results(run: &mut TestRun, results: TestResults) {
    run.status = match results.status {
        TargetStatus::Passed => TestRunStatus::Passed,
        TargetStatus::Flaky => TestRunStatus::Flaky,
        TargetStatus::Failed => TestRunStatus::Failed,
        TargetStatus::TimedOut => TestRunStatus::TimedOut,
    };
    run.success = results.succeeded();
    run.exit_code = if run.success { 0 } else { 1 };
    run.results = Some(results);
}

fn read_results(root: &Path, target: &str, path: &str) -> Result<TestResults, String> {
    match once_db::confined::read_confined(root, path) {
        Ok(Some(bytes)) => TestResults::from_json(&bytes, target)
            .map_err(|reason| format!("cannot read `{path}`: {reason}")),
        Ok(None) => Err(format!(
            "the test left no results (`{path}` does not exist)"
        )),
        Err(error) => Err(format!("cannot read `{path}`: {error}")),
    }
}

/// Writes `results` as every record is written (`TestResults::to_json`: sound and
/// bounded; the records this module writes are already in that form).
fn write_results(root: &Path, path: &str, results: &TestResults) -> Result<(), String> {
    let bytes = results.to_json();
    once_db::confined::write_confined(root, path, &bytes, || Ok(()))
        .map(|_| ())
        .map_err(|e| format!("cannot write `{path}`: {e}"))
}

/// The record of a test killed at its time limit: what its log shows (for runners that
/// report on their output), plus the timeout; written where the adapter would have.
fn timed_out_record(
    root: &Path,
    target: &str,
    call: &AdapterCall,
    result: &ActionResult,
) -> Result<TestResults, String> {
    let log = once_db::confined::read_confined(root, &call.log)
        .ok()
        .flatten()
        .unwrap_or_default();
    let parsed = match call.format {
        NativeFormat::PytestJunit | NativeFormat::Junit | NativeFormat::ExitCode => {
            once_test_results::Parsed::default()
        }
        // The unittest runner writes each outcome to its report as it happens.
        NativeFormat::Unittest => {
            let report = call
                .native
                .as_deref()
                .and_then(|native| once_db::confined::read_confined(root, native).ok())
                .flatten()
                .unwrap_or_default();
            NativeFormat::Unittest.parse(&String::from_utf8_lossy(&report))
        }
        format => format.parse(&String::from_utf8_lossy(&log)),
    };
    let outcome = Outcome {
        exit_code: None,
        timed_out: true,
        log: call.log.clone(),
        cwd: call.cwd.clone(),
        allow_no_cases: false,
    };
    let mut runner = Runner::named(&call.runner);
    if let Some(message) = &result.message {
        runner
            .metadata
            .insert("timeout".to_owned(), message.clone().into());
    }
    let record = assemble(
        target,
        runner,
        parsed,
        &outcome,
        Artifacts {
            logs: vec![call.log.clone()],
            native_results: Vec::new(),
        },
        &root.to_string_lossy(),
    );
    write_results(root, &call.results, &record)?;
    Ok(record)
}

/// Re-runs the failing cases of `run` (uncached, filtered by case where the runner can
/// filter; each failing batch on its own) until they pass or `attempts` runs were made,
/// merging each retry into the results (`once_test_results::merge::retry`) and writing
/// them back.
#[allow(
    clippy::too_many_arguments,
    reason = "one call site, every argument distinct"
)]
fn retry(
    root: &Path,
    store: &Store,
    plan: &Plan,
    exec_options: &ExecOptions,
    cancel: &CancelHandle,
    attempts: u32,
    run: &mut TestRun,
    warnings: &mut Vec<String>,
) {
    let parts = test_actions(plan, &run.target);
    if parts.is_empty() {
        return;
    }
    while run.attempts < attempts && !cancel.is_cancelled() {
        let Some(current) = run.results.clone() else {
            return;
        };
        if current.status != TargetStatus::Failed {
            return;
        }
        let started = Instant::now();
        let mut records = Vec::with_capacity(parts.len());
        for (action, call) in &parts {
            let part = if parts.len() == 1 {
                current.clone()
            } else {
                match read_results(root, &run.target, &call.results) {
                    Ok(part) => part,
                    Err(error) => {
                        warnings.push(error);
                        return;
                    }
                }
            };
            if part.status != TargetStatus::Failed {
                records.push(part);
                continue;
            }
            let retry = Retry {
                root,
                store,
                plan,
                exec_options,
                cancel,
            };
            match retry.part(action, call, part, run.attempts, warnings) {
                Some(part) => records.push(part),
                None => return,
            }
        }
        run.duration_ms += millis(started.elapsed());
        run.attempts += 1;
        run.cache = Some(CacheResult::Bypass);
        match combine(root, &run.target, &run.results_path, records) {
            Ok(merged) => set_results(run, merged),
            Err(error) => {
                warnings.push(error);
                return;
            }
        }
    }
}

/// What a retry runs with.
struct Retry<'a> {
    root: &'a Path,
    store: &'a Store,
    plan: &'a Plan,
    exec_options: &'a ExecOptions,
    cancel: &'a CancelHandle,
}

impl Retry<'_> {
    /// Runs the failing cases of one test action's record `previous` (after `done`
    /// attempts) again; the merged record, written back where the action writes it, or
    /// `None` when the retry did not get to results (a warning says why).
    fn part(
        &self,
        action: &PlannedAction,
        call: &AdapterCall,
        mut previous: TestResults,
        done: u32,
        warnings: &mut Vec<String>,
    ) -> Option<TestResults> {
        let target = previous.target.clone();
        let failing: Vec<String> = previous
            .cases
            .iter()
            .filter(|case| case.status == CaseStatus::Failed)
            .map(|case| case.id.clone())
            .collect();
        // A synthetic case (the runner's exit, a crash) names no case to select: the
        // whole action runs again.
        let whole = failing.iter().any(|id| id.starts_with('(')) || failing.is_empty();
        let attempt = done + 1;
        // Keep the previous attempt's log: the retry writes the same files.
        let kept_log = match call.log.rsplit_once('.') {
            Some((stem, extension)) if !extension.contains('/') => {
                format!("{stem}.attempt-{done}.{extension}")
            }
            _ => format!("{}.attempt-{done}", call.log),
        };
        if let Ok(Some(bytes)) = once_db::confined::read_confined(self.root, &call.log)
            && once_db::confined::write_confined(self.root, &kept_log, &bytes, || Ok(())).is_ok()
        {
            for log in &mut previous.artifacts.logs {
                if *log == call.log {
                    log.clone_from(&kept_log);
                }
            }
        }
        let mut retry_action = action.clone();
        retry_action.action.cacheable = false;
        retry_action.action.id = format!("{}.attempt-{attempt}", action.action.id);
        if let ActionStep::Run(command) = &mut retry_action.action.step
            && !whole
        {
            let mut argv = command.argv[..2].to_vec();
            for id in &failing {
                argv.push("--retry-case".to_owned());
                argv.push(id.clone());
            }
            argv.extend(command.argv[2..].iter().cloned());
            command.argv = argv;
        }
        let report = match Executor::new(self.root, self.store)
            .with_options(self.exec_options.clone())
            .with_cancel(self.cancel.clone())
            .with_source_stamps(self.plan.source_stamps.clone())
            .run(std::slice::from_ref(&retry_action))
        {
            Ok(report) => report,
            Err(error) => {
                warnings.push(format!("cannot retry `{target}`: {error}"));
                return None;
            }
        };
        let retry_plan = Plan {
            actions: vec![retry_action.clone()],
            ..self.plan.clone()
        };
        warnings.extend(crate::execution_warnings(&report));
        warnings.extend(crate::record_evidence(self.root, &retry_plan, &report));
        let result = report.results.first()?;
        if result.status == ActionStatus::Cancelled {
            return None;
        }
        let again = if result.timed_out {
            timed_out_record(self.root, &target, call, result)
        } else {
            read_results(self.root, &target, &call.results)
        };
        let again = match again {
            Ok(again) => again,
            Err(error) => {
                warnings.push(format!("the retry of `{target}` left no results: {error}"));
                return None;
            }
        };
        let merged = once_test_results::merge::retry(previous, again);
        if let Err(error) = write_results(self.root, &call.results, &merged) {
            warnings.push(error);
        }
        Some(merged)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(argv: &[&str], cwd: &str, expected: Option<(&str, &str, Option<&str>)>) {
        let argv: Vec<String> = argv.iter().map(|s| (*s).to_owned()).collect();
        let call = AdapterCall::of(&argv, cwd);
        assert_eq!(
            call.as_ref()
                .map(|c| (c.results.as_str(), c.log.as_str(), c.native.as_deref())),
            expected
        );
    }

    #[test]
    fn adapter_calls_are_read_from_the_test_action() {
        check(
            &[
                "once",
                "__test-adapter",
                "--results-format",
                "pytest_junit",
                "--target",
                "t/T",
                "--runner",
                "pytest",
                "--results",
                "../.once/out/t/T/test/test_results.json",
                "--log",
                "../.once/out/t/T/test/log.txt",
                "--native",
                "../.once/out/t/T/test/junit.xml",
                "--",
                "python3",
                "--results",
                "elsewhere",
            ],
            "t",
            Some((
                ".once/out/t/T/test/test_results.json",
                ".once/out/t/T/test/log.txt",
                Some(".once/out/t/T/test/junit.xml"),
            )),
        );
        check(&["sh", "__test-adapter"], "", None);
        check(
            &["once", "__test-adapter", "--results-format", "nope", "--"],
            "",
            None,
        );
    }

    /// The names the run's schema lists are the names serde writes, every variant's.
    #[test]
    fn the_run_schema_lists_every_status_by_its_serialised_name() {
        let schema = serde_json::to_value(schemars::schema_for!(TestRun)).unwrap();
        use TestRunStatus as S;
        let written: Vec<serde_json::Value> = [
            S::Passed,
            S::Flaky,
            S::Failed,
            S::TimedOut,
            S::Error,
            S::Cancelled,
        ]
        .iter()
        .map(|status| serde_json::to_value(status).unwrap())
        .collect();
        assert_eq!(
            schema["properties"]["status"]["enum"].as_array().unwrap(),
            &written
        );
    }
}
