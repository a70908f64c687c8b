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
use once_build::plan_cache::{self as planning, PlanRequest, PlanSource, TestRequest};
use once_build::session::{Observer, Session};
use once_build::testing::{Selection, TestOptions, TestProgress, TestRun};
use once_build::{Plan, PlanDiagnostic, TargetRecord};
use once_exec::{CancelHandle, ExecOptions, Progress};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::tools::{RunTests, ToolError};

/// What a call planned, ready to run without the database.
#[derive(Clone, Debug)]
pub enum ExecutionJob {
    /// Build or run a target (`plan.capability`).
    Capability { target: String, plan: Plan },
    /// Validate a target's actions (`once_validate_actions`).
    Validate { target: String, plan: Plan },
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
    /// What `once test` exits with for the same selection: 0 every test passed, 1 one
    /// failed or nothing ran (planning errors), 130 cancelled.
    pub exit_code: i32,
    /// What was selected and why.
    pub selection: Selection,
    /// One run per selected test target, each with its normalized results.
    pub runs: Vec<TestRun>,
    /// Why nothing ran (planning errors), one line each; empty otherwise.
    pub problems: Vec<String>,
    /// The same problems, each with its code, file and range.
    pub diagnostics: Vec<PlanDiagnostic>,
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
    /// What `once build`/`once run` would exit with: 0 success, 1 failed (or refused);
    /// for a run that got to the program, the program's exit code (128 + N when signal
    /// N killed it, 1 when it exited 0 but its action failed).
    pub exit_code: i32,
    pub success: bool,
    pub record: TargetRecord,
    /// The end (64 KiB at most) of the standard output and error of the target's own
    /// actions (for a run: the program's).
    pub stdout: String,
    pub stderr: String,
    /// Why nothing ran (planning errors), one line each; empty otherwise.
    pub problems: Vec<String>,
    /// The same problems, each with its code, file and range.
    pub diagnostics: Vec<PlanDiagnostic>,
}

/// Plans `capability` of `target` from the snapshot, as `once build`/`once run` would.
fn plan_capability(
    analysis: &Analysis,
    target: String,
    capability: &str,
) -> Cancellable<Result<(String, Plan), ToolError>> {
    let request = PlanRequest::Capability {
        patterns: std::slice::from_ref(&target),
        capability,
    };
    let planned = planning::plan(
        PlanSource::Warm(analysis),
        &request,
        crate::tools::listing_hint,
    )?;
    Ok(planned.map(|planned| {
        let id = planned
            .plan
            .targets
            .first()
            .map_or(target, |planned_target| planned_target.id.clone());
        (id, planned.plan)
    }))
}

/// `once_build_target`: plans the target's `build`.
pub fn plan_build(
    analysis: &Analysis,
    target: String,
) -> Cancellable<Result<ExecutionJob, ToolError>> {
    Ok(plan_capability(analysis, target, "build")?
        .map(|(target, plan)| ExecutionJob::Capability { target, plan }))
}

/// `once_validate_actions`: plans the target's `capability` to run it traced.
pub fn plan_validate(
    analysis: &Analysis,
    target: String,
    capability: &str,
) -> Cancellable<Result<ExecutionJob, ToolError>> {
    Ok(plan_capability(analysis, target, capability)?
        .map(|(target, plan)| ExecutionJob::Validate { target, plan }))
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
    let request = TestRequest::new(
        arguments.target.into_iter().chain(arguments.targets),
        arguments.changed_paths,
    );
    let planned = match planning::plan(
        PlanSource::Warm(analysis),
        &PlanRequest::Tests(&request),
        crate::tools::listing_hint,
    )? {
        Ok(planned) => planned,
        Err(message) => return Ok(Err(message)),
    };
    Ok(match planned.selection {
        Some(selection) => Ok(ExecutionJob::Tests {
            selection,
            plan: planned.plan,
        }),
        None => Err("internal error: a test plan without its selection".to_owned()),
    })
}

/// Runs the selected tests; the observer hears of each finished test target.
fn execute_tests(
    session: &Session,
    plan: &Plan,
    selection: &Selection,
    observer: &McpProgress<'_>,
) -> Result<TestsResult, ToolError> {
    let tested = session.test(plan, &TestOptions::default(), Some(observer))?;
    Ok(TestsResult {
        success: tested.succeeded(),
        exit_code: tested.exit_code(),
        selection: selection.clone(),
        problems: if tested.refused {
            plan.problem_lines()
        } else {
            Vec::new()
        },
        diagnostics: if tested.refused {
            plan.problem_diagnostics()
        } else {
            Vec::new()
        },
        runs: tested.runs,
        warnings: tested.warnings,
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
    session: &Session,
    path: &str,
    job: &once_build::scripts::ScriptJob,
    observer: &McpProgress<'_>,
) -> Result<ScriptResult, ToolError> {
    let run = session.exec_script(job, Some(observer))?;
    let main = run
        .main_result()
        .ok_or_else(|| format!("internal error: no result for `{}`", job.main))?;
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    // As `once exec` writes its stderr: the output of the needs that ran (each under a
    // header), then the script's (or a failed need's output and why).
    let mut needs_output = String::new();
    for need in once_build::scripts::needs_to_show(job, &run.report) {
        needs_output.push_str(&once_build::scripts::need_header(job, need));
        for stream in [&need.stdout, &need.stderr] {
            needs_output.push_str(&text(&stream.tail));
        }
        if !needs_output.ends_with('\n') {
            needs_output.push('\n');
        }
    }
    let (stdout, mut stderr) = match run.failed_need() {
        Some(need) => (
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
            (text(&main.stdout.tail), stderr)
        }
    };
    for warning in &run.warnings {
        stderr.push_str(&format!("once: warning: {warning}\n"));
    }
    let digest = main.key.map(|k| k.to_hex());
    Ok(ScriptResult {
        path: path.to_owned(),
        success: run.report.succeeded(),
        exit_code: run.exit_code(),
        stdout,
        stderr,
        record: ScriptRecord {
            action_digest: digest.clone(),
            cache: main.cache.map(|c| c.as_str()),
            exit_code: once_build::scripts::reported_exit_code(main),
        },
        evidence_subject: digest,
        evidence: run
            .evidence
            .iter()
            .filter(|r| r.evidence.action.as_deref() == Some(job.main.as_str()))
            .map(once_json::evidence_record)
            .collect(),
    })
}

/// What a tool's caller hears while it executes: `notifications/progress` with the
/// finished count, the total and a message.
struct McpProgress<'a>(&'a (dyn Fn(usize, usize, &str) + Sync));

impl Observer for McpProgress<'_> {
    fn action_finished(&self, progress: &Progress<'_>) {
        (self.0)(progress.done, progress.total, &progress.message);
    }

    fn test_finished(&self, progress: &TestProgress<'_>) {
        (self.0)(
            progress.done,
            progress.total,
            &format!("{} {}", progress.status, progress.target),
        );
    }
}

/// Runs the job in the workspace at `root`, with the store at `store` (the server's
/// `--store`, else the workspace's), and answers the tool's result; `progress` gets
/// each finished action (`done`, `total`, message). Cancelling `cancel` kills every
/// running process group (a started session is not the call's: it is stopped with
/// `once_stop_runtime`).
pub fn execute(
    root: &Path,
    store: Option<&Path>,
    job: &ExecutionJob,
    cancel: CancelHandle,
    progress: &(dyn Fn(usize, usize, &str) + Sync),
) -> Result<Value, ToolError> {
    let to_value = |value: Result<Value, serde_json::Error>| value.map_err(|e| e.to_string());
    if let ExecutionJob::StopRuntime { session_id, grace } = job {
        let record =
            once_runtime::stop_session(root, session_id, *grace).map_err(|e| e.to_string())?;
        return to_value(serde_json::to_value(once_json::session_record(&record)));
    }
    let session = Session::open(root, store, ExecOptions::default())?.with_cancel(cancel);
    let observer = McpProgress(progress);
    match job {
        ExecutionJob::Capability { target, plan } => to_value(serde_json::to_value(
            run_capability(&session, target, plan, &observer)?,
        )),
        ExecutionJob::Validate { target, plan } => to_value(serde_json::to_value(
            session.validate_actions(std::slice::from_ref(target), plan)?,
        )),
        ExecutionJob::Tests { selection, plan } => to_value(serde_json::to_value(execute_tests(
            &session, plan, selection, &observer,
        )?)),
        ExecutionJob::StartRuntime { target, plan } => {
            let supervisor = std::env::current_exe()
                .map_err(|e| format!("cannot find the `once` executable to supervise: {e}"))?;
            let started = session.start_runtime(target, plan, &[], &supervisor, Some(&observer))?;
            to_value(serde_json::to_value(once_json::session_record(
                &started.session?,
            )))
        }
        ExecutionJob::Script { path, job } => to_value(serde_json::to_value(run_script(
            &session, path, job, &observer,
        )?)),
        ExecutionJob::StopRuntime { .. } => Err("internal error: a stop reached a session".into()),
    }
}

/// Builds or runs `target` through the executor (a run's program captured).
fn run_capability(
    session: &Session,
    target: &str,
    plan: &Plan,
    observer: &McpProgress<'_>,
) -> Result<ExecutionResult, ToolError> {
    let (built, (stdout, stderr)) = session.build(plan, Some(observer), |records, report| {
        let own: Vec<&once_exec::ActionResult> = records
            .first()
            .map(|record| {
                record
                    .actions
                    .iter()
                    .filter_map(|a| report.result(&a.id))
                    .collect()
            })
            .unwrap_or_default();
        let text = |pick: fn(&once_exec::ActionResult) -> &[u8]| {
            own.iter()
                .map(|r| String::from_utf8_lossy(pick(r)).into_owned())
                .collect::<String>()
        };
        (text(|r| &r.stdout.tail), text(|r| &r.stderr.tail))
    })?;
    let exit_code = built.exit_code(plan);
    let success = built.succeeded();
    let stderr = built.warnings.iter().fold(stderr, |mut stderr, warning| {
        stderr.push_str(&format!("once: warning: {warning}\n"));
        stderr
    });
    let record = built
        .records
        .into_iter()
        .next()
        .ok_or_else(|| "internal error: the plan has no target".to_owned())?;
    Ok(ExecutionResult {
        target: target.to_owned(),
        capability: plan.capability.clone(),
        exit_code,
        success,
        record,
        stdout,
        stderr,
        problems: if built.refused {
            plan.problem_lines()
        } else {
            Vec::new()
        },
        diagnostics: if built.refused {
            plan.problem_diagnostics()
        } else {
            Vec::new()
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use once_build::{ActionState, ActionSummary, CacheResult, Failure, TargetStatus};

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
                status: TargetStatus::Failed,
                cache: full.then_some(CacheResult::Miss),
                action_digest: some("00"),
                output_groups: vec!["default".into()],
                required_outputs: vec!["default".into()],
                outputs: vec![".once/out/a/A/x".into()],
                actions: vec![ActionSummary {
                    id: "a/A#build/cmd".into(),
                    status: ActionState::Failed,
                    cache: full.then_some(CacheResult::Bypass),
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
            diagnostics: vec![PlanDiagnostic {
                code: "syntax_error".into(),
                message: "m".into(),
                file: some("a/once.toml"),
                range: full.then_some(once_build::record::ProblemRange {
                    start: once_build::record::ProblemPosition { line: 1, column: 1 },
                    end: once_build::record::ProblemPosition { line: 1, column: 2 },
                }),
                target: some("a/A"),
            }],
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
