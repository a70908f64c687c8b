//! The executing tools (`once_build_target`, `once_run_target`): a plan made from a
//! database snapshot on the worker ([`plan_build`], [`plan_run`]), then run by
//! [`execute`] on a background thread without the database, reporting each finished
//! action and stopping (every process group killed) when cancelled.

use std::path::Path;

use once_analysis::{Analysis, Cancellable};
use once_build::{Plan, TargetRecord};
use once_exec::{CancelHandle, ExecOptions, Executor, Progress, Store};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::tools::ToolError;

/// What a call planned, ready to run without the database.
#[derive(Clone, Debug)]
pub struct ExecutionJob {
    pub target: String,
    pub plan: Plan,
}

/// The result of an executing tool.
#[derive(Clone, Debug, Serialize)]
pub struct ExecutionResult {
    pub target: String,
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

/// The output schema of [`ExecutionResult`], built from the record schemas of
/// `once_build::schema`; a test checks every field of a full result against it.
pub fn result_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "target": { "type": "string" },
            "capability": { "type": "string", "enum": ["build", "run"] },
            "exit_code": { "type": "integer" },
            "success": { "type": "boolean" },
            "record": once_build::schema::target_record(),
            "stdout": { "type": "string" },
            "stderr": { "type": "string" },
            "problems": { "type": "array", "items": { "type": "string" } },
        },
        "required": ["target", "capability", "exit_code", "success", "record", "stdout", "stderr", "problems"],
        "additionalProperties": false,
    })
}

fn plan_capability(
    analysis: &Analysis,
    arguments: &Map<String, Value>,
    capability: &str,
) -> Cancellable<Result<ExecutionJob, ToolError>> {
    let target = arguments
        .get("target")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
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
    Ok(Ok(ExecutionJob {
        target: ids.into_iter().next().unwrap_or(target),
        plan,
    }))
}

/// `once_build_target`: plans the target's `build`.
pub fn plan_build(
    analysis: &Analysis,
    arguments: &Map<String, Value>,
) -> Cancellable<Result<ExecutionJob, ToolError>> {
    plan_capability(analysis, arguments, "build")
}

/// `once_run_target`: plans the target's `run` (after its `build`).
pub fn plan_run(
    analysis: &Analysis,
    arguments: &Map<String, Value>,
) -> Cancellable<Result<ExecutionJob, ToolError>> {
    plan_capability(analysis, arguments, "run")
}

/// Runs the job's plan in the workspace at `root`; `progress` gets each finished action
/// (`done`, `total`, message). Cancelling `cancel` kills every running process group.
pub fn execute(
    root: &Path,
    job: &ExecutionJob,
    cancel: CancelHandle,
    progress: &(dyn Fn(usize, usize, &str) + Sync),
) -> Result<ExecutionResult, ToolError> {
    let plan = &job.plan;
    let capability = plan.capability.clone();
    if !plan.problems.is_empty() {
        let record = once_build::refused_records(plan)
            .into_iter()
            .next()
            .ok_or_else(|| "internal error: the plan has no target".to_owned())?;
        return Ok(ExecutionResult {
            target: job.target.clone(),
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
        .on_progress(&callback)
        .run(&plan.actions)
        .map_err(|e| format!("cannot run the plan: {e}"))?;
    let evidence_warning = record_evidence(root, plan, &report);
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
        target: job.target.clone(),
        capability,
        exit_code: program_exit.unwrap_or(if success { 0 } else { 1 }),
        success,
        stdout: text(|r| &r.stdout.tail),
        stderr: match evidence_warning {
            Some(warning) => format!("{}once: warning: {warning}\n", text(|r| &r.stderr.tail)),
            None => text(|r| &r.stderr.tail),
        },
        record,
        problems: Vec::new(),
    })
}

/// The server's evidence database, kept open between builds: opening one costs SQLite a
/// read of its schema, and closing the last connection a checkpoint of its log flushed
/// to the disk, which together were most of a warm build that reused every action. It is
/// opened again when the workspace or the database file (device and inode) changed.
struct KeptEvidence {
    root: std::path::PathBuf,
    file: (u64, u64),
    store: once_evidence::EvidenceStore,
}

static KEPT_EVIDENCE: std::sync::Mutex<Option<KeptEvidence>> = std::sync::Mutex::new(None);

/// The database file's device and inode, when it exists.
fn evidence_file(root: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::symlink_metadata(root.join(once_evidence::DATABASE_PATH))
        .ok()
        .map(|metadata| (metadata.dev(), metadata.ino()))
}

/// Records the execution's evidence through the kept connection (see
/// [`once_build::record_evidence`]); a warning when it could not.
fn record_evidence(
    root: &Path,
    plan: &once_build::Plan,
    report: &once_exec::ExecutionReport,
) -> Option<String> {
    let records = once_exec::evidence::evidence_records(
        &plan.actions,
        report,
        once_exec::evidence::now_unix_ms(),
    );
    if records.is_empty() {
        return None;
    }
    let mut kept = KEPT_EVIDENCE.lock().unwrap_or_else(|e| e.into_inner());
    let current = evidence_file(root);
    let reusable = kept
        .as_ref()
        .is_some_and(|kept| kept.root == root && Some(kept.file) == current);
    if !reusable {
        *kept = None;
        let opened = once_evidence::EvidenceStore::open(root).map(|store| {
            evidence_file(root).map(|file| KeptEvidence {
                root: root.to_path_buf(),
                file,
                store,
            })
        });
        match opened {
            Ok(opened) => *kept = opened,
            Err(err) => {
                return Some(format!(
                    "the evidence of this execution was not recorded: {err}"
                ));
            }
        }
    }
    let Some(store) = kept.as_mut() else {
        return Some(
            "the evidence of this execution was not recorded: the database is gone".to_owned(),
        );
    };
    match store.store.record_all(&records) {
        Ok(_) => None,
        Err(err) => {
            // A connection that failed is not reused.
            *kept = None;
            Some(format!(
                "the evidence of this execution was not recorded: {err}"
            ))
        }
    }
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

    /// The schema is built next to the record types; a result with every field set, and
    /// one with every optional field null, both validate, so a field added to a record
    /// without its schema (or the other way round) fails here.
    #[test]
    fn results_validate_against_their_output_schema_field_for_field() {
        let schema = result_schema();
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
