//! Running an annotated script and the scripts it needs (`once exec --script`, MCP
//! `once_exec_script`): the plan from `Analysis::script_plan` as a [`ScriptJob`] (plain
//! data, no database), run with outputs in the workspace ([`run`]), and the
//! `once.evidence.v1` records of the run, each with its action digest as the subject
//! ([`evidence_records`]), and which needed scripts have output to show
//! ([`needs_to_show`]).

use std::path::Path;

use once_analysis::{Analysis, Cancellable};
use once_evidence::{EvidenceRecord, Subject};
use once_exec::{
    ActionResult, ActionStatus, CacheState, CancelHandle, ExecutionReport, Executor, OutputScope,
    PlannedAction, Progress, SourceStamps, Store,
};

/// What runs: the actions (needs first), the ordering edges between them, the id of the
/// action whose result is the answer, and the stamps the input files' digests were read
/// with (see `Executor::with_source_stamps`).
#[derive(Clone, Debug)]
pub struct ScriptJob {
    pub main: String,
    pub actions: Vec<PlannedAction>,
    pub order: Vec<(String, String)>,
    pub source_stamps: SourceStamps,
}

impl ScriptJob {
    /// The job of a script's plan, made by `analysis`.
    pub fn of_script(
        analysis: &Analysis,
        plan: once_analysis::ScriptPlan,
    ) -> Cancellable<ScriptJob> {
        let actions: Vec<PlannedAction> = plan.actions.into_iter().map(convert).collect();
        Ok(ScriptJob {
            main: plan.script,
            source_stamps: stamps(analysis, &actions)?,
            actions,
            order: plan.order,
        })
    }

    /// The job of a literal command's one action, made by `analysis`.
    pub fn of_command(
        analysis: &Analysis,
        planned: once_analysis::PlannedAction,
    ) -> Cancellable<ScriptJob> {
        let actions = vec![convert(planned)];
        Ok(ScriptJob {
            main: actions[0].action.id.clone(),
            source_stamps: stamps(analysis, &actions)?,
            actions,
            order: Vec::new(),
        })
    }
}

/// The stamps of the files `actions` read that no action of them writes (their digests
/// are in the static keys; the digests are memoised, so nothing is read again).
fn stamps(analysis: &Analysis, actions: &[PlannedAction]) -> Cancellable<SourceStamps> {
    let produced: Vec<&String> = actions.iter().flat_map(|a| &a.action.outputs).collect();
    let mut paths: Vec<String> = actions
        .iter()
        .flat_map(|a| &a.action.inputs)
        .filter(|input| {
            !produced
                .iter()
                .any(|output| once_model::paths::is_under(input, output))
        })
        .cloned()
        .collect();
    paths.sort_unstable();
    paths.dedup();
    let inputs = analysis.source_inputs(&paths)?;
    Ok(crate::source_stamps(&paths, &inputs))
}

fn convert(planned: once_analysis::PlannedAction) -> PlannedAction {
    PlannedAction {
        action: planned.action,
        static_key: planned.static_key,
    }
}

/// Runs `job` in the workspace at `root` with `store`; `progress` gets each finished
/// action. Independent needs run in parallel; a single action runs on this thread.
pub fn run(
    root: &Path,
    store: &Store,
    job: &ScriptJob,
    cancel: CancelHandle,
    sandbox: once_exec::SandboxMode,
    progress: Option<&(dyn Fn(&Progress<'_>) + Sync)>,
) -> Result<ExecutionReport, String> {
    let mut executor = Executor::new(root, store)
        .with_options(once_exec::ExecOptions {
            sandbox,
            ..once_exec::ExecOptions::default()
        })
        .with_output_scope(OutputScope::Workspace)
        .with_order(job.order.clone())
        .with_cancel(cancel)
        .with_source_stamps(job.source_stamps.clone());
    if let Some(progress) = progress {
        executor = executor.on_progress(progress);
    }
    executor
        .run(&job.actions)
        .map_err(|e| format!("cannot run `{}`: {e}", job.main))
}

/// The needed scripts whose output is shown before the script's own (on `once exec`'s
/// stderr, in MCP's `stderr`): those that succeeded after running in this execution (a
/// miss or a bypass: a hit shows nothing) and printed something, dependencies first. The
/// requested script's stdout stays the program's own.
pub fn needs_to_show<'r>(job: &ScriptJob, report: &'r ExecutionReport) -> Vec<&'r ActionResult> {
    report
        .results
        .iter()
        .filter(|result| {
            result.id != job.main
                && result.status == ActionStatus::Succeeded
                && matches!(result.cache, Some(CacheState::Miss | CacheState::Bypass))
                && result.stdout.size + result.stderr.size > 0
        })
        .collect()
}

/// The exit code a script's record reports (`once exec --format json`'s trailer, MCP's
/// `record.exit_code`): the program's, unless `once` failed the action after the program
/// succeeded (then 1, as [`crate::session::exit::of_action`] says); `None` when the
/// program did not exit with a code.
pub fn reported_exit_code(result: &ActionResult) -> Option<i32> {
    let code = crate::session::exit::of_action(result);
    match result.exit_code {
        Some(0) if code != 0 => Some(code),
        other => other,
    }
}

/// Why a failed script's program did not say it failed itself (it did not run, or `once`
/// failed its action after it exited 0): the message to show after its output, if any.
pub fn failure_note(result: &ActionResult) -> Option<&str> {
    let unexplained = result.status == ActionStatus::Failed
        && (result.exit_code.is_none() && result.signal.is_none() || result.exit_code == Some(0));
    unexplained.then(|| result.message.as_deref().unwrap_or("the action failed"))
}

/// The line above a needed script's output: `once: output of `gen.sh`, needed by
/// `build.sh` (cache miss):`.
pub fn need_header(job: &ScriptJob, need: &ActionResult) -> String {
    format!(
        "once: output of `{}`, needed by `{}` (cache {}):\n",
        need.id,
        job.main,
        need.cache.map_or("none", CacheState::as_str)
    )
}

/// One record per action that ran or was reused, its subject its action digest.
pub fn evidence_records(job: &ScriptJob, report: &ExecutionReport) -> Vec<EvidenceRecord> {
    let created = once_exec::evidence::now_unix_ms();
    report
        .results
        .iter()
        .filter_map(|result| {
            let planned = job.actions.iter().find(|p| p.action.id == result.id)?;
            let mut evidence = once_exec::evidence::action_evidence(planned, result)?;
            evidence.subject = Subject::Command {
                action_digest: evidence.action_digest,
            };
            Some(EvidenceRecord::new(evidence, created))
        })
        .collect()
}

/// Appends `records` to the workspace's evidence journal (one write; readers of the
/// evidence database ingest it first, like a build's); a warning when it could not.
pub fn record_evidence(root: &Path, records: &[EvidenceRecord]) -> Option<String> {
    once_evidence::append_to_journal(root, records)
        .err()
        .map(|error| format!("the evidence of this execution was not recorded: {error}"))
}
