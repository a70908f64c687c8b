//! The executing tools (`once_build_target`, `once_run_target`, `once_run_tests`,
//! `once_start_target`, `once_stop_runtime`, `once_exec_script`): a job made on the worker ([`plan_build`],
//! [`plan_run`], [`plan_tests`], [`plan_start`] from a database snapshot; a stop from its
//! arguments alone, `crate::tools::StopRuntime`), then run by [`execute`] on a background thread without the
//! database, reporting each finished action (each finished test target for tests) and
//! stopping (every process group killed) when cancelled.
//!
//! Starting a runtime session builds what the target's `run` capability needs (like
//! `once_run_target`), then hands the program to a detached supervisor
//! (`once_runtime`) and answers the session record at once: the session outlives the
//! call and the server. Stopping waits for the session's end (the grace period at most)
//! in the background, so the worker keeps answering meanwhile.

use std::path::Path;

use once_analysis::{Analysis, Cancellable};
use once_build::testing::{Request, Selection, TestOptions, TestProgress, TestRun};
use once_build::{Plan, TargetRecord};
use once_exec::{CancelHandle, ExecOptions, Executor, Progress, Store};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::tools::{RunTests, ToolError};

/// What a call planned, ready to run without the database.
#[derive(Clone, Debug)]
pub enum ExecutionJob {
    /// Build or run a target (`plan.capability`).
    Capability { target: String, plan: Plan },
    /// Run the selected tests (`plan` is their `test` capability).
    Tests { selection: Selection, plan: Plan },
    /// Build what the target's `run` needs, then start its program in a runtime session.
    StartRuntime { target: String, plan: Plan },
    /// Stop a runtime session, with this grace period between SIGTERM and SIGKILL.
    StopRuntime {
        session_id: String,
        grace: std::time::Duration,
    },
    /// Run an annotated script and the scripts it needs (`once_exec_script`).
    Script {
        path: String,
        job: once_build::scripts::ScriptJob,
    },
}

/// The cache record of `once_exec_script` (the trailer of `once exec --format json`).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ScriptRecord {
    /// The script action's key (`null` when it did not get as far as computing it).
    pub action_digest: Option<String>,
    /// `hit`, `miss` or `bypass` (a script without directives); `null` when it did not run.
    #[schemars(extend("enum" = ["hit", "miss", "bypass", null]))]
    pub cache: Option<&'static str>,
    /// The program's exit code (`null` when it did not exit on its own).
    pub exit_code: Option<i32>,
}

/// The result of `once_exec_script` (its output schema is derived from this type).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ScriptResult {
    /// The script, workspace-relative.
    pub path: String,
    pub success: bool,
    /// What `once exec` exits with: the program's code (128 + N for signal N), a failed
    /// need's, or 1 when nothing ran.
    pub exit_code: i32,
    /// The end (64 KiB at most) of the script's standard output and error, as `once exec`
    /// writes them: `stdout` is the program's own; `stderr` starts with the output of each
    /// needed script that ran in this call (not a hit) and printed something, under a
    /// header line. When a need failed the script did not run: `stdout` is empty, `stderr`
    /// holds the need's output, then why.
    pub stdout: String,
    pub stderr: String,
    pub record: ScriptRecord,
    /// The evidence subject of the script's action: its action digest.
    pub evidence_subject: Option<String>,
    /// The `once.evidence.v1` records this call wrote for the script's action.
    pub evidence: Vec<once_json::EvidenceRecordDto>,
}

/// The result of `once_run_tests` (its output schema is derived from this type).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct TestsResult {
    /// Whether every selected test passed (`passed` or `flaky`).
    pub success: bool,
    /// What was selected and why.
    pub selection: Selection,
    /// One run per selected test target, each with its normalized results.
    pub runs: Vec<TestRun>,
    /// Why nothing ran (planning errors); empty otherwise.
    pub problems: Vec<String>,
    /// Problems that did not change the outcome (evidence not recorded, a retry that
    /// left no results).
    pub warnings: Vec<String>,
}

/// The result of an executing tool (its output schema is derived from this type).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ExecutionResult {
    pub target: String,
    #[schemars(extend("enum" = ["build", "run"]))]
    pub capability: String,
    /// What `once build`/`once run` would exit with: 0 success, 1 failed; for a run that
    /// got to the program, the program's exit code.
    pub exit_code: i32,
    pub success: bool,
    pub record: TargetRecord,
    /// The end (64 KiB at most) of the standard output and error of the target's own
    /// actions (for a run: the program's).
    pub stdout: String,
    pub stderr: String,
    /// Why nothing ran (planning errors); empty otherwise.
    pub problems: Vec<String>,
}

fn plan_capability(
    analysis: &Analysis,
    target: String,
    capability: &str,
) -> Cancellable<Result<(String, Plan), ToolError>> {
    let ids = match once_build::resolve_targets(
        analysis,
        std::slice::from_ref(&target),
        capability,
        crate::tools::listing_hint,
    )? {
        Ok(ids) => ids,
        Err(message) => return Ok(Err(message)),
    };
    let plan = match once_build::plan(analysis, &ids, capability)? {
        Ok(plan) => plan,
        Err(message) => return Ok(Err(message)),
    };
    let _ = analysis.save_digest_index();
    Ok(Ok((ids.into_iter().next().unwrap_or(target), plan)))
}

/// `once_build_target`: plans the target's `build`.
pub fn plan_build(
    analysis: &Analysis,
    target: String,
) -> Cancellable<Result<ExecutionJob, ToolError>> {
    Ok(plan_capability(analysis, target, "build")?
        .map(|(target, plan)| ExecutionJob::Capability { target, plan }))
}

/// `once_run_target`: plans the target's `run` (after its `build`).
pub fn plan_run(
    analysis: &Analysis,
    target: String,
) -> Cancellable<Result<ExecutionJob, ToolError>> {
    Ok(plan_capability(analysis, target, "run")?
        .map(|(target, plan)| ExecutionJob::Capability { target, plan }))
}

/// `once_run_tests`: selects the tests (`target`/`targets`, else `changed_paths`, else
/// every test) and plans their `test` capability.
pub fn plan_tests(
    analysis: &Analysis,
    arguments: RunTests,
) -> Cancellable<Result<ExecutionJob, ToolError>> {
    let mut targets: Vec<String> = arguments.target.into_iter().collect();
    for target in arguments.targets {
        if !targets.contains(&target) {
            targets.push(target);
        }
    }
    let changed = arguments.changed_paths;
    let request = if !targets.is_empty() {
        Request::Targets(&targets)
    } else if !changed.is_empty() {
        Request::Changed(&changed)
    } else {
        Request::All
    };
    let selection =
        match once_build::testing::select(analysis, &request, crate::tools::listing_hint)? {
            Ok(selection) => selection,
            Err(message) => return Ok(Err(message)),
        };
    let ids: Vec<String> = selection.tests.iter().map(|t| t.id.clone()).collect();
    let plan = match once_build::plan(analysis, &ids, "test")? {
        Ok(plan) => plan,
        Err(message) => return Ok(Err(message)),
    };
    let _ = analysis.save_digest_index();
    Ok(Ok(ExecutionJob::Tests { selection, plan }))
}

/// Runs the selected tests; `progress` gets each finished test target.
fn execute_tests(
    root: &Path,
    plan: &Plan,
    selection: &Selection,
    cancel: CancelHandle,
    progress: &(dyn Fn(usize, usize, &str) + Sync),
) -> Result<Value, ToolError> {
    let answer = |result: TestsResult| serde_json::to_value(result).map_err(|e| e.to_string());
    if !plan.problems.is_empty() {
        return answer(TestsResult {
            success: false,
            selection: selection.clone(),
            runs: Vec::new(),
            problems: plan.problems.clone(),
            warnings: Vec::new(),
        });
    }
    let store_path = Store::default_path(root);
    let store = Store::open(&store_path)
        .map_err(|e| format!("cannot open the store `{}`: {e}", store_path.display()))?;
    let report =
        |p: &TestProgress<'_>| progress(p.done, p.total, &format!("{} {}", p.status, p.target));
    let (runs, warnings) = once_build::testing::run(
        root,
        &store,
        plan,
        &TestOptions::default(),
        &cancel,
        &report,
    )?;
    answer(TestsResult {
        success: runs.iter().all(TestRun::passed),
        selection: selection.clone(),
        runs,
        problems: Vec::new(),
        warnings,
    })
}

/// `once_start_target`: plans the target's `run`; the program is started in a session.
pub fn plan_start(
    analysis: &Analysis,
    target: String,
) -> Cancellable<Result<ExecutionJob, ToolError>> {
    Ok(plan_capability(analysis, target, "run")?
        .map(|(target, plan)| ExecutionJob::StartRuntime { target, plan }))
}

/// `once_exec_script`: validates the script and plans it with its needs (an invalid
/// header or a `needs` cycle is a tool error naming each problem).
pub fn plan_exec_script(
    analysis: &Analysis,
    path: String,
    args: Vec<String>,
) -> Cancellable<Result<ExecutionJob, ToolError>> {
    let request = once_analysis::ScriptRequest {
        path: path.clone(),
        args,
        environment: std::env::vars().collect(),
    };
    let plan = match analysis.script_plan(&request)? {
        Ok(plan) => plan,
        Err(error) => {
            return Ok(Err(format!(
                "cannot run the script `{path}`: {error}; validate it with `once_validate_script`"
            )));
        }
    };
    let _ = analysis.save_digest_index();
    Ok(Ok(ExecutionJob::Script {
        path: plan.script.clone(),
        job: once_build::scripts::ScriptJob::of_script(analysis, plan)?,
    }))
}

/// Runs a script job and answers its record.
fn run_script(
    root: &Path,
    path: &str,
    job: &once_build::scripts::ScriptJob,
    cancel: CancelHandle,
    progress: &(dyn Fn(usize, usize, &str) + Sync),
) -> Result<ScriptResult, ToolError> {
    let store_path = Store::default_path(root);
    let store = Store::open(&store_path)
        .map_err(|e| format!("cannot open the store `{}`: {e}", store_path.display()))?;
    let callback = |p: &Progress<'_>| progress(p.done, p.total, &p.message);
    let report = once_build::scripts::run(root, &store, job, cancel, Some(&callback))?;
    let records = once_build::scripts::evidence_records(job, &report);
    let warning = once_build::scripts::record_evidence(root, &records);
    let main = report
        .result(&job.main)
        .ok_or_else(|| format!("internal error: no result for `{}`", job.main))?;
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    let failed_need = report
        .results
        .iter()
        .find(|r| r.id != job.main && r.status == once_exec::ActionStatus::Failed);
    // The table `once exec` exits with.
    let code = |r: &once_exec::ActionResult| i32::from(once_build::scripts::exit_code(r));
    // As `once exec` writes its stderr: the output of the needs that ran (each under a
    // header), then the script's (or a failed need's output and why).
    let mut needs_output = String::new();
    for need in once_build::scripts::needs_to_show(job, &report) {
        needs_output.push_str(&once_build::scripts::need_header(job, need));
        for stream in [&need.stdout, &need.stderr] {
            needs_output.push_str(&text(&stream.tail));
        }
        if !needs_output.ends_with('\n') {
            needs_output.push('\n');
        }
    }
    let (exit_code, stdout, mut stderr) = match failed_need {
        Some(need) => (
            code(need),
            String::new(),
            format!(
                "{needs_output}{}{}once: error: the script `{}` that `{}` needs failed: {}\n",
                text(&need.stdout.tail),
                text(&need.stderr.tail),
                need.id,
                job.main,
                need.message.as_deref().unwrap_or("failed")
            ),
        ),
        None => {
            let mut stderr = needs_output;
            stderr.push_str(&text(&main.stderr.tail));
            if let Some(note) = once_build::scripts::failure_note(main) {
                stderr.push_str(&format!("once: error: {note}\n"));
            }
            (code(main), text(&main.stdout.tail), stderr)
        }
    };
    if let Some(warning) = warning {
        stderr.push_str(&format!("once: warning: {warning}\n"));
    }
    let digest = main.key.map(|k| k.to_hex());
    Ok(ScriptResult {
        path: path.to_owned(),
        success: report.succeeded(),
        exit_code,
        stdout,
        stderr,
        record: ScriptRecord {
            action_digest: digest.clone(),
            cache: main.cache.map(|c| c.as_str()),
            exit_code: once_build::scripts::reported_exit_code(main),
        },
        evidence_subject: digest,
        evidence: records
            .iter()
            .filter(|r| r.evidence.action.as_deref() == Some(job.main.as_str()))
            .map(once_json::evidence_record)
            .collect(),
    })
}

/// Runs the job in the workspace at `root` and answers the tool's result; `progress`
/// gets each finished action (`done`, `total`, message). Cancelling `cancel` kills every
/// running process group (a started session is not the call's: it is stopped with
/// `once_stop_runtime`).
pub fn execute(
    root: &Path,
    job: &ExecutionJob,
    cancel: CancelHandle,
    progress: &(dyn Fn(usize, usize, &str) + Sync),
) -> Result<Value, ToolError> {
    let to_value = |value: Result<Value, serde_json::Error>| value.map_err(|e| e.to_string());
    match job {
        ExecutionJob::Capability { target, plan } => to_value(serde_json::to_value(
            run_capability(root, target, plan, cancel, progress)?,
        )),
        ExecutionJob::Tests { selection, plan } => {
            execute_tests(root, plan, selection, cancel, progress)
        }
        ExecutionJob::StartRuntime { target, plan } => to_value(serde_json::to_value(
            start_runtime(root, target, plan, cancel, progress)?,
        )),
        ExecutionJob::StopRuntime { session_id, grace } => to_value(serde_json::to_value(
            once_runtime::stop_session(root, session_id, *grace).map_err(|e| e.to_string())?,
        )),
        ExecutionJob::Script { path, job } => to_value(serde_json::to_value(run_script(
            root, path, job, cancel, progress,
        )?)),
    }
}

/// Builds what `target`'s run needs, then starts its program in a runtime session.
fn start_runtime(
    root: &Path,
    target: &str,
    plan: &Plan,
    cancel: CancelHandle,
    progress: &(dyn Fn(usize, usize, &str) + Sync),
) -> Result<once_runtime::SessionRecord, ToolError> {
    if !plan.problems.is_empty() {
        return Err(format!(
            "cannot run `{target}`; nothing was started: {}",
            plan.problems.join("; ")
        ));
    }
    let (before, programs) = plan.split_program();
    if programs.is_empty() {
        return Err(format!(
            "`{target}`'s `run` capability declares no uncached command: there is no program to start in a session"
        ));
    }
    let store_path = Store::default_path(root);
    let store = Store::open(&store_path)
        .map_err(|e| format!("cannot open the store `{}`: {e}", store_path.display()))?;
    let callback = |p: &Progress<'_>| progress(p.done, p.total, &p.message);
    let report = Executor::new(root, &store)
        .with_options(ExecOptions::default())
        .with_cancel(cancel)
        .with_source_stamps(plan.source_stamps.clone())
        .on_progress(&callback)
        .run(&before)
        .map_err(|e| format!("cannot run the plan: {e}"))?;
    let _ = once_build::record_evidence(root, plan, &report);
    if !report.succeeded() {
        let failure = once_build::records(plan, &report)
            .into_iter()
            .find_map(|record| record.failure)
            .map_or_else(String::new, |f| {
                format!(
                    ": `{}` failed ({}){}",
                    f.action,
                    f.message,
                    if f.stderr_tail.is_empty() {
                        String::new()
                    } else {
                        format!("\n{}", f.stderr_tail)
                    }
                )
            });
        return Err(format!(
            "not started: what `{target}` needs failed to build{failure}"
        ));
    }
    let host = once_exec::HostEnvironment::from_process();
    let specs = once_runtime::program_specs(root, &programs, &host, &[])?;
    let supervisor = std::env::current_exe()
        .map_err(|e| format!("cannot find the `once` executable to supervise: {e}"))?;
    once_runtime::start_session(root, target, &specs, &supervisor)
        .map_err(|e| format!("cannot start the runtime session: {e}"))
}

/// Builds or runs `target` through the executor.
fn run_capability(
    root: &Path,
    target: &str,
    plan: &Plan,
    cancel: CancelHandle,
    progress: &(dyn Fn(usize, usize, &str) + Sync),
) -> Result<ExecutionResult, ToolError> {
    let capability = plan.capability.clone();
    if !plan.problems.is_empty() {
        let record = once_build::refused_records(plan)
            .into_iter()
            .next()
            .ok_or_else(|| "internal error: the plan has no target".to_owned())?;
        return Ok(ExecutionResult {
            target: target.to_owned(),
            capability,
            exit_code: 1,
            success: false,
            record,
            stdout: String::new(),
            stderr: String::new(),
            problems: plan.problems.clone(),
        });
    }
    let store_path = Store::default_path(root);
    let store = Store::open(&store_path)
        .map_err(|e| format!("cannot open the store `{}`: {e}", store_path.display()))?;
    let callback = |p: &Progress<'_>| progress(p.done, p.total, &p.message);
    let report = Executor::new(root, &store)
        .with_options(ExecOptions::default())
        .with_cancel(cancel)
        .with_source_stamps(plan.source_stamps.clone())
        .on_progress(&callback)
        .run(&plan.actions)
        .map_err(|e| format!("cannot run the plan: {e}"))?;
    let evidence_warning = once_build::record_evidence(root, plan, &report);
    let record = once_build::records(plan, &report)
        .into_iter()
        .next()
        .ok_or_else(|| "internal error: the plan has no target".to_owned())?;
    let own: Vec<&once_exec::ActionResult> = record
        .actions
        .iter()
        .filter_map(|a| report.result(&a.id))
        .collect();
    let text = |pick: fn(&once_exec::ActionResult) -> &[u8]| {
        own.iter()
            .map(|r| String::from_utf8_lossy(pick(r)).into_owned())
            .collect::<String>()
    };
    let success = report.succeeded();
    let program_exit = (capability == "run")
        .then(|| own.last().and_then(|r| r.exit_code))
        .flatten();
    Ok(ExecutionResult {
        target: target.to_owned(),
        capability,
        exit_code: program_exit.unwrap_or(if success { 0 } else { 1 }),
        success,
        stdout: text(|r| &r.stdout.tail),
        stderr: once_build::execution_warnings(&report)
            .into_iter()
            .chain(evidence_warning)
            .fold(text(|r| &r.stderr.tail), |mut stderr, warning| {
                stderr.push_str(&format!("once: warning: {warning}\n"));
                stderr
            }),
        record,
        problems: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use once_build::{ActionSummary, Failure};

    fn result(full: bool) -> ExecutionResult {
        let some = |text: &str| full.then(|| text.to_owned());
        ExecutionResult {
            target: "a/A".into(),
            capability: "build".into(),
            exit_code: 1,
            success: false,
            record: TargetRecord {
                target: "a/A".into(),
                kind: "command".into(),
                capability: "build".into(),
                implemented: true,
                status: "failed",
                cache: full.then_some("miss"),
                action_digest: some("00"),
                output_groups: vec!["default".into()],
                required_outputs: vec!["default".into()],
                outputs: vec![".once/out/a/A/x".into()],
                actions: vec![ActionSummary {
                    id: "a/A#build/cmd".into(),
                    status: "failed",
                    cache: full.then_some("bypass"),
                    key: some("00"),
                    exit_code: full.then_some(3),
                    duration_ms: 5,
                }],
                failure: full.then(|| Failure {
                    action: "a/A#build/cmd".into(),
                    command: "sh -c 'exit 3'".into(),
                    exit_code: Some(3),
                    message: "failed".into(),
                    stdout_tail: String::new(),
                    stderr_tail: "no\n".into(),
                }),
            },
            stdout: String::new(),
            stderr: "no\n".into(),
            problems: vec!["p".into()],
        }
    }

    /// The schema is derived from the record types; a result with every field set, and
    /// one with every optional field null, both validate, and every field is required
    /// (records always serialise all of them), so the derivation cannot loosen silently.
    #[test]
    fn results_validate_against_their_output_schema_field_for_field() {
        let schema =
            crate::schema::output_schema::<ExecutionResult>()["properties"]["result"].clone();
        for full in [true, false] {
            let value = serde_json::to_value(result(full)).unwrap();
            let problems = crate::schema::validate(&schema, &value);
            assert!(problems.is_empty(), "{problems:?}\n{value}");
        }
        // Every property the schema lists is required, so none can go missing silently.
        fn check_required(schema: &Value) {
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                let required: Vec<&str> = schema["required"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(Value::as_str)
                    .collect();
                for (name, property) in properties {
                    assert!(required.contains(&name.as_str()), "{name} is not required");
                    check_required(property);
                }
            }
            if let Some(items) = schema.get("items") {
                check_required(items);
            }
        }
        check_required(&schema);
    }
}
