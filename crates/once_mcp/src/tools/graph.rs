//! The graph tools: the workspace, its targets, kinds, examples, tests and their
//! results, affected tests, evidence and validation, each answered from a database
//! snapshot (read-only, always listed).

use once_analysis::{Analysis, Cancellable};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::arguments::{Bounded, PageLimit};
use super::{
    QUERY, Query, Tool, ToolError, ToolOutput, listing_hint, not_found_message, page_none, paginate,
};
use crate::schema::output_schema;

/// Page sizes when the caller gives no `limit`; every page stays far below the 25,000
/// tokens agents accept.
const DEFAULT_TARGETS_PAGE: usize = 200;
const DEFAULT_KINDS_PAGE: usize = 50;
const DEFAULT_TESTS_PAGE: usize = 200;
const DEFAULT_DIAGNOSTICS_PAGE: usize = 100;

const PAGING_NOTE: &str = "Long lists come in pages: when `structuredContent` has `next_cursor`, call again with `cursor` set to it.";

/// `once_query_workspace` takes no arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryWorkspace {}

impl Query for QueryWorkspace {
    fn answer(self, analysis: &Analysis) -> Cancellable<Result<ToolOutput, ToolError>> {
        let info = analysis.workspace_info()?;
        Ok(Ok(page_none(once_json::to_value(&once_json::workspace(
            &info,
        )))))
    }
}

/// The arguments of `once_query_targets`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryTargets {
    /// Restrict results to a target kind discovered through `once_list_target_kinds`.
    kind: Option<String>,
    /// Maximum number of targets in this page (default 200).
    #[schemars(extend("default" = DEFAULT_TARGETS_PAGE))]
    limit: Option<PageLimit>,
    /// `next_cursor` from the previous page, to continue where it stopped.
    cursor: Option<String>,
}

impl Query for QueryTargets {
    fn answer(self, analysis: &Analysis) -> Cancellable<Result<ToolOutput, ToolError>> {
        if let Some(kind) = &self.kind
            && let Err(not_found) = analysis.lookup_kind(kind)?
        {
            return Ok(Err(not_found_message(&not_found)));
        }
        let targets = analysis.targets(self.kind.as_deref())?;
        let limit = PageLimit::or(self.limit, DEFAULT_TARGETS_PAGE);
        Ok(paginate(&targets, limit, self.cursor.as_deref(), |t| {
            once_json::to_value(&once_json::target_summary(t))
        }))
    }
}

/// The arguments of `once_get_target`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetTarget {
    /// Canonical target id, such as `packages/core/Core`.
    target: String,
}

impl Query for GetTarget {
    fn answer(self, analysis: &Analysis) -> Cancellable<Result<ToolOutput, ToolError>> {
        Ok(analysis
            .lookup_target(&self.target)?
            .map(|t| page_none(once_json::to_value(&once_json::graph_target(&t))))
            .map_err(|e| not_found_message(&e)))
    }
}

/// The arguments of `once_query_capabilities`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryCapabilities {
    /// Canonical target id, such as `apps/service/Service`.
    target: String,
}

impl Query for QueryCapabilities {
    fn answer(self, analysis: &Analysis) -> Cancellable<Result<ToolOutput, ToolError>> {
        Ok(analysis
            .lookup_target(&self.target)?
            .map(|t| page_none(once_json::to_value(&once_json::capabilities(&t))))
            .map_err(|e| not_found_message(&e)))
    }
}

/// The arguments of `once_query_schema`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QuerySchema {
    /// Target kind to introspect. Discover names with `once_list_target_kinds`.
    kind: String,
}

impl Query for QuerySchema {
    fn answer(self, analysis: &Analysis) -> Cancellable<Result<ToolOutput, ToolError>> {
        Ok(analysis
            .lookup_kind(&self.kind)?
            .map(|k| page_none(once_json::to_value(&once_json::kind_schema(&k))))
            .map_err(|e| not_found_message(&e)))
    }
}

/// The arguments of `once_query_example`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryExample {
    /// Target kind that owns the example.
    kind: String,
    /// Example slug from the target kind schema.
    slug: String,
}

impl Query for QueryExample {
    fn answer(self, analysis: &Analysis) -> Cancellable<Result<ToolOutput, ToolError>> {
        Ok(analysis
            .lookup_example(&self.kind, &self.slug)?
            .map(|e| page_none(once_json::to_value(&once_json::example(&e))))
            .map_err(|e| not_found_message(&e)))
    }
}

/// The arguments of `once_list_target_kinds`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListTargetKinds {
    /// Short ecosystem, target-kind family, or intent text copied from the user's request.
    query: Option<String>,
    /// Maximum number of kinds in this page (default 50).
    #[schemars(extend("default" = DEFAULT_KINDS_PAGE))]
    limit: Option<PageLimit>,
    /// `next_cursor` from the previous page, to continue where it stopped.
    cursor: Option<String>,
}

impl Query for ListTargetKinds {
    fn answer(self, analysis: &Analysis) -> Cancellable<Result<ToolOutput, ToolError>> {
        let kinds = match &self.query {
            Some(query) => analysis.search_kinds(query)?,
            None => analysis.kinds()?,
        };
        let limit = PageLimit::or(self.limit, DEFAULT_KINDS_PAGE);
        Ok(paginate(&kinds, limit, self.cursor.as_deref(), |k| {
            once_json::to_value(&once_json::kind_list_entry(k))
        }))
    }
}

/// The arguments of `once_query_tests`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryTests {
    /// Maximum number of tests in this page (default 200).
    #[schemars(extend("default" = DEFAULT_TESTS_PAGE))]
    limit: Option<PageLimit>,
    /// `next_cursor` from the previous page, to continue where it stopped.
    cursor: Option<String>,
}

impl Query for QueryTests {
    fn answer(self, analysis: &Analysis) -> Cancellable<Result<ToolOutput, ToolError>> {
        let tests = analysis.tests()?;
        let limit = PageLimit::or(self.limit, DEFAULT_TESTS_PAGE);
        Ok(paginate(&tests, limit, self.cursor.as_deref(), |t| {
            once_json::to_value(&once_json::test_target(t))
        }))
    }
}

/// The arguments of `once_query_test_results`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryTestResults {
    /// Canonical target id, such as `tests/unit`.
    target: String,
    /// Return only the status, summary counts and artifacts (`once.test_results_summary.v1`), without the per-case results.
    #[serde(default)]
    summary_only: bool,
}

/// What `once_query_test_results` answers: the whole record, or with `summary_only` the
/// record without its cases (`once query test-results [--summary-only] --format json`).
#[derive(Serialize, JsonSchema)]
#[serde(untagged)]
pub enum TestResultsAnswer {
    Results(once_test_results::TestResults),
    Summary(once_test_results::record::ResultsSummary),
}

impl Query for QueryTestResults {
    fn answer(self, analysis: &Analysis) -> Cancellable<Result<ToolOutput, ToolError>> {
        let root = analysis.root();
        Ok(
            once_build::test_results::read(analysis, &root, &self.target, listing_hint)?
                .map(|results| {
                    page_none(if self.summary_only {
                        once_json::to_value(&results.summary_only())
                    } else {
                        once_json::to_value(&results)
                    })
                })
                .map_err(|error| error.to_string()),
        )
    }
}

/// The arguments of `once_query_affected_tests`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryAffectedTests {
    /// Workspace-relative changed paths. An empty list returns every test target.
    #[serde(default)]
    changed_paths: Vec<String>,
    /// Maximum number of tests in this page (default 200).
    #[schemars(extend("default" = DEFAULT_TESTS_PAGE))]
    limit: Option<PageLimit>,
    /// `next_cursor` from the previous page, to continue where it stopped.
    cursor: Option<String>,
}

impl Query for QueryAffectedTests {
    fn answer(self, analysis: &Analysis) -> Cancellable<Result<ToolOutput, ToolError>> {
        let affected = analysis.affected_tests(&self.changed_paths)?;
        let limit = PageLimit::or(self.limit, DEFAULT_TESTS_PAGE);
        Ok(
            paginate(&affected.tests, limit, self.cursor.as_deref(), |t| {
                once_json::to_value(&once_json::affected_test(t))
            })
            .map(|page| ToolOutput {
                warnings: Some(affected.warnings),
                ..page
            }),
        )
    }
}

/// The arguments of `once_query_evidence`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryEvidence {
    /// Maximum number of newest matching records to return.
    #[schemars(extend("default" = once_evidence::DEFAULT_LIMIT))]
    limit: Option<Bounded<1, { once_evidence::MAX_LIMIT as u64 }>>,
    /// Optional subject id or subject-capability pair, such as `cli` or `cli:test`.
    subject: Option<String>,
}

impl Query for QueryEvidence {
    /// Reads the workspace's evidence database (none yet: an empty list); a database
    /// that cannot be read (foreign, newer, a linked `.once`) is a tool error.
    fn answer(self, analysis: &Analysis) -> Cancellable<Result<ToolOutput, ToolError>> {
        let limit = Bounded::or(self.limit, once_evidence::DEFAULT_LIMIT);
        Ok(
            once_evidence::query_workspace(&analysis.root(), self.subject.as_deref(), limit)
                .map(|records| {
                    page_none(Value::Array(
                        records
                            .iter()
                            .map(|record| once_json::to_value(&once_json::evidence_record(record)))
                            .collect(),
                    ))
                })
                .map_err(|e| e.to_string()),
        )
    }
}

/// The arguments of `once_validate_workspace`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ValidateWorkspace {
    /// Maximum number of diagnostics in this page (default 100).
    #[schemars(extend("default" = DEFAULT_DIAGNOSTICS_PAGE))]
    limit: Option<PageLimit>,
    /// `next_cursor` from the previous page, to continue where it stopped.
    cursor: Option<String>,
}

impl Query for ValidateWorkspace {
    fn answer(self, analysis: &Analysis) -> Cancellable<Result<ToolOutput, ToolError>> {
        let validation = analysis.validate_workspace()?;
        let limit = PageLimit::or(self.limit, DEFAULT_DIAGNOSTICS_PAGE);
        Ok(
            paginate(&validation.diagnostics, limit, self.cursor.as_deref(), |d| {
                once_json::to_value(&once_json::diagnostic(d))
            })
            .map(|page| ToolOutput {
                result: json!({ "valid": validation.valid, "target_count": validation.target_count, "diagnostics": page.result }),
                next_cursor: page.next_cursor,
                warnings: None,
            }),
        )
    }
}

/// The arguments of `once_validate_target`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ValidateTarget {
    /// Raw `[[target]]` table shape with `name`, `kind`, optional `srcs`, `deps`, `dependencies`, `visibility`, `labels` and `attrs`.
    target: Map<String, Value>,
}

impl Query for ValidateTarget {
    fn answer(self, analysis: &Analysis) -> Cancellable<Result<ToolOutput, ToolError>> {
        let proposed = match once_json::json_to_attr_value(&Value::Object(self.target)) {
            Ok(proposed) => proposed,
            Err(e) => return Ok(Err(format!("the target cannot be read: {e}"))),
        };
        let validation = analysis.validate_target(&proposed)?;
        Ok(Ok(page_none(once_json::to_value(
            &once_json::target_validation(&validation),
        ))))
    }
}

/// `once_query_workspace`.
pub(super) fn workspace() -> Tool {
    Tool::query::<QueryWorkspace>(
        "once_query_workspace",
        "Workspace overview",
        "Summarise the workspace: root, configuration tokens, packages, target count and error/warning counts.\n\n\
                Call this first in a new session to learn whether the graph is empty, healthy or broken. \
                The matching command-line operation is `once query workspace --format json`."
                .into(),
        output_schema::<once_json::WorkspaceDto>(),
        QUERY,
    )
}

/// `once_query_targets`.
pub(super) fn targets() -> Tool {
    Tool::query::<QueryTargets>(
        "once_query_targets",
        "List targets",
        format!(
            "List every declared target with its canonical id, package, name, kind, dependencies and capability names, optionally only one kind.\n\n\
                Use it to find ids for `once_get_target` and the capability tools. {PAGING_NOTE} \
                The matching command-line operation is `once query targets --format json`."
        ),
        output_schema::<Vec<once_json::TargetDto>>(),
        QUERY,
    )
}

/// `once_get_target`.
pub(super) fn target() -> Tool {
    Tool::query::<GetTarget>(
        "once_get_target",
        "Get one target",
        "Return the resolved view of one target: kind, srcs, deps, typed attribute values, capabilities, providers, tools and its diagnostics.\n\n\
                Use it before editing a target to learn its current shape. The matching command-line operation is `once query target <id> --format json`."
                .into(),
        output_schema::<once_json::GraphTargetDto>(),
        QUERY,
    )
}

/// `once_query_capabilities`.
pub(super) fn capabilities() -> Tool {
    Tool::query::<QueryCapabilities>(
        "once_query_capabilities",
        "Target capabilities",
        "Return the capabilities (build, run, test) a target exposes, with their output groups and the outputs each requires.\n\n\
                The matching command-line operation is `once query capabilities <id> --format json`."
                .into(),
        output_schema::<once_json::CapabilitiesDto>(),
        QUERY,
    )
}

/// `once_query_schema`.
pub(super) fn schema() -> Tool {
    Tool::query::<QuerySchema>(
        "once_query_schema",
        "Kind schema",
        "Return the typed contract of a target kind: attributes (type, required, default, configurable, allowed values), dependency roles with the providers they accept, emitted providers, capabilities, tools, source references to other build systems, and starter examples.\n\n\
                Use `once_query_example` to fetch an example's files. The matching command-line operation is `once query schema <kind> --format json`."
                .into(),
        output_schema::<once_json::KindSchemaDto>(),
        QUERY,
    )
}

/// `once_query_example`.
pub(super) fn example() -> Tool {
    Tool::query::<QueryExample>(
        "once_query_example",
        "Starter example files",
        "Return the complete file tree of one starter example of a kind: every `once.toml` and source file, sorted by path (non-UTF-8 files as base64).\n\n\
                Find slugs with `once_list_target_kinds` or `once_query_schema`. The matching command-line operation is `once query example <kind> <slug> --format json`."
                .into(),
        output_schema::<once_json::ExampleDto>(),
        QUERY,
    )
}

/// `once_list_target_kinds`.
pub(super) fn target_kinds() -> Tool {
    Tool::query::<ListTargetKinds>(
        "once_list_target_kinds",
        "Find target kinds",
        format!(
            "List target kinds with their docs, source references to other build systems, and starter example slugs, best match first.\n\n\
                Put the ecosystem, family, runner or intent from the user's request in `query` (\"rust binary\", \"python tests\", \"c library for rust\"); \
                a family name keeps other families out. Omit `query` to list everything. Then call `once_query_schema` for the chosen kind. {PAGING_NOTE} \
                The matching command-line operation is `once query target-kinds --query <text> --format json`."
        ),
        output_schema::<Vec<once_json::KindListEntryDto>>(),
        QUERY,
    )
}

/// `once_query_tests`.
pub(super) fn tests() -> Tool {
    Tool::query::<QueryTests>(
        "once_query_tests",
        "List test targets",
        format!(
            "List every target with a `test` capability: id, kind, dependencies, runner, labels and the path its normalised results are written to.\n\n\
                Use it as the test discovery entry point. {PAGING_NOTE} The matching command-line operation is `once query tests --format json`."
        ),
        output_schema::<Vec<once_json::TestDto>>(),
        QUERY,
    )
}

/// `once_query_test_results`.
pub(super) fn test_results() -> Tool {
    Tool::query::<QueryTestResults>(
        "once_query_test_results",
        "Read test results",
        "Read normalized `once.test_results.v1` results for a target.\n\n\
                Reads the normalized result file produced by the target's test capability (its `results_path`). This is the stable agent-facing interface for pass or fail summaries, case-level failures, attempts, and artifacts: \
                `status` (`passed`, `flaky`, `failed`, `timed_out`), `summary` counts, every case with its id (what a rerun selects), suite, file and line when the runner gives them, and each attempt's status, duration and failure message; `artifacts` lists the logs and the runner's native result files. \
                The record is the same for every runner (libtest, pytest, go, node, TAP), so callers do not need to parse a runner's command output. \
                With `summary_only: true` the answer leaves out the cases: the status, `summary` counts and `artifacts` only (`once.test_results_summary.v1`, a few hundred bytes whatever the number of cases); read the cases when a target failed. \
                A target that has not run yet, is not a test, or whose file is unreadable or inconsistent is a tool error saying which. The matching command-line operation is `once query test-results <target> [--summary-only] --format json`."
                .into(),
        output_schema::<TestResultsAnswer>(),
        QUERY,
    )
}

/// `once_query_affected_tests`.
pub(super) fn affected_tests() -> Tool {
    Tool::query::<QueryAffectedTests>(
        "once_query_affected_tests",
        "Tests affected by changes",
        format!(
            "Return the test targets affected by changed workspace paths, each with the reasons: a path belongs to a target through its `srcs` or its manifest, and every test depending on that target, directly or transitively, is affected.\n\n\
                Directories stand for every file below them; paths are normalised (`a/./b`, `a//b`, `a/x/../b`), and absolute paths inside the workspace are accepted. \
                Paths outside the workspace or in no package select nothing and are listed in `warnings` beside `result`. An empty list returns every test target. {PAGING_NOTE} \
                The matching command-line operation is `once query affected-tests <path>… --format json`."
        ),
        output_schema::<Vec<once_json::AffectedTestDto>>(),
        QUERY,
    )
}

/// `once_query_evidence`.
pub(super) fn evidence() -> Tool {
    Tool::query::<QueryEvidence>(
        "once_query_evidence",
        "Query evidence",
        "List durable evidence records, optionally filtered by subject.\n\n\
                Returns the same record shape as `once query evidence --format json`: durable `once.evidence.v1` records of the actions `once` ran or reused for a target's build, run and test capabilities \
                (subject, action digest, input digest, status, cache hit/miss/bypass, exit code, stream digests, time). \
                Pass `subject` to filter to one command action (its action digest), target, or target capability, such as `cli` or `cli:test`. \
                The tool returns the newest five matching records, newest first, by default; set `limit` from 1 through 100 when more or fewer are useful. \
                The matching command-line option is `once query evidence --limit <count>`. \
                Evidence is historical provenance, not proof that inputs remain unchanged; run the relevant capability when a current result is required."
                .into(),
        output_schema::<Vec<once_json::EvidenceRecordDto>>(),
        QUERY,
    )
}

/// `once_validate_workspace`.
pub(super) fn validate_workspace() -> Tool {
    Tool::query::<ValidateWorkspace>(
        "once_validate_workspace",
        "Validate the workspace",
        format!(
            "Validate the whole graph: manifests, kinds, attributes, selects, labels, dependencies and their providers, visibility, source patterns and cycles. \
                Returns `valid` plus diagnostics with code, severity, file, 1-based line/column range, target, attribute and repairs.\n\n\
                Call it after materialising a starter or editing manifests, before build, run or test. An invalid workspace is a normal result (`valid: false`), not a tool error. \
                Diagnostics come in pages ({PAGING_NOTE}) The matching command-line operation is `once query validate-workspace --format json`."
        ),
        output_schema::<once_json::ValidationDto>(),
        QUERY,
    )
}

/// `once_validate_target`.
pub(super) fn validate_target() -> Tool {
    Tool::query::<ValidateTarget>(
        "once_validate_target",
        "Validate a proposed target",
        "Check a proposed `[[target]]` table against its kind's schema, without reading other manifests: name, known kind, required and declared attributes with their types and allowed values, selects, label syntax, dependency roles and counts.\n\n\
                Returns `{valid, diagnostics}`; each diagnostic has a stable code, the attribute, and repairs. \
                The matching command-line operation is `once query validate-target` (JSON on stdin)."
                .into(),
        output_schema::<once_json::TargetValidationDto>(),
        QUERY,
    )
}
