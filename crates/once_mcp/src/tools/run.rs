//! The executing tools (build, run, test, an annotated script, a runtime session started
//! or stopped: planned from a snapshot, then run in the background by
//! [`crate::execute`], listed only with `--allow-run`), and the read-only runtime tools
//! (a session's status and logs).

use once_analysis::{Analysis, Cancellable};
use schemars::JsonSchema;
use serde::Deserialize;

use super::arguments::{Bounded, Seconds};
use super::{EXECUTE, Execution, QUERY, Query, STOP, Tool, ToolError, ToolOutput, page_none};
use crate::execute::ExecutionJob;
use crate::schema::output_schema;

/// The arguments of `once_build_target`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BuildTarget {
    /// Target id to build, such as `apps/service/Service`.
    pub target: String,
}

impl Execution for BuildTarget {
    fn plan(self, analysis: &Analysis) -> Cancellable<Result<ExecutionJob, ToolError>> {
        crate::execute::plan_build(analysis, self.target)
    }
}

/// The arguments of `once_validate_actions`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ValidateActions {
    /// Target id whose actions run, such as `apps/service/Service`.
    pub target: String,
    /// The capability whose actions run: `build` (the default) or `test`.
    #[serde(default = "build_capability")]
    #[schemars(extend("enum" = ["build", "test"]))]
    pub capability: String,
}

fn build_capability() -> String {
    "build".to_owned()
}

impl Execution for ValidateActions {
    fn plan(self, analysis: &Analysis) -> Cancellable<Result<ExecutionJob, ToolError>> {
        if !matches!(self.capability.as_str(), "build" | "test") {
            return Ok(Err(format!(
                "`capability` must be `build` or `test`, not `{}`",
                self.capability
            )));
        }
        crate::execute::plan_validate(analysis, self.target, &self.capability)
    }
}

/// The arguments of `once_run_target`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunTarget {
    /// Target id to run, such as `apps/service/Service`.
    pub target: String,
    /// Request a visible runtime interface when the target kind supports one (none does yet).
    #[serde(default)]
    pub visible: bool,
}

impl Execution for RunTarget {
    fn plan(self, analysis: &Analysis) -> Cancellable<Result<ExecutionJob, ToolError>> {
        crate::execute::plan_run(analysis, self.target)
    }
}

/// The arguments of `once_exec_script`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecScript {
    /// Arguments passed to the script after its path.
    #[serde(default)]
    pub args: Vec<String>,
    /// Workspace-relative annotated script path.
    pub path: String,
}

impl Execution for ExecScript {
    fn plan(self, analysis: &Analysis) -> Cancellable<Result<ExecutionJob, ToolError>> {
        crate::execute::plan_exec_script(analysis, self.path, self.args)
    }
}

/// The arguments of `once_run_tests`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunTests {
    /// Workspace-relative changed paths. Used only when no explicit target is supplied; an empty list runs every discovered test target.
    #[serde(default)]
    pub changed_paths: Vec<String>,
    /// Single canonical target id to run, such as `tests/unit`.
    pub target: Option<String>,
    /// Canonical target ids to run. Used with `target`, this is deduplicated before execution.
    #[serde(default)]
    pub targets: Vec<String>,
}

impl Execution for RunTests {
    fn plan(self, analysis: &Analysis) -> Cancellable<Result<ExecutionJob, ToolError>> {
        crate::execute::plan_tests(analysis, self)
    }
}

/// The arguments of `once_start_target`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartTarget {
    /// Target id to start, such as `tools/demo/LaunchService` or `./LaunchService`.
    pub target: String,
}

impl Execution for StartTarget {
    fn plan(self, analysis: &Analysis) -> Cancellable<Result<ExecutionJob, ToolError>> {
        crate::execute::plan_start(analysis, self.target)
    }
}

/// The arguments of `once_stop_runtime`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StopRuntime {
    /// Session id returned by `once_start_target`.
    pub session_id: String,
    /// Grace period between SIGTERM and SIGKILL, in seconds.
    #[schemars(extend("default" = 10))]
    pub timeout_seconds: Option<Seconds<3600>>,
}

impl Execution for StopRuntime {
    /// Nothing to plan: the session id and the grace period.
    fn plan(self, _: &Analysis) -> Cancellable<Result<ExecutionJob, ToolError>> {
        let grace = self
            .timeout_seconds
            .map_or(once_runtime::stop::DEFAULT_GRACE, |s| {
                std::time::Duration::from_secs_f64(s.0)
            });
        Ok(Ok(ExecutionJob::StopRuntime {
            session_id: self.session_id,
            grace,
        }))
    }
}

/// The arguments of `once_runtime_status`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RuntimeStatus {
    /// Session id returned by `once_start_target`.
    session_id: String,
}

impl Query for RuntimeStatus {
    fn answer(self, analysis: &Analysis) -> Cancellable<Result<ToolOutput, ToolError>> {
        Ok(
            once_runtime::read_session(&analysis.root(), &self.session_id)
                .map(|record| page_none(once_json::to_value(&once_json::session_record(&record))))
                .map_err(|e| e.to_string()),
        )
    }
}

/// Which stream of a session's log to read.
#[derive(Deserialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum LogStream {
    Stdout,
    Stderr,
}

/// The arguments of `once_runtime_logs`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RuntimeLogs {
    /// Cursor returned by a previous log record.
    cursor: Option<String>,
    /// Maximum number of records to return.
    #[schemars(extend("default" = once_runtime::logs::DEFAULT_LIMIT))]
    limit: Option<Bounded<1, { once_runtime::logs::MAX_LIMIT as u64 }>>,
    /// Session id returned by `once_start_target`.
    session_id: String,
    /// `stdout` or `stderr`.
    source: Option<LogStream>,
}

impl Query for RuntimeLogs {
    /// Reads a runtime session's log records; an unknown session or a bad cursor is a
    /// tool error.
    fn answer(self, analysis: &Analysis) -> Cancellable<Result<ToolOutput, ToolError>> {
        let id = self.session_id.as_str();
        let limit = Bounded::or(self.limit, once_runtime::logs::DEFAULT_LIMIT);
        let source = self.source.map(|source| match source {
            LogStream::Stdout => once_runtime::LogSource::Stdout,
            LogStream::Stderr => once_runtime::LogSource::Stderr,
        });
        Ok(once_runtime::session::session_dir(&analysis.root(), id)
            .and_then(|dir| {
                once_runtime::read_logs(&dir, id, source, self.cursor.as_deref(), limit)
            })
            .map(|page| page_none(once_json::to_value(&page)))
            .map_err(|e| e.to_string()))
    }
}

/// `once_build_target`.
pub(super) fn build_target() -> Tool {
    Tool::execution::<BuildTarget>(
        "once_build_target",
        "Build a target",
        "Build a target by running its `build` capability: the actions of the target and of its dependency closure, each reused from the action cache when its inputs did not change.\n\n                Available only when the server starts with `once mcp --allow-run`. The build runs as a background job: the server keeps answering `ping` and the other tools meanwhile, and analysis is not held while processes run.                 With a `progressToken` in the request's `_meta`, a `notifications/progress` is sent after each finished action (`progress` done, `total`, `message` such as `miss apps/cli/Cli#build/compile`).                 `notifications/cancelled` kills the build's processes (their process groups) and no reply is sent.                 Returns `{target, capability, exit_code, success, record, stdout, stderr, problems}`: `record` is the target's record (`status`, `cache` hit/miss/bypass, `action_digest`, `outputs`, each action, and the failing action's command, exit code and output tail in `failure`).                 A failed build is a normal result with `success: false`, not a tool error; an unknown target or a target without `build` is a tool error.                 The matching command-line operation is `once build <target> --format json`."
                .into(),
        output_schema::<crate::execute::ExecutionResult>(),
        EXECUTE,
    )
}

/// `once_validate_actions`.
pub(super) fn validate_actions() -> Tool {
    Tool::execution::<ValidateActions>(
        "once_validate_actions",
        "Validate a target's actions",
        "Run a target's actions (and its dependencies') in the strictest mode and list every file access the sandbox denied them, each with its repair: a read of an undeclared workspace file (declare it in `inputs` or `srcs`, or depend on the target that makes it), a change to one of its own inputs, a write outside its build directory, a file outside the workspace. Every action runs sandboxed and traced, even one whose result is cached; nothing is reused or recorded, and an access the command swallowed (`cat f || true`) is listed too.\n\n                Available only when the server starts with `once mcp --allow-run` (it runs the actions' programs), as a background job with cancellation like `once_build_target`.                 Returns `{targets, capability, valid, actions: [{id, target, status, message, findings: [{access, path, problem, repair}]}], problems}`; `valid` is true when every action succeeded and nothing undeclared was attempted.                 The matching command-line operation is `once query validate-actions <target> --format json`."
            .into(),
        output_schema::<once_build::validation::ActionsValidation>(),
        EXECUTE,
    )
}

/// `once_run_target`.
pub(super) fn run_target() -> Tool {
    Tool::execution::<RunTarget>(
        "once_run_target",
        "Run a target",
        "Run a target by executing its `run` capability, after building what it needs (the target's `build` and its dependencies').\n\n                Available only when the server starts with `once mcp --allow-run`. It runs as a background job like `once_build_target`, with the same progress notifications and cancellation.                 The run itself is not cached (`cache: \"bypass\"`) unless the kind declares it cacheable; its standard output and error (their last 64 KiB) are returned in `stdout` and `stderr`, and `exit_code` is the program's.                 `visible` is accepted for compatibility; no kind has a visible interface yet, so it changes nothing.                 A failed run is a normal result with `success: false`. The matching command-line operation is `once run <target> --format json` (which attaches the terminal instead of capturing the output)."
                .into(),
        output_schema::<crate::execute::ExecutionResult>(),
        EXECUTE,
    )
}

/// `once_exec_script`.
pub(super) fn exec_script() -> Tool {
    Tool::execution::<ExecScript>(
        "once_exec_script",
        "Execute an annotated script",
        "Execute a validated annotated script through Once's action cache.\n\n\
                Opt-in tool exposed only when the Model Context Protocol server starts with `once mcp --allow-run`. Validates the script contract before running the same path as `once exec --script`, materializes declared outputs, and returns captured streams, exit status, action digest, cache hit or miss state, and matching evidence. Invoke it twice with unchanged declared inputs to verify cache reuse. \
                The scripts it `needs` run first (each through the cache; a dependency rebuilt into identical outputs leaves the script a hit). \
                It runs as a background job like `once_build_target`: with a `progressToken` in the request's `_meta`, a `notifications/progress` is sent after each finished script (`message` such as `hit scripts/gen.sh`), and `notifications/cancelled` kills the scripts' processes (their process groups); no reply is sent then. \
                Returns `{path, success, exit_code, stdout, stderr, record {action_digest, cache, exit_code}, evidence_subject, evidence}`; `stdout` and `stderr` are the last 64 KiB of the script's streams. A script that fails is a normal result with `success: false`; an invalid header, a `needs` cycle or a path outside the workspace is a tool error. \
                The matching command-line operation is `once exec --script <path> --format json -- <args…>`."
                .into(),
        output_schema::<crate::execute::ScriptResult>(),
        EXECUTE,
    )
}

/// `once_run_tests`.
pub(super) fn run_tests() -> Tool {
    Tool::execution::<RunTests>(
        "once_run_tests",
        "Run tests",
        "Run test targets by id, or run tests affected by changed workspace paths.\n\n\
                Executes Once's generic test capability for either explicit `target` / `targets` or the targets selected by `changed_paths` (the selection of `once_query_affected_tests`, with its reasons); with none of them, every test target. \
                Each test's build runs first; test targets run in parallel; a passing test whose inputs did not change is a cache hit that restores its results (`cache: \"hit\"`), failures are never cached. \
                To verify an edit, call `once_query_affected_tests` to preview selection, call `once_run_tests` to execute, then read the normalized `once.test_results.v1` results included in each run record (`runs[].results`: status, summary, every case with its file, line, attempts and failure message). \
                Failed tests are returned as normal tool content with `success: false` and `exit_code` 1 (what `once test` exits with: 0 every test passed, 1 one failed or nothing could be planned, 130 cancelled) rather than a tool protocol error, so agents can inspect failures and iterate; an unknown target or one without a `test` capability is a tool error. \
                Available only when the server starts with `once mcp --allow-run`. It runs as a background job: with a `progressToken` in the request's `_meta`, a `notifications/progress` is sent as each test target finishes (`message` such as `failed py/PyTest`), and `notifications/cancelled` kills the test processes (their process groups); no reply is sent then. \
                The matching command-line operation is `once test <targets…> --format json` (or `--changed <path>…`; with neither, every test, as here)."
                .into(),
        output_schema::<crate::execute::TestsResult>(),
        EXECUTE,
    )
}

/// `once_start_target`.
pub(super) fn start_target() -> Tool {
    Tool::execution::<StartTarget>(
        "once_start_target",
        "Start a target in a runtime session",
        "Start a target in a persisted runtime session and return its session id.\n\n\
                Available only when the server starts with `once mcp --allow-run`. Builds what the target's `run` capability needs (a background job, like `once_run_target`, with the same progress notifications and cancellation), \
                then starts its program under a detached supervisor and returns at once with the session record (`status: \"starting\"`). \
                The session lives under `.once/runtime/<session_id>/` (`session.json`, and `log.ndjson`: standard output and error as interleaved line records) and outlives this call and this server: \
                any later server or `once runtime` command lists and controls it. The program runs in a process group of its own; every process it starts is stopped with it. \
                Follow it with `once_runtime_status` and `once_runtime_logs`, end it with `once_stop_runtime`. \
                A failed build is a tool error and starts nothing. The matching command-line operation is `once runtime start <target> --format json`."
                .into(),
        output_schema::<once_json::SessionRecordDto>(),
        EXECUTE,
    )
}

/// `once_runtime_status`.
pub(super) fn runtime_status() -> Tool {
    Tool::query::<RuntimeStatus>(
        "once_runtime_status",
        "Runtime session status",
        "Return the latest persisted status for a runtime session.\n\n\
                Reads `.once/runtime/<session_id>/session.json`. Status values: `starting`, `running`, `stopping`, `stopped` (by a stop request; `stopped_by` says `SIGTERM` or `SIGKILL`), \
                `exited` (the program ended with a success code) and `failed` (another exit code or a signal, in `exit_code`/`signal`, or a program that could not start, or a supervisor that died; `reason` says which). \
                A session whose supervisor is gone is found out here: it is reported `failed` with the reason (and what is left of its program killed), never left `running`. \
                Read-only: sessions started from the command line can be followed without `--allow-run`. The matching command-line operation is `once runtime status <session_id> --format json`."
                .into(),
        output_schema::<once_json::SessionRecordDto>(),
        QUERY,
    )
}

/// `once_runtime_logs`.
pub(super) fn runtime_logs() -> Tool {
    Tool::query::<RuntimeLogs>(
        "once_runtime_logs",
        "Runtime session logs",
        format!(
            "Read standard output or standard error records for a runtime session.\n\n\
                Records `{{cursor, source, level, message, time}}` of the program's output, one per line, standard output and error interleaved in the order they arrived (`level` is `info` for stdout, `error` for stderr). \
                Pass `source` to restrict the result to `stdout` or `stderr`, and a previous `cursor` (a record's, or the answer's `next_cursor`) to read only the records after it: \
                a cursor is a position in the whole log: resuming from your last cursor with the same filter (or none) returns exactly the records not yet seen; a cursor from a `stdout` read handed to a `stderr` read skips the stderr records before it, so keep one cursor per stream when you filter. \
                At most `limit` records (default {default}, at most {max}); lines longer than {line} bytes are split into several records; bytes that are not UTF-8 are replaced with U+FFFD. \
                The log rotates at 8 MiB (the latest 24 to 32 MiB are kept): `rotated_away` counts the records after the cursor that rotation removed before they were read, so nothing is lost silently. \
                The matching command-line operation is `once runtime logs <session_id> --format json`.",
            default = once_runtime::logs::DEFAULT_LIMIT,
            max = once_runtime::logs::MAX_LIMIT,
            line = once_runtime::logs::MAX_LINE_BYTES
        ),
        output_schema::<once_runtime::LogPage>(),
        QUERY,
    )
}

/// `once_stop_runtime`.
pub(super) fn stop_runtime() -> Tool {
    Tool::execution::<StopRuntime>(
        "once_stop_runtime",
        "Stop a runtime session",
        "Request that a runtime session stop, and return its record once it has.\n\n\
                Available only when the server starts with `once mcp --allow-run`. Sends SIGTERM to the program's process group; whatever still runs after the grace period (`timeout_seconds`, default 10) gets SIGKILL, \
                processes that left the group included. Waits (in the background) for the end and returns the final record: `stopped`, with `stopped_by` `SIGTERM` or `SIGKILL`. \
                Stopping a finished session returns its record unchanged; concurrent stops are safe and return the same end. \
                The matching command-line operation is `once runtime stop <session_id> --format json`."
                .into(),
        output_schema::<once_json::SessionRecordDto>(),
        STOP,
    )
}
